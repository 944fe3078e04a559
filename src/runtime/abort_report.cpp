#include "runtime/abort_report.hpp"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <string>

#include "runtime/device_error.hpp"

namespace mori::runtime {

namespace {

std::atomic<const state::DeviceError*> watched{nullptr};
std::atomic<bool> reported{false};
// The disposition found at install. Written only while the handler is not reachable.
struct sigaction previous{};
// The handler is reachable: installed, or left in a chain by remove_abort_report.
bool in_chain = false;

void write_all(const char* text, size_t length) {
  while (length > 0) {
    const ssize_t n = write(STDERR_FILENO, text, length);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    text += n;
    length -= static_cast<size_t>(n);
  }
}

void on_abort(int signal, siginfo_t* info, void* context) {
  const int saved_errno = errno;
  const state::DeviceError* record = watched.load();
  if (record && record->code != 0 && !reported.exchange(true)) {
    static constexpr char kPrefix[] = "mori: device error: ";
    char line[sizeof kPrefix + kDeviceErrorTextBytes];
    std::memcpy(line, kPrefix, sizeof kPrefix - 1);
    size_t length = sizeof kPrefix - 1;
    length += format_device_error(*record, line + length, sizeof line - length - 1);
    line[length++] = '\n';
    write_all(line, length);
  }
  errno = saved_errno;
  if (previous.sa_flags & SA_SIGINFO) {
    if (previous.sa_sigaction) previous.sa_sigaction(signal, info, context);
    return;
  }
  if (previous.sa_handler == SIG_IGN) return;  // abort() still ends the process
  if (previous.sa_handler == SIG_DFL) {
    // Pending until this handler returns (SIGABRT is blocked meanwhile), then the default action:
    // the process dies of SIGABRT, whether abort() or kill sent it.
    sigaction(SIGABRT, &previous, nullptr);
    raise(SIGABRT);
    return;
  }
  previous.sa_handler(signal);
}

}  // namespace

Status install_abort_report(const state::DeviceError* record) {
  reported.store(false);
  watched.store(record);
  if (in_chain) return {};
  struct sigaction ours{};
  ours.sa_sigaction = on_abort;
  ours.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&ours.sa_mask);
  if (sigaction(SIGABRT, &ours, &previous) != 0) {
    watched.store(nullptr);
    return Status::error(std::string("sigaction(SIGABRT) failed: ") + std::strerror(errno));
  }
  in_chain = true;
  return {};
}

void remove_abort_report() {
  watched.store(nullptr);
  if (!in_chain) return;
  struct sigaction now{};
  if (sigaction(SIGABRT, nullptr, &now) != 0) return;
  const bool ours = (now.sa_flags & SA_SIGINFO) && now.sa_sigaction == on_abort;
  if (ours && sigaction(SIGABRT, &previous, nullptr) == 0) in_chain = false;
}

}  // namespace mori::runtime
