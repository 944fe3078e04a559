// The heap environment of the next shmem::init in a host API test: MORI_SHMEM_MODE, the heap size,
// the VMM chunk size, and symmetry checks on. The destructor unsets all four, so the next case
// starts from the defaults.
#pragma once

#include <cstdlib>

namespace mori::test {

struct HeapEnv {
  HeapEnv(const char* mode, const char* size, const char* chunk) {
    setenv("MORI_SHMEM_MODE", mode, 1);
    setenv("MORI_SHMEM_HEAP_SIZE", size, 1);
    setenv("MORI_SHMEM_VMM_CHUNK_SIZE", chunk, 1);
    setenv("MORI_SHMEM_CHECK_SYMMETRY", "1", 1);
  }
  ~HeapEnv() {
    for (const char* v : {"MORI_SHMEM_MODE", "MORI_SHMEM_HEAP_SIZE", "MORI_SHMEM_VMM_CHUNK_SIZE",
                          "MORI_SHMEM_CHECK_SYMMETRY"})
      unsetenv(v);
  }
  HeapEnv(const HeapEnv&) = delete;
  HeapEnv& operator=(const HeapEnv&) = delete;
};

}  // namespace mori::test
