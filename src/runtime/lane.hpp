// Whether a host API call comes from a kernel lane. On the host backend device code is host code,
// so a kernel can reach the host API's functions: where a name is shared with the device API
// (barrier_all, my_pe, putmem, ...) C++ picks the host function, which must then act as the
// device function does (as clang's host/device overloading picks it on the GPU); every other host
// call fails the launch, naming itself. On hip the host API cannot be called from device code.
#pragma once

#if defined(MORI_BACKEND_HOST)
#include "mori/platform/host_context.hpp"
#endif

namespace mori::runtime {

inline bool in_kernel_lane() {
#if defined(MORI_BACKEND_HOST)
  return platform::host::tls_context != nullptr;
#else
  return false;
#endif
}

}  // namespace mori::runtime
