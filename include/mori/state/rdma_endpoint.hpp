// RdmaEndpoint: one RDMA queue pair as the GPU drives it, device-visible, one per (PE, QP) in
// GpuStates::rdma_endpoints[pe * num_qp_per_pe + qp]. The runtime fills the first part at init
// (from mlx5dv / the vendor equivalents on hardware; from the software NIC on the host backend);
// the engine owns the second. Part of the device-state ABI: size-pinned, and changes bump
// kGpuStatesAbiVersion.
#pragma once

#include <cstdint>

namespace mori::state {

struct RdmaEndpoint {
  // ---- fixed at init ----------------------------------------------------------------------------
  uint8_t* sq;    // sq_wqes * Provider::kWqeBytes
  uint8_t* cq;    // cq_entries * Provider::kCqeBytes
  uint32_t* dbr;  // doorbell record (mlx5: the QP's two big-endian counters; others: see provider)
  uint64_t* db;  // doorbell register: MMIO on hardware, a word the software NIC watches on the host
  uint32_t* cq_dbr;  // CQ consumer-index record, for providers that have one (else null)
  uint64_t* ibuf;    // ibuf_words(ibuf_slots) words: the landing slots of fetching atomics, g and
                     // small gets, then a discard word, then each slot's ticket (see below)
  uint32_t sq_wqes;  // power of two
  uint32_t cq_entries;  // power of two, at least sq_wqes
  uint32_t qpn;
  uint32_t cqn;
  uint32_t ibuf_slots;  // power of two
  uint32_t ibuf_lkey;
  uint32_t provider_word[6];  // provider-specific constants (doorbell ids, epochs); each provider
                              // documents its use
  // ---- the engine's indices ---------------------------------------------------------------------
  // 64-bit, monotonic, never wrapped (the provider wraps when it writes bytes).
  uint64_t reserved;     // next free WQE index: [.., reserved) are taken by posters; bit 63 marks a
                         // fence requested for the next reservation (RdmaEngine::fence)
  uint64_t submitted;    // [.., submitted) are written and announced to the NIC, in posting order
  uint64_t completed;    // [.., completed) are known complete
  uint64_t cq_consumed;  // CQEs consumed so far (provider's CQ consumer index)
  uint64_t ibuf_next;    // next ibuf ticket to hand out (slot = ticket % ibuf_slots)
  uint32_t poll_lock;    // 1 while one thread drains the CQ for everybody
  uint32_t provider_state;  // provider state only the in-order submitter touches (BNXT: next
                            // PSN, which the runtime seeds with the QP's initial send PSN)
};
static_assert(sizeof(RdmaEndpoint) == 144, "RdmaEndpoint is part of the device-state ABI");

// The ibuf's layout, for `slots` landing slots (a power of two):
//   [0, slots)                  landing slots: a fetched value lands in its 8 bytes
//   [slots]                     discard: where the old value of a non-fetching NIC atomic lands
//   [slots + 1]                 padding
//   [ibuf_tickets(slots) + s]   slot s's ticket: the next ticket allowed to use it; the runtime
//                               sets it to s, a user of ticket t sets it to t + slots when done
// Only [0, slots + 1) is written by the NIC (registered with ibuf_lkey).
constexpr uint64_t ibuf_discard(uint32_t slots) { return slots; }
constexpr uint64_t ibuf_tickets(uint32_t slots) { return uint64_t{slots} + 2; }
constexpr uint64_t ibuf_words(uint32_t slots) { return 2 * uint64_t{slots} + 2; }
constexpr uint64_t ibuf_registered_bytes(uint32_t slots) { return (uint64_t{slots} + 1) * 8; }

}  // namespace mori::state
