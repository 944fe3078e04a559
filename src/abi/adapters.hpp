// The few ABI functions that do not map one to one onto the device API: the queries, addresses
// passed as integers, the signal word passed as void*, and the atomic whose width is an argument.
#pragma once

#include <cstddef>
#include <cstdint>

#include "mori/shmem/device_api.hpp"

namespace mori::shmem::abi {

// The queries read the device state of the code object they are linked into, as on a GPU. (On the
// host backend shmem::my_pe(), n_pes(), ptr_p2p() and the team queries are the host API's, which
// read the runtime's state and live in libmori_shmem: a module must not depend on either.)
MORI_DEVICE int my_pe() { return state::this_pe(); }
MORI_DEVICE int n_pes() { return state::pe_count(); }
MORI_DEVICE uint64_t ptr_p2p(uint64_t dest, int caller_pe, int dest_pe) {
  return detail::device_ptr_p2p(dest, caller_pe, dest_pe);
}

MORI_DEVICE int team_my_pe(int team) { return detail::device_team_my_pe(team); }
MORI_DEVICE int team_n_pes(int team) { return detail::device_team_n_pes(team); }
MORI_DEVICE int team_translate_pe(int src_team, int src_pe, int dest_team) {
  return detail::device_team_translate_pe(src_team, src_pe, dest_team);
}

MORI_DEVICE uint64_t ptr(uint64_t dest, int pe) {
  return reinterpret_cast<uint64_t>(shmem::ptr(reinterpret_cast<const void*>(dest), pe));
}

// The spec passes the signal word untyped; the device API's signal is 64 bits.
MORI_DEVICE uint64_t* signal_word(void* signal_dest) { return static_cast<uint64_t*>(signal_dest); }

// atomic_size_nonfetch: `val` points to a value of `bytes` bytes, which picks the width.
MORI_DEVICE void atomic_size_nonfetch(void* dest, const void* val, size_t bytes, atomicType op,
                                      int pe, int qp) {
  if (bytes == sizeof(uint32_t)) {
    atomic_nonfetch(static_cast<uint32_t*>(dest), *static_cast<const uint32_t*>(val), op, pe, qp);
  } else if (bytes == sizeof(uint64_t)) {
    atomic_nonfetch(static_cast<uint64_t*>(dest), *static_cast<const uint64_t*>(val), op, pe, qp);
  } else {
    // Unlike the checks, this one stays in release builds: there is no operation to fall back on.
    state::fail({state::DeviceErrorCode::kBadArgument, pe, reinterpret_cast<uint64_t>(dest)},
                [&](state::Message& m) {
                  m << "atomic_size_nonfetch: " << static_cast<uint64_t>(bytes)
                    << " bytes is not an atomic width: use 4 or 8 (PE " << pe << ")";
                });
  }
}

}  // namespace mori::shmem::abi
