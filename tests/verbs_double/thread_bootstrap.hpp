// A bootstrap for N PEs run as N threads of one process (tests only): each collective meets at a
// barrier over shared slots. A PE that does not arrive within the timeout makes the others fail,
// so a broken test fails instead of hanging.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "bootstrap/bootstrap.hpp"

namespace verbs_double {

// What the N PEs share. Create one, then one ThreadBootstrap per PE thread.
class ThreadHub {
 public:
  explicit ThreadHub(int n, std::chrono::milliseconds timeout = std::chrono::seconds(10))
      : n_(n), timeout_(timeout), slots_(n) {}

 private:
  friend class ThreadBootstrap;
  // Waits until all N have arrived; false after the timeout.
  bool meet();

  const int n_;
  const std::chrono::milliseconds timeout_;
  std::mutex mutex_;
  std::condition_variable cv_;
  int arrived_ = 0;
  uint64_t generation_ = 0;
  std::vector<std::vector<uint8_t>> slots_;  // [rank]: what it contributes to this collective
};

class ThreadBootstrap : public mori::bootstrap::Bootstrap {
 public:
  ThreadBootstrap(ThreadHub& hub, int rank) : hub_(&hub), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return hub_->n_; }
  mori::Status allgather(const void* send, void* recv, size_t bytes) override;
  mori::Status alltoall(const void* send, void* recv, size_t bytes) override;
  mori::Status barrier() override;
  mori::Status broadcast(void* buf, size_t bytes, int root) override;
  // Teams are not set up over the double: its tests open the RDMA network only.
  mori::Status split(int, int, std::chrono::milliseconds,
                     std::unique_ptr<mori::bootstrap::Bootstrap>* out) override {
    out->reset();
    return mori::Status::error("verbs double: the thread bootstrap does not split");
  }

 private:
  // Publishes `bytes` of `data` as this rank's slot, meets, lets `read` copy from all slots, and
  // meets again so that no slot is overwritten while another rank reads it.
  template <class Read>
  mori::Status exchange(const void* data, size_t bytes, Read read);

  ThreadHub* hub_;
  int rank_;
};

}  // namespace verbs_double
