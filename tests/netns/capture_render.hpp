// netns.wire_capture's packets as lines of text, and the lines the capture must hold: so that a
// wrong capture fails with the packet it has next to the packet it should have. A line is what a
// packet carries, relative to the capture's first packet: its addresses, its opcode, its PSN as
// P+k (P: the first put's first PSN), its DestQP as "of PE 2" / "of PE 0" when it is the QP that
// the first packet to that PE named (else its number), its AETH, RETH DMA length, AtomicETH or
// AtomicAckETH value, and which transfer of capture_plan.hpp its payload is, at which offset.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mori::test::capture {

// One packet as Wireshark's dissector decoded it (absent fields: empty).
struct Decoded {
  std::string protocols, src, dst;
  std::optional<uint64_t> udp_dstport, opcode, psn, destqp, padcnt, syndrome, msn, dmalen, add,
      original;
  std::string expert, malformed, icrc;
};

// The Wireshark fields decode() reads, in its order (for run_tshark).
std::vector<std::string> decoded_fields();
Decoded decode(const std::vector<std::string>& row);

// IBTA's name of an RC opcode ("RDMA WRITE First"), or "opcode <n>".
std::string opcode_name(std::optional<uint64_t> opcode);

// One line per packet (datagrams[i]: packet i's bytes, IPv4 header first).
std::vector<std::string> render(const std::vector<Decoded>& packets,
                                const std::vector<std::vector<uint8_t>>& datagrams);
// The lines of capture_plan.hpp's operations. The first put's loss is answered by the responder's
// NAK (PSN sequence error) and a retransmission from the lost PSN, or, when the capture shows no
// NAK there, by the requester's timer and a retransmission from the first unacknowledged PSN.
std::vector<std::string> expected(const std::vector<Decoded>& packets);

}  // namespace mori::test::capture
