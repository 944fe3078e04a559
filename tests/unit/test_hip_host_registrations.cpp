// The hip backend's host registrations (backend/hip/host_registrations.hpp), with the HIP calls
// replaced by a recorder: one hipHostRegister per page span however many queue pairs share it, and
// one hipHostUnregister when the last of them lets go (reviews/2026-12-01-bringup.md, B7).
#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "backend/hip/host_registrations.hpp"

using mori::Status;
using mori::backend::HostRegistrations;

namespace {

constexpr uintptr_t kPage = 4096;
constexpr uintptr_t kDeviceOffset = 0x7000'0000'0000;  // where the fake maps host pages

struct Recorder {
  std::vector<uintptr_t> registered, unregistered;
  HostRegistrations table{[this](uintptr_t begin, size_t, uintptr_t* device) {
                            registered.push_back(begin);
                            *device = begin + kDeviceOffset;
                            return Status{};
                          },
                          [this](uintptr_t begin) { unregistered.push_back(begin); }};
};

}  // namespace

TEST_CASE("hip registrations: a page shared by two QPs is registered once, freed with the last") {
  Recorder r;
  const uintptr_t page = 0x10 * kPage;
  uintptr_t first = 0, second = 0;
  // Two doorbell records 64 bytes apart in one page, as rdma-core's mlx5 dbrec pool hands out.
  REQUIRE(r.table.acquire(page, kPage, page + 0x40, &first).ok());
  REQUIRE(r.table.acquire(page, kPage, page + 0x80, &second).ok());
  CHECK(r.registered == std::vector<uintptr_t>{page});
  CHECK(first == page + 0x40 + kDeviceOffset);
  CHECK(second == page + 0x80 + kDeviceOffset);
  REQUIRE(r.table.release(page + 0x40).ok());
  CHECK(r.unregistered.empty());  // the other QP still uses the page
  REQUIRE(r.table.release(page + 0x80).ok());
  CHECK(r.unregistered == std::vector<uintptr_t>{page});
  CHECK(r.table.size() == 0);
  // Registered afresh after its last release.
  REQUIRE(r.table.acquire(page, kPage, page, &first).ok());
  CHECK(r.registered.size() == 2);
}

TEST_CASE("hip registrations: a span inside a live registration shares it") {
  Recorder r;
  const uintptr_t sq = 0x40 * kPage;
  uintptr_t device = 0;
  REQUIRE(r.table.acquire(sq, 4 * kPage, sq, &device).ok());
  REQUIRE(r.table.acquire(sq + 2 * kPage, kPage, sq + 2 * kPage + 8, &device).ok());
  CHECK(r.registered.size() == 1);
  CHECK(device == sq + 2 * kPage + 8 + kDeviceOffset);
  REQUIRE(r.table.release(sq + 2 * kPage + 8).ok());
  REQUIRE(r.table.release(sq).ok());
  CHECK(r.unregistered == std::vector<uintptr_t>{sq});
}

TEST_CASE("hip registrations: disjoint spans are registered apart, a partial overlap is refused") {
  Recorder r;
  const uintptr_t a = 0x100 * kPage;
  uintptr_t device = 0;
  REQUIRE(r.table.acquire(a, 2 * kPage, a, &device).ok());
  REQUIRE(r.table.acquire(a + 2 * kPage, kPage, a + 2 * kPage, &device).ok());
  CHECK(r.registered.size() == 2);
  const Status overlap = r.table.acquire(a + kPage, 2 * kPage, a + kPage, &device);
  CHECK(overlap.message() ==
        "hipHostRegister: the pages [0x101000, 0x103000) overlap the registered pages "
        "[0x100000, 0x102000) without lying inside them");
  const Status before = r.table.acquire(a - kPage, 2 * kPage, a - kPage, &device);
  CHECK(before.message() ==
        "hipHostRegister: the pages [0xff000, 0x101000) overlap the registered pages "
        "[0x100000, 0x102000) without lying inside them");
  CHECK(r.registered.size() == 2);
  CHECK(r.table.release(0x5000).message() == "hipHostUnregister: 0x5000 is in no registered span");
}

TEST_CASE("hip registrations: a failed registration is not recorded") {
  int calls = 0;
  HostRegistrations table(
      [&](uintptr_t, size_t, uintptr_t*) {
        ++calls;
        return Status::error("hipHostRegister of RDMA queue memory failed: hipErrorInvalidValue");
      },
      [](uintptr_t) { FAIL("nothing was registered"); });
  uintptr_t device = 0;
  CHECK(table.acquire(kPage, kPage, kPage, &device).message() ==
        "hipHostRegister of RDMA queue memory failed: hipErrorInvalidValue");
  CHECK(table.size() == 0);
  CHECK(!table.acquire(kPage, kPage, kPage, &device).ok());
  CHECK(calls == 2);
}
