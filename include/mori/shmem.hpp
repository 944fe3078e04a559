// mori::shmem, the umbrella header. Host code gets the host API; device code (a HIP file, in both
// of its passes, and every file on the host backend, where device code is host code) also gets the
// whole device API (docs/device-api.md). Plain C++ files of a hip-backend build get the host API
// and the device-state types only: device functions need the HIP compiler there.
#pragma once

#include "mori/shmem/host_api.hpp"
#include "mori/shmem/stream_api.hpp"
#include "mori/shmem/unique_id.hpp"
#include "mori/state/gpu_states.hpp"

#if !defined(MORI_HOST_SIDE_ONLY)
#include "mori/shmem/device_api.hpp"
#endif
