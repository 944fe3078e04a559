// get_bw: bandwidth of windows of getmem_nbi<Scope> from the partner PE, completed by one quiet.
//
//   mpirun -np 2 build/bench/get_bw -b 8 -e 4M -f 2 [--scope warp] [--transport rdma] [--bidir]
//   mpirun -np 2 build/bench/get_bw -b 64K -e 4M --memcpy     # memcpy from the peer's mapping too
#include "shmem_ops.hpp"

int main(int argc, char** argv) {
  using namespace mori::bench;
  return run_main(argc, argv, {"get_bw", Figure::kBandwidth, Moves::kGet, 0, true},
                  rma<true, false>);
}
