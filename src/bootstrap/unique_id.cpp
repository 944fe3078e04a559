#include "bootstrap/unique_id.hpp"

#include <arpa/inet.h>
#include <sys/random.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "bootstrap/bytes.hpp"

namespace mori::bootstrap {

uint64_t fnv1a64(const uint8_t* bytes, size_t n) {
  uint64_t hash = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < n; ++i) {
    hash ^= bytes[i];
    hash *= 0x100000001b3ull;
  }
  return hash;
}

void seal_unique_id(shmem::UniqueId* id) {
  store_le<uint64_t>(id->bytes + kIdChecksumOffset, fnv1a64(id->bytes, kIdChecksumOffset));
}

void encode_unique_id(const UniqueIdFields& fields, shmem::UniqueId* out) {
  std::memset(out->bytes, 0, sizeof(out->bytes));
  store_le<uint32_t>(out->bytes + kIdMagicOffset, kUniqueIdMagic);
  store_le<uint16_t>(out->bytes + kIdVersionOffset, kWireVersion);
  store_le<uint16_t>(out->bytes + kIdFamilyOffset, static_cast<uint16_t>(fields.family));
  store_le<uint16_t>(out->bytes + kIdPortOffset, fields.port);
  std::memcpy(out->bytes + kIdAddressOffset, fields.address.data(), fields.address.size());
  store_le<uint64_t>(out->bytes + kIdNonceOffset, fields.nonce);
  seal_unique_id(out);
}

Status decode_unique_id(const shmem::UniqueId& id, UniqueIdFields* out) {
  const uint8_t* b = id.bytes;
  if (load_le<uint32_t>(b + kIdMagicOffset) != kUniqueIdMagic) {
    return Status::error("not a mori unique ID");
  }
  const uint16_t version = load_le<uint16_t>(b + kIdVersionOffset);
  if (version != kWireVersion) {
    return Status::error("unique ID version " + std::to_string(version) + ", this library speaks " +
                         std::to_string(kWireVersion));
  }
  if (load_le<uint64_t>(b + kIdChecksumOffset) != fnv1a64(b, kIdChecksumOffset)) {
    return Status::error("corrupted unique ID (checksum mismatch)");
  }
  const uint16_t family = load_le<uint16_t>(b + kIdFamilyOffset);
  if (family != static_cast<uint16_t>(AddressFamily::kIpv4) &&
      family != static_cast<uint16_t>(AddressFamily::kIpv6)) {
    return Status::error("malformed unique ID: unknown address family " + std::to_string(family));
  }
  UniqueIdFields fields;
  fields.family = static_cast<AddressFamily>(family);
  fields.port = load_le<uint16_t>(b + kIdPortOffset);
  if (fields.port == 0) return Status::error("malformed unique ID: port 0");
  std::memcpy(fields.address.data(), b + kIdAddressOffset, fields.address.size());
  fields.nonce = load_le<uint64_t>(b + kIdNonceOffset);
  *out = fields;
  return {};
}

Status random_nonce(uint64_t* out) {
  uint64_t value = 0;
  // Zero is reserved so that a zero-filled ID or hello never matches a live listener by accident.
  while (value == 0) {
    ssize_t got = getrandom(&value, sizeof(value), 0);
    if (got < 0 && errno == EINTR) continue;
    if (got != static_cast<ssize_t>(sizeof(value))) {
      return Status::error(std::string("cannot read random bytes for the unique ID nonce: ") +
                           (got < 0 ? std::strerror(errno) : "short read"));
    }
  }
  *out = value;
  return {};
}

std::string format_endpoint(const UniqueIdFields& fields) {
  char text[INET6_ADDRSTRLEN] = "?";
  const bool v4 = fields.family == AddressFamily::kIpv4;
  inet_ntop(v4 ? AF_INET : AF_INET6, fields.address.data(), text, sizeof(text));
  const std::string host = v4 ? std::string(text) : "[" + std::string(text) + "]";
  return host + ":" + std::to_string(fields.port);
}

}  // namespace mori::bootstrap
