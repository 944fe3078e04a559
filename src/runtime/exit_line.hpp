// global_exit without MPI: every PE's exit line. At init each PE opens a TCP listener (on the
// unique ID's interface: loopback, or MORI_SOCKET_IFNAME's address) and a watcher thread that
// waits on it, and the PEs allgather the listeners' addresses. global_exit on one PE sends its
// status down every other PE's line and exits; each watcher that receives it exits its own
// process with that status, whatever the process's other threads are doing. MPI jobs use
// MPI_Abort instead (Runtime::abort_job), which the launcher understands.
#pragma once

#include "mori/status.hpp"
#include "runtime/runtime.hpp"

namespace mori::runtime {

// Collective over rt.boot: opens this PE's line and learns every other PE's (rt.exit_line).
Status open_exit_line(Runtime& rt);

// Sends `status` to every other PE's line, each within a short deadline (a PE already gone is
// skipped), flushes stdio and ends this process with `status`.
[[noreturn]] void exit_all(Runtime& rt, int status);
// Flushes stdio and ends this process alone with `status` (_exit: no destructor runs, since other
// threads may be inside mori).
[[noreturn]] void exit_all_local(int status);

}  // namespace mori::runtime
