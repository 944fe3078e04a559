#include "runtime/device_error.hpp"

#include <cstring>
#include <utility>

#include "mori/shmem/host_api.hpp"
#include "runtime/error.hpp"
#include "runtime/host_only.hpp"
#include "runtime/runtime.hpp"

namespace mori::runtime {

namespace {

// Indexed by DeviceErrorCode (mori/state/gpu_states.hpp).
constexpr const char* kKinds[] = {"no error",
                                  "PE out of range",
                                  "address outside symmetric memory",
                                  "size out of range",
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

// Appends to a fixed buffer, truncating, always NUL-terminated. No allocation, no locale and no
// stdio, so that a signal handler may use it (abort_report.cpp): snprintf is not
// async-signal-safe (POSIX.1-2017, 2.4.3).
class Writer {
 public:
  Writer(char* out, size_t cap) : out_(out), cap_(cap) {
    if (cap_ > 0) out_[0] = '\0';
  }
  Writer& text(const char* s, size_t n) {
    for (size_t i = 0; i < n && length_ + 1 < cap_; ++i) out_[length_++] = s[i];
    if (cap_ > 0) out_[length_] = '\0';
    return *this;
  }
  Writer& text(const char* s) { return text(s, strlen(s)); }
  Writer& dec(uint64_t v) {
    char digits[20];
    size_t n = 0;
    do digits[n++] = static_cast<char>('0' + v % 10);
    while ((v /= 10) != 0);
    for (size_t i = 0; i < n / 2; ++i) std::swap(digits[i], digits[n - 1 - i]);
    return text(digits, n);
  }
  Writer& dec_signed(int64_t v) {
    if (v < 0) return text("-").dec(0 - static_cast<uint64_t>(v));
    return dec(static_cast<uint64_t>(v));
  }
  Writer& hex(uint64_t v) {
    char digits[16];
    size_t n = 0;
    do digits[n++] = "0123456789abcdef"[v & 0xf];
    while ((v >>= 4) != 0);
    for (size_t i = 0; i < n / 2; ++i) std::swap(digits[i], digits[n - 1 - i]);
    return text("0x").text(digits, n);
  }
  size_t length() const { return length_; }

 private:
  char* out_;
  size_t cap_;
  size_t length_ = 0;
};

}  // namespace

size_t format_device_error(const state::DeviceError& record, char* out, size_t cap) {
  Writer w(out, cap);
  if (record.code == 0) return 0;
  w.text(kind(record.code));
  const size_t length = strnlen(record.message, sizeof record.message);
  if (length > 0) return w.text(": ").text(record.message, length).length();
  w.text(" (code ").dec(record.code).text(", PE ").dec_signed(record.pe);
  w.text(", address ").hex(record.address).text(", observed ").dec(record.observed);
  if (const state::QueueNote& q = record.queue; q.qp != 0) {
    w.text("; qp ").hex(q.qp).text(": posted ").dec(q.posted);
    w.text(", completed ").dec(q.completed).text(", cq consumed ").dec(q.consumed);
  }
  return w.text(")").length();
}

std::string describe_device_error(const state::DeviceError& record) {
  char text[kDeviceErrorTextBytes];
  const size_t length = format_device_error(record, text, sizeof text);
  return std::string(text, length);
}

}  // namespace mori::runtime

namespace mori::shmem {

const char* device_error() {
  runtime::host_only("device_error");
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
