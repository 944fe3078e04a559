// Addresses and keys in host-side messages: "0x" and lowercase hex digits without leading zeros, as
// the device messages print them (core/text.hpp), so that a host and a device line can be compared.
#pragma once

#include <charconv>
#include <cstdint>
#include <string>

namespace mori::runtime {

inline std::string hex(uint64_t v) {
  char text[16];
  const auto end = std::to_chars(text, text + sizeof text, v, 16).ptr;
  return "0x" + std::string(text, end);
}

}  // namespace mori::runtime
