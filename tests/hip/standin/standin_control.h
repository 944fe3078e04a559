// What a test of the hip build may ask the stand-in libamdhip64 beyond the HIP API: the kernel
// launches its streams have run (kernels cannot run on the host, so a launch is recorded in stream
// order instead), holding the streams' workers to show that a call returned before its work ran,
// and a trap in the next launch to run.
#pragma once

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct MoriHipStandinLaunch {
  char kernel[64];  // the kernel's symbol name
  unsigned grid[3];
  unsigned block[3];
  unsigned shared_bytes;
  void* stream;       // the hipStream_t it ran on (null: the null stream)
  uint64_t sequence;  // 0, 1, ... in the order the streams ran their launches
  size_t arg_bytes;   // bytes of the explicit kernel arguments, as laid out in the kernarg segment
  uint8_t args[256];
};

// Launches run so far, in the order they ran.
size_t mori_hip_standin_launch_count(void);
// Copies launch `index`; returns 0, or -1 when there is none.
int mori_hip_standin_launch(size_t index, struct MoriHipStandinLaunch* out);
void mori_hip_standin_clear_launches(void);
// While held, the streams' workers run nothing: work queued meanwhile waits, and a call that
// returns while held returned without waiting for its work. A host wait for held work (a
// synchronize, a blocking copy) aborts the process, naming the stream, instead of hanging.
void mori_hip_standin_hold_streams(int hold);
// Work items queued on all streams and not yet run.
size_t mori_hip_standin_pending(void);
// The next launch to run traps: the stand-in then prints ROCm's queue-error line and aborts, as clr's
// queue callback does after a device exception.
void mori_hip_standin_trap_next_launch(void);

#ifdef __cplusplus
}
#endif
