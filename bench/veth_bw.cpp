// veth_bw: what the veth path between two nodes (network namespaces, scripts/netns.sh) carries, as
// the bound of the shmem benchmarks between nodes (scripts/bench-nodes.sh). One process, two
// threads: a UDP socket is created in each node's namespace (a socket stays in the namespace it was
// created in), bound to the node's software-NIC address and interface, so the datagrams take the
// software NIC's path: nic0 of node A, the bridge, nic0 of node B.
//
//   veth_bw --ns-a mori-bench0 --ns-b mori-bench1 [--a 198.19.0.1 --b 198.19.1.1] [--json]
//
// Bandwidth: A sends datagrams of --payload bytes (default 1040: a middle packet of a RoCEv2 write
// or read response at path MTU 1024, BTH 12 + 1024 + ICRC 4, IBTA 9.2) to B's port 4791 for
// --seconds, as fast as sendmmsg goes; B counts what arrives. Reported: the datagrams per second B
// received between its first and last, and that times 1024 (the RDMA payload such packets would
// carry: the bound of put_bw and get_bw) in MB/s (10^6 bytes/s).
// Latency: a ping-pong of --ping-bytes (default 40: an 8-byte RDMA WRITE Only, BTH 12 + RETH 16 +
// 8 + ICRC 4) between A and B, both sides polling with MSG_DONTWAIT as the software NIC does
// (src/backend/host/wire/ip_port.cpp); the median round trip is the bound of put + quiet (a write
// and its acknowledgement).
// Both threads spin, as the software NICs' threads do, on the machine's cores: the figures are
// what the path gives to two polling threads, not the veth's limit on an idle machine.
#include <arpa/inet.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

struct Socket {
  int fd = -1;
  ~Socket() {
    if (fd >= 0) close(fd);
  }
};

bool fail(std::string* why, const std::string& what) {
  *why = what + ": " + std::strerror(errno);
  return false;
}

// A UDP socket in namespace /run/netns/<ns>, bound to <address>:<port> and to device <ifname>.
// The calling thread enters the namespace and returns to its own before it returns.
bool open_in(const std::string& ns, const std::string& ifname, const std::string& address,
             uint16_t port, Socket* out, std::string* why) {
  Socket self, target;
  self.fd = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
  if (self.fd < 0) return fail(why, "open /proc/thread-self/ns/net");
  target.fd = open(("/run/netns/" + ns).c_str(), O_RDONLY | O_CLOEXEC);
  if (target.fd < 0) return fail(why, "open /run/netns/" + ns + " (scripts/netns.sh up first)");
  if (setns(target.fd, CLONE_NEWNET) != 0) return fail(why, "setns " + ns);
  out->fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, IPPROTO_UDP);
  const int error = errno;
  if (setns(self.fd, CLONE_NEWNET) != 0) return fail(why, "setns back");
  errno = error;
  if (out->fd < 0) return fail(why, "socket in " + ns);
  if (setsockopt(out->fd, SOL_SOCKET, SO_BINDTODEVICE, ifname.c_str(), ifname.size()) != 0)
    return fail(why, "SO_BINDTODEVICE " + ifname + " in " + ns);
  const int big = 8 << 20;  // as the software NIC's large_buffer
  setsockopt(out->fd, SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof(big));
  setsockopt(out->fd, SOL_SOCKET, SO_SNDBUFFORCE, &big, sizeof(big));
  sockaddr_in local{};
  local.sin_family = AF_INET;
  local.sin_port = htons(port);
  if (inet_pton(AF_INET, address.c_str(), &local.sin_addr) != 1) {
    *why = "not an IPv4 address: " + address;
    return false;
  }
  if (bind(out->fd, reinterpret_cast<const sockaddr*>(&local), sizeof(local)) != 0)
    return fail(why, "bind " + address + " in " + ns);
  return true;
}

bool connect_to(const Socket& s, const std::string& address, uint16_t port, std::string* why) {
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(port);
  inet_pton(AF_INET, address.c_str(), &to.sin_addr);
  if (connect(s.fd, reinterpret_cast<const sockaddr*>(&to), sizeof(to)) != 0)
    return fail(why, "connect " + address);
  return true;
}

double seconds_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

struct Blast {
  uint64_t sent = 0, received = 0;
  double send_seconds = 0, receive_seconds = 0;  // receive: first to last datagram
};

// A sends for `seconds`; B counts until nothing came for 200 ms after A stopped.
Blast blast(const Socket& a, const Socket& b, size_t payload, double seconds) {
  Blast r;
  std::atomic<bool> sending{true};
  std::thread receiver([&] {
    constexpr int kBatch = 64;
    std::vector<char> buffers(kBatch * payload);
    mmsghdr msgs[kBatch] = {};
    iovec iov[kBatch];
    for (int i = 0; i < kBatch; ++i) {
      iov[i] = {buffers.data() + i * payload, payload};
      msgs[i].msg_hdr.msg_iov = &iov[i];
      msgs[i].msg_hdr.msg_iovlen = 1;
    }
    Clock::time_point first{}, last{}, idle_since = Clock::now();
    for (;;) {
      const int got = recvmmsg(b.fd, msgs, kBatch, MSG_DONTWAIT, nullptr);
      const auto now = Clock::now();
      if (got > 0) {
        if (r.received == 0) first = now;
        r.received += static_cast<uint64_t>(got);
        last = idle_since = now;
        continue;
      }
      if (sending.load(std::memory_order_relaxed)) {
        idle_since = now;
      } else if (seconds_between(idle_since, now) > 0.2) {
        break;
      }
    }
    r.receive_seconds = r.received > 1 ? seconds_between(first, last) : 0;
  });
  constexpr int kBatch = 32;
  std::vector<char> data(payload, 0x5a);
  mmsghdr msgs[kBatch] = {};
  iovec iov[kBatch];
  for (int i = 0; i < kBatch; ++i) {
    iov[i] = {data.data(), payload};
    msgs[i].msg_hdr.msg_iov = &iov[i];
    msgs[i].msg_hdr.msg_iovlen = 1;
  }
  const auto start = Clock::now();
  auto now = start;
  while (seconds_between(start, now) < seconds) {
    const int sent = sendmmsg(a.fd, msgs, kBatch, 0);
    if (sent > 0) r.sent += static_cast<uint64_t>(sent);
    now = Clock::now();
  }
  r.send_seconds = seconds_between(start, now);
  sending = false;
  receiver.join();
  return r;
}

struct Pings {
  std::vector<double> rtt_us;
  int lost = 0;
};

// A sends ping i and polls for its echo (resending after 100 ms); B polls and echoes everything.
Pings ping_pong(const Socket& a, const Socket& b, size_t bytes, int count) {
  Pings p;
  std::atomic<bool> done{false};
  std::thread echo([&] {
    std::vector<char> buffer(bytes + 64);
    while (!done.load(std::memory_order_relaxed)) {
      const ssize_t got = recv(b.fd, buffer.data(), buffer.size(), MSG_DONTWAIT);
      if (got > 0) (void)send(b.fd, buffer.data(), static_cast<size_t>(got), 0);
    }
  });
  std::vector<char> out(std::max<size_t>(bytes, sizeof(uint32_t)), 0), in(out.size() + 64);
  for (uint32_t i = 0; i < static_cast<uint32_t>(count); ++i) {
    std::memcpy(out.data(), &i, sizeof(i));
    const auto start = Clock::now();
    auto sent_at = start;
    (void)send(a.fd, out.data(), out.size(), 0);
    for (;;) {
      const ssize_t got = recv(a.fd, in.data(), in.size(), MSG_DONTWAIT);
      const auto now = Clock::now();
      if (got >= static_cast<ssize_t>(sizeof(i)) && std::memcmp(in.data(), &i, sizeof(i)) == 0) {
        if (sent_at == start) p.rtt_us.push_back(1e6 * seconds_between(start, now));
        break;
      }
      if (seconds_between(sent_at, now) > 0.1) {
        ++p.lost;
        sent_at = now;
        (void)send(a.fd, out.data(), out.size(), 0);
      }
    }
  }
  done = true;
  echo.join();
  return p;
}

}  // namespace

int main(int argc, char** argv) {
  std::string ns_a = "mori-bench0", ns_b = "mori-bench1", if_a = "nic0", if_b = "nic0";
  std::string addr_a = "198.19.0.1", addr_b = "198.19.1.1";
  size_t payload = 1040, ping_bytes = 40;
  double seconds = 1;
  int pings = 20000;
  uint16_t port = 4791;
  bool json = false;
  CLI::App app{"veth_bw: UDP bandwidth and round trip between two network namespaces"};
  app.add_option("--ns-a", ns_a, "the sending node's namespace");
  app.add_option("--ns-b", ns_b, "the receiving node's namespace");
  app.add_option("--if-a", if_a, "A's interface");
  app.add_option("--if-b", if_b, "B's interface");
  app.add_option("--a", addr_a, "A's address");
  app.add_option("--b", addr_b, "B's address");
  app.add_option("--port", port, "UDP port on both sides (the software NIC's: 4791)");
  app.add_option("--payload", payload, "UDP payload bytes of the bandwidth datagrams")
      ->check(CLI::Range(8, 1472));
  app.add_option("--seconds", seconds, "how long A sends")->check(CLI::Range(0.01, 60.0));
  app.add_option("--ping-bytes", ping_bytes, "UDP payload bytes of a ping")
      ->check(CLI::Range(4, 1472));
  app.add_option("--pings", pings, "round trips timed")->check(CLI::Range(1, 10000000));
  app.add_flag("--json", json, "one JSON object per line");
  CLI11_PARSE(app, argc, argv);

  std::string why;
  Socket a, b;
  if (!open_in(ns_a, if_a, addr_a, port, &a, &why) ||
      !open_in(ns_b, if_b, addr_b, port, &b, &why) || !connect_to(a, addr_b, port, &why) ||
      !connect_to(b, addr_a, port, &why)) {
    std::fprintf(stderr, "veth_bw: %s\n", why.c_str());
    return 1;
  }
  // A few pings first: ARP resolves, and the bridge learns both addresses.
  (void)ping_pong(a, b, ping_bytes, 10);
  Pings p = ping_pong(a, b, ping_bytes, pings);
  const Blast r = blast(a, b, payload, seconds);
  if (p.rtt_us.empty() || r.received < 2 || r.receive_seconds <= 0) {
    std::fprintf(stderr, "veth_bw: nothing measured (%zu round trips, %llu datagrams received)\n",
                 p.rtt_us.size(), static_cast<unsigned long long>(r.received));
    return 1;
  }
  std::sort(p.rtt_us.begin(), p.rtt_us.end());
  const double median = p.rtt_us[p.rtt_us.size() / 2], fastest = p.rtt_us.front();
  const double p99 = p.rtt_us[p.rtt_us.size() * 99 / 100];
  const double dgrams = static_cast<double>(r.received - 1) / r.receive_seconds;
  const double udp_mbps = dgrams * static_cast<double>(payload) / 1e6;
  const double rdma_mbps = dgrams * 1024 / 1e6;
  const double lost = r.sent ? 1.0 - static_cast<double>(r.received) / r.sent : 0;
  if (json) {
    std::printf("%s\n", nlohmann::json{{"bench", "veth_rtt"},
                                       {"bytes", ping_bytes},
                                       {"pings", p.rtt_us.size()},
                                       {"resent", p.lost},
                                       {"rtt_us", median},
                                       {"rtt_min_us", fastest},
                                       {"rtt_p99_us", p99}}
                            .dump()
                            .c_str());
    std::printf("%s\n", nlohmann::json{{"bench", "veth_bw"},
                                       {"payload", payload},
                                       {"seconds", r.send_seconds},
                                       {"sent", r.sent},
                                       {"received", r.received},
                                       {"dgrams_per_s", dgrams},
                                       {"udp_mbps", udp_mbps},
                                       {"rdma_payload_mbps", rdma_mbps},
                                       {"lost_fraction", lost}}
                            .dump()
                            .c_str());
  } else {
    std::printf("# veth_bw: %s %s %s -> %s %s %s, port %u\n", ns_a.c_str(), if_a.c_str(),
                addr_a.c_str(), ns_b.c_str(), if_b.c_str(), addr_b.c_str(), port);
    std::printf("round trip of %zu B: median %.1f us, min %.1f, p99 %.1f (%zu pings, %d resent)\n",
                ping_bytes, median, fastest, p99, p.rtt_us.size(), p.lost);
    std::printf(
        "%zu B datagrams for %.2f s: %.0f received/s (%.1f%% of %llu sent lost): %.1f MB/s of "
        "UDP payload, %.1f MB/s as 1024 B RDMA payloads\n",
        payload, r.send_seconds, dgrams, 100 * lost, static_cast<unsigned long long>(r.sent),
        udp_mbps, rdma_mbps);
  }
  return 0;
}
