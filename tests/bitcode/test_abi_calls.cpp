// Calls through the C ABI of a module that is the whole host-flavour bitcode (every function, found
// with dlsym), one or more per family, on 2 PEs. test_abi_manifest.cpp checks names and types; this
// checks that each wrapper hands its C arguments to the right parameters of the device API
// (dest/source, cond/value, the atomic code, the signal) and returns what the spec says.
#include <dlfcn.h>

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "device_harness.hpp"

namespace shmem = mori::shmem;
using mori::test::launch;
using mori::test::Session;
using shmem::atomicType;
using shmem::Cmp;

namespace {

// Opened once, for the whole process: finalize republishes to every module module_init saw.
void* abi_module() {
  static void* handle = dlopen(MORI_TEST_ABI_MODULE, RTLD_NOW | RTLD_LOCAL);
  REQUIRE_MESSAGE(handle != nullptr, dlerror());
  return handle;
}

template <typename F>
F* fn(const char* name) {
  void* s = dlsym(abi_module(), name);
  REQUIRE_MESSAGE(s != nullptr, name);
  return reinterpret_cast<F*>(s);
}

// A session whose module has the live device state.
struct AbiSession : Session {
  AbiSession() {
    REQUIRE_MESSAGE(shmem::module_init(abi_module()) == 0, shmem::last_error());
    next = (me + 1) % n;
    prev = (me + n - 1) % n;
  }
  int next = 0, prev = 0;
};

template <typename T>
T* symmetric(size_t count) {
  auto* p = static_cast<T*>(shmem::malloc(count * sizeof(T)));
  REQUIRE_MESSAGE(p != nullptr, shmem::last_error());
  return p;
}

void barrier() { REQUIRE(shmem::barrier_all() == 0); }

}  // namespace

TEST_CASE("abi.rma") {
  AbiSession s;
  constexpr size_t kN = 100;
  auto* put_dst = symmetric<int32_t>(kN);
  auto* get_src = symmetric<uint64_t>(kN);
  std::vector<int32_t> src(kN);
  std::vector<uint64_t> got(kN);
  for (size_t i = 0; i < kN; ++i) {
    src[i] = s.me * 1000 + static_cast<int32_t>(i);
    get_src[i] = s.me * 1000 + i;
  }
  barrier();
  auto* put =
      fn<int(int32_t*, const int32_t*, size_t, int, int)>("mori_shmem_put_int32_nbi_thread");
  auto* quiet = fn<int()>("mori_shmem_quiet_thread");
  auto* get = fn<int(uint64_t*, const uint64_t*, size_t, int, int)>("mori_shmem_get_uint64_block");
  launch({1}, {1}, [&] {
    CHECK(put(put_dst, src.data(), kN, s.next, 0) == 0);
    CHECK(quiet() == 0);
  });
  launch({1}, {4}, [&] { CHECK(get(got.data(), get_src, kN, s.next, 0) == 0); });
  barrier();
  for (size_t i = 0; i < kN; ++i) {
    CHECK(put_dst[i] == s.prev * 1000 + static_cast<int32_t>(i));
    CHECK(got[i] == s.next * 1000 + i);
  }

  // Strided, sized: dst and sst reach the right strides (element i: source[i * sst] to
  // dest[i * dst]). iput32 writes every 2nd of put_dst from every 3rd of src; iget64 reads every
  // 2nd of get_src into every 3rd of got.
  using Strided = int(void*, const void*, ptrdiff_t, ptrdiff_t, size_t, int, int);
  auto* iput = fn<Strided>("mori_shmem_iput32_warp");
  auto* iget = fn<Strided>("mori_shmem_iget64_thread");
  constexpr size_t kStrided = 30;
  std::fill(got.begin(), got.end(), 0);
  barrier();
  launch({1}, {64}, [&] { CHECK(iput(put_dst, src.data(), 2, 3, kStrided, s.next, 0) == 0); });
  launch({1}, {1}, [&] { CHECK(iget(got.data(), get_src, 3, 2, kStrided, s.next, 0) == 0); });
  barrier();
  for (size_t i = 0; i < kStrided; ++i) {
    CHECK(put_dst[2 * i] == s.prev * 1000 + static_cast<int32_t>(3 * i));
    CHECK(put_dst[2 * i + 1] == s.prev * 1000 + static_cast<int32_t>(2 * i + 1));  // untouched
    CHECK(got[3 * i] == s.next * 1000 + 2 * i);
    CHECK(got[3 * i + 1] == 0);
  }
  shmem::free(put_dst);
  shmem::free(get_src);
}

TEST_CASE("abi.single") {
  AbiSession s;
  auto* x = symmetric<int64_t>(1);
  auto* y = symmetric<unsigned int>(1);
  *y = 40 + s.me;
  barrier();
  auto* p = fn<int(int64_t*, int64_t, int, int)>("mori_shmem_int64_p");
  auto* g = fn<unsigned int(const unsigned int*, int, int)>("mori_shmem_uint_g");
  launch({1}, {1}, [&] {
    CHECK(p(x, -7 - s.me, s.next, 0) == 0);
    CHECK(g(y, s.next, 0) == 40u + s.next);
  });
  barrier();
  CHECK(*x == -7 - s.prev);
  shmem::free(x);
  shmem::free(y);
}

TEST_CASE("abi.atomic") {
  AbiSession s;
  auto* counter = symmetric<uint64_t>(1);
  auto* cas = symmetric<int32_t>(1);
  auto* generic = symmetric<uint32_t>(1);
  auto* sized = symmetric<uint64_t>(1);
  auto* real = symmetric<double>(1);
  auto* single = symmetric<float>(1);
  *counter = 0, *cas = 7, *generic = 4, *sized = 1;
  // float and double keep their exact bits, compared as bits (-0.0 == 0.0; a NaN equals nothing).
  const uint64_t nan_bits = 0x7ff4000000000123;  // signalling, payload 0x4000000000123
  *real = -0.0;
  *single = 1.5f;
  barrier();
  auto* fetch_add =
      fn<uint64_t(uint64_t*, uint64_t, int, int)>("mori_shmem_uint64_atomic_fetch_add_thread");
  auto* compare_swap = fn<int32_t(int32_t*, int32_t, int32_t, int, int)>(
      "mori_shmem_int32_atomic_compare_swap_thread");
  auto* fetch_op = fn<uint32_t(uint32_t*, uint32_t, uint32_t, atomicType, int, int)>(
      "mori_shmem_atomic_uint32_fetch_thread");
  auto* size_nonfetch =
      fn<int(void*, void*, size_t, atomicType, int, int)>("mori_shmem_atomic_size_nonfetch_thread");
  auto* swap_double = fn<double(double*, double, int, int)>("mori_shmem_double_atomic_swap_thread");
  auto* set_float = fn<int(float*, float, int, int)>("mori_shmem_float_atomic_set_thread");
  auto* fetch_float = fn<float(const float*, int, int)>("mori_shmem_float_atomic_fetch_thread");
  auto* quiet = fn<int()>("mori_shmem_quiet_thread");
  uint64_t swapped_out = 0;
  uint32_t fetched_float = 0;
  launch({1}, {1}, [&] {
    swapped_out =
        std::bit_cast<uint64_t>(swap_double(real, std::bit_cast<double>(nan_bits), s.next, 0));
    CHECK(set_float(single, std::bit_cast<float>(0x80000001u), s.next, 0) == 0);  // a denormal
    CHECK(quiet() == 0);
    fetched_float = std::bit_cast<uint32_t>(fetch_float(single, s.next, 0));
    CHECK(fetch_add(counter, 5, s.next, 0) == 0);
    CHECK(compare_swap(cas, 7, 9, s.next, 0) == 7);  // cond 7 holds: 9 is written
    CHECK(compare_swap(cas, 1, 3, s.next, 0) == 9);  // cond 1 does not: nothing changes
    CHECK(fetch_op(generic, 11, 4, shmem::AMO_COMPARE_SWAP, s.next, 0) == 4);
    uint64_t add = 10;
    CHECK(size_nonfetch(sized, &add, sizeof add, shmem::AMO_ADD, s.next, 0) == 0);
  });
  barrier();
  CHECK(*counter == 5);
  CHECK(*cas == 9);
  CHECK(*generic == 11);
  CHECK(*sized == 11);
  CHECK(swapped_out == std::bit_cast<uint64_t>(-0.0));
  CHECK(std::bit_cast<uint64_t>(*real) == nan_bits);
  CHECK(std::bit_cast<uint32_t>(*single) == 0x80000001u);
  CHECK(fetched_float == 0x80000001u);
  for (void* q : {static_cast<void*>(counter), static_cast<void*>(cas), static_cast<void*>(generic),
                  static_cast<void*>(sized), static_cast<void*>(real), static_cast<void*>(single)})
    shmem::free(q);
}

namespace {

// The blocking put-with-signal, signal_op, and the array and _vector waits and tests: part of
// abi.signal_wait (one ctest entry per case).
void signal_op_blocking_arrays(const AbiSession& s) {
  constexpr size_t kN = 32;
  auto* data = symmetric<uint64_t>(kN);
  auto* bytes = symmetric<uint8_t>(kN);
  auto* sig = symmetric<uint64_t>(3);
  sig[0] = sig[1] = sig[2] = 0;
  std::vector<uint64_t> src(kN);
  std::vector<uint8_t> src_bytes(kN);
  for (size_t i = 0; i < kN; ++i) {
    src[i] = s.me * 1000 + i;
    src_bytes[i] = static_cast<uint8_t>(s.me + i);
  }
  barrier();
  using SignalArgs = int(void*, uint64_t, atomicType, int, int);
  auto* signal_op = fn<SignalArgs>("mori_shmem_signal_op");
  auto* put_signal =
      fn<int(uint64_t*, const uint64_t*, size_t, void*, uint64_t, atomicType, int, int)>(
          "mori_shmem_put_uint64_signal_warp");
  auto* putmem_signal = fn<int(void*, const void*, size_t, void*, uint64_t, atomicType, int, int)>(
      "mori_shmem_putmem_signal_thread");
  using Vector = size_t(uint64_t*, size_t, const int*, Cmp, const uint64_t*);
  auto* wait_all_vector = fn<int(uint64_t*, size_t, const int*, Cmp, const uint64_t*)>(
      "mori_shmem_uint64_wait_until_all_vector");
  auto* test_any_vector = fn<Vector>("mori_shmem_uint64_test_any_vector");
  auto* wait_some = fn<size_t(uint64_t*, size_t, size_t*, const int*, Cmp, uint64_t)>(
      "mori_shmem_uint64_wait_until_some");
  auto* test_all =
      fn<int(uint64_t*, size_t, const int*, Cmp, uint64_t)>("mori_shmem_uint64_test_all");
  launch({1}, {64}, [&] {
    CHECK(put_signal(data, src.data(), kN, sig, 5, shmem::SIGNAL_SET, s.next, 0) == 0);
  });
  launch({1}, {1}, [&] {
    CHECK(putmem_signal(bytes, src_bytes.data(), kN, sig + 1, 2, shmem::SIGNAL_ADD, s.next, 0) ==
          0);
    CHECK(signal_op(sig + 2, 7, shmem::SIGNAL_ADD, s.next, 0) == 0);
    CHECK(signal_op(sig + 2, 1, shmem::SIGNAL_ADD, s.next, 0) == 0);
  });
  const uint64_t want[3] = {5, 2, 8};
  const int skip_last[3] = {0, 0, 1};
  size_t indices[3] = {};
  launch({1}, {1}, [&] {
    CHECK(wait_all_vector(sig, 3, nullptr, shmem::CMP_EQ, want) == 0);
    const uint64_t later[3] = {6, 2, 9};
    CHECK(test_any_vector(sig, 3, nullptr, shmem::CMP_GE, later) == 1);
    CHECK(test_any_vector(sig, 3, skip_last, shmem::CMP_GT, want) == SIZE_MAX);
    CHECK(wait_some(sig, 3, indices, skip_last, shmem::CMP_LE, 5) == 2);
    CHECK(test_all(sig, 3, skip_last, shmem::CMP_GE, 2) == 1);
  });
  CHECK(indices[0] == 0);
  CHECK(indices[1] == 1);
  for (size_t i = 0; i < kN; ++i) {
    CHECK(data[i] == s.prev * 1000 + i);
    CHECK(bytes[i] == static_cast<uint8_t>(s.prev + i));
  }
  barrier();
  for (void* p : {static_cast<void*>(data), static_cast<void*>(bytes), static_cast<void*>(sig)})
    shmem::free(p);
}

}  // namespace

// The nbi forms put the old value in their first parameter, `fetch` (here symmetric memory, which
// RDMA would land directly); the lock calls take the symmetric long and no PE or QP.
TEST_CASE("abi.atomic_nbi_lock") {
  AbiSession s;
  auto* counter = symmetric<uint64_t>(2);  // [0] the target, [1] where the old value lands
  auto* cas = symmetric<int32_t>(2);
  auto* single = symmetric<float>(2);
  auto* lock = symmetric<long>(1);
  counter[0] = 10, cas[0] = 7, single[0] = 1.5f + s.me, *lock = 0;
  barrier();
  auto* fetch_add_nbi = fn<int(uint64_t*, uint64_t*, uint64_t, int, int)>(
      "mori_shmem_uint64_atomic_fetch_add_nbi_thread");
  auto* compare_swap_nbi = fn<int(int32_t*, int32_t*, int32_t, int32_t, int, int)>(
      "mori_shmem_int32_atomic_compare_swap_nbi_thread");
  auto* fetch_float_nbi =
      fn<int(float*, const float*, int, int)>("mori_shmem_float_atomic_fetch_nbi_thread");
  auto* quiet = fn<int()>("mori_shmem_quiet_thread");
  auto* set_lock = fn<int(long*)>("mori_shmem_set_lock");
  auto* test_lock = fn<int(long*)>("mori_shmem_test_lock");
  auto* clear_lock = fn<int(long*)>("mori_shmem_clear_lock");
  launch({1}, {1}, [&] {
    CHECK(fetch_add_nbi(&counter[1], &counter[0], 5, s.next, 0) == 0);
    CHECK(compare_swap_nbi(&cas[1], &cas[0], 7, 100 + s.me, s.next, 0) == 0);
    CHECK(fetch_float_nbi(&single[1], &single[0], s.next, 0) == 0);
    CHECK(quiet() == 0);
    CHECK(counter[1] == 10);
    CHECK(cas[1] == 7);
    CHECK(single[1] == 1.5f + s.next);
    CHECK(set_lock(lock) == 0);
    CHECK(test_lock(lock) == 1);  // held (by this thread): test_lock takes no ticket
    CHECK(clear_lock(lock) == 0);
  });
  barrier();
  CHECK(counter[0] == 15);
  CHECK(cas[0] == 100 + s.prev);
  // PE 0's copy holds the lock: every PE took and released one ticket.
  if (s.me == 0) CHECK(*lock == static_cast<long>(uint64_t(s.n) << 32 | uint64_t(s.n)));
  shmem::free(counter);
  shmem::free(cas);
  shmem::free(single);
  shmem::free(lock);
}

TEST_CASE("abi.signal_wait") {
  AbiSession s;
  constexpr size_t kN = 64;
  auto* data = symmetric<float>(kN);
  auto* sig = symmetric<uint64_t>(2);
  sig[0] = sig[1] = 0;
  std::vector<float> src(kN);
  for (size_t i = 0; i < kN; ++i) src[i] = s.me + i * 0.5f;
  barrier();
  auto* put_signal = fn<int(float*, const float*, size_t, void*, uint64_t, atomicType, int, int)>(
      "mori_shmem_put_float_nbi_signal_block");
  auto* signal_wait = fn<uint64_t(uint64_t*, Cmp, uint64_t)>("mori_shmem_signal_wait_until");
  auto* wait_ge = fn<uint64_t(uint64_t*, uint64_t)>("mori_shmem_uint64_wait_until_ge");
  auto* test_eq = fn<int(uint64_t*, uint64_t)>("mori_shmem_uint64_test_eq");
  auto* signal_fetch = fn<uint64_t(const uint64_t*)>("mori_shmem_signal_fetch");
  launch({1}, {8}, [&] {
    CHECK(put_signal(data, src.data(), kN, sig, 3, shmem::SIGNAL_ADD, s.next, 0) == 0);
  });
  launch({1}, {1}, [&] {
    CHECK(signal_wait(sig, shmem::CMP_EQ, 3) == 3);
    CHECK(wait_ge(sig, 2) == 3);
    CHECK(test_eq(sig, 3) == 1);
    CHECK(test_eq(sig + 1, 3) == 0);
    CHECK(signal_fetch(sig) == 3);
  });
  for (size_t i = 0; i < kN; ++i) CHECK(data[i] == s.prev + i * 0.5f);
  barrier();
  shmem::free(data);
  shmem::free(sig);
  signal_op_blocking_arrays(s);
}

namespace {

// Contexts through the C ABI (run by abi.query_barrier: no ctest entry of its own). The module's
// device state points to the runtime's pool (module_init copies the address), so the module's
// creations and the host API's draw from one pool; a context's RMA is the _qp entry with its index.
void abi_contexts(const AbiSession& s) {
  auto* create_thread = fn<int(long, int*)>("mori_shmem_ctx_create_thread");
  auto* create_block = fn<int(long, int*)>("mori_shmem_ctx_create_block");
  auto* destroy_thread = fn<int(int)>("mori_shmem_ctx_destroy_thread");
  auto* destroy_block = fn<int(int)>("mori_shmem_ctx_destroy_block");
  auto* ctx_quiet = fn<int(int)>("mori_shmem_ctx_quiet_thread");
  auto* ctx_fence = fn<int(int)>("mori_shmem_ctx_fence_thread");
  auto* putmem_nbi = fn<int(void*, const void*, size_t, int, int)>("mori_shmem_putmem_nbi_thread");
  auto* word = symmetric<int64_t>(1);
  int a = 0, b = 0;
  launch({1}, {1}, [&] {
    CHECK(create_thread(shmem::kCtxPrivate, &a) == shmem::kCtxCreated);
    CHECK(create_thread(8, &b) == shmem::kCtxBadOptions);
  });
  CHECK(a == 1);
  CHECK(b == -1);
  launch({1}, {4}, [&] { CHECK(create_block(0, &b) == shmem::kCtxCreated); });
  CHECK(b == 2);
  shmem::Ctx h{};
  REQUIRE(shmem::ctx_create(0, &h) == 0);
  CHECK(h.qp == 3);  // the last of MORI_NUM_QP_PER_PE's default 4
  const int64_t mine = 1000 + s.me;
  launch({1}, {1}, [&] {
    CHECK(putmem_nbi(word, &mine, sizeof mine, s.next, a) == 0);
    CHECK(ctx_fence(a) == 0);
    CHECK(ctx_quiet(a) == 0);
    CHECK(destroy_thread(a) == 0);
  });
  launch({1}, {4}, [&] { CHECK(destroy_block(b) == 0); });
  REQUIRE(shmem::ctx_destroy(h) == 0);
  REQUIRE(shmem::ctx_create(0, &h) == 0);
  CHECK(h.qp == 1);  // every context is free again
  REQUIRE(shmem::ctx_destroy(h) == 0);
  barrier();
  CHECK(*word == 1000 + s.prev);
  shmem::free(word);
}

}  // namespace

TEST_CASE("abi.query_barrier") {
  AbiSession s;
  auto* x = symmetric<int32_t>(1);
  auto* my_pe = fn<int()>("mori_shmem_my_pe");
  auto* n_pes = fn<int()>("mori_shmem_n_pes");
  auto* ptr = fn<uint64_t(uint64_t, int)>("mori_shmem_ptr");
  auto* ptr_p2p = fn<uint64_t(const uint64_t, const int, int)>("mori_shmem_ptr_p2p");
  auto* barrier_block = fn<int()>("mori_shmem_barrier_all_block");
  auto* barrier_thread = fn<int()>("mori_shmem_barrier_all_thread");
  const auto addr = reinterpret_cast<uint64_t>(x);
  launch({1}, {1}, [&] {
    CHECK(my_pe() == s.me);
    CHECK(n_pes() == s.n);
    CHECK(ptr(addr, s.me) == addr);
    CHECK(ptr(addr, s.next) != 0);  // the host backend maps every peer's heap
    CHECK(ptr_p2p(addr, s.me, s.next) == ptr(addr, s.next));
    CHECK(ptr_p2p(addr, s.next, s.next) == 0);  // myPe must be the calling PE
  });
  launch({1}, {4}, [&] {
    CHECK(barrier_block() == 0);
    CHECK(barrier_block() == 0);
  });
  launch({1}, {1}, [&] { CHECK(barrier_thread() == 0); });
  shmem::free(x);
  // Teams: the module's own device state carries the team table (module_init copies its address).
  auto* team_my_pe = fn<int(int)>("mori_shmem_team_my_pe");
  auto* team_n_pes = fn<int(int)>("mori_shmem_team_n_pes");
  auto* team_translate_pe = fn<int(int, int, int)>("mori_shmem_team_translate_pe");
  auto* team_sync_block = fn<int(int)>("mori_shmem_team_sync_block");
  auto* team_barrier_warp = fn<int(int)>("mori_shmem_team_barrier_warp");
  auto* team_barrier_thread = fn<int(int)>("mori_shmem_team_barrier_thread");
  launch({1}, {1}, [&] {
    CHECK(team_my_pe(shmem::kTeamWorld) == s.me);
    CHECK(team_n_pes(shmem::kTeamWorld) == s.n);
    CHECK(team_my_pe(shmem::kTeamInvalid) == -1);
    CHECK(team_translate_pe(shmem::kTeamWorld, s.next, shmem::kTeamWorld) == s.next);
    CHECK(team_translate_pe(shmem::kTeamWorld, s.next, shmem::kTeamInvalid) == -1);
  });
  launch({1}, {4}, [&] { CHECK(team_sync_block(shmem::kTeamWorld) == 0); });
  launch({1}, {64}, [&] { CHECK(team_barrier_warp(shmem::kTeamWorld) == 0); });
  launch({1}, {1}, [&] { CHECK(team_barrier_thread(shmem::kTeamWorld) == 0); });
  abi_contexts(s);
}
