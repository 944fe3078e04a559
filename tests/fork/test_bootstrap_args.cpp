// Bootstrap calls refused before any traffic, and the one-rank bootstrap that needs none.
#include <doctest/doctest.h>

#include <string>

#include "bootstrap/bootstrap.hpp"

using namespace std::chrono_literals;
using mori::bootstrap::Bootstrap;
using mori::bootstrap::make_tcp_bootstrap;
using mori::shmem::UniqueId;

namespace {
std::string reason(const mori::Status& s) { return s.ok() ? "ok" : s.message(); }
}  // namespace

TEST_CASE("bootstrap arguments: size, rank and timeout are checked first") {
  UniqueId id;
  REQUIRE(mori::bootstrap::new_unique_id(&id).ok());
  std::unique_ptr<Bootstrap> b;
  CHECK(reason(make_tcp_bootstrap(id, 0, 0, 1000ms, &b)) ==
        "bootstrap: size 0 is not in 1-1048576");
  CHECK(reason(make_tcp_bootstrap(id, 2, 2, 1000ms, &b)) ==
        "bootstrap: rank 2 is out of range for size 2");
  CHECK(reason(make_tcp_bootstrap(id, -1, 2, 1000ms, &b)) ==
        "bootstrap: rank -1 is out of range for size 2");
  CHECK(reason(make_tcp_bootstrap(id, 0, 2, 0ms, &b)) ==
        "bootstrap: the timeout must be positive, not 0 ms");
  CHECK(b == nullptr);
}

TEST_CASE("bootstrap of one rank: collectives are local copies and need no peer") {
  UniqueId id;
  REQUIRE(mori::bootstrap::new_unique_id(&id).ok());
  std::unique_ptr<Bootstrap> b;
  REQUIRE(make_tcp_bootstrap(id, 0, 1, 100ms, &b).ok());
  CHECK(b->rank() == 0);
  CHECK(b->size() == 1);
  int send = 42, recv = 0;
  CHECK(b->allgather(&send, &recv, sizeof(int)).ok());
  CHECK(recv == 42);
  recv = 0;
  CHECK(b->alltoall(&send, &recv, sizeof(int)).ok());
  CHECK(recv == 42);
  CHECK(b->barrier().ok());
  CHECK(b->broadcast(&send, sizeof(int), 0).ok());
  CHECK(reason(b->broadcast(&send, sizeof(int), 1)) ==
        "bootstrap: broadcast root 1 is out of range for size 1");
}

TEST_CASE("mpi bootstrap: refused with a reason when MPI is not initialised") {
  std::unique_ptr<Bootstrap> b;
  CHECK(reason(mori::bootstrap::make_mpi_bootstrap(nullptr, &b)) ==
        "bootstrap: MPI is not initialised (call MPI_Init before initialising mori with an MPI "
        "communicator)");
  CHECK(b == nullptr);
}
