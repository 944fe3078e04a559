// init_in_node(): shmem::init(), or, in a node joined by join.hpp (MORI_TEST_UID_BOOTSTRAP=1), the
// unique-ID bootstrap: rank 0's get_unique_id() listens on its node's eth0 (MORI_SOCKET_IFNAME),
// MPI carries the 128 bytes to every rank, and each calls init_attr. MPI's own shared-memory
// transport does not cross the namespaces' TCP, so the ranks of different "nodes" meet over the
// bridge as on separate hosts. Used by the MPI tests (tests/mpi/test_init.hpp) and the shmem
// benchmarks (bench/shmem_bench.cpp).
#pragma once

#include <mpi.h>

#include <cstdlib>
#include <cstring>

#include "mori/shmem.hpp"

namespace mori::netns {

// 0 on success, else shmem's error code (shmem::last_error() says why); MPI must be initialised.
inline int init_in_node() {
  const char* uid_bootstrap = std::getenv("MORI_TEST_UID_BOOTSTRAP");
  if (uid_bootstrap == nullptr || std::strcmp(uid_bootstrap, "1") != 0) return shmem::init();
  shmem::InitAttr attr;
  MPI_Comm_rank(MPI_COMM_WORLD, &attr.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &attr.n_ranks);
  int created = 0;
  if (attr.rank == 0) created = shmem::get_unique_id(&attr.uid);
  // Every rank learns whether rank 0 has an ID, so that none waits in init_attr for a listener
  // that was never opened.
  MPI_Bcast(&created, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (created != 0) return created;
  MPI_Bcast(&attr.uid, sizeof(attr.uid), MPI_BYTE, 0, MPI_COMM_WORLD);
  return shmem::init_attr(shmem::MORI_SHMEM_INIT_WITH_UNIQUEID, &attr);
}

}  // namespace mori::netns
