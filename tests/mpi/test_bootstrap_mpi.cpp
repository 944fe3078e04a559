// Both bootstraps under mpirun: the MPI one over MPI_COMM_WORLD and over a split communicator, and
// the TCP one from a unique ID that rank 0 makes and sends to the others with MPI_Bcast, as a user
// of MORI_SHMEM_INIT_WITH_UNIQUEID would. Data is checked on every rank.
#include <doctest/doctest.h>
#include <mpi.h>

#include <string>
#include <vector>

#include "bootstrap/bootstrap.hpp"

using namespace std::chrono_literals;
using mori::bootstrap::Bootstrap;

namespace {

uint8_t pattern(int from, int to, size_t i) {
  return static_cast<uint8_t>(from * 37 + to * 11 + i * 7 + (i >> 8));
}

// The collectives of `b`, each checked byte by byte against what every rank sent.
void exercise(Bootstrap& b) {
  const int n = b.size(), me = b.rank();
  for (size_t bytes : {size_t{0}, size_t{1}, size_t{24}, size_t{4096 + 5}}) {
    CAPTURE(bytes);
    std::vector<uint8_t> send(n * bytes), recv(n * bytes, 0xee);
    for (size_t i = 0; i < bytes; ++i) send[i] = pattern(me, 0, i);
    REQUIRE(b.allgather(send.data(), recv.data(), bytes).ok());
    int wrong = 0;
    for (int r = 0; r < n; ++r) {
      for (size_t i = 0; i < bytes; ++i) wrong += recv[r * bytes + i] != pattern(r, 0, i);
    }
    CHECK(wrong == 0);

    for (int to = 0; to < n; ++to) {
      for (size_t i = 0; i < bytes; ++i) send[to * bytes + i] = pattern(me, to, i);
    }
    REQUIRE(b.alltoall(send.data(), recv.data(), bytes).ok());
    wrong = 0;
    for (int from = 0; from < n; ++from) {
      for (size_t i = 0; i < bytes; ++i) wrong += recv[from * bytes + i] != pattern(from, me, i);
    }
    CHECK(wrong == 0);

    for (int root = 0; root < n; ++root) {
      std::vector<uint8_t> buf(bytes, 0xee);
      if (me == root) {
        for (size_t i = 0; i < bytes; ++i) buf[i] = pattern(root, 1, i);
      }
      REQUIRE(b.broadcast(buf.data(), bytes, root).ok());
      wrong = 0;
      for (size_t i = 0; i < bytes; ++i) wrong += buf[i] != pattern(root, 1, i);
      CHECK(wrong == 0);
    }
    REQUIRE(b.barrier().ok());
  }
}

}  // namespace

TEST_CASE("mpi bootstrap over MPI_COMM_WORLD: every collective delivers every byte") {
  int world_rank = 0, world_size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world_size);
  std::unique_ptr<Bootstrap> b;
  REQUIRE(mori::bootstrap::make_mpi_bootstrap(nullptr, &b).ok());
  CHECK(b->rank() == world_rank);
  CHECK(b->size() == world_size);
  exercise(*b);
  const mori::Status s = b->broadcast(nullptr, 0, world_size);
  CHECK(s.message() == "bootstrap: broadcast root " + std::to_string(world_size) +
                           " is out of range for size " + std::to_string(world_size));
}

TEST_CASE("mpi bootstrap over a split communicator uses that communicator's ranks") {
  int world_rank = 0, world_size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world_size);
  // Reversed order within each parity class, so that communicator ranks differ from world ranks.
  MPI_Comm half = MPI_COMM_NULL;
  REQUIRE(MPI_Comm_split(MPI_COMM_WORLD, world_rank % 2, world_size - world_rank, &half) ==
          MPI_SUCCESS);
  {
    std::unique_ptr<Bootstrap> b;
    REQUIRE(mori::bootstrap::make_mpi_bootstrap(&half, &b).ok());
    int half_rank = 0, half_size = 0;
    MPI_Comm_rank(half, &half_rank);
    MPI_Comm_size(half, &half_size);
    CHECK(b->rank() == half_rank);
    CHECK(b->size() == half_size);
    exercise(*b);
  }
  MPI_Comm_free(&half);
}

TEST_CASE("tcp bootstrap from a unique ID that rank 0 makes and broadcasts with MPI") {
  int world_rank = 0, world_size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world_size);
  mori::shmem::UniqueId id{};
  int made = 1;
  if (world_rank == 0) made = mori::bootstrap::new_unique_id(&id).ok();
  MPI_Bcast(&made, 1, MPI_INT, 0, MPI_COMM_WORLD);
  REQUIRE(made == 1);
  MPI_Bcast(id.bytes, sizeof(id.bytes), MPI_BYTE, 0, MPI_COMM_WORLD);
  std::unique_ptr<Bootstrap> b;
  const mori::Status s =
      mori::bootstrap::make_tcp_bootstrap(id, world_rank, world_size, 20000ms, &b);
  REQUIRE_MESSAGE(s.ok(), s.message());
  CHECK(b->rank() == world_rank);
  CHECK(b->size() == world_size);
  exercise(*b);
}
