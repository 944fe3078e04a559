// The verbs double's mlx5dv entry points: mlx5dv_is_supported (true for MLX5-family devices) and
// mlx5dv_init_obj for their QPs and CQs (refused for other families'), which reports the buffers
// the double allocated, with the sizes rdma-core's mlx5 provider would give (queues.cpp): a send
// queue of 64-byte WQEBBs, a doorbell record, a BlueFlame register in the context's UAR page, and
// the CQ as the ring it was created with (64-byte CQEs).
#include <infiniband/mlx5dv.h>

#include <cerrno>

#include "double_state.hpp"

using namespace verbs_double::internal;

namespace {

// 0 when `obj` (a QP or a CQ) is an object of the fabric on an mlx5 device; else the refusal.
template <class T>
int check_exportable(Fabric& f, const T* obj, const std::string& kind) {
  if (!obj) return refuse(f, EINVAL, "mlx5dv_init_obj: not a " + kind + " of the fabric");
  if (obj->context->device->spec.family != verbs_double::Family::kMlx5)
    return refuse(f, EOPNOTSUPP, "mlx5dv_init_obj: the " + kind + " is not on an mlx5 device");
  return 0;
}

}  // namespace

namespace verbs_double::internal {

// Like the provider, QPs of one context share the UAR page; each gets its own register.
uint64_t* bf_register(const Qp& qp) { return &qp.context->uar[(qp.qp.qp_num % 8) * 8]; }

bool nic_endpoint_mlx5(Qp& qp, mori::state::RdmaEndpoint* out, std::string* why) {
  if (qp.send_cq != qp.recv_cq) {
    *why = "QP " + std::to_string(qp.qp.qp_num) + " has separate send and receive CQs";
    return false;
  }
  mori::state::RdmaEndpoint ep{};
  ep.sq = qp.sq.data();
  ep.sq_wqes = qp.wqe_cnt;
  ep.dbr = qp.dbrec;
  ep.db = bf_register(qp);
  ep.cq = qp.send_cq->buf.data();
  ep.cq_entries = qp.send_cq->entries;
  ep.cq_dbr = qp.send_cq->dbrec;
  ep.qpn = qp.qp.qp_num;
  ep.cqn = qp.send_cq->cqn;
  *out = ep;
  return true;
}

}  // namespace verbs_double::internal

extern "C" {

bool mlx5dv_is_supported(ibv_device* device) {
  Fabric& f = fabric();
  std::lock_guard<std::mutex> lock(f.mutex);
  for (const auto& d : f.devices)
    if (&d->dev == device) return d->spec.family == verbs_double::Family::kMlx5;
  return false;
}

int mlx5dv_init_obj(mlx5dv_obj* obj, uint64_t obj_type) {
  Fabric& f = fabric();
  std::lock_guard<std::mutex> lock(f.mutex);
  if (obj_type & ~uint64_t{MLX5DV_OBJ_QP | MLX5DV_OBJ_CQ})
    return refuse(f, EOPNOTSUPP, "mlx5dv_init_obj: the double exports QPs and CQs only");
  if (obj_type & MLX5DV_OBJ_QP) {
    Qp* q = find(f.qps, obj->qp.in);
    if (int rc = check_exportable(f, q, "QP")) return rc;
    mlx5dv_qp& out = *obj->qp.out;
    out.dbrec = reinterpret_cast<__be32*>(q->dbrec);
    out.sq.buf = q->sq.data();
    out.sq.wqe_cnt = q->wqe_cnt;
    out.sq.stride = 64;
    out.rq.buf = nullptr;
    out.rq.wqe_cnt = 0;
    out.rq.stride = 0;
    out.bf.reg = bf_register(*q);
    out.bf.size = 64;
    out.comp_mask = 0;  // none of the optional fields
  }
  if (obj_type & MLX5DV_OBJ_CQ) {
    Cq* c = find(f.cqs, obj->cq.in);
    if (int rc = check_exportable(f, c, "CQ")) return rc;
    mlx5dv_cq& out = *obj->cq.out;
    out.buf = c->buf.data();
    out.dbrec = reinterpret_cast<__be32*>(c->dbrec);
    out.cqe_cnt = c->entries;
    out.cqe_size = 64;
    out.cq_uar = c->context->uar;
    out.cqn = c->cqn;
    out.comp_mask = 0;
  }
  return 0;
}

}  // extern "C"
