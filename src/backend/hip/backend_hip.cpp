// The hip backend's side of the runtime: device memory from hipMalloc, the device-error record in
// mapped host memory, and the device state copied with hipMemcpyToSymbol (the runtime's registered
// copies) and through hipModuleGetGlobal (separately loaded modules).
#include <hip/hip_runtime_api.h>

#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "backend/hip/stream_hip.hpp"
#include "runtime/backend.hpp"

namespace mori::backend {

namespace {

// mori::shmem::globalGpuStates
constexpr const char* kStatesSymbol = "_ZN4mori5shmem15globalGpuStatesE";
constexpr const char* kAbiSymbol = "mori_shmem_gpu_states_abi_version";

Status check(hipError_t e, const char* what) {
  if (e == hipSuccess) return {};
  return Status::error(std::string(what) + " failed: " + hipGetErrorName(e) + " (" +
                       hipGetErrorString(e) + ")");
}

// This PE's GPU (open_device), and the one use_device last made current on each thread.
int pe_device = -1;
thread_local int current_device = -1;

std::mutex symbols_mu;
std::vector<const void*>& symbols() {
  static std::vector<const void*> s;
  return s;
}

}  // namespace

const char* name() { return "hip"; }

void note_machine_pes(int) {}

Status open_device(int local_rank) {
  int count = 0;
  const hipError_t e = hipGetDeviceCount(&count);
  if (e == hipErrorNoDevice || (e == hipSuccess && count == 0))
    return Status::error(
        "no HIP device: hipGetDeviceCount found none (is /dev/kfd present and accessible?)");
  MORI_TRY(check(e, "hipGetDeviceCount"));
  pe_device = local_rank % count;
  MORI_TRY(use_device());
  return open_stream_kernel(pe_device);
}
void close_device() {
  close_stream_kernel();
  pe_device = -1;
}

Status use_device() {
  if (pe_device < 0) return {};
  MORI_TRY(check(hipSetDevice(pe_device), "hipSetDevice"));
  current_device = pe_device;
  return {};
}
int thread_device() { return current_device; }
// ROCm/clr rocclr/device/rocm/rocvirtual.cpp, callbackQueue: abort() on a queue error.
bool device_failure_aborts() { return true; }

Status alloc_device(size_t bytes, void** out) {
  return check(hipMalloc(out, bytes ? bytes : 1), "hipMalloc");
}
Status copy_to_device(void* dst, const void* src, size_t bytes) {
  return check(hipMemcpy(dst, src, bytes, hipMemcpyHostToDevice), "hipMemcpy");
}
Status fill_device(void* dst, unsigned char byte, size_t bytes) {
  // Both may return before the device is done (device-to-device work is asynchronous to the host).
  MORI_TRY(check(hipMemset(dst, byte, bytes), "hipMemset"));
  return check(hipDeviceSynchronize(), "hipDeviceSynchronize");
}
Status copy_device_to_device(void* dst, const void* src, size_t bytes) {
  MORI_TRY(check(hipMemcpy(dst, src, bytes, hipMemcpyDeviceToDevice), "hipMemcpy"));
  return check(hipDeviceSynchronize(), "hipDeviceSynchronize");
}
void free_device(void* p) { (void)hipFree(p); }
Status alloc_host_visible(size_t bytes, void** out) {
  return check(hipHostMalloc(out, bytes, hipHostMallocMapped | hipHostMallocCoherent),
               "hipHostMalloc");
}
void free_host_visible(void* p) { (void)hipHostFree(p); }

// Shareable memory is any hipMalloc memory: a range is exported as its allocation's IPC handle and
// its offset there, and a peer's hipIpcOpenMemHandle maps the whole allocation.
Status alloc_shareable(size_t bytes, void** out) {
  if (bytes == 0) return Status::error("size is 0");
  return check(hipMalloc(out, bytes), "hipMalloc");
}
Status free_shareable(void* p) { return check(hipFree(p), "hipFree"); }

Status export_shareable(const void* p, size_t bytes, ShareableHandle* out) {
  static_assert(sizeof(hipIpcMemHandle_t) <= sizeof(ShareableHandle::bytes));
  hipDeviceptr_t base = nullptr;
  size_t size = 0;
  if (hipMemGetAddressRange(&base, &size, const_cast<void*>(p)) != hipSuccess) {
    return Status::error(
        "the buffer is not hipMalloc memory (hipMemGetAddressRange does not know "
        "it), the only memory same-node peers can map");
  }
  const auto offset = static_cast<size_t>(static_cast<const char*>(p) - static_cast<char*>(base));
  if (bytes > size - offset)
    return Status::error("the buffer runs past the end of its hipMalloc allocation of " +
                         std::to_string(size) + " bytes");
  hipIpcMemHandle_t handle;
  MORI_TRY(check(hipIpcGetMemHandle(&handle, base), "hipIpcGetMemHandle"));
  *out = {};
  std::memcpy(out->bytes, &handle, sizeof handle);
  out->offset = offset;
  return {};
}

Status import_shareable(const ShareableHandle& handle, size_t, Imported* out) {
  hipIpcMemHandle_t h;
  std::memcpy(&h, handle.bytes, sizeof h);
  void* mapping = nullptr;
  MORI_TRY(check(hipIpcOpenMemHandle(&mapping, h, hipIpcMemLazyEnablePeerAccess),
                 "hipIpcOpenMemHandle"));
  *out = {static_cast<char*>(mapping) + handle.offset, mapping, 0};
  return {};
}

void release_imported(const Imported& imported) {
  if (imported.mapping) (void)hipIpcCloseMemHandle(imported.mapping);
}

Status synchronize() { return check(hipDeviceSynchronize(), "hipDeviceSynchronize"); }

Status publish(const state::GpuStates& states) {
  std::lock_guard lock(symbols_mu);
  for (const void* symbol : symbols())
    MORI_TRY(check(hipMemcpyToSymbol(symbol, &states, sizeof states),
                   "hipMemcpyToSymbol(globalGpuStates)"));
  return publish_to_stream_kernel(states);
}

Status publish_to_module(void* module, const state::GpuStates& states) {
  if (!module) return Status::error("module is null");
  auto mod = static_cast<hipModule_t>(module);
  hipDeviceptr_t ptr = nullptr;
  size_t bytes = 0;
  if (hipModuleGetGlobal(&ptr, &bytes, mod, kStatesSymbol) != hipSuccess) {
    return Status::error(std::string("the module defines no mori::shmem::globalGpuStates (") +
                         kStatesSymbol + "): link it with libmori_shmem_device.bc");
  }
  if (bytes != sizeof(state::GpuStates)) {
    return Status::error("the module's globalGpuStates is " + std::to_string(bytes) +
                         " bytes, this runtime's is " + std::to_string(sizeof(state::GpuStates)) +
                         ": the module was built for another device-state ABI");
  }
  hipDeviceptr_t version_ptr = nullptr;
  size_t version_bytes = 0;
  if (hipModuleGetGlobal(&version_ptr, &version_bytes, mod, kAbiSymbol) == hipSuccess &&
      version_bytes == sizeof(uint32_t)) {
    uint32_t version = 0;
    MORI_TRY(check(hipMemcpyDtoH(&version, version_ptr, sizeof version), "hipMemcpyDtoH"));
    if (version != state::kGpuStatesAbiVersion) {
      return Status::error("the module was built for device-state ABI version " +
                           std::to_string(version) + ", this runtime provides version " +
                           std::to_string(state::kGpuStatesAbiVersion));
    }
  }
  return check(hipMemcpyHtoD(ptr, const_cast<state::GpuStates*>(&states), sizeof states),
               "hipMemcpyHtoD");
}

}  // namespace mori::backend

// Called by MORI_SHMEM_DEFINE_GPU_STATES() in each code object of a user's program (its static
// initialiser).
extern "C" int mori_shmem_register_gpu_states(const void* host_symbol) {
  std::lock_guard lock(mori::backend::symbols_mu);
  mori::backend::symbols().push_back(host_symbol);
  return 0;
}
