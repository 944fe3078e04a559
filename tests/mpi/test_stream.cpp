// The stream-ordered host API on the host backend's streams (shmem/stream_api.hpp): every
// _on_stream call runs after the kernel enqueued before it on the same stream (the kernels write
// slowly, so a call that ran early would move stale data), the caller returns before the work
// runs, two streams interleave with an event between them, the data is checked on every PE and
// the reductions exactly; a wait that never ends times out with its message at synchronize; bad
// arguments fail at the call. Then the host-initiated putmem, getmem, p and g, and the same names
// called from a kernel, which act as the device calls.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <tuple>
#include <type_traits>
#include <vector>

#include "mori/host/stream.hpp"
#include "wait_helpers.hpp"

using namespace mori;
using namespace mori::test;
using mori::host::Stream;

namespace {

constexpr size_t kN = 1000;
std::atomic<bool> ran_after_failure{false};

uint32_t word_of(int pe, size_t i) { return static_cast<uint32_t>(pe * 100003 + i * 7 + 1); }

// A one-lane kernel on `stream` that pauses, then stores value(i) into buf[0, n).
template <typename T, typename F>
void slow_fill(Stream* stream, T* buf, size_t n, F value) {
  auto kernel = [=] {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    for (size_t i = 0; i < n; ++i) buf[i] = value(i);
  };
  REQUIRE(host::launch(stream, {1}, {1}, kernel).ok());
}

template <typename T>
T* symmetric(size_t n) {
  auto* p = static_cast<T*>(shmem::calloc(n, sizeof(T)));
  REQUIRE_MESSAGE(p != nullptr, shmem::last_error());
  return p;
}

// A session, a stream, this PE's neighbours in the ring of PEs, and two symmetric arrays of kN
// words, freed after a barrier.
struct Ring {
  Session s;
  Stream stream;
  const int me = s.me, next = (s.me + 1) % s.n, prev = (s.me + s.n - 1) % s.n;
  uint32_t* src = symmetric<uint32_t>(kN);
  uint32_t* dst = symmetric<uint32_t>(kN);
  // This PE's words plus `add`, in local (not symmetric) memory.
  std::vector<uint32_t> local_words(uint32_t add) const {
    std::vector<uint32_t> v(kN);
    for (size_t i = 0; i < kN; ++i) v[i] = word_of(me, i) + add;
    return v;
  }
  ~Ring() {
    CHECK(shmem::barrier_all() == 0);
    CHECK(shmem::free(src) == 0);
    CHECK(shmem::free(dst) == 0);
  }
};

// The first index where buf differs from want(i), or "".
template <typename T, typename F>
std::string mismatch(const T* buf, size_t n, F want) {
  for (size_t i = 0; i < n; ++i)
    if (buf[i] != want(i))
      return "element " + std::to_string(i) + " is " + std::to_string(buf[i]) + ", want " +
             std::to_string(want(i));
  return "";
}

}  // namespace

TEST_CASE("putmem_on_stream and getmem_on_stream run after the kernel before them") {
  Ring r;
  auto [me, next, prev, src, dst] = std::tuple(r.me, r.next, r.prev, r.src, r.dst);
  Stream& stream = r.stream;
  std::vector<uint32_t> got(kN, 0xFFFFFFFFu);
  REQUIRE(shmem::barrier_all() == 0);
  slow_fill(&stream, src, kN, [me](size_t i) { return word_of(me, i); });
  REQUIRE(shmem::putmem_on_stream(dst, src, kN * 4, next, &stream) == 0);
  REQUIRE(shmem::barrier_all_on_stream(&stream) == 0);
  // The get's destination is overwritten by a kernel first: a get that ran early would be lost.
  slow_fill(&stream, got.data(), kN, [](size_t) { return 7u; });
  REQUIRE(shmem::getmem_on_stream(got.data(), src, kN * 4, next, &stream) == 0);
  CHECK(src[kN - 1] == 0);  // the calls returned before the first kernel ended
  REQUIRE_MESSAGE(shmem::stream_synchronize(&stream) == 0, shmem::last_error());
  CHECK(mismatch(dst, kN, [&](size_t i) { return word_of(prev, i); }) == "");
  CHECK(mismatch(got.data(), kN, [&](size_t i) { return word_of(next, i); }) == "");
}

TEST_CASE("putmem_signal_on_stream, signal_op_on_stream and signal_wait_until_on_stream") {
  Ring r;
  auto [me, next, prev, src, dst] = std::tuple(r.me, r.next, r.prev, r.src, r.dst);
  Stream& stream = r.stream;
  auto* sig = symmetric<uint64_t>(2);
  std::vector<uint32_t> seen(kN, 0);
  REQUIRE(shmem::barrier_all() == 0);
  slow_fill(&stream, src, kN, [me](size_t i) { return word_of(me, i) + 1; });
  REQUIRE(shmem::putmem_signal_on_stream(dst, src, kN * 4, sig, 1, shmem::SIGNAL_ADD, next,
                                         &stream) == 0);
  REQUIRE(shmem::signal_wait_until_on_stream(sig, shmem::CMP_EQ, 1, &stream) == 0);
  // Runs once the signal came, and sees the data that came with it.
  uint32_t* out = seen.data();
  REQUIRE(host::launch(&stream, {1}, {1}, [=] {
            for (size_t i = 0; i < kN; ++i) out[i] = dst[i];
          }).ok());
  REQUIRE(shmem::signal_op_on_stream(sig + 1, 50 + me, shmem::SIGNAL_SET, next, &stream) == 0);
  REQUIRE(shmem::signal_wait_until_on_stream(sig + 1, shmem::CMP_EQ, 50 + prev, &stream) == 0);
  REQUIRE_MESSAGE(shmem::stream_synchronize(&stream) == 0, shmem::last_error());
  CHECK(mismatch(out, kN, [&](size_t i) { return word_of(prev, i) + 1; }) == "");
  CHECK(sig[0] == 1);
  CHECK(sig[1] == uint64_t(50 + prev));
  REQUIRE(shmem::barrier_all() == 0);
  CHECK(shmem::free(sig) == 0);
}

TEST_CASE("quiet, sync_all, team_sync and barrier on a stream order a kernel's puts and stores") {
  Ring r;
  auto [me, next, prev, src, dst] = std::tuple(r.me, r.next, r.prev, r.src, r.dst);
  Stream& stream = r.stream;
  auto* flag = symmetric<uint32_t>(4);
  for (size_t i = 0; i < kN; ++i) src[i] = word_of(me, i) + 2;
  shmem::Team team = shmem::kTeamInvalid;  // the world again, under a team index of its own
  REQUIRE(shmem::team_split_strided(shmem::kTeamWorld, 0, 1, r.s.n, nullptr, 0, &team) == 0);
  REQUIRE(shmem::barrier_all() == 0);
  std::vector<uint32_t> seen(kN, 0);
  uint32_t* out = seen.data();
  uint32_t peer_flags[3] = {};
  uint32_t* pf = peer_flags;
  // quiet + sync_all after a kernel's non-blocking puts: the data is there for the next kernel.
  REQUIRE(host::launch(&stream, {1}, {1}, [=] {
            std::this_thread::sleep_for(std::chrono::milliseconds(30));
            shmem::putmem_nbi<Thread>(dst, src, kN * 4, next);
          }).ok());
  REQUIRE(shmem::quiet_on_stream(&stream) == 0);
  REQUIRE(shmem::sync_all_on_stream(&stream) == 0);
  REQUIRE(host::launch(&stream, {1}, {1}, [=] {
            for (size_t i = 0; i < kN; ++i) out[i] = dst[i];
          }).ok());
  // Plain stores, then a sync of the team (sync_all, team_sync): the peer sees them after.
  auto store_then_read = [&](int k) {
    REQUIRE(host::launch(&stream, {1}, {1}, [=] {
              std::this_thread::sleep_for(std::chrono::milliseconds(20));
              flag[k] = 10 * (k + 1) + me;
            }).ok());
  };
  store_then_read(0);
  REQUIRE(shmem::team_sync_on_stream(team, &stream) == 0);
  // barrier: a kernel's p (complete only at a quiet) is delivered by the team barrier.
  REQUIRE(host::launch(&stream, {1}, {1}, [=] {
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
            shmem::p<uint32_t>(flag + 1, 20 + me, next);
          }).ok());
  REQUIRE(shmem::barrier_on_stream(team, &stream) == 0);
  REQUIRE(host::launch(&stream, {1}, {1}, [=] {
            pf[0] = shmem::g<uint32_t>(flag, next);
            pf[1] = flag[1];
          }).ok());
  REQUIRE_MESSAGE(shmem::stream_synchronize(&stream) == 0, shmem::last_error());
  CHECK(mismatch(out, kN, [&](size_t i) { return word_of(prev, i) + 2; }) == "");
  CHECK(peer_flags[0] == uint32_t(10 + next));
  CHECK(peer_flags[1] == uint32_t(20 + prev));
  REQUIRE(shmem::barrier_all() == 0);
  CHECK(shmem::team_destroy(team) == 0);
  CHECK(shmem::free(flag) == 0);
}

TEST_CASE("the collectives on a stream, after the kernel that writes their sources") {
  Session s;
  Stream stream;
  const int n = s.n, me = s.me;
  constexpr size_t kC = 64, kR = 3000;  // a flagged size, and a reduction past the flagged limit
  auto* src = symmetric<int32_t>(kC);
  auto* bdst = symmetric<int32_t>(kC);
  auto* fdst = symmetric<int32_t>(n * kC);
  auto* asrc = symmetric<int32_t>(n * kC);
  auto* adst = symmetric<int32_t>(n * kC);
  auto* rsrc = symmetric<int64_t>(kR);
  auto* rdst = symmetric<int64_t>(kR);
  auto* dsrc = symmetric<double>(kC);
  auto* ddst = symmetric<double>(kC);
  auto* ssrc = symmetric<uint32_t>(n * kC);
  auto* sdst = symmetric<uint32_t>(kC);
  auto* xsrc = symmetric<uint32_t>(kC);
  auto* xdst = symmetric<uint32_t>(kC);
  auto* bmem = symmetric<int32_t>(kC);  // the byte-counted forms
  auto* fmem = symmetric<int32_t>(n * kC);
  auto* amem = symmetric<int32_t>(n * kC);
  REQUIRE(shmem::barrier_all() == 0);
  const shmem::Team world = shmem::kTeamWorld;
  slow_fill(&stream, src, kC, [me](size_t i) { return int32_t(me * 100 + i); });
  REQUIRE(shmem::broadcast_on_stream(world, bdst, src, kC, n - 1, &stream) == 0);
  REQUIRE(shmem::fcollect_on_stream(world, fdst, src, kC, &stream) == 0);
  slow_fill(&stream, asrc, n * kC, [me](size_t k) { return int32_t(me * 100000 + k); });
  REQUIRE(shmem::alltoall_on_stream(world, adst, asrc, kC, &stream) == 0);
  REQUIRE(shmem::broadcastmem_on_stream(world, bmem, src, kC * 4, 0, &stream) == 0);
  REQUIRE(shmem::fcollectmem_on_stream(world, fmem, src, kC * 4, &stream) == 0);
  REQUIRE(shmem::alltoallmem_on_stream(world, amem, asrc, kC * 4, &stream) == 0);
  slow_fill(&stream, rsrc, kR, [me](size_t i) { return int64_t(me + 1) * 1000 + int64_t(i); });
  REQUIRE(shmem::sum_reduce_on_stream(world, rdst, rsrc, kR, &stream) == 0);
  slow_fill(&stream, dsrc, kC, [me](size_t i) { return me + 0.25 * double(i); });
  REQUIRE(shmem::reduce_on_stream(world, ddst, dsrc, kC, shmem::ReduceOp::kMax, &stream) == 0);
  slow_fill(&stream, ssrc, n * kC, [me](size_t k) { return uint32_t(me + 3 * k); });
  REQUIRE(shmem::sum_reducescatter_on_stream(world, sdst, ssrc, kC, &stream) == 0);
  slow_fill(&stream, xsrc, kC, [me](size_t i) { return uint32_t((1u << me) | (i << 8)); });
  REQUIRE(shmem::or_reduce_on_stream(world, xdst, xsrc, kC, &stream) == 0);
  REQUIRE_MESSAGE(shmem::stream_synchronize(&stream) == 0, shmem::last_error());

  CHECK(mismatch(bdst, kC, [&](size_t i) { return int32_t((n - 1) * 100 + i); }) == "");
  CHECK(mismatch(bmem, kC, [&](size_t i) { return int32_t(i); }) == "");
  CHECK(mismatch(fmem, n * kC, [&](size_t k) { return fdst[k]; }) == "");
  CHECK(mismatch(amem, n * kC, [&](size_t k) { return adst[k]; }) == "");
  CHECK(mismatch(fdst, n * kC, [&](size_t k) { return int32_t((k / kC) * 100 + k % kC); }) == "");
  // Block me of PE p's source: p * 100000 + me * kC + i.
  CHECK(mismatch(adst, n * kC,
                 [&](size_t k) { return int32_t((k / kC) * 100000 + me * kC + k % kC); }) == "");
  const int64_t pes_sum = int64_t(n) * (n + 1) / 2;
  CHECK(mismatch(rdst, kR, [&](size_t i) { return pes_sum * 1000 + n * int64_t(i); }) == "");
  CHECK(mismatch(ddst, kC, [&](size_t i) { return (n - 1) + 0.25 * double(i); }) == "");
  CHECK(mismatch(sdst, kC, [&](size_t i) {
          return uint32_t(n * (n - 1) / 2 + n * 3 * (me * kC + i));
        }) == "");
  CHECK(mismatch(xdst, kC, [&](size_t i) { return uint32_t(((1u << n) - 1) | (i << 8)); }) == "");
  REQUIRE(shmem::barrier_all() == 0);
  for (void* p :
       {(void*)src, (void*)bdst, (void*)fdst, (void*)asrc, (void*)adst, (void*)rsrc, (void*)rdst,
        (void*)dsrc, (void*)ddst, (void*)ssrc, (void*)sdst, (void*)xsrc, (void*)xdst})
    CHECK(shmem::free(p) == 0);
}

// MORI_FOR_EACH_TYPE lists signed char after int8_t, its other name: the stream kernel compiles one
// reduction per type (runtime/stream_op_run.hpp), so a caller that passes the alias's number (2)
// is run under int8_t's.
TEST_CASE("a reduction named by an alias entry's type number runs as its type") {
  Session s;
  Stream stream;
  constexpr size_t kC = 40;
  constexpr int kSchar = shmem::detail::element_type_index<int8_t>() + 1;
  static_assert(std::is_same_v<int8_t, signed char> && kSchar == 2);
  auto* src = symmetric<int8_t>(kC);
  auto* dst = symmetric<int8_t>(kC + 8);  // 8 guard bytes past the result
  std::memset(dst, 0x5a, kC + 8);
  for (size_t i = 0; i < kC; ++i) src[i] = int8_t(s.me - int(i));
  REQUIRE(shmem::barrier_all() == 0);
  REQUIRE(shmem::detail::reduction_on_stream(false, shmem::kTeamWorld, dst, src, kC, kSchar,
                                             shmem::ReduceOp::kMin, &stream) == 0);
  REQUIRE_MESSAGE(shmem::stream_synchronize(&stream) == 0, shmem::last_error());
  CHECK(mismatch(dst, kC, [](size_t i) { return int8_t(-int(i)); }) == "");
  CHECK(mismatch(dst + kC, 8, [](size_t) { return int8_t(0x5a); }) == "");
  CHECK(shmem::detail::reduction_on_stream(false, shmem::kTeamWorld, dst, src, kC, 11,
                                           shmem::ReduceOp::kMin, &stream) != 0);
  CHECK(std::string(shmem::last_error()).find("element type 11 is not in MORI_FOR_EACH_TYPE") !=
        std::string::npos);
  REQUIRE(shmem::barrier_all() == 0);
  CHECK(shmem::free(dst) == 0);
  CHECK(shmem::free(src) == 0);
}

TEST_CASE("two streams interleave, each in its own order, joined by an event") {
  Ring r;
  auto [me, next, prev, src_a, dst_a] = std::tuple(r.me, r.next, r.prev, r.src, r.dst);
  Stream& a = r.stream;
  Stream b;
  auto* src_b = symmetric<uint32_t>(kN);
  auto* dst_b = symmetric<uint32_t>(kN);
  std::vector<uint32_t> seen_a(kN), seen_b(kN);
  uint32_t *out_a = seen_a.data(), *out_b = seen_b.data();
  REQUIRE(shmem::barrier_all() == 0);
  // The calls alternate between the streams; each stream keeps its own order.
  slow_fill(&a, src_a, kN, [me](size_t i) { return word_of(me, i) + 10; });
  slow_fill(&b, src_b, kN, [me](size_t i) { return word_of(me, i) + 20; });
  REQUIRE(shmem::putmem_on_stream(dst_a, src_a, kN * 4, next, &a) == 0);
  REQUIRE(shmem::putmem_on_stream(dst_b, src_b, kN * 4, prev, &b) == 0);
  host::Event a_done;
  a_done.record(&a);
  host::stream_wait_event(&b, a_done);
  // One barrier, on b, after both streams' puts on every PE.
  REQUIRE(shmem::barrier_all_on_stream(&b) == 0);
  REQUIRE(host::launch(&b, {1}, {1}, [=] {
            for (size_t i = 0; i < kN; ++i) out_a[i] = dst_a[i], out_b[i] = dst_b[i];
          }).ok());
  REQUIRE_MESSAGE(shmem::stream_synchronize(&b) == 0, shmem::last_error());
  REQUIRE_MESSAGE(shmem::stream_synchronize(&a) == 0, shmem::last_error());
  CHECK(mismatch(out_a, kN, [&](size_t i) { return word_of(prev, i) + 10; }) == "");
  CHECK(mismatch(out_b, kN, [&](size_t i) { return word_of(next, i) + 20; }) == "");
  REQUIRE(shmem::barrier_all() == 0);
  CHECK(shmem::free(src_b) == 0);
  CHECK(shmem::free(dst_b) == 0);
}

TEST_CASE("a signal wait on a stream times out and synchronize reports it") {
  ScopedTimeout timeout("200");
  Session s;
  auto* sig = symmetric<uint64_t>(1);
  REQUIRE(shmem::barrier_all() == 0);
  {
    Stream stream;
    REQUIRE(shmem::signal_wait_until_on_stream(sig, shmem::CMP_EQ, 42, &stream) == 0);
    ran_after_failure = false;
    REQUIRE(host::launch(&stream, {1}, {1}, [] { ran_after_failure = true; }).ok());
    CHECK(shmem::stream_synchronize(&stream) == -1);
    const std::string want = "signal_wait_until timed out after 200 ms: *" + hex_text(sig) +
                             " is 0, waiting for == 42 (PE " + std::to_string(s.me) + ")";
    CHECK_MESSAGE(std::string(shmem::last_error()).find(want) != std::string::npos,
                  shmem::last_error());
    CHECK_FALSE(ran_after_failure);  // the kernel behind the failure did not run
    CHECK(std::string(shmem::device_error()).find(want) != std::string::npos);
    CHECK(shmem::stream_synchronize(&stream) == 0);  // reported once
  }
  REQUIRE(shmem::barrier_all() == 0);
  CHECK(shmem::free(sig) == 0);
}

TEST_CASE("bad arguments fail at the call with the reason, and nothing is enqueued") {
  Session s;
  Stream stream;
  auto* buf = symmetric<uint64_t>(16);
  uint64_t local[4] = {};
  float fsrc[4] = {}, *fbuf = symmetric<float>(4);
  auto fails = [](int rc, const std::string& want) {
    CHECK(rc == -1);
    CHECK_MESSAGE(std::string(shmem::last_error()).find(want) != std::string::npos,
                  shmem::last_error(), " (wanted: ", want, ")");
  };
  const std::string n = std::to_string(s.n);
  fails(shmem::putmem_on_stream(buf, local, 8, s.n, &stream),
        "putmem_on_stream: PE " + n + " is not in [0, " + n + ")");
  fails(shmem::putmem_on_stream(local, buf, 8, 0, &stream),
        "putmem_on_stream: dest " + hex_text(local) +
            " is not symmetric (in the heap or a registered buffer)");
  fails(shmem::getmem_on_stream(local, buf, 1 << 30, 0, &stream),
        "bytes runs past the end of its symmetric range");
  fails(shmem::putmem_signal_on_stream(buf, local, 8, buf + 1, 1, shmem::AMO_ADD, 0, &stream),
        "putmem_signal_on_stream: sig_op");
  fails(shmem::signal_op_on_stream(local, 1, shmem::SIGNAL_SET, 0, &stream),
        "signal_op_on_stream: sig_addr " + hex_text(local) + " is not symmetric");
  fails(shmem::signal_wait_until_on_stream(buf, static_cast<shmem::Cmp>(9), 1, &stream),
        "signal_wait_until_on_stream: cmp 9 is not a comparison");
  fails(shmem::team_sync_on_stream(40, &stream),
        "team_sync_on_stream: team 40 is not a valid team");
  fails(shmem::broadcast_on_stream(shmem::kTeamWorld, buf, buf + 8, 4, s.n, &stream),
        "broadcast_on_stream: root " + n + " is not a PE of team 0");
  fails(shmem::fcollect_on_stream(shmem::kTeamWorld, buf, buf + 8, 1 << 24, &stream),
        "fcollect_on_stream: dest");
  fails(shmem::and_reduce_on_stream(shmem::kTeamWorld, fbuf, fsrc, 4, &stream),
        "reduce_on_stream: op 0 (and, or, xor) takes integer types only");
  CHECK(stream.idle());
  CHECK(shmem::stream_synchronize(&stream) == 0);
  REQUIRE(shmem::barrier_all() == 0);
  CHECK(shmem::free(fbuf) == 0);
  CHECK(shmem::free(buf) == 0);
}

TEST_CASE("host-initiated putmem, getmem, p and g block until done") {
  Ring r;
  auto [me, next, prev, dst] = std::tuple(r.me, r.next, r.prev, r.dst);
  auto* word = symmetric<long>(2);
  auto* dword = symmetric<double>(1);
  REQUIRE(shmem::barrier_all() == 0);
  std::vector<uint32_t> src = r.local_words(3), got(kN);
  REQUIRE_MESSAGE(shmem::putmem(dst, src.data(), kN * 4, next) == 0, shmem::last_error());
  REQUIRE(shmem::p(word, long(-7 - me), next) == 0);
  REQUIRE(shmem::p(dword, 0.5 + me, next) == 0);
  REQUIRE(shmem::barrier_all() == 0);
  CHECK(mismatch(dst, kN, [&](size_t i) { return word_of(prev, i) + 3; }) == "");
  CHECK(*word == -7 - prev);
  CHECK(*dword == 0.5 + prev);
  REQUIRE(shmem::getmem(got.data(), dst, kN * 4, next) == 0);
  CHECK(mismatch(got.data(), kN, [&](size_t i) { return word_of(me, i) + 3; }) == "");
  CHECK(shmem::g(word, next) == -7 - me);
  CHECK(shmem::g(dword, next) == 0.5 + me);
  // Failures name the call.
  CHECK(shmem::putmem(src.data(), src.data(), 4, next) == -1);
  CHECK(std::string(shmem::last_error()).rfind("putmem: dest", 0) == 0);
  CHECK(shmem::g(word, r.s.n) == 0);
  CHECK(std::string(shmem::last_error()).rfind("g: PE " + std::to_string(r.s.n), 0) == 0);
  CHECK(shmem::free(dword) == 0);  // free begins with a barrier
  CHECK(shmem::free(word) == 0);
}

TEST_CASE("a kernel that calls putmem, getmem, p and g without a scope runs the device calls") {
  Ring r;
  auto [me, next, prev, dst] = std::tuple(r.me, r.next, r.prev, r.dst);
  auto* word = symmetric<int>(1);
  REQUIRE(shmem::barrier_all() == 0);
  std::vector<uint32_t> src = r.local_words(4), got(kN);
  const uint32_t* in = src.data();
  uint32_t* out = got.data();
  int fetched = 0;
  int* f = &fetched;
  // On the default stream: the host functions' own path would enqueue on it and wait for itself.
  REQUIRE(host::launch(nullptr, {1}, {1}, [=] {
            shmem::putmem(dst, in, kN * 4, next);
            shmem::p(word, 90 + me, next);
            shmem::quiet();
          }).ok());
  REQUIRE_MESSAGE(shmem::stream_synchronize(nullptr) == 0, shmem::last_error());
  REQUIRE(shmem::barrier_all() == 0);
  REQUIRE(host::launch(nullptr, {1}, {1}, [=] {
            shmem::getmem(out, dst, kN * 4, next);
            *f = shmem::g(word, next);
          }).ok());
  REQUIRE_MESSAGE(shmem::stream_synchronize(nullptr) == 0, shmem::last_error());
  CHECK(mismatch(dst, kN, [&](size_t i) { return word_of(prev, i) + 4; }) == "");
  CHECK(mismatch(out, kN, [&](size_t i) { return word_of(me, i) + 4; }) == "");
  CHECK(fetched == 90 + me);
  // A bad PE traps with the device check's message, not the host call's return.
  const std::string err = launch_error({1}, {1}, [&] { shmem::putmem(dst, in, 4, r.s.n); });
  CHECK_MESSAGE(
      err.find("putmem: PE " + std::to_string(r.s.n) + " is out of range") != std::string::npos,
      err);
  CHECK(std::string(shmem::device_error()).find("is out of range") != std::string::npos);
  CHECK(shmem::free(word) == 0);  // free begins with a barrier
}
