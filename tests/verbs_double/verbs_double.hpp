// The verbs double: a test-only stand-in for the libibverbs and mlx5dv entry points that
// src/rdma calls, and for AMD's ionic direct verbs, which src/rdma loads with dlopen
// (docs/rdma-hardware.md, "The setup path in CI"). It defines those C functions itself, on fake
// devices, so a test executable that compiles src/rdma/*.cpp with it links no real libibverbs.
// Like the kernel, rdma-core and the vendor's library, it refuses what they refuse: each refusal
// returns the errno the real call returns (ibv_modify_qp, the destroyers and the direct verbs
// return it; creators return NULL and set errno) and records a reason the test can read.
//
// What it models: devices of three families (MLX5, BNXT, Ionic) and their ports and GID tables,
// PDs, MRs, CQs and RC QPs with the kernel's modify_qp state table (qp_rules.cpp), the rings each
// family's rdma-core provider would make (queues.cpp, ionic.cpp), the mlx5dv_init_obj export of
// MLX5 QPs and CQs, the ionic direct verbs (ionic_dv.cpp) over Ionic ones, and Broadcom's
// bnxt_re direct verbs (bnxt_dv.cpp) over BNXT ones. Traffic:
// NicBacking starts software NICs (mori::softnic, the host backend's) that execute the work
// requests posted to the QPs in RTS, with what the double knows of each QP and MR, on every
// family. A doorbell word is polled, so a write overwritten before the NIC looks is lost: QPs that
// share a word (Ionic's per context, BNXT's SQ and CQ doorbells) carry traffic one at a time only.
// Not modelled: completion channels, SRQs, receive queues, parent domains, other QP types.
//
// Three shared libraries, so that one fabric serves both the executable and what it dlopens:
// libmori_verbs_double.so (everything but the direct verbs; the test executable links it),
// libmori_verbs_double_ionic.so (the ionic_dv_* functions, which VendorDv loads by path, as it
// loads AMD's libionic) and libmori_verbs_double_bnxt.so (the bnxt_re_dv_* functions, likewise);
// both link the first. fabric_address() tells them apart from copies.
//
// Thread-safe: one lock guards the whole fabric, so PEs run as threads may call it at once.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "mori/state/rdma_endpoint.hpp"
#include "mori/status.hpp"

namespace verbs_double {

struct GidSpec {
  uint8_t raw[16];    // all zero: an empty entry
  ibv_gid_type type;  // IBV_GID_TYPE_IB, _ROCE_V1 or _ROCE_V2
};

// Which provider a device belongs to: mlx5dv works on MLX5 devices' objects only, the ionic
// direct verbs on Ionic ones', bnxt_re's on BNXT ones', and each family's CQs and QPs get that
// provider's rings. BNXT queues made by ibv_create_cq/_qp (not by the direct verbs) get
// MLX5-sized rings.
enum class Family { kMlx5, kBnxt, kIonic };

// What an Ionic device tells rdma-core's ionic provider when a context opens (the kernel's
// ionic_alloc_ucontext response, read by rdma-core's ionic.c), and faults a test may inject.
struct IonicSpec {
  uint8_t udma_count = 2;  // pipelines; the kernel driver sets 2 (ionic_lif_cfg.c)
  // The queue types that index the doorbell page (firmware-defined; these values are the
  // double's), and the byte offset of the context's doorbells in that page.
  uint8_t sq_qtype = 3, rq_qtype = 4, cq_qtype = 5;
  uint32_t dbell_offset = 0;
  uint8_t max_stride = 8;  // log2 of the largest queue entry the firmware takes (the double's)
  bool sq_expdb = true, rq_expdb = true;  // express doorbells available (resp.expdb_qtypes)
  // Faults, 0 for none: every SQ gets entries of 2^fault_sq_stride_log2 bytes, every CQ ring
  // 2^fault_cq_depth_log2 entries, whatever the caps ask.
  uint8_t fault_sq_stride_log2 = 0;
  uint8_t fault_cq_depth_log2 = 0;
};

struct DeviceSpec {
  std::string name;
  Family family = Family::kMlx5;
  IonicSpec ionic;  // Ionic devices only
  uint8_t ports = 1;
  bool ethernet = true;  // RoCE; false: InfiniBand
  ibv_port_state state = IBV_PORT_ACTIVE;
  ibv_mtu active_mtu = IBV_MTU_4096;
  uint16_t lid = 0;             // 0 on RoCE
  std::vector<GidSpec> gids;    // every port's GID table; gid_tbl_len is its size
  int max_qp_rd_atom = 16;      // responder depth limit (max_dest_rd_atomic)
  int max_qp_init_rd_atom = 8;  // initiator depth limit (max_rd_atomic)
  int max_cqe = 4194303;
  int max_qp_wr = 32768;
  // What ibv_query_device reports: a bnxt_re function without PCIe AtomicOp requests reports
  // IBV_ATOMIC_NONE (bringup review B4).
  ibv_atomic_cap atomic_cap = IBV_ATOMIC_HCA;
};

// A RoCE mlx5 device with one active port, MTU 4096, whose GID table is: 0 fe80::<host> RoCE v1,
// 1 the same as RoCE v2, 2 ::ffff:10.0.0.<host> RoCE v1, 3 the same as RoCE v2.
DeviceSpec roce_mlx5(const std::string& name, uint8_t host);
// The same port and GID table on an Ionic (Pollara) device: two pipelines, the IonicSpec
// defaults, and the limits of rdma-core's ionic provider (a ring of at most 0xffff entries:
// max_qp_wr 65535, max_cqe 65535 - IONIC_CQ_GRACE).
DeviceSpec roce_ionic(const std::string& name, uint8_t host);
// The same port and GID table on a BNXT (Thor2) device, whose queues Broadcom's direct verbs
// create on registered umems (bnxt_dv.cpp).
DeviceSpec roce_bnxt(const std::string& name, uint8_t host);

// Replaces the fabric's devices and forgets every object, record and refusal.
void reset(std::vector<DeviceSpec> devices);

// The objects alive now.
struct Live {
  int device_lists = 0, contexts = 0, pds = 0, mrs = 0, cqs = 0, qps = 0;
  int umems = 0;  // BNXT: bnxt_re_dv_umem_reg's registrations
};
Live live();

// The reason of the most recent refusal ("" if none), and all of them since reset().
std::string last_refusal();
std::vector<std::string> refusals();

// One successful ibv_modify_qp.
struct Transition {
  ibv_qp_state from, to;
  int mask;  // ibv_qp_attr_mask
};

// Everything one QP was told, kept after it is destroyed, in creation order.
struct QpRecord {
  std::string device;
  uint32_t qpn = 0;
  uint32_t cq_entries = 0;  // the ring its CQ was made with (Ionic: the ring of its pipeline)
  // MLX5: the SQ's 64-byte WQEBBs, and the send-op set they were sized for (the create call's
  // send_ops_flags, or rdma-core's default for a plain ibv_create_qp).
  uint32_t sq_wqebbs = 0;
  uint64_t send_ops = 0;
  // Ionic: the pipeline the QP was put on, and whether its SQ went to the controller memory bar
  // (the PD's preference at creation: ionic_dv_pd_set_sqcmb).
  int udma_idx = -1;
  bool sq_in_cmb = false;
  std::vector<Transition> transitions;
  ibv_qp_state state = IBV_QPS_RESET;
  bool destroyed = false;
  // The values of the last transition that set them.
  uint8_t port = 0;
  uint32_t dest_qpn = 0, rq_psn = 0, sq_psn = 0;
  int path_mtu = 0;  // ibv_mtu
  int max_rd_atomic = 0, max_dest_rd_atomic = 0;
  bool is_global = false;
  uint8_t traffic_class = 0, sl = 0;  // ah_attr.grh.traffic_class (with a GRH) and ah_attr.sl
  uint8_t dgid[16] = {};
  int sgid_index = -1;
};
std::vector<QpRecord> qp_history();
// The access flags of every successful memory registration since reset(), in order.
std::vector<int> mr_access_history();

// Checks that the QPs that reached RTS are connected in pairs: each one's dest_qp_num names a QP
// of the fabric whose dest_qp_num names it back, its rq_psn is that QP's sq_psn, its dgid is
// the GID at the peer's sgid_index, and its path MTU fits both ports. Empty when all is well.
std::vector<std::string> connection_problems();

// "IBV_QP_STATE | IBV_QP_AV", from ibv_qp_attr_mask bits.
std::string mask_names(int mask);

// The NIC's own view of Ionic QP `qpn` (alive), built from the double's objects, never from what
// a runtime exported: its SQ ring and depth, the SQ doorbell word of its context's doorbell page
// (db, at sq_qtype), the CQ ring of its pipeline and its depth, the qpid (qpn) and that ring's
// cqid (cqn); dbr, cq_dbr and ibuf are null, the engine's indices zero. This is what a software
// NIC serving the QP reads (src/backend/host/softnic, ionic_codec.cpp). False, with *why, when the
// QP does not exist, is not on an Ionic device, or is not one the software NIC can serve (its SQ
// in the controller memory bar, or entries other than 64 bytes).
// All QPs of one context ring the same doorbell word, as on hardware, where the register takes
// every write; a NIC that polls the word sees only the last value, so one serving several QPs of a
// context can miss a doorbell that another QP's overwrote: traffic wants one QP per context.
bool nic_endpoint_ionic(uint32_t qpn, mori::state::RdmaEndpoint* out, std::string* why);
// The same of a BNXT QP made by bnxt_re_dv_create_qp: sq = its SQ umem (3 * sq_wqes slots, then
// the MSN table), sq_wqes = sq_slots / 3, db = cq_dbr = its context's doorbell page word, cq =
// its CQ's umem, cq_entries, qpn, cqn, provider_word[0] = the path MTU in bytes of its RTR
// transition, provider_state = its sq_psn.
bool nic_endpoint_bnxt(uint32_t qpn, mori::state::RdmaEndpoint* out, std::string* why);

// The address of the one fabric, as this library sees it: libmori_verbs_double_ionic.so exports
// verbs_double_ionic_fabric_address(), which must return the same.
const void* fabric_address();

namespace internal {
struct Fabric;
struct Qp;
void memory_changed(Fabric& f);
bool served(const Fabric& f, const Qp& qp);
}  // namespace internal

// The software NICs that carry the traffic of the fabric's QPs in RTS (nic_backing.cpp): one per
// device, serving its QPs with the codec of its family, each QP's queues as the double made them
// (not as the runtime exported them), its peer from its dest_qp_num, its initial send PSN from
// its RTS transition, the keys and ranges from the MRs on the fabric (kept current as MRs come
// and go). PEs are threads of this process, so MRs are reached at their addresses.
// While it lives, ibv_destroy_qp refuses the QPs it serves (EBUSY): destroy it first.
class NicBacking {
 public:
  // Starts the NICs. Fails when no QP is in RTS, a QP's peer does not exist, a device's family has
  // no software NIC, or another backing is alive.
  static mori::Status start(std::unique_ptr<NicBacking>* out);
  ~NicBacking();  // stops the NICs
  NicBacking(const NicBacking&) = delete;
  NicBacking& operator=(const NicBacking&) = delete;

  uint64_t executed() const;  // work requests executed, all NICs
  // "QP 257: WQE 3: rkey 0x99 not registered for PE 1", for each QP in the error state.
  std::vector<std::string> qp_errors() const;

 private:
  struct Nic;
  NicBacking() = default;
  friend void internal::memory_changed(internal::Fabric& f);
  friend bool internal::served(const internal::Fabric& f, const internal::Qp& qp);
  std::vector<std::unique_ptr<Nic>> nics_;
};

}  // namespace verbs_double
