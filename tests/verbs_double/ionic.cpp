// The verbs double's Ionic devices: each context's doorbell page, a PD's defaults, and the rings
// of CQs and QPs, sized and refused as rdma-core's ionic provider and the kernel's ionic driver
// size and refuse them; then the NIC's own view of a QP (nic_endpoint_ionic). The ionic direct
// verbs that report these objects to the runtime live in ionic_dv.cpp, a library of their own.
//
// Sources: rdma-core providers/ionic at 37bd52f7, pull request 1771 (ionic.c: the doorbell page;
// ionic_verbs.c: ionic_alloc_pd, ionic_create_cq_ex, ionic_vcq_cq_init1, ionic_qp_sq_init,
// ionic_qp_rq_init; ionic_queue.c: ionic_queue_init; ionic_fw.h: ionic_v1_send_wqe_min_size and
// _max_sge, _max_data, ionic_v1_recv_wqe_min_size; ionic.h: IONIC_CQ_GRACE, IONIC_QUEUE_DEPTH_MAX),
// and Linux drivers/infiniband/hw/ionic/ionic_controlpath.c (ionic_create_qp: the pipelines a QP
// may use and qp_num = qpid; ionic_get_qpid: new QPs alternate between pipelines; ionic_qp_sq_init
// and ionic_qp_rq_init: at least one SGE).
//
// Not modelled: the "spec" SGE formats (for one SGE they change no size), express doorbells'
// entry sizes (the flag is kept, and the export turns it off with the CMB), parent domains and
// their allocators, and where the kernel falls back from the CMB to host memory.
#include <algorithm>
#include <cstring>

#include "double_state.hpp"

namespace verbs_double {
namespace internal {
namespace {

constexpr int kPageShift = 12;               // the kernel's PAGE_SHIFT (resp.page_shift)
constexpr uint32_t kCqGrace = 100;           // IONIC_CQ_GRACE
constexpr uint32_t kQueueDepthMax = 0xffff;  // IONIC_QUEUE_DEPTH_MAX
constexpr uint32_t kPayloadOffset = 32;      // offsetof(ionic_v1_wqe, common.pld), recv.pld
constexpr uint32_t kSgeBytes = 16;           // sizeof(ionic_sge)
constexpr uint32_t kMinWqeBytes = 64;        // sizeof(ionic_v1_wqe)
constexpr uint8_t kCqeStrideLog2 = 5;        // sizeof(ionic_v1_cqe) = 32

// ccan's ilog32 / ilog64: the number of bits of v, 0 for 0.
uint8_t ilog(uint64_t v) { return v ? static_cast<uint8_t>(64 - __builtin_clzll(v)) : 0; }

// ionic_queue_init: 2^ilog32(depth) entries (depth 0 counts as 1), so the ring is the next power
// of two above the depth asked, and at least a page of them.
void make_ring(IonicRing& r, uint32_t depth, uint8_t stride_log2, uint32_t id,
               uint8_t fault_depth_log2 = 0) {
  r.depth_log2 = fault_depth_log2 ? fault_depth_log2 : ilog(std::max<uint32_t>(depth, 1));
  r.stride_log2 = stride_log2;
  if (r.depth_log2 + r.stride_log2 < kPageShift) r.depth_log2 = kPageShift - r.stride_log2;
  r.buf = PageBuffer(size_t{1} << (r.depth_log2 + r.stride_log2));
  r.id = id;
}

// ionic_v1_send_wqe_min_size without spec SGEs or express doorbell: the header and a payload
// that holds max_sge SGEs or max_data inline bytes, at least 64, rounded to a power of two.
uint8_t send_stride_log2(uint32_t max_sge, uint32_t max_data) {
  const uint64_t bytes =
      std::max({uint64_t{kMinWqeBytes}, uint64_t{kPayloadOffset} + uint64_t{kSgeBytes} * max_sge,
                uint64_t{kPayloadOffset} + max_data});
  return ilog(bytes - 1);  // ilog64(stride - 1), ionic_queue_init's stride_log2
}

// ionic_v1_recv_wqe_min_size likewise (no data, no rounding: ionic_queue_init rounds the stride).
uint8_t recv_stride_log2(uint32_t max_sge) {
  return ilog(
      std::max(uint64_t{kMinWqeBytes}, uint64_t{kPayloadOffset} + uint64_t{kSgeBytes} * max_sge) -
      1);
}

}  // namespace

PageBuffer::PageBuffer(size_t bytes) {
  size_ = (std::max<size_t>(bytes, 1) + kPage - 1) / kPage * kPage;
  p_.reset(static_cast<uint8_t*>(std::aligned_alloc(kPage, size_)));
  std::memset(p_.get(), 0, size_);
}

void ionic_open_context(Context& c) { c.dbpage = PageBuffer(PageBuffer::kPage); }

void ionic_alloc_pd(Pd& p) {
  const IonicSpec& s = p.context->device->spec.ionic;
  p.udma_mask = p.context->udma_mask();
  p.sq_cmb = kIonicCmbEnable | (s.sq_expdb ? kIonicCmbExpdb : 0);
  p.rq_cmb = kIonicCmbEnable | (s.rq_expdb ? kIonicCmbExpdb : 0);
}

// ionic_create_cq_ex without a parent domain: a ring on every pipeline of the context.
std::string ionic_create_cq(Fabric& f, Cq& cq, int cqe) {
  if (cqe < 1 || cqe + kCqGrace > kQueueDepthMax)
    return "cqe " + std::to_string(cqe) + " + IONIC_CQ_GRACE is beyond 0xffff (ionic_create_cq_ex)";
  const IonicSpec& s = cq.context->device->spec.ionic;
  cq.udma_mask = cq.context->udma_mask();
  cq.rings.resize(s.udma_count);
  for (uint8_t i = 0; i < s.udma_count; ++i)
    make_ring(cq.rings[i], cqe + kCqGrace, kCqeStrideLog2, f.next_cqn++, s.fault_cq_depth_log2);
  cq.cq.cqe = cqe;
  return "";
}

std::string ionic_create_qp(Qp& q, const ibv_qp_cap& cap, uint32_t qpid) {
  Device& d = *q.context->device;
  const IonicSpec& s = d.spec.ionic;
  const uint32_t stride_max = uint32_t{1} << s.max_stride;
  const uint32_t sge_max = (stride_max - kPayloadOffset) / kSgeBytes;
  const std::string limit = " (entries of at most 2^" + std::to_string(s.max_stride) + " bytes)";
  if (cap.max_send_wr > kQueueDepthMax || cap.max_recv_wr > kQueueDepthMax)
    return "max_send_wr and max_recv_wr are at most 0xffff (ionic_qp_sq_init, ionic_qp_rq_init)";
  if (cap.max_send_sge < 1 || cap.max_send_sge > sge_max)
    return "max_send_sge " + std::to_string(cap.max_send_sge) + " is outside 1.." +
           std::to_string(sge_max) + limit;
  if (cap.max_recv_sge < 1 || cap.max_recv_sge > sge_max)
    return "max_recv_sge " + std::to_string(cap.max_recv_sge) + " is outside 1.." +
           std::to_string(sge_max) + limit;
  if (cap.max_inline_data > stride_max - kPayloadOffset)
    return "max_inline_data " + std::to_string(cap.max_inline_data) + " is beyond " +
           std::to_string(stride_max - kPayloadOffset) + limit;
  const uint8_t allowed =
      q.context->udma_mask() & q.send_cq->udma_mask & q.recv_cq->udma_mask & q.pd->udma_mask;
  if (!allowed) return "no pipeline is allowed by both the PD's and the CQs' UDMA masks";
  // ionic_get_qpid: the device alternates which pipeline it tries first.
  const uint8_t first = d.next_udma;
  d.next_udma ^= s.udma_count - 1;
  for (uint8_t i = 0; i < s.udma_count; ++i)
    if (allowed & (1u << (i ^ first))) {
      q.udma_idx = i ^ first;
      break;
    }
  q.sq_cmb = q.pd->sq_cmb;
  q.rq_cmb = q.pd->rq_cmb;
  const uint8_t sq_stride = s.fault_sq_stride_log2
                                ? s.fault_sq_stride_log2
                                : send_stride_log2(cap.max_send_sge, cap.max_inline_data);
  make_ring(q.isq, cap.max_send_wr, sq_stride, qpid);
  make_ring(q.irq, cap.max_recv_wr, recv_stride_log2(cap.max_recv_sge), qpid);
  return "";
}

bool nic_endpoint_ionic(const Qp& qp, mori::state::RdmaEndpoint* out, std::string* why) {
  const std::string me = "QP " + std::to_string(qp.qp.qp_num);
  const DeviceSpec& s = qp.context->device->spec;
  if (s.family != Family::kIonic) {
    *why = me + " is on " + s.name + ", not an Ionic device";
    return false;
  }
  if (qp.sq_cmb & kIonicCmbEnable) {
    *why = me +
           " has its SQ in the controller memory bar: the NIC reads entries there, not from "
           "the ring ionic_dv_get_qp reports (ionic_dv_pd_set_sqcmb was not turned off)";
    return false;
  }
  if (qp.isq.stride_log2 != 6) {
    *why = me + " has " + std::to_string(1u << qp.isq.stride_log2) +
           "-byte SQ entries; the software NIC reads 64-byte Ionic entries";
    return false;
  }
  const IonicRing& cq = qp.send_cq->rings[qp.udma_idx];
  *out = mori::state::RdmaEndpoint{};
  out->sq = qp.isq.buf.data();
  out->sq_wqes = qp.isq.depth();
  out->db = &qp.context->doorbells()[s.ionic.sq_qtype];
  out->cq = cq.buf.data();
  out->cq_entries = cq.depth();
  out->qpn = qp.isq.id;
  out->cqn = cq.id;
  return true;
}

}  // namespace internal

bool nic_endpoint_ionic(uint32_t qpn, mori::state::RdmaEndpoint* out, std::string* why) {
  internal::Fabric& f = internal::fabric();
  std::lock_guard<std::mutex> lock(f.mutex);
  for (const auto& [key, qp] : f.qps)
    if (qp->qp.qp_num == qpn) return internal::nic_endpoint_ionic(*qp, out, why);
  *why = "no QP " + std::to_string(qpn) + " is alive in the fabric";
  return false;
}

}  // namespace verbs_double
