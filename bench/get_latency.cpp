// get_latency: getmem_nbi<Scope> from the partner PE and quiet, one after another (µs per pair).
//
//   mpirun -np 2 build/bench/get_latency -b 8 -e 64K [--scope warp] [--transport rdma]
#include "shmem_ops.hpp"

int main(int argc, char** argv) {
  using namespace mori::bench;
  return run_main(argc, argv, {"get_latency", Figure::kLatency, Moves::kGet}, rma<true, true>);
}
