#include "bootstrap/tcp_join.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <string>

#include "bootstrap/tcp_channel.hpp"
#include "bootstrap/wire.hpp"

namespace mori::bootstrap {
namespace {

// A connection whose hello has not fully arrived.
struct Pending {
  Fd fd;
  uint8_t hello[kHelloBytes];
  size_t got = 0;
};

// What a complete hello means for the join.
struct Verdict {
  enum Kind { kAccept, kRefuse, kAbort } kind;  // refuse the connection, or fail the whole job
  std::string reason;
};

Verdict judge(const Hello& hello, const UniqueIdFields& id, int size,
              const std::vector<Fd>& peers) {
  if (hello.magic != kHelloMagic) {
    return {Verdict::kRefuse, "bootstrap: rank 0 was sent something that is not a mori hello"};
  }
  if (hello.version != kWireVersion) {
    return {Verdict::kRefuse, "bootstrap: wire version " + std::to_string(hello.version) +
                                  " cannot join rank 0, which speaks " +
                                  std::to_string(kWireVersion)};
  }
  // Only a hello with the job's nonce may fail the job: anything else is a stray or stale process.
  if (hello.nonce != id.nonce) {
    return {Verdict::kRefuse, "stale unique ID: nonce does not match the listener's"};
  }
  const std::string who = "bootstrap: rank " + std::to_string(hello.rank);
  if (hello.size != static_cast<uint32_t>(size)) {
    return {Verdict::kAbort, who + " joined with size " + std::to_string(hello.size) +
                                 ", but rank 0 has size " + std::to_string(size)};
  }
  if (hello.rank == 0 || hello.rank >= static_cast<uint32_t>(size)) {
    return {Verdict::kAbort, "bootstrap: a process joined as rank " + std::to_string(hello.rank) +
                                 ", but rank 0 expects ranks 1-" + std::to_string(size - 1)};
  }
  if (peers[hello.rank].valid()) {
    return {Verdict::kAbort,
            "bootstrap: two processes joined as rank " + std::to_string(hello.rank)};
  }
  return {Verdict::kAccept, ""};
}

}  // namespace

Status join_as_root(const Fd& listener, const UniqueIdFields& id, int size,
                    std::chrono::milliseconds timeout, std::vector<Fd>* peers_out) {
  const Deadline deadline(timeout);
  std::vector<Fd> peers(size);
  std::vector<std::unique_ptr<Pending>> pending;
  // A flood of stray connections must not exhaust descriptors; the oldest stray is dropped first.
  const size_t max_pending = 2 * static_cast<size_t>(size) + 16;
  int joined = 0, refused = 0;
  std::string last_refusal;
  auto abort = [&](const std::string& reason) {
    for (auto& peer : peers) {
      if (peer.valid()) send_error(peer.get(), 0, reason);
    }
    return Status::error(reason);
  };
  std::vector<pollfd> fds;
  while (joined < size - 1) {
    fds.assign(1, pollfd{listener.get(), POLLIN, 0});
    for (const auto& p : pending) fds.push_back({p->fd.get(), POLLIN, 0});
    const int ready = poll_until(fds.data(), fds.size(), deadline);
    if (ready < 0)
      return abort(std::string("bootstrap: rank 0 poll failed: ") + std::strerror(errno));
    if (ready == 0) {
      std::vector<int> missing;
      for (int r = 1; r < size; ++r) {
        if (!peers[r].valid()) missing.push_back(r);
      }
      std::string text = "bootstrap timed out after " + std::to_string(timeout.count()) +
                         " ms waiting for rank(s) " + format_ranks(missing) + " to join";
      if (refused == 1) text += " (refused 1 connection: " + last_refusal + ")";
      if (refused > 1) {
        text += " (refused " + std::to_string(refused) + " connections, the last: " + last_refusal +
                ")";
      }
      return abort(text);
    }
    // Hellos first: accepting appends to `pending`, which the pollfds index.
    for (size_t i = fds.size() - 1; i >= 1; --i) {
      if (fds[i].revents == 0) continue;
      Pending& p = *pending[i - 1];
      IoResult io = recv_some(p.fd.get(), p.hello + p.got, kHelloBytes - p.got, &p.got);
      if (!io.ok()) {
        pending.erase(pending.begin() + static_cast<ptrdiff_t>(i - 1));
        continue;
      }
      if (p.got < kHelloBytes) continue;
      const Hello hello = decode_hello(p.hello);
      Verdict verdict = judge(hello, id, size, peers);
      if (verdict.kind == Verdict::kAccept) {
        peers[hello.rank] = std::move(p.fd);
        ++joined;
      } else {
        send_error(p.fd.get(), 0, verdict.reason);
        if (verdict.kind == Verdict::kAbort) return abort(verdict.reason);
        ++refused;
        last_refusal = verdict.reason;
      }
      pending.erase(pending.begin() + static_cast<ptrdiff_t>(i - 1));
    }
    if (fds[0].revents != 0) {
      for (;;) {
        Fd fd;
        IoResult io = accept_one(listener.get(), &fd);
        if (!io.ok()) {
          return abort(std::string("bootstrap: rank 0 cannot accept connections: ") +
                       std::strerror(io.error));
        }
        if (!fd.valid()) break;
        if (pending.size() >= max_pending) pending.erase(pending.begin());
        pending.push_back(std::make_unique<Pending>());
        pending.back()->fd = std::move(fd);
      }
    }
  }
  for (int r = 1; r < size; ++r) {
    const Frame ok{static_cast<uint16_t>(Op::kJoin), 0, 0, 0, 0};
    if (IoResult io = send_frame(peers[r].get(), ok, nullptr, deadline); !io.ok()) {
      return abort(io.kind == Io::kTimeout
                       ? "bootstrap timed out after " + std::to_string(timeout.count()) +
                             " ms telling rank " + std::to_string(r) + " that all ranks joined"
                       : "bootstrap: rank " + std::to_string(r) +
                             " closed the connection during join");
    }
  }
  *peers_out = std::move(peers);
  return {};
}

namespace {

// Errors worth another connect: rank 0 may not be listening yet, or the network may still be coming
// up.
bool worth_retrying(int error) {
  return error == ECONNREFUSED || error == ETIMEDOUT || error == ECONNRESET || error == EAGAIN ||
         error == EHOSTUNREACH || error == ENETUNREACH || error == ECONNABORTED;
}

}  // namespace

Status join_as_leaf(const UniqueIdFields& id, int rank, int size, std::chrono::milliseconds timeout,
                    Fd* root) {
  const Deadline deadline(timeout);
  const SocketAddress address = to_socket_address(id);
  const std::string where = " rank 0 at " + format_endpoint(id);
  Fd fd;
  int last_error = 0;
  auto pause = std::chrono::milliseconds(10);
  for (;;) {
    IoResult io = connect_once(address, deadline, &fd);
    if (io.ok()) break;
    if (io.kind == Io::kError) last_error = io.error;
    if (io.kind == Io::kError && !worth_retrying(io.error)) {
      return Status::error("bootstrap: rank " + std::to_string(rank) + " cannot connect to" +
                           where + ": " + std::strerror(io.error));
    }
    if (io.kind == Io::kTimeout || deadline.expired()) {
      std::string text = "bootstrap: timed out after " + std::to_string(timeout.count()) +
                         " ms connecting to" + where;
      if (last_error == ECONNREFUSED) {
        text += " (connection refused: rank 0 is not listening yet, or the unique ID is stale)";
      } else if (last_error != 0) {
        text += std::string(" (") + std::strerror(last_error) + ")";
      }
      return Status::error(text);
    }
    ::poll(nullptr, 0, std::min<int>(static_cast<int>(pause.count()), deadline.poll_ms()));
    pause = std::min(pause * 2, std::chrono::milliseconds(200));
  }
  uint8_t hello[kHelloBytes];
  encode_hello(Hello{kHelloMagic, kWireVersion, static_cast<uint32_t>(rank),
                     static_cast<uint32_t>(size), id.nonce},
               hello);
  const Deadline answer_deadline = deadline.later_by(answer_grace(timeout));
  IoResult sent = send_all(fd.get(), hello, sizeof(hello), deadline);
  // Even when the send failed, rank 0 may have left its reason on the socket; recv_answer reads it.
  const Frame ok{static_cast<uint16_t>(Op::kJoin), 0, 0, 0, 0};
  Status answer =
      recv_answer(fd.get(), rank, ok, nullptr, sent.ok() ? answer_deadline : deadline, timeout);
  if (!answer.ok()) return answer;
  *root = std::move(fd);
  return {};
}

}  // namespace mori::bootstrap
