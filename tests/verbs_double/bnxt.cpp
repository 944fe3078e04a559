// The verbs double's BNXT queue pairs as the NIC sees them (nic_endpoint_bnxt), from the objects
// Broadcom's direct verbs made (bnxt_dv.cpp): the rings on their umems, the context's doorbell
// page, and what the QP's transitions told it. Built into libmori_verbs_double.so, so that tests
// reach it without loading the direct verbs.
#include <string>

#include "double_state.hpp"

namespace verbs_double {
namespace internal {

bool nic_endpoint_bnxt(const Qp& qp, mori::state::RdmaEndpoint* out, std::string* why) {
  if (qp.context->device->spec.family != Family::kBnxt || !qp.sq_umem) {
    *why = "QP " + std::to_string(qp.qp.qp_num) + " was not made by bnxt_re_dv_create_qp";
    return false;
  }
  if (!qp.send_cq->umem) {
    *why = "QP " + std::to_string(qp.qp.qp_num) + "'s CQ was not made by bnxt_re_dv_create_cq";
    return false;
  }
  if (!qp.context->dbpage.data()) {
    *why = "QP " + std::to_string(qp.qp.qp_num) +
           "'s context has no doorbell page (bnxt_re_dv_get_default_db_region)";
    return false;
  }
  const QpRecord& r = fabric().history[qp.record];
  auto* db = reinterpret_cast<uint64_t*>(qp.context->dbpage.data());
  *out = mori::state::RdmaEndpoint{};
  out->sq = qp.sq_umem->addr;
  out->sq_wqes = qp.sq_slots / 3;
  out->db = db;
  out->cq_dbr = reinterpret_cast<uint32_t*>(db);
  out->cq = qp.send_cq->umem->addr;
  out->cq_entries = qp.send_cq->entries;
  out->qpn = qp.qp.qp_num;
  out->cqn = qp.send_cq->cqn;
  out->provider_word[0] = r.path_mtu ? static_cast<uint32_t>(mtu_bytes(r.path_mtu)) : 0;
  out->provider_state = r.sq_psn;
  return true;
}

}  // namespace internal

bool nic_endpoint_bnxt(uint32_t qpn, mori::state::RdmaEndpoint* out, std::string* why) {
  internal::Fabric& f = internal::fabric();
  std::lock_guard<std::mutex> lock(f.mutex);
  for (const auto& [key, qp] : f.qps)
    if (qp->qp.qp_num == qpn) return internal::nic_endpoint_bnxt(*qp, out, why);
  *why = "no QP " + std::to_string(qpn) + " is alive in the fabric";
  return false;
}

}  // namespace verbs_double
