// MORI_SOFTNIC_FAULT's numbers at their limits (backend/host/softnic/softnic.hpp, parse_faults):
// a WQE index takes any 64-bit value and no more, a delay at most a minute; each is tried at the
// limit (accepted, with its value) and one past it (refused, with the exact text).
#include <doctest/doctest.h>

#include <string>

#include "backend/host/softnic/softnic.hpp"

namespace sn = mori::softnic;

namespace {

std::string parse_error(const char* text) {
  sn::Faults faults;
  const mori::Status s = sn::parse_faults(text, &faults);
  return s.ok() ? "ok" : s.message();
}

}  // namespace

TEST_CASE("softnic fault limits: WQE indices up to 2^64 - 1, delays up to 60000 ms") {
  sn::Faults faults;
  REQUIRE(sn::parse_faults("error:18446744073709551615,drop:0,delay_ms:60000", &faults).ok());
  CHECK(faults.error_at == UINT64_MAX);
  CHECK(faults.drop_at == 0);
  CHECK(faults.delay_ms == 60000);
  REQUIRE(sn::parse_faults("drop:18446744073709551615,delay_ms:0", &faults).ok());
  CHECK(faults.drop_at == UINT64_MAX);
  CHECK(faults.delay_ms == 0);

  CHECK(parse_error("delay_ms:60001") ==
        "MORI_SOFTNIC_FAULT: unknown or out-of-range item \"delay_ms:60001\" (error:N, drop:N, "
        "delay_ms:M up to 60000)");
  for (const char* item : {"error:18446744073709551616", "drop:18446744073709551616"}) {
    CAPTURE(item);
    CHECK(parse_error(item) == "MORI_SOFTNIC_FAULT: \"" + std::string(item) +
                                   "\" is not <kind>:<number> (error:N, drop:N, delay_ms:M)");
  }
}
