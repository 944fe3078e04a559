// Device collectives (mori/shmem/collectives.hpp) over P2P and over RDMA, at 2, 3 and 4 PEs: each
// collective in each scope on the world and on strided teams (the evens and the odds, which run at
// the same time), at sizes on both sides of broadcast's pull threshold, every element and every
// guard byte of every PE's dest checked. The reductions are in device_collectives_reduce.cpp; the
// errors a collective traps with are here too.
#include <cstdint>
#include <string>
#include <vector>

#include "collectives_helpers.hpp"

namespace shmem = mori::shmem;
using namespace mori::test;
using mori::Block, mori::Thread, mori::Warp;
using shmem::Team;

namespace {

constexpr int kMaxPes = 4;
// Elements per block: one, a few, and (4-byte elements) past broadcast's 16 KiB pull threshold.
constexpr size_t kSizes[] = {1, 7, 4500};
constexpr size_t kCases = std::size(kSizes);
constexpr size_t kMaxBlock = 4500 + kMaxPes;  // collect's largest block: kSizes[2] + member index
using Elem = uint32_t;

// What member `from` sends as its element i: distinct per world PE and index.
Elem sent(int from_world_pe, size_t i) { return value_of<Elem>(from_world_pe, i) | (i << 8); }

// collect's count for member i in case z: 0 or 1 in case 0 (so some members send nothing), else
// the case's size plus i (every member a different count); in the last case member 1 sends 3, so
// that over P2P some blocks fit a mailbox and the others do not.
size_t collect_count(size_t z, int i) {
  if (z == 0) return static_cast<size_t>(i % 2);
  return z + 1 == kCases && i == 1 ? 3 : kSizes[z] + i;
}

struct Buffers {
  CheckedSlots<Elem> dest{kCases, kMaxPes* kMaxBlock * 2};
  GuardedSlots<Elem> src{kCases, kMaxPes* kMaxBlock * 3};
  // Every source slot holds sent(me, i) at element i (the collectives read, never write it).
  void fill_sources() {
    for (size_t z = 0; z < kCases; ++z)
      for (size_t i = 0; i < kMaxPes * kMaxBlock * 3; ++i) src.slot(z)[i] = sent(shmem::my_pe(), i);
  }
};

enum class Op { kBroadcast, kFcollect, kCollect, kAlltoall, kAlltoalls };
constexpr ptrdiff_t kDst = 2, kSst = 3;  // alltoalls' strides

// Runs `op` in scope S on `team` for every size, each case into its own dest slot, in one launch;
// then checks every PE's dest against what the op must leave there.
template <typename S>
void run(Op op, Team team, Buffers& b) {
  const std::vector<int> pes = members_of(team);
  const int size = static_cast<int>(pes.size()), me = shmem::team_my_pe(team);
  REQUIRE(size <= kMaxPes);
  b.dest.reset();
  b.fill_sources();
  REQUIRE(shmem::barrier_all() == 0);  // no member pushes into a dest before it is reset
  launch({1}, block_for<S>(), [&] {
    for (size_t z = 0; z < kCases; ++z) {
      Elem *d = b.dest.slot(z), *s = b.src.slot(z);
      const size_t n = kSizes[z];
      switch (op) {
        case Op::kBroadcast:
          shmem::broadcast<S>(team, d, s, n, static_cast<int>(z) % size);
          break;
        case Op::kFcollect:
          shmem::fcollect<S>(team, d, s, n);
          break;
        case Op::kCollect:
          shmem::collect<S>(team, d, s, collect_count(z, me));
          break;
        case Op::kAlltoall:
          shmem::alltoall<S>(team, d, s, n);
          break;
        case Op::kAlltoalls:
          shmem::alltoalls<S>(team, d, s, kDst, kSst, n);
          break;
      }
    }
  });
  for (size_t z = 0; z < kCases; ++z) {
    const size_t n = kSizes[z];
    size_t offset = 0;  // collect: where member i's block starts
    for (int i = 0; i < size; ++i) {
      const int from = pes[i];
      for (size_t k = 0; k < n; ++k) {
        switch (op) {
          case Op::kBroadcast:
            if (i == static_cast<int>(z) % size) b.dest.expect(z, k, sent(from, k));
            break;
          case Op::kFcollect:
            b.dest.expect(z, i * n + k, sent(from, k));
            break;
          case Op::kAlltoall:
            b.dest.expect(z, i * n + k, sent(from, me * n + k));
            break;
          case Op::kAlltoalls:
            b.dest.expect(z, (i * n + k) * kDst, sent(from, (me * n + k) * kSst));
            break;
          case Op::kCollect:
            break;
        }
      }
      if (op == Op::kCollect) {
        for (size_t k = 0; k < collect_count(z, i); ++k)
          b.dest.expect(z, offset + k, sent(from, k));
        offset += collect_count(z, i);
      }
    }
  }
  // The text in the comparison, so that a failure prints it (mpi_main prints the expression).
  const std::string where = "op " + std::to_string(static_cast<int>(op)) + " in " + S::kName +
                            " scope on team " + std::to_string(team) + " of " +
                            std::to_string(size);
  CHECK(where + ": " + b.dest.check() == where + ": ");
}

template <typename S>
void run_all(Team team, Buffers& b) {
  for (Op op : {Op::kBroadcast, Op::kFcollect, Op::kCollect, Op::kAlltoall, Op::kAlltoalls})
    run<S>(op, team, b);
}

}  // namespace

TEST_CASE_TEMPLATE("broadcast, fcollect, collect, alltoall(s): every element on every PE", S,
                   Thread, Warp, Block) {
  Session s;
  Buffers b;
  run_all<S>(shmem::kTeamWorld, b);
  Halves teams;
  run_all<S>(teams.mine(), b);
  // The PEs of this PE's local index on every node (DeepEP's RDMA stage): on two nodes, PEs of
  // different nodes only; on one node, this PE alone.
  if (shmem::team_n_pes(shmem::kTeamSameLocalIndex) > 0) run_all<S>(shmem::kTeamSameLocalIndex, b);
  REQUIRE(shmem::barrier_all() == 0);
}

// Flagged broadcasts let the root run ahead of the members it sends to (coll/flags.hpp): here every
// PE but world PE 0 dawdles before each call, and PE 0 is the root of the last 2 * sets calls, so it
// runs ahead as far as the mailbox sets allow. Each call has its own dest slot, whose value must
// reach every member; then PE 0 broadcasts enough to be a push into the last call's slot, which must
// wait until the slow members have finished filling it from their mailboxes; a flagged fcollect
// follows. Once with a payload that takes lines, once with one that takes boxes.
template <typename S>
void run_ahead(Session& s, size_t small, int sets) {
  const int ahead = 2 * sets, calls = ahead + 16;
  constexpr size_t kPush = 600;  // 2400 bytes are a push
  auto root = [&](int c) { return c < calls - ahead ? c % s.n : 0; };
  const size_t slots = static_cast<size_t>(calls) + 1;
  CheckedSlots<Elem> dest{slots, kPush};
  GuardedSlots<Elem> src{slots, kPush};
  for (int c = 0; c < calls; ++c)
    for (size_t k = 0; k < small; ++k) src.slot(c)[k] = sent(s.me, k) + (c << 20);
  for (size_t k = 0; k < kPush; ++k) src.slot(calls)[k] = sent(s.me, k);
  REQUIRE(shmem::barrier_all() == 0);
  launch({1}, block_for<S>(), [&] {
    for (int c = 0; c < calls; ++c) {
      if (s.me != 0) {
        const uint64_t until = mori::platform::clock_ns() + 20000;
        while (mori::platform::clock_ns() < until) {
        }
      }
      shmem::broadcast<S>(shmem::kTeamWorld, dest.slot(c), src.slot(c), small, root(c));
    }
    shmem::broadcast<S>(shmem::kTeamWorld, dest.slot(calls - 1), src.slot(calls), kPush, 0);
    shmem::fcollect<S>(shmem::kTeamWorld, dest.slot(calls), src.slot(calls), 1);
  });
  for (int c = 0; c < calls - 1; ++c)
    for (size_t k = 0; k < small; ++k) dest.expect(c, k, sent(root(c), k) + (c << 20));
  for (size_t k = 0; k < kPush; ++k) dest.expect(calls - 1, k, sent(0, k));
  for (int i = 0; i < s.n; ++i) dest.expect(calls, i, sent(i, 0));
  CHECK(dest.check() == "");
  REQUIRE(shmem::barrier_all() == 0);
}

TEST_CASE_TEMPLATE("flagged broadcasts run ahead without losing a call; a push after them waits", S,
                   Thread, Block) {
  namespace coll = mori::shmem::detail::coll;
  Session s;
  const uint64_t scratch = shmem::globalGpuStates.team_scratch_bytes;
  constexpr size_t kLine = 3, kBox = 40;  // 12 bytes take lines, 160 bytes a box
  static_assert(coll::kFlagBytes + kLine * sizeof(Elem) <= coll::kLineBytes);
  static_assert(coll::kFlagBytes + kBox * sizeof(Elem) > coll::kLineBytes);
  const int lines = static_cast<int>(coll::line_sets(scratch, s.n));
  REQUIRE(lines >= static_cast<int>(coll::kMinLineSets));  // the default area has lines
  REQUIRE(coll::kFlagBytes + kBox * sizeof(Elem) <= coll::box_bytes(scratch, s.n));
  SUBCASE("lines") { run_ahead<S>(s, kLine, lines); }
  SUBCASE("boxes") { run_ahead<S>(s, kBox, static_cast<int>(coll::kBoxSets)); }
}

TEST_CASE("collectives trap on a root outside the team and on a team not valid here") {
  Session s;
  Buffers b;
  Elem *d = b.dest.slot(0), *src = b.src.slot(0);
  std::string err =
      launch_error({1}, {1}, [&] { shmem::broadcast(shmem::kTeamWorld, d, src, 1, s.n); });
  CHECK_MESSAGE(
      err.find("broadcast: root " + std::to_string(s.n) + " is not a PE of team 0, which has " +
               std::to_string(s.n) + " PEs") != std::string::npos,
      err);
  shmem::globalGpuStates.error->code = 0;
  err = launch_error({1}, {1}, [&] { shmem::fcollect(Team{40}, d, src, 1); });
  CHECK_MESSAGE(err.find("fcollect: team 40 is not a valid team on PE " + std::to_string(s.me)) !=
                    std::string::npos,
                err);
  shmem::globalGpuStates.error->code = 0;
  REQUIRE(shmem::barrier_all() == 0);
}

TEST_CASE("a collective that one member never calls times out on the others, naming the team") {
  ScopedEnv timeout("MORI_SHMEM_TIMEOUT_MS", "300");
  Session s;
  Buffers b;
  Elem *d = b.dest.slot(0), *src = b.src.slot(0);
  if (s.me != 0) {  // PE 0 launches nothing
    // Flagged over P2P (a member's flag never comes), a push and a barrier over RDMA.
    const std::string err =
        launch_error({1}, {1}, [&] { shmem::fcollect(shmem::kTeamWorld, d, src, 1); });
    CHECK_MESSAGE(err.find("fcollect timed out after 300 ms: ") != std::string::npos, err);
    CHECK_MESSAGE(err.find(" of team 0 ") != std::string::npos, err);
    shmem::globalGpuStates.error->code = 0;
  }
  // The team's counts and calls are out of step now: this session ends here.
  MPI_Barrier(MPI_COMM_WORLD);
}
