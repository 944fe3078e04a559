// The verbs double's test-facing side (verbs_double.hpp): the fabric's devices, the counts of live
// objects, the refusal log, the QP records, and the check that the QPs connected in pairs.
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "double_state.hpp"

namespace verbs_double {
namespace internal {

Fabric& fabric() {
  static Fabric f;
  return f;
}

int refuse(Fabric& f, int err, std::string reason) {
  f.refusals.push_back(std::move(reason));
  return err;
}

std::nullptr_t refuse_null(Fabric& f, int err, std::string reason) {
  refuse(f, err, std::move(reason));
  errno = err;
  return nullptr;
}

bool bad_port(const DeviceSpec& spec, uint32_t port) { return port < 1 || port > spec.ports; }

std::string port_refusal(const char* what, const DeviceSpec& spec, uint32_t port) {
  return std::string(what) + " " + std::to_string(port) + " is not a port of " + spec.name +
         " (ports 1.." + std::to_string(spec.ports) + ")";
}

bool empty_gid(const uint8_t* raw) {
  for (int i = 0; i < 16; ++i)
    if (raw[i]) return false;
  return true;
}

int mtu_bytes(int mtu) { return mtu >= IBV_MTU_256 && mtu <= IBV_MTU_4096 ? 128 << mtu : 0; }

}  // namespace internal

namespace {

std::string hex(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "0x%x", v);
  return buf;
}

const DeviceSpec* spec_named(internal::Fabric& f, const std::string& name) {
  for (const auto& d : f.devices)
    if (d->spec.name == name) return &d->spec;
  return nullptr;
}

bool reached_rts(const QpRecord& r) {
  for (const Transition& t : r.transitions)
    if (t.to == IBV_QPS_RTS) return true;
  return false;
}

}  // namespace

DeviceSpec roce_mlx5(const std::string& name, uint8_t host) {
  DeviceSpec d;
  d.name = name;
  GidSpec link{}, v4{};
  link.raw[0] = 0xfe;
  link.raw[1] = 0x80;
  link.raw[15] = host;
  v4.raw[10] = v4.raw[11] = 0xff;
  v4.raw[12] = 10;
  v4.raw[15] = host;
  for (const GidSpec& g : {link, v4})
    for (ibv_gid_type type : {IBV_GID_TYPE_ROCE_V1, IBV_GID_TYPE_ROCE_V2}) {
      d.gids.push_back(g);
      d.gids.back().type = type;
    }
  return d;
}

DeviceSpec roce_bnxt(const std::string& name, uint8_t host) {
  DeviceSpec d = roce_mlx5(name, host);
  d.family = Family::kBnxt;
  return d;
}

DeviceSpec roce_ionic(const std::string& name, uint8_t host) {
  DeviceSpec d = roce_mlx5(name, host);
  d.family = Family::kIonic;
  d.max_qp_wr = 0xffff;      // ionic_qp_sq_init: max_wr <= 0xffff
  d.max_cqe = 0xffff - 100;  // ionic_create_cq_ex: cqe + IONIC_CQ_GRACE <= 0xffff
  return d;
}

const void* fabric_address() { return &internal::fabric(); }

void reset(std::vector<DeviceSpec> devices) {
  internal::Fabric& f = internal::fabric();
  std::lock_guard<std::mutex> lock(f.mutex);
  f.qps.clear();
  f.cqs.clear();
  f.umems.clear();
  f.mrs.clear();
  f.pds.clear();
  f.contexts.clear();
  f.device_lists.clear();
  f.devices.clear();
  f.refusals.clear();
  f.history.clear();
  f.mr_accesses.clear();
  f.next_qpn = 0x100;
  f.next_cqn = 0x40;
  f.next_key = 0x1000;
  f.next_handle = 1;
  for (size_t i = 0; i < devices.size(); ++i) {
    auto d = std::make_unique<internal::Device>();
    d->spec = std::move(devices[i]);
    d->dev.node_type = IBV_NODE_CA;
    d->dev.transport_type = IBV_TRANSPORT_IB;
    std::snprintf(d->dev.name, sizeof(d->dev.name), "%s", d->spec.name.c_str());
    std::snprintf(d->dev.dev_name, sizeof(d->dev.dev_name), "uverbs%zu", i);
    std::snprintf(d->dev.dev_path, sizeof(d->dev.dev_path), "/sys/class/infiniband_verbs/uverbs%zu",
                  i);
    std::snprintf(d->dev.ibdev_path, sizeof(d->dev.ibdev_path), "/sys/class/infiniband/%s",
                  d->spec.name.c_str());
    f.devices.push_back(std::move(d));
  }
}

Live live() {
  internal::Fabric& f = internal::fabric();
  std::lock_guard<std::mutex> lock(f.mutex);
  Live l;
  l.device_lists = static_cast<int>(f.device_lists.size());
  l.contexts = static_cast<int>(f.contexts.size());
  l.pds = static_cast<int>(f.pds.size());
  l.mrs = static_cast<int>(f.mrs.size());
  l.cqs = static_cast<int>(f.cqs.size());
  l.qps = static_cast<int>(f.qps.size());
  l.umems = static_cast<int>(f.umems.size());
  return l;
}

std::string last_refusal() {
  internal::Fabric& f = internal::fabric();
  std::lock_guard<std::mutex> lock(f.mutex);
  return f.refusals.empty() ? "" : f.refusals.back();
}

std::vector<std::string> refusals() {
  internal::Fabric& f = internal::fabric();
  std::lock_guard<std::mutex> lock(f.mutex);
  return f.refusals;
}

std::vector<int> mr_access_history() {
  internal::Fabric& f = internal::fabric();
  std::lock_guard<std::mutex> lock(f.mutex);
  return f.mr_accesses;
}

std::vector<QpRecord> qp_history() {
  internal::Fabric& f = internal::fabric();
  std::lock_guard<std::mutex> lock(f.mutex);
  return f.history;
}

std::vector<std::string> connection_problems() {
  internal::Fabric& f = internal::fabric();
  std::lock_guard<std::mutex> lock(f.mutex);
  std::vector<std::string> out;
  for (const QpRecord& r : f.history) {
    if (!reached_rts(r)) continue;
    const std::string me = "QP " + hex(r.qpn) + " of " + r.device;
    const QpRecord* peer = nullptr;
    for (const QpRecord& p : f.history)
      if (p.qpn == r.dest_qpn) peer = &p;
    if (!peer) {
      out.push_back(me + ": dest_qp_num " + hex(r.dest_qpn) + " names no QP of the fabric");
      continue;
    }
    const std::string them = "QP " + hex(peer->qpn);
    if (!reached_rts(*peer)) out.push_back(me + ": " + them + " never reached RTS");
    if (peer->dest_qpn != r.qpn)
      out.push_back(me + ": " + them + " connects to " + hex(peer->dest_qpn) + ", not back");
    if (r.rq_psn != peer->sq_psn)
      out.push_back(me + ": rq_psn " + hex(r.rq_psn) + ", but " + them + "'s sq_psn is " +
                    hex(peer->sq_psn));
    const DeviceSpec* mine = spec_named(f, r.device);
    const DeviceSpec* theirs = spec_named(f, peer->device);
    if (!mine || !theirs) continue;
    if (r.path_mtu > mine->active_mtu || r.path_mtu > theirs->active_mtu)
      out.push_back(me + ": path MTU " + std::to_string(internal::mtu_bytes(r.path_mtu)) +
                    " exceeds a port's active MTU");
    if (mine->ethernet) {
      const int at = peer->sgid_index;
      if (!r.is_global || at < 0 || at >= static_cast<int>(theirs->gids.size()) ||
          std::memcmp(r.dgid, theirs->gids[at].raw, sizeof(r.dgid)))
        out.push_back(me + ": its dgid is not the GID " + them + " sends from (index " +
                      std::to_string(at) + " of " + peer->device + ")");
    }
  }
  return out;
}

}  // namespace verbs_double
