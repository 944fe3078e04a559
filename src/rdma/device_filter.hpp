// MORI_RDMA_DEVICES: which RDMA devices (and ports) the runtime may use. The syntax follows the
// NCCL_IB_HCA / UCX_NET_DEVICES convention (docs/rdma-hardware.md):
//   ""  (or unset)          every device, port 1
//   mlx5_0,mlx5_1           only these devices (an include list)
//   mlx5_0:1,mlx5_1:2       ... each on the port given (default 1)
//   ^mlx5_2 | ^mlx5_2,mlx5_3  every device but these (the caret applies to the whole list)
// Names match ibv_get_device_name() exactly. Malformed text is refused with an error that quotes
// the offending item. Pure functions: nothing here touches libibverbs.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "mori/status.hpp"

namespace mori::rdma {

struct DeviceFilter {
  enum class Mode { kAll, kInclude, kExclude };
  struct Entry {
    std::string name;
    int port = 1;  // 1..255; always 1 in an exclude list, which names devices only
  };
  Mode mode = Mode::kAll;
  std::vector<Entry> entries;  // in the order written; empty for kAll
  std::string text;            // as given, for error messages
};

struct SelectedDevice {
  std::string name;
  int port = 1;
  bool operator==(const SelectedDevice&) const = default;
};

// Parses `text`. Errors (each starts "MORI_RDMA_DEVICES: "): an empty item, whitespace, a caret
// alone or anywhere but at the start, an item without a name, a port that is not 1..255, a port in
// an exclude list, a device named twice. *out is written only on success.
Status parse_device_filter(std::string_view text, DeviceFilter* out);

// The devices of `available` (names in ibv_get_device_list order) that `filter` keeps, in the
// order of `available`. Errors: an include list naming a device that does not exist
// ("MORI_RDMA_DEVICES names mlx5_9, which does not exist (devices: mlx5_0, mlx5_1)", or
// "(no RDMA devices)"), and a filter that keeps no device of a non-empty `available`. Naming an
// absent device in an exclude list is not an error. *out is written only on success.
Status select_devices(const std::vector<std::string>& available, const DeviceFilter& filter,
                      std::vector<SelectedDevice>* out);

}  // namespace mori::rdma
