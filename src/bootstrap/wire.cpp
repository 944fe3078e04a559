#include "bootstrap/wire.hpp"

#include <cstring>

#include "bootstrap/bytes.hpp"

namespace mori::bootstrap {

std::string op_name(uint16_t op) {
  switch (static_cast<Op>(op)) {
    case Op::kJoin:
      return "join";
    case Op::kAllgather:
      return "allgather";
    case Op::kAlltoall:
      return "alltoall";
    case Op::kBarrier:
      return "barrier";
    case Op::kBroadcast:
      return "broadcast";
    case Op::kError:
      return "error";
  }
  return "op " + std::to_string(op);
}

void encode_hello(const Hello& hello, uint8_t* out) {
  std::memset(out, 0, kHelloBytes);
  store_le<uint32_t>(out + 0, hello.magic);
  store_le<uint16_t>(out + 4, hello.version);
  store_le<uint32_t>(out + 8, hello.rank);
  store_le<uint32_t>(out + 12, hello.size);
  store_le<uint64_t>(out + 16, hello.nonce);
}

Hello decode_hello(const uint8_t* in) {
  Hello hello;
  hello.magic = load_le<uint32_t>(in + 0);
  hello.version = load_le<uint16_t>(in + 4);
  hello.rank = load_le<uint32_t>(in + 8);
  hello.size = load_le<uint32_t>(in + 12);
  hello.nonce = load_le<uint64_t>(in + 16);
  return hello;
}

void encode_frame(const Frame& frame, uint8_t* out) {
  std::memset(out, 0, kFrameBytes);
  store_le<uint16_t>(out + 0, frame.op);
  store_le<uint32_t>(out + 4, frame.seq);
  store_le<uint64_t>(out + 8, frame.block);
  store_le<uint32_t>(out + 16, frame.root);
  store_le<uint64_t>(out + 24, frame.length);
}

Frame decode_frame(const uint8_t* in) {
  Frame frame;
  frame.op = load_le<uint16_t>(in + 0);
  frame.seq = load_le<uint32_t>(in + 4);
  frame.block = load_le<uint64_t>(in + 8);
  frame.root = load_le<uint32_t>(in + 16);
  frame.length = load_le<uint64_t>(in + 24);
  return frame;
}

}  // namespace mori::bootstrap
