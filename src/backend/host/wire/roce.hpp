// RoCEv2 packets of the reliable-connection transport, as bytes: one IPv4 datagram carrying UDP to
// port 4791, the InfiniBand base transport header and its extensions, the payload, its pad and the
// invariant CRC (IBTA Vol 1 chapter 9 for the transport headers, Annex A17 for RoCEv2). Building
// and parsing only: the RC state machine is rc_qp.cpp's.
//
// Byte order on the wire is big-endian for every header field (IBTA 9.2: "most significant byte
// first"); the ICRC is sent least significant byte first, as Ethernet's FCS (A17.8 and Linux
// rxe_icrc.c, which stores ~crc32_le).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace mori::wire {

constexpr uint16_t kRoceUdpPort = 4791;  // IANA's RoCEv2 port (IBTA A17.4.5.2)

// Header sizes in bytes (IBTA 9.2 / 9.3; IPv4 without options, UDP).
constexpr size_t kIpv4Bytes = 20, kUdpBytes = 8, kBthBytes = 12, kRethBytes = 16, kAethBytes = 4,
                 kAtomicEthBytes = 28, kAtomicAckEthBytes = 8, kIcrcBytes = 4;
// Everything a packet carries besides its payload, at most: what a path MTU must leave room for.
constexpr size_t kMaxHeaderBytes =
    kIpv4Bytes + kUdpBytes + kBthBytes + kAtomicEthBytes + kIcrcBytes;

// BTH opcodes of the RC transport (IBTA Vol 1 table 38: transport bits 000, then the operation).
// The two 4-byte (masked) atomics are not IBTA's: IBTA defines 8-byte atomics only (9.4.5), and
// its opcodes with transport bits 110 are manufacturer specific (table 38); MLX5's extended
// atomics travel as such vendor opcodes. Ours: AtomicETH as for the 8-byte ones, on 4 bytes.
enum class BthOpcode : uint8_t {
  kWriteFirst = 0x06,
  kWriteMiddle = 0x07,
  kWriteLast = 0x08,
  kWriteOnly = 0x0A,
  kReadRequest = 0x0C,
  kReadResponseFirst = 0x0D,
  kReadResponseMiddle = 0x0E,
  kReadResponseLast = 0x0F,
  kReadResponseOnly = 0x10,
  kAcknowledge = 0x11,
  kAtomicAcknowledge = 0x12,
  kCompareSwap = 0x13,
  kFetchAdd = 0x14,
  kCompareSwap32 = 0xC0,  // vendor (transport bits 110): 4-byte compare-and-swap
  kFetchAdd32 = 0xC1,     // vendor: 4-byte fetch-and-add
};

// AETH syndromes (IBTA 9.3.5, table 43). An ACK's low 5 bits are a credit count; 0x1F says the
// responder does not use end-to-end credits (9.7.7.2.6: "invalid credit count").
constexpr uint8_t kAckSyndrome = 0x1F;
enum class NakCode : uint8_t {  // the low 5 bits of a NAK (syndrome 011xxxxx)
  kPsnSequenceError = 0,
  kInvalidRequest = 1,
  kRemoteAccessError = 2,
  kRemoteOperationalError = 3,
};
constexpr uint8_t nak_syndrome(NakCode code) { return 0x60 | static_cast<uint8_t>(code); }
constexpr bool is_nak(uint8_t syndrome) { return (syndrome & 0xE0) == 0x60; }

// One packet, decoded, or to be built. Fields a given opcode does not carry are ignored by build()
// and zero after parse().
struct Packet {
  // IPv4 and UDP (the addresses in network byte order, as QpAttributes keeps them)
  uint32_t src_ip = 0, dst_ip = 0;
  uint8_t tos = 0, ttl = 64;
  uint16_t ip_id = 0;  // nonzero: the IPv4 identification the ICRC covers (A17.8 masks it not)
  uint16_t udp_sport = 0xC000;
  // BTH (IBTA 9.2)
  BthOpcode opcode = BthOpcode::kAcknowledge;
  bool solicited = false;
  uint16_t pkey = 0xFFFF;  // the default partition key (IBTA 10.9.1.2)
  uint32_t dest_qp = 0;    // 24 bits
  bool ack_request = false;
  uint32_t psn = 0;  // 24 bits
  // RETH (writes' first or only packet, read requests; 9.3.3)
  uint64_t va = 0;
  uint32_t rkey = 0;
  uint32_t dma_length = 0;
  // AETH (ACK, NAK, read responses' first, last and only, atomic ACK; 9.3.5)
  uint8_t syndrome = 0;
  uint32_t msn = 0;  // 24 bits
  // AtomicETH (9.3.4): va and rkey above, then these
  uint64_t swap_add = 0, compare = 0;
  // AtomicAckETH (9.3.6)
  uint64_t original = 0;
  // Payload (writes, read responses); the pad to 4 bytes is build()'s and parse()'s.
  std::span<const uint8_t> payload;
};

// Which extension headers an opcode carries, and whether it carries payload (IBTA table 38).
bool has_reth(BthOpcode op);
bool has_aeth(BthOpcode op);
bool has_atomic_eth(BthOpcode op);
bool has_atomic_ack_eth(BthOpcode op);
bool has_payload(BthOpcode op);
bool is_request(BthOpcode op);  // sent by a requester (writes, read requests, atomics)
const char* opcode_name(BthOpcode op);

// The whole datagram for `p`: IPv4 header (with its checksum), UDP (checksum 0, allowed for IPv4
// by A17.4.5.2 and RFC 768), BTH and extensions, payload, pad and ICRC. Appends to *out.
void build(const Packet& p, std::vector<uint8_t>* out);

// Decodes a datagram (IPv4 header first). False, with the reason, for anything a RoCEv2 NIC
// drops: not IPv4/UDP to 4791, truncated, a length that disagrees with the headers, an unknown
// opcode, a transport version other than 0, or an ICRC that does not match. p->payload points
// into `datagram`.
bool parse(std::span<const uint8_t> datagram, Packet* p, std::string* why);

// The ICRC of a whole datagram whose last 4 bytes are its ICRC field (A17.8): CRC-32 over 8 bytes
// of 0xFF in place of the LRH, then the datagram with IPv4 TOS, TTL and checksum, the UDP
// checksum and the BTH's reserved byte 4 set to all ones, up to the ICRC field.
uint32_t icrc(std::span<const uint8_t> datagram);

// The ICRC field's value as the datagram carries it (least significant byte first).
uint32_t carried_icrc(std::span<const uint8_t> datagram);

}  // namespace mori::wire
