// The host backend's heap memory: memfd segments, mapped by their owner and by each same-node peer.
//
// Every PE reserves one range of address space per same-node PE, itself included, each starting on
// a kBaseAlignment boundary, and maps each segment into it with MAP_FIXED at the segment's heap
// offset. A peer's heap thus looks exactly like its owner's, at another base. The static heap is
// the case of one segment as large as the heap, created and exchanged at init.
//
// Segments reach the peers as descriptors over the sockets of fd_passing.hpp, one exchange per
// growth: each PE connects to and greets every peer, accepts one connection from every peer, then
// for each new segment in turn sends its descriptor to all peers and receives all of theirs before
// moving on. That lock step keeps at most two messages per connection in flight, so no send can
// fill a socket buffer and wait on a peer that is itself waiting to send, and the number of
// descriptors in flight stays far below the kernel's per-user limit.
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "backend/host/fd_passing.hpp"
#include "heap/heap_memory.hpp"

namespace mori::heap {
namespace {

using backend::host::Deadline;
using backend::host::UniqueFd;

constexpr uint32_t kHelloMagic = 0x69726f6d;  // "mori"
// Room for every same-node peer's connection of this round and of the next, plus slack.
constexpr int kMinBacklog = 128;

// The first message on a connection: who is connecting and which segments it is about to send.
struct Hello {
  uint32_t magic;
  int32_t rank;
  uint64_t round;
  uint64_t first;
  uint64_t count;
};

// Sent with each segment's descriptor.
struct SegmentNote {
  int32_t rank;
  uint32_t reserved;
  uint64_t index;
};

std::string errno_text(const std::string& what) { return what + ": " + std::strerror(errno); }

std::string socket_name(uint64_t nonce, int rank) {
  char name[64];
  std::snprintf(name, sizeof name, "mori.%016" PRIx64 ".%d", nonce, rank);
  return name;
}

std::string rank_list(const std::vector<int>& ranks) {
  std::string out;
  for (int r : ranks) out += (out.empty() ? "" : ", ") + std::to_string(r);
  return out;
}

class HostHeapMemory final : public HeapMemory {
 public:
  HostHeapMemory(const HeapConfig& config, bootstrap::Bootstrap& boot,
                 const std::vector<bool>& same_node)
      : config_(config),
        boot_(boot),
        rank_(boot.rank()),
        n_pes_(boot.size()),
        same_node_(same_node),
        views_(static_cast<size_t>(n_pes_), nullptr) {}

  ~HostHeapMemory() override {
    for (char* view : views_)
      if (view) munmap(view, config_.size);
  }

  Status init();

  char* base() const override { return views_[rank_]; }
  size_t size() const override { return config_.size; }
  char* peer_base(int pe) const override { return pe >= 0 && pe < n_pes_ ? views_[pe] : nullptr; }
  size_t mapped() const override { return mapped_; }
  Status ensure_mapped(size_t end) override;

 private:
  size_t segment_bytes() const {
    return config_.mode == Mode::Static ? config_.size : config_.chunk_size;
  }
  Status check_config();
  Status reserve_views();
  Status grow(size_t end);
  Status create_segment(size_t index, UniqueFd* fd);
  Status map_segment(int pe, size_t index, int fd);
  Status exchange(size_t first, const std::vector<UniqueFd>& fds);
  Status connect_peers(const Hello& hello, Deadline deadline, std::vector<UniqueFd>* out);
  Status accept_peers(const Hello& hello, Deadline deadline, std::vector<UniqueFd>* in);
  Status agree(Status local, const char* what);
  std::string waited(const std::string& what, const Status& s) const;

  HeapConfig config_;
  bootstrap::Bootstrap& boot_;
  int rank_;
  int n_pes_;
  std::vector<bool> same_node_;
  std::vector<int> peers_;    // same-node PEs other than this one
  std::vector<char*> views_;  // per PE: this process's reserved range for its heap, or null
  UniqueFd listener_;
  size_t mapped_ = 0;
  uint64_t round_ = 0;  // growths so far; all PEs count alike, which the greeting checks
};

Status HostHeapMemory::init() {
  Status local = check_config();
  if (local.ok()) local = reserve_views();
  if (local.ok() && !peers_.empty()) {
    const int backlog = std::max(kMinBacklog, 2 * static_cast<int>(peers_.size()) + 8);
    if (Status s = backend::host::listen_abstract(socket_name(config_.job_nonce, rank_), backlog,
                                                  &listener_);
        !s.ok()) {
      local =
          Status::error("heap: cannot open this PE's socket for same-node peers: " + s.message());
    }
  }
  // Also the barrier that has every listener up before anyone connects.
  MORI_TRY(agree(std::move(local), "set up its heap memory"));
  if (config_.mode == Mode::Static) {
    MORI_TRY(grow(config_.size));
    listener_.reset();  // a static heap never grows, so nobody will connect again
  }
  return {};
}

Status HostHeapMemory::ensure_mapped(size_t end) {
  if (end > config_.size) {
    return Status::error("heap: cannot map " + std::to_string(end) + " bytes: the heap is " +
                         std::to_string(config_.size) + " bytes");
  }
  if (end <= mapped_) return {};
  const size_t segment = segment_bytes();
  return grow((end + segment - 1) / segment * segment);
}

Status HostHeapMemory::check_config() {
  if (same_node_.size() != static_cast<size_t>(n_pes_)) {
    return Status::error("heap: same_node has " + std::to_string(same_node_.size()) +
                         " entries for " + std::to_string(n_pes_) + " PEs");
  }
  if (!same_node_[rank_])
    return Status::error("heap: same_node must include this PE (rank " + std::to_string(rank_) +
                         ")");
  if (config_.size == 0) return Status::error("heap: the heap size is 0");
  if (config_.mode == Mode::Vmm) {
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    if (config_.chunk_size == 0 || config_.chunk_size % page != 0) {
      return Status::error("heap: the VMM chunk size " + std::to_string(config_.chunk_size) +
                           " is not a multiple of the page size " + std::to_string(page));
    }
    if (config_.size % config_.chunk_size != 0) {
      return Status::error("heap: the heap size " + std::to_string(config_.size) +
                           " is not a multiple of the VMM chunk size " +
                           std::to_string(config_.chunk_size));
    }
  }
  for (int pe = 0; pe < n_pes_; ++pe)
    if (pe != rank_ && same_node_[pe]) peers_.push_back(pe);
  return {};
}

// Address space only: the ranges cost no memory until segments are mapped over them.
//
// mmap promises page alignment only, so each range is reserved kBaseAlignment larger than the heap
// and trimmed on both sides to a view that starts on a kBaseAlignment boundary (heap_memory.hpp).
// Every view, a peer's included, is aligned alike, so an aligned object is aligned in every view.
Status HostHeapMemory::reserve_views() {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t span = config_.size + kBaseAlignment;
  if (span < config_.size)
    return Status::error("heap: a heap of " + std::to_string(config_.size) + " bytes is too large");
  for (int pe = 0; pe < n_pes_; ++pe) {
    if (!same_node_[pe]) continue;
    void* range =
        mmap(nullptr, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (range == MAP_FAILED) {
      return Status::error(errno_text("heap: cannot reserve " + std::to_string(span) +
                                      " bytes of address space for rank " + std::to_string(pe)));
    }
    char* start = static_cast<char*>(range);
    const uintptr_t at = reinterpret_cast<uintptr_t>(start);
    char* view = start + ((kBaseAlignment - at % kBaseAlignment) % kBaseAlignment);
    // Both trims are whole pages (munmap wants a page-aligned start): the range and kBaseAlignment
    // are page multiples, and the view keeps the heap's last partial page. Giving back part of a
    // reservation cannot fail short of a kernel bug.
    if (view > start) munmap(start, static_cast<size_t>(view - start));
    if (char* end = view + (config_.size + page - 1) / page * page; end < start + span)
      munmap(end, static_cast<size_t>(start + span - end));
    views_[pe] = view;
  }
  return {};
}

// Backs [mapped_, end) with new segments and maps them on every same-node PE. `end` is a whole
// number of segments and the same on every PE.
Status HostHeapMemory::grow(size_t end) {
  ++round_;
  const size_t segment = segment_bytes();
  const size_t first = mapped_ / segment;
  std::vector<UniqueFd> fds(end / segment - first);
  Status local;
  for (size_t i = 0; i < fds.size() && local.ok(); ++i) local = create_segment(first + i, &fds[i]);
  MORI_TRY(agree(std::move(local), "back its new heap segments"));
  // A failed mapping on a peer must not leave this PE believing the range is reachable, so the
  // outcome is agreed before mapped_ moves. A retry maps the same offsets again with MAP_FIXED.
  MORI_TRY(agree(exchange(first, fds), "exchange heap segments with its same-node peers"));
  mapped_ = end;
  return {};
}

Status HostHeapMemory::create_segment(size_t index, UniqueFd* fd) {
  char name[64];
  std::snprintf(name, sizeof name, "mori.heap.pe%d.%zu", rank_, index);
  const int raw = memfd_create(name, MFD_CLOEXEC);
  if (raw < 0) return Status::error(errno_text("heap: memfd_create"));
  fd->reset(raw);
  if (ftruncate(raw, static_cast<off_t>(segment_bytes())) != 0) {
    return Status::error(
        errno_text("heap: cannot size a segment of " + std::to_string(segment_bytes()) + " bytes"));
  }
  return map_segment(rank_, index, raw);
}

Status HostHeapMemory::map_segment(int pe, size_t index, int fd) {
  const size_t segment = segment_bytes();
  const std::string what =
      "segment " + std::to_string(index) + " of rank " + std::to_string(pe) + "'s heap";
  // A shorter file would map fine and then fault (SIGBUS) on first touch past its end.
  struct stat st;
  if (fstat(fd, &st) != 0) return Status::error(errno_text("heap: fstat of " + what));
  if (static_cast<size_t>(st.st_size) < segment) {
    return Status::error("heap: " + what + " is " + std::to_string(st.st_size) +
                         " bytes, expected " + std::to_string(segment));
  }
  void* at = views_[pe] + index * segment;
  if (mmap(at, segment, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0) == MAP_FAILED)
    return Status::error(errno_text("heap: cannot map " + what));
  return {};
}

Status HostHeapMemory::exchange(size_t first, const std::vector<UniqueFd>& fds) {
  if (peers_.empty()) return {};
  const Deadline deadline = std::chrono::steady_clock::now() + config_.timeout;
  const Hello hello{kHelloMagic, rank_, round_, first, fds.size()};
  std::vector<UniqueFd> out(n_pes_), in(n_pes_);
  MORI_TRY(connect_peers(hello, deadline, &out));
  MORI_TRY(accept_peers(hello, deadline, &in));
  // A segment that fails to map is reported after the round, which the peers still need finished.
  Status mapping;
  for (size_t i = 0; i < fds.size(); ++i) {
    const size_t index = first + i;
    const std::string name = "segment " + std::to_string(index);
    const SegmentNote note{rank_, 0, index};
    for (int pe : peers_) {
      Status s =
          backend::host::send_message(out[pe].get(), &note, sizeof note, fds[i].get(), deadline);
      if (!s.ok())
        return Status::error(waited("sending " + name + " to rank " + std::to_string(pe), s));
    }
    for (int pe : peers_) {
      SegmentNote got{};
      UniqueFd fd;
      Status s = backend::host::recv_message(in[pe].get(), &got, sizeof got, deadline, &fd);
      if (!s.ok())
        return Status::error(waited("waiting for " + name + " from rank " + std::to_string(pe), s));
      if (got.rank != pe || got.index != index || !fd) {
        return Status::error("heap: rank " + std::to_string(pe) + " sent segment " +
                             std::to_string(got.index) + (fd ? "" : " without its descriptor") +
                             " where " + name + " was due");
      }
      // The mapping holds the memory; the descriptor closes when `fd` goes.
      if (Status m = map_segment(pe, index, fd.get()); !m.ok() && mapping.ok()) mapping = m;
    }
  }
  return mapping;
}

Status HostHeapMemory::connect_peers(const Hello& hello, Deadline deadline,
                                     std::vector<UniqueFd>* out) {
  for (int pe : peers_) {
    const std::string peer = "rank " + std::to_string(pe);
    Status s = backend::host::connect_abstract(socket_name(config_.job_nonce, pe), &(*out)[pe]);
    if (s.ok())
      s = backend::host::send_message((*out)[pe].get(), &hello, sizeof hello, -1, deadline);
    if (!s.ok()) return Status::error(waited("connecting to same-node " + peer, s));
  }
  return {};
}

Status HostHeapMemory::accept_peers(const Hello& hello, Deadline deadline,
                                    std::vector<UniqueFd>* in) {
  for (size_t accepted = 0; accepted < peers_.size(); ++accepted) {
    UniqueFd conn;
    if (Status s = backend::host::accept_before(listener_.get(), deadline, &conn); !s.ok()) {
      std::vector<int> missing;
      for (int pe : peers_)
        if (!(*in)[pe]) missing.push_back(pe);
      return Status::error(
          waited("waiting for same-node rank(s) " + rank_list(missing) + " to connect", s));
    }
    Hello got{};
    UniqueFd stray;
    if (Status s = backend::host::recv_message(conn.get(), &got, sizeof got, deadline, &stray);
        !s.ok()) {
      return Status::error(waited("reading a same-node peer's greeting", s));
    }
    if (got.magic != kHelloMagic || got.rank < 0 || got.rank >= n_pes_ || !same_node_[got.rank] ||
        got.rank == rank_ || (*in)[got.rank]) {
      return Status::error("heap: unexpected connection to this PE's socket (rank field " +
                           std::to_string(got.rank) + "): does another job use the socket name " +
                           socket_name(config_.job_nonce, rank_) + "?");
    }
    if (got.round != hello.round || got.first != hello.first || got.count != hello.count) {
      return Status::error("heap: rank " + std::to_string(got.rank) + " is at growth " +
                           std::to_string(got.round) + " sending " + std::to_string(got.count) +
                           " segment(s) from " + std::to_string(got.first) + ", this PE at " +
                           std::to_string(hello.round) + " sending " + std::to_string(hello.count) +
                           " from " + std::to_string(hello.first) +
                           ": the PEs grew the heap differently");
    }
    (*in)[got.rank] = std::move(conn);
  }
  return {};
}

// Collective: every PE learns whether every other succeeded, so that all of them fail together
// (naming the culprits) instead of the healthy ones waiting on a peer that has given up.
//
// A PE's own failure may only echo another's: when rank 1 dies during an exchange, rank 0 fails
// to reach it and leaves, and rank 2 then times out waiting for rank 0. So a failed PE adds what
// the agreement says of the others: the bootstrap's error (which names a PE that died), or the
// other PEs that failed too when some did not (when all did, each says its own reason).
Status HostHeapMemory::agree(Status local, const char* what) {
  const int32_t failed = local.ok() ? 0 : 1;
  std::vector<int32_t> all(n_pes_);
  Status s = boot_.allgather(&failed, all.data(), sizeof failed);
  if (!local.ok() && !s.ok()) return Status::error(local.message() + " (then " + s.message() + ")");
  MORI_TRY(s);
  std::vector<int> culprits;  // the other PEs that failed
  for (int pe = 0; pe < n_pes_; ++pe)
    if (all[pe] && pe != rank_) culprits.push_back(pe);
  const std::string named = "rank(s) " + rank_list(culprits) + " failed to " + what;
  if (local.ok()) return culprits.empty() ? Status{} : Status::error("heap: " + named);
  if (culprits.empty() || culprits.size() + 1 == static_cast<size_t>(n_pes_)) return local;
  return Status::error(local.message() + " (" + named + " too)");
}

std::string HostHeapMemory::waited(const std::string& what, const Status& s) const {
  std::string reason = s.message();
  if (reason == "timed out") reason += " after " + std::to_string(config_.timeout.count()) + " ms";
  return "heap: " + what + ": " + reason;
}

}  // namespace

Status make_heap_memory(const HeapConfig& config, bootstrap::Bootstrap& boot,
                        const std::vector<bool>& same_node, std::unique_ptr<HeapMemory>* out) {
  auto memory = std::make_unique<HostHeapMemory>(config, boot, same_node);
  MORI_TRY(memory->init());
  *out = std::move(memory);
  return {};
}

}  // namespace mori::heap
