// VerbsNetwork's queue pairs: one CQ and one RC QP per (peer PE with RDMA, QP index), exchanged
// through the bootstrap and moved RESET -> INIT -> RTR -> RTS (the sequence and attribute masks
// of ibv_modify_qp(3); the address vector as in rdma-core's libibverbs/examples/rc_pingpong.c).
// BNXT queues are created and moved through Broadcom's direct verbs (verbs_export_bnxt.cpp).
#include <infiniband/verbs.h>

#include <algorithm>
#include <cstring>
#include <random>

#include "rdma/verbs_network.hpp"

namespace mori::rdma {
namespace {

// RC QP timing: RNR retry 7 = forever (we post no receives, so RNR never happens), min RNR timer
// 12 (0.64 ms), rc_pingpong's values; the local ACK timeout and retry count are the settings'
// (MORI_RDMA_TIMEOUT, MORI_RDMA_RETRY_CNT; rc_pingpong's 14 and 7 by default).
constexpr uint8_t kRnrRetry = 7, kMinRnrTimer = 12;

// One QP's address as its peer needs it for RTR. qpn 0 (the SMI QP, never an RC QP) means "no QP":
// the sender does not reach the receiver over RDMA.
struct QpWire {
  uint32_t qpn;
  uint32_t psn;
  uint16_t lid;
  uint8_t mtu;  // ibv_mtu
  uint8_t ethernet;
  uint8_t gid[16];
  uint32_t pad;
};
static_assert(sizeof(QpWire) == 32);

// A QP's capabilities, per family, so that the library makes the ring its provider drives: one
// SGE, no receive queue (one-sided only; the receive SGE is 1 because the ionic kernel driver
// refuses 0 even for an empty receive queue: ionic_controlpath.c, ionic_qp_rq_init), and
//  - MLX5: sq_wqes WQEs of the size max_inline_data 28 implies, which rdma-core rounds to a ring
//    of 64-byte WQEBBs (providers/mlx5/verbs.c, mlx5_calc_sq_size) that export_mlx5 reads back;
//  - Ionic: max_inline_data 32, so that each entry is the provider's 64 bytes, and sq_wqes - 1
//    WQEs, because rdma-core's ionic_queue_init makes a ring of the next power of two above the
//    depth asked (depth_log2 = ilog32(depth): it keeps one slot empty, as the engine does), so
//    that the ring is sq_wqes entries; sq_wqes itself would double it and, at 65536, exceed the
//    0xffff that ionic_qp_sq_init accepts.
ibv_qp_cap send_caps(VerbsNetwork::Family family, uint32_t sq_wqes) {
  ibv_qp_cap cap{};
  const bool ionic = family == VerbsNetwork::Family::kIonic;
  cap.max_send_wr = ionic ? sq_wqes - 1 : sq_wqes;
  cap.max_recv_wr = 0;
  cap.max_send_sge = 1;
  cap.max_recv_sge = 1;
  cap.max_inline_data = ionic ? IonicGeometry::kMaxInlineBytes : Mlx5Geometry::kMaxInlineBytes;
  return cap;
}

Status verbs_error(const std::string& call, int err) {
  return Status::error("rdma: " + call + " failed: " + std::strerror(err ? err : EIO));
}

}  // namespace

Status VerbsNetwork::create_all_queues() {
  const int nq = config_.num_qp_per_pe;
  queues_.assign(static_cast<size_t>(config_.n_pes) * nq, Queue{});
  std::random_device seed;
  std::mt19937 rng(seed());
  for (int pe = 0; pe < config_.n_pes; ++pe) {
    if (!config_.needs_rdma[pe]) continue;
    for (int q = 0; q < nq; ++q) {
      Queue& queue = queues_[static_cast<size_t>(pe) * nq + q];
      const std::string what = " for PE " + std::to_string(pe) + " QP " + std::to_string(q);
      if (family_ == Family::kBnxt) {
        MORI_TRY(create_bnxt_queue(&queue, what));
      } else {
        MORI_TRY(create_verbs_queue(&queue, what));
      }
      queue.psn = rng() & 0xffffff;

      ibv_qp_attr attr{};
      attr.qp_state = IBV_QPS_INIT;
      attr.pkey_index = 0;
      attr.port_num = static_cast<uint8_t>(port_);
      attr.qp_access_flags =
          IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
      if (int rc = modify_qp(queue.qp, &attr,
                             IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
        return verbs_error(modify_call() + "(INIT)" + what, rc);
    }
  }
  return {};
}

// The operations the engine posts: RDMA write (puts, inline puts, signals), read (gets) and both
// atomics. Telling rdma-core so keeps each WQE at what they need: without
// IBV_QP_INIT_ATTR_SEND_OPS_FLAGS, providers/mlx5/verbs.c (sq_overhead) assumes an RC QP may also
// bind memory windows and sizes every WQE for a UMR (192 bytes before the data), which makes the
// SQ of 256 WQEs 1024 WQEBBs, twice the CQ ring (reviews/2026-12-01-bringup.md, B1). With this
// set the overhead is 48 bytes, a WQE with 28 inline bytes 128, and the SQ 512 WQEBBs.
constexpr uint64_t kSendOps = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_READ |
                              IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
                              IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;

// MLX5 and Ionic: a CQ and a QP that the library allocates. The CQ must hold one CQE per WQEBB
// the SQ has (every WQE is signalled, transport/rdma_engine.hpp, and the engine counts its flow
// control in WQEBBs); export_mlx5 checks that against what rdma-core built.
// With a parent domain (verbs_queue_memory.cpp) both are made on it, so that the provider takes
// their rings and doorbell records from its allocators: the CQ through ibv_create_cq_ex with
// IBV_CQ_INIT_ATTR_MASK_PD (plain ibv_create_cq has no PD; providers/mlx5/verbs.c create_cq keeps
// cq_attr->parent_domain), the QP with the parent domain as its PD.
Status VerbsNetwork::create_verbs_queue(Queue* queue, const std::string& what) {
  if (queue_pd_) {
    ibv_cq_init_attr_ex cq_attr{};
    cq_attr.cqe = config_.sq_wqes;
    cq_attr.wc_flags = IBV_WC_STANDARD_FLAGS;
    cq_attr.comp_mask = IBV_CQ_INIT_ATTR_MASK_PD;
    cq_attr.parent_domain = queue_pd_;
    errno = 0;
    ibv_cq_ex* cq = ibv_create_cq_ex(context_, &cq_attr);
    if (!cq) return verbs_error("ibv_create_cq_ex(parent domain)" + what, errno);
    queue->cq = ibv_cq_ex_to_cq(cq);
  } else {
    queue->cq = ibv_create_cq(context_, static_cast<int>(config_.sq_wqes), nullptr, nullptr, 0);
    if (!queue->cq) return verbs_error("ibv_create_cq" + what, errno);
  }
  ibv_qp_init_attr_ex init{};
  init.send_cq = queue->cq;
  init.recv_cq = queue->cq;
  init.qp_type = IBV_QPT_RC;
  init.sq_sig_all = 0;
  init.cap = send_caps(family_, config_.sq_wqes);
  init.pd = queue_pd_ ? queue_pd_ : pd_;
  init.comp_mask = IBV_QP_INIT_ATTR_PD;
  // AMD's ionic provider (not in rdma-core 44) is driven as ROCm/mori drives it, with plain
  // ibv_create_qp; its entry size follows from max_inline_data (send_caps).
  if (family_ == Family::kMlx5) {
    init.comp_mask |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
    init.send_ops_flags = kSendOps;
  }
  errno = 0;
  queue->qp = ibv_create_qp_ex(context_, &init);
  if (!queue->qp)
    return verbs_error(
        std::string("ibv_create_qp_ex") + (queue_pd_ ? "(parent domain)" : "") + what, errno);
  return {};
}

Status VerbsNetwork::connect_queues() {
  const size_t nq = static_cast<size_t>(config_.num_qp_per_pe);
  const size_t n = static_cast<size_t>(config_.n_pes);
  // Send block j: our QPs to PE j. Receive block j: PE j's QPs to us; its QP q pairs with ours.
  std::vector<QpWire> send(n * nq, QpWire{}), recv(n * nq, QpWire{});
  for (size_t i = 0; i < queues_.size(); ++i) {
    if (!queues_[i].qp) continue;
    QpWire& w = send[i];
    w.qpn = queues_[i].qp->qp_num;
    w.psn = queues_[i].psn;
    w.lid = lid_;
    w.mtu = static_cast<uint8_t>(mtu_);
    w.ethernet = ethernet_;
    std::memcpy(w.gid, gid_, sizeof(w.gid));
  }
  MORI_TRY(boot_->alltoall(send.data(), recv.data(), nq * sizeof(QpWire)));

  Status local;
  for (size_t i = 0; i < queues_.size() && local.ok(); ++i) {
    const QpWire& peer = recv[i];
    const int pe = static_cast<int>(i / nq);
    const std::string what = " for PE " + std::to_string(pe) + " QP " + std::to_string(i % nq);
    if (!queues_[i].qp != !peer.qpn) {
      local = Status::error("rdma: PE " + std::to_string(config_.rank) +
                            (peer.qpn ? " does not expect" : " expects") + " RDMA with PE " +
                            std::to_string(pe) + ", which " + (peer.qpn ? "does" : "does not") +
                            ": needs_rdma must be symmetric");
      break;
    }
    if (!peer.qpn) continue;
    if (bool(peer.ethernet) != ethernet_) {
      local = Status::error("rdma: PE " + std::to_string(pe) + "'s port is " +
                            (peer.ethernet ? "RoCE" : "InfiniBand") + ", ours is not");
      break;
    }
    ibv_qp_attr attr{};
    attr.qp_state = IBV_QPS_RTR;
    attr.path_mtu = static_cast<ibv_mtu>(std::min<int>(mtu_, peer.mtu));
    queues_[i].path_mtu_bytes = 128u << attr.path_mtu;  // IBV_MTU_256 = 1, ... IBV_MTU_4096 = 5
    attr.dest_qp_num = peer.qpn;
    attr.rq_psn = peer.psn;
    attr.max_dest_rd_atomic = static_cast<uint8_t>(max_dest_rd_atomic_);
    attr.min_rnr_timer = kMinRnrTimer;
    attr.ah_attr.port_num = static_cast<uint8_t>(port_);
    attr.ah_attr.dlid = peer.lid;
    attr.ah_attr.sl = config_.service_level;
    if (ethernet_) {  // RoCE routes by GID: a GRH on every packet
      attr.ah_attr.is_global = 1;
      std::memcpy(attr.ah_attr.grh.dgid.raw, peer.gid, sizeof(peer.gid));
      attr.ah_attr.grh.sgid_index = static_cast<uint8_t>(gid_index_);
      attr.ah_attr.grh.hop_limit = 255;
      attr.ah_attr.grh.traffic_class = config_.traffic_class;
    }
    if (int rc = modify_qp(queues_[i].qp, &attr,
                           IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                               IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER)) {
      local = verbs_error(modify_call() + "(RTR)" + what, rc);
      break;
    }
    attr = ibv_qp_attr{};
    attr.qp_state = IBV_QPS_RTS;
    attr.timeout = config_.timeout;
    attr.retry_cnt = config_.retry_cnt;
    attr.rnr_retry = kRnrRetry;
    attr.sq_psn = queues_[i].psn;
    attr.max_rd_atomic = static_cast<uint8_t>(max_rd_atomic_);
    if (int rc = modify_qp(queues_[i].qp, &attr,
                           IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                               IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC))
      local = verbs_error(modify_call() + "(RTS)" + what, rc);
  }
  return agree(local, "connecting queue pairs");
}

}  // namespace mori::rdma
