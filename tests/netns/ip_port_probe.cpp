// ip_port_probe <prefix>: the software NIC's IP port (src/backend/host/wire/ip_port.cpp) between
// two node namespaces of scripts/netns.sh (up <prefix> 2 2). One process holds ports in both: a
// socket stays in the namespace it was opened in, so setns(2) between the opens gives node 0's
// nic0 and nic1 and node 1's nic0 their ports without a second process to synchronise with.
//   - datagrams built here (IPv4 with a nonzero id, UDP to 4791, a payload) arrive byte-exact;
//   - a datagram to node 0's nic1 reaches nic1's port and not nic0's (the socket filter);
//   - one from nic0 to nic1 of the same node arrives too (over the bridge: accept_local);
//   - the receiving node sends no ICMP port unreachable (the sink socket);
//   - errors: an unknown interface, an address no interface has, a datagram over the MTU.
// Prints the ids it sent to node 1 ("sent ids: ..."), for the capture check in ip_port.sh.
#include <arpa/inet.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "backend/host/wire/ip_port.hpp"

namespace {

using mori::wire::IpPort;

int failures = 0;

void check(bool ok, const std::string& what) {
  if (!ok) {
    std::fprintf(stderr, "ip_port_probe: FAILED: %s\n", what.c_str());
    ++failures;
  }
}

uint32_t ip(const char* text) {
  in_addr in{};
  inet_pton(AF_INET, text, &in);
  return in.s_addr;
}

bool enter(const std::string& ns) {
  const int fd = open(("/run/netns/" + ns).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0 || setns(fd, CLONE_NEWNET) != 0) {
    std::fprintf(stderr, "ip_port_probe: cannot enter %s: %s\n", ns.c_str(), std::strerror(errno));
    if (fd >= 0) close(fd);
    return false;
  }
  close(fd);
  return true;
}

void put16(std::vector<uint8_t>* b, size_t at, uint16_t v) {
  (*b)[at] = static_cast<uint8_t>(v >> 8);
  (*b)[at + 1] = static_cast<uint8_t>(v);
}

// IPv4 (DF, TTL 64, the id given, its checksum) + UDP (source 0xC000 + id low byte, to 4791, no
// checksum, as RoCEv2 allows: IBTA A17.4.5.2) + `payload` bytes of a pattern.
std::vector<uint8_t> datagram(uint32_t from, uint32_t to, uint16_t id, size_t payload) {
  std::vector<uint8_t> b(20 + 8 + payload);
  b[0] = 0x45;
  put16(&b, 2, static_cast<uint16_t>(b.size()));
  put16(&b, 4, id);
  put16(&b, 6, 0x4000);
  b[8] = 64;
  b[9] = IPPROTO_UDP;
  std::memcpy(&b[12], &from, 4);
  std::memcpy(&b[16], &to, 4);
  uint32_t sum = 0;
  for (size_t i = 0; i < 20; i += 2) sum += (b[i] << 8) | b[i + 1];
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  put16(&b, 10, static_cast<uint16_t>(~sum));
  put16(&b, 20, static_cast<uint16_t>(0xC000 | (id & 0xff)));
  put16(&b, 22, mori::wire::kRoceUdpPort);
  put16(&b, 24, static_cast<uint16_t>(8 + payload));
  for (size_t i = 0; i < payload; ++i) b[28 + i] = static_cast<uint8_t>(id + i * 7);
  return b;
}

// Waits up to a second for a datagram on `port` (the probe's only wait: for the wire, not a time).
std::vector<uint8_t> wait_receive(IpPort& port) {
  std::vector<uint8_t> buffer(2048);
  for (int round = 0; round < 10; ++round) {
    if (size_t n = port.receive(buffer); n != 0) {
      buffer.resize(n);
      return buffer;
    }
    pollfd p{port.fd(), POLLIN, 0};
    poll(&p, 1, 100);
  }
  return {};
}

// Icmp OutDestUnreachs of the current namespace (/proc/net/snmp follows the caller's netns).
long out_dest_unreachs() {
  std::ifstream snmp("/proc/net/snmp");
  std::string names, values;
  while (std::getline(snmp, names) && std::getline(snmp, values)) {
    if (names.rfind("Icmp:", 0) != 0) continue;
    std::istringstream n(names), v(values);
    std::string name, value;
    while (n >> name && v >> value) {
      if (name == "OutDestUnreachs") return std::stol(value);
    }
  }
  return -1;
}

std::string hex(const std::vector<uint8_t>& b) {
  std::string s;
  char two[4];
  for (uint8_t c : b) {
    std::snprintf(two, sizeof(two), "%02x", c);
    s += two;
  }
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr,
                 "usage: ip_port_probe <prefix>  (after scripts/netns.sh up <prefix> 2 2)\n");
    return 2;
  }
  const std::string prefix = argv[1];
  const uint32_t n0nic0 = ip("198.19.0.1"), n0nic1 = ip("198.19.0.2"), n1nic0 = ip("198.19.1.1");
  std::unique_ptr<IpPort> a, a1, b;
  if (!enter(prefix + "0")) return 1;
  for (auto [address, port] : {std::pair{n0nic0, &a}, std::pair{n0nic1, &a1}}) {
    if (mori::Status s = IpPort::open(address, port); !s) {
      std::fprintf(stderr, "ip_port_probe: %s\n", s.message().c_str());
      return 1;
    }
  }
  if (!enter(prefix + "1")) return 1;
  if (mori::Status s = IpPort::open(n1nic0, &b); !s) {
    std::fprintf(stderr, "ip_port_probe: %s\n", s.message().c_str());
    return 1;
  }
  const long unreachs_before = out_dest_unreachs();

  // interface_ipv4 and the errors, in node 1.
  std::vector<uint32_t> addresses;
  uint32_t mtu = 0;
  mori::Status s = mori::wire::interface_ipv4("nic0", &addresses, &mtu);
  check(s.ok() && addresses == std::vector<uint32_t>{n1nic0} && mtu == 1500,
        "interface_ipv4(nic0) in node 1: " + s.message() + " mtu " + std::to_string(mtu));
  s = mori::wire::interface_ipv4("nic9", &addresses, &mtu);
  check(s.message() ==
            "software NIC: network interface \"nic9\" does not exist (there are: lo "
            "127.0.0.1, eth0 198.18.0.2, nic0 198.19.1.1, nic1 198.19.1.2)",
        "interface_ipv4(nic9): " + s.message());
  std::unique_ptr<IpPort> none;
  s = IpPort::open(ip("198.19.0.1"), &none);  // node 0's address, not node 1's
  check(s.message().rfind("software NIC: no network interface has address 198.19.0.1 (there are: "
                          "lo 127.0.0.1, eth0",
                          0) == 0,
        "open(198.19.0.1) in node 1: " + s.message());

  // Node 0 nic0 -> node 1 nic0: byte-exact, ids kept.
  std::string ids;
  const size_t sizes[] = {0, 1, 256, 1472};  // 1472: a full 1500-byte datagram
  for (size_t k = 0; k < std::size(sizes); ++k) {
    const uint16_t id = static_cast<uint16_t>(0x4d00 + k);
    const std::vector<uint8_t> sent = datagram(n0nic0, n1nic0, id, sizes[k]);
    std::string why;
    check(a->send(sent, &why), "send " + std::to_string(k) + ": " + why);
    const std::vector<uint8_t> got = wait_receive(*b);
    check(got == sent,
          "datagram " + std::to_string(k) + " arrived as " + hex(got) + ", sent " + hex(sent));
    ids += (ids.empty() ? "" : " ") + std::to_string(id);
  }

  // Node 1 -> node 0 nic1, then -> node 0 nic0: each port gets only its own.
  std::string why;
  const std::vector<uint8_t> to_nic1 = datagram(n1nic0, n0nic1, 0x4e01, 40);
  const std::vector<uint8_t> to_nic0 = datagram(n1nic0, n0nic0, 0x4e02, 40);
  check(b->send(to_nic1, &why), "send to nic1: " + why);
  check(b->send(to_nic0, &why), "send to nic0: " + why);
  check(wait_receive(*a1) == to_nic1, "node 0 nic1 did not receive its datagram");
  check(wait_receive(*a) == to_nic0, "node 0 nic0 did not receive its datagram");
  std::vector<uint8_t> spare(2048);
  check(a->receive(spare) == 0, "node 0 nic0 received a datagram not addressed to it");
  check(a1->receive(spare) == 0, "node 0 nic1 received a datagram not addressed to it");

  // Node 0 nic0 -> node 0 nic1: the same node, out of nic0 and back in on nic1.
  const std::vector<uint8_t> local = datagram(n0nic0, n0nic1, 0x4f01, 64);
  check(a->send(local, &why), "send nic0 -> nic1 in node 0: " + why);
  check(wait_receive(*a1) == local, "node 0 nic1 did not receive node 0 nic0's datagram");
  check(a->receive(spare) == 0, "node 0 nic0 received its own datagram to nic1");

  // Over the MTU: EMSGSIZE, the datagram is not sent.
  check(!a->send(datagram(n0nic0, n1nic0, 0x5001, 1473), &why) &&
            why == "software NIC: send to 198.19.1.1: Message too long",
        "a 1501-byte datagram: " + why);
  check(!a->send(std::vector<uint8_t>(8, 0), &why) &&
            why == "software NIC: send: not an IPv4 datagram",
        "8 bytes: " + why);
  check(b->receive(spare) == 0, "node 1 received a datagram that was refused");

  const long unreachs_after = out_dest_unreachs();
  check(unreachs_before >= 0 && unreachs_after == unreachs_before,
        "node 1 sent " + std::to_string(unreachs_after - unreachs_before) +
            " ICMP destination unreachable");

  std::printf("sent ids: %s\n", ids.c_str());
  if (failures != 0) return 1;
  std::printf("ip_port_probe: ok\n");
  return 0;
}
