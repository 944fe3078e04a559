// The hip backend's heap memory: one uncached device allocation per PE (hipExtMallocWithFlags),
// shared with same-node peers through IPC handles (hipIpcGetMemHandle / hipIpcOpenMemHandle).
#include <hip/hip_runtime_api.h>

#include <string>
#include <vector>

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
    for (size_t pe = 0; pe < peers_.size(); ++pe)
      if (peers_[pe] && peers_[pe] != base_) (void)hipIpcCloseMemHandle(peers_[pe]);
    if (base_) (void)hipFree(base_);
  }
  Status create(const HeapConfig& config, bootstrap::Bootstrap& boot,
                const std::vector<bool>& same_node) {
    size_ = config.size;
    void* p = nullptr;
    MORI_TRY(check(hipExtMallocWithFlags(&p, size_, kUncached), "hipExtMallocWithFlags"));
    base_ = static_cast<char*>(p);
    hipIpcMemHandle_t mine;
    MORI_TRY(check(hipIpcGetMemHandle(&mine, base_), "hipIpcGetMemHandle"));
    std::vector<hipIpcMemHandle_t> all(boot.size());
    MORI_TRY(boot.allgather(&mine, all.data(), sizeof mine));
    peers_.assign(boot.size(), nullptr);
    for (int pe = 0; pe < boot.size(); ++pe) {
      if (pe == boot.rank()) {
        peers_[pe] = base_;
      } else if (same_node[pe]) {
        void* peer = nullptr;
        MORI_TRY(check(hipIpcOpenMemHandle(&peer, all[pe], hipIpcMemLazyEnablePeerAccess),
                       ("hipIpcOpenMemHandle of PE " + std::to_string(pe)).c_str()));
        peers_[pe] = static_cast<char*>(peer);
      }
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
  char* base_ = nullptr;
  size_t size_ = 0;
  std::vector<char*> peers_;
};

}  // namespace

Status make_heap_memory(const HeapConfig& config, bootstrap::Bootstrap& boot,
                        const std::vector<bool>& same_node, std::unique_ptr<HeapMemory>* out) {
  if (config.mode == Mode::Vmm)
    return Status::error(
        "MORI_SHMEM_MODE=vmm_heap is not implemented on the hip backend yet; use static_heap");
  auto heap = std::make_unique<HipStaticHeap>();
  MORI_TRY(heap->create(config, boot, same_node));
  *out = std::move(heap);
  return {};
}

}  // namespace mori::heap
