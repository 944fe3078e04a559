// Host API names called from a host-backend kernel lane (src/runtime/host_only.hpp). C++ prefers
// the host API's non-template function, so a kernel's barrier_all() or my_pe() reaches the host
// API: it must do what the device function does (as clang's host/device overloading picks it on
// the GPU), and every host-only call must fail the launch, naming itself.
//
// The queries run against a made-up device state and no runtime: the host forms would answer -1
// ("not initialised"), the device forms answer from the state. barrier_all runs in a real session:
// the host form is the bootstrap's barrier, which no MORI_SHMEM_TIMEOUT_MS covers.
#include <string>

#include "device_harness.hpp"
#include "mori/shmem/barrier.hpp"

namespace shmem = mori::shmem;
namespace state = mori::state;
using namespace mori::test;

namespace {

// A device state without a runtime: PE 1 of 3, PE 0 mapped over P2P, a world team and a team of
// world PEs 1 and 2. The previous state comes back when it ends.
struct MadeUpState {
  alignas(64) uint64_t heap[64] = {};
  alignas(64) uint64_t peer_heap[64] = {};
  uint8_t transports[3] = {
      state::transport_entry(state::Transport::kP2P, state::Nic::kNone),
      state::transport_entry(state::Transport::kP2P, state::Nic::kNone),
      state::transport_entry(state::Transport::kUnreachable, state::Nic::kNone)};
  uint64_t peer_bases[3] = {reinterpret_cast<uint64_t>(peer_heap), reinterpret_cast<uint64_t>(heap),
                            0};
  uint64_t remote_bases[3] = {};
  uint32_t rkeys[3] = {};
  state::RegisteredRegion regions[1] = {};  // regions[-1] is the heap
  state::TeamDescriptor teams[4] = {{0, 1, 3, 1}, {}, {}, {1, 1, 2, 0}};
  state::GpuStates saved;

  MadeUpState() : saved(shmem::globalGpuStates) {
    regions[0] = {
        reinterpret_cast<uint64_t>(heap), sizeof heap, peer_bases, remote_bases, rkeys, 0, 0};
    state::GpuStates& s = shmem::globalGpuStates;
    s = state::GpuStates{};
    s.rank = 1;
    s.n_pes = 3;
    s.num_qp_per_pe = 1;
    s.heap_base = reinterpret_cast<uint64_t>(heap);
    s.heap_size = sizeof heap;
    s.transports = transports;
    s.amo_transports = transports;
    s.regions = regions + 1;
    s.teams = teams;
    s.max_teams = 4;
  }
  ~MadeUpState() { shmem::globalGpuStates = saved; }
};

// Runs `kernel` on one lane: the launch's failure text, "" when it succeeded.
template <typename K>
std::string one_lane(K&& kernel) {
  return launch_error({1}, {1}, kernel);
}

}  // namespace

TEST_CASE("lane calls: my_pe and n_pes in a kernel read the device state") {
  MadeUpState made_up;
  int me = -2, n = -2;
  CHECK(one_lane([&] {
          me = shmem::my_pe();
          n = shmem::n_pes();
        }) == "");
  CHECK(me == 1);
  CHECK(n == 3);
  CHECK(shmem::my_pe() == -1);  // host code still gets the host API: no runtime
}

TEST_CASE("lane calls: team queries in a kernel read the device's team table") {
  MadeUpState made_up;
  int world_me = -2, world_n = -2, sub_me = -2, sub_n = -2, to_sub = -2, from_sub = -2;
  CHECK(one_lane([&] {
          world_me = shmem::team_my_pe(shmem::kTeamWorld);
          world_n = shmem::team_n_pes(shmem::kTeamWorld);
          sub_me = shmem::team_my_pe(3);
          sub_n = shmem::team_n_pes(3);
          to_sub = shmem::team_translate_pe(shmem::kTeamWorld, 2, 3);
          from_sub = shmem::team_translate_pe(3, 0, shmem::kTeamWorld);
        }) == "");
  CHECK(world_me == 1);
  CHECK(world_n == 3);
  CHECK(sub_me == 0);
  CHECK(sub_n == 2);
  CHECK(to_sub == 1);
  CHECK(from_sub == 1);
  CHECK(shmem::team_my_pe(shmem::kTeamWorld) == -1);
}

TEST_CASE("lane calls: ptr_p2p in a kernel translates through the device state") {
  MadeUpState made_up;
  const uint64_t mine = reinterpret_cast<uint64_t>(&made_up.heap[5]);
  uint64_t to_0 = 1, to_2 = 1, wrong_caller = 1;
  CHECK(one_lane([&] {
          to_0 = shmem::ptr_p2p(mine, 1, 0);
          to_2 = shmem::ptr_p2p(mine, 1, 2);
          wrong_caller = shmem::ptr_p2p(mine, 0, 0);
        }) == "");
  CHECK(to_0 == reinterpret_cast<uint64_t>(&made_up.peer_heap[5]));
  CHECK(to_2 == 0);  // PE 2 is not mapped here
  CHECK(wrong_caller == 0);
  CHECK(shmem::ptr_p2p(mine, 1, 0) == 0);  // host code: no runtime
}

TEST_CASE("lane calls: a host-only call in a kernel fails the launch, naming it") {
  const std::string tail = ": a host API call, made from a kernel lane (call it from host code";
  auto fails = [&](const char* name, auto&& call) {
    const std::string err = one_lane(call);
    CHECK_MESSAGE(err.find(std::string(name) + tail) != std::string::npos, name, ": ", err);
  };
  int x = 0;
  shmem::Ctx ctx{};
  shmem::Team team = shmem::kTeamInvalid;
  fails("init", [] { shmem::init(); });
  fails("finalize", [] { shmem::finalize(); });
  fails("malloc", [] { shmem::malloc(64); });
  fails("calloc", [] { shmem::calloc(1, 64); });
  fails("realloc", [] { shmem::realloc(nullptr, 64); });
  fails("free", [] { shmem::free(nullptr); });
  fails("buffer_register", [&] { shmem::buffer_register(&x, sizeof x); });
  fails("buffer_deregister", [&] { shmem::buffer_deregister(&x, sizeof x); });
  fails("team_split_strided",
        [&] { shmem::team_split_strided(shmem::kTeamWorld, 0, 1, 1, nullptr, 0, &team); });
  fails("team_destroy", [&] { shmem::team_destroy(team); });
  fails("module_init", [] { shmem::module_init(nullptr); });
  fails("num_qp_per_pe", [] { shmem::num_qp_per_pe(); });
  fails("addr_accessible", [&] { shmem::addr_accessible(&x, 0); });
  fails("last_error", [] { shmem::last_error(); });
  fails("device_error", [] { shmem::device_error(); });
  fails("putmem_on_stream", [&] { shmem::putmem_on_stream(&x, &x, sizeof x, 0, nullptr); });
  fails("barrier_all_on_stream", [] { shmem::barrier_all_on_stream(nullptr); });
  fails("stream_synchronize", [] { shmem::stream_synchronize(nullptr); });
  // The device's ctx_create has no default scope, so on the GPU this call does not compile.
  fails("ctx_create", [&] { shmem::ctx_create(0, &ctx); });
  fails("ctx_destroy", [&] { shmem::ctx_destroy(ctx); });
}

TEST_CASE("lane calls: barrier_all() in a kernel is the device barrier of every PE") {
  Session s;
  const uint64_t* epoch = shmem::globalGpuStates.internal + mori::state::kBarrierEpoch;
  const uint64_t before = *epoch;
  CHECK(launch_error({1}, {1}, [] { shmem::barrier_all(); }) == "");
  CHECK(*epoch == before + 1);  // the host's barrier would leave the device's count alone
  REQUIRE(shmem::barrier_all() == 0);
}

TEST_CASE("lane calls: barrier_all() in a kernel that one PE skips times out, naming the count") {
  ScopedEnv timeout("MORI_SHMEM_TIMEOUT_MS", "300");
  Session s;
  REQUIRE(shmem::barrier_all() == 0);
  if (s.me != 0) {  // PE 0 launches nothing; the bootstrap's barrier would wait for it forever
    const std::string err = launch_error({1}, {1}, [] { shmem::barrier_all(); });
    CHECK_MESSAGE(err.find("barrier_all timed out after 300 ms: ") != std::string::npos, err);
    CHECK_MESSAGE(err.find(" of " + std::to_string(s.n) + " PEs arrived (epoch 1, PE " +
                           std::to_string(s.me) + ")") != std::string::npos,
                  err);
    shmem::globalGpuStates.error->code = 0;
  }
  // The device counts are out of step now: this session ends here.
  MPI_Barrier(MPI_COMM_WORLD);
}
