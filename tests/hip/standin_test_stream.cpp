// backend::stream_enqueue on hip through the stand-in: every StreamOpKind is one launch of
// mori_stream_op with the StreamOp as its argument bytes, in stream order; no call waits for the
// stream (the stand-in's workers are held meanwhile), and all of it can be captured in a graph.
#include <doctest/doctest.h>
#include <hip/hip_runtime_api.h>
#include <signal.h>

#include <cstdio>
#include <cstring>
#include <iterator>
#include <string>
#include <utility>

#include "backend/hip/stream_hip.hpp"
#include "backend/hip/stream_kernel_images.hpp"
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
    setenv("MORI_HIP_STANDIN_ARCH", "gfx1100", 1);  // never in GPU_TARGETS
    shmem::InitAttr attr;
    attr.rank = 0;
    attr.n_ranks = 1;
    PE_CHECK(shmem::get_unique_id(&attr.uid) == 0);
    PE_CHECK(shmem::init_attr(shmem::MORI_SHMEM_INIT_WITH_UNIQUEID, &attr) == 0);
    PE_CHECK(mori::backend::stream_kernel_module() == nullptr);
    const mori::Status s = mori::backend::stream_enqueue(nullptr, op_of(0));
    PE_CHECK(!s.ok());
    PE_CHECK(s.message() ==
             "the hip backend has no stream kernel for gfx1100: libmori_shmem was built for "
             "GPU_TARGETS without it");
    PE_CHECK(shmem::finalize() == 0);
    return "";
  });
  REQUIRE(run.children.size() == 1);
  CHECK(run.children[0].text == "");
  CHECK(run.children[0].exit_code == 0);
}

// Each embedded code object (gfx942 by clang-19, gfx950 by clang-22 where it is installed) is one
// that clr's loader takes for its arch: the stand-in reads its ELF header's arch, its symbols and
// its kernel-argument metadata as hipModuleLoadData and hipModuleLaunchKernel do.
TEST_CASE("every embedded stream kernel loads on its own arch and launches") {
  int archs = 0;
  for (const mori::backend::StreamKernelImage* i = mori::backend::kStreamKernelImages; i->arch;
       ++i, ++archs) {
    const std::string arch = i->arch;
    auto run = mori::test::run_ranks(1, [&](int rank) -> std::string {
      setenv("MORI_HIP_STANDIN_ARCH", arch.c_str(), 1);
      shmem::InitAttr attr;
      attr.rank = 0;
      attr.n_ranks = 1;
      PE_CHECK(shmem::get_unique_id(&attr.uid) == 0);
      PE_CHECK(shmem::init_attr(shmem::MORI_SHMEM_INIT_WITH_UNIQUEID, &attr) == 0);
      PE_CHECK(mori::backend::stream_kernel_module() != nullptr);
      mori_hip_standin_clear_launches();
      PE_CHECK(mori::backend::stream_enqueue(nullptr, op_of(0)).ok());
      PE_CHECK(mori::backend::stream_synchronize(nullptr).ok());
      PE_CHECK(mori_hip_standin_launch_count() == 1);
      MoriHipStandinLaunch l{};
      PE_CHECK(mori_hip_standin_launch(0, &l) == 0);
      PE_CHECK(l.arg_bytes == sizeof(StreamOp));
      PE_CHECK(shmem::finalize() == 0);
      return "";
    });
    INFO("arch " << arch);
    REQUIRE(run.children.size() == 1);
    CHECK(run.children[0].text == "");
    CHECK(run.children[0].exit_code == 0);
  }
  CHECK(archs >= 1);
}

// The public stream API on hip: each call checks its arguments on the host, then enqueues exactly
// one launch of the stream kernel carrying its operation, and returns before the stream runs it.
TEST_CASE("every _on_stream call of the host API is one stream-kernel launch of its kind") {
  init_one_pe();
  hipStream_t s = nullptr;
  REQUIRE(hipStreamCreate(&s) == hipSuccess);
  auto* buf = static_cast<int64_t*>(shmem::malloc(4096));
  REQUIRE(buf != nullptr);
  auto* sig = reinterpret_cast<uint64_t*>(buf + 256);
  mori_hip_standin_clear_launches();
  mori_hip_standin_hold_streams(1);
  using K = StreamOpKind;
  const std::pair<K, int> calls[] = {
      {K::kPut, shmem::putmem_on_stream(buf, buf + 8, 64, 0, s)},
      {K::kGet, shmem::getmem_on_stream(buf + 8, buf, 64, 0, s)},
      {K::kPutSignal,
       shmem::putmem_signal_on_stream(buf, buf + 8, 64, sig, 1, shmem::AMO_SIGNAL_ADD, 0, s)},
      {K::kSignalOp, shmem::signal_op_on_stream(sig, 2, shmem::AMO_SIGNAL_SET, 0, s)},
      {K::kSignalWait, shmem::signal_wait_until_on_stream(sig, shmem::CMP_GE, 1, s)},
      {K::kQuiet, shmem::quiet_on_stream(s)},
      {K::kBarrierAll, shmem::barrier_all_on_stream(s)},
      {K::kSyncAll, shmem::sync_all_on_stream(s)},
      {K::kTeamSync, shmem::team_sync_on_stream(shmem::kTeamWorld, s)},
      {K::kTeamBarrier, shmem::barrier_on_stream(shmem::kTeamWorld, s)},
      {K::kBroadcast, shmem::broadcast_on_stream(shmem::kTeamWorld, buf, buf + 16, 4, 0, s)},
      {K::kFcollect, shmem::fcollect_on_stream(shmem::kTeamWorld, buf, buf + 16, 4, s)},
      {K::kAlltoall, shmem::alltoall_on_stream(shmem::kTeamWorld, buf, buf + 16, 4, s)},
      {K::kReduce, shmem::sum_reduce_on_stream(shmem::kTeamWorld, buf, buf + 16, 4, s)},
      {K::kReducescatter,
       shmem::max_reducescatter_on_stream(shmem::kTeamWorld, buf, buf + 16, 4, s)},
  };
  for (const auto& [kind, rc] : calls) CHECK_MESSAGE(rc == 0, shmem::last_error());
  CHECK(mori_hip_standin_pending() == std::size(calls));  // all returned, none ran
  // A bad argument is refused on the host and enqueues nothing.
  CHECK(shmem::putmem_on_stream(buf, buf, 64, 7, s) == -1);
  CHECK(std::string(shmem::last_error()).find("PE 7") != std::string::npos);
  CHECK(mori_hip_standin_pending() == std::size(calls));
  mori_hip_standin_hold_streams(0);
  REQUIRE(shmem::stream_synchronize(s) == 0);
  REQUIRE(mori_hip_standin_launch_count() == std::size(calls));
  for (size_t i = 0; i < std::size(calls); ++i) {
    MoriHipStandinLaunch l{};
    REQUIRE(mori_hip_standin_launch(i, &l) == 0);
    StreamOp op{};
    REQUIRE(l.arg_bytes == sizeof op);
    std::memcpy(&op, l.args, sizeof op);
    INFO("call " << i);
    CHECK(std::string(l.kernel) == "mori_stream_op");
    CHECK(l.stream == s);
    CHECK(op.kind == calls[i].first);
  }
  CHECK(shmem::free(buf) == 0);
  CHECK(hipStreamDestroy(s) == hipSuccess);
  CHECK(shmem::finalize() == 0);
}
