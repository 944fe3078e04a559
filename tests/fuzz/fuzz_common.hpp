// Helpers shared by the libFuzzer targets (docs/fuzzing.md): a failed invariant is a crash that
// names itself, and the input is read as a stream of little-endian fields that runs out as zeros,
// so that every input, however short, is a valid one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

// An invariant of the parser under test. A violation prints the condition and its place, then
// aborts: libFuzzer records the input as a crash.
#define FUZZ_CHECK(cond)                                                                     \
  do {                                                                                       \
    if (!(cond)) {                                                                           \
      std::fprintf(stderr, "%s:%d: fuzz invariant failed: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                          \
    }                                                                                        \
  } while (0)

// Keeps the harness's own branches out of the coverage feedback, so that inputs are kept for what
// they do to the parser, not for their length.
#define FUZZ_NO_COVERAGE __attribute__((no_sanitize("coverage")))

namespace mori::fuzz {

// The fuzz input consumed front to back; reads past its end yield zeros.
class Input {
 public:
  Input(const uint8_t* data, size_t size) : data_(data), size_(size) {}

  template <typename T>
  FUZZ_NO_COVERAGE T take() {
    T value = 0;
    for (size_t i = 0; i < sizeof(T); ++i)
      value |= static_cast<T>(static_cast<T>(next()) << (8 * i));
    return value;
  }
  // Up to n bytes into out (zero-filled beyond the input); returns how many came from the input.
  FUZZ_NO_COVERAGE size_t take_bytes(void* out, size_t n) {
    const size_t got = n < remaining() ? n : remaining();
    std::memcpy(out, data_ + used_, got);
    std::memset(static_cast<uint8_t*>(out) + got, 0, n - got);
    used_ += got;
    return got;
  }
  // The rest of the input.
  FUZZ_NO_COVERAGE std::string_view rest() {
    std::string_view text(reinterpret_cast<const char*>(data_ + used_), remaining());
    used_ = size_;
    return text;
  }
  size_t remaining() const { return size_ - used_; }

 private:
  FUZZ_NO_COVERAGE uint8_t next() { return used_ < size_ ? data_[used_++] : 0; }

  const uint8_t* data_;
  size_t size_;
  size_t used_ = 0;
};

// True when text is one printable line: what every error message of the runtime must be.
FUZZ_NO_COVERAGE inline bool one_printable_line(const std::string& text) {
  if (text.empty()) return false;
  for (const char c : text) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return false;
  }
  return true;
}

}  // namespace mori::fuzz
