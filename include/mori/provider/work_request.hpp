// The provider-neutral description of one RDMA work request and of completion progress: what the
// IBGDA engine (transport/rdma_engine.hpp) hands a provider to encode, and what a provider's
// completion parser hands back. The software NIC decodes a provider's WQE bytes back into the same
// struct. What a provider must have (its sizes, encoders, doorbell and CQ poll) is the NicProvider
// concept, provider/concepts.hpp.
#pragma once

#include <cstdint>

#include "mori/platform/macros.hpp"

namespace mori::provider {

enum class Opcode : uint8_t {
  kWrite = 0,
  kRead = 1,
  kWriteInline = 2,
  kFetchAdd = 3,
  kCompareSwap = 4,
};

struct WorkRequest {
  Opcode opcode;
  uint8_t signaled;  // 1: the NIC writes a completion for this request (selective signalling)
  uint8_t fence;  // 1: the NIC starts it only after earlier reads and atomics of the QP completed
  uint8_t width;  // atomics: 4 or 8 bytes
  uint32_t qpn;   // this QP's number, for providers that put it in the WQE
  // The WQE's SQ index: monotonic, the provider wraps it (mlx5: 16-bit wqe_counter).
  uint64_t index;
  uint64_t remote_addr;
  uint32_t rkey;
  uint32_t lkey;
  uint64_t local_addr;  // write: source; read: destination; atomics: where the old value lands
  uint32_t bytes;       // write, read and inline write
  uint32_t sq_wqes;  // the SQ depth (ep.sq_wqes): Ionic's WQE carries the pass parity of its index
  uint64_t operand;  // fetch-add: the addend; compare-swap: the swap value
  uint64_t compare;  // compare-swap: the expected value
  const void* inline_data;  // kWriteInline: `bytes` bytes copied into the WQE
  // kWriteInline: the bytes are operand's (little-endian, at most 8), not inline_data's: a value
  // in a register (RDMA p, a signal set) whose address would put it in scratch memory.
  bool inline_operand = false;
  // Explicit, and zero, so that a request has no padding and two compare byte for byte.
  uint8_t reserved[7] = {};
};
static_assert(sizeof(WorkRequest) == 80, "a WorkRequest has no padding");

// The outcome of one poll of a completion queue.
struct CqPoll {
  uint8_t advanced;  // 1: `completed_through` is new
  uint8_t error;     // 1: a completion carried an error (then `status` says which)
  uint16_t reserved;
  uint32_t status;             // provider's status or syndrome code
  uint64_t completed_through;  // WQEs [.., completed_through) are complete (a 64-bit index)
  const char* status_text;     // the syndrome's name, e.g. "remote access error"
};

// Writes `wr` into the SQ entry `wqe` with the provider's writer for its opcode: the one dispatch
// from a request to a provider's bytes (the engine, the fuzzers and their seeds use it). A 4-byte
// atomic on a provider without 32-bit atomics is the caller's to refuse (the provider traps).
template <typename Provider>
MORI_DEVICE void post_wqe(void* wqe, const WorkRequest& wr) {
  switch (wr.opcode) {
    case Opcode::kWrite:
      Provider::template post_read_write<false>(wqe, wr);
      return;
    case Opcode::kRead:
      Provider::template post_read_write<true>(wqe, wr);
      return;
    case Opcode::kWriteInline:
      Provider::post_inline_write(wqe, wr);
      return;
    default:
      Provider::post_atomic(wqe, wr);
      return;
  }
}

}  // namespace mori::provider
