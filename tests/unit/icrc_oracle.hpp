// The tests' own ICRC of a RoCEv2 datagram (IBTA A17.8), written apart from roce.cpp's so that the
// two can disagree: zlib's CRC-32 over 8 bytes of 0xFF (the masked LRH of RoCEv2), then a copy of
// the datagram up to its ICRC with the variant fields set to 0xFF: IPv4 TOS (byte 1), TTL (8),
// header checksum (10, 11), UDP checksum (26, 27) and the BTH's FECN/BECN byte (32). Used by
// tests/unit/test_wire_roce.cpp and tests/netns/capture_check.cpp.
#pragma once

#include <zlib.h>

#include <cstdint>
#include <vector>

namespace mori::test {

inline uint32_t zlib_icrc(const std::vector<uint8_t>& d) {
  std::vector<uint8_t> copy(8, 0xFF);
  copy.insert(copy.end(), d.begin(), d.end() - 4);
  for (size_t at : {1, 8, 10, 11, 26, 27, 32}) copy[8 + at] = 0xFF;
  return static_cast<uint32_t>(crc32(0L, copy.data(), static_cast<uInt>(copy.size())));
}

}  // namespace mori::test
