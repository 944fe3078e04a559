// VerbsNetwork as the runtime's RdmaNetwork: the endpoints copied to device memory once (the
// device owns their indices from then on), keys passed through.
#include "rdma/verbs_runtime.hpp"

#include <cstdio>

#include "mori/transport/nic_families.hpp"
#include "runtime/runtime.hpp"

namespace mori::rdma {

namespace {

class VerbsRdma final : public runtime::RdmaNetwork {
 public:
  VerbsRdma(std::unique_ptr<VerbsNetwork> verbs, state::Nic nic)
      : verbs_(std::move(verbs)), nic_(nic) {}

  Status publish_endpoints() {
    const auto& eps = verbs_->endpoints();
    return d_endpoints_.upload(eps.data(), eps.size() * sizeof(state::RdmaEndpoint));
  }

  state::Nic nic() const override { return nic_; }
  runtime::AtomicCap atomic_cap() const override { return verbs_->atomic_cap(); }
  std::string device_name() const override { return verbs_->device_name(); }
  state::RdmaEndpoint* device_endpoints() const override {
    return static_cast<state::RdmaEndpoint*>(d_endpoints_.ptr);
  }
  uint32_t heap_lkey() const override { return verbs_->heap_lkey(); }
  const std::vector<uint32_t>& heap_rkeys() const override { return verbs_->heap_rkeys(); }
  Status register_region(uint64_t base, uint64_t bytes, const std::vector<uint64_t>&,
                         uint32_t* lkey, std::vector<uint32_t>* rkeys) override {
    return verbs_->register_region(reinterpret_cast<void*>(base), bytes, lkey, rkeys);
  }
  Status deregister_region(uint64_t base) override {
    return verbs_->deregister_region(reinterpret_cast<void*>(base));
  }
  // A NIC completes what the device posted; the device's own quiet waits for it. Nothing is
  // executed on the host's behalf, so there is nothing to wait for here.
  Status drain() override { return {}; }

 private:
  std::unique_ptr<VerbsNetwork> verbs_;
  state::Nic nic_;
  runtime::DeviceArray d_endpoints_;
};

}  // namespace

Status open_verbs_rdma(runtime::Runtime& rt, const std::vector<bool>& needs_rdma, GpuHooks hooks,
                       std::unique_ptr<runtime::RdmaNetwork>* out, bool* no_devices) {
  // Unset, the family is the build's first (transport/nic_families.hpp); a named one the build
  // lacks was refused when the settings were read.
  const state::Nic nic = rt.settings.device_nic == state::Nic::kNone ? transport::default_rdma_nic()
                                                                     : rt.settings.device_nic;
  if (nic == state::Nic::kNone) {
    return Status::error(
        "some PE is reached over RDMA, but this build's device code carries no "
        "NIC family (MORI_RDMA_PROVIDERS is empty)");
  }
  VerbsConfig config;
  config.nic = state::nic_name(nic);
  config.rank = rt.rank;
  config.n_pes = rt.n_pes;
  config.local_rank = rt.local_rank;
  config.num_qp_per_pe = rt.settings.num_qp_per_pe;
  config.sq_wqes = rt.settings.rdma_sq_wqes;
  config.needs_rdma = needs_rdma;
  config.heap_base = rt.memory->base();
  config.heap_bytes = rt.memory->size();
  config.device_filter_text = rt.settings.rdma_devices;
  config.gid_index = rt.settings.ib_gid_index;
  config.traffic_class = static_cast<uint8_t>(rt.settings.rdma_traffic_class);
  config.service_level = static_cast<uint8_t>(rt.settings.rdma_service_level);
  config.timeout = static_cast<uint8_t>(rt.settings.rdma_timeout);
  config.retry_cnt = static_cast<uint8_t>(rt.settings.rdma_retry_cnt);
  config.relaxed_ordering = rt.settings.rdma_relaxed_ordering;
  if (nic == state::Nic::kBnxt) config.dv_library = rt.settings.bnxt_dv_lib;
  if (nic == state::Nic::kIonic) config.dv_library = rt.settings.ionic_dv_lib;
  config.gpu_pci_address = std::move(hooks.gpu_pci_address);
  config.map_to_device = std::move(hooks.map_to_device);
  config.unmap_from_device = std::move(hooks.unmap_from_device);
  config.export_dmabuf = std::move(hooks.export_dmabuf);
  config.queue_memory = std::move(hooks.queue_memory);
  std::unique_ptr<VerbsNetwork> verbs;
  MORI_TRY(VerbsNetwork::open(config, *rt.boot, &verbs, no_devices));
  if (*no_devices) return {};
  // The queues are still usable in host memory, but slower and with the get-ordering hazard of
  // reviews/2026-12-01-bringup.md B5 (docs/rdma-hardware.md, "Where the queues live"): one line.
  if (!verbs->queue_memory_fallback().empty())
    std::fprintf(stderr, "mori: init: PE %d: RDMA queues in host memory, not device memory: %s\n",
                 rt.rank, verbs->queue_memory_fallback().c_str());
  auto network = std::make_unique<VerbsRdma>(std::move(verbs), nic);
  MORI_TRY(network->publish_endpoints());
  *out = std::move(network);
  return {};
}

}  // namespace mori::rdma
