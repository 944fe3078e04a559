// VerbsNetwork::export_mlx5: one MLX5 queue pair, as mlx5dv_init_obj(3) describes it, turned into
// the RdmaEndpoint that mori/provider/mlx5.hpp drives. The field mapping (docs/rdma-hardware.md):
//   ep.sq          mlx5dv_qp.sq.buf          sq.wqe_cnt WQEBBs of sq.stride = 64 bytes
//   ep.sq_wqes     mlx5dv_qp.sq.wqe_cnt      WQEBBs, which rdma-core sizes from max_send_wr and
//                                            the WQE size of max_inline_data (may exceed sq_wqes)
//   ep.dbr         mlx5dv_qp.dbrec           two big-endian counters; the provider writes the
//                                            send counter, [MLX5_SND_DBR]
//   ep.db          mlx5dv_qp.bf.reg          the BlueFlame register, MMIO, written 8 bytes at once
//   ep.cq          mlx5dv_cq.buf             cqe_cnt entries of cqe_size = 64 bytes
//   ep.cq_entries  mlx5dv_cq.cqe_cnt         a ring, a power of two, at least sq.wqe_cnt
//   ep.cqn, qpn    mlx5dv_cq.cqn, ibv_qp::qp_num
//   ep.cq_dbr      mlx5dv_cq.dbrec           the consumer index at [MLX5_CQ_SET_CI], big-endian
//   provider_word[] 0                        (unused by the mlx5 provider)
//   ep.ibuf, ibuf_slots, ibuf_lkey           set by create_ibufs after the export
// Every pointer goes through map_to_device; the engine's indices start at zero.
#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>

#include <cstring>
#include <string>

#include "rdma/verbs_network.hpp"

namespace mori::rdma {

Status VerbsNetwork::export_mlx5(const Queue& queue, state::RdmaEndpoint* ep) {
  mlx5dv_qp qp{};
  mlx5dv_cq cq{};
  mlx5dv_obj obj{};
  obj.qp.in = queue.qp;
  obj.qp.out = &qp;
  obj.cq.in = queue.cq;
  obj.cq.out = &cq;
  if (int rc = mlx5dv_init_obj(&obj, MLX5DV_OBJ_QP | MLX5DV_OBJ_CQ))
    return Status::error("rdma: mlx5dv_init_obj failed: " + std::string(std::strerror(rc)));
  const std::string qpn = "mlx5 QP " + std::to_string(queue.qp->qp_num);
  if (qp.sq.stride != MLX5_SEND_WQE_BB || !qp.sq.buf || !qp.dbrec || !qp.bf.reg)
    return Status::error("rdma: " + qpn + " has no usable send queue (stride " +
                         std::to_string(qp.sq.stride) + ", BlueFlame register " +
                         (qp.bf.reg ? "present" : "missing") + ")");
  if (!qp.sq.wqe_cnt || (qp.sq.wqe_cnt & (qp.sq.wqe_cnt - 1)) || qp.sq.wqe_cnt > 65536)
    return Status::error("rdma: " + qpn + " has " + std::to_string(qp.sq.wqe_cnt) +
                         " WQEBBs: the provider needs a power of two, at most 65536");
  if (cq.cqe_size != sizeof(mlx5_cqe64))
    return Status::error("rdma: " + qpn + "'s CQ has " + std::to_string(cq.cqe_size) +
                         "-byte CQEs; the provider reads 64-byte CQEs");
  // The provider polls the CQ as the ring ibv_create_cq made it; the engine's flow control keeps
  // at most ep.sq_wqes - 1 WQEs, hence CQEs, outstanding, so the ring must hold the SQ's depth.
  if (!cq.cqe_cnt || (cq.cqe_cnt & (cq.cqe_cnt - 1)) || cq.cqe_cnt < qp.sq.wqe_cnt || !cq.dbrec)
    return Status::error("rdma: " + qpn + "'s CQ has " + std::to_string(cq.cqe_cnt) +
                         " entries for " + std::to_string(qp.sq.wqe_cnt) +
                         " WQEBBs: the provider needs a power of two at least the SQ's depth, "
                         "with a doorbell record");

  void* sq = nullptr;
  void* dbr = nullptr;
  void* db = nullptr;
  void* cqbuf = nullptr;
  MORI_TRY(map(qp.sq.buf, size_t{qp.sq.wqe_cnt} * qp.sq.stride, false, &sq));
  MORI_TRY(map(qp.dbrec, 2 * sizeof(uint32_t), false, &dbr));
  MORI_TRY(map(qp.bf.reg, sizeof(uint64_t), true, &db));
  MORI_TRY(map(cq.buf, size_t{cq.cqe_cnt} * cq.cqe_size, false, &cqbuf));
  void* cq_dbr = nullptr;
  MORI_TRY(map(cq.dbrec, 2 * sizeof(uint32_t), false, &cq_dbr));

  state::RdmaEndpoint& e = *ep;
  e = state::RdmaEndpoint{};  // create_ibufs adds the ibuf fields
  e.sq = static_cast<uint8_t*>(sq);
  e.cq = static_cast<uint8_t*>(cqbuf);
  e.dbr = static_cast<uint32_t*>(dbr);
  e.db = static_cast<uint64_t*>(db);
  e.cq_dbr = static_cast<uint32_t*>(cq_dbr);
  e.sq_wqes = qp.sq.wqe_cnt;
  e.cq_entries = cq.cqe_cnt;
  e.qpn = queue.qp->qp_num;
  e.cqn = cq.cqn;
  return {};
}

}  // namespace mori::rdma
