// The TCP bootstrap's framed messages (bootstrap/tcp_channel.hpp, wire.hpp) at their limits: an
// error report of exactly kMaxErrorBytes is read and one byte more is refused; a payload of
// exactly kMaxPayloadBytes passes the size check on both sides of the star (rank 0 gathering,
// another rank receiving its answer) and one byte more is refused, each with its exact text.
// Frames travel over a local socket pair, written byte by byte as a peer would.
#include <doctest/doctest.h>
#include <sys/socket.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "bootstrap/socket.hpp"
#include "bootstrap/tcp_channel.hpp"
#include "bootstrap/wire.hpp"
#include "reserved_memory.hpp"

using namespace mori::bootstrap;
using std::chrono::milliseconds;

namespace {

constexpr uint64_t kGiB = uint64_t{1} << 30;
static_assert(kMaxPayloadBytes == kGiB && kMaxErrorBytes == 4096, "the limits the texts name");

// Two connected non-blocking stream sockets, as the bootstrap's TCP connections are.
struct SocketPair {
  Fd near, far;
  SocketPair() {
    int fds[2];
    REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds) == 0);
    near.reset(fds[0]);
    far.reset(fds[1]);
  }
};

// Writes a frame header and `payload` to `fd` as the peer would.
void put_frame(const Fd& fd, const Frame& frame, const std::string& payload = "") {
  uint8_t header[kFrameBytes];
  encode_frame(frame, header);
  const Deadline deadline(milliseconds(1000));
  REQUIRE(send_all(fd.get(), header, sizeof(header), deadline).ok());
  REQUIRE(send_all(fd.get(), payload.data(), payload.size(), deadline).ok());
}

Frame error_frame(uint64_t length) {
  return Frame{static_cast<uint16_t>(Op::kError), 0, 0, 0, length};
}

// A non-root rank's view: rank 1 waits for rank 0's answer to broadcast #3 (16 bytes, root 0).
const Frame kBroadcast{static_cast<uint16_t>(Op::kBroadcast), 3, 16, 0, 16};

std::string answer(const Fd& fd, const Frame& expect, void* payload, int ms = 1000) {
  const mori::Status s =
      recv_answer(fd.get(), 1, expect, payload, Deadline(milliseconds(ms)), milliseconds(ms));
  return s.ok() ? "ok" : s.message();
}

}  // namespace

TEST_CASE("bootstrap channel: an error report of up to 4096 bytes is read, 4097 is refused") {
  for (const uint64_t length : {kMaxErrorBytes - 1, kMaxErrorBytes}) {
    CAPTURE(length);
    SocketPair link;
    const std::string reason(length, 'r');
    put_frame(link.far, error_frame(length), reason);
    CHECK(answer(link.near, kBroadcast, nullptr) == reason);
  }
  SocketPair link;
  put_frame(link.far, error_frame(kMaxErrorBytes + 1), std::string(kMaxErrorBytes + 1, 'r'));
  CHECK(answer(link.near, kBroadcast, nullptr) ==
        "bootstrap: rank 0 sent a 4097-byte error report, over the 4096-byte limit");
}

TEST_CASE("bootstrap channel: send_error sends a reason of up to 4096 bytes whole, cuts a longer") {
  for (const uint64_t length : {kMaxErrorBytes - 1, kMaxErrorBytes, kMaxErrorBytes + 1}) {
    CAPTURE(length);
    SocketPair link;
    std::string reason(length, 'e');
    reason.back() = 'z';  // the last byte is kept only when the whole reason fits
    send_error(link.far.get(), 0, reason);
    CHECK(answer(link.near, kBroadcast, nullptr) == reason.substr(0, kMaxErrorBytes));
  }
}

TEST_CASE(
    "bootstrap channel: an answer of exactly 1 GiB passes the size check, 1 GiB + 1 is refused") {
  mori::test::ReservedMemory room(kGiB);
  Frame expect = kBroadcast;
  expect.block = kGiB;
  expect.length = kGiB;
  // At the limit: the frame is accepted and the payload awaited; rank 0 then goes away.
  {
    SocketPair link;
    Frame got = expect;
    put_frame(link.far, got, "payload");
    link.far.reset();
    CHECK(answer(link.near, expect, room.bytes()) ==
          "bootstrap: lost connection to rank 0 during broadcast");
    CHECK(std::string(reinterpret_cast<char*>(room.bytes()), 7) == "payload");
  }
  // Below the limit, a length other than the expected one is named as such.
  for (const uint64_t length : {kGiB - 1, kGiB}) {
    CAPTURE(length);
    SocketPair link;
    Frame got = kBroadcast;
    got.length = length;
    put_frame(link.far, got);
    CHECK(answer(link.near, kBroadcast, room.bytes()) ==
          "bootstrap: rank 0 sent " + std::to_string(length) +
              " bytes for broadcast #3 while rank 1 expected 16");
  }
  SocketPair link;
  Frame got = expect;
  got.length = kGiB + 1;
  put_frame(link.far, got);
  CHECK(answer(link.near, expect, room.bytes()) ==
        "bootstrap: rank 0 announced a 1073741825-byte payload for broadcast #3, over the 1 GiB "
        "limit");
}

TEST_CASE("bootstrap channel: rank 0 gathers a frame of exactly 1 GiB, refuses 1 GiB + 1") {
  mori::test::ReservedMemory room(kGiB);
  const Frame expect{static_cast<uint16_t>(Op::kAllgather), 2, kGiB, 0, 0};
  auto gather = [&](uint64_t announced, uint64_t wanted, bool hang_up) {
    SocketPair link;
    std::vector<Fd> peers(2);
    peers[1] = std::move(link.near);
    Frame got = expect;
    got.length = announced;
    put_frame(link.far, got, "gathered");
    if (hang_up) link.far.reset();
    const mori::Status s = gather_frames(
        peers, expect, [&](int) { return wanted; }, [&](int) { return room.bytes(); },
        Deadline(milliseconds(1000)), milliseconds(1000));
    return s.ok() ? std::string("ok") : s.message();
  };
  // At the limit: the frame is accepted and its payload read until rank 1 goes away.
  CHECK(gather(kGiB, kGiB, true) == "bootstrap: rank 1 closed the connection during allgather");
  CHECK(std::string(reinterpret_cast<char*>(room.bytes()), 8) == "gathered");
  CHECK(gather(kGiB - 1, kGiB, false) ==
        "bootstrap: rank 1 sent 1073741823 bytes for allgather #2 while rank 0 expected "
        "1073741824");
  CHECK(gather(kGiB + 1, kGiB, false) ==
        "bootstrap: rank 1 announced a 1073741825-byte payload for allgather #2, over the 1 GiB "
        "limit");
  // A small frame arrives whole.
  CHECK(gather(8, 8, false) == "ok");
}

TEST_CASE("bootstrap channel: ops 1 to 6 have names, the values around them are numbered") {
  CHECK(op_name(0) == "op 0");
  CHECK(op_name(1) == "join");
  CHECK(op_name(2) == "allgather");
  CHECK(op_name(3) == "alltoall");
  CHECK(op_name(4) == "barrier");
  CHECK(op_name(5) == "broadcast");
  CHECK(op_name(6) == "error");
  CHECK(op_name(7) == "op 7");
  CHECK(op_name(65535) == "op 65535");
}

TEST_CASE("bootstrap channel: a hello and a frame header fill exactly their documented bytes") {
  // Each field a distinct value, so that a field at the wrong offset or width shows.
  uint8_t hello[kHelloBytes + 1];
  hello[kHelloBytes] = 0xee;  // past the end: never written
  encode_hello(Hello{kHelloMagic, 0x0201, 0x06050403, 0x0a090807, 0x1211100f0e0d0c0bull}, hello);
  const uint8_t hello_bytes[kHelloBytes] = {0x48, 0x45, 0x4c, 0x4f, 0x01, 0x02, 0,    0,
                                            0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a,
                                            0x0b, 0x0c, 0x0d, 0x0e, 0x0f, 0x10, 0x11, 0x12};
  CHECK(std::memcmp(hello, hello_bytes, kHelloBytes) == 0);
  CHECK(hello[kHelloBytes] == 0xee);
  const Hello h = decode_hello(hello);
  CHECK(h.magic == kHelloMagic);
  CHECK(h.version == 0x0201);
  CHECK(h.rank == 0x06050403u);
  CHECK(h.size == 0x0a090807u);
  CHECK(h.nonce == 0x1211100f0e0d0c0bull);

  uint8_t frame[kFrameBytes + 1];
  frame[kFrameBytes] = 0xee;
  encode_frame(Frame{0x0201, 0x06050403, 0x0e0d0c0b0a090807ull, 0x1211100f, 0x1a19181716151413ull},
               frame);
  const uint8_t frame_bytes[kFrameBytes] = {0x01, 0x02, 0,    0,    0x03, 0x04, 0x05, 0x06,
                                            0x07, 0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e,
                                            0x0f, 0x10, 0x11, 0x12, 0,    0,    0,    0,
                                            0x13, 0x14, 0x15, 0x16, 0x17, 0x18, 0x19, 0x1a};
  CHECK(std::memcmp(frame, frame_bytes, kFrameBytes) == 0);
  CHECK(frame[kFrameBytes] == 0xee);
  const Frame f = decode_frame(frame);
  CHECK(f.op == 0x0201);
  CHECK(f.seq == 0x06050403u);
  CHECK(f.block == 0x0e0d0c0b0a090807ull);
  CHECK(f.root == 0x1211100fu);
  CHECK(f.length == 0x1a19181716151413ull);
}
