// The host backend's side of the runtime: device memory is ordinary memory, the device state is the
// one globalGpuStates of this process, and a "module" is a shared object opened with dlopen.
#include <dlfcn.h>
#include <link.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "mori/host/stream.hpp"
#include "mori/platform.hpp"
#include "runtime/backend.hpp"

namespace mori::shmem {
state::GpuStates globalGpuStates{};
}  // namespace mori::shmem

namespace mori::backend {

namespace {
// mori::shmem::globalGpuStates
constexpr const char* kStatesSymbol = "_ZN4mori5shmem15globalGpuStatesE";
constexpr const char* kAbiSymbol = "mori_shmem_gpu_states_abi_version";
}  // namespace

const char* name() { return "host"; }

namespace {
// A PE's "device" is its local rank, recorded per thread as HIP records its current device, so that
// tests see which host API entries select it (backend.hpp, use_device).
int pe_device = -1;
thread_local int current_device = -1;
}  // namespace

Status open_device(int local_rank) {
  pe_device = local_rank;
  current_device = local_rank;
  return {};
}
Status use_device() {
  if (pe_device >= 0) current_device = pe_device;
  return {};
}
int thread_device() { return current_device; }
bool device_failure_aborts() { return false; }

// Against the machine's CPUs, not this process's affinity: mpirun binds each of 2 ranks to its own
// core, which is one CPU per PE and no oversubscription.
void note_machine_pes(int pes) {
  const int cpus = static_cast<int>(std::thread::hardware_concurrency());
  platform::host::set_oversubscribed(cpus > 0 && pes > cpus);
}
void close_device() { pe_device = -1; }

Status alloc_device(size_t bytes, void** out) {
  *out = std::calloc(1, bytes ? bytes : 1);
  return *out ? Status{}
              : Status::error("out of host memory for " + std::to_string(bytes) + " bytes");
}
Status copy_to_device(void* dst, const void* src, size_t bytes) {
  if (bytes != 0) std::memcpy(dst, src, bytes);  // an empty table's data() may be null
  return {};
}
Status fill_device(void* dst, unsigned char byte, size_t bytes) {
  if (bytes != 0) std::memset(dst, byte, bytes);
  return {};
}
Status copy_device_to_device(void* dst, const void* src, size_t bytes) {
  if (bytes != 0) std::memmove(dst, src, bytes);
  return {};
}
void free_device(void* p) { std::free(p); }
Status alloc_host_visible(size_t bytes, void** out) { return alloc_device(bytes, out); }
void free_host_visible(void* p) { std::free(p); }

// Kernels run synchronously in mori::host::launch; what runs asynchronously is the streams' work.
Status synchronize() { return host::synchronize_all(); }

Status publish(const state::GpuStates& states) {
  shmem::globalGpuStates = states;
  return {};
}

Status publish_to_module(void* module, const state::GpuStates& states) {
  if (!module) return Status::error("module is null");
  dlerror();
  void* symbol = dlsym(module, kStatesSymbol);
  if (!symbol) {
    return Status::error(std::string("the module defines no mori::shmem::globalGpuStates (") +
                         kStatesSymbol + "): link it with libmori_shmem_device.bc");
  }
  // The symbol's size is the size of GpuStates the module was built with.
  Dl_info info;
  ElfW(Sym)* sym = nullptr;
  if (dladdr1(symbol, &info, reinterpret_cast<void**>(&sym), RTLD_DL_SYMENT) && sym &&
      sym->st_size != sizeof(state::GpuStates)) {
    return Status::error("the module's globalGpuStates is " + std::to_string(sym->st_size) +
                         " bytes, this runtime's is " + std::to_string(sizeof(state::GpuStates)) +
                         ": the module was built for another device-state ABI");
  }
  if (auto* version = static_cast<const uint32_t*>(dlsym(module, kAbiSymbol));
      version && *version != state::kGpuStatesAbiVersion) {
    return Status::error("the module was built for device-state ABI version " +
                         std::to_string(*version) + ", this runtime provides version " +
                         std::to_string(state::kGpuStatesAbiVersion));
  }
  if (symbol != &shmem::globalGpuStates) std::memcpy(symbol, &states, sizeof states);
  return {};
}

}  // namespace mori::backend
