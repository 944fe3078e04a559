// SoftNic (backend/host/softnic/softnic.hpp) under RdmaEngine<Provider>, in one process: "PE 1"
// is a buffer that the translation table maps from a made-up remote base, so every remote address
// the lanes post is translated. Checked: data byte-exact, atomics count-exact, key and bounds
// errors as the provider's error completions, garbage WQE bytes, and each injected fault.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "mori/state/gpu_states.hpp"
#include "providers.hpp"
#include "softnic_rig.hpp"

namespace {

using namespace mori::test::softnic_rig;

// Sets MORI_SOFTNIC_FAULT for the scope (also when a REQUIRE leaves it early).
struct FaultEnv {
  explicit FaultEnv(const char* value) { ::setenv("MORI_SOFTNIC_FAULT", value, 1); }
  ~FaultEnv() { ::unsetenv("MORI_SOFTNIC_FAULT"); }
};

template <typename P>
void data_path(sn::SoftNicOptions options = Rig<P>::no_env()) {
  using Engine = RdmaEngine<P>;
  Rig<P> rig(options);
  DeviceState state(20'000'000'000);
  constexpr int kLanes = 16, kIters = 40, kSlotWords = 8;
  // Local layout: source slots, read destinations, old values of fetch-adds and compare-swaps.
  constexpr size_t kSrc = 0, kReadDst = kSrc + kLanes * kIters * kSlotWords;
  constexpr size_t kOld = kReadDst + kLanes * kIters, kCasOld = kOld + kLanes * kIters;
  constexpr size_t kOld32 = kCasOld + kLanes * kIters;
  // PE 1's layout: write slots, inline slots, the read source, counters, per-lane CAS words.
  constexpr size_t kDst = 0, kInl = kDst + kLanes * kIters * kSlotWords;
  constexpr size_t kReadSrc = kInl + kLanes * kIters * 2, kCounter = kReadSrc + kLanes * kIters;
  constexpr size_t kCas = kCounter + 2;
  static_assert(kOld32 + kLanes * kIters <= kLocalWords && kCas + kLanes <= kHeapWords);
  auto* src = reinterpret_cast<uint8_t*>(&rig.local[kSrc]);
  for (size_t i = 0; i < kLanes * kIters * kSlotWords * 8; ++i) src[i] = uint8_t(i * 131 + 7);
  for (size_t i = 0; i < kLanes * kIters; ++i) rig.heap[kReadSrc + i] = i * 0x9e3779b97f4a7c15ull;
  rig.start();

  const std::string failure = run_lanes(rig, 2, kLanes / 2, [&](int g) {
    for (int k = 0; k < kIters; ++k) {
      const size_t s = size_t(g) * kIters + k;
      const uint32_t bytes = 1 + (g + k) % (kSlotWords * 8);
      Engine::post(
          rig.ep,
          rig.rdma(Opcode::kWrite, rig.remote(kDst + s * kSlotWords), kSrc + s * kSlotWords, bytes),
          kPe);
      const uint64_t words[2] = {0x0102030405060708ull * (s + 1), ~uint64_t{s}};
      WorkRequest inl = rig.rdma(Opcode::kWriteInline, rig.remote(kInl + 2 * s), 0, 12);
      inl.inline_data = words;
      Engine::post(rig.ep, inl, kPe);
      Engine::post(rig.ep, rig.rdma(Opcode::kRead, rig.remote(kReadSrc + s), kReadDst + s, 8), kPe);
      Engine::post(rig.ep, rig.atomic(Opcode::kFetchAdd, kCounter, kOld + s, 8, 1), kPe);
      // Lane g's CAS word holds k before its k-th swap (the QP executes in order).
      Engine::post(rig.ep, rig.atomic(Opcode::kCompareSwap, kCas + g, kCasOld + s, 8, k + 1, k),
                   kPe);
      if constexpr (P::kNativeAtomic32) {
        Engine::post(rig.ep, rig.atomic(Opcode::kFetchAdd, kCounter + 1, kOld32 + s, 4, 3), kPe);
      }
    }
  });
  REQUIRE_MESSAGE(failure.empty(), failure);
  CHECK(rig.nic->qp_error(0).empty());
  constexpr uint64_t kPerIter = P::kNativeAtomic32 ? 6 : 5;
  CHECK(rig.nic->executed() == kLanes * kIters * kPerIter);
  CHECK(rig.ep.completed == kLanes * kIters * kPerIter);

  size_t bad = 0;
  std::vector<bool> seen(kLanes * kIters, false);
  const auto* dst = reinterpret_cast<const uint8_t*>(&rig.heap[kDst]);
  for (size_t s = 0; s < size_t(kLanes) * kIters; ++s) {
    const uint32_t bytes = 1 + (s / kIters + s % kIters) % (kSlotWords * 8);
    for (uint32_t b = 0; b < kSlotWords * 8; ++b) {
      const size_t i = s * kSlotWords * 8 + b;
      bad += dst[i] != (b < bytes ? src[i] : 0);
    }
    bad += rig.heap[kInl + 2 * s] != 0x0102030405060708ull * (s + 1);
    bad += rig.heap[kInl + 2 * s + 1] != (~uint64_t{s} & 0xffffffffull);  // 12 of 16 bytes
    bad += rig.local[kReadDst + s] != rig.heap[kReadSrc + s];
    bad += rig.local[kCasOld + s] != s % kIters;  // every swap saw its expected value
    const uint64_t old = rig.local[kOld + s];
    if (old < seen.size() && !seen[old])
      seen[old] = true;
    else
      ++bad;  // fetch-add old values: a permutation of 0 .. n - 1
  }
  CHECK(bad == 0);
  CHECK(rig.heap[kCounter] == kLanes * kIters);
  for (int g = 0; g < kLanes; ++g) CHECK(rig.heap[kCas + g] == kIters);
  if constexpr (P::kNativeAtomic32) {
    uint32_t counter32;
    std::memcpy(&counter32, &rig.heap[kCounter + 1], 4);
    CHECK(counter32 == 3u * kLanes * kIters);
    CHECK((rig.heap[kCounter + 1] >> 32) == 0);  // no carry into the neighbour
    // The old values landed as MLX5 writes a 4-byte atomic's result: big-endian (the bytes read
    // most significant first here, independently of the provider's decoder). They are the adds
    // of 3 seen in some order: a permutation of 0, 3, 6, ...
    size_t bad32 = 0;
    std::vector<bool> seen32(kLanes * kIters, false);
    for (size_t s = 0; s < size_t(kLanes) * kIters; ++s) {
      const auto* b = reinterpret_cast<const uint8_t*>(&rig.local[kOld32 + s]);
      const uint32_t old = uint32_t{b[0]} << 24 | uint32_t{b[1]} << 16 | uint32_t{b[2]} << 8 | b[3];
      if (old % 3 == 0 && old / 3 < seen32.size() && !seen32[old / 3])
        seen32[old / 3] = true;
      else
        ++bad32;
    }
    CHECK(bad32 == 0);
  }
}

// One bad request (built by make_bad on the rig), then a good write: the bad one fails with
// `text`, and the QP, in error, does not execute the write.
template <typename P, typename Make>
void one_error(Make make_bad, const char* text, const char* nic_reason) {
  Rig<P> rig;
  DeviceState state(5'000'000'000);
  rig.local[0] = 0xabcdef;
  const WorkRequest bad = make_bad(rig);
  rig.start();
  const std::string failure = run_lanes(rig, 1, 1, [&](int) {
    RdmaEngine<P>::post(rig.ep, bad, kPe);
    RdmaEngine<P>::post(rig.ep, rig.rdma(Opcode::kWrite, rig.remote(0), 0, 8), kPe);
  });
  MESSAGE(failure);
  CHECK(failure.find(std::string("error completion: ") + text) != std::string::npos);
  CHECK(failure.find("qp 7 posted 2, completed 0") != std::string::npos);
  CHECK(state.record.code == uint32_t(mori::state::DeviceErrorCode::kCompletionError));
  rig.nic->stop();
  MESSAGE(rig.nic->qp_error(0));
  CHECK(rig.nic->qp_error(0).find(nic_reason) != std::string::npos);
  CHECK(rig.nic->executed() == 0);
  CHECK(rig.heap[0] == 0);
}

template <typename P>
void key_errors() {
  using T = Traits<P>;
  one_error<P>(
      [](Rig<P>& r) {
        WorkRequest wr = r.rdma(Opcode::kWrite, r.remote(0), 0, 8);
        wr.rkey = 0x99;
        return wr;
      },
      T::kRemoteAccess, "WQE 0: rkey 0x99 not registered for PE 1");
  // The last 8 bytes start one byte late: the range ends one byte past PE 1's heap.
  one_error<P>([](Rig<P>& r) { return r.rdma(Opcode::kWrite, r.remote(kHeapWords - 1) + 1, 0, 8); },
               T::kRemoteAccess, "outside rkey 0x1234's region");
  one_error<P>([](Rig<P>& r) { return r.rdma(Opcode::kRead, kRemoteBase - 8, 0, 8); },
               T::kRemoteAccess, "outside rkey 0x1234's region");
  one_error<P>(
      [](Rig<P>& r) {
        WorkRequest wr = r.rdma(Opcode::kWrite, r.remote(0), 0, 8);
        wr.lkey = 0x66;
        return wr;
      },
      T::kLocalProtection, "WQE 0: lkey 0x66 not registered");
  one_error<P>([](Rig<P>& r) { return r.rdma(Opcode::kRead, r.remote(0), kLocalWords - 1, 9); },
               T::kLocalProtection, "outside lkey 0x55's region");
  one_error<P>(
      [](Rig<P>& r) {
        WorkRequest wr = r.atomic(Opcode::kFetchAdd, 0, 1, 8, 1);
        wr.remote_addr += 4;
        return wr;
      },
      T::kInvalid, "misaligned 8-byte atomic");
}

// WQE bytes the engine never wrote, announced by hand: an error completion, not a crash.
template <typename P>
void garbage() {
  {
    Rig<P> rig;
    DeviceState state(5'000'000'000);
    std::memset(rig.sq, 0xff, P::kWqeBytes);
    P::ring_doorbell(rig.ep, 1, rig.sq);
    rig.ep.reserved = rig.ep.submitted = 1;
    rig.start();
    const std::string failure = run_lanes(rig, 1, 1, [](int) {});
    MESSAGE(failure);
    CHECK(failure.find(std::string("error completion: ") + Traits<P>::kInvalid) !=
          std::string::npos);
    rig.nic->stop();
    CHECK(rig.nic->qp_error(0).find("WQE 0: ") == 0);
  }
  // Random entries: each ends with a completion (error, or success of a request that decoded).
  std::mt19937_64 random(42);
  int errors = 0;
  for (int trial = 0; trial < 20; ++trial) {
    Rig<P> rig;
    DeviceState state(2'000'000'000);
    for (uint32_t i = 0; i < P::kWqeBytes; ++i) rig.sq[i] = static_cast<uint8_t>(random());
    P::ring_doorbell(rig.ep, 1, rig.sq);
    rig.ep.reserved = rig.ep.submitted = 1;
    rig.start();
    const std::string failure = run_lanes(rig, 1, 1, [](int) {});
    CAPTURE(trial);
    CHECK((failure.find("error completion: ") != std::string::npos || failure.empty()));
    errors += !failure.empty();
  }
  MESSAGE(errors, " of 20 random entries completed with an error");
  CHECK(errors >= 18);  // a random entry that decodes and passes the key checks is rare
}

template <typename P>
void injected_error() {
  sn::SoftNicOptions options = Rig<P>::no_env();
  options.faults.error_at = 3;
  Rig<P> rig(options);
  DeviceState state(5'000'000'000);
  for (size_t i = 0; i < 8; ++i) rig.local[i] = i + 100;
  rig.start();
  const std::string failure = run_lanes(rig, 1, 1, [&](int) {
    for (size_t i = 0; i < 8; ++i)
      RdmaEngine<P>::post(rig.ep, rig.rdma(Opcode::kWrite, rig.remote(i), i, 8), kPe);
  });
  MESSAGE(failure);
  CHECK(failure.find(std::string("error completion: ") + Traits<P>::kGeneral) != std::string::npos);
  rig.nic->stop();
  CHECK(rig.nic->qp_error(0) == "WQE 3: injected error (MORI_SOFTNIC_FAULT error:3)");
  for (size_t i = 0; i < 8; ++i) CHECK(rig.heap[i] == (i < 3 ? i + 100 : 0));
}

// drop:N through the environment. N the last request: quiet times out naming the queue's
// indices. N in the middle: the next completion covers it.
template <typename P>
void dropped() {
  sn::SoftNicOptions options;  // read_env
  FaultEnv env("drop:4");
  {
    Rig<P> rig(options);
    rig.start();
    DeviceState state(200'000'000);
    const std::string failure = run_lanes(rig, 1, 1, [&](int) {
      for (size_t i = 0; i < 5; ++i)
        RdmaEngine<P>::post(rig.ep, rig.rdma(Opcode::kWrite, rig.remote(i), i, 8), kPe);
    });
    MESSAGE(failure);
    CHECK(failure.find("quiet timed out after 200 ms: qp 7 posted 5, completed 4") !=
          std::string::npos);
    CHECK(rig.nic->executed() == 5);  // the request ran; only its completion is missing
  }
  {
    Rig<P> rig(options);
    rig.start();
    DeviceState state(5'000'000'000);
    const std::string failure = run_lanes(rig, 1, 1, [&](int) {
      for (size_t i = 0; i < 8; ++i)
        RdmaEngine<P>::post(rig.ep, rig.rdma(Opcode::kWrite, rig.remote(i), i, 8), kPe);
    });
    CHECK_MESSAGE(failure.empty(), failure);
    CHECK(rig.ep.completed == 8);
  }
}

template <typename P>
void delayed() {
  sn::SoftNicOptions options = Rig<P>::no_env();
  options.faults.delay_ms = 30;
  Rig<P> rig(options);
  DeviceState state(5'000'000'000);
  rig.local[0] = 77;
  rig.start();
  const auto begin = std::chrono::steady_clock::now();
  const std::string failure = run_lanes(rig, 1, 1, [&](int) {
    RdmaEngine<P>::post(rig.ep, rig.rdma(Opcode::kWrite, rig.remote(0), 0, 8), kPe);
  });
  const auto elapsed = std::chrono::steady_clock::now() - begin;
  CHECK_MESSAGE(failure.empty(), failure);
  CHECK(rig.heap[0] == 77);
  CHECK(elapsed >= std::chrono::milliseconds(30));
}

}  // namespace

TEST_CASE_TEMPLATE("softnic: writes, reads, inline writes and atomics, exact", P, MORI_PROVIDERS) {
  data_path<P>();
}
TEST_CASE_TEMPLATE("softnic: the same, exact, in the adversarial mode", P, MORI_PROVIDERS) {
  sn::SoftNicOptions options = Rig<P>::no_env();
  options.adversary.on = true;
  data_path<P>(options);
}
TEST_CASE_TEMPLATE("softnic: bad keys, out-of-bounds ranges, misaligned atomics", P,
                   MORI_PROVIDERS) {
  key_errors<P>();
}
TEST_CASE_TEMPLATE("softnic: garbage WQE bytes complete with an error", P, MORI_PROVIDERS) {
  garbage<P>();
}
TEST_CASE_TEMPLATE("softnic: injected error completion", P, MORI_PROVIDERS) { injected_error<P>(); }
TEST_CASE_TEMPLATE("softnic: injected dropped completion (MORI_SOFTNIC_FAULT)", P, MORI_PROVIDERS) {
  dropped<P>();
}
TEST_CASE_TEMPLATE("softnic: injected doorbell delay still completes", P, MORI_PROVIDERS) {
  delayed<P>();
}
#undef MORI_PROVIDERS

// BNXT's MSN entries count PSNs from the QP's initial send PSN, across the 24-bit wrap; an engine
// that counts from anything else (0, as it once did) is caught by the NIC on the first WQE.
TEST_CASE("softnic: bnxt MSN entries follow the QP's initial PSN, and a wrong count fails") {
  constexpr uint32_t kInitial = 0xFFFFFE;
  const uint32_t sizes[] = {1, 4096, 4097, 9000, 0};  // 1, 1, 2, 3 and 1 packets at MTU 4096
  {
    Rig<mp::Bnxt> rig(Rig<mp::Bnxt>::no_env(), kInitial);
    DeviceState state(5'000'000'000);
    rig.start();
    const std::string failure = run_lanes(rig, 1, 1, [&](int) {
      for (uint32_t bytes : sizes)
        RdmaEngine<mp::Bnxt>::post(rig.ep, rig.rdma(Opcode::kWrite, rig.remote(0), 0, bytes), kPe);
    });
    CHECK_MESSAGE(failure.empty(), failure);
    CHECK(rig.nic->qp_error(0).empty());
    CHECK(rig.ep.provider_state == ((kInitial + 8) & 0xFFFFFF));  // wrapped to 6
  }
  Rig<mp::Bnxt> rig(Rig<mp::Bnxt>::no_env(), 0x123456);
  rig.ep.provider_state = 0;  // the engine's count disagrees with the QP's
  DeviceState state(5'000'000'000);
  rig.start();
  const std::string failure = run_lanes(rig, 1, 1, [&](int) {
    RdmaEngine<mp::Bnxt>::post(rig.ep, rig.rdma(Opcode::kWrite, rig.remote(0), 0, 8), kPe);
  });
  CHECK(failure.find("error completion: remote operation") != std::string::npos);
  rig.nic->stop();
  CHECK(rig.nic->qp_error(0) ==
        "WQE 0: MSN entry 0 {start_idx 0, start_psn 0x000000, next_psn 0x000001}, expected {0, "
        "0x123456, 0x123457} (1 packets)");
}

TEST_CASE("softnic: MORI_SOFTNIC_FAULT syntax") {
  sn::Faults f;
  REQUIRE(sn::parse_faults("error:3,drop:5,delay_ms:7", &f).ok());
  CHECK(f.error_at == 3);
  CHECK(f.drop_at == 5);
  CHECK(f.delay_ms == 7);
  for (const char* bad : {"error", "error:", "error:x", "drop:5x", "delay_ms:99999", "flip:1"}) {
    CAPTURE(bad);
    const mori::Status s = sn::parse_faults(bad, &f);
    CHECK(!s.ok());
    CHECK(s.message().find("MORI_SOFTNIC_FAULT") == 0);
  }
  FaultEnv env("bogus:1");
  mori::state::RdmaEndpoint ep{};
  sn::SoftNic nic(sn::mlx5_codec(), {{&ep, 1}}, {});
  const mori::Status s = nic.start();
  CHECK(!s.ok());
  CHECK(s.message().find("\"bogus:1\"") != std::string::npos);
}

// The host has two cores: an idle NIC backs off to sleeping instead of spinning on one. Idle, it
// wakes every 50 us (max_sleep_us) and uses about 12 % of a core here; a spinning NIC uses all of
// one, or half when another busy thread shares it. The process's CPU time is read over three
// windows of 100 ms and the least is checked, so that one burst of load on the machine (one CI
// run saw 133 ms in a single 300 ms window) does not pass for spinning.
TEST_CASE("softnic: an idle NIC sleeps") {
  Rig<mp::Mlx5> rig;
  rig.start();
  double least_ms = 1e9;
  for (int window = 0; window < 3; ++window) {
    const std::clock_t begin = std::clock();  // this process's CPU time
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const double used_ms = 1000.0 * double(std::clock() - begin) / CLOCKS_PER_SEC;
    MESSAGE("idle NIC used ", used_ms, " ms of CPU in 100 ms");
    least_ms = std::min(least_ms, used_ms);
  }
  CHECK(least_ms < 40);
}
