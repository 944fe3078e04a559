// The memory behind the symmetric heap, per backend: this PE's heap and its mappings of same-node
// peers' heaps.
//
//   static_heap: one segment of the whole heap size, created and exchanged at init.
//   vmm_heap:    a reserved virtual range, backed chunk by chunk as allocations reach further into
//                it. Each new chunk is created by every PE at once (growth is collective, like
//                malloc), exchanged with the same-node peers (file descriptors over a Unix socket
//                with SCM_RIGHTS on the host backend), and mapped by each peer at the same offset
//                in its view of this PE's heap.
//
// On the host backend a segment is a memfd, so a peer's heap is ordinary shared memory in this
// process.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "bootstrap/bootstrap.hpp"
#include "mori/status.hpp"

namespace mori::heap {

enum class Mode { Static, Vmm };

// Every backend places this PE's heap, base(), at a multiple of this. An offset aligned to any
// power of two up to it is then an aligned address on every PE, which is how malloc_align keeps
// both its promise (an aligned address) and symmetry (the same offset everywhere); larger
// alignments are refused. 64 MiB, the default VMM chunk: costs only address space on the host
// backend, where the range is over-reserved and trimmed, and at most this much device memory on
// the hip backend, where the allocation is over-sized. The public name is
// mori::shmem::kMaxAlignment.
inline constexpr size_t kBaseAlignment = size_t{64} << 20;

struct HeapConfig {
  Mode mode = Mode::Static;
  size_t size = 0;         // bytes of every PE's heap; a multiple of chunk_size in VMM mode
  size_t chunk_size = 0;   // VMM granularity
  uint64_t job_nonce = 0;  // the same on every PE of a job: names its Unix sockets
  std::chrono::milliseconds timeout{30000};  // deadline of each wait on a same-node peer
};

class HeapMemory {
 public:
  virtual ~HeapMemory() = default;
  // This PE's heap: [base(), base() + size()). base() is a multiple of kBaseAlignment.
  virtual char* base() const = 0;
  virtual size_t size() const = 0;
  // Where this process reaches PE `pe`'s heap, or nullptr when `pe` is not on this node (not
  // P2P-reachable). For this PE it is base(). A multiple of kBaseAlignment on the host backend;
  // on the hip backend HIP places peers' IPC mappings, so only their page alignment is known.
  virtual char* peer_base(int pe) const = 0;
  // Bytes from offset 0 that are backed on every PE and mapped for every same-node peer.
  virtual size_t mapped() const = 0;
  // Collective: backs and maps [0, end) on every PE. All PEs call it with the same `end`. A no-op
  // when already mapped; always the case for the static heap. Fails, naming the cause, when `end`
  // exceeds size().
  virtual Status ensure_mapped(size_t end) = 0;
};

// Collective. `same_node[pe]` says whether PE `pe` shares this node (and so its memory) with
// this PE.
Status make_heap_memory(const HeapConfig& config, bootstrap::Bootstrap& boot,
                        const std::vector<bool>& same_node, std::unique_ptr<HeapMemory>* out);

}  // namespace mori::heap
