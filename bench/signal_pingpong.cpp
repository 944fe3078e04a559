// signal_pingpong: half the round trip of putmem_signal_nbi<Scope> (data, then SIGNAL_SET) to the
// partner PE and signal_wait_until on this PE's signal.
//
//   mpirun -np 2 build/bench/signal_pingpong -b 8 -e 64K [--scope warp] [--transport rdma]
#include "shmem_ops.hpp"

int main(int argc, char** argv) {
  using namespace mori;
  using namespace mori::bench;
  return run_main(argc, argv, {"signal_pingpong", Figure::kHalfTrip}, [](const Run& r) {
    return ping_pong(
        r,
        [&]<typename S>(const Lane& l, uint64_t v) {
          shmem::putmem_signal_nbi<S>(l.dst, l.src, r.size, l.flag, v, shmem::SIGNAL_SET, r.peer,
                                      l.qp);
        },
        [](const Lane& l, uint64_t v) { shmem::signal_wait_until(l.flag, shmem::CMP_EQ, v); });
  });
}
