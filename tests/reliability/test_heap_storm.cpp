// Heap exhaustion under a concurrent malloc storm: several threads per PE allocate until the heap
// is full. Every failing malloc returns null with the exhaustion text on its own thread's
// last_error, every PE gets the same number of blocks at the same offsets, and the heap loses
// nothing: after freeing, the whole heap (less the runtime's own area) is allocatable again, and a
// second storm gets as many blocks as the first.
#include <algorithm>
#include <mutex>
#include <thread>

#include "faults.hpp"
#include "runtime/runtime.hpp"

namespace shmem = mori::shmem;
using namespace mori::test;

namespace {

constexpr size_t kHeap = size_t{8} << 20;
constexpr size_t kBlock = 100000;  // not a multiple of the 256-byte alignment: padding holes too
constexpr size_t kAlign = 256;
constexpr int kThreads = 4;

constexpr size_t round_up(size_t v, size_t a) { return (v + a - 1) / a * a; }

// First fit after the runtime's areas at offset 0: blocks of kBlock every round_up(kBlock) bytes.
constexpr size_t kFirst = round_up(mori::runtime::kDefaultReservedBytes, kAlign);
constexpr size_t kStride = round_up(kBlock, kAlign);
constexpr size_t kFits = (kHeap - kFirst - kBlock) / kStride + 1;
constexpr size_t kTail = kHeap - (kFirst + (kFits - 1) * kStride + kBlock);
static_assert(kTail < kBlock && kTail > kStride - kBlock, "the last hole is the largest");

const std::string kExhausted = "malloc: symmetric heap exhausted: " + std::to_string(kBlock) +
                               " bytes requested (alignment " + std::to_string(kAlign) +
                               "), largest free block is " + std::to_string(kTail) + " bytes of " +
                               std::to_string(kHeap) + "; raise MORI_SHMEM_HEAP_SIZE";

// kThreads threads malloc kBlock until each gets null; returns the blocks, sorted, or a reason.
std::string storm(std::vector<char*>* blocks) {
  std::mutex mu;
  std::vector<std::string> errors(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (;;) {
        void* p = shmem::malloc(kBlock);
        if (!p) {
          errors[t] = shmem::last_error();  // this thread's own
          return;
        }
        std::lock_guard lock(mu);
        blocks->push_back(static_cast<char*>(p));
      }
    });
  }
  for (auto& t : threads) t.join();
  std::sort(blocks->begin(), blocks->end());
  for (const std::string& e : errors)
    if (e != kExhausted) return "a failing malloc said \"" + e + "\", want \"" + kExhausted + "\"";
  return "";
}

void run_storm(const char* mode) {
  CaseEnv env(
      {{"MORI_SHMEM_HEAP_SIZE", "8M"},
       {"MORI_SHMEM_MODE", mode},
       {"MORI_SHMEM_VMM_CHUNK_SIZE", "2M"},  // vmm_heap: 4 chunks, mapped as the storm grows
       {"MORI_SHMEM_CHECK_SYMMETRY", "1"},   // the PEs compare every call, in any build
       {"MORI_SHMEM_BOOTSTRAP_TIMEOUT", "10"}});
  const shmem::UniqueId job = new_id();
  const ChildRun run = run_ranks(
      2,
      [&](int rank) -> std::string {
        FAULT_CHECK(init_uid(job, rank, 2) == 0);
        char* base = nullptr;
        for (int round = 0; round < 2; ++round) {
          std::vector<char*> blocks;
          if (std::string why = storm(&blocks); !why.empty()) return why;
          FAULT_CHECK(blocks.size() == kFits);
          if (!base) base = blocks[0] - kFirst;
          for (size_t i = 0; i < blocks.size(); ++i)  // first fit: the same offsets on every PE
            FAULT_CHECK(blocks[i] == base + kFirst + i * kStride);
          // Symmetric frees are collective: every PE frees in the same (address) order.
          for (char* p : blocks) FAULT_CHECK(shmem::free(p) == 0);
          // Nothing was lost: everything after the runtime's area is one hole again.
          void* all = shmem::malloc(kHeap - kFirst);
          FAULT_CHECK(all == base + kFirst);
          FAULT_CHECK(shmem::malloc(1) == nullptr);
          FAULT_EQ(shmem::last_error(),
                   "malloc: symmetric heap exhausted: 1 bytes requested (alignment 256), largest "
                   "free block is 0 bytes of " +
                       std::to_string(kHeap) + "; raise MORI_SHMEM_HEAP_SIZE");
          FAULT_CHECK(shmem::free(all) == 0);
        }
        FAULT_CHECK(shmem::finalize() == 0);
        return "";
      },
      std::chrono::seconds(60));
  expect_children(run, {0, 1});
}

}  // namespace

TEST_CASE(
    "heap storm: concurrent mallocs exhaust a static heap, fail with the reason, lose nothing") {
  run_storm("static_heap");
}

TEST_CASE("heap storm: the same in a VMM heap, mapped chunk by chunk as the storm grows") {
  run_storm("vmm_heap");
}
