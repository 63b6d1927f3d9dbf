/* rc_bench.c — micro-benchmarks of release consistency: the copyset fault and the
 * release's flush. Compiled with mwcc and run under mwrun; bench/rc_vs_baselines.sh runs
 * it next to fi_pingpong on the same provider and prints the ratios.
 *
 *   mwrun -n 2 rc_bench fault   [N [R [unwritten]]]
 *       rank 1 allocates N pages (mw_malloc: they are homed at rank 1) and writes a word
 *       of each (so that a fault moves the whole 4 KiB page; "unwritten" leaves them as
 *       allocated, and the home then answers without data). Rank 0 touches every page,
 *       one read each, and times it: each read is one copyset fault serviced by the
 *       home (the program sets MW_READ_AHEAD=1 for this mode: one page a fault). R rounds, each on N pages of its own (N x R pages are allocated; default
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
 *       message), writes the word and releases, N times (default 20000). At two ranks a
 *       release sends nothing: the update waits for a lock to move to rank 1 (here, the
 *       barrier at the end), so this is the cost of a release that keeps its lock. With
 *       three ranks each release pushes the update and waits for the acknowledgements
 *       (mwrun -n 3). Reported:
 *         release_us=       mean time per acquire + write + release (µs)
 *       and rank 1 checks that the last value arrived.
 *   mwrun -n 2 rc_bench pc [N [R [US [SLEEP]]]]
 *       processor consistency with no synchronization: N pages and a flag page, all
 *       processor consistent (mw_processor_consistent, flush interval US, default 50)
 *       and held by both ranks. Rank 0 writes a word of each of the N pages, then its
 *       flag; rank 1 polls the flag (yielding between looks, or sleeping SLEEP µs if
 *       given and not 0), checks that the N words
 *       came with it (issue order), writes a word of its own in each of the N pages and
 *       its flag; rank 0 polls for that. R round trips (default 2001), each carrying a
 *       flush of N dirty pages and its apply in each direction. Reported at rank 0:
 *         pc_oneway_us=     median over round trips of half the round trip (µs): a wait
 *                           for the next flush (up to US, plus the timer's slack), the
 *                           flush, the message and the apply
 *         pc_oneway_min_us= the best
 *         pc_order_broken_rank<r>= looks at rank r that found a flag before its words
 *                           (issue order broken; must be 0)
 */
#include <midway.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sched.h>
#include <unistd.h>

#define PAGE 4096

MW_SHARED _Alignas(4096) uint64_t *block_ptr[512];
MW_SHARED _Alignas(4096) uint64_t release_word[512];
MW_SHARED _Alignas(64) mw_lock_t release_lock;
#define PC_MAX 256
MW_SHARED _Alignas(4096) uint64_t pc_pages[PC_MAX + 1][PAGE / 8]; /* N pages, then the flags */
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

static int pc_sleep_us = 0;
static void pc_pause(void) {
  if (pc_sleep_us == 0) {
    sched_yield();
    return;
  }
  struct timespec t = {0, pc_sleep_us * 1000L};
  nanosleep(&t, NULL);
}

static void pc_bench(int n, int rounds, unsigned us) {
  const int me = mw_rank();
  if (n < 1 || n > PC_MAX) {
    fprintf(stderr, "rc_bench: pc: N from 1 to %d\n", PC_MAX);
    exit(2);
  }
  mw_processor_consistent(pc_pages, (size_t)(n + 1) * PAGE, us);
  volatile uint64_t *flag = &pc_pages[n][0], *answer = &pc_pages[n][8];
  for (int k = 0; k <= n; k++) (void)*(volatile uint64_t *)pc_pages[k]; /* both hold every page */
  mw_barrier(&bench_barrier);
  double *rtt = calloc((size_t)rounds, sizeof *rtt);
  long broken = 0;
  for (uint64_t v = 1; v <= (uint64_t)rounds; v++) {
    if (me == 0) {
      double t0 = now_s();
      for (int k = 0; k < n; k++) ((volatile uint64_t *)pc_pages[k])[0] = v;
      *flag = v;
      while (*answer != v) pc_pause();
      rtt[v - 1] = (now_s() - t0) * 1e6;
      for (int k = 0; k < n; k++) broken += ((volatile uint64_t *)pc_pages[k])[1] != v;
    } else if (me == 1) {
      while (*flag != v) pc_pause();
      for (int k = 0; k < n; k++) broken += ((volatile uint64_t *)pc_pages[k])[0] != v;
      for (int k = 0; k < n; k++) ((volatile uint64_t *)pc_pages[k])[1] = v;
      *answer = v;
    }
  }
  mw_barrier(&bench_barrier);
  if (me == 0) {
    double best = rtt[0];
    for (int r = 1; r < rounds; r++) best = rtt[r] < best ? rtt[r] : best;
    printf("pc_oneway_us=%.3f\n", median(rtt, rounds) / 2);
    printf("pc_oneway_min_us=%.3f\n", best / 2);
  }
  if (me < 2) printf("pc_order_broken_rank%d=%ld\n", me, broken);
  free(rtt);
}

int main(int argc, char **argv) {
  /* A fault here is one page: with read-ahead (MW_READ_AHEAD, 64 pages unless set) the
   * first read of a round would bring the pages after it too. */
  if (argc < 2 || !strcmp(argv[1], "fault")) setenv("MW_READ_AHEAD", "1", 1);
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
  } else if (!strcmp(mode, "pc")) {
    pc_sleep_us = argc > 5 ? atoi(argv[5]) : 0;
    pc_bench(argc > 2 ? atoi(argv[2]) : 16, argc > 3 ? atoi(argv[3]) : 2001,
             argc > 4 ? (unsigned)atoi(argv[4]) : 50);
  } else {
    fprintf(stderr, "rc_bench: unknown mode %s (fault, release, pc)\n", mode);
    return 2;
  }
  mw_finalize();
  return 0;
}
