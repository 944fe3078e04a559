// Communication contexts (shmem/ctx.hpp, runtime/contexts.cpp), over P2P and over each NIC's
// software NIC in its adversarial mode (the mpi.rdma_* variants): the host's pool, its limit and
// every error; device creation drawing from the same pool, threads racing for it, and the device's
// traps; RMA, AMOs and signals on contexts in every scope, checked on every PE; and a context's
// quiet and fence acting on its own QP only, read from the QPs' counters.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "device_harness.hpp"

namespace shmem = mori::shmem;
using namespace mori::test;
using mori::Block, mori::Thread, mori::Warp;
using shmem::Ctx;

namespace {

std::string last_error() { return shmem::last_error(); }
std::string pe_text(int pe) { return std::to_string(pe); }

// This PE's endpoint of QP `qp` to PE `pe`, as the device's engine keeps it (host backend: the
// device state is this process's).
const mori::state::RdmaEndpoint& endpoint(int pe, int qp) {
  const auto& s = shmem::globalGpuStates;
  return s.rdma_endpoints[pe * s.num_qp_per_pe + qp];
}

template <typename T>
T* zeroed(size_t count) {
  auto* p = static_cast<T*>(shmem::calloc(count, sizeof(T)));
  REQUIRE_MESSAGE(p != nullptr, shmem::last_error());
  return p;
}

// Clears the device-error record after an expected trap, so the session goes on.
void clear_trap() { shmem::globalGpuStates.error->code = 0; }

}  // namespace

TEST_CASE("ctx_create and ctx_destroy on the host: the pool, its limit, reuse and errors") {
  Ctx c = shmem::kCtxDefault;
  CHECK(shmem::ctx_create(0, &c) == -1);  // before init
  CHECK(c == shmem::kCtxInvalid);
  CHECK(last_error() == "ctx_create: not initialised (call init or init_attr first)");

  ScopedEnv qps("MORI_NUM_QP_PER_PE", "4");
  Session s;
  const long options[] = {0, shmem::kCtxPrivate,
                          shmem::kCtxSerialized | shmem::kCtxNoStore | shmem::kCtxPrivate};
  Ctx made[3];
  for (int i = 0; i < 3; ++i) {
    REQUIRE_MESSAGE(shmem::ctx_create(options[i], &made[i]) == 0, last_error());
    CHECK(made[i].qp == i + 1);  // the lowest free QP; QP 0 is the default context's
  }
  Ctx extra{7};
  CHECK(shmem::ctx_create(0, &extra) == -1);
  CHECK(extra == shmem::kCtxInvalid);
  CHECK(last_error() ==
        "ctx_create: no free context: all 3 of MORI_NUM_QP_PER_PE=4 queue pairs beyond the "
        "default are in use (destroy a context, or raise MORI_NUM_QP_PER_PE, up to 256)");

  // A destroyed context's QP is the next one handed out.
  REQUIRE(shmem::ctx_destroy(made[1]) == 0);
  REQUIRE(shmem::ctx_create(shmem::kCtxPrivate, &extra) == 0);
  CHECK(extra.qp == 2);
  REQUIRE(shmem::ctx_destroy(extra) == 0);
  CHECK(shmem::ctx_destroy(extra) == -1);
  CHECK(last_error() == "ctx_destroy: context 2 is not live on PE " + pe_text(s.me) +
                            " (already destroyed, or never created)");

  CHECK(shmem::ctx_destroy(shmem::kCtxDefault) == -1);
  CHECK(last_error() == "ctx_destroy: the default context (queue pair 0) cannot be destroyed");
  CHECK(shmem::ctx_destroy(Ctx{4}) == -1);
  CHECK(last_error() ==
        "ctx_destroy: context 4 is not a context of this job: created contexts are queue pairs 1 "
        "to 3 (MORI_NUM_QP_PER_PE=4)");
  CHECK(shmem::ctx_destroy(shmem::kCtxInvalid) == 0);  // OpenSHMEM 1.5: no operation
  CHECK(shmem::ctx_create(8, &extra) == -1);
  CHECK(last_error() ==
        "ctx_create: options 8 has bits other than SHMEM_CTX_PRIVATE (1), SHMEM_CTX_SERIALIZED "
        "(2) and SHMEM_CTX_NOSTORE (4)");
  CHECK(shmem::ctx_create(0, nullptr) == -1);
  CHECK(last_error() == "ctx_create: ctx is null");
  CHECK(shmem::ctx_destroy(made[0]) == 0);
  CHECK(shmem::ctx_destroy(made[2]) == 0);
}

TEST_CASE("ctx_create: MORI_NUM_QP_PER_PE=1 leaves no QP for contexts") {
  ScopedEnv qps("MORI_NUM_QP_PER_PE", "1");
  Session s;
  Ctx c{};
  CHECK(shmem::ctx_create(0, &c) == -1);
  CHECK(last_error() ==
        "ctx_create: no free context: MORI_NUM_QP_PER_PE=1 leaves no queue pair beyond the "
        "default (QP 0) for contexts");
  int status = -1;
  launch({1}, {1}, [&] { status = shmem::ctx_create<Thread>(0, &c); });
  CHECK(status == shmem::kCtxNoFreeQp);
  CHECK(c == shmem::kCtxInvalid);
}

TEST_CASE("ctx_create on the device draws from the host's pool") {
  ScopedEnv qps("MORI_NUM_QP_PER_PE", "8");
  Session s;
  Ctx host[2];
  for (Ctx& c : host) REQUIRE_MESSAGE(shmem::ctx_create(0, &c) == 0, last_error());

  // 32 threads race for the 5 QPs left: each is handed out once, the others fail without a trap.
  constexpr int kThreads = 32;
  std::vector<Ctx> got(kThreads, Ctx{99});
  std::vector<int> status(kThreads, -1);
  launch({1}, {kThreads}, [&] {
    const int t = Block::rank();
    status[t] = shmem::ctx_create<Thread>(shmem::kCtxSerialized, &got[t]);
  });
  std::vector<int> qps_got;
  for (int t = 0; t < kThreads; ++t) {
    if (status[t] == shmem::kCtxCreated) {
      qps_got.push_back(got[t].qp);
    } else {
      CHECK(status[t] == shmem::kCtxNoFreeQp);
      CHECK(got[t] == shmem::kCtxInvalid);
    }
  }
  std::sort(qps_got.begin(), qps_got.end());
  CHECK(qps_got == std::vector<int>{3, 4, 5, 6, 7});
  CHECK(std::string(shmem::ctx_status_text(shmem::kCtxNoFreeQp)) ==
        "no free context: every queue pair beyond the default is in use (MORI_NUM_QP_PER_PE)");
  Ctx c{};
  CHECK(shmem::ctx_create(0, &c) == -1);  // the host sees the device's claims
  CHECK(last_error().find("all 7 of MORI_NUM_QP_PER_PE=8 queue pairs") != std::string::npos);

  // A QP the device frees goes to the host's next create, and one the host frees to the device's.
  launch({1}, {1}, [&] { shmem::ctx_destroy<Thread>(Ctx{5}); });
  REQUIRE(shmem::ctx_create(0, &c) == 0);
  CHECK(c.qp == 5);
  REQUIRE(shmem::ctx_destroy(host[0]) == 0);
  // Block scope: every thread returns the leader's claim, read from the shared handle.
  Ctx shared{};
  std::atomic<int> agree{0};
  launch({1}, block_for<Block>(), [&] {
    const int st = shmem::ctx_create<Block>(0, &shared);
    agree += st == shmem::kCtxCreated && shared.qp == 1;
  });
  const int block = static_cast<int>(block_for<Block>().x);
  CHECK(agree.load() == block);
  launch({1}, block_for<Warp>(), [&] {
    if (shmem::ctx_create<Warp>(16, &shared) == shmem::kCtxBadOptions &&
        shared == shmem::kCtxInvalid)
      agree -= 1;
  });
  CHECK(agree.load() == block - static_cast<int>(block_for<Warp>().x));

  // The device's traps: destroying twice, destroying the default context, using a dead context.
  launch({1}, block_for<Block>(), [&] { shmem::ctx_destroy<Block>(Ctx{1}); });
  const std::string where = "(PE " + pe_text(s.me) + ", MORI_NUM_QP_PER_PE = 8)";
  std::string err = launch_error({1}, {1}, [&] { shmem::ctx_destroy<Thread>(Ctx{1}); });
  CHECK_MESSAGE(
      err.find("ctx_destroy: context 1 is not live: already destroyed, or never created " +
               where) != std::string::npos,
      err);
  clear_trap();
  err = launch_error({1}, {1}, [&] { shmem::ctx_destroy<Thread>(shmem::kCtxDefault); });
  CHECK_MESSAGE(
      err.find("ctx_destroy: context 0 is the default context, which cannot be destroyed " +
               where) != std::string::npos,
      err);
  clear_trap();
  uint64_t* word = zeroed<uint64_t>(1);
  for (Ctx dead : {Ctx{1}, shmem::kCtxInvalid, Ctx{8}}) {
    err = launch_error({1}, {1}, [&] { shmem::ctx_p(dead, word, uint64_t{1}, s.me); });
    CHECK_MESSAGE(err.find("ctx_p: context " + std::to_string(dead.qp) +
                           " is not a live context of PE " + pe_text(s.me) +
                           " (kCtxInvalid, destroyed, or never created; MORI_NUM_QP_PER_PE = 8)") !=
                      std::string::npos,
                  err);
    clear_trap();
  }
  launch({1}, {1}, [&] { shmem::ctx_destroy<Thread>(shmem::kCtxInvalid); });  // no operation
  for (int qp : {2, 3, 4, 5, 6, 7}) CHECK(shmem::ctx_destroy(Ctx{qp}) == 0);
  CHECK(shmem::free(word) == 0);
}

namespace {

constexpr int kContexts = 3;   // MORI_NUM_QP_PER_PE's default, 4, leaves 3
constexpr size_t kElems = 40;  // past every provider's inline limit: a keyed RDMA write

// One kernel in scope S: the scope makes kContexts contexts, puts, puts with signal and AMOs on
// them to other PEs, completes each context with its own quiet, and destroys them.
template <typename S>
struct ScopeRun {
  Session& s;
  int next = (s.me + 1) % s.n, prev = (s.me + s.n - 1) % s.n;
  GuardedSlots<uint64_t> puts{kContexts, kElems}, signalled{kContexts, kElems};
  Registered<uint64_t> src{kContexts * kElems}, fetched{kContexts * kElems + 1};
  uint64_t* sig = zeroed<uint64_t>(1);
  uint64_t* counters = zeroed<uint64_t>(3);  // add, fetch_add, fetch_inc_nbi

  explicit ScopeRun(Session& session) : s(session) {
    for (size_t i = 0; i < src.size(); ++i) src[i] = value_of<uint64_t>(s.me, i);
  }
  ~ScopeRun() {
    CHECK(shmem::free(sig) == 0);
    CHECK(shmem::free(counters) == 0);
  }

  uint64_t run() {
    std::atomic<uint64_t> bad{0};
    Ctx ctx[kContexts];
    launch({1}, block_for<S>(), [&] {
      for (Ctx& c : ctx) bad += shmem::ctx_create<S>(0, &c) != shmem::kCtxCreated;
      for (int k = 0; k < kContexts; ++k) {
        shmem::ctx_put_nbi<S>(ctx[k], puts.slot(k), src.data() + k * kElems, kElems, next);
        shmem::ctx_put_signal_nbi<S>(ctx[k], signalled.slot(k), src.data() + k * kElems, kElems,
                                     sig, 1, shmem::SIGNAL_ADD, next);
      }
      const Ctx mine = ctx[S::rank() % kContexts];
      for (int pe = 0; pe < s.n; ++pe) {
        shmem::ctx_atomic_add(mine, &counters[0], uint64_t{1}, pe);
        bad += shmem::ctx_atomic_fetch_add(mine, &counters[1], uint64_t{1}, pe) >=
               uint64_t(s.n) * S::size();
      }
      if (S::leader()) shmem::ctx_atomic_fetch_inc_nbi(ctx[1], fetched.data(), &counters[2], next);
      S::sync();
      if (S::leader())
        for (const Ctx& c : ctx) shmem::ctx_quiet(c);
      S::sync();
      if (S::leader()) bad += fetched[0] != 0;  // the only increment of next's counter so far
      for (const Ctx& c : ctx) shmem::ctx_destroy<S>(c);
    });
    return bad.load();
  }

  // The second kernel: gets of next's slots (written by this PE) and g/p, on new contexts.
  uint64_t get_back() {
    std::atomic<uint64_t> bad{0};
    Ctx c{};
    launch({1}, block_for<S>(), [&] {
      bad += shmem::ctx_create<S>(shmem::kCtxPrivate, &c) != shmem::kCtxCreated;
      for (int k = 0; k < kContexts; ++k)
        shmem::ctx_get<S>(c, fetched.data() + k * kElems, puts.slot(k), kElems, next);
      if (S::leader()) {
        shmem::ctx_quiet(c);
        bad += shmem::ctx_g(c, &counters[2], next) != 1;
      }
      S::sync();
      for (size_t i = 0; i < kContexts * kElems; ++i) bad += fetched[i] != src[i];
      shmem::ctx_destroy<S>(c);
    });
    return bad.load();
  }

  // What this PE holds from prev: its puts and signalled puts, the signal, exact AMO totals.
  void check() {
    for (int k = 0; k < kContexts; ++k) {
      for (size_t i = 0; i < kElems; ++i) {
        CHECK(puts.slot(k)[i] == value_of<uint64_t>(prev, k * kElems + i));
        CHECK(signalled.slot(k)[i] == value_of<uint64_t>(prev, k * kElems + i));
      }
    }
    const std::vector<size_t> used(kContexts, kElems);
    CHECK(puts.check_guards(used) == "");
    CHECK(signalled.check_guards(used) == "");
    CHECK(*sig == uint64_t{kContexts});
    const uint64_t total = uint64_t(s.n) * block_for<S>().x;
    CHECK(counters[0] == total);
    CHECK(counters[1] == total);
    CHECK(counters[2] == 1);
  }
};

}  // namespace

TEST_CASE_TEMPLATE("RMA, AMOs and signals on contexts made in scope S reach every PE", S, Thread,
                   Warp, Block) {
  Session s;
  ScopeRun<S> r(s);
  CHECK(r.run() == 0);
  // Every context's quiet (and destroy) ran before the kernel ended: no drain is needed for the
  // data to be there, so a plain MPI barrier (not barrier_all, which drains the NIC) orders it.
  MPI_Barrier(MPI_COMM_WORLD);
  r.check();
  MPI_Barrier(MPI_COMM_WORLD);
  CHECK(r.get_back() == 0);
  MPI_Barrier(MPI_COMM_WORLD);
}

TEST_CASE("a context's quiet and fence act on its own queue pair only") {
  Session s;
  const int next = (s.me + 1) % s.n, prev = (s.me + s.n - 1) % s.n;
  Ctx a{}, b{};
  REQUIRE(shmem::ctx_create(0, &a) == 0);
  REQUIRE(shmem::ctx_create(0, &b) == 0);
  GuardedSlots<uint64_t> dst(2, kElems);
  Registered<uint64_t> src(2 * kElems);
  for (size_t i = 0; i < src.size(); ++i) src[i] = value_of<uint64_t>(s.me, i);

  launch({1}, {1}, [&] {
    shmem::ctx_put_nbi(a, dst.slot(0), src.data(), kElems, next);
    shmem::ctx_put_nbi(b, dst.slot(1), src.data() + kElems, kElems, next);
    shmem::ctx_quiet(b);
    shmem::ctx_fence(b);
  });
  if (over_rdma()) {
    // Only a quiet's polling advances `completed` (the NIC's completions wait in the CQ), so A's
    // put is still outstanding as the device sees it: b's quiet did not wait for it. Its fence
    // marked b's next reservation (bit 63 of `reserved`) and left a's alone.
    const auto &ea = endpoint(next, a.qp), &eb = endpoint(next, b.qp);
    CHECK(ea.submitted == 1);
    CHECK(ea.completed == 0);
    CHECK(eb.completed == eb.submitted);
    CHECK(eb.submitted == 1);
    CHECK((eb.reserved >> 63) == 1);
    CHECK((ea.reserved >> 63) == 0);
  }
  launch({1}, {1}, [&] { shmem::ctx_quiet(a); });
  if (over_rdma()) CHECK(endpoint(next, a.qp).completed == endpoint(next, a.qp).submitted);
  // Both puts were completed by their contexts' quiets: no drain before the check.
  MPI_Barrier(MPI_COMM_WORLD);
  for (size_t i = 0; i < 2 * kElems; ++i)
    CHECK(dst.slot(i / kElems)[i % kElems] == value_of<uint64_t>(prev, i));
  CHECK(dst.check_guards({kElems, kElems}) == "");
  MPI_Barrier(MPI_COMM_WORLD);
  CHECK(shmem::ctx_destroy(a) == 0);
  CHECK(shmem::ctx_destroy(b) == 0);
}
