// Address space for a buffer as large as a limit allows (the bootstrap's 1 GiB payload), of which
// only the first page can be used: tests hand it to calls that must accept that size and then stop
// before filling it. The rest is mapped PROT_NONE, so it costs no memory (nor commit charge, even
// under strict overcommit), and a call that wrote past the first page would crash the test rather
// than pass it.
#pragma once

#include <doctest/doctest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>

namespace mori::test {

struct ReservedMemory {
  explicit ReservedMemory(size_t bytes)
      : size(bytes), at(::mmap(nullptr, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)) {
    REQUIRE(at != MAP_FAILED);
    REQUIRE(::mprotect(at, static_cast<size_t>(::sysconf(_SC_PAGESIZE)), PROT_READ | PROT_WRITE) ==
            0);
  }
  ~ReservedMemory() { ::munmap(at, size); }
  ReservedMemory(const ReservedMemory&) = delete;
  ReservedMemory& operator=(const ReservedMemory&) = delete;
  uint8_t* bytes() const { return static_cast<uint8_t*>(at); }

  size_t size;
  void* at;
};

}  // namespace mori::test
