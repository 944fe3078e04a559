// Fuzzes mori::bootstrap::decode_unique_id (src/bootstrap/unique_id.hpp), the check of the 128
// bytes a user hands to init_attr, and format_endpoint on what it accepts.
//
// Input: byte 0 is the mode, then the 128 ID bytes, then 2 bytes naming a corruption.
//   mode 0: the ID as given (almost always refused: the checksum guards it);
//   mode 1: the ID sealed first (seal_unique_id), so that the field checks behind the checksum run.
// Every accepted ID must re-encode to the same bytes (apart from the reserved ones), and the
// same ID with any one byte changed must be refused.
#include <cstring>

#include "bootstrap/unique_id.hpp"
#include "fuzz_common.hpp"

namespace {

using mori::bootstrap::UniqueIdFields;
using mori::fuzz::Input;
namespace bs = mori::bootstrap;

// The bytes that carry a field (magic, version, family, port, address, nonce, checksum).
bool is_field_byte(size_t i) {
  return i < 10 || (i >= bs::kIdAddressOffset && i < bs::kIdNonceOffset + 8) ||
         i >= bs::kIdChecksumOffset;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Input in(data, size);
  const uint8_t mode = in.take<uint8_t>();
  mori::shmem::UniqueId id;
  in.take_bytes(id.bytes, sizeof(id.bytes));
  const uint8_t flip_at = in.take<uint8_t>() % sizeof(id.bytes);
  const uint8_t flip_by = in.take<uint8_t>() | 1;  // never zero: a real change
  if (mode & 1) bs::seal_unique_id(&id);

  UniqueIdFields fields;
  fields.port = 4242;  // a sentinel: *out is written only on success
  const mori::Status s = bs::decode_unique_id(id, &fields);
  if (!s.ok()) {
    FUZZ_CHECK(fields.port == 4242);
    FUZZ_CHECK(mori::fuzz::one_printable_line(s.message()));
    return 0;
  }
  FUZZ_CHECK(fields.family == bs::AddressFamily::kIpv4 ||
             fields.family == bs::AddressFamily::kIpv6);
  FUZZ_CHECK(fields.port != 0);
  FUZZ_CHECK(!bs::format_endpoint(fields).empty());

  // What was accepted is what encode_unique_id writes, apart from the reserved bytes.
  mori::shmem::UniqueId again;
  bs::encode_unique_id(fields, &again);
  for (size_t i = 0; i < sizeof(id.bytes); ++i) {
    if (is_field_byte(i) && i < bs::kIdChecksumOffset) FUZZ_CHECK(again.bytes[i] == id.bytes[i]);
  }

  // FNV-1a detects every single-byte change of bytes 0..119, and a change of the checksum itself
  // is a mismatch: one changed byte is always refused.
  mori::shmem::UniqueId corrupted = id;
  corrupted.bytes[flip_at] ^= flip_by;
  UniqueIdFields ignored;
  FUZZ_CHECK(!bs::decode_unique_id(corrupted, &ignored).ok());
  return 0;
}
