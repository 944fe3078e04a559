// The reduction operators and their names, shared by the device collectives (collectives.hpp) and
// the host API's stream-ordered reductions (stream_api.hpp): plain declarations, usable in
// host-only code of a hip-backend build.
#pragma once

namespace mori::shmem {

// The reduction operators of OpenSHMEM 1.5 (section 9.9.7). The values are the ABI's `op` argument
// of mori_shmem_reduce_<type>_<scope> and mori_shmem_reducescatter_<type>_<scope>.
enum class ReduceOp : int { kAnd = 0, kOr = 1, kXor = 2, kMin = 3, kMax = 4, kSum = 5, kProd = 6 };
inline constexpr int kReduceOps = 7;
// and, or and xor: integer types only.
constexpr bool is_bitwise(ReduceOp op) {
  return op == ReduceOp::kAnd || op == ReduceOp::kOr || op == ReduceOp::kXor;
}

// X(reduce name, reducescatter name, ReduceOp): and_reduce, and_reducescatter, ... (the names are
// spelled out: `and`, `or` and `xor` are operators to the preprocessor).
#define MORI_FOR_EACH_REDUCE_OP(X)       \
  X(and_reduce, and_reducescatter, kAnd) \
  X(or_reduce, or_reducescatter, kOr)    \
  X(xor_reduce, xor_reducescatter, kXor) \
  X(min_reduce, min_reducescatter, kMin) \
  X(max_reduce, max_reducescatter, kMax) \
  X(sum_reduce, sum_reducescatter, kSum) \
  X(prod_reduce, prod_reducescatter, kProd)

}  // namespace mori::shmem
