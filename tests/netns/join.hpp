// Nodes as network namespaces (scripts/netns.sh): how an MPI rank becomes a PE of its node. Shared
// by the MPI tests' main (tests/mpi/mpi_main.cpp) and the shmem benchmarks (bench/shmem_bench.cpp);
// the unique-ID init that goes with it is uid_init.hpp (it needs mori's headers, this one does not:
// the tests' mori_mpi_main library is compiled with doctest and MPI only).
//
// With MORI_TEST_NETNS=<prefix>, rank r becomes local PE r % ppn of node r / ppn, ppn being
// MORI_TEST_PES_PER_NODE (default 2). Its network namespace is /run/netns/<prefix><node>; its own
// UTS namespace gets the hostname <prefix><node>, since mori tells nodes apart by hostname and
// boot_id (src/runtime/node.cpp) and boot_id is the same for every namespace. Then eth0 carries the
// bootstrap (MORI_SOCKET_IFNAME) and nic<local> is the software NIC (MORI_SOFTNIC_IFNAME), and
// MORI_TEST_UID_BOOTSTRAP=1 tells uid_init.hpp to bootstrap by unique ID. Call it after MPI_Init:
// MPI's shared-memory transport (btl vader) and its launcher's connections were opened before and
// are untouched, since a socket stays in the namespace it was created in.
#pragma once

#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

namespace mori::netns {

// The node prefix, or null when MORI_TEST_NETNS is unset or empty (nothing to join).
inline const char* prefix() {
  const char* text = std::getenv("MORI_TEST_NETNS");
  return text != nullptr && *text != 0 ? text : nullptr;
}

// Puts this process (its calling thread and the threads it creates afterwards) into rank's node.
// True when it did, or when there is nothing to do; false with *why otherwise.
inline bool join(int rank, std::string* why) {
  const char* pfx = prefix();
  if (pfx == nullptr) return true;
  int ppn = 2;
  if (const char* text = std::getenv("MORI_TEST_PES_PER_NODE"); text != nullptr && *text != 0) {
    char* end = nullptr;
    const long value = std::strtol(text, &end, 10);
    if (*end != 0 || value < 1 || value > 250) {
      *why = std::string("MORI_TEST_PES_PER_NODE=\"") + text + "\" is not 1..250";
      return false;
    }
    ppn = static_cast<int>(value);
  }
  const std::string node = pfx + std::to_string(rank / ppn);
  const std::string path = "/run/netns/" + node;
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    *why = "open " + path + ": " + std::strerror(errno) + " (scripts/netns.sh up " + pfx +
           " <nodes> " + std::to_string(ppn) + " first)";
    return false;
  }
  if (setns(fd, CLONE_NEWNET) != 0) {
    const int error = errno;
    close(fd);
    *why = "setns " + path + ": " + std::strerror(error);
    return false;
  }
  close(fd);
  if (unshare(CLONE_NEWUTS) != 0) {
    *why = std::string("unshare(CLONE_NEWUTS): ") + std::strerror(errno);
    return false;
  }
  if (sethostname(node.c_str(), node.size()) != 0) {
    *why = "sethostname " + node + ": " + std::strerror(errno);
    return false;
  }
  const std::string nic = "nic" + std::to_string(rank % ppn);
  setenv("MORI_SOCKET_IFNAME", "eth0", 1);
  setenv("MORI_SOFTNIC_IFNAME", nic.c_str(), 1);
  setenv("MORI_TEST_UID_BOOTSTRAP", "1", 1);
  return true;
}

}  // namespace mori::netns
