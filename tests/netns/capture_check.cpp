// netns.wire_capture's checker: reads the capture of the bridge that wire_capture.sh took while
// wire_capture.cpp ran (MORI_CAPTURE_PCAP names it, a classic pcap of Linux cooked frames) and
// checks it with an oracle we did not write, Wireshark's InfiniBand dissector (run_tshark), and
// with our own reading of the bytes:
//   - every packet is RoCEv2 (UDP to 4791) and decodes, with no malformed packet and no expert
//     info at all;
//   - every ICRC is right per IBTA A17.8, recomputed here with zlib over a masked copy;
//   - the packets are the operations of capture_plan.hpp, in order, with their opcodes, PSNs,
//     DestQPs, AETHs and payload bytes, and the first put's lost WRITE Middle sent again.
// It prints the packet counts that the dissector checked.
#include <doctest/doctest.h>
#include <zlib.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "capture_pcap.hpp"
#include "capture_plan.hpp"
#include "capture_render.hpp"
#include "unit/icrc_oracle.hpp"
#include "unit/tshark_oracle.hpp"

namespace plan = mori::test::capture;
using plan::Decoded;

namespace {

// The capture, read once: the dissector's fields and the raw datagrams, one each per packet.
struct Capture {
  std::vector<Decoded> packets;
  std::vector<std::vector<uint8_t>> datagrams;
  std::string error;  // why it could not be read ("" when it was)
};

const Capture& capture() {
  static const Capture c = [] {
    Capture c;
    const char* path = std::getenv("MORI_CAPTURE_PCAP");
    if (!path || !*path) {
      c.error = "MORI_CAPTURE_PCAP names no capture (wire_capture.sh sets it)";
      return c;
    }
    std::vector<std::vector<std::string>> rows;
    if (!mori::test::run_tshark(path, plan::decoded_fields(), &rows, &c.error)) return c;
    for (const auto& row : rows) c.packets.push_back(plan::decode(row));
    if (!plan::read_cooked_pcap(path, &c.datagrams, &c.error)) return c;
    if (c.datagrams.size() != c.packets.size())
      c.error = "tshark read " + std::to_string(c.packets.size()) + " packets, the pcap holds " +
                std::to_string(c.datagrams.size());
    return c;
  }();
  return c;
}

using mori::test::zlib_icrc;

}  // namespace

TEST_CASE("Wireshark decodes every captured packet as RoCEv2, none malformed, no expert info") {
  const Capture& c = capture();
  REQUIRE_MESSAGE(c.error.empty(), c.error);
  REQUIRE(!c.packets.empty());
  std::map<std::string, int> by_opcode;
  int bad = 0;
  for (size_t i = 0; i < c.packets.size(); ++i) {
    const Decoded& p = c.packets[i];
    CAPTURE(i + 1);  // Wireshark's frame number
    // Linux cooked (sll or sll2), IPv4, UDP, the dissector's InfiniBand, and its payload as data
    // when there is one: nothing it could not place.
    const std::string tail = p.protocols.substr(p.protocols.find(":ethertype:") + 1);
    const bool decodes =
        p.protocols.rfind("sll", 0) == 0 &&
        (tail == "ethertype:ip:udp:infiniband" || tail == "ethertype:ip:udp:infiniband:data");
    CHECK_MESSAGE(decodes, p.protocols);
    CHECK(p.udp_dstport == 4791);
    CHECK(p.opcode.has_value());
    CHECK(p.malformed == "");
    CHECK(p.expert == "");
    bad += !(decodes && p.udp_dstport == 4791 && p.opcode.has_value() && p.malformed.empty() &&
             p.expert.empty());
    ++by_opcode[plan::opcode_name(p.opcode)];
  }
  std::printf(
      "wire_capture: Wireshark's InfiniBand dissector decoded %zu packets, %d malformed or "
      "with expert info:",
      c.packets.size(), bad);
  const char* sep = " ";
  for (const auto& [name, count] : by_opcode) {
    std::printf("%s%d %s", sep, count, name.c_str());
    sep = ", ";
  }
  std::printf("\n");
}

TEST_CASE("every captured ICRC is IBTA A17.8's CRC over the masked datagram") {
  const Capture& c = capture();
  REQUIRE_MESSAGE(c.error.empty(), c.error);
  size_t right = 0;
  for (size_t i = 0; i < c.datagrams.size(); ++i) {
    const std::vector<uint8_t>& d = c.datagrams[i];
    CAPTURE(i + 1);
    // IPv4 without options, its total length the datagram's, UDP to 4791, room for the BTH and
    // the ICRC.
    REQUIRE(d.size() >= 20 + 8 + 12 + 4);
    CHECK(d[0] == 0x45);
    CHECK((d[2] << 8 | d[3]) == static_cast<int>(d.size()));
    CHECK(d[9] == 17);
    CHECK((d[22] << 8 | d[23]) == 4791);
    CHECK((d[24] << 8 | d[25]) == static_cast<int>(d.size() - 20));
    const uint32_t crc = zlib_icrc(d);
    // Least significant byte first (rxe_icrc.c rxe_icrc_generate stores crc32_le's value).
    uint32_t carried = 0;
    for (int b = 0; b < 4; ++b) carried |= static_cast<uint32_t>(d[d.size() - 4 + b]) << (8 * b);
    CHECK(carried == crc);
    right += carried == crc;
    // Where Wireshark shows the ICRC, it is the same 4 bytes (read big-endian: it does not check).
    if (!c.packets[i].icrc.empty()) {
      char shown[16];
      std::snprintf(shown, sizeof shown, "0x%08x", __builtin_bswap32(carried));
      CHECK(c.packets[i].icrc == shown);
    }
  }
  std::printf("wire_capture: %zu of %zu ICRCs right (zlib over the A17.8 masked copy)\n", right,
              c.datagrams.size());
}

TEST_CASE("the capture holds the operations in order: opcodes, PSNs, DestQPs, AETHs, data") {
  const Capture& c = capture();
  REQUIRE_MESSAGE(c.error.empty(), c.error);
  REQUIRE(c.packets.size() >= 2);
  const std::vector<std::string> seen = plan::render(c.packets, c.datagrams);
  const std::vector<std::string> want = plan::expected(c.packets);
  size_t as_expected = 0;
  for (size_t i = 0; i < seen.size() || i < want.size(); ++i) {
    CAPTURE(i + 1);  // Wireshark's frame number
    const std::string has = i < seen.size() ? seen[i] : "(no packet)";
    const std::string should = i < want.size() ? want[i] : "(no packet)";
    CHECK(has == should);
    as_expected += has == should;
  }
  // The retransmission itself: the first put's WRITE Middle (PSN P+1) is on the wire twice.
  int middles = 0;
  for (const std::string& line : seen)
    middles += line.find("RDMA WRITE Middle PSN P+1 ") != std::string::npos;
  CHECK(middles == 2);
  std::printf(
      "wire_capture: %zu of %zu packets as expected (%zu expected), the first put's WRITE "
      "Middle (P+1) sent %d times\n",
      as_expected, seen.size(), want.size(), middles);
}
