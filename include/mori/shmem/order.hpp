// Ordering and completion: quiet and fence.
//
//   quiet()          every put, AMO and signal this thread issued, to any PE, is complete and
//                    visible at its target
//   quiet(pe)        the same for the operations to `pe`
//   quiet(pe, qp)    those on one of its queue pairs
//   fence()          operations to each PE are delivered in the order they were issued, on every
//                    transport; it does not wait for completion. Over RDMA the order holds per
//                    queue pair: operations to one PE on different QPs are ordered only by quiet
//   fence(pe), fence(pe, qp)   the same for one PE, or one of its QPs
//
// barrier_all (a collective across PEs) is in barrier.hpp.
#pragma once

#include <type_traits>

#include "mori/shmem/checks.hpp"
#include "mori/transport/dispatch.hpp"

namespace mori::shmem {

namespace detail {
// quiet (kQuiet) or fence on every transport (kAllPes), or on PE `pe`'s transport: one QP (qp >= 0)
// or all of the PE's QPs (qp < 0).
template <bool kQuiet, bool kAllPes>
MORI_DEVICE void order(const char* call, int pe, int qp) {
  auto run = [&]<typename Tr>() {
    if constexpr (kQuiet)
      Tr::quiet(pe, qp);
    else
      Tr::fence(pe, qp);
  };
  if constexpr (kAllPes) {
    transport::for_each_transport(run);
  } else {
    check_pe(call, pe);
    transport::check_reachable(call, pe);
    // Over the AMO table, which differs from the data table only for a PE whose AMOs go over
    // RDMA while its data goes over P2P (state/gpu_states.hpp). For such a PE: the P2P fence for
    // the data, and a quiet of its QPs for the AMOs (a fence too, since a NIC's fence flag orders
    // only its own WQEs, not a later P2P store after an AMO).
    transport::with_amo_transport(call, pe, [&]<typename Tr>() {
      if constexpr (std::is_same_v<Tr, transport::Sdma>) {
        run.template operator()<Tr>();
      } else {
        // One call of Tr::quiet per family, routed or not: it is most of quiet(pe), and two
        // inlined copies would double it.
        const bool routed = !transport::rdma_reaches(pe);
        if (routed) transport::P2p::quiet(pe, qp);
        if (kQuiet || routed)
          Tr::quiet(pe, qp);
        else
          Tr::fence(pe, qp);
      }
    });
  }
}
}  // namespace detail

MORI_DEVICE void quiet() { detail::order<true, true>("quiet", -1, -1); }
MORI_DEVICE void quiet(int pe) { detail::order<true, false>("quiet", pe, -1); }
MORI_DEVICE void quiet(int pe, int qp) { detail::order<true, false>("quiet", pe, qp); }
MORI_DEVICE void fence() { detail::order<false, true>("fence", -1, -1); }
MORI_DEVICE void fence(int pe) { detail::order<false, false>("fence", pe, -1); }
MORI_DEVICE void fence(int pe, int qp) { detail::order<false, false>("fence", pe, qp); }

}  // namespace mori::shmem
