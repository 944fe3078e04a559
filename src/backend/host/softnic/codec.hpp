// The software NIC's view of one provider: how to read the doorbell, decode a WQE's bytes, and
// write a completion in the provider's exact format. One Codec per provider (mlx5_codec.cpp,
// bnxt_codec.cpp, ionic_codec.cpp); the software NIC core (softnic.cpp) executes the decoded
// requests on PEs' memory.
//
// A codec is the NIC's parser of untrusted bytes: it must reject garbage (an unknown opcode, an
// impossible size, a WQE that claims more bytes than an entry holds) with a reason, never crash or
// read past the entry.
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>

#include "mori/provider/work_request.hpp"
#include "mori/state/gpu_states.hpp"
#include "mori/state/rdma_endpoint.hpp"

namespace mori::provider {
struct Mlx5;
struct Bnxt;
struct Ionic;
}  // namespace mori::provider

namespace mori::softnic {

// What the NIC reports for a request, mapped by each codec to its provider's status or syndrome.
enum class CompletionStatus : uint8_t {
  kSuccess = 0,
  kLocalProtection,       // lkey unknown or the local range outside its region
  kRemoteAccess,          // rkey unknown or the remote range outside its region
  kRemoteInvalidRequest,  // an opcode or size the NIC does not execute
  kLocalLength,           // a length the WQE cannot hold (inline beyond its limit)
  kGeneral,               // anything else (fault injection)
  kFlushed,               // posted after the QP entered the error state (IBTA 11.6.2: flushed)
  // On the wire (wire/rc_qp.hpp), as a requester learns them from its peer or its timer:
  kRetryExceeded,    // no ACK within the retry budget (IBTA 9.7.6.1.3; IBV_WC_RETRY_EXC_ERR)
  kRemoteOperation,  // NAK remote operational error (IBTA 9.7.5.2.4; IBV_WC_REM_OP_ERR)
  kBadResponse,      // a response the request cannot have (IBTA 9.7.5.2.x; IBV_WC_BAD_RESP_ERR)
};

struct Codec {
  const char* name;
  uint32_t wqe_bytes;
  uint32_t cqe_bytes;
  // The SQ index (64-bit, exclusive) the driver has announced through the doorbell record and
  // register. `last` is the previous answer: providers with 16-bit counters extend theirs from it.
  uint64_t (*announced)(const state::RdmaEndpoint& ep, uint64_t last);
  // Decodes the WQE for SQ index `index` (its bytes: wqe_bytes at `wqe`). On garbage returns false
  // and says why; `wr->inline_data` may point into `wqe`.
  bool (*decode)(const void* wqe, uint64_t index, provider::WorkRequest* wr, std::string* why);
  // Writes the completion of WQE `index` into the endpoint's CQ as the hardware would, advancing
  // *cq_produced (completions written so far). Called for every signalled request and every failed
  // one.
  void (*complete)(state::RdmaEndpoint& ep, uint64_t* cq_produced, uint64_t index,
                   const provider::WorkRequest& wr, CompletionStatus status);
  // How the NIC writes the old value of a 4-byte atomic into the requester's memory: big-endian on
  // MLX5 (extended atomics), which NVSHMEM's and ROCm/mori's IBGDA byte-swap after reading it.
  // 8-byte results land in host order on every NIC.
  bool result32_big_endian;
  // The NIC's own packet sequence, for providers whose WQEs restate it (BNXT's MSN table: each
  // entry's start and next PSN). Checks WQE `index` against *next_psn, the QP's next send PSN
  // (the initial PSN of its RTS transition at first), and advances it; false with the mismatch in
  // *why. Null where the WQEs carry no PSN.
  bool (*check_sequence)(const state::RdmaEndpoint& ep, uint64_t index,
                         const provider::WorkRequest& wr, uint32_t* next_psn,
                         std::string* why) = nullptr;
};

const Codec& mlx5_codec();
const Codec& bnxt_codec();
const Codec& ionic_codec();

// The one table of codecs: the codec of NIC family `nic`, null for kNone (codec.cpp).
const Codec* codec_for(state::Nic nic);

// The codec of provider P (mori::provider::Mlx5, Bnxt or Ionic), for tests and benches that are
// templates over the provider.
template <typename P>
const Codec& codec_for() {
  if constexpr (std::is_same_v<P, provider::Mlx5>)
    return mlx5_codec();
  else if constexpr (std::is_same_v<P, provider::Bnxt>)
    return bnxt_codec();
  else {
    static_assert(std::is_same_v<P, provider::Ionic>, "codec_for: not a NIC provider");
    return ionic_codec();
  }
}

}  // namespace mori::softnic
