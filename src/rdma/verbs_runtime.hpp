// The runtime's RdmaNetwork over ibverbs devices (VerbsNetwork), for both backends: the backend
// says how the GPU reaches host-side queue memory (map_to_device).
#pragma once

#include <memory>
#include <vector>

#include "rdma/verbs_network.hpp"
#include "runtime/rdma_network.hpp"

namespace mori::rdma {

// Collective. Without devices: ok, *out null, *no_devices true.
Status open_verbs_rdma(runtime::Runtime& rt, const std::vector<bool>& needs_rdma,
                       MapToDevice map_to_device, UnmapFromDevice unmap_from_device,
                       std::unique_ptr<runtime::RdmaNetwork>* out, bool* no_devices);

}  // namespace mori::rdma
