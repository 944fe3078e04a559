#include "runtime/device_error.hpp"

#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "mori/shmem/host_api.hpp"
#include "runtime/error.hpp"
#include "runtime/runtime.hpp"

namespace mori::runtime {

namespace {

// Indexed by DeviceErrorCode (mori/state/gpu_states.hpp).
constexpr const char* kKinds[] = {"no error",
                                  "PE out of range",
                                  "address outside symmetric memory",
                                  "size overflows",
                                  "PE or memory not reachable",
                                  "timeout",
                                  "transport not built",
                                  "bad argument",
                                  "RDMA error completion"};
static_assert(sizeof kKinds / sizeof kKinds[0] ==
              static_cast<size_t>(state::DeviceErrorCode::kCompletionError) + 1);

const char* kind(uint32_t code) {
  return code < sizeof kKinds / sizeof kKinds[0] ? kKinds[code] : "unknown device error";
}

}  // namespace

std::string describe_device_error(const state::DeviceError& record) {
  if (record.code == 0) return {};
  std::string text = kind(record.code);
  const size_t length = strnlen(record.message, sizeof record.message);
  if (length > 0) return text + ": " + std::string(record.message, length);
  char fields[256];
  int n =
      std::snprintf(fields, sizeof fields,
                    " (code %" PRIu32 ", PE %" PRId32 ", address 0x%" PRIx64 ", observed %" PRIu64,
                    record.code, record.pe, record.address, record.observed);
  if (record.qp != 0 && n > 0 && static_cast<size_t>(n) < sizeof fields) {
    n += std::snprintf(fields + n, sizeof fields - n,
                       "; qp 0x%" PRIx32 ": posted %" PRIu32 ", completed %" PRIu32
                       ", cq consumed %" PRIu32,
                       record.qp, record.sq_posted, record.sq_completed, record.cq_consumed);
  }
  return text + fields + ")";
}

}  // namespace mori::runtime

namespace mori::shmem {

const char* device_error() {
  static thread_local std::string text;
  runtime::clear_error();
  runtime::Runtime* rt = runtime::require("device_error");
  text.clear();
  if (!rt || !rt->error) return text.c_str();
  text = runtime::describe_device_error(*rt->error);
  // Read and cleared, like hipGetLastError: the next device failure is recorded afresh.
  if (!text.empty()) std::memset(static_cast<void*>(rt->error), 0, sizeof(state::DeviceError));
  return text.c_str();
}

}  // namespace mori::shmem
