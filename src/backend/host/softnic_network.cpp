// RDMA over the software NIC (MORI_DEVICE_NIC=mlx5|bnxt|ionic on the host backend): this PE's
// queue pairs live in its own memory, laid out as the provider's hardware lays them out, and one
// SoftNic thread executes them on the target PEs' heaps (mapped here, as on one node) or, for
// registered buffers, in the target's process through process_vm_readv / process_vm_writev, its
// atomics under a lock per target PE that every PE's NIC shares (softnic/pe_locks.hpp).
//
// Between nodes (MORI_SOFTNIC_IFNAME set, wire_network.hpp) the QPs to PEs of other nodes are
// RoCEv2 RC QPs on the wire instead: their peers' memory is neither mapped nor reached by pid.
//
// Keys: each registration (the heap, the ibufs, each registered buffer) gets a serial number,
// the same on every PE since registration is collective; a PE's key for it is
// (serial << 12 | pe) ^ kKeySalt. Keys are exchanged through the bootstrap as on hardware, so a
// PE never derives another PE's key.
#include "backend/host/softnic_network.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <type_traits>

#include "backend/host/softnic/pe_locks.hpp"
#include "backend/host/softnic/softnic.hpp"
#include "backend/host/wire_network.hpp"
#include "mori/provider/bnxt.hpp"
#include "mori/provider/ionic.hpp"
#include "mori/provider/mlx5.hpp"
#include "runtime/runtime.hpp"

namespace mori::backend {

namespace {

using runtime::Runtime;
using state::RdmaEndpoint;

constexpr uint32_t kIbufSlots = 256;
constexpr uint32_t kKeySalt = 0x5a000000;
constexpr uint32_t kHeapSerial = 1, kIbufSerial = 2, kFirstRegionSerial = 3;

uint32_t key_for(int pe, uint32_t serial) {
  return ((serial << 12) | static_cast<uint32_t>(pe)) ^ kKeySalt;
}

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};
using Block = std::unique_ptr<uint8_t, FreeDeleter>;

Block zeroed(uint64_t bytes) {
  const uint64_t rounded = (bytes + 4095) / 4096 * 4096;
  auto* p = static_cast<uint8_t*>(std::aligned_alloc(4096, rounded));
  if (p) std::memset(p, 0, rounded);
  return Block(p);
}

// MORI_SOFTNIC_ATOMIC_CAP: the atomic_cap this NIC reports, "hca" (the default) or "none" (a
// BNXT function without PCIe AtomicOps, bringup review B4). Its atomics on registered buffers are
// a locked read-modify-write through process_vm_*, atomic only among the software NICs' own, so
// it cannot claim "glob" (docs/host-backend.md).
Status read_atomic_cap(runtime::AtomicCap* cap) {
  const char* v = std::getenv("MORI_SOFTNIC_ATOMIC_CAP");
  const std::string text = v ? v : "";
  if (text.empty() || text == "hca") {
    *cap = runtime::AtomicCap::kHca;
  } else if (text == "none") {
    *cap = runtime::AtomicCap::kNone;
  } else if (text == "glob") {
    return Status::error(
        "MORI_SOFTNIC_ATOMIC_CAP=glob: the software NIC's atomics on registered buffers are not "
        "atomic with respect to CPU atomics; use hca or none");
  } else {
    return Status::error("MORI_SOFTNIC_ATOMIC_CAP=" + text + ": expected hca or none");
  }
  return {};
}

class SoftNicNetwork final : public runtime::RdmaNetwork {
 public:
  SoftNicNetwork(Runtime& rt, state::Nic nic) : rt_(rt), nic_(nic) {}
  ~SoftNicNetwork() override {
    if (softnic_) softnic_->stop();
  }

  Status open(const std::vector<bool>& needs_rdma) {
    MORI_TRY(read_atomic_cap(&atomic_cap_));
    MORI_TRY(WireNetwork::open(rt_, &wire_));
    const int n = rt_.n_pes, qps = rt_.settings.num_qp_per_pe;
    on_wire_.assign(n, false);
    for (int pe = 0; pe < n; ++pe) on_wire_[pe] = wire_ && needs_rdma[pe] && !rt_.same_node[pe];
    const uint32_t sq_wqes = rt_.settings.rdma_sq_wqes;
    pids_.resize(n);
    const int my_pid = static_cast<int>(getpid());
    MORI_TRY(rt_.boot->allgather(&my_pid, pids_.data(), sizeof my_pid));
    heap_rkeys_.resize(n);
    heap_lkey_ = key_for(rt_.rank, kHeapSerial);
    MORI_TRY(rt_.boot->allgather(&heap_lkey_, heap_rkeys_.data(), sizeof heap_lkey_));

    endpoints_ = zeroed(sizeof(RdmaEndpoint) * n * qps);
    if (!endpoints_) return Status::error("software NIC: out of memory for the endpoints");
    auto* eps = reinterpret_cast<RdmaEndpoint*>(endpoints_.get());
    std::vector<softnic::ServedEndpoint> served;
    std::vector<WireQpAddress> wire_addresses;
    std::vector<size_t> wire_served;  // served[] index of each wire address
    std::mt19937 psn_rng(std::random_device{}());
    int used = 0;
    for (int pe = 0; pe < n; ++pe) used += needs_rdma[pe] ? qps : 0;
    ibufs_ = zeroed(state::ibuf_words(kIbufSlots) * 8 * std::max(used, 1));
    if (!ibufs_) return Status::error("software NIC: out of memory for the ibufs");
    int k = 0;
    for (int pe = 0; pe < n; ++pe) {
      if (!needs_rdma[pe]) continue;
      for (int q = 0; q < qps; ++q, ++k) {
        RdmaEndpoint& ep = eps[pe * qps + q];
        uint64_t* ibuf =
            reinterpret_cast<uint64_t*>(ibufs_.get()) + k * state::ibuf_words(kIbufSlots);
        MORI_TRY(init_endpoint(ep, sq_wqes, 0x100 + static_cast<uint32_t>(pe * qps + q), ibuf));
        // A random initial send PSN, as VerbsNetwork gives each QP at RTS: BNXT's engine counts
        // its MSN entries' PSNs from it, and the NIC checks them against its own count.
        const uint32_t psn = psn_rng() & 0xFFFFFF;
        if (nic_ == state::Nic::kBnxt) ep.provider_state = psn;
        local_.push_back({reinterpret_cast<uint64_t>(ibuf),
                          state::ibuf_registered_bytes(kIbufSlots), key_for(rt_.rank, kIbufSerial),
                          false});
        if (on_wire_[pe]) {
          wire_addresses.push_back({pe, q, ep.qpn, psn});
          wire_served.push_back(served.size());
        }
        served.push_back({&ep, pe, psn, std::nullopt});
      }
    }
    if (wire_) {
      std::vector<wire::QpAttributes> attributes;
      MORI_TRY(wire_->connect(wire_addresses, &attributes));
      for (size_t i = 0; i < attributes.size(); ++i) {
        softnic::ServedEndpoint& s = served[wire_served[i]];
        s.wire = attributes[i];
        // BNXT's engine counts each WQE's PSNs by the path MTU (bnxt.hpp kWordMtu), as the NIC
        // does: it must be the QP's, set at RTR.
        s.ep->provider_word[0] = 128u << attributes[i].path_mtu;
      }
    }
    const uint64_t heap_base = reinterpret_cast<uint64_t>(rt_.memory->base());
    local_.push_back({heap_base, rt_.memory->size(), heap_lkey_});
    for (int pe = 0; pe < n; ++pe) {
      if (!needs_rdma[pe] || on_wire_[pe]) continue;
      void* mapped = rt_.memory->peer_base(pe);
      remote_.push_back(
          {pe, rt_.heap.remote_bases[pe], rt_.memory->size(), heap_rkeys_[pe], mapped, pids_[pe]});
    }
    MORI_TRY(open_locks());
    softnic::SoftNicOptions options;
    options.private_locks = &locks_;
    options.atomics = atomic_cap_ != runtime::AtomicCap::kNone;
    options.nic_id = static_cast<uint64_t>(rt_.rank);  // the adversary: each PE its own choices
    if (wire_) options.port = &wire_->port();
    options.pe = rt_.rank;
    options.log_prefix =
        "mori: PE " + std::to_string(rt_.rank) + " software NIC (" + state::nic_name(nic_) + "): ";
    softnic_ = std::make_unique<softnic::SoftNic>(*softnic::codec_for(nic_), std::move(served),
                                                  table(), options);
    return softnic_->start();
  }

  state::Nic nic() const override { return nic_; }
  runtime::AtomicCap atomic_cap() const override { return atomic_cap_; }
  std::string device_name() const override {
    return std::string("softnic-") + state::nic_name(nic_);
  }
  RdmaEndpoint* device_endpoints() const override {
    return reinterpret_cast<RdmaEndpoint*>(endpoints_.get());
  }
  uint32_t heap_lkey() const override { return heap_lkey_; }
  const std::vector<uint32_t>& heap_rkeys() const override { return heap_rkeys_; }

  Status register_region(uint64_t base, uint64_t bytes, const std::vector<uint64_t>& remote_bases,
                         uint32_t* lkey, std::vector<uint32_t>* rkeys) override {
    const uint32_t serial = next_serial_++;
    *lkey = key_for(rt_.rank, serial);
    rkeys->assign(rt_.n_pes, 0);
    MORI_TRY(rt_.boot->allgather(lkey, rkeys->data(), sizeof *lkey));
    local_.push_back({base, bytes, *lkey, true, true});
    for (int pe = 0; pe < rt_.n_pes; ++pe) {
      if (on_wire_[pe]) continue;  // reached through its own NIC, which knows its keys
      // Private memory of a process, this one's included (a loopback QP: AMOs routed over RDMA,
      // runtime/amo_route.hpp): reached through its pid, never mapped, so that every NIC atomic
      // on it takes the same lock.
      remote_.push_back({pe, remote_bases[pe], bytes, (*rkeys)[pe], nullptr, pids_[pe]});
    }
    regions_[base] = serial;
    softnic_->set_memory(table());
    return {};
  }

  Status deregister_region(uint64_t base) override {
    auto it = regions_.find(base);
    if (it == regions_.end()) return {};
    const uint32_t serial = it->second;
    regions_.erase(it);
    std::erase_if(
        local_, [&](const softnic::LocalRegion& r) { return r.lkey == key_for(rt_.rank, serial); });
    std::erase_if(remote_,
                  [&](const softnic::RemoteRegion& r) { return r.rkey == key_for(r.pe, serial); });
    softnic_->set_memory(table());
    return {};
  }

  Status drain() override {
    if (softnic_->drain(std::chrono::seconds(10))) return {};
    return Status::error("software NIC: posted work requests still unexecuted after 10 s");
  }

 private:
  softnic::MemoryTable table() const { return {remote_, local_}; }

  // Collective: every PE opens the job's lock file for atomics on registered buffers
  // (softnic/pe_locks.hpp), named by a nonce of PE 0's; once all have it open, PE 0 unlinks it, so
  // nothing is left behind in /dev/shm.
  Status open_locks() {
    uint64_t nonce = 0;
    if (rt_.rank == 0) nonce = (uint64_t{std::random_device{}()} << 32) | std::random_device{}();
    MORI_TRY(rt_.boot->broadcast(&nonce, sizeof nonce, 0));
    char name[64];
    std::snprintf(name, sizeof name, "/dev/shm/mori-softnic-atomics-%016llx",
                  static_cast<unsigned long long>(nonce));
    const Status opened = locks_.open(name);
    const uint8_t mine = opened.ok() ? 0 : 1;
    std::vector<uint8_t> all(rt_.n_pes);
    MORI_TRY(rt_.boot->allgather(&mine, all.data(), 1));
    if (rt_.rank == 0) ::unlink(name);
    MORI_TRY(opened);
    for (int pe = 0; pe < rt_.n_pes; ++pe)
      if (all[pe])
        return Status::error("software NIC: PE " + std::to_string(pe) +
                             " could not open the atomics lock file (its own error says why)");
    return {};
  }

  // Lays out one QP as the provider's hardware would: SQ (and BNXT's MSN table), CQ in its
  // initial state, doorbell record and register, and its ibuf.
  Status init_endpoint(RdmaEndpoint& ep, uint32_t sq_wqes, uint32_t qpn, uint64_t* ibuf) {
    switch (nic_) {
      case state::Nic::kBnxt:
        // An error CQE names the failed WQE's first slot in 16 bits (bnxt.hpp).
        if (sq_wqes > provider::Bnxt::kMaxSqWqes)
          return Status::error("MORI_RDMA_SQ_WQES=" + std::to_string(sq_wqes) +
                               " is too deep for BNXT: at most " +
                               std::to_string(provider::Bnxt::kMaxSqWqes) +
                               " (3 slots per WQE, 16-bit slot indices)");
        return init_endpoint<provider::Bnxt>(ep, sq_wqes, qpn, ibuf);
      case state::Nic::kIonic:
        return init_endpoint<provider::Ionic>(ep, sq_wqes, qpn, ibuf);
      default:
        return init_endpoint<provider::Mlx5>(ep, sq_wqes, qpn, ibuf);
    }
  }
  template <typename P>
  Status init_endpoint(RdmaEndpoint& ep, uint32_t sq_wqes, uint32_t qpn, uint64_t* ibuf) {
    // A CQ ring of sq_wqes entries, as the runtime creates it on hardware: the engine's flow
    // control keeps it from overflowing.
    const uint32_t cq_entries = sq_wqes;
    Block sq = zeroed(P::sq_bytes(sq_wqes)), cq = zeroed(uint64_t{cq_entries} * P::kCqeBytes);
    Block words = zeroed(64);  // doorbell record (2 x 32 bits) and doorbell register
    if (!sq || !cq || !words) return Status::error("software NIC: out of memory for a queue pair");
    P::init_cq(cq.get(), cq_entries);
    ep.sq = sq.get();
    ep.cq = cq.get();
    ep.dbr = reinterpret_cast<uint32_t*>(words.get());
    ep.db = reinterpret_cast<uint64_t*>(words.get() + 8);
    ep.ibuf = ibuf;
    ep.sq_wqes = sq_wqes;
    ep.cq_entries = cq_entries;
    ep.qpn = qpn;
    ep.cqn = qpn;
    ep.ibuf_slots = kIbufSlots;
    ep.ibuf_lkey = key_for(rt_.rank, kIbufSerial);
    ep.provider_word[0] = 4096;  // BNXT: the path MTU (bnxt.hpp kWordMtu)
    for (uint32_t s = 0; s < kIbufSlots; ++s) ibuf[state::ibuf_tickets(kIbufSlots) + s] = s;
    blocks_.push_back(std::move(sq));
    blocks_.push_back(std::move(cq));
    blocks_.push_back(std::move(words));
    return {};
  }

  Runtime& rt_;
  state::Nic nic_;
  runtime::AtomicCap atomic_cap_ = runtime::AtomicCap::kHca;
  std::vector<int> pids_;
  std::vector<bool> on_wire_;  // PEs of other nodes, reached on the wire
  uint32_t heap_lkey_ = 0;
  std::vector<uint32_t> heap_rkeys_;
  uint32_t next_serial_ = kFirstRegionSerial;
  std::map<uint64_t, uint32_t> regions_;  // registered base -> serial
  std::vector<softnic::RemoteRegion> remote_;
  std::vector<softnic::LocalRegion> local_;
  Block endpoints_, ibufs_;
  std::vector<Block> blocks_;
  softnic::PeLocks locks_;
  std::unique_ptr<WireNetwork> wire_;
  std::unique_ptr<softnic::SoftNic> softnic_;  // last: stopped before the memory it serves goes
};

}  // namespace

Status open_softnic_network(Runtime& rt, const std::vector<bool>& needs_rdma,
                            std::unique_ptr<runtime::RdmaNetwork>* out) {
  auto network = std::make_unique<SoftNicNetwork>(rt, rt.settings.device_nic);
  MORI_TRY(network->open(needs_rdma));
  *out = std::move(network);
  return {};
}

}  // namespace mori::backend
