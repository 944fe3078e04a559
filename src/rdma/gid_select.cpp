// Choosing a RoCE v2 GID from a port's table (gid_select.hpp).
#include "rdma/gid_select.hpp"

#include <arpa/inet.h>

#include <algorithm>

namespace mori::rdma {
namespace {

bool is_empty(const uint8_t (&gid)[16]) {
  return std::all_of(std::begin(gid), std::end(gid), [](uint8_t b) { return b == 0; });
}

// Lower is better: 0 an IPv4-mapped address (::ffff:0:0/96), 1 a global IPv6 address, 2 a
// link-local one (fe80::/10).
int address_rank(const uint8_t (&gid)[16]) {
  const bool v4_mapped = std::all_of(gid, gid + 10, [](uint8_t b) { return b == 0; }) &&
                         gid[10] == 0xff && gid[11] == 0xff;
  if (v4_mapped) return 0;
  const bool link_local = gid[0] == 0xfe && (gid[1] & 0xc0) == 0x80;
  return link_local ? 2 : 1;
}

}  // namespace

std::string format_gid(const uint8_t (&gid)[16]) {
  if (is_empty(gid)) return "empty";
  char text[INET6_ADDRSTRLEN] = {};
  if (!inet_ntop(AF_INET6, gid, text, sizeof text)) return "?";
  return text;
}

const char* gid_type_name(GidType type) {
  switch (type) {
    case GidType::kRoceV1:
      return "RoCE v1";
    case GidType::kRoceV2:
      return "RoCE v2";
    case GidType::kIb:
      break;
  }
  return "IB";
}

Status select_roce_gid(const std::vector<GidEntry>& table, const std::string& where, int* index) {
  const GidEntry* best = nullptr;
  std::string seen;
  for (const GidEntry& e : table) {
    if (is_empty(e.gid)) continue;
    seen += (seen.empty() ? "" : ", ") + std::to_string(e.index) + " " + format_gid(e.gid) + " " +
            gid_type_name(e.type);
    if (e.type != GidType::kRoceV2) continue;
    const int rank = address_rank(e.gid);
    if (!best || rank < address_rank(best->gid) ||
        (rank == address_rank(best->gid) && e.index < best->index))
      best = &e;
  }
  if (!best)
    return Status::error("rdma: " + where + " has no RoCE v2 GID (" +
                         (seen.empty() ? "its table is empty" : "its table: " + seen) +
                         "): set MORI_IB_GID_INDEX");
  *index = best->index;
  return {};
}

}  // namespace mori::rdma
