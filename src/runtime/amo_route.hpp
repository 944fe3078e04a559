// The AMO table (GpuStates::amo_transports): which transport carries each PE's AMOs, chosen at
// init from every PE's transport table and every PE's NIC atomic capability.
//
// OpenSHMEM makes every AMO on a location atomic with respect to every other. A NIC's atomics are
// atomic with respect to a P2P atomic (the owner's own, or a same-node peer's over XGMI) only when
// it reports IBV_ATOMIC_GLOB (ibv_query_device(3)); with IBV_ATOMIC_HCA only among that NIC's own.
// So, for a PE X whose memory some PE updates over RDMA:
//   X's NIC reports GLOB   AMOs keep their transport (P2P stays one instruction);
//   X's NIC reports HCA    every PE that reaches X over P2P, X itself included (a loopback QP),
//                          sends its AMOs on X's memory over RDMA, so that X's NIC executes all
//                          of them;
//   X's NIC reports NONE   no NIC atomic reaches X (they trap, kNoNicAtomics), so P2P AMOs race
//                          with none and keep P2P.
// Puts and gets keep the data table's transport. A PE that no PE reaches over RDMA (every P2P-only
// job) keeps P2P for everything: its device code runs the same instructions as before.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/rdma_network.hpp"

namespace mori::runtime {

// reach[a * n + x]: PE a's transport (state::Transport) to PE x, every PE's table.
// Whether some PE reaches PE x over RDMA, for each x.
std::vector<bool> nic_updated(const std::vector<uint8_t>& reach, int n);

// The PEs PE `rank` needs a queue pair to: those its table reaches over RDMA, and those whose
// AMOs may be routed over RDMA (P2P-reached and NIC-updated), before the capabilities are known.
std::vector<bool> rdma_queue_needs(const std::vector<uint8_t>& reach, int n, int rank);

struct AmoRoute {
  std::vector<uint8_t> transports;  // PE `rank`'s AMO table (state::Transport values)
  // Some PE reaches some PE over RDMA where one of the two NICs has no atomics (the job's flag
  // kNoNicAtomics).
  bool no_nic_atomics = false;
};

// caps[x]: PE x's NIC's capability (any value where PE x has no NIC: it is read only for PEs an
// RDMA transport involves).
AmoRoute route_amos(const std::vector<uint8_t>& reach, const std::vector<AtomicCap>& caps, int n,
                    int rank);

}  // namespace mori::runtime
