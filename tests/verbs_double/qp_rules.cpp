// The kernel's rules for ibv_modify_qp on an RC QP: which state may follow which, and which
// attribute bits each transition requires and allows. The facts come from the Linux kernel,
// torvalds/linux drivers/infiniband/core/verbs.c: the table `qp_state_table` (its IB_QPT_RC
// entries) and the check `ib_modify_qp_is_ok`, which every driver applies:
//   - the (current, next) pair must be marked valid;
//   - every required bit must be in the mask, and no bit outside required | optional | STATE;
//   - IB_QP_CUR_STATE only when the current state is RTR, RTS, SQD or SQE.
// Both fail with EINVAL. The IBV_QP_* bits of libibverbs are the kernel's IB_QP_* bits.
#include <string>

#include "double_state.hpp"

namespace verbs_double {
namespace internal {
namespace {

struct Rule {
  ibv_qp_state from, to;
  int required, optional;
};

constexpr int kPkey = IBV_QP_PKEY_INDEX, kPort = IBV_QP_PORT, kAccess = IBV_QP_ACCESS_FLAGS;
constexpr int kAlt = IBV_QP_ALT_PATH, kMig = IBV_QP_PATH_MIG_STATE,
              kRnrTimer = IBV_QP_MIN_RNR_TIMER;
constexpr int kCur = IBV_QP_CUR_STATE;

// The RC column of qp_state_table, one line per valid transition (a transition not listed is
// invalid).
constexpr Rule kRcRules[] = {
    {IBV_QPS_RESET, IBV_QPS_RESET, 0, 0},
    {IBV_QPS_RESET, IBV_QPS_INIT, kPkey | kPort | kAccess, 0},
    {IBV_QPS_INIT, IBV_QPS_RESET, 0, 0},
    {IBV_QPS_INIT, IBV_QPS_ERR, 0, 0},
    {IBV_QPS_INIT, IBV_QPS_INIT, 0, kPkey | kPort | kAccess},
    {IBV_QPS_INIT, IBV_QPS_RTR,
     IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
         kRnrTimer,
     kAlt | kAccess | kPkey},
    {IBV_QPS_RTR, IBV_QPS_RESET, 0, 0},
    {IBV_QPS_RTR, IBV_QPS_ERR, 0, 0},
    {IBV_QPS_RTR, IBV_QPS_RTS,
     IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC,
     kCur | kAlt | kAccess | kRnrTimer | kMig},
    {IBV_QPS_RTS, IBV_QPS_RESET, 0, 0},
    {IBV_QPS_RTS, IBV_QPS_ERR, 0, 0},
    {IBV_QPS_RTS, IBV_QPS_RTS, 0, kCur | kAccess | kAlt | kMig | kRnrTimer},
    {IBV_QPS_RTS, IBV_QPS_SQD, 0, IBV_QP_EN_SQD_ASYNC_NOTIFY},
    {IBV_QPS_SQD, IBV_QPS_RESET, 0, 0},
    {IBV_QPS_SQD, IBV_QPS_ERR, 0, 0},
    {IBV_QPS_SQD, IBV_QPS_RTS, 0, kCur | kAlt | kAccess | kRnrTimer | kMig},
    {IBV_QPS_SQD, IBV_QPS_SQD, 0,
     kPort | IBV_QP_AV | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
         IBV_QP_MAX_QP_RD_ATOMIC | IBV_QP_MAX_DEST_RD_ATOMIC | kAlt | kAccess | kPkey | kRnrTimer |
         kMig},
    {IBV_QPS_SQE, IBV_QPS_RESET, 0, 0},
    {IBV_QPS_SQE, IBV_QPS_ERR, 0, 0},
    {IBV_QPS_SQE, IBV_QPS_RTS, 0, 0},
    {IBV_QPS_ERR, IBV_QPS_RESET, 0, 0},
    {IBV_QPS_ERR, IBV_QPS_ERR, 0, 0},
};

// Every bit of enum ibv_qp_attr_mask (verbs.h), in bit order.
constexpr struct {
  int bit;
  const char* name;
} kMaskNames[] = {
    {IBV_QP_STATE, "IBV_QP_STATE"},
    {IBV_QP_CUR_STATE, "IBV_QP_CUR_STATE"},
    {IBV_QP_EN_SQD_ASYNC_NOTIFY, "IBV_QP_EN_SQD_ASYNC_NOTIFY"},
    {IBV_QP_ACCESS_FLAGS, "IBV_QP_ACCESS_FLAGS"},
    {IBV_QP_PKEY_INDEX, "IBV_QP_PKEY_INDEX"},
    {IBV_QP_PORT, "IBV_QP_PORT"},
    {IBV_QP_QKEY, "IBV_QP_QKEY"},
    {IBV_QP_AV, "IBV_QP_AV"},
    {IBV_QP_PATH_MTU, "IBV_QP_PATH_MTU"},
    {IBV_QP_TIMEOUT, "IBV_QP_TIMEOUT"},
    {IBV_QP_RETRY_CNT, "IBV_QP_RETRY_CNT"},
    {IBV_QP_RNR_RETRY, "IBV_QP_RNR_RETRY"},
    {IBV_QP_RQ_PSN, "IBV_QP_RQ_PSN"},
    {IBV_QP_MAX_QP_RD_ATOMIC, "IBV_QP_MAX_QP_RD_ATOMIC"},
    {IBV_QP_ALT_PATH, "IBV_QP_ALT_PATH"},
    {IBV_QP_MIN_RNR_TIMER, "IBV_QP_MIN_RNR_TIMER"},
    {IBV_QP_SQ_PSN, "IBV_QP_SQ_PSN"},
    {IBV_QP_MAX_DEST_RD_ATOMIC, "IBV_QP_MAX_DEST_RD_ATOMIC"},
    {IBV_QP_PATH_MIG_STATE, "IBV_QP_PATH_MIG_STATE"},
    {IBV_QP_CAP, "IBV_QP_CAP"},
    {IBV_QP_DEST_QPN, "IBV_QP_DEST_QPN"},
    {IBV_QP_RATE_LIMIT, "IBV_QP_RATE_LIMIT"},
};

// "attribute X" or "attributes X | Y".
std::string attributes(int mask) {
  const bool several = (mask & (mask - 1)) != 0;
  return std::string(several ? "attributes " : "attribute ") + mask_names(mask);
}

}  // namespace

const char* state_name(int state) {
  static const char* const kNames[] = {"RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR"};
  return state >= 0 && state <= IBV_QPS_ERR ? kNames[state] : "UNKNOWN";
}

std::string check_rc_transition(ibv_qp_state cur, ibv_qp_state next, int mask) {
  if ((mask & kCur) && cur != IBV_QPS_RTR && cur != IBV_QPS_RTS && cur != IBV_QPS_SQD &&
      cur != IBV_QPS_SQE)
    return "IBV_QP_CUR_STATE is allowed only from RTR, RTS, SQD or SQE";
  for (const Rule& r : kRcRules) {
    if (r.from != cur || r.to != next) continue;
    if (const int missing = r.required & ~mask) return "missing required " + attributes(missing);
    if (const int extra = mask & ~(r.required | r.optional | IBV_QP_STATE))
      return attributes(extra) + (extra & (extra - 1) ? " are" : " is") +
             " not allowed in this transition";
    return "";
  }
  return "not a valid transition";
}

}  // namespace internal

std::string mask_names(int mask) {
  std::string out;
  int known = 0;
  for (const auto& m : internal::kMaskNames) {
    known |= m.bit;
    if (mask & m.bit) out += (out.empty() ? "" : " | ") + std::string(m.name);
  }
  if (mask & ~known) out += (out.empty() ? "" : " | ") + std::to_string(mask & ~known);
  return out.empty() ? "0" : out;
}

}  // namespace verbs_double
