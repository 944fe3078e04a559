// A user's kernel written from docs/device-api.md, including nothing but <mori/shmem.hpp>: each
// warp sends its slice to one PE with put_signal_nbi<Warp>, and thread 0 waits for the signal of
// every PE and reads a value with atomic_fetch. Compiled for gfx942 (device pass and host pass of
// -x hip) and for the host backend (tests/device/CMakeLists.txt): the umbrella header must give
// device code the whole device API on both.
#include <mori/shmem.hpp>

namespace shmem = mori::shmem;

MORI_KERNEL void umbrella_kernel(float* dst, const float* src, size_t n, uint64_t* signals,
                                 uint64_t* counter) {
  const int me = shmem::my_pe(), npes = shmem::n_pes();
  const int pe = (me + 1 + mori::platform::warp_id()) % npes;
  shmem::put_signal_nbi<mori::Warp>(dst + me * n, src, n, signals + me, 1, shmem::SIGNAL_ADD, pe);
  if (mori::platform::thread_rank() == 0) {
    for (int p = 0; p < npes; ++p) shmem::signal_wait_until(signals + p, shmem::CMP_GE, 1);
    counter[0] = shmem::atomic_fetch(counter + 1, me);
    shmem::quiet();
  }
}
