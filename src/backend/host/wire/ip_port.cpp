// The software NIC's IP port (ip_port.hpp): three sockets on one interface address.
#include "backend/host/wire/ip_port.hpp"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <linux/filter.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace mori::wire {
namespace {

constexpr int kBufferBytes = 4 << 20;  // 4 MiB: a burst of a few thousand MTU-sized datagrams

std::string dotted(uint32_t address) {
  char text[INET_ADDRSTRLEN] = {};
  in_addr in{};
  in.s_addr = address;
  inet_ntop(AF_INET, &in, text, sizeof(text));
  return text;
}

std::string errno_text(const std::string& what, int error) {
  std::string text = "software NIC: " + what + ": " + std::strerror(error);
  if (error == EPERM || error == EACCES) {
    text = "software NIC: " + what + " needs CAP_NET_RAW: " + std::strerror(error);
  }
  return text;
}

struct IfAddrs {
  ifaddrs* list = nullptr;
  ~IfAddrs() {
    if (list != nullptr) freeifaddrs(list);
  }
};

// "lo 127.0.0.1, eth0 198.18.0.1, nic0" : every interface, with its IPv4 addresses, for errors.
std::string interface_list(const ifaddrs* list) {
  std::vector<std::string> names;
  std::vector<std::string> texts;
  for (const ifaddrs* it = list; it != nullptr; it = it->ifa_next) {
    if (it->ifa_name == nullptr) continue;
    auto at = std::find(names.begin(), names.end(), it->ifa_name);
    if (at == names.end()) {
      names.emplace_back(it->ifa_name);
      texts.emplace_back(it->ifa_name);
      at = names.end() - 1;
    }
    if (it->ifa_addr != nullptr && it->ifa_addr->sa_family == AF_INET) {
      texts[at - names.begin()] +=
          " " + dotted(reinterpret_cast<const sockaddr_in*>(it->ifa_addr)->sin_addr.s_addr);
    }
  }
  std::string joined;
  for (const auto& text : texts) joined += (joined.empty() ? "" : ", ") + text;
  return joined;
}

Status interface_mtu(const std::string& ifname, uint32_t* mtu) {
  const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Status::error(errno_text("cannot open a socket for SIOCGIFMTU", errno));
  ifreq request{};
  std::strncpy(request.ifr_name, ifname.c_str(), IFNAMSIZ - 1);
  const int rc = ioctl(fd, SIOCGIFMTU, &request);
  const int error = errno;
  close(fd);
  if (rc != 0) {
    return Status::error(errno_text("network interface \"" + ifname + "\": SIOCGIFMTU", error));
  }
  *mtu = static_cast<uint32_t>(request.ifr_mtu);
  return {};
}

void close_fd(int* fd) {
  if (*fd >= 0) close(*fd);
  *fd = -1;
}

Status bind_to_device(int fd, const std::string& ifname, const char* which) {
  if (setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, ifname.c_str(),
                 static_cast<socklen_t>(ifname.size() + 1)) != 0) {
    return Status::error(
        errno_text(std::string(which) + ": SO_BINDTODEVICE \"" + ifname + "\"", errno));
  }
  return {};
}

// SO_RCVBUFFORCE (root) passes net.core.rmem_max; SO_RCVBUF is capped by it, which still works.
void large_buffer(int fd, int force, int plain) {
  if (setsockopt(fd, SOL_SOCKET, force, &kBufferBytes, sizeof(kBufferBytes)) != 0) {
    (void)setsockopt(fd, SOL_SOCKET, plain, &kBufferBytes, sizeof(kBufferBytes));
  }
}

Status attach_filter(int fd, sock_filter* code, size_t count, const char* which) {
  sock_fprog program{};
  program.len = static_cast<unsigned short>(count);
  program.filter = code;
  if (setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &program, sizeof(program)) != 0) {
    return Status::error(errno_text(std::string(which) + ": SO_ATTACH_FILTER", errno));
  }
  return {};
}

}  // namespace

Status interface_ipv4(const std::string& ifname, std::vector<uint32_t>* addresses, uint32_t* mtu) {
  addresses->clear();
  const std::string quoted = "network interface \"" + ifname + "\"";
  IfAddrs ifs;
  if (getifaddrs(&ifs.list) != 0) {
    return Status::error(errno_text("cannot list network interfaces", errno));
  }
  bool found = false;
  for (const ifaddrs* it = ifs.list; it != nullptr; it = it->ifa_next) {
    if (it->ifa_name == nullptr || ifname != it->ifa_name) continue;
    found = true;
    if (it->ifa_addr != nullptr && it->ifa_addr->sa_family == AF_INET) {
      addresses->push_back(reinterpret_cast<const sockaddr_in*>(it->ifa_addr)->sin_addr.s_addr);
    }
  }
  if (!found) {
    return Status::error("software NIC: " + quoted +
                         " does not exist (there are: " + interface_list(ifs.list) + ")");
  }
  if (addresses->empty()) {
    return Status::error("software NIC: " + quoted +
                         " has no IPv4 address (there are: " + interface_list(ifs.list) + ")");
  }
  std::sort(addresses->begin(), addresses->end(),
            [](uint32_t a, uint32_t b) { return ntohl(a) < ntohl(b); });
  return interface_mtu(ifname, mtu);
}

Status IpPort::open(uint32_t address, std::unique_ptr<IpPort>* out) {
  const std::string where = "address " + dotted(address);
  std::string ifname;
  {
    IfAddrs ifs;
    if (getifaddrs(&ifs.list) != 0) {
      return Status::error(errno_text("cannot list network interfaces", errno));
    }
    for (const ifaddrs* it = ifs.list; it != nullptr && ifname.empty(); it = it->ifa_next) {
      if (it->ifa_name == nullptr || it->ifa_addr == nullptr) continue;
      if (it->ifa_addr->sa_family != AF_INET) continue;
      if (reinterpret_cast<const sockaddr_in*>(it->ifa_addr)->sin_addr.s_addr == address) {
        ifname = it->ifa_name;
      }
    }
    if (ifname.empty()) {
      return Status::error("software NIC: no network interface has " + where +
                           " (there are: " + interface_list(ifs.list) + ")");
    }
  }
  std::unique_ptr<IpPort> port(new IpPort());
  port->address_ = address;

  // Sending: IPPROTO_RAW implies IP_HDRINCL (raw(7)). Linux's raw_send_hdrinc (net/ipv4/raw.c)
  // keeps the caller's header except that it always rewrites tot_len and the header checksum,
  // fills in saddr when it is 0, and picks an identification only when id is 0: a nonzero id the
  // NIC put in (and covered by the ICRC) goes out unchanged. A datagram over the interface's MTU
  // fails with EMSGSIZE (no fragmentation of hdrincl datagrams). Bound to the interface, so the
  // datagram leaves on the NIC's own veth even when other interfaces share its subnet.
  port->send_fd_ = socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_RAW);
  if (port->send_fd_ < 0) return Status::error(errno_text("raw socket", errno));
  MORI_TRY(bind_to_device(port->send_fd_, ifname, "raw socket"));
  large_buffer(port->send_fd_, SO_SNDBUFFORCE, SO_SNDBUF);

  // Receiving: a raw UDP socket gets a copy of every UDP datagram the namespace receives, IPv4
  // header first. The filter keeps those to this address and port 4791 (other PEs of the node
  // have their own ports) and drops fragments (the NIC never sends any). It is not bound to the
  // interface: the filter's destination is what tells the PEs of a node apart, and a datagram from
  // a sender of the same host that is not bound to a device arrives on lo, not on the NIC's veth.
  // (Between two ports of one node namespace the datagram crosses the bridge: the sender is bound
  // to its veth, and netns.sh sets accept_local for the local source address it comes back with.)
  port->receive_fd_ = socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, IPPROTO_UDP);
  if (port->receive_fd_ < 0) return Status::error(errno_text("raw receive socket", errno));
  large_buffer(port->receive_fd_, SO_RCVBUFFORCE, SO_RCVBUF);
  // Classic BPF sees the datagram from its IPv4 header; word and half-word loads are big-endian.
  sock_filter accept_roce[] = {
      BPF_STMT(BPF_LD | BPF_B | BPF_ABS, 9),                      // protocol
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, IPPROTO_UDP, 0, 8),     //   UDP, else drop
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, 16),                     // destination
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ntohl(address), 0, 6),  //   ours, else drop
      BPF_STMT(BPF_LD | BPF_H | BPF_ABS, 6),                      // flags, fragment
      BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, 0x3fff, 4, 0),         //   MF or offset: drop
      BPF_STMT(BPF_LDX | BPF_B | BPF_MSH, 0),                     // X = header bytes
      BPF_STMT(BPF_LD | BPF_H | BPF_IND, 2),                      // UDP destination
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, kRoceUdpPort, 0, 1),    //   4791, else drop
      BPF_STMT(BPF_RET | BPF_K, 0xffffffff),                      // accept it whole
      BPF_STMT(BPF_RET | BPF_K, 0),                               // drop
  };
  MORI_TRY(
      attach_filter(port->receive_fd_, accept_roce, std::size(accept_roce), "raw receive socket"));

  // The sink: without a UDP socket on (address, 4791) the kernel answers each datagram with an
  // ICMP port unreachable (udp_rcv -> __udp4_lib_rcv). It reads nothing, so it keeps nothing.
  port->sink_fd_ = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, IPPROTO_UDP);
  if (port->sink_fd_ < 0) return Status::error(errno_text("UDP socket", errno));
  sock_filter drop_all[] = {BPF_STMT(BPF_RET | BPF_K, 0)};
  MORI_TRY(attach_filter(port->sink_fd_, drop_all, std::size(drop_all), "UDP socket"));
  sockaddr_in local{};
  local.sin_family = AF_INET;
  local.sin_port = htons(kRoceUdpPort);
  local.sin_addr.s_addr = address;
  if (bind(port->sink_fd_, reinterpret_cast<const sockaddr*>(&local), sizeof(local)) != 0) {
    return Status::error(errno_text("UDP socket: bind " + where + " port 4791", errno));
  }
  *out = std::move(port);
  return {};
}

IpPort::~IpPort() {
  close_fd(&send_fd_);
  close_fd(&receive_fd_);
  close_fd(&sink_fd_);
}

bool IpPort::send(std::span<const uint8_t> datagram, std::string* why) {
  if (datagram.size() < kIpv4Bytes || (datagram[0] >> 4) != 4) {
    if (why != nullptr) *why = "software NIC: send: not an IPv4 datagram";
    return false;
  }
  sockaddr_in to{};
  to.sin_family = AF_INET;
  std::memcpy(&to.sin_addr.s_addr, datagram.data() + 16, 4);  // the header's destination
  for (;;) {
    const ssize_t sent = sendto(send_fd_, datagram.data(), datagram.size(), 0,
                                reinterpret_cast<const sockaddr*>(&to), sizeof(to));
    if (sent == static_cast<ssize_t>(datagram.size())) return true;
    if (sent < 0 && errno == EINTR) continue;
    if (why != nullptr) {
      // EPERM from sendto is a netfilter rule dropping the datagram on output (the kernel turns
      // NF_DROP into -EPERM there); the socket exists, so the capability was there.
      *why = sent < 0 && errno == EPERM ? "software NIC: send to " + dotted(to.sin_addr.s_addr) +
                                              ": refused by a firewall rule (EPERM)"
             : sent < 0 ? errno_text("send to " + dotted(to.sin_addr.s_addr), errno)
                        : "software NIC: send to " + dotted(to.sin_addr.s_addr) + ": short send";
    }
    return false;
  }
}

size_t IpPort::receive(std::span<uint8_t> buffer) {
  for (;;) {
    // MSG_TRUNC: the datagram's real length, so one larger than the buffer is skipped, not cut.
    const ssize_t got = recv(receive_fd_, buffer.data(), buffer.size(), MSG_DONTWAIT | MSG_TRUNC);
    if (got < 0) {
      if (errno == EINTR) continue;
      return 0;  // EAGAIN: nothing waiting
    }
    if (static_cast<size_t>(got) > buffer.size() || static_cast<size_t>(got) < kIpv4Bytes) continue;
    return static_cast<size_t>(got);
  }
}

}  // namespace mori::wire
