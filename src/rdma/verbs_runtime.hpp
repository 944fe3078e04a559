// The runtime's RdmaNetwork over ibverbs devices (VerbsNetwork), for both backends: the backend
// says how the GPU reaches host-side queue memory (map_to_device).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "rdma/verbs_network.hpp"
#include "runtime/rdma_network.hpp"

namespace mori::rdma {

// Collective. Without devices: ok, *out null, *no_devices true. `gpu_pci_address` is this PE's
// GPU ("0000:c1:00.0"), to choose the RDMA device nearest it (VerbsConfig::gpu_pci_address); the
// host backend has no GPU and leaves it empty.
Status open_verbs_rdma(runtime::Runtime& rt, const std::vector<bool>& needs_rdma,
                       MapToDevice map_to_device, UnmapFromDevice unmap_from_device,
                       std::unique_ptr<runtime::RdmaNetwork>* out, bool* no_devices,
                       const std::string& gpu_pci_address = "");

}  // namespace mori::rdma
