// Helpers for device-API tests run under mpirun on the host backend: a shmem session per test case,
// kernels run with the host launcher, symmetric buffers with poisoned guard bytes, registered local
// buffers, and deterministic data per PE and index.
#pragma once

#include <doctest/doctest.h>
#include <mpi.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "mori/core.hpp"
#include "mori/host/launch.hpp"
#include "mori/shmem.hpp"
#include "mori/shmem/device_api.hpp"
#include "test_init.hpp"
#include "unit/sanitized.hpp"

namespace mori::test {

// A type list as a std::tuple, for TEST_CASE_TEMPLATE_APPLY.
template <typename... Ts>
std::tuple<Ts...> as_tuple(TypeList<Ts...>);

namespace detail {
template <typename T, typename U>
inline constexpr bool kSameWidthAndKind =
    sizeof(T) == sizeof(U) && std::is_floating_point_v<T> == std::is_floating_point_v<U>;
// The first type of each width and kind (integer or floating) in Ts, in order.
template <typename Kept, typename... Ts>
struct FirstOfEachWidth {
  using type = Kept;
};
template <typename... Kept, typename T, typename... Ts>
struct FirstOfEachWidth<std::tuple<Kept...>, T, Ts...> {
  using type =
      typename FirstOfEachWidth<std::conditional_t<(kSameWidthAndKind<Kept, T> || ...),
                                                   std::tuple<Kept...>, std::tuple<Kept..., T>>,
                                Ts...>::type;
};
template <typename... Ts>
auto first_of_each_width(std::tuple<Ts...>) -> typename FirstOfEachWidth<std::tuple<>, Ts...>::type;
}  // namespace detail

// The types a typed suite instantiates. Under a sanitizer (scripts/sanitize.sh) one of each width
// and kind: what ASan and TSan find (a bad access, a race) depends on an element's width, not on
// its signedness, and each type is a full instantiation of the device API that the sanitizer
// build compiles at -O0 and runs 2-15 times slower. The main lane runs every type.
template <typename Tuple>
using TestTypes =
    std::conditional_t<kSanitized, decltype(detail::first_of_each_width(Tuple{})), Tuple>;

using ElementTuple = TestTypes<decltype(as_tuple(ElementTypes{}))>;
using AmoTuple = TestTypes<decltype(as_tuple(AmoTypes{}))>;

// Sets (or, with a null value, unsets) an environment variable for the life of a scope, then puts
// back what was there. Declare it before the Session whose init should see it.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) saved_ = old, had_ = true;
    if (value)
      setenv(name, value, 1);
    else
      unsetenv(name);
  }
  ~ScopedEnv() {
    if (had_)
      setenv(name_, saved_.c_str(), 1);
    else
      unsetenv(name_);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::string saved_;
  bool had_ = false;
};

// init() with a small heap on entry, finalize() on exit.
struct Session {
  explicit Session(const char* heap = "64M") {
    setenv("MORI_SHMEM_HEAP_SIZE", heap, 1);
    if (!std::getenv("MORI_SHMEM_TIMEOUT_MS")) setenv("MORI_SHMEM_TIMEOUT_MS", "20000", 1);
    REQUIRE_MESSAGE(shmem::test_init() == 0, shmem::last_error());
    me = shmem::my_pe();
    n = shmem::n_pes();
  }
  ~Session() { CHECK(shmem::finalize() == 0); }
  int me = 0, n = 0;
};

// True when the tests run over the RDMA transport (MORI_DISABLE_P2P set and not "0", as ctest's
// mpi.rdma_<nic>.* tests do): every PE but this one is then reached through the (software) NIC, so
// ptr/ptr_p2p give nullptr for it, and a put's source and a get's destination must lie in the heap
// or in a registered buffer (include/mori/transport/rdma.hpp). This PE itself is always P2P.
inline bool over_rdma() {
  const char* v = std::getenv("MORI_DISABLE_P2P");
  return v && *v && std::strcmp(v, "0") != 0;
}

// A local (not symmetric) buffer of `n` elements registered with buffer_register for its lifetime:
// the source of puts and the destination of gets over RDMA. Registration is collective: construct
// and destroy these in code that every PE runs the same way, with the same sizes, and inside the
// Session (destroyed before it).
template <typename T>
class Registered {
 public:
  explicit Registered(size_t n, T init = T{}) : buf_(n, init) {
    REQUIRE(n > 0);
    REQUIRE_MESSAGE(shmem::buffer_register(buf_.data(), bytes()) == 0, shmem::last_error());
  }
  ~Registered() {
    CHECK_MESSAGE(shmem::buffer_deregister(buf_.data(), bytes()) == 0, shmem::last_error());
  }
  Registered(const Registered&) = delete;
  Registered& operator=(const Registered&) = delete;

  T* data() { return buf_.data(); }
  const T* data() const { return buf_.data(); }
  size_t size() const { return buf_.size(); }
  size_t bytes() const { return buf_.size() * sizeof(T); }
  T& operator[](size_t i) { return buf_[i]; }
  const T& operator[](size_t i) const { return buf_[i]; }
  T* begin() { return buf_.data(); }
  T* end() { return buf_.data() + buf_.size(); }

 private:
  std::vector<T> buf_;
};

// Runs `kernel` on this PE's host launcher and requires success.
template <typename F>
void launch(platform::Dim3 grid, platform::Dim3 block, F&& kernel) {
  auto status = host::launch(grid, block, kernel);
  REQUIRE_MESSAGE(status.ok(), status.message());
}

// Runs `kernel` and returns the failure text ("" on success): for tests of device checks and
// timeouts.
template <typename F>
std::string launch_error(platform::Dim3 grid, platform::Dim3 block, F&& kernel) {
  auto status = host::launch(grid, block, kernel);
  return status.ok() ? std::string() : status.message();
}

// The scope's natural launch shape: one thread, one 64-lane warp, or a block of 96 (a full and a
// partial warp).
template <typename S>
platform::Dim3 block_for() {
  if constexpr (std::is_same_v<S, Thread>)
    return {1};
  else if constexpr (std::is_same_v<S, Warp>)
    return {64};
  else
    return {96};
}

// A deterministic value for element i written by PE pe, distinct for neighbouring (pe, i) in every
// type.
template <typename T>
T value_of(int pe, size_t i) {
  return static_cast<T>((pe * 37 + i * 11 + 5) % 97 + 1);
}

// True on every rank only if `ok` is true on every rank, so that all ranks take the same branch
// after a check.
inline bool all_ranks(bool ok) {
  int mine = ok, all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
  return all;
}

// A symmetric array split into `slots` slots of `slot_elems` elements, each with kGuard poisoned
// bytes before and after it, so that an overrun on either side of any slot is seen.
template <typename T>
class GuardedSlots {
 public:
  static constexpr size_t kGuard = 64;
  static constexpr unsigned char kPoison = 0xA5;

  GuardedSlots(size_t slots, size_t slot_elems) : slots_(slots), elems_(slot_elems) {
    stride_ = (kGuard + elems_ * sizeof(T) + kGuard + 63) / 64 * 64;
    base_ = static_cast<char*>(shmem::malloc(stride_ * slots_ + 64));
    REQUIRE_MESSAGE(base_ != nullptr, shmem::last_error());
    poison();
  }
  ~GuardedSlots() { CHECK(shmem::free(base_) == 0); }

  // Element 0 of slot s (symmetric: the same on every PE).
  T* slot(size_t s) const { return reinterpret_cast<T*>(base_ + s * stride_ + kGuard); }
  size_t elems() const { return elems_; }
  void poison() { std::memset(base_, kPoison, stride_ * slots_ + 64); }
  // Every guard byte still poisoned, and the untouched parts of each slot too (elements >=
  // used[s]).
  std::string check_guards(const std::vector<size_t>& used) const {
    for (size_t s = 0; s < slots_; ++s) {
      const unsigned char* p = reinterpret_cast<const unsigned char*>(base_ + s * stride_);
      for (size_t b = 0; b < kGuard; ++b)
        if (p[b] != kPoison) return "guard before slot " + std::to_string(s) + " overwritten";
      const size_t end = kGuard + used[s] * sizeof(T);
      for (size_t b = end; b < stride_; ++b)
        if (p[b] != kPoison)
          return "byte " + std::to_string(b - kGuard) + " after slot " + std::to_string(s);
    }
    return "";
  }

 private:
  size_t slots_, elems_, stride_ = 0;
  char* base_ = nullptr;
};

}  // namespace mori::test
