// atomic_latency: atomic_fetch_add(int64_t) on the partner PE, one after another (µs each).
//
//   mpirun -np 2 build/bench/atomic_latency [--iters 100000] [--transport rdma]
#include "shmem_ops.hpp"

int main(int argc, char** argv) {
  using namespace mori::bench;
  return run_main(argc, argv,
                  {"atomic_latency", Figure::kLatency, Moves::kNothing, sizeof(int64_t)},
                  fetch_add_latency);
}
