// Remote atomics (over P2P, and over RDMA in the mpi.rdma_* runs), on OpenSHMEM's AMO types: every
// operation a type's class allows, named, by ABI code and (fetching ones) by their nbi forms, with
// exact results against a host reference on every PE (float and double: fetch, set and swap of -0.0, NaN payloads, denormals
// and infinities, compared bit for bit); then contention, every thread of a 4 x 64 grid (1 x 64
// over RDMA) on every PE hammering counters on one PE, where the final values must be exact and the
// fetched values must account for every operation exactly once; over RDMA the same on another
// PE's registered (non-heap) buffer; then the checks of bad codes and misaligned targets, with
// their exact messages. device_atomics_nbi_lock.cpp, in the same binary, adds contention and
// ordered chains of the nbi forms, and the distributed locks.
#include <algorithm>
#include <bit>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "amo_helpers.hpp"

namespace state = mori::state;

namespace shmem = mori::shmem;
namespace platform = mori::platform;
using namespace mori::test;
using shmem::atomicType;

namespace {

// ---- every operation once, against a host reference ---------------------------------------------

// The location's bits after `op`, in unsigned arithmetic (signed AMOs wrap).
template <typename U>
U reference(atomicType op, U old, U value, U compare) {
  switch (op) {
    case shmem::AMO_INC:
    case shmem::AMO_FETCH_INC:
      return old + 1;
    case shmem::AMO_ADD:
    case shmem::AMO_FETCH_ADD:
    case shmem::AMO_SIGNAL_ADD:
      return old + value;
    case shmem::AMO_AND:
    case shmem::AMO_FETCH_AND:
      return old & value;
    case shmem::AMO_OR:
    case shmem::AMO_FETCH_OR:
      return old | value;
    case shmem::AMO_XOR:
    case shmem::AMO_FETCH_XOR:
      return old ^ value;
    case shmem::AMO_FETCH:
      return old;
    case shmem::AMO_COMPARE_SWAP:
      return old == compare ? value : old;
    case shmem::AMO_SET:
    case shmem::AMO_SIGNAL:
    case shmem::AMO_SIGNAL_SET:
    case shmem::AMO_SWAP:
      return value;
    default:  // a new row of MORI_FOR_EACH_AMO needs its reference here
      throw std::logic_error("no reference for atomic code " + std::to_string(op));
  }
}

template <typename T>
T call_generic(atomicType op, T* d, T v, T c, int pe) {
  if (shmem::is_fetching(op)) return shmem::atomic_fetch_op(d, v, c, op, pe);
  shmem::atomic_nonfetch(d, v, op, pe);
  return T{};
}

struct Case {
  atomicType op;
  bool compare_hits;  // AMO_COMPARE_SWAP: whether `compare` equals the old value
};
// Every operation of MORI_FOR_EACH_AMO (not the ABI's markers), and whether it has a named device
// function (the signal codes are reached through the generic calls only).
struct Op {
  atomicType op;
  bool named;
};
constexpr Op kOps[] = {
#define MORI_TEST_OP(code, number, kind, arg, fetch, form, ...) \
  {shmem::code, std::string_view(#form) != "NONE"},
    MORI_FOR_EACH_AMO(MORI_TEST_OP)
#undef MORI_TEST_OP
};
// How run_each_op calls an operation: by name, by ABI code, or by the name of its nbi form (the
// fetching operations only).
enum class Form { kNamed, kGeneric, kNbi };
// The operations OpenSHMEM defines on T, those that `form` reaches.
template <typename T>
std::vector<Case> cases(Form form) {
  std::vector<Case> all;
  for (const Op& o : kOps) {
    if (o.op == shmem::AMO_ACK || o.op == shmem::AMO_END_OF_NONFETCH) continue;  // markers
    if ((form != Form::kGeneric && !o.named) || !shmem::amo_accepts<T>(o.op)) continue;
    if (form == Form::kNbi && !shmem::is_fetching(o.op)) continue;
    all.push_back({o.op, false});
    if (o.op == shmem::AMO_COMPARE_SWAP) all.push_back({o.op, true});
  }
  return all;
}

// A value from a 64-bit pattern: its low bits for an integer T; for float and double one of the
// values whose bits an arithmetic path would lose: -0.0, quiet and signalling NaNs with payloads,
// denormals, an infinity, 1.0.
template <typename T>
T pattern(uint64_t x) {
  if constexpr (std::is_floating_point_v<T>) {
    constexpr uint64_t kDouble[] = {0x8000000000000000, 0x7ff800000000dead, 0x7ff0000000000001,
                                    0xfff8000000000abc, 0x0000000000000001, 0x800fffffffffffff,
                                    0x7ff0000000000000, 0x3ff0000000000000};
    constexpr uint32_t kFloat[] = {0x80000000, 0x7fc0dead, 0x7f800001, 0xffc00abc,
                                   0x00000001, 0x807fffff, 0x7f800000, 0x3f800000};
    return from_bits<T>(sizeof(T) == 8 ? kDouble[x % 8] : kFloat[x % 8]);
  } else {
    return from_bits<T>(x);
  }
}
// The initial value of slot (case c, writer w) on PE `owner`, and the operands w sends there.
template <typename T>
T initial(size_t c, int w, int owner) {
  return pattern<T>(0xA5A55A5AF00F0FF0ull ^ (c * 0x10001 + w * 0x101 + owner * 7));
}
template <typename T>
T operand(size_t c, int w, int owner) {
  return pattern<T>(0x0FF0F00F33CC3CC3ull + c * 13 + w * 5 + owner);
}
template <typename T>
T comparand(const Case& k, size_t c, int w, int owner) {
  const T old = initial<T>(c, w, owner);
  return k.compare_hits ? old : from_bits<T>(bits(old) + 1);
}

// Every PE applies every case to its own slot on every PE (itself included), one thread per target.
// The nbi forms land their old values alternately in symmetric memory (which an RDMA NIC writes
// directly) and in private memory (which it cannot), both poisoned; each thread reads them right
// after its quiet, which must have delivered them.
template <typename T>
void run_each_op(const Session& s, Form form) {
  const std::vector<Case> all = cases<T>(form);
  GuardedSlots<T> slots(all.size() * s.n, 1), landing(all.size() * s.n, 1);
  for (size_t c = 0; c < all.size(); ++c)
    for (int w = 0; w < s.n; ++w) *slots.slot(c * s.n + w) = initial<T>(c, w, s.me);
  REQUIRE(shmem::barrier_all() == 0);
  std::vector<T> fetched(all.size() * s.n), private_landing(all.size() * s.n, *landing.slot(0));
  auto fetch_of = [&](size_t i) { return i % 2 ? &private_landing[i] : landing.slot(i); };
  launch({1}, {static_cast<unsigned>(s.n)}, [&] {
    const int pe = platform::thread_rank();
    for (size_t c = 0; c < all.size(); ++c) {
      const T v = operand<T>(c, s.me, pe), cmp = comparand<T>(all[c], c, s.me, pe);
      T* d = slots.slot(c * s.n + s.me);
      const size_t i = c * s.n + pe;
      if (form == Form::kNbi)
        call_named(all[c].op, d, v, cmp, pe, fetch_of(i));
      else
        fetched[i] = form == Form::kGeneric ? call_generic(all[c].op, d, v, cmp, pe)
                                            : call_named(all[c].op, d, v, cmp, pe);
    }
    shmem::quiet();
    for (size_t c = 0; form == Form::kNbi && c < all.size(); ++c)
      fetched[c * s.n + pe] = *fetch_of(c * s.n + pe);
  });
  REQUIRE(shmem::barrier_all() == 0);
  std::string bad;
  for (size_t c = 0; c < all.size() && bad.empty(); ++c) {
    CAPTURE(all[c].op);
    for (int w = 0; w < s.n; ++w) {  // the slot PE w wrote here; what this PE fetched from PE w
      const Bits<T> want =
          reference(all[c].op, bits(initial<T>(c, w, s.me)), bits(operand<T>(c, w, s.me)),
                    bits(comparand<T>(all[c], c, w, s.me)));
      if (bits(*slots.slot(c * s.n + w)) != want) bad = "slot written by PE " + std::to_string(w);
      const bool fetching = shmem::is_fetching(all[c].op);
      if (bits(fetched[c * s.n + w]) != bits(fetching ? initial<T>(c, s.me, w) : T{}))
        bad = "value fetched from PE " + std::to_string(w);
    }
    CHECK_MESSAGE(bad.empty(), bad);
  }
  CHECK(slots.check_guards(std::vector<size_t>(all.size() * s.n, 1)).empty());
  REQUIRE(all_ranks(bad.empty()));
}

// ---- contention ----------------------------------------------------------------------------------

// Fetch-and-add, fetch-inc, and with `loops` a compare-swap loop and swap: on the target the
// counter is exact and the fetched values (for swap: and the final value) are a permutation.
template <typename T>
void run_counting(const Session& s, bool loops) {
  const uint64_t total = uint64_t{threads()} * s.n;
  GuardedSlots<T> counters(4, 1);
  T* c[4];
  for (int i = 0; i < 4; ++i) *(c[i] = counters.slot(i)) = T{};
  REQUIRE(shmem::barrier_all() == 0);
  const int kAdd = 0, kInc = 1 % s.n, kCas = 2 % s.n, kSwap = 3 % s.n;  // target PEs
  const auto by_add = hammer(s, [&](size_t) { return shmem::atomic_fetch_add(c[0], 1, kAdd); });
  const auto by_inc = hammer(s, [&](size_t) { return shmem::atomic_fetch_inc(c[1], kInc); });
  std::string bad;
  auto check = [&](const char* what, const std::vector<uint64_t>& mine, int root, size_t i,
                   uint64_t final_value, bool with_final) {
    std::vector<uint64_t> all = gather_by_g(s, mine, root);
    if (s.me != root) return;
    if (with_final) all.push_back(static_cast<uint64_t>(*c[i]));
    std::string e = permutation_error(all, 0);
    if (e.empty() && static_cast<uint64_t>(*c[i]) != final_value && !with_final) e = "final value";
    if (!e.empty()) bad += std::string(what) + ": " + e + "; ";
  };
  check("fetch_add", by_add, kAdd, 0, total, false);
  check("fetch_inc", by_inc, kInc, 1, total, false);
  if (loops) {
    const auto by_cas = hammer(s, [&](size_t) {
      T seen = shmem::atomic_fetch(c[2], kCas);
      for (T old; (old = shmem::atomic_compare_swap(c[2], seen, seen + 1, kCas)) != seen;)
        seen = old;
      return seen;
    });
    const auto by_swap =
        hammer(s, [&](size_t g) { return shmem::atomic_swap(c[3], static_cast<T>(g + 1), kSwap); });
    check("compare_swap loop", by_cas, kCas, 2, total, false);
    check("swap", by_swap, kSwap, 3, 0, true);
  }
  CHECK_MESSAGE(bad.empty(), bad);
  REQUIRE(all_ranks(bad.empty()));
}

// Non-fetching add and inc: only the totals can be checked.
template <typename T>
void run_nonfetch_totals(const Session& s) {
  GuardedSlots<T> counters(2, 1);
  T* c[2] = {counters.slot(0), counters.slot(1)};
  *c[0] = *c[1] = T{};
  REQUIRE(shmem::barrier_all() == 0);
  const int target = s.n - 1;
  hammer(s, [&](size_t g) {
    shmem::atomic_inc(c[0], target);
    shmem::atomic_add(c[1], static_cast<T>(g % 5), target);
    return 0;
  });
  uint64_t sum = 0;
  for (uint64_t g = 0; g < uint64_t{threads()} * s.n; ++g) sum += g % 5;
  if (s.me == target) {
    CHECK(static_cast<uint64_t>(*c[0]) == uint64_t{threads()} * s.n);
    CHECK(static_cast<uint64_t>(*c[1]) == sum);
  }
  REQUIRE(shmem::barrier_all() == 0);
}

// Bitwise contention: thread g owns bit g % kBits of counter g / kBits, so each counter is hit by
// kBits threads from every PE, each flipping a distinct bit. or/xor set every bit of a zeroed
// counter and and clears every bit of a full one; the fetched values of one counter have every
// popcount from 0 to kBits - 1 (and: 1 to kBits) exactly once, as the operations serialize.
template <typename T>
void run_bitwise(const Session& s) {
  constexpr size_t kBits = 8 * sizeof(T);
  const size_t counters = threads() * s.n / kBits;
  const T ones = static_cast<T>(~T{});
  const int target = s.n > 1 ? 1 : 0;
  for (atomicType op : {shmem::AMO_FETCH_OR, shmem::AMO_FETCH_XOR, shmem::AMO_FETCH_AND,
                        shmem::AMO_OR, shmem::AMO_XOR, shmem::AMO_AND}) {
    CAPTURE(op);
    const bool is_and = op == shmem::AMO_FETCH_AND || op == shmem::AMO_AND;
    GuardedSlots<T> c(counters, 1);
    for (size_t i = 0; i < counters; ++i) *c.slot(i) = is_and ? ones : T{};
    REQUIRE(shmem::barrier_all() == 0);
    const auto fetched = hammer(s, [&](size_t g) {
      const T bit = static_cast<T>(T{1} << (g % kBits));
      return call_generic(op, c.slot(g / kBits), is_and ? static_cast<T>(~bit) : bit, T{}, target);
    });
    const std::vector<uint64_t> all = gather_by_g(s, fetched, target);
    std::string bad;
    for (size_t i = 0; s.me == target && i < counters && bad.empty(); ++i) {
      if (*c.slot(i) != (is_and ? T{} : ones)) bad = "final value of counter " + std::to_string(i);
      if (!bad.empty() || !shmem::is_fetching(op)) continue;
      std::vector<uint64_t> counts;  // of the bits of T: a signed value was sign-extended in `all`
      for (size_t g = i * kBits; g < (i + 1) * kBits; ++g)
        counts.push_back(std::popcount(static_cast<std::make_unsigned_t<T>>(all[g])));
      bad = permutation_error(counts, is_and ? 1 : 0);
      if (!bad.empty()) bad = "popcounts fetched from counter " + std::to_string(i) + ": " + bad;
    }
    CHECK_MESSAGE(bad.empty(), bad);
    REQUIRE(all_ranks(bad.empty()));
  }
}

// Contention on a registered (non-heap) buffer, over RDMA only: a peer's registered buffer is
// private memory of its process, which no PE reaches but through the NIC. Every PE but the target
// hammers the target's buffer: a fetch_add counter, a compare-swap loop counter, and fetch_or with
// one bit per thread. The PE that owns a registered buffer is not among them: its own atomics on it
// are local ones, and RDMA atomics are atomic with respect to the NIC's atomics only
// (IBV_ATOMIC_HCA). Poisoned words around the counters catch a write that lands beside them.
template <typename T>
void run_registered(const Session& s) {
  if (!over_rdma() || s.n < 2) return;
  constexpr size_t kBits = 8 * sizeof(T), kGuard = 8;
  const T poison = static_cast<T>(0x5a5a5a5a5a5a5a5aull);
  const int target = s.n - 1;
  const size_t writers = threads() * (s.n - 1);
  const size_t bit_words = (threads() * s.n + kBits - 1) / kBits;
  Registered<T> buf(2 * kGuard + 2 + bit_words, poison);
  T* add = &buf[kGuard];
  T* cas = &buf[kGuard + 1];
  T* bits = &buf[kGuard + 2];
  *add = *cas = T{};
  for (size_t i = 0; i < bit_words; ++i) bits[i] = T{};
  REQUIRE(shmem::barrier_all() == 0);
  constexpr uint64_t kIdle = ~uint64_t{0};  // the target's threads take no part
  const auto by_add = hammer(s, [&](size_t) {
    return s.me == target ? kIdle
                          : static_cast<uint64_t>(shmem::atomic_fetch_add(add, T{1}, target));
  });
  const auto by_cas = hammer(s, [&](size_t) -> uint64_t {
    if (s.me == target) return kIdle;
    T seen = shmem::atomic_fetch(cas, target);
    for (T old; (old = shmem::atomic_compare_swap(cas, seen, T(seen + 1), target)) != seen;)
      seen = old;
    return static_cast<uint64_t>(seen);
  });
  hammer(s, [&](size_t g) {
    if (s.me == target) return kIdle;
    const T bit = static_cast<T>(T{1} << (g % kBits));
    return static_cast<uint64_t>(shmem::atomic_fetch_or(&bits[g / kBits], bit, target));
  });
  std::string bad;
  auto check = [&](const char* what, const std::vector<uint64_t>& mine, const T* counter) {
    std::vector<uint64_t> all = gather_by_g(s, mine, target), used;
    if (s.me != target) return;
    for (uint64_t v : all)
      if (v != kIdle) used.push_back(static_cast<std::make_unsigned_t<T>>(v));
    std::string e = used.size() == writers ? permutation_error(used, 0) : "missing results";
    if (e.empty() && static_cast<uint64_t>(*counter) != writers) e = "final value";
    if (!e.empty()) bad += std::string(what) + ": " + e + "; ";
  };
  check("fetch_add", by_add, add);
  check("compare_swap loop", by_cas, cas);
  if (s.me == target) {
    for (size_t g = 0; g < threads() * s.n; ++g) {
      const bool set = (bits[g / kBits] >> (g % kBits)) & 1;
      if (set != (static_cast<int>(g % s.n) != target)) {
        bad += "fetch_or: bit of thread " + std::to_string(g) + "; ";
        break;
      }
    }
    for (size_t i = 0; i < kGuard; ++i)
      if (buf[i] != poison || buf[buf.size() - 1 - i] != poison) bad += "guard word overwritten; ";
  }
  CHECK_MESSAGE(bad.empty(), bad);
  REQUIRE(all_ranks(bad.empty()));
}

// ---- checks -------------------------------------------------------------------------------------
// The codes a generic call takes on T, as its failure message says.
template <typename T>
const char* rule(bool fetch) {
  if (shmem::amo_accepts<T>(shmem::AMO_AND))
    return fetch ? "a fetching operation: use AMO_FETCH..AMO_COMPARE_SWAP"
                 : "a non-fetching operation: use AMO_INC..SIGNAL_ADD";
  if (shmem::amo_accepts<T>(shmem::AMO_ADD))
    return fetch ? "a fetching AMO on long long: use AMO_FETCH..AMO_COMPARE_SWAP but "
                   "FETCH_AND..FETCH_XOR"
                 : "a non-fetching AMO on long long: use AMO_INC..SIGNAL_ADD but AMO_AND..AMO_XOR";
  return fetch ? "a fetching AMO on float or double: use AMO_FETCH or AMO_SWAP"
               : "a non-fetching AMO on float or double: use AMO_SET";
}

template <typename T>
void run_bad_arguments(const Session& s) {
  GuardedSlots<T> slot(1, 2);
  T* d = slot.slot(0);
  *d = T{7};
  const int pe = (s.me + 1) % s.n;
  // Every code the ABI names and a few it does not; each call must reject those outside its range.
  const std::pair<int, const char*> kCodes[] = {{-1, "unknown"},
                                                {0, "unknown"},
                                                {1, "AMO_ACK"},
                                                {2, "AMO_INC"},
                                                {3, "AMO_SET"},
                                                {4, "AMO_ADD"},
                                                {5, "AMO_AND"},
                                                {6, "AMO_OR"},
                                                {7, "AMO_XOR"},
                                                {8, "AMO_SIGNAL"},
                                                {9, "SIGNAL_SET"},
                                                {10, "SIGNAL_ADD"},
                                                {11, "AMO_END_OF_NONFETCH"},
                                                {12, "AMO_FETCH"},
                                                {13, "AMO_FETCH_INC"},
                                                {14, "AMO_FETCH_ADD"},
                                                {15, "AMO_FETCH_AND"},
                                                {16, "AMO_FETCH_OR"},
                                                {17, "AMO_FETCH_XOR"},
                                                {18, "AMO_SWAP"},
                                                {19, "AMO_COMPARE_SWAP"},
                                                {20, "unknown"},
                                                {99, "unknown"}};
  for (const auto& [code, name] : kCodes) {
    CAPTURE(code);
    const auto op = static_cast<atomicType>(code);
    auto want = [&](const char* call, bool fetch) {
      return std::string(call) + ": atomic code " + std::to_string(code) + " (" + name +
             ") is not " + rule<T>(fetch) + " (PE " + std::to_string(pe) + ")";
    };
    const bool defined = shmem::amo_accepts<T>(op);  // by OpenSHMEM, on T
    if (code < shmem::AMO_INC || code > shmem::AMO_SIGNAL_ADD || !defined)
      expect_device_failure([&] { shmem::atomic_nonfetch(d, 1, op, pe); },
                            want("atomic_nonfetch", false), state::DeviceErrorCode::kBadArgument,
                            pe, d);
    if (code < shmem::AMO_FETCH || code > shmem::AMO_COMPARE_SWAP || !defined)
      expect_device_failure([&] { shmem::atomic_fetch_op(d, 1, 7, op, pe); },
                            want("atomic_fetch_op", true), state::DeviceErrorCode::kBadArgument, pe,
                            d);
  }
  T* misaligned = reinterpret_cast<T*>(reinterpret_cast<char*>(d) + sizeof(T) / 2);
  expect_device_failure([&] { shmem::atomic_swap(misaligned, 1, pe); },
                        "atomic_swap: address " + hex_text(misaligned) + " is not aligned to " +
                            std::to_string(sizeof(T)) + " bytes (PE " + std::to_string(pe) + ")",
                        state::DeviceErrorCode::kBadAddress, pe, misaligned);
  REQUIRE(shmem::barrier_all() == 0);
  CHECK(*d == T{7});  // no failed call touched the target
  REQUIRE(shmem::barrier_all() == 0);
}

}  // namespace

TEST_CASE_TEMPLATE_DEFINE("every AMO by name: exact results and fetched values on every PE", T,
                          named_id) {
  Session s;
  run_each_op<T>(s, Form::kNamed);
}
TEST_CASE_TEMPLATE_DEFINE("every code of atomic_nonfetch / atomic_fetch_op: exact results", T,
                          generic_id) {
  Session s;
  run_each_op<T>(s, Form::kGeneric);
}
TEST_CASE_TEMPLATE_DEFINE("every nbi fetching AMO: the old value in `fetch` after quiet", T,
                          nbi_id) {
  Session s;
  run_each_op<T>(s, Form::kNbi);
}
TEST_CASE_TEMPLATE_DEFINE("contention: fetch_add, fetch_inc, compare_swap loop, swap", T,
                          counting_id) {
  Session s;
  run_counting<T>(s, true);
  run_nonfetch_totals<T>(s);
}
// long long and unsigned long long reach the transports as the uint64_t bits that int64_t and
// uint64_t do, so their compare-swap loop and swap add nothing but time; their sums are checked.
TEST_CASE_TEMPLATE_DEFINE("contention: fetch_add, fetch_inc, add, inc on long long widths", T,
                          long_long_counting_id) {
  Session s;
  run_counting<T>(s, false);
  run_nonfetch_totals<T>(s);
}
TEST_CASE_TEMPLATE_DEFINE("contention: and / or / xor, fetching and not, one bit per thread", T,
                          bitwise_id) {
  Session s;
  run_bitwise<T>(s);
}
TEST_CASE_TEMPLATE_DEFINE("contention on another PE's registered buffer: exact counts, every bit",
                          T, registered_id) {
  Session s;
  run_registered<T>(s);
}
TEST_CASE_TEMPLATE_DEFINE("bad atomic codes and misaligned targets trap with their reason", T,
                          bad_id) {
  Session s;
  run_bad_arguments<T>(s);
}

// Each case runs on the types of its operations' class, the costly contention on fewer: the
// transports see only a value's width (AmoBits), so the ABI's four cover both widths.
using ExtendedTuple = TestTypes<decltype(as_tuple(mori::AmoExtendedTypes{}))>;
using BitwiseTuple = TestTypes<decltype(as_tuple(mori::AmoBitwiseTypes{}))>;
TEST_CASE_TEMPLATE_APPLY(named_id, ExtendedTuple);
TEST_CASE_TEMPLATE_APPLY(generic_id, ExtendedTuple);
// The nbi forms: a 4-byte integer (every operation; RDMA runs it blocking, see transport/rdma.hpp),
// a standard 8-byte one (no bitwise operations; landed by the NIC), float and double.
using NbiTuple = TestTypes<std::tuple<uint32_t, long long, float, double>>;
TEST_CASE_TEMPLATE_APPLY(nbi_id, NbiTuple);
using LongLongTuple =
    TestTypes<std::tuple<long long, unsigned long long>>;  // standard, not among the ABI's 4
TEST_CASE_TEMPLATE_APPLY(counting_id, AmoTuple);
TEST_CASE_TEMPLATE_APPLY(long_long_counting_id, LongLongTuple);
TEST_CASE_TEMPLATE_APPLY(bitwise_id, BitwiseTuple);
TEST_CASE_TEMPLATE_APPLY(registered_id, AmoTuple);
TEST_CASE_TEMPLATE_APPLY(bad_id, ExtendedTuple);
