// Which PEs share this node, and so can map each other's memory.
#pragma once

#include <vector>

#include "bootstrap/bootstrap.hpp"

namespace mori::runtime {

// Collective. Two PEs share a node when their host names and kernel boot IDs agree.
Status find_same_node(bootstrap::Bootstrap& boot, std::vector<bool>* same_node, int* local_rank);

}  // namespace mori::runtime
