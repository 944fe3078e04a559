// The core's CQ and QP commands (drivers/infiniband/core/uverbs_cmd.c create_cq, create_qp,
// modify_qp, ib_uverbs_destroy_*; the state rules of core/verbs.c ib_modify_qp_is_ok), with the
// driver's part in mlx5_driver.cpp. Each returns 0 or a positive errno.
#include <infiniband/verbs.h>
#include <rdma/ib_user_ioctl_verbs.h>
#include <rdma/ib_user_verbs.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "hca_state.hpp"
#include "uverbs_cmd.hpp"

// tests/verbs_double/qp_rules.cpp: the RC column of the kernel's qp_state_table, shared with the
// verbs double (linked into the shim from there).
namespace verbs_double::internal {
std::string check_rc_transition(ibv_qp_state cur, ibv_qp_state next, int mask);
}

namespace mori::emulated_kernel {
namespace {

// create_cq: the completion vector must exist (comp_vector < num_comp_vectors), the channel,
// when given, must be an open one; mlx5_ib_create_cq bounds the size by log_max_cq_sz and makes
// roundup_pow_of_two(cqe + 1) entries, of which it reports entries - 1.
int make_cq(File& f, uint32_t cqe, uint32_t comp_vector, int32_t channel, const Udata& u,
            ib_uverbs_create_cq_resp* resp) {
  if (comp_vector >= static_cast<uint32_t>(sysconf(_SC_NPROCESSORS_ONLN))) return EINVAL;
  if (channel >= 0 &&
      std::find(f.comp_channels.begin(), f.comp_channels.end(), channel) == f.comp_channels.end())
    return EINVAL;
  if (cqe < 1 || cqe > family().limits.max_cqe) return EINVAL;
  Cq cq;
  cq.handle = f.next_handle++;
  if (int rc = driver().create_cq(f, cq, cqe, u)) return rc;
  resp->cq_handle = cq.handle;
  resp->cqe = cq.entries - 1;
  trace("create_cq cqe %u: cqn 0x%x, %u entries of %u bytes at 0x%llx", cqe, cq.cqn, cq.entries,
        cq.cqe_size, (unsigned long long)cq.buf);
  f.cqs[cq.handle] = cq;
  return 0;
}

Qp* qp_of(File& f, uint32_t handle) {
  const auto q = f.qps.find(handle);
  return q == f.qps.end() ? nullptr : &q->second;
}

// The attributes both create_qp forms carry (uverbs_cmd.c create_qp): an RC QP on this file's
// PD and CQs; no SRQ, no XRC, no create flags (the kernel refuses unknown ones; mlx5 supports
// others that no caller here asks for).
struct QpRequest {
  uint32_t pd_handle, send_cq, recv_cq, srq_handle;
  uint32_t max_send_wr, max_recv_wr, max_send_sge, max_recv_sge, max_inline_data;
  uint8_t sq_sig_all, qp_type, is_srq;
  uint32_t create_flags;
};

int make_qp(File& f, const QpRequest& r, const Udata& u, ib_uverbs_create_qp_resp* resp) {
  if (r.qp_type != IB_UVERBS_QPT_RC) return EOPNOTSUPP;  // this emulation makes RC QPs only
  if (r.is_srq || r.create_flags) return EOPNOTSUPP;
  const auto pd = f.pds.find(r.pd_handle);
  if (pd == f.pds.end() || !f.cqs.count(r.send_cq) || !f.cqs.count(r.recv_cq)) return EINVAL;
  // mlx5's create_qp checks (qp.c check_qp_attr / set_rq_size / calc_sq_size): the depths
  // within log_max_qp_sz, the SGEs within max_sge.
  const Limits& l = family().limits;
  if (r.max_send_wr > l.max_qp_wr || r.max_recv_wr > l.max_qp_wr || r.max_send_sge > l.max_sge ||
      r.max_recv_sge > l.max_sge)
    return EINVAL;
  Qp qp;
  qp.handle = f.next_handle++;
  qp.pd_handle = r.pd_handle;
  qp.send_cq = r.send_cq;
  qp.recv_cq = r.recv_cq;
  qp.max_send_wr = r.max_send_wr;
  qp.max_recv_wr = r.max_recv_wr;
  qp.max_send_sge = r.max_send_sge;
  qp.max_recv_sge = r.max_recv_sge;
  qp.max_inline_data = r.max_inline_data;
  qp.sq_sig_all = r.sq_sig_all;
  // Numbered first: a driver may return the number in its udata (bnxt_re: qpid).
  qp.qpn = hca::add_qp(pd->second);
  if (!qp.qpn) return ENOMEM;
  if (int rc = driver().create_qp(f, qp, u)) {
    hca::remove_qp(qp.qpn);
    return rc;
  }
  f.cqs[qp.send_cq].users++;
  f.cqs[qp.recv_cq].users++;
  resp->qp_handle = qp.handle;
  resp->qpn = qp.qpn;
  resp->max_send_wr = qp.max_send_wr;
  resp->max_recv_wr = qp.max_recv_wr;
  resp->max_send_sge = qp.max_send_sge;
  resp->max_recv_sge = qp.max_recv_sge;
  resp->max_inline_data = qp.max_inline_data;
  trace(
      "create_qp qpn 0x%x: max_send_wr %u, inline %u -> %u WQEBBs at 0x%llx + 0x%llx, "
      "rq %u x %u, dbrec 0x%llx",
      qp.qpn, r.max_send_wr, r.max_inline_data, qp.sq_wqe_cnt, (unsigned long long)qp.buf,
      (unsigned long long)qp.sq_offset, qp.rq_wqe_cnt, 1u << qp.rq_wqe_shift,
      (unsigned long long)qp.dbrec);
  f.qps[qp.handle] = qp;
  return 0;
}

// modify_qp (uverbs_cmd.c) and mlx5_ib_modify_qp (hw/mlx5/qp.c), in the order they check:
// the states within enum ib_qp_state, the ports valid (rdma_is_port_valid), the transition and
// its attribute mask (ib_modify_qp_is_ok), a RoCE address with a GRH (rdma_check_ah_attr) whose
// source GID exists (rdma_get_gid_attr), the P_Key index within the table, the read/atomic
// depths within log_max_ra_res_qp / log_max_ra_req_qp, the path MTU within 256..4096.
int change_qp(File& f, const ib_uverbs_modify_qp& m) {
  Qp* qp = qp_of(f, m.qp_handle);
  if (!qp) return EINVAL;
  const uint32_t mask = m.attr_mask;
  if (((mask & IBV_QP_STATE) && m.qp_state > IBV_QPS_ERR) ||
      ((mask & IBV_QP_CUR_STATE) && m.cur_qp_state > IBV_QPS_ERR))
    return EINVAL;
  if ((mask & IBV_QP_PORT) && m.port_num != 1) return EINVAL;
  if ((mask & IBV_QP_AV) && m.dest.port_num != 0 && m.dest.port_num != 1) return EINVAL;
  const int cur = (mask & IBV_QP_CUR_STATE) ? m.cur_qp_state : qp->state;
  const int next = (mask & IBV_QP_STATE) ? m.qp_state : cur;
  const std::string why = verbs_double::internal::check_rc_transition(
      static_cast<ibv_qp_state>(cur), static_cast<ibv_qp_state>(next), static_cast<int>(mask));
  if (!why.empty()) {
    trace("modify_qp 0x%x %d->%d mask 0x%x: %s", qp->qpn, cur, next, mask, why.c_str());
    return EINVAL;
  }
  if (mask & IBV_QP_AV) {
    if (!m.dest.is_global) return EINVAL;  // RoCE: every packet carries a GRH
    if (m.dest.sgid_index > family().sysfs.roce_v2_ipv4_gid_index) return EINVAL;  // empty GID
  }
  const Limits& l = family().limits;
  if ((mask & IBV_QP_PKEY_INDEX) && m.pkey_index >= l.max_pkeys) return EINVAL;
  if ((mask & IBV_QP_MAX_QP_RD_ATOMIC) && m.max_rd_atomic > l.max_qp_init_rd_atom) return EINVAL;
  if ((mask & IBV_QP_MAX_DEST_RD_ATOMIC) && m.max_dest_rd_atomic > l.max_qp_rd_atom) return EINVAL;
  if ((mask & IBV_QP_PATH_MTU) && (m.path_mtu < IBV_MTU_256 || m.path_mtu > IBV_MTU_4096))
    return EINVAL;
  if (mask & IBV_QP_ACCESS_FLAGS) qp->access = m.qp_access_flags;
  if (mask & IBV_QP_PORT) qp->port = m.port_num;
  if (mask & IBV_QP_AV) qp->sgid_index = m.dest.sgid_index, qp->is_global = true;
  if (mask & IBV_QP_PATH_MTU) qp->path_mtu = m.path_mtu;
  if (mask & IBV_QP_DEST_QPN) qp->dest_qpn = m.dest_qp_num & 0xffffff;
  if (mask & IBV_QP_RQ_PSN) qp->rq_psn = m.rq_psn & 0xffffff;
  if (mask & IBV_QP_SQ_PSN) qp->sq_psn = m.sq_psn & 0xffffff;
  if (mask & IBV_QP_MAX_QP_RD_ATOMIC) qp->max_rd_atomic = m.max_rd_atomic;
  if (mask & IBV_QP_MAX_DEST_RD_ATOMIC) qp->max_dest_rd_atomic = m.max_dest_rd_atomic;
  const int before = qp->state;
  qp->state = next;
  hca::update_qp(qp->qpn, static_cast<uint32_t>(next), qp->dest_qpn);
  trace("modify_qp 0x%x %d->%d mask 0x%x", qp->qpn, before, next, mask);
  if (next == IBV_QPS_RTS && before != IBV_QPS_RTS) nic_start(f, *qp);
  if (next == IBV_QPS_RESET || next == IBV_QPS_ERR) nic_stop(qp->qpn);
  return 0;
}

}  // namespace

int create_cq(File& f, const Command& c) {
  ib_uverbs_create_cq cmd;
  ib_uverbs_create_cq_resp resp{};
  std::memcpy(&cmd, c.core_in, sizeof(cmd));
  if (int rc = make_cq(f, cmd.cqe, cmd.comp_vector, cmd.comp_channel, c.udata, &resp)) return rc;
  std::memcpy(c.core_out, &resp, sizeof(resp));
  return 0;
}

int ex_create_cq(File& f, const Command& c) {
  ib_uverbs_ex_create_cq cmd;
  ib_uverbs_ex_create_cq_resp resp{};
  std::memcpy(&cmd, c.core_in, sizeof(cmd));
  if (cmd.comp_mask || cmd.reserved) return EINVAL;
  if (cmd.flags) return EOPNOTSUPP;  // timestamps / ignore-overrun: not emulated
  if (int rc = make_cq(f, cmd.cqe, cmd.comp_vector, cmd.comp_channel, c.udata, &resp.base))
    return rc;
  resp.response_length = static_cast<uint32_t>(std::min(c.core_out_len, sizeof(resp)));
  std::memcpy(c.core_out, &resp, resp.response_length);
  return 0;
}

// ib_destroy_cq_user refuses a CQ that a QP still uses (its usecnt): EBUSY.
int destroy_cq(File& f, const Command& c) {
  ib_uverbs_destroy_cq cmd;
  std::memcpy(&cmd, c.core_in, sizeof(cmd));
  const auto cq = f.cqs.find(cmd.cq_handle);
  if (cq == f.cqs.end()) return EINVAL;
  if (cq->second.users) return EBUSY;
  f.cqs.erase(cq);
  std::memset(c.core_out, 0, sizeof(ib_uverbs_destroy_cq_resp));
  return 0;
}

int create_qp(File& f, const Command& c) {
  ib_uverbs_create_qp cmd;
  std::memcpy(&cmd, c.core_in, sizeof(cmd));
  const QpRequest r{cmd.pd_handle,
                    cmd.send_cq_handle,
                    cmd.recv_cq_handle,
                    cmd.srq_handle,
                    cmd.max_send_wr,
                    cmd.max_recv_wr,
                    cmd.max_send_sge,
                    cmd.max_recv_sge,
                    cmd.max_inline_data,
                    cmd.sq_sig_all,
                    cmd.qp_type,
                    cmd.is_srq,
                    0};
  ib_uverbs_create_qp_resp resp{};
  if (int rc = make_qp(f, r, c.udata, &resp)) return rc;
  std::memcpy(c.core_out, &resp, sizeof(resp));
  return 0;
}

int ex_create_qp(File& f, const Command& c) {
  ib_uverbs_ex_create_qp cmd;
  std::memcpy(&cmd, c.core_in, sizeof(cmd));
  if (cmd.comp_mask & ~uint32_t{IB_UVERBS_CREATE_QP_MASK_IND_TABLE}) return EINVAL;
  if (cmd.comp_mask) return EOPNOTSUPP;  // RSS QPs: raw packet only
  const QpRequest r{cmd.pd_handle,       cmd.send_cq_handle, cmd.recv_cq_handle, cmd.srq_handle,
                    cmd.max_send_wr,     cmd.max_recv_wr,    cmd.max_send_sge,   cmd.max_recv_sge,
                    cmd.max_inline_data, cmd.sq_sig_all,     cmd.qp_type,        cmd.is_srq,
                    cmd.create_flags};
  ib_uverbs_ex_create_qp_resp resp{};
  if (int rc = make_qp(f, r, c.udata, &resp.base)) return rc;
  resp.response_length = static_cast<uint32_t>(std::min(c.core_out_len, sizeof(resp)));
  std::memcpy(c.core_out, &resp, resp.response_length);
  return 0;
}

int modify_qp(File& f, const Command& c) {
  ib_uverbs_modify_qp cmd;
  std::memcpy(&cmd, c.core_in, sizeof(cmd));
  return change_qp(f, cmd);
}

// ib_uverbs_ex_modify_qp: only IBV_QP_RATE_LIMIT beyond the legacy mask, for raw packet QPs.
int ex_modify_qp(File& f, const Command& c) {
  ib_uverbs_ex_modify_qp cmd;
  std::memcpy(&cmd, c.core_in, sizeof(cmd));
  if (cmd.base.attr_mask & ~((IBV_QP_RATE_LIMIT << 1) - 1)) return EOPNOTSUPP;
  if (cmd.reserved) return EINVAL;
  if (c.core_out) std::memset(c.core_out, 0, c.core_out_len);
  return change_qp(f, cmd.base);
}

// ib_uverbs_query_qp: what modify_qp recorded.
int query_qp(File& f, const Command& c) {
  ib_uverbs_query_qp cmd;
  std::memcpy(&cmd, c.core_in, sizeof(cmd));
  const Qp* qp = qp_of(f, cmd.qp_handle);
  if (!qp) return EINVAL;
  ib_uverbs_query_qp_resp r{};
  r.qp_state = r.cur_qp_state = static_cast<uint8_t>(qp->state);
  r.max_send_wr = qp->max_send_wr;
  r.max_recv_wr = qp->max_recv_wr;
  r.max_send_sge = qp->max_send_sge;
  r.max_recv_sge = qp->max_recv_sge;
  r.max_inline_data = qp->max_inline_data;
  r.rq_psn = qp->rq_psn;
  r.sq_psn = qp->sq_psn;
  r.dest_qp_num = qp->dest_qpn;
  r.qp_access_flags = qp->access;
  r.path_mtu = qp->path_mtu;
  r.max_rd_atomic = qp->max_rd_atomic;
  r.max_dest_rd_atomic = qp->max_dest_rd_atomic;
  r.port_num = qp->port;
  r.sq_sig_all = qp->sq_sig_all;
  r.dest.is_global = qp->is_global;
  r.dest.sgid_index = qp->sgid_index;
  std::memcpy(c.core_out, &r, sizeof(r));
  return 0;
}

int destroy_qp(File& f, const Command& c) {
  ib_uverbs_destroy_qp cmd;
  std::memcpy(&cmd, c.core_in, sizeof(cmd));
  Qp* qp = qp_of(f, cmd.qp_handle);
  if (!qp) return EINVAL;
  nic_stop(qp->qpn);
  driver().destroy_qp(f, *qp);
  hca::remove_qp(qp->qpn);
  f.cqs[qp->send_cq].users--;
  f.cqs[qp->recv_cq].users--;
  f.qps.erase(cmd.qp_handle);
  std::memset(c.core_out, 0, sizeof(ib_uverbs_destroy_qp_resp));
  return 0;
}

// uverbs_destroy_ufile_hw at close: QPs first, then what they used.
void release_file(File& f) {
  for (auto& [h, qp] : f.qps) {
    nic_stop(qp.qpn);
    driver().destroy_qp(f, qp);
    hca::remove_qp(qp.qpn);
  }
  for (const auto& [h, mr] : f.mrs) hca::remove_mr(mr.lkey);
  for (int fd : f.comp_channels) real_close(fd);
  f.qps.clear();
  f.mrs.clear();
  f.cqs.clear();
  f.pds.clear();
  driver().release(f);
}

}  // namespace mori::emulated_kernel
