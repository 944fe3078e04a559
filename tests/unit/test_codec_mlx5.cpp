// The software NIC's mlx5 codec (src/backend/host/softnic/mlx5_codec.cpp): decode(post(wr)) round
// trips, complete() then poll_cq(), CQE bytes as mlx5dv.h lays them out, and garbage rejected.
#include <doctest/doctest.h>
#include <infiniband/mlx5dv.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "mlx5_wqe_helpers.hpp"

namespace mp = mori::provider;
using namespace mori::test::mlx5_wqe;

namespace {

std::string describe(const WorkRequest& wr) {
  char buf[320];
  std::snprintf(buf, sizeof(buf),
                "op=%u sig=%u fence=%u width=%u qpn=%x index=%llx raddr=%llx rkey=%x lkey=%x "
                "laddr=%llx bytes=%u operand=%llx compare=%llx inline=",
                unsigned(wr.opcode), wr.signaled, wr.fence, wr.width, wr.qpn,
                (unsigned long long)wr.index, (unsigned long long)wr.remote_addr, wr.rkey, wr.lkey,
                (unsigned long long)wr.local_addr, wr.bytes, (unsigned long long)wr.operand,
                (unsigned long long)wr.compare);
  std::string s = buf;
  if (wr.opcode == Opcode::kWriteInline)
    s += hex(static_cast<const uint8_t*>(wr.inline_data), wr.bytes);
  return s;
}

}  // namespace

TEST_CASE("mlx5 codec: decode(post(wr)) == wr for every operation") {
  std::vector<WorkRequest> all;
  for (Opcode op : {Opcode::kWrite, Opcode::kRead, Opcode::kWriteInline})
    for (uint8_t flags = 0; flags < 4; ++flags) {
      WorkRequest wr = request(op, 0x2'fffe + flags);
      wr.signaled = flags & 1, wr.fence = flags >> 1;
      all.push_back(wr);
      wr.bytes = op == Opcode::kWriteInline ? 5 : 0;
      if (op != Opcode::kWriteInline) wr.lkey = 0, wr.local_addr = 0;  // no data segment: ds 2
      all.push_back(wr);
    }
  for (Opcode op : {Opcode::kFetchAdd, Opcode::kCompareSwap})
    for (uint8_t width : {4, 8}) all.push_back(request(op, 77, width));
  for (const WorkRequest& wr : all) {
    const Wqebb w = post(wr);
    WorkRequest back;
    std::string why;
    CAPTURE(describe(wr));
    REQUIRE(codec().decode(w.b, wr.index, &back, &why));
    CHECK(describe(back) == describe(wr));
  }
}

TEST_CASE("mlx5 codec: complete() then poll_cq(), success and the 16-bit wqe_counter wrap") {
  Qp qp;
  mp::CqPoll p = Mlx5::poll_cq(qp.ep);  // a fresh CQ holds nothing
  CHECK(p.advanced == 0);
  CHECK(p.error == 0);
  CHECK(p.completed_through == 0);
  struct Step {
    uint64_t completed, index;
  };
  for (Step s : {Step{0, 0}, Step{0, 5}, Step{6, 0xffff}, Step{0xfff0, 0x10003},
                 Step{0x1'fff0, 0x2'0005}, Step{0x7'ffff'0000, 0x7'ffff'fffe}}) {
    CAPTURE(s.index);
    qp.ep.completed = s.completed;
    codec().complete(qp.ep, &qp.produced, s.index, request(Opcode::kWrite, s.index),
                     CompletionStatus::kSuccess);
    p = Mlx5::poll_cq(qp.ep);
    CHECK(p.advanced == 1);
    CHECK(p.error == 0);
    CHECK(p.status == 0);
    CHECK(std::string(p.status_text) == "success");
    CHECK(p.completed_through == s.index + 1);
    CHECK(qp.ep.cq_consumed == qp.produced);  // consumed, and the NIC told so
    CHECK(qp.ci() == (qp.produced & 0xffffff));
    qp.ep.completed = p.completed_through;  // nothing new: no progress
    p = Mlx5::poll_cq(qp.ep);
    CHECK(p.advanced == 0);
    CHECK(p.completed_through == s.index + 1);
  }
}

TEST_CASE("mlx5 CQ ring: each poll consumes the next CQE, in order, across passes") {
  // Six successes over a 4-entry ring (the owner bit flips at the second pass) for WQEs 1, 3, ..
  // 11 (selective signalling: each CQE completes two WQEs), then an error and a flush.
  Qp ring;
  for (uint64_t k = 0; k < 6; ++k) {
    codec().complete(ring.ep, &ring.produced, 2 * k + 1, request(Opcode::kWrite, 2 * k + 1),
                     CompletionStatus::kSuccess);
    const mp::CqPoll p = Mlx5::poll_cq(ring.ep);
    CHECK(p.advanced == 1);
    CHECK(p.error == 0);
    CHECK(p.completed_through == 2 * k + 2);
    CHECK(ring.ep.cq_consumed == k + 1);
    CHECK(ring.ci() == k + 1);
    ring.ep.completed = p.completed_through;
    CHECK(Mlx5::poll_cq(ring.ep).advanced == 0);  // nothing new
    CHECK(ring.ep.cq_consumed == k + 1);
  }
  codec().complete(ring.ep, &ring.produced, 12, request(Opcode::kWrite, 12),
                   CompletionStatus::kRemoteAccess);
  codec().complete(ring.ep, &ring.produced, 13, request(Opcode::kWrite, 13),
                   CompletionStatus::kFlushed);
  mp::CqPoll p = Mlx5::poll_cq(ring.ep);
  CHECK(p.error == 1);
  CHECK(p.status == MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR);
  CHECK(p.completed_through == 13);  // WQE 12 failed
  CHECK(ring.ci() == 7);
  p = Mlx5::poll_cq(ring.ep);  // then the flush
  CHECK(p.error == 1);
  CHECK(std::string(p.status_text) == "work request flushed");
  CHECK(ring.ep.cq_consumed == 8);
  // Five CQEs written without consuming: entry 0 holds the fifth (second pass, owner 1), which a
  // poller still at position 0 (first pass) must not take.
  Qp qp;
  for (uint64_t k = 0; k < 5; ++k)
    codec().complete(qp.ep, &qp.produced, k, request(Opcode::kWrite, k),
                     CompletionStatus::kSuccess);
  CHECK(Mlx5::poll_cq(qp.ep).advanced == 0);
  CHECK(qp.ep.cq_consumed == 0);
}

TEST_CASE("mlx5 codec: complete() then poll_cq() for each error status") {
  struct Case {
    CompletionStatus status;
    uint8_t syndrome;
    const char* text;
  };
  for (Case c :
       {Case{CompletionStatus::kLocalProtection, 0x04, "local protection error"},
        Case{CompletionStatus::kRemoteAccess, 0x13, "remote access error"},
        Case{CompletionStatus::kRemoteInvalidRequest, 0x12, "remote invalid request error"},
        Case{CompletionStatus::kLocalLength, 0x01, "local length error"},
        Case{CompletionStatus::kGeneral, 0x14, "remote operation error"}}) {
    Qp qp;
    qp.ep.completed = 0xfffe;
    codec().complete(qp.ep, &qp.produced, 0x1'0002, request(Opcode::kRead, 0x1'0002), c.status);
    const mp::CqPoll p = Mlx5::poll_cq(qp.ep);
    CHECK(p.error == 1);
    CHECK(p.advanced == 1);
    CHECK(p.status == c.syndrome);
    CHECK(std::string(p.status_text) == c.text);
    CHECK(p.completed_through == 0x1'0003);  // the failed WQE and all before it are done
    CHECK(qp.ep.cq_consumed == 1);           // consumed once: the next poll finds nothing
    CHECK(Mlx5::poll_cq(qp.ep).error == 0);
  }
}

TEST_CASE("mlx5 codec: CQE bytes as mlx5dv.h lays them out, owner bit as get_sw_cqe expects") {
  Qp qp;
  for (uint64_t n = 0; n < 2 * kCqEntries; ++n) {  // two passes: the owner bit flips
    const WorkRequest wr = request(Opcode::kFetchAdd, 0x1'0000 + n, 4);
    const bool fail = n == 3 || n == 6;
    const uint8_t owner = (n & kCqEntries) ? 1 : 0;
    codec().complete(qp.ep, &qp.produced, wr.index, wr,
                     fail ? CompletionStatus::kRemoteAccess : CompletionStatus::kSuccess);
    alignas(64) uint8_t expect[64] = {};
    if (!fail) {
      auto* cqe = reinterpret_cast<::mlx5_cqe64*>(expect);
      cqe->byte_cnt = htobe32(4);
      cqe->sop_drop_qpn = htobe32(uint32_t{MLX5_OPCODE_ATOMIC_MASKED_FA} << 24 | kQpn);
      cqe->wqe_counter = htobe16(static_cast<uint16_t>(wr.index));
      cqe->op_own = MLX5_CQE_REQ << 4;
      mlx5dv_set_cqe_owner(cqe, owner);
    } else {
      auto* cqe = reinterpret_cast<::mlx5_err_cqe*>(expect);
      cqe->syndrome = MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR;
      cqe->s_wqe_opcode_qpn = htobe32(uint32_t{MLX5_OPCODE_ATOMIC_MASKED_FA} << 24 | kQpn);
      cqe->wqe_counter = htobe16(static_cast<uint16_t>(wr.index));
      cqe->op_own = MLX5_CQE_REQ_ERR << 4 | owner;
    }
    CAPTURE(n);
    uint8_t* entry = qp.cq + (n % kCqEntries) * 64;
    CHECK(hex(entry, 64) == hex(expect, 64));
    // rdma-core's get_sw_cqe for CQE number n of a ring of nent entries (cq.cqe = nent - 1)
    auto* cqe = reinterpret_cast<::mlx5_cqe64*>(entry);
    CHECK(mlx5dv_get_cqe_opcode(cqe) != MLX5_CQE_INVALID);
    CHECK(!((cqe->op_own & MLX5_CQE_OWNER_MASK) ^ !!(n & kCqEntries)));
  }
}

TEST_CASE("mlx5 codec: a poller racing the writer never takes a half-written CQE for a whole one") {
  Qp qp;
  constexpr uint64_t kCqes = 60000;  // fewer than 65536: ep.completed stays 0 for the extension
  const auto status_of = [](uint64_t i) {
    return i % 3 == 0   ? CompletionStatus::kSuccess
           : i % 3 == 1 ? CompletionStatus::kRemoteAccess
                        : CompletionStatus::kLocalLength;
  };
  std::thread nic([&] {
    for (uint64_t i = 0; i < kCqes; ++i) {
      // A NIC writes a ring entry only after the consumer index has freed it.
      while (i - std::atomic_ref<uint64_t>(qp.ep.cq_consumed).load(std::memory_order_acquire) >=
             kCqEntries)
        std::this_thread::yield();
      codec().complete(qp.ep, &qp.produced, i, request(Opcode::kWrite, i), status_of(i));
    }
  });
  uint64_t seen = 0, mismatches = 0;
  while (seen < kCqes) {
    const mp::CqPoll p = Mlx5::poll_cq(qp.ep);
    if (!p.advanced) continue;
    REQUIRE(p.completed_through >= seen);  // completions only move forward
    seen = p.completed_through;
    const CompletionStatus s = status_of(seen - 1);
    const uint32_t want = s == CompletionStatus::kSuccess        ? 0u
                          : s == CompletionStatus::kRemoteAccess ? 0x13u
                                                                 : 0x01u;
    if (p.status != want || p.error != (s != CompletionStatus::kSuccess)) ++mismatches;
  }
  nic.join();
  CHECK(mismatches == 0);
}

TEST_CASE("mlx5 codec: garbage is rejected with its reason") {
  struct Garbage {
    WorkRequest wr;
    int offset;  // byte to overwrite (-1: none)
    uint8_t value;
    uint64_t index;
    const char* why;
  };
  const WorkRequest write = request(Opcode::kWrite, 5), read = request(Opcode::kRead, 5);
  WorkRequest write1 = write;
  write1.bytes = 1;
  const WorkRequest inl = request(Opcode::kWriteInline, 5);
  const WorkRequest fa64 = request(Opcode::kFetchAdd, 5, 8),
                    fa32 = request(Opcode::kFetchAdd, 5, 4);
  const WorkRequest cs32 = request(Opcode::kCompareSwap, 5, 4);
  for (const Garbage& g : {
           Garbage{write, 3, 0x0a, 5, "mlx5: unknown opcode 0x0a"},
           Garbage{write, 7, 5, 5, "mlx5: ds 5 larger than one WQEBB (4 units of 16 bytes)"},
           Garbage{write, 7, 0xff, 5, "mlx5: ds 255 larger than one WQEBB (4 units of 16 bytes)"},
           Garbage{write, 7, 4, 5, "mlx5: ds 4 inconsistent with opcode RDMA_WRITE (expected 3)"},
           Garbage{read, 7, 0, 5, "mlx5: ds 0 inconsistent with opcode RDMA_READ (expected 3)"},
           Garbage{write, -1, 0, 6, "mlx5: wqe index 0x0005 does not match SQ index 0x0006"},
           Garbage{write, 0, 1, 5, "mlx5: opmod 0x01 invalid for opcode RDMA_WRITE"},
           Garbage{inl, 35, 29, 5, "mlx5: inline length 29 beyond the entry (at most 28 bytes)"},
           Garbage{inl, 35, 12, 5, "mlx5: ds 4 inconsistent with opcode RDMA_WRITE (expected 3)"},
           Garbage{read, 32, 0x80, 5, "mlx5: opcode RDMA_READ cannot carry inline data"},
           Garbage{write1, 35, 0, 5, "mlx5: data segment of 0 bytes (an empty transfer omits it)"},
           Garbage{fa64, 7, 3, 5, "mlx5: ds 3 inconsistent with opcode ATOMIC_FA (expected 4)"},
           Garbage{fa64, 51, 4, 5,
                   "mlx5: bad atomic operand size: ATOMIC_FA with a data segment of 4 bytes "
                   "(expected 8)"},
           Garbage{fa32, 51, 8, 5,
                   "mlx5: bad atomic operand size: ATOMIC_MASKED_FA with a data segment of 8 "
                   "bytes (expected 4)"},
           Garbage{fa32, 0, 0x09, 5,
                   "mlx5: bad atomic operand size: ATOMIC_MASKED_FA with opmod 0x09 (expected "
                   "0x08)"},
           Garbage{fa64, 0, 0x08, 5,
                   "mlx5: bad atomic operand size: ATOMIC_FA with opmod 0x08 (expected 0x00)"},
           Garbage{fa32, 39, 1, 5,
                   "mlx5: masked fetch-add with field_boundary 0x00000001 (mori posts 0)"},
           Garbage{cs32, 43, 0, 5,
                   "mlx5: masked compare-swap with partial masks (swap 0xffffff00, compare "
                   "0xffffffff)"},
       }) {
    Wqebb w = post(g.wr);
    if (g.offset >= 0) w.b[g.offset] = g.value;
    WorkRequest out;
    std::string why;
    const std::string expected = g.why;
    CAPTURE(expected);
    CHECK_FALSE(codec().decode(w.b, g.index, &out, &why));
    CHECK(why == expected);
  }
}

TEST_CASE("mlx5 codec: random bytes never crash the parser, and each rejection says why") {
  std::mt19937_64 rng(0x6d6c7835);
  const WorkRequest seeds[] = {request(Opcode::kWrite, 1), request(Opcode::kWriteInline, 1),
                               request(Opcode::kCompareSwap, 1, 4),
                               request(Opcode::kFetchAdd, 1, 8)};
  int accepted = 0;
  for (int i = 0; i < 200000; ++i) {
    Wqebb w = post(seeds[i % 4]);
    const int flips = 1 + static_cast<int>(rng() % 4);  // near-valid WQEs reach the deep checks
    for (int f = 0; f < flips; ++f) w.b[rng() % 64] = static_cast<uint8_t>(rng());
    if (i % 16 == 0)
      for (uint8_t& b : w.b) b = static_cast<uint8_t>(rng());
    WorkRequest out;
    std::string why;
    if (codec().decode(w.b, 1, &out, &why)) {
      ++accepted;
      if (out.opcode == Opcode::kWriteInline) {
        REQUIRE(out.bytes <= Mlx5::kMaxInlineBytes);
        REQUIRE(static_cast<const uint8_t*>(out.inline_data) + out.bytes <= w.b + 64);
      }
    } else {
      REQUIRE(why.rfind("mlx5: ", 0) == 0);
      REQUIRE(why.size() > 6);
    }
  }
  CHECK(accepted > 0);
}
