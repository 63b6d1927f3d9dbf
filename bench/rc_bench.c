/* rc_bench.c — micro-benchmarks of release consistency: the copyset fault and the
 * release's flush. Compiled with mwcc and run under mwrun; bench/rc_vs_baselines.sh runs
 * it next to fi_pingpong on the same provider and prints the ratios.
 *
 *   mwrun -n 2 rc_bench fault   [N [R [unwritten]]]
 *       rank 1 allocates N pages (mw_malloc: they are homed at rank 1) and writes a word
 *       of each (so that a fault moves the whole 4 KiB page; "unwritten" leaves them as
 *       allocated, and the home then answers without data). Rank 0 touches every page,
 *       one read each, and times it: each read is one copyset fault serviced by the
 *       home. R rounds, each on N pages of its own (N x R pages are allocated; default
 *       N = 256, R = 21), a barrier between rounds. Reported at rank 0:
 *         fault_us=         median over rounds of the wall time per fault (µs)
 *         fault_min_us=     the best round
 *         fault_p50_us=     median of the single faults of all rounds (each timed on its
 *                           own: what a fault costs when no other program preempts it)
 *         fault_wait_us=    median over rounds of mw_stats fault_wait_seconds per fault
 *         faults_per_round= page faults counted per round (must be N)
 *         page_bytes_per_fault=  payload received per fault (4096 when written)
 *   mwrun -n 2 rc_bench release [N]
 *       a word on a page both ranks hold; rank 0 acquires a lock (cached here: no
 *       message), writes the word and releases, N times (default 20000): each release
 *       pushes the update to rank 1 and waits for its acknowledgement. Reported:
 *         release_us=       mean time per acquire + write + release (µs)
 *       and rank 1 checks that the last value arrived.
 */
#include <midway.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define PAGE 4096

MW_SHARED _Alignas(4096) uint64_t *block_ptr[512];
MW_SHARED _Alignas(4096) uint64_t release_word[512];
MW_SHARED _Alignas(64) mw_lock_t release_lock;
MW_SHARED _Alignas(64) mw_barrier_t bench_barrier;

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static void fault_bench(int n, int rounds, int unwritten) {
  const int me = mw_rank();
  if (me == 1) {
    uint64_t *b = mw_malloc((size_t)n * (size_t)rounds * PAGE);
    if (!unwritten)
      for (size_t i = 0; i < (size_t)n * (size_t)rounds; i++) b[i * (PAGE / 8)] = i % (size_t)n + 1;
    block_ptr[0] = b;
  }
  mw_barrier(&bench_barrier);
  volatile uint64_t *block = block_ptr[0];
  double *per = calloc((size_t)rounds, sizeof *per), *wait = calloc((size_t)rounds, sizeof *wait);
  double *single = calloc((size_t)n * (size_t)rounds, sizeof *single);
  uint64_t faults = 0, bytes = 0;
  for (int r = 0; r < rounds; r++) {
    volatile uint64_t *b = block + (size_t)r * (size_t)n * (PAGE / 8); /* fresh pages each round */
    if (me == 0) {
      mw_stats_t s0, s1;
      mw_stats_get(&s0);
      double t0 = now_s();
      uint64_t sum = 0;
      double ti = t0;
      for (int i = 0; i < n; i++) {
        sum += b[(size_t)i * (PAGE / 8)];
        double tj = now_s();
        single[(size_t)r * (size_t)n + (size_t)i] = (tj - ti) * 1e6;
        ti = tj;
      }
      double t1 = ti;
      mw_stats_get(&s1);
      uint64_t want = unwritten ? 0 : (uint64_t)n * (uint64_t)(n + 1) / 2;
      if (sum != want) {
        fprintf(stderr, "rc_bench: round %d: the pages hold %llu in all, rank 1 wrote %llu\n", r,
                (unsigned long long)sum, (unsigned long long)want);
        exit(1);
      }
      per[r] = (t1 - t0) * 1e6 / n;
      wait[r] = (s1.fault_wait_seconds - s0.fault_wait_seconds) * 1e6 / n;
      faults = s1.page_faults - s0.page_faults;
      bytes = s1.payload_bytes_received - s0.payload_bytes_received;
      if (faults != (uint64_t)n) {
        fprintf(stderr, "rc_bench: round %d: %llu page faults, expected %d\n", r, (unsigned long long)faults, n);
        exit(1);
      }
    }
    mw_barrier(&bench_barrier);
  }
  if (me == 0) {
    double best = per[0];
    for (int r = 1; r < rounds; r++) best = per[r] < best ? per[r] : best;
    printf("fault_us=%.3f\n", median(per, rounds));
    printf("fault_min_us=%.3f\n", best);
    printf("fault_p50_us=%.3f\n", median(single, n * rounds));
    printf("fault_wait_us=%.3f\n", median(wait, rounds));
    printf("faults_per_round=%llu\n", (unsigned long long)faults);
    printf("page_bytes_per_fault=%.1f\n", (double)bytes / (double)n);
  }
  free(per);
  free(wait);
  free(single);
}

static void release_bench(int n) {
  const int me = mw_rank();
  (void)*(volatile uint64_t *)release_word; /* both ranks hold the page */
  mw_acquire(&release_lock, MW_EXCLUSIVE); /* warm: the lock comes to this rank and stays */
  mw_release(&release_lock);
  mw_barrier(&bench_barrier);
  if (me == 0) {
    mw_acquire(&release_lock, MW_EXCLUSIVE);
    mw_release(&release_lock);
    double t0 = now_s();
    for (int i = 1; i <= n; i++) {
      mw_acquire(&release_lock, MW_EXCLUSIVE);
      release_word[0] = (uint64_t)i;
      mw_release(&release_lock);
    }
    double t1 = now_s();
    printf("release_us=%.3f\n", (t1 - t0) * 1e6 / n);
  }
  mw_barrier(&bench_barrier);
  if (me == 1 && release_word[0] != (uint64_t)n) {
    fprintf(stderr, "rc_bench: rank 1 holds %llu, rank 0 released %d\n",
            (unsigned long long)release_word[0], n);
    exit(1);
  }
}

int main(int argc, char **argv) {
  mw_init(&argc, &argv);
  if (mw_nprocs() < 2) {
    fprintf(stderr, "rc_bench: run with mwrun -n 2\n");
    return 2;
  }
  if (sysconf(_SC_PAGESIZE) != PAGE) {
    fprintf(stderr, "rc_bench: assumes 4 KiB pages\n");
    return 2;
  }
  const char *mode = argc > 1 ? argv[1] : "fault";
  if (!strcmp(mode, "fault")) {
    int n = argc > 2 ? atoi(argv[2]) : 256, rounds = argc > 3 ? atoi(argv[3]) : 21;
    fault_bench(n, rounds, argc > 4 && !strcmp(argv[4], "unwritten"));
  } else if (!strcmp(mode, "release")) {
    release_bench(argc > 2 ? atoi(argv[2]) : 20000);
  } else {
    fprintf(stderr, "rc_bench: unknown mode %s (fault, release)\n", mode);
    return 2;
  }
  mw_finalize();
  return 0;
}
