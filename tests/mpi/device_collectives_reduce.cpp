// The reductions of the collectives suite (test_device_collectives.cpp's binary): every element type
// and every operator it takes, reduce (into another array and in place) and reducescatter, in each
// scope, on the world and on a strided team, at 1, 3 and large_count<T>(size) elements. The
// session's staging area is the smallest accepted (4 KiB), and the large count fills two staged
// rounds and part of a third, so that over RDMA the pipeline's turns between the halves, its last
// partial round and its tail all run. Every element and guard byte of every PE's result is checked
// against a reduction the test computes itself.
#include <algorithm>
#include <cstdint>
#include <string>
#include <type_traits>

#include "collectives_helpers.hpp"

namespace shmem = mori::shmem;
using namespace mori::test;
using mori::Block, mori::Thread, mori::Warp;
using shmem::ReduceOp;
using shmem::Team;

namespace {

constexpr int kMaxPes = 4;
constexpr size_t kScratch = 4096;  // MORI_SHMEM_TEAM_SCRATCH_SIZE of the session
constexpr size_t kNumSizes = 3;
// Elements per staged round with `size` members (reduce.hpp: half the area, split among them).
template <typename T>
constexpr size_t round_elems(int size) {
  return kScratch / 2 / size / sizeof(T);
}
template <typename T>
constexpr size_t count_of(size_t z, int size) {
  constexpr size_t kSmall[] = {1, 3};
  return z < 2 ? kSmall[z] : 2 * round_elems<T>(size) + 3;
}
constexpr size_t kMaxN = 2 * kScratch / 2 + 3;  // count_of<uint8_t>(2, 1)
constexpr ReduceOp kOps[] = {ReduceOp::kAnd, ReduceOp::kOr,  ReduceOp::kXor, ReduceOp::kMin,
                             ReduceOp::kMax, ReduceOp::kSum, ReduceOp::kProd};
constexpr size_t kNumOps = std::size(kOps);
enum Kind { kReduce, kInPlace, kScatter, kKinds };

constexpr size_t slot_of(size_t op, size_t z, Kind kind) {
  return (op * kNumSizes + z) * kKinds + kind;
}

template <typename T>
constexpr bool takes(ReduceOp op) {
  return std::is_integral_v<T> ||
         !(op == ReduceOp::kAnd || op == ReduceOp::kOr || op == ReduceOp::kXor);
}

// Member i's element k for `op`: small values whose reduction is exact in every type (sums to 20,
// products to 16), signed types with negatives for min and max.
template <typename T>
T term(ReduceOp op, int i, size_t k) {
  const uint64_t u = static_cast<uint64_t>(i);
  switch (op) {
    case ReduceOp::kAnd:
      return static_cast<T>(~(uint64_t{1} << ((u + k) % 7)));
    case ReduceOp::kOr:
      return static_cast<T>(uint64_t{1} << ((u + 2 * k) % 7));
    case ReduceOp::kXor:
      return static_cast<T>((u * 5 + k * 3) % 127);
    case ReduceOp::kMin:
    case ReduceOp::kMax:
      return static_cast<T>(static_cast<int>((u * 7 + k * 3) % 9) - (std::is_signed_v<T> ? 4 : 0));
    case ReduceOp::kSum:
      return static_cast<T>((u * 3 + k) % 5 + 1);
    case ReduceOp::kProd:
      return static_cast<T>(1 + (u + k) % 2);
  }
  return T{};
}

// The test's own reduction of element k over `size` members (not the library's operator code).
template <typename T>
T reduced(ReduceOp op, int size, size_t k) {
  T acc = term<T>(op, 0, k);
  for (int i = 1; i < size; ++i) {
    const T x = term<T>(op, i, k);
    if constexpr (std::is_integral_v<T>) {
      if (op == ReduceOp::kAnd) acc = static_cast<T>(acc & x);
      if (op == ReduceOp::kOr) acc = static_cast<T>(acc | x);
      if (op == ReduceOp::kXor) acc = static_cast<T>(acc ^ x);
    }
    if (op == ReduceOp::kMin) acc = std::min(acc, x);
    if (op == ReduceOp::kMax) acc = std::max(acc, x);
    if (op == ReduceOp::kSum) acc = static_cast<T>(acc + x);
    if (op == ReduceOp::kProd) acc = static_cast<T>(acc * x);
  }
  return acc;
}

// f.template operator()<Op>() for the operator `op` names.
template <typename F>
void with_op(ReduceOp op, F&& f) {
  switch (op) {
#define MORI_TEST_OP_CASE(reduce_name, scatter_name, code) \
  case ReduceOp::code:                                     \
    return f.template operator()<ReduceOp::code>();
    MORI_FOR_EACH_REDUCE_OP(MORI_TEST_OP_CASE)
#undef MORI_TEST_OP_CASE
  }
}

template <typename T>
struct Buffers {
  CheckedSlots<T> dest{kNumOps * kNumSizes * kKinds, kMaxN};
  GuardedSlots<T> src{kNumOps * kNumSizes * kKinds, kMaxPes* kMaxN};
};

// Every operator, size and kind in scope S on `team`, in one launch: reduce through the templated
// operator (reduce<Op, S>), reducescatter through the operator code (the ABI's form).
template <typename S, typename T>
void run(Team team, Buffers<T>& b) {
  const int size = shmem::team_n_pes(team), me = shmem::team_my_pe(team);
  REQUIRE(size <= kMaxPes);
  b.dest.reset();
  for (size_t o = 0; o < kNumOps; ++o) {
    if (!takes<T>(kOps[o])) continue;
    for (size_t z = 0; z < kNumSizes; ++z) {
      for (size_t k = 0; k < count_of<T>(z, size) * size; ++k) {
        b.src.slot(slot_of(o, z, kReduce))[k] = term<T>(kOps[o], me, k);
        b.src.slot(slot_of(o, z, kScatter))[k] = term<T>(kOps[o], me, k);
      }
      for (size_t k = 0; k < count_of<T>(z, size); ++k)
        b.dest.slot(slot_of(o, z, kInPlace))[k] = term<T>(kOps[o], me, k);
    }
  }
  REQUIRE(shmem::barrier_all() == 0);
  launch({1}, block_for<S>(), [&] {
    for (size_t o = 0; o < kNumOps; ++o) {
      if (!takes<T>(kOps[o])) continue;
      for (size_t z = 0; z < kNumSizes; ++z) {
        const size_t n = count_of<T>(z, size);
        T* in_place = b.dest.slot(slot_of(o, z, kInPlace));
        with_op(kOps[o], [&]<ReduceOp Op>() {
          if constexpr (takes<T>(Op)) {
            shmem::reduce<Op, S>(team, b.dest.slot(slot_of(o, z, kReduce)),
                                 b.src.slot(slot_of(o, z, kReduce)), n);
            shmem::reduce<Op, S>(team, in_place, in_place, n);
          }
        });
        shmem::reducescatter<S>(team, b.dest.slot(slot_of(o, z, kScatter)),
                                b.src.slot(slot_of(o, z, kScatter)), n, static_cast<int>(kOps[o]));
      }
    }
  });
  for (size_t o = 0; o < kNumOps; ++o) {
    if (!takes<T>(kOps[o])) continue;
    for (size_t z = 0; z < kNumSizes; ++z) {
      for (size_t k = 0; k < count_of<T>(z, size); ++k) {
        b.dest.expect(slot_of(o, z, kReduce), k, reduced<T>(kOps[o], size, k));
        b.dest.expect(slot_of(o, z, kInPlace), k, reduced<T>(kOps[o], size, k));
        b.dest.expect(slot_of(o, z, kScatter), k,
                      reduced<T>(kOps[o], size, me * count_of<T>(z, size) + k));
      }
    }
  }
  // The text in the comparison, so that a failure prints it (mpi_main prints the expression).
  const std::string where = std::string(S::kName) + " scope on team " + std::to_string(team) +
                            " of " + std::to_string(size) + " (slot (op * 3 + size) * 3 + kind)";
  CHECK(where + ": " + b.dest.check() == where + ": ");
}

}  // namespace

TEST_CASE_TEMPLATE_DEFINE("reduce and reducescatter: every operator, every element, every PE", T,
                          reduce_types) {
  ScopedEnv scratch("MORI_SHMEM_TEAM_SCRATCH_SIZE", std::to_string(kScratch).c_str());
  Session s;
  Buffers<T> b;
  Halves teams;
  run<Thread>(shmem::kTeamWorld, b);
  run<Warp>(teams.mine(), b);
  run<Block>(shmem::kTeamWorld, b);
  REQUIRE(shmem::barrier_all() == 0);
}
TEST_CASE_TEMPLATE_APPLY(reduce_types, ElementTuple);
