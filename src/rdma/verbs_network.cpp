// VerbsNetwork: open (the agreement on devices), the heap and region registrations, the ibufs,
// and teardown. The device and port: verbs_device.cpp. Queue pairs: verbs_qp.cpp. The exports:
// verbs_export_mlx5.cpp, verbs_export_ionic.cpp, verbs_export_bnxt.cpp.
#include "rdma/verbs_network.hpp"

#include <infiniband/verbs.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "rdma/memory_registration.hpp"

namespace mori::rdma {
namespace {

constexpr int kMrAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                          IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;

// MORI_RDMA_RELAXED_ORDERING=1 adds IBV_ACCESS_RELAXED_ORDERING to the heap's and the registered
// buffers' MRs: the NIC's PCIe writes into them may then pass each other, for bandwidth on
// peer-to-peer paths (ROCm/mori's MaybeAddRelaxedOrderingFlag). It is off by default because a
// put followed by its signal (put_signal, a put then an atomic flag) relies on the data landing
// first; with relaxed ordering the signal can become visible before the data (ibv_reg_mr(3);
// DeepEP turns NVSHMEM_IB_ENABLE_RELAXED_ORDERING off for this reason). libibverbs drops the
// flag where the device or kernel lacks it (IBV_ACCESS_OPTIONAL_RANGE).
int mr_access(bool relaxed) { return kMrAccess | (relaxed ? IBV_ACCESS_RELAXED_ORDERING : 0); }

Status errno_error(const std::string& call, int err) {
  return Status::error("rdma: " + call + " failed: " + std::strerror(err ? err : EIO));
}

}  // namespace

Status VerbsNetwork::agree(const Status& local, const char* step) {
  const uint8_t mine = local.ok() ? 0 : 1;
  std::vector<uint8_t> all(boot_->size());
  MORI_TRY(boot_->allgather(&mine, all.data(), 1));
  if (!local.ok()) return local;
  for (size_t pe = 0; pe < all.size(); ++pe)
    if (all[pe])
      return Status::error("rdma: " + std::string(step) + " failed on PE " + std::to_string(pe) +
                           " (its own error says why)");
  return {};
}

Status VerbsNetwork::open(const VerbsConfig& config, bootstrap::Bootstrap& boot,
                          std::unique_ptr<VerbsNetwork>* out, bool* no_devices) {
  out->reset();
  *no_devices = false;
  std::unique_ptr<VerbsNetwork> net(new VerbsNetwork(config, boot));

  // The first exchange: every PE's device outcome, 0 ready, 1 no device, 2 failed. It comes
  // before any other, so that PEs without devices never enter an exchange the others skip.
  bool none = false;
  const Status local = net->open_device(&none);
  const uint8_t mine = !local.ok() ? 2 : none ? 1 : 0;
  std::vector<uint8_t> all(boot.size());
  MORI_TRY(boot.allgather(&mine, all.data(), 1));
  if (!local.ok()) return local;
  std::string failed, without;
  for (size_t pe = 0; pe < all.size(); ++pe) {
    if (all[pe] == 2) failed += (failed.empty() ? "" : ", ") + std::to_string(pe);
    if (all[pe] == 1) without += (without.empty() ? "" : ", ") + std::to_string(pe);
  }
  if (!failed.empty())
    return Status::error("rdma: opening the RDMA device failed on PE " + failed +
                         " (its own error says why)");
  if (std::all_of(all.begin(), all.end(), [](uint8_t state) { return state == 1; })) {
    *no_devices = true;
    return {};
  }
  if (!without.empty())
    return Status::error("rdma: no RDMA device on PE " + without +
                         " while other PEs have one: RDMA needs a device on every PE, or on none");

  MORI_TRY(net->agree(net->create_queues(), "creating queue pairs"));
  MORI_TRY(net->connect_queues());
  MORI_TRY(net->register_heap());
  MORI_TRY(net->agree(net->create_ibufs(), "exporting queue pairs"));
  *out = std::move(net);
  return {};
}

Status VerbsNetwork::register_heap() {
  Status local;
  Registration reg;
  local = register_memory(pd_, config_.heap_base, config_.heap_bytes,
                          reinterpret_cast<uint64_t>(config_.heap_base),
                          mr_access(config_.relaxed_ordering), "the symmetric heap",
                          config_.export_dmabuf, verbs_registration_calls(), &reg);
  heap_mr_ = reg.mr;
  heap_dmabuf_ = reg.dmabuf;
  MORI_TRY(agree(local, "registering the symmetric heap"));
  struct KeyWire {
    uint64_t base;
    uint32_t rkey;
    uint32_t pad;
  };
  const KeyWire mine{reinterpret_cast<uint64_t>(config_.heap_base), heap_mr_->rkey, 0};
  std::vector<KeyWire> all(config_.n_pes);
  MORI_TRY(boot_->allgather(&mine, all.data(), sizeof(KeyWire)));
  heap_lkey_ = heap_mr_->lkey;
  for (const KeyWire& k : all) {
    heap_rkeys_.push_back(k.rkey);
    remote_heap_bases_.push_back(k.base);
  }
  return {};
}

// One ibuf per endpoint (mori/state/rdma_endpoint.hpp: its layout), all in one block. Only each
// ibuf's first ibuf_registered_bytes are registered, for local writes: the NIC writes the fetched
// values there and nothing else. Then each QP is exported with its ibuf.
Status VerbsNetwork::create_ibufs() {
  using namespace state;
  const uint32_t slots = config_.ibuf_slots;
  ibuf_stride_ = (ibuf_words(slots) + 7) / 8 * 8;  // whole 64-byte lines
  const size_t active =
      std::count_if(queues_.begin(), queues_.end(), [](const Queue& q) { return q.qp != nullptr; });
  endpoints_.assign(queues_.size(), RdmaEndpoint{});
  if (!active) return {};
  const size_t bytes = active * ibuf_stride_ * sizeof(uint64_t);
  void* block = nullptr;
  if (int rc = posix_memalign(&block, 4096, bytes)) return errno_error("posix_memalign(ibuf)", rc);
  ibuf_ = static_cast<uint64_t*>(block);
  std::memset(ibuf_, 0, bytes);
  void* device = nullptr;
  MORI_TRY(map(ibuf_, bytes, false, &device));
  // The GPU posts ep.ibuf + slot, its own address of the slot, as the WQE's local address: each
  // ibuf's MR takes the device's address as its IOVA, so the NIC resolves it wherever the device
  // maps the block (ibv_reg_mr_iova(3)).
  auto* device_ibufs = static_cast<uint64_t*>(device);
  size_t next = 0;
  for (size_t i = 0; i < queues_.size(); ++i) {
    if (!queues_[i].qp) continue;
    uint64_t* ibuf = ibuf_ + next * ibuf_stride_;
    uint64_t* device_ibuf = device_ibufs + next++ * ibuf_stride_;
    for (uint32_t s = 0; s < slots; ++s) ibuf[ibuf_tickets(slots) + s] = s;
    Registration reg;
    MORI_TRY(register_memory(pd_, ibuf, ibuf_registered_bytes(slots),
                             reinterpret_cast<uint64_t>(device_ibuf), IBV_ACCESS_LOCAL_WRITE,
                             "an ibuf", nullptr, verbs_registration_calls(), &reg));
    ibuf_mrs_.push_back(reg.mr);
    state::RdmaEndpoint& ep = endpoints_[i];
    MORI_TRY(family_ == Family::kIonic  ? export_ionic(queues_[i], &ep)
             : family_ == Family::kBnxt ? export_bnxt(queues_[i], &ep)
                                        : export_mlx5(queues_[i], &ep));
    ep.ibuf = device_ibuf;  // the device's address, which the ibuf's MR takes as its IOVA
    ep.ibuf_slots = slots;
    ep.ibuf_lkey = reg.mr->lkey;
  }
  return {};
}

Status VerbsNetwork::register_region(void* base, size_t bytes, uint32_t* lkey,
                                     std::vector<uint32_t>* rkeys) {
  Status local;
  ibv_mr* mr = nullptr;
  if (!base || !bytes) {
    local = Status::error("rdma: register_region of an empty range");
  } else if (regions_.count(base)) {
    local = Status::error("rdma: a region is already registered at this base");
  } else {
    Registration reg;
    local = register_memory(pd_, base, bytes, reinterpret_cast<uint64_t>(base),
                            mr_access(config_.relaxed_ordering), "a registered buffer",
                            config_.export_dmabuf, verbs_registration_calls(), &reg);
    mr = reg.mr;
  }
  Status s = agree(local, "registering a region");
  std::vector<uint32_t> keys(config_.n_pes);
  const uint32_t mine = mr ? mr->rkey : 0;
  if (s.ok()) s = boot_->allgather(&mine, keys.data(), sizeof(uint32_t));
  if (!s.ok()) {
    if (mr) ibv_dereg_mr(mr);
    return s;
  }
  regions_[base] = mr;
  *lkey = mr->lkey;
  *rkeys = std::move(keys);
  return {};
}

Status VerbsNetwork::deregister_region(void* base) {
  Status local;
  const auto it = regions_.find(base);
  if (it == regions_.end()) {
    local = Status::error("rdma: deregister_region of a base that register_region never saw");
  } else {
    if (int rc = ibv_dereg_mr(it->second)) local = errno_error("ibv_dereg_mr(region)", rc);
    regions_.erase(it);
  }
  return agree(local, "deregistering a region");
}

// The queue memory hook's allocations are the device's already (verbs_queue_memory.cpp).
Status VerbsNetwork::map(void* host, size_t bytes, bool mmio, void** device) {
  if (!config_.map_to_device || (!mmio && from_queue_memory(host, bytes))) {
    *device = host;
    return {};
  }
  MORI_TRY(config_.map_to_device(host, bytes, mmio, device));
  mappings_.push_back({host, mmio});
  return {};
}

VerbsNetwork::~VerbsNetwork() {
  // The device's mappings go first: nothing may reach the queues once they are destroyed.
  if (config_.unmap_from_device)
    for (auto it = mappings_.rbegin(); it != mappings_.rend(); ++it)
      config_.unmap_from_device(it->host, it->mmio);
  // A QP before its CQ (a CQ with a QP attached cannot be destroyed), both before the memory
  // under them (destroy_queues), MRs before the PD, the PD before the device. Failures here have
  // nowhere to go; the device's close reclaims the rest.
  destroy_queues();
  for (ibv_mr* mr : ibuf_mrs_) ibv_dereg_mr(mr);
  for (auto& [base, mr] : regions_) ibv_dereg_mr(mr);
  if (heap_mr_) ibv_dereg_mr(heap_mr_);
  if (pd_) ibv_dealloc_pd(pd_);
  if (context_) ibv_close_device(context_);
  std::free(ibuf_);
}

}  // namespace mori::rdma
