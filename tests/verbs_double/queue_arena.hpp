// A test arena for VerbsConfig::queue_memory (B5): host memory posing as the device's, for the
// verbs double's tests (test_queue_memory.cpp) and the emulated kernel's
// (tests/emulated_kernel/test_queue_memory.cpp).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "rdma/verbs_network.hpp"

namespace verbs_double {

// Host memory posing as the device's: a bump allocator that honours the alignment asked, zeroes
// (the hook's contract), and records every request and whether it was freed.
class Arena {
 public:
  static constexpr size_t kBytes = size_t{4} << 20;
  Arena() : base_(static_cast<uint8_t*>(std::aligned_alloc(4096, kBytes))) {}
  ~Arena() { std::free(base_); }

  struct Request {
    size_t bytes, align;
    bool operator==(const Request&) const = default;
    bool operator<(const Request& o) const {
      return bytes != o.bytes ? bytes < o.bytes : align < o.align;
    }
  };

  mori::rdma::QueueMemory hook(bool give_nothing = false) {
    mori::rdma::QueueMemory q;
    q.alloc = [this, give_nothing](size_t bytes, size_t align) -> void* {
      std::lock_guard<std::mutex> lock(mutex_);
      requests_.push_back({bytes, align});
      if (give_nothing) return nullptr;
      const size_t at = (used_ + align - 1) / align * align;
      if (at + bytes > kBytes) return nullptr;
      used_ = at + bytes;
      std::memset(base_ + at, 0, bytes);
      ++live_;
      return base_ + at;
    };
    q.free = [this](void* p) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (contains(p, 1)) --live_;
    };
    return q;
  }
  bool contains(const void* p, size_t bytes) const {
    const auto* q = static_cast<const uint8_t*>(p);
    return q >= base_ && q + bytes <= base_ + kBytes;
  }
  bool overlaps(const void* p, size_t bytes) const {
    const auto* q = static_cast<const uint8_t*>(p);
    return q < base_ + kBytes && q + bytes > base_;
  }
  // "begin-end" in hex, for MORI_EMU_UNPINNABLE.
  std::string range() const {
    char text[64];
    std::snprintf(text, sizeof text, "%llx-%llx", (unsigned long long)base_,
                  (unsigned long long)(base_ + kBytes));
    return text;
  }
  std::vector<Request> requests() const {
    std::vector<Request> r = requests_;
    std::sort(r.begin(), r.end());
    return r;
  }
  int live() const { return live_; }

 private:
  uint8_t* base_;
  std::mutex mutex_;
  size_t used_ = 0;
  int live_ = 0;
  std::vector<Request> requests_;
};

}  // namespace verbs_double
