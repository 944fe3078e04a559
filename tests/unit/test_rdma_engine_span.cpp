// RdmaEngine::post_span (transport/rdma_engine.hpp): a transfer above the largest message goes out
// as consecutive WQEs of one batch, for every provider against the software NIC of
// rdma_engine_fixture.hpp. The largest message is a template argument, 16 bytes here, so that the
// split runs on buffers of a few hundred bytes where a put would need more than 1 GiB.
#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "device_state_guard.hpp"
#include "mori/host/launch.hpp"
#include "mori/transport/rdma_engine.hpp"
#include "providers.hpp"
#include "rdma_engine_fixture.hpp"

namespace mp = mori::provider;
namespace plat = mori::platform;
using mori::host::launch;
using mori::transport::RdmaEngine;
using mp::Opcode;
using namespace mori::test::engine;

namespace {

constexpr int kPe = 1;
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
  const auto bytes_of = [](int lane, int round) -> uint64_t {
    const uint64_t edges[] = {1, 15, 16, 17, 31, 32, 33, 200};
    return round < 8 ? edges[(lane + round) % 8] : 1 + (lane * 37 + round * 11) % 200;
  };
  FakeQp<P> qp;
  mori::test::DeviceStateGuard state(20'000'000'000);  // a hang fails instead of blocking
  const size_t slots = size_t{kLanes} * kRounds;
  std::vector<uint8_t> src(slots * kSlot), dst(slots * kSlot, 0), back(slots * kSlot, 0xee);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint8_t>(i * 29 + 3);
  uint64_t expected_wqes = 0;
  for (int lane = 0; lane < kLanes; ++lane)
    for (int round = 0; round < kRounds; ++round)
      expected_wqes += 2 * wqes_of(bytes_of(lane, round));
  qp.start();

  auto status = launch({1}, {kLanes}, [&] {
    const int lane = plat::thread_rank();
    for (int round = 0; round < kRounds; ++round) {
      const size_t at = (size_t{static_cast<size_t>(lane)} * kRounds + round) * kSlot;
      const uint64_t bytes = bytes_of(lane, round);
      Engine::template post_span<kPiece>(qp.ep, rdma(Opcode::kWrite, &dst[at], &src[at], 0), bytes,
                                         kPe);
      Engine::quiet(qp.ep, kPe);  // the write has landed before it is read back
      Engine::template post_span<kPiece>(qp.ep, rdma(Opcode::kRead, &dst[at], &back[at], 0), bytes,
                                         kPe);
    }
    Engine::quiet(qp.ep, kPe);
  });
  REQUIRE_MESSAGE(status.ok(), status.message());
  qp.halt();
  REQUIRE_MESSAGE(qp.nic_error.empty(), qp.nic_error);
  CHECK(state.record.code == 0);
  CHECK(qp.ep.submitted == expected_wqes);
  CHECK(qp.ep.completed == expected_wqes);
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
  FakeQp<P> qp;
  // Without the check, flow control would wait for the room until this deadline.
  mori::test::DeviceStateGuard state(2'000'000'000);
  std::vector<uint8_t> src(64 * kPiece, 1), dst(64 * kPiece, 0);
  qp.start();
  auto status = launch({1}, {1}, [&] {
    Engine::template post_span<kPiece>(qp.ep, rdma(Opcode::kWrite, dst.data(), src.data(), 0),
                                       src.size(), kPe);
  });
  qp.halt();
  REQUIRE(!status.ok());
  const std::string expected =
      "RDMA: a batch of 64 WQEs cannot fit in an SQ of 64 (at most 63 outstanding; a message "
      "above 1073741824 bytes is split)";
  CHECK(status.message().find(expected) != std::string::npos);
  CHECK(state.record.message == expected);
  CHECK(state.record.code == static_cast<uint32_t>(mori::state::DeviceErrorCode::kBadArgument));
  CHECK(state.record.observed == 64);
  CHECK(qp.ep.reserved == 0);
  CHECK(dst == std::vector<uint8_t>(dst.size(), 0));
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
