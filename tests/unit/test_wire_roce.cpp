// RoCEv2 packets (src/backend/host/wire/roce.cpp): exact bytes of a handmade packet, round trips
// of every opcode, the ICRC against zlib's CRC-32 over the A17.8 masked copy (written here
// independently of roce.cpp), every reason parse() rejects a datagram for, and Wireshark's
// dissector (tshark) as an independent reader.
#include <doctest/doctest.h>
#include <unistd.h>
#include <zlib.h>

#include <cstring>
#include <string>
#include <vector>

#include "backend/host/wire/rc_qp.hpp"
#include "backend/host/wire/roce.hpp"
#include "icrc_oracle.hpp"
#include "pcap_writer.hpp"
#include "tshark_oracle.hpp"

namespace {

using mori::wire::BthOpcode;
using mori::wire::Packet;
namespace wire = mori::wire;

constexpr BthOpcode kAllOpcodes[] = {
    BthOpcode::kWriteFirst,         BthOpcode::kWriteMiddle,       BthOpcode::kWriteLast,
    BthOpcode::kWriteOnly,          BthOpcode::kReadRequest,       BthOpcode::kReadResponseFirst,
    BthOpcode::kReadResponseMiddle, BthOpcode::kReadResponseLast,  BthOpcode::kReadResponseOnly,
    BthOpcode::kAcknowledge,        BthOpcode::kAtomicAcknowledge, BthOpcode::kCompareSwap,
    BthOpcode::kFetchAdd,           BthOpcode::kCompareSwap32,     BthOpcode::kFetchAdd32,
};

// Network byte order of a.b.c.d, as Packet keeps addresses.
uint32_t ip(uint8_t a, uint8_t b, uint8_t c, uint8_t d) {
  const uint8_t bytes[4] = {a, b, c, d};
  uint32_t v;
  std::memcpy(&v, bytes, 4);
  return v;
}

// A packet with every field distinct and nonzero, whatever the opcode carries.
Packet full_packet(BthOpcode op, std::span<const uint8_t> payload) {
  Packet p;
  p.src_ip = ip(10, 0, 0, 1), p.dst_ip = ip(10, 0, 1, 2);
  p.tos = 0x02, p.ttl = 63, p.ip_id = 0x4321, p.udp_sport = 0xC0DE;
  p.opcode = op, p.solicited = true, p.pkey = 0x8001, p.dest_qp = 0xABCDEF;
  p.ack_request = true, p.psn = 0x123456;
  p.va = 0x0102030405060708, p.rkey = 0x90A0B0C0, p.dma_length = 0x10000;
  p.syndrome = wire::nak_syndrome(wire::NakCode::kRemoteAccessError), p.msn = 0x654321;
  p.swap_add = 0x1111222233334444, p.compare = 0x5555666677778888;
  p.original = 0x99990000AAAABBBB;
  p.payload = payload;
  return p;
}

// `bytes` for an opcode with payload, nothing for one without.
std::span<const uint8_t> payload_for(BthOpcode op, std::span<const uint8_t> bytes) {
  return wire::has_payload(op) ? bytes : std::span<const uint8_t>();
}

std::vector<uint8_t> built(const Packet& p) {
  std::vector<uint8_t> d;
  wire::build(p, &d);
  return d;
}

using mori::test::zlib_icrc;

// The test's own RFC 791 checksum of the IPv4 header with its checksum field zero.
uint16_t ip_checksum(const std::vector<uint8_t>& d) {
  uint32_t sum = 0;
  for (size_t i = 0; i < 20; i += 2)
    if (i != 10) sum += static_cast<uint32_t>(d[i] << 8 | d[i + 1]);
  while (sum >> 16) sum = (sum & 0xFFFF) + (sum >> 16);
  return static_cast<uint16_t>(~sum);
}

// After a change: the IPv4 and UDP lengths from the size, the IPv4 checksum, the ICRC, so that a
// datagram reaches the check under test.
void reseal(std::vector<uint8_t>& d) {
  const size_t n = d.size();
  d[2] = static_cast<uint8_t>(n >> 8), d[3] = static_cast<uint8_t>(n);
  d[24] = static_cast<uint8_t>((n - 20) >> 8), d[25] = static_cast<uint8_t>(n - 20);
  const uint16_t c = ip_checksum(d);
  d[10] = static_cast<uint8_t>(c >> 8), d[11] = static_cast<uint8_t>(c);
  const uint32_t crc = zlib_icrc(d);
  for (int i = 0; i < 4; ++i) d[n - 4 + i] = static_cast<uint8_t>(crc >> (8 * i));
}

// reseal() where the datagram has room for the fields it rewrites and masks (IPv4 to the ICRC).
void reseal_if_long_enough(std::vector<uint8_t>& d) {
  if (d.size() >= 44) reseal(d);
}

std::string reject(const std::vector<uint8_t>& d) {
  Packet p;
  std::string why;
  if (wire::parse(d, &p, &why)) return "accepted";
  return why;
}

}  // namespace

TEST_CASE("wire roce: a WRITE Only's bytes, field by field") {
  const uint8_t hello[] = {'h', 'e', 'l', 'l', 'o'};
  Packet p;
  p.src_ip = ip(10, 0, 0, 1), p.dst_ip = ip(10, 0, 0, 2), p.ttl = 64, p.ip_id = 0x1234;
  p.udp_sport = 0xC001, p.opcode = BthOpcode::kWriteOnly, p.dest_qp = 0x000123;
  p.ack_request = true, p.psn = 0x00ABCD;
  p.va = 0x1122334455667788, p.rkey = 0xA1B2C3D4, p.dma_length = 5, p.payload = hello;
  p.msn = 7;  // not carried by a write: must not appear
  const std::vector<uint8_t> expected = {
      // IPv4: 0x45, TOS 0, total 68, id 0x1234, DF, TTL 64, UDP, checksum (by hand), src, dst
      0x45, 0x00, 0x00, 0x44, 0x12, 0x34, 0x40, 0x00, 0x40, 0x11, 0x14, 0x73, 10, 0, 0, 1, 10, 0, 0,
      2,
      // UDP: sport 0xC001, dport 4791, length 48, checksum 0
      0xC0, 0x01, 0x12, 0xB7, 0x00, 0x30, 0x00, 0x00,
      // BTH: opcode 0x0A, PadCnt 3, P_Key 0xFFFF, reserved, QP 0x123, AckReq, PSN 0xABCD
      0x0A, 0x30, 0xFF, 0xFF, 0x00, 0x00, 0x01, 0x23, 0x80, 0x00, 0xAB, 0xCD,
      // RETH: VA, R_Key, DMA length 5
      0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0xA1, 0xB2, 0xC3, 0xD4, 0x00, 0x00, 0x00,
      0x05,
      // payload and 3 pad bytes
      'h', 'e', 'l', 'l', 'o', 0, 0, 0};
  std::vector<uint8_t> d;
  d.push_back(0xEE);  // build() appends
  wire::build(p, &d);
  REQUIRE(d.size() == 1 + 68);
  CHECK(d[0] == 0xEE);
  d.erase(d.begin());
  CHECK(std::vector<uint8_t>(d.begin(), d.end() - 4) == expected);
  const uint32_t crc = zlib_icrc(d);
  CHECK(d[64] == (crc & 0xFF));  // least significant byte first
  CHECK(d[65] == (crc >> 8 & 0xFF));
  CHECK(d[66] == (crc >> 16 & 0xFF));
  CHECK(d[67] == crc >> 24);
}

TEST_CASE("wire roce: BTH flags, 24-bit fields and the extension headers' positions") {
  const uint8_t four[] = {1, 2, 3, 4};
  Packet p = full_packet(BthOpcode::kReadResponseFirst, four);
  p.solicited = false;
  p.ack_request = false;
  p.dest_qp = 0xFF000001;  // only 24 bits travel
  p.psn = 0x01FFFFFE;
  auto d = built(p);
  REQUIRE(d.size() == 20 + 8 + 12 + 4 + 4 + 4);
  CHECK(d[29] == 0x00);  // no SE, PadCnt 0, TVer 0
  CHECK(d[32] == 0x00);
  CHECK((d[33] << 16 | d[34] << 8 | d[35]) == 0x000001);
  CHECK(d[36] == 0x00);
  CHECK((d[37] << 16 | d[38] << 8 | d[39]) == 0xFFFFFE);
  // AETH: syndrome 0x62 (NAK remote access error), MSN 0x654321
  CHECK(d[40] == 0x62);
  CHECK((d[41] << 16 | d[42] << 8 | d[43]) == 0x654321);
  CHECK(d[44] == 1);

  p = full_packet(BthOpcode::kCompareSwap, {});
  d = built(p);
  REQUIRE(d.size() == 20 + 8 + 12 + 28 + 4);
  CHECK(d[29] == 0x80);  // SE
  CHECK(d[36] == 0x80);  // AckReq
  const std::vector<uint8_t> atomic_eth = {
      1,    2,    3,    4,    5,    6,    7,    8,    0x90, 0xA0, 0xB0, 0xC0, 0x11, 0x11,
      0x22, 0x22, 0x33, 0x33, 0x44, 0x44, 0x55, 0x55, 0x66, 0x66, 0x77, 0x77, 0x88, 0x88};
  CHECK(std::vector<uint8_t>(d.begin() + 40, d.begin() + 68) == atomic_eth);

  p = full_packet(BthOpcode::kAtomicAcknowledge, {});
  d = built(p);
  REQUIRE(d.size() == 20 + 8 + 12 + 4 + 8 + 4);
  const std::vector<uint8_t> acks = {0x62, 0x65, 0x43, 0x21, 0x99, 0x99,
                                     0x00, 0x00, 0xAA, 0xAA, 0xBB, 0xBB};
  CHECK(std::vector<uint8_t>(d.begin() + 40, d.begin() + 52) == acks);
}

TEST_CASE("wire roce: build then parse round-trips every opcode and payload size") {
  std::vector<uint8_t> bytes(1023);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i * 7 + 3);
  for (BthOpcode op : kAllOpcodes) {
    for (size_t size : {0, 1, 2, 3, 4, 1023}) {
      const std::string name = wire::opcode_name(op);
      CAPTURE(name);
      CAPTURE(size);
      const bool payload = wire::has_payload(op);
      if (!payload && size) continue;
      const Packet in = full_packet(op, {bytes.data(), size});
      const auto d = built(in);
      const size_t pad = (4 - size % 4) % 4;
      const size_t ext = (wire::has_reth(op) ? 16 : 0) + (wire::has_aeth(op) ? 4 : 0) +
                         (wire::has_atomic_eth(op) ? 28 : 0) +
                         (wire::has_atomic_ack_eth(op) ? 8 : 0);
      REQUIRE(d.size() == 20 + 8 + 12 + ext + size + pad + 4);
      CHECK((d[29] >> 4 & 3) == pad);
      for (size_t i = 0; i < pad; ++i) CHECK(d[d.size() - 5 - i] == 0);
      Packet out;
      std::string why;
      REQUIRE_MESSAGE(wire::parse(d, &out, &why), why);
      CHECK(out.src_ip == in.src_ip);
      CHECK(out.dst_ip == in.dst_ip);
      CHECK(out.tos == in.tos);
      CHECK(out.ttl == in.ttl);
      CHECK(out.ip_id == in.ip_id);
      CHECK(out.udp_sport == in.udp_sport);
      CHECK(out.opcode == op);
      CHECK(out.solicited);
      CHECK(out.pkey == in.pkey);
      CHECK(out.dest_qp == in.dest_qp);
      CHECK(out.ack_request);
      CHECK(out.psn == in.psn);
      const bool va_rkey = wire::has_reth(op) || wire::has_atomic_eth(op);
      CHECK(out.va == (va_rkey ? in.va : 0));
      CHECK(out.rkey == (va_rkey ? in.rkey : 0));
      CHECK(out.dma_length == (wire::has_reth(op) ? in.dma_length : 0));
      CHECK(out.syndrome == (wire::has_aeth(op) ? in.syndrome : 0));
      CHECK(out.msn == (wire::has_aeth(op) ? in.msn : 0));
      CHECK(out.swap_add == (wire::has_atomic_eth(op) ? in.swap_add : 0));
      CHECK(out.compare == (wire::has_atomic_eth(op) ? in.compare : 0));
      CHECK(out.original == (wire::has_atomic_ack_eth(op) ? in.original : 0));
      REQUIRE(out.payload.size() == size);
      if (size) {
        CHECK(out.payload.data() == d.data() + 20 + 8 + 12 + ext);  // into the datagram
        CHECK(std::memcmp(out.payload.data(), bytes.data(), size) == 0);
      }
      uint32_t qpn = 0;
      CHECK(wire::dest_qpn(d, &qpn));
      CHECK(qpn == 0xABCDEF);
    }
  }
}

TEST_CASE("wire roce: which opcode carries which header (IBTA table 38)") {
  // opcode, RETH, AETH, AtomicETH, AtomicAckETH, payload, request, Wireshark's name
  struct Row {
    BthOpcode op;
    bool reth, aeth, atomic, atomic_ack, payload, request;
    const char* name;
  };
  const Row rows[] = {
      {BthOpcode::kWriteFirst, 1, 0, 0, 0, 1, 1, "RC RDMA WRITE First"},
      {BthOpcode::kWriteMiddle, 0, 0, 0, 0, 1, 1, "RC RDMA WRITE Middle"},
      {BthOpcode::kWriteLast, 0, 0, 0, 0, 1, 1, "RC RDMA WRITE Last"},
      {BthOpcode::kWriteOnly, 1, 0, 0, 0, 1, 1, "RC RDMA WRITE Only"},
      {BthOpcode::kReadRequest, 1, 0, 0, 0, 0, 1, "RC RDMA READ Request"},
      {BthOpcode::kReadResponseFirst, 0, 1, 0, 0, 1, 0, "RC RDMA READ response First"},
      {BthOpcode::kReadResponseMiddle, 0, 0, 0, 0, 1, 0, "RC RDMA READ response Middle"},
      {BthOpcode::kReadResponseLast, 0, 1, 0, 0, 1, 0, "RC RDMA READ response Last"},
      {BthOpcode::kReadResponseOnly, 0, 1, 0, 0, 1, 0, "RC RDMA READ response Only"},
      {BthOpcode::kAcknowledge, 0, 1, 0, 0, 0, 0, "RC Acknowledge"},
      {BthOpcode::kAtomicAcknowledge, 0, 1, 0, 1, 0, 0, "RC ATOMIC Acknowledge"},
      {BthOpcode::kCompareSwap, 0, 0, 1, 0, 0, 1, "RC CmpSwap"},
      {BthOpcode::kFetchAdd, 0, 0, 1, 0, 0, 1, "RC FetchAdd"},
      {BthOpcode::kCompareSwap32, 0, 0, 1, 0, 0, 1, "vendor CmpSwap 4-byte"},
      {BthOpcode::kFetchAdd32, 0, 0, 1, 0, 0, 1, "vendor FetchAdd 4-byte"},
  };
  for (const Row& r : rows) {
    CAPTURE(r.name);
    CHECK(wire::has_reth(r.op) == r.reth);
    CHECK(wire::has_aeth(r.op) == r.aeth);
    CHECK(wire::has_atomic_eth(r.op) == r.atomic);
    CHECK(wire::has_atomic_ack_eth(r.op) == r.atomic_ack);
    CHECK(wire::has_payload(r.op) == r.payload);
    CHECK(wire::is_request(r.op) == r.request);
    CHECK(std::string(wire::opcode_name(r.op)) == r.name);
  }
  CHECK(std::string(wire::opcode_name(static_cast<BthOpcode>(0x04))) == "unknown opcode");
}

TEST_CASE("wire roce: the ICRC is zlib's CRC-32 over the A17.8 masked copy") {
  std::vector<uint8_t> bytes(300);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i ^ 0x5A);
  int checked = 0;
  for (BthOpcode op : kAllOpcodes) {
    for (size_t size : {0, 3, 300}) {
      if (!wire::has_payload(op) && size) continue;
      Packet p = full_packet(op, {bytes.data(), size});
      p.tos = static_cast<uint8_t>(size);  // masked fields with varied values
      p.ttl = static_cast<uint8_t>(200 - size);
      const auto d = built(p);
      const uint32_t expected = zlib_icrc(d);
      CHECK(wire::icrc(d) == expected);
      CHECK(wire::carried_icrc(d) == expected);
      ++checked;
    }
  }
  CHECK(checked == 15 + 8 * 2);
  // The CRC itself on a standard check value: CRC-32("123456789") is 0xCBF43926; an ICRC over a
  // datagram of nothing but its ICRC field covers the 8 bytes of 0xFF only.
  const uint8_t ff[8] = {0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF};
  CHECK(wire::icrc(std::vector<uint8_t>(4, 0)) == crc32(0L, ff, 8));
  CHECK(crc32(0L, reinterpret_cast<const Bytef*>("123456789"), 9) == 0xCBF43926);
}

TEST_CASE("wire roce: a flipped bit after the IPv4 header fails the ICRC, a masked field not") {
  const uint8_t hello[] = {'h', 'e', 'l', 'l', 'o'};
  for (BthOpcode op : {BthOpcode::kWriteOnly, BthOpcode::kAcknowledge,
                       BthOpcode::kAtomicAcknowledge, BthOpcode::kFetchAdd}) {
    const std::string name = wire::opcode_name(op);
    CAPTURE(name);
    const auto good = built(full_packet(op, payload_for(op, hello)));
    REQUIRE(reject(good) == "accepted");
    int flips = 0;
    for (size_t at = 20; at < good.size(); ++at) {
      // The UDP port and length are checked before the ICRC; the UDP checksum and BTH byte 4
      // are masked.
      if ((at >= 22 && at <= 27) || at == 32) continue;
      for (int bit = 0; bit < 8; ++bit) {
        auto d = good;
        d[at] ^= static_cast<uint8_t>(1 << bit);
        CAPTURE(at);
        CAPTURE(bit);
        CHECK(reject(d).rfind("ICRC mismatch: carried 0x", 0) == 0);
        ++flips;
      }
    }
    CHECK(flips == 8 * (static_cast<int>(good.size()) - 20 - 7));
    // The masked fields: TOS, TTL, the IPv4 checksum, the UDP checksum, BTH byte 4 (FECN/BECN)
    const uint32_t crc = wire::icrc(good);
    for (size_t at : {1, 8, 10, 11, 26, 27, 32}) {
      auto d = good;
      d[at] ^= 0xA5;
      CAPTURE(at);
      CHECK(wire::icrc(d) == crc);
    }
    // As a router changes them: TTL one less, ECN CE in TOS, the checksum redone; a switch's FECN
    // in byte 4; a UDP checksum: still accepted.
    auto d = good;
    d[8] -= 1;
    d[1] |= 0x03;
    const uint16_t c = ip_checksum(d);
    d[10] = static_cast<uint8_t>(c >> 8), d[11] = static_cast<uint8_t>(c);
    d[32] = 0x80;
    d[26] = 0x12, d[27] = 0x34;
    Packet p;
    std::string why;
    REQUIRE_MESSAGE(wire::parse(d, &p, &why), why);
    CHECK(p.ttl == 62);
    CHECK(p.tos == 0x03);
  }
}

TEST_CASE("wire roce: every reason parse() rejects a datagram for") {
  const auto ack = built(full_packet(BthOpcode::kAcknowledge, {}));  // 48 bytes
  REQUIRE(ack.size() == 48);
  const uint8_t four[] = {1, 2, 3, 4};
  const auto middle = built(full_packet(BthOpcode::kWriteMiddle, four));  // 48 bytes
  std::vector<uint8_t> d;

  CHECK(reject(std::vector<uint8_t>(ack.begin(), ack.begin() + 19)) ==
        "datagram of 19 bytes is shorter than an IPv4 header");
  d = ack, d[0] = 0x65;
  CHECK(reject(d) == "not IPv4: IP version 6");
  d = ack, d[0] = 0x46;
  CHECK(reject(d) == "IPv4 header with options (IHL 6, expected 5)");
  d = ack, d.push_back(0);
  CHECK(reject(d) == "IPv4 total length 48 disagrees with the datagram's 49 bytes");
  d = ack, d[10] ^= 0x01;
  {
    char t[64];
    std::snprintf(t, sizeof t, "IPv4 header checksum 0x%x is wrong", d[10] << 8 | d[11]);
    CHECK(reject(d) == t);
  }
  d = ack, d[6] = 0x60, reseal(d);  // DF and MF
  CHECK(reject(d) == "IPv4 fragment (flags and offset 0x6000)");
  d = ack, d[6] = 0x40, d[7] = 0x01, reseal(d);  // fragment offset 1
  CHECK(reject(d) == "IPv4 fragment (flags and offset 0x4001)");
  d = ack, d[9] = 6, reseal(d);
  CHECK(reject(d) == "IPv4 protocol 6 is not UDP (17)");
  d.assign(ack.begin(), ack.begin() + 40), reseal(d);  // the last 4 header bytes stand as ICRC
  CHECK(reject(d) == "datagram of 40 bytes is shorter than IPv4, UDP, BTH and ICRC headers (44)");
  d = ack, d[23] = 0xB8, reseal(d);
  CHECK(reject(d) == "UDP destination port 4792 is not RoCEv2's 4791");
  d = ack, reseal(d), d[25] += 1;
  CHECK(reject(d) == "UDP length 29 disagrees with the IPv4 payload's 28 bytes");
  d = middle, d[40] ^= 0xFF;
  {
    char t[80];
    std::snprintf(t, sizeof t, "ICRC mismatch: carried 0x%x, computed 0x%x", wire::carried_icrc(d),
                  zlib_icrc(d));
    CHECK(reject(d) == t);
    CHECK(wire::carried_icrc(d) != zlib_icrc(d));
  }
  d = ack, d[28] = 0x04, reseal(d);  // RC SEND Only: not ours
  CHECK(reject(d) == "unknown BTH opcode 0x4");
  d = ack, d[28] = 0x64, reseal(d);  // UD SEND Only
  CHECK(reject(d) == "unknown BTH opcode 0x64");
  d = ack, d[29] |= 0x01, reseal(d);
  CHECK(reject(d) == "BTH transport header version 1 is not 0");
  d = ack, d[28] = 0x0A, reseal(d);  // WRITE Only needs a 16-byte RETH
  CHECK(reject(d) == "datagram of 48 bytes is too short for RC RDMA WRITE Only's headers (60)");
  d = ack, d.insert(d.end() - 4, {0, 0, 0, 0}), reseal(d);
  CHECK(reject(d) == "4 bytes after the headers of RC Acknowledge, which carries no payload");
  d = middle, d.insert(d.end() - 4, 0), reseal(d);
  CHECK(reject(d) == "payload and pad of 5 bytes are not a multiple of 4");
  d = middle, d.erase(d.end() - 8, d.end() - 4), d[29] |= 0x30, reseal(d);  // no payload, pad 3
  CHECK(reject(d) == "PadCnt 3 exceeds the 0 bytes after the headers of RC RDMA WRITE Middle");
  d = ack, d[29] |= 0x10, reseal(d);
  CHECK(reject(d) == "PadCnt 1 exceeds the 0 bytes after the headers of RC Acknowledge");
  // reseal() alone changes nothing: the mutations above are what parse() rejects.
  d = ack, reseal(d);
  CHECK(d == ack);
  d = middle, d[29] |= 0x30, reseal(d);  // pad 3 of a 4-byte payload: 1 byte of payload
  Packet p;
  std::string why;
  REQUIRE_MESSAGE(wire::parse(d, &p, &why), why);
  CHECK(p.payload.size() == 1);
}

TEST_CASE("wire roce: dest_qpn and path_mtu_for_netdev") {
  auto d = built(full_packet(BthOpcode::kAcknowledge, {}));
  uint32_t qpn = 7;
  CHECK(wire::dest_qpn(d, &qpn));
  CHECK(qpn == 0xABCDEF);
  // dest_qpn looks at the framing only, not the ICRC
  d[47] ^= 1;
  CHECK(wire::dest_qpn(d, &qpn));
  qpn = 7;
  CHECK_FALSE(wire::dest_qpn(std::span(d.data(), 39), &qpn));  // no whole BTH
  CHECK(wire::dest_qpn(std::span(d.data(), 40), &qpn));
  auto bad = d;
  bad[23] = 0xB8;  // port 4792
  CHECK_FALSE(wire::dest_qpn(bad, &qpn));
  bad = d, bad[9] = 6;  // TCP
  CHECK_FALSE(wire::dest_qpn(bad, &qpn));
  bad = d, bad[0] = 0x46;  // options
  CHECK_FALSE(wire::dest_qpn(bad, &qpn));
  CHECK(qpn == 0xABCDEF);  // untouched by the failures

  // iboe_get_mtu: netdev MTU less 96 bytes, then 4096/2048/1024/512/256 -> ibv_mtu 5..1
  CHECK(wire::path_mtu_for_netdev(9000) == 5);
  CHECK(wire::path_mtu_for_netdev(4192) == 5);
  CHECK(wire::path_mtu_for_netdev(4191) == 4);
  CHECK(wire::path_mtu_for_netdev(4200) == 5);
  CHECK(wire::path_mtu_for_netdev(1500) == 3);
  CHECK(wire::path_mtu_for_netdev(1120) == 3);
  CHECK(wire::path_mtu_for_netdev(1119) == 2);
  CHECK(wire::path_mtu_for_netdev(1100) == 2);
  CHECK(wire::path_mtu_for_netdev(608) == 2);
  CHECK(wire::path_mtu_for_netdev(607) == 1);
  CHECK(wire::path_mtu_for_netdev(352) == 1);
  CHECK(wire::path_mtu_for_netdev(351) == 0);
  CHECK(wire::path_mtu_for_netdev(300) == 0);
  CHECK(wire::path_mtu_for_netdev(50) == 0);
  CHECK(wire::path_mtu_for_netdev(0) == 0);
}

TEST_CASE("wire roce: Wireshark decodes every IBTA opcode as built") {
  std::vector<std::vector<uint8_t>> datagrams;
  std::vector<BthOpcode> ops;
  const uint8_t five[] = {1, 2, 3, 4, 5};
  for (BthOpcode op : kAllOpcodes) {
    if (static_cast<uint8_t>(op) >= 0xC0) continue;  // vendor opcodes: Wireshark knows not ours
    Packet p = full_packet(op, payload_for(op, five));
    p.psn = 1000 + static_cast<uint32_t>(datagrams.size());
    datagrams.push_back(built(p));
    ops.push_back(op);
  }
  char path[] = "/tmp/mori_wire_roce_XXXXXX";
  const int fd = mkstemp(path);
  REQUIRE(fd >= 0);
  close(fd);
  std::string why;
  REQUIRE_MESSAGE(mori::test::write_pcap(path, datagrams, &why), why);
  std::vector<std::vector<std::string>> rows;
  const bool ran = mori::test::run_tshark(
      path,
      {"infiniband.bth.opcode", "infiniband.bth.psn", "infiniband.bth.destqp",
       "infiniband.bth.padcnt", "infiniband.reth.dmalen", "infiniband.aeth.msn",
       "_ws.expert.message", "_ws.malformed", "infiniband.invariant.crc"},
      &rows, &why, "infiniband");
  unlink(path);
  REQUIRE_MESSAGE(ran, why);
  REQUIRE(rows.size() == ops.size());
  for (size_t i = 0; i < ops.size(); ++i) {
    const std::string name = wire::opcode_name(ops[i]);
    CAPTURE(name);
    const auto& r = rows[i];
    CHECK(r[0] == std::to_string(static_cast<int>(ops[i])));
    CHECK(r[1] == std::to_string(1000 + i));
    CHECK(r[2] == "0xabcdef");  // Wireshark shows QPs in hex
    CHECK(r[3] == (wire::has_payload(ops[i]) ? "3" : "0"));
    CHECK(r[4] == (wire::has_reth(ops[i]) ? "65536" : ""));
    CHECK(r[5] == (wire::has_aeth(ops[i]) ? std::to_string(0x654321) : ""));
    CHECK(r[6] == "");  // no expert info: nothing malformed, nothing unusual
    CHECK(r[7] == "");
    // Wireshark shows (never checks) the ICRC when exactly 4 bytes follow the headers it knows,
    // reading them big-endian: our least significant byte first, byte-swapped. With a payload
    // its payload dissection takes the rest, and shows no ICRC.
    if (!wire::has_payload(ops[i])) {
      char icrc[16];
      std::snprintf(icrc, sizeof icrc, "0x%08x",
                    __builtin_bswap32(wire::carried_icrc(datagrams[i])));
      CHECK(r[8] == icrc);
    }
  }
}

TEST_CASE("wire roce: every truncation of a datagram is rejected, read within its bytes") {
  const uint8_t five[] = {1, 2, 3, 4, 5};
  for (BthOpcode op : kAllOpcodes) {
    const auto good = built(full_packet(op, payload_for(op, five)));
    for (size_t n = 0; n < good.size(); ++n) {
      // A copy of exactly n bytes, so that a sanitizer sees any read past them.
      std::vector<uint8_t> d(good.begin(), good.begin() + static_cast<ptrdiff_t>(n));
      CAPTURE(n);
      CHECK(reject(d) != "accepted");
      // Resealed, what is left may be a packet again: one with less payload (the cut bytes
      // fall where its pad and ICRC were), never one without its headers.
      reseal_if_long_enough(d);
      Packet p;
      std::string why;
      if (wire::parse(d, &p, &why)) {
        CHECK(wire::has_payload(op));
        CHECK(p.payload.size() < sizeof five);
        CHECK(d.size() % 4 == 0);
      }
    }
  }
}
