// Prints the device-error record when the process aborts (hip backend).
//
// A device call that fails records state::DeviceError and traps (platform/amdgcn.hpp, s_trap 2).
// ROCm's queue-error callback then prints "Callback: Queue ... aborting with error :
// HSA_STATUS_ERROR_EXCEPTION" and calls abort() (ROCm/clr rocclr/device/rocm/rocvirtual.cpp,
// callbackQueue): the host never returns from hipDeviceSynchronize to read the record. A SIGABRT
// handler reads it instead (hipHostMalloc coherent memory: the device's writes are visible) and
// writes "mori: device error: <describe_device_error>" to stderr before the process dies.
#pragma once

#include "mori/state/gpu_states.hpp"
#include "mori/status.hpp"

namespace mori::runtime {

// Installs the handler over `record`, chained to the SIGABRT disposition found (a handler is
// called after the report; the default action still ends the process). Replaces the record when
// already installed.
Status install_abort_report(const state::DeviceError* record);
// Restores the disposition found at install, unless another handler was installed over this one:
// that one may chain here, so this handler stays and only stops reporting.
void remove_abort_report();

}  // namespace mori::runtime
