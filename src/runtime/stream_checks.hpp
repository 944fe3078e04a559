// The host-side argument checks of the stream API (stream_checks.cpp): the device
// call would trap on the same mistakes, but only once the stream reaches it, and on a release GPU
// build not at all.
#pragma once

#include <cstddef>
#include <cstdint>

#include "mori/status.hpp"
#include "runtime/runtime.hpp"

namespace mori::runtime {

// `pe` is in [0, n_pes) and this PE reaches it.
Status check_stream_pe(const Runtime& rt, int pe);
// [p, p + bytes) lies in this PE's heap or in one registered buffer; `what` names the argument.
// Nothing is checked for 0 bytes.
Status check_symmetric(const Runtime& rt, const char* what, const void* p, uint64_t bytes);
// `p` is not null unless `bytes` is 0.
Status check_local(const char* what, const void* p, uint64_t bytes);
// The team's entry on this PE, or null and why.
Status check_team(const Runtime& rt, int team, const state::TeamDescriptor** out);

// putmem_on_stream (get: getmem_on_stream) reporting a bad argument as `api`: the host-initiated
// calls (host_rma.cpp) are these and a wait.
int rma_on_stream(const char* api, bool get, void* dest, const void* source, size_t bytes, int pe,
                  void* stream);

}  // namespace mori::runtime
