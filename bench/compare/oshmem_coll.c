/* oshmem_coll: coll_bench's collectives done with Open MPI's OpenSHMEM (1.4: the active-set forms
 * over all PEs), timed the same way, for bench/compare/compare_coll.py:
 *
 *   oshcc -O2 -o oshmem_coll bench/compare/oshmem_coll.c
 *   oshrun -np 4 ./oshmem_coll <iters> <warmup> <reps> <min size> <max size> <factor> <coll>...
 *
 * coll: broadcast (shmem_broadcast64 from PE 0), fcollect (shmem_fcollect64), collect
 * (shmem_collect64, every PE the same count), alltoall (shmem_alltoall64), reduce
 * (shmem_float_sum_to_all). Sizes are bytes per block, multiples of 8. Consecutive calls alternate
 * between two pSync arrays, as OpenSHMEM 1.4 allows without a barrier between them. A repetition's
 * figure is the slowest PE's time per call (shmem_double_max_to_all after the timed loop). Output:
 * one JSON object per line, as coll_bench --json. */
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}

static int cmp_double(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

static long psync[2][SHMEM_REDUCE_SYNC_SIZE > SHMEM_COLLECT_SYNC_SIZE ? SHMEM_REDUCE_SYNC_SIZE
                                                                       : SHMEM_COLLECT_SYNC_SIZE];
static long max_sync[SHMEM_REDUCE_SYNC_SIZE];
static double max_work[SHMEM_REDUCE_MIN_WRKDATA_SIZE], max_in, max_out;

static void one(const char* coll, char* dst, char* src, float* work, size_t size, int npes, int i) {
  long* sync = psync[i & 1];
  const size_t words = size / 8;
  if (!strcmp(coll, "broadcast")) shmem_broadcast64(dst, src, words, 0, 0, 0, npes, sync);
  if (!strcmp(coll, "fcollect")) shmem_fcollect64(dst, src, words, 0, 0, npes, sync);
  if (!strcmp(coll, "collect")) shmem_collect64(dst, src, words, 0, 0, npes, sync);
  if (!strcmp(coll, "alltoall")) shmem_alltoall64(dst, src, words, 0, 0, npes, sync);
  if (!strcmp(coll, "reduce"))
    shmem_float_sum_to_all((float*)dst, (const float*)src, (int)(size / 4), 0, 0, npes, work, sync);
}

/* The slowest PE's seconds. */
static double slowest(double mine) {
  max_in = mine;
  shmem_barrier_all();
  shmem_double_max_to_all(&max_out, &max_in, 1, 0, 0, shmem_n_pes(), max_work, max_sync);
  return max_out;
}

int main(int argc, char** argv) {
  if (argc < 8) {
    fprintf(stderr, "usage: %s iters warmup reps min max factor coll...\n", argv[0]);
    return 2;
  }
  const int iters0 = atoi(argv[1]), warmup0 = atoi(argv[2]), reps = atoi(argv[3]);
  const size_t min_size = strtoull(argv[4], NULL, 0), max_size = strtoull(argv[5], NULL, 0);
  const double factor = atof(argv[6]);
  for (int s = 0; s < 2; ++s)
    for (size_t k = 0; k < sizeof psync[s] / sizeof(long); ++k) psync[s][k] = SHMEM_SYNC_VALUE;
  for (int k = 0; k < SHMEM_REDUCE_SYNC_SIZE; ++k) max_sync[k] = SHMEM_SYNC_VALUE;
  shmem_init();
  const int me = shmem_my_pe(), npes = shmem_n_pes();
  char* src = shmem_malloc(npes * max_size);
  char* dst = shmem_malloc(npes * max_size);
  size_t work_elems = max_size / 8 + 1;
  if (work_elems < SHMEM_REDUCE_MIN_WRKDATA_SIZE) work_elems = SHMEM_REDUCE_MIN_WRKDATA_SIZE;
  float* work = shmem_malloc(work_elems * sizeof(float));
  memset(src, 1, npes * max_size);
  double* figures = malloc(sizeof(double) * reps);
  for (int a = 7; a < argc; ++a) {
    const char* coll = argv[a];
    for (size_t size = min_size; size <= max_size;) {
      const size_t volume =
          !strcmp(coll, "broadcast") || !strcmp(coll, "reduce") ? size : size * npes;
      size_t cap = ((size_t)256 << 20) / volume;
      const int iters = (int)(cap < (size_t)iters0 ? (cap < 3 ? 3 : cap) : (size_t)iters0);
      const int warmup = warmup0 < iters ? warmup0 : iters;
      int call = 0;
      for (int r = 0; r < reps; ++r) {
        shmem_barrier_all();
        for (int i = 0; i < warmup; ++i) one(coll, dst, src, work, size, npes, call++);
        shmem_barrier_all();
        const double t0 = now();
        for (int i = 0; i < iters; ++i) one(coll, dst, src, work, size, npes, call++);
        figures[r] = 1e6 * slowest(now() - t0) / iters;
      }
      qsort(figures, reps, sizeof(double), cmp_double);
      const double med = figures[reps / 2];
      if (me == 0)
        printf(
            "{\"bench\":\"coll_bench\",\"coll\":\"%s\",\"lib\":\"oshmem\",\"npes\":%d,"
            "\"size\":%zu,\"volume\":%zu,\"iters\":%d,\"lat_us\":%.6g,\"min\":%.6g,\"max\":%.6g,"
            "\"gbps\":%.6g,\"reps\":%d}\n",
            coll, npes, size, volume, iters, med, figures[0], figures[reps - 1],
            volume / (med * 1e3), reps);
      fflush(stdout);
      size_t next = (size_t)(size * factor) / 8 * 8;
      size = next > size ? next : size + 8;
    }
  }
  shmem_barrier_all();
  free(figures);
  shmem_free(work);
  shmem_free(dst);
  shmem_free(src);
  shmem_finalize();
  return 0;
}
