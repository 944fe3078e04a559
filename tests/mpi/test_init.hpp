// test_init(): the shmem::init() of the MPI tests, or, under the network-namespace hook of
// mpi_main.cpp (MORI_TEST_UID_BOOTSTRAP=1), the unique-ID bootstrap (tests/netns/uid_init.hpp,
// shared with the benchmarks).
#pragma once

#include "../netns/uid_init.hpp"

namespace mori::shmem {

// 0 on success, else shmem's error code (last_error() says why); MPI must be initialised.
inline int test_init() { return netns::init_in_node(); }

}  // namespace mori::shmem
