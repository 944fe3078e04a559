// The hip backend's stream kernel module: loaded for this PE's device at open_device, given the
// device state at every publish, launched by stream_enqueue.
#pragma once

#include "mori/state/gpu_states.hpp"
#include "mori/status.hpp"

namespace mori::backend {

// Loads the embedded code object of `device`'s arch (gcnArchName without its features).
Status open_stream_kernel(int device);
void close_stream_kernel();
// Copies `states` into the stream kernel's globalGpuStates; nothing before open_stream_kernel.
Status publish_to_stream_kernel(const state::GpuStates& states);
// The loaded hipModule_t, or null (tests read its globalGpuStates).
void* stream_kernel_module();

}  // namespace mori::backend
