// Which transport of this code reaches a PE: device code over the transport table
// (GpuStates::transports, whose RDMA entries carry the job's NIC family: state::transport_entry)
// and the NIC families compiled in (nic_families.hpp, which host code includes too).
#pragma once

#include <cstdint>

#include "mori/state/access.hpp"
#include "mori/transport/nic_families.hpp"

namespace mori::transport {

// Whether this code reaches `pe` over RDMA: its transport is RDMA and its NIC family is one
// compiled in; one compare of the PE's table entry per family (state::transport_entry). A call to
// any other PE takes P2P's path (dispatch.hpp), whose one failure site refuses a PE that P2P does
// not serve either, an RDMA PE of a family not compiled in among them (P2p::unreachable), so that
// no RDMA call carries a second failure site for the family.
MORI_DEVICE bool rdma_entry(uint8_t e) {
  using state::Nic, state::Transport, state::transport_entry;
  return (MORI_RDMA_MLX5 && e == transport_entry(Transport::kRdma, Nic::kMlx5)) ||
         (MORI_RDMA_BNXT && e == transport_entry(Transport::kRdma, Nic::kBnxt)) ||
         (MORI_RDMA_IONIC && e == transport_entry(Transport::kRdma, Nic::kIonic));
}

MORI_DEVICE bool rdma_reaches(int pe) { return rdma_entry(state::transport_entry_of(pe)); }
// The same for AMOs (GpuStates::amo_transports): one load from another table, no more.
MORI_DEVICE bool rdma_reaches_amo(int pe) { return rdma_entry(state::amo_transport_entry_of(pe)); }

// Whether the job reaches `pe` over RDMA with a NIC family this code does not carry.
MORI_DEVICE bool rdma_not_built(int pe) {
  return state::transport_to(pe) == state::Transport::kRdma && !rdma_reaches(pe);
}

}  // namespace mori::transport
