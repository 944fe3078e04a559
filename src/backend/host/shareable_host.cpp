// The host backend's shareable memory (backend.hpp): the stand-in for hipMalloc memory that
// buffer_register_symmetric maps into same-node peers.
//
// Each allocation is a memfd of its own, mapped MAP_SHARED, and its descriptor stays open in the
// table below until free_shareable. A handle names the owner's pid and that descriptor; a peer
// duplicates the descriptor with pidfd_getfd (Linux 5.6; the same ptrace access check as the
// process_vm_readv the software NIC already relies on) and maps it. Memory from anywhere else
// (malloc, a std::vector, the stack) has no descriptor a peer could map, so export refuses it.
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <string>

#include "backend/common/peer_fd.hpp"
#include "backend/host/fd_passing.hpp"
#include "runtime/backend.hpp"
#include "runtime/hex.hpp"

namespace mori::backend {
namespace {

using host::UniqueFd;

struct Allocation {
  size_t bytes;   // as asked
  size_t mapped;  // whole pages
  UniqueFd fd;
};

// Handle bytes on this backend.
struct HostHandle {
  int32_t pid;
  int32_t fd;
  uint64_t allocation_bytes;
};
static_assert(sizeof(HostHandle) <= sizeof(ShareableHandle::bytes));

std::mutex& table_mu() {
  static std::mutex mu;
  return mu;
}
std::map<uintptr_t, Allocation>& table() {  // by base address
  static std::map<uintptr_t, Allocation> t;
  return t;
}

std::string errno_text(const std::string& what) { return what + ": " + std::strerror(errno); }

using runtime::hex;

size_t page_size() { return static_cast<size_t>(sysconf(_SC_PAGESIZE)); }

}  // namespace

Status alloc_shareable(size_t bytes, void** out) {
  *out = nullptr;
  if (bytes == 0) return Status::error("size is 0");
  const size_t page = page_size();
  if (bytes > SIZE_MAX - page) return Status::error(std::to_string(bytes) + " bytes is too large");
  const size_t mapped = (bytes + page - 1) / page * page;
  UniqueFd fd(memfd_create("mori.shareable", MFD_CLOEXEC));
  if (!fd) return Status::error(errno_text("memfd_create"));
  if (ftruncate(fd.get(), static_cast<off_t>(mapped)) != 0)
    return Status::error(errno_text("cannot size a memfd of " + std::to_string(mapped) + " bytes"));
  void* p = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
  if (p == MAP_FAILED)
    return Status::error(errno_text("cannot map " + std::to_string(mapped) + " bytes"));
  std::lock_guard lock(table_mu());
  table().emplace(reinterpret_cast<uintptr_t>(p), Allocation{bytes, mapped, std::move(fd)});
  *out = p;
  return {};
}

Status free_shareable(void* p) {
  std::lock_guard lock(table_mu());
  auto it = table().find(reinterpret_cast<uintptr_t>(p));
  if (it == table().end())
    return Status::error(hex(reinterpret_cast<uintptr_t>(p)) +
                         " is not the start of memory from ext_alloc_shareable");
  munmap(p, it->second.mapped);
  table().erase(it);  // closes the descriptor; peers' mappings keep the memory until they unmap
  return {};
}

Status export_shareable(const void* p, size_t bytes, ShareableHandle* out) {
  const uintptr_t at = reinterpret_cast<uintptr_t>(p);
  std::lock_guard lock(table_mu());
  auto it = table().upper_bound(at);
  if (it != table().begin()) {
    --it;
    const uintptr_t base = it->first;
    const Allocation& a = it->second;
    if (at - base < a.bytes && bytes <= a.bytes - (at - base)) {
      *out = {};
      const HostHandle h{static_cast<int32_t>(getpid()), it->second.fd.get(), a.bytes};
      std::memcpy(out->bytes, &h, sizeof h);
      out->offset = at - base;
      return {};
    }
    if (at - base < a.bytes)
      return Status::error("[" + hex(at) + ", +" + std::to_string(bytes) +
                           ") runs past the end of its ext_alloc_shareable allocation of " +
                           std::to_string(a.bytes) + " bytes at " + hex(base));
  }
  return Status::error(hex(at) +
                       " is not memory from mori::shmem::ext_alloc_shareable, the only memory "
                       "that same-node peers can map on the host backend");
}

Status import_shareable(const ShareableHandle& handle, size_t bytes, Imported* out) {
  HostHandle h;
  std::memcpy(&h, handle.bytes, sizeof h);
  const std::string what = "PE process " + std::to_string(h.pid) + "'s shareable memory";
  if (handle.offset > h.allocation_bytes || bytes > h.allocation_bytes - handle.offset)
    return Status::error(what + ": the range is outside its allocation");
  int raw = -1;
  MORI_TRY(dup_peer_fd(h.pid, h.fd, what, &raw));
  UniqueFd fd(raw);
  // mmap takes page-aligned offsets: map from the page holding the range's start.
  const size_t page = page_size();
  const size_t start = handle.offset / page * page;
  const size_t length = handle.offset - start + bytes;
  void* m = mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(),
                 static_cast<off_t>(start));
  if (m == MAP_FAILED) return Status::error(errno_text(what + ": mmap"));
  *out = {static_cast<char*>(m) + (handle.offset - start), m, length};
  return {};  // the mapping keeps the memory; the duplicated descriptor closes here
}

void release_imported(const Imported& imported) {
  if (imported.mapping) munmap(imported.mapping, imported.mapped_bytes);
}

}  // namespace mori::backend
