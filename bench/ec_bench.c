/* ec_bench.c — micro-benchmarks of entry consistency: locks, barriers, grants.
 *
 * Compiled with mwcc and run under mwrun; bench/ec_vs_baselines.sh runs it next to its
 * baselines (fi_pingpong, MPI_Barrier) and prints the ratios.
 *
 *   mwrun -n 2 ec_bench handover [N]   strict alternation of one lock between ranks 0
 *                                       and 1 (ranks above 1 join the ring too)
 *   mwrun -n 2 ec_bench acquire  [N]   remote acquire of an idle lock (barrier-separated)
 *   mwrun -n 2 ec_bench cached   [N]   one rank re-acquires its own lock N times
 *   mwrun -n P ec_bench barrier  [N [check]]
 *                                      N mw_barrier calls, nothing bound
 *   mwrun -n P ec_bench cold           right after mw_init, rank 0 acquires 16 locks that
 *                                       every rank manages in turn (first contact)
 *   mwrun -n 2 ec_bench grant SIZE [N [all|sparse|none|mixed]]
 *                                      a lock bound to SIZE bytes, written in full under
 *                                      the lock by one rank, acquired by the other
 *
 * Every mode prints `name=value` lines at rank 0 (and rank 1 for what rank 1 measures),
 * the figure first, then the statistics that explain it.
 *
 * handover: a counter bound to one lock; rank r acquires the lock exclusively, and if
 *   counter % P == r increments it, else releases and acquires again ("spins"). Each
 *   increment is one hand-over of the lock to the next rank. Reported: µs per hand-over
 *   over N hand-overs, timed at rank 0 from its turn W to its turn W+N.
 * acquire: each iteration is a barrier, then rank (i % 2) acquires the lock exclusively
 *   from the other rank, which released it before the barrier and is idle: one request
 *   and one grant with nothing overlapped. Reported: the median time in mw_acquire.
 * cached: rank 0 acquires and releases the same lock N times (default 10^6); no other
 *   rank touches it. Reported: ns per acquire+release pair, exclusive and non-exclusive.
 * barrier: µs per mw_barrier at rank 0 over N (default 10^4) after 100 untimed. With
 *   "check" (a test, not a figure: ctest runs it) each rank also counts its arrivals in
 *   a POSIX shared-memory page outside Midway, and after each crossing checks that every
 *   rank has arrived there and none is past the next one. Each iteration then crosses a
 *   second barrier, bound to one cell per rank: in two iterations of three rank i % P
 *   writes its cell first, and every rank checks every cell after the crossing. So the
 *   crossings mix every way an arrival and a release can travel (through the ranks'
 *   shared page when nothing moves, by message with data, and one of each).
 * cold: the first message from rank 0 to each manager, while the managers wait in a
 *   barrier: the acquires mm_ec's master makes at start-up. Reported: the slowest and
 *   the mean, in µs. (A lost wake-up shows here as ~100 ms: see docs/PERFORMANCE.md.)
 * grant: SIZE bytes from mw_malloc, bound by every rank to one lock before its first
 *   acquire. Repetition k: rank k % 2 acquires exclusively, writes every byte, releases;
 *   barrier; the other rank times mw_acquire(exclusive) (the grant carries the data),
 *   checks every byte outside the timing, releases; barrier. Reported: the median of
 *   SIZE / acquire time in GB/s (10^9 bytes per second, as fi_pingpong's MB/sec).
 *   For a breakdown, the writer may write one word per 4 KiB instead (sparse: the dirty
 *   map is scanned and stamped, little data moves) or nothing (none: the protocol's
 *   fixed cost); GB/s is then still SIZE / time, a figure to compare, not a bandwidth.
 *   mixed is a check more than a figure (ctest runs it): each 4 KiB page gets, by turns,
 *   a whole-page write, one word, three words 1 KiB apart, or nothing, so that a grant
 *   carries long runs (read where they lie) and many short ones (copied, packed into
 *   eager messages) at once; the acquirer compares every byte with a private replay.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime; shm_open for the barrier check */
#include <fcntl.h>
#include <midway.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

MW_SHARED mw_lock_t handover_lock;
MW_SHARED _Alignas(64) long handover_counter; /* bound to handover_lock */
MW_SHARED _Alignas(64) mw_lock_t acquire_lock;
MW_SHARED _Alignas(64) mw_lock_t cached_lock;
MW_SHARED _Alignas(64) mw_barrier_t bench_barrier;
MW_SHARED _Alignas(64) mw_lock_t meta_lock;
MW_SHARED _Alignas(64) uint64_t *grant_data; /* bound to meta_lock: where the data is */
MW_SHARED _Alignas(64) mw_lock_t grant_lock;
MW_SHARED _Alignas(64) mw_lock_t cold_locks[16]; /* 16 bytes apart: managed by 16 ranks in turn */
MW_SHARED _Alignas(64) mw_barrier_t cold_barrier;
MW_SHARED _Alignas(64) mw_barrier_t cells_barrier;
/* bound to cells_barrier: a whole page, so that it is entry consistent on every rank */
MW_SHARED _Alignas(4096) long barrier_cells[512];

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, long n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* What this rank's statistics moved by between two snapshots, as name=value lines. */
static void print_stats_delta(const char *prefix, const mw_stats_t *a, const mw_stats_t *b,
                              double per) {
  printf("%s_msgs_sent_per_op=%.3f\n", prefix, (double)(b->msgs_sent - a->msgs_sent) / per);
  printf("%s_msgs_received_per_op=%.3f\n", prefix,
         (double)(b->msgs_received - a->msgs_received) / per);
  printf("%s_payload_bytes_received_per_op=%.1f\n", prefix,
         (double)(b->payload_bytes_received - a->payload_bytes_received) / per);
  printf("%s_protocol_bytes_sent_per_op=%.1f\n", prefix,
         (double)(b->protocol_bytes_sent - a->protocol_bytes_sent) / per);
  printf("%s_acquires_local=%llu\n", prefix,
         (unsigned long long)(b->lock_acquires_local - a->lock_acquires_local));
  printf("%s_acquires_remote=%llu\n", prefix,
         (unsigned long long)(b->lock_acquires_remote - a->lock_acquires_remote));
  printf("%s_acquire_wait_us_per_op=%.3f\n", prefix,
         (b->acquire_wait_seconds - a->acquire_wait_seconds) * 1e6 / per);
  printf("%s_barrier_wait_us_per_op=%.3f\n", prefix,
         (b->barrier_wait_seconds - a->barrier_wait_seconds) * 1e6 / per);
}

_Noreturn static void usage(void) {
  fprintf(stderr,
          "usage: ec_bench handover [N] | acquire [N] | cached [N] | barrier [N [check]] | cold |\n"
          "                grant SIZE [N [all|sparse|none|mixed]]\n"
          "  (under mwrun: mwrun -n 2 ec_bench handover 20000)\n");
  exit(2);
}

static int need_two(const char *mode) {
  if (mw_nprocs() < 2) {
    if (mw_rank() == 0) fprintf(stderr, "ec_bench %s: needs at least 2 ranks (mwrun -n 2)\n", mode);
    return 0;
  }
  return 1;
}

/* ---- handover: strict alternation through the lock and a counter it guards ---- */
static int bench_handover(long n) {
  if (!need_two("handover")) return 2;
  const int me = mw_rank(), p = mw_nprocs();
  const long warm = 200L * p;      /* rank 0 starts the clock at its turn warm ...  */
  n = (n + p - 1) / p * p;         /* ... and stops it at its turn warm + n          */
  const long total = warm + n;
  mw_bind(&handover_lock, &handover_counter, sizeof handover_counter);
  mw_barrier(&bench_barrier); /* every rank has bound before anyone acquires */
  long spins = 0, mine = 0;
  double t0 = 0, t1 = 0;
  mw_stats_t s0, s1;
  memset(&s0, 0, sizeof s0);
  /* No clock inside the loop but at rank 0's two marks: a clock read (~40 ns here) per
   * acquire would slow the spinning rank as much as the lock does. */
  for (;;) {
    mw_acquire(&handover_lock, MW_EXCLUSIVE);
    long c = handover_counter;
    if (me == 0 && c == warm) {
      t0 = now_s();
      mw_stats_get(&s0);
    }
    if (me == 0 && c == total) t1 = now_s();
    if (c >= total) {
      mw_release(&handover_lock);
      break;
    }
    if (c % p == me) {
      handover_counter = c + 1;
      if (c >= warm) mine++;
    } else if (c >= warm) {
      spins++;
    }
    mw_release(&handover_lock);
  }
  mw_stats_get(&s1);
  if (me == 0) {
    printf("handover_us=%.4f\n", (t1 - t0) * 1e6 / (double)n);
    printf("handover_round_us=%.4f\n", (t1 - t0) * 1e6 / (double)n * p);
    printf("handover_n=%ld\n", n);
    printf("handover_rank0_turns=%ld\n", mine);
    printf("handover_rank0_spins_per_turn=%.3f\n", (double)spins / (double)(mine ? mine : 1));
    print_stats_delta("handover_rank0", &s0, &s1, (double)(mine ? mine : 1));
  }
  fflush(stdout);
  mw_barrier(&bench_barrier);
  if (me == 1) {
    printf("handover_rank1_spins_per_turn=%.3f\n", (double)spins / (double)(mine ? mine : 1));
    fflush(stdout);
  }
  return 0;
}

/* ---- acquire: a remote acquire of an idle lock, one request and one grant ---- */
static int bench_acquire(long n) {
  if (!need_two("acquire")) return 2;
  const int me = mw_rank();
  const long warm = 100;
  double *t = calloc((size_t)(n + warm), sizeof *t);
  long mine = 0;
  mw_stats_t s0, s1;
  mw_barrier(&bench_barrier);
  for (long i = 0; i < n + warm; i++) {
    if (i == warm) mw_stats_get(&s0);
    mw_barrier(&bench_barrier);
    if (i % 2 == me) {
      double a = now_s();
      mw_acquire(&acquire_lock, MW_EXCLUSIVE);
      double b = now_s();
      mw_release(&acquire_lock);
      if (i >= warm) t[mine++] = b - a;
    }
  }
  mw_stats_get(&s1);
  for (int r = 0; r < 2; r++) {
    mw_barrier(&bench_barrier);
    if (me != r) continue;
    double sum = 0;
    for (long k = 0; k < mine; k++) sum += t[k];
    const double mean = sum / (double)(mine ? mine : 1);
    const double med = median(t, mine);
    printf("acquire_remote_rank%d_us=%.4f\n", r, med * 1e6);
    printf("acquire_remote_rank%d_mean_us=%.4f\n", r, mean * 1e6);
    printf("acquire_remote_rank%d_p90_us=%.4f\n", r, t[(long)(0.9 * (double)(mine - 1))] * 1e6);
    char prefix[32];
    snprintf(prefix, sizeof prefix, "acquire_rank%d", r);
    print_stats_delta(prefix, &s0, &s1, (double)(mine ? mine : 1));
    fflush(stdout);
  }
  free(t);
  return 0;
}

/* ---- cached: the owner re-acquiring its own lock ---- */
static int bench_cached(long n) {
  const int me = mw_rank();
  mw_stats_t s0, s1;
  if (me == 0) {
    for (int i = 0; i < 1000; i++) {
      mw_acquire(&cached_lock, MW_EXCLUSIVE);
      mw_release(&cached_lock);
    }
    mw_stats_get(&s0);
    double a = now_s();
    for (long i = 0; i < n; i++) {
      mw_acquire(&cached_lock, MW_EXCLUSIVE);
      mw_release(&cached_lock);
    }
    double b = now_s();
    mw_stats_get(&s1);
    for (long i = 0; i < 1000; i++) { /* the first non-exclusive acquire may differ */
      mw_acquire(&cached_lock, MW_NONEXCLUSIVE);
      mw_release(&cached_lock);
    }
    double c = now_s();
    for (long i = 0; i < n; i++) {
      mw_acquire(&cached_lock, MW_NONEXCLUSIVE);
      mw_release(&cached_lock);
    }
    double d = now_s();
    printf("cached_ns=%.2f\n", (b - a) * 1e9 / (double)n);
    printf("cached_nonexclusive_ns=%.2f\n", (d - c) * 1e9 / (double)n);
    printf("cached_n=%ld\n", n);
    printf("cached_msgs_sent=%llu\n", (unsigned long long)(s1.msgs_sent - s0.msgs_sent));
    printf("cached_acquires_local=%llu\n",
           (unsigned long long)(s1.lock_acquires_local - s0.lock_acquires_local));
    printf("cached_acquires_remote=%llu\n",
           (unsigned long long)(s1.lock_acquires_remote - s0.lock_acquires_remote));
    fflush(stdout);
  }
  return 0;
}

/* ---- barrier: nothing bound ---- */
/* The check: arrivals counted outside Midway, in a page every rank maps (named after
 * mwrun's pid, which all ranks share). */
static long barrier_check(long n) {
  const int me = mw_rank(), p = mw_nprocs();
  char name[64];
  snprintf(name, sizeof name, "/ec_bench_barrier_%ld", (long)getppid());
  if (me == 0) shm_unlink(name);
  mw_barrier(&bench_barrier);
  int fd = shm_open(name, O_RDWR | O_CREAT, 0600);
  if (fd < 0 || ftruncate(fd, 4096) != 0) {
    perror("ec_bench barrier check: shm_open");
    exit(1);
  }
  long *arrived = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (arrived == MAP_FAILED) {
    perror("ec_bench barrier check: mmap");
    exit(1);
  }
  mw_barrier_bind(&cells_barrier, barrier_cells, sizeof barrier_cells);
  mw_barrier(&bench_barrier); /* every rank has mapped the page, and bound */
  long bad = 0, last[512] = {0};
  for (long i = 1; i <= n; i++) {
    __atomic_store_n(&arrived[me], i, __ATOMIC_SEQ_CST);
    mw_barrier(&bench_barrier);
    for (int r = 0; r < p; r++) {
      long a = __atomic_load_n(&arrived[r], __ATOMIC_SEQ_CST);
      if (a < i || a > i + 1) {
        if (bad++ < 5)
          fprintf(stderr, "ec_bench barrier check: rank %d left crossing %ld while rank %d had arrived %ld times\n",
                  me, i, r, a);
      }
    }
    const int w = (int)(i % p);
    if (i % 3 != 0) {
      last[w] = i;
      if (me == w) barrier_cells[w] = i;
    }
    mw_barrier(&cells_barrier);
    for (int r = 0; r < p && r < 512; r++)
      if (barrier_cells[r] != last[r] && bad++ < 5)
        fprintf(stderr, "ec_bench barrier check: rank %d after crossing %ld of the bound barrier reads %ld in rank %d's cell, which holds %ld\n",
                me, i, barrier_cells[r], r, last[r]);
  }
  mw_barrier(&bench_barrier);
  if (me == 0) shm_unlink(name); /* the mapping goes at exit */
  return bad;
}

static int bench_barrier_latency(long n, int check) {
  if (check) return barrier_check(n) ? 1 : 0;
  for (int i = 0; i < 100; i++) mw_barrier(&bench_barrier);
  mw_stats_t s0, s1;
  mw_stats_get(&s0);
  double a = now_s();
  for (long i = 0; i < n; i++) mw_barrier(&bench_barrier);
  double b = now_s();
  mw_stats_get(&s1);
  if (mw_rank() == 0) {
    printf("barrier_us=%.4f\n", (b - a) * 1e6 / (double)n);
    printf("barrier_nprocs=%d\n", mw_nprocs());
    printf("barrier_n=%ld\n", n);
    print_stats_delta("barrier_rank0", &s0, &s1, (double)n);
    fflush(stdout);
  }
  return 0;
}

/* ---- cold: first acquires, before any other message has reached the managers ---- */
static int bench_cold(void) {
  double worst = 0, sum = 0;
  int worst_i = -1;
  const int n = (int)(sizeof cold_locks / sizeof cold_locks[0]);
  if (mw_rank() == 0)
    for (int i = 0; i < n; i++) {
      double a = now_s();
      mw_acquire(&cold_locks[i], MW_EXCLUSIVE);
      double d = now_s() - a;
      mw_release(&cold_locks[i]);
      sum += d;
      if (d > worst) worst = d, worst_i = i;
    }
  mw_barrier(&cold_barrier);
  if (mw_rank() == 0) {
    printf("cold_acquire_max_us=%.1f\n", worst * 1e6);
    printf("cold_acquire_mean_us=%.1f\n", sum / n * 1e6);
    printf("cold_acquire_slowest_lock=%d\n", worst_i);
    fflush(stdout);
  }
  return 0;
}

/* ---- grant: a lock's data travelling with the grant ---- */
/* What the writer writes each repetition: every word (the benchmark), one word per
 * 4 KiB (the dirty map is scanned and stamped but little data moves), or nothing (the
 * grant carries no data: the protocol's fixed cost). */
enum grant_write { WRITE_ALL, WRITE_SPARSE, WRITE_NONE, WRITE_MIXED };

/* WRITE_MIXED: what repetition k writes to page p (512 words), applied to the shared data
 * by the writer and to a private replay by every rank. */
static void write_mixed(uint64_t *d, size_t words, long k, uint64_t stamp) {
  for (size_t page = 0; page * 512 < words; page++) {
    uint64_t *w = d + page * 512;
    size_t n = words - page * 512 < 512 ? words - page * 512 : 512;
    switch ((page + (size_t)k) % 4) {
    case 0: for (size_t i = 0; i < n; i++) w[i] = stamp + page * 512 + i; break;
    case 1: w[(size_t)k % n] = stamp + page; break;
    case 2: for (size_t i = 8; i < n; i += 128) w[i] = stamp + page * 512 + i; break;
    default: break;
    }
  }
}

static int bench_grant(size_t size, long n, enum grant_write what) {
  if (!need_two("grant")) return 2;
  const int me = mw_rank();
  if (size < 8 || size % 8) {
    if (me == 0) fprintf(stderr, "ec_bench grant: SIZE must be a multiple of 8\n");
    return 2;
  }
  const size_t words = size / 8;
  /* Rank 0 allocates; the address reaches the others through a lock guarding it. */
  mw_bind(&meta_lock, &grant_data, sizeof grant_data);
  mw_barrier(&bench_barrier);
  uint64_t *data;
  if (me == 0) {
    data = mw_malloc(size);
    if (!data) {
      fprintf(stderr, "ec_bench grant: mw_malloc(%zu) failed\n", size);
      return 1;
    }
    mw_acquire(&meta_lock, MW_EXCLUSIVE);
    grant_data = data;
    mw_release(&meta_lock);
  }
  mw_barrier(&bench_barrier);
  mw_acquire(&meta_lock, MW_NONEXCLUSIVE);
  data = grant_data;
  mw_release(&meta_lock);
  mw_bind(&grant_lock, data, size);
  mw_barrier(&bench_barrier); /* every rank has bound before anyone acquires */

  const long warm = 2;
  double *t = calloc((size_t)(n + warm), sizeof *t);
  uint64_t *replay = what == WRITE_MIXED ? calloc(words, sizeof *replay) : NULL;
  long mine = 0, bad = 0;
  mw_stats_t s0, s1;
  for (long k = 0; k < n + warm; k++) {
    if (k == warm) mw_stats_get(&s0);
    const int writer = (int)(k % 2);
    const uint64_t stamp = (uint64_t)(k + 1) << 40;
    if (me == writer) {
      mw_acquire(&grant_lock, MW_EXCLUSIVE);
      if (what == WRITE_ALL)
        for (size_t i = 0; i < words; i++) data[i] = stamp + i;
      else if (what == WRITE_SPARSE)
        for (size_t i = 0; i < words; i += 512) data[i] = stamp + i;
      else if (what == WRITE_MIXED)
        write_mixed(data, words, k, stamp);
      mw_release(&grant_lock);
    }
    if (replay) write_mixed(replay, words, k, stamp);
    mw_barrier(&bench_barrier);
    if (me == 1 - writer) {
      double a = now_s();
      mw_acquire(&grant_lock, MW_EXCLUSIVE);
      double b = now_s();
      if (what == WRITE_ALL)
        for (size_t i = 0; i < words; i++) bad += data[i] != stamp + i;
      else if (what == WRITE_SPARSE)
        for (size_t i = 0; i < words; i += 512) bad += data[i] != stamp + i;
      else if (what == WRITE_MIXED)
        for (size_t i = 0; i < words; i++) bad += data[i] != replay[i];
      mw_release(&grant_lock);
      if (k >= warm) t[mine++] = b - a;
    }
    mw_barrier(&bench_barrier);
  }
  mw_stats_get(&s1);
  for (int r = 0; r < 2; r++) {
    mw_barrier(&bench_barrier);
    if (me != r) continue;
    double sum = 0;
    for (long i = 0; i < mine; i++) sum += t[i];
    const double med = median(t, mine);
    printf("grant_rank%d_gbs=%.4f\n", r, (double)size / med * 1e-9);
    printf("grant_rank%d_us=%.2f\n", r, med * 1e6);
    printf("grant_rank%d_mean_gbs=%.4f\n", r, (double)size * (double)mine / sum * 1e-9);
    printf("grant_rank%d_bad_words=%ld\n", r, bad);
    char prefix[32];
    snprintf(prefix, sizeof prefix, "grant_rank%d", r);
    print_stats_delta(prefix, &s0, &s1, (double)(mine ? mine : 1));
    fflush(stdout);
  }
  free(t);
  free(replay);
  if (bad) fprintf(stderr, "ec_bench grant: rank %d read %ld stale words after its acquire\n", me, bad);
  return bad ? 1 : 0;
}

int main(int argc, char **argv) {
  mw_init(&argc, &argv);
  if (argc < 2) usage();
  const char *mode = argv[1];
  int rc;
  if (!strcmp(mode, "handover")) rc = bench_handover(argc > 2 ? atol(argv[2]) : 20000);
  else if (!strcmp(mode, "acquire")) rc = bench_acquire(argc > 2 ? atol(argv[2]) : 2000);
  else if (!strcmp(mode, "cached")) rc = bench_cached(argc > 2 ? atol(argv[2]) : 1000000);
  else if (!strcmp(mode, "cold")) rc = bench_cold();
  else if (!strcmp(mode, "barrier"))
    rc = bench_barrier_latency(argc > 2 ? atol(argv[2]) : 10000, argc > 3 && !strcmp(argv[3], "check"));
  else if (!strcmp(mode, "grant") && argc > 2) {
    const char *w = argc > 4 ? argv[4] : "all";
    enum grant_write what = !strcmp(w, "none")     ? WRITE_NONE
                            : !strcmp(w, "sparse") ? WRITE_SPARSE
                            : !strcmp(w, "mixed")  ? WRITE_MIXED
                                                   : WRITE_ALL;
    if (strcmp(w, "all") && strcmp(w, "sparse") && strcmp(w, "none") && strcmp(w, "mixed")) usage();
    rc = bench_grant(strtoull(argv[2], NULL, 0), argc > 3 ? atol(argv[3]) : 20, what);
  }
  else usage();
  mw_finalize();
  return rc;
}
