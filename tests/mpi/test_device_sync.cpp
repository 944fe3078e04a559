// quiet and fence over P2P and over RDMA. Each PE runs a producer, which streams rounds of data to
// the next PE, and a consumer, which takes the rounds of the previous PE, as two threads of one
// kernel, so that producers and consumers on different PEs race each other. A producer writes a
// round's data (a random size up to 4 KiB at a random offset), orders it with fence or quiet (in
// each of their forms), then stores the round number in the consumer's flag. Whenever the consumer
// sees a new flag value (an acquire load), the data of that round must be there in full. Then the
// argument checks.
#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "device_harness.hpp"

namespace state = mori::state;

namespace shmem = mori::shmem;
using namespace mori::test;

namespace {

constexpr int kIterations = 5000;
constexpr uint64_t kSlots = 2;  // rounds a producer may run ahead of its consumer
constexpr size_t kMaxBytes = 4096, kMaxOffset = 61;
constexpr size_t kSlotBytes = kMaxBytes + kMaxOffset;

// How a producer orders a round's data before its flag: one form of fence or quiet. The (pe, qp)
// forms put on queue pair round % num_qp_per_pe and order that one.
//
// A fence on one QP orders that QP only (over RDMA the QPs run independently; over P2P every
// fence happens to be a release fence of everything). So for fence(pe, qp) (qp_fence) the flag
// goes on the round's QP too, and since rounds use different QPs, a later round's flag says nothing
// of an earlier round's data: the producer runs at most one round ahead, so that the ack of round
// r - 1 (whose data the consumer has seen) is what frees the slots of round r. After quiet(pe, qp)
// the data is complete, and the flag stays on QP 0 (ordered across QPs by completion).
struct Order {
  const char* name;
  void (*apply)(int pe, int qp);
  bool on_qp;
  bool qp_fence;
};
constexpr Order kFences[] = {
    {"fence()", [](int, int) { shmem::fence(); }, false, false},
    {"fence(pe)", [](int pe, int) { shmem::fence(pe); }, false, false},
    {"fence(pe, qp)", [](int pe, int qp) { shmem::fence(pe, qp); }, true, true},
};
constexpr Order kQuiets[] = {
    {"quiet()", [](int, int) { shmem::quiet(); }, false, false},
    {"quiet(pe)", [](int pe, int) { shmem::quiet(pe); }, false, false},
    {"quiet(pe, qp)", [](int pe, int qp) { shmem::quiet(pe, qp); }, true, false},
};

uint64_t mix(uint64_t x) {  // splitmix64's finaliser
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Each order streams its own random rounds, the same on every PE.
uint64_t seed_of(const Order& o) {
  uint64_t seed = 0;
  for (const char* c = o.name; *c; ++c) seed = mix(seed ^ static_cast<unsigned char>(*c));
  return seed;
}

// Round `r` of producer `pe`: its size, offset in the slot and bytes, known to both sides. The
// bytes depend on the round, so a stale or partial copy shows within a few bytes.
struct Round {
  Round(uint64_t index, int pe, const Order& o)
      : r(index), h(mix(seed_of(o) ^ (index * 977 + pe * 31))) {}
  size_t bytes() const { return 1 + h % kMaxBytes; }
  size_t offset() const { return (h >> 20) % (kMaxOffset + 1); }
  unsigned char byte(size_t j) const {
    return static_cast<unsigned char>(r * 7 + j * 13 + (h >> 40));
  }
  uint64_t r, h;
};

// Symmetric: slots and flag are written by the previous PE's producer, ack by the next PE's
// consumer (the last round it checked, which frees the slots of that round and earlier ones).
struct Channel {
  Channel()
      : slots(static_cast<unsigned char*>(shmem::malloc(kSlots * kSlotBytes))),
        words(static_cast<uint64_t*>(shmem::malloc(2 * sizeof(uint64_t)))) {
    REQUIRE(slots != nullptr);
    REQUIRE(words != nullptr);
    words[0] = words[1] = 0;
  }
  ~Channel() {
    CHECK(shmem::free(slots) == 0);
    CHECK(shmem::free(words) == 0);
  }
  unsigned char* slot(uint64_t round) const { return slots + round % kSlots * kSlotBytes; }
  uint64_t* flag() const { return words; }
  uint64_t* ack() const { return words + 1; }
  unsigned char* slots;
  uint64_t* words;
};

struct Outcome {
  std::atomic<uint64_t> seen{0}, bad{0};
  std::mutex mu;
  std::string first;
};

// `sources` is registered memory (over RDMA a put's source needs a memory key) with one slot of
// kMaxBytes per round, never reused within a run: a put_nbi's source may change only after a
// quiet, and this stream has none (an ack proves the delivery, but only through the other PE,
// which a checker such as ThreadSanitizer cannot follow).
void produce(const Channel& c, unsigned char* sources, int me, int to, const Order& order,
             int num_qp) {
  const uint64_t ahead = order.qp_fence ? 1 : kSlots;  // rounds in flight (see Order)
  for (uint64_t r = 1; r <= kIterations; ++r) {
    if (r > ahead) shmem::wait_until(c.ack(), shmem::CMP_GE, r - ahead);
    const Round round(r, me, order);
    unsigned char* src = sources + r * kMaxBytes;
    for (size_t j = 0; j < round.bytes(); ++j) src[j] = round.byte(j);
    const int qp = static_cast<int>(r % num_qp);
    shmem::putmem_nbi(c.slot(r) + round.offset(), src, round.bytes(), to, order.on_qp ? qp : 0);
    order.apply(to, qp);
    shmem::p(c.flag(), r, to, order.qp_fence ? qp : 0);
  }
}

void consume(const Channel& c, int from, const Order& order, Outcome& out) {
  for (uint64_t last = 0; last < kIterations;) {
    const uint64_t r = shmem::wait_until(c.flag(), shmem::CMP_GT, last);
    const Round round(r, from, order);
    const unsigned char* data = c.slot(r) + round.offset();
    // From the end: a copy still in flight has written its head first.
    for (size_t j = round.bytes(); j-- > 0;) {
      const unsigned char got = data[j];
      if (got == round.byte(j)) continue;
      if (out.bad.fetch_add(1) == 0) {
        std::lock_guard lock(out.mu);
        out.first = "round " + std::to_string(r) + " byte " + std::to_string(j) + " of " +
                    std::to_string(round.bytes()) + ": got " + std::to_string(got) + ", want " +
                    std::to_string(round.byte(j));
      }
      break;
    }
    out.seen.fetch_add(1);
    last = r;
    // The producer reuses the slot once it sees the ack. Over P2P fence is a release fence, which
    // also keeps the reads above from being overtaken by that reuse.
    shmem::fence(from);
    shmem::p(c.ack(), r, from);
  }
}

void stream(const Order& order) {
  Session s;
  const std::string order_name = order.name;  // captured as text, not as a pointer
  CAPTURE(order_name);
  Channel c;
  Registered<unsigned char> sources((kIterations + 1) * kMaxBytes);
  Outcome out;
  const int next = (s.me + 1) % s.n, prev = (s.me + s.n - 1) % s.n;
  const int num_qp = shmem::num_qp_per_pe();
  REQUIRE(shmem::barrier_all() == 0);  // every channel is zeroed before any producer starts
  launch({1}, {2}, [&] {
    if (mori::platform::thread_rank() == 0)
      produce(c, sources.data(), s.me, next, order, num_qp);
    else
      consume(c, prev, order, out);
  });
  CHECK_MESSAGE(out.bad == 0, out.bad.load(), " rounds seen incomplete, first: ", out.first);
  CHECK(out.seen >= 1);
  REQUIRE(all_ranks(out.bad == 0));
  REQUIRE(shmem::barrier_all() == 0);  // nobody frees a channel a peer still writes
}

// fence orders a get before the later operations to the same PE (order.hpp: "operations to each PE
// are delivered in the order they were issued"). Over RDMA a READ may read late, after a later
// write or atomic of its QP to the same word has landed, unless that one carries the fence flag
// (docs/rdma-engine.md, the adversarial mode). Each PE gets the next PE's word, fences, then
// overwrites it (p) or adds 1 to it (an AMO), round after round: get r must return r, the value
// from before round r's update.
void get_then_update(bool by_amo) {
  constexpr uint64_t kRounds = 2000;
  Session s;
  CAPTURE(by_amo);
  auto* word = static_cast<uint64_t*>(shmem::malloc(sizeof(uint64_t)));  // the previous PE's
  REQUIRE(word != nullptr);
  *word = 0;
  Registered<uint64_t> got(kRounds, ~uint64_t{0});  // the gets' destinations
  const int next = (s.me + 1) % s.n;
  REQUIRE(shmem::barrier_all() == 0);
  launch({1}, {1}, [&] {
    for (uint64_t r = 0; r < kRounds; ++r) {
      shmem::get_nbi(&got[r], word, 1, next);
      shmem::fence(next);
      if (by_amo)
        shmem::atomic_add(word, uint64_t{1}, next);
      else
        shmem::p(word, r + 1, next);
    }
    shmem::quiet();
  });
  uint64_t bad = 0;
  std::string first;  // the first get that saw a later update
  for (uint64_t r = 0; r < kRounds; ++r)
    if (got[r] != r && bad++ == 0)
      first = "round " + std::to_string(r) + " got " + std::to_string(got[r]);
  CHECK_MESSAGE(first == "", bad, " gets saw a later update");  // the fail-fast line shows `first`
  REQUIRE(all_ranks(bad == 0));
  REQUIRE(shmem::barrier_all() == 0);  // the previous PE is done with our word
  CHECK(shmem::free(word) == 0);
}

// Launches `call` with a bad PE and checks the trap's message and the device-error record.
template <typename F>
void expect_bad_pe(const char* api, int pe, int n, F&& call) {
  const std::string want = std::string(api) + ": PE " + std::to_string(pe) +
                           " is out of range [0, " + std::to_string(n) + ")";
  const std::string err = launch_error({1}, {1}, call);
  CHECK_MESSAGE(err.find(want) != std::string::npos, err);
  state::DeviceError& record = *shmem::globalGpuStates.error;
  CHECK(record.code == 1);
  CHECK(record.pe == pe);
  CHECK(std::string(record.message) == want);
  record.code = 0;
}

}  // namespace

TEST_CASE("fence: a put, then fence, then a put of a flag: the peer never sees the flag first") {
  for (const Order& o : kFences) stream(o);
}

TEST_CASE("quiet: a put, then quiet, then a put of a flag: the peer never sees the flag first") {
  for (const Order& o : kQuiets) stream(o);
}

TEST_CASE(
    "fence: a get, then fence, then a p or an AMO on the same word: the get reads the value "
    "from before") {
  get_then_update(false);
  get_then_update(true);
}

TEST_CASE("quiet and fence with a PE out of range trap, naming the call and the range") {
  Session s;
  if constexpr (MORI_DEVICE_CHECKS) {
    for (int pe : {9, -1, s.n}) {
      CAPTURE(pe);
      expect_bad_pe("quiet", pe, s.n, [pe] { shmem::quiet(pe); });
      expect_bad_pe("quiet", pe, s.n, [pe] { shmem::quiet(pe, 0); });
      expect_bad_pe("fence", pe, s.n, [pe] { shmem::fence(pe); });
      expect_bad_pe("fence", pe, s.n, [pe] { shmem::fence(pe, 0); });
    }
  }
  // A bad PE changes nothing: quiet and fence of every PE still work.
  const int last_qp = shmem::num_qp_per_pe() - 1;
  launch({1}, {1}, [&] {
    shmem::quiet();
    shmem::fence();
    for (int pe = 0; pe < s.n; ++pe) {
      shmem::quiet(pe);
      shmem::fence(pe, last_qp);
    }
  });
}
