// Little-endian loads and stores for the unique ID and the wire messages, which must read the same
// on every host and must never rely on a struct's padding or alignment.
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>

namespace mori::bootstrap {

template <std::unsigned_integral T>
void store_le(uint8_t* at, T value) {
  for (size_t i = 0; i < sizeof(T); ++i) at[i] = static_cast<uint8_t>(value >> (8 * i));
}

template <std::unsigned_integral T>
T load_le(const uint8_t* at) {
  T value = 0;
  for (size_t i = 0; i < sizeof(T); ++i) value |= static_cast<T>(at[i]) << (8 * i);
  return value;
}

}  // namespace mori::bootstrap
