// Normal mode, for throughput (DeepEP's and MORI-EP's "normal" kernels): a layout pass gives every
// token routed to PE d a slot at d, in token order; the tokens then go as contiguous runs, one put
// per run and array, from the sender's own buffers into the receiver's region for this source.
//
//   Quantize        (fp8 only) every token to e4m3 with its scale, a warp per token
//   NormalDispatch  block b sends to PEs b, b + blocks, ... then receives from the same PEs
//   NormalExpert    block b applies this PE's experts to what PE b sent
//   NormalCombine   block b signals PE b that its outputs are ready (with a put of them if PE b
//                   cannot load this PE's memory); every block then sums its tokens' outputs
//
// Each phase is one kernel; the bench runs them in one launch with grid_sync() between them.
// docs/moe.md explains the scopes and the ordering.
#pragma once

#include "moe.hpp"

namespace moe {

using mori::Block;
using mori::Warp;

MORI_DEVICE bool routed_to(const Buffers& b, const Shape& s, int t, int pe) {
  bool any = false;
  for (int j = 0; j < s.topk; ++j) any |= b.idx[size_t(t) * s.topk + j] / s.experts == pe;
  return any;
}

struct Quantize {
  Buffers b;
  Shape s;
  MORI_DEVICE void operator()() const {
    float* partial = b.amax + size_t(global_warp()) * 64;
    for (int t = global_warp(); t < s.tokens; t += grid_warps())
      quantize_row(b.x + size_t(t) * s.hidden, b.xq + size_t(t) * s.hidden, b.scale + t, s.hidden,
                   partial);
  }
};

struct NormalDispatch {
  Buffers b;
  Shape s;
  uint32_t epoch;

  MORI_DEVICE void operator()() const {
    for (int d = platform::block_rank(); d < s.npes; d += platform::grid_blocks()) send(d);
    for (int src = platform::block_rank(); src < s.npes; src += platform::grid_blocks())
      receive(src);
  }

  // Each thread counts the routed tokens of its share; thread 0 turns the counts into offsets; each
  // thread then numbers its tokens from its offset. Returns the tokens routed to d.
  MORI_DEVICE int layout(int d) const {
    int32_t* slot = b.slot_of + size_t(d) * s.capacity;
    int32_t* offsets = b.seg_count + size_t(d) * (kMaxThreads + 1);
    size_t begin, end;
    share<Block>(size_t(s.tokens), &begin, &end);
    int mine = 0;
    for (size_t t = begin; t < end; ++t) mine += routed_to(b, s, int(t), d);
    offsets[Block::rank()] = mine;
    Block::sync();
    if (Block::leader()) {
      int sum = 0;
      for (int i = 0; i < Block::size(); ++i) {
        const int c = offsets[i];
        offsets[i] = sum;
        sum += c;
      }
      offsets[Block::size()] = sum;
    }
    Block::sync();
    int next = offsets[Block::rank()];
    for (size_t t = begin; t < end; ++t) slot[t] = routed_to(b, s, int(t), d) ? next++ : -1;
    const int total = offsets[Block::size()];
    Block::sync();
    return total;
  }

  // The tokens [t, t + n) go to slots [first, first + n) of d's region for this PE.
  MORI_DEVICE void put_run(int d, size_t t, size_t first, size_t n) const {
    const size_t at = size_t(s.me) * s.capacity + first, k = size_t(s.topk);
    const size_t pb = s.payload_bytes();
    const uint8_t* payload =
        s.format == Format::kFp8 ? b.xq : reinterpret_cast<const uint8_t*>(b.x);
    shmem::putmem_nbi<Warp>(b.recv_x + at * pb, payload + t * pb, n * pb, d);
    if (s.format == Format::kFp8)
      shmem::putmem_nbi<Warp>(b.recv_scale + at, b.scale + t, n * sizeof(float), d);
    shmem::putmem_nbi<Warp>(b.recv_idx + at * k, b.idx + t * k, n * k * sizeof(int32_t), d);
    shmem::putmem_nbi<Warp>(b.recv_weight + at * k, b.weight + t * k, n * k * sizeof(float), d);
  }

  MORI_DEVICE void send(int d) const {
    const int count = layout(d);
    // The count first, so that d knows its region's extent before the data is complete.
    if (Block::leader())
      shmem::signal_op(&b.count_sig[s.me], tagged(epoch, uint32_t(count)), shmem::SIGNAL_SET, d);
    // Warp w walks the tokens of its threads' shares (one contiguous range) and puts each maximal
    // run of routed tokens; their slots are consecutive too. Every lane walks the same range, so
    // the warp stays converged and each put has all its lanes.
    const int32_t* slot = b.slot_of + size_t(d) * s.capacity;
    const size_t per = (size_t(s.tokens) + Block::size() - 1) / Block::size();
    const size_t first_thread = size_t(platform::warp_id()) * platform::warp_size();
    const size_t lo = first_thread * per, hi = (first_thread + Warp::size()) * per;
    const size_t end = hi < size_t(s.tokens) ? hi : size_t(s.tokens);
    for (size_t t = lo; t < end;) {
      if (slot[t] < 0) {
        ++t;
        continue;
      }
      const size_t start = t;
      while (t < end && slot[t] >= 0) ++t;
      put_run(d, start, size_t(slot[start]), t - start);
    }
    // A quiet covers the puts of the thread that calls it (and of its warp's scope calls): every
    // warp completes its own, then one thread signals after the block barrier.
    if (Warp::leader()) shmem::quiet(d);
    Block::sync();
    if (Block::leader()) {
      shmem::fence(d);
      shmem::signal_op(&b.data_sig[s.me], epoch, shmem::SIGNAL_SET, d);
    }
  }

  MORI_DEVICE void receive(int src) const {
    if (Block::leader()) {
      const uint64_t c =
          shmem::signal_wait_until(&b.count_sig[src], shmem::CMP_GE, tagged(epoch, 0));
      shmem::signal_wait_until(&b.data_sig[src], shmem::CMP_GE, epoch);
      const uint32_t count = uint32_t(c);
      if (count > uint32_t(s.capacity))
        platform::trap("moe dispatch: a source sent more tokens than the capacity");
      b.recv_count[src] = int32_t(count);
    }
    Block::sync();
  }
};

// y = sum over the token's experts on this PE of weight * expert(x), in fp32, rounded to bf16
// once. Experts elsewhere weigh 0, so that the loop has a fixed trip count (registers, not
// scratch, on the GPU). The host reference calls the same function.
MOE_HD float local_sum(float v, const int32_t* idx, const float* w, int topk, int experts, int me) {
  float acc = 0.0f;
  MOE_UNROLL
  for (int j = 0; j < kMaxTopk; ++j) {
    if (j >= topk) break;
    const bool here = idx[j] / experts == me;
    acc += (here ? w[j] : 0.0f) * (v * expert_factor(idx[j]));
  }
  return acc;
}

struct NormalExpert {
  Buffers b;
  Shape s;
  MORI_DEVICE void operator()() const {
    const size_t H = size_t(s.hidden), pb = s.payload_bytes(), k = size_t(s.topk);
    for (int src = platform::block_rank(); src < s.npes; src += platform::grid_blocks()) {
      const size_t base = size_t(src) * s.capacity;
      size_t i, end;
      share<Block>(size_t(b.recv_count[src]) * H, &i, &end);
      while (i < end) {
        const size_t slot = (i / H), row_end = (slot + 1) * H < end ? (slot + 1) * H : end;
        const uint8_t* payload = b.recv_x + (base + slot) * pb;
        const float sc = s.format == Format::kFp8 ? b.recv_scale[base + slot] : 1.0f;
        const int32_t* idx = b.recv_idx + (base + slot) * k;
        const float* w = b.recv_weight + (base + slot) * k;
        bf16* y = b.comb_send + (base + slot) * H;
        for (; i < row_end; ++i) {
          const size_t h = i - slot * H;
          y[h] = to_bf16(
              local_sum(payload_value(payload, sc, h, s.format), idx, w, s.topk, s.experts, s.me));
        }
      }
    }
  }
};

struct NormalCombine {
  Buffers b;
  Shape s;
  uint32_t epoch;

  MORI_DEVICE void operator()() const {
    const size_t H = size_t(s.hidden);
    // Back to each source, in the slots it assigned, with one signal per source: a source that
    // loads this PE's memory (P2P, this PE included) reads the outputs where the expert wrote
    // them, so it gets the signal alone; any other gets one put with the signal.
    for (int d = platform::block_rank(); d < s.npes; d += platform::grid_blocks()) {
      if (b.comb_sig_at[d]) {
        if (Block::leader()) signal_in_place(b.comb_sig_at[d], tagged(epoch, kLoadHere));
      } else {
        shmem::putmem_signal_nbi<Block>(b.comb_recv + size_t(s.me) * s.capacity * H,
                                        b.comb_send + size_t(d) * s.capacity * H,
                                        size_t(b.recv_count[d]) * s.row_bytes(), &b.comb_sig[s.me],
                                        tagged(epoch, kPutThere), shmem::SIGNAL_SET, d);
      }
    }
    if (Block::leader())
      for (int d = 0; d < s.npes; ++d)
        check_how(shmem::signal_wait_until(&b.comb_sig[d], shmem::CMP_GE, tagged(epoch, 0)),
                  b.comb_sig_at[d] != nullptr);
    Block::sync();
    // Block r sums its share of the tokens, a row at a time, each thread a contiguous run of
    // 8-element chunks of the row (chunk.hpp): each PE's row is found from two table loads per
    // chunk (slot_of, comb_from), and per element the PEs add in order.
    const size_t per = (size_t(s.tokens) + platform::grid_blocks() - 1) / platform::grid_blocks();
    const size_t first = per * platform::block_rank();
    const size_t last = first + per < size_t(s.tokens) ? first + per : size_t(s.tokens);
    size_t lo, hi;
    share<Block>((H + kChunk - 1) / kChunk, &lo, &hi);
    for (size_t t = first; t < last; ++t)
      for (size_t ch = lo; ch < hi; ++ch) {
        const size_t h0 = ch * kChunk, n = H - h0 < kChunk ? H - h0 : kChunk;
        Chunk acc;
        for (int d = 0; d < s.npes; ++d) {
          const int32_t slot = b.slot_of[size_t(d) * s.capacity + t];
          if (slot >= 0) add(acc, b.comb_from[d] + size_t(slot) * H + h0, n);
        }
        store(b.out + t * H + h0, acc, n);
      }
  }
};

}  // namespace moe
