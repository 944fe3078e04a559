// copy<Scope>: every size from 0 to 4097 and 16 MiB, every source and destination misalignment
// 0..15, poisoned guard bytes around the destination, and PROT_NONE pages around the source so that
// a stray read faults. The sanitizer lanes run the edge sizes only (edge_sweep).
#include <doctest/doctest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <type_traits>
#include <vector>

#include "mori/core.hpp"
#include "mori/host/launch.hpp"
#include "sanitized.hpp"

namespace {

constexpr unsigned char kPoison = 0xA5;
constexpr size_t kGuard = 64;

// A source buffer with an inaccessible page on each side. A case places its bytes flush against one
// of the two guard pages, alternating, so that reading one byte too many on either end faults.
class GuardedSource {
 public:
  explicit GuardedSource(size_t max_bytes) {
    page_ = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    span_ = (max_bytes + 16 + page_ - 1) / page_ * page_;
    base_ = static_cast<char*>(mmap(nullptr, span_ + 2 * page_, PROT_READ | PROT_WRITE,
                                    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    REQUIRE(base_ != MAP_FAILED);
    mprotect(base_, page_, PROT_NONE);
    mprotect(base_ + page_ + span_, page_, PROT_NONE);
    for (size_t i = 0; i < span_; ++i) base_[page_ + i] = static_cast<char>((i * 131 + 7) % 251);
  }
  ~GuardedSource() { munmap(base_, span_ + 2 * page_); }
  // Bytes whose first byte has address phase `misalign` mod 16, touching a guard page at one end.
  const char* place(size_t bytes, size_t misalign, bool at_end) const {
    if (!at_end) return base_ + page_ + misalign;
    const char* end = base_ + page_ + span_;
    const char* p = end - bytes;
    p -= ((reinterpret_cast<uintptr_t>(p) & 15) - misalign) & 15;  // move down to the wanted phase
    return p;
  }

 private:
  size_t page_ = 0, span_ = 0;
  char* base_ = nullptr;
};

struct Case {
  size_t bytes, src_misalign, dst_misalign;
};

// Sizes where the copy's shape changes: the 16-byte vector and its neighbours, powers of two and
// the end of the sweep; the edge sweep adds the 96-thread block's 1536-byte stride and its double.
constexpr size_t kEdges[] = {0,   1,   2,   3,    7,    8,    15,   16,   17,
                             31,  32,  33,  63,   64,   65,   127,  128,  129,
                             255, 256, 257, 1023, 1024, 1025, 4095, 4096, 4097};
constexpr size_t kStrideEdges[] = {1535, 1536, 1537, 3071, 3072, 3073};
constexpr size_t kBig = size_t{16} << 20;

// The sanitizer lanes copy the edge sizes at 16 misalignment pairs and one 16 MiB copy (about 530
// cases instead of 11,000, which took 150 s of the TSan lane for copy<Block>, and 1 million for
// copy<Thread>, 33 s under ASan). What each sanitizer adds depends on the copy's shape, not on every
// size: TSan looks for lanes writing each other's bytes or the leader's check reading bytes still
// being written, which follows how a size splits across lanes; UBSan's misaligned accesses follow
// the misalignment pair and the size class. An overrun, ASan's finding, the main suite already
// catches at every size: the guard pages fault a stray read, the poisoned guard bytes a stray write.
std::vector<Case> edge_sweep() {
  std::vector<Case> cases;
  auto add = [&](size_t n) {
    for (size_t c = 0; c < 16; ++c) cases.push_back({n, c, (c * 7 + 3) & 15});
  };
  for (size_t n : kEdges) add(n);
  for (size_t n : kStrideEdges) add(n);
  cases.push_back({kBig, 3, 3});
  return cases;
}

std::vector<Case> sweep(bool full_cross_product) {
  if (mori::test::kSanitized) return edge_sweep();
  std::vector<Case> cases;
  for (size_t n = 0; n <= 4097; ++n) {
    if (full_cross_product) {
      for (size_t c = 0; c < 256; ++c) cases.push_back({n, c & 15, c >> 4});
    } else {
      cases.push_back({n, n & 15, (n >> 4) & 15});  // every pair of misalignments recurs 16 times
    }
  }
  if (!full_cross_product) {
    for (size_t n : kEdges)
      for (size_t c = 0; c < 256; ++c) cases.push_back({n, c & 15, c >> 4});
  }
  for (Case c : {Case{kBig, 0, 0}, Case{kBig, 3, 3}, Case{kBig, 1, 6}, Case{kBig, 8, 0}})
    cases.push_back(c);
  return cases;
}

// Runs every case inside one launch: the leader poisons the destination, the scope copies, the
// leader checks.
template <typename S>
void run_copy_cases(const std::vector<Case>& cases, mori::host::LaunchConfig config) {
  size_t max_bytes = 0;
  for (const Case& c : cases) max_bytes = c.bytes > max_bytes ? c.bytes : max_bytes;
  GuardedSource source(max_bytes);
  // Each warp of a Warp-scope launch is its own scope and gets its own destination.
  const int groups = std::is_same_v<S, mori::Warp>
                         ? (config.block.count() + config.warp_size - 1) / config.warp_size
                         : 1;
  std::vector<std::vector<unsigned char>> dst(groups);
  for (auto& d : dst) d.resize(max_bytes + 2 * kGuard + 32);

  auto kernel = [&] {
    const int group = std::is_same_v<S, mori::Warp> ? mori::platform::warp_id() : 0;
    char* const dst_base = reinterpret_cast<char*>(
        (reinterpret_cast<uintptr_t>(dst[group].data()) + kGuard + 15) / 16 * 16);  // 16-aligned
    for (size_t i = 0; i < cases.size(); ++i) {
      const Case& c = cases[i];
      const char* src = source.place(c.bytes, c.src_misalign, i % 2 == 1);
      char* out = dst_base + c.dst_misalign;
      if (S::leader()) std::memset(out - kGuard, kPoison, c.bytes + 2 * kGuard);
      S::sync();
      mori::copy<S>(out, src, c.bytes);
      S::sync();
      if (!S::leader()) continue;
      char what[160];
      for (size_t g = 0; g < kGuard; ++g) {
        if (static_cast<unsigned char>(out[-1 - static_cast<ptrdiff_t>(g)]) != kPoison ||
            static_cast<unsigned char>(out[c.bytes + g]) != kPoison) {
          std::snprintf(what, sizeof what, "guard byte %zu overwritten: bytes %zu src+%zu dst+%zu",
                        g, c.bytes, c.src_misalign, c.dst_misalign);
          mori::platform::trap(what);
        }
      }
      if (std::memcmp(out, src, c.bytes) != 0) {
        std::snprintf(what, sizeof what, "data differs: bytes %zu src+%zu dst+%zu", c.bytes,
                      c.src_misalign, c.dst_misalign);
        mori::platform::trap(what);
      }
    }
  };
  auto status = mori::host::launch(config, kernel);
  CHECK_MESSAGE(status.ok(), status.message());
}

}  // namespace

TEST_CASE("copy<Thread>: every size 0..4097 x every misalignment pair, and 16 MiB") {
  // The million-copy cross product runs in the main suite; the sanitizer lanes run the edge sweep
  // (over 300 s under TSan, 33 s under ASan, for nothing the edge sweep misses).
  run_copy_cases<mori::Thread>(sweep(true), {{1}, {1}});
}

TEST_CASE("copy<Warp>: sizes 0..4097 and 16 MiB over all misalignments, 64 lanes") {
  run_copy_cases<mori::Warp>(sweep(false), {{1}, {64}});
}

TEST_CASE("copy<Warp>: a narrow host warp of 8 lanes and a partial last warp") {
  // A block of 20 threads with 8-lane warps: warps of 8, 8 and 4 lanes. Every warp copies its own
  // cases.
  run_copy_cases<mori::Warp>(sweep(false), {{1}, {20}, 8});
}

TEST_CASE("copy<Block>: sizes 0..4097 and 16 MiB over all misalignments, 96 threads") {
  run_copy_cases<mori::Block>(sweep(false), {{1}, {96}});
}

TEST_CASE("copy: a failing check inside the copy loop fails the launch with its message") {
  // The checker must be able to fail: corrupt one destination byte after the copy and expect the
  // trap.
  std::vector<char> src(100, 'x'), dst(100, 0);
  auto status = mori::host::launch({1}, {64}, [&] {
    mori::copy<mori::Warp>(dst.data(), src.data(), src.size());
    mori::Warp::sync();
    if (mori::Warp::leader()) {
      dst[42] = 'y';
      if (std::memcmp(dst.data(), src.data(), src.size()) != 0)
        mori::platform::trap("data differs");
    }
  });
  CHECK_FALSE(status.ok());
  CHECK(status.message().find("data differs") != std::string::npos);
}

// The GPU's interleaved vector loop (detail::copy_vectors_interleaved), which the host backend's
// copy never takes (it copies one span per participant): run here lane by lane, for scopes of 1 to
// 96 participants, counts around every unroll boundary, both stride forms and the unrolled and
// single-vector loops (a partial warp's). Every vector must be
// written exactly once with its source bytes, no load may leave the source, and the poisoned
// guards around the destination must stay intact.
TEST_CASE("copy: the GPU's interleaved vector loop, run lane by lane") {
  using mori::platform::Vec16;
  for (const size_t size : {size_t{1}, size_t{2}, size_t{3}, size_t{8}, size_t{64}, size_t{96}}) {
    std::vector<size_t> counts = {0, 1, 2, 3, 4, 5, 1000};
    for (const size_t k : {size_t{1}, size_t{2}, size_t{3}})
      for (const long d : {-1L, 0L, 1L}) counts.push_back(4 * size * k + d);
    for (const size_t count : counts) {
      for (const int form : {0, 1, 2}) {  // 4 per iteration, with opaque stride; 1 per iteration
        CAPTURE(size);
        CAPTURE(count);
        CAPTURE(form);
        // Plain words: a vector of Vec16 would drop its may_alias attribute (-Wignored-attributes).
        static_assert(sizeof(std::array<unsigned, 4>) == 16);
        std::vector<std::array<unsigned, 4>> src(count + 1), dst(count + 2 * kGuard / 16);
        for (size_t i = 0; i < count; ++i)
          for (unsigned w = 0; w < 4; ++w) src[i][w] = static_cast<unsigned>(i * 4 + w + 1);
        std::memset(dst.data(), kPoison, dst.size() * 16);
        char* to = reinterpret_cast<char*>(dst.data()) + kGuard;
        const char* from = reinterpret_cast<const char*>(src.data());
        std::vector<int> stores(count, 0);
        bool loads_inside = true;
        auto load = [&](const char* p) {
          loads_inside &= p >= from && p + 16 <= from + 16 * count;
          Vec16 v;
          std::memcpy(&v, p, 16);
          return v;
        };
        bool stores_inside = true;
        auto store = [&](char* p, Vec16 v) {
          const bool inside = p >= to && p + 16 <= to + 16 * count;
          stores_inside &= inside;
          if (!inside) return;  // counted as a failure; not written, so as not to corrupt the heap
          ++stores[static_cast<size_t>(p - to) / 16];
          std::memcpy(p, &v, 16);
        };
        for (size_t rank = 0; rank < size; ++rank) {
          if (form == 0)
            mori::detail::copy_vectors_interleaved<false>(to, from, count, rank, size, load, store);
          else if (form == 1)
            mori::detail::copy_vectors_interleaved<true>(to, from, count, rank, size, load, store);
          else
            mori::detail::copy_vectors_interleaved<false, 1>(to, from, count, rank, size, load,
                                                             store);
        }
        CHECK(loads_inside);
        CHECK(stores_inside);
        bool once = true;
        for (const int n : stores) once &= n == 1;
        CHECK(once);
        CHECK(std::memcmp(to, from, 16 * count) == 0);
        bool guards = true;
        const auto* bytes = reinterpret_cast<const unsigned char*>(dst.data());
        for (size_t b = 0; b < kGuard; ++b) guards &= bytes[b] == kPoison;
        for (size_t b = kGuard + 16 * count; b < dst.size() * 16; ++b)
          guards &= bytes[b] == kPoison;
        CHECK(guards);
      }
    }
  }
}
