// RDMA between PEs as the runtime sees it: the queue pairs to the PEs reached over RDMA, exported
// to the device as RdmaEndpoints, and the memory keys. One implementation per way of reaching a
// NIC: the software NIC of the host backend (backend/host/softnic_network.cpp) and ibverbs devices
// (rdma/verbs_network.cpp, through the backend).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "mori/state/gpu_states.hpp"
#include "mori/state/rdma_endpoint.hpp"
#include "mori/status.hpp"

namespace mori::runtime {

struct Runtime;

// What this PE's NIC's atomics are atomic with respect to: ibv_query_device(3)'s atomic_cap, with
// its values (IBV_ATOMIC_NONE, IBV_ATOMIC_HCA, IBV_ATOMIC_GLOB). HCA: other atomics of that NIC
// only; GLOB: also the CPU's and the GPU's (PCIe AtomicOps); NONE: no atomics.
enum class AtomicCap : uint8_t { kNone = 0, kHca = 1, kGlob = 2 };

class RdmaNetwork {
 public:
  virtual ~RdmaNetwork() = default;
  virtual state::Nic nic() const = 0;
  virtual AtomicCap atomic_cap() const = 0;
  // The device's name, for the init log.
  virtual std::string device_name() const = 0;
  // Device-visible array of n_pes * num_qp_per_pe endpoints (entry pe * num_qp_per_pe + qp),
  // zeroed for the PEs not reached over RDMA.
  virtual state::RdmaEndpoint* device_endpoints() const = 0;
  virtual uint32_t heap_lkey() const = 0;
  // Each PE's rkey of its heap.
  virtual const std::vector<uint32_t>& heap_rkeys() const = 0;
  // Collective: this PE registers [base, base + bytes); `remote_bases` is every PE's base of its
  // copy. Returns this PE's lkey and every PE's rkey.
  virtual Status register_region(uint64_t base, uint64_t bytes,
                                 const std::vector<uint64_t>& remote_bases, uint32_t* lkey,
                                 std::vector<uint32_t>* rkeys) = 0;
  virtual Status deregister_region(uint64_t base) = 0;
  // Waits until everything posted so far has been executed (finalize, before memory goes away).
  virtual Status drain() = 0;
};

// Opens the RDMA network of this backend for the PEs with needs_rdma[pe]. Collective. When the
// machine has no RDMA devices it returns ok with *out null and *no_devices true.
Status open_rdma_network(Runtime& rt, const std::vector<bool>& needs_rdma,
                         std::unique_ptr<RdmaNetwork>* out, bool* no_devices);

}  // namespace mori::runtime
