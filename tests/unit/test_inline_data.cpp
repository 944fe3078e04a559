// The inline payload (provider/inline_data.hpp): gathered in aligned words from every length and
// alignment, next to inaccessible pages so that a read past the payload's last word faults; and an
// inline write from a register value (wr.inline_operand) gives each provider the same WQE bytes as
// the same bytes from memory.
#include <doctest/doctest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <array>
#include <cstdint>
#include <cstring>

#include "mori/provider/inline_data.hpp"
#include "providers.hpp"

namespace mp = mori::provider;

namespace {

// One readable page between two PROT_NONE pages.
struct FencedPage {
  size_t size = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  char* map = static_cast<char*>(
      mmap(nullptr, 3 * size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  char* page = map + size;
  FencedPage() {
    REQUIRE(map != MAP_FAILED);
    REQUIRE(mprotect(map, size, PROT_NONE) == 0);
    REQUIRE(mprotect(page + size, size, PROT_NONE) == 0);
    for (size_t i = 0; i < size; ++i) page[i] = static_cast<char>(0x80 + i % 113);
  }
  ~FencedPage() { munmap(map, 3 * size); }
};

// Every payload length and source alignment, the payload flush against either fence.
template <uint32_t kBytes>
void check_gather(const FencedPage& f) {
  for (uint32_t n = 0; n <= kBytes; ++n)
    for (uint32_t misalign = 0; misalign < 8; ++misalign)
      for (bool at_end : {false, true}) {
        CAPTURE(n);
        CAPTURE(misalign);
        CAPTURE(at_end);
        // At the start: the first byte at page + misalign. At the end: the last byte at the page's
        // last byte minus misalign.
        const char* src = at_end ? f.page + f.size - n - misalign : f.page + misalign;
        const mp::InlineWords<kBytes> got = mp::gather_inline<kBytes>(src, n);
        std::array<uint8_t, kBytes> want{};
        std::memcpy(want.data(), src, n);
        CHECK(std::memcmp(got.word, want.data(), kBytes) == 0);
      }
}

}  // namespace

TEST_CASE("inline payload: every length and alignment, no read beyond the payload's words") {
  const FencedPage f;
  check_gather<16>(f);  // BNXT
  check_gather<28>(f);  // MLX5
  check_gather<32>(f);  // Ionic
  // Empty, at an address in the inaccessible page: nothing read.
  const mp::InlineWords<16> empty = mp::gather_inline<16>(f.page + f.size + 1, 0);
  CHECK((empty.word[0] | empty.word[1] | empty.word[2] | empty.word[3]) == 0);
  // Past kBytes, clamped: the first kBytes bytes.
  const mp::InlineWords<16> clamped = mp::gather_inline<16>(f.page + 1, 40);
  CHECK(std::memcmp(clamped.word, f.page + 1, 16) == 0);
}

TEST_CASE("inline payload from a register value: the bytes of the value, the rest zero") {
  const uint64_t value = 0x8877'6655'4433'2211;
  for (uint32_t n = 0; n <= 8; ++n) {
    CAPTURE(n);
    mp::WorkRequest wr{};
    wr.opcode = mp::Opcode::kWriteInline;
    wr.inline_operand = true;
    wr.operand = value;
    wr.bytes = n;
    const mp::InlineWords<16> got = mp::inline_payload<16>(wr);
    std::array<uint8_t, 16> want{};
    std::memcpy(want.data(), &value, n);
    CHECK(std::memcmp(got.word, want.data(), 16) == 0);
  }
}

TEST_CASE_TEMPLATE("inline write of a register value: the WQE as from memory", P, MORI_PROVIDERS) {
  const uint64_t value = 0xfedc'ba98'7654'3210;
  for (uint32_t n = 1; n <= 8; ++n) {
    CAPTURE(n);
    mp::WorkRequest from_memory{};
    from_memory.opcode = mp::Opcode::kWriteInline;
    from_memory.qpn = 0x321;
    from_memory.index = 7;
    from_memory.sq_wqes = 64;
    from_memory.remote_addr = 0x7000'0000'1230;
    from_memory.rkey = 0x55aa;
    from_memory.bytes = n;
    from_memory.inline_data = &value;
    mp::WorkRequest from_register = from_memory;
    from_register.inline_data = nullptr;
    from_register.inline_operand = true;
    from_register.operand = value;
    alignas(64) uint8_t a[P::kWqeBytes], b[P::kWqeBytes];
    std::memset(a, 0xee, sizeof(a));
    std::memset(b, 0x11, sizeof(b));
    P::post_inline_write(a, from_memory);
    P::post_inline_write(b, from_register);
    CHECK(std::memcmp(a, b, sizeof(a)) == 0);
  }
}
