// What the mpi.runtime suite's files share: the world's rank and size, the last error, the heap
// environment of the next init, and the check that an object sits at the same offset on every PE.
#pragma once

#include <doctest/doctest.h>
#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

#include "heap_env.hpp"
#include "mori/shmem.hpp"

namespace mori::test::runtime {

namespace shmem = mori::shmem;

inline int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}
inline int world_size() {
  int n = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  return n;
}
inline std::string error() { return shmem::last_error(); }

// The heap environment for the next init (2 MiB VMM chunks); restored by the destructor.
struct HeapEnv : mori::test::HeapEnv {
  HeapEnv(const char* mode, const char* size) : mori::test::HeapEnv(mode, size, "2M") {}
};

// Offsets of `p` from the heap base of every PE must agree: compare what every rank computed.
inline void check_symmetric(const void* p, const void* first) {
  const uint64_t mine = static_cast<const char*>(p) - static_cast<const char*>(first);
  std::vector<uint64_t> all(world_size());
  MPI_Allgather(&mine, 1, MPI_UINT64_T, all.data(), 1, MPI_UINT64_T, MPI_COMM_WORLD);
  for (uint64_t o : all) CHECK(o == mine);
}

}  // namespace mori::test::runtime
