// heap::HeapMemory on the host backend, across processes: every PE reads every same-node peer's
// heap through peer_base() and writes into it, in static mode and in VMM mode as the heap grows.
// Each PE stamps words that encode (owner, offset, salt), so a peer mapped at the wrong offset or
// to the wrong PE's segment reads a value it can name.
#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "bootstrap/bootstrap.hpp"
#include "heap/heap_memory.hpp"

using mori::Status;
using mori::bootstrap::Bootstrap;
using mori::heap::HeapConfig;
using mori::heap::HeapMemory;
using mori::heap::Mode;

namespace {

constexpr size_t kMiB = size_t{1} << 20;
constexpr size_t kHeap = 64 * kMiB;
constexpr size_t kChunk = 2 * kMiB;
constexpr size_t kBlock = 256;  // bytes stamped at each probe; the next kBlock take peer writes

std::unique_ptr<Bootstrap> make_boot() {
  std::unique_ptr<Bootstrap> boot;
  const Status s = mori::bootstrap::make_mpi_bootstrap(nullptr, &boot);
  REQUIRE_MESSAGE(s.ok(), s.message());
  return boot;
}

// A fresh nonce for every heap, so that one made after another never meets its predecessor's
// sockets.
HeapConfig config_for(Mode mode, Bootstrap& boot) {
  uint64_t nonce = 0;
  if (boot.rank() == 0) nonce = (uint64_t{std::random_device{}()} << 32) | std::random_device{}();
  REQUIRE(boot.broadcast(&nonce, sizeof nonce, 0).ok());
  HeapConfig config;
  config.mode = mode;
  config.size = kHeap;
  config.chunk_size = kChunk;
  config.job_nonce = nonce;
  config.timeout = std::chrono::seconds(20);
  return config;
}

std::unique_ptr<HeapMemory> must_make(const HeapConfig& config, Bootstrap& boot,
                                      const std::vector<bool>& same_node) {
  std::unique_ptr<HeapMemory> memory;
  const Status s = mori::heap::make_heap_memory(config, boot, same_node, &memory);
  REQUIRE_MESSAGE(s.ok(), s.message());
  REQUIRE(memory);
  return memory;
}

uint64_t stamp(int pe, size_t offset, uint64_t salt) {
  uint64_t z = (uint64_t(pe) << 56) ^ (salt << 40) ^ offset;
  z = (z ^ (z >> 31)) * 0x9e3779b97f4a7c15ull;
  return z ^ (z >> 29);
}

void fill(char* base, size_t offset, int pe, uint64_t salt) {
  for (size_t at = offset; at < offset + kBlock; at += 8) {
    const uint64_t word = stamp(pe, at, salt);
    std::memcpy(base + at, &word, 8);
  }
}

size_t mismatches(const char* base, size_t offset, int pe, uint64_t salt) {
  size_t bad = 0;
  for (size_t at = offset; at < offset + kBlock; at += 8) {
    uint64_t word;
    std::memcpy(&word, base + at, 8);
    bad += word != stamp(pe, at, salt);
  }
  return bad;
}

// Offsets in [begin, end) worth probing, each the start of 2 kBlock bytes: both ends, both sides
// of every chunk boundary, and a middle.
std::vector<size_t> probes(size_t begin, size_t end) {
  // The middle probe keeps clear of a chunk boundary's probes, which cover [-2 kBlock, +2 kBlock).
  const size_t middle = (begin + (end - begin) / 2) / 4096 * 4096 + 1024 + 8;
  std::vector<size_t> out{begin, end - 2 * kBlock, middle};
  for (size_t chunk = (begin / kChunk + 1) * kChunk; chunk < end; chunk += kChunk) {
    out.push_back(chunk - 2 * kBlock);
    out.push_back(chunk);
  }
  return out;
}

// The next same-node PE after `rank`, cyclically: each PE writes into exactly one peer's heap and
// has exactly one writer.
int next_on_node(int rank, const std::vector<bool>& same_node) {
  const int n = static_cast<int>(same_node.size());
  for (int step = 1; step <= n; ++step)
    if (same_node[(rank + step) % n]) return (rank + step) % n;
  return rank;
}
int prev_on_node(int rank, const std::vector<bool>& same_node) {
  const int n = static_cast<int>(same_node.size());
  for (int step = 1; step <= n; ++step)
    if (same_node[(rank - step + n) % n]) return (rank - step + n) % n;
  return rank;
}

// Stamps [begin, end) of every heap, checks each PE reads every same-node peer's stamps, then has
// each PE write through its peer pointer and the owner check what arrived.
void check_range(HeapMemory& memory, Bootstrap& boot, const std::vector<bool>& same_node,
                 size_t begin, size_t end, uint64_t salt) {
  const int me = boot.rank();
  const std::vector<size_t> at = probes(begin, end);
  for (size_t offset : at) fill(memory.base(), offset, me, salt);
  REQUIRE(boot.barrier().ok());

  for (int pe = 0; pe < boot.size(); ++pe) {
    CAPTURE(pe);
    const char* view = memory.peer_base(pe);
    if (!same_node[pe]) {
      CHECK(view == nullptr);
      continue;
    }
    REQUIRE(view != nullptr);
    for (size_t offset : at) {
      CAPTURE(offset);
      CHECK(mismatches(view, offset, pe, salt) == 0);
    }
  }

  const int target = next_on_node(me, same_node);
  for (size_t offset : at) fill(memory.peer_base(target), offset + kBlock, me, salt + 1);
  REQUIRE(boot.barrier().ok());
  const int writer = prev_on_node(me, same_node);
  for (size_t offset : at) {
    CAPTURE(offset);
    CHECK(mismatches(memory.base(), offset + kBlock, writer, salt + 1) == 0);
  }
  REQUIRE(boot.barrier().ok());
}

// Heap segments this process still holds open, and mappings of them: the memfds are named
// "mori.heap.*" and show up as such in /proc/self/fd and /proc/self/maps.
size_t open_segment_fds() {
  size_t n = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    const auto target = std::filesystem::read_symlink(entry.path(), ec);
    n += !ec && target.string().find("memfd:mori.heap") == 0;
  }
  return n;
}
size_t segment_mappings() {
  std::ifstream maps("/proc/self/maps");
  size_t n = 0;
  for (std::string line; std::getline(maps, line);) n += line.find("/memfd:mori.heap") != line.npos;
  return n;
}

std::string beyond_error(size_t end) {
  return "heap: cannot map " + std::to_string(end) + " bytes: the heap is " +
         std::to_string(kHeap) + " bytes";
}

}  // namespace

TEST_CASE("heap memory: a static heap is mapped whole, by its owner and by every peer") {
  auto boot = make_boot();
  const std::vector<bool> same_node(boot->size(), true);
  auto memory = must_make(config_for(Mode::Static, *boot), *boot, same_node);
  CHECK(memory->size() == kHeap);
  CHECK(memory->mapped() == kHeap);
  CHECK(memory->peer_base(boot->rank()) == memory->base());
  CHECK(memory->peer_base(-1) == nullptr);
  CHECK(memory->peer_base(boot->size()) == nullptr);
  check_range(*memory, *boot, same_node, 0, kHeap, 1);

  CHECK(memory->ensure_mapped(0).ok());
  CHECK(memory->ensure_mapped(kHeap).ok());
  const Status s = memory->ensure_mapped(kHeap + 1);
  REQUIRE_FALSE(s.ok());
  CHECK(s.message() == beyond_error(kHeap + 1));
  CHECK(memory->mapped() == kHeap);

  // The mappings keep the segments alive; no descriptor stays open, and nothing outlives the heap.
  CHECK(open_segment_fds() == 0);
  CHECK(segment_mappings() == size_t(boot->size()));
  memory.reset();
  CHECK(segment_mappings() == 0);
}

TEST_CASE("heap memory: a VMM heap grows chunk by chunk and every peer sees each new chunk") {
  auto boot = make_boot();
  const std::vector<bool> same_node(boot->size(), true);
  auto memory = must_make(config_for(Mode::Vmm, *boot), *boot, same_node);
  CHECK(memory->size() == kHeap);
  CHECK(memory->mapped() == 0);
  CHECK(memory->peer_base(boot->rank()) == memory->base());
  CHECK(memory->ensure_mapped(0).ok());
  CHECK(memory->mapped() == 0);

  struct Step {
    size_t end, mapped;
  };
  const Step steps[] = {
      {1, kChunk},                 // one byte backs a whole chunk
      {5 * kMiB, 6 * kMiB},        // several chunks at once
      {5 * kMiB + 1, 6 * kMiB},    // already mapped: nothing to do
      {6 * kMiB, 6 * kMiB},        // exactly the mapped end
      {40 * kMiB + 3, 42 * kMiB},  // many chunks, rounded up
      {kHeap, kHeap},              // the whole heap
  };
  std::vector<std::pair<size_t, size_t>> stamped;  // grown ranges; range i has salt 2 (i + 1)
  for (const Step& step : steps) {
    CAPTURE(step.end);
    const size_t before = memory->mapped();
    const Status s = memory->ensure_mapped(step.end);
    REQUIRE_MESSAGE(s.ok(), s.message());
    CHECK(memory->mapped() == step.mapped);
    if (step.mapped == before) continue;
    stamped.emplace_back(before, step.mapped);
    check_range(*memory, *boot, same_node, before, step.mapped, 2 * stamped.size());
    // Growing must leave what earlier chunks hold in place, for the owner and for every peer.
    for (size_t i = 0; i < stamped.size(); ++i) {
      for (int pe = 0; pe < boot->size(); ++pe) {
        for (size_t offset : probes(stamped[i].first, stamped[i].second))
          CHECK(mismatches(memory->peer_base(pe), offset, pe, 2 * (i + 1)) == 0);
      }
    }
    REQUIRE(boot->barrier().ok());
  }

  Status s = memory->ensure_mapped(kHeap + 1);
  REQUIRE_FALSE(s.ok());
  CHECK(s.message() == beyond_error(kHeap + 1));
  s = memory->ensure_mapped(2 * kHeap);
  CHECK(s.message() == beyond_error(2 * kHeap));
  CHECK(memory->mapped() == kHeap);

  CHECK(open_segment_fds() == 0);
  CHECK(segment_mappings() > 0);
  memory.reset();
  CHECK(segment_mappings() == 0);
}

// malloc_align's promise rests on this (heap_memory.hpp): mmap gives page alignment only, so a
// view that is not trimmed to the boundary fails here on most runs.
TEST_CASE("heap memory: every PE's heap and every view of it start on a kBaseAlignment boundary") {
  auto boot = make_boot();
  const std::vector<bool> same_node(boot->size(), true);
  // A static heap whose size is not a whole number of pages, too: the trim keeps its last page.
  struct Case {
    Mode mode;
    size_t size;
  };
  for (const Case& c :
       {Case{Mode::Static, kHeap}, Case{Mode::Static, 3 * kMiB + 100}, Case{Mode::Vmm, kHeap}}) {
    CAPTURE(static_cast<int>(c.mode));
    CAPTURE(c.size);
    HeapConfig config = config_for(c.mode, *boot);
    config.size = c.size;
    auto memory = must_make(config, *boot, same_node);
    for (int pe = 0; pe < boot->size(); ++pe) {
      CAPTURE(pe);
      CHECK(reinterpret_cast<uintptr_t>(memory->peer_base(pe)) % mori::heap::kBaseAlignment == 0);
    }
    const Status s = memory->ensure_mapped(c.size);
    REQUIRE_MESSAGE(s.ok(), s.message());
    check_range(*memory, *boot, same_node, 0, c.size, 11);
  }
}

TEST_CASE("heap memory: PEs on other nodes get no mapping, in both modes") {
  auto boot = make_boot();
  // Pretend even and odd ranks live on two nodes. With two ranks, each PE is alone on its node.
  std::vector<bool> same_node(boot->size());
  for (int pe = 0; pe < boot->size(); ++pe) same_node[pe] = pe % 2 == boot->rank() % 2;
  for (Mode mode : {Mode::Static, Mode::Vmm}) {
    CAPTURE(static_cast<int>(mode));
    auto memory = must_make(config_for(mode, *boot), *boot, same_node);
    const Status s = memory->ensure_mapped(3 * kChunk);
    REQUIRE_MESSAGE(s.ok(), s.message());
    check_range(*memory, *boot, same_node, 0, 3 * kChunk, 9);
  }
}

TEST_CASE("heap memory: a bad configuration fails on every PE, saying why") {
  auto boot = make_boot();
  const std::vector<bool> same_node(boot->size(), true);
  const std::string page = std::to_string(sysconf(_SC_PAGESIZE));
  std::unique_ptr<HeapMemory> memory;

  HeapConfig config = config_for(Mode::Vmm, *boot);
  config.chunk_size = 1000;
  config.size = 64000;
  Status s = mori::heap::make_heap_memory(config, *boot, same_node, &memory);
  CHECK(s.message() == "heap: the VMM chunk size 1000 is not a multiple of the page size " + page);

  config.chunk_size = kChunk;
  config.size = kHeap + 4096;
  s = mori::heap::make_heap_memory(config, *boot, same_node, &memory);
  CHECK(s.message() == "heap: the heap size 67112960 is not a multiple of the VMM chunk size " +
                           std::to_string(kChunk));

  config.mode = Mode::Static;
  config.size = 0;
  s = mori::heap::make_heap_memory(config, *boot, same_node, &memory);
  CHECK(s.message() == "heap: the heap size is 0");

  config.size = kHeap;
  s = mori::heap::make_heap_memory(config, *boot, std::vector<bool>(1, true), &memory);
  CHECK(s.message() ==
        "heap: same_node has 1 entries for " + std::to_string(boot->size()) + " PEs");
  CHECK(memory == nullptr);
}

TEST_CASE("heap memory: when one PE fails, the others fail too and name it") {
  auto boot = make_boot();
  const int me = boot->rank();
  std::unique_ptr<HeapMemory> memory;
  HeapConfig config = config_for(Mode::Static, *boot);

  // Only rank 0 is given a bad argument.
  std::vector<bool> same_node(me == 0 ? 1 : boot->size(), true);
  Status s = mori::heap::make_heap_memory(config, *boot, same_node, &memory);
  CHECK(s.message() ==
        (me == 0 ? "heap: same_node has 1 entries for " + std::to_string(boot->size()) + " PEs"
                 : "heap: rank(s) 0 failed to set up its heap memory"));

  // Rank 0 believes every PE shares its node; the others believe they are alone, so they open no
  // socket and rank 0 cannot reach them.
  config = config_for(Mode::Static, *boot);
  same_node.assign(boot->size(), me == 0);
  same_node[me] = true;
  s = mori::heap::make_heap_memory(config, *boot, same_node, &memory);
  CHECK(s.message() ==
        (me == 0 ? "heap: connecting to same-node rank 1: connect: Connection refused"
                 : "heap: rank(s) 0 failed to exchange heap segments with its same-node peers"));
  CHECK(memory == nullptr);
}

TEST_CASE("heap memory: a PE that fails with others says which others failed too") {
  auto boot = make_boot();
  const int me = boot->rank(), n = boot->size();
  std::unique_ptr<HeapMemory> memory;
  HeapConfig config = config_for(Mode::Static, *boot);

  // Ranks 0 and 1 are given a bad argument: each gives its own reason, then names the other when
  // some PE did not fail, so that a PE whose failure only echoes another's (it waited on a peer
  // that gave up) still leads to the PE that failed first. The rest name both. On 2 PEs every PE
  // fails, and each says only its own reason.
  std::vector<bool> same_node(me <= 1 ? 1 : n, true);
  Status s = mori::heap::make_heap_memory(config, *boot, same_node, &memory);
  const std::string own = "heap: same_node has 1 entries for " + std::to_string(n) + " PEs";
  if (me <= 1 && n == 2)
    CHECK(s.message() == own);
  else if (me <= 1)
    CHECK(s.message() ==
          own + " (rank(s) " + std::to_string(1 - me) + " failed to set up its heap memory too)");
  else
    CHECK(s.message() == "heap: rank(s) 0, 1 failed to set up its heap memory");
  CHECK(memory == nullptr);
}
