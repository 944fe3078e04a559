// put_latency: putmem_nbi<Scope> to the partner PE and quiet, one after another (µs per pair).
//
//   mpirun -np 2 build/bench/put_latency -b 8 -e 64K [--scope warp] [--transport rdma]
#include "shmem_ops.hpp"

int main(int argc, char** argv) {
  using namespace mori::bench;
  return run_main(argc, argv, {"put_latency", Figure::kLatency, Moves::kPut}, rma<false, true>);
}
