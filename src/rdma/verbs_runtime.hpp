// The runtime's RdmaNetwork over ibverbs devices (VerbsNetwork), for both backends: the backend
// says how the GPU reaches host-side queue memory (map_to_device).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "rdma/verbs_network.hpp"
#include "runtime/rdma_network.hpp"

namespace mori::rdma {

// What the backend contributes: how the GPU reaches host-side queue memory, where the queues
// should live, how GPU memory is exported for registration, and which GPU this PE drives. The host
// backend leaves them empty (the identity mapping, plain registration, local_rank % count for the
// device).
struct GpuHooks {
  MapToDevice map_to_device;          // VerbsConfig::map_to_device
  UnmapFromDevice unmap_from_device;  // VerbsConfig::unmap_from_device
  ExportDmabuf export_dmabuf;         // VerbsConfig::export_dmabuf
  QueueMemory queue_memory;           // VerbsConfig::queue_memory: device memory for the queues
  std::string gpu_pci_address;        // "0000:c1:00.0" (VerbsConfig::gpu_pci_address)
};

// Collective. Without devices: ok, *out null, *no_devices true.
Status open_verbs_rdma(runtime::Runtime& rt, const std::vector<bool>& needs_rdma, GpuHooks hooks,
                       std::unique_ptr<runtime::RdmaNetwork>* out, bool* no_devices);

}  // namespace mori::rdma
