// What several providers do alike to their queues' memory: store a composed 64-byte WQE, hand over
// a zeroed CQ ring, read a fetching atomic's 8-byte result. Each provider's member of the same
// name calls these, so that the NicProvider concept still names one function per provider.
#pragma once

#include <cstdint>

#include "mori/platform.hpp"

namespace mori::provider {

// A composed WQE of four 16-byte chunks as four 16-byte stores (the slot is 64-byte aligned, in
// global memory: GPU memory or mapped host memory). rdma-core orders a WQE only by the barrier
// before the doorbell, which the engine's ring_doorbell provides (mlx5 and ionic follow it).
template <typename Wqe>
MORI_DEVICE void store_wqe64(void* slot, const Wqe& w) {
  struct Chunks {
    platform::Vec16 v[4];
  };
  static_assert(sizeof(Wqe) == sizeof(Chunks), "a 64-byte WQE: four 16-byte stores");
  const Chunks c = __builtin_bit_cast(Chunks, w);
  for (int i = 0; i < 4; ++i)
    platform::store16_global(static_cast<uint8_t*>(slot) + 16 * i, c.v[i]);
}

// A new CQ ring of `entries` CQEs of `cqe_bytes` as a driver that zeroes it hands it over (bnxt,
// ionic); for the software NIC, tests and benches.
inline void zero_cq(uint8_t* cq, uint32_t entries, uint32_t cqe_bytes) {
  for (uint64_t b = 0; b < uint64_t{entries} * cqe_bytes; ++b) cq[b] = 0;
}

// The old value of a fetching atomic from its landing slot, for a provider whose atomics are 8
// bytes only and land in host order (kNativeAtomic32 false: the transport never posts a 4-byte
// one, and a 4-byte view is the low half).
MORI_DEVICE constexpr uint64_t atomic_result_8(uint64_t raw, uint8_t width) {
  return width == 4 ? raw & 0xffffffffull : raw;
}

}  // namespace mori::provider
