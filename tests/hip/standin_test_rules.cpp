// The stand-in's rules, one test each: what ROCm refuses, the stand-in refuses with the same error
// (each rule's ROCm/clr source is cited where the stand-in implements it).
#include <doctest/doctest.h>
#include <hip/hip_runtime_api.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "fork_children.hpp"
#include "standin_control.h"
#include "standin_support.hpp"

using mori::test::run_ranks;

namespace {

std::vector<char> read_module() {
  std::ifstream in(MORI_TEST_MODULE, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

hipMemAllocationProp pinned_on(int device) {
  hipMemAllocationProp prop{};
  prop.type = hipMemAllocationTypePinned;
  prop.requestedHandleType = hipMemHandleTypePosixFileDescriptor;
  prop.location = {hipMemLocationTypeDevice, device};
  return prop;
}

}  // namespace

TEST_CASE("the current device is per thread and is device 0 on a thread that never set one") {
  REQUIRE(hipSetDevice(3) == hipSuccess);
  int here = -1, there = -1;
  std::thread([&] { REQUIRE(hipGetDevice(&there) == hipSuccess); }).join();
  REQUIRE(hipGetDevice(&here) == hipSuccess);
  CHECK(here == 3);
  CHECK(there == 0);
  CHECK(hipSetDevice(99) == hipErrorInvalidDevice);
  CHECK(hipSetDevice(0) == hipSuccess);
}

TEST_CASE("hipIpcOpenMemHandle of the process's own allocation is hipErrorInvalidContext") {
  void* p = nullptr;
  REQUIRE(hipMalloc(&p, 4096) == hipSuccess);
  hipIpcMemHandle_t h;
  REQUIRE(hipIpcGetMemHandle(&h, p) == hipSuccess);
  void* mapped = nullptr;
  CHECK(hipIpcOpenMemHandle(&mapped, h, hipIpcMemLazyEnablePeerAccess) == hipErrorInvalidContext);
  CHECK(hipIpcOpenMemHandle(&mapped, h, 2) == hipErrorInvalidValue);  // flags other than 0
  // Another process opens it, and sees what this one wrote.
  std::memset(p, 0x5a, 4096);
  auto run = run_ranks(1, [&](int) -> std::string {
    void* q = nullptr;
    if (hipIpcOpenMemHandle(&q, h, hipIpcMemLazyEnablePeerAccess) != hipSuccess) return "open";
    if (static_cast<unsigned char*>(q)[4095] != 0x5a) return "contents";
    return hipIpcCloseMemHandle(q) == hipSuccess ? "" : "close";
  });
  REQUIRE(run.children.size() == 1);
  CHECK(run.children[0].text == "");
  CHECK(hipFree(p) == hipSuccess);
}

TEST_CASE(
    "VMM sizes are multiples of the granularity and access flags are none or read or read-write") {
  hipMemAllocationProp prop = pinned_on(0);
  size_t g = 0;
  REQUIRE(hipMemGetAllocationGranularity(&g, &prop, hipMemAllocationGranularityRecommended) ==
          hipSuccess);
  REQUIRE(g == size_t{2} << 20);
  hipMemGenericAllocationHandle_t h = nullptr;
  CHECK(hipMemCreate(&h, g + 4096, &prop, 0) == hipErrorInvalidValue);
  void* va = nullptr;
  CHECK(hipMemAddressReserve(&va, g / 2, 0, nullptr, 0) == hipErrorInvalidValue);
  REQUIRE(hipMemCreate(&h, g, &prop, 0) == hipSuccess);
  REQUIRE(hipMemAddressReserve(&va, g, 0, nullptr, 0) == hipSuccess);
  CHECK(hipMemMap(va, g, 4096, h, 0) == hipErrorInvalidValue);  // offset must be 0
  REQUIRE(hipMemMap(va, g, 0, h, 0) == hipSuccess);
  hipMemAccessDesc access{};
  access.location = {hipMemLocationTypeDevice, 0};
  access.flags = static_cast<hipMemAccessFlags>(2);  // write without read: no such permission
  CHECK(hipMemSetAccess(va, g, &access, 1) == hipErrorInvalidValue);
  access.location.id = 99;
  access.flags = hipMemAccessFlagsProtReadWrite;
  CHECK(hipMemSetAccess(va, g, &access, 1) == hipErrorInvalidValue);
  access.location.id = 0;
  REQUIRE(hipMemSetAccess(va, g, &access, 1) == hipSuccess);
  static_cast<char*>(va)[g - 1] = 1;
  prop.requestedHandleType = static_cast<hipMemAllocationHandleType>(4);  // not a POSIX fd
  hipMemGenericAllocationHandle_t other = nullptr;
  CHECK(hipMemCreate(&other, g, &prop, 0) == hipErrorNotSupported);
  CHECK(hipMemUnmap(va, g) == hipSuccess);
  CHECK(hipMemRelease(h) == hipSuccess);
  CHECK(hipMemAddressFree(va, g) == hipSuccess);
}

TEST_CASE("hipModuleGetGlobal gives the symbol's own size and another arch's object is refused") {
  std::vector<char> image = read_module();
  REQUIRE(image.size() > 64);
  hipModule_t m = nullptr;
  REQUIRE(hipModuleLoadData(&m, image.data()) == hipSuccess);
  hipDeviceptr_t p = nullptr;
  size_t bytes = 0;
  REQUIRE(hipModuleGetGlobal(&p, &bytes, m, "mori_shmem_gpu_states_abi_version") == hipSuccess);
  CHECK(bytes == 4);
  REQUIRE(hipModuleGetGlobal(&p, &bytes, m, "_ZN4mori5shmem15globalGpuStatesE") == hipSuccess);
  CHECK(bytes == 160);  // llvm-readelf -s of the code object
  CHECK(hipModuleGetGlobal(&p, &bytes, m, "no_such_symbol") == hipErrorNotFound);
  hipFunction_t f = nullptr;
  CHECK(hipModuleGetFunction(&f, m, "mori_test_my_pe") == hipSuccess);
  CHECK(hipModuleGetFunction(&f, m, "no_such_kernel") == hipErrorNotFound);
  CHECK(hipModuleUnload(m) == hipSuccess);
  image[48] = 0x3f;  // e_flags' EF_AMDGPU_MACH: gfx90a
  CHECK(hipModuleLoadData(&m, image.data()) == hipErrorNoBinaryForGpu);
  image[0] = 0;
  CHECK(hipModuleLoadData(&m, image.data()) == hipErrorInvalidImage);
}

TEST_CASE(
    "stream work runs after the call returns and in order and launches record their arguments") {
  std::vector<char> image = read_module();
  hipModule_t m = nullptr;
  REQUIRE(hipModuleLoadData(&m, image.data()) == hipSuccess);
  hipFunction_t f = nullptr;
  REQUIRE(hipModuleGetFunction(&f, m, "mori_test_my_pe") == hipSuccess);
  hipStream_t s = nullptr;
  REQUIRE(hipStreamCreate(&s) == hipSuccess);
  mori_hip_standin_clear_launches();
  int* out = reinterpret_cast<int*>(0x1000);
  long scale = 7;
  void* params[] = {&out, &scale};
  std::vector<uint8_t> dst(64, 0), src(64, 9);
  mori_hip_standin_hold_streams(1);
  REQUIRE(hipModuleLaunchKernel(f, 2, 1, 1, 64, 1, 1, 0, s, params, nullptr) == hipSuccess);
  REQUIRE(hipMemcpyAsync(dst.data(), src.data(), 64, hipMemcpyHostToHost, s) == hipSuccess);
  scale = 8;  // arguments are copied at launch
  REQUIRE(hipModuleLaunchKernel(f, 3, 1, 1, 32, 1, 1, 0, s, params, nullptr) == hipSuccess);
  CHECK(mori_hip_standin_pending() == 3);
  CHECK(mori_hip_standin_launch_count() == 0);
  CHECK(dst[0] == 0);
  CHECK(hipStreamQuery(s) == hipErrorNotReady);
  mori_hip_standin_hold_streams(0);
  REQUIRE(hipStreamSynchronize(s) == hipSuccess);
  CHECK(dst[63] == 9);
  REQUIRE(mori_hip_standin_launch_count() == 2);
  MoriHipStandinLaunch a{}, b{};
  REQUIRE(mori_hip_standin_launch(0, &a) == 0);
  REQUIRE(mori_hip_standin_launch(1, &b) == 0);
  CHECK(std::string(a.kernel) == "mori_test_my_pe");
  CHECK(a.grid[0] == 2);
  CHECK(b.block[0] == 32);
  CHECK(a.arg_bytes == 16);  // int* at 0, long at 8 (the code object's metadata)
  long a_scale = 0, b_scale = 0;
  std::memcpy(&a_scale, a.args + 8, 8);
  std::memcpy(&b_scale, b.args + 8, 8);
  CHECK(a_scale == 7);
  CHECK(b_scale == 8);
  CHECK(a.sequence + 1 == b.sequence);
  CHECK(a.stream == s);
  CHECK(hipStreamDestroy(s) == hipSuccess);
  CHECK(hipModuleUnload(m) == hipSuccess);
}

TEST_CASE(
    "capture refuses waits and allocation and invalidates as clr does and the graph replays") {
  hipStream_t s = nullptr;
  REQUIRE(hipStreamCreate(&s) == hipSuccess);
  CHECK(hipStreamBeginCapture(nullptr, hipStreamCaptureModeGlobal) ==
        hipErrorStreamCaptureUnsupported);
  REQUIRE(hipStreamBeginCapture(s, hipStreamCaptureModeGlobal) == hipSuccess);
  CHECK(hipStreamBeginCapture(s, hipStreamCaptureModeGlobal) == hipErrorIllegalState);
  std::vector<uint8_t> dst(16, 0), src(16, 3);
  REQUIRE(hipMemcpyAsync(dst.data(), src.data(), 16, hipMemcpyHostToHost, s) == hipSuccess);
  // Refused, and the capture goes on (hipStreamSynchronize_common returns before invalidating).
  CHECK(hipStreamSynchronize(s) == hipErrorStreamCaptureUnsupported);
  hipGraph_t g = nullptr;
  REQUIRE(hipStreamEndCapture(s, &g) == hipSuccess);
  CHECK(dst[0] == 0);  // captured, not run
  size_t nodes = 0;
  REQUIRE(hipGraphGetNodes(g, nullptr, &nodes) == hipSuccess);
  CHECK(nodes == 1);
  hipGraphExec_t exec = nullptr;
  REQUIRE(hipGraphInstantiate(&exec, g, nullptr, nullptr, 0) == hipSuccess);
  REQUIRE(hipGraphLaunch(exec, s) == hipSuccess);
  REQUIRE(hipStreamSynchronize(s) == hipSuccess);
  CHECK(dst[15] == 3);
  CHECK(hipGraphExecDestroy(exec) == hipSuccess);
  CHECK(hipGraphDestroy(g) == hipSuccess);
  // Allocating, a device-wide wait and a blocking copy are refused and invalidate the capture.
  void* p = nullptr;
  for (int call = 0; call < 3; ++call) {
    INFO("call " << call);
    REQUIRE(hipStreamBeginCapture(s, hipStreamCaptureModeGlobal) == hipSuccess);
    if (call == 0) CHECK(hipMalloc(&p, 64) == hipErrorStreamCaptureUnsupported);
    if (call == 1) CHECK(hipDeviceSynchronize() == hipErrorStreamCaptureUnsupported);
    if (call == 2)
      CHECK(hipMemcpy(dst.data(), src.data(), 16, hipMemcpyHostToHost) ==
            hipErrorStreamCaptureImplicit);
    CHECK(hipStreamEndCapture(s, &g) == hipErrorStreamCaptureInvalidated);
    CHECK(g == nullptr);
  }
  CHECK(hipStreamDestroy(s) == hipSuccess);
}

TEST_CASE("a launch that traps aborts the process with ROCm's queue-error line") {
  std::vector<char> image = read_module();
  const mori::test::ChildEnd end = mori::test::run_reading_stderr([&] {
    hipModule_t m = nullptr;
    hipFunction_t f = nullptr;
    if (hipModuleLoadData(&m, image.data()) != hipSuccess ||
        hipModuleGetFunction(&f, m, "mori_test_my_pe") != hipSuccess)
      _exit(3);
    int* out = nullptr;
    long scale = 1;
    void* params[] = {&out, &scale};
    mori_hip_standin_trap_next_launch();
    if (hipModuleLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, nullptr, params, nullptr) != hipSuccess)
      _exit(4);
    (void)hipDeviceSynchronize();  // never returns: the trap aborts first
    _exit(5);
  });
  INFO(end.text);
  CHECK(WIFSIGNALED(end.status));
  CHECK(WTERMSIG(end.status) == SIGABRT);
  CHECK(end.text.find("aborting with error : HSA_STATUS_ERROR_EXCEPTION") != std::string::npos);
}
