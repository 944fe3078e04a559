// Symmetric addressing: a local address inside the symmetric heap or a registered buffer names the
// same offset in every PE's copy. locate() finds which memory an address range lies in; the
// transports turn that into a peer address (P2P) or a remote address and key (RDMA).
#pragma once

#include <cstdint>

#include "mori/platform.hpp"
#include "mori/platform/path_mark.hpp"
#include "mori/state/access.hpp"

namespace mori::state {

// Where a local symmetric address lives.
struct SymmetricRef {
  int32_t region;   // -1: the symmetric heap; otherwise an index into GpuStates::regions
  uint64_t offset;  // from the start of the heap or the region
};

// The remote side of one operation: a symmetric location on PE `pe`, through queue pair `qp` where
// RDMA is used.
struct RemoteTarget {
  SymmetricRef ref;
  int pe;
  int qp;
};

// True when [addr, addr + bytes) lies inside the heap or inside one registered buffer (the heap is
// tried first). *out is the heap's reference to addr whenever no buffer holds the range, found or
// not (unchecked callers fall back to it): so the search is a branch with no else, which a wave
// whose lanes all address the heap skips, not an if/else with a join.
MORI_DEVICE bool locate(uint64_t addr, uint64_t bytes, SymmetricRef* out) {
  const GpuStates& s = gpu_states();
  // One unsigned compare finds the heap (an address below its base wraps past heap_size). Checked
  // builds also require the range to end inside it; release builds trust a range that starts
  // there (it cannot lie in a registered buffer, and a bad one is the caller's error).
  const uint64_t heap_offset = addr - s.heap_base;
  *out = {-1, heap_offset};
  bool found =
      heap_offset < s.heap_size && (!MORI_DEVICE_CHECKS || bytes <= s.heap_size - heap_offset);
  // The search has no early exit: a lane takes the first buffer that holds its range (`!found`)
  // by selects, so the loop is one scalar count with no divergent exit and no exec-mask
  // bookkeeping in the RDMA entry points.
  if (!found) {
    for (int i = 0; i < s.n_regions; ++i) {
      const RegisteredRegion& r = s.regions[i];
      const uint64_t offset = addr - r.base;
      // Tests combined without short-circuits: one load of the entry's base and size, and no
      // divergent region per test.
      bool in = !found;
      in &= addr >= r.base;
      in &= offset <= r.size;
      in &= bytes <= r.size - offset;
      out->region = in ? i : out->region;
      out->offset = in ? offset : out->offset;
      found = found || in;
    }
  }
  return found;
}

// The heap's (region -1) or the registered buffer's entry of the region table: one indexed load,
// where choosing between GpuStates' heap tables and the buffer's was a divergent branch.
MORI_DEVICE const RegisteredRegion& region_of(const SymmetricRef& ref) {
  return gpu_states().regions[ref.region];
}

// Where `t`'s heap or buffer starts on its PE as mapped here (P2P), or 0 when that copy is not
// mapped here.
MORI_DEVICE uint64_t p2p_base(const RemoteTarget& t) { return region_of(t.ref).peer_bases[t.pe]; }

// The address through which this PE reaches `t` directly (P2P), or 0 when that copy is not mapped
// here.
MORI_DEVICE uint64_t p2p_address(const RemoteTarget& t) {
  const uint64_t base = p2p_base(t);
  return base ? base + t.ref.offset : 0;
}

// The address of `t` in its own PE's address space, as a NIC on that PE sees it (RDMA).
MORI_DEVICE uint64_t remote_address(const RemoteTarget& t) {
  return region_of(t.ref).remote_bases[t.pe] + t.ref.offset;
}

}  // namespace mori::state
