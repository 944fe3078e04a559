// The hip backend's heap memory. The static heap (this file): one uncached device allocation per PE
// (hipExtMallocWithFlags), shared with same-node peers through IPC handles (hipIpcGetMemHandle /
// hipIpcOpenMemHandle). The VMM heap: heap_vmm_hip.cpp.
//
// HIP documents no alignment for an allocation beyond what any type needs, so the allocation is
// kBaseAlignment larger than the heap, and the heap starts at its first kBaseAlignment boundary
// (heap_memory.hpp): aligned by construction, whatever address HIP returns. An IPC handle names the
// whole allocation, so each PE also publishes how far into it its heap starts, and a peer's view
// of that heap begins the same distance into the peer's mapping.
#include <hip/hip_runtime_api.h>

#include <cstdint>
#include <string>
#include <vector>

#include "backend/hip/heap_vmm_hip.hpp"
#include "heap/heap_memory.hpp"

namespace mori::heap {

namespace {

// hipDeviceMallocUncached (hip_runtime_api.h of ROCm 5.3 and later); HIP 5.2 has only the
// fine-grained flag, which also keeps peers' and the NIC's writes coherent with the GPU.
#if defined(hipDeviceMallocUncached)
constexpr unsigned kUncached = hipDeviceMallocUncached;
#else
constexpr unsigned kUncached = hipDeviceMallocFinegrained;
#endif

Status check(hipError_t e, const char* what) {
  if (e == hipSuccess) return {};
  return Status::error(std::string(what) + " failed: " + hipGetErrorName(e) + " (" +
                       hipGetErrorString(e) + ")");
}

class HipStaticHeap final : public HeapMemory {
 public:
  ~HipStaticHeap() override {
    for (size_t pe = 0; pe < mappings_.size(); ++pe)
      if (mappings_[pe] && mappings_[pe] != allocation_) (void)hipIpcCloseMemHandle(mappings_[pe]);
    if (allocation_) (void)hipFree(allocation_);
  }
  Status create(const HeapConfig& config, bootstrap::Bootstrap& boot,
                const std::vector<bool>& same_node) {
    size_ = config.size;
    if (size_ + kBaseAlignment < size_)
      return Status::error("heap: a heap of " + std::to_string(size_) + " bytes is too large");
    void* p = nullptr;
    MORI_TRY(check(hipExtMallocWithFlags(&p, size_ + kBaseAlignment, kUncached),
                   "hipExtMallocWithFlags"));
    allocation_ = static_cast<char*>(p);
    const uintptr_t at = reinterpret_cast<uintptr_t>(allocation_);
    Published mine{{}, (kBaseAlignment - at % kBaseAlignment) % kBaseAlignment};
    base_ = allocation_ + mine.lead;
    MORI_TRY(check(hipIpcGetMemHandle(&mine.handle, allocation_), "hipIpcGetMemHandle"));
    std::vector<Published> all(boot.size());
    MORI_TRY(boot.allgather(&mine, all.data(), sizeof mine));
    mappings_.assign(boot.size(), nullptr);
    peers_.assign(boot.size(), nullptr);
    for (int pe = 0; pe < boot.size(); ++pe) {
      if (pe == boot.rank()) {
        mappings_[pe] = allocation_;
      } else if (same_node[pe]) {
        void* peer = nullptr;
        MORI_TRY(check(hipIpcOpenMemHandle(&peer, all[pe].handle, hipIpcMemLazyEnablePeerAccess),
                       ("hipIpcOpenMemHandle of PE " + std::to_string(pe)).c_str()));
        mappings_[pe] = static_cast<char*>(peer);
      }
      if (mappings_[pe]) peers_[pe] = mappings_[pe] + all[pe].lead;
    }
    return boot.barrier();
  }
  char* base() const override { return base_; }
  size_t size() const override { return size_; }
  char* peer_base(int pe) const override { return peers_[pe]; }
  size_t mapped() const override { return size_; }
  Status ensure_mapped(size_t end) override {
    if (end > size_)
      return Status::error(std::to_string(end) + " bytes do not fit the " + std::to_string(size_) +
                           "-byte heap");
    return {};
  }

 private:
  // What each PE tells the others about its heap.
  struct Published {
    hipIpcMemHandle_t handle;  // of the whole allocation
    uint64_t lead;             // bytes from the allocation's start to the heap's
  };

  char* allocation_ = nullptr;  // what hipExtMallocWithFlags returned; hipFree takes it
  char* base_ = nullptr;        // the heap: allocation_ + lead, on a kBaseAlignment boundary
  size_t size_ = 0;
  std::vector<char*> mappings_;  // per PE: its allocation's start in this process, or null
  std::vector<char*> peers_;     // per PE: its heap in this process, or null
};

}  // namespace

Status make_heap_memory(const HeapConfig& config, bootstrap::Bootstrap& boot,
                        const std::vector<bool>& same_node, std::unique_ptr<HeapMemory>* out) {
  if (config.mode == Mode::Vmm) return make_hip_vmm_heap(config, boot, same_node, out);
  auto heap = std::make_unique<HipStaticHeap>();
  MORI_TRY(heap->create(config, boot, same_node));
  *out = std::move(heap);
  return {};
}

}  // namespace mori::heap
