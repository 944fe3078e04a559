// Ordering and completion: quiet and fence.
//
//   quiet()        every put, AMO and signal this thread issued, to any PE, is complete and visible
//   at its target. quiet(pe)      the same for the operations to `pe`;  quiet(pe, qp): those on one
//   of its queue pairs. fence()        operations to each PE are delivered in the order they were
//   issued, on every transport; it does
//                  not wait for completion.
//
// barrier_all (a collective across PEs) is in barrier.hpp.
#pragma once

#include "mori/shmem/checks.hpp"
#include "mori/transport/dispatch.hpp"

namespace mori::shmem {

MORI_DEVICE void quiet() {
  transport::for_each_transport([]<typename Tr>() { Tr::quiet(-1, -1); });
}
MORI_DEVICE void quiet(int pe) {
  detail::check_pe("quiet", pe);
  transport::with_transport("quiet", pe, [&]<typename Tr>() { Tr::quiet(pe, -1); });
}
MORI_DEVICE void quiet(int pe, int qp) {
  detail::check_pe("quiet", pe);
  transport::with_transport("quiet", pe, [&]<typename Tr>() { Tr::quiet(pe, qp); });
}

MORI_DEVICE void fence() {
  transport::for_each_transport([]<typename Tr>() { Tr::fence(-1, -1); });
}
MORI_DEVICE void fence(int pe) {
  detail::check_pe("fence", pe);
  transport::with_transport("fence", pe, [&]<typename Tr>() { Tr::fence(pe, -1); });
}
MORI_DEVICE void fence(int pe, int qp) {
  detail::check_pe("fence", pe);
  transport::with_transport("fence", pe, [&]<typename Tr>() { Tr::fence(pe, qp); });
}

}  // namespace mori::shmem
