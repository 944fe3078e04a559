// RdmaEngine<Provider> (transport/rdma_engine.hpp) against a software NIC built from the provider's
// codec (rdma_engine_fixture.hpp), in one process, for every provider: many lanes post writes,
// reads and atomics into a 64-entry SQ that wraps many times; error completions and dropped
// completions fail with the queue's indices.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "device_state_guard.hpp"
#include "mori/host/launch.hpp"
#include "mori/state/gpu_states.hpp"
#include "mori/transport/rdma_engine.hpp"
#include "rdma_engine_fixture.hpp"
#include "sanitized.hpp"

namespace mp = mori::provider;
namespace plat = mori::platform;
using mori::host::launch;
using mori::state::RdmaEndpoint;
using mori::transport::RdmaEngine;
using mp::Opcode;
using mp::WorkRequest;
using namespace mori::test::engine;

namespace {

constexpr int kPe = 1;
using DeviceState = mori::test::DeviceStateGuard;

// Under a sanitizer the stress runs a tenth of its iterations, still wrapping the SQ over 150
// times: the full run takes over 5 minutes under TSan and 4 under ASan (a debug build), and a
// sanitizer finds a race or a bad access on the first wraps as well as on the thousandth.
using mori::test::kSanitized;

template <typename P>
void stress() {
  using Engine = RdmaEngine<P>;
  constexpr int kBlocks = 4, kThreads = 64, kLanes = kBlocks * kThreads;
  constexpr int kIters = kSanitized ? 20 : 200;
  constexpr int kSlot = 48, kCounters = 4;
  constexpr bool kAtomic32 = P::kNativeAtomic32;
  // Per lane and iteration: a write and a fetch-add; every 8th also a fence, an inline write, a
  // read and (mlx5) a 32-bit fetch-add.
  constexpr int kExtras = (kIters + 7) / 8;
  constexpr size_t kPerLane = 2 * kIters + kExtras * (kAtomic32 ? 3 : 2);
  constexpr size_t kTotal = kPerLane * kLanes;
  static_assert(kTotal >= (kSanitized ? 10000 : 100000), "the SQ must wrap many times");

  FakeQp<P> qp(kTotal);
  DeviceState state(20'000'000'000);  // a hang fails the test instead of blocking it
  std::vector<uint8_t> src(size_t{kLanes} * kIters * kSlot), dst(src.size(), 0);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint8_t>(i * 131 + 7);
  std::vector<uint64_t> counters(kCounters, 0), olds(size_t{kLanes} * kIters, kNever);
  uint32_t counter32 = 0;
  std::vector<uint32_t> olds32(size_t{kLanes} * kExtras, ~0u);
  std::vector<uint64_t> inline_dst(size_t{kLanes} * kExtras * 2, 0);
  std::vector<uint64_t> read_src(size_t{kLanes} * kExtras), read_dst(read_src.size(), 0);
  for (size_t i = 0; i < read_src.size(); ++i) read_src[i] = i * 0x9e3779b97f4a7c15ull;
  // Around each fence: the lane's last index before it and its first after it.
  std::vector<uint64_t> before_fence(size_t{kLanes} * kExtras), after_fence(before_fence.size());
  qp.start();

  auto status = launch({kBlocks}, {kThreads}, [&] {
    const int g = plat::block_rank() * kThreads + plat::thread_rank();
    RdmaEndpoint& ep = qp.ep;
    uint64_t index = 0;
    for (int k = 0; k < kIters; ++k) {
      const size_t slot = size_t{static_cast<size_t>(g)} * kIters + k;
      const uint32_t bytes = 1 + (g + k) % kSlot;
      Engine::post(ep, rdma(Opcode::kWrite, &dst[slot * kSlot], &src[slot * kSlot], bytes), kPe);
      index = Engine::post(ep, fetch_add(&counters[k % kCounters], &olds[slot], 8, 1), kPe);
      if (k % 8 == 0) {
        const size_t e = size_t{static_cast<size_t>(g)} * kExtras + k / 8;
        // The atomic above must complete before the read below starts: fence.
        Engine::fence(ep);
        before_fence[e] = index;
        const uint64_t words[2] = {0x0102030405060708ull * (e + 1), ~e};
        WorkRequest inl = rdma(Opcode::kWriteInline, &inline_dst[2 * e], nullptr, 12);
        inl.inline_data = words;
        after_fence[e] = Engine::post(ep, inl, kPe);
        Engine::post(ep, rdma(Opcode::kRead, &read_src[e], &read_dst[e], 8), kPe);
        if constexpr (kAtomic32) Engine::post(ep, fetch_add(&counter32, &olds32[e], 4, 3), kPe);
      }
    }
    Engine::quiet(ep, kPe);
  });
  REQUIRE_MESSAGE(status.ok(), status.message());
  qp.halt();
  REQUIRE_MESSAGE(qp.nic_error.empty(), qp.nic_error);
  CHECK(state.record.code == 0);
  CHECK(qp.ep.submitted == kTotal);
  CHECK(qp.ep.completed == kTotal);
  CHECK(qp.ep.reserved == kTotal);
  if constexpr (std::is_same_v<P, mp::Bnxt>) {
    // The NIC checked every WQE's MSN entry against its own count (FakeQp::accept), which ends at
    // the initial PSN plus every WQE's packets (modulo 2^24): a write of b bytes sends
    // ceil(b / 32), everything else 8 bytes or fewer, one packet.
    uint64_t packets = kTotal - size_t{kLanes} * kIters;
    for (int g = 0; g < kLanes; ++g)
      for (int k = 0; k < kIters; ++k) packets += (1 + (g + k) % kSlot + kBnxtMtu - 1) / kBnxtMtu;
    CHECK(qp.next_psn == ((kBnxtInitialPsn + packets) & 0xFFFFFF));
    CHECK(qp.ep.provider_state == qp.next_psn);
  }

  // Writes: byte-exact, nothing past each transfer.
  size_t bad = 0;
  for (size_t slot = 0; slot < size_t{kLanes} * kIters; ++slot) {
    const uint32_t bytes = 1 + (slot / kIters + slot % kIters) % kSlot;
    for (uint32_t b = 0; b < kSlot; ++b) {
      const size_t i = slot * kSlot + b;
      bad += dst[i] != (b < bytes ? src[i] : 0);
    }
  }
  CHECK(bad == 0);
  // Fetch-adds: exact totals, and the old values of each counter are 0, 1, ..., n - 1.
  for (int c = 0; c < kCounters; ++c) {
    std::vector<uint64_t> seen;
    for (size_t slot = 0; slot < olds.size(); ++slot)
      if (slot % kIters % kCounters == static_cast<size_t>(c)) seen.push_back(olds[slot]);
    CHECK(counters[c] == seen.size());
    std::sort(seen.begin(), seen.end());
    bool exact = true;
    for (size_t i = 0; i < seen.size(); ++i) exact &= seen[i] == i;
    CHECK(exact);
  }
  if constexpr (kAtomic32) {
    CHECK(counter32 == 3u * olds32.size());
    std::sort(olds32.begin(), olds32.end());
    bool exact = true;
    for (size_t i = 0; i < olds32.size(); ++i) exact &= olds32[i] == 3 * i;
    CHECK(exact);
  }
  // Inline writes (12 bytes of two words) and reads.
  bool inline_ok = true, read_ok = true, fence_ok = true;
  for (size_t e = 0; e < read_src.size(); ++e) {
    inline_ok &= inline_dst[2 * e] == 0x0102030405060708ull * (e + 1);
    inline_ok &= inline_dst[2 * e + 1] == (~uint64_t{e} & 0xffffffffull);
    read_ok &= read_dst[e] == read_src[e];
    // Some WQE after the lane's atomic and at or before its next WQE carried the fence flag.
    bool any = false;
    for (uint64_t i = before_fence[e] + 1; i <= after_fence[e]; ++i) any |= qp.fenced[i] != 0;
    fence_ok &= any;
  }
  CHECK(inline_ok);
  CHECK(read_ok);
  CHECK(fence_ok);
  const size_t fenced = std::count(qp.fenced.begin(), qp.fenced.end(), 1);
  CHECK(fenced >= 1);
  CHECK(fenced <= read_src.size());
}

// Lanes post writes; WQE 300 completes with a remote access error. `status` is how the provider
// names it: its text and its code, as the engine's message prints them.
template <typename P>
void error_completion(const std::string& status) {
  using Engine = RdmaEngine<P>;
  FakeQp<P> qp;
  qp.fail_at = 300;
  DeviceState state(20'000'000'000);
  std::vector<uint8_t> src(4096, 0x5a), dst(4096, 0);
  qp.start();
  auto result = launch({1}, {8}, [&] {
    for (int k = 0; k < 100; ++k)
      Engine::post(qp.ep, rdma(Opcode::kWrite, dst.data(), src.data(), 64), kPe);
    Engine::quiet(qp.ep, kPe);
  });
  qp.halt();
  CHECK_MESSAGE(qp.nic_error.empty(), qp.nic_error);
  REQUIRE(!result.ok());
  // How far the other lanes had posted when the error was seen varies: past the failed WQE, and
  // less than a ring beyond the WQEs completed before it (flow control).
  const uint32_t posted = state.record.queue.posted;
  CHECK(posted > 300);
  CHECK(posted < 300 + kSqWqes);
  // Every write is signalled (a lane's batch is one WQE): the CQ holds a completion for each of
  // WQEs 0..299, then the error, and the poll that failed consumed them all.
  const std::string expected = "RDMA " + std::string(P::kName) + " error completion: " + status +
                               " on WQE 300, qp 7 posted " + std::to_string(posted) +
                               ", completed 300, cq consumed 301 (PE 1)";
  CHECK(result.message().find(expected) != std::string::npos);
  CHECK(state.record.message == expected);
  CHECK(state.record.code == static_cast<uint32_t>(mori::state::DeviceErrorCode::kCompletionError));
  CHECK(state.record.pe == kPe);
  CHECK(state.record.queue.qp == kQpn);
  CHECK(state.record.queue.completed == 300);
}

// The NIC never completes the last of ten WQEs: quiet times out and names the queue's indices. Only
// the last one is missing, so a quiet that waits for one completion fewer than it posted returns
// instead (tests/mutation/mutants.txt, engine.quiet_one_short).
template <typename P>
void dropped_completion() {
  using Engine = RdmaEngine<P>;
  FakeQp<P> qp;
  qp.drop_from = 9;
  DeviceState state(200'000'000);
  std::vector<uint8_t> src(64, 1), dst(64, 0);
  qp.start();
  auto status = launch({1}, {1}, [&] {
    for (int k = 0; k < 10; ++k)
      Engine::post(qp.ep, rdma(Opcode::kWrite, dst.data(), src.data(), 64), kPe);
    Engine::quiet(qp.ep, kPe);
  });
  qp.halt();
  CHECK_MESSAGE(qp.nic_error.empty(), qp.nic_error);
  REQUIRE(!status.ok());
  // The ring consumed one CQE per completed WQE.
  const int consumed = 9;
  const std::string expected =
      "quiet timed out after 200 ms: qp 7 posted 10, completed 9, cq "
      "consumed " +
      std::to_string(consumed) + " (PE 1)";
  MESSAGE(status.message());
  CHECK(status.message().find(expected) != std::string::npos);
  CHECK(state.record.code == static_cast<uint32_t>(mori::state::DeviceErrorCode::kTimeout));
  CHECK(state.record.message == expected);
  CHECK(state.record.queue.qp == kQpn);
  CHECK(state.record.queue.posted == 10);
  CHECK(state.record.queue.completed == 9);
  CHECK(state.record.observed == 9);
}

}  // namespace

// Every provider's cases, from one list. The error completion's status is named as the provider
// decodes it: mlx5 MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR = 0x13, Ionic IONIC_STS_REMOTE_ACC_ERR =
// 9 (rdma-core providers/ionic/ionic_fw.h), BNXT BNXT_RE_REQ_ST_REM_ACC = 0x07 (bnxt_re-abi.h).
#define MORI_ENGINE_CASES(P, family, status_name, status)                                     \
  TEST_CASE("engine " family                                                                  \
            ": 256 lanes post >100k requests (10k under a sanitizer) through a 64-entry SQ, " \
            "byte-exact") {                                                                   \
    stress<P>();                                                                              \
  }                                                                                           \
  TEST_CASE("engine " family ": an error completion fails with the " status_name              \
            " and the queue indices") {                                                       \
    error_completion<P>(status);                                                              \
  }                                                                                           \
  TEST_CASE("engine " family                                                                  \
            ": a dropped completion makes quiet time out with the queue indices") {           \
    dropped_completion<P>();                                                                  \
  }

MORI_ENGINE_CASES(mp::Mlx5, "mlx5", "syndrome", "remote access error (status 0x13)")
MORI_ENGINE_CASES(mp::Ionic, "ionic", "status", "remote access error (status 0x9)")
MORI_ENGINE_CASES(mp::Bnxt, "bnxt", "status", "remote access (status 0x7)")
