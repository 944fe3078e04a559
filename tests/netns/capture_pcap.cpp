#include "capture_pcap.hpp"

#include <cstdio>
#include <cstring>
#include <memory>
#include <utility>

namespace mori::test::capture {

namespace {

constexpr uint32_t kLinktypeSll = 113, kLinktypeSll2 = 276;
constexpr uint16_t kEthertypeIpv4 = 0x0800;

uint32_t swapped(uint32_t v, bool swap) { return swap ? __builtin_bswap32(v) : v; }

bool fail(std::string* why, std::string text) {
  *why = std::move(text);
  return false;
}

}  // namespace

bool read_cooked_pcap(const std::string& path, std::vector<std::vector<uint8_t>>* datagrams,
                      std::string* why) {
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(path.c_str(), "rb"), std::fclose);
  if (!f) return fail(why, "cannot open " + path);
  // The global header: magic, version, thiszone, sigfigs, snaplen, link type (24 bytes)
  uint32_t global[6];
  if (std::fread(global, sizeof global, 1, f.get()) != 1) return fail(why, path + ": no header");
  // 0xa1b2c3d4 (microseconds) or 0xa1b23c4d (nanoseconds), in the writer's byte order.
  const uint32_t magic = global[0];
  const bool swap = magic == 0xd4c3b2a1 || magic == 0x4d3cb2a1;
  if (!swap && magic != 0xa1b2c3d4 && magic != 0xa1b23c4d)
    return fail(why, path + ": not a classic pcap file (tshark -F pcap writes one)");
  const uint32_t linktype = swapped(global[5], swap) & 0xFFFF;  // the upper bits: FCS length
  if (linktype != kLinktypeSll && linktype != kLinktypeSll2)
    return fail(why, path + ": link type " + std::to_string(linktype) + ", not Linux cooked");
  const size_t cooked = linktype == kLinktypeSll ? 16 : 20;
  // SLL: the protocol is the header's last 2 bytes; SLL2: its first 2.
  const size_t protocol_at = linktype == kLinktypeSll ? 14 : 0;
  datagrams->clear();
  for (uint32_t record[4]; std::fread(record, sizeof record, 1, f.get()) == 1;) {
    // ts_sec, ts_usec, incl_len, orig_len
    const uint32_t incl = swapped(record[2], swap), orig = swapped(record[3], swap);
    const std::string at = path + " record " + std::to_string(datagrams->size() + 1);
    if (incl != orig) return fail(why, at + ": cut to " + std::to_string(incl) + " bytes");
    if (incl < cooked) return fail(why, at + ": shorter than its cooked header");
    std::vector<uint8_t> frame(incl);
    if (std::fread(frame.data(), 1, incl, f.get()) != incl) return fail(why, at + ": truncated");
    const uint16_t protocol =
        static_cast<uint16_t>(frame[protocol_at] << 8 | frame[protocol_at + 1]);
    if (protocol != kEthertypeIpv4) return fail(why, at + ": not IPv4");
    datagrams->emplace_back(frame.begin() + static_cast<ptrdiff_t>(cooked), frame.end());
  }
  if (std::ferror(f.get())) return fail(why, path + ": read error");
  return true;
}

}  // namespace mori::test::capture
