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
// (transport/nic_families.hpp: MLX5 alone unless CMake's MORI_RDMA_PROVIDERS names others).
#pragma once

#include "mori/provider/bnxt.hpp"
#include "mori/provider/ionic.hpp"
#include "mori/provider/mlx5.hpp"
#include "mori/state/device_error.hpp"
#include "mori/transport/concepts.hpp"
#include "mori/transport/nic_families.hpp"
#include "mori/transport/p2p.hpp"
#include "mori/transport/rdma.hpp"
#include "mori/transport/sdma.hpp"

namespace mori::transport {

// The NIC families compiled in (transport/nic_families.hpp), each as its provider and the state::Nic
// that names it: listed once here, for the dispatch and the checks below.
template <typename P, state::Nic N>
struct Family {
  using Provider = P;
  static constexpr state::Nic kNic = N;
};
template <typename... Fs>
struct Families {};
template <bool kOn, typename F, typename L>
struct WithFamily {
  using type = L;
};
template <typename F, typename... Fs>
struct WithFamily<true, F, Families<Fs...>> {
  using type = Families<F, Fs...>;
};
using CompiledFamilies = typename WithFamily<
    MORI_RDMA_MLX5, Family<provider::Mlx5, state::Nic::kMlx5>,
    typename WithFamily<
        MORI_RDMA_BNXT, Family<provider::Bnxt, state::Nic::kBnxt>,
        typename WithFamily<MORI_RDMA_IONIC, Family<provider::Ionic, state::Nic::kIonic>,
                            Families<>>::type>::type>::type;

template <typename... Fs>
constexpr bool all_transports(Families<Fs...>) {
  return (DeviceTransport<Rdma<typename Fs::Provider>> && ... && true);
}
static_assert(DeviceTransport<P2p> && DeviceTransport<Sdma> && all_transports(CompiledFamilies{}));

// f<Rdma<Provider>>() for the family of `nic` among Fam, Rest...: the last one without a test,
// since the caller has checked that one of them is the job's (rdma_reaches).
template <typename F, typename Fam, typename... Rest>
MORI_DEVICE decltype(auto) run_family(state::Nic nic, F& f, Families<Fam, Rest...>) {
  if constexpr (sizeof...(Rest) > 0) {
    if (nic != Fam::kNic) return run_family(nic, f, Families<Rest...>{});
  }
  return f.template operator()<Rdma<typename Fam::Provider>>();
}

// kAmo: the dispatch of AMOs, over GpuStates::amo_transports, which routes the AMOs on memory that
// NIC atomics also update through the NIC where those are not atomic with P2P ones
// (state/gpu_states.hpp). One load from another table, so a P2P AMO's path is unchanged.
template <bool kAmo = false, typename F>
MORI_DEVICE decltype(auto) with_transport([[maybe_unused]] const char* call,
                                          [[maybe_unused]] int pe, F&& f) {
#if MORI_RDMA_MLX5 || MORI_RDMA_BNXT || MORI_RDMA_IONIC
  if (kAmo ? rdma_reaches_amo(pe) : rdma_reaches(pe))
    return run_family(static_cast<state::Nic>(state::gpu_states().nic), f, CompiledFamilies{});
#endif
  // P2P, or SDMA, which is P2P until it is native (sdma.hpp): one call site serves both, so the
  // family is inlined once. P2p::address refuses a PE that neither reaches, and an RDMA PE whose
  // NIC family this code does not carry (P2p::unreachable).
  return f.template operator()<Sdma>();
}
template <typename F>
MORI_DEVICE decltype(auto) with_amo_transport(const char* call, int pe, F&& f) {
  return with_transport<true>(call, pe, f);
}

// Traps unless some transport reaches `pe` (the data calls find out in P2p::address; quiet and
// fence to one PE ask here).
MORI_DEVICE void check_reachable(const char* call, int pe) {
  state::fail_if(
      !rdma_reaches(pe) && !P2p::serves(pe), [pe] { return P2p::unreachable(pe); },
      [&](state::Message& m) { P2p::say_unreachable(m, call, pe); });
}

// Runs f<Transport>() once for each transport some PE uses (quiet and fence over every PE). RDMA's
// visits only the PEs rdma_reaches (Rdma::for_each_endpoint): when the job's NIC family is not
// compiled in, none, as no call of this code has posted a WQE (each one failed), so there is
// nothing of the caller's to complete or order.
template <typename F>
MORI_DEVICE void for_each_transport(F&& f) {
  f.template operator()<P2p>();
  if constexpr (kAnyRdma) {
    if (state::gpu_states().rdma_endpoints != nullptr)
      run_family(static_cast<state::Nic>(state::gpu_states().nic), f, CompiledFamilies{});
  }
}

}  // namespace mori::transport
