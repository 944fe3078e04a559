// ring_put: the 2-PE example. Every PE's warp puts a buffer into the next PE's symmetric buffer
// with put_nbi<Warp>, sets a flag with a signal, and waits for the previous PE's data; then every
// PE checks what it got.
//
//   mpirun -np 2 build/examples/ring_put
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "mori/host/launch.hpp"
#include "mori/shmem.hpp"
#include "mori/shmem/device_api.hpp"

namespace shmem = mori::shmem;

int main() {
  setenv("MORI_SHMEM_HEAP_SIZE", "64M", 0);
  if (shmem::init() != 0) {
    std::fprintf(stderr, "ring_put: %s\n", shmem::last_error());
    return 1;
  }
  const int me = shmem::my_pe(), n = shmem::n_pes();
  constexpr size_t kElems = 1 << 16;
  auto* inbox = static_cast<int*>(shmem::malloc(kElems * sizeof(int)));
  auto* signal = static_cast<uint64_t*>(shmem::malloc(sizeof(uint64_t)));
  auto* outbox = static_cast<int*>(shmem::malloc(kElems * sizeof(int)));
  if (!inbox || !signal || !outbox) {
    std::fprintf(stderr, "ring_put: %s\n", shmem::last_error());
    return 1;
  }
  *signal = 0;
  for (size_t i = 0; i < kElems; ++i) outbox[i] = me * 1000003 + static_cast<int>(i);
  shmem::barrier_all();

  // One warp of 64 lanes: all lanes copy, the signal follows the data, lane 0 waits for the
  // previous PE.
  const int next = (me + 1) % n;
  auto status = mori::host::launch({1}, {64}, [&] {
    shmem::put_signal_nbi<mori::Warp>(inbox, outbox, kElems, signal, 1, shmem::SIGNAL_ADD, next);
    if (mori::Warp::leader()) shmem::signal_wait_until(signal, shmem::CMP_GE, 1);
  });
  if (!status.ok()) {
    std::fprintf(stderr, "ring_put: PE %d: %s\n", me, status.message().c_str());
    return 1;
  }
  const int prev = (me + n - 1) % n;
  size_t wrong = 0;
  for (size_t i = 0; i < kElems; ++i) wrong += inbox[i] != prev * 1000003 + static_cast<int>(i);
  std::printf("ring_put: PE %d of %d received %zu ints from PE %d with put_signal_nbi<Warp>: %s\n",
              me, n, kElems, prev, wrong ? "MISMATCH" : "ok");
  shmem::barrier_all();
  shmem::free(outbox);
  shmem::free(signal);
  shmem::free(inbox);
  shmem::finalize();
  return wrong ? 1 : 0;
}
