// Communication contexts (OpenSHMEM 1.5, section 9.5; rocSHMEM's rocshmem_ctx_t): a context is a
// stream of RMA, AMO and signal operations that its own quiet and fence complete and order, apart
// from every other context's. In mori a context is one RDMA queue-pair index, the same for every
// target PE: the QP that the device API's `qp` argument already names. The default context is
// QP 0, which every call without a context uses; the others are handed out from this PE's pool.
//
// The pool is per PE and not collective: a context names this PE's QP `qp` to each target, so two
// PEs' contexts never interact, as in OpenSHMEM (shmem_ctx_create is a local call). The host
// runtime and device code claim from the same bitmap, so they never hand out one QP twice.
#pragma once

#include <cstdint>

namespace mori::state {

// The most QPs per peer PE (MORI_NUM_QP_PER_PE), and so the most live contexts plus the default.
inline constexpr int kMaxQpPerPe = 256;

// A context handle: plain data, passed by value, as OpenSHMEM's shmem_ctx_t. `qp` is this PE's
// queue-pair index to every target PE; P2P ignores it.
struct Ctx {
  int32_t qp;
};
static_assert(sizeof(Ctx) == 4, "Ctx is an int in the extern \"C\" ABI");

// SHMEM_CTX_DEFAULT (QP 0, never destroyed) and SHMEM_CTX_INVALID (what a failed create returns).
inline constexpr Ctx kCtxDefault{0};
inline constexpr Ctx kCtxInvalid{-1};
constexpr bool operator==(Ctx a, Ctx b) { return a.qp == b.qp; }

// The options of ctx_create, OpenSHMEM's names with the values of Open MPI's shmem.h. They are
// promises by the caller about how the context will be used; mori accepts them and needs none of
// them: the RDMA engine posts lock-free from any number of threads on one QP (transport/
// rdma_engine.hpp), so a shared context costs no more than a private one.
inline constexpr long kCtxPrivate = 1 << 0;     // SHMEM_CTX_PRIVATE: used by its creator only
inline constexpr long kCtxSerialized = 1 << 1;  // SHMEM_CTX_SERIALIZED: never used concurrently
inline constexpr long kCtxNoStore = 1 << 2;     // SHMEM_CTX_NOSTORE: quiet need not order stores
inline constexpr long kCtxOptions = kCtxPrivate | kCtxSerialized | kCtxNoStore;

// What the device's ctx_create returns (the host's returns 0 or -1 and logs the reason).
enum CtxStatus : int {
  kCtxCreated = 0,
  kCtxNoFreeQp = 1,    // every QP beyond the default belongs to a live context
  kCtxBadOptions = 2,  // options has bits other than kCtxOptions
  kCtxNoRuntime = 3,   // no device state: before init or after finalize
};
constexpr const char* ctx_status_text(int status) {
  switch (status) {
    case kCtxCreated:
      return "created";
    case kCtxNoFreeQp:
      return "no free context: every queue pair beyond the default is in use (MORI_NUM_QP_PER_PE)";
    case kCtxBadOptions:
      return "options has bits other than SHMEM_CTX_PRIVATE, SERIALIZED and NOSTORE";
    case kCtxNoRuntime:
      return "mori is not initialised";
    default:
      return "unknown status";
  }
}

// The pool: bit q % 64 of live[q / 64] is set while QP q belongs to a context. The runtime sets
// bit 0 (the default context) at init and the bits past num_qp_per_pe are never claimed. It lives
// in memory that host and device both update atomically (GpuStates::contexts).
struct ContextPool {
  uint64_t live[kMaxQpPerPe / 64];
};
static_assert(sizeof(ContextPool) == 32, "ContextPool is part of the device-state ABI");

// Claims the lowest free QP below num_qp, or returns -1 when none is free. The caller supplies
// the atomics, so that one algorithm serves the host runtime (std::atomic_ref) and device code
// (platform atomics): load(word) and cas(word, expected, desired), which returns what it found.
// A claim is one successful CAS that sets one clear bit, so two claimants never get the same QP
// and a concurrent release is never lost.
template <typename Load, typename Cas>
constexpr int pool_claim(uint64_t* live, int num_qp, Load&& load, Cas&& cas) {
  for (int w = 0; w * 64 < num_qp; ++w) {
    const int bits = num_qp - w * 64 < 64 ? num_qp - w * 64 : 64;
    const uint64_t usable = bits == 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
    uint64_t seen = load(&live[w]);
    while (const uint64_t free = ~seen & usable) {
      const uint64_t bit = free & (~free + 1);  // the lowest free one
      const uint64_t found = cas(&live[w], seen, seen | bit);
      if (found == seen) return w * 64 + __builtin_ctzll(bit);
      seen = found;
    }
  }
  return -1;
}

// The word and bit of QP `qp` (0 <= qp < kMaxQpPerPe).
constexpr int pool_word(int qp) { return qp / 64; }
constexpr uint64_t pool_bit(int qp) { return uint64_t{1} << (qp % 64); }

// Whether `ctx` may name a created context in a job of num_qp QPs per PE: 1 <= qp < num_qp.
constexpr bool ctx_in_range(Ctx ctx, int num_qp) { return ctx.qp >= 1 && ctx.qp < num_qp; }

}  // namespace mori::state
