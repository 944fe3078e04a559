// Address space for a buffer as large as a limit allows (the bootstrap's 1 GiB payload), reserved
// but never backed unless written: tests hand it to calls that must accept that size and then
// stop before filling it.
#pragma once

#include <doctest/doctest.h>
#include <sys/mman.h>

#include <cstddef>
#include <cstdint>

namespace mori::test {

struct ReservedMemory {
  explicit ReservedMemory(size_t bytes)
      : size(bytes),
        at(::mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0)) {
    REQUIRE(at != MAP_FAILED);
  }
  ~ReservedMemory() { ::munmap(at, size); }
  ReservedMemory(const ReservedMemory&) = delete;
  ReservedMemory& operator=(const ReservedMemory&) = delete;
  uint8_t* bytes() const { return static_cast<uint8_t*>(at); }

  size_t size;
  void* at;
};

}  // namespace mori::test
