// buffer_register, buffer_register_symmetric, buffer_deregister: buffers outside the heap that
// device calls may use. Collective: every PE registers its own buffer of the same size, and a call
// on an address in it acts on the same offset in the target PE's buffer.
//
// buffer_register makes the buffers reachable over RDMA only: its peer_bases are 0 except for this
// PE, so a PE reached over P2P cannot reach them. buffer_register_symmetric also maps every
// same-node peer's buffer into this process (backend.hpp, "shareable memory": hipMalloc memory
// through IPC handles on the GPU, ext_alloc_shareable memory on the host backend), so the buffers
// are addressable like heap memory over every transport.
#include <cstdio>
#include <cstring>

#include "mori/shmem/host_api.hpp"
#include "runtime/error.hpp"
#include "runtime/hex.hpp"
#include "runtime/host_only.hpp"
#include "runtime/runtime.hpp"

namespace mori::runtime {
Region::~Region() {
  for (const backend::Imported& imported : imports) backend::release_imported(imported);
}
}  // namespace mori::runtime

namespace mori::shmem {

using runtime::report;
using runtime::require;
using runtime::Runtime;

namespace {

struct Entry {
  uint64_t base;
  uint64_t size;
  uint64_t ok;  // 0 when this PE's own checks failed: every PE then fails the call together
  backend::ShareableHandle handle;  // buffer_register_symmetric only
};

using runtime::hex;

Status check_new(const Runtime& rt, uint64_t base, uint64_t size) {
  if (!base) return Status::error("ptr is null");
  if (!size) return Status::error("size is 0");
  if (base + size < base) return Status::error("[ptr, ptr + size) wraps around the address space");
  const uint64_t heap = reinterpret_cast<uint64_t>(rt.memory->base());
  if (base < heap + rt.memory->size() && heap < base + size)
    return Status::error(hex(base) + " overlaps the symmetric heap, which needs no registration");
  for (const auto& [rbase, r] : rt.regions)
    if (base < rbase + r->size && rbase < base + size)
      return Status::error("[" + hex(base) + ", +" + std::to_string(size) +
                           ") overlaps the registered buffer [" + hex(rbase) + ", +" +
                           std::to_string(r->size) + ")");
  return {};
}

Status check_existing(const Runtime& rt, uint64_t base, uint64_t size) {
  auto it = rt.regions.find(base);
  if (it == rt.regions.end()) return Status::error(hex(base) + " is not a registered buffer");
  if (it->second->size != size)
    return Status::error(hex(base) + " was registered with " + std::to_string(it->second->size) +
                         " bytes, not " + std::to_string(size));
  return {};
}

// Collective: every PE learns every PE's (base, size, ok, handle); fails on all PEs if any PE's
// checks failed or the sizes differ.
Status exchange(Runtime& rt, const Status& local, uint64_t base, uint64_t size,
                const backend::ShareableHandle& handle, std::vector<Entry>* all) {
  const Entry mine{base, size, local.ok() ? 1u : 0u, handle};
  all->resize(rt.n_pes);
  MORI_TRY(rt.boot->allgather(&mine, all->data(), sizeof(Entry)));
  if (!local.ok()) return local;
  for (int pe = 0; pe < rt.n_pes; ++pe) {
    const Entry& e = (*all)[pe];
    if (!e.ok) return Status::error("it failed on PE " + std::to_string(pe));
    if (e.size != size)
      return Status::error("PE " + std::to_string(pe) + " gave " + std::to_string(e.size) +
                           " bytes, PE " + std::to_string(rt.rank) + " gave " +
                           std::to_string(size) + ": every PE registers the same size");
  }
  return {};
}

// Collective: fails on every PE when `local` failed on any, naming the first that failed.
Status agree(Runtime& rt, const Status& local) {
  const uint8_t mine = local.ok() ? 1 : 0;
  std::vector<uint8_t> all(rt.n_pes);
  MORI_TRY(rt.boot->allgather(&mine, all.data(), 1));
  if (!local.ok()) return local;
  for (int pe = 0; pe < rt.n_pes; ++pe)
    if (!all[pe]) return Status::error("it failed on PE " + std::to_string(pe));
  return {};
}

// Maps the copy of every PE whose heap this PE maps (P2P), or none of them.
Status import_peers(const Runtime& rt, const std::vector<Entry>& all, runtime::Region* region) {
  for (int pe = 0; pe < rt.n_pes; ++pe) {
    if (pe == rt.rank || rt.heap.peer_bases[pe] == 0) continue;
    backend::Imported imported;
    if (Status s = backend::import_shareable(all[pe].handle, region->size, &imported); !s.ok())
      return Status::error("cannot map PE " + std::to_string(pe) + "'s buffer: " + s.message());
    region->imports.push_back(imported);
    region->peer_bases[pe] = reinterpret_cast<uint64_t>(imported.ptr);
  }
  return {};
}

int register_buffer(const char* api, void* ptr, size_t size, bool symmetric) {
  std::lock_guard lock(runtime::api_mutex());
  runtime::clear_error();
  Runtime* rt = runtime::require_device(api);
  if (!rt) return -1;
  const uint64_t base = reinterpret_cast<uint64_t>(ptr);
  Status local = check_new(*rt, base, size);
  backend::ShareableHandle handle{};
  if (local.ok() && symmetric) local = backend::export_shareable(ptr, size, &handle);
  std::vector<Entry> all;
  if (Status s = exchange(*rt, local, base, size, handle, &all); !s.ok()) return report(api, s);
  auto region = std::make_unique<runtime::Region>();
  region->base = base;
  region->size = size;
  region->peer_bases.assign(rt->n_pes, 0);
  region->peer_bases[rt->rank] = base;
  region->rkeys.assign(rt->n_pes, 0);
  for (const Entry& e : all) region->remote_bases.push_back(e.base);
  if (symmetric) {
    if (Status s = agree(*rt, import_peers(*rt, all, region.get())); !s.ok()) return report(api, s);
  }
  if (rt->rdma) {
    if (Status s = rt->rdma->register_region(base, size, region->remote_bases, &region->lkey,
                                             &region->rkeys);
        !s.ok())
      return report(api, s);
  }
  rt->regions[base] = std::move(region);
  if (Status s = rt->publish(); !s.ok()) {
    rt->regions.erase(base);
    return report(api, s);
  }
  return 0;
}

}  // namespace

int buffer_register(void* ptr, size_t size) {
  runtime::host_only("buffer_register");
  return register_buffer("buffer_register", ptr, size, false);
}

int buffer_register_symmetric(void* ptr, size_t size) {
  runtime::host_only("buffer_register_symmetric");
  return register_buffer("buffer_register_symmetric", ptr, size, true);
}

void* ext_alloc_shareable(size_t size) {
  runtime::host_only("ext_alloc_shareable");
  std::lock_guard lock(runtime::api_mutex());
  runtime::clear_error();
  // On the PE's GPU once there is a runtime (hipMalloc allocates on the thread's current device).
  if (runtime::current()) {
    if (Status s = backend::use_device(); !s.ok()) {
      report("ext_alloc_shareable", s);
      return nullptr;
    }
  }
  void* p = nullptr;
  if (Status s = backend::alloc_shareable(size, &p); !s.ok()) {
    report("ext_alloc_shareable", s);
    return nullptr;
  }
  return p;
}

int ext_free_shareable(void* ptr) {
  runtime::host_only("ext_free_shareable");
  std::lock_guard lock(runtime::api_mutex());
  runtime::clear_error();
  if (!ptr) return 0;
  // Peers may still map a registered buffer: it has to be deregistered (collectively) first.
  if (const Runtime* rt = runtime::current()) {
    const uint64_t p = reinterpret_cast<uint64_t>(ptr);
    for (const auto& [base, r] : rt->regions)
      if (p >= base && p - base < r->size)
        return report("ext_free_shareable", hex(p) + " is in the registered buffer " + hex(base) +
                                                ": buffer_deregister it first");
  }
  if (Status s = backend::free_shareable(ptr); !s.ok()) return report("ext_free_shareable", s);
  return 0;
}

int buffer_deregister(void* ptr, size_t size) {
  runtime::host_only("buffer_deregister");
  std::lock_guard lock(runtime::api_mutex());
  runtime::clear_error();
  Runtime* rt = runtime::require_device("buffer_deregister");
  if (!rt) return -1;
  const uint64_t base = reinterpret_cast<uint64_t>(ptr);
  std::vector<Entry> all;
  if (Status s = exchange(*rt, check_existing(*rt, base, size), base, size, {}, &all); !s.ok())
    return report("buffer_deregister", s);
  // Every PE's device work on the buffer is over before any PE drops its keys.
  if (rt->rdma) {
    if (Status s = rt->rdma->drain(); !s.ok()) return report("buffer_deregister", s);
    if (Status s = rt->rdma->deregister_region(base); !s.ok())
      return report("buffer_deregister", s);
  }
  rt->regions.erase(base);
  if (Status s = rt->publish(); !s.ok()) return report("buffer_deregister", s);
  return 0;
}

}  // namespace mori::shmem
