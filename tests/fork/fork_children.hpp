// Runs one child process per rank for multi-process tests without MPI. A child runs `body(rank)`
// and reports through a pipe what it returned: empty for success, else a reason (often a Status
// message the test compares exactly). Every child is reaped before run_children returns; one still
// running at the limit is killed with SIGKILL.
#pragma once

#include <doctest/doctest.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <exception>
#include <functional>
#include <string>
#include <vector>

// Fails a child (a body of run_children, with `rank` in scope) with a message naming the check and
// the runtime's last error.
#define PE_CHECK(cond)                                                                      \
  do {                                                                                      \
    if (!(cond))                                                                            \
      return "rank " + std::to_string(rank) + ": " #cond " failed: " + shmem::last_error(); \
  } while (0)

namespace mori::test {

struct ChildOutcome {
  int rank = -1;
  int exit_code = -1;  // when the child exited
  int signal = 0;      // when a signal ended it
  bool timed_out = false;
  std::string text;  // what body returned
};

struct ChildRun {
  std::vector<ChildOutcome> children;
  std::chrono::milliseconds elapsed{0};
};

inline ChildRun run_children(const std::vector<int>& ranks,
                             const std::function<std::string(int rank)>& body,
                             std::chrono::milliseconds limit = std::chrono::seconds(10)) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  struct Child {
    pid_t pid;
    int pipe;
    bool reaped = false;
  };
  ChildRun run;
  std::vector<Child> live;
  for (int rank : ranks) {
    // One pipe per child, made just before its fork, so that no other child holds its write end and
    // its EOF comes when it exits.
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) break;
    const pid_t pid = fork();
    if (pid == 0) {
      close(fds[0]);
      std::string text;
      int code = 0;
      try {
        text = body(rank);
        code = text.empty() ? 0 : 1;
      } catch (const std::exception& e) {
        text = std::string("exception: ") + e.what();
        code = 2;
      }
      for (size_t at = 0; at < text.size();) {
        const ssize_t n = write(fds[1], text.data() + at, text.size() - at);
        if (n <= 0) break;
        at += static_cast<size_t>(n);
      }
      _exit(code);  // never return into the test framework's copy in this process
    }
    close(fds[1]);
    if (pid < 0) {
      close(fds[0]);
      break;
    }
    fcntl(fds[0], F_SETFL, O_NONBLOCK);
    live.push_back({pid, fds[0]});
    ChildOutcome outcome;
    outcome.rank = rank;
    run.children.push_back(outcome);
  }
  auto drain = [&](size_t i) {
    char buf[4096];
    for (ssize_t n; (n = read(live[i].pipe, buf, sizeof(buf))) > 0;)
      run.children[i].text.append(buf, n);
  };
  size_t left = live.size();
  while (left > 0) {
    const bool over = Clock::now() - start > limit;
    for (size_t i = 0; i < live.size(); ++i) {
      if (live[i].reaped) continue;
      drain(i);
      if (over) {
        kill(live[i].pid, SIGKILL);
        run.children[i].timed_out = true;
      }
      int status = 0;
      if (waitpid(live[i].pid, &status, over ? 0 : WNOHANG) != live[i].pid) continue;
      drain(i);
      close(live[i].pipe);
      live[i].reaped = true;
      --left;
      if (WIFEXITED(status)) run.children[i].exit_code = WEXITSTATUS(status);
      if (WIFSIGNALED(status)) run.children[i].signal = WTERMSIG(status);
    }
    if (left > 0) poll(nullptr, 0, 2);
  }
  run.elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
  return run;
}

inline ChildRun run_ranks(int n, const std::function<std::string(int rank)>& body,
                          std::chrono::milliseconds limit = std::chrono::seconds(10)) {
  std::vector<int> ranks;
  for (int r = 0; r < n; ++r) ranks.push_back(r);
  return run_children(ranks, body, limit);
}

// Every child in `ranks` reported success (or, with a text, exactly that text), exited and was not
// killed for running past its limit.
inline void expect_children(const ChildRun& run, const std::vector<int>& ranks,
                            const std::string& text = "") {
  for (const auto& child : run.children) {
    for (int r : ranks) {
      if (child.rank != r) continue;
      CAPTURE(child.rank);
      CHECK(child.text == text);
      CHECK_FALSE(child.timed_out);
      CHECK(child.exit_code == (text.empty() ? 0 : 1));
    }
  }
}

}  // namespace mori::test
