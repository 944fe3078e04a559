// Writes datagrams to a classic libpcap file (pcap-savefile(5)), so that tshark can check them:
// magic 0xa1b2c3d4 in the writer's byte order, version 2.4, snaplen 65535, link type
// LINKTYPE_RAW (101: each record starts with the IPv4 or IPv6 header, no link layer).
#pragma once

#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <vector>

namespace mori::test {

constexpr uint32_t kPcapMagic = 0xa1b2c3d4;  // microsecond timestamps
constexpr uint32_t kLinktypeRaw = 101;
constexpr uint32_t kPcapSnaplen = 65535;

// Writes `datagrams` to `path` (replacing it), one record each, timestamps 1 s, 2 s, ... apart
// so that a reader keeps their order. False, with the reason, when the file cannot be written.
inline bool write_pcap(const std::string& path, const std::vector<std::vector<uint8_t>>& datagrams,
                       std::string* why) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) {
    if (why) *why = "cannot create " + path;
    return false;
  }
  bool ok = true;
  auto put = [&](const void* bytes, size_t n) { ok = ok && std::fwrite(bytes, 1, n, f) == n; };
  // The global header: magic, version 2.4, thiszone 0, sigfigs 0, snaplen, network
  const uint32_t magic = kPcapMagic, zero = 0, snaplen = kPcapSnaplen, network = kLinktypeRaw;
  const uint16_t major = 2, minor = 4;
  put(&magic, 4);
  put(&major, 2);
  put(&minor, 2);
  put(&zero, 4);
  put(&zero, 4);
  put(&snaplen, 4);
  put(&network, 4);
  uint32_t seconds = 1;
  for (const auto& d : datagrams) {  // the record header: ts_sec, ts_usec, incl_len, orig_len
    const uint32_t len = static_cast<uint32_t>(d.size());
    put(&seconds, 4);
    put(&zero, 4);
    put(&len, 4);
    put(&len, 4);
    put(d.data(), d.size());
    ++seconds;
  }
  ok = std::fclose(f) == 0 && ok;
  if (!ok && why) *why = "short write to " + path;
  return ok;
}

}  // namespace mori::test
