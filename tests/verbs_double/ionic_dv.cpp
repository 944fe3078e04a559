// The verbs double's ionic direct verbs: the ionic_dv_* functions that src/rdma/vendor_dv.cpp
// resolves, over the double's Ionic objects (ionic.cpp). Built alone into
// libmori_verbs_double_ionic.so, which VendorDv dlopens by path as it would AMD's libionic; it
// links libmori_verbs_double.so, so it reaches the test executable's fabric, not a copy.
//
// Behaviour, from rdma-core providers/ionic at 37bd52f7 (pull request 1771): ionic_dv.c (each
// function; an object of another provider is refused with EPERM, and ionic_dv_qp_get_udma_idx then
// returns 0; get_cq refuses a pipeline the CQ has no ring on with EINVAL; pd_set_udma_mask refuses
// pipelines the device lacks with EINVAL; pd_set_sqcmb/_rqcmb refuse a required express doorbell
// the device lacks with EINVAL and otherwise keep it only where the device has it), ionic.c
// (get_ctx's db_page is the mapped doorbell page, db_ptr the doorbells in it) and ionic_queue.h
// (the doorbell value of a queue is its id << 24).
//
// The structs are declared here from rdma-core's ionic_dv.h, not taken from src/rdma/vendor_dv.hpp:
// a layout error there must show up as a failing test, not be shared by the double.
#include <cerrno>
#include <cstddef>
#include <string>

#include "double_state.hpp"

using namespace verbs_double::internal;
using verbs_double::IonicSpec;

extern "C" {

// rdma-core providers/ionic/ionic_dv.h.
struct ionic_dv_ctx {
  void* db_page;
  uint64_t* db_ptr;
  uint8_t sq_qtype;
  uint8_t rq_qtype;
  uint8_t cq_qtype;
};
struct ionic_dv_queue {
  void* ptr;
  size_t size;
  uint64_t db_val;
  uint16_t mask;
  uint8_t depth_log2;
  uint8_t stride_log2;
};
struct ionic_dv_cq {
  struct ionic_dv_queue q;
};
struct ionic_dv_qp {
  struct ionic_dv_queue rq;
  struct ionic_dv_queue sq;
};
static_assert(sizeof(ionic_dv_ctx) == 24 && offsetof(ionic_dv_ctx, cq_qtype) == 18);
static_assert(sizeof(ionic_dv_queue) == 32 && offsetof(ionic_dv_queue, stride_log2) == 27);
static_assert(sizeof(ionic_dv_qp) == 64 && offsetof(ionic_dv_qp, sq) == 32);

}  // extern "C"

namespace {

// The Ionic object of `table` at `key`, or null after recording why `call` refuses it.
template <class T>
T* ionic_object(Fabric& f, Table<T>& table, const void* key, const char* call, const char* kind) {
  T* obj = find(table, key);
  if (!obj) {
    refuse(f, EPERM, std::string(call) + ": not a " + kind + " of the fabric");
    return nullptr;
  }
  if (!obj->context->ionic()) {
    refuse(f, EPERM,
           std::string(call) + ": the " + kind + " is not on an ionic device (it is on " +
               obj->context->device->spec.name + ")");
    return nullptr;
  }
  return obj;
}

void describe(const IonicRing& r, ionic_dv_queue* out) {
  out->ptr = r.buf.data();
  out->size = r.buf.size();
  out->db_val = r.dbell();
  out->mask = static_cast<uint16_t>(r.depth() - 1);
  out->depth_log2 = r.depth_log2;
  out->stride_log2 = r.stride_log2;
}

// ionic_dv_cmb_val, after ionic_dv_pd_set_sqcmb's express-doorbell rule.
int set_cmb(const char* call, ibv_pd* ibpd, bool enable, bool expdb, bool require,
            uint8_t Pd::* field, bool IonicSpec::* device_expdb) {
  Fabric& f = fabric();
  std::lock_guard<std::mutex> lock(f.mutex);
  Pd* p = ionic_object(f, f.pds, ibpd, call, "PD");
  if (!p) return EPERM;
  const bool available = p->context->device->spec.ionic.*device_expdb;
  if (enable && expdb) {
    if (require && !available)
      return refuse(f, EINVAL,
                    std::string(call) + ": an express doorbell is required, and " +
                        p->context->device->spec.name + " has none");
    expdb = available;
  }
  p->*field =
      enable ? kIonicCmbEnable | (expdb ? kIonicCmbExpdb : 0) | (require ? kIonicCmbRequire : 0)
             : 0;
  return 0;
}

}  // namespace

extern "C" {

int ionic_dv_get_ctx(ionic_dv_ctx* dvctx, ibv_context* ibctx) {
  Fabric& f = fabric();
  std::lock_guard<std::mutex> lock(f.mutex);
  Context* c = find(f.contexts, ibctx);
  if (!c) return refuse(f, EPERM, "ionic_dv_get_ctx: not an open context");
  if (!c->ionic())
    return refuse(f, EPERM,
                  "ionic_dv_get_ctx: " + c->device->spec.name + " is not an ionic device");
  const IonicSpec& s = c->device->spec.ionic;
  dvctx->db_page = c->dbpage.data();
  dvctx->db_ptr = c->doorbells();
  dvctx->sq_qtype = s.sq_qtype;
  dvctx->rq_qtype = s.rq_qtype;
  dvctx->cq_qtype = s.cq_qtype;
  return 0;
}

int ionic_dv_get_qp(ionic_dv_qp* dvqp, ibv_qp* ibqp) {
  Fabric& f = fabric();
  std::lock_guard<std::mutex> lock(f.mutex);
  const Qp* q = ionic_object(f, f.qps, ibqp, "ionic_dv_get_qp", "QP");
  if (!q) return EPERM;
  describe(q->irq, &dvqp->rq);
  describe(q->isq, &dvqp->sq);
  return 0;
}

int ionic_dv_get_cq(ionic_dv_cq* dvcq, ibv_cq* ibcq, uint8_t udma_idx) {
  Fabric& f = fabric();
  std::lock_guard<std::mutex> lock(f.mutex);
  const Cq* c = ionic_object(f, f.cqs, ibcq, "ionic_dv_get_cq", "CQ");
  if (!c) return EPERM;
  if (udma_idx >= 8 || !(c->udma_mask & (1u << udma_idx)))
    return refuse(f, EINVAL,
                  "ionic_dv_get_cq: the CQ has no ring on pipeline " + std::to_string(udma_idx));
  describe(c->rings[udma_idx], &dvcq->q);
  return 0;
}

uint8_t ionic_dv_qp_get_udma_idx(ibv_qp* ibqp) {
  Fabric& f = fabric();
  std::lock_guard<std::mutex> lock(f.mutex);
  const Qp* q = ionic_object(f, f.qps, ibqp, "ionic_dv_qp_get_udma_idx (returns 0)", "QP");
  return q ? q->udma_idx : 0;
}

int ionic_dv_pd_set_sqcmb(ibv_pd* ibpd, bool enable, bool expdb, bool require) {
  return set_cmb("ionic_dv_pd_set_sqcmb", ibpd, enable, expdb, require, &Pd::sq_cmb,
                 &IonicSpec::sq_expdb);
}

int ionic_dv_pd_set_rqcmb(ibv_pd* ibpd, bool enable, bool expdb, bool require) {
  return set_cmb("ionic_dv_pd_set_rqcmb", ibpd, enable, expdb, require, &Pd::rq_cmb,
                 &IonicSpec::rq_expdb);
}

int ionic_dv_pd_set_udma_mask(ibv_pd* ibpd, uint8_t udma_mask) {
  Fabric& f = fabric();
  std::lock_guard<std::mutex> lock(f.mutex);
  Pd* p = ionic_object(f, f.pds, ibpd, "ionic_dv_pd_set_udma_mask", "PD");
  if (!p) return EPERM;
  if (udma_mask & ~p->context->udma_mask())
    return refuse(f, EINVAL,
                  "ionic_dv_pd_set_udma_mask: mask " + std::to_string(udma_mask) +
                      " names pipelines " + p->context->device->spec.name + " lacks (it has " +
                      std::to_string(p->context->device->spec.ionic.udma_count) + ")");
  p->udma_mask = udma_mask;
  return 0;
}

// Not an ionic direct verb: the fabric this library reaches (verbs_double::fabric_address).
const void* verbs_double_ionic_fabric_address() { return &fabric(); }

}  // extern "C"
