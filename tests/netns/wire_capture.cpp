// netns.wire_capture's traffic (wire_capture.sh captures it, capture_check.cpp checks the
// capture): 4 ranks on the fixture's 2 nodes of 2 PEs, and only PE 0 (node 0's nic0) talks to PE
// 2 (node 1's nic0), over the software NIC's wire: two puts larger than the path MTU (the first
// loses a packet to the network), a get and a fetch-add (capture_plan.hpp). Between the
// operations the ranks meet in MPI_Barrier, which travels over MPI's shared memory and not over
// the wire, so that the capture holds the operations one after the other. Every PE checks every
// byte of its memory afterwards: what the operations wrote, and that the rest is untouched.
#include <cstring>

#include "capture_plan.hpp"
#include "mpi/device_harness.hpp"

namespace shmem = mori::shmem;
using namespace mori::test;
using mori::Thread;
namespace plan = mori::test::capture;

namespace {

constexpr unsigned char kPoison = 0xA5;
constexpr int kSender = 0, kTarget = 2;

// Symmetric memory: the two puts' destinations, the get's source and the fetch-add's word.
struct Symmetric {
  uint8_t* lossy = nullptr;
  uint8_t* put = nullptr;
  uint8_t* source = nullptr;
  uint64_t* word = nullptr;
};

void mpi_barrier() { REQUIRE(MPI_Barrier(MPI_COMM_WORLD) == MPI_SUCCESS); }

// The first byte of `bytes` at `p` that is not `expect(i)`, as text ("" when all are).
template <typename F>
std::string first_difference(const char* what, const uint8_t* p, size_t bytes, F expect) {
  for (size_t i = 0; i < bytes; ++i)
    if (p[i] != expect(i))
      return std::string(what) + " byte " + std::to_string(i) + " is " + std::to_string(p[i]) +
             ", not " + std::to_string(expect(i));
  return "";
}

}  // namespace

TEST_CASE("PE 0 puts, gets and fetch-adds on PE 2 over the wire, one operation at a time") {
  Session s;
  REQUIRE(s.n == 4);
  REQUIRE_MESSAGE(std::getenv("MORI_DEVICE_NIC") != nullptr,
                  "MORI_DEVICE_NIC (mlx5, bnxt or ionic) puts the other node's PEs on the wire");
  const size_t n = plan::kPutBytes;
  Symmetric m;
  m.lossy = static_cast<uint8_t*>(shmem::malloc(n));
  m.put = static_cast<uint8_t*>(shmem::malloc(n));
  m.source = static_cast<uint8_t*>(shmem::malloc(n));
  m.word = static_cast<uint64_t*>(shmem::malloc(sizeof(uint64_t)));
  REQUIRE_MESSAGE((m.lossy && m.put && m.source && m.word), shmem::last_error());
  std::memset(m.lossy, kPoison, n);
  std::memset(m.put, kPoison, n);
  for (size_t i = 0; i < n; ++i) m.source[i] = s.me == kTarget ? plan::data_byte(3, i) : kPoison;
  *m.word = s.me == kTarget ? plan::kOriginal : 0;
  // The local side of the RDMA operations: registered (collectively, on every PE).
  Registered<uint8_t> lossy_src(n), put_src(n), got(n, kPoison);
  for (size_t i = 0; i < n; ++i) lossy_src[i] = plan::data_byte(1, i);
  for (size_t i = 0; i < n; ++i) put_src[i] = plan::data_byte(2, i);
  uint64_t fetched = 0;
  mpi_barrier();

  // Each operation in a launch of its own, completed before the barrier: on the wire its packets
  // and their acknowledgements come before the next operation's.
  auto step = [&](auto&& op) {
    if (s.me == kSender) {
      launch({1}, {1}, [&] {
        op();
        shmem::quiet();
      });
    }
    mpi_barrier();
  };
  step([&] { shmem::putmem<Thread>(m.lossy, lossy_src.data(), n, kTarget); });
  step([&] { shmem::putmem<Thread>(m.put, put_src.data(), n, kTarget); });
  step([&] { shmem::getmem<Thread>(got.data(), m.source, n, kTarget); });
  step([&] { fetched = shmem::atomic_fetch_add(m.word, plan::kAddend, kTarget); });

  std::string bad;
  auto poison = [](size_t) { return kPoison; };
  if (s.me == kTarget) {
    bad = first_difference("lossy put", m.lossy, n, [](size_t i) { return plan::data_byte(1, i); });
    if (bad.empty())
      bad = first_difference("put", m.put, n, [](size_t i) { return plan::data_byte(2, i); });
    if (bad.empty())
      bad = first_difference("get source", m.source, n,
                             [](size_t i) { return plan::data_byte(3, i); });
    if (bad.empty() && *m.word != plan::kOriginal + plan::kAddend) bad = "fetch-add word";
  } else {
    bad = first_difference("lossy put destination", m.lossy, n, poison);
    if (bad.empty()) bad = first_difference("put destination", m.put, n, poison);
    if (bad.empty()) bad = first_difference("get source", m.source, n, poison);
    if (bad.empty() && *m.word != 0) bad = "fetch-add word";
  }
  if (bad.empty() && s.me == kSender) {
    bad = first_difference("get", got.data(), n, [](size_t i) { return plan::data_byte(3, i); });
    if (bad.empty() && fetched != plan::kOriginal) bad = "fetch-add's fetched value";
  } else if (bad.empty()) {
    bad = first_difference("unused get buffer", got.data(), n, poison);
  }
  CHECK_MESSAGE(bad.empty(), "PE ", s.me, ": ", bad);
  REQUIRE(all_ranks(bad.empty()));
  for (void* p : {static_cast<void*>(m.lossy), static_cast<void*>(m.put),
                  static_cast<void*>(m.source), static_cast<void*>(m.word)})
    CHECK(shmem::free(p) == 0);
}
