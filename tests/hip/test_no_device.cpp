// The hip backend on a machine without a GPU: init must fail cleanly, naming the cause, and leave
// the library usable (every call reports "not initialised", nothing crashes or exits).
#include <doctest/doctest.h>
#include <signal.h>

#include <string>

#include "mori/shmem.hpp"
#include "runtime/backend.hpp"

namespace shmem = mori::shmem;

TEST_CASE("init_attr on a machine without a GPU fails with \"no HIP device\"") {
  shmem::InitAttr attr;
  attr.rank = 0;
  attr.n_ranks = 1;
  REQUIRE(shmem::get_unique_id(&attr.uid) == 0);
  CHECK(shmem::init_attr(shmem::MORI_SHMEM_INIT_WITH_UNIQUEID, &attr) != 0);
  const std::string reason = shmem::last_error();
  CHECK(reason.find("init_attr: no HIP device") == 0);
  CHECK(shmem::my_pe() == -1);
  CHECK(std::string(shmem::last_error()) ==
        "my_pe: not initialised (call init or init_attr first)");
  CHECK(shmem::malloc(64) == nullptr);
  CHECK(shmem::finalize() != 0);
}

TEST_CASE("a second attempt fails the same way (nothing was left half-initialised)") {
  shmem::InitAttr attr;
  attr.rank = 0;
  attr.n_ranks = 1;
  REQUIRE(shmem::get_unique_id(&attr.uid) == 0);
  CHECK(shmem::init_attr(shmem::MORI_SHMEM_INIT_WITH_UNIQUEID, &attr) != 0);
  CHECK(std::string(shmem::last_error()).find("no HIP device") != std::string::npos);
}

// What a failed init leaves of the hip backend's per-thread device and abort report (B3, B8): no
// device selected, nothing to select, and SIGABRT's disposition as it was (the report is installed
// only with a live runtime, runtime.cpp set_current).
TEST_CASE("a failed init selects no device and installs no abort report") {
  CHECK(mori::backend::device_failure_aborts());
  struct sigaction before{};
  REQUIRE(sigaction(SIGABRT, nullptr, &before) == 0);
  shmem::InitAttr attr;
  attr.rank = 0;
  attr.n_ranks = 1;
  REQUIRE(shmem::get_unique_id(&attr.uid) == 0);
  CHECK(shmem::init_attr(shmem::MORI_SHMEM_INIT_WITH_UNIQUEID, &attr) != 0);
  struct sigaction after{};
  REQUIRE(sigaction(SIGABRT, nullptr, &after) == 0);
  CHECK((after.sa_handler == before.sa_handler));
  CHECK(mori::backend::thread_device() == -1);
  CHECK(mori::backend::use_device().ok());  // nothing opened: nothing to select
  CHECK(mori::backend::thread_device() == -1);
}
