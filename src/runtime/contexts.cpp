// The host API of contexts: ctx_create and ctx_destroy (OpenSHMEM 1.5, section 9.5), over the pool
// of QP indices that device code's ctx_create<S> and ctx_destroy<S> (shmem/ctx.hpp) share.
#include <atomic>
#include <cstring>
#include <string>

#include "mori/shmem/host_api.hpp"
#include "runtime/backend.hpp"
#include "runtime/error.hpp"
#include "runtime/host_only.hpp"
#include "runtime/runtime.hpp"

namespace mori::runtime {

Status open_contexts(Runtime& rt) {
  void* pool = nullptr;
  MORI_TRY(backend::alloc_host_visible(sizeof(state::ContextPool), &pool));
  rt.contexts.reset(static_cast<state::ContextPool*>(pool));
  std::memset(pool, 0, sizeof(state::ContextPool));
  rt.contexts->live[state::pool_word(0)] = state::pool_bit(0);  // the default context
  rt.ctx_teams.assign(static_cast<size_t>(rt.settings.num_qp_per_pe), state::kTeamWorld);
  return {};
}

}  // namespace mori::runtime

namespace mori::shmem {

using runtime::report;
using runtime::Runtime;

namespace {

// The device updates the same words with system-scope atomics; these are their host side (on the
// hip backend the pool is coherent host memory, which both may update atomically).
std::atomic_ref<uint64_t> word_of(Runtime& rt, int qp) {
  return std::atomic_ref<uint64_t>(rt.contexts->live[state::pool_word(qp)]);
}

// Which indices created contexts may hold, for messages.
std::string created_range(int num_qp) {
  const std::string env = "MORI_NUM_QP_PER_PE=" + std::to_string(num_qp);
  if (num_qp < 2) return env + " leaves no queue pair beyond the default (QP 0) for contexts";
  return "created contexts are queue pairs 1 to " + std::to_string(num_qp - 1) + " (" + env + ")";
}

// ctx_create and team_create_ctx: a free QP for a context of `team`, under the API lock.
int create(const char* kApi, Team team, long options, Ctx* ctx) {
  runtime::clear_error();
  if (!ctx) return report(kApi, "ctx is null");
  *ctx = kCtxInvalid;
  Runtime* rt = runtime::require(kApi);
  if (!rt) return -1;
  if (!state::team_entry(rt->teams.data(), static_cast<int>(rt->teams.size()), team)) {
    return report(kApi, "team " + std::to_string(team) + " is not a valid team on PE " +
                            std::to_string(rt->rank) +
                            " (invalid, destroyed, or this PE is not a member)");
  }
  if ((options & ~state::kCtxOptions) != 0) {
    return report(kApi, "options " + std::to_string(options) + " has bits other than " +
                            "SHMEM_CTX_PRIVATE (1), SHMEM_CTX_SERIALIZED (2) and " +
                            "SHMEM_CTX_NOSTORE (4)");
  }
  const int n = rt->settings.num_qp_per_pe;
  auto load = [](uint64_t* w) { return std::atomic_ref<uint64_t>(*w).load(); };
  auto cas = [](uint64_t* w, uint64_t expected, uint64_t desired) {
    std::atomic_ref<uint64_t>(*w).compare_exchange_strong(expected, desired);
    return expected;  // what was found: desired's swap happened iff it equals the caller's
  };
  const int qp = state::pool_claim(rt->contexts->live, n, load, cas);
  if (qp < 0) {
    if (n < 2) return report(kApi, "no free context: " + created_range(n));
    return report(kApi, "no free context: all " + std::to_string(n - 1) +
                            " of MORI_NUM_QP_PER_PE=" + std::to_string(n) +
                            " queue pairs beyond the default are in use (destroy a context, or "
                            "raise MORI_NUM_QP_PER_PE, up to " +
                            std::to_string(state::kMaxQpPerPe) + ")");
  }
  rt->ctx_teams[qp] = team;
  *ctx = Ctx{qp};
  return 0;
}

}  // namespace

int ctx_create(long options, Ctx* ctx) {
  runtime::host_only("ctx_create", ", or ctx_create<Scope> from device code");
  std::lock_guard lock(runtime::api_mutex());
  return create("ctx_create", kTeamWorld, options, ctx);
}

int team_create_ctx(Team team, long options, Ctx* ctx) {
  runtime::host_only("team_create_ctx");
  std::lock_guard lock(runtime::api_mutex());
  return create("team_create_ctx", team, options, ctx);
}

int ctx_get_team(Ctx ctx, Team* team) {
  runtime::host_only("ctx_get_team");
  std::lock_guard lock(runtime::api_mutex());
  runtime::clear_error();
  constexpr const char* kApi = "ctx_get_team";
  if (!team) return report(kApi, "team is null");
  *team = kTeamInvalid;
  Runtime* rt = runtime::require(kApi);
  if (!rt) return -1;
  if (ctx == kCtxInvalid) return report(kApi, "ctx is kCtxInvalid");
  const int n = rt->settings.num_qp_per_pe;
  const std::string name = "context " + std::to_string(ctx.qp);
  if (!state::ctx_in_range(ctx, n) && ctx != kCtxDefault)
    return report(kApi, name + " is not a context of this job: " + created_range(n));
  if ((word_of(*rt, ctx.qp).load() & state::pool_bit(ctx.qp)) == 0) {
    return report(kApi, name + " is not live on PE " + std::to_string(rt->rank) +
                            " (destroyed, or never created)");
  }
  *team = rt->ctx_teams[ctx.qp];
  return 0;
}

int ctx_destroy(Ctx ctx) {
  runtime::host_only("ctx_destroy", ", or ctx_destroy<Scope> from device code");
  std::lock_guard lock(runtime::api_mutex());
  runtime::clear_error();
  constexpr const char* kApi = "ctx_destroy";
  Runtime* rt = runtime::require(kApi);
  if (!rt) return -1;
  if (ctx == kCtxInvalid) return 0;
  const std::string name = "context " + std::to_string(ctx.qp);
  if (ctx == kCtxDefault)
    return report(kApi, "the default context (queue pair 0) cannot be destroyed");
  const int n = rt->settings.num_qp_per_pe;
  if (!state::ctx_in_range(ctx, n))
    return report(kApi, name + " is not a context of this job: " + created_range(n));
  const uint64_t bit = state::pool_bit(ctx.qp);
  rt->ctx_teams[ctx.qp] = kTeamWorld;  // what a context device code creates on this QP has
  if ((word_of(*rt, ctx.qp).fetch_and(~bit) & bit) == 0) {
    return report(kApi, name + " is not live on PE " + std::to_string(rt->rank) +
                            " (already destroyed, or never created)");
  }
  return 0;
}

}  // namespace mori::shmem
