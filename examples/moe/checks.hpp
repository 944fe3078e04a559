// Checks of what a dispatch left on this PE and of the combined output, against the reference
// (reference.hpp). Each returns "" when every byte is as expected, else the first difference.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "driver.hpp"

namespace moe {

inline std::string describe(const char* fmt, int a, int b, int c, int d = 0) {
  char buf[240];
  std::snprintf(buf, sizeof buf, fmt, a, b, c, d);
  return buf;
}

// Normal mode: from each source, its routed tokens in token order, every array, and the guard slot
// after the last one still poisoned.
inline std::string check_normal_dispatch(const Moe& m, const std::vector<Inputs>& all) {
  const Shape& s = m.shape();
  const Buffers& b = m.buffers();
  const size_t pb = s.payload_bytes(), k = size_t(s.topk);
  for (int src = 0; src < s.npes; ++src) {
    const Inputs& in = all[src];
    int slot = 0;
    for (int t = 0; t < in.tokens; ++t) {
      if (!routed(s, in, t, s.me)) continue;
      const size_t at = size_t(src) * s.capacity + slot;
      const Payload p = payload_of(s, in, t);
      if (std::memcmp(b.recv_x + at * pb, p.bytes.data(), pb) != 0)
        return describe("normal dispatch: the payload in slot %d from PE %d (its token %d) differs",
                        slot, src, t);
      if (s.format == Format::kFp8 && b.recv_scale[at] != p.scale)
        return describe(
            "normal dispatch: the fp8 scale in slot %d from PE %d (its token %d) differs", slot,
            src, t);
      if (std::memcmp(b.recv_idx + at * k, in.idx.data() + t * k, k * 4) != 0 ||
          std::memcmp(b.recv_weight + at * k, in.weight.data() + t * k, k * 4) != 0)
        return describe("normal dispatch: the routing in slot %d from PE %d (its token %d) differs",
                        slot, src, t);
      ++slot;
    }
    if (b.recv_count[src] != slot)
      return describe("normal dispatch: PE %d sent %d tokens, expected %d", src, b.recv_count[src],
                      slot);
    if (slot < s.capacity) {
      const uint8_t* guard = b.recv_x + (size_t(src) * s.capacity + slot) * pb;
      for (size_t i = 0; i < pb; ++i)
        if (guard[i] != kPoison)
          return describe(
              "normal dispatch: byte %d of slot %d after PE %d's last token was written", int(i),
              slot, src);
    }
  }
  return "";
}

// Low latency: each (expert, source) region holds exactly the source's tokens routed to that
// expert, in any order (the slots come from an atomic counter), each record exact.
inline std::string check_ll_dispatch(const Moe& m, const std::vector<Inputs>& all) {
  const Shape& s = m.shape();
  const Buffers& b = m.buffers();
  const size_t rb = s.record_bytes(), pb = s.payload_bytes();
  for (int el = 0; el < s.experts; ++el) {
    const int e = s.me * s.experts + el;
    for (int src = 0; src < s.npes; ++src) {
      const Inputs& in = all[src];
      std::vector<int> want, got;
      for (int t = 0; t < in.tokens; ++t)
        for (int j = 0; j < s.topk; ++j)
          if (in.idx[size_t(t) * s.topk + j] == e) want.push_back(t);
      const int count = b.ll_count[el * s.npes + src];
      if (count != int(want.size()))
        return describe("low-latency dispatch: expert %d got %d tokens from PE %d, expected %d", e,
                        count, src, int(want.size()));
      for (int slot = 0; slot < count; ++slot) {
        const uint8_t* rec = b.ll_recv + ((size_t(el) * s.npes + src) * s.capacity + slot) * rb;
        int32_t t;
        float scale;
        std::memcpy(&t, rec + pb + 4, 4);
        std::memcpy(&scale, rec + pb, 4);
        if (t < 0 || t >= in.tokens)
          return describe("low-latency dispatch: slot %d of expert %d from PE %d names token %d",
                          slot, e, src, t);
        const Payload p = payload_of(s, in, t);
        if (std::memcmp(rec, p.bytes.data(), pb) != 0 ||
            (s.format == Format::kFp8 && scale != p.scale))
          return describe(
              "low-latency dispatch: the record of PE %d's token %d at expert %d (slot %d) differs",
              src, t, e, slot);
        got.push_back(t);
      }
      std::sort(got.begin(), got.end());
      if (got != want)
        return describe(
            "low-latency dispatch: expert %d from PE %d holds a token twice or one not routed to "
            "it "
            "(%d records)",
            e, src, count);
      if (count < s.capacity) {
        const uint8_t* guard = b.ll_recv + ((size_t(el) * s.npes + src) * s.capacity + count) * rb;
        for (size_t i = 0; i < rb; ++i)
          if (guard[i] != kPoison)
            return describe(
                "low-latency dispatch: byte %d after the last record of expert %d from PE %d was "
                "written",
                int(i), e, src);
      }
    }
  }
  return "";
}

inline std::string check_out(const Moe& m, const Inputs& mine, bool low_latency) {
  const Shape& s = m.shape();
  std::string e = compare_rows(low_latency ? "low-latency combine" : "normal combine",
                               m.buffers().out, expected_out(s, mine, low_latency), s.hidden);
  if (!e.empty()) return e;
  // The row after the last token stays poisoned.
  if (mine.tokens < s.capacity) {
    const uint8_t* guard =
        reinterpret_cast<const uint8_t*>(m.buffers().out + size_t(mine.tokens) * s.hidden);
    for (size_t i = 0; i < s.row_bytes(); ++i)
      if (guard[i] != kPoison)
        return describe("combine: byte %d after the last token's row was written", int(i), 0, 0);
  }
  return "";
}

}  // namespace moe
