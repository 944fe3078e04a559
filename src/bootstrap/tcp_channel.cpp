#include "bootstrap/tcp_channel.hpp"

#include <algorithm>
#include <cstring>

namespace mori::bootstrap {

std::string format_ranks(const std::vector<int>& ranks) {
  std::string text;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (!text.empty()) text += ", ";
    text += std::to_string(ranks[i]);
    if (j > i) text += "-" + std::to_string(ranks[j]);
    i = j + 1;
  }
  return text;
}

std::chrono::milliseconds answer_grace(std::chrono::milliseconds timeout) {
  using std::chrono::milliseconds;
  return std::clamp(timeout / 4, milliseconds(50), milliseconds(5000));
}

IoResult send_frame(int fd, const Frame& frame, const void* payload, const Deadline& deadline) {
  uint8_t header[kFrameBytes];
  encode_frame(frame, header);
  if (IoResult r = send_all(fd, header, sizeof(header), deadline); !r.ok()) return r;
  return send_all(fd, payload, frame.length, deadline);
}

void send_error(int fd, uint32_t seq, const std::string& reason) {
  const std::string text = reason.substr(0, kMaxErrorBytes);
  Frame frame{static_cast<uint16_t>(Op::kError), seq, 0, 0, text.size()};
  (void)send_frame(fd, frame, text.data(), Deadline(std::chrono::milliseconds(200)));
}

namespace {

std::string describe(uint16_t op, uint32_t seq) { return op_name(op) + " #" + std::to_string(seq); }

// The first check that `got` (from `sender`) fails against `expect` (held by `receiver`), or "".
std::string mismatch(const Frame& got, const Frame& expect, int sender, int receiver) {
  const std::string who = "bootstrap: rank " + std::to_string(sender);
  const std::string them = " while rank " + std::to_string(receiver);
  const std::string what = describe(expect.op, expect.seq);
  if (got.op != expect.op || got.seq != expect.seq) {
    return who + " sent " + describe(got.op, got.seq) + them + " expected " + what;
  }
  if (got.block != expect.block) {
    return who + " called " + what + " with " + std::to_string(got.block) + " bytes" + them +
           " has " + std::to_string(expect.block);
  }
  if (got.root != expect.root) {
    return who + " called " + what + " with root " + std::to_string(got.root) + them +
           " has root " + std::to_string(expect.root);
  }
  if (got.length > kMaxPayloadBytes) {
    return who + " announced a " + std::to_string(got.length) + "-byte payload for " + what +
           ", over the 1 GiB limit";
  }
  if (got.length != expect.length) {
    return who + " sent " + std::to_string(got.length) + " bytes for " + what + them +
           " expected " + std::to_string(expect.length);
  }
  return "";
}

std::string io_failure(const IoResult& r, int peer, const std::string& op) {
  const std::string who = "rank " + std::to_string(peer);
  if (r.kind == Io::kClosed) {
    return peer == 0 ? "bootstrap: lost connection to rank 0 during " + op
                     : "bootstrap: " + who + " closed the connection during " + op;
  }
  return "bootstrap: talking to " + who + " during " + op + " failed: " + std::strerror(r.error);
}

// Rank 0's reason, kept to one printable line whatever arrived.
std::string printable(std::string text) {
  for (char& c : text) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  }
  return text.empty() ? "bootstrap: rank 0 reported a failure without a reason" : text;
}

}  // namespace

Status recv_answer(int fd, int rank, const Frame& expect, void* payload, const Deadline& deadline,
                   std::chrono::milliseconds timeout) {
  const std::string op = op_name(expect.op);
  auto failed = [&](const IoResult& r) {
    if (r.kind == Io::kTimeout) {
      return Status::error("bootstrap: timed out after " + std::to_string(timeout.count()) +
                           " ms (+" + std::to_string(answer_grace(timeout).count()) +
                           " ms grace) in " + op + " waiting for rank 0");
    }
    return Status::error(io_failure(r, 0, op));
  };
  uint8_t header[kFrameBytes];
  if (IoResult r = recv_all(fd, header, sizeof(header), deadline); !r.ok()) return failed(r);
  const Frame got = decode_frame(header);
  if (got.op == static_cast<uint16_t>(Op::kError)) {
    if (got.length > kMaxErrorBytes) {
      return Status::error("bootstrap: rank 0 sent a " + std::to_string(got.length) +
                           "-byte error report, over the " + std::to_string(kMaxErrorBytes) +
                           "-byte limit");
    }
    std::string text(got.length, '\0');
    if (IoResult r = recv_all(fd, text.data(), text.size(), deadline); !r.ok()) return failed(r);
    return Status::error(printable(std::move(text)));
  }
  if (std::string why = mismatch(got, expect, 0, rank); !why.empty()) return Status::error(why);
  if (IoResult r = recv_all(fd, payload, got.length, deadline); !r.ok()) return failed(r);
  return {};
}

Status gather_frames(const std::vector<Fd>& peers, const Frame& expect,
                     const std::function<uint64_t(int)>& length_of,
                     const std::function<uint8_t*(int)>& dest, const Deadline& deadline,
                     std::chrono::milliseconds timeout) {
  struct Incoming {
    uint8_t header[kFrameBytes];
    size_t got = 0;  // bytes of header, then of header + payload
    uint64_t length = 0;
    bool done = false;
  };
  const int size = static_cast<int>(peers.size());
  const std::string op = op_name(expect.op);
  std::vector<Incoming> in(size);
  std::vector<pollfd> fds;
  std::vector<int> waiting;  // the rank behind each pollfd
  for (;;) {
    fds.clear();
    waiting.clear();
    for (int r = 1; r < size; ++r) {
      if (in[r].done) continue;
      fds.push_back({peers[r].get(), POLLIN, 0});
      waiting.push_back(r);
    }
    if (waiting.empty()) return {};
    const int ready = poll_until(fds.data(), fds.size(), deadline);
    if (ready < 0) {
      return Status::error("bootstrap: poll failed during " + op + ": " + std::strerror(errno));
    }
    if (ready == 0) {
      return Status::error("bootstrap: timed out after " + std::to_string(timeout.count()) +
                           " ms in " + op + " waiting for rank" +
                           (waiting.size() > 1 ? "s " : " ") + format_ranks(waiting));
    }
    for (size_t i = 0; i < fds.size(); ++i) {
      if (fds[i].revents == 0) continue;
      const int r = waiting[i];
      Incoming& at = in[r];
      // Drain what is available; a frame may arrive in pieces across several polls.
      for (;;) {
        const size_t before = at.got;
        IoResult io;
        if (at.got < kFrameBytes) {
          io = recv_some(fds[i].fd, at.header + at.got, kFrameBytes - at.got, &at.got);
        } else {
          const size_t offset = at.got - kFrameBytes;
          io = recv_some(fds[i].fd, dest(r) + offset, at.length - offset, &at.got);
        }
        if (!io.ok()) return Status::error(io_failure(io, r, op));
        if (before < kFrameBytes && at.got == kFrameBytes) {
          Frame want = expect;
          want.length = length_of(r);
          const Frame got = decode_frame(at.header);
          if (std::string why = mismatch(got, want, r, 0); !why.empty()) return Status::error(why);
          at.length = got.length;
        }
        if (at.got >= kFrameBytes && at.got == kFrameBytes + at.length) {
          at.done = true;
          break;
        }
        if (at.got == before) break;
      }
    }
  }
}

}  // namespace mori::bootstrap
