// put_nbi / put / get_nbi / get over P2P and over RDMA, for every element type and every scope,
// untyped and typed, by pure address and by symmetric object, in a ring and all-to-all, with odd
// sizes and offsets. Data is checked on every PE, and the poisoned bytes around every destination
// must be intact. The local side (a put's source, a get's destination) is a registered buffer, and
// over P2P also plain memory (std::vector): over P2P any local memory may be used, over RDMA only
// the heap or a registered buffer (include/mori/transport/rdma.hpp). iput and iget (strided) run
// typed and sized in every scope, with strides 1 and above on each side and 0, 1, 7 and 100
// elements; the gaps between the strided elements are poison and must stay so.
#include <cstring>
#include <optional>
#include <vector>

#include "device_harness.hpp"

namespace shmem = mori::shmem;
using namespace mori::test;
using mori::Block;
using mori::Thread;
using mori::Warp;

namespace {

constexpr size_t kSizes[] = {1, 7, 33, 1000};
constexpr size_t kOffsets[] = {0, 3};
constexpr size_t kMaxElems = 1003;

enum class Form { kBytes, kTyped, kBlocking, kObject };
enum class Pattern { kRing, kAllToAll };
// The local memory of a put's source or a get's destination.
enum class Local { kPlain, kRegistered };

// The local memory kinds to test: plain memory only over P2P (over RDMA it has no memory key, and
// the launch fails by design, as with NVSHMEM's remote transports).
std::vector<Local> local_kinds() {
  if (over_rdma()) return {Local::kRegistered};
  return {Local::kPlain, Local::kRegistered};
}

// Whether to run `kind` in Warp and Block scope too. Over P2P a registered buffer is plain memory
// to the transport (only RDMA looks up its key), so Thread scope covers it there and keeps the
// P2P run's time near what it was with plain memory alone.
bool every_scope(Local kind) { return kind == Local::kPlain || over_rdma(); }

// A local buffer of `n` elements of the given kind (registered: collectively, on every PE).
template <typename T>
class LocalBuffer {
 public:
  LocalBuffer(Local kind, size_t n) {
    if (kind == Local::kRegistered)
      registered_.emplace(n);
    else
      plain_.resize(n);
  }
  T* data() { return registered_ ? registered_->data() : plain_.data(); }
  size_t size() const { return registered_ ? registered_->size() : plain_.size(); }

 private:
  std::vector<T> plain_;
  std::optional<Registered<T>> registered_;
};

// The PEs this PE targets, and the slots it expects to be written on it.
std::vector<int> targets(Pattern p, int me, int n) {
  if (p == Pattern::kRing) return {(me + 1) % n};
  std::vector<int> all;
  for (int pe = 0; pe < n; ++pe) all.push_back(pe);
  return all;
}

// One call of a form: the pattern, the element count and the offset into the symmetric slot.
struct RmaCase {
  Pattern pattern;
  size_t nelems, off;
};
// Every pattern, size and offset. One launch makes all of them, each into slots of its own, with
// no quiet in between: the calls of a launch are in flight together, as in a kernel.
std::vector<RmaCase> rma_cases() {
  std::vector<RmaCase> cases;
  for (Pattern pattern : {Pattern::kRing, Pattern::kAllToAll})
    for (size_t nelems : kSizes)
      for (size_t off : kOffsets) cases.push_back({pattern, nelems, off});
  return cases;
}

std::string where(const RmaCase& c) {
  return std::string(c.pattern == Pattern::kRing ? "ring" : "all-to-all") + ", " +
         std::to_string(c.nelems) + " elements at offset " + std::to_string(c.off);
}

// Bytes of slot `s` outside [off, off + nelems) must still be poison; inside, the values PE
// `writer` sent.
template <typename T>
std::string check_slot(const T* slot, size_t off, size_t nelems, int writer, size_t guard) {
  const auto* bytes = reinterpret_cast<const unsigned char*>(slot);
  const size_t begin = off * sizeof(T), end = (off + nelems) * sizeof(T);
  for (size_t b = 0; b < guard; ++b)
    if (bytes[-1 - static_cast<ptrdiff_t>(b)] != GuardedSlots<T>::kPoison)
      return "guard before the slot hit";
  for (size_t b = 0; b < begin; ++b)
    if (bytes[b] != GuardedSlots<T>::kPoison) return "byte before the offset hit";
  for (size_t b = end; b < kMaxElems * sizeof(T) + guard; ++b)
    if (bytes[b] != GuardedSlots<T>::kPoison)
      return "byte " + std::to_string(b) + " past the data hit";
  for (size_t i = 0; i < nelems; ++i)
    if (slot[off + i] != value_of<T>(writer, i)) return "element " + std::to_string(i) + " differs";
  return "";
}

// Every PE writes its own slot of each case on each target: slot c * n + writer.
template <typename S, typename T>
void run_puts(const Session& s, Form form, Local kind) {
  CAPTURE(static_cast<int>(kind));
  const std::vector<RmaCase> cases = rma_cases();
  GuardedSlots<T> dst(cases.size() * s.n, kMaxElems);
  LocalBuffer<T> src(kind, kMaxElems);
  for (size_t i = 0; i < kMaxElems; ++i) src.data()[i] = value_of<T>(s.me, i);
  REQUIRE(shmem::barrier_all() == 0);
  launch({1}, block_for<S>(), [&] {
    for (size_t c = 0; c < cases.size(); ++c) {
      const auto [pattern, nelems, off] = cases[c];
      T* slot = dst.slot(c * s.n + s.me);
      for (int pe : targets(pattern, s.me, s.n)) {
        switch (form) {
          case Form::kBytes:
            shmem::putmem_nbi<S>(slot + off, src.data(), nelems * sizeof(T), pe);
            break;
          case Form::kTyped:
            shmem::put_nbi<S>(slot + off, src.data(), nelems, pe);
            break;
          case Form::kBlocking:
            shmem::put<S>(slot + off, src.data(), nelems, pe);
            break;
          case Form::kObject:
            shmem::put_nbi<S>(shmem::SymmObj<T>{slot, kMaxElems}, off, src.data(), nelems, pe);
            break;
        }
      }
    }
    if (S::leader()) shmem::quiet();
  });
  REQUIRE(shmem::barrier_all() == 0);
  std::string bad;
  for (size_t c = 0; c < cases.size() && bad.empty(); ++c) {
    const auto [pattern, nelems, off] = cases[c];
    for (int writer = 0; writer < s.n && bad.empty(); ++writer) {
      const bool written = pattern == Pattern::kAllToAll || writer == (s.me + s.n - 1) % s.n;
      bad = check_slot(dst.slot(c * s.n + writer), written ? off : 0, written ? nelems : 0, writer,
                       64);
      if (!bad.empty())
        bad = where(cases[c]) + ", slot of PE " + std::to_string(writer) + ": " + bad;
    }
  }
  CHECK_MESSAGE(bad.empty(), bad);
  REQUIRE(all_ranks(bad.empty()));
}

// Every PE gets each case from each source PE into a local region of its own, (c * n + pe).
template <typename S, typename T>
void run_gets(const Session& s, Form form, Local kind) {
  CAPTURE(static_cast<int>(kind));
  const std::vector<RmaCase> cases = rma_cases();
  GuardedSlots<T> src(1, kMaxElems);
  for (size_t i = 0; i < kMaxElems; ++i) src.slot(0)[i] = value_of<T>(s.me, i);
  REQUIRE(shmem::barrier_all() == 0);
  constexpr size_t kGuard = 64;
  const size_t stride = kGuard + kMaxElems * sizeof(T) + kGuard;
  LocalBuffer<unsigned char> local(kind, stride * s.n * cases.size());
  std::memset(local.data(), GuardedSlots<T>::kPoison, local.size());
  auto region = [&](size_t c, int pe) {
    return reinterpret_cast<T*>(local.data() + (c * s.n + pe) * stride + kGuard);
  };
  launch({1}, block_for<S>(), [&] {
    for (size_t c = 0; c < cases.size(); ++c) {
      const auto [pattern, nelems, off] = cases[c];
      for (int pe : targets(pattern, s.me, s.n)) {
        T* d = region(c, pe);  // local, not symmetric: plain memory (P2P only) or registered
        const T* remote = src.slot(0) + off;
        switch (form) {
          case Form::kBytes:
            shmem::getmem_nbi<S>(d, remote, nelems * sizeof(T), pe);
            break;
          case Form::kTyped:
            shmem::get_nbi<S>(d, remote, nelems, pe);
            break;
          case Form::kBlocking:
            shmem::get<S>(d, remote, nelems, pe);
            break;
          case Form::kObject:
            shmem::get<S>(d, shmem::SymmObj<T>{src.slot(0), kMaxElems}, off, nelems, pe);
            break;
        }
      }
    }
    if (S::leader()) shmem::quiet();
  });
  std::string bad;
  for (size_t c = 0; c < cases.size() && bad.empty(); ++c) {
    const auto [pattern, nelems, off] = cases[c];
    for (int pe = 0; pe < s.n && bad.empty(); ++pe) {
      const bool read = pattern == Pattern::kAllToAll || pe == (s.me + 1) % s.n;
      // The get wrote elements [0, nelems) of the region with the source's [off, off + nelems).
      const T* got = region(c, pe);
      const auto* bytes = reinterpret_cast<const unsigned char*>(got);
      const size_t end = read ? nelems * sizeof(T) : 0;
      for (size_t b = 0; b < kGuard && bad.empty(); ++b)
        if (bytes[-1 - static_cast<ptrdiff_t>(b)] != GuardedSlots<T>::kPoison)
          bad = "guard before hit";
      for (size_t b = end; b < stride - kGuard && bad.empty(); ++b)
        if (bytes[b] != GuardedSlots<T>::kPoison)
          bad = "byte " + std::to_string(b) + " past the data hit";
      for (size_t i = 0; read && i < nelems && bad.empty(); ++i)
        if (got[i] != value_of<T>(pe, off + i)) bad = "element " + std::to_string(i) + " differs";
      if (!bad.empty()) bad = where(cases[c]) + ", data from PE " + std::to_string(pe) + ": " + bad;
    }
  }
  CHECK_MESSAGE(bad.empty(), bad);
  REQUIRE(all_ranks(bad.empty()));
  REQUIRE(shmem::barrier_all() == 0);  // nobody frees `src` while a peer may still read it
}

template <typename T>
void all_scopes_put(Form form) {
  Session s;
  for (Local kind : local_kinds()) {
    run_puts<Thread, T>(s, form, kind);
    if (!every_scope(kind)) continue;
    run_puts<Warp, T>(s, form, kind);
    run_puts<Block, T>(s, form, kind);
  }
}
template <typename T>
void all_scopes_get(Form form) {
  Session s;
  for (Local kind : local_kinds()) {
    run_gets<Thread, T>(s, form, kind);
    if (!every_scope(kind)) continue;
    run_gets<Warp, T>(s, form, kind);
    run_gets<Block, T>(s, form, kind);
  }
}

// ---- strided: iput / iget --------------------------------------------------------------------
// Each call moves nelems elements of kTsPerElement T's: typed (T itself), sized (iput<8 *
// sizeof(T)>) or 128-bit (iput<128>, two T's an element, run for the 8-byte types only: the sized
// forms see only bytes). The T at index j of any source array holds
// value_of<T>(owner, j).
enum class Width { kTyped, kSized, k128 };

struct StridedCase {
  size_t dst, sst, nelems;
};
// Both strides 1 (the contiguous path), one of them 1, neither; no elements, one, fewer than a
// warp, and more than a block that no scope's lane count divides.
std::vector<StridedCase> strided_cases() {
  std::vector<StridedCase> cases;
  for (auto [dst, sst] : {std::pair<size_t, size_t>{1, 1}, {1, 3}, {2, 1}, {3, 2}})
    for (size_t nelems : {0, 1, 7, 100}) cases.push_back({dst, sst, nelems});
  return cases;
}
constexpr size_t kStridedSpan = 99 * 3 + 1;  // elements a destination or source spans at most
constexpr size_t kStridedGuard = 64;

template <typename T, Width W>
constexpr size_t kTsPerElement = W == Width::k128 ? 16 / sizeof(T) : 1;

// What a destination of kStridedSpan elements, poisoned and with kStridedGuard poisoned bytes on
// each side, holds after the call: element i at i * dst is the source's element i * sst.
template <typename T, size_t kPer>
std::vector<unsigned char> strided_image(const StridedCase& c, int owner) {
  constexpr size_t kElem = kPer * sizeof(T);
  std::vector<unsigned char> image(kStridedGuard + kStridedSpan * kElem + kStridedGuard,
                                   GuardedSlots<T>::kPoison);
  for (size_t i = 0; i < c.nelems; ++i)
    for (size_t k = 0; k < kPer; ++k) {
      const T v = value_of<T>(owner, i * c.sst * kPer + k);
      std::memcpy(&image[kStridedGuard + i * c.dst * kElem + k * sizeof(T)], &v, sizeof(T));
    }
  return image;
}

// "" when the bytes around and inside `dest` (its kStridedGuard bytes before it included) are
// `image`, else where they first differ.
std::string compare_image(const void* dest, const std::vector<unsigned char>& image) {
  const auto* bytes = static_cast<const unsigned char*>(dest) - kStridedGuard;
  for (size_t b = 0; b < image.size(); ++b)
    if (bytes[b] != image[b])
      return "byte " + std::to_string(static_cast<ptrdiff_t>(b - kStridedGuard)) + " is " +
             std::to_string(bytes[b]) + ", expected " + std::to_string(image[b]);
  return "";
}

template <typename S, typename T, Width W, bool kGet>
void strided_call(T* dest, const T* source, const StridedCase& c, int pe) {
  const auto dst = static_cast<ptrdiff_t>(c.dst), sst = static_cast<ptrdiff_t>(c.sst);
  if constexpr (W == Width::kTyped && kGet)
    shmem::iget<S>(dest, source, dst, sst, c.nelems, pe);
  else if constexpr (W == Width::kTyped)
    shmem::iput<S>(dest, source, dst, sst, c.nelems, pe);
  else if constexpr (kGet)
    shmem::iget<8 * sizeof(T) * kTsPerElement<T, W>, S>(dest, source, dst, sst, c.nelems, pe);
  else
    shmem::iput<8 * sizeof(T) * kTsPerElement<T, W>, S>(dest, source, dst, sst, c.nelems, pe);
}

// One launch makes every call of strided_cases(), each with a local array of its own. iput: every
// PE puts into its own slots on the next PE, then poisons the call's source at once (the call is
// blocking: the source may be reused); each PE checks every slot it holds. iget: every PE gets
// from the next PE and takes a snapshot of the destination as soon as the call returns, which must
// hold the data. The local side is a registered buffer over RDMA (an iget's destination needs a
// key), plain memory over P2P.
template <typename S, typename T, Width W, bool kGet>
void run_strided(const Session& s) {
  CAPTURE(S::kName);
  CAPTURE(static_cast<int>(W));
  constexpr size_t kTs = kStridedSpan * kTsPerElement<T, W>;
  const std::vector<StridedCase> cases = strided_cases();
  const size_t n_cases = cases.size();
  const int next = (s.me + 1) % s.n, prev = (s.me + s.n - 1) % s.n;
  // iput: a destination slot per (writer, case); iget: one source slot.
  GuardedSlots<T> remote(kGet ? 1 : s.n * n_cases, kTs);
  const size_t region = kStridedGuard + kTs * sizeof(T) + kStridedGuard;
  LocalBuffer<unsigned char> local(over_rdma() ? Local::kRegistered : Local::kPlain,
                                   region * n_cases);
  std::vector<unsigned char> snapshot(local.size());
  auto local_array = [&](size_t c) {
    return reinterpret_cast<T*>(local.data() + c * region + kStridedGuard);
  };
  std::memset(local.data(), GuardedSlots<T>::kPoison, local.size());
  for (size_t c = 0; c < (kGet ? 1 : n_cases); ++c) {
    T* source = kGet ? remote.slot(0) : local_array(c);
    for (size_t j = 0; j < kTs; ++j) source[j] = value_of<T>(s.me, j);
  }
  REQUIRE(shmem::barrier_all() == 0);
  launch({1}, block_for<S>(), [&] {
    for (size_t c = 0; c < n_cases; ++c) {
      unsigned char* mine = local.data() + c * region;
      if constexpr (kGet) {
        strided_call<S, T, W, true>(local_array(c), remote.slot(0), cases[c], next);
        if (S::leader()) std::memcpy(snapshot.data() + c * region, mine, region);
      } else {
        strided_call<S, T, W, false>(remote.slot(s.me * n_cases + c), local_array(c), cases[c],
                                     next);
        if (S::leader()) std::memset(mine, GuardedSlots<T>::kPoison, region);
      }
    }
  });
  REQUIRE(shmem::barrier_all() == 0);
  std::string bad;
  for (size_t c = 0; c < n_cases && bad.empty(); ++c) {
    StridedCase none = cases[c];
    none.nelems = 0;
    for (int writer = 0; writer < s.n && bad.empty(); ++writer) {
      if (kGet && writer != next) continue;
      const void* dest =
          kGet ? static_cast<const void*>(snapshot.data() + c * region + kStridedGuard)
               : remote.slot(writer * n_cases + c);
      const bool written = kGet || writer == prev;
      bad = compare_image(dest,
                          strided_image<T, kTsPerElement<T, W>>(written ? cases[c] : none, writer));
      if (!bad.empty())
        bad = "dst " + std::to_string(cases[c].dst) + ", sst " + std::to_string(cases[c].sst) +
              ", " + std::to_string(cases[c].nelems) + " elements, from PE " +
              std::to_string(writer) + ": " + bad;
    }
  }
  CHECK_MESSAGE(bad.empty(), bad);
  REQUIRE(all_ranks(bad.empty()));
}

template <typename T, bool kGet>
void all_scopes_strided() {
  Session s;
  mori::for_each_scope([&]<typename S>() {
    run_strided<S, T, Width::kTyped, kGet>(s);
    run_strided<S, T, Width::kSized, kGet>(s);
    if constexpr (sizeof(T) == 8) run_strided<S, T, Width::k128, kGet>(s);
  });
}

}  // namespace

// X(id, test name, runner, form): the 8 forms, each applied to the 11 element types.
#define MORI_RMA_TEST_FORMS(X)                                                           \
  X(putmem_nbi_id, "putmem_nbi (bytes), all scopes", all_scopes_put, Form::kBytes)       \
  X(put_nbi_id, "put_nbi (typed), all scopes", all_scopes_put, Form::kTyped)             \
  X(put_id, "put (blocking), all scopes", all_scopes_put, Form::kBlocking)               \
  X(put_obj_id, "put_nbi (symmetric object), all scopes", all_scopes_put, Form::kObject) \
  X(getmem_nbi_id, "getmem_nbi (bytes), all scopes", all_scopes_get, Form::kBytes)       \
  X(get_nbi_id, "get_nbi (typed), all scopes", all_scopes_get, Form::kTyped)             \
  X(get_id, "get (blocking), all scopes", all_scopes_get, Form::kBlocking)               \
  X(get_obj_id, "get (symmetric object), all scopes", all_scopes_get, Form::kObject)

#define MORI_RMA_TEST_DEFINE(id, name, runner, form) \
  TEST_CASE_TEMPLATE_DEFINE(name, T, id) { runner<T>(form); }
MORI_RMA_TEST_FORMS(MORI_RMA_TEST_DEFINE)
#undef MORI_RMA_TEST_DEFINE

#define MORI_RMA_TEST_APPLY(id, name, runner, form) TEST_CASE_TEMPLATE_APPLY(id, ElementTuple);
MORI_RMA_TEST_FORMS(MORI_RMA_TEST_APPLY)
#undef MORI_RMA_TEST_APPLY
#undef MORI_RMA_TEST_FORMS

TEST_CASE_TEMPLATE_DEFINE("iput (strided), typed and sized, all scopes", T, iput_id) {
  all_scopes_strided<T, false>();
}
TEST_CASE_TEMPLATE_APPLY(iput_id, ElementTuple);
TEST_CASE_TEMPLATE_DEFINE("iget (strided), typed and sized, all scopes", T, iget_id) {
  all_scopes_strided<T, true>();
}
TEST_CASE_TEMPLATE_APPLY(iget_id, ElementTuple);
