// Where the queues live (reviews/2026-12-01-bringup.md, B5; docs/rdma-hardware.md, "Where the
// queues live"). With VerbsConfig::queue_memory set, create_queues first makes every queue pair on
// the hook's memory (uncached VRAM on the hip backend):
//   MLX5, Ionic  a parent domain over the PD (ibv_alloc_parent_domain(3), with
//                IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS | _PD_CONTEXT), on which the CQs and QPs
//                are created; the provider calls its allocators for each ring and doorbell record
//                and its free when it destroys them. rdma-core 44 providers/mlx5: buf.c
//                mlx5_alloc_buf_custom (QP and CQ rings: MLX5DV_RES_TYPE_QP, _CQ, aligned to the
//                page or, for a QP, mlx5_set_custom_qp_alignment), dbrec.c mlx5_alloc_dbrec (8
//                bytes, 8-aligned, MLX5DV_RES_TYPE_DBR). AMD's ionic provider (rdma-core 37bd52f7
//                providers/ionic/ionic_queue.c ionic_queue_map: IONIC_PD_TAG_CQ, _SQ, _RQ, aligned
//                to the page or the entry). Other types get IBV_ALLOCATOR_USE_DEFAULT. rocSHMEM
//                (src/gpu_ib/connection.cpp) and ROCm/mori (ionic.cpp) do the same.
//   BNXT         the umems (verbs_export_bnxt.cpp), as ROCm/mori's bnxt.cpp allocates them.
// Memory from the hook is the device's already: map() passes it through, unregistered.
//
// If that fails (a parent domain the provider lacks, a hook that gives no memory, or a kernel that
// cannot pin VRAM for a user queue: ib_umem_get fails without a peer-memory module), what was made
// is destroyed, the reason kept for the log (queue_memory_fallback), and the queues are made again
// on host memory, as register_memory falls back from dma-buf (memory_registration.cpp).
#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>
#include <rdma/ib_user_ioctl_verbs.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "rdma/verbs_network.hpp"

namespace mori::rdma {
namespace {

// AMD's ionic provider's resource tags (rdma-core 37bd52f7 providers/ionic/ionic.h: IONIC_PD_TAG
// = RDMA_DRIVER_IONIC << 32, | 1 CQ, | 2 SQ, | 3 RQ). RDMA_DRIVER_IONIC is 21 in that tree's
// kernel-headers/rdma/ib_user_ioctl_verbs.h, two after RDMA_DRIVER_ERDMA (MANA between), which
// rdma-core 44's header ends with.
constexpr uint64_t kIonicDriverId = 21;
static_assert(RDMA_DRIVER_ERDMA + 2 == kIonicDriverId);
constexpr uint64_t kIonicTagCq = kIonicDriverId << 32 | 1, kIonicTagSq = kIonicDriverId << 32 | 2,
                   kIonicTagRq = kIonicDriverId << 32 | 3;

bool queue_type(VerbsNetwork::Family family, uint64_t type) {
  if (family == VerbsNetwork::Family::kIonic)
    return type == kIonicTagCq || type == kIonicTagSq || type == kIonicTagRq;
  return type == MLX5DV_RES_TYPE_QP || type == MLX5DV_RES_TYPE_CQ || type == MLX5DV_RES_TYPE_DBR;
}

}  // namespace

Status VerbsNetwork::create_queues() {
  if (config_.queue_memory) {
    use_queue_memory_ = true;
    Status s = open_queue_domain();
    if (s.ok()) s = create_all_queues();
    use_queue_memory_ = false;
    if (s.ok()) {
      queues_in_device_memory_ = true;
      return {};
    }
    queue_memory_fallback_ = s.message();
    if (!domain_refusal_.empty()) queue_memory_fallback_ += "; " + domain_refusal_;
    destroy_queues();
  }
  return create_all_queues();
}

Status VerbsNetwork::open_queue_domain() {
  if (family_ == Family::kBnxt) return {};  // its umems come from the hook (make_umem)
  ibv_parent_domain_init_attr attr{};
  attr.pd = pd_;
  attr.comp_mask = IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS | IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT;
  attr.alloc = domain_alloc;
  attr.free = domain_free;
  attr.pd_context = this;
  errno = 0;
  // Ionic: the parent domain copies pd_'s queue placement (ionic_alloc_parent_domain), which
  // open_ionic has already taken out of the controller memory bar.
  queue_pd_ = ibv_alloc_parent_domain(context_, &attr);
  if (!queue_pd_)
    return Status::error("rdma: ibv_alloc_parent_domain(" + device_name_ +
                         ") failed: " + std::strerror(errno ? errno : EIO));
  return {};
}

// QPs before CQs, then the parent domain (the provider refuses it with EBUSY while a CQ or QP
// holds it: providers/mlx5/verbs.c mlx5_dealloc_parent_domain), then whatever the hook still has.
void VerbsNetwork::destroy_queues() {
  if (family_ == Family::kBnxt)
    for (Queue& q : queues_) destroy_bnxt_queue(&q);
  for (Queue& q : queues_)
    if (q.qp) ibv_destroy_qp(q.qp);
  for (Queue& q : queues_)
    if (q.cq) ibv_destroy_cq(q.cq);
  queues_.clear();
  if (queue_pd_) ibv_dealloc_pd(queue_pd_);
  queue_pd_ = nullptr;
  while (!queue_allocs_.empty()) free_queue_memory(const_cast<void*>(queue_allocs_.begin()->first));
}

Status VerbsNetwork::alloc_queue_memory(size_t bytes, size_t align, const std::string& what,
                                        void** mem) {
  *mem = config_.queue_memory.alloc(bytes, align);
  if (!*mem)
    return Status::error("rdma: the queue memory hook gave no memory for " + std::to_string(bytes) +
                         " bytes" + what);
  queue_allocs_[*mem] = bytes;
  return {};
}

void VerbsNetwork::free_queue_memory(void* mem) {
  if (queue_allocs_.erase(mem)) config_.queue_memory.free(mem);
}

bool VerbsNetwork::from_queue_memory(const void* p, size_t bytes) const {
  auto it = queue_allocs_.upper_bound(p);
  if (it == queue_allocs_.begin()) return false;
  --it;
  const auto* base = static_cast<const uint8_t*>(it->first);
  const auto* q = static_cast<const uint8_t*>(p);
  return q >= base && q + bytes <= base + it->second;
}

void* VerbsNetwork::domain_alloc(ibv_pd*, void* self, size_t bytes, size_t align, uint64_t type) {
  auto* net = static_cast<VerbsNetwork*>(self);
  if (!queue_type(net->family_, type)) return IBV_ALLOCATOR_USE_DEFAULT;
  void* mem = nullptr;
  // Null makes the provider fail the creation (ENOMEM), which create_queues turns into the
  // fallback; the reason is kept, as the provider's errno cannot carry it.
  const Status s = net->alloc_queue_memory(bytes, align, "", &mem);
  if (!s.ok()) net->domain_refusal_ = s.message().substr(s.message().find(' ') + 1);
  return mem;
}

void VerbsNetwork::domain_free(ibv_pd*, void* self, void* mem, uint64_t) {
  static_cast<VerbsNetwork*>(self)->free_queue_memory(mem);
}

}  // namespace mori::rdma
