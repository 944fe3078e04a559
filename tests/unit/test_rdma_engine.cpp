// RdmaEngine<Provider> (transport/rdma_engine.hpp) against the software NIC (SoftNic, through
// softnic_rig.hpp's Rig), in one process, for every provider: many lanes post writes, reads and
// atomics into a 64-entry SQ that wraps many times; error completions and dropped completions
// (the NIC's fault injection) fail with the queue's indices.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "mori/state/gpu_states.hpp"
#include "sanitized.hpp"
#include "softnic_rig.hpp"

namespace {

using namespace mori::test::softnic_rig;

constexpr uint64_t kNever = ~uint64_t{0};
// BNXT's MSN table restates each WQE's PSNs. The QP's initial send PSN sits 16 below the 24-bit
// wrap, so the first few WQEs carry the sequence across it; the path MTU is small enough that the
// tests' writes (up to 48 bytes) span one or two packets.
constexpr uint32_t kBnxtInitialPsn = 0xFFFFF0;
constexpr uint32_t kBnxtMtu = 32;

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
  constexpr bool kBnxt = std::is_same_v<P, mp::Bnxt>;
  // Per lane and iteration: a write and a fetch-add; every 8th also a fence, an inline write, a
  // read and (mlx5) a 32-bit fetch-add.
  constexpr int kExtras = (kIters + 7) / 8;
  constexpr size_t kPerLane = 2 * kIters + kExtras * (kAtomic32 ? 3 : 2);
  constexpr size_t kTotal = kPerLane * kLanes;
  static_assert(kTotal >= (kSanitized ? 10000 : 100000), "the SQ must wrap many times");
  constexpr size_t kSlots = size_t{kLanes} * kIters, kFences = size_t{kLanes} * kExtras;
  constexpr size_t kSlotWords = kSlot / 8;
  // This process's memory: write sources, fetch-add old values (8 bytes; 4 bytes, a word each),
  // read destinations. PE 1's: write destinations, the counters (the 4-byte one in a word of its
  // own), inline destinations (two words each), read sources.
  constexpr size_t kSrc = 0, kOld = kSrc + kSlots * kSlotWords, kOld32 = kOld + kSlots;
  constexpr size_t kReadDst = kOld32 + kFences, kLocalEnd = kReadDst + kFences;
  constexpr size_t kDst = 0, kCounter = kDst + kSlots * kSlotWords;
  constexpr size_t kCounter32 = kCounter + kCounters, kInl = kCounter32 + 1;
  constexpr size_t kReadSrc = kInl + 2 * kFences, kHeapEnd = kReadSrc + kFences;

  // By SQ index: the WQE carried the fence flag. And WQEs that named another QP than theirs (only
  // mlx5's WQE names it; the NIC accepts a zero there).
  std::vector<uint8_t> fenced(kTotal, 0);
  uint64_t foreign_qpn = 0;
  sn::SoftNicOptions options = Rig<P>::no_env();
  options.on_wqe = [&](size_t, uint64_t index, const WorkRequest& wr) {
    if (index < fenced.size()) fenced[index] = wr.fence;
    foreign_qpn += std::is_same_v<P, mp::Mlx5> && wr.qpn != kQpn;
  };
  RigShape shape{.heap_words = kHeapEnd, .local_words = kLocalEnd};
  if constexpr (kBnxt) shape.initial_psn = kBnxtInitialPsn, shape.path_mtu = kBnxtMtu;
  Rig<P> rig(options, shape);
  DeviceState state(20'000'000'000);  // a hang fails the test instead of blocking it
  auto* src = reinterpret_cast<uint8_t*>(&rig.local[kSrc]);
  for (size_t i = 0; i < kSlots * kSlot; ++i) src[i] = static_cast<uint8_t>(i * 131 + 7);
  std::fill_n(&rig.local[kOld], kSlots + kFences, kNever);  // 8- and 4-byte old values
  for (size_t e = 0; e < kFences; ++e) rig.heap[kReadSrc + e] = e * 0x9e3779b97f4a7c15ull;
  // Around each fence: the lane's last index before it and its first after it.
  std::vector<uint64_t> before_fence(kFences), after_fence(kFences);
  rig.start();

  auto status = launch({kBlocks}, {kThreads}, [&] {
    const int g = plat::block_rank() * kThreads + plat::thread_rank();
    RdmaEndpoint& ep = rig.ep;
    uint64_t index = 0;
    for (int k = 0; k < kIters; ++k) {
      const size_t slot = size_t{static_cast<size_t>(g)} * kIters + k;
      const uint32_t bytes = 1 + (g + k) % kSlot;
      Engine::post(ep,
                   rig.rdma(Opcode::kWrite, rig.remote(kDst + slot * kSlotWords),
                            kSrc + slot * kSlotWords, bytes),
                   kPe);
      index = Engine::post(
          ep, rig.atomic(Opcode::kFetchAdd, kCounter + k % kCounters, kOld + slot, 8, 1), kPe);
      if (k % 8 == 0) {
        const size_t e = size_t{static_cast<size_t>(g)} * kExtras + k / 8;
        // The atomic above must complete before the read below starts: fence.
        Engine::fence(ep);
        before_fence[e] = index;
        const uint64_t words[2] = {0x0102030405060708ull * (e + 1), ~e};
        WorkRequest inl = rig.rdma(Opcode::kWriteInline, rig.remote(kInl + 2 * e), 0, 12);
        inl.inline_data = words;
        after_fence[e] = Engine::post(ep, inl, kPe);
        Engine::post(ep, rig.rdma(Opcode::kRead, rig.remote(kReadSrc + e), kReadDst + e, 8), kPe);
        if constexpr (kAtomic32)
          Engine::post(ep, rig.atomic(Opcode::kFetchAdd, kCounter32, kOld32 + e, 4, 3), kPe);
      }
    }
    Engine::quiet(ep, kPe);
  });
  rig.nic->stop();
  // A WQE the NIC rejected (a decode failure, BNXT's MSN entry off its own PSN count) says why.
  REQUIRE_MESSAGE(rig.nic->qp_error(0).empty(), rig.nic->qp_error(0));
  REQUIRE_MESSAGE(status.ok(), status.message());
  CHECK(state.record.code == 0);
  CHECK(rig.ep.submitted == kTotal);
  CHECK(rig.ep.completed == kTotal);
  CHECK(rig.ep.reserved == kTotal);
  CHECK(rig.nic->executed() == kTotal);
  CHECK(foreign_qpn == 0);
  if constexpr (kBnxt) {
    // The NIC checked every WQE's MSN entry against its own PSN count, which ends at the initial
    // PSN plus every WQE's packets (modulo 2^24): a write of b bytes sends ceil(b / 32),
    // everything else 8 bytes or fewer, one packet. The engine's count ends at the same PSN.
    uint64_t packets = kTotal - kSlots;
    for (int g = 0; g < kLanes; ++g)
      for (int k = 0; k < kIters; ++k) packets += (1 + (g + k) % kSlot + kBnxtMtu - 1) / kBnxtMtu;
    CHECK(rig.nic->next_psn(0) == ((kBnxtInitialPsn + packets) & 0xFFFFFF));
    CHECK(rig.ep.provider_state == rig.nic->next_psn(0));
  }

  // Writes: byte-exact, nothing past each transfer.
  const auto* dst = reinterpret_cast<const uint8_t*>(&rig.heap[kDst]);
  size_t bad = 0;
  for (size_t slot = 0; slot < kSlots; ++slot) {
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
    for (size_t slot = 0; slot < kSlots; ++slot)
      if (slot % kIters % kCounters == static_cast<size_t>(c))
        seen.push_back(rig.local[kOld + slot]);
    CHECK(rig.heap[kCounter + c] == seen.size());
    std::sort(seen.begin(), seen.end());
    bool exact = true;
    for (size_t i = 0; i < seen.size(); ++i) exact &= seen[i] == i;
    CHECK(exact);
  }
  if constexpr (kAtomic32) {
    uint32_t counter32;
    std::memcpy(&counter32, &rig.heap[kCounter32], 4);
    CHECK(counter32 == 3u * kFences);
    CHECK((rig.heap[kCounter32] >> 32) == 0);  // no carry into the neighbour
    // The old values, landed as the NIC writes a 4-byte atomic's result (MLX5: big-endian).
    std::vector<uint32_t> olds32(kFences);
    for (size_t e = 0; e < kFences; ++e) {
      std::memcpy(&olds32[e], &rig.local[kOld32 + e], 4);
      if (sn::codec_for<P>().result32_big_endian) olds32[e] = __builtin_bswap32(olds32[e]);
    }
    std::sort(olds32.begin(), olds32.end());
    bool exact = true;
    for (size_t i = 0; i < olds32.size(); ++i) exact &= olds32[i] == 3 * i;
    CHECK(exact);
  }
  // Inline writes (12 bytes of two words) and reads.
  bool inline_ok = true, read_ok = true, fence_ok = true;
  for (size_t e = 0; e < kFences; ++e) {
    inline_ok &= rig.heap[kInl + 2 * e] == 0x0102030405060708ull * (e + 1);
    inline_ok &= rig.heap[kInl + 2 * e + 1] == (~uint64_t{e} & 0xffffffffull);
    read_ok &= rig.local[kReadDst + e] == e * 0x9e3779b97f4a7c15ull;
    // Some WQE after the lane's atomic and at or before its next WQE carried the fence flag.
    bool any = false;
    for (uint64_t i = before_fence[e] + 1; i <= after_fence[e]; ++i) any |= fenced[i] != 0;
    fence_ok &= any;
  }
  CHECK(inline_ok);
  CHECK(read_ok);
  CHECK(fence_ok);
  const size_t fences = std::count(fenced.begin(), fenced.end(), 1);
  CHECK(fences >= 1);
  CHECK(fences <= kFences);
}

// Lanes post writes; the NIC fails WQE 300 (fault injection: CompletionStatus::kGeneral).
// `status` is how the provider names that status: its text and its code, as the engine's message
// prints them.
template <typename P>
void error_completion(const std::string& status) {
  using Engine = RdmaEngine<P>;
  sn::SoftNicOptions options = Rig<P>::no_env();
  options.faults.error_at = 300;
  Rig<P> rig(options);
  DeviceState state(20'000'000'000);
  std::fill_n(rig.local.begin(), 8, 0x5a5a5a5a5a5a5a5aull);
  rig.start();
  auto result = launch({1}, {8}, [&] {
    for (int k = 0; k < 100; ++k)
      Engine::post(rig.ep, rig.rdma(Opcode::kWrite, rig.remote(0), 0, 64), kPe);
    Engine::quiet(rig.ep, kPe);
  });
  rig.nic->stop();
  // The NIC refused nothing but WQE 300, and executed none after it (the QP is in error).
  CHECK(rig.nic->qp_error(0) == "WQE 300: injected error (MORI_SOFTNIC_FAULT error:300)");
  CHECK(rig.nic->executed() == 300);
  REQUIRE(!result.ok());
  // How far the other lanes had posted when the error was seen varies: past the failed WQE, and
  // less than a ring beyond the WQEs completed before it (flow control).
  const uint32_t posted = state.record.queue.posted;
  CHECK(posted > 300);
  CHECK(posted < 300 + kSqWqes);
  // Every write is signalled (a lane's batch is one WQE): the CQ holds a completion for each of
  // WQEs 0..299, then the error, and the poll that failed consumed them all. It holds the poll
  // lock until the record is written, so no lane has consumed a flush CQE behind the error yet.
  const std::string expected = "RDMA " + std::string(P::kName) + " error completion: " + status +
                               " on WQE 300, qp 7 posted " + std::to_string(posted) +
                               ", completed 300, cq consumed 301 (PE 1)";
  // The record keeps the first failure: the error's, since the NIC flushes only the WQEs behind
  // it. The launch reports the first lane to trap, which can be one that polled a flush CQE after
  // the poll lock was released.
  CHECK(state.record.message == expected);
  CHECK_MESSAGE(result.message().find("RDMA " + std::string(P::kName) + " error completion: ") !=
                    std::string::npos,
                result.message());
  CHECK(state.record.code == static_cast<uint32_t>(mori::state::DeviceErrorCode::kCompletionError));
  CHECK(state.record.pe == kPe);
  CHECK(state.record.queue.qp == kQpn);
  CHECK(state.record.queue.completed == 300);
}

// The NIC never completes the last of ten WQEs (fault injection: drop:9): quiet times out and
// names the queue's indices. Only the last one is missing, so a quiet that waits for one
// completion fewer than it posted returns instead (tests/mutation/mutants.txt,
// engine.quiet_one_short).
template <typename P>
void dropped_completion() {
  using Engine = RdmaEngine<P>;
  sn::SoftNicOptions options = Rig<P>::no_env();
  options.faults.drop_at = 9;
  Rig<P> rig(options);
  DeviceState state(200'000'000);
  std::fill_n(rig.local.begin(), 8, 0x0101010101010101ull);
  rig.start();
  auto status = launch({1}, {1}, [&] {
    for (int k = 0; k < 10; ++k)
      Engine::post(rig.ep, rig.rdma(Opcode::kWrite, rig.remote(0), 0, 64), kPe);
    Engine::quiet(rig.ep, kPe);
  });
  rig.nic->stop();
  CHECK_MESSAGE(rig.nic->qp_error(0).empty(), rig.nic->qp_error(0));
  CHECK(rig.nic->executed() == 10);  // the last write ran; only its completion is missing
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

// Every provider's cases, from one list. The error completion's status (the NIC's kGeneral) is
// named as the provider decodes it: mlx5 MLX5_CQE_SYNDROME_REMOTE_OP_ERR = 0x14, Ionic
// IONIC_STS_LOCAL_QP_OPER_ERR = 2 (rdma-core providers/ionic/ionic_fw.h), BNXT
// BNXT_RE_REQ_ST_REM_OP = 0x08 (bnxt_re-abi.h).
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

MORI_ENGINE_CASES(mp::Mlx5, "mlx5", "syndrome", "remote operation error (status 0x14)")
MORI_ENGINE_CASES(mp::Ionic, "ionic", "status", "local QP operation error (status 0x2)")
MORI_ENGINE_CASES(mp::Bnxt, "bnxt", "status", "remote operation (status 0x8)")
