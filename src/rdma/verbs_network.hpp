// VerbsNetwork: RDMA setup on real hardware through libibverbs, mlx5dv and the NIC vendors' direct
// verbs (docs/design.md, layer 8, "RDMA setup"; docs/rdma-hardware.md). It picks this PE's device
// (MORI_RDMA_DEVICES, then the one nearest its GPU: nic_affinity.hpp), opens its port, creates one
// RC queue pair per (peer PE that needs RDMA, QP index), connects each to the peer's matching QP,
// registers the symmetric heap and exchanges keys and bases, and exports every queue pair to the
// device as a state::RdmaEndpoint in the provider's format.
//
// Every operation that takes a bootstrap is collective: all PEs call it in the same order. Each
// local step ends with an agreement (an allgather of one byte), so when one PE fails every PE
// returns an error before the next exchange instead of hanging in it.
//
// Devices: when no PE has an RDMA device (ibv_get_device_list returns NULL, as with ENOSYS on a
// kernel without RDMA, or an empty list), open() succeeds with *no_devices = true and no network.
// When some PEs have devices and others have none, open() fails on every PE, naming the PEs
// without one: half a network would leave some pairs unreachable in ways that are hard to see.
//
// Exporting, per MORI_DEVICE_NIC:
//   mlx5   through mlx5dv_init_obj (verbs_export_mlx5.cpp; mori/provider/mlx5.hpp);
//   ionic  through AMD's ionic direct verbs, loaded at run time (vendor_dv.hpp), on queues that
//          plain verbs create with the SQ kept out of the controller memory bar
//          (verbs_export_ionic.cpp; mori/provider/ionic.hpp);
//   bnxt   through Broadcom's bnxt_re direct verbs, loaded at run time (vendor_dv.hpp), on
//          queues it creates on memory registered as umems (verbs_export_bnxt.cpp;
//          mori/provider/bnxt.hpp).
// Nothing here has run against a NIC. Tests: the no-device path over the real libibverbs, and open
// (with the MLX5, Ionic and BNXT exports), register_region and teardown over the verbs double
// (tests/verbs_double/), which refuses what the kernel and the vendor's library refuse.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "bootstrap/bootstrap.hpp"
#include "mori/provider/bnxt_defs.hpp"
#include "mori/provider/ionic_defs.hpp"
#include "mori/provider/mlx5_defs.hpp"
#include "mori/state/rdma_endpoint.hpp"
#include "mori/status.hpp"
#include "rdma/memory_registration.hpp"
#include "rdma/vendor_dv.hpp"
#include "runtime/rdma_network.hpp"

struct ibv_device;
struct ibv_context;
struct ibv_pd;
struct ibv_cq;
struct ibv_qp;
struct ibv_mr;

namespace mori::rdma {

// The providers' queue geometry (provider/*_defs.hpp), which QP creation and the exports follow.
using provider::BnxtGeometry;
using provider::IonicGeometry;
using provider::Mlx5Geometry;

// Makes `bytes` of host memory at `host` readable and writable by the device and returns the
// device's address for it. `mmio` marks a device register (the doorbell, in a UAR page) rather
// than memory. The hip backend registers with hipHostRegister (IoMemory for mmio); on the host
// backend it is the identity. Ranges are not page-aligned, and several may share a page (the QPs'
// doorbell records come from one page pool, their BlueFlame registers from shared UAR pages): the
// hook must accept a page it has already mapped.
using MapToDevice = std::function<Status(void* host, size_t bytes, bool mmio, void** device)>;
// Undoes one successful MapToDevice call (the destructor calls it, in reverse order).
using UnmapFromDevice = std::function<void(void* host, bool mmio)>;

// Device memory for the queues (reviews/2026-12-01-bringup.md, B5). Set, every SQ, CQ and
// doorbell record is allocated from it: MLX5 and Ionic through a parent domain whose allocators
// rdma-core's provider calls for each ring and record (ibv_alloc_parent_domain(3)), BNXT as the
// umems. `alloc` returns zeroed memory at an address that is both the host's and the device's,
// which the host may write (rdma-core initialises the CQEs' owner bytes and the doorbell records
// itself: providers/mlx5/cq.c mlx5_alloc_cq_buf, verbs.c mlx5_create_qp), or null; `free` takes
// what it returned. The hip backend gives uncached VRAM, as rocSHMEM and ROCm/mori do; the host
// backend leaves it null, and rdma-core's host memory (BNXT: posix_memalign) is used, mapped with
// map_to_device. When the queues cannot be made on it (a kernel that cannot pin VRAM for a user
// queue without a peer-memory module), the network falls back to host memory
// (VerbsNetwork::queue_memory_fallback says why).
struct QueueMemory {
  std::function<void*(size_t bytes, size_t align)> alloc;
  std::function<void(void* p)> free;
  explicit operator bool() const { return alloc && free; }
};

// A QP's depths of outstanding RDMA reads and atomics, from the device's limits (ibv_device_attr):
// as the initiator (ibv_qp_attr::max_rd_atomic, set at RTS with IBV_QP_MAX_QP_RD_ATOMIC) at most
// max_qp_init_rd_atom, as the responder (max_dest_rd_atomic, set at RTR with
// IBV_QP_MAX_DEST_RD_ATOMIC) at most max_qp_rd_atom (ibv_query_device(3), ibv_modify_qp(3);
// librdmacm's cma.c bounds its initiator_depth by max_qp_init_rd_atom the same way). Each is at
// least 1 and at most kMaxRdAtomic.
inline constexpr int kMaxRdAtomic = 16;
struct RdAtomicDepths {
  int initiator;  // max_rd_atomic
  int responder;  // max_dest_rd_atomic
};
RdAtomicDepths rd_atomic_depths(int max_qp_rd_atom, int max_qp_init_rd_atom);

struct VerbsConfig {
  std::string nic;  // MORI_DEVICE_NIC: "mlx5" (or "" for mlx5), "bnxt", "ionic"
  int rank = 0;
  int n_pes = 1;
  int local_rank = 0;  // this PE's index on its node; spreads PEs over equally near devices
  int num_qp_per_pe = 1;
  uint32_t sq_wqes = 256;     // send queue depth asked for, a power of two (<= 65536)
  uint32_t ibuf_slots = 256;  // ibuf landing slots per endpoint, a power of two
  // [n_pes]: PEs reached over RDMA (symmetric). Set for this PE itself, its QP to itself is
  // connected to itself (runtime/amo_route.hpp routes a PE's own AMOs through its NIC that way).
  std::vector<bool> needs_rdma;
  void* heap_base = nullptr;  // the symmetric heap, registered for remote access
  size_t heap_bytes = 0;
  std::string device_filter_text;   // MORI_RDMA_DEVICES, as given (device_filter.hpp)
  int gid_index = -1;               // MORI_IB_GID_INDEX (0..255); -1: a RoCE v2 entry, 0 on IB
  uint8_t traffic_class = 0;        // MORI_RDMA_TC: ibv_ah_attr.grh.traffic_class at RTR
  uint8_t service_level = 0;        // MORI_RDMA_SL: ibv_ah_attr.sl at RTR
  uint8_t timeout = 14;             // MORI_RDMA_TIMEOUT: ibv_qp_attr.timeout at RTS
  uint8_t retry_cnt = 7;            // MORI_RDMA_RETRY_CNT: ibv_qp_attr.retry_cnt at RTS
  bool relaxed_ordering = false;    // MORI_RDMA_RELAXED_ORDERING: relaxed-ordering MRs (opt-in)
  std::string gpu_pci_address;      // the GPU's, "0000:c1:00.0", or "" (nic_affinity.hpp)
  std::string sysfs_root = "/sys";  // where nic_affinity.hpp reads the PCI tree
  // MORI_BNXT_DV_LIB or MORI_IONIC_DV_LIB, for nic "bnxt" or "ionic": the direct-verbs library to
  // load instead of trying default_dv_libraries (vendor_dv.hpp); "": the defaults.
  std::string dv_library;
  MapToDevice map_to_device;          // null: the identity
  UnmapFromDevice unmap_from_device;  // may be null
  // Exports GPU memory as a dma-buf for registration (memory_registration.hpp); null: plain
  // ibv_reg_mr only, as for host memory.
  ExportDmabuf export_dmabuf;
  QueueMemory queue_memory;  // null: host memory for the queues
};

class VerbsNetwork {
 public:
  // The NIC family, from VerbsConfig::nic: what open_device checks and loads, how create_queues
  // sizes a QP, and which export create_ibufs calls.
  enum class Family { kMlx5, kBnxt, kIonic };

  // Sets everything up (see the top of this file). On success either *out is the network and
  // *no_devices is false, or *out is null and *no_devices is true (no PE has a device). `boot`
  // must outlive the network: register_region and deregister_region use it.
  static Status open(const VerbsConfig& config, bootstrap::Bootstrap& boot,
                     std::unique_ptr<VerbsNetwork>* out, bool* no_devices);
  // Destroys the QPs, then the CQs, the parent domain, the queue memory, the memory regions, the
  // PD, and closes the device.
  ~VerbsNetwork();
  VerbsNetwork(const VerbsNetwork&) = delete;
  VerbsNetwork& operator=(const VerbsNetwork&) = delete;

  // [n_pes * num_qp_per_pe], entry pe * num_qp_per_pe + qp; all zero for PEs without RDMA. The
  // pointers inside are device addresses (from map_to_device).
  const std::vector<state::RdmaEndpoint>& endpoints() const { return endpoints_; }
  uint32_t heap_lkey() const { return heap_lkey_; }
  const std::vector<uint32_t>& heap_rkeys() const { return heap_rkeys_; }  // [n_pes]
  // [n_pes]: each PE's heap base in its own address space.
  const std::vector<uint64_t>& remote_heap_bases() const { return remote_heap_bases_; }
  const std::string& device_name() const { return device_name_; }
  // The device's atomic_cap (ibv_query_device), which open_device records and does not refuse.
  runtime::AtomicCap atomic_cap() const { return atomic_cap_; }
  // Whether the heap was registered through a dma-buf (else with plain ibv_reg_mr).
  bool heap_dmabuf() const { return heap_dmabuf_; }
  // Whether the SQs, CQs and doorbell records came from VerbsConfig::queue_memory (else host
  // memory), and, when a hook was given but not used, why (one line, for the log).
  bool queues_in_device_memory() const { return queues_in_device_memory_; }
  const std::string& queue_memory_fallback() const { return queue_memory_fallback_; }
  // Why this device (nic_affinity.hpp: NicChoice::reason).
  const std::string& device_choice() const { return device_choice_; }
  // The GID index used (on RoCE, gid_select.hpp chooses it unless MORI_IB_GID_INDEX is set).
  int gid_index() const { return gid_index_; }
  int port() const { return port_; }

  // Collective. Registers [base, base + bytes) of this PE for local and remote access; *lkey is
  // this PE's key, (*rkeys)[pe] each PE's key for its own region.
  Status register_region(void* base, size_t bytes, uint32_t* lkey, std::vector<uint32_t>* rkeys);
  // Collective. Deregisters the region that register_region registered at `base`.
  Status deregister_region(void* base);

 private:
  struct Queue {
    ibv_cq* cq = nullptr;
    ibv_qp* qp = nullptr;
    uint32_t psn = 0;  // our initial send PSN, 24 bits; a BNXT export seeds provider_state with it
    uint32_t path_mtu_bytes = 0;  // the path MTU set at RTR (BNXT: provider_word[0])
    // BNXT: the queues' memory (page-aligned, zeroed) and its umem handles, made by
    // create_bnxt_queue and freed by destroy_bnxt_queue; sq_wqes WQEs in sq_mem.
    void* cq_mem = nullptr;
    void* cq_umem = nullptr;
    size_t cq_bytes = 0;
    uint32_t cq_entries = 0;
    void* sq_mem = nullptr;
    void* sq_umem = nullptr;
    size_t sq_bytes = 0;
    void* rq_mem = nullptr;
    void* rq_umem = nullptr;
  };
  struct Mapping {
    void* host;
    bool mmio;
  };

  VerbsNetwork(const VerbsConfig& config, bootstrap::Bootstrap& boot)
      : config_(config), boot_(&boot) {}

  // Every PE learns whether every PE's `local` step succeeded; `step` names it in the message.
  Status agree(const Status& local, const char* step);
  // verbs_device.cpp
  Status open_device(bool* none);
  Status check_nic(ibv_device* device, const std::string& name);
  // verbs_network.cpp
  Status register_heap();
  Status create_ibufs();
  // verbs_queue_memory.cpp: create_queues on the hook's memory, else on host memory; the parent
  // domain; the hook's allocations, which map() passes through as device addresses.
  Status create_queues();
  Status open_queue_domain();
  void destroy_queues();
  Status alloc_queue_memory(size_t bytes, size_t align, const std::string& what, void** mem);
  void free_queue_memory(void* mem);
  bool from_queue_memory(const void* p, size_t bytes) const;
  static void* domain_alloc(ibv_pd* pd, void* self, size_t bytes, size_t align, uint64_t type);
  static void domain_free(ibv_pd* pd, void* self, void* mem, uint64_t type);
  // verbs_qp.cpp
  Status create_all_queues();
  Status create_verbs_queue(Queue* queue, const std::string& what);
  // The name of the call modify_qp makes, for errors.
  std::string modify_call() const {
    return family_ == Family::kBnxt ? "bnxt_re_dv_modify_qp" : "ibv_modify_qp";
  }
  Status connect_queues();
  // verbs_export_mlx5.cpp
  Status export_mlx5(const Queue& queue, state::RdmaEndpoint* ep);
  // verbs_export_ionic.cpp: the context's doorbell page and the PD's queue placement, once the
  // device is open; then the export of each queue pair.
  Status open_ionic();
  Status export_ionic(const Queue& queue, state::RdmaEndpoint* ep);
  // verbs_export_bnxt.cpp: the context's doorbell page; each queue pair's CQ and QP on umems, its
  // transitions, its export, and its teardown.
  Status open_bnxt();
  Status create_bnxt_queue(Queue* queue, const std::string& what);
  Status make_umem(size_t bytes, const std::string& what, void** mem, void** umem);
  void destroy_bnxt_queue(Queue* queue);
  Status export_bnxt(const Queue& queue, state::RdmaEndpoint* ep);
  // ibv_modify_qp, or bnxt_re_dv_modify_qp for BNXT queue pairs; 0 or an errno.
  int modify_qp(ibv_qp* qp, ibv_qp_attr* attr, int mask);
  Status map(void* host, size_t bytes, bool mmio, void** device);

  VerbsConfig config_;
  bootstrap::Bootstrap* boot_;
  Family family_ = Family::kMlx5;
  std::unique_ptr<VendorDv> dv_;  // BNXT and Ionic: the vendor's direct verbs, kept loaded
  ionic_dv_ctx ionic_ctx_{};      // Ionic: the doorbell page and queue types (ionic_dv_get_ctx)
  bnxt_re_dv_db_region_attr bnxt_db_{};  // BNXT: the default doorbell page (dbr)
  ibv_context* context_ = nullptr;
  ibv_pd* pd_ = nullptr;
  // MLX5, Ionic with queue_memory: the parent domain over pd_ whose allocators give the queues
  // the hook's memory; the CQs and QPs are made on it.
  ibv_pd* queue_pd_ = nullptr;
  bool use_queue_memory_ = false;  // while creating: allocate from the hook
  bool queues_in_device_memory_ = false;
  std::string queue_memory_fallback_;
  std::string domain_refusal_;  // why domain_alloc returned null, for queue_memory_fallback_
  std::map<const void*, size_t> queue_allocs_;  // the hook's live allocations: base -> bytes
  ibv_mr* heap_mr_ = nullptr;
  bool heap_dmabuf_ = false;
  std::string device_name_;
  std::string device_choice_;
  int port_ = 1;
  bool ethernet_ = false;  // RoCE: address by GID; InfiniBand: by LID
  int gid_index_ = 0;
  uint8_t gid_[16] = {};
  uint16_t lid_ = 0;
  int mtu_ = 0;  // ibv_mtu of the port
  runtime::AtomicCap atomic_cap_ = runtime::AtomicCap::kNone;
  int max_rd_atomic_ = 1;
  int max_dest_rd_atomic_ = 1;
  std::vector<Queue> queues_;  // [n_pes * num_qp_per_pe]; empty entries for PEs without RDMA
  uint64_t* ibuf_ = nullptr;   // one block, ibuf_stride_ words per endpoint with RDMA
  size_t ibuf_stride_ = 0;
  std::vector<ibv_mr*> ibuf_mrs_;
  std::map<void*, ibv_mr*> regions_;
  std::vector<Mapping> mappings_;
  std::vector<state::RdmaEndpoint> endpoints_;
  uint32_t heap_lkey_ = 0;
  std::vector<uint32_t> heap_rkeys_;
  std::vector<uint64_t> remote_heap_bases_;
};

}  // namespace mori::rdma
