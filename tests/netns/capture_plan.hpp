// What netns.wire_capture sends between node 0's nic0 (PE 0) and node 1's nic0 (PE 2), shared by
// the MPI program that sends it (wire_capture.cpp) and the checker that finds it in the capture
// (capture_check.cpp), so that both agree on the sizes and the values.
#pragma once

#include <cstddef>
#include <cstdint>

namespace mori::test::capture {

// PE 0 -> PE 2, in this order, each completed (quiet) before the next begins:
//   1. a put of kPutBytes whose first WRITE Middle the network drops (wire_capture.sh's nftables
//      rule in node 1): a retransmission;
//   2. a put of kPutBytes, nothing dropped;
//   3. a get of kPutBytes;
//   4. a fetch-add of kAddend to a word that holds kOriginal.
// kPutBytes is over two path MTUs (1024 at netdev MTU 1500): First, Middle, Last.
constexpr size_t kPutBytes = 3000;
constexpr uint32_t kPathMtu = 1024;
constexpr uint64_t kOriginal = 0x1122334455667788ull;
constexpr uint64_t kAddend = 0x0101010101010101ull;

constexpr const char* kPe0Address = "198.19.0.1";  // node 0, nic0 (netns.sh)
constexpr const char* kPe2Address = "198.19.1.1";  // node 1, nic0

// Byte i of the data of transfer `which` (1: the lossy put, 2: the put, 3: the get's source on PE
// 2): distinct between the transfers and not periodic within a path MTU, so that a misplaced or
// repeated packet's payload shows.
inline uint8_t data_byte(int which, size_t i) {
  return static_cast<uint8_t>((i * 7 + i / 251 + static_cast<size_t>(which) * 85 + 1) & 0xFF);
}

}  // namespace mori::test::capture
