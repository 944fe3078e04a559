// Transport dispatch: the transport to each PE is chosen at init and read from GpuStates at run
// time. A family is written once as a generic lambda over the transport type (any DeviceTransport,
// transport/concepts.hpp), and with_transport runs it with the right one:
//
//   with_transport("put_nbi", pe, [&]<typename Tr>() {
//     Tr::template put<S>("put_nbi", t, src, bytes);
//   });
//
// RDMA is Rdma<Provider> for the job's NIC family (GpuStates::nic). Each provider compiled in adds
// its instance of every family to each call site; the families compiled in are the build's
// (transport/providers.hpp: MLX5 alone unless CMake's MORI_RDMA_PROVIDERS names others).
#pragma once

#include <type_traits>

#include "mori/provider/bnxt.hpp"
#include "mori/provider/ionic.hpp"
#include "mori/provider/mlx5.hpp"
#include "mori/state/device_error.hpp"
#include "mori/transport/concepts.hpp"
#include "mori/transport/p2p.hpp"
#include "mori/transport/providers.hpp"
#include "mori/transport/rdma.hpp"
#include "mori/transport/sdma.hpp"

namespace mori::transport {

static_assert(DeviceTransport<P2p> && DeviceTransport<Sdma>);
#if MORI_RDMA_MLX5
static_assert(DeviceTransport<Rdma<provider::Mlx5>>);
#endif
#if MORI_RDMA_BNXT
static_assert(DeviceTransport<Rdma<provider::Bnxt>>);
#endif
#if MORI_RDMA_IONIC
static_assert(DeviceTransport<Rdma<provider::Ionic>>);
#endif

// The failure of a job whose NIC family this code was not built for.
MORI_DEVICE state::FailureInfo nic_not_built(int pe, state::Nic nic) {
  return {state::DeviceErrorCode::kNotBuilt, pe, 0, static_cast<uint64_t>(nic)};
}
MORI_DEVICE void say_nic_not_built(state::Message& m, const char* call, int pe, state::Nic nic) {
  m << call << ": PE " << pe << " is reached over RDMA, but NIC family " << static_cast<int>(nic)
    << " is not compiled into this code (MORI_RDMA_PROVIDERS)";
}

// Runs f<Rdma<Provider>>() for the job's NIC family. With one family compiled in (the default),
// a check of the job's family and a call; with several, a switch on it.
template <typename F>
MORI_DEVICE decltype(auto) with_nic(const char* call, int pe, [[maybe_unused]] F&& f) {
  const auto nic = static_cast<state::Nic>(state::gpu_states().nic);
  if constexpr (MORI_RDMA_MLX5 + MORI_RDMA_BNXT + MORI_RDMA_IONIC == 1) {
    using Only = Rdma<
        std::conditional_t<MORI_RDMA_MLX5, provider::Mlx5,
                           std::conditional_t<MORI_RDMA_BNXT, provider::Bnxt, provider::Ionic>>>;
    constexpr state::Nic kOnly = MORI_RDMA_MLX5   ? state::Nic::kMlx5
                                 : MORI_RDMA_BNXT ? state::Nic::kBnxt
                                                  : state::Nic::kIonic;
    state::fail_if(nic != kOnly, nic_not_built(pe, nic),
                   [&](state::Message& m) { say_nic_not_built(m, call, pe, nic); });
    return f.template operator()<Only>();
  } else {
    switch (nic) {
#if MORI_RDMA_MLX5
      case state::Nic::kMlx5:
        return f.template operator()<Rdma<provider::Mlx5>>();
#endif
#if MORI_RDMA_BNXT
      case state::Nic::kBnxt:
        return f.template operator()<Rdma<provider::Bnxt>>();
#endif
#if MORI_RDMA_IONIC
      case state::Nic::kIonic:
        return f.template operator()<Rdma<provider::Ionic>>();
#endif
      default:
        state::fail(nic_not_built(pe, nic),
                    [&](state::Message& m) { say_nic_not_built(m, call, pe, nic); });
    }
  }
}

template <typename F>
MORI_DEVICE decltype(auto) with_transport([[maybe_unused]] const char* call,
                                          [[maybe_unused]] int pe, F&& f) {
#if MORI_RDMA_MLX5 || MORI_RDMA_BNXT || MORI_RDMA_IONIC
  if (state::transport_to(pe) == state::Transport::kRdma) return with_nic(call, pe, f);
#endif
  // P2P, or SDMA, which is P2P until it is native (sdma.hpp): one call site serves both, so the
  // family is inlined once. P2p::address refuses a PE that neither reaches.
  return f.template operator()<Sdma>();
}

// Traps unless some transport reaches `pe` (the data calls find out in P2p::address; quiet and fence
// to one PE ask here).
MORI_DEVICE void check_reachable(const char* call, int pe) {
  const bool rdma = kAnyRdma && state::transport_to(pe) == state::Transport::kRdma;
  state::fail_if(!rdma && !P2p::serves(pe), {state::DeviceErrorCode::kNotReachable, pe},
                 [&](state::Message& m) { P2p::say_unreachable(m, call, pe); });
}

// Runs f<Transport>() once for each transport some PE uses (quiet and fence over every PE).
template <typename F>
MORI_DEVICE void for_each_transport(F&& f) {
  f.template operator()<P2p>();
  if constexpr (kAnyRdma) {
    if (state::gpu_states().rdma_endpoints != nullptr) with_nic("quiet/fence", -1, f);
  }
}

}  // namespace mori::transport
