// Which of the selected RDMA devices a PE uses: the one nearest its GPU in the PCI tree
// (docs/rdma-hardware.md, "Device selection"). Taking device local_rank % count instead puts
// GPUs on NICs behind another PCIe switch whenever the NICs' order differs from the GPUs' (every
// rank on one NIC, cross-rail traffic). The distance follows NCCL's topology search in spirit:
// the number of components of the two devices' sysfs paths (/sys/devices/pci0000:00/0000:00:01.0/
// ...) that they do not share, so that a NIC under the GPU's own switch is nearer than one that
// is reached through the root complex. Reads sysfs only (no libibverbs), under a root that tests
// replace with a fake tree.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace mori::rdma {

// "c1:00.0" or "0000:C1:00.0" as sysfs spells it, "0000:c1:00.0": lowercase, with a domain of at
// least four digits. "" when `address` is not [domain:]bus:device.function in hex.
std::string normalize_pci_address(std::string_view address);

struct NicChoice {
  size_t index = 0;          // into the device names
  bool by_topology = false;  // false: local_rank % count (or the only device)
  // One line for a log. By topology: "mlx5_1 is nearest to GPU 0000:c1:00.0 (distance 4, 1 of
  // 2 devices that near)". One device: "mlx5_0 is the only device selected". Otherwise the
  // cause, then "; using local_rank % 2".
  std::string reason;
};

// The device of `names` (the selected RDMA devices, in order) for the GPU at `gpu_pci_address`:
// the nearest by PCI path, local_rank % (the number of nearest) among equally near ones. A device
// resolves through <sysfs_root>/class/infiniband/<name>/device, the GPU through
// <sysfs_root>/bus/pci/devices/<address>. When the GPU's address is empty or malformed, or a path
// does not resolve, the choice is local_rank % names.size(). One device is chosen without sysfs.
// `names` must not be empty.
NicChoice choose_nic(const std::string& sysfs_root, const std::string& gpu_pci_address,
                     const std::vector<std::string>& names, int local_rank);

}  // namespace mori::rdma
