// PeLocks: one lock per PE, shared by every process of a job, for the software NIC's atomics on
// registered buffers. Such a buffer is private memory of its process; the NIC reaches it with
// process_vm_readv / process_vm_writev, which are not atomic, so each PE's NIC performs the read,
// the operation and the write while holding the target PE's lock. RDMA atomics are then atomic
// with respect to each other, which is what a NIC promises (ibv_query_device(3): IBV_ATOMIC_HCA,
// "atomicity is guaranteed between QPs on this device only"), not with respect to the target's own
// loads and stores.
//
// The locks are open-file-description record locks (fcntl(2), F_OFD_SETLKW), byte `pe` of one file
// that every process of the job opens: the kernel releases them when a holder dies, so a crashed
// PE cannot leave a lock taken.
#pragma once

#include <string>

#include "mori/status.hpp"

namespace mori::softnic {

class PeLocks {
 public:
  PeLocks() = default;
  ~PeLocks();
  PeLocks(const PeLocks&) = delete;
  PeLocks& operator=(const PeLocks&) = delete;

  // Opens (creating it if needed) the lock file at `path`, shared by the job's processes.
  Status open(const std::string& path);
  // Blocks until this process holds PE `pe`'s lock; false with *why on a failure of fcntl.
  bool lock(int pe, std::string* why) const;
  void unlock(int pe) const;

 private:
  int fd_ = -1;
};

}  // namespace mori::softnic
