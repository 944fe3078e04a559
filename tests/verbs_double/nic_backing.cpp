// NicBacking: the software NICs that carry the verbs double's traffic (verbs_double.hpp). One
// mori::softnic::SoftNic per device with QPs in RTS serves them all, through the codec of the
// device's family. What each NIC knows comes from the double alone, as a real NIC's comes from
// its driver: each QP's queues from the double's objects (nic_endpoint_*), its peer from the
// dest_qp_num and its initial PSN from the sq_psn of its transitions, the keys from the MRs
// registered on the fabric. So a wrong export, key or PSN fails the traffic.
//
// PEs are threads of one process, so every MR is reachable at its address: the NIC of device d
// addresses the memory of the device that owns a QP's peer ("PE" e = that device's index) through
// the MRs of e's PDs that allow remote access, and a WQE's local range through d's MRs.
#include <memory>
#include <string>
#include <vector>

#include "backend/host/softnic/softnic.hpp"
#include "double_state.hpp"

namespace sn = mori::softnic;

namespace verbs_double {

using namespace internal;

struct NicBacking::Nic {
  int device = 0;
  std::vector<std::unique_ptr<mori::state::RdmaEndpoint>> views;
  std::vector<const Qp*> qps;
  std::unique_ptr<sn::SoftNic> nic;
};

namespace {

int device_index(const Fabric& f, const Device* d) {
  for (size_t i = 0; i < f.devices.size(); ++i)
    if (f.devices[i].get() == d) return static_cast<int>(i);
  return -1;
}

const Qp* qp_by_number(const Fabric& f, uint32_t qpn) {
  for (const auto& [key, q] : f.qps)
    if (q->qp.qp_num == qpn) return q.get();
  return nullptr;
}

// Device `d`'s NIC's tables: the remote regions of every device (MRs with remote access), and
// its own MRs as local regions.
sn::MemoryTable memory_of(const Fabric& f, int d) {
  constexpr int kRemote =
      IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
  sn::MemoryTable table;
  for (const auto& [key, m] : f.mrs) {
    const int owner = device_index(f, m->pd->context->device);
    const uint64_t addr = reinterpret_cast<uintptr_t>(m->mr.addr);
    if (m->access & kRemote)
      table.remote.push_back({owner, m->iova, m->mr.length, m->mr.rkey, m->mr.addr});
    // A WQE's local address is an IOVA of its MR; the NIC reads it at that address, which is
    // right only when the two agree (every MR the runtime makes without a GPU).
    if (owner == d && m->iova == addr) table.local.push_back({m->iova, m->mr.length, m->mr.lkey});
  }
  return table;
}

const sn::Codec* codec_of(const DeviceSpec& spec) {
  using mori::state::Nic;
  return sn::codec_for(spec.family == Family::kIonic  ? Nic::kIonic
                       : spec.family == Family::kBnxt ? Nic::kBnxt
                                                      : Nic::kMlx5);
}

// The NIC's view of `qp`, per family (nic_endpoint_mlx5, nic_endpoint_ionic).
bool nic_endpoint(Qp& qp, mori::state::RdmaEndpoint* out, std::string* why) {
  if (qp.context->device->spec.family == Family::kIonic) return nic_endpoint_ionic(qp, out, why);
  if (qp.context->device->spec.family == Family::kBnxt) return nic_endpoint_bnxt(qp, out, why);
  return nic_endpoint_mlx5(qp, out, why);
}

}  // namespace

mori::Status NicBacking::start(std::unique_ptr<NicBacking>* out) {
  Fabric& f = fabric();
  std::lock_guard<std::mutex> lock(f.mutex);
  if (f.backing) return mori::Status::error("verbs double: software NICs already carry traffic");
  std::unique_ptr<NicBacking> backing(new NicBacking);
  for (size_t d = 0; d < f.devices.size(); ++d) {
    auto nic = std::make_unique<Nic>();
    nic->device = static_cast<int>(d);
    std::vector<sn::ServedEndpoint> served;
    for (const auto& [key, q] : f.qps) {
      const QpRecord& r = f.history[q->record];
      if (q->context->device != f.devices[d].get() || r.state != IBV_QPS_RTS) continue;
      const std::string name = "QP " + std::to_string(q->qp.qp_num) + " of " + r.device;
      const sn::Codec* codec = codec_of(f.devices[d]->spec);
      if (!codec)
        return mori::Status::error("verbs double: no software NIC models " + name + "'s device");
      const Qp* peer = qp_by_number(f, r.dest_qpn);
      if (!peer)
        return mori::Status::error("verbs double: " + name + "'s peer QP " +
                                   std::to_string(r.dest_qpn) + " does not exist");
      auto view = std::make_unique<mori::state::RdmaEndpoint>();
      std::string why;
      if (!nic_endpoint(*q, view.get(), &why)) return mori::Status::error("verbs double: " + why);
      served.push_back({view.get(), device_index(f, peer->context->device), r.sq_psn});
      nic->views.push_back(std::move(view));
      nic->qps.push_back(q.get());
    }
    if (served.empty()) continue;
    sn::SoftNicOptions options;
    options.read_env = false;
    options.log_prefix = "verbs double NIC " + f.devices[d]->spec.name + ": ";
    nic->nic = std::make_unique<sn::SoftNic>(*codec_of(f.devices[d]->spec), std::move(served),
                                             memory_of(f, static_cast<int>(d)), options);
    MORI_TRY(nic->nic->start());
    backing->nics_.push_back(std::move(nic));
  }
  if (backing->nics_.empty())
    return mori::Status::error("verbs double: no QP is in RTS, so there is no traffic to carry");
  f.backing = backing.get();
  *out = std::move(backing);
  return {};
}

NicBacking::~NicBacking() {
  for (auto& n : nics_) n->nic->stop();
  Fabric& f = fabric();
  std::lock_guard<std::mutex> lock(f.mutex);
  if (f.backing == this) f.backing = nullptr;
}

uint64_t NicBacking::executed() const {
  uint64_t n = 0;
  for (const auto& nic : nics_) n += nic->nic->executed();
  return n;
}

std::vector<std::string> NicBacking::qp_errors() const {
  std::vector<std::string> out;
  for (const auto& nic : nics_)
    for (size_t i = 0; i < nic->qps.size(); ++i) {
      const std::string e = nic->nic->qp_error(i);
      if (!e.empty()) out.push_back("QP " + std::to_string(nic->qps[i]->qp.qp_num) + ": " + e);
    }
  return out;
}

namespace internal {

void memory_changed(Fabric& f) {
  if (!f.backing) return;
  for (auto& nic : f.backing->nics_) nic->nic->set_memory(memory_of(f, nic->device));
}

bool served(const Fabric& f, const Qp& qp) {
  if (!f.backing) return false;
  for (const auto& nic : f.backing->nics_)
    for (const Qp* q : nic->qps)
      if (q == &qp) return true;
  return false;
}

}  // namespace internal

}  // namespace verbs_double
