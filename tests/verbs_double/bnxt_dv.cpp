// The verbs double's bnxt_re direct verbs: the nine bnxt_re_dv_* functions that
// src/rdma/vendor_dv.cpp resolves (MORI_FOR_EACH_BNXT_DV), over the double's BNXT devices. Built
// alone into libmori_verbs_double_bnxt.so, which VendorDv dlopens by path as it would Broadcom's
// libbnxt_re; it links libmori_verbs_double.so, so it reaches the one fabric (as ionic_dv.cpp).
//
// What it checks, after the geometry ROCm/mori's bnxt.cpp gives the library
// (BnxtQpContainer::CalculateQueueSizes) and Broadcom's bnxt_re_dv.h as ROCm/mori carries it:
// a CQ's umem holds ncqe 32-byte CQEs (ncqe > 0); a QP's umems hold sq_len and rq_len bytes;
// sq_npsn = roundup_pow2(sq_slots) / 2; sq_len >= sq_slots * 16 + sq_npsn * sq_psn_sz; sq_wqe_sz
// is a whole number of 16-byte slots; CQs and umems of the PD's context. Transitions obey the
// kernel's rules as ibv_modify_qp's do (queues.cpp). Destroying a CQ with QPs, or deregistering a
// umem a queue is built on, is refused with EBUSY. On a device of another family every call is
// refused with EOPNOTSUPP: the double's choice (Broadcom's library would not recognise the
// context; what it returns then is not documented).
//
// The structs are declared here from Broadcom's header, not taken from src/rdma/vendor_dv.hpp: a
// layout error there must show up as a failing test, not be shared by the double.
#include <cerrno>
#include <cstddef>
#include <string>

#include "double_state.hpp"

using namespace verbs_double::internal;
using verbs_double::Family;

extern "C" {

struct bnxt_re_dv_db_region_attr {
  uint32_t handle;
  uint32_t dpi;
  uint64_t umdbr;
  uint64_t* dbr;
};
struct bnxt_re_dv_qp {
  uint64_t wqe_cnt;
  uint64_t comp_mask;
};
struct bnxt_re_dv_cq {
  uint32_t cqn;
  uint32_t cqe_size;
  uint64_t comp_mask;
};
struct bnxt_re_dv_obj {
  struct {
    ibv_qp* in;
    bnxt_re_dv_qp* out;
  } qp;
  struct {
    ibv_cq* in;
    bnxt_re_dv_cq* out;
  } cq;
  struct {
    void* in;
    void* out;
  } srq, ah, pd;
};
struct bnxt_re_dv_umem_reg_attr {
  void* addr;
  size_t size;
  uint32_t access_flags;
  uint64_t pgsz_bitmap;
  uint64_t comp_mask;
  int dmabuf_fd;
};
struct bnxt_re_dv_cq_init_attr {
  uint64_t cq_handle;
  void* umem_handle;
  uint64_t cq_umem_offset;
  uint32_t ncqe;
};
struct bnxt_re_dv_qp_init_attr {
  enum ibv_qp_type qp_type;
  uint32_t max_send_wr;
  uint32_t max_recv_wr;
  uint32_t max_send_sge;
  uint32_t max_recv_sge;
  uint32_t max_inline_data;
  struct ibv_cq* send_cq;
  struct ibv_cq* recv_cq;
  struct ibv_srq* srq;
  uint64_t qp_handle;
  void* dbr_handle;
  void* sq_umem_handle;
  uint64_t sq_umem_offset;
  uint32_t sq_len;
  uint32_t sq_slots;
  void* rq_umem_handle;
  uint64_t rq_umem_offset;
  uint32_t sq_wqe_sz;
  uint32_t sq_psn_sz;
  uint32_t sq_npsn;
  uint32_t rq_len;
  uint32_t rq_slots;
  uint32_t rq_wqe_sz;
  uint64_t comp_mask;
};
static_assert(sizeof(bnxt_re_dv_umem_reg_attr) == 48);
static_assert(sizeof(bnxt_re_dv_cq_init_attr) == 32);
static_assert(offsetof(bnxt_re_dv_qp_init_attr, qp_handle) == 48 &&
              sizeof(bnxt_re_dv_qp_init_attr) == 136);

}  // extern "C"

namespace {

// bnxt_re_dv_init_obj's object types (enum bnxt_re_roce_dv_obj_type).
constexpr uint64_t kObjQp = 1 << 0, kObjCq = 1 << 1;
constexpr uint32_t kCqeBytes = 32, kSlotBytes = 16;

uint64_t roundup_pow2(uint64_t v) {
  uint64_t p = 1;
  while (p < v) p <<= 1;
  return p;
}

// The BNXT context of `ibctx`, or null after recording why `call` refuses it.
Context* bnxt_context(Fabric& f, const void* ibctx, const std::string& call) {
  Context* c = find(f.contexts, ibctx);
  if (!c) {
    refuse(f, EINVAL, call + ": not an open context");
    return nullptr;
  }
  if (c->device->spec.family != Family::kBnxt) {
    refuse(f, EOPNOTSUPP, call + ": " + c->device->spec.name + " is not a bnxt_re device");
    return nullptr;
  }
  return c;
}

// "" when [offset, offset + bytes) lies in `umem`, a umem of `c`; else why not.
std::string umem_problem(Fabric& f, const void* handle, const Context* c, uint64_t offset,
                         uint64_t bytes, const char* what) {
  const Umem* u = find(f.umems, handle);
  if (!u) return std::string("the ") + what + " umem is not registered";
  if (u->context != c) return std::string("the ") + what + " umem belongs to another context";
  if (offset > u->size || bytes > u->size - offset)
    return std::string("the ") + what + " umem has " + std::to_string(u->size) + " bytes; " +
           std::to_string(bytes) + " are needed from offset " + std::to_string(offset);
  return "";
}

}  // namespace

extern "C" {

void* bnxt_re_dv_umem_reg(ibv_context* ibctx, bnxt_re_dv_umem_reg_attr* in) {
  Fabric& f = fabric();
  std::lock_guard<std::mutex> lock(f.mutex);
  Context* c = bnxt_context(f, ibctx, "bnxt_re_dv_umem_reg");
  if (!c) return nullptr;
  if (!in->addr || !in->size) return refuse_null(f, EINVAL, "bnxt_re_dv_umem_reg: an empty range");
  if (in->comp_mask)
    return refuse_null(f, EOPNOTSUPP, "bnxt_re_dv_umem_reg: the double registers no dma-bufs");
  auto u = std::make_unique<Umem>();
  u->context = c;
  u->addr = static_cast<uint8_t*>(in->addr);
  u->size = in->size;
  u->access = static_cast<int>(in->access_flags);
  Umem* out = u.get();
  f.umems[out] = std::move(u);
  return out;
}

int bnxt_re_dv_umem_dereg(void* umem) {
  Fabric& f = fabric();
  std::lock_guard<std::mutex> lock(f.mutex);
  Umem* u = find(f.umems, umem);
  if (!u) return refuse(f, EINVAL, "bnxt_re_dv_umem_dereg: not a registered umem");
  if (u->users)
    return refuse(f, EBUSY,
                  "bnxt_re_dv_umem_dereg: " + std::to_string(u->users) +
                      " queue(s) still use the umem; destroy them first");
  f.umems.erase(umem);
  return 0;
}

ibv_cq* bnxt_re_dv_create_cq(ibv_context* ibctx, bnxt_re_dv_cq_init_attr* attr) {
  Fabric& f = fabric();
  std::lock_guard<std::mutex> lock(f.mutex);
  const std::string call = "bnxt_re_dv_create_cq";
  Context* c = bnxt_context(f, ibctx, call);
  if (!c) return nullptr;
  if (attr->ncqe == 0 || attr->ncqe > static_cast<uint32_t>(c->device->spec.max_cqe))
    return refuse_null(f, EINVAL,
                       call + ": ncqe " + std::to_string(attr->ncqe) + " is outside 1.." +
                           std::to_string(c->device->spec.max_cqe));
  if (std::string why = umem_problem(f, attr->umem_handle, c, attr->cq_umem_offset,
                                     uint64_t{attr->ncqe} * kCqeBytes, "CQ");
      !why.empty())
    return refuse_null(f, EINVAL, call + ": " + why);
  auto cq = std::make_unique<Cq>();
  cq->context = c;
  cq->umem = find(f.umems, attr->umem_handle);
  ++cq->umem->users;
  cq->entries = attr->ncqe;
  cq->cqn = f.next_cqn++;
  cq->cq.context = ibctx;
  cq->cq.cqe = static_cast<int>(attr->ncqe);
  cq->cq.handle = f.next_handle++;
  return keep(f.cqs, std::move(cq), &Cq::cq);
}

int bnxt_re_dv_destroy_cq(ibv_cq* ibcq) {
  Fabric& f = fabric();
  std::lock_guard<std::mutex> lock(f.mutex);
  Cq* c = find(f.cqs, ibcq);
  if (!c || !c->umem) return refuse(f, EINVAL, "bnxt_re_dv_destroy_cq: not a CQ it made");
  return destroy_cq_locked(f, *c, "bnxt_re_dv_destroy_cq");
}

ibv_qp* bnxt_re_dv_create_qp(ibv_pd* ibpd, bnxt_re_dv_qp_init_attr* a) {
  Fabric& f = fabric();
  std::lock_guard<std::mutex> lock(f.mutex);
  const std::string call = "bnxt_re_dv_create_qp";
  Pd* p = find(f.pds, ibpd);
  if (!p) return refuse_null(f, EINVAL, call + ": not a PD of the fabric");
  if (!bnxt_context(f, &p->context->vctx.context, call)) return nullptr;
  if (a->qp_type != IBV_QPT_RC) return refuse_null(f, EOPNOTSUPP, call + ": RC QPs only");
  if (a->srq) return refuse_null(f, EOPNOTSUPP, call + ": the double has no SRQs");
  Cq* send = find(f.cqs, a->send_cq);
  Cq* recv = find(f.cqs, a->recv_cq);
  if (!send || !recv) return refuse_null(f, EINVAL, call + ": a CQ that is not of the fabric");
  if (send->context != p->context || recv->context != p->context)
    return refuse_null(f, EINVAL, call + ": the CQ belongs to another context than the PD");
  const uint32_t want_npsn = static_cast<uint32_t>(roundup_pow2(a->sq_slots) / 2);
  if (a->sq_slots == 0 || a->sq_npsn != want_npsn)
    return refuse_null(
        f, EINVAL,
        call + ": sq_npsn " + std::to_string(a->sq_npsn) + " for " + std::to_string(a->sq_slots) +
            " slots (roundup_pow2(sq_slots) / 2 = " + std::to_string(want_npsn) + ")");
  const uint64_t sq_need = uint64_t{a->sq_slots} * kSlotBytes + uint64_t{a->sq_npsn} * a->sq_psn_sz;
  if (a->sq_len < sq_need)
    return refuse_null(f, EINVAL,
                       call + ": sq_len " + std::to_string(a->sq_len) + " is less than the " +
                           std::to_string(sq_need) + " bytes of the slots and the MSN table");
  if (a->sq_wqe_sz == 0 || a->sq_wqe_sz % kSlotBytes)
    return refuse_null(f, EINVAL,
                       call + ": sq_wqe_sz " + std::to_string(a->sq_wqe_sz) +
                           " is not a whole number of 16-byte slots");
  if (std::string why =
          umem_problem(f, a->sq_umem_handle, p->context, a->sq_umem_offset, a->sq_len, "SQ");
      !why.empty())
    return refuse_null(f, EINVAL, call + ": " + why);
  if (std::string why =
          umem_problem(f, a->rq_umem_handle, p->context, a->rq_umem_offset, a->rq_len, "RQ");
      !why.empty())
    return refuse_null(f, EINVAL, call + ": " + why);
  auto q = std::make_unique<Qp>();
  q->context = p->context;
  q->pd = p;
  q->send_cq = send;
  q->recv_cq = recv;
  q->sq_umem = find(f.umems, a->sq_umem_handle);
  q->rq_umem = find(f.umems, a->rq_umem_handle);
  ++q->sq_umem->users;
  ++q->rq_umem->users;
  q->sq_slots = a->sq_slots;
  q->sq_npsn = a->sq_npsn;
  q->sq_psn_sz = a->sq_psn_sz;
  q->sq_wqe_sz = a->sq_wqe_sz;
  return file_qp(f, std::move(q), nullptr);
}

int bnxt_re_dv_destroy_qp(ibv_qp* ibqp) {
  Fabric& f = fabric();
  std::lock_guard<std::mutex> lock(f.mutex);
  Qp* q = find(f.qps, ibqp);
  if (!q || !q->sq_umem) return refuse(f, EINVAL, "bnxt_re_dv_destroy_qp: not a QP it made");
  return destroy_qp_locked(f, *q, "bnxt_re_dv_destroy_qp");
}

int bnxt_re_dv_modify_qp(ibv_qp* ibqp, ibv_qp_attr* attr, int mask, uint32_t, uint32_t) {
  Fabric& f = fabric();
  std::lock_guard<std::mutex> lock(f.mutex);
  Qp* q = find(f.qps, ibqp);
  if (!q) return refuse(f, EINVAL, "bnxt_re_dv_modify_qp: not a QP of the fabric");
  if (!bnxt_context(f, &q->context->vctx.context, "bnxt_re_dv_modify_qp")) return EOPNOTSUPP;
  return modify_qp_locked(f, *q, *attr, mask, "bnxt_re_dv_modify_qp");
}

int bnxt_re_dv_init_obj(bnxt_re_dv_obj* obj, uint64_t type) {
  Fabric& f = fabric();
  std::lock_guard<std::mutex> lock(f.mutex);
  if (type != kObjCq)
    return refuse(f, EOPNOTSUPP,
                  "bnxt_re_dv_init_obj: the double models the CQ object only (type " +
                      std::to_string(type) + ")");
  (void)kObjQp;
  Cq* c = find(f.cqs, obj->cq.in);
  if (!c) return refuse(f, EINVAL, "bnxt_re_dv_init_obj: not a CQ of the fabric");
  if (!bnxt_context(f, &c->context->vctx.context, "bnxt_re_dv_init_obj")) return EOPNOTSUPP;
  obj->cq.out->cqn = c->cqn;
  obj->cq.out->cqe_size = kCqeBytes;
  obj->cq.out->comp_mask = 0;
  return 0;
}

int bnxt_re_dv_get_default_db_region(ibv_context* ibctx, bnxt_re_dv_db_region_attr* out) {
  Fabric& f = fabric();
  std::lock_guard<std::mutex> lock(f.mutex);
  Context* c = bnxt_context(f, ibctx, "bnxt_re_dv_get_default_db_region");
  if (!c) return f.contexts.count(ibctx) ? EOPNOTSUPP : EINVAL;
  if (!c->dbpage.data()) c->dbpage = PageBuffer(PageBuffer::kPage);
  out->handle = 0;
  out->dpi = 0;
  out->umdbr = reinterpret_cast<uint64_t>(c->dbpage.data());
  out->dbr = reinterpret_cast<uint64_t*>(c->dbpage.data());
  return 0;
}

// Not a bnxt_re direct verb: the fabric this library reaches (verbs_double::fabric_address).
const void* verbs_double_bnxt_fabric_address() { return &fabric(); }

}  // extern "C"
