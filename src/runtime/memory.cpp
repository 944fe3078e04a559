// The symmetric heap's host API: malloc, malloc_align, ext_malloc_with_flags, calloc, realloc,
// free, ptr_p2p, pe_accessible and addr_accessible.
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
#include <algorithm>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "mori/shmem/host_api.hpp"
#include "runtime/backend.hpp"
#include "runtime/error.hpp"
#include "runtime/host_only.hpp"
#include "runtime/runtime.hpp"

namespace mori::shmem {

using runtime::find_symmetric;
using runtime::reachable;
using runtime::report;
using runtime::require;
using runtime::Runtime;
using runtime::SymmetricRange;

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

// Collective, under api_mutex: reserves `size` bytes (size > 0) at the same offset on every PE.
// With `zero`, this PE's copy is zeroed before the closing barrier, so no peer can write into it
// first. On failure the heap is as it was.
Status reserve(Runtime& rt, size_t alignment, size_t size, bool zero, size_t* offset) {
  MORI_TRY(rt.allocator->check_alignment(alignment));
  if (alignment < kDefaultAlignment) alignment = kDefaultAlignment;
  Call call{++rt.allocations, 1, size, alignment, ~uint64_t{0}};
  Status local = rt.allocator->allocate(size, alignment, offset);
  if (local.ok()) call.offset = *offset;
  Status s = rt.settings.check_symmetry ? agree(rt, call) : Status{};
  if (s.ok() && !local.ok()) s = local;
  if (s.ok()) s = rt.memory->ensure_mapped(rt.allocator->high_water());
  if (s.ok() && zero) s = backend::fill_device(rt.memory->base() + *offset, 0, size);
  if (s.ok()) s = rt.boot->barrier();
  if (!s.ok() && local.ok()) (void)rt.allocator->release(*offset);  // lose nothing
  return s;
}

// Collective, under api_mutex: frees the allocation at `offset` on every PE.
Status release(Runtime& rt, size_t offset) {
  Call call{++rt.allocations, 2, 0, 0, offset};
  MORI_TRY(rt.settings.check_symmetry ? agree(rt, call) : Status{});
  MORI_TRY(rt.boot->barrier());  // nobody may still be writing into it
  return rt.allocator->release(offset);
}

// The offset of the live allocation that starts at `ptr`, or why `ptr` is not one.
Status find_allocation(const Runtime& rt, const void* ptr, size_t* offset) {
  const char* base = rt.memory->base();
  const char* p = static_cast<const char*>(ptr);
  char where[64];
  std::snprintf(where, sizeof where, "%p", ptr);
  if (p < base || p >= base + rt.memory->size()) {
    char heap[96];
    std::snprintf(heap, sizeof heap, "[%p, %p)", static_cast<const void*>(base),
                  static_cast<const void*>(base + rt.memory->size()));
    return Status::error(std::string(where) + " is not in the symmetric heap " + heap);
  }
  *offset = static_cast<size_t>(p - base);
  if (*offset == rt.internal_offset || *offset == rt.team_scratch_offset ||
      rt.allocator->allocation_size(*offset) == 0)
    return Status::error(std::string(where) + " is not the start of a live symmetric allocation");
  return {};
}

void* allocate(const char* api, size_t alignment, size_t size, bool zero = false) {
  std::lock_guard lock(runtime::api_mutex());
  runtime::clear_error();
  Runtime* rt = runtime::require_device(api);
  if (!rt) return nullptr;
  if (size == 0) return nullptr;  // OpenSHMEM: a zero size allocates nothing and returns null
  size_t offset = 0;
  if (Status s = reserve(*rt, alignment, size, zero, &offset); !s.ok()) {
    report(api, s);
    return nullptr;
  }
  return rt->memory->base() + offset;
}

// Where this process reaches `pe`'s copy of the symmetric `ptr`, or 0: not symmetric, or that
// copy is not mapped here (RDMA, a peer's plain buffer_register buffer).
uint64_t p2p_view(const Runtime& rt, uint64_t ptr, int pe) {
  const SymmetricRange range = find_symmetric(rt, ptr);
  if (!range.peer_bases) return 0;  // not symmetric: the guide's "pointer is invalid"
  const uint64_t peer = (*range.peer_bases)[pe];
  return peer ? peer + (ptr - range.base) : 0;
}

}  // namespace

void* malloc(size_t size) {
  runtime::host_only("malloc");
  return allocate("malloc", kDefaultAlignment, size);
}

void* malloc_align(size_t alignment, size_t size) {
  runtime::host_only("malloc_align");
  return allocate("malloc_align", alignment, size);
}

void* ext_malloc_with_flags(size_t size, unsigned flags) {
  runtime::host_only("ext_malloc_with_flags");
  if (flags != 0) {
    runtime::clear_error();
    report("ext_malloc_with_flags",
           "flags " + std::to_string(flags) + " are not supported (use 0)");
    return nullptr;
  }
  return allocate("ext_malloc_with_flags", kDefaultAlignment, size);
}

void* calloc(size_t count, size_t size) {
  runtime::host_only("calloc");
  if (count != 0 && size > SIZE_MAX / count) {
    runtime::clear_error();
    report("calloc", std::to_string(count) + " objects of " + std::to_string(size) +
                         " bytes overflow size_t");
    return nullptr;
  }
  return allocate("calloc", kDefaultAlignment, count * size, /*zero=*/true);
}

// Allocate, copy, free: the new object's offset comes from the same deterministic allocator as
// malloc's, so it is the same on every PE. Its copy is made between the allocation's barrier (every
// PE's earlier writes to the old object have landed) and the release's (no PE returns, and so
// writes to the new object, before every PE has copied).
void* realloc(void* ptr, size_t size) {
  runtime::host_only("realloc");
  if (!ptr) return allocate("realloc", kDefaultAlignment, size);
  std::lock_guard lock(runtime::api_mutex());
  runtime::clear_error();
  Runtime* rt = runtime::require_device("realloc");
  if (!rt) return nullptr;
  size_t old = 0;
  if (Status s = find_allocation(*rt, ptr, &old); !s.ok()) {
    report("realloc", s);
    return nullptr;
  }
  if (size == 0) {
    if (Status s = release(*rt, old); !s.ok()) report("realloc", s);
    return nullptr;
  }
  size_t fresh = 0;
  Status s = reserve(*rt, kDefaultAlignment, size, /*zero=*/false, &fresh);
  char* base = rt->memory->base();
  if (s.ok()) {
    const size_t kept = std::min(size, rt->allocator->allocation_size(old));
    s = backend::copy_device_to_device(base + fresh, base + old, kept);
    if (s.ok()) s = release(*rt, old);
    if (!s.ok()) (void)rt->allocator->release(fresh);  // the old object stays the live one
  }
  if (!s.ok()) {
    report("realloc", s);
    return nullptr;
  }
  return base + fresh;
}

int free(void* ptr) {
  runtime::host_only("free");
  std::lock_guard lock(runtime::api_mutex());
  runtime::clear_error();
  Runtime* rt = require("free");
  if (!rt) return -1;
  if (!ptr) return 0;
  size_t offset = 0;
  Status s = find_allocation(*rt, ptr, &offset);
  if (s.ok()) s = release(*rt, offset);
  return s.ok() ? 0 : report("free", s);
}

// A 0 answer is not an error: last_error() is "" after it (the Python module relies on that).
int pe_accessible(int pe) {
  runtime::host_only("pe_accessible");
  runtime::clear_error();
  Runtime* rt = require("pe_accessible");
  return rt && reachable(*rt, pe) ? 1 : 0;
}

// What a transfer to `addr` on `pe` will do: RDMA reaches every symmetric range through its keys;
// P2P (and SDMA, which delegates to it) only a range whose copy on `pe` is mapped here, which a
// plain buffer_register buffer of another PE is not (its transfers trap on the device).
int addr_accessible(const void* addr, int pe) {
  runtime::host_only("addr_accessible");
  std::lock_guard lock(runtime::api_mutex());  // regions change in buffer_register's calls
  runtime::clear_error();
  Runtime* rt = require("addr_accessible");
  if (!rt || !reachable(*rt, pe)) return 0;
  const SymmetricRange range = find_symmetric(*rt, reinterpret_cast<uint64_t>(addr));
  if (!range.peer_bases) return 0;
  if (rt->transports[pe] == static_cast<uint8_t>(state::Transport::kRdma)) return 1;
  return (*range.peer_bases)[pe] != 0 ? 1 : 0;
}

uint64_t ptr_p2p(uint64_t ptr, int my_pe, int dest_pe) {
  MORI_LANE_FORM(ptr_p2p(ptr, my_pe, dest_pe));
  std::lock_guard lock(runtime::api_mutex());
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
  return p2p_view(*rt, ptr, dest_pe);
}

void* team_ptr(Team team, const void* dest, int pe) {
  runtime::host_only("team_ptr");
  std::lock_guard lock(runtime::api_mutex());
  runtime::clear_error();
  Runtime* rt = require("team_ptr");
  if (!rt) return nullptr;
  // -1 for a team invalid here or a pe outside it: no pointer, as OpenSHMEM's null.
  const int world = state::team_translate(rt->teams.data(), static_cast<int>(rt->teams.size()),
                                          team, pe, kTeamWorld);
  if (world < 0) return nullptr;
  return reinterpret_cast<void*>(p2p_view(*rt, reinterpret_cast<uint64_t>(dest), world));
}

void* malloc_with_hints(size_t size, long hints) {
  runtime::host_only("malloc_with_hints");
  if ((hints & ~kMallocHints) != 0) {
    runtime::clear_error();
    report("malloc_with_hints", "hints " + std::to_string(hints) +
                                    " has bits other than kMallocAtomicsRemote (1) and "
                                    "kMallocSignalRemote (2)");
    return nullptr;
  }
  // The heap is one kind of memory, registered for remote atomics: every hint is already met.
  return allocate("malloc_with_hints", kDefaultAlignment, size);
}

}  // namespace mori::shmem

namespace mori::runtime {

SymmetricRange find_symmetric(const Runtime& rt, uint64_t ptr) {
  const uint64_t base = reinterpret_cast<uint64_t>(rt.memory->base());
  if (ptr >= base && ptr < base + rt.memory->size())
    return {base, rt.memory->size(), &rt.heap.peer_bases};
  for (auto& [rbase, region] : rt.regions)
    if (ptr >= rbase && ptr < rbase + region->size)
      return {rbase, region->size, &region->peer_bases};
  return {};
}

bool reachable(const Runtime& rt, int pe) {
  return pe >= 0 && pe < rt.n_pes &&
         rt.transports[pe] != static_cast<uint8_t>(state::Transport::kUnreachable);
}

}  // namespace mori::runtime
