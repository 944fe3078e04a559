// mori::shmem: the umbrella header. Host code gets the host API; device code also gets the device
// state (and, as the layers land, the device API).
#pragma once

#include "mori/shmem/gpu_states.hpp"
#include "mori/shmem/host_api.hpp"
#include "mori/shmem/unique_id.hpp"
