// NicProvider: what the IBGDA engine (transport/rdma_engine.hpp) requires of a NIC provider. A
// provider is a struct of static members with no state and no concurrency logic (the engine owns
// both); it only encodes and decodes the NIC's bytes:
//
//   kName                 "mlx5", "bnxt", "ionic"
//   kWqeBytes             bytes of one SQ entry; every work request takes exactly one
//   kMaxInlineBytes       the largest inline write that fits one entry
//   kCqeBytes             bytes of one CQ entry
//   kNativeAtomic32       the NIC has 4-byte atomics (else the transport emulates them)
//   sq_bytes(wqes)        bytes of an SQ of `wqes` entries, with whatever the provider keeps after
//                         them (BNXT: the MSN table)
//   post_read_write<IsRead>(wqe, wr)   an RDMA write or read, the opcode a constant
//   post_inline_write(wqe, wr)         an RDMA write carrying its bytes in the entry
//   post_atomic(wqe, wr)               a fetch-add or compare-swap, 4 or 8 bytes
//   ring_doorbell(ep, next_index, last_wqe)
//                         makes entries [.., next_index) visible to the NIC: the doorbell record,
//                         then the doorbell register. Its first store is a system-scope release
//                         (or follows a release fence): the engine relies on it to publish the
//                         entries and prepare_submit's writes, and fences nothing itself
//   poll_cq(ep)           consumes new completions; reports the highest completed WQE index, or a
//                         decoded error (CqPoll)
//   atomic_result(raw, width)
//                         the old value of a fetching atomic of `width` bytes, in host order, from
//                         the 8 bytes of its landing slot as the NIC wrote them (MLX5 writes a
//                         4-byte result big-endian)
//
// and two hooks, which a provider without bookkeeping defines empty. They are required rather than
// detected, so that a misspelt hook fails this concept instead of silently never being called:
//
//   note_wqe(ep, wr)                  after a lane wrote its WQE (BNXT: the WQE's packet count)
//   prepare_submit(ep, base, next)    by the in-order submitter, before the doorbell of WQEs
//                                     [base, next) (BNXT: their PSNs in the MSN table)
//
// All are MORI_DEVICE: they run in GPU kernels (and in host-backend lanes).
#pragma once

#include <concepts>
#include <cstdint>

#include "mori/provider/work_request.hpp"
#include "mori/state/rdma_endpoint.hpp"

namespace mori::provider {

template <typename P>
concept NicProvider = requires(state::RdmaEndpoint& ep, const WorkRequest& wr, void* wqe,
                               const void* last_wqe, uint64_t index, uint32_t wqes) {
  { P::kName } -> std::convertible_to<const char*>;
  { P::kWqeBytes } -> std::convertible_to<uint32_t>;
  { P::kMaxInlineBytes } -> std::convertible_to<uint32_t>;
  { P::kCqeBytes } -> std::convertible_to<uint32_t>;
  { P::kNativeAtomic32 } -> std::convertible_to<bool>;
  { P::sq_bytes(wqes) } -> std::same_as<uint64_t>;
  P::template post_read_write<false>(wqe, wr);
  P::template post_read_write<true>(wqe, wr);
  P::post_inline_write(wqe, wr);
  P::post_atomic(wqe, wr);
  P::ring_doorbell(ep, index, last_wqe);
  { P::poll_cq(ep) } -> std::same_as<CqPoll>;
  { P::atomic_result(index, uint8_t{4}) } -> std::same_as<uint64_t>;
  P::note_wqe(ep, wr);
  P::prepare_submit(ep, index, index);
};

}  // namespace mori::provider
