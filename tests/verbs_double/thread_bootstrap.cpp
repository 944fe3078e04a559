// ThreadBootstrap: the collectives of bootstrap.hpp over ThreadHub's shared slots.
#include "thread_bootstrap.hpp"

#include <cstring>

namespace verbs_double {

bool ThreadHub::meet() {
  std::unique_lock<std::mutex> lock(mutex_);
  const uint64_t generation = generation_;
  if (++arrived_ == n_) {
    arrived_ = 0;
    ++generation_;
    cv_.notify_all();
    return true;
  }
  return cv_.wait_for(lock, timeout_, [&] { return generation_ != generation; });
}

template <class Read>
mori::Status ThreadBootstrap::exchange(const void* data, size_t bytes, Read read) {
  const uint8_t* p = static_cast<const uint8_t*>(data);
  hub_->slots_[rank_].assign(p, p + bytes);
  if (!hub_->meet())
    return mori::Status::error("thread bootstrap: rank " + std::to_string(rank_) +
                               " timed out waiting for the other PEs");
  read(hub_->slots_);
  if (!hub_->meet())
    return mori::Status::error("thread bootstrap: rank " + std::to_string(rank_) +
                               " timed out after reading");
  return {};
}

mori::Status ThreadBootstrap::allgather(const void* send, void* recv, size_t bytes) {
  return exchange(send, bytes, [&](const std::vector<std::vector<uint8_t>>& slots) {
    for (size_t r = 0; r < slots.size(); ++r)
      std::memcpy(static_cast<uint8_t*>(recv) + r * bytes, slots[r].data(), bytes);
  });
}

mori::Status ThreadBootstrap::alltoall(const void* send, void* recv, size_t bytes) {
  return exchange(send, bytes * hub_->n_, [&](const std::vector<std::vector<uint8_t>>& slots) {
    for (size_t r = 0; r < slots.size(); ++r)
      std::memcpy(static_cast<uint8_t*>(recv) + r * bytes, slots[r].data() + rank_ * bytes, bytes);
  });
}

mori::Status ThreadBootstrap::barrier() {
  return exchange(nullptr, 0, [](const std::vector<std::vector<uint8_t>>&) {});
}

mori::Status ThreadBootstrap::broadcast(void* buf, size_t bytes, int root) {
  return exchange(buf, rank_ == root ? bytes : 0,
                  [&](const std::vector<std::vector<uint8_t>>& slots) {
                    if (rank_ != root) std::memcpy(buf, slots[root].data(), bytes);
                  });
}

}  // namespace verbs_double
