// The IPv4 datagrams of a classic libpcap file (pcap-savefile(5)) of Linux cooked frames, which is
// what `tshark -i any` captures (netns.sh capture) once `tshark -F pcap` has rewritten its pcapng:
// LINKTYPE_LINUX_SLL (113, a 16-byte header) or LINKTYPE_LINUX_SLL2 (276, 20 bytes), each header
// naming the frame's protocol (0x0800, IPv4) in network byte order (pcap-linktype(7)).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mori::test::capture {

// Reads every record of `path` into *datagrams (the bytes after the cooked header: the IPv4
// header first), in the file's order. False, with a one-line reason, when the file cannot be
// read, is not a microsecond or nanosecond pcap of either link type, a record is cut short
// (captured length below the original: a snaplen too small), or a frame is not IPv4.
bool read_cooked_pcap(const std::string& path, std::vector<std::vector<uint8_t>>* datagrams,
                      std::string* why);

}  // namespace mori::test::capture
