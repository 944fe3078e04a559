// Zero-length RMA and collectives (OpenSHMEM 1.5, section 9.1: a call that moves no data may pass
// any address, null included), named after the OpenSHMEM test suite's zero_comm and
// nop_collectives: every form with a count of 0, to and from null and from memory that is neither
// in the heap nor registered, on every PE, over P2P and (as mpi.rdma_<nic>.device_zero_length)
// the software NIC of each family. None may trap, none may touch memory, and a zero-length
// put-with-signal still delivers its signal.
#include <cstdint>
#include <string>

#include "device_harness.hpp"

namespace shmem = mori::shmem;
using namespace mori::test;
using mori::Block, mori::Thread;

namespace {

constexpr uint64_t kCanary = 0x5a5a5a5a5a5a5a5aull;

// Symmetric words that no call here may write: the canary, and the signal word (which only the
// signals write).
struct Words {
  uint64_t canary[8];
  uint64_t signal;
};

Words* symmetric_words() {
  auto* w = static_cast<Words*>(shmem::malloc(sizeof(Words)));
  REQUIRE(w != nullptr);
  for (uint64_t& c : w->canary) c = kCanary;
  w->signal = 0;
  REQUIRE(shmem::barrier_all() == 0);
  return w;
}

void check_untouched(const Words* w) {
  for (uint64_t c : w->canary) CHECK(c == kCanary);
}

}  // namespace

TEST_CASE_TEMPLATE("zero_comm: every RMA form with 0 bytes, to null or unregistered memory", S,
                   Thread, Block) {
  Session s;
  Words* w = symmetric_words();
  int local = 7;  // on the stack: neither in the heap nor registered
  const int n = s.n;
  const std::string err = launch_error({1}, block_for<S>(), [&] {
    for (int pe = 0; pe < n; ++pe) {
      for (void* where : {static_cast<void*>(nullptr), static_cast<void*>(&local)}) {
        int* typed = static_cast<int*>(where);
        shmem::putmem<S>(where, where, 0, pe);
        shmem::putmem_nbi<S>(where, where, 0, pe);
        shmem::getmem<S>(where, where, 0, pe);
        shmem::getmem_nbi<S>(where, where, 0, pe);
        shmem::put<S>(typed, typed, 0, pe);
        shmem::put_nbi<S>(typed, typed, 0, pe);
        shmem::get<S>(typed, typed, 0, pe);
        shmem::get_nbi<S>(typed, typed, 0, pe);
        shmem::iput<S>(typed, typed, 1, 1, 0, pe);
        shmem::iget<S>(typed, typed, 2, 3, 0, pe);
        shmem::put_signal_nbi<S>(typed, typed, 0, &w->signal, 1, shmem::SIGNAL_ADD, pe);
        shmem::putmem_signal<S>(where, where, 0, &w->signal, 1, shmem::SIGNAL_ADD, pe);
      }
    }
    shmem::quiet();
  });
  CHECK_MESSAGE(err == "", err);
  REQUIRE(shmem::barrier_all() == 0);
  // Each PE's two signals per address kind reached every PE: 4 from each.
  CHECK(w->signal == static_cast<uint64_t>(4 * n));
  check_untouched(w);
  CHECK(local == 7);
  REQUIRE(shmem::free(w) == 0);
}

TEST_CASE("zero_comm: a zero-length call still checks its PE") {
  Session s;
  const int bad = s.n;
  const std::string err = launch_error({1}, {1}, [&] { shmem::putmem(nullptr, nullptr, 0, bad); });
  CHECK_MESSAGE(err.find("putmem: PE " + std::to_string(bad) + " is out of range [0, " +
                         std::to_string(s.n) + ")") != std::string::npos,
                err);
  shmem::globalGpuStates.error->code = 0;
}

TEST_CASE_TEMPLATE("nop_collectives: every collective with 0 elements, on null, then a real one", S,
                   Thread, Block) {
  Session s;
  Words* w = symmetric_words();
  auto* value = static_cast<uint64_t*>(shmem::malloc(2 * sizeof(uint64_t)));  // dest, source
  REQUIRE(value != nullptr);
  value[0] = 0;
  value[1] = s.me == 0 ? 42 : 0;
  REQUIRE(shmem::barrier_all() == 0);
  const shmem::Team world = shmem::kTeamWorld;
  const std::string err = launch_error({1}, block_for<S>(), [&] {
    int* none = nullptr;
    shmem::broadcast<S>(world, none, none, 0, 0);
    shmem::fcollect<S>(world, none, none, 0);
    shmem::collect<S>(world, none, none, 0);
    shmem::alltoall<S>(world, none, none, 0);
    shmem::alltoalls<S>(world, none, none, 1, 1, 0);
    shmem::broadcastmem<S>(world, nullptr, nullptr, 0, 0);
    shmem::fcollectmem<S>(world, nullptr, nullptr, 0);
    shmem::collectmem<S>(world, nullptr, nullptr, 0);
    shmem::alltoallmem<S>(world, nullptr, nullptr, 0);
    shmem::sum_reduce<S>(world, none, none, 0);
    shmem::max_reducescatter<S>(world, none, none, 0);
    // The team's counts are still in step: a real broadcast after them.
    shmem::broadcast<S>(world, value, value + 1, 1, 0);
    shmem::barrier_all<S>();
  });
  CHECK_MESSAGE(err == "", err);
  CHECK(value[0] == 42);
  check_untouched(w);
  REQUIRE(shmem::barrier_all() == 0);
  REQUIRE(shmem::free(value) == 0);
  REQUIRE(shmem::free(w) == 0);
}
