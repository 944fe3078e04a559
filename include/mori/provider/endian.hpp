// Byte-order types for hardware structs: a field's endianness is part of its type, as with
// rdma-core's __be32 and __le32 (docs/design.md, Style, rule 4). Both GPU targets and the host are
// little-endian; the big-endian types swap on every load and store, through these accessors only.
#pragma once

#include <cstdint>

#include "mori/platform/macros.hpp"

namespace mori::provider {

namespace detail {
MORI_DEVICE uint16_t bswap(uint16_t v) { return __builtin_bswap16(v); }
MORI_DEVICE uint32_t bswap(uint32_t v) { return __builtin_bswap32(v); }
MORI_DEVICE uint64_t bswap(uint64_t v) { return __builtin_bswap64(v); }
}  // namespace detail

// A big-endian field of the width of T (uint16_t, uint32_t or uint64_t).
template <typename T>
struct BigEndian {
  T raw;  // the bytes as the device reads them
  MORI_DEVICE static BigEndian from(T v) { return {detail::bswap(v)}; }
  MORI_DEVICE T get() const { return detail::bswap(raw); }
};

// A little-endian field: stored as is on every supported target.
template <typename T>
struct LittleEndian {
  T raw;
  MORI_DEVICE static LittleEndian from(T v) { return {v}; }
  MORI_DEVICE T get() const { return raw; }
};

using be16 = BigEndian<uint16_t>;
using be32 = BigEndian<uint32_t>;
using be64 = BigEndian<uint64_t>;
using le16 = LittleEndian<uint16_t>;
using le32 = LittleEndian<uint32_t>;
using le64 = LittleEndian<uint64_t>;

static_assert(sizeof(be32) == 4 && sizeof(le64) == 8, "byte-order types add no padding");

}  // namespace mori::provider
