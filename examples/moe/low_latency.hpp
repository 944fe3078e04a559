// Low-latency mode (DeepEP's and MORI-EP's "low latency" kernels), for small batches: no layout
// pass. Each token is packed once into a record (payload, fp8 scale, token index) and put into a
// fixed slot of every expert it is routed to: the slot comes from a per-expert counter on the
// sender, so each (expert, source) region fills from 0. When every warp of the sender is done, one
// signal per (expert, destination) carries the count of that batch, tagged with the epoch.
//
//   LlDispatch  a warp per token: pack, then one warp put per routed expert; the last warp to
//               finish signals the counts; then a warp per (expert, source) waits for its count
//   LlExpert    a warp per (expert, source) applies the expert to each record
//   LlCombine   a warp per (expert, source) signals that the outputs are ready (with a put of
//               them to a source that cannot load them); then a warp per token sums the
//               token's k outputs with its gate weights in fp32
//
// The buffers are reused by the next iteration without a barrier (docs/moe.md, "No barrier"): a
// source writes slots of iteration i + 1 only after its combine of iteration i has every expert's
// outputs, which each expert's PE signals only after it has read the records; and an expert's PE
// overwrites its outputs for a source only once that source's records of iteration i + 1 arrive,
// which the source sends only after its combine of iteration i has read the outputs.
#pragma once

#include "moe.hpp"

namespace moe {

using mori::Warp;

struct LlDispatch {
  Buffers b;
  Shape s;
  uint32_t epoch;

  MORI_DEVICE void pack(int t, uint8_t* rec, float* partial) const {
    const size_t pb = s.payload_bytes();
    if (s.format == Format::kFp8) {
      quantize_row(b.x + size_t(t) * s.hidden, rec, reinterpret_cast<float*>(rec + pb), s.hidden,
                   partial);
    } else {
      size_t lo, hi;
      share<Warp>(pb, &lo, &hi);
      __builtin_memcpy(rec + lo, reinterpret_cast<const uint8_t*>(b.x + size_t(t) * s.hidden) + lo,
                       hi - lo);
    }
    if (Warp::leader()) {
      const int32_t token = t;
      __builtin_memcpy(rec + pb + 4, &token, 4);
    }
    Warp::sync();
  }

  MORI_DEVICE void operator()() const {
    using platform::MemOrder, platform::MemScope;
    const int gw = global_warp(), warps = grid_warps(), k = s.topk;
    const size_t rb = s.record_bytes();
    for (int t = gw; t < s.tokens; t += warps) {
      uint8_t* rec = b.ll_send + size_t(t) * rb;
      pack(t, rec, b.amax + size_t(gw) * 64);
      for (int j = 0; j < k; ++j) {
        const int e = b.idx[size_t(t) * k + j], d = e / s.experts, el = e % s.experts;
        int32_t slot = 0;
        if (Warp::leader()) {
          slot =
              platform::atomic_fetch_add<MemOrder::Relaxed, MemScope::Agent>(&b.ll_counter[e], 1);
          b.ll_slot[size_t(t) * k + j] = slot;
        }
        slot = platform::warp_broadcast(slot, 0);
        uint8_t* dst = b.ll_recv + ((size_t(el) * s.npes + s.me) * s.capacity + slot) * rb;
        shmem::putmem_nbi<Warp>(dst, rec, rb, d);
      }
    }
    // Each warp completes its own puts, then counts itself done; the last one sees every count
    // final and every other warp's puts complete (acquire), and sends the signals.
    int last = 0;
    if (Warp::leader()) {
      shmem::quiet();
      last = platform::atomic_fetch_add<MemOrder::AcqRel, MemScope::Agent>(b.ll_finished, 1) ==
             warps - 1;
    }
    if (platform::warp_broadcast(last, 0)) {
      shmem::fence();
      for (int e = Warp::rank(); e < s.total_experts(); e += Warp::size()) {
        const int32_t c =
            platform::atomic_load<MemOrder::Acquire, MemScope::Agent>(&b.ll_counter[e]);
        const int d = e / s.experts, el = e % s.experts;
        shmem::signal_op(&b.ll_sig[size_t(el) * s.npes + s.me], tagged(epoch, uint32_t(c)),
                         shmem::SIGNAL_SET, d);
        b.ll_counter[e] = 0;  // for the next iteration: every warp of this one is done
      }
      Warp::sync();
      if (Warp::leader())
        platform::atomic_store<MemOrder::Release, MemScope::Agent>(b.ll_finished, 0);
    }
    for (int p = gw; p < s.experts * s.npes; p += warps)
      if (Warp::leader()) {
        const uint64_t c = shmem::signal_wait_until(&b.ll_sig[p], shmem::CMP_GE, tagged(epoch, 0));
        if (uint32_t(c) > uint32_t(s.capacity))
          platform::trap("moe low-latency dispatch: a source sent more tokens than the capacity");
        b.ll_count[p] = int32_t(uint32_t(c));
      }
  }
};

struct LlExpert {
  Buffers b;
  Shape s;
  MORI_DEVICE void operator()() const {
    const size_t rb = s.record_bytes(), pb = s.payload_bytes(), H = size_t(s.hidden);
    for (int p = global_warp(); p < s.experts * s.npes; p += grid_warps()) {
      const float factor = expert_factor(s.me * s.experts + p / s.npes);
      size_t lo, hi;
      share<Warp>(H, &lo, &hi);
      for (int slot = 0; slot < b.ll_count[p]; ++slot) {
        const size_t at = size_t(p) * s.capacity + slot;
        const uint8_t* rec = b.ll_recv + at * rb;
        float sc;
        __builtin_memcpy(&sc, rec + pb, 4);
        bf16* y = b.ll_comb_send + at * H;
        for (size_t h = lo; h < hi; ++h)
          y[h] = to_bf16(payload_value(rec, sc, h, s.format) * factor);
      }
    }
  }
};

struct LlCombine {
  Buffers b;
  Shape s;
  uint32_t epoch;

  MORI_DEVICE void operator()() const {
    const size_t H = size_t(s.hidden);
    const int gw = global_warp(), warps = grid_warps(), E = s.experts, k = s.topk;
    // As NormalCombine: the signal alone to a source that loads this PE's memory, a put with the
    // signal to any other.
    for (int p = gw; p < E * s.npes; p += warps) {
      const int el = p / s.npes, d = p % s.npes;
      uint64_t* sig = &b.ll_comb_sig[size_t(s.me) * E + el];
      if (b.ll_comb_sig_at[d]) {
        if (Warp::leader()) signal_in_place(b.ll_comb_sig_at[d] + el, tagged(epoch, kLoadHere));
      } else {
        shmem::putmem_signal_nbi<Warp>(b.ll_comb_recv + (size_t(s.me) * E + el) * s.capacity * H,
                                       b.ll_comb_send + size_t(p) * s.capacity * H,
                                       size_t(b.ll_count[p]) * s.row_bytes(), sig,
                                       tagged(epoch, kPutThere), shmem::SIGNAL_SET, d);
      }
    }
    if (Warp::leader())
      for (int q = 0; q < s.npes * E; ++q)
        check_how(shmem::signal_wait_until(&b.ll_comb_sig[q], shmem::CMP_GE, tagged(epoch, 0)),
                  b.ll_comb_sig_at[q / E] != nullptr);
    Warp::sync();
    size_t lo, hi;
    share<Warp>((H + kChunk - 1) / kChunk, &lo, &hi);
    for (int t = gw; t < s.tokens; t += warps) {
      const bf16* rows[kMaxTopk];
      float w[kMaxTopk];
      MOE_UNROLL
      for (int j = 0; j < kMaxTopk; ++j) {
        const bool used = j < k;
        const int e = used ? b.idx[size_t(t) * k + j] : 0;
        const int32_t slot = used ? b.ll_slot[size_t(t) * k + j] : 0;
        rows[j] = uniform_ptr(b.ll_comb_from[e] + size_t(slot) * H);
        w[j] = used ? b.weight[size_t(t) * k + j] : 0.0f;
      }
      // 8-element chunks of the row, as NormalCombine sums them (chunk.hpp); per element the
      // experts add in top-k order.
      for (size_t ch = lo; ch < hi; ++ch) {
        const size_t h0 = ch * kChunk, n = H - h0 < kChunk ? H - h0 : kChunk;
        Chunk acc;
        MOE_UNROLL
        for (int j = 0; j < kMaxTopk; ++j) {
          if (j >= k) break;
          add(acc, w[j], rows[j] + h0, n);
        }
        store(b.out + size_t(t) * H + h0, acc, n);
      }
    }
  }
};

}  // namespace moe
