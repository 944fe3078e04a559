// The host side's inputs and its reference: every PE can make every PE's tokens and routing (they
// are a function of the PE, the token and a seed), so each PE checks what it received, and the
// combined result, against its own computation without exchanging anything.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "low_latency.hpp"
#include "normal.hpp"

namespace moe {

enum class Routing {
  kUniform,  // k distinct experts uniformly over every PE's experts
  kSkewed,   // every token to experts of PE 0 only (needs k <= experts)
  kEmpty,    // no token to the last PE: it receives nothing (needs k <= experts * (npes - 1))
};
inline const char* routing_name(Routing r) {
  return r == Routing::kUniform ? "uniform" : r == Routing::kSkewed ? "skewed" : "empty";
}

struct Inputs {
  int tokens = 0;
  std::vector<bf16> x;        // [t][hidden]
  std::vector<int32_t> idx;   // [t][topk]
  std::vector<float> weight;  // [t][topk]
};

inline uint64_t mix(uint64_t z) {  // splitmix64's finaliser
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// The tokens PE `pe` holds: all of `capacity`, or with `uneven` fewer on PEs 1 and 2 (a third and
// two thirds fewer).
inline int tokens_on(int capacity, int pe, bool uneven) {
  return uneven ? capacity - (pe % 3) * capacity / 3 : capacity;
}

// Why the routing cannot be made for this shape, or "".
inline std::string routing_error(const Shape& s, Routing r) {
  char buf[160] = "";
  if (s.topk < 1 || s.topk > kMaxTopk)
    std::snprintf(buf, sizeof buf, "topk %d is outside 1..%d", s.topk, kMaxTopk);
  else if (r == Routing::kUniform && s.topk > s.total_experts())
    std::snprintf(buf, sizeof buf, "topk %d exceeds the %d experts", s.topk, s.total_experts());
  else if (r == Routing::kSkewed && s.topk > s.experts)
    std::snprintf(buf, sizeof buf,
                  "skewed routing puts all %d experts of a token on PE 0, which has %d", s.topk,
                  s.experts);
  else if (r == Routing::kEmpty && s.topk > s.experts * (s.npes - 1))
    std::snprintf(buf, sizeof buf, "empty routing leaves %d experts for topk %d",
                  s.experts * (s.npes - 1), s.topk);
  return buf;
}

inline Inputs make_inputs(const Shape& s, int pe, int tokens, Routing r, uint32_t seed) {
  Inputs in;
  in.tokens = tokens;
  in.x.resize(size_t(tokens) * s.hidden);
  in.idx.resize(size_t(tokens) * s.topk);
  in.weight.resize(size_t(tokens) * s.topk);
  const int pool = r == Routing::kUniform  ? s.total_experts()
                   : r == Routing::kSkewed ? s.experts
                                           : s.experts * (s.npes - 1);
  std::vector<int32_t> experts(pool);
  for (int t = 0; t < tokens; ++t) {
    const uint64_t key = mix(uint64_t(seed) << 40 ^ uint64_t(pe) << 24 ^ uint64_t(t));
    for (int i = 0; i < pool; ++i) experts[i] = i;
    for (int j = 0; j < s.topk; ++j) {  // a partial Fisher-Yates shuffle: distinct experts
      const int pick = j + int(mix(key + j) % uint64_t(pool - j));
      std::swap(experts[j], experts[pick]);
      in.idx[size_t(t) * s.topk + j] = experts[j];
      in.weight[size_t(t) * s.topk + j] = float(1 + mix(key ^ (j + 77)) % 255) / 256.0f;
    }
    for (int h = 0; h < s.hidden; ++h) {
      const uint64_t v = mix(key * 31 + uint64_t(h) + 1);
      in.x[size_t(t) * s.hidden + h] = to_bf16(float(int(v % 2001) - 1000) / 128.0f);
    }
  }
  return in;
}

// What PE `src` sends for token t: its payload bytes (bf16 as stored, or fp8) and fp8 scale.
struct Payload {
  std::vector<uint8_t> bytes;
  float scale = 1.0f;
};
inline Payload payload_of(const Shape& s, const Inputs& in, int t) {
  Payload p;
  const bf16* x = in.x.data() + size_t(t) * s.hidden;
  if (s.format == Format::kBf16) {
    p.bytes.resize(s.payload_bytes());
    std::memcpy(p.bytes.data(), x, p.bytes.size());
    return p;
  }
  float amax = 0.0f;
  for (int h = 0; h < s.hidden; ++h) amax = std::max(amax, std::fabs(to_float(x[h])));
  p.scale = amax > 0.0f ? amax / kE4m3Max : 1.0f;
  for (int h = 0; h < s.hidden; ++h) p.bytes.push_back(to_e4m3(to_float(x[h]) / p.scale));
  return p;
}

inline bool routed(const Shape& s, const Inputs& in, int t, int pe) {
  for (int j = 0; j < s.topk; ++j)
    if (in.idx[size_t(t) * s.topk + j] / s.experts == pe) return true;
  return false;
}

// The combined output of every token of `mine` (this PE's inputs), as both modes compute it.
inline std::vector<bf16> expected_out(const Shape& s, const Inputs& mine, bool low_latency) {
  std::vector<bf16> out(size_t(mine.tokens) * s.hidden);
  for (int t = 0; t < mine.tokens; ++t) {
    const Payload p = payload_of(s, mine, t);
    const int32_t* idx = mine.idx.data() + size_t(t) * s.topk;
    const float* w = mine.weight.data() + size_t(t) * s.topk;
    for (int h = 0; h < s.hidden; ++h) {
      const float v = payload_value(p.bytes.data(), p.scale, h, s.format);
      float acc = 0.0f;
      if (low_latency) {  // each expert's output rounded to bf16, weighted at the source
        for (int j = 0; j < s.topk; ++j) acc += w[j] * to_float(to_bf16(v * expert_factor(idx[j])));
      } else {  // each PE's weighted sum rounded to bf16, the PEs' sums added at the source
        for (int d = 0; d < s.npes; ++d)
          if (routed(s, mine, t, d))
            acc += to_float(to_bf16(local_sum(v, idx, w, s.topk, s.experts, d)));
      }
      out[size_t(t) * s.hidden + h] = to_bf16(acc);
    }
  }
  return out;
}

// "" when `got` equals `want`, else the first difference.
inline std::string compare_rows(const char* what, const bf16* got, const std::vector<bf16>& want,
                                int hidden) {
  for (size_t i = 0; i < want.size(); ++i)
    if (got[i] != want[i]) {
      char buf[200];
      std::snprintf(buf, sizeof buf,
                    "%s: token %zu element %zu is 0x%04x (%g), expected 0x%04x (%g)", what,
                    i / hidden, i % hidden, got[i], to_float(got[i]), want[i], to_float(want[i]));
      return buf;
    }
  return "";
}

}  // namespace moe
