// RdmaEngine<Provider> (transport/rdma_engine.hpp) against a software NIC built from the provider's
// codec, in one process: many lanes post writes, reads and atomics into a 64-entry SQ that wraps
// many times; error completions and dropped completions fail with the queue's indices.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "backend/host/softnic/codec.hpp"
#include "device_state_guard.hpp"
#include "mori/host/launch.hpp"
#include "mori/provider/ionic.hpp"
#include "mori/provider/mlx5.hpp"
#include "mori/state/gpu_states.hpp"
#include "mori/transport/rdma_engine.hpp"

namespace mp = mori::provider;
namespace plat = mori::platform;
using mori::host::launch;
using mori::softnic::Codec;
using mori::softnic::CompletionStatus;
using mori::state::RdmaEndpoint;
using mori::transport::RdmaEngine;
using mp::Opcode;
using mp::WorkRequest;

namespace {

constexpr uint32_t kSqWqes = 64;
constexpr uint32_t kQpn = 7;
constexpr int kPe = 1;
constexpr uint64_t kNever = ~uint64_t{0};

template <typename P>
const Codec& codec_of();
template <>
const Codec& codec_of<mp::Mlx5>() {
  return mori::softnic::mlx5_codec();
}
template <>
const Codec& codec_of<mp::Ionic>() {
  return mori::softnic::ionic_codec();
}

// One QP and a software NIC thread that executes its WQEs on this process's memory (keys are not
// checked here). Fault injection: an error completion for WQE fail_at (then the QP stops), no
// completions from WQE drop_from on.
template <typename P>
struct FakeQp {
  const Codec& codec = codec_of<P>();
  uint8_t* sq = static_cast<uint8_t*>(std::aligned_alloc(64, P::sq_bytes(kSqWqes)));
  std::vector<uint8_t> cq;
  uint32_t dbr[2] = {};
  uint64_t db = 0;
  RdmaEndpoint ep{};
  uint64_t fail_at = kNever, drop_from = kNever;
  std::vector<uint8_t> fenced;  // by SQ index: the WQE carried the fence flag
  std::string nic_error;        // the first WQE the codec rejected
  std::atomic<bool> stop{false};
  std::thread nic;

  explicit FakeQp(size_t max_wqes = 0) : fenced(max_wqes, 0) {
    std::memset(sq, 0, P::sq_bytes(kSqWqes));
    // A ring of sq_wqes entries, as the driver hands it over: enough for one CQE per WQE.
    const uint32_t cq_entries = kSqWqes;
    cq.assign(cq_entries * P::kCqeBytes, 0);
    P::init_cq(cq.data(), cq_entries);
    ep.sq = sq;
    ep.cq = cq.data();
    ep.dbr = dbr;
    ep.db = &db;
    ep.sq_wqes = kSqWqes;
    ep.cq_entries = cq_entries;
    ep.qpn = kQpn;
    ep.cqn = 0x42;
  }
  ~FakeQp() {
    halt();
    std::free(sq);
  }
  void start() {
    nic = std::thread([this] { run(); });
  }
  void halt() {
    stop.store(true);
    if (nic.joinable()) nic.join();
  }

  void run() {
    uint64_t last = 0, produced = 0;
    bool broken = false;
    while (!stop.load(std::memory_order_acquire)) {
      const uint64_t announced = broken ? last : codec.announced(ep, last);
      if (announced == last) {
        std::this_thread::yield();
        continue;
      }
      for (; last < announced; ++last) {
        WorkRequest wr{};
        std::string why;
        if (!codec.decode(sq + (last & (kSqWqes - 1)) * P::kWqeBytes, last, &wr, &why) ||
            (std::is_same_v<P, mp::Mlx5> && wr.qpn != kQpn)) {  // only mlx5's WQE names its QP
          nic_error = "WQE " + std::to_string(last) + ": " + (why.empty() ? "wrong qpn" : why);
          broken = true;
          break;
        }
        if (last == fail_at) {
          codec.complete(ep, &produced, last, wr, CompletionStatus::kRemoteAccess);
          broken = true;  // the QP is in error: nothing after it executes
          break;
        }
        if (last < fenced.size()) fenced[last] = wr.fence;
        execute(wr);
        if (wr.signaled && last < drop_from)
          codec.complete(ep, &produced, last, wr, CompletionStatus::kSuccess);
      }
    }
  }

  static void execute(const WorkRequest& wr) {
    auto* remote = reinterpret_cast<void*>(wr.remote_addr);
    auto* local = reinterpret_cast<void*>(wr.local_addr);
    switch (wr.opcode) {
      case Opcode::kWrite:
        std::memcpy(remote, local, wr.bytes);
        break;
      case Opcode::kWriteInline:
        std::memcpy(remote, wr.inline_data, wr.bytes);
        break;
      case Opcode::kRead:
        std::memcpy(local, remote, wr.bytes);
        break;
      case Opcode::kFetchAdd:
        if (wr.width == 8) {
          *static_cast<uint64_t*>(local) =
              __atomic_fetch_add(static_cast<uint64_t*>(remote), wr.operand, __ATOMIC_SEQ_CST);
        } else {
          *static_cast<uint32_t*>(local) = __atomic_fetch_add(
              static_cast<uint32_t*>(remote), static_cast<uint32_t>(wr.operand), __ATOMIC_SEQ_CST);
        }
        break;
      case Opcode::kCompareSwap: {
        uint64_t expected = wr.compare;
        __atomic_compare_exchange_n(static_cast<uint64_t*>(remote), &expected, wr.operand, false,
                                    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
        *static_cast<uint64_t*>(local) = expected;
        break;
      }
    }
  }
};

using DeviceState = mori::test::DeviceStateGuard;

WorkRequest rdma(Opcode op, void* remote, const void* local, uint32_t bytes) {
  WorkRequest wr{};
  wr.opcode = op;
  wr.remote_addr = reinterpret_cast<uint64_t>(remote);
  wr.local_addr = reinterpret_cast<uint64_t>(local);
  wr.bytes = bytes;
  return wr;
}

WorkRequest fetch_add(void* remote, void* old, uint8_t width, uint64_t add) {
  WorkRequest wr = rdma(Opcode::kFetchAdd, remote, old, 0);
  wr.width = width;
  wr.operand = add;
  return wr;
}

// Under a sanitizer the stress runs a tenth of its iterations, still wrapping the SQ over 150
// times: the full run takes over 5 minutes under TSan and 4 under ASan (a debug build), and a
// sanitizer finds a race or a bad access on the first wraps as well as on the thousandth.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = mori::platform::detail::kTsan;
#endif
#else
constexpr bool kSanitized = mori::platform::detail::kTsan;
#endif

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
  REQUIRE(qp.nic_error.empty());
  CHECK(state.record.code == 0);
  CHECK(qp.ep.submitted == kTotal);
  CHECK(qp.ep.completed == kTotal);
  CHECK(qp.ep.reserved == kTotal);

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

// Lanes post writes; WQE 300 completes with a remote access error.
template <typename P>
void error_completion() {
  using Engine = RdmaEngine<P>;
  FakeQp<P> qp;
  qp.fail_at = 300;
  DeviceState state(20'000'000'000);
  std::vector<uint8_t> src(4096, 0x5a), dst(4096, 0);
  qp.start();
  auto status = launch({1}, {8}, [&] {
    for (int k = 0; k < 100; ++k)
      Engine::post(qp.ep, rdma(Opcode::kWrite, dst.data(), src.data(), 64), kPe);
    Engine::quiet(qp.ep, kPe);
  });
  qp.halt();
  CHECK_MESSAGE(qp.nic_error.empty(), qp.nic_error);
  REQUIRE(!status.ok());
  const std::string message = status.message();
  MESSAGE(message);
  CHECK(message.find("error completion: remote access error") != std::string::npos);
  CHECK(message.find("qp 7 posted ") != std::string::npos);
  CHECK(message.find(", cq consumed ") != std::string::npos);
  CHECK(message.find("(PE 1)") != std::string::npos);
  CHECK(state.record.code == static_cast<uint32_t>(mori::state::DeviceErrorCode::kCompletionError));
  CHECK(state.record.pe == kPe);
  CHECK(state.record.qp == kQpn);
  CHECK(state.record.sq_posted > 300);
  CHECK(state.record.sq_completed <= 300);  // never past the failed WQE
  CHECK(std::string(state.record.message).find("remote access error") != std::string::npos);
}

// The NIC stops completing after WQE 4: quiet times out and names the queue's indices.
template <typename P>
void dropped_completion() {
  using Engine = RdmaEngine<P>;
  FakeQp<P> qp;
  qp.drop_from = 5;
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
  const int consumed = 5;
  const std::string expected =
      "quiet timed out after 200 ms: qp 7 posted 10, completed 5, cq "
      "consumed " +
      std::to_string(consumed) + " (PE 1)";
  MESSAGE(status.message());
  CHECK(status.message().find(expected) != std::string::npos);
  CHECK(state.record.code == static_cast<uint32_t>(mori::state::DeviceErrorCode::kTimeout));
  CHECK(state.record.message == expected);
  CHECK(state.record.qp == kQpn);
  CHECK(state.record.sq_posted == 10);
  CHECK(state.record.sq_completed == 5);
  CHECK(state.record.observed == 5);
}

}  // namespace

TEST_CASE(
    "engine mlx5: 256 lanes post >100k requests (10k under a sanitizer) through a 64-entry SQ, "
    "byte-exact") {
  stress<mp::Mlx5>();
}
TEST_CASE(
    "engine ionic: 256 lanes post >100k requests (10k under a sanitizer) through a 64-entry SQ, "
    "byte-exact") {
  stress<mp::Ionic>();
}
TEST_CASE("engine mlx5: an error completion fails with the syndrome and the queue indices") {
  error_completion<mp::Mlx5>();
}
TEST_CASE("engine ionic: an error completion fails with the status and the queue indices") {
  error_completion<mp::Ionic>();
}
TEST_CASE("engine mlx5: a dropped completion makes quiet time out with the queue indices") {
  dropped_completion<mp::Mlx5>();
}
TEST_CASE("engine ionic: a dropped completion makes quiet time out with the queue indices") {
  dropped_completion<mp::Ionic>();
}
