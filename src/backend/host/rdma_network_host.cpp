// The host backend's RDMA network: the software NIC when MORI_DEVICE_NIC names a NIC family, else
// the machine's ibverbs devices (whose queue pairs the lanes then drive from host memory).
#include "backend/host/softnic_network.hpp"
#include "rdma/verbs_runtime.hpp"
#include "runtime/runtime.hpp"

namespace mori::runtime {

Status open_rdma_network(Runtime& rt, const std::vector<bool>& needs_rdma,
                         std::unique_ptr<RdmaNetwork>* out, bool* no_devices) {
  *no_devices = false;
  if (rt.settings.device_nic != state::Nic::kNone)
    return backend::open_softnic_network(rt, needs_rdma, out);
  // Lanes are host threads: queue memory is reached where it is.
  return rdma::open_verbs_rdma(rt, needs_rdma, rdma::GpuHooks{}, out, no_devices);
}

}  // namespace mori::runtime
