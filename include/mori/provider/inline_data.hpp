// The payload of an inline RDMA write, gathered from memory in 4-byte words.
//
// A put of at most a provider's kMaxInlineBytes carries its bytes in the WQE, from a source whose
// length and alignment are known only at run time. Copied byte by byte, each byte would take a
// register of its own before the provider packed them. Here the source is read as the aligned
// 4-byte words that hold it, each loaded
// only if it holds a byte of the payload, and shifted into place: at most kBytes / 4 + 1 loads and
// kBytes / 4 registers. The bytes past `n` are zero, as a WQE zero-fills them.
//
// An aligned word that holds a byte of [src, src + n) lies in the same page as that byte, so the
// read cannot fault on either backend; its other bytes are read and dropped. On the host, the
// sanitizers would call that an overflow of the source object: they are told not to look here.
// A value in a register (RDMA p, a signal set) comes in wr.operand instead: its address would be
// a private one cast to flat, whose low bits the compiler cannot know, and the value would be
// stored to scratch memory to be read back.
#pragma once

#include <cstdint>

#include "mori/platform.hpp"
#include "mori/provider/work_request.hpp"

namespace mori::provider {

template <uint32_t kBytes>
struct InlineWords {
  static_assert(kBytes % 4 == 0, "an inline payload is gathered in whole words");
  uint32_t word[kBytes / 4];
};

// Bytes [0, n) of src, n <= kBytes (clamped), as words; the rest zero.
template <uint32_t kBytes>
#if defined(MORI_ON_HOST)
__attribute__((no_sanitize("address", "thread")))
#endif
MORI_DEVICE InlineWords<kBytes>
gather_inline(const void* src, uint32_t n) {
  constexpr uint32_t kWords = kBytes / 4;
  if (n > kBytes) n = kBytes;
  const uint32_t shift = static_cast<uint32_t>(reinterpret_cast<uintptr_t>(src) & 3);
  const char* base =
      static_cast<const char*>(__builtin_assume_aligned(static_cast<const char*>(src) - shift, 4));
  // raw[i]: the aligned word at base + 4i, when it holds a payload byte (4i < shift + n, and no
  // word at all for an empty payload, whose address may be any).
  const uint32_t span = n == 0 ? 0 : shift + n;
  uint32_t raw[kWords + 1];
  for (uint32_t i = 0; i <= kWords; ++i) {
    raw[i] = 0;
    if (4 * i < span) __builtin_memcpy(&raw[i], base + 4 * i, 4);
  }
  InlineWords<kBytes> out;
  for (uint32_t i = 0; i < kWords; ++i) {
    // Bytes shift .. shift + 3 of raw[i + 1]:raw[i] (little-endian).
    const uint32_t word = platform::funnel_right(raw[i + 1], raw[i], 8 * shift);
    // Only the payload's bytes of the word: all 4, none, or the low n - 4i.
    const uint32_t left = n > 4 * i ? n - 4 * i : 0;
    out.word[i] = left >= 4 ? word : word & ((uint32_t{1} << (8 * left)) - 1);
  }
  return out;
}

// The payload of the inline write `wr`, at most kBytes: from wr.operand or from wr.inline_data.
template <uint32_t kBytes>
MORI_DEVICE InlineWords<kBytes> inline_payload(const WorkRequest& wr) {
  if (!wr.inline_operand) return gather_inline<kBytes>(wr.inline_data, wr.bytes);
  static_assert(kBytes >= 8, "an inline write carries at least an 8-byte operand");
  const uint32_t n = wr.bytes < 8 ? wr.bytes : 8;
  const uint64_t value = n < 8 ? wr.operand & ((uint64_t{1} << (8 * n)) - 1) : wr.operand;
  InlineWords<kBytes> out{};
  out.word[0] = static_cast<uint32_t>(value);
  out.word[1] = static_cast<uint32_t>(value >> 32);
  return out;
}

}  // namespace mori::provider
