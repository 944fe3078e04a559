// The TCP bootstrap's messages. Rank r > 0 opens with a hello; after that every message is a frame
// header, followed by `length` payload bytes. All integers are little-endian (bytes.hpp); reserved
// bytes are zero.
//
// Hello, kHelloBytes:
//   offset  bytes  field
//        0      4  magic, kHelloMagic
//        4      2  wire version, kWireVersion
//        6      2  reserved
//        8      4  rank of the sender
//       12      4  size (number of ranks) the sender was given
//       16      8  nonce of the sender's unique ID
//
// Frame header, kFrameBytes:
//   offset  bytes  field
//        0      2  op (Op)
//        2      2  reserved
//        4      4  sequence number: the n-th collective since joining, from 1 (join is 0)
//        8      8  block: the `bytes` argument of the collective, so that ranks can check they
//                  agree
//       16      4  root of a broadcast, else 0
//       20      4  reserved
//       24      8  length of the payload that follows
//
// Receivers check every field before trusting it, and refuse payloads over kMaxPayloadBytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace mori::bootstrap {

inline constexpr uint32_t kHelloMagic = 0x4f4c4548;  // "HELO"
inline constexpr size_t kHelloBytes = 24;
inline constexpr size_t kFrameBytes = 32;
inline constexpr uint64_t kMaxPayloadBytes = uint64_t{1} << 30;
// An error frame carries a one-line reason; anything longer is not one.
inline constexpr uint64_t kMaxErrorBytes = 4096;

enum class Op : uint16_t {
  kJoin = 1,  // rank 0's answer to a hello: everyone has joined
  kAllgather = 2,
  kAlltoall = 3,
  kBarrier = 4,
  kBroadcast = 5,
  kError = 6,  // rank 0 reports a failure; the payload is the reason
};

// "allgather", ..., or "op 77" for a value that names no op.
std::string op_name(uint16_t op);
inline std::string op_name(Op op) { return op_name(static_cast<uint16_t>(op)); }

struct Hello {
  uint32_t magic = kHelloMagic;
  uint16_t version = 0;
  uint32_t rank = 0;
  uint32_t size = 0;
  uint64_t nonce = 0;
};
void encode_hello(const Hello& hello, uint8_t* out);
Hello decode_hello(const uint8_t* in);

struct Frame {
  uint16_t op = 0;  // an Op, kept raw so that an unknown value can be named
  uint32_t seq = 0;
  uint64_t block = 0;
  uint32_t root = 0;
  uint64_t length = 0;
};
void encode_frame(const Frame& frame, uint8_t* out);
Frame decode_frame(const uint8_t* in);

}  // namespace mori::bootstrap
