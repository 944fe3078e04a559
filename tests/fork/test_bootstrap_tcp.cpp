// The TCP bootstrap across processes: fork() one child per rank from an ID the parent made, as rank
// 0 of a job would before launching. Every collective's bytes are checked on every rank.
#include <doctest/doctest.h>
#include <sys/mman.h>

#include <atomic>
#include <cstring>
#include <string>
#include <vector>

#include "bootstrap/bootstrap.hpp"
#include "exited_id.hpp"
#include "fork_children.hpp"

using namespace std::chrono_literals;
using namespace mori::bootstrap;  // Bootstrap, make_tcp_bootstrap, new_unique_id
using mori::shmem::UniqueId;
using mori::test::ChildRun;

namespace {

// Returns early from a child's body with the failed call and its reason.
#define CHILD_TRY(expr)                                                      \
  do {                                                                       \
    const mori::Status child_s_ = (expr);                                    \
    if (!child_s_.ok()) return std::string(#expr ": ") + child_s_.message(); \
  } while (0)

uint8_t pattern(int from, int to, size_t i) {
  return static_cast<uint8_t>(from * 37 + to * 11 + i * 7 + (i >> 8));
}

std::string mismatch(const char* what, int peer, size_t i) {
  return std::string(what) + ": wrong byte " + std::to_string(i) + " from rank " +
         std::to_string(peer);
}

std::string check_allgather(Bootstrap& b, size_t bytes) {
  const int n = b.size(), me = b.rank();
  std::vector<uint8_t> send(bytes), recv(n * bytes, 0xee);
  for (size_t i = 0; i < bytes; ++i) send[i] = pattern(me, 0, i);
  CHILD_TRY(b.allgather(send.data(), recv.data(), bytes));
  for (int r = 0; r < n; ++r) {
    for (size_t i = 0; i < bytes; ++i) {
      if (recv[r * bytes + i] != pattern(r, 0, i)) return mismatch("allgather", r, i);
    }
  }
  return "";
}

std::string check_alltoall(Bootstrap& b, size_t bytes) {
  const int n = b.size(), me = b.rank();
  std::vector<uint8_t> send(n * bytes), recv(n * bytes, 0xee);
  for (int to = 0; to < n; ++to) {
    for (size_t i = 0; i < bytes; ++i) send[to * bytes + i] = pattern(me, to, i);
  }
  CHILD_TRY(b.alltoall(send.data(), recv.data(), bytes));
  for (int from = 0; from < n; ++from) {
    for (size_t i = 0; i < bytes; ++i) {
      if (recv[from * bytes + i] != pattern(from, me, i)) return mismatch("alltoall", from, i);
    }
  }
  return "";
}

std::string check_broadcast(Bootstrap& b, size_t bytes, int root) {
  std::vector<uint8_t> buf(bytes, 0xee);
  if (b.rank() == root) {
    for (size_t i = 0; i < bytes; ++i) buf[i] = pattern(root, 1, i);
  }
  CHILD_TRY(b.broadcast(buf.data(), bytes, root));
  for (size_t i = 0; i < bytes; ++i) {
    if (buf[i] != pattern(root, 1, i)) return mismatch("broadcast", root, i);
  }
  return "";
}

std::string join(const UniqueId& id, int rank, int n, std::unique_ptr<Bootstrap>* b) {
  CHILD_TRY(make_tcp_bootstrap(id, rank, n, 5000ms, b));
  if ((*b)->rank() != rank || (*b)->size() != n) return "rank() or size() is wrong";
  return "";
}

void check_all_succeeded(const ChildRun& run, size_t n) {
  REQUIRE(run.children.size() == n);
  for (const auto& child : run.children) {
    CAPTURE(child.rank);
    CHECK(child.text == "");
    CHECK(child.exit_code == 0);
  }
}

#define CHILD_CHECK(call)                                \
  do {                                                   \
    if (std::string e_ = (call); !e_.empty()) return e_; \
  } while (0)

}  // namespace

TEST_CASE(
    "tcp bootstrap: allgather, alltoall and broadcast put every byte in place on 1, 2 and 4 "
    "ranks") {
  for (int n : {1, 2, 4}) {
    CAPTURE(n);
    UniqueId id;
    REQUIRE(new_unique_id(&id).ok());
    ChildRun run = mori::test::run_ranks(n, [&](int rank) -> std::string {
      std::unique_ptr<Bootstrap> b;
      CHILD_CHECK(join(id, rank, n, &b));
      for (size_t bytes : {0, 1, 8, 1000, 65536 + 3}) {
        CHILD_CHECK(check_allgather(*b, bytes));
        CHILD_CHECK(check_alltoall(*b, bytes));
        for (int root = n - 1; root >= 0; --root) CHILD_CHECK(check_broadcast(*b, bytes, root));
      }
      CHILD_TRY(b->barrier());
      return "";
    });
    check_all_succeeded(run, n);
  }
}

TEST_CASE("tcp bootstrap: no rank leaves a barrier before every rank has entered it") {
  const int n = 4, rounds = 20;
  // A counter all children share: each adds 1 before barrier k and must then see at least
  // (k + 1) * n.
  void* shared = mmap(nullptr, 64, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  REQUIRE(shared != MAP_FAILED);
  auto* arrived = new (shared) int(0);
  UniqueId id;
  REQUIRE(new_unique_id(&id).ok());
  ChildRun run = mori::test::run_ranks(n, [&](int rank) -> std::string {
    std::unique_ptr<Bootstrap> b;
    CHILD_CHECK(join(id, rank, n, &b));
    for (int k = 0; k < rounds; ++k) {
      // Stagger arrivals so that a barrier that let ranks through early would be caught.
      if ((k + rank) % n == 0) usleep(3000);
      std::atomic_ref<int>(*arrived).fetch_add(1);
      CHILD_TRY(b->barrier());
      const int seen = std::atomic_ref<int>(*arrived).load();
      if (seen < (k + 1) * n) {
        return "left barrier " + std::to_string(k) + " having seen only " + std::to_string(seen) +
               " arrivals";
      }
    }
    return "";
  });
  check_all_succeeded(run, n);
  CHECK(*arrived == n * rounds);
  munmap(shared, 64);
}

TEST_CASE("tcp bootstrap: hundreds of back-to-back collectives of mixed sizes, and one of 4 MiB") {
  const int n = 4;
  UniqueId id;
  REQUIRE(new_unique_id(&id).ok());
  ChildRun run = mori::test::run_ranks(n, [&](int rank) -> std::string {
    std::unique_ptr<Bootstrap> b;
    CHILD_CHECK(join(id, rank, n, &b));
    for (int i = 0; i < 200; ++i) {
      const size_t bytes = (i * 97) % 3000;
      CHILD_CHECK(check_allgather(*b, bytes));
      CHILD_CHECK(check_alltoall(*b, bytes / 4));
      CHILD_CHECK(check_broadcast(*b, bytes, i % n));
      CHILD_TRY(b->barrier());
    }
    CHILD_CHECK(check_allgather(*b, size_t{1} << 20));
    return "";
  });
  check_all_succeeded(run, n);
}

TEST_CASE("tcp bootstrap: rank 0 listens where the ID says when another process made the ID") {
  // The ID comes from a process that has exited, so rank 0 has no listener of its own and binds the
  // port.
  UniqueId id = mori::test::unique_id_from_exited_process();
  const int n = 3;
  ChildRun run = mori::test::run_ranks(n, [&](int rank) -> std::string {
    std::unique_ptr<Bootstrap> b;
    CHILD_CHECK(join(id, rank, n, &b));
    CHILD_CHECK(check_allgather(*b, 16));
    return "";
  });
  check_all_succeeded(run, n);
}
