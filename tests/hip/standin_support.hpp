// What the stand-in tests share: a child process whose stderr the test reads after it ends, and a
// module's globalGpuStates read back.
#pragma once

#include <doctest/doctest.h>
#include <hip/hip_runtime_api.h>
#include <sys/wait.h>
#include <unistd.h>

#include <functional>
#include <string>

#include "mori/state/gpu_states.hpp"

namespace mori::test {

struct ChildEnd {
  int status = 0;    // waitpid's
  std::string text;  // everything it wrote to stderr
};

// Runs `body` in a forked child with stderr to a pipe; the child exits 0 if body returns.
inline ChildEnd run_reading_stderr(const std::function<void()>& body) {
  int err[2];
  REQUIRE(pipe(err) == 0);
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(err[1], 2);
    body();
    _exit(0);
  }
  close(err[1]);
  ChildEnd end;
  char buf[512];
  for (ssize_t n; (n = read(err[0], buf, sizeof buf)) > 0;) end.text.append(buf, n);
  close(err[0]);
  REQUIRE(waitpid(pid, &end.status, 0) == pid);
  return end;
}

// The module's globalGpuStates, or an error naming the failed step.
inline std::string read_module_states(hipModule_t module, state::GpuStates* out) {
  hipDeviceptr_t p = nullptr;
  size_t bytes = 0;
  if (hipModuleGetGlobal(&p, &bytes, module, "_ZN4mori5shmem15globalGpuStatesE") != hipSuccess)
    return "hipModuleGetGlobal(globalGpuStates) failed";
  if (bytes != sizeof(state::GpuStates))
    return "globalGpuStates is " + std::to_string(bytes) + " bytes";
  if (hipMemcpyDtoH(out, p, sizeof *out) != hipSuccess) return "hipMemcpyDtoH failed";
  return "";
}

}  // namespace mori::test
