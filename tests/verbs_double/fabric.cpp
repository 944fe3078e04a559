// The verbs double's devices, contexts, queries, PDs and MRs: the libibverbs entry points of
// verbs_device.cpp and verbs_network.cpp (the exported symbols that `nm -u` lists for them,
// including the ones verbs.h's inline wrappers call: ibv_query_port behind ___ibv_query_port,
// _ibv_query_gid_ex and _ibv_query_gid_table behind ibv_query_gid_ex and ibv_query_gid_table,
// ibv_reg_mr behind __ibv_reg_mr, ibv_reg_mr_iova2 behind ibv_reg_mr_iova with run-time access
// flags, ibv_reg_dmabuf_mr). Contexts are verbs_contexts whose only op is create_qp_ex
// (queues.cpp), so that verbs.h's other inline wrappers call these exported functions.
#include <fcntl.h>

#include <cerrno>
#include <cstring>

#include "double_state.hpp"

using verbs_double::DeviceSpec;
using namespace verbs_double::internal;

namespace {

Device* find_device(Fabric& f, const ibv_device* dev) {
  for (const auto& d : f.devices)
    if (&d->dev == dev) return d.get();
  return nullptr;
}

void fill_gid_entry(const DeviceSpec& spec, uint32_t port, uint32_t index, ibv_gid_entry* e) {
  *e = ibv_gid_entry{};
  std::memcpy(e->gid.raw, spec.gids[index].raw, sizeof(e->gid.raw));
  e->gid_index = index;
  e->port_num = port;
  e->gid_type = spec.gids[index].type;
}

}  // namespace

extern "C" {

ibv_device** ibv_get_device_list(int* num_devices) {
  Fabric& f = fabric();
  std::lock_guard<std::mutex> lock(f.mutex);
  const size_t n = f.devices.size();
  std::unique_ptr<ibv_device*[]> list(new ibv_device*[n + 1]);
  for (size_t i = 0; i < n; ++i) list[i] = &f.devices[i]->dev;
  list[n] = nullptr;
  if (num_devices) *num_devices = static_cast<int>(n);
  ibv_device** out = list.get();
  f.device_lists[out] = std::move(list);
  return out;
}

void ibv_free_device_list(ibv_device** list) {
  Fabric& f = fabric();
  std::lock_guard<std::mutex> lock(f.mutex);
  if (!f.device_lists.erase(list)) refuse(f, EINVAL, "free_device_list: not a list of the fabric");
}

const char* ibv_get_device_name(ibv_device* device) { return device->name; }

ibv_context* ibv_open_device(ibv_device* device) {
  Fabric& f = fabric();
  std::lock_guard<std::mutex> lock(f.mutex);
  Device* d = find_device(f, device);
  if (!d) return refuse_null(f, ENODEV, "open_device: not a device of the fabric");
  auto c = std::make_unique<Context>();
  c->device = d;
  ibv_context& ctx = c->vctx.context;
  ctx.device = device;
  ctx.cmd_fd = -1;
  ctx.async_fd = -1;
  ctx.num_comp_vectors = 1;
  ctx.abi_compat = __VERBS_ABI_IS_EXTENDED;
  c->vctx.sz = sizeof(verbs_context);
  c->vctx.create_qp_ex = create_qp_ex;
  if (c->ionic()) ionic_open_context(*c);
  f.contexts[&ctx] = std::move(c);
  return &ctx;
}

// Children still alive are left counted (Live), so that a test sees the leak; the kernel would
// reclaim them when the device's file closes.
int ibv_close_device(ibv_context* context) {
  Fabric& f = fabric();
  std::lock_guard<std::mutex> lock(f.mutex);
  if (!f.contexts.erase(context)) return refuse(f, EINVAL, "close_device: not an open context");
  return 0;
}

int ibv_query_device(ibv_context* context, ibv_device_attr* attr) {
  Fabric& f = fabric();
  std::lock_guard<std::mutex> lock(f.mutex);
  Context* c = find(f.contexts, context);
  if (!c) return refuse(f, EINVAL, "query_device: not an open context");
  const DeviceSpec& s = c->device->spec;
  *attr = ibv_device_attr{};
  std::snprintf(attr->fw_ver, sizeof(attr->fw_ver), "verbs-double");
  attr->max_mr_size = ~uint64_t{0};
  attr->page_size_cap = 4096;
  // PCI vendor ids: Mellanox, Broadcom, Pensando.
  attr->vendor_id = s.family == verbs_double::Family::kIonic  ? 0x1dd8
                    : s.family == verbs_double::Family::kBnxt ? 0x14e4
                                                              : 0x02c9;
  attr->max_qp = 1 << 17;
  attr->max_qp_wr = s.max_qp_wr;
  attr->max_sge = 30;
  attr->max_cq = 1 << 24;
  attr->max_cqe = s.max_cqe;
  attr->max_mr = 1 << 24;
  attr->max_pd = 1 << 24;
  attr->max_qp_rd_atom = s.max_qp_rd_atom;
  attr->max_qp_init_rd_atom = s.max_qp_init_rd_atom;
  attr->max_res_rd_atom = s.max_qp_rd_atom << 17;
  attr->atomic_cap = s.atomic_cap;
  attr->max_pkeys = 1;
  attr->phys_port_cnt = s.ports;
  return 0;
}

// verbs.h's ibv_query_port macro passes a full ibv_port_attr, cast to the compat type.
int(ibv_query_port)(ibv_context* context, uint8_t port_num, _compat_ibv_port_attr* compat) {
  Fabric& f = fabric();
  std::lock_guard<std::mutex> lock(f.mutex);
  Context* c = find(f.contexts, context);
  if (!c) return refuse(f, EINVAL, "query_port: not an open context");
  const DeviceSpec& s = c->device->spec;
  if (bad_port(s, port_num))
    return refuse(f, EINVAL, "query_port: " + port_refusal("port", s, port_num));
  ibv_port_attr* attr = reinterpret_cast<ibv_port_attr*>(compat);
  *attr = ibv_port_attr{};
  attr->state = s.state;
  attr->max_mtu = IBV_MTU_4096;
  attr->active_mtu = s.active_mtu;
  attr->gid_tbl_len = static_cast<int>(s.gids.size());
  attr->max_msg_sz = 1u << 30;
  attr->pkey_tbl_len = 1;
  attr->lid = s.lid;
  attr->active_width = 2;  // 4x
  attr->active_speed = 64;
  attr->phys_state = s.state == IBV_PORT_ACTIVE ? 5 : 3;  // LinkUp, Disabled
  attr->link_layer = s.ethernet ? IBV_LINK_LAYER_ETHERNET : IBV_LINK_LAYER_INFINIBAND;
  return 0;
}

const char* ibv_port_state_str(ibv_port_state state) {
  static const char* const kNames[] = {"PORT_NOP",   "PORT_DOWN",   "PORT_INIT",
                                       "PORT_ARMED", "PORT_ACTIVE", "PORT_ACTIVE_DEFER"};
  return state >= IBV_PORT_NOP && state <= IBV_PORT_ACTIVE_DEFER ? kNames[state] : "invalid state";
}

// rdma-core: an empty entry reads as zeros with success; other failures return -1 with errno.
int ibv_query_gid(ibv_context* context, uint8_t port_num, int index, ibv_gid* gid) {
  Fabric& f = fabric();
  std::lock_guard<std::mutex> lock(f.mutex);
  auto fail = [&](const std::string& reason) {
    errno = refuse(f, EINVAL, "query_gid: " + reason);
    return -1;
  };
  Context* c = find(f.contexts, context);
  if (!c) return fail("not an open context");
  const DeviceSpec& s = c->device->spec;
  if (bad_port(s, port_num)) return fail(port_refusal("port", s, port_num));
  if (index < 0 || index >= static_cast<int>(s.gids.size()))
    return fail("index " + std::to_string(index) + " is beyond " + s.name + "'s table");
  std::memcpy(gid->raw, s.gids[index].raw, sizeof(gid->raw));
  return 0;
}

int _ibv_query_gid_ex(ibv_context* context, uint32_t port_num, uint32_t gid_index,
                      ibv_gid_entry* entry, uint32_t flags, size_t entry_size) {
  Fabric& f = fabric();
  std::lock_guard<std::mutex> lock(f.mutex);
  Context* c = find(f.contexts, context);
  if (!c) return refuse(f, EINVAL, "query_gid_ex: not an open context");
  const DeviceSpec& s = c->device->spec;
  if (flags || entry_size < sizeof(ibv_gid_entry))
    return refuse(f, EINVAL, "query_gid_ex: flags or entry_size the double does not know");
  if (bad_port(s, port_num))
    return refuse(f, EINVAL, "query_gid_ex: " + port_refusal("port", s, port_num));
  if (gid_index >= s.gids.size())
    return refuse(
        f, EINVAL,
        "query_gid_ex: index " + std::to_string(gid_index) + " is beyond " + s.name + "'s table");
  if (empty_gid(s.gids[gid_index].raw)) return ENODATA;  // not a refusal: the entry is empty
  fill_gid_entry(s, port_num, gid_index, entry);
  return 0;
}

ssize_t _ibv_query_gid_table(ibv_context* context, ibv_gid_entry* entries, size_t max_entries,
                             uint32_t flags, size_t entry_size) {
  Fabric& f = fabric();
  std::lock_guard<std::mutex> lock(f.mutex);
  Context* c = find(f.contexts, context);
  if (!c) return -refuse(f, EINVAL, "query_gid_table: not an open context");
  const DeviceSpec& s = c->device->spec;
  if (flags || entry_size < sizeof(ibv_gid_entry))
    return -refuse(f, EINVAL, "query_gid_table: flags or entry_size the double does not know");
  size_t n = 0;
  for (uint32_t port = 1; port <= s.ports; ++port)
    for (uint32_t i = 0; i < s.gids.size(); ++i) {
      if (empty_gid(s.gids[i].raw)) continue;
      if (n == max_entries)
        return -refuse(f, EINVAL, "query_gid_table: more valid entries than max_entries");
      fill_gid_entry(s, port, i, &entries[n++]);
    }
  return static_cast<ssize_t>(n);
}

ibv_pd* ibv_alloc_pd(ibv_context* context) {
  Fabric& f = fabric();
  std::lock_guard<std::mutex> lock(f.mutex);
  Context* c = find(f.contexts, context);
  if (!c) return refuse_null(f, EINVAL, "alloc_pd: not an open context");
  auto pd = std::make_unique<Pd>();
  pd->context = c;
  pd->pd.context = context;
  pd->pd.handle = f.next_handle++;
  if (c->ionic()) ionic_alloc_pd(*pd);
  return keep(f.pds, std::move(pd), &Pd::pd);
}

// The kernel refuses to free a PD that objects still use (ib_dealloc_pd_user: EBUSY).
int ibv_dealloc_pd(ibv_pd* pd) {
  Fabric& f = fabric();
  std::lock_guard<std::mutex> lock(f.mutex);
  Pd* p = find(f.pds, pd);
  if (!p) return refuse(f, EINVAL, "dealloc_pd: not a PD of the fabric");
  if (p->mrs || p->qps)
    return refuse(f, EBUSY,
                  "dealloc_pd: the PD still has " + std::to_string(p->mrs) + " MR(s) and " +
                      std::to_string(p->qps) + " QP(s)");
  f.pds.erase(pd);
  return 0;
}

}  // extern "C"

namespace {

// Every registration entry point: remote write or atomic access needs local write (the kernel's
// ib_check_mr_access). `iova` is what the MR's addresses start at (ibv_reg_mr_iova(3)).
ibv_mr* register_mr(ibv_pd* pd, void* addr, size_t length, uint64_t iova, int access,
                    const char* call) {
  Fabric& f = fabric();
  std::lock_guard<std::mutex> lock(f.mutex);
  const std::string what = call;
  Pd* p = find(f.pds, pd);
  if (!p) return refuse_null(f, EINVAL, what + ": not a PD of the fabric");
  if (!length) return refuse_null(f, EINVAL, what + ": an empty range");
  if ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
      !(access & IBV_ACCESS_LOCAL_WRITE))
    return refuse_null(f, EINVAL,
                       what + ": remote write or atomic access needs IBV_ACCESS_LOCAL_WRITE");
  auto mr = std::make_unique<Mr>();
  mr->pd = p;
  mr->iova = iova;
  mr->access = access;
  f.mr_accesses.push_back(access);
  mr->mr.context = pd->context;
  mr->mr.pd = pd;
  mr->mr.addr = addr;
  mr->mr.length = length;
  mr->mr.handle = f.next_handle++;
  mr->mr.lkey = f.next_key++;
  mr->mr.rkey = f.next_key++;
  ++p->mrs;
  ibv_mr* out = keep(f.mrs, std::move(mr), &Mr::mr);
  memory_changed(f);
  return out;
}

}  // namespace

extern "C" {

ibv_mr*(ibv_reg_mr)(ibv_pd* pd, void* addr, size_t length, int access) {
  if (!addr) return register_mr(pd, addr, 0, 0, access, "reg_mr");  // refused as empty
  return register_mr(pd, addr, length, reinterpret_cast<uintptr_t>(addr), access, "reg_mr");
}

ibv_mr*(ibv_reg_mr_iova)(ibv_pd* pd, void* addr, size_t length, uint64_t iova, int access) {
  return register_mr(pd, addr, addr ? length : 0, iova, access, "reg_mr_iova");
}

ibv_mr* ibv_reg_mr_iova2(ibv_pd* pd, void* addr, size_t length, uint64_t iova,
                         unsigned int access) {
  return register_mr(pd, addr, addr ? length : 0, iova, static_cast<int>(access), "reg_mr_iova2");
}

// A dma-buf import: the kernel resolves `fd` first (EBADF when it is not open).
ibv_mr* ibv_reg_dmabuf_mr(ibv_pd* pd, uint64_t offset, size_t length, uint64_t iova, int fd,
                          int access) {
  if (fd < 0 || fcntl(fd, F_GETFD) == -1) {
    Fabric& f = fabric();
    std::lock_guard<std::mutex> lock(f.mutex);
    return refuse_null(f, EBADF, "reg_dmabuf_mr: fd " + std::to_string(fd) + " is not open");
  }
  return register_mr(pd, reinterpret_cast<void*>(offset), length, iova, access, "reg_dmabuf_mr");
}

int ibv_dereg_mr(ibv_mr* mr) {
  Fabric& f = fabric();
  std::lock_guard<std::mutex> lock(f.mutex);
  Mr* m = find(f.mrs, mr);
  if (!m) return refuse(f, EINVAL, "dereg_mr: not an MR of the fabric");
  --m->pd->mrs;
  f.mrs.erase(mr);
  memory_changed(f);
  return 0;
}

}  // extern "C"
