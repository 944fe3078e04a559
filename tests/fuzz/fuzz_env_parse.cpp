// Fuzzes mori::env::parse_size and mori::env::parse_uint (src/runtime/env.hpp) against reference
// models written here from their documented grammar, so that a value the runtime half-understood
// (accepted but read differently, or refused though valid) is a crash.
//
// Input: byte 0 selects the parser (bit 0) and the ceiling of parse_uint (8 more bytes); the rest
// is the variable's text.
#include <cstdint>
#include <limits>
#include <optional>
#include <string>

#include "fuzz_common.hpp"
#include "runtime/env.hpp"

namespace {

using mori::fuzz::Input;

// The grammar of parse_size: decimal digits and an optional K, M, G or T (either case), a power of
// 1024; zero, an empty number and anything that overflows size_t are refused.
std::optional<size_t> model_size(const std::string& text) {
  unsigned shift = 0;
  size_t digits = text.size();
  if (!text.empty()) {
    switch (text.back()) {
      case 'k':
      case 'K':
        shift = 10;
        break;
      case 'm':
      case 'M':
        shift = 20;
        break;
      case 'g':
      case 'G':
        shift = 30;
        break;
      case 't':
      case 'T':
        shift = 40;
        break;
      default:
        break;
    }
    if (shift) --digits;
  }
  if (digits == 0) return std::nullopt;
  unsigned __int128 value = 0;
  for (size_t i = 0; i < digits; ++i) {
    if (text[i] < '0' || text[i] > '9') return std::nullopt;
    value = value * 10 + static_cast<unsigned>(text[i] - '0');
    if (value > std::numeric_limits<size_t>::max()) return std::nullopt;
  }
  value <<= shift;
  if (value == 0 || value > std::numeric_limits<size_t>::max()) return std::nullopt;
  return static_cast<size_t>(value);
}

// The grammar of parse_uint: one or more decimal digits, at most `max`.
std::optional<uint64_t> model_uint(const std::string& text, uint64_t max) {
  if (text.empty()) return std::nullopt;
  unsigned __int128 value = 0;
  for (const char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + static_cast<unsigned>(c - '0');
    if (value > max) return std::nullopt;
  }
  return static_cast<uint64_t>(value);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Input in(data, size);
  const uint8_t mode = in.take<uint8_t>();
  const uint64_t max = in.take<uint64_t>();
  const std::string text(in.rest());
  constexpr const char* kVariable = "MORI_FUZZ_VALUE";
  if ((mode & 1) == 0) {
    constexpr size_t kUntouched = 0xdeadbeef;
    size_t out = kUntouched;
    const mori::Status s = mori::env::parse_size(kVariable, text, &out);
    const std::optional<size_t> want = model_size(text);
    FUZZ_CHECK(s.ok() == want.has_value());
    if (s.ok()) {
      FUZZ_CHECK(out == *want);
    } else {
      FUZZ_CHECK(out == kUntouched);
      FUZZ_CHECK(s.message().starts_with(std::string(kVariable) + "=\"" + text + "\""));
    }
  } else {
    constexpr uint64_t kUntouched = 0xdeadbeef;
    uint64_t out = kUntouched;
    const mori::Status s = mori::env::parse_uint(kVariable, text, max, &out);
    const std::optional<uint64_t> want = model_uint(text, max);
    FUZZ_CHECK(s.ok() == want.has_value());
    if (s.ok()) {
      FUZZ_CHECK(out == *want && out <= max);
    } else {
      FUZZ_CHECK(out == kUntouched);
      FUZZ_CHECK(s.message().starts_with(std::string(kVariable) + "=\"" + text + "\""));
    }
  }
  return 0;
}
