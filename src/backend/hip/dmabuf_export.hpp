// How the hip backend exports GPU memory as a dma-buf for ibv_reg_dmabuf_mr, and at which offset
// into it a range lies. Free of HIP (the calls come in as functions), so that the choice and the
// arithmetic are unit-tested on the host backend (tests/unit/test_hip_seams.cpp).
//
// The offset is the point. A dma-buf names a whole buffer object, and ibv_reg_dmabuf_mr maps the
// MR's iova to `offset` bytes into it. The heap begins `lead` bytes into its allocation
// (heap_memory_hip.cpp), a registered buffer may begin anywhere inside its own; offset 0 would
// send every RDMA access to the allocation's start instead (reviews/2026-12-01-bringup.md, B2).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

#include "mori/status.hpp"

namespace mori::backend {

struct DmabufCalls {
  // hsa_amd_portable_export_dmabuf (ROCR): the dma-buf of the buffer object holding
  // [ptr, ptr + size) and ptr's offset in it; returns an hsa_status_t, 0 on success. Null where
  // the loaded ROCR has no such call (ROCm 5.2, Debian's, has none).
  std::function<int(const void* ptr, size_t size, int* fd, uint64_t* offset)> hsa_export;
  // hipMemGetAddressRange: the hipMalloc allocation holding ptr; false if there is none.
  std::function<bool(const void* ptr, uintptr_t* base, size_t* size)> allocation_of;
  // hipMemGetHandleForAddressRange with hipMemRangeHandleTypeDmaBufFd; returns a hipError_t, 0 on
  // success. Null where HIP has no such call (absent from ROCm 6.x).
  std::function<int(uintptr_t begin, size_t length, int* fd)> hip_export;
};

// [base, base + bytes) as an offset into the allocation [alloc_base, alloc_base + alloc_bytes),
// or why it does not lie inside it.
Status offset_in_allocation(uintptr_t base, size_t bytes, uintptr_t alloc_base, size_t alloc_bytes,
                            uint64_t* offset);

// ROCR's export first, as ROCm/mori does (src/application/transport/rdma/rdma.cpp,
// TryExportDmabufFd), since it reports the offset itself. Otherwise HIP's export of the whole
// allocation, with the range's offset in it. Fails, naming both reasons, when neither can; the
// caller then registers with ibv_reg_mr (rdma/memory_registration.cpp).
Status export_dmabuf(const DmabufCalls& calls, const void* base, size_t bytes, int* fd,
                     uint64_t* offset);

}  // namespace mori::backend
