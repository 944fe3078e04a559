// VerbsNetwork's BNXT (Broadcom Thor2) queue pairs, created through Broadcom's bnxt_re direct
// verbs on memory this file allocates and registers, and turned into the RdmaEndpoint that
// mori/provider/bnxt.hpp drives. The functions come from the vendor's library, loaded at run time
// (vendor_dv.hpp, which cites their prototypes and the attribute structs' layouts).
//
// Sources of the facts used here: ROCm/mori src/application/transport/rdma/providers/bnxt/
// bnxt.cpp (BnxtCqContainer's constructor: the CQ's umem and create_cq; BnxtQpContainer::
// CalculateQueueSizes: the 3-slot WQE, the PSN table and the lengths; BnxtQpContainer's
// constructor: the caps, the rings' umems and create_qp; ModifyInit/Rtr/Rts: bnxt_re_dv_modify_qp
// with ibv_modify_qp's masks; BnxtDeviceContext: bnxt_re_dv_get_default_db_region), and
// include/mori/application/transport/rdma/providers/bnxt/bnxt_re_dv.h there.
//
// Per queue pair (create_bnxt_queue), for W = sq_wqes WQEs:
//   CQ   roundup_pow2(32 * W) bytes, zeroed; umem_reg (LOCAL_WRITE); create_cq(umem, ncqe = W)
//   SQ   sq_slots = 3W slots of 16 bytes, then the MSN table of sq_npsn = roundup_pow2(3W) / 2
//        entries of 8 bytes; sq_len = align(3W * 16 + npsn * 8, 4096); zeroed; umem_reg
//   RQ   rq_slots = 3W likewise, rq_len = align(3W * 16, 4096) (the library requires one; we post
//        no receives)
//   QP   create_qp(pd, caps + the above), then INIT, RTR, RTS through bnxt_re_dv_modify_qp.
// The memory comes from VerbsConfig::queue_memory when set (uncached VRAM on the hip backend, as
// ROCm/mori allocates it with hipExtMallocWithFlags(hipDeviceMallocUncached)), else it is
// page-aligned host memory that map() hands to the device (verbs_queue_memory.cpp).
//
// The export, field by field (docs/rdma-hardware.md):
//   ep.sq          the SQ umem: 3W slots, then the MSN table (2W entries when W is a power of two)
//   ep.sq_wqes     W
//   ep.db          bnxt_re_dv_db_region_attr::dbr of the default region: the doorbell page, MMIO
//   ep.cq_dbr      the same word: the CQ consumer doorbell goes to the same page on hardware
//   ep.cq          the CQ umem, cq_entries = W 32-byte CQEs
//   ep.qpn, cqn    ibv_qp::qp_num; bnxt_re_dv_cq::cqn from bnxt_re_dv_init_obj
//   provider_word[0]  the path MTU in bytes (the smaller port's, as set at RTR)
//   provider_state    the QP's initial send PSN (Queue::psn, set at RTS)
//   ep.ibuf, ibuf_slots, ibuf_lkey  set by create_ibufs after the export
#include <infiniband/verbs.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

#include "rdma/verbs_network.hpp"

namespace mori::rdma {
namespace {

constexpr size_t kPage = 4096;

uint64_t roundup_pow2(uint64_t v) {
  uint64_t p = 1;
  while (p < v) p <<= 1;
  return p;
}

size_t align_page(size_t v) { return (v + kPage - 1) / kPage * kPage; }

// "rdma: <call><what> failed: <errno text>" (what: " for PE 1 QP 0").
Status dv_error(const std::string& call, const std::string& what, int err) {
  return Status::error("rdma: " + call + what + " failed: " +
                       (err > 0 ? std::strerror(err) : "error " + std::to_string(err)));
}

}  // namespace

// Page-aligned zeroed memory of `bytes`, registered as a umem for the NIC's writes: from the
// queue memory hook while create_queues tries it (verbs_queue_memory.cpp), else host memory.
Status VerbsNetwork::make_umem(size_t bytes, const std::string& what, void** mem, void** umem) {
  if (use_queue_memory_) {
    MORI_TRY(alloc_queue_memory(bytes, kPage, what, mem));
  } else {
    if (int rc = posix_memalign(mem, kPage, bytes)) {
      *mem = nullptr;
      return dv_error("posix_memalign", what, rc);
    }
    std::memset(*mem, 0, bytes);
  }
  bnxt_re_dv_umem_reg_attr attr{};
  attr.addr = *mem;
  attr.size = bytes;
  attr.access_flags = IBV_ACCESS_LOCAL_WRITE;
  errno = 0;
  *umem = dv_->bnxt().umem_reg(context_, &attr);
  if (!*umem)
    return dv_error(
        std::string("bnxt_re_dv_umem_reg") + (use_queue_memory_ ? "(device memory)" : ""), what,
        errno);
  return {};
}

Status VerbsNetwork::open_bnxt() {
  if (config_.sq_wqes > BnxtGeometry::kMaxSqWqes)
    return Status::error("rdma: sq_wqes " + std::to_string(config_.sq_wqes) + " is more than the " +
                         std::to_string(BnxtGeometry::kMaxSqWqes) +
                         " WQEs the BNXT provider indexes");
  if (int rc = dv_->bnxt().get_default_db_region(context_, &bnxt_db_))
    return dv_error("bnxt_re_dv_get_default_db_region", " for " + device_name_, rc);
  if (!bnxt_db_.dbr)
    return Status::error("rdma: bnxt_re_dv_get_default_db_region gave " + device_name_ +
                         " no doorbell page");
  return {};
}

Status VerbsNetwork::create_bnxt_queue(Queue* queue, const std::string& what) {
  const BnxtDv& dv = dv_->bnxt();
  const uint32_t w = config_.sq_wqes;
  // Every WQE is signalled (transport/rdma_engine.hpp): the CQ needs W entries.
  queue->cq_entries = w;
  queue->cq_bytes = roundup_pow2(uint64_t{BnxtGeometry::kCqeBytes} * w);
  MORI_TRY(make_umem(queue->cq_bytes, what, &queue->cq_mem, &queue->cq_umem));
  bnxt_re_dv_cq_init_attr cq_attr{};
  cq_attr.umem_handle = queue->cq_umem;
  cq_attr.ncqe = w;
  errno = 0;
  queue->cq = dv.create_cq(context_, &cq_attr);
  if (!queue->cq) return dv_error("bnxt_re_dv_create_cq", what, errno);

  const uint32_t slots = BnxtGeometry::kWqeSlots * w;
  const uint32_t npsn = static_cast<uint32_t>(roundup_pow2(slots) / 2);
  bnxt_re_dv_qp_init_attr attr{};
  attr.qp_type = IBV_QPT_RC;
  attr.max_send_wr = w;
  attr.max_recv_wr = 0;
  attr.max_send_sge = 1;
  attr.max_recv_sge = 1;
  attr.max_inline_data = BnxtGeometry::kMaxInlineBytes;
  attr.send_cq = queue->cq;
  attr.recv_cq = queue->cq;
  attr.sq_slots = slots;
  attr.sq_wqe_sz = BnxtGeometry::kWqeSlots * BnxtGeometry::kSlotBytes;
  attr.sq_psn_sz = BnxtGeometry::kMsnEntryBytes;
  attr.sq_npsn = npsn;
  attr.sq_len = static_cast<uint32_t>(align_page(size_t{slots} * BnxtGeometry::kSlotBytes +
                                                 size_t{npsn} * BnxtGeometry::kMsnEntryBytes));
  attr.rq_slots = slots;
  attr.rq_wqe_sz = attr.sq_wqe_sz;
  attr.rq_len = static_cast<uint32_t>(align_page(size_t{slots} * BnxtGeometry::kSlotBytes));
  queue->sq_bytes = attr.sq_len;
  MORI_TRY(make_umem(attr.sq_len, what, &queue->sq_mem, &queue->sq_umem));
  MORI_TRY(make_umem(attr.rq_len, what, &queue->rq_mem, &queue->rq_umem));
  attr.sq_umem_handle = queue->sq_umem;
  attr.rq_umem_handle = queue->rq_umem;
  errno = 0;
  queue->qp = dv.create_qp(pd_, &attr);
  if (!queue->qp) return dv_error("bnxt_re_dv_create_qp", what, errno);
  return {};
}

// A QP before its CQ, then the umems under them, then the memory.
void VerbsNetwork::destroy_bnxt_queue(Queue* queue) {
  const BnxtDv& dv = dv_->bnxt();
  if (queue->qp) dv.destroy_qp(queue->qp);
  if (queue->cq) dv.destroy_cq(queue->cq);
  for (void* umem : {queue->sq_umem, queue->rq_umem, queue->cq_umem})
    if (umem) dv.umem_dereg(umem);
  for (void* mem : {queue->sq_mem, queue->rq_mem, queue->cq_mem}) {
    if (from_queue_memory(mem, 1))
      free_queue_memory(mem);
    else
      std::free(mem);
  }
  *queue = Queue{};
}

int VerbsNetwork::modify_qp(ibv_qp* qp, ibv_qp_attr* attr, int mask) {
  if (family_ == Family::kBnxt) return dv_->bnxt().modify_qp(qp, attr, mask, 0, 0);
  return ibv_modify_qp(qp, attr, mask);
}

Status VerbsNetwork::export_bnxt(const Queue& queue, state::RdmaEndpoint* ep) {
  const std::string what = " for bnxt QP " + std::to_string(queue.qp->qp_num);
  bnxt_re_dv_cq cq{};
  bnxt_re_dv_obj obj{};
  obj.cq.in = queue.cq;
  obj.cq.out = &cq;
  if (int rc = dv_->bnxt().init_obj(&obj, kBnxtDvObjCq))
    return dv_error("bnxt_re_dv_init_obj(CQ)", what, rc);

  void* sq = nullptr;
  void* cqbuf = nullptr;
  void* db = nullptr;
  MORI_TRY(map(queue.sq_mem, queue.sq_bytes, false, &sq));
  MORI_TRY(map(queue.cq_mem, queue.cq_bytes, false, &cqbuf));
  MORI_TRY(map(bnxt_db_.dbr, sizeof(uint64_t), true, &db));

  state::RdmaEndpoint& e = *ep;
  e = state::RdmaEndpoint{};  // create_ibufs adds the ibuf fields
  e.sq = static_cast<uint8_t*>(sq);
  e.cq = static_cast<uint8_t*>(cqbuf);
  e.db = static_cast<uint64_t*>(db);
  e.cq_dbr = static_cast<uint32_t*>(db);  // one doorbell page; the provider writes 8 bytes
  e.sq_wqes = config_.sq_wqes;
  e.cq_entries = queue.cq_entries;
  e.qpn = queue.qp->qp_num;
  e.cqn = cq.cqn;
  e.provider_word[0] = queue.path_mtu_bytes;
  e.provider_state = queue.psn;
  return {};
}

}  // namespace mori::rdma
