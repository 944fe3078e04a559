// RoCEv2 packets as bytes (roce.hpp): build() and parse() of one IPv4 datagram carrying UDP to
// port 4791, the base transport header, its extensions, the payload, pad and ICRC.
//
// The layouts (IBTA Vol 1 9.2 BTH, 9.3.3 RETH, 9.3.4 AtomicETH, 9.3.5 AETH, 9.3.6 AtomicAckETH)
// and which opcode carries which header (IBTA table 38; Linux rxe_opcode.c rxe_opcode[] says
// the same per opcode) are written once, in header_plan(), so that build() and parse() cannot
// disagree on them.
#include "backend/host/wire/roce.hpp"

#include <array>
#include <cstdio>
#include <cstring>

#include "backend/host/wire/rc_qp.hpp"
#include "runtime/hex.hpp"

namespace mori::wire {
namespace {

// Byte offsets inside the datagram (IPv4 without options, RFC 791 3.1; UDP, RFC 768).
constexpr size_t kIpTos = 1, kIpTotalLength = 2, kIpId = 4, kIpFlagsFragment = 6, kIpTtl = 8,
                 kIpProtocol = 9, kIpChecksum = 10, kIpSrc = 12, kIpDst = 16;
constexpr size_t kUdp = kIpv4Bytes;
constexpr size_t kUdpSport = kUdp + 0, kUdpDport = kUdp + 2, kUdpLength = kUdp + 4,
                 kUdpChecksum = kUdp + 6;
constexpr size_t kBth = kUdp + kUdpBytes;
constexpr size_t kBthReserved = kBth + 4;  // byte 4: reserved, FECN/BECN in RoCEv2 (A17.9)
constexpr size_t kAfterBth = kBth + kBthBytes;
// The smallest RoCEv2 datagram: no extension header, no payload.
constexpr size_t kMinRoce = kAfterBth + kIcrcBytes;

constexpr uint8_t kIpVersionIhl = 0x45;       // version 4, IHL 5 words: no options
constexpr uint16_t kIpDontFragment = 0x4000;  // RFC 791 flags: DF; MF 0x2000, offset 0x1FFF
constexpr uint8_t kIpProtocolUdp = 17;

// BTH byte 1 (IBTA 9.2): SE | M | PadCnt (2 bits) | TVer (4 bits); byte 8: AckReq | reserved.
constexpr uint8_t kBthSolicited = 0x80, kBthPadShift = 4, kBthPadMask = 0x3, kBthTverMask = 0x0F;
constexpr uint8_t kBthAckRequest = 0x80;
constexpr uint32_t kMask24 = 0xFFFFFF;

void put16(uint8_t* at, uint16_t v) {
  at[0] = static_cast<uint8_t>(v >> 8);
  at[1] = static_cast<uint8_t>(v);
}
void put24(uint8_t* at, uint32_t v) {
  at[0] = static_cast<uint8_t>(v >> 16);
  at[1] = static_cast<uint8_t>(v >> 8);
  at[2] = static_cast<uint8_t>(v);
}
void put32(uint8_t* at, uint32_t v) {
  put16(at, static_cast<uint16_t>(v >> 16));
  put16(at + 2, static_cast<uint16_t>(v));
}
void put64(uint8_t* at, uint64_t v) {
  put32(at, static_cast<uint32_t>(v >> 32));
  put32(at + 4, static_cast<uint32_t>(v));
}
uint16_t get16(const uint8_t* at) { return static_cast<uint16_t>(at[0] << 8 | at[1]); }
uint32_t get24(const uint8_t* at) {
  return static_cast<uint32_t>(at[0]) << 16 | static_cast<uint32_t>(at[1]) << 8 | at[2];
}
uint32_t get32(const uint8_t* at) { return static_cast<uint32_t>(get16(at)) << 16 | get16(at + 2); }
uint64_t get64(const uint8_t* at) { return static_cast<uint64_t>(get32(at)) << 32 | get32(at + 4); }

// The addresses are kept in network byte order (roce.hpp): their bytes go out as they lie in
// memory, whatever the host's byte order.
void put_network_order(uint8_t* at, uint32_t v) { std::memcpy(at, &v, 4); }
uint32_t get_network_order(const uint8_t* at) {
  uint32_t v;
  std::memcpy(&v, at, 4);
  return v;
}

// RFC 791 3.1 header checksum: the 16-bit ones' complement of the ones' complement sum of the
// header's 16-bit words (RFC 1071 computes it). Over a header whose checksum field is in place,
// the sum is 0xFFFF, so the result is 0 for a correct header.
uint16_t ipv4_checksum(const uint8_t* header) {
  uint32_t sum = 0;
  for (size_t i = 0; i < kIpv4Bytes; i += 2) sum += get16(header + i);
  while (sum >> 16) sum = (sum & 0xFFFF) + (sum >> 16);
  return static_cast<uint16_t>(~sum);
}

// CRC-32 of IEEE 802.3 (reflected polynomial 0xEDB88320), the one ICRC uses (A17.8; rxe_icrc.c
// uses crc32_le). Table-driven, one byte at a time; the library must not depend on zlib.
constexpr std::array<uint32_t, 256> make_crc32_table() {
  std::array<uint32_t, 256> table{};
  for (uint32_t n = 0; n < 256; ++n) {
    uint32_t c = n;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    table[n] = c;
  }
  return table;
}
constexpr std::array<uint32_t, 256> kCrc32Table = make_crc32_table();
uint32_t crc32_update(uint32_t crc, uint8_t byte) {
  return kCrc32Table[(crc ^ byte) & 0xFF] ^ (crc >> 8);
}

// The fields A17.8 masks with all ones before the ICRC is computed: the ones a router may
// change on the way (TOS, which carries ECN; TTL; the IPv4 checksum, which follows them), the
// UDP checksum, and the BTH byte whose FECN/BECN bits a switch may set.
bool icrc_masked(size_t offset) {
  return offset == kIpTos || offset == kIpTtl || offset == kIpChecksum ||
         offset == kIpChecksum + 1 || offset == kUdpChecksum || offset == kUdpChecksum + 1 ||
         offset == kBthReserved;
}

// Which headers follow the BTH, in order (IBTA table 38, rxe_opcode.c).
struct HeaderPlan {
  bool known = false;
  bool reth = false, aeth = false, atomic_eth = false, atomic_ack_eth = false, payload = false;
  size_t bytes() const {
    return (reth ? kRethBytes : 0) + (aeth ? kAethBytes : 0) + (atomic_eth ? kAtomicEthBytes : 0) +
           (atomic_ack_eth ? kAtomicAckEthBytes : 0);
  }
};

HeaderPlan header_plan(uint8_t opcode) {
  HeaderPlan h;
  h.known = true;
  switch (static_cast<BthOpcode>(opcode)) {
    case BthOpcode::kWriteFirst:
    case BthOpcode::kWriteOnly:
      h.reth = h.payload = true;
      break;
    case BthOpcode::kWriteMiddle:
    case BthOpcode::kWriteLast:
      h.payload = true;
      break;
    case BthOpcode::kReadRequest:
      h.reth = true;
      break;
    case BthOpcode::kReadResponseFirst:
    case BthOpcode::kReadResponseLast:
    case BthOpcode::kReadResponseOnly:
      h.aeth = h.payload = true;
      break;
    case BthOpcode::kReadResponseMiddle:
      h.payload = true;
      break;
    case BthOpcode::kAcknowledge:
      h.aeth = true;
      break;
    case BthOpcode::kAtomicAcknowledge:
      h.aeth = h.atomic_ack_eth = true;
      break;
    case BthOpcode::kCompareSwap:
    case BthOpcode::kFetchAdd:
    case BthOpcode::kCompareSwap32:
    case BthOpcode::kFetchAdd32:
      h.atomic_eth = true;
      break;
    default:
      h.known = false;
      break;
  }
  return h;
}

HeaderPlan header_plan(BthOpcode op) { return header_plan(static_cast<uint8_t>(op)); }

using runtime::hex;

bool fail(std::string* why, std::string reason) {
  if (why) *why = std::move(reason);
  return false;
}

}  // namespace

bool has_reth(BthOpcode op) { return header_plan(op).reth; }
bool has_aeth(BthOpcode op) { return header_plan(op).aeth; }
bool has_atomic_eth(BthOpcode op) { return header_plan(op).atomic_eth; }
bool has_atomic_ack_eth(BthOpcode op) { return header_plan(op).atomic_ack_eth; }
bool has_payload(BthOpcode op) { return header_plan(op).payload; }

bool is_request(BthOpcode op) {
  switch (op) {
    case BthOpcode::kWriteFirst:
    case BthOpcode::kWriteMiddle:
    case BthOpcode::kWriteLast:
    case BthOpcode::kWriteOnly:
    case BthOpcode::kReadRequest:
    case BthOpcode::kCompareSwap:
    case BthOpcode::kFetchAdd:
    case BthOpcode::kCompareSwap32:
    case BthOpcode::kFetchAdd32:
      return true;
    default:
      return false;
  }
}

// Wireshark's names (tshark -G values, infiniband.bth.opcode: "Reliable Connection (RC) - RDMA
// WRITE First", ...) with the transport shortened to "RC", so that our logs and its dissection
// read alike; the two vendor opcodes are ours.
const char* opcode_name(BthOpcode op) {
  switch (op) {
    case BthOpcode::kWriteFirst:
      return "RC RDMA WRITE First";
    case BthOpcode::kWriteMiddle:
      return "RC RDMA WRITE Middle";
    case BthOpcode::kWriteLast:
      return "RC RDMA WRITE Last";
    case BthOpcode::kWriteOnly:
      return "RC RDMA WRITE Only";
    case BthOpcode::kReadRequest:
      return "RC RDMA READ Request";
    case BthOpcode::kReadResponseFirst:
      return "RC RDMA READ response First";
    case BthOpcode::kReadResponseMiddle:
      return "RC RDMA READ response Middle";
    case BthOpcode::kReadResponseLast:
      return "RC RDMA READ response Last";
    case BthOpcode::kReadResponseOnly:
      return "RC RDMA READ response Only";
    case BthOpcode::kAcknowledge:
      return "RC Acknowledge";
    case BthOpcode::kAtomicAcknowledge:
      return "RC ATOMIC Acknowledge";
    case BthOpcode::kCompareSwap:
      return "RC CmpSwap";
    case BthOpcode::kFetchAdd:
      return "RC FetchAdd";
    case BthOpcode::kCompareSwap32:
      return "vendor CmpSwap 4-byte";
    case BthOpcode::kFetchAdd32:
      return "vendor FetchAdd 4-byte";
  }
  return "unknown opcode";
}

uint32_t icrc(std::span<const uint8_t> datagram) {
  if (datagram.size() < kIcrcBytes) return 0;
  uint32_t crc = 0xFFFFFFFF;
  // A17.8: 8 bytes of all ones stand for the LRH, which RoCEv2 has not (rxe_icrc_hdr: "pshdr").
  for (int i = 0; i < 8; ++i) crc = crc32_update(crc, 0xFF);
  const size_t covered = datagram.size() - kIcrcBytes;
  for (size_t i = 0; i < covered; ++i) crc = crc32_update(crc, icrc_masked(i) ? 0xFF : datagram[i]);
  return ~crc;
}

uint32_t carried_icrc(std::span<const uint8_t> datagram) {
  if (datagram.size() < kIcrcBytes) return 0;
  const uint8_t* at = datagram.data() + datagram.size() - kIcrcBytes;
  return static_cast<uint32_t>(at[0]) | static_cast<uint32_t>(at[1]) << 8 |
         static_cast<uint32_t>(at[2]) << 16 | static_cast<uint32_t>(at[3]) << 24;
}

// The caller keeps the datagram within IPv4's 65535 bytes: a path MTU is at most 4096 bytes of
// payload (QpAttributes), far below.
void build(const Packet& p, std::vector<uint8_t>* out) {
  const HeaderPlan plan = header_plan(p.opcode);
  const size_t payload = plan.payload ? p.payload.size() : 0;
  const size_t pad = (4 - payload % 4) % 4;  // IBTA 9.2: PadCnt bytes align the payload to 4
  const size_t total = kAfterBth + plan.bytes() + payload + pad + kIcrcBytes;
  const size_t start = out->size();
  out->resize(start + total, 0);
  uint8_t* d = out->data() + start;

  // IPv4 (RFC 791 3.1)
  d[0] = kIpVersionIhl;
  d[kIpTos] = p.tos;
  put16(d + kIpTotalLength, static_cast<uint16_t>(total));
  put16(d + kIpId, p.ip_id);
  put16(d + kIpFlagsFragment, kIpDontFragment);
  d[kIpTtl] = p.ttl;
  d[kIpProtocol] = kIpProtocolUdp;
  put_network_order(d + kIpSrc, p.src_ip);
  put_network_order(d + kIpDst, p.dst_ip);
  put16(d + kIpChecksum, ipv4_checksum(d));
  // UDP (RFC 768); checksum 0: none, which A17.4.5.2 allows over IPv4
  put16(d + kUdpSport, p.udp_sport);
  put16(d + kUdpDport, kRoceUdpPort);
  put16(d + kUdpLength, static_cast<uint16_t>(total - kIpv4Bytes));
  // BTH (9.2): MigReq 0 (no path migration), TVer 0; byte 4 reserved, 0 on send
  d[kBth] = static_cast<uint8_t>(p.opcode);
  d[kBth + 1] = static_cast<uint8_t>((p.solicited ? kBthSolicited : 0) | pad << kBthPadShift);
  put16(d + kBth + 2, p.pkey);
  put24(d + kBth + 5, p.dest_qp & kMask24);
  d[kBth + 8] = p.ack_request ? kBthAckRequest : 0;
  put24(d + kBth + 9, p.psn & kMask24);

  uint8_t* at = d + kAfterBth;
  if (plan.reth) {  // 9.3.3
    put64(at, p.va);
    put32(at + 8, p.rkey);
    put32(at + 12, p.dma_length);
    at += kRethBytes;
  }
  if (plan.aeth) {  // 9.3.5
    at[0] = p.syndrome;
    put24(at + 1, p.msn & kMask24);
    at += kAethBytes;
  }
  if (plan.atomic_eth) {  // 9.3.4
    put64(at, p.va);
    put32(at + 8, p.rkey);
    put64(at + 12, p.swap_add);
    put64(at + 20, p.compare);
    at += kAtomicEthBytes;
  }
  if (plan.atomic_ack_eth) {  // 9.3.6
    put64(at, p.original);
    at += kAtomicAckEthBytes;
  }
  if (payload) std::memcpy(at, p.payload.data(), payload);
  at += payload + pad;  // the pad bytes stay 0 (resize)

  // ICRC last, least significant byte first (A17.8; rxe_icrc_generate stores ~crc as it lies)
  const uint32_t crc = icrc({d, total});
  for (int i = 0; i < 4; ++i) at[i] = static_cast<uint8_t>(crc >> (8 * i));
}

// The order of the checks: first what makes the datagram a RoCEv2 packet at all (IPv4, UDP to
// 4791, lengths that agree), then the ICRC, then the transport headers it covers. Checking the
// ICRC before the BTH means a corrupted opcode, PadCnt or TVer reads as the corruption it is.
bool parse(std::span<const uint8_t> datagram, Packet* p, std::string* why) {
  const uint8_t* d = datagram.data();
  const size_t size = datagram.size();
  if (size < kIpv4Bytes)
    return fail(why,
                "datagram of " + std::to_string(size) + " bytes is shorter than an IPv4 header");
  if (d[0] >> 4 != 4) return fail(why, "not IPv4: IP version " + std::to_string(d[0] >> 4));
  if ((d[0] & 0x0F) != 5)
    return fail(why,
                "IPv4 header with options (IHL " + std::to_string(d[0] & 0x0F) + ", expected 5)");
  if (get16(d + kIpTotalLength) != size)
    return fail(why, "IPv4 total length " + std::to_string(get16(d + kIpTotalLength)) +
                         " disagrees with the datagram's " + std::to_string(size) + " bytes");
  if (ipv4_checksum(d) != 0)
    return fail(why, "IPv4 header checksum " + hex(get16(d + kIpChecksum)) + " is wrong");
  if ((get16(d + kIpFlagsFragment) & 0x3FFF) != 0)  // MF or a fragment offset
    return fail(why, "IPv4 fragment (flags and offset " + hex(get16(d + kIpFlagsFragment)) + ")");
  if (d[kIpProtocol] != kIpProtocolUdp)
    return fail(why, "IPv4 protocol " + std::to_string(d[kIpProtocol]) + " is not UDP (17)");
  if (size < kMinRoce)
    return fail(why, "datagram of " + std::to_string(size) +
                         " bytes is shorter than IPv4, UDP, BTH and ICRC headers (" +
                         std::to_string(kMinRoce) + ")");
  if (get16(d + kUdpDport) != kRoceUdpPort)
    return fail(why, "UDP destination port " + std::to_string(get16(d + kUdpDport)) +
                         " is not RoCEv2's 4791");
  if (get16(d + kUdpLength) != size - kIpv4Bytes)
    return fail(why, "UDP length " + std::to_string(get16(d + kUdpLength)) +
                         " disagrees with the IPv4 payload's " + std::to_string(size - kIpv4Bytes) +
                         " bytes");
  const uint32_t carried = carried_icrc(datagram), computed = icrc(datagram);
  if (carried != computed)
    return fail(why, "ICRC mismatch: carried " + hex(carried) + ", computed " + hex(computed));

  const uint8_t opcode = d[kBth];
  const HeaderPlan plan = header_plan(opcode);
  if (!plan.known) return fail(why, "unknown BTH opcode " + hex(opcode));
  const BthOpcode op = static_cast<BthOpcode>(opcode);
  const uint8_t tver = d[kBth + 1] & kBthTverMask;
  if (tver != 0)
    return fail(why, "BTH transport header version " + std::to_string(tver) + " is not 0");
  const size_t headers = kAfterBth + plan.bytes() + kIcrcBytes;
  if (size < headers)
    return fail(why, std::string("datagram of ") + std::to_string(size) +
                         " bytes is too short for " + opcode_name(op) + "'s headers (" +
                         std::to_string(headers) + ")");
  const size_t padded = size - headers;
  const size_t pad = d[kBth + 1] >> kBthPadShift & kBthPadMask;
  if (!plan.payload && padded != 0)
    return fail(why, std::to_string(padded) + " bytes after the headers of " + opcode_name(op) +
                         ", which carries no payload");
  if (padded % 4 != 0)
    return fail(why,
                "payload and pad of " + std::to_string(padded) + " bytes are not a multiple of 4");
  if (pad > padded)
    return fail(why, "PadCnt " + std::to_string(pad) + " exceeds the " + std::to_string(padded) +
                         " bytes after the headers of " + opcode_name(op));

  *p = Packet{};
  p->src_ip = get_network_order(d + kIpSrc);
  p->dst_ip = get_network_order(d + kIpDst);
  p->tos = d[kIpTos];
  p->ttl = d[kIpTtl];
  p->ip_id = get16(d + kIpId);
  p->udp_sport = get16(d + kUdpSport);
  p->opcode = op;
  p->solicited = (d[kBth + 1] & kBthSolicited) != 0;
  p->pkey = get16(d + kBth + 2);
  p->dest_qp = get24(d + kBth + 5);
  p->ack_request = (d[kBth + 8] & kBthAckRequest) != 0;
  p->psn = get24(d + kBth + 9);
  const uint8_t* at = d + kAfterBth;
  if (plan.reth) {
    p->va = get64(at);
    p->rkey = get32(at + 8);
    p->dma_length = get32(at + 12);
    at += kRethBytes;
  }
  if (plan.aeth) {
    p->syndrome = at[0];
    p->msn = get24(at + 1);
    at += kAethBytes;
  }
  if (plan.atomic_eth) {
    p->va = get64(at);
    p->rkey = get32(at + 8);
    p->swap_add = get64(at + 12);
    p->compare = get64(at + 20);
    at += kAtomicEthBytes;
  }
  if (plan.atomic_ack_eth) {
    p->original = get64(at);
    at += kAtomicAckEthBytes;
  }
  p->payload = {at, padded - pad};
  return true;
}

bool dest_qpn(std::span<const uint8_t> datagram, uint32_t* qpn) {
  const uint8_t* d = datagram.data();
  if (datagram.size() < kAfterBth || d[0] != kIpVersionIhl || d[kIpProtocol] != kIpProtocolUdp ||
      get16(d + kUdpDport) != kRoceUdpPort)
    return false;
  *qpn = get24(d + kBth + 5);
  return true;
}

// include/rdma/ib_addr.h iboe_get_mtu: the netdev MTU less IB_GRH_BYTES (40, in RoCEv2's place
// the IPv4/UDP headers) + IB_UDP_BYTES (8) + IB_BTH_BYTES (12) + IB_EXT_XRC_BYTES (4) +
// IB_EXT_ATOMICETH_BYTES (28) + IB_ICRC_BYTES (4), then the largest IB MTU that fits.
uint8_t path_mtu_for_netdev(uint32_t netdev_mtu) {
  constexpr uint32_t kOverhead = 40 + 8 + 12 + 4 + 28 + 4;
  if (netdev_mtu < kOverhead) return 0;
  const uint32_t room = netdev_mtu - kOverhead;
  for (uint8_t mtu = 5; mtu >= 1; --mtu)  // ibv_mtu: 1 is 256 bytes ... 5 is 4096 bytes
    if (room >= (128u << mtu)) return mtu;
  return 0;
}

}  // namespace mori::wire
