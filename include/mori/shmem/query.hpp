// Queries: this PE and the PE count, and where this PE can reach another PE's copy of a symmetric
// object with plain loads and stores.
//
// Both are queries, not operations: an argument that names no reachable copy (a PE out of range, an
// address outside the heap and every registered buffer, a PE reached over RDMA) gives 0 / nullptr
// rather than a device error, so a kernel can test whether a direct path exists.
#pragma once

#include <cstdint>

#include "mori/shmem/shared_queries.hpp"
#include "mori/state/access.hpp"
#include "mori/state/address.hpp"

namespace mori::shmem {

// my_pe() and n_pes() for kernels. On the host backend device code is host code, and the runtime's
// my_pe() and n_pes() (shared_queries.hpp) are the only definitions: one function, not two with the
// same signature. Called from a kernel lane, they answer from the device state, as these do.
#if defined(MORI_ON_AMDGCN)
MORI_DEVICE int my_pe() { return state::this_pe(); }
MORI_DEVICE int n_pes() { return state::pe_count(); }
#endif

// The P2P address of dest_pe's copy of the symmetric object at `dest` (an address in this PE's heap
// or one of its registered buffers; an interior pointer gives the same interior of the copy), or 0
// when dest_pe's copy is not mapped into this PE (another node, MORI_DISABLE_P2P, a peer's
// registered buffer on the host backend) or `dest` is not symmetric. `caller_pe` is the user
// guide's `myPe`: it must be the calling PE, and any other value gives 0. This is the device-side
// twin of the host API's ptr_p2p, with the same results.
namespace detail {
MORI_DEVICE uint64_t device_ptr_p2p(uint64_t dest, int caller_pe, int dest_pe) {
  const state::GpuStates& s = state::gpu_states();
  // The range checks come first: before init every field is 0, and n_pes = 0 rejects every PE.
  if (caller_pe != s.rank || dest_pe < 0 || dest_pe >= s.n_pes) return 0;
  state::RemoteTarget t{{-1, 0}, dest_pe, 0};
  // One byte: the address itself must lie inside the memory (its end is no object's address).
  if (!state::locate(dest, 1, &t.ref)) return 0;
  return state::p2p_address(t);
}
}  // namespace detail

// On the host backend the runtime's ptr_p2p (shared_queries.hpp) is the one definition, with the
// same results (it also says why it returned 0); from a kernel lane it runs device_ptr_p2p.
#if defined(MORI_ON_AMDGCN)
MORI_DEVICE uint64_t ptr_p2p(uint64_t dest, int caller_pe, int dest_pe) {
  return detail::device_ptr_p2p(dest, caller_pe, dest_pe);
}
#endif

// nvshmem_ptr: a pointer through which this PE loads and stores `pe`'s copy of the symmetric object
// at `dest` (`dest` itself when pe is this PE), or nullptr when there is no such pointer. Accesses
// through it are the caller's own loads and stores, not shmem operations: order them with platform
// fences or a barrier, as any other memory access.
MORI_DEVICE void* ptr(const void* dest, int pe) {
  return reinterpret_cast<void*>(
      detail::device_ptr_p2p(reinterpret_cast<uint64_t>(dest), state::this_pe(), pe));
}

}  // namespace mori::shmem
