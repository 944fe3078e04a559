// The bootstrap: how PEs exchange the few bytes needed to set up the heap and the queue pairs. One
// small interface, implemented over MPI (mpi.cpp) and over TCP from a 128-byte unique ID (tcp.cpp).
//
// Every operation is collective: all ranks call it, in the same order. A failure names its cause
// and, where one is to blame, the rank ("bootstrap: rank 3 closed the connection during
// allgather").
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>

#include "mori/shmem/unique_id.hpp"
#include "mori/status.hpp"

namespace mori::bootstrap {

class Bootstrap {
 public:
  virtual ~Bootstrap() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // `recv` holds size() blocks of `bytes`; block r receives rank r's `send`.
  virtual Status allgather(const void* send, void* recv, size_t bytes) = 0;
  // `send` and `recv` hold size() blocks of `bytes`; rank r's send block j lands in rank j's recv
  // block r.
  virtual Status alltoall(const void* send, void* recv, size_t bytes) = 0;
  virtual Status barrier() = 0;
  // `bytes` of `buf` on rank `root` are copied into `buf` on every rank.
  virtual Status broadcast(void* buf, size_t bytes, int root) = 0;
  // As MPI_Comm_split: the ranks that pass the same color >= 0 form a new bootstrap, ranked by
  // (key, rank here); a rank passing a negative color gets null. Teams use it (runtime/teams.cpp):
  // a split of a team is collective over that team only, so each team needs its own bootstrap.
  // The MPI bootstrap splits its communicator; the others split over TCP (split_over_tcp).
  virtual Status split(int color, int key, std::chrono::milliseconds timeout,
                       std::unique_ptr<Bootstrap>* out) = 0;
};

// Bootstrap::split over any bootstrap (split.cpp): each new group's first rank makes a unique ID,
// the IDs are allgathered over `parent`, and each group joins a TCP bootstrap within `timeout` (a
// group of one needs no connection). A free function, not the interface's default, so that every
// member of Bootstrap is pure and a program with a bootstrap of its own (the verbs double's)
// need not link the TCP bootstrap.
Status split_over_tcp(Bootstrap& parent, int color, int key, std::chrono::milliseconds timeout,
                      std::unique_ptr<Bootstrap>* out);

// One rank alone: every collective is a local copy.
std::unique_ptr<Bootstrap> make_solo_bootstrap();

// Over an MPI communicator. `mpi_comm` points to an MPI_Comm, or is null for MPI_COMM_WORLD. The
// communicator is duplicated, so the caller's traffic never mixes with ours. MPI must be
// initialised.
Status make_mpi_bootstrap(const void* mpi_comm, std::unique_ptr<Bootstrap>* out);

// Creates a unique ID naming a TCP listener that this process opens now and that rank 0's
// make_tcp_bootstrap will use. The ID encodes the listener's address and port, a magic number, a
// wire version, a random nonce and a checksum. The listen address is 127.0.0.1 unless
// MORI_SOCKET_IFNAME names an interface.
Status new_unique_id(shmem::UniqueId* out);

// Over TCP: rank 0 accepts one connection from each other rank (a star); every operation goes
// through rank 0. Each operation, and joining, must finish within `timeout`, else it fails naming
// the missing or dead rank. A corrupted ID, an ID of another wire version, or a stale ID (whose
// listener is gone, or whose nonce the listener does not recognise) is refused with a reason that
// says which.
Status make_tcp_bootstrap(const shmem::UniqueId& id, int rank, int size,
                          std::chrono::milliseconds timeout, std::unique_ptr<Bootstrap>* out);

}  // namespace mori::bootstrap
