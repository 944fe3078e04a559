// The software NIC's codec for rdma-core 44's libbnxt_re in static WQE mode (bnxt_static_codec.cpp).
#pragma once

#include "backend/host/softnic/codec.hpp"

namespace mori::emulated_kernel::bnxt {

// The endpoint's provider words this codec reads: the library's qp_handle, echoed in CQEs.
inline constexpr int kWordQpHandleLo = 0, kWordQpHandleHi = 1;

const softnic::Codec& static_codec();

}  // namespace mori::emulated_kernel::bnxt
