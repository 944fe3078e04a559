// Modules of the stand-in libamdhip64: a code object's globals live in host memory, sized and
// initialised from its symbol table; a launch cannot run the kernel, so it is recorded, in stream
// order, with its arguments as the kernarg segment would hold them (standin_control.h).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "code_object.hpp"
#include "standin.hpp"
#include "standin_control.h"

struct ihipModuleSymbol_t {
  std::string name;
  std::vector<standin::KernelArg> args;
};
struct ihipModule_t {
  std::map<std::string, std::vector<uint8_t>> globals;
  std::map<std::string, std::unique_ptr<ihipModuleSymbol_t>> functions;
};

using standin::ret;

namespace {

std::mutex mu;
std::vector<MoriHipStandinLaunch>& launches() {
  static std::vector<MoriHipStandinLaunch> v;
  return v;
}
bool trap_next = false;

// What the device would do after a trap: clr's queue callback prints this and aborts (rocclr
// device/rocm/rocvirtual.cpp, callbackQueue).
[[noreturn]] void trap(hipStream_t stream) {
  std::fprintf(stderr,
               "Callback: Queue %p aborting with error : HSA_STATUS_ERROR_EXCEPTION: An HSAIL "
               "operation resulted in a hardware exception. code: 0x1016\n",
               static_cast<void*>(stream));
  std::abort();
}

}  // namespace

extern "C" {

// clr hip_module.cpp / hip_code_object.cpp: an image that is not a code object is
// hipErrorInvalidImage; one with no code for the current device's target is
// hipErrorNoBinaryForGpu.
hipError_t hipModuleLoadData(hipModule_t* module, const void* image) {
  if (!module || !image) return ret(hipErrorInvalidValue);
  standin::CodeObject co;
  std::string why;
  if (!standin::read_code_object(image, &co, &why)) return ret(hipErrorInvalidImage);
  if (co.arch != standin::device_arch()) return ret(hipErrorNoBinaryForGpu);
  auto* m = new ihipModule_t;
  m->globals = std::move(co.globals);
  for (auto& [name, args] : co.kernels)
    m->functions[name] = std::make_unique<ihipModuleSymbol_t>(ihipModuleSymbol_t{name, args});
  *module = m;
  return hipSuccess;
}

hipError_t hipModuleLoad(hipModule_t* module, const char* path) {
  if (!path) return ret(hipErrorInvalidValue);
  std::ifstream in(path, std::ios::binary);
  if (!in) return ret(hipErrorFileNotFound);
  std::vector<char> image((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return hipModuleLoadData(module, image.data());
}

hipError_t hipModuleUnload(hipModule_t module) {
  if (!module) return ret(hipErrorInvalidResourceHandle);
  standin::drain_all();
  delete module;
  return hipSuccess;
}

// clr hip_module.cpp, hipModuleGetGlobal: no outputs or no name is hipErrorInvalidValue, no module
// hipErrorInvalidResourceHandle, a name the module lacks hipErrorNotFound; the size is the
// symbol's own (its ELF st_size).
hipError_t hipModuleGetGlobal(hipDeviceptr_t* dptr, size_t* bytes, hipModule_t module,
                              const char* name) {
  if ((!dptr && !bytes) || !name || !*name) return ret(hipErrorInvalidValue);
  if (!module) return ret(hipErrorInvalidResourceHandle);
  auto it = module->globals.find(name);
  if (it == module->globals.end()) return ret(hipErrorNotFound);
  if (dptr) *dptr = it->second.data();
  if (bytes) *bytes = it->second.size();
  return hipSuccess;
}

// clr hip_module.cpp, hipModuleGetFunction: a kernel the module lacks is hipErrorNotFound.
hipError_t hipModuleGetFunction(hipFunction_t* function, hipModule_t module, const char* name) {
  if (!function || !name) return ret(hipErrorInvalidValue);
  if (!module) return ret(hipErrorInvalidResourceHandle);
  auto it = module->functions.find(name);
  if (it == module->functions.end()) return ret(hipErrorNotFound);
  *function = it->second.get();
  return hipSuccess;
}

// clr hip_module.cpp, ihipLaunchKernel_validate: no function is hipErrorInvalidImage, both
// kernelParams and extra hipErrorInvalidValue, a block over 1024 threads hipErrorInvalidValue.
hipError_t hipModuleLaunchKernel(hipFunction_t f, unsigned gx, unsigned gy, unsigned gz,
                                 unsigned bx, unsigned by, unsigned bz, unsigned shared,
                                 hipStream_t stream, void** params, void** extra) {
  if (!f) return ret(hipErrorInvalidImage);
  if (params && extra) return ret(hipErrorInvalidValue);
  if (uint64_t{bx} * by * bz > 1024 || !gx || !gy || !gz || !bx || !by || !bz)
    return ret(hipErrorInvalidValue);
  MoriHipStandinLaunch l{};
  std::snprintf(l.kernel, sizeof l.kernel, "%s", f->name.c_str());
  l.grid[0] = gx, l.grid[1] = gy, l.grid[2] = gz;
  l.block[0] = bx, l.block[1] = by, l.block[2] = bz;
  l.shared_bytes = shared;
  l.stream = stream;
  // The arguments are copied now, as HIP copies them into the kernarg segment at launch.
  for (size_t i = 0; i < f->args.size(); ++i) {
    const standin::KernelArg& a = f->args[i];
    if (a.offset + a.size > sizeof l.args) return ret(hipErrorInvalidValue);
    if (!params || !params[i]) return ret(hipErrorInvalidValue);
    std::memcpy(l.args + a.offset, params[i], a.size);
    l.arg_bytes = std::max(l.arg_bytes, a.offset + a.size);
  }
  standin::enqueue(stream, [l]() mutable {
    std::unique_lock lock(mu);
    if (trap_next) trap(static_cast<hipStream_t>(l.stream));
    l.sequence = launches().size();
    launches().push_back(l);
  });
  return hipSuccess;
}

size_t mori_hip_standin_launch_count(void) {
  std::lock_guard lock(mu);
  return launches().size();
}
int mori_hip_standin_launch(size_t index, MoriHipStandinLaunch* out) {
  std::lock_guard lock(mu);
  if (!out || index >= launches().size()) return -1;
  *out = launches()[index];
  return 0;
}
void mori_hip_standin_clear_launches(void) {
  std::lock_guard lock(mu);
  launches().clear();
}
void mori_hip_standin_trap_next_launch(void) {
  std::lock_guard lock(mu);
  trap_next = true;
}

}  // extern "C"
