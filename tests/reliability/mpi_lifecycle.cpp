// Run under mpirun with no MPI_Init of its own: init() starts MPI, so finalize() ends it, and MPI
// cannot start again. Each step compares last_error() exactly; a step that goes otherwise prints
// "FAILED" (ctest's FAIL_REGULAR_EXPRESSION) and makes the exit code non-zero.
#include <stdlib.h>

#include <cstdio>
#include <cstring>

#include "mori/shmem.hpp"

namespace shmem = mori::shmem;

namespace {

int failures = 0;

void expect(bool ok, const char* step) {
  if (!ok) {
    ++failures;
    std::printf("mpi_lifecycle: FAILED: %s (last_error: \"%s\")\n", step, shmem::last_error());
  }
}

}  // namespace

int main() {
  setenv("MORI_SHMEM_HEAP_SIZE", "8M", 0);
  expect(shmem::init() == 0, "init");
  const int me = shmem::my_pe();
  void* kept = shmem::malloc(4096);
  expect(kept != nullptr, "malloc");
  expect(shmem::finalize() == 0, "finalize");
  expect(shmem::finalize() != 0, "second finalize fails");
  expect(std::strcmp(shmem::last_error(),
                     "finalize: not initialised (call init or init_attr first)") == 0,
         "second finalize says why");
  expect(shmem::free(kept) != 0, "free after finalize fails");
  expect(
      std::strcmp(shmem::last_error(), "free: not initialised (call init or init_attr first)") == 0,
      "free after finalize says why");
  expect(shmem::init() != 0, "init after MPI_Finalize fails");
  expect(std::strcmp(shmem::last_error(),
                     "init: MPI is already finalised (MPI cannot be initialised twice)") == 0,
         "init after MPI_Finalize says why");
  expect(shmem::my_pe() == -1, "nothing initialised");
  std::printf("mpi_lifecycle: PE %d: %s\n", me, failures ? "FAILED" : "ok");
  return failures ? 1 : 0;
}
