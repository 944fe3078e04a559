// The engine tests' fixture (test_rdma_engine.cpp): one QP of provider P and a software NIC
// thread that executes its WQEs on this process's memory through the provider's codec, with fault
// injection; and the work requests the tests post.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "backend/host/softnic/codec.hpp"
#include "mori/provider/bnxt.hpp"
#include "mori/provider/ionic.hpp"
#include "mori/provider/mlx5.hpp"
#include "mori/provider/work_request.hpp"
#include "mori/state/rdma_endpoint.hpp"

namespace mori::test::engine {

namespace mp = mori::provider;

constexpr uint32_t kSqWqes = 64;
constexpr uint32_t kQpn = 7;
constexpr uint64_t kNever = ~uint64_t{0};
// BNXT's MSN table restates each WQE's PSNs. The QP's initial send PSN sits 16 below the 24-bit
// wrap, so the first few WQEs carry the sequence across it; the path MTU is small enough that the
// tests' writes (up to 48 bytes) span one or two packets.
constexpr uint32_t kBnxtInitialPsn = 0xFFFFF0;
constexpr uint32_t kBnxtMtu = 32;

// One QP and a software NIC thread that executes its WQEs (keys are not checked here). Fault
// injection: an error completion for WQE fail_at (then the QP stops), no completions from WQE
// drop_from on. A WQE the codec refuses, or whose sequence (BNXT's MSN entry) is wrong, stops the
// NIC and is named in nic_error.
template <typename P>
struct FakeQp {
  const softnic::Codec& codec = softnic::codec_for<P>();
  uint8_t* sq = static_cast<uint8_t*>(std::aligned_alloc(64, P::sq_bytes(kSqWqes)));
  std::vector<uint8_t> cq;
  uint32_t dbr[2] = {};
  uint64_t db = 0;
  state::RdmaEndpoint ep{};
  uint32_t next_psn = 0;  // the NIC's send PSN (codecs with check_sequence)
  uint64_t fail_at = kNever, drop_from = kNever;
  std::vector<uint8_t> fenced;  // by SQ index: the WQE carried the fence flag
  std::string nic_error;        // the first WQE the codec rejected
  std::atomic<bool> stop{false};
  std::thread nic;

  explicit FakeQp(size_t max_wqes = 0) : fenced(max_wqes, 0) {
    std::memset(sq, 0, P::sq_bytes(kSqWqes));
    // A ring of sq_wqes entries, as the driver hands it over: enough for one CQE per WQE.
    const uint32_t cq_entries = kSqWqes;
    cq.assign(cq_entries * P::kCqeBytes, 0);
    P::init_cq(cq.data(), cq_entries);
    ep.sq = sq;
    ep.cq = cq.data();
    ep.dbr = dbr;
    ep.db = &db;
    ep.sq_wqes = kSqWqes;
    ep.cq_entries = cq_entries;
    ep.qpn = kQpn;
    ep.cqn = 0x42;
    if constexpr (std::is_same_v<P, mp::Bnxt>) {
      // As the runtime seeds them: the engine's PSN count from the RTS transition's sq_psn.
      ep.provider_word[mp::Bnxt::kWordMtu] = kBnxtMtu;
      ep.provider_state = kBnxtInitialPsn;
      next_psn = kBnxtInitialPsn;
    }
  }
  ~FakeQp() {
    halt();
    std::free(sq);
  }
  FakeQp(const FakeQp&) = delete;
  FakeQp& operator=(const FakeQp&) = delete;

  void start() {
    nic = std::thread([this] { run(); });
  }
  void halt() {
    stop.store(true);
    if (nic.joinable()) nic.join();
  }

  void run() {
    uint64_t last = 0, produced = 0;
    bool broken = false;
    while (!stop.load(std::memory_order_acquire)) {
      const uint64_t announced = broken ? last : codec.announced(ep, last);
      if (announced == last) {
        std::this_thread::yield();
        continue;
      }
      for (; last < announced; ++last) {
        mp::WorkRequest wr{};
        std::string why;
        if (!accept(last, &wr, &why)) {
          nic_error = "WQE " + std::to_string(last) + ": " + why;
          broken = true;
          break;
        }
        if (last == fail_at) {
          codec.complete(ep, &produced, last, wr, softnic::CompletionStatus::kRemoteAccess);
          broken = true;  // the QP is in error: nothing after it executes
          break;
        }
        if (last < fenced.size()) fenced[last] = wr.fence;
        execute(wr);
        if (wr.signaled && last < drop_from)
          codec.complete(ep, &produced, last, wr, softnic::CompletionStatus::kSuccess);
      }
    }
  }

  // Decodes WQE `index` and checks what the NIC checks beyond the codec's parse.
  bool accept(uint64_t index, mp::WorkRequest* wr, std::string* why) {
    if (!codec.decode(sq + (index & (kSqWqes - 1)) * P::kWqeBytes, index, wr, why)) return false;
    if (std::is_same_v<P, mp::Mlx5> && wr->qpn != kQpn) {  // only mlx5's WQE names its QP
      *why = "wrong qpn";
      return false;
    }
    return codec.check_sequence == nullptr || codec.check_sequence(ep, index, *wr, &next_psn, why);
  }

  static void execute(const mp::WorkRequest& wr) {
    auto* remote = reinterpret_cast<void*>(wr.remote_addr);
    auto* local = reinterpret_cast<void*>(wr.local_addr);
    switch (wr.opcode) {
      case mp::Opcode::kWrite:
        std::memcpy(remote, local, wr.bytes);
        break;
      case mp::Opcode::kWriteInline:
        std::memcpy(remote, wr.inline_data, wr.bytes);
        break;
      case mp::Opcode::kRead:
        std::memcpy(local, remote, wr.bytes);
        break;
      case mp::Opcode::kFetchAdd:
        if (wr.width == 8) {
          *static_cast<uint64_t*>(local) =
              __atomic_fetch_add(static_cast<uint64_t*>(remote), wr.operand, __ATOMIC_SEQ_CST);
        } else {
          *static_cast<uint32_t*>(local) = __atomic_fetch_add(
              static_cast<uint32_t*>(remote), static_cast<uint32_t>(wr.operand), __ATOMIC_SEQ_CST);
        }
        break;
      case mp::Opcode::kCompareSwap: {
        uint64_t expected = wr.compare;
        __atomic_compare_exchange_n(static_cast<uint64_t*>(remote), &expected, wr.operand, false,
                                    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
        *static_cast<uint64_t*>(local) = expected;
        break;
      }
    }
  }
};

inline mp::WorkRequest rdma(mp::Opcode op, void* remote, const void* local, uint32_t bytes) {
  mp::WorkRequest wr{};
  wr.opcode = op;
  wr.remote_addr = reinterpret_cast<uint64_t>(remote);
  wr.local_addr = reinterpret_cast<uint64_t>(local);
  wr.bytes = bytes;
  return wr;
}

inline mp::WorkRequest fetch_add(void* remote, void* old, uint8_t width, uint64_t add) {
  mp::WorkRequest wr = rdma(mp::Opcode::kFetchAdd, remote, old, 0);
  wr.width = width;
  wr.operand = add;
  return wr;
}

}  // namespace mori::test::engine
