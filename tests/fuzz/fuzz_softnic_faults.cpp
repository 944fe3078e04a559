// Fuzzes mori::softnic::parse_faults (src/backend/host/softnic/softnic.hpp), the parser of
// MORI_SOFTNIC_FAULT, against a reference model written here from its documented syntax:
// comma-separated items error:N, drop:N, delay_ms:M (M <= 60000), N and M unsigned decimal numbers
// that fit 64 bits. A successful parse sets exactly the fields the text names (the last item of a
// kind wins) and keeps the others; a failed one says why in one line.
//
// Input: the text (the whole input).
#include <optional>
#include <string>
#include <string_view>

#include "backend/host/softnic/softnic.hpp"
#include "fuzz_common.hpp"

namespace {

using mori::softnic::Faults;

std::optional<uint64_t> model_number(std::string_view text) {
  if (text.empty()) return std::nullopt;
  unsigned __int128 value = 0;
  for (const char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + static_cast<unsigned>(c - '0');
    if (value > UINT64_MAX) return std::nullopt;
  }
  return static_cast<uint64_t>(value);
}

// The documented syntax. A trailing comma ends the list (parse_faults has always allowed it).
std::optional<Faults> model_faults(std::string_view text, Faults faults) {
  while (!text.empty()) {
    const size_t comma = text.find(',');
    const std::string_view item = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view{} : text.substr(comma + 1);
    const size_t colon = item.find(':');
    if (colon == std::string_view::npos) return std::nullopt;
    const std::optional<uint64_t> n = model_number(item.substr(colon + 1));
    if (!n) return std::nullopt;
    const std::string_view key = item.substr(0, colon);
    if (key == "error") {
      faults.error_at = *n;
    } else if (key == "drop") {
      faults.drop_at = *n;
    } else if (key == "delay_ms" && *n <= 60'000) {
      faults.delay_ms = static_cast<uint32_t>(*n);
    } else {
      return std::nullopt;
    }
  }
  return faults;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  Faults faults;
  faults.error_at = 11;  // fields the text does not name must keep these
  faults.drop_at = 22;
  faults.delay_ms = 33;
  const Faults before = faults;
  const mori::Status s = mori::softnic::parse_faults(text, &faults);
  const std::optional<Faults> want = model_faults(text, before);
  FUZZ_CHECK(s.ok() == want.has_value());
  if (s.ok()) {
    FUZZ_CHECK(faults.error_at == want->error_at && faults.drop_at == want->drop_at &&
               faults.delay_ms == want->delay_ms);
    FUZZ_CHECK(faults.delay_ms <= 60'000 || faults.delay_ms == before.delay_ms);
  } else {
    FUZZ_CHECK(!s.message().empty() && s.message().starts_with("MORI_SOFTNIC_FAULT: "));
  }
  return 0;
}
