// backend::stream_enqueue on hip through the stand-in: every StreamOpKind is one launch of
// mori_stream_op with the StreamOp as its argument bytes, in stream order; no call waits for the
// stream (the stand-in's workers are held meanwhile), and all of it can be captured in a graph.
#include <doctest/doctest.h>
#include <hip/hip_runtime_api.h>
#include <signal.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "backend/hip/stream_hip.hpp"
#include "fork_children.hpp"
#include "mori/shmem.hpp"
#include "runtime/backend.hpp"
#include "runtime/runtime.hpp"
#include "standin_control.h"
#include "standin_support.hpp"

namespace shmem = mori::shmem;
using mori::runtime::StreamOp;
using mori::runtime::StreamOpKind;

namespace {

constexpr uint32_t kKinds = static_cast<uint32_t>(StreamOpKind::kReducescatter) + 1;

StreamOp op_of(uint32_t kind) {
  StreamOp op{};
  op.kind = static_cast<StreamOpKind>(kind);
  op.pe = 0;
  op.count = 100 + kind;
  op.value = 0xabc0 + kind;
  return op;
}

void init_one_pe() {
  shmem::InitAttr attr;
  attr.rank = 0;
  attr.n_ranks = 1;
  REQUIRE(shmem::get_unique_id(&attr.uid) == 0);
  REQUIRE(shmem::init_attr(shmem::MORI_SHMEM_INIT_WITH_UNIQUEID, &attr) == 0);
}

void check_launches(hipStream_t s, size_t first) {
  REQUIRE(mori_hip_standin_launch_count() == first + kKinds);
  for (uint32_t k = 0; k < kKinds; ++k) {
    MoriHipStandinLaunch l{};
    REQUIRE(mori_hip_standin_launch(first + k, &l) == 0);
    INFO("kind " << k);
    CHECK(std::string(l.kernel) == "mori_stream_op");
    CHECK(l.grid[0] == 1);
    CHECK(l.block[0] == 256);
    CHECK(l.stream == s);
    CHECK(l.arg_bytes == sizeof(StreamOp));
    const StreamOp want = op_of(k);
    CHECK(std::memcmp(l.args, &want, sizeof want) == 0);
  }
}

}  // namespace

TEST_CASE("stream_enqueue: one launch per kind in order without waiting for the stream") {
  init_one_pe();
  hipStream_t s = nullptr;
  REQUIRE(hipStreamCreate(&s) == hipSuccess);
  mori_hip_standin_clear_launches();
  mori_hip_standin_hold_streams(1);
  for (uint32_t k = 0; k < kKinds; ++k) {
    const mori::Status st = mori::backend::stream_enqueue(s, op_of(k));
    CHECK_MESSAGE(st.ok(), st.message());
  }
  CHECK(mori_hip_standin_pending() == kKinds);  // all returned, none ran
  CHECK(mori_hip_standin_launch_count() == 0);
  mori_hip_standin_hold_streams(0);
  REQUIRE(mori::backend::stream_synchronize(s).ok());
  check_launches(s, 0);
  CHECK(hipStreamDestroy(s) == hipSuccess);
  CHECK(shmem::finalize() == 0);
}

TEST_CASE("stream_enqueue under stream capture: the graph replays every op") {
  init_one_pe();
  hipStream_t s = nullptr;
  REQUIRE(hipStreamCreate(&s) == hipSuccess);
  mori_hip_standin_clear_launches();
  REQUIRE(hipStreamBeginCapture(s, hipStreamCaptureModeGlobal) == hipSuccess);
  for (uint32_t k = 0; k < kKinds; ++k) REQUIRE(mori::backend::stream_enqueue(s, op_of(k)).ok());
  // stream_synchronize is the one call that waits, and capture refuses it as ROCm does.
  CHECK(!mori::backend::stream_synchronize(s).ok());
  hipGraph_t g = nullptr;
  REQUIRE(hipStreamEndCapture(s, &g) == hipSuccess);
  size_t nodes = 0;
  REQUIRE(hipGraphGetNodes(g, nullptr, &nodes) == hipSuccess);
  CHECK(nodes == kKinds);
  hipGraphExec_t exec = nullptr;
  REQUIRE(hipGraphInstantiate(&exec, g, nullptr, nullptr, 0) == hipSuccess);
  REQUIRE(hipGraphLaunch(exec, s) == hipSuccess);
  REQUIRE(hipStreamSynchronize(s) == hipSuccess);
  check_launches(s, 0);
  CHECK(hipGraphExecDestroy(exec) == hipSuccess);
  CHECK(hipGraphDestroy(g) == hipSuccess);
  CHECK(hipStreamDestroy(s) == hipSuccess);
  CHECK(shmem::finalize() == 0);
}

TEST_CASE("the stream kernel's module holds the published device state") {
  init_one_pe();
  auto module = static_cast<hipModule_t>(mori::backend::stream_kernel_module());
  REQUIRE(module != nullptr);
  mori::state::GpuStates seen{};
  REQUIRE(mori::test::read_module_states(module, &seen) == "");
  CHECK(seen.abi_version == mori::state::kGpuStatesAbiVersion);
  CHECK(seen.rank == 0);
  CHECK(seen.n_pes == 1);
  void* obj = shmem::malloc(4096);
  REQUIRE(obj != nullptr);
  CHECK(seen.heap_base <= reinterpret_cast<uint64_t>(obj));
  CHECK(reinterpret_cast<uint64_t>(obj) < seen.heap_base + seen.heap_size);
  CHECK(shmem::free(obj) == 0);
  CHECK(shmem::finalize() == 0);
}

// The device's part (writing the record, then trapping) is played by the test: the record is
// written from the host, and the stand-in traps the stream kernel's launch. ROCm's queue callback
// line comes first, then mori's abort report of the record.
TEST_CASE("a stream op that traps aborts the process and mori prints the device-error record") {
  const mori::test::ChildEnd end = mori::test::run_reading_stderr([] {
    shmem::InitAttr attr;
    attr.rank = 0;
    attr.n_ranks = 1;
    if (shmem::get_unique_id(&attr.uid) != 0 ||
        shmem::init_attr(shmem::MORI_SHMEM_INIT_WITH_UNIQUEID, &attr) != 0)
      _exit(3);
    mori::state::DeviceError* record = mori::runtime::current()->error;
    record->code = static_cast<uint32_t>(mori::state::DeviceErrorCode::kBadPe);
    record->pe = 5;
    std::snprintf(record->message, sizeof record->message, "stream putmem: PE 5 of 1");
    mori_hip_standin_trap_next_launch();
    if (!mori::backend::stream_enqueue(nullptr, op_of(0)).ok()) _exit(4);
    (void)hipDeviceSynchronize();  // never returns: the trap aborts first
    _exit(5);
  });
  INFO(end.text);
  CHECK(WIFSIGNALED(end.status));
  CHECK(WTERMSIG(end.status) == SIGABRT);
  const size_t rocm = end.text.find("aborting with error : HSA_STATUS_ERROR_EXCEPTION");
  const size_t mori = end.text.find("mori: device error: ");
  CHECK(rocm != std::string::npos);
  REQUIRE(mori != std::string::npos);
  CHECK(rocm < mori);
  CHECK(end.text.find("PE out of range", mori) != std::string::npos);
  CHECK(end.text.find("stream putmem: PE 5 of 1", mori) != std::string::npos);
}

TEST_CASE("on an arch without a stream kernel init works and stream_enqueue names the arch") {
  auto run = mori::test::run_ranks(1, [](int rank) -> std::string {
    setenv("MORI_HIP_STANDIN_ARCH", "gfx950", 1);  // not in this build's GPU_TARGETS
    shmem::InitAttr attr;
    attr.rank = 0;
    attr.n_ranks = 1;
    PE_CHECK(shmem::get_unique_id(&attr.uid) == 0);
    PE_CHECK(shmem::init_attr(shmem::MORI_SHMEM_INIT_WITH_UNIQUEID, &attr) == 0);
    PE_CHECK(mori::backend::stream_kernel_module() == nullptr);
    const mori::Status s = mori::backend::stream_enqueue(nullptr, op_of(0));
    PE_CHECK(!s.ok());
    PE_CHECK(s.message() ==
             "the hip backend has no stream kernel for gfx950: libmori_shmem was built for "
             "GPU_TARGETS without it");
    PE_CHECK(shmem::finalize() == 0);
    return "";
  });
  REQUIRE(run.children.size() == 1);
  CHECK(run.children[0].text == "");
  CHECK(run.children[0].exit_code == 0);
}
