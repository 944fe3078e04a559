// Fuzzes the TCP bootstrap's receivers of peer messages (src/bootstrap/wire.hpp and
// tcp_channel.hpp): the hello and frame decoders, and the two functions that read frames from a
// socket and check them, recv_answer (a rank reading rank 0's answer or error report) and
// gather_frames (rank 0 reading rank 1's frame). The bytes arrive through a socketpair whose
// sending end is closed, so a short message is a closed connection, never a wait.
//
// Input: byte 0 is the mode, then (modes 1, 2) the frame the receiver expects (op, seq, block,
// root and a payload length below 4 KiB), then the bytes the peer sends.
//   mode 0: decode_hello / decode_frame / op_name on the bytes; decoding then encoding must give
//           the bytes back, apart from the reserved ones;
//   mode 1: recv_answer;   mode 2: gather_frames.
// A receiver that succeeds must have been sent exactly the expected frame and payload; one that
// fails must say why in one printable line (an error report's text is the peer's, and arbitrary).
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <vector>

#include "bootstrap/tcp_channel.hpp"
#include "bootstrap/wire.hpp"
#include "fuzz_common.hpp"

namespace {

namespace bs = mori::bootstrap;
using mori::fuzz::Input;

constexpr size_t kMaxSent = 16 << 10;  // well inside a socketpair's buffer
// Long enough that a receiver which did wait for it is unmistakable: libFuzzer's -timeout (10 s in
// run_fuzzer.cmake) reports it first, and a loaded machine cannot fake it.
constexpr std::chrono::milliseconds kTimeout{30000};

void check_codecs(Input& in) {
  uint8_t bytes[bs::kFrameBytes];
  in.take_bytes(bytes, sizeof(bytes));
  static_assert(bs::kFrameBytes >= bs::kHelloBytes);

  const bs::Hello hello = bs::decode_hello(bytes);
  uint8_t again[bs::kFrameBytes] = {};
  bs::encode_hello(hello, again);
  for (size_t i = 0; i < bs::kHelloBytes; ++i) {
    const bool reserved = i == 6 || i == 7;
    FUZZ_CHECK(again[i] == (reserved ? 0 : bytes[i]));
  }

  const bs::Frame frame = bs::decode_frame(bytes);
  bs::encode_frame(frame, again);
  for (size_t i = 0; i < bs::kFrameBytes; ++i) {
    const bool reserved = i == 2 || i == 3 || (i >= 20 && i < 24);
    FUZZ_CHECK(again[i] == (reserved ? 0 : bytes[i]));
  }
  FUZZ_CHECK(!bs::op_name(frame.op).empty());
}

// A connected pair: what `sent` holds is queued on `receiver`, and the sender is closed.
bool deliver(std::string_view sent, bs::Fd* receiver) {
  int fds[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds) != 0) return false;
  receiver->reset(fds[0]);
  bs::Fd sender(fds[1]);
  size_t done = 0;
  while (done < sent.size()) {
    const ssize_t n = send(sender.get(), sent.data() + done, sent.size() - done, MSG_NOSIGNAL);
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

// Whether the peer sent exactly `expect` and its payload.
bool sent_exactly(std::string_view sent, const bs::Frame& expect) {
  if (sent.size() < bs::kFrameBytes) return false;
  const bs::Frame got = bs::decode_frame(reinterpret_cast<const uint8_t*>(sent.data()));
  return got.op == expect.op && got.seq == expect.seq && got.block == expect.block &&
         got.root == expect.root && got.length == expect.length &&
         sent.size() >= bs::kFrameBytes + expect.length;
}

void check_receiver(Input& in, bool gather) {
  bs::Frame expect;
  expect.op = in.take<uint16_t>();
  expect.seq = in.take<uint32_t>();
  expect.block = in.take<uint64_t>();
  expect.root = in.take<uint32_t>();
  expect.length = in.take<uint16_t>() & 0xfff;
  const std::string_view sent = in.rest().substr(0, kMaxSent);
  bs::Fd receiver;
  if (!deliver(sent, &receiver)) return;

  std::vector<uint8_t> payload(expect.length);
  const auto start = std::chrono::steady_clock::now();
  const bs::Deadline deadline(kTimeout);
  mori::Status s;
  if (gather) {
    std::vector<bs::Fd> peers(2);
    peers[1] = std::move(receiver);
    s = bs::gather_frames(
        peers, expect, [&](int) { return expect.length; }, [&](int) { return payload.data(); },
        deadline, kTimeout);
  } else {
    s = bs::recv_answer(receiver.get(), 1, expect, payload.data(), deadline, kTimeout);
  }
  if (s.ok()) {
    FUZZ_CHECK(sent_exactly(sent, expect));
    FUZZ_CHECK(expect.length == 0 ||
               std::memcmp(payload.data(), sent.data() + bs::kFrameBytes, expect.length) == 0);
  } else {
    FUZZ_CHECK(mori::fuzz::one_printable_line(s.message()));
  }
  // The peer has closed its end: whatever it sent, the receiver never waits for its deadline.
  FUZZ_CHECK(std::chrono::steady_clock::now() - start < kTimeout / 2);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Input in(data, size);
  switch (in.take<uint8_t>() % 3) {
    case 0:
      check_codecs(in);
      break;
    case 1:
      check_receiver(in, /*gather=*/false);
      break;
    default:
      check_receiver(in, /*gather=*/true);
      break;
  }
  return 0;
}
