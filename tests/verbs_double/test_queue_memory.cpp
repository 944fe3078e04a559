// B5 (reviews/2026-12-01-bringup.md): VerbsConfig::queue_memory on the verbs double. BNXT: the
// umems come from the hook, in the sizes create_bnxt_queue computes, are passed to the device
// unmapped and freed at teardown; a hook that gives nothing means host umems, with the reason.
// Ionic: the double does not model parent domains (verbs_double.hpp), so ibv_alloc_parent_domain
// fails as on a provider without them, and the queues fall back to host memory. Whether rdma-core's
// providers take their rings from a parent domain is tested on the real libmlx5 instead
// (tests/emulated_kernel/test_queue_memory.cpp): a model here would only restate our reading.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "queue_arena.hpp"
#include "two_pes.hpp"
#include "verbs_double.hpp"

namespace vd = verbs_double;
using mori::state::RdmaEndpoint;

namespace {

struct Queues {
  bool device = false;
  std::string fallback;
};

// Both PEs on two fake devices of `nic` with `arena`'s hook; what each said of its queues.
std::vector<vd::PeOutcome> open_on(const std::string& nic, vd::Arena& arena, bool give_nothing,
                                   std::vector<Queues>& queues) {
  vd::TwoPes how;
  how.nic = nic;
  how.dv_library = nic == "bnxt" ? MORI_VERBS_DOUBLE_BNXT : MORI_VERBS_DOUBLE_IONIC;
  how.queue_memory = arena.hook(give_nothing);
  queues.assign(2, Queues{});
  how.while_open = [&queues](int rank, mori::rdma::VerbsNetwork& net, vd::PeOutcome&) {
    queues[rank] = {net.queues_in_device_memory(), net.queue_memory_fallback()};
  };
  return vd::open_two_pes(how);
}

}  // namespace

TEST_CASE("queue memory: BNXT umems come from the hook and go back to it") {
  vd::reset({vd::roce_bnxt("bnxt_re0", 1), vd::roce_bnxt("bnxt_re1", 2)});
  vd::Arena arena;
  std::vector<Queues> queues;
  const std::vector<vd::PeOutcome> outcome = open_on("bnxt", arena, false, queues);
  for (int pe = 0; pe < 2; ++pe) {
    CAPTURE(pe);
    vd::check_opened(outcome[pe]);
    CHECK(queues[pe].device);
    CHECK(queues[pe].fallback.empty());
    const RdmaEndpoint& ep = outcome[pe].endpoints[1 - pe];
    CHECK(arena.contains(ep.sq, size_t{ep.sq_wqes} * 48));
    CHECK(arena.contains(ep.cq, size_t{ep.cq_entries} * 32));
    CHECK_FALSE(arena.overlaps(ep.db, 8));  // the doorbell page stays MMIO
  }
  // Per QP (verbs_export_bnxt.cpp, W = 256): the CQ roundup_pow2(32 W) = 8192 bytes, the SQ
  // align(3W * 16 + roundup_pow2(3W) / 2 * 8, 4096) = 16384, the RQ align(3W * 16, 4096) = 12288,
  // each on a page.
  using R = vd::Arena::Request;
  const std::vector<R> want = {{8192, 4096},  {8192, 4096},  {12288, 4096},
                               {12288, 4096}, {16384, 4096}, {16384, 4096}};
  CHECK(arena.requests() == want);
  CHECK(arena.live() == 0);
  vd::check_nothing_alive();
}

TEST_CASE("queue memory: a BNXT hook that gives nothing means host umems, saying why") {
  vd::reset({vd::roce_bnxt("bnxt_re0", 1), vd::roce_bnxt("bnxt_re1", 2)});
  vd::Arena arena;
  std::vector<Queues> queues;
  const std::vector<vd::PeOutcome> outcome = open_on("bnxt", arena, true, queues);
  for (int pe = 0; pe < 2; ++pe) {
    CAPTURE(pe);
    vd::check_opened(outcome[pe]);
    CHECK_FALSE(queues[pe].device);
    CHECK(queues[pe].fallback ==
          "rdma: the queue memory hook gave no memory for 8192 bytes for PE " +
              std::to_string(1 - pe) + " QP 0");
    const RdmaEndpoint& ep = outcome[pe].endpoints[1 - pe];
    CHECK(ep.sq != nullptr);
    CHECK_FALSE(arena.overlaps(ep.sq, 64));
    CHECK_FALSE(arena.overlaps(ep.cq, 64));
  }
  CHECK(arena.live() == 0);
  vd::check_nothing_alive();
}

TEST_CASE("queue memory: Ionic without parent domains falls back to host rings, saying why") {
  vd::reset({vd::roce_ionic("ionic_0", 1), vd::roce_ionic("ionic_1", 2)});
  vd::Arena arena;
  std::vector<Queues> queues;
  const std::vector<vd::PeOutcome> outcome = open_on("ionic", arena, false, queues);
  for (int pe = 0; pe < 2; ++pe) {
    CAPTURE(pe);
    vd::check_opened(outcome[pe]);
    CHECK_FALSE(queues[pe].device);
    CHECK(queues[pe].fallback == "rdma: ibv_alloc_parent_domain(ionic_" + std::to_string(pe) +
                                     ") failed: Operation not supported");
  }
  CHECK(arena.requests().empty());
  vd::check_nothing_alive();
}
