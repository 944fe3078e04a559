// The symmetric heap's host API: malloc, malloc_align, ext_malloc_with_flags, free, and ptr_p2p.
//
// Allocation is collective and deterministic, so every PE gets the same offset. Like OpenSHMEM's
// shmem_malloc and shmem_free, each call ends in a barrier: no PE uses a new object before every PE
// has it, and no PE reuses freed memory that a peer may still be writing. With
// MORI_SHMEM_CHECK_SYMMETRY=1 (the default in debug builds) the PEs also compare what they asked
// for, and a PE that allocates in another order is reported by name.
//
// The returned address, not just the offset, is aligned as asked: the allocator aligns base +
// offset, and every PE's base is a multiple of kMaxAlignment (heap_memory.hpp), so the same offset
// is aligned on every PE. Larger alignments are refused, naming the limit.
#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "mori/shmem/host_api.hpp"
#include "runtime/error.hpp"
#include "runtime/runtime.hpp"

namespace mori::shmem {

using runtime::report;
using runtime::require;
using runtime::Runtime;

namespace {

constexpr size_t kDefaultAlignment = 256;
static_assert(kMaxAlignment == heap::kBaseAlignment,
              "the documented limit of malloc_align is what every heap base is aligned to");

// What one PE did in one symmetric call, compared across PEs when symmetry checks are on.
struct Call {
  uint64_t sequence;
  uint64_t op;  // 1 allocate, 2 release
  uint64_t size;
  uint64_t alignment;
  uint64_t offset;  // the offset returned or released; ~0 when the local call failed
};

std::string describe(const Call& c) {
  char text[160];
  if (c.op == 1) {
    std::snprintf(text, sizeof text,
                  "allocation #%" PRIu64 " of %" PRIu64 " bytes (alignment %" PRIu64 ")",
                  c.sequence, c.size, c.alignment);
  } else {
    std::snprintf(text, sizeof text, "call #%" PRIu64 " freeing offset 0x%" PRIx64, c.sequence,
                  c.offset);
  }
  return text;
}

// Collective. Succeeds when every PE made the same call with the same outcome.
Status agree(Runtime& rt, const Call& mine) {
  std::vector<Call> all(rt.n_pes);
  MORI_TRY(rt.boot->allgather(&mine, all.data(), sizeof(Call)));
  for (int pe = 0; pe < rt.n_pes; ++pe) {
    const Call& c = all[pe];
    if (c.op != mine.op || c.size != mine.size || c.alignment != mine.alignment ||
        (c.op == 2 && c.offset != mine.offset)) {
      return Status::error("PE " + std::to_string(pe) + " made " + describe(c) + " while PE " +
                           std::to_string(rt.rank) + " made " + describe(mine) +
                           ": every PE must allocate and free in the same order");
    }
  }
  // When this PE's own call failed, its own reason is the one to report (the caller does).
  for (int pe = 0; pe < rt.n_pes; ++pe)
    if (all[pe].offset == ~uint64_t{0} && mine.offset != ~uint64_t{0})
      return Status::error("it failed on PE " + std::to_string(pe));
  return {};
}

void* allocate(const char* api, size_t alignment, size_t size) {
  std::lock_guard lock(runtime::api_mutex());
  runtime::clear_error();
  Runtime* rt = require(api);
  if (!rt) return nullptr;
  if (size == 0) return nullptr;  // OpenSHMEM: a zero size allocates nothing and returns null
  if (Status s = rt->allocator->check_alignment(alignment); !s.ok()) {
    report(api, s);
    return nullptr;
  }
  if (alignment < kDefaultAlignment) alignment = kDefaultAlignment;
  Call call{++rt->allocations, 1, size, alignment, ~uint64_t{0}};
  size_t offset = 0;
  Status local = rt->allocator->allocate(size, alignment, &offset);
  if (local.ok()) call.offset = offset;
  Status s = rt->settings.check_symmetry ? agree(*rt, call) : Status{};
  if (s.ok() && !local.ok()) s = local;
  if (s.ok()) s = rt->memory->ensure_mapped(rt->allocator->high_water());
  if (s.ok()) s = rt->boot->barrier();
  if (!s.ok()) {
    if (local.ok()) (void)rt->allocator->release(offset);  // lose nothing: the heap is as it was
    report(api, s);
    return nullptr;
  }
  return rt->memory->base() + offset;
}

}  // namespace

void* malloc(size_t size) { return allocate("malloc", kDefaultAlignment, size); }

void* malloc_align(size_t alignment, size_t size) {
  return allocate("malloc_align", alignment, size);
}

void* ext_malloc_with_flags(size_t size, unsigned flags) {
  if (flags != 0) {
    runtime::clear_error();
    report("ext_malloc_with_flags",
           "flags " + std::to_string(flags) + " are not supported (use 0)");
    return nullptr;
  }
  return allocate("ext_malloc_with_flags", kDefaultAlignment, size);
}

int free(void* ptr) {
  std::lock_guard lock(runtime::api_mutex());
  runtime::clear_error();
  Runtime* rt = require("free");
  if (!rt) return -1;
  if (!ptr) return 0;
  const char* base = rt->memory->base();
  const char* p = static_cast<const char*>(ptr);
  char where[64];
  std::snprintf(where, sizeof where, "%p", ptr);
  if (p < base || p >= base + rt->memory->size()) {
    char heap[96];
    std::snprintf(heap, sizeof heap, "[%p, %p)", static_cast<const void*>(base),
                  static_cast<const void*>(base + rt->memory->size()));
    return report("free", std::string(where) + " is not in the symmetric heap " + heap);
  }
  const size_t offset = static_cast<size_t>(p - base);
  if (offset == rt->internal_offset || rt->allocator->allocation_size(offset) == 0)
    return report("free", std::string(where) + " is not the start of a live symmetric allocation");
  Call call{++rt->allocations, 2, 0, 0, offset};
  Status s = rt->settings.check_symmetry ? agree(*rt, call) : Status{};
  if (s.ok()) s = rt->boot->barrier();  // nobody may still be writing into it
  if (s.ok()) s = rt->allocator->release(offset);
  return s.ok() ? 0 : report("free", s);
}

uint64_t ptr_p2p(uint64_t ptr, int my_pe, int dest_pe) {
  runtime::clear_error();
  Runtime* rt = require("ptr_p2p");
  if (!rt) return 0;
  if (my_pe != rt->rank) {
    report("ptr_p2p",
           "my_pe " + std::to_string(my_pe) + " is not this PE (" + std::to_string(rt->rank) + ")");
    return 0;
  }
  if (dest_pe < 0 || dest_pe >= rt->n_pes) {
    report("ptr_p2p",
           "PE " + std::to_string(dest_pe) + " is not in [0, " + std::to_string(rt->n_pes) + ")");
    return 0;
  }
  const uint64_t base = reinterpret_cast<uint64_t>(rt->memory->base());
  if (ptr >= base && ptr < base + rt->memory->size()) {
    const uint64_t peer = rt->peer_bases[dest_pe];
    return peer ? peer + (ptr - base) : 0;  // 0: reached over RDMA, not mapped here
  }
  for (auto& [rbase, region] : rt->regions) {
    if (ptr >= rbase && ptr < rbase + region->size) {
      const uint64_t peer = region->peer_bases[dest_pe];
      return peer ? peer + (ptr - rbase) : 0;
    }
  }
  return 0;  // not symmetric: the guide's "pointer is invalid"
}

}  // namespace mori::shmem
