// mpi.global_exit.np3: a job in which PE 1 calls global_exit(7) while the others wait in a
// barrier it never joins. ctest passes it only if mpirun ends, within the timeout, with status 7
// (MPI_Abort's error code, which Open MPI's mpirun returns for the job).
#include <mpi.h>

#include <cstdio>

#include "mori/shmem.hpp"

namespace shmem = mori::shmem;

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  if (shmem::init() != 0) return 2;
  if (shmem::barrier_all() != 0) return 3;
  if (shmem::my_pe() == 1) shmem::global_exit(7);
  shmem::barrier_all();  // PE 1 never arrives: only the exit ends this
  std::fprintf(stderr, "PE %d: barrier_all returned\n", shmem::my_pe());
  return 4;
}
