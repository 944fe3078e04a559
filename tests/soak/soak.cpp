// soak: mixed put, get, atomic and put-with-signal traffic between all PEs for a given time, in
// rounds of one kernel launch each, with random sizes, scopes, targets and queue pairs drawn from
// a seed every PE can recompute. After every round each PE checks every byte the others wrote into
// it; at the end every counter and signal must equal the number of operations the others aimed at
// it. Over P2P by default; over the software NIC with MORI_DISABLE_P2P=1 MORI_DEVICE_NIC=<nic>.
//
//   mpirun -np 4 build/tests/soak/mori_soak --seconds 600
//   MORI_DISABLE_P2P=1 MORI_DEVICE_NIC=bnxt mpirun -np 4 build/tests/soak/mori_soak --seconds 60
//
// Prints one line per PE with the operations it completed, and aborts the job on the first mismatch
// of a round, naming the round, the writer and the byte. At the end every PE's verdict (its
// counters, that it ran a round, and its finalize) is reduced over all PEs: PE 0 prints
// "soak: all N PEs ok" only when every one passed, and every PE exits non-zero otherwise, so the
// job's exit code is the result. --fail-pe N (a test of this harness, hidden) makes PE N fail.
#include <mpi.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "mori/core.hpp"
#include "mori/host/launch.hpp"
#include "mori/shmem.hpp"
#include "mori/shmem/device_api.hpp"
#include "mpi_cli.hpp"

namespace shmem = mori::shmem;
using mori::Block;
using mori::Thread;
using mori::Warp;

namespace {

constexpr int kOpsPerRound = 24;     // per PE: puts, gets, atomics and signals, mixed
constexpr size_t kMaxBytes = 8192;   // the largest put or get
constexpr size_t kSource = 1 << 20;  // the pattern source every put copies from

uint64_t mix(uint64_t x) {  // splitmix64
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

enum class Kind { kPut, kGet, kAtomic, kSignal };
enum class ScopeKind { kThread, kWarp, kBlock };

// Operation `i` of PE `pe` in `round`: the same on every PE.
struct Op {
  Kind kind;
  ScopeKind scope;
  int target;
  int qp;
  size_t bytes;
  size_t src_offset;  // into the pattern source
};
Op op_of(uint64_t seed, int round, int pe, int i, int n_pes, int qps) {
  const uint64_t r = mix(seed ^ mix(uint64_t(round) << 32 ^ uint64_t(pe) << 16 ^ uint64_t(i)));
  Op op{};
  op.kind = static_cast<Kind>(r % 4);
  op.scope = static_cast<ScopeKind>((r >> 8) % 3);
  op.target = static_cast<int>((r >> 16) % n_pes);
  op.qp = static_cast<int>((r >> 24) % qps);
  op.bytes = 1 + (r >> 32) % kMaxBytes;
  op.src_offset = (r >> 48) % (kSource - kMaxBytes);
  return op;
}

uint8_t pattern(int pe, size_t i) { return static_cast<uint8_t>((i * 131 + pe * 29 + 7) & 0xff); }

// The symmetric layout of each PE.
struct Layout {
  uint8_t* source;    // [kSource]: pattern(me, i), what puts copy from and gets read
  uint8_t* inbox;     // [n_pes][kOpsPerRound][kMaxBytes]: slot (writer, i) of this round
  uint64_t* counts;   // [n_pes]: atomic adds from each writer
  uint64_t* signals;  // [n_pes]: signal adds from each writer
  uint8_t* landing;   // [kOpsPerRound][kMaxBytes]: this PE's gets land here (heap, so RDMA can)
};

template <typename S>
void run_scoped(const Op& op, const Layout& m, int me, int i, uint64_t* fetched) {
  uint8_t* slot = m.inbox + (size_t(me) * kOpsPerRound + i) * kMaxBytes;
  switch (op.kind) {
    case Kind::kPut:
      shmem::putmem_nbi<S>(slot, m.source + op.src_offset, op.bytes, op.target, op.qp);
      break;
    case Kind::kGet:
      shmem::getmem<S>(m.landing + size_t(i) * kMaxBytes, m.source + op.src_offset, op.bytes,
                       op.target, op.qp);
      break;
    case Kind::kAtomic:
      if (S::leader())
        *fetched = shmem::atomic_fetch_add(&m.counts[me], uint64_t{1}, op.target, op.qp);
      break;
    case Kind::kSignal:
      shmem::putmem_signal_nbi<S>(slot, m.source + op.src_offset, op.bytes, &m.signals[me], 1,
                                  shmem::SIGNAL_ADD, op.target, op.qp);
      break;
  }
}

int fail(const std::string& what) {
  std::fprintf(stderr, "soak: %s\n", what.c_str());
  MPI_Abort(MPI_COMM_WORLD, 1);
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  CLI::App app{"soak: mixed traffic between all PEs, every byte and counter checked"};
  double seconds = 60;
  uint64_t seed = 1;
  int fail_pe = -1;
  app.add_option("--seconds", seconds, "how long to run");
  app.add_option("--seed", seed, "the traffic's seed");
  app.add_option("--fail-pe", fail_pe, "make this PE report a failure")->group("");
  if (const auto rc = mori::bench::parse_mpi_cli(app, argc, argv)) return *rc;
  if (!std::getenv("MORI_SHMEM_HEAP_SIZE")) setenv("MORI_SHMEM_HEAP_SIZE", "256M", 1);
  if (!std::getenv("MORI_SHMEM_TIMEOUT_MS")) setenv("MORI_SHMEM_TIMEOUT_MS", "30000", 1);
  if (shmem::init() != 0) return fail(std::string("init: ") + shmem::last_error());
  const int me = shmem::my_pe(), n = shmem::n_pes(), qps = shmem::num_qp_per_pe();

  Layout m{};
  m.source = static_cast<uint8_t*>(shmem::malloc(kSource));
  m.inbox = static_cast<uint8_t*>(shmem::malloc(size_t(n) * kOpsPerRound * kMaxBytes));
  m.counts = static_cast<uint64_t*>(shmem::malloc(sizeof(uint64_t) * n));
  m.signals = static_cast<uint64_t*>(shmem::malloc(sizeof(uint64_t) * n));
  m.landing = static_cast<uint8_t*>(shmem::malloc(kOpsPerRound * kMaxBytes));
  if (!m.source || !m.inbox || !m.counts || !m.signals || !m.landing)
    return fail(std::string("malloc: ") + shmem::last_error());
  for (size_t i = 0; i < kSource; ++i) m.source[i] = pattern(me, i);
  std::memset(m.counts, 0, sizeof(uint64_t) * n);
  std::memset(m.signals, 0, sizeof(uint64_t) * n);
  shmem::barrier_all();

  uint64_t done[4] = {}, bytes = 0;
  std::vector<uint64_t> expect_counts(n, 0), expect_signals(n, 0);
  std::vector<uint64_t> fetched(kOpsPerRound), sent(n, 0);
  const auto start = std::chrono::steady_clock::now();
  int round = 0;
  for (;; ++round) {
    // Every PE decides together whether to go on (the slowest clock wins).
    int more =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < seconds;
    MPI_Allreduce(MPI_IN_PLACE, &more, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    if (!more) break;
    std::memset(m.inbox, 0, size_t(n) * kOpsPerRound * kMaxBytes);
    shmem::barrier_all();
    // One launch per round: a block of 96 lanes (a full and a partial warp) walks the round's
    // operations; a Thread-scope one is made by lane 0, a Warp-scope one by the first warp, a
    // Block-scope one by all 96.
    std::vector<Op> ops;
    for (int i = 0; i < kOpsPerRound; ++i) ops.push_back(op_of(seed, round, me, i, n, qps));
    const auto status = mori::host::launch(mori::platform::Dim3{1}, mori::platform::Dim3{96}, [&] {
      const unsigned lane = mori::platform::thread_rank();
      for (int i = 0; i < kOpsPerRound; ++i) {
        const Op& op = ops[i];
        if (op.scope == ScopeKind::kThread && lane == 0)
          run_scoped<Thread>(op, m, me, i, &fetched[i]);
        if (op.scope == ScopeKind::kWarp && lane < 64) run_scoped<Warp>(op, m, me, i, &fetched[i]);
        if (op.scope == ScopeKind::kBlock) run_scoped<Block>(op, m, me, i, &fetched[i]);
      }
      if (lane == 0) shmem::quiet();
    });
    if (!status.ok()) return fail("round " + std::to_string(round) + ": " + status.message());
    for (int i = 0; i < kOpsPerRound; ++i) {
      const Op& op = ops[i];
      ++done[static_cast<int>(op.kind)];
      bytes += op.kind == Kind::kAtomic ? 8 : op.bytes;
      if (op.kind == Kind::kAtomic) {  // only this PE adds to its counter on the target, in order
        if (fetched[i] != sent[op.target])
          return fail("round " + std::to_string(round) + ": fetch_add on PE " +
                      std::to_string(op.target) + " returned " + std::to_string(fetched[i]) +
                      ", not " + std::to_string(sent[op.target]));
        ++sent[op.target];
      }
      if (op.kind == Kind::kGet) {  // blocking: the data was there when the launch ended
        for (size_t b = 0; b < op.bytes; ++b)
          if (m.landing[size_t(i) * kMaxBytes + b] != pattern(op.target, op.src_offset + b))
            return fail("round " + std::to_string(round) + ": get " + std::to_string(i) +
                        " from PE " + std::to_string(op.target) + " byte " + std::to_string(b));
      }
    }
    shmem::barrier_all();
    // Every byte the others (and this PE) put here this round.
    for (int w = 0; w < n; ++w) {
      for (int i = 0; i < kOpsPerRound; ++i) {
        const Op op = op_of(seed, round, w, i, n, qps);
        if (op.target != me) continue;
        if (op.kind == Kind::kAtomic) ++expect_counts[w];
        if (op.kind == Kind::kSignal) ++expect_signals[w];
        if (op.kind != Kind::kPut && op.kind != Kind::kSignal) continue;
        const uint8_t* slot = m.inbox + (size_t(w) * kOpsPerRound + i) * kMaxBytes;
        for (size_t b = 0; b < kMaxBytes; ++b) {
          const uint8_t want = b < op.bytes ? pattern(w, op.src_offset + b) : 0;
          if (slot[b] != want)
            return fail("round " + std::to_string(round) + ": PE " + std::to_string(w) + "'s put " +
                        std::to_string(i) + " byte " + std::to_string(b) + " is " +
                        std::to_string(slot[b]) + ", not " + std::to_string(want));
        }
      }
    }
  }
  shmem::barrier_all();
  // From here on a failure is this PE's verdict, not an abort: every PE reaches the reduction.
  std::string failure;
  for (int w = 0; w < n && failure.empty(); ++w) {
    if (m.counts[w] != expect_counts[w] || m.signals[w] != expect_signals[w])
      failure = "PE " + std::to_string(w) + ": counter " + std::to_string(m.counts[w]) + " of " +
                std::to_string(expect_counts[w]) + ", signal " + std::to_string(m.signals[w]) +
                " of " + std::to_string(expect_signals[w]);
  }
  if (failure.empty() && round == 0) failure = "no round ran";
  if (failure.empty() && me == fail_pe) failure = "failing as --fail-pe asked";
  if (failure.empty()) {
    std::printf(
        "soak: PE %d: %d rounds, %llu puts, %llu gets, %llu atomics, %llu put-signals, %llu "
        "bytes: ok\n",
        me, round, static_cast<unsigned long long>(done[0]),
        static_cast<unsigned long long>(done[1]), static_cast<unsigned long long>(done[2]),
        static_cast<unsigned long long>(done[3]), static_cast<unsigned long long>(bytes));
  }
  for (void* p :
       {static_cast<void*>(m.landing), static_cast<void*>(m.signals), static_cast<void*>(m.counts),
        static_cast<void*>(m.inbox), static_cast<void*>(m.source)})
    shmem::free(p);
  if (shmem::finalize() != 0 && failure.empty())
    failure = std::string("finalize: ") + shmem::last_error();
  if (!failure.empty()) std::fprintf(stderr, "soak: PE %d: FAILED: %s\n", me, failure.c_str());
  std::fflush(stdout);
  // The job's verdict: the number of PEs that failed (MPI outlives shmem: main started it).
  int failed = failure.empty() ? 0 : 1;
  MPI_Allreduce(MPI_IN_PLACE, &failed, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (me == 0) {
    if (failed == 0)
      std::printf("soak: all %d PEs ok\n", n);
    else
      std::fprintf(stderr, "soak: FAILED: %d of %d PEs failed\n", failed, n);
  }
  MPI_Finalize();
  return failed == 0 ? 0 : 1;
}
