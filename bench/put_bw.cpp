// put_bw: bandwidth of windows of putmem_nbi<Scope> to the partner PE, completed by one quiet.
//
//   mpirun -np 2 build/bench/put_bw -b 8 -e 4M -f 2 [--scope warp] [--transport rdma] [--bidir]
//   mpirun -np 2 build/bench/put_bw -b 64K -e 4M --memcpy     # memcpy to the peer's mapping too
//
// At 8 bytes over RDMA the Mops column is the put work requests posted per second per PE.
#include "shmem_ops.hpp"

int main(int argc, char** argv) {
  using namespace mori::bench;
  return run_main(argc, argv, {"put_bw", Figure::kBandwidth, Moves::kPut, 0, true},
                  rma<false, false>);
}
