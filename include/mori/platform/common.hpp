// Vocabulary shared by both platform implementations: memory orders, memory scopes and launch
// dimensions.
#pragma once

#include <cstdint>

#include "mori/platform/macros.hpp"

namespace mori::platform {

// Memory order of an atomic or fence, as in the C++ memory model.
enum class MemOrder { Relaxed, Acquire, Release, AcqRel, SeqCst };

// The set of agents an atomic or fence orders against.
//   Wavefront  lanes of one warp
//   Block      threads of one block (workgroup)
//   Agent      every thread of this GPU
//   System     this GPU, the CPU, peer GPUs over XGMI/PCIe and the NIC
// On the host backend every scope is a process-shared CPU scope, so all four behave as System.
enum class MemScope { Wavefront, Block, Agent, System };

// Nanoseconds per tick of the device clock (clock_ticks), in which waits keep their deadlines
// (GpuStates::timeout_ticks, converted once by the runtime). Here, not in each implementation, so
// that the runtime's host code of the hip backend reads the same constant as its device code.
#if defined(MORI_ON_HOST)
inline constexpr uint64_t kClockTickNs = 1;  // std::chrono::steady_clock, in nanoseconds
#else
inline constexpr uint64_t kClockTickNs = 10;  // s_memrealtime: 100 MHz on gfx9 (CDNA ISA guides)
#endif

struct Dim3 {
  unsigned x = 1, y = 1, z = 1;
  constexpr Dim3() = default;
  constexpr Dim3(unsigned x_, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
  constexpr unsigned count() const { return x * y * z; }
};

// The read-modify-write atomics each platform provides as atomic_<op><Order, Scope>(T* p, T v) ->
// old value. Each name is both the clang builtin's suffix (__hip_atomic_<op>) and std::atomic_ref's
// member function.
#define MORI_ATOMIC_RMW_OPS(X) X(fetch_add) X(fetch_and) X(fetch_or) X(fetch_xor) X(exchange)

// Largest wavefront any supported target has; the host backend's warp size may be smaller, never
// larger.
inline constexpr int kMaxWarpSize = 64;

namespace detail {
constexpr int gcc_order(MemOrder o) {
  switch (o) {
    case MemOrder::Relaxed:
      return __ATOMIC_RELAXED;
    case MemOrder::Acquire:
      return __ATOMIC_ACQUIRE;
    case MemOrder::Release:
      return __ATOMIC_RELEASE;
    case MemOrder::AcqRel:
      return __ATOMIC_ACQ_REL;
    default:
      return __ATOMIC_SEQ_CST;
  }
}
// A load cannot release and a store cannot acquire; keep the half that applies.
constexpr MemOrder load_order(MemOrder o) {
  return o == MemOrder::Release ? MemOrder::Relaxed : o == MemOrder::AcqRel ? MemOrder::Acquire : o;
}
constexpr MemOrder store_order(MemOrder o) {
  return o == MemOrder::Acquire ? MemOrder::Relaxed : o == MemOrder::AcqRel ? MemOrder::Release : o;
}
}  // namespace detail

}  // namespace mori::platform
