// Whether this test binary runs under a sanitizer (scripts/sanitize.sh: ASan + UBSan, or TSan). Sweeps and stress
// loops that a sanitizer slows 2-15 times run a smaller set there, chosen for what that sanitizer finds.
#pragma once

#include "mori/platform.hpp"

namespace mori::test {

#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kAsan = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kAsan = true;
#else
inline constexpr bool kAsan = false;
#endif
#else
inline constexpr bool kAsan = false;
#endif

inline constexpr bool kSanitized = kAsan || mori::platform::detail::kTsan;

}  // namespace mori::test
