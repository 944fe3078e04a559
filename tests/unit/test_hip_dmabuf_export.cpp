// The hip backend's dma-buf export (backend/hip/dmabuf_export.hpp), with ROCR's and HIP's calls
// replaced by fakes: the offset handed to ibv_reg_dmabuf_mr is where the range lies in the
// exported buffer, not 0 (reviews/2026-12-01-bringup.md, B2).
#include <doctest/doctest.h>

#include <cstdint>
#include <string>

#include "backend/hip/dmabuf_export.hpp"

using mori::Status;
using mori::backend::DmabufCalls;
using mori::backend::export_dmabuf;
using mori::backend::offset_in_allocation;

namespace {

// A hipExtMallocWithFlags allocation as heap_memory_hip.cpp makes one: 64 MiB more than the heap,
// the heap at its first 64 MiB boundary.
constexpr uintptr_t kAllocation = 0x7f00'0020'0000;
constexpr size_t kAllocationBytes = (256u << 20) + (64u << 20);
constexpr uintptr_t kHeap = 0x7f00'0400'0000;
constexpr size_t kHeapBytes = 256u << 20;
constexpr uint64_t kLead = kHeap - kAllocation;
static_assert(kLead == 0x3e0'0000 && kHeap % (64u << 20) == 0);

const void* at(uintptr_t a) { return reinterpret_cast<const void*>(a); }

// ROCR's export as Runtime::DmaBufExport does it (ROCR-Runtime src/core/runtime/runtime.cpp): the
// allocation's buffer object and the range's offset in it; INVALID_AGENT (0x1004) elsewhere.
int rocr_export(const void* ptr, size_t size, int* fd, uint64_t* offset) {
  const uintptr_t p = reinterpret_cast<uintptr_t>(ptr);
  if (p < kAllocation || p - kAllocation + size > kAllocationBytes) return 0x1004;
  *fd = 41;
  *offset = p - kAllocation;
  return 0;
}

bool hip_range(const void* ptr, uintptr_t* base, size_t* size) {
  const uintptr_t p = reinterpret_cast<uintptr_t>(ptr);
  if (p < kAllocation || p >= kAllocation + kAllocationBytes) return false;
  *base = kAllocation;
  *size = kAllocationBytes;
  return true;
}

// What export_dmabuf handed back for the heap: the descriptor and the offset, -1 and 0 if it failed.
struct Exported {
  int fd = -1;
  uint64_t offset = 0;
};
Exported export_heap(const DmabufCalls& calls) {
  Exported e;
  const Status s = export_dmabuf(calls, at(kHeap), kHeapBytes, &e.fd, &e.offset);
  CHECK_MESSAGE(s.ok(), s.message());
  return e;
}

}  // namespace

TEST_CASE("hip dmabuf: the heap's offset is its lead into the allocation") {
  uint64_t offset = 0;
  REQUIRE(offset_in_allocation(kHeap, kHeapBytes, kAllocation, kAllocationBytes, &offset).ok());
  CHECK(offset == kLead);
  // A registered buffer at an interior offset of its own allocation.
  REQUIRE(
      offset_in_allocation(kAllocation + 0x1234, 100, kAllocation, kAllocationBytes, &offset).ok());
  CHECK(offset == 0x1234);
  REQUIRE(
      offset_in_allocation(kAllocation, kAllocationBytes, kAllocation, kAllocationBytes, &offset)
          .ok());
  CHECK(offset == 0);
}

TEST_CASE("hip dmabuf: a range outside its allocation is refused, naming both") {
  uint64_t offset = 7;
  CHECK(offset_in_allocation(0x2000, 0x1001, 0x1000, 0x2000, &offset).message() ==
        "[0x2000, +4097) is not inside its allocation [0x1000, +8192)");
  CHECK(offset_in_allocation(0x800, 16, 0x1000, 0x2000, &offset).message() ==
        "[0x800, +16) is not inside its allocation [0x1000, +8192)");
  CHECK(offset_in_allocation(0x3001, 0, 0x1000, 0x2000, &offset).message() ==
        "[0x3001, +0) is not inside its allocation [0x1000, +8192)");
  CHECK(offset == 7);
}

TEST_CASE("hip dmabuf: ROCR's export comes first, and its offset is the one used") {
  DmabufCalls calls;
  calls.hsa_export = rocr_export;
  calls.allocation_of = hip_range;
  calls.hip_export = [](uintptr_t, size_t, int*) {
    FAIL("HIP's export is the fallback only");
    return 1;
  };
  const Exported e = export_heap(calls);
  CHECK(e.fd == 41);
  CHECK(e.offset == kLead);
}

TEST_CASE("hip dmabuf: without ROCR's export, HIP exports the whole allocation") {
  DmabufCalls calls;
  calls.allocation_of = hip_range;
  uintptr_t exported = 0;
  size_t exported_bytes = 0;
  calls.hip_export = [&](uintptr_t begin, size_t length, int* fd) {
    exported = begin;
    exported_bytes = length;
    *fd = 42;
    return 0;
  };
  const Exported e = export_heap(calls);
  CHECK(e.fd == 42);
  CHECK(e.offset == kLead);
  CHECK(exported == kAllocation);
  CHECK(exported_bytes == kAllocationBytes);
}

TEST_CASE("hip dmabuf: host memory and a runtime without either export fail, naming why") {
  int fd = -1;
  uint64_t offset = 0;
  DmabufCalls none;
  CHECK(export_dmabuf(none, at(kHeap), 64, &fd, &offset).message() ==
        "ROCR has no hsa_amd_portable_export_dmabuf; HIP has no hipMemGetHandleForAddressRange");
  DmabufCalls rocr_only;
  rocr_only.hsa_export = rocr_export;
  rocr_only.allocation_of = hip_range;
  CHECK(export_dmabuf(rocr_only, at(0x1000), 64, &fd, &offset).message() ==
        "hsa_amd_portable_export_dmabuf failed with HSA status 0x1004; HIP has no "
        "hipMemGetHandleForAddressRange");
  DmabufCalls both = rocr_only;
  both.hip_export = [](uintptr_t, size_t, int*) { return 0; };
  CHECK(export_dmabuf(both, at(0x1000), 64, &fd, &offset).message() ==
        "hsa_amd_portable_export_dmabuf failed with HSA status 0x1004; the range is not hipMalloc "
        "memory");
  both.allocation_of = hip_range;
  both.hip_export = [](uintptr_t, size_t, int*) { return 801; };  // hipErrorNotSupported
  CHECK(export_dmabuf(both, at(kAllocation + kAllocationBytes - 8), 64, &fd, &offset).message() ==
        "hsa_amd_portable_export_dmabuf failed with HSA status 0x1004; [0x7f00141ffff8, +64) is "
        "not inside its allocation [0x7f0000200000, +335544320)");
  both.hsa_export = nullptr;
  CHECK(export_dmabuf(both, at(kHeap), 64, &fd, &offset).message() ==
        "ROCR has no hsa_amd_portable_export_dmabuf; hipMemGetHandleForAddressRange failed with "
        "hipError 801");
  CHECK(fd == -1);
}
