// The host's one-line reading of the device-error record (shmem::device_error()), for records as
// each build writes them: with a message (host backend, checked GPU builds) and without (release
// GPU builds: the kind and the fields).
#include <doctest/doctest.h>

#include <cstring>
#include <string>

#include "runtime/device_error.hpp"

using mori::runtime::describe_device_error;
using mori::state::DeviceError;
using mori::state::DeviceErrorCode;

namespace {
DeviceError record(DeviceErrorCode code, int pe, uint64_t address, uint64_t observed) {
  DeviceError r;
  std::memset(&r, 0, sizeof r);
  r.code = static_cast<uint32_t>(code);
  r.pe = pe;
  r.address = address;
  r.observed = observed;
  return r;
}
}  // namespace

TEST_CASE("device_error: an empty record reads as no error") {
  CHECK(describe_device_error(record(DeviceErrorCode::kNone, 0, 0, 0)).empty());
}

TEST_CASE("device_error: a record with a message reads as its kind and the message") {
  DeviceError r = record(DeviceErrorCode::kBadPe, 9, 0, 0);
  std::strcpy(r.message, "put_nbi: PE 9 out of range [0, 2)");
  CHECK(describe_device_error(r) == "PE out of range: put_nbi: PE 9 out of range [0, 2)");
}

TEST_CASE("device_error: a release GPU record without text reads as its kind and fields") {
  CHECK(describe_device_error(record(DeviceErrorCode::kTimeout, 1, 0x7f3a00001000, 5)) ==
        "timeout (code 5, PE 1, address 0x7f3a00001000, observed 5)");
  DeviceError r = record(DeviceErrorCode::kCompletionError, 3, 0, 0x14);
  r.queue.qp = 0x107;
  r.queue.posted = 12;
  r.queue.completed = 10;
  r.queue.consumed = 3;
  CHECK(describe_device_error(r) ==
        "RDMA error completion (code 8, PE 3, address 0x0, observed 20; qp 0x107: posted 12, "
        "completed 10, cq consumed 3)");
  CHECK(describe_device_error(record(static_cast<DeviceErrorCode>(99), -1, 0, 0)) ==
        "unknown device error (code 99, PE -1, address 0x0, observed 0)");
}

TEST_CASE("device_error: a message filling the whole buffer without a NUL is not overrun") {
  DeviceError r = record(DeviceErrorCode::kBadArgument, 0, 0, 0);
  std::memset(r.message, 'x', sizeof r.message);
  r.queue.qp = 0xabcd;  // the bytes after message: not read as text
  CHECK(describe_device_error(r) == "bad argument: " + std::string(sizeof r.message, 'x'));
}
