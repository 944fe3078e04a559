// The emulated ConnectX-7's data path: from the moment a QP reaches RTS, a software NIC of the
// host backend (mori::softnic, mlx5 codec) executes the WQEs libmlx5 writes into the ring
// CREATE_QP named, announced through the doorbell record it named, and writes CQEs into the ring
// CREATE_CQ named. One NIC per QP, in the process that owns the QP (which may be the requester
// of a peer in another process: the responder's memory is then reached with
// process_vm_readv/writev, its atomics under the HCA's per-PD locks).
//
// What the NIC knows comes from the emulated kernel and the shared HCA state only: the peer is
// the QP named by dest_qp_num at RTR, an rkey must be one of the peer PD's MRs with remote access,
// an lkey one of this QP's PD's MRs in this process, and the first PSN is the RTS sq_psn. The
// keys are read again whenever any process registers or deregisters (the codec's doorbell read
// checks the HCA's generation first), so a key the peer sent after registering is known before
// the WQE that uses it is executed.
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "backend/host/softnic/softnic.hpp"
#include "bnxt_static_codec.hpp"
#include "hca_state.hpp"
#include "uverbs_cmd.hpp"

namespace mori::emulated_kernel {
namespace {

namespace sn = mori::softnic;

// Standard layout, the endpoint first: the codec is handed the endpoint and finds the rest.
struct NicCore {
  state::RdmaEndpoint ep{};
  uint32_t pdn = 0, peer_pdn = 0;
  std::atomic<uint32_t> generation{0};
  sn::SoftNic* nic = nullptr;
};

struct Nic {
  NicCore core;
  std::unique_ptr<sn::SoftNic> nic;
};

std::mutex g_mutex;
std::map<uint32_t, std::unique_ptr<Nic>>& nics() {
  static auto* m = new std::map<uint32_t, std::unique_ptr<Nic>>;  // outlives exit-time threads
  return *m;
}

const sn::PeLocks* locks() {
  static sn::PeLocks* l = [] {
    auto* p = new sn::PeLocks;
    const char* dir = std::getenv("MORI_EMU_DIR");
    const std::string path = std::string(dir ? dir : "/tmp") + "/atomic-locks" +
                             (dir ? "" : "-" + std::to_string(getpid()));
    if (!p->open(path).ok()) {
      delete p;
      return static_cast<sn::PeLocks*>(nullptr);
    }
    return p;
  }();
  return l;
}

constexpr uint32_t kLocalWrite = 1, kRemote = 2 | 4 | 8;  // IB_ACCESS_REMOTE_{WRITE,READ,ATOMIC}

sn::MemoryTable memory_of(uint32_t pdn, uint32_t peer_pdn) {
  sn::MemoryTable t;
  const int me = getpid();
  for (const hca::MrEntry& m : hca::mrs()) {
    const bool here = m.pid == me;
    // The NIC addresses memory by IOVA; it can reach an MR only where the IOVA is its address.
    if (m.iova != m.start) continue;
    if (here && m.pdn == pdn) t.local.push_back({m.iova, m.length, m.key});
    if (m.pdn == peer_pdn && (m.access & kRemote))
      t.remote.push_back({static_cast<int>(peer_pdn), m.iova, m.length, m.key,
                          here ? reinterpret_cast<void*>(m.start) : nullptr, here ? 0 : m.pid});
  }
  (void)kLocalWrite;
  return t;
}

// The family's codec: mlx5's of the host backend, or the one for libbnxt_re 44's static WQEs.
const sn::Codec& base_codec() {
  static const sn::Codec& c =
      std::string(family().name) == "bnxt" ? bnxt::static_codec() : sn::mlx5_codec();
  return c;
}

// The codec's doorbell read, then the keys again if they changed: the doorbell was rung after
// whatever registration the WQEs behind it rely on.
uint64_t announced(const state::RdmaEndpoint& ep, uint64_t last) {
  const uint64_t n = base_codec().announced(ep, last);
  auto& core = const_cast<NicCore&>(reinterpret_cast<const NicCore&>(ep));
  const uint32_t g = hca::generation();
  if (g != core.generation.load(std::memory_order_relaxed)) {
    core.generation.store(g, std::memory_order_relaxed);
    core.nic->set_memory(memory_of(core.pdn, core.peer_pdn));
  }
  return n;
}

const sn::Codec& codec() {
  static const sn::Codec c = [] {
    sn::Codec k = base_codec();
    k.announced = announced;
    return k;
  }();
  return c;
}

}  // namespace

void nic_start(File& f, const Qp& qp) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (nics().count(qp.qpn)) return;
  hca::QpEntry peer;
  const Cq& cq = f.cqs.at(qp.send_cq);
  if (!hca::find_qp(qp.dest_qpn, &peer)) {
    std::fprintf(stderr,
                 "emulated ConnectX-7: QP 0x%x's peer QP 0x%x does not exist; its WQEs "
                 "will not be executed\n",
                 qp.qpn, qp.dest_qpn);
    return;
  }
  if (cq.cqe_size != codec().cqe_bytes || !qp.sq_wqe_cnt) {
    std::fprintf(stderr,
                 "emulated NIC: QP 0x%x (%u-byte CQEs, %u WQEs) is not served: the software NIC "
                 "writes %u-byte CQEs to a send queue\n",
                 qp.qpn, cq.cqe_size, qp.sq_wqe_cnt, codec().cqe_bytes);
    return;
  }
  for (const auto& [qpn, n] : nics())
    if (n->core.ep.cq == reinterpret_cast<uint8_t*>(cq.buf))
      std::fprintf(stderr,
                   "emulated ConnectX-7: QPs 0x%x and 0x%x share a send CQ, whose "
                   "CQEs their NICs would overwrite\n",
                   qpn, qp.qpn);
  auto nic = std::make_unique<Nic>();
  state::RdmaEndpoint& ep = nic->core.ep;
  ep.sq = reinterpret_cast<uint8_t*>(qp.buf + qp.sq_offset);
  ep.sq_wqes = qp.sq_wqe_cnt;
  ep.dbr = reinterpret_cast<uint32_t*>(qp.dbrec);  // null where the family has none (bnxt)
  ep.db = reinterpret_cast<uint64_t*>(qp.bf_reg);
  ep.cq = reinterpret_cast<uint8_t*>(cq.buf);
  ep.cq_entries = cq.entries;
  ep.cq_dbr = reinterpret_cast<uint32_t*>(cq.dbrec);
  ep.qpn = qp.qpn;
  ep.cqn = cq.cqn;
  ep.provider_word[bnxt::kWordQpHandleLo] = static_cast<uint32_t>(qp.driver_cookie);
  ep.provider_word[bnxt::kWordQpHandleHi] = static_cast<uint32_t>(qp.driver_cookie >> 32);
  nic->core.pdn = f.pds.at(qp.pd_handle);
  nic->core.peer_pdn = peer.pdn;
  nic->core.generation.store(hca::generation());
  sn::SoftNicOptions options;
  options.read_env = false;
  options.log_prefix = "emulated ConnectX-7: ";
  options.private_locks = locks();
  nic->nic = std::make_unique<sn::SoftNic>(
      codec(), std::vector<sn::ServedEndpoint>{{&ep, static_cast<int>(peer.pdn), qp.sq_psn}},
      memory_of(nic->core.pdn, peer.pdn), options);
  nic->core.nic = nic->nic.get();
  if (const Status s = nic->nic->start(); !s.ok()) {
    std::fprintf(stderr, "emulated ConnectX-7: %s\n", s.message().c_str());
    return;
  }
  trace("NIC serves QP 0x%x (PD %u) -> QP 0x%x (PD %u, pid %d)", qp.qpn, nic->core.pdn, qp.dest_qpn,
        peer.pdn, peer.pid);
  nics()[qp.qpn] = std::move(nic);
}

void nic_stop(uint32_t qpn) {
  std::unique_ptr<Nic> nic;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    const auto it = nics().find(qpn);
    if (it == nics().end()) return;
    nic = std::move(it->second);
    nics().erase(it);
  }
  nic->nic->stop();
  trace("NIC of QP 0x%x stopped after %llu WQEs%s%s", qpn, (unsigned long long)nic->nic->executed(),
        nic->nic->qp_error(0).empty() ? "" : ": ", nic->nic->qp_error(0).c_str());
}

}  // namespace mori::emulated_kernel
