#include "runtime/amo_route.hpp"

#include "mori/state/gpu_states.hpp"

namespace mori::runtime {

namespace {

constexpr auto kRdma = static_cast<uint8_t>(state::Transport::kRdma);

bool direct(uint8_t t) {
  return t == static_cast<uint8_t>(state::Transport::kP2P) ||
         t == static_cast<uint8_t>(state::Transport::kSdma);
}

}  // namespace

std::vector<bool> nic_updated(const std::vector<uint8_t>& reach, int n) {
  std::vector<bool> updated(n, false);
  for (int a = 0; a < n; ++a)
    for (int x = 0; x < n; ++x)
      if (reach[a * n + x] == kRdma) updated[x] = true;
  return updated;
}

std::vector<bool> rdma_queue_needs(const std::vector<uint8_t>& reach, int n, int rank) {
  const std::vector<bool> updated = nic_updated(reach, n);
  std::vector<bool> needs(n, false);
  for (int x = 0; x < n; ++x) {
    const uint8_t t = reach[rank * n + x];
    needs[x] = t == kRdma || (direct(t) && updated[x]);
  }
  return needs;
}

AmoRoute route_amos(const std::vector<uint8_t>& reach, const std::vector<AtomicCap>& caps, int n,
                    int rank) {
  const std::vector<bool> updated = nic_updated(reach, n);
  AmoRoute route;
  route.transports.assign(reach.begin() + rank * n, reach.begin() + (rank + 1) * n);
  for (int x = 0; x < n; ++x)
    if (direct(route.transports[x]) && updated[x] && caps[x] == AtomicCap::kHca)
      route.transports[x] = kRdma;
  for (int a = 0; a < n; ++a)
    for (int x = 0; x < n; ++x)
      if (reach[a * n + x] == kRdma && (caps[a] == AtomicCap::kNone || caps[x] == AtomicCap::kNone))
        route.no_nic_atomics = true;
  return route;
}

}  // namespace mori::runtime
