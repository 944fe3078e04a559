// The host's reading of the device-error record (state::DeviceError): the first failure a device
// call recorded before its kernel trapped. Release GPU builds record only the structured fields;
// checked builds and the host backend add the one-line message.
#pragma once

#include <cstddef>
#include <string>

#include "mori/state/gpu_states.hpp"

namespace mori::runtime {

// One line: "<kind>: <message>" when the record has a message, else the kind and the fields,
// e.g. "timeout (PE 1, address 0x7f3a00001000, observed 5; qp 0x107: posted 12, completed 10,
// cq consumed 3)". "" for an empty record (code 0).
std::string describe_device_error(const state::DeviceError& record);

// Room for any record's line: the longest kind, the whole message, or every field at its widest.
inline constexpr size_t kDeviceErrorTextBytes = 256;

// The same line, written into out[cap] (truncated, NUL-terminated); returns its length. Safe in a
// signal handler: no allocation, no stdio (abort_report.hpp).
size_t format_device_error(const state::DeviceError& record, char* out, size_t cap);

}  // namespace mori::runtime
