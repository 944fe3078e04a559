// The 128-byte unique ID that lets PEs find each other without MPI (MORI_SHMEM_INIT_WITH_UNIQUEID).
#pragma once

#include <cstdint>

namespace mori::shmem {

inline constexpr int kUniqueIdBytes = 128;

// Opaque to users: rank 0 creates it with get_unique_id(), every rank passes the same bytes to
// init_attr().
struct UniqueId {
  uint8_t bytes[kUniqueIdBytes];
};
static_assert(sizeof(UniqueId) == 128, "the unique ID is exactly 128 bytes, as in the user guide");

}  // namespace mori::shmem
