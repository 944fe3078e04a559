#include "backend/hip/dmabuf_export.hpp"

#include <string>

#include "runtime/hex.hpp"

namespace mori::backend {

using runtime::hex;

Status offset_in_allocation(uintptr_t base, size_t bytes, uintptr_t alloc_base, size_t alloc_bytes,
                            uint64_t* offset) {
  if (base < alloc_base || base - alloc_base > alloc_bytes ||
      bytes > alloc_bytes - (base - alloc_base)) {
    return Status::error("[" + hex(base) + ", +" + std::to_string(bytes) +
                         ") is not inside its allocation [" + hex(alloc_base) + ", +" +
                         std::to_string(alloc_bytes) + ")");
  }
  *offset = base - alloc_base;
  return {};
}

Status export_dmabuf(const DmabufCalls& calls, const void* base, size_t bytes, int* fd,
                     uint64_t* offset) {
  std::string hsa_reason = "ROCR has no hsa_amd_portable_export_dmabuf";
  if (calls.hsa_export) {
    int out_fd = -1;
    uint64_t out_offset = 0;
    const int status = calls.hsa_export(base, bytes, &out_fd, &out_offset);
    if (status == 0 && out_fd >= 0) {
      *fd = out_fd;
      *offset = out_offset;
      return {};
    }
    // HSA_STATUS_ERROR_INVALID_AGENT (0x1004, hsa.h) for host memory (ROCR-Runtime
    // src/core/runtime/runtime.cpp, Runtime::DmaBufExport: GPU allocations only).
    hsa_reason = "hsa_amd_portable_export_dmabuf failed with HSA status " + hex(status);
  }
  if (!calls.hip_export)
    return Status::error(hsa_reason + "; HIP has no hipMemGetHandleForAddressRange");
  uintptr_t alloc_base = 0;
  size_t alloc_bytes = 0;
  if (!calls.allocation_of || !calls.allocation_of(base, &alloc_base, &alloc_bytes))
    return Status::error(hsa_reason + "; the range is not hipMalloc memory");
  uint64_t in_allocation = 0;
  if (Status s = offset_in_allocation(reinterpret_cast<uintptr_t>(base), bytes, alloc_base,
                                      alloc_bytes, &in_allocation);
      !s.ok())
    return Status::error(hsa_reason + "; " + s.message());
  // The whole allocation, so that the dma-buf begins where the allocation does and the range's
  // offset in it is known: HIP reports none (ROCm/mori rdma.cpp, TryExportDmabufFd).
  int out_fd = -1;
  const int error = calls.hip_export(alloc_base, alloc_bytes, &out_fd);
  if (error != 0 || out_fd < 0) {
    return Status::error(hsa_reason + "; hipMemGetHandleForAddressRange failed with hipError " +
                         std::to_string(error));
  }
  *fd = out_fd;
  *offset = in_allocation;
  return {};
}

}  // namespace mori::backend
