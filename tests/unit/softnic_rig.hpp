// The software NIC unit tests' rig (test_softnic*.cpp): one QP to "PE 1", a buffer that the
// translation table maps from a made-up remote base (so every remote address the lanes post is
// translated), a registered local buffer, and a SoftNic serving the QP.
#pragma once

#include <doctest/doctest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "backend/host/softnic/softnic.hpp"
#include "device_state_guard.hpp"
#include "mori/host/launch.hpp"
#include "mori/provider/bnxt.hpp"
#include "mori/provider/ionic.hpp"
#include "mori/provider/mlx5.hpp"
#include "mori/transport/rdma_engine.hpp"
#include "qp_memory.hpp"

namespace mori::test::softnic_rig {

namespace mp = mori::provider;
namespace sn = mori::softnic;
namespace plat = mori::platform;
using mori::host::launch;
using mori::state::RdmaEndpoint;
using mori::transport::RdmaEngine;
using mp::Opcode;
using mp::WorkRequest;

using mori::test::kSqWqes;
constexpr uint32_t kQpn = 7, kRkey = 0x1234, kLkey = 0x55;
constexpr int kPe = 1;
constexpr uint64_t kRemoteBase = 0x7f0000000000;  // PE 1's heap in PE 1's address space
constexpr size_t kHeapWords = 8192, kLocalWords = 8192;

// Per provider: the status texts its poll_cq reports (bnxt's omit "error").
template <typename P>
struct Traits;
template <>
struct Traits<mp::Mlx5> {
  static constexpr const char* kRemoteAccess = "remote access error";
  static constexpr const char* kLocalProtection = "local protection error";
  static constexpr const char* kInvalid = "remote invalid request error";
  static constexpr const char* kGeneral = "remote operation error";
};
template <>
struct Traits<mp::Ionic> {
  static constexpr const char* kRemoteAccess = "remote access error";
  static constexpr const char* kLocalProtection = "local protection error";
  static constexpr const char* kInvalid = "remote invalid request error";
  static constexpr const char* kGeneral = "local QP operation error";
};
template <>
struct Traits<mp::Bnxt> {
  static constexpr const char* kRemoteAccess = "remote access";
  static constexpr const char* kLocalProtection = "local protection";
  static constexpr const char* kInvalid = "remote invalid request";
  static constexpr const char* kGeneral = "remote operation";
};

using DeviceState = mori::test::DeviceStateGuard;

using mori::test::QueueMemory;

// How a Rig is laid out, beyond its NIC's options; the defaults serve most tests.
struct RigShape {
  uint32_t initial_psn = 0;          // the QP's initial send PSN (BNXT's MSN entries count from it)
  uint32_t path_mtu = 4096;          // bytes: BNXT's engine and NIC count a WQE's packets by it
  size_t heap_words = kHeapWords;    // PE 1's memory
  size_t local_words = kLocalWords;  // the registered local buffer
};

// One QP to PE 1, PE 1's heap, this process's registered buffer, and a SoftNic serving the QP.
template <typename P>
struct Rig : QueueMemory<P> {
  std::vector<uint64_t> heap;   // PE 1's memory, at kRemoteBase in PE 1's address space
  std::vector<uint64_t> local;  // registered with kLkey
  std::unique_ptr<sn::SoftNic> nic;

  explicit Rig(sn::SoftNicOptions options = no_env(), uint32_t initial_psn = 0)
      : Rig(std::move(options), RigShape{.initial_psn = initial_psn}) {}
  Rig(sn::SoftNicOptions options, const RigShape& shape)
      : QueueMemory<P>(kQpn, shape.path_mtu, shape.initial_psn),
        heap(shape.heap_words, 0),
        local(shape.local_words, 0) {
    sn::MemoryTable table;
    table.remote.push_back({kPe, kRemoteBase, heap.size() * 8, kRkey, heap.data()});
    table.local.push_back({reinterpret_cast<uint64_t>(local.data()), local.size() * 8, kLkey});
    nic = std::make_unique<sn::SoftNic>(
        sn::codec_for<P>(),
        std::vector<sn::ServedEndpoint>{{&this->ep, kPe, shape.initial_psn, {}}}, table,
        std::move(options));
  }
  ~Rig() { nic->stop(); }
  static sn::SoftNicOptions no_env() {
    sn::SoftNicOptions o;
    o.read_env = false;  // a MORI_SOFTNIC_FAULT in the caller's environment must not leak in
    return o;
  }
  void start() { REQUIRE(nic->start().ok()); }
  uint64_t remote(size_t word) const { return kRemoteBase + word * 8; }
  WorkRequest rdma(Opcode op, uint64_t remote_addr, size_t local_word, uint32_t bytes) const {
    WorkRequest wr{};
    wr.opcode = op, wr.remote_addr = remote_addr, wr.rkey = kRkey, wr.lkey = kLkey;
    wr.local_addr = reinterpret_cast<uint64_t>(&local[local_word]), wr.bytes = bytes;
    return wr;
  }
  WorkRequest atomic(Opcode op, size_t remote_word, size_t old_word, uint8_t width, uint64_t v,
                     uint64_t compare = 0) const {
    WorkRequest wr = rdma(op, remote(remote_word), old_word, 0);
    wr.width = width, wr.operand = v, wr.compare = compare;
    return wr;
  }
};

// Lanes post through the engine, then quiet; returns the launch's message ("" when it succeeded).
template <typename P, typename Body>
std::string run_lanes(Rig<P>& rig, int blocks, int threads, Body body) {
  auto status = launch({static_cast<unsigned>(blocks)}, {static_cast<unsigned>(threads)}, [&] {
    body(plat::block_rank() * threads + plat::thread_rank());
    RdmaEngine<P>::quiet(rig.ep, kPe);
  });
  return status.ok() ? std::string{} : status.message();
}

}  // namespace mori::test::softnic_rig
