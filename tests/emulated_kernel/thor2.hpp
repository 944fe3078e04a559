// The emulated BNXT device: one Broadcom Thor2 (BCM57608, PCI 14e4:1760, the id ipxe/ipxe#1134
// gives "BCM957608"), port 1 RoCE v2, as the kernel's bnxt_re driver reports it
// (drivers/infiniband/hw/bnxt_re/ib_verbs.c bnxt_re_query_device, bnxt_re_query_port).
//
// How rdma-core 44 finds it: its providers/bnxt_re/main.c cna_table lists no Thor2 PCI id (the
// newest are the BCM5750x: 0x1750-0x1752, 0x1803-0x1807); on a real host it matches a Thor2 by
// VERBS_DRIVER_ID(RDMA_DRIVER_BNXT_RE), the driver id netlink reports
// (libibverbs/ibdev_nl.c, RDMA_NLDEV_ATTR_UVERBS_DRIVER_ID). This kernel's netlink fails (hooks.cpp),
// so libibverbs matches by the sysfs modalias, which therefore names 0x1750 (BCM57508), the
// table's Thor entry. Nothing in libbnxt_re after the match reads the PCI id: the chip it drives
// is the chip_id0 of the ucontext (0x1760, not a gen-P5 chip to rdma-core 44).
//
// The values a Thor2 prints in public (`ibv_devinfo -d rdma0 -vv`, uccl-project/uccl#250):
// max_qp 131073, max_qp_wr 4351, max_qp_rd_atom and max_qp_init_rd_atom 126, max_cq 65536,
// max_cqe 8388607. The rest are the driver's constants where ib_verbs.c fixes them, and marked
// "chosen" where they come from firmware that no public listing shows.
#pragma once

#include <cstdint>

namespace mori::emulated_kernel::thor2 {

inline constexpr const char* kIbdev = "bnxt_re0";
inline constexpr uint32_t kPciVendor = 0x14e4;       // PCI_VENDOR_ID_BROADCOM
inline constexpr uint32_t kPciDevice = 0x1760;       // BCM57608 (Thor2)
inline constexpr uint32_t kModaliasDevice = 0x1750;  // the cna_table entry (see above)
inline constexpr uint32_t kPciSubsystem = 0x2100;    // chosen
inline constexpr uint32_t kChipNum = 0x1760;         // chip_ctx.chip_num = the chip id
inline constexpr uint8_t kFw[4] = {230, 2, 49, 0};   // chosen; printed "%d.%d.%d.%d"
inline constexpr const char* kFwVer = "230.2.49.0";
inline constexpr uint64_t kGuid = 0x5e0c09fffe7a4c10ull;  // EUI-64 of kMac (addrconf_addr_eui48)
inline constexpr uint8_t kMac[6] = {0x5c, 0x0c, 0x09, 0x7a, 0x4c, 0x10};  // chosen
inline constexpr uint8_t kIpv4[4] = {198, 18, 0, 2};                      // RFC 2544 range
inline constexpr int kRoceV2Ipv4GidIndex = 3;

inline constexpr uint32_t kMaxQp = 131073;
inline constexpr uint32_t kMaxQpWr = 4351;
inline constexpr uint32_t kMaxQpRdAtom = 126, kMaxQpInitRdAtom = 126;
inline constexpr uint32_t kMaxCq = 65536;
inline constexpr uint32_t kMaxCqe = 8388607;  // dev_attr->max_cq_wqes, also the ucontext's max_cqd
// Six SGEs: the 128-byte static-mode WQE libbnxt_re sizes as bnxt_re_calc_wqe_sz(6) holds 6.
inline constexpr uint32_t kMaxSge = 6;
inline constexpr uint32_t kMaxMr = 262144, kMaxPd = 65536, kMaxMw = 262144;  // chosen
inline constexpr uint32_t kMaxAh = 131072, kMaxSrq = 8192, kMaxSrqWr = 4095, kMaxSrqSge = 6;
inline constexpr uint64_t kMaxMrSize = uint64_t{1} << 40;  // BNXT_RE_MAX_MR_SIZE (1 TiB)
inline constexpr uint64_t kPageSizeCap = 0x1ffff000;       // BNXT_RE_PAGE_SIZE_SUPPORTED
inline constexpr uint32_t kMaxMsgSz = 0x80000000;          // BNXT_RE_MAX_MR_SIZE_LOW (2 GiB)
inline constexpr uint8_t kLocalCaAckDelay = 16;            // BNXT_RE_DEFAULT_ACK_DELAY
inline constexpr uint32_t kGidTblLen = 256;                // dev_attr->max_sgid (chosen)
inline constexpr uint32_t kCqeBytes = 32;                  // sizeof(struct cq_base): cqe_sz

}  // namespace mori::emulated_kernel::thor2
