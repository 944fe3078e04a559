// The TCP bootstrap when something goes wrong: every rank fails within its deadline, with a reason
// that names the cause and the rank to blame. The texts are compared exactly: they are what users
// will read.
#include <doctest/doctest.h>
#include <signal.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "bootstrap/bootstrap.hpp"
#include "bootstrap/bytes.hpp"
#include "bootstrap/id_listener.hpp"
#include "bootstrap/unique_id.hpp"
#include "exited_id.hpp"
#include "fork_children.hpp"

using namespace std::chrono_literals;
using mori::bootstrap::Bootstrap;
using mori::bootstrap::make_tcp_bootstrap;
using mori::bootstrap::new_unique_id;
using mori::shmem::UniqueId;
using mori::test::ChildRun;
using mori::test::expect_children;

namespace {

UniqueId fresh_id() {
  UniqueId id;
  REQUIRE(new_unique_id(&id).ok());
  return id;
}

// The reason the call failed, or "ok".
std::string reason(const mori::Status& s) { return s.ok() ? "ok" : s.message(); }

}  // namespace

TEST_CASE(
    "tcp bootstrap failure: a rank that never arrives is named by everyone, within the deadline") {
  const UniqueId id = fresh_id();
  ChildRun run = mori::test::run_children({0, 1, 2}, [&](int rank) {
    std::unique_ptr<Bootstrap> b;
    return reason(make_tcp_bootstrap(id, rank, 4, 1000ms, &b));
  });
  expect_children(run, {0, 1, 2},
                  "bootstrap timed out after 1000 ms waiting for rank(s) 3 to join");
  CHECK(run.elapsed >= 1000ms);
  CHECK(run.elapsed < 2500ms);
}

TEST_CASE(
    "tcp bootstrap failure: a rank killed after joining is named by the ranks in the barrier") {
  const UniqueId id = fresh_id();
  ChildRun run = mori::test::run_ranks(4, [&](int rank) -> std::string {
    std::unique_ptr<Bootstrap> b;
    if (auto s = make_tcp_bootstrap(id, rank, 4, 2000ms, &b); !s.ok()) return s.message();
    if (auto s = b->barrier(); !s.ok()) return s.message();
    if (rank == 2) kill(getpid(), SIGKILL);
    const std::string first = reason(b->barrier());
    // A failed bootstrap stays failed: its streams are out of step.
    const std::string again = reason(b->barrier());
    return first == again ? first : first + " | then: " + again;
  });
  expect_children(run, {0, 1, 3}, "bootstrap: rank 2 closed the connection during barrier");
  REQUIRE(run.children.size() == 4);
  CHECK(run.children[2].signal == SIGKILL);
  CHECK(run.elapsed < 2000ms);
}

TEST_CASE("tcp bootstrap failure: when rank 0 dies, the others say they lost it") {
  const UniqueId id = fresh_id();
  ChildRun run = mori::test::run_ranks(3, [&](int rank) -> std::string {
    std::unique_ptr<Bootstrap> b;
    if (auto s = make_tcp_bootstrap(id, rank, 3, 2000ms, &b); !s.ok()) return s.message();
    if (auto s = b->barrier(); !s.ok()) return s.message();
    if (rank == 0) kill(getpid(), SIGKILL);
    return reason(b->allgather(&rank, std::vector<int>(3).data(), sizeof(int)));
  });
  expect_children(run, {1, 2}, "bootstrap: lost connection to rank 0 during allgather");
  CHECK(run.elapsed < 2000ms);
}

TEST_CASE(
    "tcp bootstrap failure: a rank that misses its barrier is named when the barrier times out") {
  const UniqueId id = fresh_id();
  ChildRun run = mori::test::run_ranks(3, [&](int rank) -> std::string {
    std::unique_ptr<Bootstrap> b;
    if (auto s = make_tcp_bootstrap(id, rank, 3, 700ms, &b); !s.ok()) return s.message();
    if (rank == 2) usleep(1200 * 1000);
    return reason(b->barrier());
  });
  // Rank 2 reads rank 0's verdict when it finally arrives; the others got it when rank 0 gave up.
  expect_children(run, {0, 1, 2},
                  "bootstrap: timed out after 700 ms in barrier waiting for rank 2");
  CHECK(run.elapsed < 2500ms);
}

TEST_CASE(
    "tcp bootstrap failure: collectives called in a different order are named with their numbers") {
  const UniqueId id = fresh_id();
  ChildRun run = mori::test::run_ranks(3, [&](int rank) -> std::string {
    std::unique_ptr<Bootstrap> b;
    if (auto s = make_tcp_bootstrap(id, rank, 3, 2000ms, &b); !s.ok()) return s.message();
    if (auto s = b->barrier(); !s.ok()) return s.message();
    if (rank != 1) return reason(b->barrier());
    std::vector<uint8_t> out(3 * 8);
    return reason(b->allgather(out.data(), out.data(), 8));
  });
  expect_children(run, {0, 1, 2},
                  "bootstrap: rank 1 sent allgather #2 while rank 0 expected barrier #2");
}

TEST_CASE("tcp bootstrap failure: ranks that disagree on a collective's size or root are named") {
  const UniqueId id = fresh_id();
  ChildRun run = mori::test::run_ranks(2, [&](int rank) -> std::string {
    std::unique_ptr<Bootstrap> b;
    if (auto s = make_tcp_bootstrap(id, rank, 2, 2000ms, &b); !s.ok()) return s.message();
    std::vector<uint8_t> buf(64);
    return reason(b->allgather(buf.data(), buf.data(), rank == 0 ? 8 : 16));
  });
  expect_children(run, {0, 1},
                  "bootstrap: rank 1 called allgather #1 with 16 bytes while rank 0 has 8");

  const UniqueId id2 = fresh_id();
  run = mori::test::run_ranks(2, [&](int rank) -> std::string {
    std::unique_ptr<Bootstrap> b;
    if (auto s = make_tcp_bootstrap(id2, rank, 2, 2000ms, &b); !s.ok()) return s.message();
    uint8_t buf[4] = {};
    return reason(b->broadcast(buf, sizeof(buf), rank));
  });
  expect_children(run, {0, 1},
                  "bootstrap: rank 1 called broadcast #1 with root 1 while rank 0 has root 0");
}

TEST_CASE(
    "tcp bootstrap failure: a corrupted ID and an ID of another version are refused at once") {
  UniqueId corrupted = fresh_id();
  corrupted.bytes[mori::bootstrap::kIdNonceOffset] ^= 1;
  UniqueId other_version = fresh_id();
  mori::bootstrap::store_le<uint16_t>(other_version.bytes + mori::bootstrap::kIdVersionOffset, 9);
  mori::bootstrap::seal_unique_id(&other_version);
  for (const auto& [id, text] :
       {std::pair{corrupted, std::string("corrupted unique ID (checksum mismatch)")},
        std::pair{other_version, std::string("unique ID version 9, this library speaks 1")}}) {
    ChildRun run = mori::test::run_ranks(2, [&](int rank) {
      std::unique_ptr<Bootstrap> b;
      return reason(make_tcp_bootstrap(id, rank, 2, 5000ms, &b));
    });
    expect_children(run, {0, 1}, text);
    CHECK(run.elapsed < 1000ms);
  }
}

TEST_CASE("tcp bootstrap failure: a stale ID (another nonce, same listener) is refused by rank 0") {
  const UniqueId id = fresh_id();
  UniqueId stale = id;
  stale.bytes[mori::bootstrap::kIdNonceOffset] ^= 0x5a;
  mori::bootstrap::seal_unique_id(&stale);
  ChildRun run = mori::test::run_ranks(2, [&](int rank) {
    std::unique_ptr<Bootstrap> b;
    return reason(make_tcp_bootstrap(rank == 0 ? id : stale, rank, 2, 1000ms, &b));
  });
  REQUIRE(run.children.size() == 2);
  CHECK(run.children[1].text == "stale unique ID: nonce does not match the listener's");
  CHECK(run.children[0].text ==
        "bootstrap timed out after 1000 ms waiting for rank(s) 1 to join (refused 1 connection: "
        "stale unique ID: nonce does not match the listener's)");
}

TEST_CASE("tcp bootstrap failure: an ID whose listener is gone times out connecting, saying why") {
  UniqueId id = mori::test::unique_id_from_exited_process();
  mori::bootstrap::UniqueIdFields fields;
  REQUIRE(mori::bootstrap::decode_unique_id(id, &fields).ok());
  ChildRun run = mori::test::run_children({1}, [&](int rank) {
    std::unique_ptr<Bootstrap> b;
    return reason(make_tcp_bootstrap(id, rank, 2, 500ms, &b));
  });
  expect_children(
      run, {1},
      "bootstrap: timed out after 500 ms connecting to rank 0 at " +
          mori::bootstrap::format_endpoint(fields) +
          " (connection refused: rank 0 is not listening yet, or the unique ID is stale)");
  CHECK(run.elapsed < 1500ms);
}

TEST_CASE("tcp bootstrap failure: a wrong size or a rank claimed twice fails the join for all") {
  const UniqueId id = fresh_id();
  ChildRun run = mori::test::run_ranks(2, [&](int rank) {
    std::unique_ptr<Bootstrap> b;
    return reason(make_tcp_bootstrap(id, rank, rank == 0 ? 2 : 3, 2000ms, &b));
  });
  expect_children(run, {0, 1}, "bootstrap: rank 1 joined with size 3, but rank 0 has size 2");
  CHECK(run.elapsed < 1000ms);

  const UniqueId id2 = fresh_id();
  run = mori::test::run_children({0, 1, 1}, [&](int rank) {
    std::unique_ptr<Bootstrap> b;
    return reason(make_tcp_bootstrap(id2, rank, 3, 2000ms, &b));
  });
  expect_children(run, {0, 1}, "bootstrap: two processes joined as rank 1");
  CHECK(run.elapsed < 1000ms);
}

TEST_CASE(
    "tcp bootstrap failure: rank 0 cannot take the ID's port while another process listens on it") {
  const UniqueId id = fresh_id();
  mori::bootstrap::UniqueIdFields fields;
  REQUIRE(mori::bootstrap::decode_unique_id(id, &fields).ok());
  ChildRun run = mori::test::run_children({0}, [&](int rank) {
    // Forget the listener inherited from the parent, as if this process had not made the ID.
    mori::bootstrap::claim_listener(fields.nonce).reset();
    std::unique_ptr<Bootstrap> b;
    return reason(make_tcp_bootstrap(id, rank, 2, 1000ms, &b));
  });
  expect_children(
      run, {0},
      "bootstrap: cannot listen on " + mori::bootstrap::format_endpoint(fields) +
          ": bind: Address already in use (rank 0's process did not make this unique ID, "
          "so it listens where the ID says; the process that made the ID may still hold "
          "that port)");
}
