// Platform layer for the host backend: device code runs on CPU threads started by
// mori::host::launch, one thread per GPU lane. Peer memory is shared memory, so every memory scope
// is a CPU-wide (system) scope here.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <thread>

#include "mori/platform/common.hpp"
#include "mori/platform/host_context.hpp"

namespace mori::platform {

inline constexpr bool kOnHost = true;

// CPU threads standing in for lanes share cache lines badly, so each lane of a scope copies one
// contiguous span.
inline constexpr bool kLanesInterleave = false;

using Vec16 = unsigned int __attribute__((vector_size(16), may_alias));

// ---- indices and sizes --------------------------------------------------------------------------
inline int warp_size() { return host::context().warp_size; }
inline Dim3 thread_idx() { return host::context().thread_idx; }
inline Dim3 block_idx() { return host::context().block_idx; }
inline Dim3 block_dim() { return host::context().block_dim; }
inline Dim3 grid_dim() { return host::context().grid_dim; }
inline int lane_id() { return host::context().lane; }
inline uint32_t funnel_right(uint32_t hi, uint32_t lo, uint32_t bits) {
  return bits == 0 ? lo : (lo >> bits) | (hi << (32 - bits));
}
inline uint32_t uniform(uint32_t x) { return x; }
inline uint32_t opaque_uniform(uint32_t x) { return uniform(x); }

// ---- failure ------------------------------------------------------------------------------------
[[noreturn]] inline void trap(const char* message) { throw host::TrapError(message); }
inline void trap_in_line(const char* message) { trap(message); }

// ---- barriers -----------------------------------------------------------------------------------
inline void warp_sync() {
  const host::LaunchContext& c = host::context();
  if (c.warp) c.warp->barrier.arrive_and_wait();
}
inline void block_sync() {
  const host::LaunchContext& c = host::context();
  if (c.block) c.block->barrier.arrive_and_wait();
}

// ---- warp collectives ---------------------------------------------------------------------------
// Lanes are independent threads here, so no two lanes are ever converged: the active set at any
// call is the calling lane alone (docs/host-backend.md). Code that aggregates over active_mask()
// then degenerates to one lane, which is correct, and divergent calls such as
// `if (lane == 0) put(...)` work as on the GPU.
inline uint64_t active_mask() { return uint64_t{1} << lane_id(); }
inline uint64_t ballot(bool pred) { return pred ? active_mask() : 0; }
template <typename T>
inline T broadcast(T value, int src_lane) {
  if (src_lane != lane_id()) trap("mori: broadcast from a lane that is not active");
  return value;
}
// As broadcast, where the source lane may differ from lane to lane (on the GPU).
template <typename T>
inline T shuffle(T value, int src_lane) {
  if (src_lane != lane_id()) trap("mori: shuffle from a lane that is not active");
  return value;
}

// Whole-warp collectives: every live lane of the warp calls them, as with CUDA's *_sync(full mask)
// forms.
inline uint64_t warp_ballot(bool pred) {
  const host::LaunchContext& c = host::context();
  if (!c.warp) return pred ? 1 : 0;
  c.warp->slots[c.lane] = pred;
  warp_sync();
  uint64_t mask = 0;
  for (int i = 0; i < c.warp_lanes; ++i) mask |= (c.warp->slots[i] ? uint64_t{1} : 0) << i;
  warp_sync();  // nobody overwrites a slot before every lane has read them all
  return mask;
}
template <typename T>
inline T warp_broadcast(T value, int src_lane) {
  static_assert(sizeof(T) <= sizeof(uint64_t), "warp_broadcast moves values of at most 8 bytes");
  const host::LaunchContext& c = host::context();
  if (!c.warp) return value;
  if (c.lane == src_lane) std::memcpy(&c.warp->slots[0], &value, sizeof(T));
  warp_sync();
  T out;
  std::memcpy(&out, &c.warp->slots[0], sizeof(T));
  warp_sync();
  return out;
}

// ---- atomics and fences -------------------------------------------------------------------------
namespace detail {
// ThreadSanitizer does not model standalone fences (std::atomic_thread_fence), so the pattern
// "release fence, then relaxed store" that device code uses (and that amdgcn needs) would look
// like a race to it. Under TSan every relaxed atomic is therefore made acq_rel (a load acquire, a
// store release): a strengthening, so no behaviour changes, and the synchronisation the fences
// provide becomes visible to TSan. Documented in docs/host-backend.md.
#if defined(__SANITIZE_THREAD__)
inline constexpr bool kTsan = true;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
inline constexpr bool kTsan = true;
#else
inline constexpr bool kTsan = false;
#endif
#else
inline constexpr bool kTsan = false;
#endif
constexpr std::memory_order std_order(MemOrder o) {
  switch (o) {
    case MemOrder::Relaxed:
      return kTsan ? std::memory_order_acq_rel : std::memory_order_relaxed;
    case MemOrder::Acquire:
      return std::memory_order_acquire;
    case MemOrder::Release:
      return std::memory_order_release;
    case MemOrder::AcqRel:
      return std::memory_order_acq_rel;
    default:
      return std::memory_order_seq_cst;
  }
}
template <typename T>
std::atomic_ref<T> ref(T* p) {
  return std::atomic_ref<T>(*p);
}
}  // namespace detail

template <MemOrder O, MemScope S, typename T>
inline T atomic_load(const T* p) {
  constexpr MemOrder kO = detail::kTsan && O == MemOrder::Relaxed ? MemOrder::Acquire : O;
  return detail::ref(const_cast<T*>(p)).load(detail::std_order(detail::load_order(kO)));
}
template <MemOrder O, MemScope S, typename T>
inline void atomic_store(T* p, T v) {
  constexpr MemOrder kO = detail::kTsan && O == MemOrder::Relaxed ? MemOrder::Release : O;
  detail::ref(p).store(v, detail::std_order(detail::store_order(kO)));
}
#define MORI_HOST_RMW(op)                              \
  template <MemOrder O, MemScope S, typename T>        \
  inline T atomic_##op(T* p, T v) {                    \
    return detail::ref(p).op(v, detail::std_order(O)); \
  }
MORI_ATOMIC_RMW_OPS(MORI_HOST_RMW)
#undef MORI_HOST_RMW
// Returns the value found at *p; the swap happened iff it equals `expected`.
template <MemOrder O, MemScope S, typename T>
inline T atomic_compare_swap(T* p, T expected, T desired) {
  constexpr MemOrder kFail = detail::kTsan && detail::load_order(O) == MemOrder::Relaxed
                                 ? MemOrder::Acquire
                                 : detail::load_order(O);
  detail::ref(p).compare_exchange_strong(expected, desired, detail::std_order(O),
                                         detail::std_order(kFail));
  return expected;
}

template <MemOrder O, MemScope S>
inline void fence() {
  static_assert(O != MemOrder::Relaxed,
                "a relaxed fence orders nothing: name the order it must provide");
  std::atomic_thread_fence(detail::std_order(O));
}
inline void system_fence() { std::atomic_thread_fence(std::memory_order_seq_cst); }

// ---- bulk access --------------------------------------------------------------------------------
inline bool is_global(const void*) { return true; }
inline Vec16 load16_global(const void* p) { return *static_cast<const Vec16*>(p); }
inline void store16_global(void* p, Vec16 v) { *static_cast<Vec16*>(p) = v; }

// ---- progress and time --------------------------------------------------------------------------
// Spinning lanes share two cores with the lanes they wait for. relax(spin) backs off by the wait's
// own iteration count: the first kBusySpins iterations re-test at once (a flag that a PE on the
// other core is about to write arrives within them: a ping-pong's wait lasts about 90; a `pause`,
// about 140 cycles on recent x86, would delay seeing it), then each iteration pauses and every 16th
// yields the core. When the machine's PEs outnumber its CPUs (mpirun --oversubscribe), the PE
// awaited may be waiting for this one's core: the runtime says so (set_oversubscribed), and waits
// then re-test only kOversubscribedSpins times before yielding on every iteration. A lane of a
// failed launch unwinds at a yield instead of spinning forever. relax() without a count keeps one
// per thread and always pauses (bench/compare/notes.md).
inline constexpr uint32_t kBusySpins = 512;
inline constexpr uint32_t kOversubscribedSpins = 32;
namespace host {
inline std::atomic<bool> oversubscribed{false};
inline void set_oversubscribed(bool yes) { oversubscribed.store(yes, std::memory_order_relaxed); }
}  // namespace host
inline void relax(uint32_t spin) {
  const bool crowded = host::oversubscribed.load(std::memory_order_relaxed);
  if (spin < (crowded ? kOversubscribedSpins : kBusySpins)) return;
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
  if (crowded || (spin & 15) == 15) {
    std::this_thread::yield();
    const host::LaunchContext* c = host::tls_context;
    if (c && c->launch->failed.load(std::memory_order_relaxed)) throw host::LaunchAborted{};
  }
}
inline void relax() {
  thread_local uint32_t spins = kBusySpins;
  relax(spins++ | kBusySpins);  // never below kBusySpins: a caller without a count always pauses
}
// The device clock of the host backend ticks in nanoseconds (kClockTickNs).
inline uint64_t clock_ticks() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
inline uint64_t clock_ns() { return clock_ticks(); }

}  // namespace mori::platform
