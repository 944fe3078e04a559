// The emulated device's family (MORI_EMU_FAMILY: mlx5, the default, or bnxt): the driver that
// answers its udata and what the core reports and checks for it (kernel.hpp, Family).
#include <infiniband/verbs.h>

#include <cstdlib>
#include <cstring>

#include "connectx7.hpp"
#include "kernel.hpp"
#include "thor2.hpp"
#include "uverbs_cmd.hpp"

namespace mori::emulated_kernel {
namespace {

// bnxt_re_query_device (ib_verbs.c): the PCI ids, the firmware's limits, the device_cap_flags it
// sets, one P_Key, atomics as IB_ATOMIC_GLOB when the firmware has them (Thor2 does), no multicast.
void thor2_query_device(ib_uverbs_query_device_resp* r) {
  *r = ib_uverbs_query_device_resp{};
  std::memcpy(&r->fw_ver, thor2::kFw, sizeof(thor2::kFw));  // the four bytes libbnxt_re prints
  r->node_guid = htobe64(thor2::kGuid);
  r->sys_image_guid = htobe64(thor2::kGuid);
  r->max_mr_size = thor2::kMaxMrSize;
  r->page_size_cap = thor2::kPageSizeCap;
  r->vendor_id = thor2::kPciVendor;
  r->vendor_part_id = thor2::kPciDevice;
  r->hw_ver = thor2::kPciSubsystem;
  r->max_qp = thor2::kMaxQp;
  r->max_qp_wr = thor2::kMaxQpWr;
  r->device_cap_flags = IBV_DEVICE_CURR_QP_STATE_MOD | IBV_DEVICE_RC_RNR_NAK_GEN |
                        IBV_DEVICE_SHUTDOWN_PORT | IBV_DEVICE_SYS_IMAGE_GUID |
                        IBV_DEVICE_RESIZE_MAX_WR | IBV_DEVICE_PORT_ACTIVE_EVENT |
                        IBV_DEVICE_N_NOTIFY_CQ | IBV_DEVICE_MEM_WINDOW |
                        IBV_DEVICE_MEM_WINDOW_TYPE_2B | IBV_DEVICE_MEM_MGT_EXTENSIONS;
  r->max_sge = r->max_sge_rd = thor2::kMaxSge;
  r->max_cq = thor2::kMaxCq;
  r->max_cqe = thor2::kMaxCqe;
  r->max_mr = thor2::kMaxMr;
  r->max_pd = thor2::kMaxPd;
  r->max_qp_rd_atom = thor2::kMaxQpRdAtom;
  r->max_qp_init_rd_atom = thor2::kMaxQpInitRdAtom;
  r->atomic_cap = IBV_ATOMIC_GLOB;
  r->max_mw = thor2::kMaxMw;
  r->max_ah = thor2::kMaxAh;
  r->max_srq = thor2::kMaxSrq;
  r->max_srq_wr = thor2::kMaxSrqWr;
  r->max_srq_sge = thor2::kMaxSrqSge;
  r->max_pkeys = 1;
  r->local_ca_ack_delay = thor2::kLocalCaAckDelay;
  r->phys_port_cnt = 1;
}

// bnxt_re_query_port: active with the link up, MTU 4096, the SGID table, CM | REINIT |
// DEVICE_MGMT | VENDOR_CLASS (and IP_BASED_GIDS, which the core adds for ip_gids), 2 GiB messages,
// one P_Key, 4 VLs; a 400 Gb/s link as 4X at NDR's 100 Gb/s a lane.
void thor2_query_port(ib_uverbs_query_port_resp* r) {
  *r = ib_uverbs_query_port_resp{};
  r->port_cap_flags = IBV_PORT_CM_SUP | IBV_PORT_REINIT_SUP | IBV_PORT_DEVICE_MGMT_SUP |
                      IBV_PORT_VENDOR_CLASS_SUP | IBV_PORT_IP_BASED_GIDS;
  r->max_msg_sz = thor2::kMaxMsgSz;
  r->gid_tbl_len = thor2::kGidTblLen;
  r->pkey_tbl_len = 1;
  r->state = IBV_PORT_ACTIVE;
  r->max_mtu = r->active_mtu = IBV_MTU_4096;
  r->max_vl_num = 4;
  r->active_width = 2;    // IB_WIDTH_4X
  r->active_speed = 128;  // IB_SPEED_NDR
  r->phys_state = 5;      // IB_PORT_PHYS_STATE_LINK_UP
  r->link_layer = IBV_LINK_LAYER_ETHERNET;
}

const Family kMlx5{
    "mlx5",
    mlx5_driver,
    cx7_query_device,
    cx7_query_port,
    {cx7::kMaxQpWr, cx7::kMaxSge, cx7::kMaxCqe, cx7::kMaxQpRdAtom, cx7::kMaxQpInitRdAtom,
     cx7::kMaxPkeys},
    {cx7::kIbdev,
     cx7::kPciVendor,
     cx7::kPciDevice,
     0x0007,
     cx7::kFwVer,
     cx7::kBoardId,
     "MT4129",
     "mori emulated ConnectX-7",
     cx7::kNodeGuid,
     cx7::kSysImageGuid,
     cx7::kPortCapFlags,
     "100 Gb/sec (4X EDR)",
     cx7::kGidTblLen,
     {cx7::kMac[0], cx7::kMac[1], cx7::kMac[2], cx7::kMac[3], cx7::kMac[4], cx7::kMac[5]},
     {cx7::kIpv4[0], cx7::kIpv4[1], cx7::kIpv4[2], cx7::kIpv4[3]},
     cx7::kRoceV2Ipv4GidIndex}};

// bnxt_re has no board_id attribute (its ib_device_ops name hw_rev, hca_type only); hca_type is
// what its hca_type_show prints for a Thor2 board.
const Family kBnxt{"bnxt",
                   bnxt_driver,
                   thor2_query_device,
                   thor2_query_port,
                   {thor2::kMaxQpWr, thor2::kMaxSge, thor2::kMaxCqe, thor2::kMaxQpRdAtom,
                    thor2::kMaxQpInitRdAtom, 1},
                   {thor2::kIbdev,
                    thor2::kPciVendor,
                    thor2::kModaliasDevice,
                    thor2::kPciSubsystem,
                    thor2::kFwVer,
                    nullptr,
                    "BCM57608",
                    "mori emulated Thor2",
                    thor2::kGuid,
                    thor2::kGuid,
                    IBV_PORT_CM_SUP | IBV_PORT_REINIT_SUP | IBV_PORT_DEVICE_MGMT_SUP |
                        IBV_PORT_VENDOR_CLASS_SUP | IBV_PORT_IP_BASED_GIDS,
                    "400 Gb/sec (4X NDR)",
                    thor2::kGidTblLen,
                    {thor2::kMac[0], thor2::kMac[1], thor2::kMac[2], thor2::kMac[3], thor2::kMac[4],
                     thor2::kMac[5]},
                    {thor2::kIpv4[0], thor2::kIpv4[1], thor2::kIpv4[2], thor2::kIpv4[3]},
                    thor2::kRoceV2Ipv4GidIndex}};

}  // namespace

const Family& family() {
  static const Family* f = [] {
    const char* name = std::getenv("MORI_EMU_FAMILY");
    return name && std::strcmp(name, "bnxt") == 0 ? &kBnxt : &kMlx5;
  }();
  return *f;
}

}  // namespace mori::emulated_kernel
