// put_nbi / put / get_nbi / get over P2P and over RDMA, for every element type and every scope,
// untyped and typed, by pure address and by symmetric object, in a ring and all-to-all, with odd
// sizes and offsets. Data is checked on every PE, and the poisoned bytes around every destination
// must be intact. The local side (a put's source, a get's destination) is a registered buffer, and
// over P2P also plain memory (std::vector): over P2P any local memory may be used, over RDMA only
// the heap or a registered buffer (include/mori/transport/rdma.hpp).
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

template <typename S, typename T>
void run_puts(const Session& s, Form form, Local kind) {
  CAPTURE(static_cast<int>(kind));
  GuardedSlots<T> dst(s.n, kMaxElems);
  LocalBuffer<T> src(kind, kMaxElems);
  for (size_t i = 0; i < kMaxElems; ++i) src.data()[i] = value_of<T>(s.me, i);
  for (Pattern pattern : {Pattern::kRing, Pattern::kAllToAll}) {
    for (size_t nelems : kSizes) {
      for (size_t off : kOffsets) {
        CAPTURE(nelems);
        CAPTURE(off);
        dst.poison();
        REQUIRE(shmem::barrier_all() == 0);
        const std::vector<int> to = targets(pattern, s.me, s.n);
        launch({1}, block_for<S>(), [&] {
          T* d = dst.slot(s.me) + off;  // every PE writes its own slot on the target
          for (int pe : to) {
            switch (form) {
              case Form::kBytes:
                shmem::putmem_nbi<S>(d, src.data(), nelems * sizeof(T), pe);
                break;
              case Form::kTyped:
                shmem::put_nbi<S>(d, src.data(), nelems, pe);
                break;
              case Form::kBlocking:
                shmem::put<S>(d, src.data(), nelems, pe);
                break;
              case Form::kObject:
                shmem::put_nbi<S>(shmem::SymmObj<T>{dst.slot(s.me), kMaxElems}, off, src.data(),
                                  nelems, pe);
                break;
            }
          }
          if (S::leader()) shmem::quiet();
        });
        REQUIRE(shmem::barrier_all() == 0);
        std::string bad;
        for (int writer = 0; writer < s.n && bad.empty(); ++writer) {
          const bool written = pattern == Pattern::kAllToAll || writer == (s.me + s.n - 1) % s.n;
          bad = check_slot(dst.slot(writer), written ? off : 0, written ? nelems : 0, writer, 64);
          if (!bad.empty()) bad = "slot of PE " + std::to_string(writer) + ": " + bad;
        }
        CHECK_MESSAGE(bad.empty(), bad);
        REQUIRE(all_ranks(bad.empty()));
      }
    }
  }
}

template <typename S, typename T>
void run_gets(const Session& s, Form form, Local kind) {
  CAPTURE(static_cast<int>(kind));
  GuardedSlots<T> src(1, kMaxElems);
  for (size_t i = 0; i < kMaxElems; ++i) src.slot(0)[i] = value_of<T>(s.me, i);
  REQUIRE(shmem::barrier_all() == 0);
  constexpr size_t kGuard = 64;
  const size_t stride = kGuard + kMaxElems * sizeof(T) + kGuard;
  LocalBuffer<unsigned char> local(kind, stride * s.n);
  for (Pattern pattern : {Pattern::kRing, Pattern::kAllToAll}) {
    for (size_t nelems : kSizes) {
      for (size_t off : kOffsets) {
        CAPTURE(nelems);
        CAPTURE(off);
        std::memset(local.data(), GuardedSlots<T>::kPoison, local.size());
        const std::vector<int> from = targets(pattern, s.me, s.n);
        auto slot = [&](int pe) {
          return reinterpret_cast<T*>(local.data() + pe * stride + kGuard);
        };
        launch({1}, block_for<S>(), [&] {
          for (int pe : from) {
            T* d = slot(pe);  // local, not symmetric: plain memory (P2P only) or registered
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
          if (S::leader()) shmem::quiet();
        });
        std::string bad;
        for (int pe = 0; pe < s.n && bad.empty(); ++pe) {
          const bool read = pattern == Pattern::kAllToAll || pe == (s.me + 1) % s.n;
          // The get wrote elements [0, nelems) of the local slot with the source's [off, off +
          // nelems).
          const T* got = slot(pe);
          const auto* bytes = reinterpret_cast<const unsigned char*>(got);
          const size_t end = read ? nelems * sizeof(T) : 0;
          for (size_t b = 0; b < kGuard && bad.empty(); ++b)
            if (bytes[-1 - static_cast<ptrdiff_t>(b)] != GuardedSlots<T>::kPoison)
              bad = "guard before hit";
          for (size_t b = end; b < stride - kGuard && bad.empty(); ++b)
            if (bytes[b] != GuardedSlots<T>::kPoison)
              bad = "byte " + std::to_string(b) + " past the data hit";
          for (size_t i = 0; read && i < nelems && bad.empty(); ++i)
            if (got[i] != value_of<T>(pe, off + i))
              bad = "element " + std::to_string(i) + " differs";
          if (!bad.empty()) bad = "data from PE " + std::to_string(pe) + ": " + bad;
        }
        CHECK_MESSAGE(bad.empty(), bad);
        REQUIRE(all_ranks(bad.empty()));
      }
    }
  }
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
