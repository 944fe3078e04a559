// The uverbs write() ABI: the command header, the split of each buffer into the core's part and
// the driver's udata, and the core's handlers for the device, its port, PDs and MRs
// (drivers/infiniband/core/uverbs_main.c ib_uverbs_write and verify_hdr; uverbs_cmd.c). CQs and
// QPs are in uverbs_queues.cpp. Each handler returns 0 or a positive errno.
#include "uverbs_cmd.hpp"

#include <rdma/ib_user_verbs.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cstring>

#include "connectx7.hpp"
#include "hca_state.hpp"

namespace mori::emulated_kernel {
namespace {

// uverbs_cmd.c ib_uverbs_get_context: one ucontext per file; the async event file is a new fd.
int get_context(File& f, const Command& c) {
  if (f.has_context) return EINVAL;
  ib_uverbs_get_context_resp resp{};
  if (c.core_out_len < sizeof(resp)) return ENOSPC;
  const int async = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (async < 0) return errno;
  if (int rc = driver().alloc_ucontext(f, c.udata)) {
    real_close(async);
    return rc;
  }
  f.has_context = true;
  f.async_fd = async;
  resp.async_fd = static_cast<uint32_t>(async);
  // mlx5_core makes one completion EQ per online CPU (eq.c, create_comp_eqs).
  resp.num_comp_vectors = static_cast<uint32_t>(sysconf(_SC_NPROCESSORS_ONLN));
  std::memcpy(c.core_out, &resp, sizeof(resp));
  return 0;
}

}  // namespace

// mlx5_ib_query_device (hw/mlx5/main.c) from the ConnectX-7's capabilities (connectx7.hpp);
// ib_uverbs_query_device / copy_query_dev_fields (uverbs_cmd.c) copy them out.
void cx7_query_device(ib_uverbs_query_device_resp* r) {
  *r = ib_uverbs_query_device_resp{};
  r->fw_ver = cx7::kFwMajor << 32 | cx7::kFwMinor << 16 | cx7::kFwSubMinor;
  r->node_guid = htobe64(cx7::kNodeGuid);
  r->sys_image_guid = htobe64(cx7::kSysImageGuid);
  r->max_mr_size = ~uint64_t{0};
  r->page_size_cap = 0xfffffffffffff000ull;
  r->vendor_id = cx7::kVendorId;
  r->vendor_part_id = cx7::kVendorPartId;
  r->max_qp = cx7::kMaxQp;
  r->max_qp_wr = cx7::kMaxQpWr;
  r->device_cap_flags = cx7::kDeviceCapFlags;
  r->max_sge = r->max_sge_rd = cx7::kMaxSge;
  r->max_cq = cx7::kMaxCq;
  r->max_cqe = cx7::kMaxCqe;
  r->max_mr = cx7::kMaxMr;
  r->max_pd = cx7::kMaxPd;
  r->max_qp_rd_atom = cx7::kMaxQpRdAtom;
  r->max_res_rd_atom = cx7::kMaxResRdAtom;
  r->max_qp_init_rd_atom = cx7::kMaxQpInitRdAtom;
  r->atomic_cap = 1;  // IB_ATOMIC_HCA
  r->max_mw = cx7::kMaxMw;
  r->max_mcast_grp = cx7::kMaxMcastGrp;
  r->max_mcast_qp_attach = cx7::kMaxMcastQpAttach;
  r->max_total_mcast_qp_attach = cx7::kMaxTotalMcastQpAttach;
  r->max_ah = cx7::kMaxAh;
  r->max_srq = cx7::kMaxSrq;
  r->max_srq_wr = cx7::kMaxSrqWr;
  r->max_srq_sge = cx7::kMaxSrqSge;
  r->max_pkeys = cx7::kMaxPkeys;
  r->local_ca_ack_delay = cx7::kLocalCaAckDelay;
  r->phys_port_cnt = 1;
}

// mlx5_query_port_roce (hw/mlx5/main.c): a RoCE port reports no LID, one P_Key, the GID table,
// the MTU of its netdev, and its speed as IB width x speed (4X at 25 Gb/s: 100 Gb/s).
void cx7_query_port(ib_uverbs_query_port_resp* r) {
  *r = ib_uverbs_query_port_resp{};
  r->port_cap_flags = cx7::kPortCapFlags;
  r->max_msg_sz = cx7::kMaxMsgSz;
  r->gid_tbl_len = cx7::kGidTblLen;
  r->pkey_tbl_len = 1;
  r->state = cx7::kPortActive;
  r->max_mtu = r->active_mtu = cx7::kMtu4096;
  r->active_width = 2;   // IB_WIDTH_4X
  r->active_speed = 32;  // IB_SPEED_EDR (25 Gb/s a lane)
  r->phys_state = cx7::kPhysLinkUp;
  r->link_layer = 2;  // IB_LINK_LAYER_ETHERNET
}

namespace {

int query_device(File&, const Command& c) {
  ib_uverbs_query_device_resp resp;
  if (c.core_out_len < sizeof(resp)) return ENOSPC;
  family().query_device(&resp);
  std::memcpy(c.core_out, &resp, sizeof(resp));
  return 0;
}

// ib_uverbs_ex_query_device: the base, then as much of the extension as the caller has room for
// (response_length says how much); the driver's udata (mlx5_ib_query_device_resp) stays zero: no
// TSO, RSS, CQE compression or striding RQ, which only raw-packet QPs use.
int ex_query_device(File&, const Command& c) {
  ib_uverbs_ex_query_device_resp resp{};
  family().query_device(&resp.base);
  resp.timestamp_mask = (uint64_t{1} << 63) - 1;
  resp.hca_core_clock = 1000000;  // kHz: the device's 1 GHz free-running clock
  resp.cq_moderation_caps.max_cq_moderation_count = 65535;
  resp.cq_moderation_caps.max_cq_moderation_period = 4095;
  const size_t n = std::min(c.core_out_len, sizeof(resp));
  resp.response_length = static_cast<uint32_t>(n);
  std::memcpy(c.core_out, &resp, n);
  if (c.udata.out_len) std::memset(c.udata.out, 0, c.udata.out_len);
  return 0;
}

// ib_uverbs_query_port: the family's port (rdma_is_port_valid: port 1 only).
int query_port(File&, const Command& c) {
  ib_uverbs_query_port cmd;
  ib_uverbs_query_port_resp r{};
  if (c.core_in_len < sizeof(cmd) || c.core_out_len < sizeof(r)) return ENOSPC;
  std::memcpy(&cmd, c.core_in, sizeof(cmd));
  if (cmd.port_num != 1) return EINVAL;
  family().query_port(&r);
  std::memcpy(c.core_out, &r, sizeof(r));
  return 0;
}

// ib_uverbs_alloc_pd; mlx5_ib_alloc_pd returns the PD number in the udata.
int alloc_pd(File& f, const Command& c) {
  ib_uverbs_alloc_pd_resp resp{};
  if (c.core_out_len < sizeof(resp)) return ENOSPC;
  const uint32_t pdn = hca::alloc_pdn();
  if (int rc = driver().alloc_pd(f, pdn, c.udata)) return rc;
  resp.pd_handle = f.next_handle++;
  f.pds[resp.pd_handle] = pdn;
  std::memcpy(c.core_out, &resp, sizeof(resp));
  return 0;
}

// ib_dealloc_pd_user refuses a PD that MRs or QPs still use (its usecnt; the uobject's
// destroy fails with EBUSY).
int dealloc_pd(File& f, const Command& c) {
  ib_uverbs_dealloc_pd cmd;
  if (c.core_in_len < sizeof(cmd)) return ENOSPC;
  std::memcpy(&cmd, c.core_in, sizeof(cmd));
  if (!f.pds.count(cmd.pd_handle)) return EINVAL;
  for (const auto& [h, m] : f.mrs)
    if (m.pd_handle == cmd.pd_handle) return EBUSY;
  for (const auto& [h, q] : f.qps)
    if (q.pd_handle == cmd.pd_handle) return EBUSY;
  f.pds.erase(cmd.pd_handle);
  return 0;
}

// ib_uverbs_reg_mr: the start and the IOVA must share their offset in the page, the access flags
// must be consistent (ib_check_mr_access: remote write or atomic needs local write, no unknown
// bit); mlx5_ib_reg_user_mr then pins the pages (ib_umem_get) and makes an mkey, whose key serves
// as lkey and rkey.
int reg_mr(File& f, const Command& c) {
  ib_uverbs_reg_mr cmd;
  ib_uverbs_reg_mr_resp resp{};
  if (c.core_in_len < sizeof(cmd) || c.core_out_len < sizeof(resp)) return ENOSPC;
  std::memcpy(&cmd, c.core_in, sizeof(cmd));
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  if ((cmd.start & (page - 1)) != (cmd.hca_va & (page - 1))) return EINVAL;
  constexpr uint32_t kLocalWrite = 1, kRemoteWrite = 2, kRemoteAtomic = 8;
  constexpr uint32_t kSupported = 0x1f | 0x20 /* ON_DEMAND */ | 0x80 /* RELAXED_ORDERING */;
  if ((cmd.access_flags & (kRemoteWrite | kRemoteAtomic)) && !(cmd.access_flags & kLocalWrite))
    return EINVAL;
  if (cmd.access_flags & ~kSupported) return EINVAL;
  if (cmd.access_flags & 0x20) return EOPNOTSUPP;  // no ODP on the emulated device
  if (!cmd.length) return EINVAL;
  const auto pd = f.pds.find(cmd.pd_handle);
  if (pd == f.pds.end()) return EINVAL;
  Mr mr;
  mr.handle = f.next_handle++;
  mr.pd_handle = cmd.pd_handle;
  mr.start = cmd.start;
  mr.length = cmd.length;
  mr.iova = cmd.hca_va;
  mr.access = cmd.access_flags;
  mr.lkey = mr.rkey = hca::add_mr(pd->second, cmd.access_flags, cmd.start, cmd.hca_va, cmd.length);
  if (!mr.lkey) return ENOMEM;
  resp.mr_handle = mr.handle;
  resp.lkey = mr.lkey;
  resp.rkey = mr.rkey;
  f.mrs[mr.handle] = mr;
  trace("reg_mr 0x%llx + %llu access 0x%x: key 0x%x", (unsigned long long)cmd.start,
        (unsigned long long)cmd.length, cmd.access_flags, mr.lkey);
  std::memcpy(c.core_out, &resp, sizeof(resp));
  return 0;
}

int dereg_mr(File& f, const Command& c) {
  ib_uverbs_dereg_mr cmd;
  if (c.core_in_len < sizeof(cmd)) return ENOSPC;
  std::memcpy(&cmd, c.core_in, sizeof(cmd));
  const auto mr = f.mrs.find(cmd.mr_handle);
  if (mr == f.mrs.end()) return EINVAL;
  hca::remove_mr(mr->second.lkey);
  f.mrs.erase(mr);
  return 0;
}

// ib_uverbs_create_comp_channel: a new event file's fd. Nothing signals it: completions are
// polled (the emulated NIC raises no completion event).
int create_comp_channel(File& f, const Command& c) {
  ib_uverbs_create_comp_channel_resp resp{};
  if (c.core_out_len < sizeof(resp)) return ENOSPC;
  const int fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (fd < 0) return errno;
  f.comp_channels.push_back(fd);
  resp.fd = static_cast<uint32_t>(fd);
  std::memcpy(c.core_out, &resp, sizeof(resp));
  return 0;
}

// A method's core request and response sizes: the legacy ones without the header (the udata
// starts past them), the extended ones the least the header may declare (verify_hdr).
struct Method {
  uint32_t command;
  bool ex;
  bool needs_context;
  int (*handler)(File&, const Command&);
  const char* name;
  size_t req, resp;
};

constexpr uint32_t kEx = IB_USER_VERBS_CMD_FLAG_EXTENDED;
const Method kMethods[] = {
    {IB_USER_VERBS_CMD_GET_CONTEXT, false, false, get_context, "GET_CONTEXT",
     sizeof(ib_uverbs_get_context), sizeof(ib_uverbs_get_context_resp)},
    {IB_USER_VERBS_CMD_QUERY_DEVICE, false, true, query_device, "QUERY_DEVICE",
     sizeof(ib_uverbs_query_device), sizeof(ib_uverbs_query_device_resp)},
    {IB_USER_VERBS_EX_CMD_QUERY_DEVICE, true, true, ex_query_device, "EX_QUERY_DEVICE",
     sizeof(ib_uverbs_ex_query_device), sizeof(ib_uverbs_query_device_resp)},
    {IB_USER_VERBS_CMD_QUERY_PORT, false, true, query_port, "QUERY_PORT",
     sizeof(ib_uverbs_query_port), sizeof(ib_uverbs_query_port_resp)},
    {IB_USER_VERBS_CMD_ALLOC_PD, false, true, alloc_pd, "ALLOC_PD", sizeof(ib_uverbs_alloc_pd),
     sizeof(ib_uverbs_alloc_pd_resp)},
    {IB_USER_VERBS_CMD_DEALLOC_PD, false, true, dealloc_pd, "DEALLOC_PD",
     sizeof(ib_uverbs_dealloc_pd), 0},
    {IB_USER_VERBS_CMD_REG_MR, false, true, reg_mr, "REG_MR", sizeof(ib_uverbs_reg_mr),
     sizeof(ib_uverbs_reg_mr_resp)},
    {IB_USER_VERBS_CMD_DEREG_MR, false, true, dereg_mr, "DEREG_MR", sizeof(ib_uverbs_dereg_mr), 0},
    {IB_USER_VERBS_CMD_CREATE_COMP_CHANNEL, false, true, create_comp_channel, "CREATE_COMP_CHANNEL",
     sizeof(ib_uverbs_create_comp_channel), sizeof(ib_uverbs_create_comp_channel_resp)},
    {IB_USER_VERBS_CMD_CREATE_CQ, false, true, create_cq, "CREATE_CQ", sizeof(ib_uverbs_create_cq),
     sizeof(ib_uverbs_create_cq_resp)},
    {IB_USER_VERBS_EX_CMD_CREATE_CQ, true, true, ex_create_cq, "EX_CREATE_CQ",
     sizeof(ib_uverbs_ex_create_cq), sizeof(ib_uverbs_create_cq_resp)},
    {IB_USER_VERBS_CMD_DESTROY_CQ, false, true, destroy_cq, "DESTROY_CQ",
     sizeof(ib_uverbs_destroy_cq), sizeof(ib_uverbs_destroy_cq_resp)},
    {IB_USER_VERBS_CMD_CREATE_QP, false, true, create_qp, "CREATE_QP", sizeof(ib_uverbs_create_qp),
     sizeof(ib_uverbs_create_qp_resp)},
    {IB_USER_VERBS_EX_CMD_CREATE_QP, true, true, ex_create_qp, "EX_CREATE_QP",
     sizeof(ib_uverbs_ex_create_qp), sizeof(ib_uverbs_create_qp_resp)},
    {IB_USER_VERBS_CMD_MODIFY_QP, false, true, modify_qp, "MODIFY_QP", sizeof(ib_uverbs_modify_qp),
     0},
    {IB_USER_VERBS_EX_CMD_MODIFY_QP, true, true, ex_modify_qp, "EX_MODIFY_QP",
     sizeof(ib_uverbs_ex_modify_qp), 0},
    {IB_USER_VERBS_CMD_QUERY_QP, false, true, query_qp, "QUERY_QP", sizeof(ib_uverbs_query_qp),
     sizeof(ib_uverbs_query_qp_resp)},
    {IB_USER_VERBS_CMD_DESTROY_QP, false, true, destroy_qp, "DESTROY_QP",
     sizeof(ib_uverbs_destroy_qp), sizeof(ib_uverbs_destroy_qp_resp)},
};

}  // namespace

// ib_uverbs_write and verify_hdr: a legacy command's in_words count the whole write in 4-byte
// words, and its core request starts with the user's response pointer; an extended command's
// words are 8-byte units past both headers, with the response pointer in the extended header.
long uverbs_write(File& f, const void* buf, size_t len) {
  ib_uverbs_cmd_hdr hdr;
  if (len < sizeof(hdr)) return errno = EINVAL, -1;
  std::memcpy(&hdr, buf, sizeof(hdr));
  const bool ex = hdr.command & kEx;
  const uint32_t command = hdr.command & IB_USER_VERBS_CMD_COMMAND_MASK;
  const Method* m = nullptr;
  for (const Method& k : kMethods)
    if (k.command == command && k.ex == ex) m = &k;
  if (!m) {
    trace("write: command %u%s not implemented", command, ex ? " (extended)" : "");
    return errno = EOPNOTSUPP, -1;
  }
  const uint8_t* bytes = static_cast<const uint8_t*>(buf);
  Command c;
  if (ex) {
    ib_uverbs_ex_cmd_hdr xh;
    if (len < sizeof(hdr) + sizeof(xh)) return errno = EINVAL, -1;
    std::memcpy(&xh, bytes + sizeof(hdr), sizeof(xh));
    const size_t body = len - sizeof(hdr) - sizeof(xh);
    if ((size_t{hdr.in_words} + xh.provider_in_words) * 8 != body || xh.cmd_hdr_reserved)
      return errno = EINVAL, -1;
    if (!xh.response && (hdr.out_words || xh.provider_out_words)) return errno = EINVAL, -1;
    c.core_in = bytes + sizeof(hdr) + sizeof(xh);
    c.core_in_len = size_t{hdr.in_words} * 8;
    c.core_out = reinterpret_cast<uint8_t*>(xh.response);
    c.core_out_len = size_t{hdr.out_words} * 8;
    c.udata = {c.core_in + c.core_in_len, size_t{xh.provider_in_words} * 8,
               c.core_out ? c.core_out + c.core_out_len : nullptr,
               size_t{xh.provider_out_words} * 8};
  } else {
    if (size_t{hdr.in_words} * 4 != len) return errno = EINVAL, -1;
    if (len < sizeof(hdr) + m->req || size_t{hdr.out_words} * 4 < m->resp)
      return errno = ENOSPC, -1;
    c.core_in = bytes + sizeof(hdr);
    c.core_in_len = m->req;
    uint64_t response = 0;
    if (m->resp) std::memcpy(&response, c.core_in, sizeof(response));
    c.core_out = reinterpret_cast<uint8_t*>(response);
    c.core_out_len = m->resp;
    c.udata = {c.core_in + m->req, len - sizeof(hdr) - m->req,
               c.core_out ? c.core_out + m->resp : nullptr, size_t{hdr.out_words} * 4 - m->resp};
  }
  if (ex && (c.core_in_len < m->req || (c.core_out && c.core_out_len < m->resp)))
    return errno = ENOSPC, -1;
  if (m->needs_context && !f.has_context) return errno = EINVAL, -1;
  const int rc = m->handler(f, c);
  trace("write %s: %s", m->name, rc ? std::strerror(rc) : "ok");
  if (rc) return errno = rc, -1;
  return static_cast<long>(len);
}

}  // namespace mori::emulated_kernel
