// The BNXT requester CQE status a software NIC writes for each completion outcome (the
// BNXT_RE_REQ_ST_* values of mori/provider/bnxt_defs.hpp, from rdma-core's bnxt_re-abi.h). Shared
// by the host backend's BNXT codec and the emulated kernel's Thor2, which write CQEs of the same
// format for different WQE layouts.
#pragma once

#include <cstdint>

#include "backend/host/softnic/codec.hpp"
#include "mori/provider/bnxt_defs.hpp"

namespace mori::softnic {

inline uint32_t bnxt_status(CompletionStatus status) {
  using namespace provider::bnxt;
  switch (status) {
    case CompletionStatus::kSuccess:
      return BNXT_RE_REQ_ST_OK;
    case CompletionStatus::kLocalProtection:
      return BNXT_RE_REQ_ST_PROT;
    case CompletionStatus::kRemoteAccess:
      return BNXT_RE_REQ_ST_REM_ACC;
    case CompletionStatus::kRemoteInvalidRequest:
      return BNXT_RE_REQ_ST_REM_INVAL;
    case CompletionStatus::kLocalLength:
      return BNXT_RE_REQ_ST_LOC_LEN;
    case CompletionStatus::kFlushed:
      return BNXT_RE_REQ_ST_WR_FLUSH;
    case CompletionStatus::kRetryExceeded:
      return BNXT_RE_REQ_ST_TRNSP_XCED;
    case CompletionStatus::kBadResponse:
      return BNXT_RE_REQ_ST_BAD_RESP;
    case CompletionStatus::kRemoteOperation:
      return BNXT_RE_REQ_ST_REM_OP;
    default:
      // bnxt_re has no general requester status: the responder's failure stands in for it.
      return BNXT_RE_REQ_ST_REM_OP;
  }
}

}  // namespace mori::softnic
