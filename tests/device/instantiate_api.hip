// Instantiates the whole device API for amdgcn: every family, in every scope, for every type of its
// list. The header checks only parse the templates; this file makes clang generate code for each
// instantiation, so that -Werror sees what only a real call reveals (a narrowing conversion, an
// unsupported atomic width, a builtin that rejects a dependent argument).
//
// One kernel per family (rma, strided, single, sync, query, atomic, lock, signal, wait, barrier,
// collectives, ctx); each expands the family's type list from its X-macro. A kernel's arguments
// are opaque so that nothing is folded away.
#include "mori/shmem.hpp"
#include "mori/shmem/device_api.hpp"

MORI_SHMEM_DEFINE_GPU_STATES();

namespace {

namespace shmem = mori::shmem;
using mori::Block;
using mori::for_each_scope;
using mori::Thread;
using mori::Warp;

}  // namespace

// ---- rma: put/get, nbi and blocking, bytes, typed elements and symmetric objects; iput/iget -----
namespace {
MORI_DEVICE void untyped_rma(void* dst, const void* src, size_t bytes, int pe, int qp) {
  for_each_scope([&]<typename S>() {
    shmem::putmem_nbi<S>(dst, src, bytes, pe, qp);
    shmem::putmem<S>(dst, src, bytes, pe, qp);
    shmem::getmem_nbi<S>(dst, src, bytes, pe, qp);
    shmem::getmem<S>(dst, src, bytes, pe, qp);
  });
}

template <typename T>
MORI_DEVICE void typed_rma(void* dst_bytes, const void* src_bytes, size_t n, int pe, int qp) {
  T* dst = static_cast<T*>(dst_bytes);
  const T* src = static_cast<const T*>(src_bytes);
  const shmem::SymmObj<T> obj{dst, n};
  for_each_scope([&]<typename S>() {
    shmem::put_nbi<S>(dst, src, n, pe, qp);
    shmem::put<S>(dst, src, n, pe, qp);
    shmem::get_nbi<S>(dst, src, n, pe, qp);
    shmem::get<S>(dst, src, n, pe, qp);
    shmem::put_nbi<S>(obj, 1, src, n - 1, pe, qp);
    shmem::put<S>(obj, 1, src, n - 1, pe, qp);
    shmem::get_nbi<S>(dst, obj, 1, n - 1, pe, qp);
    shmem::get<S>(dst, obj, 1, n - 1, pe, qp);
  });
}

// The strided forms: sized (iput<SIZE>, iget<SIZE>) for every SIZE, typed (iput, iget) for the two
// floating-point types only. Both reach the same code for an element of their width; every
// element type would add 66 instantiations (5 s of this file's 25 s) and nothing new.
template <size_t kBits>
MORI_DEVICE void sized_strided(void* dst, const void* src, size_t n, int pe, int qp) {
  for_each_scope([&]<typename S>() {
    shmem::iput<kBits, S>(dst, src, 2, 3, n, pe, qp);
    shmem::iget<kBits, S>(dst, src, 3, 2, n, pe, qp);
  });
}
template <typename T>
MORI_DEVICE void typed_strided(void* dst_bytes, const void* src_bytes, size_t n, int pe, int qp) {
  T* dst = static_cast<T*>(dst_bytes);
  const T* src = static_cast<const T*>(src_bytes);
  for_each_scope([&]<typename S>() {
    shmem::iput<S>(dst, src, 2, 3, n, pe, qp);
    shmem::iget<S>(dst, src, 3, 2, n, pe, qp);
  });
}
}  // namespace

#define MORI_INSTANTIATE_(type, name) typed_rma<type>(dst, src, n, pe, qp);
MORI_KERNEL void instantiate_rma(void* dst, const void* src, size_t n, int pe, int qp) {
  untyped_rma(dst, src, n, pe, qp);
  MORI_FOR_EACH_TYPE(MORI_INSTANTIATE_);
}
#undef MORI_INSTANTIATE_
#define MORI_INSTANTIATE_(bits) sized_strided<bits>(dst, src, n, pe, qp);
#define MORI_TYPED_(type, name) typed_strided<type>(dst, src, n, pe, qp);
MORI_KERNEL void instantiate_strided(void* dst, const void* src, size_t n, int pe, int qp) {
  MORI_FOR_EACH_RMA_SIZE(MORI_INSTANTIATE_)
  MORI_FOR_EACH_AMO_FLOAT_TYPE(MORI_TYPED_)
}
#undef MORI_TYPED_
#undef MORI_INSTANTIATE_

// ---- single: p and g (Thread scope only), on the element types and the `_p` C type names --------
namespace {
template <typename T>
MORI_DEVICE void single(void* at, int pe, int qp) {
  T* dst = static_cast<T*>(at);
  shmem::p(dst, shmem::g(dst + 1, pe, qp), pe, qp);
}
}  // namespace

#define MORI_INSTANTIATE_(type, name) single<type>(at, pe, qp);
MORI_KERNEL void instantiate_single(void* at, int pe, int qp) {
  MORI_FOR_EACH_TYPE(MORI_INSTANTIATE_);
  MORI_FOR_EACH_P_TYPE(MORI_INSTANTIATE_);
}
#undef MORI_INSTANTIATE_

// ---- sync: quiet and fence, over every PE, one PE, and one PE's queue pair ----------------------
MORI_KERNEL void instantiate_sync(int pe, int qp) {
  shmem::quiet();
  shmem::quiet(pe);
  shmem::quiet(pe, qp);
  shmem::fence();
  shmem::fence(pe);
  shmem::fence(pe, qp);
}

// ---- query: the pointer queries and the PE queries ----------------------------------------------
MORI_KERNEL void instantiate_query(const void* at, int pe, uint64_t* out) {
  out[0] = shmem::ptr_p2p(reinterpret_cast<uint64_t>(at), shmem::my_pe(), pe);
  out[1] = reinterpret_cast<uint64_t>(shmem::ptr(at, pe));
  out[2] = static_cast<uint64_t>(shmem::n_pes());
}

// ---- atomic: every AMO by name, by ABI code and (fetching) nbi, on every AMO type, as its class
// allows; the distributed locks -------------------------------------------------------------------
namespace {
template <typename T>
MORI_DEVICE uint64_t amos(void* at_bytes, uint64_t v64, int pe, int qp) {
  T* at = static_cast<T*>(at_bytes);
  T* fetch = at + 1;
  const T v = static_cast<T>(v64);
  shmem::atomic_set(at, v, pe, qp);
  shmem::atomic_nonfetch(at, v, shmem::AMO_SET, pe, qp);
  T r = shmem::atomic_fetch(at, pe, qp);
  r += shmem::atomic_swap(at, v, pe, qp);
  r += shmem::atomic_fetch_op(at, v, r, shmem::AMO_SWAP, pe, qp);
  shmem::atomic_fetch_nbi(fetch, static_cast<const T*>(at), pe, qp);
  shmem::atomic_swap_nbi(fetch, at, v, pe, qp);
  if constexpr (shmem::amo_accepts<T>(shmem::AMO_ADD)) {  // the standard types
    shmem::atomic_inc(at, pe, qp);
    shmem::atomic_add(at, v, pe, qp);
    shmem::atomic_nonfetch(at, v, shmem::AMO_ADD, pe, qp);
    r += shmem::atomic_fetch_inc(at, pe, qp);
    r += shmem::atomic_fetch_add(at, v, pe, qp);
    r += shmem::atomic_compare_swap(at, r, v, pe, qp);
    r += shmem::atomic_fetch_op(at, v, r, shmem::AMO_COMPARE_SWAP, pe, qp);
    shmem::atomic_fetch_inc_nbi(fetch, at, pe, qp);
    shmem::atomic_fetch_add_nbi(fetch, at, v, pe, qp);
    shmem::atomic_compare_swap_nbi(fetch, at, r, v, pe, qp);
  }
  if constexpr (shmem::amo_accepts<T>(shmem::AMO_AND)) {  // the bitwise types
    shmem::atomic_and(at, v, pe, qp);
    shmem::atomic_or(at, v, pe, qp);
    shmem::atomic_xor(at, v, pe, qp);
    r += shmem::atomic_fetch_and(at, v, pe, qp);
    r += shmem::atomic_fetch_or(at, v, pe, qp);
    r += shmem::atomic_fetch_xor(at, v, pe, qp);
    shmem::atomic_fetch_and_nbi(fetch, at, v, pe, qp);
    shmem::atomic_fetch_or_nbi(fetch, at, v, pe, qp);
    shmem::atomic_fetch_xor_nbi(fetch, at, v, pe, qp);
  }
  return static_cast<uint64_t>(r);
}
}  // namespace

#define MORI_INSTANTIATE_(type, name) *out += amos<type>(at, v, pe, qp);
MORI_KERNEL void instantiate_atomic(void* at, uint64_t v, int pe, int qp, uint64_t* out) {
  MORI_FOR_EACH_AMO_EXTENDED_TYPE(MORI_INSTANTIATE_);
}
#undef MORI_INSTANTIATE_

MORI_KERNEL void instantiate_lock(long* lock, int* out) {
  shmem::set_lock(lock);
  shmem::clear_lock(lock);
  *out = shmem::test_lock(lock);
}

// ---- signal: put-with-signal (_nbi, blocking) in every scope, bytes and typed; signal_op; waits ---
MORI_KERNEL void instantiate_signal(void* dst, const void* src, size_t n, uint64_t* sig, uint64_t v,
                                    shmem::atomicType op, shmem::Cmp cmp, int pe, int qp,
                                    uint64_t* out) {
  for_each_scope([&]<typename S>() {
    shmem::putmem_signal_nbi<S>(dst, src, n, sig, v, op, pe, qp);
    shmem::putmem_signal<S>(dst, src, n, sig, v, op, pe, qp);
#define MORI_INSTANTIATE_(type, name)                                                             \
  shmem::put_signal_nbi<S>(static_cast<type*>(dst), static_cast<const type*>(src), n, sig, v, op, \
                           pe, qp);                                                               \
  shmem::put_signal<S>(static_cast<type*>(dst), static_cast<const type*>(src), n, sig, v, op, pe, \
                       qp);
    MORI_FOR_EACH_TYPE(MORI_INSTANTIATE_);
#undef MORI_INSTANTIATE_
  });
  shmem::signal_op(sig, v, op, pe, qp);
  out[0] = shmem::signal_wait_until(sig, cmp, v);
  out[1] = shmem::signal_fetch(sig);
}

// ---- wait: every wait and test form, on the integer element types -------------------------------
namespace {
template <typename T>
MORI_DEVICE uint64_t waits(void* at, size_t n, const int* status, size_t* indices, shmem::Cmp cmp,
                           uint64_t v64) {
  if constexpr (std::is_integral_v<T>) {
    T* ivars = static_cast<T*>(at);
    const T v = static_cast<T>(v64);
    uint64_t r = static_cast<uint64_t>(shmem::wait_until(ivars, cmp, v));
    r += shmem::test(ivars, cmp, v);
    r += shmem::wait_until_equals(ivars, v);
    r += static_cast<uint64_t>(shmem::wait_until_greater_than(ivars, v));
    shmem::wait_until_all(ivars, n, status, cmp, v);
    r += shmem::wait_until_any(ivars, n, status, cmp, v);
    r += shmem::wait_until_some(ivars, n, indices, status, cmp, v);
    r += shmem::test_all(ivars, n, status, cmp, v);
    r += shmem::test_any(ivars, n, status, cmp, v);
    r += shmem::test_some(ivars, n, indices, status, cmp, v);
    const T* values = ivars;  // any array of n comparison values
    shmem::wait_until_all_vector(ivars, n, status, cmp, values);
    r += shmem::wait_until_any_vector(ivars, n, status, cmp, values);
    r += shmem::wait_until_some_vector(ivars, n, indices, status, cmp, values);
    r += shmem::test_all_vector(ivars, n, status, cmp, values);
    r += shmem::test_any_vector(ivars, n, status, cmp, values);
    r += shmem::test_some_vector(ivars, n, indices, status, cmp, values);
    return r;
  } else {
    return 0;  // OpenSHMEM defines wait and test for integers only
  }
}
}  // namespace

#define MORI_INSTANTIATE_(type, name) *out += waits<type>(at, n, status, indices, cmp, v);
MORI_KERNEL void instantiate_wait(void* at, size_t n, const int* status, size_t* indices,
                                  shmem::Cmp cmp, uint64_t v, uint64_t* out) {
  MORI_FOR_EACH_TYPE(MORI_INSTANTIATE_);
}
#undef MORI_INSTANTIATE_

// ---- barrier: barrier_all in every scope --------------------------------------------------------
MORI_KERNEL void instantiate_barrier() {
  for_each_scope([]<typename S>() { shmem::barrier_all<S>(); });
}

// ---- collectives: every collective in every scope for every type; each reduction operator the
// type takes, by name and by code ------------------------------------------------------------------
namespace {
template <typename T>
MORI_DEVICE void collectives(void* dst_bytes, const void* src_bytes, size_t n, int team, int op) {
  T* dst = static_cast<T*>(dst_bytes);
  const T* src = static_cast<const T*>(src_bytes);
  for_each_scope([&]<typename S>() {
    shmem::broadcast<S>(team, dst, src, n, 0);
    shmem::fcollect<S>(team, dst, src, n);
    shmem::collect<S>(team, dst, src, n);
    shmem::alltoall<S>(team, dst, src, n);
    shmem::alltoalls<S>(team, dst, src, 2, 3, n);
    if constexpr (std::is_integral_v<T>) {
      shmem::and_reduce<S>(team, dst, src, n);
      shmem::or_reducescatter<S>(team, dst, src, n);
      shmem::xor_reduce<S>(team, dst, src, n);
    }
    shmem::min_reduce<S>(team, dst, src, n);
    shmem::max_reducescatter<S>(team, dst, src, n);
    shmem::sum_reduce<S>(team, dst, src, n);
    shmem::prod_reduce<S>(team, dst, src, n);
    shmem::reduce<S>(team, dst, src, n, op);
    shmem::reducescatter<S>(team, dst, src, n, op);
  });
}
}  // namespace

#define MORI_INSTANTIATE_(type, name) collectives<type>(dst, src, n, team, op);
MORI_KERNEL void instantiate_collectives(void* dst, const void* src, size_t n, int team, int op) {
  MORI_FOR_EACH_TYPE(MORI_INSTANTIATE_);
  for_each_scope([&]<typename S>() {
    shmem::broadcastmem<S>(team, dst, src, n, 1);
    shmem::fcollectmem<S>(team, dst, src, n);
    shmem::collectmem<S>(team, dst, src, n);
    shmem::alltoallmem<S>(team, dst, src, n);
  });
}
#undef MORI_INSTANTIATE_

// ---- ctx: contexts made and destroyed in every scope, and each shape of ctx_ form once (each
// forwards to a call instantiated for every type above) --------------------------------------------
MORI_KERNEL void instantiate_ctx(uint64_t* at, int pe, shmem::Ctx* ctx, uint64_t* out) {
  for_each_scope([&]<typename S>() {
    *out += shmem::ctx_create<S>(shmem::kCtxPrivate, ctx);
    const shmem::SymmObj<uint64_t> obj{at, 8};
    shmem::ctx_putmem_nbi<S>(*ctx, at, at + 4, 8, pe);
    shmem::ctx_getmem<S>(*ctx, at, at + 4, 8, pe);
    shmem::ctx_put<S>(*ctx, obj, 1, at, 2, pe);
    shmem::ctx_get_nbi<S>(*ctx, at, obj, 1, 2, pe);
    shmem::ctx_iput<S>(*ctx, at, at + 4, 2, 1, 2, pe);
    shmem::ctx_put_signal_nbi<S>(*ctx, at, at + 4, 2, at + 7, 1, shmem::SIGNAL_ADD, pe);
    shmem::ctx_destroy<S>(*ctx);
  });
  const shmem::Ctx c = *ctx;
  shmem::ctx_p(c, at, uint64_t{1}, pe);
  *out += shmem::ctx_g(c, at, pe);
  shmem::ctx_atomic_inc(c, at, pe);
  shmem::ctx_atomic_xor(c, at, 3, pe);
  *out += shmem::ctx_atomic_fetch(c, at, pe);
  *out += shmem::ctx_atomic_compare_swap(c, at, 1, 2, pe);
  shmem::ctx_atomic_fetch_add_nbi(c, out, at, 1, pe);
  shmem::ctx_atomic_fetch_inc_nbi(c, out, at, pe);
  shmem::ctx_atomic_fetch_nbi(c, out, static_cast<const uint64_t*>(at), pe);
  shmem::ctx_atomic_compare_swap_nbi(c, out, at, 1, 2, pe);
  shmem::ctx_atomic_nonfetch(c, at, 1, shmem::AMO_ADD, pe);
  *out += shmem::ctx_atomic_fetch_op(c, at, 1, 0, shmem::AMO_FETCH_ADD, pe);
  shmem::ctx_signal_op(c, at, 1, shmem::SIGNAL_SET, pe);
  shmem::ctx_fence(c);
  shmem::ctx_quiet(c);
}
