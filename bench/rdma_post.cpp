// rdma_post: the cost of posting one work request through RdmaEngine<Provider>::post, per
// provider, in one thread. The thread also plays the NIC: after each post it writes that WQE's
// completion with the software NIC's codec, so flow control and CQ polling run as in steady
// state. Two measures:
//   - wall time per posted request (this table; noisy on a shared machine);
//   - instructions per posted request: run under callgrind with the collection limited to post
//     (bench/callgrind_post.sh does it and divides by the count).
//
//   build/bench/rdma_post --iters 200000 [--provider mlx5|bnxt|ionic] [--op inline|write|atomic]
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "backend/host/softnic/codec.hpp"
#include "mori/provider/bnxt.hpp"
#include "mori/provider/ionic.hpp"
#include "mori/provider/mlx5.hpp"
#include "mori/transport/rdma_engine.hpp"
#include "unit/qp_memory.hpp"

namespace mp = mori::provider;
namespace sn = mori::softnic;

namespace {

constexpr uint32_t kSqWqes = 256, kQpn = 0x101;

mp::WorkRequest request(const std::string& op, uint64_t* local, const uint64_t* value) {
  mp::WorkRequest wr{};
  wr.remote_addr = 0x7f0000001000;
  wr.rkey = 0x1234;
  wr.lkey = 0x55;
  wr.local_addr = reinterpret_cast<uint64_t>(local);
  if (op == "inline") {
    wr.opcode = mp::Opcode::kWriteInline;
    wr.inline_data = value;
    wr.bytes = 8;
  } else if (op == "write") {
    wr.opcode = mp::Opcode::kWrite;
    wr.bytes = 4096;
  } else {
    wr.opcode = mp::Opcode::kFetchAdd;
    wr.width = 8;
    wr.operand = 1;
  }
  return wr;
}

// Posts `iters` requests; returns ns per request.
template <typename P>
double run(uint64_t iters, const std::string& op) {
  mori::test::QueueMemory<P> q(kQpn, 4096, 0, kSqWqes);
  std::vector<uint64_t> local(1024);
  uint64_t produced = 0;  // CQEs the NIC's half has written
  const sn::Codec& c = sn::codec_for<P>();
  const uint64_t value = 42;
  const mp::WorkRequest wr = request(op, local.data(), &value);
  const auto start = std::chrono::steady_clock::now();
  for (uint64_t i = 0; i < iters; ++i) {
    const uint64_t index = mori::transport::RdmaEngine<P>::post(q.ep, wr, 1);
    // The NIC's half, outside post: complete the request at once.
    c.complete(q.ep, &produced, index, wr, sn::CompletionStatus::kSuccess);
  }
  mori::transport::RdmaEngine<P>::quiet(q.ep, 1);
  const auto ns =
      std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count();
  if (q.ep.completed != iters) {
    std::fprintf(stderr, "rdma_post: %s completed %llu of %llu\n", P::kName,
                 static_cast<unsigned long long>(q.ep.completed),
                 static_cast<unsigned long long>(iters));
    std::exit(1);
  }
  return ns / static_cast<double>(iters);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"rdma_post: per-request cost of RdmaEngine<Provider>::post"};
  uint64_t iters = 200000;
  std::string provider = "all", op = "inline";
  app.add_option("--iters", iters, "requests per provider")->check(CLI::PositiveNumber);
  app.add_option("--provider", provider, "mlx5, bnxt, ionic or all")
      ->check(CLI::IsMember({"mlx5", "bnxt", "ionic", "all"}));
  app.add_option("--op", op, "inline (8-byte inline write), write (4 KiB), atomic (fetch-add)")
      ->check(CLI::IsMember({"inline", "write", "atomic"}));
  CLI11_PARSE(app, argc, argv);

  std::printf("%-8s %-8s %12s %14s\n", "provider", "op", "requests", "ns/request");
  auto row = [&](const char* name, double ns) {
    std::printf("%-8s %-8s %12llu %14.1f\n", name, op.c_str(),
                static_cast<unsigned long long>(iters), ns);
  };
  if (provider == "all" || provider == "mlx5") row("mlx5", run<mp::Mlx5>(iters, op));
  if (provider == "all" || provider == "bnxt") row("bnxt", run<mp::Bnxt>(iters, op));
  if (provider == "all" || provider == "ionic") row("ionic", run<mp::Ionic>(iters, op));
  return 0;
}
