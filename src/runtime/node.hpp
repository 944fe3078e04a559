// Which PEs share this node, and so can map each other's memory.
#pragma once

#include <vector>

#include "bootstrap/bootstrap.hpp"

namespace mori::runtime {

// Collective. Two PEs share a node when their host names and kernel boot IDs agree, and, when
// pes_per_node > 0 (MORI_SHMEM_PES_PER_NODE, for testing multi-node layouts on one machine), when
// their ranks also fall in the same group of pes_per_node consecutive ranks.
Status find_same_node(bootstrap::Bootstrap& boot, int pes_per_node, std::vector<bool>* same_node,
                      int* local_rank);

}  // namespace mori::runtime
