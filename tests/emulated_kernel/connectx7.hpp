// The emulated device: one ConnectX-7 (PCI 15b3:1021, rdma-core providers/mlx5/mlx5.c hca_table
// "ConnectX-7"), port 1 RoCE v2. What the kernel reports for it comes from the firmware's
// capabilities, which this machine does not have, so the values are those a real ConnectX-7
// printed: `ibv_devinfo -v` of mlx5_2 (vendor_part_id 4129, fw_ver 28.39.2048) in
// github.com/openucx/ucx/issues/10317; the limits (max_cq .. local_ca_ack_delay, gid_tbl_len)
// are the ones that listing prints.
#pragma once

#include <cstdint>

namespace mori::emulated_kernel::cx7 {

inline constexpr const char* kIbdev = "mlx5_0";
inline constexpr const char* kUverbs = "uverbs0";
inline constexpr unsigned kCdevMajor = 231, kCdevMinor = 192;  // uverbs_main.c: IB_UVERBS_BASE_DEV
inline constexpr uint32_t kPciVendor = 0x15b3, kPciDevice = 0x1021;
inline constexpr uint32_t kVendorId = 0x02c9;  // the IEEE OUI the HCA reports (not the PCI id)
inline constexpr uint32_t kVendorPartId = 4129;
inline constexpr uint64_t kFwMajor = 28, kFwMinor = 39, kFwSubMinor = 2048;
inline constexpr const char* kFwVer = "28.39.2048";
inline constexpr const char* kBoardId = "LNV0000000056";
inline constexpr uint64_t kNodeGuid = 0x946dae0300542b46ull;  // host order; sysfs prints it
inline constexpr uint64_t kSysImageGuid = 0x946dae0300542b46ull;

inline constexpr uint32_t kMaxQp = 131072;   // 1 << log_max_qp (17)
inline constexpr uint32_t kLogMaxQpSz = 15;  // max_qp_wr 32768
inline constexpr uint32_t kMaxQpWr = 1u << kLogMaxQpSz;
inline constexpr uint32_t kMaxSge = 30;
inline constexpr uint32_t kMaxCq = 16777216;
inline constexpr uint32_t kLogMaxCqSz = 22;  // max_cqe = (1 << 22) - 1
inline constexpr uint32_t kMaxCqe = (1u << kLogMaxCqSz) - 1;
inline constexpr uint32_t kMaxMr = 16777216;
inline constexpr uint32_t kMaxPd = 8388608;
inline constexpr uint32_t kMaxQpRdAtom = 16;      // 1 << log_max_ra_res_qp
inline constexpr uint32_t kMaxQpInitRdAtom = 16;  // 1 << log_max_ra_req_qp
inline constexpr uint32_t kMaxResRdAtom = 2097152;
inline constexpr uint32_t kMaxMw = 16777216;
inline constexpr uint32_t kMaxMcastGrp = 2097152, kMaxMcastQpAttach = 240,
                          kMaxTotalMcastQpAttach = 503316480;
inline constexpr uint32_t kMaxAh = 2147483647;
inline constexpr uint32_t kMaxSrq = 8388608, kMaxSrqWr = 32767, kMaxSrqSge = 31;
inline constexpr uint16_t kMaxPkeys = 128;
inline constexpr uint8_t kLocalCaAckDelay = 16;
inline constexpr uint32_t kGidTblLen = 255;
inline constexpr uint32_t kMaxWqeSzSq = 1024, kMaxWqeSzRq = 512;  // PRM max_wqe_sz_sq / _rq
inline constexpr uint32_t kLogBfRegSize = 9;                      // 512-byte BlueFlame buffers
inline constexpr uint32_t kMaxCqeVersion = 1;

// device_cap_flags as mlx5_ib_query_device builds them for a RoCE ConnectX (drivers/infiniband/
// hw/mlx5/main.c): BAD_PKEY_CNTR | BAD_QKEY_CNTR | AUTO_PATH_MIG | CHANGE_PHY_PORT |
// PORT_ACTIVE_EVENT | SYS_IMAGE_GUID | RC_RNR_NAK_GEN | MEM_WINDOW | XRC | MEM_MGT_EXTENSIONS |
// MEM_WINDOW_TYPE_2B | RAW_IP_CSUM, the 0x25321c36 ucx#10317's ConnectX-6 Dx prints, the same
// driver's answer for the same port type.
inline constexpr uint32_t kDeviceCapFlags = 0x25321c36;

// Port 1: RoCE over a 100 Gb/s (4X EDR-rate) link, active, MTU 4096, its netdev up.
inline constexpr uint8_t kPortActive = 4, kPhysLinkUp = 5, kMtu4096 = 5;
inline constexpr uint32_t kPortCapFlags = 0x04010000;  // IP_BASED_GIDS | CM_SUP, as mlx5 RoCE
inline constexpr uint32_t kMaxMsgSz = 0x40000000;
// The GIDs: a link-local one from the MAC and the IPv4-mapped address 198.18.0.1 (RFC 2544's
// benchmarking range), each as RoCE v1 and v2, in the order the kernel's roce_gid_mgmt.c adds them.
inline constexpr uint8_t kMac[6] = {0x94, 0x6d, 0xae, 0x54, 0x2b, 0x46};
inline constexpr uint8_t kIpv4[4] = {198, 18, 0, 1};
inline constexpr int kRoceV2Ipv4GidIndex = 3;

}  // namespace mori::emulated_kernel::cx7
