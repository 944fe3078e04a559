// Ionic queue pairs on the verbs double: VerbsNetwork::open with MORI_DEVICE_NIC=ionic, its
// direct verbs loaded from the double's own library (libmori_verbs_double_ionic.so, by path, as
// AMD's libionic would be), two PEs as two threads on two fake Ionic devices. The exported
// endpoints are compared with the NIC's own view of each QP (verbs_double::nic_endpoint_ionic,
// built from the double's objects), the export's refusals are checked with their exact texts, and
// the double itself is checked: one fabric behind both libraries, rings sized as rdma-core's
// ionic provider sizes them (hand-computed here from its formulas), and the direct verbs'
// refusals of other families' objects and of bad arguments.
#include <dlfcn.h>
#include <doctest/doctest.h>
#include <infiniband/mlx5dv.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "rdma/vendor_dv.hpp"
#include "rdma/verbs_network.hpp"
#include "two_pes.hpp"
#include "verbs_double.hpp"

namespace rdma = mori::rdma;
namespace vd = verbs_double;
using mori::state::RdmaEndpoint;

namespace {

constexpr uint32_t kSqWqes = 256;

vd::TwoPes ionic_pes(int qps_per_pe) {
  vd::TwoPes how;
  how.nic = "ionic";
  how.dv_library = MORI_VERBS_DOUBLE_IONIC;
  how.qps_per_pe = qps_per_pe;
  how.sq_wqes = kSqWqes;
  // While the QPs are alive: what the NIC itself sees of each of this PE's QPs, in creation order.
  how.while_open = vd::record_nic_view(vd::nic_endpoint_ionic);
  return how;
}

std::unique_ptr<rdma::VendorDv> load_double_dv() {
  std::unique_ptr<rdma::VendorDv> dv;
  const mori::Status s = rdma::VendorDv::load("ionic", {MORI_VERBS_DOUBLE_IONIC}, &dv);
  REQUIRE_MESSAGE(s.ok(), s.message());
  return dv;
}

// One open device of the fabric with a PD, and the CQs and QPs a test makes on it, destroyed in
// the kernel's order at the end.
class Direct {
 public:
  explicit Direct(int index) {
    int n = 0;
    list_ = ibv_get_device_list(&n);
    REQUIRE(index < n);
    device = list_[index];
    ctx = ibv_open_device(device);
    REQUIRE(ctx);
    pd = ibv_alloc_pd(ctx);
    REQUIRE(pd);
  }
  ~Direct() {
    for (ibv_qp* qp : qps_) ibv_destroy_qp(qp);
    for (ibv_cq* cq : cqs_) ibv_destroy_cq(cq);
    ibv_dealloc_pd(pd);
    ibv_close_device(ctx);
    ibv_free_device_list(list_);
  }
  ibv_cq* cq(int cqe) {
    ibv_cq* c = ibv_create_cq(ctx, cqe, nullptr, nullptr, 0);
    if (c) cqs_.push_back(c);
    return c;
  }
  // An RC QP of these caps (receive: none, one SGE) on `send` for both queues.
  ibv_qp* qp(ibv_cq* send, uint32_t max_send_wr, uint32_t max_send_sge, uint32_t max_inline) {
    ibv_qp_init_attr init{};
    init.send_cq = init.recv_cq = send;
    init.qp_type = IBV_QPT_RC;
    init.cap.max_send_wr = max_send_wr;
    init.cap.max_send_sge = max_send_sge;
    init.cap.max_recv_sge = 1;
    init.cap.max_inline_data = max_inline;
    ibv_qp* q = ibv_create_qp(pd, &init);
    if (q) qps_.push_back(q);
    return q;
  }

  ibv_device* device = nullptr;
  ibv_context* ctx = nullptr;
  ibv_pd* pd = nullptr;

 private:
  ibv_device** list_ = nullptr;
  std::vector<ibv_cq*> cqs_;
  std::vector<ibv_qp*> qps_;
};

// Two PEs x 1 QP on Ionic devices with `fault`: each PE's open fails with its own QP's error,
// "rdma: ionic QP <its qpn>" followed by `after_qpn`, and leaves nothing alive.
void check_export_refused(void (*fault)(vd::IonicSpec&), const std::string& after_qpn) {
  vd::DeviceSpec a = vd::roce_ionic("ionic_0", 1), b = vd::roce_ionic("ionic_1", 2);
  fault(a.ionic);
  fault(b.ionic);
  vd::reset({a, b});
  const std::vector<vd::PeOutcome> outcome = vd::open_two_pes(ionic_pes(1));
  for (int pe = 0; pe < 2; ++pe) {
    CAPTURE(pe);
    const std::vector<vd::QpRecord> mine = vd::records_of("ionic_" + std::to_string(pe));
    REQUIRE(mine.size() == 1);
    CHECK_FALSE(outcome[pe].network);
    CHECK(outcome[pe].status.message() ==
          "rdma: ionic QP " + std::to_string(mine[0].qpn) + after_qpn);
  }
  vd::check_nothing_alive();
}

bool zeroed(const void* p, size_t bytes) {
  const auto* b = static_cast<const uint8_t*>(p);
  for (size_t i = 0; i < bytes; ++i)
    if (b[i]) return false;
  return true;
}

}  // namespace

TEST_CASE("ionic: one fabric behind the executable and the dlopened direct verbs") {
  vd::reset({vd::roce_ionic("ionic_0", 1)});
  // The executable defines no ionic direct verb itself: only the library it loads does.
  CHECK(dlsym(RTLD_DEFAULT, "ionic_dv_get_ctx") == nullptr);
  void* lib = dlopen(MORI_VERBS_DOUBLE_IONIC, RTLD_NOW | RTLD_LOCAL);
  REQUIRE_MESSAGE(lib, dlerror());
  using Address = const void* (*)();
  auto address = reinterpret_cast<Address>(dlsym(lib, "verbs_double_ionic_fabric_address"));
  REQUIRE(reinterpret_cast<void*>(address) != nullptr);
  CHECK(address() == vd::fabric_address());
  dlclose(lib);
  // And the library finds the objects the executable created.
  {
    std::unique_ptr<rdma::VendorDv> dv = load_double_dv();
    Direct d(0);
    ionic_dv_ctx ctx{};
    CHECK(dv->ionic().get_ctx(&ctx, d.ctx) == 0);
    CHECK(ctx.db_page != nullptr);
    CHECK(ctx.db_ptr == static_cast<uint64_t*>(ctx.db_page));  // dbell_offset 0
  }
  CHECK(vd::refusals().empty());
  vd::check_nothing_alive();
}

TEST_CASE("ionic: 2 PEs x 2 QPs open through the ionic direct verbs, export, register, tear down") {
  vd::reset({vd::roce_ionic("ionic_0", 1), vd::roce_ionic("ionic_1", 2)});
  constexpr int kQps = 2;
  const std::vector<vd::PeOutcome> outcome = vd::open_two_pes(ionic_pes(kQps));

  const std::string refused = vd::all_refusals();
  CHECK_MESSAGE(refused.empty(), refused);
  const vd::IonicSpec spec;  // roce_ionic's: the queue types that index the doorbell page
  for (int pe = 0; pe < 2; ++pe) {
    CAPTURE(pe);
    const vd::PeOutcome& o = outcome[pe];
    vd::check_opened(o);
    const std::vector<vd::QpRecord> mine = vd::records_of("ionic_" + std::to_string(pe));
    const std::vector<vd::QpRecord> theirs = vd::records_of("ionic_" + std::to_string(1 - pe));
    REQUIRE(mine.size() == size_t{kQps});
    REQUIRE(theirs.size() == mine.size());
    CHECK_MESSAGE(o.nic_view_error.empty(), o.nic_view_error);
    REQUIRE(o.nic_view.size() == mine.size());
    REQUIRE(o.endpoints.size() == size_t{2 * kQps});
    for (int q = 0; q < kQps; ++q) {
      CAPTURE(q);
      const vd::QpRecord& r = mine[q];
      vd::check_transitions(r);
      CHECK(r.dest_qpn == theirs[q].qpn);
      CHECK(r.rq_psn == theirs[q].sq_psn);
      // The kernel alternates pipelines: QP 0 on 0, QP 1 on 1, so both get_cq paths run.
      CHECK(r.udma_idx == q);
      CHECK_FALSE(r.sq_in_cmb);  // the export turned the PD's controller memory bar off
      // rdma-core's rings: an SQ of sq_wqes - 1 WQEs is a ring of 2^ilog32(255) = 256 entries; a
      // CQ of sq_wqes entries one of 2^ilog32(256 + IONIC_CQ_GRACE) = 512 on each pipeline.
      CHECK(r.cq_entries == 512);

      const RdmaEndpoint& self = o.endpoints[pe * kQps + q];
      const RdmaEndpoint& ep = o.endpoints[(1 - pe) * kQps + q];
      const RdmaEndpoint& nic = o.nic_view[q];
      CHECK(self.sq == nullptr);
      // What the runtime exported is what the NIC reads.
      CHECK(ep.sq == nic.sq);
      CHECK(ep.sq_wqes == nic.sq_wqes);
      CHECK(ep.sq_wqes == kSqWqes);
      CHECK(ep.cq == nic.cq);
      CHECK(ep.cq_entries == nic.cq_entries);
      CHECK(ep.cq_entries == 512);
      CHECK(ep.qpn == nic.qpn);
      CHECK(ep.qpn == r.qpn);
      CHECK(ep.cqn == nic.cqn);
      CHECK(ep.db == nic.db);
      // db is the doorbell page's word sq_qtype; cq_dbr its word cq_qtype.
      CHECK((reinterpret_cast<uintptr_t>(nic.db) & 4095) == spec.sq_qtype * sizeof(uint64_t));
      CHECK(reinterpret_cast<uint64_t*>(ep.cq_dbr) == nic.db - spec.sq_qtype + spec.cq_qtype);
      CHECK(ep.dbr == nullptr);
      for (uint32_t w : ep.provider_word) CHECK(w == 0);
      CHECK(ep.ibuf != nullptr);
      CHECK(ep.ibuf_slots == 16);
      CHECK(ep.ibuf_lkey != 0);
      CHECK(ep.reserved == 0);
      CHECK(ep.cq_consumed == 0);
    }
    // Different CQ rings and doorbell values for different QPs.
    CHECK(o.nic_view[0].cq != o.nic_view[1].cq);
    CHECK(o.nic_view[0].cqn != o.nic_view[1].cqn);
  }
  std::string problems;
  for (const std::string& p : vd::connection_problems()) problems += p + "\n";
  CHECK_MESSAGE(problems.empty(), problems);
  vd::check_nothing_alive();
}

TEST_CASE("ionic: the export refuses SQ entries other than the provider's 64 bytes") {
  check_export_refused([](vd::IonicSpec& s) { s.fault_sq_stride_log2 = 7; },
                       " has 128-byte SQ entries; the provider writes 64-byte entries");
}

TEST_CASE("ionic: the export refuses a CQ ring smaller than the SQ") {
  check_export_refused([](vd::IonicSpec& s) { s.fault_cq_depth_log2 = 7; },
                       "'s CQ has 128 entries for 256 SQ entries: the provider needs a CQ ring at "
                       "least the SQ's depth");
}

TEST_CASE("ionic: the double sizes rings as rdma-core's ionic provider does") {
  vd::reset({vd::roce_ionic("ionic_0", 1)});
  std::unique_ptr<rdma::VendorDv> dv = load_double_dv();
  const rdma::IonicDv& fn = dv->ionic();
  {
    Direct d(0);
    // A CQ of 256: a ring of 2^ilog32(256 + 100) = 512 entries of 32 bytes on each of the two
    // pipelines, zeroed, each with its own cqid.
    ibv_cq* cq = d.cq(256);
    REQUIRE(cq);
    ionic_dv_cq c0{}, c1{}, c2{};
    REQUIRE(fn.get_cq(&c0, cq, 0) == 0);
    REQUIRE(fn.get_cq(&c1, cq, 1) == 0);
    for (const ionic_dv_cq* c : {&c0, &c1}) {
      CHECK(c->q.mask == 511);
      CHECK(c->q.depth_log2 == 9);
      CHECK(c->q.stride_log2 == 5);
      CHECK(c->q.size == 512 * 32);
      CHECK(reinterpret_cast<uintptr_t>(c->q.ptr) % 4096 == 0);
      CHECK(zeroed(c->q.ptr, c->q.size));
      CHECK((c->q.db_val & 0xffffff) == 0);
    }
    CHECK(c0.q.db_val != c1.q.db_val);
    CHECK(fn.get_cq(&c2, cq, 2) == EINVAL);
    CHECK(vd::last_refusal() == "ionic_dv_get_cq: the CQ has no ring on pipeline 2");

    // The PD's SQs go to the controller memory bar until told otherwise (ionic_alloc_pd); the NIC
    // then reads them there, and the double's NIC view refuses such a QP.
    ibv_qp* in_cmb = d.qp(cq, 255, 1, 32);
    REQUIRE(in_cmb);
    RdmaEndpoint nic{};
    std::string why;
    CHECK_FALSE(vd::nic_endpoint_ionic(in_cmb->qp_num, &nic, &why));
    CHECK(why == "QP " + std::to_string(in_cmb->qp_num) +
                     " has its SQ in the controller memory bar: the NIC reads entries there, not "
                     "from the ring ionic_dv_get_qp reports (ionic_dv_pd_set_sqcmb was not turned "
                     "off)");
    REQUIRE(fn.pd_set_sqcmb(d.pd, false, false, false) == 0);

    // 255 WQEs of one SGE and 32 inline bytes: 64-byte entries, a ring of 2^ilog32(255) = 256.
    // The receive queue, asked for none: 2^ilog32(1) = 2 entries, raised to a page (64).
    ibv_qp* qp = d.qp(cq, 255, 1, 32);
    REQUIRE(qp);
    ionic_dv_qp q{};
    REQUIRE(fn.get_qp(&q, qp) == 0);
    CHECK(q.sq.mask == 255);
    CHECK(q.sq.stride_log2 == 6);
    CHECK(q.sq.db_val == uint64_t{qp->qp_num} << 24);
    CHECK(q.rq.mask == 63);
    CHECK(vd::nic_endpoint_ionic(qp->qp_num, &nic, &why));
    CHECK(nic.sq == q.sq.ptr);
    CHECK(nic.sq_wqes == 256);
    // 256 WQEs make a ring of 512; 40 inline bytes need 72, so 128-byte entries.
    ibv_qp* big = d.qp(cq, 256, 1, 40);
    REQUIRE(big);
    REQUIRE(fn.get_qp(&q, big) == 0);
    CHECK(q.sq.mask == 511);
    CHECK(q.sq.stride_log2 == 7);
    // The device alternates pipelines: the three QPs went to 0, 1, 0.
    CHECK(fn.qp_get_udma_idx(in_cmb) == 0);
    CHECK(fn.qp_get_udma_idx(qp) == 1);
    CHECK(fn.qp_get_udma_idx(big) == 0);
    // Pinned to pipeline 1, a QP goes there.
    REQUIRE(fn.pd_set_udma_mask(d.pd, 2) == 0);
    ibv_qp* pinned = d.qp(cq, 255, 1, 32);
    REQUIRE(pinned);
    CHECK(fn.qp_get_udma_idx(pinned) == 1);
    // The kernel wants at least one SGE; the firmware's largest entry (2^8) bounds them.
    CHECK(d.qp(cq, 255, 0, 32) == nullptr);
    CHECK(errno == EINVAL);
    CHECK(vd::last_refusal() ==
          "create_qp: max_send_sge 0 is outside 1..14 (entries of at most 2^8 bytes)");
  }
  vd::check_nothing_alive();
}

TEST_CASE("ionic: the direct verbs refuse other families' objects and bad arguments") {
  vd::DeviceSpec ionic = vd::roce_ionic("ionic_0", 2);
  ionic.ionic.sq_expdb = false;
  vd::reset({vd::roce_mlx5("mlx5_0", 1), ionic});
  std::unique_ptr<rdma::VendorDv> dv = load_double_dv();
  const rdma::IonicDv& fn = dv->ionic();
  {
    Direct m(0), i(1);
    ibv_cq* mcq = m.cq(16);
    ibv_cq* icq = i.cq(16);
    REQUIRE(mcq);
    REQUIRE(icq);
    ibv_qp* mqp = m.qp(mcq, 16, 1, 28);
    ibv_qp* iqp = i.qp(icq, 15, 1, 32);
    REQUIRE(mqp);
    REQUIRE(iqp);

    ionic_dv_ctx ctx{};
    ionic_dv_qp q{};
    ionic_dv_cq c{};
    CHECK(fn.get_ctx(&ctx, m.ctx) == EPERM);
    CHECK(vd::last_refusal() == "ionic_dv_get_ctx: mlx5_0 is not an ionic device");
    CHECK(fn.get_qp(&q, mqp) == EPERM);
    CHECK(vd::last_refusal() ==
          "ionic_dv_get_qp: the QP is not on an ionic device (it is on "
          "mlx5_0)");
    CHECK(fn.get_cq(&c, mcq, 0) == EPERM);
    CHECK(vd::last_refusal() ==
          "ionic_dv_get_cq: the CQ is not on an ionic device (it is on "
          "mlx5_0)");
    CHECK(fn.qp_get_udma_idx(mqp) == 0);
    CHECK(fn.pd_set_sqcmb(m.pd, false, false, false) == EPERM);
    CHECK(fn.pd_set_udma_mask(m.pd, 1) == EPERM);

    // Ionic objects: pipelines the device lacks, and a required express doorbell it lacks.
    CHECK(fn.pd_set_udma_mask(i.pd, 4) == EINVAL);
    CHECK(vd::last_refusal() ==
          "ionic_dv_pd_set_udma_mask: mask 4 names pipelines ionic_0 lacks (it has 2)");
    CHECK(fn.pd_set_sqcmb(i.pd, true, true, true) == EINVAL);
    CHECK(vd::last_refusal() ==
          "ionic_dv_pd_set_sqcmb: an express doorbell is required, and ionic_0 has none");
    CHECK(fn.pd_set_sqcmb(i.pd, true, true, false) == 0);  // falls back, as rdma-core does
    CHECK(fn.pd_set_rqcmb(i.pd, true, true, true) == 0);   // rq_expdb is available

    // mlx5dv refuses Ionic objects.
    CHECK_FALSE(mlx5dv_is_supported(i.device));
    mlx5dv_qp mq{};
    mlx5dv_obj obj{};
    obj.qp.in = iqp;
    obj.qp.out = &mq;
    CHECK(mlx5dv_init_obj(&obj, MLX5DV_OBJ_QP) == EOPNOTSUPP);
    CHECK(vd::last_refusal() == "mlx5dv_init_obj: the QP is not on an mlx5 device");
  }
  vd::check_nothing_alive();
}
