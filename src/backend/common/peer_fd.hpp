// A descriptor of another process of this node, duplicated into this one: pidfd_open, then
// pidfd_getfd (Linux 5.6; the same ptrace access check as the process's own /proc entries, which
// processes of one user pass). Both backends' same-node PEs hand memory over this way.
#pragma once

#include <sys/types.h>

#include <string>

#include "mori/status.hpp"

namespace mori::backend {

// `*out` is this process's copy of descriptor `fd` of process `pid`, to close when done. The error
// starts with `what` and names the failing call and errno.
Status dup_peer_fd(pid_t pid, int fd, const std::string& what, int* out);

}  // namespace mori::backend
