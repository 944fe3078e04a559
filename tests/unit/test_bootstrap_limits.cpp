// The TCP bootstrap's range checks at their limits (bootstrap/tcp_join.cpp, tcp.cpp): the ranks a
// hello may claim, make_tcp_bootstrap's size, rank and timeout, a broadcast's root, and the 1 GiB
// limit on a collective's total. Each is tried exactly at the limit (accepted), and one past it
// (refused, with its exact text). Rank 0 is played by this test over loopback TCP: it answers
// hellos, reads a frame and answers with an error report, so that a call the checks let through
// ends without moving a gigabyte.
#include <doctest/doctest.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/bootstrap.hpp"
#include "bootstrap/id_listener.hpp"
#include "bootstrap/socket.hpp"
#include "bootstrap/tcp_channel.hpp"
#include "bootstrap/tcp_join.hpp"
#include "bootstrap/unique_id.hpp"
#include "bootstrap/wire.hpp"
#include "reserved_memory.hpp"

using namespace mori::bootstrap;
using mori::Status;
using mori::shmem::UniqueId;
using std::chrono::milliseconds;

namespace {

constexpr uint64_t kGiB = uint64_t{1} << 30;
constexpr int kMaxRanks = 1 << 20;  // tcp.cpp's limit on a job's size
const milliseconds kTimeout(2000);

std::string text(const Status& s) { return s.ok() ? "ok" : s.message(); }

// A fresh unique ID and the listener new_unique_id opened for it, claimed by this test.
struct Listening {
  UniqueId id{};
  UniqueIdFields fields;
  Fd listener;
  Listening() {
    REQUIRE(new_unique_id(&id).ok());
    REQUIRE(decode_unique_id(id, &fields).ok());
    listener = claim_listener(fields.nonce);
    REQUIRE(listener.valid());
  }
};

// Waits for one connection on the listener.
Fd accept_within(const Fd& listener, const Deadline& deadline) {
  pollfd pfd{listener.get(), POLLIN, 0};
  Fd fd;
  while (!fd.valid() && poll_until(&pfd, 1, deadline) > 0) REQUIRE(accept_one(pfd.fd, &fd).ok());
  return fd;
}

// Plays rank 0 for one rank-1 call: accepts the rank's connection, reads its hello, tells it that
// everyone joined, then reads the frame (and payload) of its first collective and answers with an
// error report naming what it saw.
struct FakeRoot {
  Listening at;
  Hello hello;
  Frame frame;
  std::thread thread{[this] { serve(); }};
  ~FakeRoot() {
    if (thread.joinable()) thread.join();
  }
  void serve() {
    const Deadline deadline(kTimeout);
    Fd fd = accept_within(at.listener, deadline);
    if (!fd.valid()) return;
    uint8_t bytes[kHelloBytes];
    if (!recv_all(fd.get(), bytes, kHelloBytes, deadline).ok()) return;
    hello = decode_hello(bytes);
    if (!send_frame(fd.get(), Frame{static_cast<uint16_t>(Op::kJoin), 0, 0, 0, 0}, nullptr,
                    deadline)
             .ok())
      return;
    uint8_t header[kFrameBytes];
    if (!recv_all(fd.get(), header, kFrameBytes, deadline).ok()) return;
    frame = decode_frame(header);
    std::vector<uint8_t> payload(frame.length);  // small: the tests send at most 1 KiB
    if (!recv_all(fd.get(), payload.data(), payload.size(), deadline).ok()) return;
    send_error(fd.get(), frame.seq, "fake rank 0 saw " + op_name(frame.op));
  }
};

// A job of `size` ranks in which this process is rank 1, joined to a FakeRoot.
std::unique_ptr<Bootstrap> join_fake(FakeRoot& root, int size) {
  std::unique_ptr<Bootstrap> boot;
  const Status s = make_tcp_bootstrap(root.at.id, 1, size, kTimeout, &boot);
  REQUIRE_MESSAGE(s.ok(), s.message());
  return boot;
}

// A hello as rank `rank` of `size` would send it to the listener `at`.
Hello hello_for(const UniqueIdFields& at, uint32_t rank, uint32_t size) {
  return Hello{kHelloMagic, kWireVersion, rank, size, at.nonce};
}

// A connection to rank 0 that has sent `hello`.
Fd send_hello(const UniqueIdFields& at, const Hello& hello) {
  const Deadline deadline(kTimeout);
  Fd fd;
  REQUIRE(connect_once(to_socket_address(at), deadline, &fd).ok());
  uint8_t bytes[kHelloBytes];
  encode_hello(hello, bytes);
  REQUIRE(send_all(fd.get(), bytes, kHelloBytes, deadline).ok());
  return fd;
}

// What rank 0 answers a connection's hello with: its reason for refusing it, or "ok" for kJoin.
std::string answer_to(const Fd& fd) {
  const Frame join{static_cast<uint16_t>(Op::kJoin), 0, 0, 0, 0};
  return text(recv_answer(fd.get(), 1, join, nullptr, Deadline(kTimeout), kTimeout));
}

// Rank 0 of a 3-rank job, joined by processes that claim `claims` (rank, size) in their hellos;
// returns rank 0's verdict.
std::string join_root(const std::vector<std::pair<uint32_t, uint32_t>>& claims) {
  Listening at;
  std::vector<Fd> peers;
  Status result;
  std::jthread root([&] { result = join_as_root(at.listener, at.fields, 3, kTimeout, &peers); });
  std::vector<Fd> leaves;
  for (const auto& [rank, size] : claims)
    leaves.push_back(send_hello(at.fields, hello_for(at.fields, rank, size)));
  root.join();
  if (result.ok()) {
    CHECK(peers.size() == 3);
    CHECK(peers[1].valid());
    CHECK(peers[2].valid());
  }
  return text(result);
}

// Whether rank 0 has closed this connection (it reads as the end of the stream).
bool closed_by_root(const Fd& fd, int wait_ms) {
  pollfd pfd{fd.get(), POLLIN, 0};
  if (::poll(&pfd, 1, wait_ms) <= 0) return false;
  uint8_t byte;
  return ::recv(fd.get(), &byte, 1, MSG_DONTWAIT) == 0;
}

}  // namespace

TEST_CASE("bootstrap limits: a hello may claim ranks 1 to size - 1, not 0 or size") {
  CHECK(join_root({{1, 3}, {2, 3}}) == "ok");
  CHECK(join_root({{2, 3}, {1, 3}}) == "ok");
  CHECK(join_root({{3, 3}}) ==
        "bootstrap: a process joined as rank 3, but rank 0 expects ranks 1-2");
  CHECK(join_root({{0, 3}}) ==
        "bootstrap: a process joined as rank 0, but rank 0 expects ranks 1-2");
  CHECK(join_root({{1, 4}}) == "bootstrap: rank 1 joined with size 4, but rank 0 has size 3");
  CHECK(join_root({{1, 2}}) == "bootstrap: rank 1 joined with size 2, but rank 0 has size 3");
  CHECK(join_root({{1, 3}, {1, 3}}) == "bootstrap: two processes joined as rank 1");
}

TEST_CASE("bootstrap limits: make_tcp_bootstrap takes sizes 1 to 2^20, ranks 0 to size - 1") {
  std::unique_ptr<Bootstrap> boot;
  UniqueId id;
  REQUIRE(new_unique_id(&id).ok());
  CHECK(text(make_tcp_bootstrap(id, 0, 0, kTimeout, &boot)) ==
        "bootstrap: size 0 is not in 1-1048576");
  CHECK(text(make_tcp_bootstrap(id, 0, kMaxRanks + 1, kTimeout, &boot)) ==
        "bootstrap: size 1048577 is not in 1-1048576");
  CHECK(text(make_tcp_bootstrap(id, -1, 2, kTimeout, &boot)) ==
        "bootstrap: rank -1 is out of range for size 2");
  CHECK(text(make_tcp_bootstrap(id, 2, 2, kTimeout, &boot)) ==
        "bootstrap: rank 2 is out of range for size 2");
  CHECK(text(make_tcp_bootstrap(id, 0, 1, milliseconds(0), &boot)) ==
        "bootstrap: the timeout must be positive, not 0 ms");
  // Size 1 with the shortest timeout: a job of one.
  REQUIRE(text(make_tcp_bootstrap(id, 0, 1, milliseconds(1), &boot)) == "ok");
  CHECK(boot->size() == 1);
  // The largest size, as its last rank.
  FakeRoot root;
  std::unique_ptr<Bootstrap> last;
  REQUIRE(text(make_tcp_bootstrap(root.at.id, kMaxRanks - 1, kMaxRanks, kTimeout, &last)) == "ok");
  CHECK(last->rank() == kMaxRanks - 1);
  CHECK(text(last->barrier()) == "fake rank 0 saw barrier");
  root.thread.join();
  CHECK(root.hello.rank == kMaxRanks - 1);
  CHECK(root.hello.size == kMaxRanks);
}

TEST_CASE("bootstrap limits: a broadcast's root is 0 to size - 1") {
  std::unique_ptr<Bootstrap> solo;
  UniqueId id;
  REQUIRE(new_unique_id(&id).ok());
  REQUIRE(make_tcp_bootstrap(id, 0, 1, kTimeout, &solo).ok());
  uint8_t buf[8] = {};
  CHECK(text(solo->broadcast(buf, 8, 0)) == "ok");
  CHECK(text(solo->broadcast(buf, 8, 1)) ==
        "bootstrap: broadcast root 1 is out of range for size 1");
  FakeRoot root;
  auto boot = join_fake(root, 3);
  CHECK(text(boot->broadcast(buf, 8, -1)) ==
        "bootstrap: broadcast root -1 is out of range for size 3");
  CHECK(text(boot->broadcast(buf, 8, 3)) ==
        "bootstrap: broadcast root 3 is out of range for size 3");
  // The last rank as root: this rank (1) is not it, so it sends a header only.
  CHECK(text(boot->broadcast(buf, 8, 2)) == "fake rank 0 saw broadcast");
  root.thread.join();
  CHECK(root.frame.root == 2);
  CHECK(root.frame.block == 8);
  CHECK(root.frame.length == 0);
}

TEST_CASE("bootstrap limits: a broadcast of exactly 1 GiB is sent, 1 GiB + 1 is refused") {
  mori::test::ReservedMemory buf(kGiB);
  FakeRoot root;
  auto boot = join_fake(root, 2);
  CHECK(text(boot->broadcast(buf.at, kGiB + 1, 0)) ==
        "bootstrap: broadcast of 1073741825 bytes exceeds the 1 GiB message limit");
  CHECK(text(boot->broadcast(buf.at, kGiB, 0)) == "fake rank 0 saw broadcast");
  root.thread.join();
  CHECK(root.frame.op == static_cast<uint16_t>(Op::kBroadcast));
  CHECK(root.frame.block == kGiB);
  CHECK(root.frame.seq == 1);  // the refused call sent nothing
}

TEST_CASE("bootstrap limits: an allgather totalling exactly 1 GiB is sent, more is refused") {
  // 2^20 ranks of 1 KiB make 1 GiB: this rank sends 1 KiB, the answer would be the whole GiB.
  mori::test::ReservedMemory recv(kGiB);
  const std::vector<uint8_t> send(1025, 0x6b);
  FakeRoot root;
  auto boot = join_fake(root, kMaxRanks);
  CHECK(text(boot->allgather(send.data(), recv.at, 1025)) ==
        "bootstrap: allgather of 1074790400 bytes exceeds the 1 GiB message limit");
  CHECK(text(boot->alltoall(send.data(), recv.at, 1025)) ==
        "bootstrap: alltoall of 1074790400 bytes exceeds the 1 GiB message limit");
  CHECK(text(boot->allgather(send.data(), recv.at, 1024)) == "fake rank 0 saw allgather");
  root.thread.join();
  CHECK(root.frame.seq == 1);  // the refused calls sent nothing
  CHECK(root.frame.block == 1024);
  CHECK(root.frame.length == 1024);
}

TEST_CASE("bootstrap limits: rank 0 holds 2 * size + 16 connections without a hello, then drops") {
  // A 3-rank job keeps up to 22 connections whose hello has not arrived. `silent` connections say
  // nothing; then one sends something that is not a hello, and rank 0's refusal of it proves that
  // every earlier connection was accepted (they are accepted in the order they were made).
  auto flood = [](int silent, bool* first_dropped, bool* second_dropped) {
    Listening at;
    std::vector<Fd> peers;
    Status result;
    std::jthread root([&] { result = join_as_root(at.listener, at.fields, 3, kTimeout, &peers); });
    std::vector<Fd> strays;
    for (int i = 0; i < silent; ++i) {
      strays.emplace_back();
      REQUIRE(connect_once(to_socket_address(at.fields), Deadline(kTimeout), &strays.back()).ok());
    }
    Hello bad = hello_for(at.fields, 1, 3);
    bad.magic = ~kHelloMagic;
    CHECK(answer_to(send_hello(at.fields, bad)) ==
          "bootstrap: rank 0 was sent something that is not a mori hello");
    *first_dropped = closed_by_root(strays[0], 100);
    *second_dropped = closed_by_root(strays[1], 0);
    // The job goes on: ranks 1 and 2 join.
    Fd one = send_hello(at.fields, hello_for(at.fields, 1, 3));
    Fd two = send_hello(at.fields, hello_for(at.fields, 2, 3));
    root.join();
    CHECK(text(result) == "ok");
  };
  bool first = true, second = true;
  flood(21, &first, &second);  // with the bad hello, 22 waiting: none dropped
  CHECK_FALSE(first);
  CHECK_FALSE(second);
  flood(22, &first, &second);  // 23: the oldest is dropped, only it
  CHECK(first);
  CHECK_FALSE(second);
}

TEST_CASE(
    "bootstrap limits: rank 0 refuses a hello of another wire version or nonce, and goes on") {
  Listening at;
  std::vector<Fd> peers;
  Status result;
  std::jthread root([&] { result = join_as_root(at.listener, at.fields, 2, kTimeout, &peers); });
  for (const uint16_t version : {kWireVersion - 1, kWireVersion + 1}) {
    Hello other = hello_for(at.fields, 1, 2);
    other.version = version;
    CHECK(answer_to(send_hello(at.fields, other)) == "bootstrap: wire version " +
                                                         std::to_string(version) +
                                                         " cannot join rank 0, which speaks 1");
  }
  for (const uint64_t nonce : {at.fields.nonce - 1, at.fields.nonce + 1}) {
    Hello stale = hello_for(at.fields, 1, 2);
    stale.nonce = nonce;
    CHECK(answer_to(send_hello(at.fields, stale)) ==
          "stale unique ID: nonce does not match the listener's");
  }
  const Fd one = send_hello(at.fields, hello_for(at.fields, 1, 2));
  CHECK(answer_to(one) == "ok");
  root.join();
  CHECK(text(result) == "ok");
}
