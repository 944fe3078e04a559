// The abort report (runtime/abort_report.hpp): a child process installs it over a device-error
// record, then calls abort() as ROCm's queue callback does after a device trap. The child must die
// of SIGABRT, and its stderr must hold the decoded record (reviews/2026-12-01-bringup.md, B3).
#include <doctest/doctest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>

#include "runtime/abort_report.hpp"

using mori::runtime::install_abort_report;
using mori::runtime::remove_abort_report;
using mori::state::DeviceError;
using mori::state::DeviceErrorCode;

namespace {

struct Death {
  std::string err;  // the child's stderr
  int signal = 0;   // what ended it, 0 if it exited
};

// In a child: doctest's checks would throw into a copy of the test run.
void must(bool ok) {
  if (!ok) _exit(4);
}

// Runs `body` in a child with stderr on a pipe; `body` ends by aborting.
Death run_child(const std::function<void()>& body) {
  int fds[2];
  REQUIRE(pipe(fds) == 0);
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    close(fds[0]);
    dup2(fds[1], STDERR_FILENO);
    signal(SIGABRT, SIG_DFL);  // not doctest's crash report: what a process starts with
    body();
    _exit(3);  // body did not abort
  }
  close(fds[1]);
  Death d;
  char buffer[512];
  for (ssize_t n; (n = read(fds[0], buffer, sizeof buffer)) > 0;) d.err.append(buffer, n);
  close(fds[0]);
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  if (WIFSIGNALED(status)) d.signal = WTERMSIG(status);
  return d;
}

// A release GPU build's record of a timeout: the fields only.
DeviceError* timeout_record() {
  static DeviceError r;
  r = DeviceError{.code = static_cast<uint32_t>(DeviceErrorCode::kTimeout),
                  .pe = 1,
                  .address = 0x7f3a00001000,
                  .observed = 5,
                  .queue = {.qp = 0x107, .posted = 12, .completed = 10, .consumed = 3},
                  .message = {}};
  return &r;
}

constexpr const char* kTimeoutLine =
    "mori: device error: timeout (code 5, PE 1, address 0x7f3a00001000, observed 5; qp 0x107: "
    "posted 12, completed 10, cq consumed 3)\n";

void previous_handler(int) {
  static constexpr char kText[] = "previous handler\n";
  (void)!write(STDERR_FILENO, kText, sizeof kText - 1);
}

// A child that runs `setup` and aborts must die of SIGABRT having written `err`.
void check_abort(const std::function<void()>& setup, const std::string& err) {
  const Death d = run_child([&] {
    setup();
    std::abort();
  });
  CHECK(d.err == err);
  CHECK(d.signal == SIGABRT);  // also when a handler returns: glibc's abort() ends the process
}

}  // namespace

TEST_CASE("abort report: abort() prints the decoded record, and the process dies of SIGABRT") {
  check_abort([] { must(install_abort_report(timeout_record()).ok()); }, kTimeoutLine);
}

TEST_CASE("abort report: a record with a message prints the message, written after install") {
  check_abort(
      [] {
        DeviceError* r = timeout_record();
        r->code = 0;  // nothing yet at install; the device writes the record later
        must(install_abort_report(r).ok());
        r->code = static_cast<uint32_t>(DeviceErrorCode::kBadPe);
        std::strcpy(r->message, "put_nbi: PE 9 out of range [0, 2)");
      },
      "mori: device error: PE out of range: put_nbi: PE 9 out of range [0, 2)\n");
}

TEST_CASE("abort report: chained to the handler found, which runs after the report") {
  check_abort(
      [] {
        signal(SIGABRT, previous_handler);
        must(install_abort_report(timeout_record()).ok());
      },
      std::string(kTimeoutLine) + "previous handler\n");
}

TEST_CASE("abort report: an empty record prints nothing") {
  check_abort(
      [] {
        DeviceError* r = timeout_record();
        r->code = 0;
        must(install_abort_report(r).ok());
      },
      "");
}

TEST_CASE("abort report: removed, it prints nothing and the handler found is back") {
  check_abort(
      [] {
        signal(SIGABRT, previous_handler);
        must(install_abort_report(timeout_record()).ok());
        remove_abort_report();
        struct sigaction now{};
        sigaction(SIGABRT, nullptr, &now);
        must(now.sa_handler == previous_handler);
      },
      "previous handler\n");
}
