// DeviceTransport: what the device API (shmem/) requires of a transport, so that a family written
// once as a generic lambda over the transport type (dispatch.hpp) runs on any of them. Every member
// is static and takes the device call's name (`call`) for failure messages; targets are resolved
// symmetric locations (state/address.hpp).
//
//   kName                                      "p2p", "mlx5", ...
//   kAwaitsPosts                               whether put<S, true>, get<S, true> and
//                                              put_signal<S, true> exist and return complete
//                                              (blocking), in place of the call followed by the
//                                              scope's quiet
//   put<S>(call, dst, src, bytes)              scope S copies local src to the target
//   get<S>(call, dst, src, bytes)              scope S copies the target to local dst
//   iput<S>(call, dst, src, dst_stride, src_stride, nelems)
//   iget<S>(call, dst, src, dst_stride, src_stride, nelems)
//                                              scope S moves nelems elements of src's type, each
//                                              stride elements apart
//   p<T>(call, dst, value), g<T>(call, src)    one value
//   amo<T>(call, op, dst, value, compare)      any atomicType code; the old value for fetching ones
//   amo_nbi<T>(call, op, dst, value, compare, fetch)
//                                              a fetching code; the old value lands in local
//                                              `fetch` no later than the next quiet
//   put_signal<S>(call, dst, src, bytes, signal, value, op)
//                                              the data, then the signal update, in that order
//   quiet(pe, qp), fence(pe, qp)               pe < 0: every PE; qp < 0: every QP of the PE
#pragma once

#include <concepts>
#include <cstdint>

#include "mori/core/scope.hpp"
#include "mori/state/address.hpp"
#include "mori/state/amo.hpp"

namespace mori::transport {

template <typename T>
concept DeviceTransport =
    requires(const char* call, const state::RemoteTarget& target, const void* src, void* dst,
             uint64_t bytes, uint64_t value, state::atomicType op, int pe, int qp) {
      { T::kName } -> std::convertible_to<const char*>;
      { T::kAwaitsPosts } -> std::convertible_to<bool>;
      T::template put<Thread>(call, target, src, bytes);
      T::template put<Warp>(call, target, src, bytes);
      T::template put<Block>(call, target, src, bytes);
      T::template get<Thread>(call, dst, target, bytes);
      T::template iput<Warp>(call, target, static_cast<const uint64_t*>(src), bytes, bytes, bytes);
      T::template iget<Warp>(call, static_cast<uint64_t*>(dst), target, bytes, bytes, bytes);
      T::template p<uint64_t>(call, target, value);
      { T::template g<uint64_t>(call, target) } -> std::same_as<uint64_t>;
      { T::template amo<uint64_t>(call, op, target, value, value) } -> std::same_as<uint64_t>;
      { T::template amo<uint32_t>(call, op, target, 0u, 0u) } -> std::same_as<uint32_t>;
      T::template amo_nbi<uint64_t>(call, op, target, value, value, static_cast<uint64_t*>(dst));
      T::template put_signal<Thread>(call, target, src, bytes, target, value, op);
      T::quiet(pe, qp);
      T::fence(pe, qp);
    };

}  // namespace mori::transport
