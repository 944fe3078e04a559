// VerbsNetwork::open_device: this PE's device (MORI_RDMA_DEVICES, then the one nearest its GPU),
// its family's checks and direct-verbs library, its port, the GID that addresses its queue pairs,
// and a PD. The rest of open: verbs_network.cpp.
#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>

#include "rdma/device_filter.hpp"
#include "rdma/gid_select.hpp"
#include "rdma/nic_affinity.hpp"
#include "rdma/vendor_dv.hpp"
#include "rdma/verbs_network.hpp"

namespace mori::rdma {
namespace {

Status errno_error(const std::string& call, int err) {
  return Status::error("rdma: " + call + " failed: " + std::strerror(err ? err : EIO));
}

bool power_of_two(uint64_t v) { return v && !(v & (v - 1)); }

Status validate(const VerbsConfig& c) {
  auto bad = [](const std::string& what) {
    return Status::error("rdma: bad configuration: " + what);
  };
  if (c.n_pes < 1 || c.rank < 0 || c.rank >= c.n_pes) return bad("rank outside [0, n_pes)");
  if (c.local_rank < 0) return bad("negative local_rank");
  if (c.num_qp_per_pe < 1) return bad("num_qp_per_pe < 1");
  if (!power_of_two(c.sq_wqes) || c.sq_wqes > 65536) return bad("sq_wqes is not 2^k <= 65536");
  if (!power_of_two(c.ibuf_slots)) return bad("ibuf_slots is not a power of two");
  if (c.needs_rdma.size() != static_cast<size_t>(c.n_pes)) return bad("needs_rdma is not [n_pes]");
  if (!c.heap_base || !c.heap_bytes) return bad("no heap");
  if (c.gid_index < -1 || c.gid_index > 255) return bad("gid_index outside [0, 255]");
  if (!c.nic.empty() && c.nic != "mlx5" && c.nic != "bnxt" && c.nic != "ionic")
    return Status::error("MORI_DEVICE_NIC=" + c.nic +
                         " is not a NIC mori knows (mlx5, bnxt, ionic)");
  return {};
}

// rdma-core libibverbs/verbs.h: enum ibv_gid_type, which GidType copies.
static_assert(static_cast<uint32_t>(GidType::kIb) == IBV_GID_TYPE_IB &&
              static_cast<uint32_t>(GidType::kRoceV1) == IBV_GID_TYPE_ROCE_V1 &&
              static_cast<uint32_t>(GidType::kRoceV2) == IBV_GID_TYPE_ROCE_V2);

GidEntry to_gid_entry(const ibv_gid_entry& e) {
  GidEntry out;
  out.index = static_cast<int>(e.gid_index);
  std::memcpy(out.gid, e.gid.raw, sizeof(out.gid));
  out.type = static_cast<GidType>(e.gid_type);
  return out;
}

// The non-empty entries of `port`'s GID table. ibv_query_gid_table returns every port's valid
// entries (it reads sysfs itself on kernels without the ioctl), so it gets room for all of them.
// Should it fail, each index is read with ibv_query_gid_ex, which fails (ENODATA) on an empty
// entry; an entry that cannot be read is left out like an empty one.
void read_gid_table(ibv_context* context, int ports, int port, int gid_tbl_len,
                    std::vector<GidEntry>* out) {
  size_t room = 0;
  for (int p = 1; p <= ports; ++p) {
    ibv_port_attr pa{};
    if (!ibv_query_port(context, static_cast<uint8_t>(p), &pa)) room += pa.gid_tbl_len;
  }
  std::vector<ibv_gid_entry> entries(std::max<size_t>(room, 1));
  const ssize_t n = ibv_query_gid_table(context, entries.data(), entries.size(), 0);
  out->clear();
  for (ssize_t i = 0; i < n; ++i)
    if (entries[i].port_num == static_cast<uint32_t>(port))
      out->push_back(to_gid_entry(entries[i]));
  if (n >= 0) return;
  for (int i = 0; i < gid_tbl_len; ++i) {
    ibv_gid_entry e{};
    if (!ibv_query_gid_ex(context, port, i, &e, 0)) out->push_back(to_gid_entry(e));
  }
}

struct DeviceListDeleter {
  void operator()(ibv_device** list) const { ibv_free_device_list(list); }
};

}  // namespace

// MLX5 queue pairs are exported through mlx5dv, which works on mlx5 devices only. BNXT and Ionic
// ones through the vendor's direct-verbs library (vendor_dv.hpp), which is loaded here: its
// absence is the error. The exports through them: verbs_export_ionic.cpp, verbs_export_bnxt.cpp.
Status VerbsNetwork::check_nic(ibv_device* device, const std::string& name) {
  if (family_ == Family::kMlx5) {
    if (!mlx5dv_is_supported(device))
      return Status::error(
          "rdma: " + name +
          " is not an mlx5 device: only MLX5 queue pairs can be exported to the GPU");
    return {};
  }
  std::vector<std::string> candidates;
  if (!config_.dv_library.empty()) candidates.push_back(config_.dv_library);
  MORI_TRY(VendorDv::load(config_.nic, candidates, &dv_));
  return {};
}

RdAtomicDepths rd_atomic_depths(int max_qp_rd_atom, int max_qp_init_rd_atom) {
  return {std::clamp(max_qp_init_rd_atom, 1, kMaxRdAtomic),
          std::clamp(max_qp_rd_atom, 1, kMaxRdAtomic)};
}

Status VerbsNetwork::open_device(bool* none) {
  MORI_TRY(validate(config_));
  family_ = config_.nic == "ionic"  ? Family::kIonic
            : config_.nic == "bnxt" ? Family::kBnxt
                                    : Family::kMlx5;
  DeviceFilter filter;
  MORI_TRY(parse_device_filter(config_.device_filter_text, &filter));
  int n = 0;
  // NULL with errno ENOSYS where the kernel has no RDMA subsystem (docs/rdma-hardware.md);
  // NULL with any other errno, and an empty list, likewise mean no device.
  std::unique_ptr<ibv_device*, DeviceListDeleter> list(ibv_get_device_list(&n));
  std::vector<std::string> names;
  for (int i = 0; list && i < n; ++i) names.emplace_back(ibv_get_device_name(list.get()[i]));
  // An include list asks for devices by name: their absence is an error, not "no devices".
  if (names.empty() && filter.mode != DeviceFilter::Mode::kInclude) {
    *none = true;
    return {};
  }
  std::vector<SelectedDevice> selected;
  MORI_TRY(select_devices(names, filter, &selected));
  std::vector<std::string> selected_names;
  for (const SelectedDevice& d : selected) selected_names.push_back(d.name);
  const NicChoice choice =
      choose_nic(config_.sysfs_root, config_.gpu_pci_address, selected_names, config_.local_rank);
  const SelectedDevice& mine = selected[choice.index];
  device_choice_ = choice.reason;
  ibv_device* device = list.get()[std::find(names.begin(), names.end(), mine.name) - names.begin()];
  MORI_TRY(check_nic(device, mine.name));
  device_name_ = mine.name;
  port_ = mine.port;

  context_ = ibv_open_device(device);
  if (!context_) return errno_error("ibv_open_device(" + device_name_ + ")", errno);
  ibv_device_attr dev{};
  if (int rc = ibv_query_device(context_, &dev)) return errno_error("ibv_query_device", rc);
  const RdAtomicDepths depths = rd_atomic_depths(dev.max_qp_rd_atom, dev.max_qp_init_rd_atom);
  max_rd_atomic_ = depths.initiator;
  max_dest_rd_atomic_ = depths.responder;
  // A device without atomics still serves puts and gets: Linux bnxt_re reports atomics only when
  // the function's PCIe DevCtl2 AtomicOp requester bit is set (qplib_sp.c,
  // bnxt_qplib_is_atomic_cap), which is the platform's or firmware's choice. The runtime records
  // it, logs it, and RDMA AMOs trap at the call (runtime/amo_route.hpp).
  atomic_cap_ = dev.atomic_cap == IBV_ATOMIC_GLOB  ? runtime::AtomicCap::kGlob
                : dev.atomic_cap == IBV_ATOMIC_HCA ? runtime::AtomicCap::kHca
                                                   : runtime::AtomicCap::kNone;
  const std::string where = device_name_ + " port " + std::to_string(port_);
  if (port_ > dev.phys_port_cnt)
    return Status::error("rdma: " + where + " does not exist (the device has " +
                         std::to_string(dev.phys_port_cnt) + " ports)");
  ibv_port_attr pa{};
  if (int rc = ibv_query_port(context_, static_cast<uint8_t>(port_), &pa))
    return errno_error("ibv_query_port(" + where + ")", rc);
  if (pa.state != IBV_PORT_ACTIVE)
    return Status::error("rdma: " + where + " is not active (" + ibv_port_state_str(pa.state) +
                         ")");
  ethernet_ = pa.link_layer == IBV_LINK_LAYER_ETHERNET;
  lid_ = pa.lid;
  mtu_ = pa.active_mtu;
  if (ethernet_ && config_.gid_index < 0) {
    std::vector<GidEntry> table;
    read_gid_table(context_, dev.phys_port_cnt, port_, pa.gid_tbl_len, &table);
    MORI_TRY(select_roce_gid(table, where, &gid_index_));
    for (const GidEntry& e : table)
      if (e.index == gid_index_) std::memcpy(gid_, e.gid, sizeof(gid_));
  } else {
    // MORI_IB_GID_INDEX, or on InfiniBand index 0, which holds the port GID.
    gid_index_ = std::max(config_.gid_index, 0);
    if (gid_index_ >= pa.gid_tbl_len)
      return Status::error("rdma: GID index " + std::to_string(gid_index_) + " is beyond " + where +
                           "'s table (" + std::to_string(pa.gid_tbl_len) +
                           " entries): set MORI_IB_GID_INDEX");
    ibv_gid gid{};
    // ibv_query_gid returns -1 and sets errno (libibverbs verbs.c), unlike the calls that return
    // the errno.
    if (ibv_query_gid(context_, static_cast<uint8_t>(port_), gid_index_, &gid) != 0)
      return errno_error("ibv_query_gid(" + where + ")", errno);
    std::memcpy(gid_, gid.raw, sizeof(gid_));
    const bool empty_gid =
        std::all_of(std::begin(gid_), std::end(gid_), [](uint8_t b) { return !b; });
    if (ethernet_ && empty_gid)
      return Status::error("rdma: GID index " + std::to_string(gid_index_) + " of " + where +
                           " is empty: set MORI_IB_GID_INDEX to a RoCE v2 entry");
  }
  if (!ethernet_ && lid_ == 0)
    return Status::error("rdma: " + where + " has no LID (is a subnet manager running?)");

  pd_ = ibv_alloc_pd(context_);
  if (!pd_) return errno_error("ibv_alloc_pd(" + device_name_ + ")", errno);
  if (family_ == Family::kIonic) MORI_TRY(open_ionic());
  if (family_ == Family::kBnxt) MORI_TRY(open_bnxt());
  return {};
}

}  // namespace mori::rdma
