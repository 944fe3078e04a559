// The software NIC's adversarial mode (backend/host/softnic/adversary.hpp): each freedom happens,
// exactly where the rules allow it, and not where a fence forbids it. Delays that a check depends
// on are fixed (a Range with lo == hi) and long enough that the check cannot race them.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "providers.hpp"
#include "softnic_rig.hpp"

namespace {

using namespace mori::test::softnic_rig;
using std::chrono::milliseconds;

// Adversarial, with every freedom off: each test turns on the one it checks.
sn::SoftNicOptions quiet_adversary() {
  sn::SoftNicOptions o;
  o.read_env = false;
  o.adversary.on = true;
  o.adversary.doorbell_hold_us = {0, 0};
  o.adversary.doorbell_count = {1, 1};
  o.adversary.cqe_delay_us = {0, 0};
  o.adversary.read_defer_percent = 0;
  o.adversary.atomic_defer_percent = 0;
  o.adversary.chunks_per_round = {1, 1};
  return o;
}

// A 4100-byte write at remote offset 8 lands as 65 chunks of the 64-byte lines it spans (the
// first 56 bytes, the last 12), each once, not in address order.
template <typename P>
void split_write() {
  sn::SoftNicOptions options = quiet_adversary();
  options.adversary.max_chunks = 128;
  std::mutex mu;
  std::vector<std::pair<uint64_t, uint64_t>> placed;  // offset, bytes
  uint64_t other_index = 0;                           // chunks of a WQE other than 0
  options.adversary.on_place = [&](uint64_t index, uint64_t offset, uint64_t bytes) {
    std::lock_guard lock(mu);
    other_index += index != 0;
    placed.emplace_back(offset, bytes);
  };
  Rig<P> rig(options);
  DeviceState state(20'000'000'000);
  auto* src = reinterpret_cast<uint8_t*>(rig.local.data());
  for (int i = 0; i < 4100; ++i) src[i] = static_cast<uint8_t>(i * 7 + 1);
  rig.start();
  const std::string failure = run_lanes(rig, 1, 1, [&](int) {
    RdmaEngine<P>::post(rig.ep, rig.rdma(Opcode::kWrite, rig.remote(0) + 8, 0, 4100), kPe);
  });
  REQUIRE_MESSAGE(failure.empty(), failure);
  rig.nic->stop();
  CHECK(std::memcmp(reinterpret_cast<const uint8_t*>(rig.heap.data()) + 8, src, 4100) == 0);
  CHECK(other_index == 0);
  REQUIRE(placed.size() == 65);
  std::vector<std::pair<uint64_t, uint64_t>> sorted = placed;
  std::sort(sorted.begin(), sorted.end());
  CHECK(sorted != placed);  // not in address order
  uint64_t next = 0;
  for (const auto& [offset, bytes] : sorted) {
    CHECK(offset == next);
    CHECK(bytes == (offset == 0 ? 56 : offset == 4088 ? 12 : 64));
    next = offset + bytes;
  }
  CHECK(next == 4100);
  CHECK(rig.nic->adversary_stats().writes_split == 1);
}

// The data lands, then the CQE follows 300 ms later: a poll right after the data is visible finds
// no completion.
template <typename P>
void late_completion() {
  sn::SoftNicOptions options = quiet_adversary();
  options.adversary.cqe_delay_us = {300'000, 300'000};
  // The NIC says when the chunk has landed (release), and the lane reads the data after that
  // (acquire): polling the word while the NIC copies into it would be a data race under TSan.
  std::atomic<bool> placed{false};
  options.adversary.on_place = [&](uint64_t, uint64_t, uint64_t) {
    placed.store(true, std::memory_order_release);
  };
  Rig<P> rig(options);
  DeviceState state(20'000'000'000);
  rig.local[0] = 77;
  rig.start();
  uint64_t completed_at_landing = ~uint64_t{0}, seen = 0;
  auto landed = std::chrono::steady_clock::now();
  const std::string failure = run_lanes(rig, 1, 1, [&](int) {
    RdmaEngine<P>::post(rig.ep, rig.rdma(Opcode::kWrite, rig.remote(0), 0, 8), kPe);
    while (!placed.load(std::memory_order_acquire)) std::this_thread::yield();
    landed = std::chrono::steady_clock::now();
    seen = rig.heap[0];
    RdmaEngine<P>::poll(rig.ep, kPe);
    completed_at_landing = rig.ep.completed;
  });
  const auto waited = std::chrono::steady_clock::now() - landed;
  REQUIRE_MESSAGE(failure.empty(), failure);
  CHECK(seen == 77);
  CHECK(completed_at_landing == 0);
  CHECK(rig.ep.completed == 1);
  CHECK(waited >= milliseconds(250));
  CHECK(rig.nic->adversary_stats().cqes_delayed == 1);
}

// A READ of a word, then a write (or an atomic) to it, unfenced or fenced: the READ reads late
// (50 ms), so unfenced it sees the later request's value; fenced, the value from before.
template <typename P>
void read_passed(bool fenced, bool by_atomic) {
  CAPTURE(fenced);
  CAPTURE(by_atomic);
  sn::SoftNicOptions options = quiet_adversary();
  options.adversary.read_defer_percent = 100;
  options.adversary.read_delay_us = {50'000, 50'000};
  Rig<P> rig(options);
  DeviceState state(20'000'000'000);
  rig.heap[0] = 1;
  rig.local[1] = 2;  // the write's source
  rig.start();
  const std::string failure = run_lanes(rig, 1, 1, [&](int) {
    using Engine = RdmaEngine<P>;
    Engine::post(rig.ep, rig.rdma(Opcode::kRead, rig.remote(0), 0, 8), kPe);
    if (fenced) Engine::fence(rig.ep);
    if (by_atomic)
      Engine::post(rig.ep, rig.atomic(Opcode::kFetchAdd, 0, 2, 8, 5), kPe);
    else
      Engine::post(rig.ep, rig.rdma(Opcode::kWrite, rig.remote(0), 1, 8), kPe);
  });
  REQUIRE_MESSAGE(failure.empty(), failure);
  rig.nic->stop();
  const uint64_t later = by_atomic ? 6 : 2;  // what the later request left in the word
  CHECK(rig.heap[0] == later);
  CHECK(rig.local[0] == (fenced ? 1 : later));
  const sn::AdversaryStats stats = rig.nic->adversary_stats();
  CHECK(stats.reads_deferred == 1);
  CHECK(stats.passed_deferred == (fenced ? 0 : 1));
}

// An atomic whose old value lands late (50 ms), then a write whose source is that old value's
// place: unfenced, the write sends the bytes that were there before; fenced, the old value.
template <typename P>
void atomic_landing(bool fenced) {
  CAPTURE(fenced);
  sn::SoftNicOptions options = quiet_adversary();
  options.adversary.atomic_defer_percent = 100;
  options.adversary.atomic_delay_us = {50'000, 50'000};
  Rig<P> rig(options);
  DeviceState state(20'000'000'000);
  rig.heap[0] = 40;
  rig.local[4] = 0xAAAA;
  rig.start();
  const std::string failure = run_lanes(rig, 1, 1, [&](int) {
    using Engine = RdmaEngine<P>;
    Engine::post(rig.ep, rig.atomic(Opcode::kFetchAdd, 0, 4, 8, 1), kPe);
    if (fenced) Engine::fence(rig.ep);
    Engine::post(rig.ep, rig.rdma(Opcode::kWrite, rig.remote(1), 4, 8), kPe);
  });
  REQUIRE_MESSAGE(failure.empty(), failure);
  rig.nic->stop();
  CHECK(rig.heap[0] == 41);  // the atomic executed at its turn either way
  CHECK(rig.local[4] == 40);
  CHECK(rig.heap[1] == (fenced ? 40 : 0xAAAA));
  CHECK(rig.nic->adversary_stats().atomics_deferred == 1);
}

// Three doorbells, 20 ms apart, with the NIC waiting for three: nothing runs before the third,
// then all three WQEs run as one announcement.
template <typename P>
void coalesced_doorbells() {
  sn::SoftNicOptions options = quiet_adversary();
  options.adversary.doorbell_count = {3, 3};
  options.adversary.doorbell_hold_us = {2'000'000, 2'000'000};  // a missed value costs 2 s
  Rig<P> rig(options);
  DeviceState state(20'000'000'000);
  for (int i = 0; i < 3; ++i) rig.local[i] = 100 + i;
  rig.start();
  uint64_t executed_before_third = ~uint64_t{0};
  const std::string failure = run_lanes(rig, 1, 1, [&](int) {
    for (int i = 0; i < 3; ++i) {
      if (i == 2) executed_before_third = rig.nic->executed();
      RdmaEngine<P>::post(rig.ep, rig.rdma(Opcode::kWrite, rig.remote(i), i, 8), kPe);
      std::this_thread::sleep_for(milliseconds(20));
    }
  });
  REQUIRE_MESSAGE(failure.empty(), failure);
  rig.nic->stop();
  CHECK(executed_before_third == 0);
  CHECK(rig.nic->executed() == 3);
  for (int i = 0; i < 3; ++i) CHECK(rig.heap[i] == 100u + i);
  CHECK(rig.nic->adversary_stats().doorbells_accepted == 1);
}

}  // namespace

TEST_CASE_TEMPLATE("softnic adversary: a write lands in chunks, out of order", P, MORI_PROVIDERS) {
  split_write<P>();
}
TEST_CASE_TEMPLATE("softnic adversary: a completion comes late, after the data", P,
                   MORI_PROVIDERS) {
  late_completion<P>();
}
TEST_CASE_TEMPLATE(
    "softnic adversary: a read sees a later unfenced write or atomic, not a fenced "
    "one",
    P, MORI_PROVIDERS) {
  for (bool by_atomic : {false, true})
    for (bool fenced : {false, true}) read_passed<P>(fenced, by_atomic);
}
TEST_CASE_TEMPLATE(
    "softnic adversary: an atomic's old value lands after a later unfenced write "
    "read it",
    P, MORI_PROVIDERS) {
  atomic_landing<P>(false);
  atomic_landing<P>(true);
}
TEST_CASE_TEMPLATE("softnic adversary: doorbells coalesce", P, MORI_PROVIDERS) {
  coalesced_doorbells<P>();
}
#undef MORI_PROVIDERS

TEST_CASE("softnic adversary: MORI_SOFTNIC_ADVERSARIAL and MORI_SOFTNIC_SEED syntax") {
  sn::AdversaryOptions a;
  REQUIRE(sn::parse_adversary("1", "12345", &a).ok());
  CHECK(a.on);
  CHECK(a.seed == 12345);
  REQUIRE(sn::parse_adversary("0", nullptr, &a).ok());
  CHECK(!a.on);
  CHECK(a.seed == 12345);
  for (const char* bad : {"yes", "2", "1 ", "on"}) {
    CAPTURE(bad);
    const mori::Status s = sn::parse_adversary(bad, nullptr, &a);
    REQUIRE(!s.ok());
    CHECK(s.message() == std::string("MORI_SOFTNIC_ADVERSARIAL: \"") + bad + "\" is not 0 or 1");
  }
  for (const char* bad : {"-1", "x", "18446744073709551616", "1e3"}) {
    CAPTURE(bad);
    const mori::Status s = sn::parse_adversary("1", bad, &a);
    REQUIRE(!s.ok());
    CHECK(s.message() ==
          std::string("MORI_SOFTNIC_SEED: \"") + bad + "\" is not a decimal number below 2^64");
  }
  ::setenv("MORI_SOFTNIC_ADVERSARIAL", "yes", 1);
  mori::state::RdmaEndpoint ep{};
  sn::SoftNic nic(sn::mlx5_codec(), {{&ep, 1}}, {});
  const mori::Status s = nic.start();
  ::unsetenv("MORI_SOFTNIC_ADVERSARIAL");
  CHECK(!s.ok());
  CHECK(s.message() == "MORI_SOFTNIC_ADVERSARIAL: \"yes\" is not 0 or 1");
}
