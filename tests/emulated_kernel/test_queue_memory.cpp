// B5 (reviews/2026-12-01-bringup.md): VerbsConfig::queue_memory on rdma-core's real libmlx5 over
// the emulated kernel. The hook allocates from a test arena of host memory standing in for VRAM;
// what it is asked for, and which rings end up in it, is libmlx5's own doing (its parent-domain
// allocators: providers/mlx5/buf.c mlx5_alloc_buf_custom, dbrec.c mlx5_alloc_dbrec), not a
// model of ours. Then the two ways back to host memory: the kernel refusing to pin the arena (the
// emulated kernel's MORI_EMU_UNPINNABLE, as ib_umem_get refuses VRAM without a peer-memory
// module) and a hook that gives no memory. Every case runs the traffic kernel of test_runtime.cpp.
//
// test_runtime.cpp is included, not linked, for its PEs, kernel and checks (an anonymous
// namespace); its own two cases come along, and ctest runs them from mori_emulated_kernel_tests.
#include <cstdlib>

#include "queue_arena.hpp"
#include "test_runtime.cpp"  // NOLINT(bugprone-suspicious-include)

namespace {

using verbs_double::Arena;

// What each PE's open said about its queues, and what it asked map_to_device to map.
struct Seen {
  bool device = false;
  std::string fallback;
  struct Mapped {
    const void* host;
    size_t bytes;
    bool mmio;
  };
  std::vector<Mapped> mapped;
};

// Both PEs with the arena's hook and a map_to_device that records (the identity otherwise), with
// traffic.
std::vector<Pe> run_on(Arena& arena, bool give_nothing, std::vector<Seen>& seen) {
  seen.assign(kPes, Seen{});
  auto configure = [&](int rank, rdma::VerbsConfig& c) {
    c.queue_memory = arena.hook(give_nothing);
    c.map_to_device = [&seen, rank](void* host, size_t bytes, bool mmio, void** device) {
      seen[rank].mapped.push_back({host, bytes, mmio});
      *device = host;
      return mori::Status{};
    };
  };
  auto inspect = [&](int rank, const rdma::VerbsNetwork& net) {
    seen[rank].device = net.queues_in_device_memory();
    seen[rank].fallback = net.queue_memory_fallback();
  };
  return run(true, configure, inspect);
}

// Each PE's queues in host memory, the arena untouched by its rings and with nothing left.
void check_fell_back(const std::vector<Pe>& pes, const std::vector<Seen>& seen, Arena& arena,
                     const std::string& reason_tail) {
  check_traffic(pes);
  for (int me = 0; me < kPes; ++me) {
    CAPTURE(me);
    const mori::state::RdmaEndpoint& ep = pes[me].eps[1 - me];
    CHECK_FALSE(seen[me].device);
    CHECK(seen[me].fallback == "rdma: ibv_create_cq_ex(parent domain) for PE " +
                                   std::to_string(1 - me) + " QP 0 failed: " + reason_tail);
    CHECK_FALSE(arena.overlaps(ep.sq, 64));
    CHECK_FALSE(arena.overlaps(ep.cq, 64));
    CHECK_FALSE(arena.overlaps(ep.dbr, 8));
    CHECK_FALSE(arena.overlaps(ep.cq_dbr, 8));
  }
  CHECK(arena.live() == 0);
}

}  // namespace

TEST_CASE("emulated_kernel: libmlx5 takes every ring and doorbell record from the queue hook") {
  mori::test::DeviceStateGuard state(20'000'000'000);
  Arena arena;
  std::vector<Seen> seen;
  const std::vector<Pe> pes = run_on(arena, false, seen);
  check_traffic(pes);
  for (int me = 0; me < kPes; ++me) {
    CAPTURE(me);
    const mori::state::RdmaEndpoint& ep = pes[me].eps[1 - me];
    CHECK(seen[me].device);
    CHECK(seen[me].fallback.empty());
    CHECK(arena.contains(ep.sq, size_t{ep.sq_wqes} * 64));
    CHECK(arena.contains(ep.cq, size_t{ep.cq_entries} * 64));
    CHECK(arena.contains(ep.dbr, 8));
    CHECK(arena.contains(ep.cq_dbr, 8));
    CHECK_FALSE(arena.overlaps(ep.db, 8));  // the BlueFlame register stays MMIO
    // map() passes the hook's memory through: only the doorbell and the ibufs are mapped.
    for (const Seen::Mapped& m : seen[me].mapped) CHECK_FALSE(arena.overlaps(m.host, m.bytes));
    size_t mmio = 0;
    for (const Seen::Mapped& m : seen[me].mapped) mmio += m.mmio;
    CHECK(mmio == 1);
  }
  // Per PE, libmlx5 asks (rdma-core 44, providers/mlx5): the CQ ring, align(512 CQEs * 64,
  // page) bytes on a page (cq.c mlx5_alloc_cq_buf); the QP ring, 512 WQEBBs * 64 and no RQ,
  // aligned to max(64-byte stride, roundup_pow2(32768) / MLX5_QPC_PAGE_OFFSET_QUANTA = 512)
  // (verbs.c mlx5_set_custom_qp_alignment); and 8 bytes, 8-aligned, for each doorbell record
  // (dbrec.c mlx5_alloc_dbrec).
  using R = verbs_double::Arena::Request;
  const std::vector<R> want = {{8, 8},       {8, 8},       {8, 8},        {8, 8},
                               {32768, 512}, {32768, 512}, {32768, 4096}, {32768, 4096}};
  CHECK(arena.requests() == want);
  CHECK(arena.live() == 0);  // libmlx5 freed each through the hook when its object went
}

TEST_CASE("emulated_kernel: a kernel that cannot pin the queue hook's memory means host queues") {
  mori::test::DeviceStateGuard state(20'000'000'000);
  Arena arena;
  ::setenv("MORI_EMU_UNPINNABLE", arena.range().c_str(), 1);
  std::vector<Seen> seen;
  const std::vector<Pe> pes = run_on(arena, false, seen);
  ::unsetenv("MORI_EMU_UNPINNABLE");
  check_fell_back(pes, seen, arena, "Bad address");
}

TEST_CASE("emulated_kernel: a queue hook that gives no memory means host queues, saying so") {
  mori::test::DeviceStateGuard state(20'000'000'000);
  Arena arena;
  std::vector<Seen> seen;
  const std::vector<Pe> pes = run_on(arena, true, seen);
  // rdma-core 44's mlx5_create_cq sets no errno when the CQ ring's allocation fails (verbs.c:
  // "goto err_spl" after mlx5_alloc_cq_buf), so the call's text is verbs_error's EIO; the reason
  // after it is ours.
  check_fell_back(pes, seen, arena,
                  "Input/output error; the queue memory hook gave no memory for 32768 bytes");
}
