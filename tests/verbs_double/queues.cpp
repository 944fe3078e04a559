// The verbs double's CQs and RC QPs: creation, ibv_modify_qp against the kernel's rules
// (qp_rules.cpp for the state table; the value checks below), and destruction in the order the
// kernel insists on. The rings are those of the device's rdma-core provider, so that the direct
// verbs report what hardware would. Ionic devices: ionic.cpp. Others, after rdma-core 44's mlx5
// provider: a CQ asked for `cqe` entries is a ring of roundup_pow_of_two(cqe + 1)
// (providers/mlx5/cq.c, mlx5_create_cq: align_queue_size(cqe + 1)), and the send queue holds
// max_send_wr WQEs of the size mlx5_calc_send_wqe gives (providers/mlx5/verbs.c), in 64-byte
// WQEBBs, rounded up to a power of two (mlx5_calc_sq_size). The per-WQE overhead depends on the
// send operations the QP may post (sq_overhead): a plain ibv_create_qp RC QP gets rdma-core's
// default set, which includes bind-MW and local-invalidate, so every WQE is sized for a UMR.
// tests/emulated_kernel checks the same numbers against the real libmlx5.
#include <infiniband/mlx5dv.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "double_state.hpp"

using verbs_double::DeviceSpec;
using verbs_double::QpRecord;
using namespace verbs_double::internal;

namespace {

uint32_t roundup_pow2(uint64_t v) {
  uint32_t p = 1;
  while (p < v) p <<= 1;
  return p;
}

// The send operations rdma-core 44 assumes for an RC QP made without
// IBV_QP_INIT_ATTR_SEND_OPS_FLAGS (providers/mlx5/verbs.c, sq_overhead).
constexpr uint64_t kDefaultRcSendOps =
    IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_INV | IBV_QP_EX_WITH_SEND_WITH_IMM |
    IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | IBV_QP_EX_WITH_RDMA_READ |
    IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP | IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD |
    IBV_QP_EX_WITH_LOCAL_INV | IBV_QP_EX_WITH_BIND_MW;

// The largest WQE the provider accepts: the kernel's max_sq_desc_sz in the alloc_ucontext response
// (drivers/infiniband/hw/mlx5/main.c, mlx5_ib_alloc_ucontext: MLX5_CAP_GEN(max_wqe_sz_sq), 512 on
// ConnectX-5 to -7); mlx5_calc_send_wqe refuses a larger one.
constexpr uint32_t kMaxSqDescSz = 512;

// Bytes of a WQE's segments before its data, for an RC QP that may post `ops`
// (providers/mlx5/verbs.c, _sq_overhead; segment sizes from mlx5dv.h).
uint32_t sq_overhead(uint64_t ops) {
  uint32_t size = sizeof(mlx5_wqe_ctrl_seg);
  if (ops &
      (IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | IBV_QP_EX_WITH_RDMA_READ))
    size = std::max<uint32_t>(size, sizeof(mlx5_wqe_ctrl_seg) + sizeof(mlx5_wqe_raddr_seg));
  if (ops & (IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP | IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD))
    size = std::max<uint32_t>(
        size, sizeof(mlx5_wqe_ctrl_seg) + sizeof(mlx5_wqe_raddr_seg) + sizeof(mlx5_wqe_atomic_seg));
  if (ops & (IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_LOCAL_INV))
    size = std::max<uint32_t>(size, sizeof(mlx5_wqe_ctrl_seg) + sizeof(mlx5_wqe_umr_ctrl_seg) +
                                        sizeof(mlx5_wqe_mkey_context_seg) +
                                        std::max<uint32_t>(sizeof(mlx5_wqe_umr_klm_seg), 64));
  return size;
}

// The SQ's WQEBBs (mlx5_calc_send_wqe, then mlx5_calc_sq_size), or 0 when the provider refuses
// the WQE size (EINVAL).
uint32_t sq_wqebbs(const ibv_qp_cap& cap, uint64_t ops) {
  const uint32_t overhead = sq_overhead(ops);
  const uint32_t inl =
      cap.max_inline_data
          ? overhead + (sizeof(mlx5_wqe_inl_data_seg) + cap.max_inline_data + 15) / 16 * 16
          : 0;
  const uint32_t gather = overhead + sizeof(mlx5_wqe_data_seg) * cap.max_send_sge;
  const uint32_t wqe = (std::max(inl, gather) + 63) / 64 * 64;
  if (std::max(inl, gather) > kMaxSqDescSz) return 0;
  return roundup_pow2(uint64_t{std::max(cap.max_send_wr, 1u)} * wqe) / 64;
}

// The checks on attribute values that the kernel core and the drivers make once the mask is
// acceptable: ports in range (ib_uverbs modify_qp, rdma_is_port_valid), a GRH on RoCE
// (rdma_check_ah_attr), a source GID in the table, a path MTU the port carries, and read/atomic
// depths within the device's limits: the initiator's (max_rd_atomic) within max_qp_init_rd_atom,
// the responder's (max_dest_rd_atomic) within max_qp_rd_atom (as hns_roce_qp.c's
// check_qp_attr and mthca_qp.c's mthca_modify_qp check them). "" when all is well.
std::string check_values(const Qp& q, const ibv_qp_attr& a, int mask) {
  const DeviceSpec& s = q.context->device->spec;
  const QpRecord& r = fabric().history[q.record];
  if ((mask & IBV_QP_PORT) && bad_port(s, a.port_num))
    return port_refusal("port_num", s, a.port_num);
  const uint32_t port = mask & IBV_QP_PORT ? a.port_num : r.port;
  if (mask & IBV_QP_AV) {
    const ibv_ah_attr& ah = a.ah_attr;
    if (bad_port(s, ah.port_num)) return port_refusal("ah_attr.port_num", s, ah.port_num);
    if (s.ethernet && !ah.is_global) return "RoCE needs a GRH, and ah_attr.is_global is 0";
    if (ah.is_global && ah.grh.sgid_index >= s.gids.size())
      return "sgid_index " + std::to_string(ah.grh.sgid_index) + " is beyond " + s.name +
             "'s GID table (" + std::to_string(s.gids.size()) + " entries)";
    if (ah.is_global && empty_gid(s.gids[ah.grh.sgid_index].raw))
      return "sgid_index " + std::to_string(ah.grh.sgid_index) + " names an empty GID entry";
  }
  if ((mask & IBV_QP_PATH_MTU) && (a.path_mtu < IBV_MTU_256 || a.path_mtu > s.active_mtu))
    return "path_mtu " + std::to_string(mtu_bytes(a.path_mtu)) + " exceeds " + s.name + " port " +
           std::to_string(port) + "'s active MTU " + std::to_string(mtu_bytes(s.active_mtu));
  if ((mask & IBV_QP_MAX_QP_RD_ATOMIC) && a.max_rd_atomic > s.max_qp_init_rd_atom)
    return "max_rd_atomic " + std::to_string(a.max_rd_atomic) +
           " exceeds the device's max_qp_init_rd_atom " + std::to_string(s.max_qp_init_rd_atom);
  if ((mask & IBV_QP_MAX_DEST_RD_ATOMIC) && a.max_dest_rd_atomic > s.max_qp_rd_atom)
    return "max_dest_rd_atomic " + std::to_string(a.max_dest_rd_atomic) +
           " exceeds the device's max_qp_rd_atom " + std::to_string(s.max_qp_rd_atom);
  if ((mask & IBV_QP_TIMEOUT) && a.timeout > 31)
    return "timeout " + std::to_string(a.timeout) + " exceeds 31";
  if (((mask & IBV_QP_RETRY_CNT) && a.retry_cnt > 7) ||
      ((mask & IBV_QP_RNR_RETRY) && a.rnr_retry > 7))
    return "retry_cnt and rnr_retry are 3-bit counts (at most 7)";
  return "";
}

// Keeps what the transition told the QP in its record.
void apply(Qp& q, QpRecord& r, const ibv_qp_attr& a, int mask, ibv_qp_state cur,
           ibv_qp_state next) {
  r.transitions.push_back({cur, next, mask});
  r.state = q.qp.state = next;
  if (mask & IBV_QP_PORT) r.port = a.port_num;
  if (mask & IBV_QP_AV) {
    r.is_global = a.ah_attr.is_global;
    r.sl = a.ah_attr.sl;
    r.traffic_class = a.ah_attr.is_global ? a.ah_attr.grh.traffic_class : 0;
    std::memcpy(r.dgid, a.ah_attr.grh.dgid.raw, sizeof(r.dgid));
    r.sgid_index = a.ah_attr.is_global ? a.ah_attr.grh.sgid_index : -1;
  }
  if (mask & IBV_QP_PATH_MTU) r.path_mtu = a.path_mtu;
  if (mask & IBV_QP_DEST_QPN) r.dest_qpn = a.dest_qp_num;
  // The kernel masks PSNs to their 24 bits (_ib_modify_qp).
  if (mask & IBV_QP_RQ_PSN) r.rq_psn = a.rq_psn & 0xffffff;
  if (mask & IBV_QP_SQ_PSN) r.sq_psn = a.sq_psn & 0xffffff;
  if (mask & IBV_QP_MAX_QP_RD_ATOMIC) r.max_rd_atomic = a.max_rd_atomic;
  if (mask & IBV_QP_MAX_DEST_RD_ATOMIC) r.max_dest_rd_atomic = a.max_dest_rd_atomic;
}

}  // namespace

namespace verbs_double::internal {

ibv_qp* file_qp(Fabric& f, std::unique_ptr<Qp> q, void* qp_context) {
  Pd* p = q->pd;
  Cq* send = q->send_cq;
  Cq* recv = q->recv_cq;
  q->qp.context = &p->context->vctx.context;
  q->qp.qp_context = qp_context;
  q->qp.pd = &p->pd;
  q->qp.send_cq = &send->cq;
  q->qp.recv_cq = &recv->cq;
  q->qp.handle = f.next_handle++;
  q->qp.qp_num = f.next_qpn++;
  q->qp.state = IBV_QPS_RESET;
  q->qp.qp_type = IBV_QPT_RC;
  ++p->qps;
  ++send->qps;
  if (recv != send) ++recv->qps;
  QpRecord r;
  r.device = p->context->device->spec.name;
  r.qpn = q->qp.qp_num;
  r.cq_entries = send->entries;
  r.sq_wqebbs = q->wqe_cnt;
  r.send_ops = q->send_ops;
  if (p->context->ionic()) {
    r.cq_entries = send->rings[q->udma_idx].depth();
    r.udma_idx = q->udma_idx;
    r.sq_in_cmb = q->sq_cmb & kIonicCmbEnable;
  }
  q->record = f.history.size();
  f.history.push_back(r);
  return keep(f.qps, std::move(q), &Qp::qp);
}

int modify_qp_locked(Fabric& f, Qp& q, const ibv_qp_attr& attr, int mask, const std::string& call) {
  const ibv_qp_state cur = mask & IBV_QP_CUR_STATE ? attr.cur_qp_state : q.qp.state;
  const ibv_qp_state next = mask & IBV_QP_STATE ? attr.qp_state : cur;
  const std::string where = call + " " + state_name(cur) + "->" + state_name(next) + ": ";
  if (cur > IBV_QPS_ERR || next > IBV_QPS_ERR) return refuse(f, EINVAL, where + "unknown state");
  std::string why = check_rc_transition(cur, next, mask);
  if (why.empty()) why = check_values(q, attr, mask);
  if (!why.empty()) return refuse(f, EINVAL, where + why);
  apply(q, f.history[q.record], attr, mask, cur, next);
  return 0;
}

int destroy_qp_locked(Fabric& f, Qp& q, const std::string& call) {
  if (served(f, q))
    return refuse(f, EBUSY,
                  call + ": a software NIC still serves QP " + std::to_string(q.qp.qp_num) +
                      " (destroy the NicBacking first)");
  --q.pd->qps;
  --q.send_cq->qps;
  if (q.recv_cq != q.send_cq) --q.recv_cq->qps;
  if (q.sq_umem) --q.sq_umem->users;
  if (q.rq_umem) --q.rq_umem->users;
  f.history[q.record].destroyed = true;
  f.qps.erase(&q.qp);
  return 0;
}

// A CQ that a QP still uses cannot be destroyed (ib_destroy_cq_user: usecnt, EBUSY).
int destroy_cq_locked(Fabric& f, Cq& c, const std::string& call) {
  if (c.qps)
    return refuse(f, EBUSY,
                  call + ": CQ " + std::to_string(c.cqn) + " still has " + std::to_string(c.qps) +
                      " QP(s) attached; destroy them first");
  if (c.umem) --c.umem->users;
  f.cqs.erase(&c.cq);
  return 0;
}

// The verbs context's create_qp_ex op (verbs.h's inline ibv_create_qp_ex calls it), and the body
// of ibv_create_qp, which rdma-core also routes through it (libibverbs verbs.c, ibv_create_qp ->
// the provider's create_qp -> mlx5's create_qp with the default send-op set).
ibv_qp* create_qp_ex(ibv_context* context, ibv_qp_init_attr_ex* init) {
  Fabric& f = fabric();
  std::lock_guard<std::mutex> lock(f.mutex);
  // providers/mlx5/verbs.c, create_qp: comp_mask beyond MLX5_CREATE_QP_SUP_COMP_MASK is refused;
  // the double models the PD and the send-op set of it.
  if (init->comp_mask & ~uint32_t{IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS})
    return refuse_null(f, EOPNOTSUPP,
                       "create_qp: the double models comp_mask PD and SEND_OPS_FLAGS only");
  Pd* p = find(f.pds, init->pd);
  if (!p || &p->context->vctx.context != context)
    return refuse_null(f, EINVAL, "create_qp: not a PD of the fabric's context");
  if (init->qp_type != IBV_QPT_RC)
    return refuse_null(f, EOPNOTSUPP, "create_qp: the double models RC QPs only");
  if (init->srq) return refuse_null(f, EOPNOTSUPP, "create_qp: the double has no SRQs");
  Cq* send = find(f.cqs, init->send_cq);
  Cq* recv = find(f.cqs, init->recv_cq);
  if (!send || !recv) return refuse_null(f, EINVAL, "create_qp: a CQ that is not of the fabric");
  // The kernel looks the CQ up among the objects of the PD's context: one of another fails.
  if (send->context != p->context || recv->context != p->context)
    return refuse_null(f, EINVAL, "create_qp: the CQ belongs to another context than the PD");
  const DeviceSpec& s = p->context->device->spec;
  ibv_qp_cap& cap = init->cap;
  if (cap.max_send_wr > static_cast<uint32_t>(s.max_qp_wr) ||
      cap.max_recv_wr > static_cast<uint32_t>(s.max_qp_wr) || cap.max_send_sge > 30 ||
      cap.max_recv_sge > 30)
    return refuse_null(f, EINVAL,
                       "create_qp: capabilities beyond the device's max_qp_wr or max_sge");
  const bool explicit_ops = init->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
  const uint64_t ops = explicit_ops ? init->send_ops_flags : kDefaultRcSendOps;
  // providers/mlx5/qp.c, mlx5_qp_fill_wr_pfns: RC takes MLX5_SUPPORTED_SEND_OPS_FLAGS_RC only.
  if (ops & ~kDefaultRcSendOps)
    return refuse_null(f, EOPNOTSUPP, "create_qp: send_ops_flags beyond what an RC QP supports");
  auto q = std::make_unique<Qp>();
  q->context = p->context;
  q->pd = p;
  q->send_cq = send;
  q->recv_cq = recv;
  if (p->context->ionic()) {
    if (explicit_ops)  // AMD's ionic provider is driven with plain ibv_create_qp (verbs_qp.cpp)
      return refuse_null(f, EOPNOTSUPP, "create_qp: the double's Ionic QPs take no send_ops_flags");
    if (std::string why = ionic_create_qp(*q, cap, f.next_qpn); !why.empty())
      return refuse_null(f, EINVAL, "create_qp: " + why);
  } else {
    q->wqe_cnt = sq_wqebbs(cap, ops);
    if (!q->wqe_cnt)
      return refuse_null(f, EINVAL, "create_qp: a WQE beyond the device's max_sq_desc_sz");
    q->sq.assign(size_t{q->wqe_cnt} * 64, 0);
  }
  q->send_ops = explicit_ops || !p->context->ionic() ? ops : 0;
  return file_qp(f, std::move(q), init->qp_context);
}

}  // namespace verbs_double::internal

extern "C" {

ibv_cq* ibv_create_cq(ibv_context* context, int cqe, void* cq_context, ibv_comp_channel* channel,
                      int comp_vector) {
  Fabric& f = fabric();
  std::lock_guard<std::mutex> lock(f.mutex);
  Context* c = find(f.contexts, context);
  if (!c) return refuse_null(f, EINVAL, "create_cq: not an open context");
  if (channel)
    return refuse_null(f, EOPNOTSUPP, "create_cq: the double has no completion channels");
  if (cqe < 1 || cqe > c->device->spec.max_cqe)
    return refuse_null(f, EINVAL,
                       "create_cq: cqe " + std::to_string(cqe) + " is outside 1.." +
                           std::to_string(c->device->spec.max_cqe));
  if (comp_vector < 0 || comp_vector >= context->num_comp_vectors)
    return refuse_null(
        f, EINVAL,
        "create_cq: comp_vector " + std::to_string(comp_vector) + " is not one of the context's");
  auto cq = std::make_unique<Cq>();
  cq->context = c;
  if (c->ionic()) {
    if (std::string why = ionic_create_cq(f, *cq, cqe); !why.empty())
      return refuse_null(f, EINVAL, "create_cq: " + why);
  } else {
    cq->entries = roundup_pow2(uint64_t(cqe) + 1);
    cq->cqn = f.next_cqn++;
    cq->buf.assign(size_t{cq->entries} * 64, 0);
    cq->cq.cqe = static_cast<int>(cq->entries) - 1;
    // As rdma-core's mlx5 provider hands a new CQ over (cq.c, mlx5_alloc_cq_buf): every CQE's
    // op_own says MLX5_CQE_INVALID with owner 0, so that no entry reads as a completion before the
    // NIC writes one. (BNXT devices get the same ring, zeroed.)
    if (c->device->spec.family == verbs_double::Family::kMlx5)
      for (uint32_t i = 0; i < cq->entries; ++i)
        cq->buf[size_t{i} * 64 + 63] = MLX5_CQE_INVALID << 4;
  }
  cq->cq.context = context;
  cq->cq.cq_context = cq_context;
  cq->cq.handle = f.next_handle++;
  return keep(f.cqs, std::move(cq), &Cq::cq);
}

int ibv_destroy_cq(ibv_cq* cq) {
  Fabric& f = fabric();
  std::lock_guard<std::mutex> lock(f.mutex);
  Cq* c = find(f.cqs, cq);
  if (!c) return refuse(f, EINVAL, "destroy_cq: not a CQ of the fabric");
  return destroy_cq_locked(f, *c, "destroy_cq");
}

ibv_qp* ibv_create_qp(ibv_pd* pd, ibv_qp_init_attr* init) {
  ibv_qp_init_attr_ex ex{};
  std::memcpy(&ex, init, sizeof(*init));  // ibv_qp_init_attr is the head of the _ex struct
  ex.comp_mask = IBV_QP_INIT_ATTR_PD;
  ex.pd = pd;
  ibv_qp* qp = create_qp_ex(pd ? pd->context : nullptr, &ex);
  if (qp) init->cap = ex.cap;
  return qp;
}

int ibv_modify_qp(ibv_qp* qp, ibv_qp_attr* attr, int mask) {
  Fabric& f = fabric();
  std::lock_guard<std::mutex> lock(f.mutex);
  Qp* q = find(f.qps, qp);
  if (!q) return refuse(f, EINVAL, "modify_qp: not a QP of the fabric");
  return modify_qp_locked(f, *q, *attr, mask, "modify_qp");
}

int ibv_destroy_qp(ibv_qp* qp) {
  Fabric& f = fabric();
  std::lock_guard<std::mutex> lock(f.mutex);
  Qp* q = find(f.qps, qp);
  if (!q) return refuse(f, EINVAL, "destroy_qp: not a QP of the fabric");
  return destroy_qp_locked(f, *q, "destroy_qp");
}

}  // extern "C"
