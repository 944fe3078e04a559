// A bootstrap whose collectives are Python calls: the runtime's setup traffic goes through whatever
// the caller already talks to every PE with (mori.shmem's torch.distributed process group).
#pragma once

#include <pybind11/pybind11.h>

#include "bootstrap/bootstrap.hpp"

namespace mori::python {

// `channel` provides, collectively over `size` ranks of which this one is `rank`:
//   allgather(data: bytes) -> bytes        every rank's data, in rank order
//   broadcast(data: bytes, root) -> bytes  root's data
//   barrier() -> None
// alltoall is an allgather of the whole send buffers: only setup traffic goes this way.
// Every call takes the GIL, so the runtime may call in with it released. A Python exception
// becomes a failed Status carrying its message.
class PyBootstrap final : public bootstrap::Bootstrap {
 public:
  PyBootstrap(pybind11::object channel, int rank, int size);
  ~PyBootstrap() override;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  Status allgather(const void* send, void* recv, size_t bytes) override;
  Status alltoall(const void* send, void* recv, size_t bytes) override;
  Status barrier() override;
  Status broadcast(void* buf, size_t bytes, int root) override;
  // Teams' groups: new TCP bootstraps whose unique IDs travel over the process group.
  Status split(int color, int key, std::chrono::milliseconds timeout,
               std::unique_ptr<bootstrap::Bootstrap>* out) override {
    return bootstrap::split_over_tcp(*this, color, key, timeout, out);
  }

 private:
  pybind11::object channel_;
  int rank_, size_;
};

}  // namespace mori::python
