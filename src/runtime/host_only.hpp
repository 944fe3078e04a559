// The host API's entries called from a kernel lane (host backend, runtime/lane.hpp). On the GPU,
// clang's host/device overloading sends a kernel's barrier_all() or my_pe() to the device function;
// on the host backend C++ prefers the host API's non-template function. So:
//   - an entry whose name the device API shares (barrier_all, my_pe, n_pes, team_my_pe,
//     team_n_pes, team_translate_pe, ptr_p2p; putmem, getmem, p, g in host_rma.cpp) starts with
//     MORI_LANE_FORM, which in a lane returns what the device form returns (namespace lane,
//     host_only.cpp and host_rma.cpp);
//   - every other entry starts with host_only(), which in a lane fails the launch, naming the call.
#pragma once

#include <cstdint>

#include "mori/state/team.hpp"
#include "runtime/lane.hpp"

namespace mori::runtime {

// In a kernel lane: traps, and so fails the launch, with "<api>: a host API call, made from a
// kernel lane (call it from host code<hint>)". Elsewhere (and on the hip backend) does nothing.
void host_only(const char* api, const char* hint = "");

// The device forms of the shared names, as a kernel lane runs them (host backend only).
namespace lane {
int barrier_all();
int my_pe();
int n_pes();
int team_my_pe(state::Team team);
int team_n_pes(state::Team team);
int team_translate_pe(state::Team src_team, int src_pe, state::Team dest_team);
uint64_t ptr_p2p(uint64_t ptr, int my_pe, int dest_pe);
}  // namespace lane

}  // namespace mori::runtime

// At the top of a shared-name entry: in a kernel lane, returns lane::<call> instead.
#if defined(MORI_BACKEND_HOST)
#define MORI_LANE_FORM(call) \
  if (::mori::runtime::in_kernel_lane()) return ::mori::runtime::lane::call
#else
#define MORI_LANE_FORM(call) static_cast<void>(0)
#endif
