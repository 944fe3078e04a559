// The host backend's RDMA network over the software NIC (softnic_network.cpp).
#pragma once

#include <memory>
#include <vector>

#include "runtime/rdma_network.hpp"

namespace mori::backend {

// Queue pairs to the PEs with needs_rdma[pe], served by one SoftNic thread of the family
// rt.settings.device_nic. Collective.
Status open_softnic_network(runtime::Runtime& rt, const std::vector<bool>& needs_rdma,
                            std::unique_ptr<runtime::RdmaNetwork>* out);

}  // namespace mori::backend
