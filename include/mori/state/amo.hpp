// The atomic operation codes of the device ABI (mori-device-abi.md, "The atomic operation codes"),
// the signal operations, and the OpenSHMEM comparison operators of the wait and test families.
#pragma once

#include <cstdint>

namespace mori::shmem {

// `atomicType` in the extern "C" ABI: an int-sized enum whose values are fixed by the ABI.
enum atomicType : int {
  AMO_ACK = 1,
  AMO_INC = 2,
  AMO_SET = 3,
  AMO_ADD = 4,
  AMO_AND = 5,
  AMO_OR = 6,
  AMO_XOR = 7,
  AMO_SIGNAL = 8,
  AMO_SIGNAL_SET = 9,
  AMO_SIGNAL_ADD = 10,
  AMO_END_OF_NONFETCH = 11,
  AMO_FETCH = 12,
  AMO_FETCH_INC = 13,
  AMO_FETCH_ADD = 14,
  AMO_FETCH_AND = 15,
  AMO_FETCH_OR = 16,
  AMO_FETCH_XOR = 17,
  AMO_SWAP = 18,
  AMO_COMPARE_SWAP = 19,
};
inline constexpr atomicType SIGNAL_SET = AMO_SIGNAL_SET;
inline constexpr atomicType SIGNAL_ADD = AMO_SIGNAL_ADD;
static_assert(sizeof(atomicType) == sizeof(int), "atomicType is int-sized in the C ABI");

// Comparison operators of wait_until / test, with OpenSHMEM 1.5's values (SHMEM_CMP_EQ = 0 ...
// SHMEM_CMP_GE = 5, as in shmem.h of the OpenSHMEM reference implementation and NVSHMEM's
// nvshmem_cmp_type).
enum Cmp : int {
  CMP_EQ = 0,
  CMP_NE = 1,
  CMP_GT = 2,
  CMP_LE = 3,
  CMP_LT = 4,
  CMP_GE = 5,
};

constexpr bool is_fetching(atomicType op) { return op > AMO_END_OF_NONFETCH; }

}  // namespace mori::shmem
