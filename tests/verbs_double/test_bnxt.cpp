// BNXT queue pairs on the verbs double: VerbsNetwork::open with MORI_DEVICE_NIC=bnxt, Broadcom's
// direct verbs loaded from the double's own library (libmori_verbs_double_bnxt.so, by path, as
// libbnxt_re would be), two PEs as two threads on two fake BNXT devices. The exported endpoints
// are compared with the NIC's own view of each QP (verbs_double::nic_endpoint_bnxt, built from the
// double's objects); the export's and the double's refusals are checked with their exact texts.
#include <doctest/doctest.h>

#include <cerrno>
#include <cstdlib>
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

vd::TwoPes bnxt_pes(int qps_per_pe, uint32_t sq_wqes = kSqWqes) {
  vd::TwoPes how;
  how.nic = "bnxt";
  how.dv_library = MORI_VERBS_DOUBLE_BNXT;
  how.qps_per_pe = qps_per_pe;
  how.sq_wqes = sq_wqes;
  how.while_open = vd::record_nic_view(vd::nic_endpoint_bnxt);
  return how;
}

void check_two_pes(int qps) {
  vd::reset({vd::roce_bnxt("bnxt_re0", 1), vd::roce_bnxt("bnxt_re1", 2)});
  const std::vector<vd::PeOutcome> outcome = vd::open_two_pes(bnxt_pes(qps));
  const std::string refused = vd::all_refusals();
  CHECK_MESSAGE(refused.empty(), refused);
  for (int pe = 0; pe < 2; ++pe) {
    CAPTURE(pe);
    const vd::PeOutcome& o = outcome[pe];
    vd::check_opened(o);
    const std::vector<vd::QpRecord> mine = vd::records_of("bnxt_re" + std::to_string(pe));
    const std::vector<vd::QpRecord> theirs = vd::records_of("bnxt_re" + std::to_string(1 - pe));
    REQUIRE(mine.size() == size_t(qps));
    REQUIRE(theirs.size() == mine.size());
    CHECK_MESSAGE(o.nic_view_error.empty(), o.nic_view_error);
    REQUIRE(o.nic_view.size() == mine.size());
    REQUIRE(o.endpoints.size() == size_t(2 * qps));
    for (int q = 0; q < qps; ++q) {
      CAPTURE(q);
      const vd::QpRecord& r = mine[q];
      vd::check_transitions(r);  // through bnxt_re_dv_modify_qp, with the kernel's masks
      CHECK(r.dest_qpn == theirs[q].qpn);
      CHECK(r.rq_psn == theirs[q].sq_psn);
      const RdmaEndpoint& self = o.endpoints[pe * qps + q];
      const RdmaEndpoint& ep = o.endpoints[(1 - pe) * qps + q];
      const RdmaEndpoint& nic = o.nic_view[q];
      CHECK(self.sq == nullptr);
      CHECK(ep.sq != nullptr);
      CHECK(ep.sq == nic.sq);
      CHECK(ep.sq_wqes == kSqWqes);
      CHECK(nic.sq_wqes == kSqWqes);
      CHECK(ep.cq == nic.cq);
      CHECK(ep.cq_entries == nic.cq_entries);
      CHECK(ep.cq_entries >= ep.sq_wqes);
      CHECK(ep.qpn == r.qpn);
      CHECK(ep.qpn == nic.qpn);
      CHECK(ep.cqn == nic.cqn);
      CHECK(ep.db != nullptr);
      CHECK(ep.db == nic.db);
      CHECK(static_cast<void*>(ep.cq_dbr) == static_cast<void*>(ep.db));
      CHECK(ep.provider_word[0] == 4096);
      CHECK(nic.provider_word[0] == 4096);
      CHECK(ep.provider_state == r.sq_psn);
      CHECK(ep.ibuf != nullptr);
    }
  }
  const vd::Live l = vd::live();
  CHECK(l.umems == 0);
  vd::check_nothing_alive();
}

std::unique_ptr<rdma::VendorDv> load_double_dv() {
  std::unique_ptr<rdma::VendorDv> dv;
  const mori::Status s = rdma::VendorDv::load("bnxt", {MORI_VERBS_DOUBLE_BNXT}, &dv);
  REQUIRE_MESSAGE(s.ok(), s.message());
  return dv;
}

}  // namespace

TEST_CASE("bnxt: 2 PEs x 1 QP open through the bnxt_re direct verbs, export, register, tear down") {
  check_two_pes(1);
}

TEST_CASE(
    "bnxt: 2 PEs x 2 QPs open through the bnxt_re direct verbs, export, register, tear down") {
  check_two_pes(2);
}

TEST_CASE("bnxt: open refuses more WQEs than the provider indexes") {
  vd::reset({vd::roce_bnxt("bnxt_re0", 1), vd::roce_bnxt("bnxt_re1", 2)});
  const std::vector<vd::PeOutcome> outcome = vd::open_two_pes(bnxt_pes(1, 32768));
  for (int pe = 0; pe < 2; ++pe) {
    CAPTURE(pe);
    CHECK_FALSE(outcome[pe].network);
    CHECK(outcome[pe].status.message() ==
          "rdma: sq_wqes 32768 is more than the 16384 WQEs the BNXT provider indexes");
  }
  vd::check_nothing_alive();
  CHECK(vd::live().umems == 0);
}

TEST_CASE("bnxt: the double's create_qp refuses a umem too small, modify_qp a missing attribute") {
  vd::reset({vd::roce_bnxt("bnxt_re0", 1)});
  std::unique_ptr<rdma::VendorDv> dv = load_double_dv();
  const rdma::BnxtDv& b = dv->bnxt();
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  REQUIRE(n == 1);
  ibv_context* ctx = ibv_open_device(list[0]);
  REQUIRE(ctx);
  ibv_pd* pd = ibv_alloc_pd(ctx);
  REQUIRE(pd);
  void* mem = std::aligned_alloc(4096, 8192);
  bnxt_re_dv_umem_reg_attr ua{};
  ua.addr = mem;
  ua.size = 4096;
  void* small = b.umem_reg(ctx, &ua);
  REQUIRE(small);
  bnxt_re_dv_cq_init_attr ca{};
  ca.umem_handle = small;
  ca.ncqe = 128;  // exactly 4096 bytes of 32-byte CQEs
  ibv_cq* cq = b.create_cq(ctx, &ca);
  REQUIRE(cq);
  ca.ncqe = 129;
  errno = 0;
  CHECK(b.create_cq(ctx, &ca) == nullptr);
  CHECK(errno == EINVAL);
  CHECK(vd::last_refusal() ==
        "bnxt_re_dv_create_cq: the CQ umem has 4096 bytes; 4128 are needed from offset 0");

  // 256 WQEs: 768 slots, 512 MSN entries; sq_len = align(768 * 16 + 512 * 8, 4096) = 16384.
  bnxt_re_dv_qp_init_attr qa{};
  qa.qp_type = IBV_QPT_RC;
  qa.max_send_wr = 256;
  qa.max_send_sge = qa.max_recv_sge = 1;
  qa.send_cq = qa.recv_cq = cq;
  qa.sq_umem_handle = qa.rq_umem_handle = small;
  qa.sq_slots = qa.rq_slots = 768;
  qa.sq_npsn = 512;
  qa.sq_psn_sz = 8;
  qa.sq_wqe_sz = qa.rq_wqe_sz = 48;
  qa.sq_len = 16384;
  qa.rq_len = 12288;
  errno = 0;
  CHECK(b.create_qp(pd, &qa) == nullptr);
  CHECK(errno == EINVAL);
  CHECK(vd::last_refusal() ==
        "bnxt_re_dv_create_qp: the SQ umem has 4096 bytes; 16384 are needed from offset 0");
  qa.sq_npsn = 256;
  CHECK(b.create_qp(pd, &qa) == nullptr);
  CHECK(vd::last_refusal() ==
        "bnxt_re_dv_create_qp: sq_npsn 256 for 768 slots (roundup_pow2(sq_slots) / 2 = 512)");

  // A QP that fits (8 WQEs: 24 slots, 16 MSN entries, 512 bytes), then RTR without its AV.
  qa.max_send_wr = 8;
  qa.sq_slots = qa.rq_slots = 24;
  qa.sq_npsn = 16;
  qa.sq_len = qa.rq_len = 4096;
  ibv_qp* qp = b.create_qp(pd, &qa);
  REQUIRE(qp);
  CHECK(b.umem_dereg(small) == EBUSY);
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_INIT;
  attr.port_num = 1;
  CHECK(b.modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS,
                    0, 0) == 0);
  attr = ibv_qp_attr{};
  attr.qp_state = IBV_QPS_RTR;
  attr.path_mtu = IBV_MTU_4096;
  CHECK(b.modify_qp(qp, &attr,
                    IBV_QP_STATE | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                        IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER,
                    0, 0) == EINVAL);
  CHECK(vd::last_refusal() ==
        "bnxt_re_dv_modify_qp INIT->RTR: missing required attribute IBV_QP_AV");

  CHECK(b.destroy_cq(cq) == EBUSY);
  CHECK(b.destroy_qp(qp) == 0);
  CHECK(b.destroy_cq(cq) == 0);
  CHECK(b.umem_dereg(small) == 0);
  CHECK(vd::live().umems == 0);
  std::free(mem);
  ibv_dealloc_pd(pd);
  ibv_close_device(ctx);
  ibv_free_device_list(list);
  vd::check_nothing_alive();
}

TEST_CASE("bnxt: the direct verbs refuse another family's device") {
  vd::reset({vd::roce_mlx5("mlx5_0", 1)});
  std::unique_ptr<rdma::VendorDv> dv = load_double_dv();
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  ibv_context* ctx = ibv_open_device(list[0]);
  bnxt_re_dv_db_region_attr db{};
  CHECK(dv->bnxt().get_default_db_region(ctx, &db) == EOPNOTSUPP);
  CHECK(vd::last_refusal() == "bnxt_re_dv_get_default_db_region: mlx5_0 is not a bnxt_re device");
  ibv_close_device(ctx);
  ibv_free_device_list(list);
  vd::check_nothing_alive();
}
