// The sysfs tree of the emulated device (the family's SysfsIdentity: kernel.hpp), written where libibverbs looks (SYSFS_PATH:
// libibverbs/sysfs.c, ibv_get_sysfs_path). Each file is one that rdma-core 44 reads, with the text
// the kernel's show function prints:
//   class/infiniband_verbs/abi_version        init.c check_abi_version; core/uverbs_main.c
//                                             (IB_USER_VERBS_ABI_VERSION, 6)
//   class/infiniband_verbs/uverbs0/{ibdev,abi_version,dev}
//                                             init.c setup_sysfs_dev, setup_sysfs_uverbs;
//                                             uverbs_main.c ibdev_show, abi_version_show (the
//                                             driver's uverbs_abi_ver: mlx5 1), dev_t "231:192"
//   class/infiniband/mlx5_0/device/modalias   init.c match_modalias_device against mlx5.c's
//                                             hca_table (pci:v000015B3d00001021...), or
//                                             bnxt_re's cna_table (thor2.hpp)
//   class/infiniband/mlx5_0/{node_type,node_guid,sys_image_guid,fw_ver,board_id,hca_type,...}
//                                             core/sysfs.c node_type_show ("1: CA"), ...
//   .../ports/1/{state,phys_state,link_layer,rate,lid,sm_lid,cap_mask,pkeys/0}
//                                             core/sysfs.c state_show, phys_state_show, ...
//   .../ports/1/gids/N, gid_attrs/{types,ndevs}/N
//                                             cmd_device.c query_sysfs_gid_entry; core/sysfs.c
//                                             show_port_gid (a zero GID for an empty entry) and
//                                             _show_port_gid_attr (EINVAL for an empty entry: the
//                                             files are empty here and hooks.cpp fails their read)
// The netdev of the GIDs is "lo": the port's traffic is this machine's loopback.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "kernel.hpp"

namespace mori::emulated_kernel {
namespace {

namespace fs = std::filesystem;

bool put(const fs::path& file, const std::string& text, std::string* why) {
  std::error_code ec;
  fs::create_directories(file.parent_path(), ec);
  std::ofstream out(file);
  out << text;
  if (out.good()) return true;
  *why = "cannot write " + file.string();
  return false;
}

std::string guid_text(uint64_t g) {
  char t[24];
  std::snprintf(t, sizeof(t), "%04x:%04x:%04x:%04x", unsigned(g >> 48) & 0xffff,
                unsigned(g >> 32) & 0xffff, unsigned(g >> 16) & 0xffff, unsigned(g) & 0xffff);
  return t;
}

// %pI6 with every group spelled out, as show_port_gid prints.
std::string gid_text(const uint8_t gid[16]) {
  std::string s;
  char g[8];
  for (int i = 0; i < 8; ++i) {
    std::snprintf(g, sizeof(g), "%s%02x%02x", i ? ":" : "", gid[2 * i], gid[2 * i + 1]);
    s += g;
  }
  return s;
}

// The table roce_gid_mgmt.c builds for a netdev with one IPv4 address: the MAC's link-local GID
// (EUI-64) as v1 then v2, then the IPv4-mapped one as v1 then v2.
void gid_of(const SysfsIdentity& d, int index, uint8_t gid[16], const char** type) {
  std::memset(gid, 0, 16);
  *type = nullptr;
  if (index > d.roce_v2_ipv4_gid_index) return;
  *type = index % 2 ? "RoCE v2" : "IB/RoCE v1";
  if (index < 2) {
    gid[0] = 0xfe;
    gid[1] = 0x80;
    gid[8] = d.mac[0] ^ 0x02;
    gid[9] = d.mac[1];
    gid[10] = d.mac[2];
    gid[11] = 0xff;
    gid[12] = 0xfe;
    std::memcpy(gid + 13, d.mac + 3, 3);
  } else {
    gid[10] = gid[11] = 0xff;
    std::memcpy(gid + 12, d.ipv4, 4);
  }
}

}  // namespace

bool write_sysfs_tree(const std::string& root_text, std::string* why) {
  const SysfsIdentity& d = family().sysfs;
  const fs::path root(root_text);
  const fs::path pci = root / "devices/pci0000:00/0000:00:02.0/0000:01:00.0";
  const fs::path verbs = root / "class/infiniband_verbs";
  const fs::path ib = root / "class/infiniband" / d.ibdev;
  char modalias[96];
  std::snprintf(modalias, sizeof(modalias), "pci:v%08Xd%08Xsv%08Xsd%08Xbc02sc00i00\n", d.pci_vendor,
                d.pci_device, d.pci_vendor, d.pci_subsystem);
  char vendor[16], device[16];
  std::snprintf(vendor, sizeof(vendor), "0x%04x\n", d.pci_vendor);
  std::snprintf(device, sizeof(device), "0x%04x\n", d.pci_device);
  bool ok =
      put(pci / "modalias", modalias, why) && put(pci / "vendor", vendor, why) &&
      put(pci / "device", device, why) && put(verbs / "abi_version", "6\n", why) &&
      put(verbs / "uverbs0" / "ibdev", std::string(d.ibdev) + "\n", why) &&
      put(verbs / "uverbs0" / "abi_version", "1\n", why) &&
      put(verbs / "uverbs0" / "dev", "231:192\n", why) &&  // uverbs_main.c: IB_UVERBS_BASE_DEV
      put(ib / "node_type", "1: CA\n", why) &&
      put(ib / "node_guid", guid_text(d.node_guid) + "\n", why) &&
      put(ib / "sys_image_guid", guid_text(d.sys_image_guid) + "\n", why) &&
      put(ib / "fw_ver", std::string(d.fw_ver) + "\n", why) &&
      (!d.board_id || put(ib / "board_id", std::string(d.board_id) + "\n", why)) &&
      put(ib / "hca_type", std::string(d.hca_type) + "\n", why) &&
      put(ib / "hw_rev", "0x0\n", why) &&
      put(ib / "node_desc", std::string(d.node_desc) + "\n", why);
  if (!ok) return false;
  const fs::path port = ib / "ports/1";
  char cap[16];
  std::snprintf(cap, sizeof(cap), "0x%08x\n", d.port_cap_flags);
  ok = put(port / "state", "4: ACTIVE\n", why) && put(port / "phys_state", "5: LinkUp\n", why) &&
       put(port / "link_layer", "Ethernet\n", why) &&
       put(port / "rate", std::string(d.rate) + "\n", why) && put(port / "lid", "0x0\n", why) &&
       put(port / "sm_lid", "0x0\n", why) && put(port / "lid_mask_count", "0\n", why) &&
       put(port / "sm_sl", "0\n", why) && put(port / "cap_mask", cap, why) &&
       put(port / "pkeys/0", "0xffff\n", why);
  for (int i = 0; ok && i < static_cast<int>(d.gid_tbl_len); ++i) {
    uint8_t gid[16];
    const char* type;
    gid_of(d, i, gid, &type);
    const std::string n = std::to_string(i);
    ok = put(port / "gids" / n, gid_text(gid) + "\n", why) &&
         put(port / "gid_attrs/types" / n, type ? std::string(type) + "\n" : "", why) &&
         put(port / "gid_attrs/ndevs" / n, type ? "lo\n" : "", why);
  }
  if (!ok) return false;
  std::error_code ec;
  fs::create_directory_symlink(pci, ib / "device", ec);
  if (!ec) fs::create_directory_symlink(pci, verbs / "uverbs0" / "device", ec);
  if (ec) {
    *why = "cannot link " + (ib / "device").string() + ": " + ec.message();
    return false;
  }
  return true;
}

}  // namespace mori::emulated_kernel
