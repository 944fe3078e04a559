/* oshmem_bench: the operations of mori's shmem benchmarks, done with Open MPI's OpenSHMEM, for
 * bench/compare. Timed the same way: warmup iterations, then one timed loop per repetition, the
 * passive PE sleeping meanwhile; the figure is the median over the repetitions.
 *
 *   oshcc -O2 -o oshmem_bench bench/compare/oshmem_bench.c
 *   oshrun -np 2 ./oshmem_bench <iters> <warmup> <reps> <mode>:<min size>:<max size>:<factor>...
 *
 * mode: put_latency (shmem_putmem + shmem_quiet), get_latency (shmem_getmem), p_pingpong
 * (shmem_int_p + shmem_int_wait_until, half round trip), atomic_latency
 * (shmem_long_atomic_fetch_add), put_bw / get_bw (windows of shmem_putmem_nbi / shmem_getmem_nbi
 * completed by one shmem_quiet). Output: one JSON object per line, as the mori programs' --json. */
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { kLatency, kHalfTrip, kBandwidth };

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}

/* Every PE arrives. (A sleeping wait on a counter that peers increment hangs here: Open MPI's UCX
 * SPML needs the target to progress; so the passive PE spins in the barrier while the active one
 * is timed, which on 2 cores leaves the timed PE one core, as mori's sleeping PE does.) */
static void rendezvous(void) { shmem_barrier_all(); }

static int cmp_double(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

/* One repetition of `mode` at `size`: this PE's timed seconds (0 if it only serves). */
static double measure(const char* mode, char* src, char* dst, int* flag, long* word, size_t size,
                      int iters, int warmup) {
  const int me = shmem_my_pe(), peer = me ^ 1, first = me % 2 == 0;
  double t0 = 0;
  if (!strcmp(mode, "p_pingpong")) {
    for (int i = 0; i < warmup + iters; ++i) {
      if (i == warmup) t0 = now();
      if (!first) shmem_int_wait_until(flag, SHMEM_CMP_EQ, i + 1);
      shmem_int_p(flag, i + 1, peer);
      if (first) shmem_int_wait_until(flag, SHMEM_CMP_EQ, i + 1);
    }
    return now() - t0;
  }
  if (!first) return 0;
  long sum = 0;
  for (int i = 0; i < warmup + iters; ++i) {
    if (i == warmup) {
      shmem_quiet();
      t0 = now();
    }
    if (!strcmp(mode, "put_latency")) {
      shmem_putmem(dst, src, size, peer);
      shmem_quiet();
    } else if (!strcmp(mode, "get_latency")) {
      shmem_getmem(dst, src, size, peer);
    } else if (!strcmp(mode, "atomic_latency")) {
      sum += shmem_long_atomic_fetch_add(word, 1, peer);
    } else if (!strcmp(mode, "put_bw")) {
      shmem_putmem_nbi(dst, src, size, peer);
    } else if (!strcmp(mode, "get_bw")) {
      shmem_getmem_nbi(dst, src, size, peer);
    }
  }
  shmem_quiet();
  const double seconds = now() - t0;
  if (sum < 0) fprintf(stderr, "impossible sum\n");
  return seconds;
}

/* Every size of one mode: prints a JSON line per size on PE 0. */
static void run_mode(const char* mode, int figure, char* src, char* dst, int* flag, long* word,
                     size_t min_size, size_t max_size, double factor, int iters0, int warmup0,
                     int reps, double* figures) {
  const int me = shmem_my_pe();
  for (size_t size = min_size; size <= max_size;) {
    size_t cap = ((size_t)256 << 20) / size;
    const int iters = (int)(cap < (size_t)iters0 ? (cap < 4 ? 4 : cap) : (size_t)iters0);
    const int warmup = warmup0 < iters ? warmup0 : iters;
    for (int r = 0; r < reps; ++r) {
      *flag = 0;
      *word = 0;
      rendezvous();
      const double seconds = measure(mode, src, dst, flag, word, size, iters, warmup);
      if (figure == kLatency)
        figures[r] = 1e6 * seconds / iters;
      else if (figure == kHalfTrip)
        figures[r] = 1e6 * seconds / (2.0 * iters);
      else
        figures[r] = (double)size * iters / seconds / 1e9;
    }
    qsort(figures, reps, sizeof(double), cmp_double);
    const double med = figures[reps / 2];
    const int bw = figure == kBandwidth;
    if (me == 0)
      printf(
          "{\"bench\":\"%s\",\"transport\":\"oshmem\",\"provider\":\"ucx\",\"scope\":\"thread\","
          "\"size\":%zu,\"iters\":%d,\"lat_us\":%.6g,\"gbps\":%.6g,\"min\":%.6g,\"max\":%.6g,"
          "\"reps\":%d}\n",
          mode, size, iters, bw ? 1e6 * size / (med * 1e9) : med, bw ? med : size / (med * 1e3),
          figures[0], figures[reps - 1], reps);
    fflush(stdout);
    const size_t next = (size_t)(size * factor);
    size = next > size ? next : size + 1;
  }
}

int main(int argc, char** argv) {
  if (argc < 5) {
    fprintf(stderr, "usage: %s iters warmup reps mode:min:max:factor...\n", argv[0]);
    return 2;
  }
  const int iters0 = atoi(argv[1]), warmup0 = atoi(argv[2]), reps = atoi(argv[3]);
  size_t largest = 64;
  for (int a = 4; a < argc; ++a) {
    const char* max_text = strchr(strchr(argv[a], ':') + 1, ':') + 1;
    const size_t m = strtoull(max_text, NULL, 0);
    if (m > largest) largest = m;
  }
  shmem_init();
  const int me = shmem_my_pe();
  char* src = shmem_malloc(largest);
  char* dst = shmem_malloc(largest);
  int* flag = shmem_malloc(64);
  long* word = shmem_malloc(64);
  memset(src, me + 1, largest);
  memset(dst, 0, largest);
  double* figures = malloc(sizeof(double) * reps);
  for (int a = 4; a < argc; ++a) {
    char mode[32];
    size_t min_size = 0, max_size = 0;
    double factor = 2;
    if (sscanf(argv[a], "%31[^:]:%zu:%zu:%lf", mode, &min_size, &max_size, &factor) != 4) {
      fprintf(stderr, "oshmem_bench: bad mode \"%s\": use mode:min:max:factor\n", argv[a]);
      shmem_global_exit(2);
    }
    const int figure = !strcmp(mode, "p_pingpong")                          ? kHalfTrip
                       : !strcmp(mode, "put_bw") || !strcmp(mode, "get_bw") ? kBandwidth
                                                                            : kLatency;
    run_mode(mode, figure, src, dst, flag, word, min_size, max_size, factor, iters0, warmup0, reps,
             figures);
  }
  rendezvous();
  free(figures);
  shmem_free(word);
  shmem_free(flag);
  shmem_free(dst);
  shmem_free(src);
  shmem_finalize();
  return 0;
}
