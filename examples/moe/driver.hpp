// The host side of the MoE example, test and bench (host backend): the symmetric buffers, the
// inputs, and one launch per phase.
#pragma once

#include <cstring>
#include <string>
#include <vector>

#include "mori/host/launch.hpp"
#include "mori/shmem.hpp"
#include "reference.hpp"

namespace moe {

enum Modes : unsigned { kNormal = 1, kLowLatency = 2, kBoth = 3 };

inline constexpr int kMaxWarps = 256;     // warps of a launch: the fp8 quantizer's scratch
inline constexpr uint8_t kPoison = 0xA5;  // receive regions before a dispatch

struct Launch {
  int blocks = 0;  // 0: one per PE (normal mode's natural grid)
  int threads = 64;
  int warp = 64;  // lanes per warp (the host backend may use fewer than the GPU's 64)
};

class Moe {
 public:
  // Collective: every PE allocates the same buffers. On failure error() says why and every
  // pointer is null.
  Moe(const Shape& s, unsigned modes) : s_(s), modes_(modes) { allocate(); }
  ~Moe() {
    for (auto it = owned_.rbegin(); it != owned_.rend(); ++it) shmem::free(*it);
  }
  Moe(const Moe&) = delete;
  Moe& operator=(const Moe&) = delete;

  const std::string& error() const { return error_; }
  const Shape& shape() const { return s_; }
  const Buffers& buffers() const { return b_; }

  // This PE's tokens: they replace what the last set_inputs() left (the count may change, up to
  // the capacity).
  void set_inputs(const Inputs& in) {
    s_.tokens = in.tokens;
    std::memcpy(b_.x, in.x.data(), in.x.size() * sizeof(bf16));
    std::memcpy(b_.idx, in.idx.data(), in.idx.size() * sizeof(int32_t));
    std::memcpy(b_.weight, in.weight.data(), in.weight.size() * sizeof(float));
  }
  // Poisons the receive regions and the output, so that a check sees what a phase did not write.
  void poison() {
    const size_t n = size_t(s_.npes), cap = size_t(s_.capacity), H = size_t(s_.hidden);
    std::memset(b_.out, kPoison, cap * s_.row_bytes());
    if (modes_ & kNormal) {
      std::memset(b_.recv_x, kPoison, n * cap * s_.payload_bytes());
      std::memset(b_.comb_recv, kPoison, n * cap * H * sizeof(bf16));
    }
    if (modes_ & kLowLatency) {
      std::memset(b_.ll_recv, kPoison, size_t(s_.experts) * n * cap * s_.record_bytes());
      std::memset(b_.ll_comb_recv, kPoison, n * s_.experts * cap * H * sizeof(bf16));
    }
  }

  mori::Status run_normal_dispatch(uint32_t epoch, const Launch& l) {
    if (s_.format == Format::kFp8) {
      auto st = launch(l, Quantize{b_, s_});
      if (!st.ok()) return st;
    }
    return launch(l, NormalDispatch{b_, s_, epoch});
  }
  mori::Status run_normal_expert(const Launch& l) { return launch(l, NormalExpert{b_, s_}); }
  mori::Status run_normal_combine(uint32_t epoch, const Launch& l) {
    return launch(l, NormalCombine{b_, s_, epoch});
  }
  mori::Status run_ll_dispatch(uint32_t epoch, const Launch& l) {
    return launch(l, LlDispatch{b_, s_, epoch});
  }
  mori::Status run_ll_expert(const Launch& l) { return launch(l, LlExpert{b_, s_}); }
  mori::Status run_ll_combine(uint32_t epoch, const Launch& l) {
    return launch(l, LlCombine{b_, s_, epoch});
  }

  mori::host::LaunchConfig config(const Launch& l) const {
    mori::host::LaunchConfig c;
    c.grid = platform::Dim3(unsigned(l.blocks > 0 ? l.blocks : s_.npes));
    c.block = platform::Dim3(unsigned(l.threads));
    c.warp_size = l.warp;
    return c;
  }

  template <typename Kernel>
  mori::Status launch(const Launch& l, const Kernel& k) {
    const auto c = config(l);
    const int warps = int(c.grid.x) * ((l.threads + l.warp - 1) / l.warp);
    if (l.threads > kMaxThreads || warps > kMaxWarps)
      return mori::Status::error("moe: a launch of " + std::to_string(warps) + " warps of " +
                                 std::to_string(l.threads) + " threads exceeds the buffers' " +
                                 std::to_string(kMaxWarps) + " warps or " +
                                 std::to_string(kMaxThreads) + " threads per block");
    return mori::host::launch_lanes(c, [&] { k(); });
  }

 private:
  template <typename T>
  void take(T** p, size_t count) {
    *p = nullptr;
    if (!error_.empty()) return;
    void* m = shmem::malloc(count * sizeof(T) > 0 ? count * sizeof(T) : 8);
    if (!m) {
      error_ = std::string("moe: shmem::malloc(") + std::to_string(count * sizeof(T)) +
               "): " + shmem::last_error();
      return;
    }
    std::memset(m, 0, count * sizeof(T));
    owned_.push_back(m);
    *p = static_cast<T*>(m);
  }

  void allocate() {
    b_ = Buffers{};
    const size_t n = size_t(s_.npes), cap = size_t(s_.capacity), H = size_t(s_.hidden),
                 k = size_t(s_.topk);
    const size_t E = size_t(s_.experts), pb = s_.payload_bytes();
    take(&b_.x, cap * H);
    take(&b_.idx, cap * k);
    take(&b_.weight, cap * k);
    take(&b_.xq, cap * H);
    take(&b_.scale, cap);
    take(&b_.out, cap * H);
    take(&b_.grid, 16);
    take(&b_.amax, size_t(kMaxWarps) * 64);
    if (modes_ & kNormal) {
      take(&b_.slot_of, n * cap);
      take(&b_.seg_count, n * (kMaxThreads + 1));
      take(&b_.recv_count, n);
      take(&b_.recv_x, n * cap * pb);
      take(&b_.recv_scale, n * cap);
      take(&b_.recv_idx, n * cap * k);
      take(&b_.recv_weight, n * cap * k);
      take(&b_.count_sig, n);
      take(&b_.data_sig, n);
      take(&b_.comb_send, n * cap * H);
      take(&b_.comb_recv, n * cap * H);
      take(&b_.comb_sig, n);
      take(&b_.comb_from, n);
      take(&b_.comb_sig_at, n);
    }
    if (modes_ & kLowLatency) {
      take(&b_.ll_send, cap * s_.record_bytes());
      take(&b_.ll_recv, E * n * cap * s_.record_bytes());
      take(&b_.ll_counter, n * E);
      take(&b_.ll_finished, 1);
      take(&b_.ll_slot, cap * k);
      take(&b_.ll_count, E * n);
      take(&b_.ll_sig, E * n);
      take(&b_.ll_comb_send, E * n * cap * H);
      take(&b_.ll_comb_recv, n * E * cap * H);
      take(&b_.ll_comb_sig, n * E);
      take(&b_.ll_comb_from, n * E);
      take(&b_.ll_comb_sig_at, n);
    }
    if (error_.empty()) combine_sources();
    // The signal words are zero on every PE before any PE's first dispatch can signal.
    shmem::barrier_all();
    if (!error_.empty()) b_ = Buffers{};
  }

  // Where this PE reads each combine's outputs: in the expert's PE's memory where this PE loads
  // it (shmem::ptr_p2p), else in the receive region that PE puts them into; and where it stores
  // the signal that leaves its own outputs in place. Kernels read the tables, so that a combine
  // looks up no address per row.
  void combine_sources() {
    const size_t cap = size_t(s_.capacity), H = size_t(s_.hidden), E = size_t(s_.experts);
    const size_t me = size_t(s_.me), n = size_t(s_.npes);
    for (int d = 0; d < s_.npes; ++d) {
      auto on_d = [&](auto* mine) {
        return reinterpret_cast<decltype(mine)>(
            shmem::ptr_p2p(reinterpret_cast<uint64_t>(mine), s_.me, d));
      };
      if (modes_ & kNormal) {
        b_.comb_sig_at[d] = on_d(b_.comb_sig + me);
        b_.comb_from[d] = b_.comb_sig_at[d] ? on_d(b_.comb_send) + me * cap * H
                                            : b_.comb_recv + size_t(d) * cap * H;
      }
      if (modes_ & kLowLatency) {
        b_.ll_comb_sig_at[d] = on_d(b_.ll_comb_sig + me * E);
        for (size_t el = 0; el < E; ++el) {
          const size_t e = size_t(d) * E + el;
          b_.ll_comb_from[e] = b_.ll_comb_sig_at[d]
                                   ? on_d(b_.ll_comb_send) + (el * n + me) * cap * H
                                   : b_.ll_comb_recv + e * cap * H;
        }
      }
    }
  }

  Shape s_;
  unsigned modes_;
  Buffers b_{};
  std::vector<void*> owned_;
  std::string error_;
};

}  // namespace moe
