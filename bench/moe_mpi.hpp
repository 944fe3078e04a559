// moe_bench's baseline: MoE dispatch and combine as a user without a GPU SHMEM library writes them
// with MPI (bench/moe_bench.cpp times it beside mori's kernels). The same inputs, the same expert
// (moe::local_sum, moe::expert_factor) and the same fp32 reductions in the same order as
// examples/moe, so that its output equals the reference bit for bit.
//
//   dispatch  [quantize every token to fp8 with its scale], count what goes to each PE,
//             MPI_Alltoall of the counts, pack per destination, MPI_Alltoallv of the payload (and
//             in normal mode of each token's top-k ids and weights, with the fp8 scale, as one
//             metadata record)
//   expert    this PE's experts on what it received
//   combine   MPI_Alltoallv of the outputs back in the order they came, then the fp32 sum
//             (moe/chunk.hpp's, as the kernels sum)
//
// Normal mode sends a token once to each PE it is routed to; low latency once to each expert (each
// record is the payload and, in fp8, its scale: the sender keeps where it put each (token, expert)
// pair, so no token index travels).
#pragma once

#include <mpi.h>

#include <cstring>
#include <vector>

#include "reference.hpp"

namespace moe_bench {

using moe::bf16;

class MpiMoe {
 public:
  MpiMoe(const moe::Shape& s, bool low_latency, const moe::Inputs& in)
      : s_(s), ll_(low_latency), in_(in) {
    const size_t n = size_t(s.npes), cap = size_t(s.capacity), H = size_t(s.hidden);
    const size_t k = size_t(s.topk), per_pe = ll_ ? size_t(s.experts) : 1;
    fp8_ = s.format == moe::Format::kFp8;
    rec_ = s.payload_bytes() + (ll_ && fp8_ ? sizeof(float) : 0);
    meta_ = k * (sizeof(int32_t) + sizeof(float)) + sizeof(float);
    groups_ = ll_ ? n * s.experts : n;
    count_.assign(groups_, 0), recv_count_.assign(groups_, 0);
    send_bytes_.assign(n, 0), send_displ_.assign(n, 0);
    recv_bytes_.assign(n, 0), recv_displ_.assign(n, 0);
    pos_.assign(ll_ ? cap * k : n * cap, -1);
    const size_t units = ll_ ? cap * k : n * cap;  // most records sent: every (token, expert) or
                                                   // every (token, PE)
    const size_t incoming = n * cap * per_pe;      // most received: every PE's, per expert
    xq_.resize(fp8_ ? cap * H : 0), scale_.resize(cap);
    send_x_.resize(units * rec_), recv_x_.resize(incoming * rec_);
    if (!ll_) send_meta_.resize(units * meta_), recv_meta_.resize(incoming * meta_);
    y_.resize(incoming * H), back_.resize(units * H), out_.resize(cap * H);
  }

  const std::vector<bf16>& out() const { return out_; }
  // Payload bytes this PE sent in the last dispatch (records, not metadata), and rows it sent back.
  size_t dispatched_bytes() const { return sent_ * s_.payload_bytes(); }
  size_t combined_bytes() const { return received_ * s_.row_bytes(); }

  void dispatch() {
    if (fp8_) quantize();
    layout();
    MPI_Alltoall(count_.data(), int(groups_ / s_.npes), MPI_INT, recv_count_.data(),
                 int(groups_ / s_.npes), MPI_INT, MPI_COMM_WORLD);
    pack();
    exchange(rec_, send_x_.data(), count_, recv_x_.data(), recv_count_);
    if (!ll_) exchange(meta_, send_meta_.data(), count_, recv_meta_.data(), recv_count_);
  }

  void expert() {
    const size_t H = size_t(s_.hidden), k = size_t(s_.topk);
    received_ = 0;
    for (size_t g = 0; g < groups_; ++g) received_ += size_t(recv_count_[g]);
    size_t at = 0;  // records arrive [src][slot] (normal) or [src][local expert][slot] (LL)
    for (size_t g = 0; g < groups_; ++g)
      for (int i = 0; i < recv_count_[g]; ++i, ++at) {
        const uint8_t* rec = recv_x_.data() + at * rec_;
        bf16* y = y_.data() + at * H;
        if (ll_) {
          const float sc = fp8_ ? scale_in(rec + s_.payload_bytes()) : 1.0f;
          const float f = moe::expert_factor(s_.me * s_.experts + int(g % s_.experts));
          for (size_t h = 0; h < H; ++h)
            y[h] = moe::to_bf16(moe::payload_value(rec, sc, h, s_.format) * f);
        } else {
          const uint8_t* meta = recv_meta_.data() + at * meta_;
          int32_t idx[moe::kMaxTopk];
          float w[moe::kMaxTopk], sc;
          std::memcpy(idx, meta, k * 4);
          std::memcpy(w, meta + k * 4, k * 4);
          std::memcpy(&sc, meta + k * 8, 4);
          for (size_t h = 0; h < H; ++h)
            y[h] = moe::to_bf16(moe::local_sum(moe::payload_value(rec, sc, h, s_.format), idx, w,
                                               s_.topk, s_.experts, s_.me));
        }
      }
  }

  void combine() {
    exchange(s_.row_bytes(), y_.data(), recv_count_, back_.data(), count_);
    const size_t H = size_t(s_.hidden), k = size_t(s_.topk), cap = size_t(s_.capacity);
    for (int t = 0; t < in_.tokens; ++t) {
      bf16* out = out_.data() + size_t(t) * H;
      if (ll_) {  // the token's k outputs, weighted here, in top-k order (as LlCombine)
        const bf16* rows[moe::kMaxTopk];
        const float* w = in_.weight.data() + size_t(t) * k;
        for (size_t j = 0; j < k; ++j) rows[j] = back_.data() + size_t(pos_[t * k + j]) * H;
        for (size_t h0 = 0; h0 < H; h0 += moe::kChunk) {
          const size_t n = H - h0 < moe::kChunk ? H - h0 : moe::kChunk;
          moe::Chunk acc;
          for (size_t j = 0; j < k; ++j) moe::add(acc, w[j], rows[j] + h0, n);
          moe::store(out + h0, acc, n);
        }
      } else {  // each PE's weighted sum, added in PE order (as NormalCombine)
        std::vector<const bf16*>& rows = rows_;
        rows.clear();
        for (int d = 0; d < s_.npes; ++d)
          if (const int32_t p = pos_[size_t(d) * cap + t]; p >= 0)
            rows.push_back(back_.data() + size_t(p) * H);
        for (size_t h0 = 0; h0 < H; h0 += moe::kChunk) {
          const size_t n = H - h0 < moe::kChunk ? H - h0 : moe::kChunk;
          moe::Chunk acc;
          for (const bf16* row : rows) moe::add(acc, row + h0, n);
          moe::store(out + h0, acc, n);
        }
      }
    }
  }

 private:
  static float scale_in(const uint8_t* p) {
    float f;
    std::memcpy(&f, p, 4);
    return f;
  }

  // As moe::quantize_row: scale = amax / 448, each value rounded to e4m3.
  void quantize() {
    const size_t H = size_t(s_.hidden);
    for (int t = 0; t < in_.tokens; ++t) {
      const bf16* x = in_.x.data() + size_t(t) * H;
      float amax = 0.0f;
      for (size_t h = 0; h < H; ++h) {
        const float a = __builtin_fabsf(moe::to_float(x[h]));
        amax = a > amax ? a : amax;
      }
      const float sc = amax > 0.0f ? amax / moe::kE4m3Max : 1.0f;
      uint8_t* q = xq_.data() + size_t(t) * H;
      for (size_t h = 0; h < H; ++h) q[h] = moe::to_e4m3(moe::to_float(x[h]) / sc);
      scale_[t] = sc;
    }
  }

  // Counts per group (destination PE, or global expert: [d][el] is e) and each unit's position in
  // the send buffer, grouped by destination in token order.
  void layout() {
    const size_t k = size_t(s_.topk), cap = size_t(s_.capacity);
    std::fill(count_.begin(), count_.end(), 0);
    for (int t = 0; t < in_.tokens; ++t) {
      const int32_t* idx = in_.idx.data() + size_t(t) * k;
      if (ll_) {
        for (size_t j = 0; j < k; ++j) pos_[t * k + j] = count_[idx[j]]++;
      } else {
        for (int d = 0; d < s_.npes; ++d)
          pos_[size_t(d) * cap + t] = moe::routed(s_, in_, t, d) ? count_[d]++ : -1;
      }
    }
    std::vector<int32_t> first(groups_, 0);  // each group's first unit
    for (size_t g = 1; g < groups_; ++g) first[g] = first[g - 1] + count_[g - 1];
    sent_ = size_t(first.back() + count_.back());
    for (int t = 0; t < in_.tokens; ++t) {
      if (ll_) {
        for (size_t j = 0; j < k; ++j) pos_[t * k + j] += first[in_.idx[t * k + j]];
      } else {
        for (int d = 0; d < s_.npes; ++d)
          if (int32_t& p = pos_[size_t(d) * cap + t]; p >= 0) p += first[d];
      }
    }
  }

  void pack() {
    const size_t k = size_t(s_.topk), pb = s_.payload_bytes(), cap = size_t(s_.capacity);
    const uint8_t* payload = fp8_ ? xq_.data() : reinterpret_cast<const uint8_t*>(in_.x.data());
    for (int t = 0; t < in_.tokens; ++t) {
      const uint8_t* src = payload + size_t(t) * pb;
      if (ll_) {
        for (size_t j = 0; j < k; ++j) {
          uint8_t* rec = send_x_.data() + size_t(pos_[t * k + j]) * rec_;
          std::memcpy(rec, src, pb);
          if (fp8_) std::memcpy(rec + pb, &scale_[t], 4);
        }
        continue;
      }
      for (int d = 0; d < s_.npes; ++d) {
        const int32_t p = pos_[size_t(d) * cap + t];
        if (p < 0) continue;
        std::memcpy(send_x_.data() + size_t(p) * rec_, src, pb);
        uint8_t* meta = send_meta_.data() + size_t(p) * meta_;
        std::memcpy(meta, in_.idx.data() + t * k, k * 4);
        std::memcpy(meta + k * 4, in_.weight.data() + t * k, k * 4);
        const float sc = fp8_ ? scale_[t] : 1.0f;
        std::memcpy(meta + k * 8, &sc, 4);
      }
    }
  }

  // One MPI_Alltoallv of `unit`-byte records: `send` holds the counts per group sent, `recv` those
  // received, each PE's groups contiguous.
  void exchange(size_t unit, const void* out, const std::vector<int32_t>& send, void* in,
                const std::vector<int32_t>& recv) {
    const size_t per = groups_ / s_.npes;
    int so = 0, ro = 0;
    for (int d = 0; d < s_.npes; ++d) {
      int sc = 0, rc = 0;
      for (size_t g = d * per; g < (d + 1) * per; ++g) sc += send[g], rc += recv[g];
      send_bytes_[d] = int(sc * unit), send_displ_[d] = so, so += send_bytes_[d];
      recv_bytes_[d] = int(rc * unit), recv_displ_[d] = ro, ro += recv_bytes_[d];
    }
    MPI_Alltoallv(out, send_bytes_.data(), send_displ_.data(), MPI_BYTE, in, recv_bytes_.data(),
                  recv_displ_.data(), MPI_BYTE, MPI_COMM_WORLD);
  }

  moe::Shape s_;
  bool ll_, fp8_ = false;
  const moe::Inputs& in_;
  size_t rec_ = 0, meta_ = 0, groups_ = 0, sent_ = 0, received_ = 0;
  std::vector<int32_t> count_, recv_count_;  // [group]
  std::vector<int> send_bytes_, send_displ_, recv_bytes_, recv_displ_;
  std::vector<int32_t> pos_;  // normal: [d][t] unit of t for d or -1; LL: [t][j] unit
  std::vector<uint8_t> xq_;
  std::vector<float> scale_;
  std::vector<uint8_t> send_x_, recv_x_, send_meta_, recv_meta_;
  std::vector<bf16> y_, back_, out_;
  std::vector<const bf16*> rows_;  // combine's rows of one token
};

}  // namespace moe_bench
