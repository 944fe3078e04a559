// Text: a fixed-capacity message builder for device code, which has no printf without the device
// libraries. It truncates rather than overflows, and always stays NUL-terminated.
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>

#include "mori/platform/macros.hpp"

namespace mori {

// Streams as "0x" and lowercase hex digits: addresses and bit patterns.
struct Hex {
  uint64_t value;
};
MORI_DEVICE Hex hex(uint64_t v) { return {v}; }
MORI_DEVICE Hex hex(const void* p) { return {reinterpret_cast<uint64_t>(p)}; }

template <int kCapacity>
struct Text {
  char data[kCapacity] = {};
  int length = 0;

  MORI_DEVICE Text& operator<<(const char* s) {
    while (s && *s && length < kCapacity - 1) data[length++] = *s++;
    data[length] = '\0';
    return *this;
  }
  MORI_DEVICE Text& operator<<(char c) {
    if (length < kCapacity - 1) data[length++] = c;
    data[length] = '\0';
    return *this;
  }
  template <std::integral I>
  MORI_DEVICE Text& operator<<(I v) {
    if constexpr (std::is_signed_v<I>) {
      if (v < 0) {
        *this << '-';
        return append_unsigned(static_cast<uint64_t>(-(v + 1)) + 1);
      }
    }
    return append_unsigned(static_cast<uint64_t>(v));
  }
  MORI_DEVICE Text& operator<<(Hex h) {
    *this << "0x";
    bool started = false;
    for (int shift = 60; shift >= 0; shift -= 4) {
      const unsigned nibble = (h.value >> shift) & 0xf;
      if (!nibble && !started && shift) continue;
      started = true;
      *this << static_cast<char>(nibble < 10 ? '0' + nibble : 'a' + nibble - 10);
    }
    return *this;
  }

 private:
  MORI_DEVICE Text& append_unsigned(uint64_t v) {
    char digits[20];
    int n = 0;
    do {
      digits[n++] = static_cast<char>('0' + v % 10);
      v /= 10;
    } while (v);
    while (n) *this << digits[--n];
    return *this;
  }
};

}  // namespace mori
