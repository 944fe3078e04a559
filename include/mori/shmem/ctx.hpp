// Communication contexts on the device (OpenSHMEM 1.5, section 9.5; creation from kernels as
// rocSHMEM's rocshmem_wg_ctx_create, which ROCm DeepEP's low-latency mode calls per block). A
// context (state/context.hpp) is one RDMA queue-pair index of this PE, the same for every target;
// its operations go on that QP, so its quiet and fence wait for and order them alone.
//
//   ctx_create<S>(options, &ctx) -> int   claims a free QP from this PE's pool (shared with the
//                                         host's ctx_create); 0, or a CtxStatus with ctx set to
//                                         kCtxInvalid (no free QP, bad options: OpenSHMEM treats
//                                         neither as an error, so nothing traps)
//   ctx_destroy<S>(ctx)                   quiets the context (OpenSHMEM's implicit quiet), then
//                                         frees its QP; kCtxInvalid is a no-op
//   ctx_quiet(ctx), ctx_fence(ctx)        quiet / fence on the context's QP to every PE: the
//                                         other contexts' operations are neither waited for nor
//                                         ordered (P2P has no QPs: its quiet and fence are the
//                                         system fence of quiet() and fence())
//   ctx_<call>(ctx, args...)              <call>(args..., ctx.qp) for every RMA, AMO and signal
//                                         call: ctx_put_nbi<Warp>(ctx, dst, src, n, pe),
//                                         ctx_atomic_fetch_add(ctx, p, 1, pe), ...
//
// For Warp and Block, every participant calls ctx_create and ctx_destroy with the same arguments,
// and `ctx` points to one Ctx that all of them can read (a __shared__ variable, as with rocSHMEM's
// work-group form): the leader claims, then every participant returns the result it wrote there.
//
// Checked builds (MORI_DEVICE_CHECKS) trap when a context call is given a context that is not
// live on this PE (kCtxInvalid, a destroyed one, an index past MORI_NUM_QP_PER_PE), naming it.
// Without checks an out-of-range QP traps over RDMA (the transport's qp check) and is ignored by
// P2P, and kCtxInvalid's quiet and fence cover every QP.
//
// Contexts are local to this PE and not collective, as OpenSHMEM's: any thread may create one at
// any time. The sized strided forms (iput<SIZE, S>) take no context form: pass ctx.qp as their
// last argument, as every call of the device API accepts.
#pragma once

#include <cstdint>

#include "mori/core/scope.hpp"
#include "mori/shmem/atomic.hpp"
#include "mori/shmem/order.hpp"
#include "mori/shmem/rma.hpp"
#include "mori/shmem/signal.hpp"
#include "mori/shmem/single.hpp"
#include "mori/shmem/strided.hpp"
#include "mori/shmem/vocabulary.hpp"
#include "mori/state/context.hpp"

namespace mori::shmem {

namespace detail {

using platform::MemOrder;
using platform::MemScope;

// Whether QP `qp` belongs to a live context of this PE (the default one always does).
MORI_DEVICE bool ctx_live(int qp) {
  const state::GpuStates& s = state::gpu_states();
  if (qp < 0 || qp >= s.num_qp_per_pe || s.contexts == nullptr) return false;
  const uint64_t word = platform::atomic_load<MemOrder::Relaxed, MemScope::System>(
      &s.contexts->live[state::pool_word(qp)]);
  return (word & state::pool_bit(qp)) != 0;
}

// With checks: `ctx` names a live context of this PE.
MORI_DEVICE void check_ctx(const char* call, Ctx ctx) {
  if constexpr (MORI_DEVICE_CHECKS) {
    if (!ctx_live(ctx.qp)) {
      const int me = state::this_pe();
      state::fail({state::DeviceErrorCode::kBadArgument, me, 0, static_cast<uint64_t>(ctx.qp)},
                  [&](state::Message& m) {
                    m << call << ": context " << ctx.qp << " is not a live context of PE " << me
                      << " (kCtxInvalid, destroyed, or never created; MORI_NUM_QP_PER_PE = "
                      << state::gpu_states().num_qp_per_pe << ")";
                  });
    }
  }
}

// Claims a QP for a new context: its index, or -1.
MORI_DEVICE int claim_context(const state::GpuStates& s) {
  // AcqRel at system scope: the host claims and releases in the same words (std::atomic_ref), and
  // a claim that follows a release must see the releaser's quiet before it posts on the QP.
  auto load = [](uint64_t* w) {
    return platform::atomic_load<MemOrder::Acquire, MemScope::System>(w);
  };
  auto cas = [](uint64_t* w, uint64_t expected, uint64_t desired) {
    return platform::atomic_compare_swap<MemOrder::AcqRel, MemScope::System>(w, expected, desired);
  };
  return state::pool_claim(s.contexts->live, s.num_qp_per_pe, load, cas);
}

// The device's ctx_create over the context's QP index (the extern "C" ABI passes an int*).
template <Scope S>
MORI_DEVICE int create_context(long options, int32_t* qp) {
  const state::GpuStates& s = state::gpu_states();
  const bool bad_options = (options & ~state::kCtxOptions) != 0;
  const bool no_runtime = s.contexts == nullptr;
  if (S::leader()) *qp = bad_options || no_runtime ? -1 : claim_context(s);
  S::sync();  // *qp is written before any participant reads it
  const int32_t got = *qp;
  S::sync();  // and read by all before a participant may write it again (a second create)
  if (bad_options) return state::kCtxBadOptions;
  if (no_runtime) return state::kCtxNoRuntime;
  return got < 0 ? state::kCtxNoFreeQp : state::kCtxCreated;
}

// Quiets `ctx`, then returns its QP to the pool. Checked builds trap on the default context, on a
// QP past the pool, and on one that is not live (a second destroy).
MORI_DEVICE void release_context(const char* call, Ctx ctx) {
  const state::GpuStates& s = state::gpu_states();
  const int me = state::this_pe();
  auto refuse = [&](const char* why) {
    if constexpr (MORI_DEVICE_CHECKS) {
      state::fail({state::DeviceErrorCode::kBadArgument, me, 0, static_cast<uint64_t>(ctx.qp)},
                  [&](state::Message& m) {
                    m << call << ": context " << ctx.qp << " " << why << " (PE " << me
                      << ", MORI_NUM_QP_PER_PE = " << s.num_qp_per_pe << ")";
                  });
    }
  };
  if (ctx.qp == kCtxDefault.qp) return refuse("is the default context, which cannot be destroyed");
  if (!state::ctx_in_range(ctx, s.num_qp_per_pe) || s.contexts == nullptr)
    return refuse("is not a context of this job");
  order<true, true>(call, -1, ctx.qp);
  const uint64_t bit = state::pool_bit(ctx.qp);
  const uint64_t was = platform::atomic_fetch_and<MemOrder::AcqRel, MemScope::System>(
      &s.contexts->live[state::pool_word(ctx.qp)], ~bit);
  if ((was & bit) == 0) refuse("is not live: already destroyed, or never created");
}

}  // namespace detail

// ---- lifetime -----------------------------------------------------------------------------------
// No default scope: on the host backend the host API's ctx_create(options, ctx) has the same
// parameters, and the scope keeps the two apart.
template <Scope S>
MORI_DEVICE int ctx_create(long options, Ctx* ctx) {
  return detail::create_context<S>(options, &ctx->qp);
}

template <Scope S>
MORI_DEVICE void ctx_destroy(Ctx ctx) {
  S::sync();  // every participant's operations on ctx are posted before the leader's quiet
  if (S::leader() && ctx != kCtxInvalid) detail::release_context("ctx_destroy", ctx);
  S::sync();
}

// ---- ordering: quiet and fence over every PE, on the context's QP only --------------------------
MORI_DEVICE void ctx_quiet(Ctx ctx) {
  detail::check_ctx("ctx_quiet", ctx);
  detail::order<true, true>("ctx_quiet", -1, ctx.qp);
}
MORI_DEVICE void ctx_fence(Ctx ctx) {
  detail::check_ctx("ctx_fence", ctx);
  detail::order<false, true>("ctx_fence", -1, ctx.qp);
}

// ---- RMA, AMOs and signals on a context ---------------------------------------------------------
// ctx_<name>(ctx, args...) is <name>(args..., ctx.qp): each call of the device API takes its QP
// last. Explicit template arguments pass through (ctx_put<Warp>, ctx_atomic_add<long>), the others
// are deduced from the arguments as for <name> itself, and every overload of <name> (typed,
// symmetric object) gets its context form.
#define MORI_CTX_FORWARD(name)                                      \
  template <typename... Explicit, typename... Args>                 \
  MORI_DEVICE decltype(auto) ctx_##name(Ctx ctx, Args&&... args) {  \
    detail::check_ctx("ctx_" #name, ctx);                           \
    return name<Explicit...>(static_cast<Args&&>(args)..., ctx.qp); \
  }
// The named atomics: one form per row of MORI_FOR_EACH_AMO that has a named call, and its _nbi
// form for the fetching rows.
#define MORI_CTX_AMO(code, number, kind, arg, fetch, form, api, ...) \
  MORI_CTX_AMO_##form(api) MORI_CTX_AMO_NBI_##fetch(api)
#define MORI_CTX_AMO_VALUE(api) MORI_CTX_FORWARD(api)
#define MORI_CTX_AMO_UNIT(api) MORI_CTX_FORWARD(api)
#define MORI_CTX_AMO_READ(api) MORI_CTX_FORWARD(api)
#define MORI_CTX_AMO_COMPARE(api) MORI_CTX_FORWARD(api)
#define MORI_CTX_AMO_NONE(api)
#define MORI_CTX_AMO_NBI_0(api)
#define MORI_CTX_AMO_NBI_1(api) MORI_CTX_FORWARD(api##_nbi)

MORI_CTX_FORWARD(putmem_nbi)
MORI_CTX_FORWARD(putmem)
MORI_CTX_FORWARD(getmem_nbi)
MORI_CTX_FORWARD(getmem)
MORI_CTX_FORWARD(put_nbi)
MORI_CTX_FORWARD(put)
MORI_CTX_FORWARD(get_nbi)
MORI_CTX_FORWARD(get)
MORI_CTX_FORWARD(iput)
MORI_CTX_FORWARD(iget)
MORI_CTX_FORWARD(p)
MORI_CTX_FORWARD(g)
MORI_CTX_FORWARD(putmem_signal_nbi)
MORI_CTX_FORWARD(putmem_signal)
MORI_CTX_FORWARD(put_signal_nbi)
MORI_CTX_FORWARD(put_signal)
MORI_CTX_FORWARD(atomic_nonfetch)
MORI_CTX_FORWARD(atomic_fetch_op)
MORI_FOR_EACH_AMO(MORI_CTX_AMO)

// signal_op is a plain function, not a template.
MORI_DEVICE void ctx_signal_op(Ctx ctx, uint64_t* sig_addr, uint64_t signal, atomicType sig_op,
                               int pe) {
  detail::check_ctx("ctx_signal_op", ctx);
  signal_op(sig_addr, signal, sig_op, pe, ctx.qp);
}

#undef MORI_CTX_AMO_NBI_1
#undef MORI_CTX_AMO_NBI_0
#undef MORI_CTX_AMO_NONE
#undef MORI_CTX_AMO_COMPARE
#undef MORI_CTX_AMO_READ
#undef MORI_CTX_AMO_UNIT
#undef MORI_CTX_AMO_VALUE
#undef MORI_CTX_AMO
#undef MORI_CTX_FORWARD

}  // namespace mori::shmem
