// VerbsNetwork::open_ionic and export_ionic: one Ionic (AMD Pensando Pollara) queue pair, as AMD's
// ionic direct verbs describe it, turned into the RdmaEndpoint that mori/provider/ionic.hpp drives
// (its "Engine obligations"). The functions come from the vendor's library, loaded at run time
// (vendor_dv.hpp, which cites their prototypes).
//
// Sources of the facts used here:
//   rdma-core providers/ionic at 37bd52f7 ("ionic: Add ionic_dv_get_qp direct verb", of pull
//     request 1771, which adds ionic_dv_get_ctx, _get_cq and _get_qp): ionic_dv.c (what each
//     returns; EPERM for an object of another provider), ionic.c (ctx->dbpage: the doorbell
//     page plus the kernel's offset into it), ionic_verbs.c (ionic_alloc_pd: queues go to the
//     controller memory bar by default; ionic_create_cq_ex: one ring per pipeline of the CQ, of
//     cqe + IONIC_CQ_GRACE entries; ionic_qp_sq_init: the entry size from the caps;
//     ionic_post_send_common and ionic_reserve_sync_cq: the doorbells at &ctx->dbpage[sq_qtype]
//     and [cq_qtype]),
//     ionic_queue.c/.h (ionic_queue_init's ring geometry; ionic_queue_dbell_init: the doorbell
//     value is the queue id << 24), man/ionic_dv_pd_set_sqcmb.3.md and _set_udma_mask.3.md.
//   ROCm/mori src/application/transport/rdma/providers/ionic/ionic.cpp (IonicQpContainer,
//     IonicDeviceContext::create_parent_domain) and ROCm/rocSHMEM src/gda/ionic/
//     backend_gda_ionic.cpp (ionic_initialize_gpu_qp, ionic_setup_parent_domain): the GPU paths
//     that use these calls, in the same order.
//   Linux drivers/infiniband/hw/ionic/ionic_controlpath.c: ionic_create_qp sets ibv_qp::qp_num to
//     the qpid; ionic_get_qpid alternates new QPs between the pipelines the PD and CQs allow.
//
// Setup (open_ionic), once the device is open:
//   ionic_dv_get_ctx     the doorbell page (db_ptr) and the queue types that index it; EPERM means
//                        the device is not an Ionic one.
//   ionic_dv_pd_set_sqcmb(pd, false, false, false), and _rqcmb likewise: the PD's queues in host
//                        memory. By default the SQ goes to the controller memory bar, where the NIC
//                        reads it and the ring ionic_dv_get_qp reports is only the library's
//                        shadow: the GPU would write entries the NIC never sees. Express doorbells
//                        (which live in CMB entries and change their size) go with it.
//   not called: ionic_dv_pd_set_udma_mask. ROCm/mori and rocSHMEM pin QPs to the two pipelines
//                        through one parent domain each; with the default mask the kernel already
//                        alternates QPs between pipelines, and a CQ made by ibv_create_cq has a
//                        ring on every pipeline, so each QP's completions have a ring whichever
//                        pipeline it lands on. A parent domain is used only for its allocators,
//                        with VerbsConfig::queue_memory (verbs_queue_memory.cpp); without one the
//                        rings stay in the host memory rdma-core allocates, mapped by map().
//
// The export, field by field (docs/rdma-hardware.md):
//   ep.sq          ionic_dv_qp.sq.ptr        mask + 1 entries of 2^stride_log2 = 64 bytes
//   ep.sq_wqes     sq.mask + 1               the ring; create_queues asks for sq_wqes - 1 WQEs,
//                                            which makes it sq_wqes (verbs_qp.cpp)
//   ep.qpn         sq.db_val >> 24           the qpid, which doorbells and CQEs carry
//   ep.db          &db_ptr[sq_qtype]         the SQ doorbell register, MMIO, 8 bytes
//   ep.cq          ionic_dv_cq.q.ptr         the ring of the QP's pipeline
//                                            (ionic_dv_cq for ionic_dv_qp_get_udma_idx)
//   ep.cq_entries  q.mask + 1                at least the SQ's depth; zeroed (color 0 = empty)
//   ep.cqn         q.db_val >> 24            that ring's cqid
//   ep.cq_dbr      &db_ptr[cq_qtype]         the CQ doorbell (the provider's CQ credit return)
//   ep.dbr, provider_word[]  null, 0         unused by the ionic provider
//   ep.ibuf, ibuf_slots, ibuf_lkey           set by create_ibufs after the export
// Every pointer goes through map() (mmio for the doorbells); the engine's indices start at zero.
#include <infiniband/verbs.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "rdma/verbs_network.hpp"
#include "runtime/hex.hpp"

namespace mori::rdma {
namespace {

// ionic_queue.h: IONIC_DBELL_QID_SHIFT, IONIC_QID_MASK.
constexpr int kDbellQidShift = 24;
constexpr uint64_t kQidMask = (uint64_t{1} << 24) - 1;

using runtime::hex;

// Bytes of an entry of 2^stride_log2 bytes (0 for a log2 no entry can have).
uint64_t entry_bytes(uint8_t stride_log2) {
  return stride_log2 < 32 ? uint64_t{1} << stride_log2 : 0;
}

Status dv_error(const std::string& call, const std::string& what, int rc) {
  return Status::error("rdma: " + call + " failed for " + what + ": " +
                       (rc > 0 ? std::strerror(rc) : "error " + std::to_string(rc)));
}

// "" when `q` is a ring of 2^stride_log2-byte entries that the provider can index with a mask:
// a buffer of at least depth * stride bytes, mask = depth - 1, at most 65536 entries
// (ionic_queue_init's geometry; the kernel's ionic_validate_qdesc refuses any other). Else why.
std::string ring_problem(const ionic_dv_queue& q) {
  if (!q.ptr) return "no buffer";
  if (q.depth_log2 > 16 || q.mask != (uint32_t{1} << q.depth_log2) - 1)
    return "mask " + hex(q.mask) + " for log2 depth " + std::to_string(q.depth_log2) +
           " (a ring of at most 65536 entries has mask = depth - 1)";
  if (q.stride_log2 > 16 || q.size < (size_t{1} << (q.depth_log2 + q.stride_log2)))
    return std::to_string(q.size) + " bytes for " + std::to_string(q.mask + 1) + " entries of 2^" +
           std::to_string(q.stride_log2) + " bytes";
  if ((q.db_val & kQidMask) || (q.db_val >> kDbellQidShift) > kQidMask)
    return "doorbell value " + hex(q.db_val) + " (carries more than a queue id)";
  return "";
}

}  // namespace

Status VerbsNetwork::open_ionic() {
  const IonicDv& dv = dv_->ionic();
  if (int rc = dv.get_ctx(&ionic_ctx_, context_)) {
    if (rc == EPERM)
      return Status::error("rdma: " + device_name_ + " is not an Ionic device (ionic_dv_get_ctx: " +
                           std::strerror(rc) + "), but MORI_DEVICE_NIC=ionic");
    return dv_error("ionic_dv_get_ctx", device_name_, rc);
  }
  if (!ionic_ctx_.db_ptr)
    return Status::error("rdma: ionic_dv_get_ctx gave " + device_name_ + " no doorbell page");
  if (int rc = dv.pd_set_sqcmb(pd_, false, false, false))
    return dv_error("ionic_dv_pd_set_sqcmb(off)", device_name_ + "'s PD", rc);
  if (int rc = dv.pd_set_rqcmb(pd_, false, false, false))
    return dv_error("ionic_dv_pd_set_rqcmb(off)", device_name_ + "'s PD", rc);
  return {};
}

Status VerbsNetwork::export_ionic(const Queue& queue, state::RdmaEndpoint* ep) {
  const IonicDv& dv = dv_->ionic();
  const std::string what = "ionic QP " + std::to_string(queue.qp->qp_num);
  ionic_dv_qp qp{};
  ionic_dv_cq cq{};
  if (int rc = dv.get_qp(&qp, queue.qp)) return dv_error("ionic_dv_get_qp", what, rc);
  const uint8_t pipeline = dv.qp_get_udma_idx(queue.qp);
  if (int rc = dv.get_cq(&cq, queue.cq, pipeline))
    return dv_error("ionic_dv_get_cq(pipeline " + std::to_string(pipeline) + ")", what, rc);

  if (entry_bytes(qp.sq.stride_log2) != IonicGeometry::kWqeBytes)
    return Status::error("rdma: " + what + " has " +
                         std::to_string(entry_bytes(qp.sq.stride_log2)) +
                         "-byte SQ entries; the provider writes " +
                         std::to_string(IonicGeometry::kWqeBytes) + "-byte entries");
  if (const std::string why = ring_problem(qp.sq); !why.empty())
    return Status::error("rdma: " + what + "'s SQ is not a ring the provider can drive: " + why);
  if (entry_bytes(cq.q.stride_log2) != IonicGeometry::kCqeBytes)
    return Status::error("rdma: " + what + "'s CQ has " +
                         std::to_string(entry_bytes(cq.q.stride_log2)) +
                         "-byte entries; the provider reads " +
                         std::to_string(IonicGeometry::kCqeBytes) + "-byte CQEs");
  if (const std::string why = ring_problem(cq.q); !why.empty())
    return Status::error("rdma: " + what + "'s CQ is not a ring the provider can poll: " + why);
  const uint32_t sq_wqes = uint32_t{qp.sq.mask} + 1;
  const uint32_t cq_entries = uint32_t{cq.q.mask} + 1;
  // The engine keeps at most sq_wqes - 1 WQEs, hence CQEs, outstanding: a smaller ring overflows.
  if (cq_entries < sq_wqes)
    return Status::error("rdma: " + what + "'s CQ has " + std::to_string(cq_entries) +
                         " entries for " + std::to_string(sq_wqes) +
                         " SQ entries: the provider needs a CQ ring at least the SQ's depth");
  // Color 0 reads as empty on the first pass only if the ring starts zeroed: anything else would
  // be taken for completions. rdma-core's rings are fresh anonymous pages; check, as it is cheap.
  const size_t cq_bytes = size_t{cq_entries} * IonicGeometry::kCqeBytes;
  const auto* cq_bytes_begin = static_cast<const uint8_t*>(cq.q.ptr);
  if (std::any_of(cq_bytes_begin, cq_bytes_begin + cq_bytes, [](uint8_t b) { return b != 0; }))
    return Status::error("rdma: " + what +
                         "'s CQ ring is not zeroed: a stale entry would read as a completion");

  void* sq = nullptr;
  void* db = nullptr;
  void* cqbuf = nullptr;
  void* cq_db = nullptr;
  MORI_TRY(map(qp.sq.ptr, size_t{sq_wqes} * IonicGeometry::kWqeBytes, false, &sq));
  MORI_TRY(map(&ionic_ctx_.db_ptr[ionic_ctx_.sq_qtype], sizeof(uint64_t), true, &db));
  MORI_TRY(map(cq.q.ptr, cq_bytes, false, &cqbuf));
  MORI_TRY(map(&ionic_ctx_.db_ptr[ionic_ctx_.cq_qtype], sizeof(uint64_t), true, &cq_db));

  state::RdmaEndpoint& e = *ep;
  e = state::RdmaEndpoint{};  // create_ibufs adds the ibuf fields
  e.sq = static_cast<uint8_t*>(sq);
  e.cq = static_cast<uint8_t*>(cqbuf);
  e.db = static_cast<uint64_t*>(db);
  e.cq_dbr = static_cast<uint32_t*>(cq_db);  // a 64-bit register; the provider writes 8 bytes
  e.sq_wqes = sq_wqes;
  e.cq_entries = cq_entries;
  e.qpn = static_cast<uint32_t>(qp.sq.db_val >> kDbellQidShift);
  e.cqn = static_cast<uint32_t>(cq.q.db_val >> kDbellQidShift);
  return {};
}

}  // namespace mori::rdma
