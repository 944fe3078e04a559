// The hip backend's RDMA network: ibverbs devices whose SQs, CQs and doorbell records live in
// uncached VRAM (alloc_queue_memory), or, when that fails, in host memory the GPU reaches through
// hipHostRegister mappings, as do the ibufs and the doorbell pages (MMIO).
#include <dlfcn.h>
#include <hip/hip_runtime_api.h>
#include <hsa/hsa.h>
#include <unistd.h>

#include <cstdint>
#include <mutex>
#include <string>
#include <utility>

#include "backend/hip/dmabuf_export.hpp"
#include "backend/hip/host_registrations.hpp"
#include "rdma/verbs_runtime.hpp"
#include "runtime/runtime.hpp"

namespace mori::runtime {

namespace {

using backend::DmabufCalls;
using backend::HostRegistrations;

constexpr uint32_t kMinGpuSqWqes = 256;

// Page-aligned [begin, end) around [p, p + bytes).
void page_span(const void* p, size_t bytes, uintptr_t* begin, size_t* length) {
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  *begin = a & ~(page - 1);
  *length = ((a + bytes + page - 1) & ~(page - 1)) - *begin;
}

// Portable | Mapped, for queue memory and MMIO doorbell pages alike, as ROCm/mori registers UARs
// (mlx5.cpp Mlx5RegisterUarHost, bnxt.cpp). Not hipHostRegisterIoMemory: HIP's header says
// "Not supported", and the newer clr gives it a path of its own (ROCCLR_MEM_IO_MEMORY in
// ihipHostRegister, rocm-systems projects/clr/hipamd/src/hip_memory.cpp) that neither reference
// takes.
constexpr unsigned kRegisterFlags = hipHostRegisterPortable | hipHostRegisterMapped;

Status register_span(uintptr_t begin, size_t length, uintptr_t* device) {
  void* host = reinterpret_cast<void*>(begin);
  hipError_t e = hipHostRegister(host, length, kRegisterFlags);
  if (e != hipSuccess) {
    return Status::error(std::string("hipHostRegister of RDMA queue memory failed: ") +
                         hipGetErrorName(e));
  }
  void* base = nullptr;
  e = hipHostGetDevicePointer(&base, host, 0);
  if (e != hipSuccess) {
    (void)hipHostUnregister(host);
    return Status::error(std::string("hipHostGetDevicePointer of RDMA queue memory failed: ") +
                         hipGetErrorName(e));
  }
  *device = reinterpret_cast<uintptr_t>(base);
  return {};
}

// Every QP's queue memory of this process, one registration per page span
// (host_registrations.hpp).
std::mutex registrations_mu;
HostRegistrations& registrations() {
  static HostRegistrations r(register_span, [](uintptr_t begin) {
    (void)hipHostUnregister(reinterpret_cast<void*>(begin));
  });
  return r;
}

// Maps host memory (or an MMIO page) for the GPU.
Status map_to_device(void* host, size_t bytes, bool /*mmio*/, void** device) {
  uintptr_t begin = 0;
  size_t length = 0;
  page_span(host, bytes, &begin, &length);
  std::lock_guard lock(registrations_mu);
  uintptr_t mapped = 0;
  MORI_TRY(registrations().acquire(begin, length, reinterpret_cast<uintptr_t>(host), &mapped));
  *device = reinterpret_cast<void*>(mapped);
  return {};
}

void unmap_from_device(void* host, bool /*mmio*/) {
  std::lock_guard lock(registrations_mu);
  (void)registrations().release(reinterpret_cast<uintptr_t>(host));
}

// hsa_amd_portable_export_dmabuf, declared here because the hsa_ext_amd.h of ROCm 5.2 (Debian's)
// predates it. Its prototype is ROCR-Runtime's (src/inc/hsa_ext_amd.h); it is looked up in the
// ROCR that HIP has loaded (libamdhip64 links libhsa-runtime64).
using HsaExportDmabuf = hsa_status_t (*)(const void* ptr, size_t size, int* dmabuf,
                                         uint64_t* offset);

// hipMemGetHandleForAddressRange and its dma-buf handle type (hipMemRangeHandleTypeDmaBufFd = 1,
// hip_runtime_api.h of ROCm 7). Absent from ROCm 6.x: no match in ROCm/clr up to its Oct-2024
// develop branch, and ROCm 6.4.2's headers lack hipMemRangeHandleType
// (reviews/2026-12-01-bringup.md, B2). Resolved at run time for that reason.
using HipGetHandleForAddressRange = hipError_t (*)(void* handle, hipDeviceptr_t dptr, size_t size,
                                                   int handle_type, unsigned long long flags);
constexpr int kHipMemRangeHandleTypeDmaBufFd = 1;

DmabufCalls dmabuf_calls() {
  DmabufCalls calls;
  // RTLD_NOLOAD: HIP's own ROCR, or none; never a second copy of the runtime.
  static void* rocr = dlopen("libhsa-runtime64.so.1", RTLD_NOW | RTLD_NOLOAD);
  static const auto hsa_export =
      rocr ? reinterpret_cast<HsaExportDmabuf>(dlsym(rocr, "hsa_amd_portable_export_dmabuf"))
           : nullptr;
  static const auto hip_export = reinterpret_cast<HipGetHandleForAddressRange>(
      dlsym(RTLD_DEFAULT, "hipMemGetHandleForAddressRange"));
  if (hsa_export) {
    calls.hsa_export = [](const void* ptr, size_t size, int* fd, uint64_t* offset) {
      return static_cast<int>(hsa_export(ptr, size, fd, offset));
    };
  }
  calls.allocation_of = [](const void* ptr, uintptr_t* base, size_t* size) {
    hipDeviceptr_t b = nullptr;
    if (hipMemGetAddressRange(&b, size, const_cast<void*>(ptr)) != hipSuccess) {
      (void)hipGetLastError();
      return false;
    }
    *base = reinterpret_cast<uintptr_t>(b);
    return true;
  };
  if (hip_export) {
    calls.hip_export = [](uintptr_t begin, size_t length, int* fd) {
      return static_cast<int>(hip_export(fd, reinterpret_cast<hipDeviceptr_t>(begin), length,
                                         kHipMemRangeHandleTypeDmaBufFd, 0));
    };
  }
  return calls;
}

// Exports GPU memory as a dma-buf for ibv_reg_dmabuf_mr (rdma/memory_registration.hpp), with the
// range's offset in it (dmabuf_export.hpp). Fails (and registration falls back to ibv_reg_mr) for
// host memory and where neither ROCR nor HIP can export.
Status export_dmabuf_of(void* base, size_t bytes, int* fd, uint64_t* offset) {
  static const DmabufCalls calls = dmabuf_calls();
  return backend::export_dmabuf(calls, base, bytes, fd, offset);
}

// Uncached VRAM for the RDMA queues (rdma/verbs_network.hpp, QueueMemory; reviews/
// 2026-12-01-bringup.md B5), as rocSHMEM's parent-domain allocators (src/gpu_ib/connection.cpp,
// hipExtMallocWithFlags(hipDeviceMallocUncached)) and ROCm/mori's umems: the GPU polls CQEs in
// its own memory, and a get's data and its CQE reach the same PCIe completer, in order.
// Zeroed, because rdma-core leaves a custom allocator's rings as they come (providers/mlx5/cq.c
// mlx5_alloc_cq_buf, verbs.c mlx5_alloc_qp_buf), and synchronised before rdma-core's own CPU
// writes (CQE owner bytes, doorbell records). Null on any failure, or when HIP's alignment falls
// short of what the provider asks: VerbsNetwork then makes the queues in host memory and says why.
#ifdef hipDeviceMallocUncached
constexpr unsigned kDeviceMallocUncached = hipDeviceMallocUncached;
#else
// ROCm's hip_runtime_api.h defines it as 0x3; the HIP 5.2 headers Debian ships predate it.
constexpr unsigned kDeviceMallocUncached = 0x3;
#endif

void* alloc_queue_memory(size_t bytes, size_t align) {
  void* p = nullptr;
  if (hipExtMallocWithFlags(&p, bytes, kDeviceMallocUncached) != hipSuccess) return nullptr;
  if ((align && reinterpret_cast<uintptr_t>(p) % align) || hipMemset(p, 0, bytes) != hipSuccess ||
      hipDeviceSynchronize() != hipSuccess) {
    (void)hipFree(p);
    return nullptr;
  }
  return p;
}

void free_queue_memory(void* p) { (void)hipFree(p); }

// The current GPU's PCI address ("0000:c1:00.0"), from which the RDMA device nearest it is
// chosen; "" if HIP cannot say, and then the device is local_rank % count.
std::string current_gpu_pci_address() {
  int device = 0;
  char bus_id[64] = {};
  if (hipGetDevice(&device) != hipSuccess ||
      hipDeviceGetPCIBusId(bus_id, sizeof bus_id, device) != hipSuccess)
    return "";
  return bus_id;
}

}  // namespace

Status open_rdma_network(Runtime& rt, const std::vector<bool>& needs_rdma,
                         std::unique_ptr<RdmaNetwork>* out, bool* no_devices) {
  *no_devices = false;
  // A wavefront posts as one batch, up to 64 lanes x 2 WQEs (put-with-signal), and release device
  // code does not re-check that a batch fits (transport/rdma_engine.hpp, post_batch).
  if (rt.settings.rdma_sq_wqes < kMinGpuSqWqes) {
    return Status::error("MORI_RDMA_SQ_WQES=" + std::to_string(rt.settings.rdma_sq_wqes) +
                         " is too small for GPU queues: at least " + std::to_string(kMinGpuSqWqes) +
                         " (a wavefront posts up to 128 WQEs at once)");
  }
  rdma::GpuHooks hooks;
  hooks.map_to_device = map_to_device;
  hooks.unmap_from_device = unmap_from_device;
  hooks.export_dmabuf = export_dmabuf_of;
  hooks.queue_memory.alloc = alloc_queue_memory;
  hooks.queue_memory.free = free_queue_memory;
  hooks.gpu_pci_address = current_gpu_pci_address();
  return rdma::open_verbs_rdma(rt, needs_rdma, std::move(hooks), out, no_devices);
}

}  // namespace mori::runtime
