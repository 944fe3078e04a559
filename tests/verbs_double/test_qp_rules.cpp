// The verbs double's refusals, driven directly: each wrong ibv_modify_qp is refused with EINVAL
// and the kernel's reason (qp_rules.cpp), a refused call leaves the QP's state alone, a QP on
// another context's CQ is refused, and teardown out of order is refused with EBUSY.
#include <doctest/doctest.h>
#include <infiniband/verbs.h>

#include <cerrno>
#include <string>

#include "verbs_double.hpp"

namespace vd = verbs_double;

namespace {

// One device (mlx5_0, RoCE, active MTU 1024, 4 GID entries) with a PD, a CQ and an RC QP.
struct Fixture {
  Fixture() {
    vd::DeviceSpec spec = vd::roce_mlx5("mlx5_0", 1);
    spec.active_mtu = IBV_MTU_1024;
    vd::reset({spec});
    int n = 0;
    list = ibv_get_device_list(&n);
    REQUIRE(n == 1);
    context = ibv_open_device(list[0]);
    pd = ibv_alloc_pd(context);
    cq = ibv_create_cq(context, 16, nullptr, nullptr, 0);
    ibv_qp_init_attr init{};
    init.send_cq = init.recv_cq = cq;
    init.qp_type = IBV_QPT_RC;
    init.cap.max_send_wr = 16;
    init.cap.max_send_sge = 1;
    qp = ibv_create_qp(pd, &init);
    REQUIRE(qp);
  }
  ~Fixture() {
    if (qp) ibv_destroy_qp(qp);
    if (cq) ibv_destroy_cq(cq);
    if (pd) ibv_dealloc_pd(pd);
    if (context) ibv_close_device(context);
    if (list) ibv_free_device_list(list);
  }

  // Modifies the QP and returns the refusal's reason ("" if accepted); a refusal must be EINVAL
  // and leave the state as it was.
  std::string modify(ibv_qp_attr attr, int mask) {
    const ibv_qp_state before = qp->state;
    const int rc = ibv_modify_qp(qp, &attr, mask);
    if (!rc) return "";
    CHECK(rc == EINVAL);
    CHECK(qp->state == before);
    return vd::last_refusal();
  }

  ibv_device** list = nullptr;
  ibv_context* context = nullptr;
  ibv_pd* pd = nullptr;
  ibv_cq* cq = nullptr;
  ibv_qp* qp = nullptr;
};

constexpr int kInitMask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
constexpr int kRtrMask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                         IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
constexpr int kRtsMask = IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                         IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC;

ibv_qp_attr init_attr(uint8_t port) {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_INIT;
  a.port_num = port;
  a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
  return a;
}

ibv_qp_attr rtr_attr() {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = IBV_MTU_1024;
  a.dest_qp_num = 0x999;
  a.rq_psn = 7;
  a.max_dest_rd_atomic = 16;
  a.min_rnr_timer = 12;
  a.ah_attr.port_num = 1;
  a.ah_attr.is_global = 1;
  a.ah_attr.grh.sgid_index = 3;
  a.ah_attr.grh.hop_limit = 255;
  return a;
}

ibv_qp_attr rts_attr() {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_RTS;
  a.timeout = 14;
  a.retry_cnt = 7;
  a.rnr_retry = 7;
  a.sq_psn = 9;
  a.max_rd_atomic = 8;
  return a;
}

}  // namespace

TEST_CASE("modify_qp: each wrong transition attribute is refused with the kernel's reason") {
  Fixture f;
  REQUIRE(f.qp->state == IBV_QPS_RESET);
  CHECK(f.modify(init_attr(1), kInitMask & ~IBV_QP_ACCESS_FLAGS) ==
        "modify_qp RESET->INIT: missing required attribute IBV_QP_ACCESS_FLAGS");
  CHECK(f.modify(init_attr(1), kInitMask | IBV_QP_SQ_PSN) ==
        "modify_qp RESET->INIT: attribute IBV_QP_SQ_PSN is not allowed in this transition");
  CHECK(f.modify(rtr_attr(), kRtrMask) == "modify_qp RESET->RTR: not a valid transition");
  CHECK(f.modify(init_attr(0), kInitMask) ==
        "modify_qp RESET->INIT: port_num 0 is not a port of mlx5_0 (ports 1..1)");
  CHECK(f.modify(init_attr(2), kInitMask) ==
        "modify_qp RESET->INIT: port_num 2 is not a port of mlx5_0 (ports 1..1)");
  REQUIRE(f.modify(init_attr(1), kInitMask) == "");
  CHECK(f.qp->state == IBV_QPS_INIT);

  CHECK(f.modify(rtr_attr(), kRtrMask & ~IBV_QP_RQ_PSN) ==
        "modify_qp INIT->RTR: missing required attribute IBV_QP_RQ_PSN");
  CHECK(f.modify(rtr_attr(), kRtrMask & ~(IBV_QP_RQ_PSN | IBV_QP_MIN_RNR_TIMER)) ==
        "modify_qp INIT->RTR: missing required attributes IBV_QP_RQ_PSN | IBV_QP_MIN_RNR_TIMER");
  CHECK(f.modify(rtr_attr(), kRtrMask | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT) ==
        "modify_qp INIT->RTR: attributes IBV_QP_TIMEOUT | IBV_QP_SQ_PSN are not allowed in this "
        "transition");
  ibv_qp_attr a = rtr_attr();
  a.cur_qp_state = IBV_QPS_INIT;
  CHECK(f.modify(a, kRtrMask | IBV_QP_CUR_STATE) ==
        "modify_qp INIT->RTR: IBV_QP_CUR_STATE is allowed only from RTR, RTS, SQD or SQE");
  a = rtr_attr();
  a.max_dest_rd_atomic = 17;
  CHECK(f.modify(a, kRtrMask) ==
        "modify_qp INIT->RTR: max_dest_rd_atomic 17 exceeds the device's max_qp_rd_atom 16");
  a = rtr_attr();
  a.path_mtu = IBV_MTU_4096;
  CHECK(f.modify(a, kRtrMask) ==
        "modify_qp INIT->RTR: path_mtu 4096 exceeds mlx5_0 port 1's active MTU 1024");
  a = rtr_attr();
  a.ah_attr.grh.sgid_index = 4;
  CHECK(f.modify(a, kRtrMask) ==
        "modify_qp INIT->RTR: sgid_index 4 is beyond mlx5_0's GID table (4 entries)");
  a = rtr_attr();
  a.ah_attr.is_global = 0;
  CHECK(f.modify(a, kRtrMask) ==
        "modify_qp INIT->RTR: RoCE needs a GRH, and ah_attr.is_global is 0");
  a = rtr_attr();
  a.ah_attr.port_num = 0;
  CHECK(f.modify(a, kRtrMask) ==
        "modify_qp INIT->RTR: ah_attr.port_num 0 is not a port of mlx5_0 (ports 1..1)");
  REQUIRE(f.modify(rtr_attr(), kRtrMask) == "");
  CHECK(f.qp->state == IBV_QPS_RTR);

  a = rts_attr();
  a.max_rd_atomic = 16;  // the responder's limit, where the initiator's (8) applies
  CHECK(f.modify(a, kRtsMask) ==
        "modify_qp RTR->RTS: max_rd_atomic 16 exceeds the device's max_qp_init_rd_atom 8");
  CHECK(f.modify(rts_attr(), kRtsMask & ~IBV_QP_SQ_PSN) ==
        "modify_qp RTR->RTS: missing required attribute IBV_QP_SQ_PSN");
  CHECK(f.modify(rts_attr(), kRtsMask | IBV_QP_PKEY_INDEX) ==
        "modify_qp RTR->RTS: attribute IBV_QP_PKEY_INDEX is not allowed in this transition");
  REQUIRE(f.modify(rts_attr(), kRtsMask) == "");
  CHECK(f.qp->state == IBV_QPS_RTS);
  CHECK(f.modify(init_attr(1), kInitMask) == "modify_qp RTS->INIT: not a valid transition");

  const std::vector<vd::QpRecord> history = vd::qp_history();
  REQUIRE(history.size() == 1);
  CHECK(history[0].transitions.size() == 3);
  CHECK(history[0].sq_psn == 9);
  CHECK(history[0].rq_psn == 7);
}

TEST_CASE("create_qp: a CQ of another context is refused with EINVAL") {
  Fixture f;
  ibv_context* other = ibv_open_device(f.list[0]);
  ibv_cq* foreign = ibv_create_cq(other, 16, nullptr, nullptr, 0);
  REQUIRE(foreign);
  ibv_qp_init_attr init{};
  init.send_cq = init.recv_cq = foreign;
  init.qp_type = IBV_QPT_RC;
  init.cap.max_send_wr = 16;
  init.cap.max_send_sge = 1;
  errno = 0;
  CHECK(ibv_create_qp(f.pd, &init) == nullptr);
  CHECK(errno == EINVAL);
  CHECK(vd::last_refusal() == "create_qp: the CQ belongs to another context than the PD");
  CHECK(ibv_destroy_cq(foreign) == 0);
  CHECK(ibv_close_device(other) == 0);
}

TEST_CASE("teardown: a CQ or a PD still in use is refused with EBUSY") {
  Fixture f;
  char buf[64];
  ibv_mr* mr = ibv_reg_mr(f.pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
  REQUIRE(mr);
  errno = 0;
  CHECK(ibv_reg_mr(f.pd, buf, sizeof(buf), IBV_ACCESS_REMOTE_WRITE) == nullptr);
  CHECK(errno == EINVAL);
  CHECK(vd::last_refusal() == "reg_mr: remote write or atomic access needs IBV_ACCESS_LOCAL_WRITE");
  CHECK(ibv_destroy_cq(f.cq) == EBUSY);
  CHECK(vd::last_refusal() == "destroy_cq: CQ 64 still has 1 QP(s) attached; destroy them first");
  CHECK(ibv_dealloc_pd(f.pd) == EBUSY);
  CHECK(vd::last_refusal() == "dealloc_pd: the PD still has 1 MR(s) and 1 QP(s)");
  CHECK(ibv_destroy_qp(f.qp) == 0);
  f.qp = nullptr;
  CHECK(ibv_dealloc_pd(f.pd) == EBUSY);
  CHECK(vd::last_refusal() == "dealloc_pd: the PD still has 1 MR(s) and 0 QP(s)");
  CHECK(ibv_destroy_cq(f.cq) == 0);
  f.cq = nullptr;
  CHECK(ibv_dereg_mr(mr) == 0);
  CHECK(ibv_dealloc_pd(f.pd) == 0);
  f.pd = nullptr;
  CHECK(ibv_close_device(f.context) == 0);
  f.context = nullptr;
  ibv_free_device_list(f.list);
  f.list = nullptr;
  const vd::Live live = vd::live();
  CHECK(live.device_lists + live.contexts + live.pds + live.mrs + live.cqs + live.qps == 0);
}
