// p_pingpong: half the round trip of p(int) to the partner PE and wait_until on this PE's copy.
//
//   mpirun -np 2 build/bench/p_pingpong [--iters 100000] [--transport rdma]
#include "shmem_ops.hpp"

int main(int argc, char** argv) {
  using namespace mori;
  using namespace mori::bench;
  return run_main(
      argc, argv, {"p_pingpong", Figure::kHalfTrip, Moves::kNothing, sizeof(int)},
      [](const Run& r) {
        return ping_pong(
            r,
            [&]<typename S>(const Lane& l, uint64_t v) {
              if (S::leader())
                shmem::p(reinterpret_cast<int*>(l.flag), static_cast<int>(v), r.peer, l.qp);
            },
            [](const Lane& l, uint64_t v) {
              shmem::wait_until(reinterpret_cast<int*>(l.flag), shmem::CMP_EQ, static_cast<int>(v));
            });
      });
}
