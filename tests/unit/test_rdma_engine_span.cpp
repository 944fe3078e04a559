// RdmaEngine::post_span (transport/rdma_engine.hpp): a transfer above the largest message goes out
// as consecutive WQEs of one batch, for every provider against the software NIC (SoftNic, through
// softnic_rig.hpp's Rig). The largest message is a template argument, 16 bytes here, so that the
// split runs on buffers of a few hundred bytes where a put would need more than 1 GiB.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "mori/state/gpu_states.hpp"
#include "providers.hpp"
#include "softnic_rig.hpp"

namespace {

using namespace mori::test::softnic_rig;

constexpr uint64_t kPiece = 16;  // the largest message in these tests
constexpr uint64_t wqes_of(uint64_t bytes) {
  return bytes <= kPiece ? 1 : (bytes - 1) / kPiece + 1;
}

}  // namespace

// Each of 8 lanes writes, then reads back, transfers of 1 to 200 bytes (1 to 13 WQEs each, the
// boundaries 16, 17, 32 and 33 among them) through a 64-entry SQ; every byte lands, none past a
// transfer, and the queue counts exactly one WQE per piece.
TEST_CASE_TEMPLATE("engine: post_span splits a transfer into messages of at most the largest", P,
                   MORI_PROVIDERS) {
  using Engine = RdmaEngine<P>;
  constexpr int kLanes = 8, kRounds = 24;
  constexpr uint64_t kSlot = 208;  // 200 bytes and a guard
  constexpr size_t kSlots = size_t{kLanes} * kRounds, kSlotWords = kSlot / 8;
  const auto bytes_of = [](int lane, int round) -> uint64_t {
    const uint64_t edges[] = {1, 15, 16, 17, 31, 32, 33, 200};
    return round < 8 ? edges[(lane + round) % 8] : 1 + (lane * 37 + round * 11) % 200;
  };
  // This process's memory: the sources, then where the reads land. PE 1's: the write targets.
  constexpr size_t kSrc = 0, kBack = kSlots * kSlotWords;
  Rig<P> rig(Rig<P>::no_env(),
             RigShape{.heap_words = kSlots * kSlotWords, .local_words = 2 * kSlots * kSlotWords});
  DeviceState state(20'000'000'000);  // a hang fails instead of blocking
  auto* src = reinterpret_cast<uint8_t*>(&rig.local[kSrc]);
  auto* back = reinterpret_cast<uint8_t*>(&rig.local[kBack]);
  const auto* dst = reinterpret_cast<const uint8_t*>(rig.heap.data());
  for (size_t i = 0; i < kSlots * kSlot; ++i) src[i] = static_cast<uint8_t>(i * 29 + 3);
  std::fill_n(back, kSlots * kSlot, 0xee);
  uint64_t expected_wqes = 0;
  for (int lane = 0; lane < kLanes; ++lane)
    for (int round = 0; round < kRounds; ++round)
      expected_wqes += 2 * wqes_of(bytes_of(lane, round));
  rig.start();

  auto status = launch({1}, {kLanes}, [&] {
    const int lane = plat::thread_rank();
    for (int round = 0; round < kRounds; ++round) {
      const size_t at = (size_t{static_cast<size_t>(lane)} * kRounds + round) * kSlotWords;
      const uint64_t bytes = bytes_of(lane, round);
      Engine::template post_span<kPiece>(
          rig.ep, rig.rdma(Opcode::kWrite, rig.remote(at), kSrc + at, 0), bytes, kPe);
      Engine::quiet(rig.ep, kPe);  // the write has landed before it is read back
      Engine::template post_span<kPiece>(
          rig.ep, rig.rdma(Opcode::kRead, rig.remote(at), kBack + at, 0), bytes, kPe);
    }
    Engine::quiet(rig.ep, kPe);
  });
  rig.nic->stop();
  REQUIRE_MESSAGE(rig.nic->qp_error(0).empty(), rig.nic->qp_error(0));
  REQUIRE_MESSAGE(status.ok(), status.message());
  CHECK(state.record.code == 0);
  CHECK(rig.ep.submitted == expected_wqes);
  CHECK(rig.ep.completed == expected_wqes);
  CHECK(rig.nic->executed() == expected_wqes);
  size_t bad_written = 0, bad_read = 0;
  for (int lane = 0; lane < kLanes; ++lane) {
    for (int round = 0; round < kRounds; ++round) {
      const size_t at = (size_t{static_cast<size_t>(lane)} * kRounds + round) * kSlot;
      const uint64_t bytes = bytes_of(lane, round);
      for (uint64_t b = 0; b < kSlot; ++b) {
        bad_written += dst[at + b] != (b < bytes ? src[at + b] : 0);
        bad_read += back[at + b] != (b < bytes ? src[at + b] : 0xee);
      }
    }
  }
  CHECK(bad_written == 0);
  CHECK(bad_read == 0);
}

// 64 pieces cannot be in flight in a 64-entry SQ (at most 63): the post fails naming the batch
// instead of waiting for room that never comes, and nothing is posted.
TEST_CASE_TEMPLATE("engine: a split batch larger than the SQ fails with its size", P,
                   MORI_PROVIDERS) {
  using Engine = RdmaEngine<P>;
  Rig<P> rig;
  // Without the check, flow control would wait for the room until this deadline.
  DeviceState state(2'000'000'000);
  constexpr uint64_t kBytes = 64 * kPiece;
  std::fill_n(rig.local.begin(), kBytes / 8, 0x0101010101010101ull);
  rig.start();
  auto status = launch({1}, {1}, [&] {
    Engine::template post_span<kPiece>(rig.ep, rig.rdma(Opcode::kWrite, rig.remote(0), 0, 0),
                                       kBytes, kPe);
  });
  rig.nic->stop();
  REQUIRE(!status.ok());
  const std::string expected =
      "RDMA: a batch of 64 WQEs cannot fit in an SQ of 64 (at most 63 outstanding; a message "
      "above 1073741824 bytes is split)";
  CHECK(status.message().find(expected) != std::string::npos);
  CHECK(state.record.message == expected);
  CHECK(state.record.code == static_cast<uint32_t>(mori::state::DeviceErrorCode::kBadArgument));
  CHECK(state.record.observed == 64);
  CHECK(rig.ep.reserved == 0);
  CHECK(rig.nic->executed() == 0);
  CHECK(std::all_of(rig.heap.begin(), rig.heap.end(), [](uint64_t w) { return w == 0; }));
}

// The batch arithmetic of lanes that post different numbers of WQEs, which only a GPU wavefront
// runs with more than one lane: each lane starts after the lower lanes' WQEs.
TEST_CASE("engine: positions of lanes that post different numbers of WQEs") {
  using Engine = RdmaEngine<mp::Mlx5>;
  const uint64_t active = (uint64_t{1} << 1) | (uint64_t{1} << 4) | (uint64_t{1} << 5) |
                          (uint64_t{1} << 40) | (uint64_t{1} << 63);
  const int lanes[] = {1, 4, 5, 40, 63};
  uint32_t wqes[64] = {};
  wqes[1] = 3, wqes[4] = 1, wqes[5] = 7, wqes[40] = 2, wqes[63] = 5;
  const uint32_t ranks[] = {0, 3, 4, 11, 13};
  for (int i = 0; i < 5; ++i) {
    uint32_t rank = ~0u, count = 0;
    Engine::positions(active, lanes[i], [&](int l) { return wqes[l]; }, &rank, &count);
    CHECK(rank == ranks[i]);
    CHECK(count == 18);
  }
}
