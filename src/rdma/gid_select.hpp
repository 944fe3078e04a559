// Which GID of a RoCE port addresses this PE's queue pairs when MORI_IB_GID_INDEX is not set
// (docs/rdma-hardware.md, "Port and addressing"). The port's GID table is scanned, as ROCm/mori
// and NCCL do, instead of guessing an index: a RoCE v2 entry is routable over IP, a RoCE v1 entry
// is not, and where the v2 entries sit depends on the kernel and the addresses configured.
// Pure functions: verbs_device.cpp fills the table from libibverbs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mori/status.hpp"

namespace mori::rdma {

// The values of rdma-core's enum ibv_gid_type (libibverbs/verbs.h); verbs_device.cpp checks that
// they agree.
enum class GidType : uint32_t { kIb = 0, kRoceV1 = 1, kRoceV2 = 2 };

// One entry of a port's GID table (rdma-core libibverbs/verbs.h: struct ibv_gid_entry, without
// the port and the netdev).
struct GidEntry {
  int index = 0;
  uint8_t gid[16] = {};
  GidType type = GidType::kIb;
};

// The GID as an IPv6 address ("fe80::1", "::ffff:10.0.0.5"), or "empty" when it is all zeros.
std::string format_gid(const uint8_t (&gid)[16]);
// "RoCE v1", "RoCE v2" or "IB".
const char* gid_type_name(GidType type);

// The index of the entry to use on a RoCE port. Empty (all-zero) entries are skipped; only RoCE v2
// entries qualify. Among them an IPv4-mapped address (::ffff:a.b.c.d) comes first, then a global
// IPv6 address, then a link-local one (fe80::/10); the lowest index breaks ties. Without a RoCE v2
// entry, an error that lists the table's non-empty entries and says to set MORI_IB_GID_INDEX:
//   rdma: mlx5_0 port 1 has no RoCE v2 GID (its table: 0 fe80::1 RoCE v1, 2 ::ffff:10.0.0.5
//   RoCE v1): set MORI_IB_GID_INDEX
// or, with no non-empty entry, "(its table is empty)". `where` names the port ("mlx5_0 port 1").
Status select_roce_gid(const std::vector<GidEntry>& table, const std::string& where, int* index);

}  // namespace mori::rdma
