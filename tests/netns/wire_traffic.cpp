// wire_traffic: the traffic of the netns.fault_* tests (faults.cmake), 4 ranks on 2 nodes of 2
// PEs over the software NIC's wire. Each round, every PE puts to and gets from every other PE
// sizes from 1 B to 64 KiB (above the path MTU of 1024: up to 64 packets a message), all in flight
// in one launch, then fetch-adds a counter on every PE. Every byte is checked on every PE: the
// data, and the poisoned guard bytes around each destination; the fetched values at each counter
// must be exactly 0 .. K*n-1 and the counter K*n. The data differs by round, so a stale or
// duplicated packet of an earlier round that lands is seen.
//   WIRE_TRAFFIC_ROUNDS=<n>       rounds (default 1)
//   WIRE_TRAFFIC_READY=<file>     rank 0 creates it after round WIRE_TRAFFIC_READY_AFTER (default
//                                 1), for the script that takes a link down mid-run
//   WIRE_TRAFFIC_PARTS=<list>     which of puts, gets, adds to run (default all three)
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "device_harness.hpp"

namespace shmem = mori::shmem;
using namespace mori::test;
using mori::Thread;

namespace {

constexpr size_t kSizes[] = {1, 7, 1023, 1024, 1025, 4099, 65536};
constexpr size_t kCases = std::size(kSizes);
constexpr size_t kMax = 65536;
constexpr size_t kGuard = 64;
constexpr unsigned char kPoison = GuardedSlots<unsigned char>::kPoison;
constexpr int kAdds = 16;  // fetch-adds by each PE on each PE's counter, a round

size_t env_size(const char* name, size_t fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::strtoul(v, nullptr, 10) : fallback;
}

// The byte i of a message of `size` bytes written by PE `pe` in round `round`.
unsigned char byte_of(int pe, size_t i, size_t size, size_t round) {
  return static_cast<unsigned char>((pe * 131 + i * 7 + (i >> 8) * 3 + size + round * 29) % 251);
}

// "" if [p, p + size) holds PE pe's message and the kGuard bytes before and the bytes after it up
// to `room` are poison.
std::string check_message(const unsigned char* p, size_t size, size_t room, int pe, size_t round) {
  for (size_t b = 1; b <= kGuard; ++b)
    if (p[-static_cast<ptrdiff_t>(b)] != kPoison)
      return "guard byte -" + std::to_string(b) + " hit";
  for (size_t i = 0; i < size; ++i)
    if (p[i] != byte_of(pe, i, size, round))
      return "byte " + std::to_string(i) + " is " + std::to_string(p[i]) + ", not " +
             std::to_string(byte_of(pe, i, size, round));
  for (size_t b = size; b < room; ++b)
    if (p[b] != kPoison) return "byte " + std::to_string(b) + " past the message hit";
  return "";
}

// Puts: PE w writes case c into slot c * n + w of every other PE.
void round_puts(const Session& s, size_t round) {
  GuardedSlots<unsigned char> dst(kCases * s.n, kMax);
  Registered<unsigned char> src(kCases * kMax);
  for (size_t c = 0; c < kCases; ++c)
    for (size_t i = 0; i < kSizes[c]; ++i) src[c * kMax + i] = byte_of(s.me, i, kSizes[c], round);
  REQUIRE(shmem::barrier_all() == 0);
  launch({1}, {1}, [&] {
    for (size_t c = 0; c < kCases; ++c)
      for (int pe = 0; pe < s.n; ++pe)
        if (pe != s.me)
          shmem::putmem_nbi<Thread>(dst.slot(c * s.n + s.me), &src[c * kMax], kSizes[c], pe);
    shmem::quiet();
  });
  REQUIRE(shmem::barrier_all() == 0);
  std::string bad;
  for (size_t c = 0; c < kCases && bad.empty(); ++c)
    for (int w = 0; w < s.n && bad.empty(); ++w) {
      const size_t size = w == s.me ? 0 : kSizes[c];
      bad = check_message(dst.slot(c * s.n + w), size, kMax + kGuard, w, round);
      if (!bad.empty())
        bad =
            "put of " + std::to_string(kSizes[c]) + " B from PE " + std::to_string(w) + ": " + bad;
    }
  CHECK_MESSAGE(bad.empty(), "round ", round, " on PE ", s.me, ": ", bad);
  REQUIRE(all_ranks(bad.empty()));
}

// Gets: every PE reads case c of every other PE's source into a guarded local region.
void round_gets(const Session& s, size_t round) {
  GuardedSlots<unsigned char> src(kCases, kMax);
  for (size_t c = 0; c < kCases; ++c)
    for (size_t i = 0; i < kSizes[c]; ++i) src.slot(c)[i] = byte_of(s.me, i, kSizes[c], round);
  const size_t stride = kGuard + kMax + kGuard;
  Registered<unsigned char> local(stride * kCases * s.n + kGuard, kPoison);
  auto region = [&](size_t c, int pe) { return &local[(c * s.n + pe) * stride + kGuard]; };
  REQUIRE(shmem::barrier_all() == 0);
  launch({1}, {1}, [&] {
    for (size_t c = 0; c < kCases; ++c)
      for (int pe = 0; pe < s.n; ++pe)
        if (pe != s.me) shmem::getmem_nbi<Thread>(region(c, pe), src.slot(c), kSizes[c], pe);
    shmem::quiet();
  });
  std::string bad;
  for (size_t c = 0; c < kCases && bad.empty(); ++c)
    for (int pe = 0; pe < s.n && bad.empty(); ++pe) {
      bad = check_message(region(c, pe), pe == s.me ? 0 : kSizes[c], kMax + kGuard, pe, round);
      if (!bad.empty())
        bad =
            "get of " + std::to_string(kSizes[c]) + " B from PE " + std::to_string(pe) + ": " + bad;
    }
  CHECK_MESSAGE(bad.empty(), "round ", round, " on PE ", s.me, ": ", bad);
  REQUIRE(shmem::barrier_all() == 0);  // the sources stay until every PE has read them
  REQUIRE(all_ranks(bad.empty()));
}

// Fetch-adds: kAdds by every PE on every PE's counter (this PE's own too).
void round_adds(const Session& s) {
  GuardedSlots<uint64_t> counter(1, 1);
  *counter.slot(0) = 0;
  std::vector<uint64_t> fetched(kAdds * s.n);  // [k * n + target]
  REQUIRE(shmem::barrier_all() == 0);
  launch({1}, {1}, [&] {
    for (int k = 0; k < kAdds; ++k)
      for (int pe = 0; pe < s.n; ++pe)
        fetched[k * s.n + pe] = shmem::atomic_fetch_add(counter.slot(0), uint64_t{1}, pe);
    shmem::quiet();
  });
  REQUIRE(shmem::barrier_all() == 0);
  std::vector<uint64_t> all(fetched.size() * s.n);  // [from][k * n + target]
  MPI_Allgather(fetched.data(), static_cast<int>(fetched.size()), MPI_UINT64_T, all.data(),
                static_cast<int>(fetched.size()), MPI_UINT64_T, MPI_COMM_WORLD);
  const uint64_t total = uint64_t{kAdds} * s.n;
  std::vector<int> seen(total, 0);
  std::string bad;
  for (int from = 0; from < s.n; ++from)
    for (int k = 0; k < kAdds; ++k) {
      const uint64_t v = all[from * fetched.size() + k * s.n + s.me];
      if (v >= total || seen[v]++ != 0)
        bad = "fetched value " + std::to_string(v) + " (PE " + std::to_string(from) + ")";
    }
  if (*counter.slot(0) != total)
    bad += " counter is " + std::to_string(*counter.slot(0)) + ", not " + std::to_string(total);
  if (bad.empty()) bad = counter.check_guards({1});
  CHECK_MESSAGE(bad.empty(), "fetch-adds on PE ", s.me, ": ", bad);
  REQUIRE(all_ranks(bad.empty()));
}

}  // namespace

TEST_CASE("every byte of puts, gets and fetch-adds between every pair of PEs, across nodes") {
  Session s("64M");
  REQUIRE(s.n == 4);
  const size_t rounds = env_size("WIRE_TRAFFIC_ROUNDS", 1);
  const size_t ready_after = env_size("WIRE_TRAFFIC_READY_AFTER", 1);
  const char* ready = std::getenv("WIRE_TRAFFIC_READY");
  const char* parts_env = std::getenv("WIRE_TRAFFIC_PARTS");
  const std::string parts = parts_env && *parts_env ? parts_env : "puts,gets,adds";
  const auto start = std::chrono::steady_clock::now();
  for (size_t round = 0; round < rounds; ++round) {
    const auto t0 = std::chrono::steady_clock::now();
    if (parts.find("puts") != std::string::npos) round_puts(s, round);
    if (parts.find("gets") != std::string::npos) round_gets(s, round);
    if (parts.find("adds") != std::string::npos) round_adds(s);
    if (s.me == 0) {
      const std::chrono::duration<double> took = std::chrono::steady_clock::now() - t0;
      std::printf("wire_traffic: round %zu: %.3f s\n", round, took.count());
      std::fflush(stdout);
      if (ready && *ready && round + 1 == ready_after)
        if (FILE* f = std::fopen(ready, "w")) std::fclose(f);
    }
  }
  if (s.me == 0) {
    const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
    std::printf("wire_traffic: %zu rounds, every byte right, in %.3f s\n", rounds, took.count());
  }
}
