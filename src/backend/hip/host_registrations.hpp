// The bookkeeping of the hip backend's host registrations (rdma_network_hip.cpp, map_to_device):
// which page spans are registered for the GPU, and how many users each has. Free of HIP, so that
// it is unit-tested on the host backend (tests/unit/test_hip_seams.cpp).
//
// Doorbell records and UAR pages are shared between queue pairs, so the same page is asked for
// more than once. ROCclr's ihipHostRegister never answers hipErrorHostMemoryAlreadyRegistered: a
// second hipHostRegister of a range makes a second buffer and locks the pages again
// (ROCm/clr rocclr/device/device.cpp, MemObjMap::AddMemObj only logs the duplicate), and one
// hipHostUnregister then leaves a lock behind. So each span is registered once, counted, and
// unregistered when its last user releases it, as ROCm/mori does for UARs
// (src/application/transport/rdma/providers/mlx5/mlx5.cpp, Mlx5RegisterUarHost).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <utility>

#include "mori/status.hpp"

namespace mori::backend {

class HostRegistrations {
 public:
  // Registers the page-aligned span [begin, begin + length) and gives its device address.
  using Register = std::function<Status(uintptr_t begin, size_t length, uintptr_t* device)>;
  using Unregister = std::function<void(uintptr_t begin)>;

  HostRegistrations(Register reg, Unregister unreg)
      : register_(std::move(reg)), unregister_(std::move(unreg)) {}

  // The device address of `host`, whose page span is [begin, begin + length). A span inside a live
  // registration shares it; a span that partly overlaps one is refused (no single registration
  // could serve both).
  Status acquire(uintptr_t begin, size_t length, uintptr_t host, uintptr_t* device);
  // Undoes one acquire of a span holding `host`: the registration goes with its last user.
  Status release(uintptr_t host);
  // Live registrations (tests).
  size_t size() const { return spans_.size(); }

 private:
  struct Span {
    size_t length;
    uintptr_t device;  // the device address of the span's first byte
    int users;
  };
  // The registration holding `address`, or end().
  std::map<uintptr_t, Span>::iterator holding(uintptr_t address);

  Register register_;
  Unregister unregister_;
  std::map<uintptr_t, Span> spans_;  // by first byte; never overlapping
};

}  // namespace mori::backend
