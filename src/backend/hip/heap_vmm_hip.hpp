// The hip backend's VMM heap (MORI_SHMEM_MODE=vmm_heap), made by make_heap_memory.
#pragma once

#include <memory>
#include <vector>

#include "heap/heap_memory.hpp"

namespace mori::heap {

Status make_hip_vmm_heap(const HeapConfig& config, bootstrap::Bootstrap& boot,
                         const std::vector<bool>& same_node, std::unique_ptr<HeapMemory>* out);

}  // namespace mori::heap
