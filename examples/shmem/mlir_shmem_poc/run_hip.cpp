// The proof-of-concept kernels on the hip backend, in the flow docs/bitcode.md gives every front
// end: hipModuleLoad the code object, mori::shmem::module_init(module) (which finds the module's
// globalGpuStates with hipModuleGetGlobal and copies the live state into it), then
// hipModuleGetFunction and hipModuleLaunchKernel.
//
//   mpirun -np 2 mori_poc_run_hip shmem_kernels_llvm_gfx942.hsaco     (one process per GPU)
//
// It needs GPUs; without one, init says so and it exits 1. The host build only compiles it: the
// hip backend's runtime that it links is a separate build (MORI_BACKEND=hip).
#include <hip/hip_runtime_api.h>

#include <cstdint>
#include <cstdio>

#include "mori/shmem.hpp"

namespace shmem = mori::shmem;

namespace {

bool hip_ok(hipError_t e, const char* what) {
  if (e == hipSuccess) return true;
  std::fprintf(stderr, "mori_poc_run_hip: %s: %s\n", what, hipGetErrorString(e));
  return false;
}
// last_error() names the failed call itself.
bool mori_ok(int status) {
  if (status == 0) return true;
  std::fprintf(stderr, "mori_poc_run_hip: %s\n", shmem::last_error());
  return false;
}

// One block of one wave: the kernels guard on thread 0 themselves.
bool launch(hipModule_t module, const char* kernel, int32_t* arg) {
  hipFunction_t f;
  void* args[] = {&arg};
  return hip_ok(hipModuleGetFunction(&f, module, kernel), kernel) &&
         hip_ok(hipModuleLaunchKernel(f, 1, 1, 1, 64, 1, 1, 0, nullptr, args, nullptr), kernel) &&
         hip_ok(hipDeviceSynchronize(), kernel);
}

bool run(hipModule_t module) {
  const int me = shmem::my_pe(), n = shmem::n_pes();
  int32_t* out = nullptr;
  int32_t got[2] = {-1, -1};
  if (!hip_ok(hipMalloc(reinterpret_cast<void**>(&out), sizeof got), "hipMalloc") ||
      !launch(module, "shmem_basic_kernel", out) ||
      !hip_ok(hipMemcpy(got, out, sizeof got, hipMemcpyDeviceToHost), "hipMemcpy"))
    return false;
  (void)hipFree(out);
  std::printf("PE %d: shmem_basic_kernel: my_pe %d, n_pes %d (%s)\n", me, got[0], got[1],
              got[0] == me && got[1] == n ? "ok" : "WRONG");

  auto* dest = static_cast<int32_t*>(shmem::malloc(sizeof(int32_t)));
  int32_t value = -1;
  if (!dest || !hip_ok(hipMemcpy(dest, &value, sizeof value, hipMemcpyHostToDevice), "hipMemcpy") ||
      !mori_ok(shmem::barrier_all()) || !launch(module, "shmem_put_kernel", dest) ||
      !mori_ok(shmem::barrier_all()) ||
      !hip_ok(hipMemcpy(&value, dest, sizeof value, hipMemcpyDeviceToHost), "hipMemcpy"))
    return false;
  shmem::free(dest);
  std::printf("PE %d: shmem_put_kernel: received %d from PE %d (%s)\n", me, value, (me + n - 1) % n,
              value == (me + n - 1) % n ? "ok" : "WRONG");
  return got[0] == me && got[1] == n && value == (me + n - 1) % n;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <code object>\n", argv[0]);
    return 2;
  }
  if (!mori_ok(shmem::init())) return 1;
  hipModule_t module;
  bool ok = hip_ok(hipModuleLoad(&module, argv[1]), argv[1]);
  if (ok) {
    ok = mori_ok(shmem::module_init(module)) && run(module);
    // finalize republishes the cleared state to the module: unload it after.
    ok = mori_ok(shmem::finalize()) && ok;
    (void)hipModuleUnload(module);
  } else {
    shmem::finalize();
  }
  return ok ? 0 : 1;
}
