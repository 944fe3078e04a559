#include "runtime/host_only.hpp"

#include <string>

#if defined(MORI_BACKEND_HOST)
#include "mori/platform.hpp"
#include "mori/shmem/barrier.hpp"
#include "mori/shmem/query.hpp"
#include "mori/shmem/team.hpp"
#endif

namespace mori::runtime {

void host_only(const char* api, const char* hint) {
#if defined(MORI_BACKEND_HOST)
  if (!in_kernel_lane()) return;
  const std::string message = std::string(api) +
                              ": a host API call, made from a kernel lane (call it from host code" +
                              hint + ")";
  platform::trap(message.c_str());
#else
  (void)api;
  (void)hint;
#endif
}

#if defined(MORI_BACKEND_HOST)
namespace lane {

// A lane's barrier_all is one thread's device barrier: the device state's counts and deadline
// (MORI_SHMEM_TIMEOUT_MS), not the bootstrap's barrier, which no timeout covers.
int barrier_all() {
  shmem::barrier_all<Thread>();
  return 0;
}
int my_pe() { return state::this_pe(); }
int n_pes() { return state::pe_count(); }
int team_my_pe(state::Team team) { return shmem::detail::device_team_my_pe(team); }
int team_n_pes(state::Team team) { return shmem::detail::device_team_n_pes(team); }
int team_translate_pe(state::Team src_team, int src_pe, state::Team dest_team) {
  return shmem::detail::device_team_translate_pe(src_team, src_pe, dest_team);
}
uint64_t ptr_p2p(uint64_t ptr, int my_pe, int dest_pe) {
  return shmem::detail::device_ptr_p2p(ptr, my_pe, dest_pe);
}

}  // namespace lane
#endif

}  // namespace mori::runtime
