#include "runtime/exit_line.hpp"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/id_listener.hpp"
#include "bootstrap/socket.hpp"
#include "bootstrap/unique_id.hpp"
#include "runtime/host_only.hpp"

namespace mori::runtime {

namespace {

using bootstrap::Deadline;
using std::chrono::milliseconds;

// What a line carries: the receiver's nonce (so that a stray connection to the port cannot end
// the process) and the status.
struct ExitNotice {
  uint64_t nonce;
  int32_t status;
  int32_t reserved;
};

}  // namespace

void exit_all_local(int status) {
  std::fflush(nullptr);
  _exit(status);
}

class ExitLine {
 public:
  ExitLine(bootstrap::Fd listener, bootstrap::Fd wake_read, bootstrap::Fd wake_write,
           uint64_t nonce)
      : listener_(std::move(listener)),
        wake_read_(std::move(wake_read)),
        wake_write_(std::move(wake_write)),
        nonce_(nonce) {
    watcher_ = std::thread([this] { watch(); });
  }
  // Finalize: the wake pipe ends the watcher's wait at once.
  ~ExitLine() {
    const char stop = 0;
    (void)!::write(wake_write_.get(), &stop, 1);
    watcher_.join();
  }
  std::vector<shmem::UniqueId> peers;  // every PE's line, as a unique ID (address, port, nonce)

 private:
  // Waits without a deadline, unlike the bootstrap: a line is quiet for the whole job.
  void watch() {
    for (;;) {
      pollfd p[2] = {{listener_.get(), POLLIN, 0}, {wake_read_.get(), POLLIN, 0}};
      if (::poll(p, 2, -1) < 0) continue;  // EINTR
      if (p[1].revents != 0) return;
      bootstrap::Fd peer;
      if (!bootstrap::accept_one(listener_.get(), &peer).ok() || !peer.valid()) continue;
      ExitNotice notice{};
      const Deadline deadline(milliseconds(1000));
      if (bootstrap::recv_all(peer.get(), &notice, sizeof notice, deadline).ok() &&
          notice.nonce == nonce_)
        exit_all_local(notice.status);
    }
  }

  bootstrap::Fd listener_, wake_read_, wake_write_;
  uint64_t nonce_;
  std::thread watcher_;
};

void ExitLineClose::operator()(ExitLine* line) const { delete line; }

Status open_exit_line(Runtime& rt) {
  // A unique ID's listener is what a line needs: the right interface, a free port, a nonce.
  shmem::UniqueId mine{};
  MORI_TRY(bootstrap::new_unique_id(&mine));
  bootstrap::UniqueIdFields fields;
  MORI_TRY(bootstrap::decode_unique_id(mine, &fields));
  bootstrap::Fd listener = bootstrap::claim_listener(fields.nonce);
  if (!listener.valid()) return Status::error("exit line: the listener of its ID is gone");
  int wake[2];
  if (::pipe2(wake, O_CLOEXEC) != 0)
    return Status::error(std::string("exit line: pipe2: ") + std::strerror(errno));
  bootstrap::Fd wake_read(wake[0]), wake_write(wake[1]);
  std::vector<shmem::UniqueId> all(static_cast<size_t>(rt.n_pes));
  MORI_TRY(rt.boot->allgather(&mine, all.data(), sizeof mine));
  rt.exit_line.reset(
      new ExitLine(std::move(listener), std::move(wake_read), std::move(wake_write), fields.nonce));
  rt.exit_line->peers = std::move(all);
  return {};
}

void exit_all(Runtime& rt, int status) {
  if (rt.exit_line) {
    for (int pe = 0; pe < rt.n_pes; ++pe) {
      if (pe == rt.rank) continue;
      bootstrap::UniqueIdFields where;
      if (!bootstrap::decode_unique_id(rt.exit_line->peers[pe], &where).ok()) continue;
      // A PE that is gone, or stuck without its watcher, costs at most this.
      const Deadline deadline(milliseconds(2000));
      bootstrap::Fd fd;
      if (!bootstrap::connect_once(bootstrap::to_socket_address(where), deadline, &fd).ok())
        continue;
      const ExitNotice notice{where.nonce, status, 0};
      (void)bootstrap::send_all(fd.get(), &notice, sizeof notice, deadline);
    }
  }
  exit_all_local(status);
}

}  // namespace mori::runtime

namespace mori::shmem {

void global_exit(int status) {
  runtime::host_only("global_exit");
  // No lock: the exit must not wait for another thread's call (a barrier that never ends).
  runtime::Runtime* rt = runtime::current();
  if (!rt) {
    std::fprintf(stderr, "mori: global_exit: not initialised: only this process exits\n");
    runtime::exit_all_local(status);
  }
  std::fflush(nullptr);
  if (rt->abort_job) rt->abort_job(status);
  runtime::exit_all(*rt, status);
}

}  // namespace mori::shmem
