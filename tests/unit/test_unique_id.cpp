// The 128-byte unique ID: its layout round-trips, and every kind of damage is refused with its own
// reason.
#include <doctest/doctest.h>
#include <stdlib.h>

#include <cstring>
#include <string>

#include "bootstrap/bootstrap.hpp"
#include "bootstrap/bytes.hpp"
#include "bootstrap/unique_id.hpp"

using mori::shmem::UniqueId;
using namespace mori::bootstrap;

namespace {

UniqueIdFields sample_fields() {
  UniqueIdFields fields;
  fields.family = AddressFamily::kIpv4;
  fields.address = {10, 1, 2, 3};
  fields.port = 41000;
  fields.nonce = 0x0123456789abcdefull;
  return fields;
}

UniqueId sample_id() {
  UniqueId id;
  encode_unique_id(sample_fields(), &id);
  return id;
}

std::string decode_error(const UniqueId& id) {
  UniqueIdFields fields;
  mori::Status s = decode_unique_id(id, &fields);
  return s.ok() ? "ok" : s.message();
}

// Restores an environment variable when a test ends, however it ends.
struct EnvGuard {
  explicit EnvGuard(const char* name) : name(name) {
    if (const char* v = getenv(name)) old = v, had = true;
  }
  ~EnvGuard() { had ? setenv(name, old.c_str(), 1) : unsetenv(name); }
  const char* name;
  std::string old;
  bool had = false;
};

}  // namespace

TEST_CASE("bootstrap unique ID: encode and decode round-trip IPv4 and IPv6 fields") {
  UniqueIdFields v6;
  v6.family = AddressFamily::kIpv6;
  for (int i = 0; i < 16; ++i) v6.address[i] = static_cast<uint8_t>(0xf0 + i);
  v6.port = 65535;
  v6.nonce = ~0ull;
  for (const UniqueIdFields& in : {sample_fields(), v6}) {
    UniqueId id;
    encode_unique_id(in, &id);
    UniqueIdFields out;
    REQUIRE(decode_unique_id(id, &out).ok());
    CHECK(out.family == in.family);
    CHECK(out.address == in.address);
    CHECK(out.port == in.port);
    CHECK(out.nonce == in.nonce);
  }
  CHECK(format_endpoint(sample_fields()) == "10.1.2.3:41000");
  CHECK(format_endpoint(v6) == "[f0f1:f2f3:f4f5:f6f7:f8f9:fafb:fcfd:feff]:65535");
}

TEST_CASE("bootstrap unique ID: the documented byte layout") {
  const UniqueId id = sample_id();
  CHECK(std::memcmp(id.bytes, "MORI", 4) == 0);
  CHECK(load_le<uint16_t>(id.bytes + kIdVersionOffset) == kWireVersion);
  CHECK(load_le<uint16_t>(id.bytes + kIdFamilyOffset) == 4);
  CHECK(load_le<uint16_t>(id.bytes + kIdPortOffset) == 41000);
  CHECK(id.bytes[kIdAddressOffset] == 10);
  CHECK(id.bytes[kIdAddressOffset + 3] == 3);
  CHECK(load_le<uint64_t>(id.bytes + kIdNonceOffset) == 0x0123456789abcdefull);
  CHECK(load_le<uint64_t>(id.bytes + kIdChecksumOffset) == fnv1a64(id.bytes, kIdChecksumOffset));
  for (size_t i = 40; i < kIdChecksumOffset; ++i) CHECK(id.bytes[i] == 0);
}

TEST_CASE("bootstrap unique ID: FNV-1a 64 matches its published test vectors") {
  CHECK(fnv1a64(nullptr, 0) == 0xcbf29ce484222325ull);
  CHECK(fnv1a64(reinterpret_cast<const uint8_t*>("a"), 1) == 0xaf63dc4c8601ec8cull);
  CHECK(fnv1a64(reinterpret_cast<const uint8_t*>("foobar"), 6) == 0x85944171f73967e8ull);
}

TEST_CASE("bootstrap unique ID: a wrong magic is not a mori unique ID") {
  UniqueId zero{};
  CHECK(decode_error(zero) == "not a mori unique ID");
  UniqueId id = sample_id();
  id.bytes[0] ^= 0x20;
  CHECK(decode_error(id) == "not a mori unique ID");
}

TEST_CASE("bootstrap unique ID: another wire version is named, even with a valid checksum") {
  UniqueId id = sample_id();
  store_le<uint16_t>(id.bytes + kIdVersionOffset, 2);
  seal_unique_id(&id);
  CHECK(decode_error(id) == "unique ID version 2, this library speaks 1");
  // The version is judged before the checksum: another version may checksum differently.
  store_le<uint16_t>(id.bytes + kIdVersionOffset, 700);
  CHECK(decode_error(id) == "unique ID version 700, this library speaks 1");
}

TEST_CASE("bootstrap unique ID: any flipped bit after the header is a checksum mismatch") {
  for (size_t byte = 6; byte < sizeof(UniqueId::bytes); ++byte) {
    CAPTURE(byte);
    UniqueId id = sample_id();
    id.bytes[byte] ^= static_cast<uint8_t>(1u << (byte % 8));
    CHECK(decode_error(id) == "corrupted unique ID (checksum mismatch)");
  }
}

TEST_CASE("bootstrap unique ID: sealed but meaningless fields are malformed") {
  UniqueId id = sample_id();
  store_le<uint16_t>(id.bytes + kIdFamilyOffset, 9);
  seal_unique_id(&id);
  CHECK(decode_error(id) == "malformed unique ID: unknown address family 9");
  id = sample_id();
  store_le<uint16_t>(id.bytes + kIdPortOffset, 0);
  seal_unique_id(&id);
  CHECK(decode_error(id) == "malformed unique ID: port 0");
}

// Each field check at its edges: the values next to each accepted one are refused.
TEST_CASE("bootstrap unique ID: magic, version, family and port are checked at their edges") {
  auto with = [](size_t offset, auto value) {
    UniqueId id = sample_id();
    store_le<decltype(value)>(id.bytes + offset, value);
    seal_unique_id(&id);
    return decode_error(id);
  };
  CHECK(with(kIdMagicOffset, kUniqueIdMagic) == "ok");
  CHECK(with(kIdMagicOffset, kUniqueIdMagic - 1) == "not a mori unique ID");
  CHECK(with(kIdMagicOffset, kUniqueIdMagic + 1) == "not a mori unique ID");
  CHECK(with(kIdVersionOffset, uint16_t{1}) == "ok");
  CHECK(with(kIdVersionOffset, uint16_t{0}) == "unique ID version 0, this library speaks 1");
  CHECK(with(kIdVersionOffset, uint16_t{2}) == "unique ID version 2, this library speaks 1");
  for (const uint16_t family : {4, 6}) CHECK(with(kIdFamilyOffset, family) == "ok");
  for (const uint16_t family : {3, 5, 7}) {
    CHECK(with(kIdFamilyOffset, family) ==
          "malformed unique ID: unknown address family " + std::to_string(family));
  }
  CHECK(with(kIdPortOffset, uint16_t{0}) == "malformed unique ID: port 0");
  for (const uint16_t port : {1, 65535}) {
    CAPTURE(port);
    UniqueId id = sample_id();
    store_le<uint16_t>(id.bytes + kIdPortOffset, port);
    seal_unique_id(&id);
    UniqueIdFields fields;
    REQUIRE(decode_unique_id(id, &fields).ok());
    CHECK(fields.port == port);
  }
  // The checksum covers bytes 0..119 exactly: byte 119 is in it, and the checksum's own bytes are
  // not hashed (a sealed ID whose last payload byte changed still decodes once resealed).
  UniqueId id = sample_id();
  id.bytes[kIdChecksumOffset - 1] ^= 1;
  CHECK(decode_error(id) == "corrupted unique ID (checksum mismatch)");
  seal_unique_id(&id);
  CHECK(decode_error(id) == "ok");
}

TEST_CASE("bootstrap unique ID: new IDs listen on 127.0.0.1 and carry different random nonces") {
  EnvGuard guard("MORI_SOCKET_IFNAME");
  unsetenv("MORI_SOCKET_IFNAME");
  UniqueId a, b;
  REQUIRE(new_unique_id(&a).ok());
  REQUIRE(new_unique_id(&b).ok());
  UniqueIdFields fa, fb;
  REQUIRE(decode_unique_id(a, &fa).ok());
  REQUIRE(decode_unique_id(b, &fb).ok());
  CHECK(format_endpoint(fa).rfind("127.0.0.1:", 0) == 0);
  CHECK(fa.port != fb.port);
  CHECK(fa.nonce != fb.nonce);
  CHECK(fa.nonce != 0);
  uint64_t n1 = 0, n2 = 0;
  REQUIRE(random_nonce(&n1).ok());
  REQUIRE(random_nonce(&n2).ok());
  CHECK(n1 != n2);
}

TEST_CASE(
    "bootstrap unique ID: MORI_SOCKET_IFNAME picks the interface's address, and a wrong name is "
    "refused") {
  EnvGuard guard("MORI_SOCKET_IFNAME");
  setenv("MORI_SOCKET_IFNAME", "lo", 1);
  UniqueId id;
  REQUIRE(new_unique_id(&id).ok());
  UniqueIdFields fields;
  REQUIRE(decode_unique_id(id, &fields).ok());
  CHECK(format_endpoint(fields).rfind("127.0.0.1:", 0) == 0);

  setenv("MORI_SOCKET_IFNAME", "no-such-if0", 1);
  mori::Status s = new_unique_id(&id);
  REQUIRE_FALSE(s.ok());
  CHECK(s.message().rfind(
            "MORI_SOCKET_IFNAME=\"no-such-if0\" names no network interface (there are: ", 0) == 0);
  CHECK(s.message().find("lo") != std::string::npos);
}
