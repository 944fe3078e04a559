// mpi.fast_failure.np2 (not a test_*.cpp: it is meant to fail). Rank 1 fails a check and then would
// return without sending what rank 0 waits for, as a failing rank leaves its partner blocked in a
// collective. With mpi_main.cpp's fast failure the job ends at once, with rank 1's line; without
// it, rank 0 blocks in MPI_Recv until the ctest timeout.
#include <doctest/doctest.h>
#include <mpi.h>

TEST_CASE("a failed check on one rank ends the job while another rank waits for it") {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 1) {
    const int answer = 41;
    CHECK(answer == 42);
    return;  // the send below never happens: rank 0 would wait forever
  }
  int value = 0;
  if (rank == 0) MPI_Recv(&value, 1, MPI_INT, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}
