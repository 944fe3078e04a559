// The TCP bootstrap: a star around rank 0. Each collective is one frame from every rank to rank 0
// and one answer back, so rank 0 sees every rank's call and can name the one that is late, dead or
// out of step.
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "bootstrap/bootstrap.hpp"
#include "bootstrap/id_listener.hpp"
#include "bootstrap/tcp_channel.hpp"
#include "bootstrap/tcp_join.hpp"
#include "bootstrap/unique_id.hpp"

namespace mori::bootstrap {
namespace {

using std::chrono::milliseconds;

// One rank alone: every collective is a local copy.
class SoloBootstrap final : public Bootstrap {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  Status allgather(const void* send, void* recv, size_t bytes) override {
    return copy(send, recv, bytes);
  }
  Status alltoall(const void* send, void* recv, size_t bytes) override {
    return copy(send, recv, bytes);
  }
  Status barrier() override { return {}; }
  Status broadcast(void*, size_t, int root) override {
    if (root != 0) {
      return Status::error("bootstrap: broadcast root " + std::to_string(root) +
                           " is out of range for size 1");
    }
    return {};
  }
  Status split(int color, int key, milliseconds timeout, std::unique_ptr<Bootstrap>* out) override {
    return split_over_tcp(*this, color, key, timeout, out);
  }

 private:
  static Status copy(const void* send, void* recv, size_t bytes) {
    if (bytes > 0 && send != recv) std::memmove(recv, send, bytes);
    return {};
  }
};

// What one rank contributes to a collective and what it gets back, as rank 0 moves it.
struct Exchange {
  Frame frame;  // op, seq, block, root; length is what this rank sends
  const void* send = nullptr;
  void* answer = nullptr;  // where this rank's answer lands
  uint64_t answer_length = 0;
};

class TcpBootstrap final : public Bootstrap {
 public:
  TcpBootstrap(int rank, int size, milliseconds timeout, std::vector<Fd> peers, Fd root)
      : rank_(rank),
        size_(size),
        timeout_(timeout),
        peers_(std::move(peers)),
        root_(std::move(root)) {}

  int rank() const override { return rank_; }
  int size() const override { return size_; }

  Status allgather(const void* send, void* recv, size_t bytes) override {
    MORI_TRY(check_total(Op::kAllgather, bytes));
    Exchange x = start(Op::kAllgather, bytes, 0, bytes);
    x.send = send;
    x.answer = recv;
    x.answer_length = total(bytes);
    if (rank_ != 0) return as_leaf(x);
    auto* out = static_cast<uint8_t*>(recv);
    if (bytes > 0) std::memmove(out, send, bytes);
    return as_root(
        x, [&](int) { return uint64_t{bytes}; }, [&](int r) { return out + r * bytes; },
        [&](int, std::vector<uint8_t>*) { return static_cast<const void*>(out); },
        [&](int) { return x.answer_length; });
  }

  Status alltoall(const void* send, void* recv, size_t bytes) override {
    MORI_TRY(check_total(Op::kAlltoall, bytes));
    const uint64_t row = total(bytes);
    Exchange x = start(Op::kAlltoall, bytes, 0, row);
    x.send = send;
    x.answer = recv;
    x.answer_length = row;
    if (rank_ != 0) return as_leaf(x);
    // Row r holds rank r's send buffer; rank j's answer is column j.
    std::vector<uint8_t> rows;
    try {
      rows.resize(size_ * row);
    } catch (const std::bad_alloc&) {
      return fail_all(Status::error("bootstrap: rank 0 has no memory for the " +
                                    std::to_string(size_ * row) + " bytes of alltoall #" +
                                    std::to_string(x.frame.seq)));
    }
    if (row > 0) std::memcpy(rows.data(), send, row);
    auto column = [&](int j, uint8_t* into) {
      if (bytes == 0) return;
      for (int r = 0; r < size_; ++r) {
        std::memcpy(into + r * bytes, &rows[r * row + j * bytes], bytes);
      }
    };
    auto answer = [&](int j, std::vector<uint8_t>* scratch) {
      scratch->resize(row);
      column(j, scratch->data());
      return static_cast<const void*>(scratch->data());
    };
    MORI_TRY(as_root(
        x, [&](int) { return row; }, [&](int r) { return rows.data() + r * row; }, answer,
        [&](int) { return row; }));
    column(0, static_cast<uint8_t*>(recv));
    return {};
  }

  Status barrier() override {
    Exchange x = start(Op::kBarrier, 0, 0, 0);
    if (rank_ != 0) return as_leaf(x);
    return as_root(
        x, [](int) { return uint64_t{0}; }, [](int) { return static_cast<uint8_t*>(nullptr); },
        [](int, std::vector<uint8_t>*) { return static_cast<const void*>(nullptr); },
        [](int) { return uint64_t{0}; });
  }

  Status broadcast(void* buf, size_t bytes, int root) override {
    if (root < 0 || root >= size_) {
      return Status::error("bootstrap: broadcast root " + std::to_string(root) +
                           " is out of range for size " + std::to_string(size_));
    }
    if (bytes > kMaxPayloadBytes) return too_big(Op::kBroadcast, bytes);
    Exchange x = start(Op::kBroadcast, bytes, root, rank_ == root ? bytes : 0);
    x.send = buf;
    x.answer = buf;
    x.answer_length = rank_ == root ? 0 : bytes;
    if (rank_ != 0) return as_leaf(x);
    auto* data = static_cast<uint8_t*>(buf);
    return as_root(
        x, [&](int r) { return r == root ? uint64_t{bytes} : 0; },
        [&](int r) { return r == root ? data : nullptr; },
        [&](int, std::vector<uint8_t>*) { return static_cast<const void*>(data); },
        [&](int r) { return r == root ? uint64_t{0} : bytes; });
  }
  Status split(int color, int key, milliseconds timeout, std::unique_ptr<Bootstrap>* out) override {
    return split_over_tcp(*this, color, key, timeout, out);
  }

 private:
  uint64_t total(size_t bytes) const { return static_cast<uint64_t>(bytes) * size_; }

  Status too_big(Op op, uint64_t bytes) const {
    return Status::error("bootstrap: " + op_name(op) + " of " + std::to_string(bytes) +
                         " bytes exceeds the 1 GiB message limit");
  }

  // Every rank makes the same check, so an oversized call fails everywhere before any traffic.
  Status check_total(Op op, size_t bytes) const {
    if (bytes > kMaxPayloadBytes / static_cast<uint64_t>(size_)) {
      return too_big(op, static_cast<uint64_t>(bytes) * size_);
    }
    return {};
  }

  Exchange start(Op op, uint64_t block, int root, uint64_t send_length) {
    Exchange x;
    x.frame =
        Frame{static_cast<uint16_t>(op), ++seq_, block, static_cast<uint32_t>(root), send_length};
    return x;
  }

  Status as_leaf(const Exchange& x) {
    if (!broken_.ok()) return broken_;
    const Deadline deadline(timeout_);
    IoResult sent = send_frame(root_.get(), x.frame, x.send, deadline);
    if (sent.kind == Io::kTimeout) {
      broken_ = Status::error("bootstrap: timed out after " + std::to_string(timeout_.count()) +
                              " ms in " + op_name(x.frame.op) + " sending to rank 0");
      return broken_;
    }
    Frame expect = x.frame;
    expect.length = x.answer_length;
    // A failed send may mean that rank 0 gave up first and left its reason on the socket: read it
    // anyway.
    const Deadline answer_deadline =
        sent.ok() ? deadline.later_by(answer_grace(timeout_)) : Deadline(milliseconds(100));
    Status s = recv_answer(root_.get(), rank_, expect, x.answer, answer_deadline, timeout_);
    if (!s.ok()) broken_ = s;
    return s;
  }

  template <class LengthOf, class Dest, class Answer, class AnswerLength>
  Status as_root(const Exchange& x, LengthOf length_of, Dest dest, Answer answer,
                 AnswerLength answer_length) {
    if (!broken_.ok()) return broken_;
    const Deadline deadline(timeout_);
    Status s = gather_frames(peers_, x.frame, length_of, dest, deadline, timeout_);
    std::vector<uint8_t> scratch;
    for (int r = 1; r < size_ && s.ok(); ++r) {
      Frame reply = x.frame;
      reply.length = answer_length(r);
      const void* payload = reply.length > 0 ? answer(r, &scratch) : nullptr;
      IoResult io = send_frame(peers_[r].get(), reply, payload, deadline);
      if (io.kind == Io::kTimeout) {
        s = Status::error("bootstrap: timed out after " + std::to_string(timeout_.count()) +
                          " ms in " + op_name(x.frame.op) + " sending to rank " +
                          std::to_string(r));
      } else if (!io.ok()) {
        s = Status::error(io.kind == Io::kClosed
                              ? "bootstrap: rank " + std::to_string(r) +
                                    " closed the connection during " + op_name(x.frame.op)
                              : "bootstrap: sending to rank " + std::to_string(r) +
                                    " failed: " + std::strerror(io.error));
      }
    }
    return s.ok() ? s : fail_all(s);
  }

  // Rank 0 tells every rank why it gave up, then repeats that reason for every later call.
  Status fail_all(Status s) {
    for (int r = 1; r < size_; ++r) send_error(peers_[r].get(), seq_, s.message());
    broken_ = s;
    return s;
  }

  int rank_, size_;
  milliseconds timeout_;
  std::vector<Fd> peers_;  // rank 0: the connection to each rank (index 0 unused)
  Fd root_;                // other ranks: the connection to rank 0
  uint32_t seq_ = 0;
  // After a failure the streams are out of step; every later call repeats the failure.
  Status broken_;
};

constexpr int kMaxRanks = 1 << 20;

}  // namespace

std::unique_ptr<Bootstrap> make_solo_bootstrap() { return std::make_unique<SoloBootstrap>(); }

Status make_tcp_bootstrap(const shmem::UniqueId& id, int rank, int size, milliseconds timeout,
                          std::unique_ptr<Bootstrap>* out) {
  if (size < 1 || size > kMaxRanks) {
    return Status::error("bootstrap: size " + std::to_string(size) + " is not in 1-" +
                         std::to_string(kMaxRanks));
  }
  if (rank < 0 || rank >= size) {
    return Status::error("bootstrap: rank " + std::to_string(rank) + " is out of range for size " +
                         std::to_string(size));
  }
  if (timeout.count() <= 0) {
    return Status::error("bootstrap: the timeout must be positive, not " +
                         std::to_string(timeout.count()) + " ms");
  }
  UniqueIdFields fields;
  MORI_TRY(decode_unique_id(id, &fields));
  if (rank != 0) {
    Fd root;
    MORI_TRY(join_as_leaf(fields, rank, size, timeout, &root));
    *out = std::make_unique<TcpBootstrap>(rank, size, timeout, std::vector<Fd>(), std::move(root));
    return {};
  }
  // Rank 0 uses the listener its process opened for this ID, or else opens one where the ID says.
  Fd listener = claim_listener(fields.nonce);
  if (size == 1) {
    *out = make_solo_bootstrap();
    return {};
  }
  if (!listener.valid()) {
    uint16_t port = 0;
    if (Status s = listen_on(fields, &listener, &port); !s.ok()) {
      return Status::error(
          s.message() +
          " (rank 0's process did not make this unique ID, so it listens where the "
          "ID says; the process that made the ID may still hold that port)");
    }
  }
  std::vector<Fd> peers;
  MORI_TRY(join_as_root(listener, fields, size, timeout, &peers));
  *out = std::make_unique<TcpBootstrap>(0, size, timeout, std::move(peers), Fd());
  return {};
}

}  // namespace mori::bootstrap
