// The verbs double's internal state: the fake fabric (its devices and every object created on
// them), the one lock that guards it, the refusal log, and the helpers the entry points share.
// Only the double's sources include this; tests use verbs_double.hpp.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "mori/state/rdma_endpoint.hpp"
#include "verbs_double.hpp"

namespace verbs_double::internal {

// Zeroed, page-aligned memory: what rdma-core's ionic provider gives its rings (ionic_map_anon,
// an anonymous mmap) and the kernel maps as a context's doorbell page.
class PageBuffer {
 public:
  static constexpr size_t kPage = 4096;
  PageBuffer() = default;
  explicit PageBuffer(size_t bytes);
  uint8_t* data() const { return p_.get(); }
  size_t size() const { return size_; }

 private:
  struct Free {
    void operator()(uint8_t* p) const { std::free(p); }
  };
  std::unique_ptr<uint8_t, Free> p_;
  size_t size_ = 0;
};

// One ring of an Ionic queue as rdma-core's ionic_queue_init lays it out (what ionic_dv_get_qp and
// ionic_dv_get_cq report): 2^depth_log2 entries of 2^stride_log2 bytes, and the queue id that
// its doorbell value carries (ionic_queue_dbell_init: id << 24).
struct IonicRing {
  PageBuffer buf;
  uint8_t depth_log2 = 0, stride_log2 = 0;
  uint32_t id = 0;
  uint32_t depth() const { return uint32_t{1} << depth_log2; }
  uint64_t dbell() const { return uint64_t{id} << 24; }
};

// ionic-abi.h: the controller memory bar preferences of a PD or queue (IONIC_CMB_*).
inline constexpr uint8_t kIonicCmbEnable = 1, kIonicCmbRequire = 2, kIonicCmbExpdb = 4;

struct Device {
  ibv_device dev{};  // what ibv_get_device_list hands out
  DeviceSpec spec;
  uint8_t next_udma = 0;  // Ionic: the pipeline the next QP tries first (ionic_get_qpid)
};

struct Context {
  // A verbs_context, so that verbs.h's inline ibv_create_qp_ex finds its create_qp_ex op; every
  // other op stays null, and the inline wrappers of those fall back to the exported functions.
  verbs_context vctx{};
  Device* device = nullptr;
  uint64_t uar[64] = {};  // the UAR page: every QP's BlueFlame register points into it
  PageBuffer dbpage;      // Ionic: the doorbell page; the doorbells start at spec.dbell_offset
  bool ionic() const { return device->spec.family == Family::kIonic; }
  uint8_t udma_mask() const { return (1u << device->spec.ionic.udma_count) - 1; }
  uint64_t* doorbells() const {
    return reinterpret_cast<uint64_t*>(dbpage.data() + device->spec.ionic.dbell_offset);
  }
};

struct Pd {
  ibv_pd pd{};
  Context* context = nullptr;
  int mrs = 0, qps = 0;
  // Ionic: the pipelines its queues may use and where they go (ionic_alloc_pd's defaults: every
  // pipeline, both queues in the controller memory bar, with express doorbells if available).
  uint8_t udma_mask = 0, sq_cmb = 0, rq_cmb = 0;
};

struct Mr {
  ibv_mr mr{};
  Pd* pd = nullptr;
  uint64_t iova = 0;  // where the device's addresses in this MR start
  int access = 0;     // ibv_access_flags
};

// BNXT: memory registered with bnxt_re_dv_umem_reg (the handle is its address), and how many
// queues are built on it.
struct Umem {
  Context* context = nullptr;
  uint8_t* addr = nullptr;
  size_t size = 0;
  int access = 0;
  int users = 0;
};

struct Cq {
  ibv_cq cq{};
  Context* context = nullptr;
  uint32_t entries = 0;  // MLX5: the ring, mlx5dv_cq.cqe_cnt
  uint32_t cqn = 0;
  std::vector<uint8_t> buf;  // MLX5: entries * 64 bytes
  uint32_t dbrec[2] = {};
  int qps = 0;
  // Ionic: a ring per pipeline in udma_mask, indexed by pipeline (ionic_create_cq_ex).
  uint8_t udma_mask = 0;
  std::vector<IonicRing> rings;
  Umem* umem = nullptr;  // BNXT: the ring's memory, entries 32-byte CQEs from its start
};

struct Qp {
  ibv_qp qp{};
  Context* context = nullptr;
  Pd* pd = nullptr;
  Cq* send_cq = nullptr;
  Cq* recv_cq = nullptr;
  uint32_t wqe_cnt = 0;  // MLX5: WQEBBs of 64 bytes
  uint64_t send_ops =
      0;  // ibv_qp_create_send_ops_flags it was made for (rdma-core's default if none)
  std::vector<uint8_t> sq;  // MLX5: wqe_cnt * 64 bytes
  uint32_t dbrec[2] = {};
  size_t record = 0;  // its entry in Fabric::history
  // Ionic: its pipeline, the PD's CMB preferences it was made with, and its rings (the qpid is
  // ibv_qp::qp_num, as the kernel's ionic_create_qp sets it).
  uint8_t udma_idx = 0, sq_cmb = 0, rq_cmb = 0;
  IonicRing isq, irq;
  // BNXT: the rings' umems and the geometry bnxt_re_dv_create_qp was given.
  Umem* sq_umem = nullptr;
  Umem* rq_umem = nullptr;
  uint32_t sq_slots = 0, sq_npsn = 0, sq_psn_sz = 0, sq_wqe_sz = 0;
};

// Objects by the address of the ibv_* struct inside them.
template <class T>
using Table = std::map<const void*, std::unique_ptr<T>>;

struct Fabric {
  std::mutex mutex;
  std::vector<std::unique_ptr<Device>> devices;
  std::map<const void*, std::unique_ptr<ibv_device*[]>> device_lists;
  Table<Context> contexts;
  Table<Pd> pds;
  Table<Mr> mrs;
  Table<Cq> cqs;
  Table<Qp> qps;
  Table<Umem> umems;
  uint32_t next_qpn = 0x100, next_cqn = 0x40, next_key = 0x1000, next_handle = 1;
  std::vector<std::string> refusals;
  std::vector<QpRecord> history;
  std::vector<int> mr_accesses;  // every successful registration's access flags, in order
  // Set while software NICs carry the fabric's traffic (nic_backing.cpp): called, under the
  // lock, after every registration and deregistration, so that the NICs see the new MRs; and
  // served QPs may not be destroyed.
  NicBacking* backing = nullptr;
};

// The one fabric. Every entry point holds its mutex for its whole call.
Fabric& fabric();

template <class T>
T* find(Table<T>& table, const void* key) {
  const auto it = table.find(key);
  return it == table.end() ? nullptr : it->second.get();
}

// Files `obj` in `table` under the address of its ibv_* struct `member`, and returns that address.
template <class T, class V>
V* keep(Table<T>& table, std::unique_ptr<T> obj, V T::* member) {
  V* out = &((*obj).*member);
  table[out] = std::move(obj);
  return out;
}

// Records `reason` and returns `err`: for the calls that return an errno.
int refuse(Fabric& f, int err, std::string reason);
// Records `reason`, sets errno to `err` and returns null: for the creators.
std::nullptr_t refuse_null(Fabric& f, int err, std::string reason);

// True when `port` is not one of `spec`'s ports (numbered from 1).
bool bad_port(const DeviceSpec& spec, uint32_t port);
// "<what> 0 is not a port of mlx5_0 (ports 1..1)".
std::string port_refusal(const char* what, const DeviceSpec& spec, uint32_t port);
bool empty_gid(const uint8_t* raw);

// Bytes of an ibv_mtu (IBV_MTU_1024 -> 1024).
int mtu_bytes(int mtu);
const char* state_name(int state);

// Where a QP's BlueFlame register is: QPs of one context share its UAR page, each with its own
// register (mlx5dv.cpp).
uint64_t* bf_register(const Qp& qp);

// The NIC's own view of an mlx5 QP in RTS, for the software NIC that carries the traffic
// (nic_backing.cpp): its SQ, doorbell record and BlueFlame register, its send CQ's ring and
// doorbell record, from the double's objects, never from what the runtime exported, so that a
// wrong export shows as failed traffic. False, with the reason, when it cannot be served.
bool nic_endpoint_mlx5(Qp& qp, mori::state::RdmaEndpoint* out, std::string* why);
// The same of an Ionic QP (ionic.cpp; verbs_double.hpp, nic_endpoint_ionic). The caller holds the
// fabric's mutex, or knows that no QP or CQ is being created or destroyed meanwhile.
bool nic_endpoint_ionic(const Qp& qp, mori::state::RdmaEndpoint* out, std::string* why);

// nic_backing.cpp: the NICs' memory tables changed (an MR came or went).
void memory_changed(Fabric& f);
// Whether a software NIC serves `qp` now (it may not be destroyed then).
bool served(const Fabric& f, const Qp& qp);

// queues.cpp, shared by the ibv_* calls and BNXT's direct verbs: file a new RC QP (its pd,
// send_cq and recv_cq set) with its record; modify one under the kernel's rules; destroy one, or
// a CQ, as the kernel allows. `call` starts each refusal's reason.
ibv_qp* file_qp(Fabric& f, std::unique_ptr<Qp> q, void* qp_context);
ibv_qp* create_qp_ex(ibv_context* context, ibv_qp_init_attr_ex* init);  // queues.cpp
int modify_qp_locked(Fabric& f, Qp& q, const ibv_qp_attr& attr, int mask, const std::string& call);
int destroy_qp_locked(Fabric& f, Qp& q, const std::string& call);
int destroy_cq_locked(Fabric& f, Cq& c, const std::string& call);
// The same of a BNXT QP (bnxt_dv.cpp).
bool nic_endpoint_bnxt(const Qp& qp, mori::state::RdmaEndpoint* out, std::string* why);

// qp_rules.cpp: "" when the kernel lets an RC QP go from `cur` to `next` with `mask`, else why not
// ("missing required attribute IBV_QP_RQ_PSN").
std::string check_rc_transition(ibv_qp_state cur, ibv_qp_state next, int mask);

// ionic.cpp: an Ionic context's doorbell page, a PD's defaults, and the rings of a CQ of `cqe`
// entries and of a QP of `cap` (whose qpid will be `qpid`, on q.pd and q's CQs), made as
// rdma-core's ionic provider and the kernel's ionic driver make them; the creators return "" or
// the reason to refuse (EINVAL), having changed nothing then.
void ionic_open_context(Context& c);
void ionic_alloc_pd(Pd& p);
std::string ionic_create_cq(Fabric& f, Cq& cq, int cqe);
std::string ionic_create_qp(Qp& q, const ibv_qp_cap& cap, uint32_t qpid);

}  // namespace verbs_double::internal
