// wire_switch: a small learning Ethernet switch between veth ports, in userspace, that misbehaves
// like netem on the RoCEv2 frames (UDP port 4791) it forwards: the netns.fault_* tests' wire
// where the kernel has no sch_netem (tests/netns/faults.sh runs it in the bridge namespace, with
// the ports taken out of br0).
//   wire_switch [options] <port>...
//     --delay-us D --jitter-us J  each RoCE frame waits D +- J us (uniform, per frame: a frame may
//                                 overtake the ones before it, as netem's jitter reorders)
//     --keep-order                but never before an earlier frame from the same port (a path whose
//                                 latency varies, as netem with a FIFO behind it)
//     --reorder N,K               every Nth RoCE frame is held back until K more have gone (or 20 ms)
//     --duplicate P               each RoCE frame is sent twice with probability P percent
//     --loss P                    each RoCE frame is dropped with probability P percent
//     --seed S                    the random choices' seed (default 1)
//     --ready FILE                created once every port is open
// It forwards by destination MAC (learned from source MACs; unknown and broadcast frames, such as
// ARP, flood every other port) and never impairs other frames. On SIGTERM or SIGINT it prints its
// counts on one line and exits 0.
#include <arpa/inet.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <poll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <queue>
#include <random>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;
using Mac = std::array<uint8_t, 6>;

volatile std::sig_atomic_t g_stop = 0;
void on_signal(int) { g_stop = 1; }

struct Options {
  long delay_us = 0, jitter_us = 0;
  bool keep_order = false;
  long reorder_every = 0, reorder_by = 0;
  double duplicate = 0, loss = 0;
  unsigned seed = 1;
  std::string ready;
  std::vector<std::string> ports;
};

struct Port {
  std::string name;
  int fd = -1;
  int ifindex = 0;
};

struct Frame {
  Clock::time_point due;
  uint64_t order = 0;  // ties keep arrival order
  int in = 0;          // the port it came from
  std::vector<uint8_t> bytes;
  bool operator>(const Frame& o) const { return due != o.due ? due > o.due : order > o.order; }
};

struct Counts {
  uint64_t frames = 0, roce = 0, sent = 0, dropped = 0, duplicated = 0, delayed = 0, held = 0;
  uint64_t overtaken = 0;    // RoCE frames sent before one from the same port that arrived earlier
  uint64_t send_failed = 0;  // the kernel refused it (a full queue): lost
  long latest_us = 0;        // the most a frame went out after it was due (the switch's own lag)
};

bool parse(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    if (a == "--delay-us" && has_value) {
      o->delay_us = std::atol(argv[++i]);
    } else if (a == "--jitter-us" && has_value) {
      o->jitter_us = std::atol(argv[++i]);
    } else if (a == "--keep-order") {
      o->keep_order = true;
    } else if (a == "--reorder" && has_value) {
      if (std::sscanf(argv[++i], "%ld,%ld", &o->reorder_every, &o->reorder_by) != 2) return false;
    } else if (a == "--duplicate" && has_value) {
      o->duplicate = std::atof(argv[++i]);
    } else if (a == "--loss" && has_value) {
      o->loss = std::atof(argv[++i]);
    } else if (a == "--seed" && has_value) {
      o->seed = static_cast<unsigned>(std::atol(argv[++i]));
    } else if (a == "--ready" && has_value) {
      o->ready = argv[++i];
    } else if (a.rfind("--", 0) == 0) {
      return false;
    } else {
      o->ports.push_back(a);
    }
  }
  return o->ports.size() >= 2 && o->jitter_us <= o->delay_us;
}

// A raw packet socket on one interface, promiscuous, that does not see its own sends.
bool open_port(Port* p) {
  p->ifindex = static_cast<int>(if_nametoindex(p->name.c_str()));
  if (p->ifindex == 0) return false;
  p->fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, htons(ETH_P_ALL));
  if (p->fd < 0) return false;
  sockaddr_ll at{};
  at.sll_family = AF_PACKET;
  at.sll_protocol = htons(ETH_P_ALL);
  at.sll_ifindex = p->ifindex;
  if (bind(p->fd, reinterpret_cast<sockaddr*>(&at), sizeof(at)) != 0) return false;
  packet_mreq promisc{};
  promisc.mr_ifindex = p->ifindex;
  promisc.mr_type = PACKET_MR_PROMISC;
  const int one = 1;
  int big = 8 << 20;
  setsockopt(p->fd, SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof(big));
  setsockopt(p->fd, SOL_SOCKET, SO_SNDBUFFORCE, &big, sizeof(big));
  return setsockopt(p->fd, SOL_PACKET, PACKET_ADD_MEMBERSHIP, &promisc, sizeof(promisc)) == 0 &&
         setsockopt(p->fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof(one)) == 0;
}

// IPv4 over Ethernet (no VLAN), UDP, destination port 4791: RoCEv2.
bool is_roce(const std::vector<uint8_t>& f) {
  if (f.size() < 14 + 20 + 8 || f[12] != 0x08 || f[13] != 0x00) return false;
  const size_t ihl = (f[14] & 0x0f) * 4u;
  if (f[14 + 9] != IPPROTO_UDP || f.size() < 14 + ihl + 8) return false;
  return (f[14 + ihl + 2] << 8 | f[14 + ihl + 3]) == 4791;
}

class Switch {
 public:
  Switch(Options o, std::vector<Port> ports)
      : o_(std::move(o)), ports_(std::move(ports)), rng_(o_.seed) {}

  // Reads what every ready port has, then sends what is due; returns when stopped.
  void run() {
    std::vector<pollfd> fds;
    for (const Port& p : ports_) fds.push_back({p.fd, POLLIN, 0});
    std::vector<uint8_t> buffer(65536);
    while (!g_stop) {
      // Sleeps until a frame is due, to the microsecond (it runs at real-time priority: a busy
      // wait would take a core from the PEs).
      long wait_us = 100000;
      if (!due_.empty()) {
        const auto wait =
            std::chrono::duration_cast<std::chrono::microseconds>(due_.top().due - Clock::now());
        wait_us = std::max<long>(0, std::min<long>(wait_us, wait.count()));
      }
      if (!held_.empty()) wait_us = std::min<long>(wait_us, 1000);
      const timespec timeout{wait_us / 1000000, wait_us % 1000000 * 1000};
      const int ready = ppoll(fds.data(), fds.size(), &timeout, nullptr);
      if (ready < 0 && errno != EINTR) break;
      for (size_t i = 0; ready > 0 && i < fds.size(); ++i) {
        if (!(fds[i].revents & POLLIN)) continue;
        for (;;) {
          const ssize_t got = recv(fds[i].fd, buffer.data(), buffer.size(), 0);
          if (got <= 0) break;
          arrive(static_cast<int>(i), std::vector<uint8_t>(buffer.begin(), buffer.begin() + got));
        }
      }
      release_held(false);
      while (!due_.empty() && due_.top().due <= Clock::now()) {
        Frame f = due_.top();
        due_.pop();
        const auto late =
            std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - f.due);
        c_.latest_us = std::max<long>(c_.latest_us, late.count());
        forward(f);
      }
    }
  }

  void print_counts() const {
    std::printf(
        "wire_switch: frames %llu, roce %llu, sent %llu, dropped %llu, duplicated %llu, delayed "
        "%llu, held back %llu, reordered %llu, send failed %llu, lag at most %ld us\n",
        ull(c_.frames), ull(c_.roce), ull(c_.sent), ull(c_.dropped), ull(c_.duplicated),
        ull(c_.delayed), ull(c_.held), ull(c_.overtaken), ull(c_.send_failed), c_.latest_us);
    std::fflush(stdout);
  }

 private:
  static unsigned long long ull(uint64_t v) { return v; }
  bool chance(double percent) {
    return percent > 0 && std::uniform_real_distribution<double>(0, 100)(rng_) < percent;
  }

  void arrive(int in, std::vector<uint8_t> bytes) {
    ++c_.frames;
    if (bytes.size() < 14) return;
    Mac src;
    std::memcpy(src.data(), bytes.data() + 6, 6);
    if (!(src[0] & 1)) where_[src] = in;
    Frame f{Clock::now(), next_order_++, in, std::move(bytes)};
    if (!is_roce(f.bytes)) return forward(f);
    ++c_.roce;
    if (chance(o_.loss)) {
      ++c_.dropped;
      return;
    }
    const int copies = chance(o_.duplicate) ? 2 : 1;
    c_.duplicated += copies - 1;
    for (int k = 0; k < copies; ++k) {
      Frame g = f;
      g.order = next_order_++;
      if (o_.reorder_every > 0 && ++roce_seen_ % o_.reorder_every == 0) {
        ++c_.held;
        held_.push_back({std::move(g), c_.sent + o_.reorder_by});
        continue;
      }
      if (o_.delay_us > 0) {
        ++c_.delayed;
        const long us = std::uniform_int_distribution<long>(o_.delay_us - o_.jitter_us,
                                                            o_.delay_us + o_.jitter_us)(rng_);
        g.due += std::chrono::microseconds(us);
        if (o_.keep_order) {
          Clock::time_point& last = last_due_[in];
          g.due = last = std::max(g.due, last);
        }
      }
      due_.push(std::move(g));
    }
  }

  // A held frame goes once K frames have gone after it, or after 20 ms when traffic stops.
  void release_held(bool all) {
    while (!held_.empty() &&
           (all || c_.sent >= held_.front().second ||
            Clock::now() - held_.front().first.due > std::chrono::milliseconds(20))) {
      Frame f = std::move(held_.front().first);
      held_.pop_front();
      forward(f);
    }
  }

  void forward(const Frame& f) {
    if (is_roce(f.bytes)) {
      uint64_t& last = last_order_[f.in];
      if (f.order < last) ++c_.overtaken;
      last = std::max(last, f.order);
    }
    Mac dst;
    std::memcpy(dst.data(), f.bytes.data(), 6);
    const auto known = where_.find(dst);
    for (size_t out = 0; out < ports_.size(); ++out) {
      if (static_cast<int>(out) == f.in) continue;
      if (!(dst[0] & 1) && known != where_.end() && known->second != static_cast<int>(out))
        continue;
      if (send(ports_[out].fd, f.bytes.data(), f.bytes.size(), 0) ==
          static_cast<ssize_t>(f.bytes.size()))
        ++c_.sent;
      else
        ++c_.send_failed;
    }
  }

  Options o_;
  std::vector<Port> ports_;
  std::mt19937_64 rng_;
  std::map<Mac, int> where_;
  std::map<int, Clock::time_point> last_due_;  // by port, with --keep-order
  std::priority_queue<Frame, std::vector<Frame>, std::greater<Frame>> due_;
  std::deque<std::pair<Frame, uint64_t>> held_;  // with the sent count that releases it
  std::map<int, uint64_t> last_order_;           // the latest arrival sent, by port
  uint64_t next_order_ = 0, roce_seen_ = 0;
  Counts c_;
};

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!parse(argc, argv, &o)) {
    std::fprintf(
        stderr,
        "usage: wire_switch [--delay-us D --jitter-us J (J <= D) [--keep-order]] [--reorder N,K] "
        "[--duplicate P] [--loss P] [--seed S] [--ready FILE] <port> <port>...\n");
    return 2;
  }
  std::vector<Port> ports;
  for (const std::string& name : o.ports) {
    Port p;
    p.name = name;
    if (!open_port(&p)) {
      std::fprintf(stderr, "wire_switch: port %s: %s\n", name.c_str(), std::strerror(errno));
      return 1;
    }
    ports.push_back(p);
  }
  std::signal(SIGTERM, on_signal);
  std::signal(SIGINT, on_signal);
  if (!o.ready.empty())
    if (FILE* f = std::fopen(o.ready.c_str(), "w")) std::fclose(f);
  Switch s(o, ports);
  s.run();
  s.print_counts();
  for (const Port& p : ports) close(p.fd);
  return 0;
}
