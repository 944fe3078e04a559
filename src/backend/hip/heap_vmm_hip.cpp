// The hip backend's VMM heap: every PE reserves one range of device address space per same-node
// PE (hipMemAddressReserve), and backs its own heap chunk by chunk with physical allocations
// (hipMemCreate) that can be exported as POSIX file descriptors. Each growth is collective: every
// PE creates the same chunks, maps them into its own range (hipMemMap, hipMemSetAccess), and
// publishes (pid, descriptor) of each through the bootstrap; each same-node peer duplicates the
// descriptor with pidfd_getfd (backend/common/peer_fd.hpp, as the host backend takes its peers'
// shareable memfds), imports it (hipMemImportFromShareableHandle) and maps it at the same offset of
// its range for that PE. A peer's heap thus looks like its owner's, at another base.
#include "backend/hip/heap_vmm_hip.hpp"

#include <hip/hip_runtime_api.h>
#include <unistd.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "backend/common/peer_fd.hpp"

namespace mori::heap {

namespace {

Status check(hipError_t e, const std::string& what) {
  if (e == hipSuccess) return {};
  return Status::error("heap: " + what + " failed: " + hipGetErrorName(e));
}

// What a PE publishes of one new chunk.
struct Published {
  int32_t pid;
  int32_t fd;  // the exported descriptor, open in that process until every peer has its copy
};

class HipVmmHeap final : public HeapMemory {
 public:
  HipVmmHeap(const HeapConfig& config, bootstrap::Bootstrap& boot,
             const std::vector<bool>& same_node)
      : config_(config), boot_(boot), same_node_(same_node) {}
  ~HipVmmHeap() override;
  Status init();
  char* base() const override { return views_[boot_.rank()]; }
  size_t size() const override { return config_.size; }
  char* peer_base(int pe) const override {
    return pe >= 0 && pe < boot_.size() ? views_[pe] : nullptr;
  }
  size_t mapped() const override { return mapped_; }
  Status ensure_mapped(size_t end) override;

 private:
  Status map_chunk(int pe, size_t index, hipMemGenericAllocationHandle_t handle);
  void unmap_chunk(int pe, size_t index);
  Status grow(size_t end);
  Status import_round(size_t first, const std::vector<Published>& all, size_t count);
  Status agree(Status local);

  HeapConfig config_;
  bootstrap::Bootstrap& boot_;
  std::vector<bool> same_node_;
  int device_ = 0;
  size_t span_ = 0;              // bytes of each reservation
  std::vector<char*> reserved_;  // per PE: what hipMemAddressReserve returned, or null
  std::vector<char*> views_;     // per PE: its heap in this process, on kBaseAlignment
  // Per PE: its mapped chunks by index (a retried growth maps an index again).
  std::vector<std::map<size_t, hipMemGenericAllocationHandle_t>> chunks_;
  size_t mapped_ = 0;
};

HipVmmHeap::~HipVmmHeap() {
  for (size_t pe = 0; pe < views_.size(); ++pe) {
    for (const auto& [index, handle] : chunks_[pe]) unmap_chunk(static_cast<int>(pe), index);
    if (reserved_[pe]) (void)hipMemAddressFree(reserved_[pe], span_);
  }
}

Status HipVmmHeap::init() {
  const int n = boot_.size();
  reserved_.assign(n, nullptr);
  views_.assign(n, nullptr);
  chunks_.assign(n, {});
  Status local = check(hipGetDevice(&device_), "hipGetDevice");
  hipMemAllocationProp prop{};
  prop.type = hipMemAllocationTypePinned;
  prop.requestedHandleType = hipMemHandleTypePosixFileDescriptor;
  prop.location = {hipMemLocationTypeDevice, device_};
  size_t granularity = 0;
  if (local.ok())
    local = check(
        hipMemGetAllocationGranularity(&granularity, &prop, hipMemAllocationGranularityRecommended),
        "hipMemGetAllocationGranularity");
  if (local.ok() && (config_.chunk_size == 0 || config_.chunk_size % granularity != 0)) {
    local = Status::error("heap: the VMM chunk size " + std::to_string(config_.chunk_size) +
                          " is not a multiple of the device's allocation granularity " +
                          std::to_string(granularity) + " (MORI_SHMEM_VMM_CHUNK_SIZE)");
  }
  if (local.ok() && config_.size % config_.chunk_size != 0) {
    local = Status::error("heap: the heap size " + std::to_string(config_.size) +
                          " is not a multiple of the VMM chunk size " +
                          std::to_string(config_.chunk_size));
  }
  // The range is kBaseAlignment larger than the heap, and the view starts at its first
  // kBaseAlignment boundary, whatever alignment HIP honours (heap_memory.hpp).
  span_ = config_.size + kBaseAlignment;
  for (int pe = 0; pe < n && local.ok(); ++pe) {
    if (!same_node_[pe]) continue;
    void* p = nullptr;
    local = check(hipMemAddressReserve(&p, span_, kBaseAlignment, nullptr, 0),
                  "hipMemAddressReserve of " + std::to_string(span_) + " bytes");
    if (!local.ok()) break;
    reserved_[pe] = static_cast<char*>(p);
    const auto at = reinterpret_cast<uintptr_t>(p);
    views_[pe] = reserved_[pe] + (kBaseAlignment - at % kBaseAlignment) % kBaseAlignment;
  }
  return agree(std::move(local));
}

Status HipVmmHeap::ensure_mapped(size_t end) {
  if (end > config_.size) {
    return Status::error("heap: cannot map " + std::to_string(end) + " bytes: the heap is " +
                         std::to_string(config_.size) + " bytes");
  }
  if (end <= mapped_) return {};
  const size_t chunk = config_.chunk_size;
  return grow((end + chunk - 1) / chunk * chunk);
}

void HipVmmHeap::unmap_chunk(int pe, size_t index) {
  (void)hipMemUnmap(views_[pe] + index * config_.chunk_size, config_.chunk_size);
  (void)hipMemRelease(chunks_[pe][index]);
}

Status HipVmmHeap::map_chunk(int pe, size_t index, hipMemGenericAllocationHandle_t handle) {
  // What a failed growth left at this index goes before the retry maps it again.
  if (chunks_[pe].count(index)) {
    unmap_chunk(pe, index);
    chunks_[pe].erase(index);
  }
  char* at = views_[pe] + index * config_.chunk_size;
  const std::string what = "chunk " + std::to_string(index) + " of rank " + std::to_string(pe);
  MORI_TRY(check(hipMemMap(at, config_.chunk_size, 0, handle, 0), "hipMemMap of " + what));
  hipMemAccessDesc access{};
  access.location = {hipMemLocationTypeDevice, device_};
  access.flags = hipMemAccessFlagsProtReadWrite;
  Status s =
      check(hipMemSetAccess(at, config_.chunk_size, &access, 1), "hipMemSetAccess of " + what);
  if (!s.ok()) {
    (void)hipMemUnmap(at, config_.chunk_size);
    return s;
  }
  chunks_[pe][index] = handle;
  return {};
}

Status HipVmmHeap::grow(size_t end) {
  const size_t first = mapped_ / config_.chunk_size;
  const size_t count = end / config_.chunk_size - first;
  const int rank = boot_.rank();
  std::vector<Published> mine(count, Published{static_cast<int32_t>(getpid()), -1});
  hipMemAllocationProp prop{};
  prop.type = hipMemAllocationTypePinned;
  prop.requestedHandleType = hipMemHandleTypePosixFileDescriptor;
  prop.location = {hipMemLocationTypeDevice, device_};
  Status local;
  for (size_t i = 0; i < count && local.ok(); ++i) {
    hipMemGenericAllocationHandle_t h = nullptr;
    local = check(hipMemCreate(&h, config_.chunk_size, &prop, 0), "hipMemCreate");
    if (!local.ok()) break;
    local = map_chunk(rank, first + i, h);
    if (!local.ok()) {
      (void)hipMemRelease(h);
      break;
    }
    local =
        check(hipMemExportToShareableHandle(&mine[i].fd, h, hipMemHandleTypePosixFileDescriptor, 0),
              "hipMemExportToShareableHandle");
  }
  Status agreed = agree(std::move(local));
  std::vector<Published> all(count * boot_.size());
  if (agreed.ok() && count)
    agreed = boot_.allgather(mine.data(), all.data(), count * sizeof mine[0]);
  // Every PE imports before any closes the descriptors it exported.
  if (agreed.ok()) agreed = agree(import_round(first, all, count));
  for (const Published& p : mine)
    if (p.fd >= 0) close(p.fd);
  MORI_TRY(agreed);
  mapped_ = end;
  return {};
}

Status HipVmmHeap::import_round(size_t first, const std::vector<Published>& all, size_t count) {
  for (int pe = 0; pe < boot_.size(); ++pe) {
    if (pe == boot_.rank() || !same_node_[pe]) continue;
    for (size_t i = 0; i < count; ++i) {
      const Published& p = all[pe * count + i];
      const std::string what =
          "heap: chunk " + std::to_string(first + i) + " of rank " + std::to_string(pe);
      int fd = -1;
      MORI_TRY(backend::dup_peer_fd(p.pid, p.fd, what, &fd));
      hipMemGenericAllocationHandle_t h = nullptr;
      // ROCm reads the descriptor through the pointer (rocdevice.cpp ImportShareableHSAHandle).
      Status s =
          check(hipMemImportFromShareableHandle(&h, &fd, hipMemHandleTypePosixFileDescriptor),
                "hipMemImportFromShareableHandle of " + what.substr(6));
      close(fd);
      if (s.ok()) s = map_chunk(pe, first + i, h);
      if (!s.ok()) {
        if (h) (void)hipMemRelease(h);
        return s;
      }
    }
  }
  return {};
}

// Collective: all PEs fail together, each naming its own cause or the ranks that failed.
Status HipVmmHeap::agree(Status local) {
  const int32_t failed = local.ok() ? 0 : 1;
  std::vector<int32_t> all(boot_.size());
  MORI_TRY(boot_.allgather(&failed, all.data(), sizeof failed));
  if (!local.ok()) return local;
  std::string culprits;
  for (int pe = 0; pe < boot_.size(); ++pe)
    if (all[pe]) culprits += (culprits.empty() ? "" : ", ") + std::to_string(pe);
  if (culprits.empty()) return {};
  return Status::error("heap: rank(s) " + culprits + " failed to set up their VMM heap memory");
}

}  // namespace

Status make_hip_vmm_heap(const HeapConfig& config, bootstrap::Bootstrap& boot,
                         const std::vector<bool>& same_node, std::unique_ptr<HeapMemory>* out) {
  auto heap = std::make_unique<HipVmmHeap>(config, boot, same_node);
  MORI_TRY(heap->init());
  *out = std::move(heap);
  return {};
}

}  // namespace mori::heap
