// Wrap stress of the RDMA engine: more than 100,000 work requests per PE from 32 lanes through
// 64-entry send queues (MORI_RDMA_SQ_WQES=64), so every queue wraps hundreds of times under flow
// control while lanes race for slots, ibuf tickets and the CQ. Every value and every counter is
// checked exactly on every PE. Run only as mpi.rdma_<nic>.rdma_stress (software NIC of each
// family). Under a sanitizer a quarter of it (about 26,000 requests per PE, still over 200 wraps
// of each queue): a race or a bad access shows on the first wraps, and the full run took 55 s of
// the TSan lane.
#include <cstdint>
#include <vector>

#include "device_harness.hpp"
#include "rdma_env.hpp"
#include "unit/sanitized.hpp"

namespace shmem = mori::shmem;
using namespace mori::test;

namespace {

constexpr int kBlocks = 2, kThreads = 16, kLanes = kBlocks * kThreads;
constexpr int kIters = kSanitized ? 384 : 1600;  // per lane: a p and an atomic_add each
constexpr int kPutEvery = 64;                    // plus a 128-byte put (beyond every inline limit)
constexpr int kFetchEvery = 16;  // plus a 32-bit fetch-add (emulated on bnxt and ionic)
constexpr int kChunk = 128;
constexpr int kPuts = kIters / kPutEvery, kFetches = kIters / kFetchEvery;
static_assert(kIters % kPutEvery == 0 && kIters % kFetchEvery == 0,
              "every lane's last put and fetch land");

uint64_t value_at(int pe, int lane, int k) {
  return (uint64_t(pe) << 48) ^ (uint64_t(lane) << 32) ^ (uint64_t(k) * 0x9e3779b1u + 1);
}

}  // namespace

TEST_CASE("rdma stress: 100k+ work requests through 64-entry SQs, every value and count exact") {
  ScopedEnv sq("MORI_RDMA_SQ_WQES", "64");
  ScopedEnv qps("MORI_NUM_QP_PER_PE", "2");
  Session s;
  const int to = (s.me + 1) % s.n, from = (s.me + s.n - 1) % s.n;
  auto* slots = static_cast<uint64_t*>(shmem::malloc(sizeof(uint64_t) * kLanes * kIters));
  auto* chunks = static_cast<uint8_t*>(shmem::malloc(kLanes * kPuts * kChunk));
  auto* source = static_cast<uint8_t*>(shmem::malloc(kLanes * kPuts * kChunk));
  auto* counters = static_cast<uint64_t*>(shmem::malloc(2 * sizeof(uint64_t)));
  REQUIRE(slots != nullptr);
  REQUIRE(chunks != nullptr);
  REQUIRE(source != nullptr);
  REQUIRE(counters != nullptr);
  std::memset(slots, 0, sizeof(uint64_t) * kLanes * kIters);
  std::memset(chunks, 0, kLanes * kPuts * kChunk);
  for (int i = 0; i < kLanes * kPuts * kChunk; ++i) source[i] = uint8_t(i * 7 + s.me * 31 + 1);
  counters[0] = counters[1] = 0;
  auto* counter32 = reinterpret_cast<uint32_t*>(&counters[1]);  // the low half of word 1
  std::vector<uint32_t> fetched(kLanes * kFetches, ~0u);
  REQUIRE(shmem::barrier_all() == 0);

  launch({kBlocks}, {kThreads}, [&] {
    const int lane = static_cast<int>(mori::platform::block_rank()) * kThreads +
                     static_cast<int>(mori::platform::thread_rank());
    const int qp = lane % 2;
    for (int k = 0; k < kIters; ++k) {
      shmem::p(&slots[lane * kIters + k], value_at(s.me, lane, k), to, qp);
      shmem::atomic_add(&counters[0], uint64_t{1}, to, qp);
      if (k % kPutEvery == kPutEvery - 1) {
        const int c = lane * kPuts + k / kPutEvery;
        shmem::putmem_nbi(chunks + c * kChunk, source + c * kChunk, kChunk, to, qp);
      }
      if (k % kFetchEvery == 0)
        fetched[lane * kFetches + k / kFetchEvery] = shmem::atomic_fetch_add(counter32, 1u, to, qp);
    }
    shmem::quiet();
  });
  REQUIRE(shmem::barrier_all() == 0);

  size_t bad_slots = 0, bad_bytes = 0;
  for (int lane = 0; lane < kLanes; ++lane)
    for (int k = 0; k < kIters; ++k)
      bad_slots += slots[lane * kIters + k] != value_at(from, lane, k);
  for (int i = 0; i < kLanes * kPuts * kChunk; ++i)
    bad_bytes += chunks[i] != uint8_t(i * 7 + from * 31 + 1);
  CHECK(bad_slots == 0);
  CHECK(bad_bytes == 0);
  CHECK(counters[0] == uint64_t{kLanes} * kIters);
  CHECK(*counter32 == uint32_t{kLanes} * kFetches);
  CHECK(reinterpret_cast<uint32_t*>(&counters[1])[1] == 0);  // the neighbour half untouched
  // The fetched old values of the 32-bit counter are a permutation of 0 .. kLanes * kFetches - 1.
  std::vector<int> seen(kLanes * kFetches, 0);
  size_t bad_fetch = 0;
  for (uint32_t v : fetched) {
    if (v < seen.size())
      bad_fetch += seen[v]++ != 0;
    else
      ++bad_fetch;
  }
  CHECK(bad_fetch == 0);
  const bool ok = bad_slots == 0 && bad_bytes == 0 && counters[0] == uint64_t{kLanes} * kIters &&
                  *counter32 == uint32_t{kLanes} * kFetches && bad_fetch == 0;
  MESSAGE("PE " << s.me << ": " << kLanes * (2 * kIters + kPuts) << " posted requests plus "
                << kLanes * kFetches << " fetching atomics");
  REQUIRE(all_ranks(ok));
  REQUIRE(shmem::free(counters) == 0);
  REQUIRE(shmem::free(source) == 0);
  REQUIRE(shmem::free(chunks) == 0);
  REQUIRE(shmem::free(slots) == 0);
}
