// The byte layout of the 128-byte unique ID (mori::shmem::UniqueId), and its encoding and checks.
//
// Every integer is little-endian, whatever the host, so an ID can cross machines as raw bytes.
//
//   offset  bytes  field
//   ------  -----  --------------------------------------------------------------------------------
//        0      4  magic, kUniqueIdMagic ("MORI" in ASCII, read as a little-endian u32)
//        4      2  wire version, kWireVersion: the layout of this ID and of the TCP bootstrap's
//                  messages
//        6      2  address family: 4 (IPv4) or 6 (IPv6)
//        8      2  TCP port of rank 0's listener
//       10      6  reserved, zero
//       16     16  address of rank 0's listener: IPv4 in bytes 16..19 (network order), or IPv6
//       32      8  nonce: random, names one job so that a stale ID cannot join a newer listener
//       40     80  reserved, zero
//      120      8  checksum: FNV-1a 64 over bytes 0..119
//
// Decoding checks the magic first, then the version (another version may place its checksum
// elsewhere), then the checksum.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include "mori/shmem/unique_id.hpp"
#include "mori/status.hpp"

namespace mori::bootstrap {

inline constexpr uint32_t kUniqueIdMagic = 0x49524f4d;  // "MORI"
inline constexpr uint16_t kWireVersion = 1;

inline constexpr size_t kIdMagicOffset = 0;
inline constexpr size_t kIdVersionOffset = 4;
inline constexpr size_t kIdFamilyOffset = 6;
inline constexpr size_t kIdPortOffset = 8;
inline constexpr size_t kIdAddressOffset = 16;
inline constexpr size_t kIdNonceOffset = 32;
inline constexpr size_t kIdChecksumOffset = 120;
static_assert(kIdChecksumOffset + 8 == shmem::kUniqueIdBytes, "the checksum ends the ID");

enum class AddressFamily : uint16_t { kIpv4 = 4, kIpv6 = 6 };

// What a unique ID says, decoded.
struct UniqueIdFields {
  AddressFamily family = AddressFamily::kIpv4;
  std::array<uint8_t, 16> address{};  // network order; IPv4 uses the first 4 bytes
  uint16_t port = 0;
  uint64_t nonce = 0;
};

// Writes `fields` with the current magic and version and seals the result.
void encode_unique_id(const UniqueIdFields& fields, shmem::UniqueId* out);

// Fails with "not a mori unique ID", "unique ID version N, this library speaks M",
// "corrupted unique ID (checksum mismatch)", or "malformed unique ID: ..." for a sealed ID whose
// fields make no sense (an unknown address family, port 0).
Status decode_unique_id(const shmem::UniqueId& id, UniqueIdFields* out);

// Recomputes the checksum after bytes 0..119 have changed.
void seal_unique_id(shmem::UniqueId* id);

// FNV-1a, 64-bit.
uint64_t fnv1a64(const uint8_t* bytes, size_t n);

// 64 random bits from the kernel (getrandom), never zero.
Status random_nonce(uint64_t* out);

// "127.0.0.1:4242" or "[::1]:4242", for messages.
std::string format_endpoint(const UniqueIdFields& fields);

}  // namespace mori::bootstrap
