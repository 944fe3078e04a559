// Transport dispatch: the transport to each PE is chosen at init and read from GpuStates at run
// time. A family is written once as a generic lambda over the transport type, and with_transport
// runs it with the right one:
//
//   with_transport("put_nbi", pe, [&]<typename Tr>() { Tr::template put<S>("put_nbi", t, src,
//   bytes); });
#pragma once

#include "mori/shmem/device_error.hpp"
#include "mori/transport/p2p.hpp"
#include "mori/transport/rdma_stub.hpp"
#include "mori/transport/sdma.hpp"

namespace mori::transport {

using Rdma = RdmaStub;

template <typename F>
MORI_DEVICE decltype(auto) with_transport(const char* call, int pe, F&& f) {
  switch (shmem::transport_to(pe)) {
    case shmem::Transport::kP2P:
    // SDMA is P2P until it is native (sdma.hpp). One call site serves both, so the family is
    // inlined once, not once per case.
    case shmem::Transport::kSdma:
      return f.template operator()<Sdma>();
    case shmem::Transport::kRdma:
      return f.template operator()<Rdma>();
    default: {
      shmem::fail({shmem::DeviceErrorCode::kNotReachable, pe}, [&](shmem::Message& m) {
        m << call << ": PE " << pe << " is unreachable from PE " << shmem::detail::this_pe();
      });
    }
  }
}

// Runs f<Transport>() once for each transport some PE uses (quiet and fence over every PE).
template <typename F>
MORI_DEVICE void for_each_transport(F&& f) {
  f.template operator()<P2p>();
  f.template operator()<Rdma>();
}

}  // namespace mori::transport
