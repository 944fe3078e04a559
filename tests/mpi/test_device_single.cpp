// p / g and the pointer queries (ptr, ptr_p2p) over P2P and over RDMA, called from device code.
// Over RDMA (MORI_DISABLE_P2P) ptr and ptr_p2p find no mapping of another PE: they give nullptr.
//
// p and g run for the 11 element types and the 16 C type names of the `_p` family, in a ring and
// all-to-all, from many threads of two blocks at once. Values span the type's whole width (its
// extremes, the sign bit, floating-point exponents) and are compared exactly on every PE; the
// poisoned bytes around every slot must be intact. g reads back, from other PEs, what the p phase
// wrote there before the barrier, and the poison of slots nobody wrote.
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "device_harness.hpp"

namespace state = mori::state;

namespace shmem = mori::shmem;
using namespace mori::test;

namespace {

using PTuple = TestTypes<decltype(as_tuple(mori::PTypes{}))>;

constexpr size_t kElems = 100;
constexpr unsigned kBlocks = 2, kThreads = 32, kLanes = kBlocks * kThreads;

enum class Pattern { kRing, kAllToAll };

// Whether PE `writer` writes its slot on PE `owner` in pattern p.
bool writes(Pattern p, int writer, int owner, int n) {
  return p == Pattern::kAllToAll || owner == (writer + 1) % n;
}
std::vector<int> targets(Pattern p, int me, int n) {
  std::vector<int> to;
  for (int pe = 0; pe < n; ++pe)
    if (writes(p, me, pe, n)) to.push_back(pe);
  return to;
}

// Element i from PE pe: alternately near the type's lowest and highest value, so that every byte
// (and the sign) of the value matters; floating-point values are exact multiples of powers of 2.
template <typename T>
T wide_value(int pe, size_t i) {
  const T small = value_of<T>(pe, i);
  if constexpr (std::is_floating_point_v<T>) {
    const T scaled = (small + T(0.5)) * static_cast<T>(uint64_t{1} << (i % 40));
    return i % 2 ? -scaled : scaled;
  } else {
    using L = std::numeric_limits<T>;
    return static_cast<T>(i % 2 ? L::max() - small : L::lowest() + small);
  }
}

template <typename T>
bool same_bits(T a, T b) {
  return std::memcmp(&a, &b, sizeof(T)) == 0;
}

// This lane's index among the kLanes lanes of a launch of kBlocks x kThreads.
size_t global_lane() {
  return static_cast<size_t>(mori::platform::block_rank()) * kThreads +
         mori::platform::thread_rank();
}

template <typename T>
void run_p_and_g() {
  Session s;
  GuardedSlots<T> slots(s.n, kElems);  // on PE t, slot w holds what PE w wrote into PE t
  T poison;
  std::memset(&poison, GuardedSlots<T>::kPoison, sizeof(T));
  for (Pattern pattern : {Pattern::kRing, Pattern::kAllToAll}) {
    CAPTURE(static_cast<int>(pattern));
    slots.poison();
    REQUIRE(shmem::barrier_all() == 0);
    const std::vector<int> to = targets(pattern, s.me, s.n);
    launch({kBlocks}, {kThreads}, [&] {
      for (int pe : to)
        for (size_t i = global_lane(); i < kElems; i += kLanes)
          shmem::p(slots.slot(s.me) + i, wide_value<T>(s.me, i), pe);
      shmem::quiet();
    });
    REQUIRE(shmem::barrier_all() == 0);

    // The owner's view of what p stored.
    std::vector<size_t> used(s.n);
    std::string bad;
    for (int w = 0; w < s.n && bad.empty(); ++w) {
      used[w] = writes(pattern, w, s.me, s.n) ? kElems : 0;
      for (size_t i = 0; i < used[w] && bad.empty(); ++i)
        if (!same_bits(slots.slot(w)[i], wide_value<T>(w, i)))
          bad = "p: element " + std::to_string(i) + " from PE " + std::to_string(w) + " differs";
    }
    if (bad.empty()) bad = slots.check_guards(used);
    CHECK_MESSAGE(bad.empty(), bad);
    REQUIRE(all_ranks(bad.empty()));

    // g of every slot on the PEs this PE targets: the data their writers stored before the
    // barrier, and the poison elsewhere.
    std::vector<T> got(static_cast<size_t>(s.n) * s.n * kElems);
    auto at = [&](int pe, int w, size_t i) -> T& { return got[(pe * s.n + w) * kElems + i]; };
    launch({kBlocks}, {kThreads}, [&] {
      for (int pe : to)
        for (int w = 0; w < s.n; ++w)
          for (size_t i = global_lane(); i < kElems; i += kLanes)
            at(pe, w, i) = shmem::g(slots.slot(w) + i, pe);
    });
    for (int pe : to)
      for (int w = 0; w < s.n && bad.empty(); ++w)
        for (size_t i = 0; i < kElems && bad.empty(); ++i)
          if (!same_bits(at(pe, w, i), writes(pattern, w, pe, s.n) ? wide_value<T>(w, i) : poison))
            bad = "g from PE " + std::to_string(pe) + ": element " + std::to_string(i) + " of PE " +
                  std::to_string(w) + "'s slot differs";
    CHECK_MESSAGE(bad.empty(), bad);
    REQUIRE(all_ranks(bad.empty()));
    REQUIRE(shmem::barrier_all() == 0);  // nobody re-poisons while a peer may still read
  }
}

uint64_t marker(int writer, int owner) { return 0x5eed000000000000ull | writer << 8 | owner; }

}  // namespace

TEST_CASE_TEMPLATE_DEFINE("p and g, ring and all-to-all: element types", T, element_id) {
  run_p_and_g<T>();
}
TEST_CASE_TEMPLATE_DEFINE("p and g, ring and all-to-all: _p type names", T, p_type_id) {
  run_p_and_g<T>();
}
TEST_CASE_TEMPLATE_APPLY(element_id, ElementTuple);
TEST_CASE_TEMPLATE_APPLY(p_type_id, PTuple);

TEST_CASE("ptr and ptr_p2p from device code: round trips through the heap, and the zero cases") {
  Session s;
  auto* a = static_cast<uint64_t*>(shmem::malloc(s.n * sizeof(uint64_t)));
  REQUIRE(a != nullptr);
  std::memset(a, 0, s.n * sizeof(uint64_t));
  REQUIRE(shmem::barrier_all() == 0);

  std::vector<void*> via_ptr(s.n);
  std::vector<uint64_t> via_p2p(s.n);
  uint64_t not_symmetric = 0, past_heap = 0, last_byte = 0, last_byte_self = 0, last_byte_want = 0,
           wrong_caller = 0, pe_low = 0, pe_high = 0;
  const bool p2p = !over_rdma();  // over RDMA no other PE is mapped here
  void* ptr_not_symmetric = &s;
  void* ptr_bad_pe = &s;
  const int peer = (s.me + 1) % s.n;
  launch({1}, {1}, [&] {
    const uint64_t mine = reinterpret_cast<uint64_t>(a + s.me);
    for (int pe = 0; pe < s.n; ++pe) {
      via_ptr[pe] = shmem::ptr(a + s.me, pe);
      via_p2p[pe] = shmem::ptr_p2p(mine, shmem::my_pe(), pe);
      // Write this PE's marker into its element of every PE's copy, as plain stores where it is
      // mapped (every PE over P2P, only this PE over RDMA), else with p.
      if (via_ptr[pe])
        *static_cast<uint64_t*>(via_ptr[pe]) = marker(s.me, pe);
      else
        shmem::p(a + s.me, marker(s.me, pe), pe);
    }
    const state::GpuStates& st = state::gpu_states();
    const uint64_t local = reinterpret_cast<uint64_t>(&via_ptr);
    not_symmetric = shmem::ptr_p2p(local, shmem::my_pe(), peer);
    ptr_not_symmetric = shmem::ptr(&via_ptr, peer);
    past_heap = shmem::ptr_p2p(st.heap_base + st.heap_size, shmem::my_pe(), peer);
    last_byte = shmem::ptr_p2p(st.heap_base + st.heap_size - 1, shmem::my_pe(), peer);
    last_byte_self = shmem::ptr_p2p(st.heap_base + st.heap_size - 1, shmem::my_pe(), s.me);
    last_byte_want = st.heap_base + st.heap_size - 1;
    wrong_caller = shmem::ptr_p2p(mine, peer, peer);
    pe_low = shmem::ptr_p2p(mine, shmem::my_pe(), -1);
    pe_high = shmem::ptr_p2p(mine, shmem::my_pe(), shmem::n_pes());
    ptr_bad_pe = shmem::ptr(a + s.me, shmem::n_pes());
    shmem::quiet();
  });
  CHECK(via_ptr[s.me] == a + s.me);  // this PE's own copy is the address itself
  for (int pe = 0; pe < s.n; ++pe) {
    CAPTURE(pe);
    // Every PE of one node is P2P-reachable on the host backend, unless P2P is disabled: then only
    // this PE is.
    if (p2p || pe == s.me)
      CHECK(via_ptr[pe] != nullptr);
    else
      CHECK(via_ptr[pe] == nullptr);
    CHECK(reinterpret_cast<uint64_t>(via_ptr[pe]) == via_p2p[pe]);
  }
  CHECK(not_symmetric == 0);
  CHECK(ptr_not_symmetric == nullptr);
  CHECK(past_heap == 0);
  CHECK(last_byte_self == last_byte_want);
  if (p2p)
    CHECK(last_byte != 0);
  else
    CHECK(last_byte == 0);
  CHECK(wrong_caller == 0);
  CHECK(pe_low == 0);
  CHECK(pe_high == 0);
  CHECK(ptr_bad_pe == nullptr);
  REQUIRE(shmem::barrier_all() == 0);

  // The owner sees every PE's marker; g from every PE sees what each writer stored there.
  for (int w = 0; w < s.n; ++w) CHECK(a[w] == marker(w, s.me));
  std::vector<uint64_t> got(s.n * s.n);
  launch({1}, {static_cast<unsigned>(s.n)}, [&] {
    const int w = mori::platform::thread_rank();
    for (int pe = 0; pe < s.n; ++pe) got[pe * s.n + w] = shmem::g(a + w, pe);
  });
  bool ok = true;
  for (int pe = 0; pe < s.n; ++pe)
    for (int w = 0; w < s.n; ++w) {
      CHECK(got[pe * s.n + w] == marker(w, pe));
      ok = ok && got[pe * s.n + w] == marker(w, pe);
    }
  REQUIRE(all_ranks(ok));
  REQUIRE(shmem::barrier_all() == 0);
  CHECK(shmem::free(a) == 0);
}

TEST_CASE("ptr and ptr_p2p of a registered buffer: only this PE's copy is mapped here") {
  Session s;
  std::vector<uint64_t> buf(16, 0);
  REQUIRE(shmem::buffer_register(buf.data(), buf.size() * sizeof(uint64_t)) == 0);
  void* self = nullptr;
  std::vector<void*> others(s.n, &s);
  uint64_t self_p2p = 0;
  launch({1}, {1}, [&] {
    self = shmem::ptr(buf.data() + 3, s.me);
    self_p2p = shmem::ptr_p2p(reinterpret_cast<uint64_t>(buf.data() + 3), s.me, s.me);
    for (int pe = 0; pe < s.n; ++pe)
      if (pe != s.me) others[pe] = shmem::ptr(buf.data() + 3, pe);
    // p and g reach this PE's own registered buffer.
    shmem::p(buf.data() + 5, shmem::g(buf.data() + 3, s.me) + 42, s.me);
  });
  CHECK(self == buf.data() + 3);
  CHECK(self_p2p == reinterpret_cast<uint64_t>(buf.data() + 3));
  // On the host backend a registered buffer is private memory: peers reach it over RDMA only.
  for (int pe = 0; pe < s.n; ++pe)
    if (pe != s.me) CHECK(others[pe] == nullptr);
  CHECK(buf[5] == 42);
  REQUIRE(shmem::buffer_deregister(buf.data(), buf.size() * sizeof(uint64_t)) == 0);
}

// buffer_register_symmetric: a peer's buffer is reached like heap memory, over P2P through this
// process's mapping of it (ptr finds it) and over RDMA through its keys. The registered range
// starts 64 bytes into its ext_alloc_shareable allocation, whose other bytes are poisoned guards.
// Each PE puts a block to the next PE, adds to the next PE's counter from every lane, and gets the
// next PE's source block back; every PE then checks its whole allocation. The adds go to another PE
// only: over the software NIC an AMO on a registered buffer is atomic with the other NIC AMOs, not
// with its owner's own (docs/rdma-engine.md, IBV_ATOMIC_HCA).
TEST_CASE(
    "buffer_register_symmetric: puts, gets and atomics reach a peer's buffer over every "
    "transport") {
  Session s;
  constexpr size_t kGuard = 64, kBlock = 8, kAdds = 16;
  constexpr unsigned char kPoison = 0xA5;
  // Words: [0, 8n) the blocks PEs put here, [32, 40) this PE's source, [40, 48) what get brought
  // back, 48 the counter.
  constexpr size_t kWords = 49, kBytes = kWords * sizeof(uint64_t);
  static_assert(4 * kBlock <= 32);
  REQUIRE(s.n <= 4);
  char* alloc = static_cast<char*>(shmem::ext_alloc_shareable(kGuard + kBytes + kGuard));
  REQUIRE_MESSAGE(alloc != nullptr, shmem::last_error());
  std::memset(alloc, kPoison, kGuard + kBytes + kGuard);
  auto* buf = reinterpret_cast<uint64_t*>(alloc + kGuard);
  for (size_t i = 0; i < kBlock; ++i) buf[32 + i] = marker(s.me, static_cast<int>(i));
  buf[48] = 0;
  REQUIRE_MESSAGE(shmem::buffer_register_symmetric(buf, kBytes) == 0, shmem::last_error());
  const int next = (s.me + 1) % s.n;
  std::vector<void*> via_ptr(s.n, &s);
  launch({1}, {static_cast<unsigned>(kAdds)}, [&] {
    const int lane = mori::platform::thread_rank();
    if (lane == 0) {
      for (int pe = 0; pe < s.n; ++pe) via_ptr[pe] = shmem::ptr(buf, pe);
      shmem::put(buf + s.me * kBlock, buf + 32, kBlock, next);
    }
    shmem::atomic_add(buf + 48, uint64_t(s.me + 1), next);
    shmem::quiet();
  });
  REQUIRE(shmem::barrier_all() == 0);
  launch({1}, {1}, [&] { shmem::get(buf + 40, buf + 32, kBlock, next); });
  REQUIRE(shmem::barrier_all() == 0);

  // Over P2P every peer's copy is mapped here; over RDMA only this PE's.
  for (int pe = 0; pe < s.n; ++pe) CHECK((via_ptr[pe] != nullptr) == (pe == s.me || !over_rdma()));
  CHECK(via_ptr[s.me] == buf);
  const int prev = (s.me + s.n - 1) % s.n;
  bool ok = true;
  for (size_t w = 0; w < 32; ++w) {
    const bool written = w / kBlock == static_cast<size_t>(prev);
    uint64_t want;
    std::memset(&want, kPoison, sizeof want);
    if (written) want = marker(prev, static_cast<int>(w % kBlock));
    CHECK_MESSAGE(buf[w] == want, "word " << w);
    ok = ok && buf[w] == want;
  }
  for (size_t i = 0; i < kBlock; ++i) {
    CHECK(buf[40 + i] == marker(next, static_cast<int>(i)));
    ok = ok && buf[40 + i] == marker(next, static_cast<int>(i));
  }
  const uint64_t total = kAdds * static_cast<uint64_t>(prev + 1);
  CHECK(buf[48] == total);
  ok = ok && buf[48] == total;
  for (size_t b = 0; b < kGuard; ++b) {
    ok = ok && static_cast<unsigned char>(alloc[b]) == kPoison &&
         static_cast<unsigned char>(alloc[kGuard + kBytes + b]) == kPoison;
  }
  CHECK_MESSAGE(ok, "PE " << s.me << ": data, counter or guard bytes wrong");
  REQUIRE(all_ranks(ok));
  REQUIRE(shmem::buffer_deregister(buf, kBytes) == 0);
  CHECK(shmem::ext_free_shareable(alloc) == 0);
}

TEST_CASE("MORI_DISABLE_P2P: ptr gives nullptr for every other PE; p and g to self still work") {
  ScopedEnv no_p2p("MORI_DISABLE_P2P", "1");
  {
    Session s;
    auto* a = static_cast<int64_t*>(shmem::malloc(sizeof(int64_t)));
    REQUIRE(a != nullptr);
    std::vector<void*> via_ptr(s.n, &s);
    int64_t back = 0;
    launch({1}, {1}, [&] {
      for (int pe = 0; pe < s.n; ++pe) via_ptr[pe] = shmem::ptr(a, pe);
      shmem::p(a, int64_t{-7} * (s.me + 1), s.me);
      back = shmem::g(a, s.me);
    });
    for (int pe = 0; pe < s.n; ++pe) CHECK(via_ptr[pe] == (pe == s.me ? a : nullptr));
    CHECK(back == -7 * (s.me + 1));
    REQUIRE(all_ranks(back == -7 * (s.me + 1)));
    REQUIRE(shmem::barrier_all() == 0);
    CHECK(shmem::free(a) == 0);
  }
  // After finalize the device state is cleared, and the queries find nothing.
  int64_t x = 0;
  CHECK(shmem::ptr(&x, 0) == nullptr);
  CHECK(shmem::ptr_p2p(reinterpret_cast<uint64_t>(&x), 0, 0) == 0);
}
