#include "capture_render.hpp"

#include <cstdlib>

#include "capture_plan.hpp"
#include "runtime/hex.hpp"

namespace mori::test::capture {

namespace {

// IBTA Vol 1 table 38 (RC opcodes): the ones this capture can hold.
constexpr uint64_t kWriteFirst = 0x06, kWriteMiddle = 0x07, kWriteLast = 0x08, kReadRequest = 0x0C,
                   kReadFirst = 0x0D, kReadMiddle = 0x0E, kReadLast = 0x0F, kReadOnly = 0x10,
                   kAck = 0x11, kAtomicAck = 0x12, kFetchAdd = 0x14, kWriteOnly = 0x0A;
constexpr uint64_t kNakPsnSequence = 0x60;  // IBTA 9.3.5 table 43: NAK, PSN sequence error
constexpr uint32_t kPsnMask = 0xFFFFFF;

std::optional<uint64_t> number(const std::string& s) {
  if (s.empty()) return std::nullopt;
  return std::strtoull(s.c_str(), nullptr, 0);  // tshark: decimal, or 0x... for QPs
}

using runtime::hex;

// The bytes of the header between the BTH and the payload (RETH, AETH) for an opcode with one.
size_t extension_bytes(uint64_t op) {
  if (op == kWriteFirst || op == kWriteOnly) return 16;                  // RETH
  if (op == kReadFirst || op == kReadLast || op == kReadOnly) return 4;  // AETH
  return 0;
}

bool has_payload(uint64_t op) {
  return op == kWriteFirst || op == kWriteMiddle || op == kWriteLast || op == kWriteOnly ||
         (op >= kReadFirst && op <= kReadOnly);
}

// Which transfer of capture_plan.hpp the payload is, and where in it: "data <which>@<offset>+<n>".
std::string which_data(const std::vector<uint8_t>& d, uint64_t op, uint64_t padcnt) {
  const size_t begin = 20 + 8 + 12 + extension_bytes(op);
  if (d.size() < begin + 4 + padcnt) return "data cut short";
  const size_t n = d.size() - begin - 4 - padcnt;
  for (int which = 1; which <= 3; ++which)
    for (size_t offset = 0; offset + n <= kPutBytes; offset += kPathMtu) {
      size_t i = 0;
      while (i < n && d[begin + i] == data_byte(which, offset + i)) ++i;
      if (i == n)
        return "data " + std::to_string(which) + "@" + std::to_string(offset) + "+" +
               std::to_string(n);
    }
  return "data of no transfer (" + std::to_string(n) + " bytes)";
}

std::string line(const std::string& src, const std::string& dst, uint64_t op, uint32_t k,
                 const std::string& extra) {
  const std::string to = dst == kPe2Address ? "of PE 2" : "of PE 0";
  return src + " > " + dst + " " + opcode_name(op) + " PSN P+" + std::to_string(k) + " DestQP " +
         to + extra;
}

std::string aeth(uint64_t syndrome, uint64_t msn) {
  // IBTA 9.3.5: syndrome 000xxxxx is an ACK (xxxxx its credit count).
  const std::string kind = (syndrome >> 5) == 0          ? "ACK"
                           : syndrome == kNakPsnSequence ? "NAK PSN sequence error"
                                                         : "syndrome " + hex(syndrome);
  return " AETH " + kind + " MSN " + std::to_string(msn);
}

}  // namespace

std::vector<std::string> decoded_fields() {
  return {"frame.protocols",
          "ip.src",
          "ip.dst",
          "udp.dstport",
          "infiniband.bth.opcode",
          "infiniband.bth.psn",
          "infiniband.bth.destqp",
          "infiniband.bth.padcnt",
          "infiniband.aeth.syndrome",
          "infiniband.aeth.msn",
          "infiniband.reth.dmalen",
          "infiniband.atomiceth.swapdt",
          "infiniband.atomicacketh.origremdt",
          "_ws.expert.message",
          "_ws.malformed",
          "infiniband.invariant.crc"};
}

Decoded decode(const std::vector<std::string>& r) {
  Decoded p;
  p.protocols = r[0], p.src = r[1], p.dst = r[2];
  p.udp_dstport = number(r[3]), p.opcode = number(r[4]), p.psn = number(r[5]);
  p.destqp = number(r[6]), p.padcnt = number(r[7]), p.syndrome = number(r[8]);
  p.msn = number(r[9]), p.dmalen = number(r[10]), p.add = number(r[11]);
  p.original = number(r[12]);
  p.expert = r[13], p.malformed = r[14], p.icrc = r[15];
  return p;
}

std::string opcode_name(std::optional<uint64_t> op) {
  switch (op.value_or(~0ull)) {
    case kWriteFirst:
      return "RDMA WRITE First";
    case kWriteMiddle:
      return "RDMA WRITE Middle";
    case kWriteLast:
      return "RDMA WRITE Last";
    case kWriteOnly:
      return "RDMA WRITE Only";
    case kReadRequest:
      return "RDMA READ Request";
    case kReadFirst:
      return "RDMA READ response First";
    case kReadMiddle:
      return "RDMA READ response Middle";
    case kReadLast:
      return "RDMA READ response Last";
    case kReadOnly:
      return "RDMA READ response Only";
    case kAck:
      return "Acknowledge";
    case kAtomicAck:
      return "ATOMIC Acknowledge";
    case kFetchAdd:
      return "FetchAdd";
    default:
      return op ? "opcode " + std::to_string(*op) : "no opcode";
  }
}

std::vector<std::string> render(const std::vector<Decoded>& packets,
                                const std::vector<std::vector<uint8_t>>& datagrams) {
  std::optional<uint64_t> first_psn, qp_of[2];  // [0]: PE 0's, [1]: PE 2's
  for (const Decoded& p : packets) {
    if (!first_psn && p.src == kPe0Address) first_psn = p.psn;
    const int to = p.dst == kPe2Address;
    if (!qp_of[to]) qp_of[to] = p.destqp;
  }
  std::vector<std::string> lines;
  for (size_t i = 0; i < packets.size(); ++i) {
    const Decoded& p = packets[i];
    if (!p.opcode || !p.psn || !p.destqp || !first_psn) {
      lines.push_back(p.src + " > " + p.dst + " not decoded");
      continue;
    }
    const int to = p.dst == kPe2Address;
    const bool known = (p.dst == kPe2Address || p.dst == kPe0Address) && p.destqp == qp_of[to];
    std::string text = p.src + " > " + p.dst + " " + opcode_name(p.opcode) + " PSN P+" +
                       std::to_string((*p.psn - *first_psn) & kPsnMask) + " DestQP " +
                       (known ? (to ? "of PE 2" : "of PE 0") : hex(*p.destqp));
    if (p.syndrome && p.msn) text += aeth(*p.syndrome, *p.msn);
    if (p.dmalen) text += " DMA length " + std::to_string(*p.dmalen);
    if (p.add) text += " add " + hex(*p.add);
    if (p.original) text += " original " + hex(*p.original);
    if (has_payload(*p.opcode) && i < datagrams.size())
      text += " " + which_data(datagrams[i], *p.opcode, p.padcnt.value_or(0));
    lines.push_back(text);
  }
  return lines;
}

std::vector<std::string> expected(const std::vector<Decoded>& packets) {
  const std::string a = kPe0Address, b = kPe2Address;
  const std::string len = " DMA length " + std::to_string(kPutBytes);
  const std::string last = "+" + std::to_string(kPutBytes - 2 * kPathMtu);
  auto data = [&](int which, int part) {
    return " data " + std::to_string(which) + "@" + std::to_string(part * kPathMtu) +
           (part < 2 ? "+" + std::to_string(kPathMtu) : last);
  };
  std::vector<std::string> l;
  // 1. The lossy put: the network drops its WRITE Middle (P+1).
  l.push_back(line(a, b, kWriteFirst, 0, len + data(1, 0)));
  l.push_back(line(a, b, kWriteMiddle, 1, data(1, 1)));
  l.push_back(line(a, b, kWriteLast, 2, data(1, 2)));
  // The responder saw P+2 while it expected P+1: it NAKs P+1 (PSN sequence error) with the MSN of
  // no message completed (IBTA 9.7.5.2.1; rxe_resp.c check_psn), and the requester goes back to
  // P+1. Only with no NAK on the wire may the requester's timer answer instead (IBTA 9.7.6.1.3),
  // going back to the oldest unacknowledged PSN, P: First again. (A NAK that the network lost
  // after the bridge would be on the wire with First after it: not this test's network.)
  const bool nak =
      packets.size() > 3 && packets[3].src == b && packets[3].syndrome == kNakPsnSequence;
  if (nak)
    l.push_back(line(b, a, kAck, 1, aeth(kNakPsnSequence, 0)));
  else
    l.push_back(line(a, b, kWriteFirst, 0, len + data(1, 0)));
  l.push_back(line(a, b, kWriteMiddle, 1, data(1, 1)));
  l.push_back(line(a, b, kWriteLast, 2, data(1, 2)));
  l.push_back(line(b, a, kAck, 2, aeth(0x1F, 1)));
  // 2. The put, nothing lost, acknowledged at its last PSN.
  l.push_back(line(a, b, kWriteFirst, 3, len + data(2, 0)));
  l.push_back(line(a, b, kWriteMiddle, 4, data(2, 1)));
  l.push_back(line(a, b, kWriteLast, 5, data(2, 2)));
  l.push_back(line(b, a, kAck, 5, aeth(0x1F, 2)));
  // 3. The get: one request, three responses from the request's PSN on (IBTA 9.4.3: a READ takes
  // the PSNs of all its response packets); First and Last carry the AETH.
  l.push_back(line(a, b, kReadRequest, 6, len));
  l.push_back(line(b, a, kReadFirst, 6, aeth(0x1F, 3) + data(3, 0)));
  l.push_back(line(b, a, kReadMiddle, 7, data(3, 1)));
  l.push_back(line(b, a, kReadLast, 8, aeth(0x1F, 3) + data(3, 2)));
  // 4. The fetch-add, and its acknowledgement at the same PSN with the word's original value.
  l.push_back(line(a, b, kFetchAdd, 9, " add " + hex(kAddend)));
  l.push_back(line(b, a, kAtomicAck, 9, aeth(0x1F, 4) + " original " + hex(kOriginal)));
  return l;
}

}  // namespace mori::test::capture
