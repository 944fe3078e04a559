// What the runtime needs from a backend, implemented once for the host backend (backend/host) and
// once for HIP (backend/hip). Exactly one implementation is compiled into libmori_shmem.
#pragma once

#include <cstddef>
#include <cstdint>

#include "mori/state/gpu_states.hpp"
#include "mori/status.hpp"
#include "runtime/stream_op.hpp"

namespace mori::backend {

// "host" or "hip".
const char* name();

// Selects the GPU of this PE (the local_rank-th visible device) on the calling thread, and keeps
// its id for use_device, or fails naming why ("no HIP device").
Status open_device(int local_rank);
void close_device();
// Makes the GPU open_device chose the calling thread's current device: HIP's is per thread
// (hipSetDevice), and the host API may be called from any thread. Nothing before open_device.
Status use_device();
// The device use_device last made current on the calling thread, -1 if none (tests).
int thread_device();
// Whether a failed device call ends the process with abort() instead of returning to the host: on
// hip, ROCm's queue callback aborts (runtime/abort_report.hpp); the host backend's traps return.
bool device_failure_aborts();
// `pes` PEs of the job run on this machine: the host backend's waits yield the CPU sooner when
// they outnumber its CPUs (platform/host.hpp, relax). Nothing on HIP.
void note_machine_pes(int pes);

// Memory that device code reads (the arrays GpuStates points to) and that the host can also read
// (the device-error record). On the host backend both are ordinary memory.
Status alloc_device(size_t bytes, void** out);
Status copy_to_device(void* dst, const void* src, size_t bytes);
// Within device memory (the symmetric heap): calloc's zeroing and realloc's copy. Both complete
// before they return.
Status fill_device(void* dst, unsigned char byte, size_t bytes);
Status copy_device_to_device(void* dst, const void* src, size_t bytes);
void free_device(void* p);
Status alloc_host_visible(size_t bytes, void** out);
void free_host_visible(void* p);

// Memory that same-node peers can map into their own address space (buffer_register_symmetric):
// hipMalloc memory on the hip backend (exported as a hipIpcMemHandle), memfd memory from
// alloc_shareable on the host backend (exported as this process's pid and descriptor number, which
// a peer duplicates with pidfd_getfd). A handle is plain bytes, sent to peers through the
// bootstrap.
struct ShareableHandle {
  uint8_t bytes[120];
  uint64_t offset;  // of the exported range within its allocation
};
static_assert(sizeof(ShareableHandle) == 128);
Status alloc_shareable(size_t bytes, void** out);
// Fails, naming why, when `p` is not the start of a live alloc_shareable allocation.
Status free_shareable(void* p);
// Describes [p, p + bytes) for import by a peer; fails, naming what the backend accepts, when the
// range is not inside one shareable allocation.
Status export_shareable(const void* p, size_t bytes, ShareableHandle* out);
// A peer's exported range mapped into this process.
struct Imported {
  void* ptr = nullptr;      // where this process reaches the range
  void* mapping = nullptr;  // what release_imported gives back
  size_t mapped_bytes = 0;
};
Status import_shareable(const ShareableHandle& handle, size_t bytes, Imported* out);
void release_imported(const Imported& imported);

// Waits until every kernel and copy this PE has started has finished, on every stream.
Status synchronize();

// Streams (shmem/stream_api.hpp). `stream` is the caller's: a hipStream_t on hip, a
// mori::host::Stream* on the host backend; nullptr is the default stream.
// Enqueues `op` after everything already on `stream` and returns at once: it never waits for the
// device, and on hip it allocates nothing, so that a HIP graph can capture it.
Status stream_enqueue(void* stream, const runtime::StreamOp& op);
// Waits for everything enqueued on `stream` so far; fails with the first failure of that work.
Status stream_synchronize(void* stream);

// Makes `states` the device state of this process's own code (libmori_shmem, and on hip every copy
// registered with MORI_SHMEM_DEFINE_GPU_STATES).
Status publish(const state::GpuStates& states);

// Copies `states` into the globalGpuStates of a separately loaded module (hipModule_t / dlopen
// handle), after checking that the module was built for this device-state ABI.
Status publish_to_module(void* module, const state::GpuStates& states);

}  // namespace mori::backend
