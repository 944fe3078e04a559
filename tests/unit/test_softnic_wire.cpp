// The software NIC on the wire (softnic.hpp, "On the wire"; wire_queues.cpp), for each provider:
// PE 0's lanes post through RdmaEngine<P>; the requests travel as RoCEv2 datagrams over an
// in-memory wire (softnic_wire_rig.hpp) to PE 1's NIC, which executes them on PE 1's memory.
// Checked: every byte and every atomic's count at PE 1, every read's and old value's at PE 0, over
// a clean and a lossy wire, and the provider's error completion when the wire fails.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "providers.hpp"
#include "softnic_wire_rig.hpp"

namespace {

using namespace mori::test::softnic_wire_rig;

template <typename P>
void wire_data_path(double loss, double duplication) {
  using Engine = RdmaEngine<P>;
  WireRig<P> rig;  // path MTU 256: writes and reads of up to 1 KiB take several packets
  rig.wire.loss = loss;
  rig.wire.duplication = duplication;
  DeviceState state(20'000'000'000);
  constexpr int kLanes = 8, kIters = 12;
  constexpr size_t kSlot = 512 / 8;  // words per write slot
  // PE 0: write sources, read destinations, old values. PE 1: write slots, read sources, words.
  constexpr size_t kSrc = 0, kReadDst = kSrc + kLanes * kIters * kSlot;
  constexpr size_t kOld = kReadDst + kLanes * kIters * 2, kCasOld = kOld + kLanes * kIters;
  constexpr size_t kOld32 = kCasOld + kLanes * kIters;
  constexpr size_t kDst = 0, kReadSrc = kLanes * kIters * kSlot;
  constexpr size_t kCounter = kReadSrc + kLanes * kIters * 2, kCas = kCounter + 2;
  static_assert(kOld32 + kLanes * kIters <= kLocalWords && kCas + kLanes <= kHeapWords);
  auto* src = reinterpret_cast<uint8_t*>(&rig.a->local[kSrc]);
  for (size_t i = 0; i < kLanes * kIters * kSlot * 8; ++i) src[i] = uint8_t(i * 131 + 7);
  for (size_t i = 0; i < kLanes * kIters * 2; ++i)
    rig.b->heap[kReadSrc + i] = i * 0x9e3779b97f4a7c15ull;
  rig.start();

  // Sizes on both sides of the 256-byte segments, 1 to 512 bytes.
  auto write_bytes = [](size_t s) { return uint32_t(1 + (s * 97) % 512); };
  const std::string failure = rig.run(1, kLanes, [&](int g) {
    for (int k = 0; k < kIters; ++k) {
      const size_t s = size_t(g) * kIters + k;
      Engine::post(
          rig.a->ep,
          rig.rdma(Opcode::kWrite, rig.remote(kDst + s * kSlot), kSrc + s * kSlot, write_bytes(s)),
          1);
      Engine::post(rig.a->ep,
                   rig.rdma(Opcode::kRead, rig.remote(kReadSrc + 2 * s), kReadDst + 2 * s, 16), 1);
      Engine::post(rig.a->ep, rig.atomic(Opcode::kFetchAdd, kCounter, kOld + s, 8, 1), 1);
      Engine::post(rig.a->ep, rig.atomic(Opcode::kCompareSwap, kCas + g, kCasOld + s, 8, k + 1, k),
                   1);
      if constexpr (P::kNativeAtomic32)
        Engine::post(rig.a->ep, rig.atomic(Opcode::kFetchAdd, kCounter + 1, kOld32 + s, 4, 3), 1);
    }
  });
  REQUIRE_MESSAGE(failure.empty(), failure);
  CHECK(rig.a->nic->qp_error(0).empty());
  constexpr uint64_t kPerIter = P::kNativeAtomic32 ? 5 : 4;
  CHECK(rig.a->nic->executed() == kLanes * kIters * kPerIter);

  size_t bad = 0;
  std::vector<bool> seen(kLanes * kIters, false);
  const auto* dst = reinterpret_cast<const uint8_t*>(&rig.b->heap[kDst]);
  for (size_t s = 0; s < size_t(kLanes) * kIters; ++s) {
    const uint32_t bytes = write_bytes(s);
    for (uint32_t b = 0; b < kSlot * 8; ++b)  // the slot's bytes past the write stay zero
      bad += dst[s * kSlot * 8 + b] != (b < bytes ? src[s * kSlot * 8 + b] : 0);
    bad += rig.a->local[kReadDst + 2 * s] != rig.b->heap[kReadSrc + 2 * s];
    bad += rig.a->local[kReadDst + 2 * s + 1] != rig.b->heap[kReadSrc + 2 * s + 1];
    bad += rig.a->local[kCasOld + s] != s % kIters;
    const uint64_t old = rig.a->local[kOld + s];
    if (old < seen.size() && !seen[old])
      seen[old] = true;
    else
      ++bad;  // fetch-add old values: a permutation of 0 .. n - 1, so each executed once
  }
  CHECK(bad == 0);
  CHECK(rig.b->heap[kCounter] == kLanes * kIters);
  for (int g = 0; g < kLanes; ++g) CHECK(rig.b->heap[kCas + g] == kIters);
  if constexpr (P::kNativeAtomic32) {
    uint32_t counter32;
    std::memcpy(&counter32, &rig.b->heap[kCounter + 1], 4);
    CHECK(counter32 == 3u * kLanes * kIters);
    CHECK((rig.b->heap[kCounter + 1] >> 32) == 0);
  }
  rig.a->nic->stop();
  rig.b->nic->stop();
  const mori::wire::QpStats sa = rig.a->nic->wire_stats(0), sb = rig.b->nic->wire_stats(0);
  MESSAGE("sent " << sa.packets_sent << ", retransmitted " << sa.retransmitted << ", timeouts "
                  << sa.timeouts << ", NAKs " << sb.naks_sent << ", duplicates "
                  << sb.duplicates_received << ", atomics replayed " << sb.atomics_replayed);
  if (loss > 0) CHECK(sa.retransmitted > 0);
  if (duplication > 0) CHECK(sb.duplicates_received > 0);
  CHECK(rig.wire.sent > 0);
}

TEST_CASE_TEMPLATE("softnic wire: writes, reads and atomics, exact", P, MORI_PROVIDERS) {
  wire_data_path<P>(0, 0);
}
TEST_CASE_TEMPLATE("softnic wire: exact under 10% loss and 5% duplication", P, MORI_PROVIDERS) {
  wire_data_path<P>(0.10, 0.05);
}

// A wire that takes nothing: the first request fails with the provider's retry-exceeded status
// after retry_cnt + 1 timer periods, and the NIC's reason names the peer and its QP.
TEST_CASE_TEMPLATE("softnic wire: a dead link ends in transport retry exceeded", P,
                   MORI_PROVIDERS) {
  WireRig<P> rig(1, /*timeout=*/8, /*retry_cnt=*/2);  // 1.05 ms a period, 3 periods
  rig.wire.down = true;
  DeviceState state(5'000'000'000);
  rig.a->local[0] = 0x5151;
  rig.start();
  const std::string failure = rig.run(1, 1, [&](int) {
    RdmaEngine<P>::post(rig.a->ep, rig.rdma(Opcode::kWrite, rig.remote(0), 0, 8), 1);
    RdmaEngine<P>::post(rig.a->ep, rig.rdma(Opcode::kWrite, rig.remote(1), 0, 8), 1);
  });
  MESSAGE(failure);
  CHECK(failure.find("transport retry count") != std::string::npos);
  const std::string reason = rig.a->nic->qp_error(0);
  CHECK(reason.find("on the wire to PE 1, qp 9") != std::string::npos);
  CHECK(rig.b->heap[0] == 0);
  CHECK(rig.b->heap[1] == 0);
}

// A bad rkey: PE 1's NIC NAKs with a remote access error, which PE 0's completes with.
TEST_CASE_TEMPLATE("softnic wire: a bad rkey is the peer's remote access error", P,
                   MORI_PROVIDERS) {
  WireRig<P> rig;
  DeviceState state(5'000'000'000);
  rig.start();
  WorkRequest bad = rig.rdma(Opcode::kWrite, rig.remote(0), 0, 8);
  bad.rkey = 0x999;
  const std::string failure = rig.run(1, 1, [&](int) {
    RdmaEngine<P>::post(rig.a->ep, bad, 1);
    RdmaEngine<P>::post(rig.a->ep, rig.rdma(Opcode::kWrite, rig.remote(1), 0, 8), 1);
  });
  MESSAGE(failure);
  CHECK(failure.find(std::string("error completion: ") + Traits<P>::kRemoteAccess) !=
        std::string::npos);
  CHECK(rig.b->heap[1] == 0);  // the write behind it was flushed, not executed
}

}  // namespace
