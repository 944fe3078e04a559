// Platform layer for AMD GPUs (gfx9 CDNA, wave64), written with clang builtins only so that device
// code needs neither HIP runtime headers nor the ROCm device libraries, and the extracted bitcode
// stays self-contained.
//
// gfx950 (CDNA 4) needs nothing of its own here: it is wave64 and has gfx940's instructions
// (clang-22's target features for it include +gfx940-insts and +wavefrontsize64), so LLVM lowers
// its atomics and fences with gfx942's cache controls (SIMemoryLegalizer.cpp,
// SICacheControl::create: SIGfx940CacheControl whenever hasGFX940Insts(); AMDGPUUsage, "Memory
// Model GFX942"). tests/device/check_copy_isa.sh holds both archs to the same system fence and
// 16-byte global accesses.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "mori/platform/common.hpp"

namespace mori::platform {

inline constexpr bool kOnHost = false;

// GPU lanes of a warp access consecutive 16-byte vectors so that a warp's accesses coalesce.
inline constexpr bool kLanesInterleave = true;

using Vec16 = unsigned int __attribute__((vector_size(16)));

namespace detail {
using GlobalVec16 = __attribute__((address_space(1))) Vec16;
using ConstU16 = const __attribute__((address_space(4))) uint16_t;
using ConstU32 = const __attribute__((address_space(4))) uint32_t;

// hsa_kernel_dispatch_packet_t (HSA runtime spec 1.2, section 2.9.6): workgroup_size_{x,y,z} are
// u16 at byte offsets 4, 6, 8 and grid_size_{x,y,z} (in work-items) are u32 at 12, 16, 20.
MORI_DEVICE uint16_t dispatch_u16(int offset) {
  return *(
      ConstU16*)((const __attribute__((address_space(4))) char*)__builtin_amdgcn_dispatch_ptr() +
                 offset);
}
MORI_DEVICE uint32_t dispatch_u32(int offset) {
  return *(
      ConstU32*)((const __attribute__((address_space(4))) char*)__builtin_amdgcn_dispatch_ptr() +
                 offset);
}
constexpr int hip_scope(MemScope s) {
  switch (s) {
    case MemScope::Wavefront:
      return __HIP_MEMORY_SCOPE_WAVEFRONT;
    case MemScope::Block:
      return __HIP_MEMORY_SCOPE_WORKGROUP;
    case MemScope::Agent:
      return __HIP_MEMORY_SCOPE_AGENT;
    default:
      return __HIP_MEMORY_SCOPE_SYSTEM;
  }
}
}  // namespace detail

// ---- indices and sizes --------------------------------------------------------------------------
MORI_DEVICE int warp_size() { return 64; }
MORI_DEVICE Dim3 thread_idx() {
  return {__builtin_amdgcn_workitem_id_x(), __builtin_amdgcn_workitem_id_y(),
          __builtin_amdgcn_workitem_id_z()};
}
MORI_DEVICE Dim3 block_idx() {
  return {__builtin_amdgcn_workgroup_id_x(), __builtin_amdgcn_workgroup_id_y(),
          __builtin_amdgcn_workgroup_id_z()};
}
MORI_DEVICE Dim3 block_dim() {
  return {detail::dispatch_u16(4), detail::dispatch_u16(6), detail::dispatch_u16(8)};
}
MORI_DEVICE Dim3 grid_dim() {
  Dim3 b = block_dim();
  return {(detail::dispatch_u32(12) + b.x - 1) / b.x, (detail::dispatch_u32(16) + b.y - 1) / b.y,
          (detail::dispatch_u32(20) + b.z - 1) / b.z};
}
MORI_DEVICE int lane_id() {
  return __builtin_amdgcn_mbcnt_hi(~0u, __builtin_amdgcn_mbcnt_lo(~0u, 0u));
}

// Bits [bits, bits + 32) of hi:lo, bits < 32 (llvm.fshr: one v_alignbit_b32).
MORI_DEVICE uint32_t funnel_right(uint32_t hi, uint32_t lo, uint32_t bits) {
  return __builtin_amdgcn_alignbit(hi, lo, bits);
}

// `x`, which every active lane holds alike, as a scalar (the first active lane's value).
MORI_DEVICE uint32_t uniform(uint32_t x) { return __builtin_amdgcn_readfirstlane(x); }

// `x`, which every active lane holds alike, as a scalar that the optimizer must take as it comes:
// loop passes cannot fold it into their induction variables (copy_vectors' stride).
MORI_DEVICE uint32_t opaque_uniform(uint32_t x) {
  x = uniform(x);
  asm volatile("" : "+s"(x));
  return x;
}

// ---- barriers -----------------------------------------------------------------------------------
// A wavefront executes in lockstep; the fences make lanes' memory writes visible to each other
// across the barrier.
MORI_DEVICE void warp_sync() {
  __builtin_amdgcn_fence(__ATOMIC_RELEASE, "wavefront");
  __builtin_amdgcn_wave_barrier();
  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "wavefront");
}
MORI_DEVICE void block_sync() {
  __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup");
  __builtin_amdgcn_s_barrier();
  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");
}

// ---- warp collectives ---------------------------------------------------------------------------
// Over the lanes that are active (converged) at the call: the EXEC mask.
MORI_DEVICE uint64_t active_mask() { return __builtin_amdgcn_read_exec(); }
MORI_DEVICE uint64_t ballot(bool pred) { return __builtin_amdgcn_ballot_w64(pred); }
template <typename T>
MORI_DEVICE T broadcast(T value, int src_lane) {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8, "broadcast moves 4- or 8-byte values");
  if constexpr (sizeof(T) == 4) {
    int bits = __builtin_bit_cast(int, value);
    return __builtin_bit_cast(T, __builtin_amdgcn_readlane(bits, src_lane));
  } else {
    uint64_t bits = __builtin_bit_cast(uint64_t, value);
    int lo = __builtin_amdgcn_readlane((int)(uint32_t)bits, src_lane);
    int hi = __builtin_amdgcn_readlane((int)(uint32_t)(bits >> 32), src_lane);
    return __builtin_bit_cast(T, (uint64_t)(uint32_t)lo | ((uint64_t)(uint32_t)hi << 32));
  }
}
// `value` of lane `src_lane`, which may differ from lane to lane (ds_bpermute); the source lane
// must be active.
template <typename T>
MORI_DEVICE T shuffle(T value, int src_lane) {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8, "shuffle moves 4- or 8-byte values");
  const int address = src_lane << 2;
  if constexpr (sizeof(T) == 4) {
    return __builtin_bit_cast(
        T, __builtin_amdgcn_ds_bpermute(address, __builtin_bit_cast(int, value)));
  } else {
    const uint64_t bits = __builtin_bit_cast(uint64_t, value);
    const int lo = __builtin_amdgcn_ds_bpermute(address, (int)(uint32_t)bits);
    const int hi = __builtin_amdgcn_ds_bpermute(address, (int)(uint32_t)(bits >> 32));
    return __builtin_bit_cast(T, (uint64_t)(uint32_t)lo | ((uint64_t)(uint32_t)hi << 32));
  }
}
// Whole-warp forms, called by every live lane of the warp. A wave64 is converged there, so they are
// the same.
MORI_DEVICE uint64_t warp_ballot(bool pred) { return ballot(pred); }
template <typename T>
MORI_DEVICE T warp_broadcast(T value, int src_lane) {
  return broadcast(value, src_lane);
}

// ---- atomics and fences -------------------------------------------------------------------------
// Evaluated at compile time (integral_constant): the builtins take constants, and a call left to
// the inliner would make every atomic a call.
#define MORI_AMDGCN_ORDER(O) (std::integral_constant<int, detail::gcc_order(O)>::value)
#define MORI_AMDGCN_SCOPE(S) (std::integral_constant<int, detail::hip_scope(S)>::value)

template <MemOrder O, MemScope S, typename T>
MORI_DEVICE T atomic_load(const T* p) {
  return __hip_atomic_load(p, MORI_AMDGCN_ORDER(detail::load_order(O)), MORI_AMDGCN_SCOPE(S));
}
template <MemOrder O, MemScope S, typename T>
MORI_DEVICE void atomic_store(T* p, T v) {
  __hip_atomic_store(p, v, MORI_AMDGCN_ORDER(detail::store_order(O)), MORI_AMDGCN_SCOPE(S));
}
#define MORI_AMDGCN_RMW(op)                                                     \
  template <MemOrder O, MemScope S, typename T>                                 \
  MORI_DEVICE T atomic_##op(T* p, T v) {                                        \
    return __hip_atomic_##op(p, v, MORI_AMDGCN_ORDER(O), MORI_AMDGCN_SCOPE(S)); \
  }
MORI_ATOMIC_RMW_OPS(MORI_AMDGCN_RMW)
#undef MORI_AMDGCN_RMW
// Returns the value found at *p; the swap happened iff it equals `expected`.
template <MemOrder O, MemScope S, typename T>
MORI_DEVICE T atomic_compare_swap(T* p, T expected, T desired) {
  __hip_atomic_compare_exchange_strong(p, &expected, desired, MORI_AMDGCN_ORDER(O),
                                       MORI_AMDGCN_ORDER(detail::load_order(O)),
                                       MORI_AMDGCN_SCOPE(S));
  return expected;
}
#undef MORI_AMDGCN_ORDER
#undef MORI_AMDGCN_SCOPE

// __builtin_amdgcn_fence rejects template-dependent arguments (clang 19), so each order is written
// as a literal.
#define MORI_AMDGCN_FENCE_AT(S, ORDER)            \
  do {                                            \
    if constexpr (S == MemScope::Wavefront)       \
      __builtin_amdgcn_fence(ORDER, "wavefront"); \
    else if constexpr (S == MemScope::Block)      \
      __builtin_amdgcn_fence(ORDER, "workgroup"); \
    else if constexpr (S == MemScope::Agent)      \
      __builtin_amdgcn_fence(ORDER, "agent");     \
    else                                          \
      __builtin_amdgcn_fence(ORDER, "");          \
  } while (0)

template <MemOrder O, MemScope S>
MORI_DEVICE void fence() {
  static_assert(O != MemOrder::Relaxed,
                "a relaxed fence orders nothing: name the order it must provide");
  if constexpr (O == MemOrder::Acquire)
    MORI_AMDGCN_FENCE_AT(S, __ATOMIC_ACQUIRE);
  else if constexpr (O == MemOrder::Release)
    MORI_AMDGCN_FENCE_AT(S, __ATOMIC_RELEASE);
  else if constexpr (O == MemOrder::AcqRel)
    MORI_AMDGCN_FENCE_AT(S, __ATOMIC_ACQ_REL);
  else
    MORI_AMDGCN_FENCE_AT(S, __ATOMIC_SEQ_CST);
}
#undef MORI_AMDGCN_FENCE_AT
// Orders this thread's earlier memory accesses before its later ones for every observer: peers, CPU
// and NIC.
MORI_DEVICE void system_fence() { __builtin_amdgcn_fence(__ATOMIC_SEQ_CST, ""); }

// ---- bulk access --------------------------------------------------------------------------------
// Global memory (not LDS, not scratch) is reached with global_* instructions rather than flat_*
// ones.
MORI_DEVICE bool is_global(const void* p) {
#if defined(__HIP_DEVICE_COMPILE__)
  return !__builtin_amdgcn_is_shared(p) && !__builtin_amdgcn_is_private(p);
#else
  // The host pass of a HIP file parses device bodies but never emits them; the builtins need
  // amdgcn.
  (void)p;
  return true;
#endif
}
MORI_DEVICE Vec16 load16_global(const void* p) { return *(const detail::GlobalVec16*)p; }
MORI_DEVICE void store16_global(void* p, Vec16 v) { *(detail::GlobalVec16*)p = v; }

// ---- progress, time and failure -----------------------------------------------------------------
// Every spin loop calls relax(): it yields issue slots to the other waves of the compute unit.
// `spin` (the wait's iteration, for the host's back-off) is not needed here.
MORI_DEVICE void relax(uint32_t /*spin*/ = 0) { __builtin_amdgcn_s_sleep(1); }
// s_memrealtime counts a constant 100 MHz clock on gfx9 (CDNA ISA guides, "S_MEMREALTIME";
// kClockTickNs). Waits keep their deadlines in its ticks (GpuStates::timeout_ticks), so that no
// wait converts to nanoseconds (a 64-bit multiply).
MORI_DEVICE uint64_t clock_ticks() { return __builtin_amdgcn_s_memrealtime(); }
MORI_DEVICE uint64_t clock_ns() { return clock_ticks() * kClockTickNs; }
// The GPU has no stderr without the device libraries' hostcall; callers record the reason in the
// device-error record before trapping, and the host runtime prints it.
[[noreturn]] MORI_DEVICE void trap(const char*) { __builtin_trap(); }
// trap() as an instruction the compiler believes falls through (state::fail_if, fail_in_line):
// the same `s_trap 2` that __builtin_trap lowers to on amdhsa (LLVM AMDGPUUsage, "Trap Handler
// ABI": trap ID 2 is llvm.trap), so the wave still ends at it; but code after a failure site in
// divergent control flow needs no exec mask for the lanes that "left".
MORI_DEVICE void trap_in_line(const char*) { asm volatile("s_trap 2" ::: "memory"); }

}  // namespace mori::platform
