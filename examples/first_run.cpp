// first_run: the first program to run on a new cluster (docs/rdma-hardware.md, "Bringing MLX5 up
// on a cluster"). Seven steps, each one kernel launch, in the order that isolates a fault: each
// step uses only what the ones before it proved.
//
//   1 p                 one 8-byte p to the next PE (QP connection, rkey, inline WQE, doorbell)
//   2 g                 one 8-byte g of the next PE's known value (RDMA read, lkey, CQ poll)
//   3 quiet after p     quiet, then the p of step 1 must have landed
//   4 64-bit fetch-add  every thread of every PE adds to every PE's word: exact totals, and the
//                       old values each PE fetched are a permutation of its own adds' order
//   5 32-bit fetch-add  the same on 4 bytes (MLX5 lands 4-byte results big-endian)
//   6 1 MiB put         one putmem<Warp> of 1 MiB, checked byte for byte, guard bytes around it
//   7 get under load    one warp gets while three warps put to other addresses; each get's words
//                       are checked as soon as it returns (a stale read shows there)
//
//   mpirun -np 2 --map-by ppr:1:node -x MORI_SHMEM_TIMEOUT_MS=10000 build/examples/first_run
//
// Every PE prints one line per step, "first_run: PE 0: step 3 quiet after p: ok", or "FAILED:"
// with what was expected and what was seen, and stops at the first failed step with exit 1.
// Self-test: MORI_FIRST_RUN_BREAK=<step> corrupts one expected value of that step on every PE, so
// that step must fail (ctest examples.first_run.break).
//
// One source for both backends: the host backend runs each step with mori::host::launch; compiled
// as HIP, the same step functors run as __global__ kernels.
#if defined(__HIP__)
#include <hip/hip_runtime.h>
#endif

#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "mori/shmem.hpp"
#include "mori/shmem/device_api.hpp"
#if !defined(__HIP__)
#include "mori/host/launch.hpp"
#endif

namespace shmem = mori::shmem;

// The device state this code object's kernels read, registered with the runtime at load (hip
// backend); on the host backend it is libmori_shmem's and this is empty.
MORI_SHMEM_DEFINE_GPU_STATES();

namespace {

// ---- sizes ----------------------------------------------------------------------------------------
constexpr int kAmoThreads = 64;  // threads of the fetch-add steps, each adding to every PE
constexpr int kMaxPes = 4;       // the fetch-add encoding gives each PE 8 bits of 32 at 4
constexpr size_t kPutBytes = size_t{1} << 20;
constexpr size_t kGuardBytes = 4096;  // poisoned on both sides of the put's destination
constexpr int kGetRounds = 32;
constexpr size_t kChunkWords = 512;  // 4 KiB per get and per load put
constexpr int kLoadWarps = 3;
constexpr int kWarpLanes = 64;
constexpr uint64_t kPoison64 = 0xA5A5A5A5A5A5A5A5ull;
constexpr uint8_t kPoison8 = 0xA5;
// Counter bases with every byte distinct, so that a byte-order fault changes every fetched value.
constexpr uint64_t kBase64 = 0x0102030405060708ull;
constexpr uint32_t kBase32 = 0x01020304u;

// ---- the values each step sends (constexpr: also usable in device code under HIP) -------------------
constexpr uint64_t p_value(int pe) { return 0xC1A0000012345678ull ^ (uint64_t(pe + 1) << 32); }
constexpr uint64_t g_value(int pe) { return 0x0123456789ABCDEFull ^ (uint64_t(pe + 1) << 40); }
constexpr uint64_t get_word(int pe, int round, size_t i) {
  return (0x6E7ull << 52) | (uint64_t(pe) << 44) | (uint64_t(round) << 24) | i;
}
constexpr uint64_t load_word(int pe, size_t chunk, size_t i) {
  return (0x10Aull << 52) | (uint64_t(pe) << 44) | (uint64_t(chunk) << 24) | i;
}
uint8_t put_byte(int pe, size_t i) {
  const uint64_t x = (i + 1) * 0x9E3779B97F4A7C15ull;
  return static_cast<uint8_t>((x >> 56) ^ (x >> 23) ^ static_cast<uint64_t>(pe * 0x3B));
}
// PE q's adds to a counter of W bits are 1 << (q * W / n): the old value then counts, per PE, the
// adds that came before, so a PE can check the order of its own adds without the others' values.
template <typename T>
constexpr int field_bits(int n) {
  return static_cast<int>(sizeof(T) * 8) / n;
}
template <typename T>
constexpr T weight(int pe, int n) {
  return static_cast<T>(T{1} << (pe * field_bits<T>(n)));
}

// ---- the symmetric buffers ------------------------------------------------------------------------
struct LaneReport {  // what one lane of the get warp saw right after each get returned
  uint64_t bad, round, index, seen;
};

struct Symm {
  uint64_t* p_word;     // step 1 lands here
  uint64_t* g_word;     // step 2 reads the next PE's
  uint64_t* g_result;   // step 2's value, for the host
  uint64_t* ctr64;      // step 4's counter
  uint64_t* fetched64;  // [target PE][thread]
  uint32_t* ctr32;
  uint32_t* fetched32;
  uint8_t* put_src;     // kPutBytes
  uint8_t* put_region;  // guard, kPutBytes, guard
  uint64_t* get_src;    // [round][word]
  uint64_t* get_dst;
  uint64_t* load_src;  // [warp][round][word]
  uint64_t* load_dst;
  LaneReport* reports;  // [lane]
};

constexpr size_t kGetWords = kGetRounds * kChunkWords;
constexpr size_t kLoadWords = size_t{kLoadWarps} * kGetRounds * kChunkWords;

// ---- the steps: device code, one functor each -----------------------------------------------------
struct PStep {
  Symm s;
  int me, next;
  MORI_DEVICE void operator()() const { shmem::p(s.p_word, p_value(me), next); }
};

struct GStep {
  Symm s;
  int next;
  MORI_DEVICE void operator()() const { *s.g_result = shmem::g(s.g_word, next); }
};

struct QuietStep {
  MORI_DEVICE void operator()() const { shmem::quiet(); }
};

// Each thread adds to every PE's counter, starting at a different PE so that the targets mix.
template <typename T>
struct FetchAddStep {
  T* ctr;
  T* fetched;
  int me, n;
  MORI_DEVICE void operator()() const {
    const int t = mori::platform::thread_rank();
    for (int k = 0; k < n; ++k) {
      const int target = (t + k) % n;
      fetched[target * kAmoThreads + t] = shmem::atomic_fetch_add(ctr, weight<T>(me, n), target);
    }
  }
};

struct PutStep {
  Symm s;
  int next;
  MORI_DEVICE void operator()() const {
    shmem::putmem<mori::Warp>(s.put_region + kGuardBytes, s.put_src, kPutBytes, next);
  }
};

// Warp 0 gets the next PE's rounds one by one and checks each at once; warps 1..kLoadWarps keep
// the same QP busy with puts to other addresses meanwhile.
struct GetUnderLoadStep {
  Symm s;
  int next;
  MORI_DEVICE void operator()() const {
    const int warp = mori::platform::warp_id();
    if (warp == 0) {
      get_and_check();
    } else {
      load(warp - 1);
    }
  }
  MORI_DEVICE void get_and_check() const {
    const int lane = mori::Warp::rank(), lanes = mori::Warp::size();
    LaneReport r{0, 0, 0, 0};
    for (int round = 0; round < kGetRounds; ++round) {
      uint64_t* dst = s.get_dst + round * kChunkWords;
      shmem::getmem<mori::Warp>(dst, s.get_src + round * kChunkWords, kChunkWords * 8, next);
      for (size_t i = lane; i < kChunkWords; i += lanes) {
        const uint64_t seen = *static_cast<volatile uint64_t*>(dst + i);
        if (seen != get_word(next, round, i) && r.bad++ == 0) r = {1, uint64_t(round), i, seen};
      }
    }
    s.reports[lane] = r;
  }
  MORI_DEVICE void load(int w) const {
    for (int round = 0; round < kGetRounds; ++round) {
      const size_t at = (size_t(w) * kGetRounds + round) * kChunkWords;
      shmem::putmem_nbi<mori::Warp>(s.load_dst + at, s.load_src + at, kChunkWords * 8, next);
      // A quiet now and then: completions are polled while the get warp polls too.
      if (round % 8 == 7 && mori::Warp::leader()) shmem::quiet();
      mori::Warp::sync();
    }
    if (mori::Warp::leader()) shmem::quiet();
  }
};

// ---- launching, per backend -----------------------------------------------------------------------
#if defined(__HIP__)
template <typename Step>
__global__ void step_kernel(Step step) {
  step();
}

std::string hip_error(hipError_t e, const char* what) {
  std::string out = std::string(what) + ": " + hipGetErrorString(e);
  const char* record = shmem::device_error();
  if (record && *record) out += std::string(" (") + record + ")";
  return out;
}

// One block; an empty string when it ran.
template <typename Step>
std::string launch(const Step& step, unsigned threads) {
  hipLaunchKernelGGL(step_kernel<Step>, dim3(1), dim3(threads), 0, 0, step);
  if (hipError_t e = hipGetLastError(); e != hipSuccess) return hip_error(e, "kernel launch");
  if (hipError_t e = hipDeviceSynchronize(); e != hipSuccess) return hip_error(e, "kernel");
  return {};
}

bool to_device(void* dst, const void* src, size_t bytes) {
  return hipMemcpy(dst, src, bytes, hipMemcpyHostToDevice) == hipSuccess;
}
bool to_host(void* dst, const void* src, size_t bytes) {
  return hipMemcpy(dst, src, bytes, hipMemcpyDeviceToHost) == hipSuccess;
}
#else
template <typename Step>
std::string launch(const Step& step, unsigned threads) {
  auto status = mori::host::launch({1}, {threads}, [&] { step(); });
  return status.ok() ? std::string() : status.message();
}

bool to_device(void* dst, const void* src, size_t bytes) {
  std::memcpy(dst, src, bytes);
  return true;
}
bool to_host(void* dst, const void* src, size_t bytes) {
  std::memcpy(dst, src, bytes);
  return true;
}
#endif

template <typename T>
bool fill(T* dst, const std::type_identity_t<std::vector<T>>& v) {
  return to_device(dst, v.data(), v.size() * sizeof(T));
}
template <typename T>
std::vector<T> read(const T* src, size_t count) {
  std::vector<T> v(count);
  if (!to_host(v.data(), src, count * sizeof(T))) {
    std::fprintf(stderr, "first_run: PE %d: copying %zu bytes to the host failed\n", shmem::my_pe(),
                 count * sizeof(T));
    std::exit(1);
  }
  return v;
}

// ---- the host side: setup, checks, reporting --------------------------------------------------------
int g_break = 0;  // MORI_FIRST_RUN_BREAK: the step whose expected value is corrupted (self-test)
uint64_t broken(int step) { return step == g_break ? 1 : 0; }

std::string format(const char* fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  return buf;
}

template <typename T>
T* alloc(size_t count) {
  auto* p = static_cast<T*>(shmem::malloc(count * sizeof(T)));
  if (!p) {
    std::fprintf(stderr, "first_run: shmem::malloc(%zu): %s\n", count * sizeof(T),
                 shmem::last_error());
    std::exit(1);
  }
  return p;
}

Symm allocate(int n) {
  Symm s;
  s.p_word = alloc<uint64_t>(1);
  s.g_word = alloc<uint64_t>(1);
  s.g_result = alloc<uint64_t>(1);
  s.ctr64 = alloc<uint64_t>(1);
  s.fetched64 = alloc<uint64_t>(size_t(n) * kAmoThreads);
  s.ctr32 = alloc<uint32_t>(1);
  s.fetched32 = alloc<uint32_t>(size_t(n) * kAmoThreads);
  s.put_src = alloc<uint8_t>(kPutBytes);
  s.put_region = alloc<uint8_t>(kPutBytes + 2 * kGuardBytes);
  s.get_src = alloc<uint64_t>(kGetWords);
  s.get_dst = alloc<uint64_t>(kGetWords);
  s.load_src = alloc<uint64_t>(kLoadWords);
  s.load_dst = alloc<uint64_t>(kLoadWords);
  s.reports = alloc<LaneReport>(kWarpLanes);
  return s;
}

// Sources hold this PE's patterns; every destination holds poison.
bool initialize(const Symm& s, int me, int n) {
  std::vector<uint8_t> put_src(kPutBytes);
  for (size_t i = 0; i < kPutBytes; ++i) put_src[i] = put_byte(me, i);
  std::vector<uint64_t> get_src(kGetWords), load_src(kLoadWords);
  for (size_t i = 0; i < kGetWords; ++i)
    get_src[i] = get_word(me, int(i / kChunkWords), i % kChunkWords);
  for (size_t i = 0; i < kLoadWords; ++i)
    load_src[i] = load_word(me, i / kChunkWords, i % kChunkWords);
  return fill(s.p_word, {kPoison64}) && fill(s.g_word, {g_value(me)}) &&
         fill(s.g_result, {kPoison64}) && fill(s.ctr64, {kBase64}) && fill(s.ctr32, {kBase32}) &&
         fill(s.fetched64, std::vector<uint64_t>(size_t(n) * kAmoThreads, kPoison64)) &&
         fill(s.fetched32, std::vector<uint32_t>(size_t(n) * kAmoThreads, uint32_t(kPoison64))) &&
         fill(s.put_src, put_src) &&
         fill(s.put_region, std::vector<uint8_t>(kPutBytes + 2 * kGuardBytes, kPoison8)) &&
         fill(s.get_src, get_src) && fill(s.get_dst, std::vector<uint64_t>(kGetWords, kPoison64)) &&
         fill(s.load_src, load_src) &&
         fill(s.load_dst, std::vector<uint64_t>(kLoadWords, kPoison64)) &&
         fill(s.reports, std::vector<LaneReport>(kWarpLanes, LaneReport{~0ull, 0, 0, 0}));
}

struct Ctx {
  Symm s;
  int me, n, next, prev;
};

// Each check returns "" when every value is as expected, else what was expected and what was seen.
std::string check_p_posted(const Ctx& c) {
  // p completes only at quiet: the word holds the poison or the whole value, nothing else.
  const uint64_t seen = read(c.s.p_word, 1)[0], want = p_value(c.prev) + broken(1);
  if (seen == kPoison64 + broken(1) || seen == want) return {};
  return format("p_word is 0x%016" PRIx64 ", expected the poison or PE %d's 0x%016" PRIx64, seen,
                c.prev, want);
}

std::string check_g(const Ctx& c) {
  const uint64_t seen = read(c.s.g_result, 1)[0], want = g_value(c.next) + broken(2);
  if (seen == want) return {};
  return format("g of PE %d returned 0x%016" PRIx64 ", expected 0x%016" PRIx64, c.next, seen, want);
}

std::string check_quiet(const Ctx& c) {
  const uint64_t seen = read(c.s.p_word, 1)[0], want = p_value(c.prev) + broken(3);
  if (seen == want) return {};
  return format("after quiet and a barrier p_word is 0x%016" PRIx64
                ", expected PE %d's 0x%016" PRIx64,
                seen, c.prev, want);
}

// The counter's total, then each target's old values: this PE's field must be 0..K-1 once each
// (its own adds, in some order), every other PE's field at most K.
template <typename T>
std::string check_fetch_add(const Ctx& c, const T* ctr, const T* fetched, T base, int step) {
  T total = base;
  for (int q = 0; q < c.n; ++q) total += static_cast<T>(kAmoThreads * weight<T>(q, c.n));
  const T seen = read(ctr, 1)[0], want = static_cast<T>(total + broken(step));
  if (seen != want)
    return format("counter is 0x%" PRIx64 ", expected 0x%" PRIx64 " (%d adds from each of %d PEs)",
                  uint64_t(seen), uint64_t(want), kAmoThreads, c.n);
  const std::vector<T> old = read(fetched, size_t(c.n) * kAmoThreads);
  const int bits = field_bits<T>(c.n);
  const uint64_t mask = (uint64_t{1} << bits) - 1;
  for (int target = 0; target < c.n; ++target) {
    std::vector<bool> taken(kAmoThreads);
    for (int t = 0; t < kAmoThreads; ++t) {
      const T got = old[target * kAmoThreads + t];
      const uint64_t d = uint64_t(static_cast<T>(got - base));
      for (int q = 0; q < c.n; ++q) {
        const uint64_t field = (d >> (q * bits)) & mask;
        const uint64_t limit = q == c.me ? kAmoThreads - 1 : kAmoThreads;
        if (field > limit || (q == c.me && taken[field]))
          return format("thread %d's add on PE %d fetched 0x%" PRIx64 ": PE %d's count %" PRIu64
                        " is %s (base 0x%" PRIx64 ", each PE's adds in %d bits)",
                        t, target, uint64_t(got), q, field,
                        field > limit ? "out of range" : "fetched twice", uint64_t(base), bits);
        if (q == c.me) taken[field] = true;
      }
    }
  }
  return {};
}

std::string check_put(const Ctx& c) {
  const std::vector<uint8_t> got = read(c.s.put_region, kPutBytes + 2 * kGuardBytes);
  for (size_t i = 0; i < got.size(); ++i) {
    const bool guard = i < kGuardBytes || i >= kGuardBytes + kPutBytes;
    uint8_t want = guard ? kPoison8 : put_byte(c.prev, i - kGuardBytes);
    if (i == kGuardBytes) want = static_cast<uint8_t>(want + broken(6));
    if (got[i] == want) continue;
    if (guard)
      return format("guard byte %zd from the destination is 0x%02x, expected the poison 0x%02x",
                    i < kGuardBytes ? ssize_t(i) - ssize_t(kGuardBytes) : ssize_t(i - kGuardBytes),
                    got[i], want);
    return format("byte %zu of PE %d's put is 0x%02x, expected 0x%02x", i - kGuardBytes, c.prev,
                  got[i], want);
  }
  return {};
}

std::string check_get_under_load(const Ctx& c) {
  const std::vector<LaneReport> reports = read(c.s.reports, kWarpLanes);
  for (int lane = 0; lane < kWarpLanes; ++lane) {
    const LaneReport& r = reports[lane];
    if (r.bad == 0) continue;
    if (r.bad == ~0ull) return format("lane %d of the get warp wrote no report", lane);
    return format("lane %d read %" PRIu64
                  " wrong words right after getmem returned; first: round %" PRIu64 " word %" PRIu64
                  " was 0x%016" PRIx64 ", expected 0x%016" PRIx64,
                  lane, r.bad, r.round, r.index, r.seen, get_word(c.next, int(r.round), r.index));
  }
  const std::vector<uint64_t> got = read(c.s.get_dst, kGetWords);
  for (size_t i = 0; i < kGetWords; ++i) {
    const uint64_t want =
        get_word(c.next, int(i / kChunkWords), i % kChunkWords) + (i ? 0 : broken(7));
    if (got[i] != want)
      return format("after the kernel, get round %zu word %zu is 0x%016" PRIx64
                    ", expected 0x%016" PRIx64,
                    i / kChunkWords, i % kChunkWords, got[i], want);
  }
  const std::vector<uint64_t> load = read(c.s.load_dst, kLoadWords);
  for (size_t i = 0; i < kLoadWords; ++i) {
    const uint64_t want = load_word(c.prev, i / kChunkWords, i % kChunkWords);
    if (load[i] != want)
      return format("load put %zu word %zu from PE %d is 0x%016" PRIx64 ", expected 0x%016" PRIx64,
                    i / kChunkWords, i % kChunkWords, c.prev, load[i], want);
  }
  return {};
}

// A step that fails ends the program at once: mpirun then ends the other PEs, which would only
// wait in the next barrier for this one.
void report(const Ctx& c, int step, const char* name, const std::string& failure) {
  if (failure.empty()) {
    std::printf("first_run: PE %d: step %d %s: ok\n", c.me, step, name);
    std::fflush(stdout);
    return;
  }
  std::printf("first_run: PE %d: step %d %s: FAILED: %s\n", c.me, step, name, failure.c_str());
  std::fflush(stdout);
  std::fprintf(stderr, "first_run: PE %d: stopped at step %d (%s)\n", c.me, step, name);
  std::exit(1);
}

void barrier(const Ctx& c, int step, const char* name) {
  if (shmem::barrier_all() != 0)
    report(c, step, name, format("barrier_all: %s", shmem::last_error()));
}

// Runs one step: its kernel, a barrier when the check needs the other PEs' part delivered, the check,
// and a barrier that keeps the next step's traffic apart from this one's.
template <typename Step, typename Check>
void run(const Ctx& c, int step, const char* name, const Step& body, unsigned threads,
         bool barrier_first, Check check) {
  const std::string error = launch(body, threads);
  if (!error.empty()) report(c, step, name, "launch: " + error);
  if (barrier_first) barrier(c, step, name);
  report(c, step, name, check(c));
  barrier(c, step, name);
}

void run_all(const Ctx& c) {
  const Symm& s = c.s;
  run(c, 1, "p", PStep{s, c.me, c.next}, 1, false, check_p_posted);
  run(c, 2, "g", GStep{s, c.next}, 1, false, check_g);
  run(c, 3, "quiet after p", QuietStep{}, 1, true, check_quiet);
  run(c, 4, "64-bit fetch-add", FetchAddStep<uint64_t>{s.ctr64, s.fetched64, c.me, c.n},
      kAmoThreads, true,
      [&](const Ctx& x) { return check_fetch_add<uint64_t>(x, s.ctr64, s.fetched64, kBase64, 4); });
  run(c, 5, "32-bit fetch-add", FetchAddStep<uint32_t>{s.ctr32, s.fetched32, c.me, c.n},
      kAmoThreads, true,
      [&](const Ctx& x) { return check_fetch_add<uint32_t>(x, s.ctr32, s.fetched32, kBase32, 5); });
  run(c, 6, "1 MiB put", PutStep{s, c.next}, kWarpLanes, true, check_put);
  run(c, 7, "get under load", GetUnderLoadStep{s, c.next}, (1 + kLoadWarps) * kWarpLanes, true,
      check_get_under_load);
}

}  // namespace

int main() {
  setenv("MORI_SHMEM_HEAP_SIZE", "64M", 0);
  // Every wait of every step has a deadline: a step that would hang fails with what it waited for.
  setenv("MORI_SHMEM_TIMEOUT_MS", "10000", 0);
  if (const char* b = std::getenv("MORI_FIRST_RUN_BREAK")) g_break = std::atoi(b);
  if (shmem::init() != 0) {
    std::fprintf(stderr, "first_run: %s\n", shmem::last_error());
    return 1;
  }
  const int me = shmem::my_pe(), n = shmem::n_pes();
  if (n < 2 || n > kMaxPes) {
    std::fprintf(stderr, "first_run: PE %d: needs 2 to %d PEs, not %d (mpirun -np 2)\n", me,
                 kMaxPes, n);
    return 1;
  }
  const Ctx c{allocate(n), me, n, (me + 1) % n, (me + n - 1) % n};
  if (!initialize(c.s, me, n)) {
    std::fprintf(stderr, "first_run: PE %d: copying the initial values to the device failed\n", me);
    return 1;
  }
  barrier(c, 0, "setup");
  run_all(c);
  shmem::finalize();
  return 0;
}
