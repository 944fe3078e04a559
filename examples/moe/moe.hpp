// MoE expert-parallel dispatch and combine on mori's device API: the shapes, the symmetric buffers
// both modes use, and the small device helpers they share. docs/moe.md walks through the kernels.
//
// Every PE holds `tokens` tokens of `hidden` bf16 values and owns `experts` experts; expert e lives
// on PE e / experts. Each token is routed to `topk` distinct experts with a gate weight each.
//   dispatch  sends each token to the PEs (normal mode) or experts (low latency) it is routed to
//   expert    the receiving PE applies its experts (here an exact per-expert factor, numerics.hpp)
//   combine   sends the outputs back; the token's PE sums them with the gate weights in fp32
// normal.hpp and low_latency.hpp hold the two modes' kernels; reference.hpp the host reference.
#pragma once

#include <cstddef>
#include <cstdint>

#include "chunk.hpp"
#include "mori/core.hpp"
#include "mori/shmem/device_api.hpp"
#include "numerics.hpp"

namespace moe {

namespace shmem = mori::shmem;
namespace platform = mori::platform;

inline constexpr int kMaxTopk = 8;

enum class Format : int { kBf16, kFp8 };  // of the dispatched payload; combine is always bf16

struct Shape {
  int tokens = 0;    // tokens on this PE, at most `capacity`
  int capacity = 0;  // the most tokens any PE may send: sizes every buffer
  int hidden = 0;
  int experts = 0;  // per PE
  int topk = 1;
  int npes = 1, me = 0;
  Format format = Format::kBf16;

  MOE_HD int total_experts() const { return experts * npes; }
  MOE_HD size_t payload_bytes() const { return size_t(hidden) * (format == Format::kFp8 ? 1 : 2); }
  MOE_HD size_t row_bytes() const { return size_t(hidden) * sizeof(bf16); }
  // A low-latency record: the payload, its fp8 scale, the source token's index; 16-byte aligned.
  MOE_HD size_t record_bytes() const { return (payload_bytes() + 8 + 15) / 16 * 16; }
};

// Signal words carry an epoch in the high half, so that a word never needs resetting between
// iterations: a wait for epoch i ignores what iteration i - 1 left.
MOE_HD uint64_t tagged(uint32_t epoch, uint32_t count) { return uint64_t{epoch} << 32 | count; }

// Where a combine's signal says the outputs are. The combines move no data to a PE that can load
// the expert's memory (P2P, and a PE itself): it sums the rows where the expert wrote them.
enum CombineFrom : uint32_t { kPutThere = 0, kLoadHere = 1 };

// The symmetric buffers (same sizes on every PE: shmem::malloc is collective). Indices: [s] source
// PE, [d] destination PE, [t] token, [el] local expert, [slot] position in a receive region.
struct Buffers {
  // Inputs, in the heap so that RDMA can read them (registered memory).
  bf16* x;         // [t][hidden]
  int32_t* idx;    // [t][topk] global expert ids, distinct per token
  float* weight;   // [t][topk]
  uint8_t* xq;     // [t][hidden] fp8, normal mode's quantized copy
  float* scale;    // [t]
  bf16* out;       // [t][hidden] combine's result
  uint32_t* grid;  // 2 words: a grid barrier (bench)
  float* amax;     // [warps of the launch][64] per-lane partial maxima of the fp8 quantizer

  // Normal mode.
  int32_t* slot_of;     // [d][t]: the token's slot at d, -1 if none of its experts is there
  int32_t* seg_count;   // [d][threads of a block]: the layout pass's per-thread counts
  int32_t* recv_count;  // [s]: tokens received from s
  uint8_t* recv_x;      // [s][slot][payload]
  float* recv_scale;    // [s][slot]
  int32_t* recv_idx;    // [s][slot][topk]
  float* recv_weight;   // [s][slot][topk]
  uint64_t* count_sig;  // [s]: tagged(epoch, count)
  uint64_t* data_sig;   // [s]: epoch, after s's payload
  bf16* comb_send;      // [s][slot][hidden]
  bf16* comb_recv;      // [d][slot][hidden]: the outputs of a PE this PE does not load
  uint64_t* comb_sig;   // [d]: tagged(epoch, CombineFrom), after d's outputs
  bf16** comb_from;     // [d]: d's outputs for this PE's slots, d's comb_send[me] or comb_recv[d]
  uint64_t** comb_sig_at;  // [d]: d's comb_sig[me] as this PE stores to it; null where this PE
                           // cannot load d's memory, so d's outputs are put into comb_recv[d]

  // Low latency.
  uint8_t* ll_send;       // [t][record]
  uint8_t* ll_recv;       // [el][s][slot][record]
  int32_t* ll_counter;    // [global expert]: slots taken so far this iteration
  int32_t* ll_finished;   // warps that have sent every token this iteration
  int32_t* ll_slot;       // [t][topk]: the slot each of t's records took
  int32_t* ll_count;      // [el][s]
  uint64_t* ll_sig;       // [el][s]: tagged(epoch, count)
  bf16* ll_comb_send;     // [el][s][slot][hidden]
  bf16* ll_comb_recv;     // [d][el][slot][hidden]: the outputs of a PE this PE does not load
  uint64_t* ll_comb_sig;  // [d][el]: tagged(epoch, CombineFrom)
  bf16** ll_comb_from;    // [e]: its outputs for this PE's records, [el][me] of d's ll_comb_send
                          // or [e] of ll_comb_recv
  uint64_t** ll_comb_sig_at;  // [d]: d's ll_comb_sig[me][0] as this PE stores to it, or null
};

// The launch geometry the kernels are written for: `blocks` blocks of `threads` threads.
struct Geometry {
  int blocks = 1, threads = 64;
};

// Threads per block the layout pass's counts are sized for.
inline constexpr int kMaxThreads = 1024;

// ---- device helpers -----------------------------------------------------------------------------

// This participant's contiguous share [begin, end) of n items in scope S: contiguous spans suit
// both the host backend's lanes (threads that should not share cache lines) and the GPU's bulk
// copies.
template <mori::Scope S>
MORI_DEVICE void share(size_t n, size_t* begin, size_t* end) {
  const size_t per = (n + S::size() - 1) / S::size();
  *begin = per * S::rank() < n ? per * S::rank() : n;
  *end = *begin + per < n ? *begin + per : n;
}

MORI_DEVICE int global_warp() {
  const int warps = (platform::block_threads() + platform::warp_size() - 1) / platform::warp_size();
  return platform::block_rank() * warps + platform::warp_id();
}
MORI_DEVICE int grid_warps() {
  const int warps = (platform::block_threads() + platform::warp_size() - 1) / platform::warp_size();
  return platform::grid_blocks() * warps;
}

// Every thread of the grid arrives before any leaves: the bench runs dispatch, expert and combine
// in one launch, one phase after another. Every block must be resident: the host backend runs every
// lane as a thread; on a GPU that takes a cooperative launch.
MORI_DEVICE void grid_sync(uint32_t* words) {
  using platform::MemOrder, platform::MemScope;
  platform::block_sync();
  if (platform::thread_rank() == 0) {
    const uint32_t gen = platform::atomic_load<MemOrder::Acquire, MemScope::Agent>(&words[1]);
    const uint32_t blocks = static_cast<uint32_t>(platform::grid_blocks());
    if (platform::atomic_fetch_add<MemOrder::AcqRel, MemScope::Agent>(&words[0], 1u) ==
        blocks - 1) {
      platform::atomic_store<MemOrder::Relaxed, MemScope::Agent>(&words[0], 0u);
      platform::atomic_store<MemOrder::Release, MemScope::Agent>(&words[1], gen + 1);
    } else {
      while (platform::atomic_load<MemOrder::Acquire, MemScope::Agent>(&words[1]) == gen)
        platform::relax();
    }
  }
  platform::block_sync();
}

// A combine's signal against this PE's own view of the source: the two PEs must agree on whether
// P2P reaches between them, or the outputs would be read where nobody wrote them.
MORI_DEVICE void check_how(uint64_t signal, bool this_pe_loads) {
  if ((uint32_t(signal) == kLoadHere) != this_pe_loads)
    platform::trap(this_pe_loads
                       ? "moe combine: a source put its outputs, but this PE loads them in place"
                       : "moe combine: a source left its outputs in place, but this PE cannot "
                         "load its memory");
}

// A pointer that every lane of the warp holds alike, in scalar registers on the GPU: the combines'
// tables of a token's rows, which a vector copy would cost two VGPRs an entry.
MORI_DEVICE const bf16* uniform_ptr(const bf16* p) {
  const uint64_t u = reinterpret_cast<uint64_t>(p);
  return reinterpret_cast<const bf16*>(uint64_t{platform::uniform(uint32_t(u >> 32))} << 32 |
                                       platform::uniform(uint32_t(u)));
}

// A combine's signal to a PE that loads this PE's memory, so that this PE stores into d's too: a
// release store through the P2P mapping (`at`, from the driver's shmem::ptr_p2p), after the expert
// phase's stores. signal_op after a fence would do the same, but it carries the RDMA path too, and
// the kernel would need its registers.
MORI_DEVICE void signal_in_place(uint64_t* at, uint64_t value) {
  using platform::MemOrder, platform::MemScope;
  platform::atomic_store<MemOrder::Release, MemScope::System>(at, value);
}

// One token to fp8 by warp `lanes`: the amax over the row (each lane's share, then every lane reads
// the warp's partial maxima from `partial`, 64 floats of this warp's), scale = amax / 448.
MORI_DEVICE void quantize_row(const bf16* x, uint8_t* q, float* scale, int hidden, float* partial) {
  size_t b, e;
  share<mori::Warp>(size_t(hidden), &b, &e);
  float m = 0.0f;
  for (size_t h = b; h < e; ++h) {
    const float a = __builtin_fabsf(to_float(x[h]));
    m = a > m ? a : m;
  }
  partial[mori::Warp::rank()] = m;
  mori::Warp::sync();
  float amax = 0.0f;
  for (int l = 0; l < mori::Warp::size(); ++l) amax = partial[l] > amax ? partial[l] : amax;
  const float s = amax > 0.0f ? amax / kE4m3Max : 1.0f;
  for (size_t h = b; h < e; ++h) q[h] = to_e4m3(to_float(x[h]) / s);
  if (mori::Warp::leader()) *scale = s;
  mori::Warp::sync();
}

// A dispatched value as the expert reads it.
MORI_DEVICE float payload_value(const uint8_t* payload, float scale, size_t h, Format f) {
  if (f == Format::kFp8) return from_e4m3(payload[h]) * scale;
  bf16 v;
  __builtin_memcpy(&v, payload + 2 * h, 2);
  return to_float(v);
}

}  // namespace moe
