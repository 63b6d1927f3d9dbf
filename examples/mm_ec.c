/* mm_ec.c — Midway's MM-ec (Bershad, Zekauskas and Sawdon 1993, section 5.2): a matrix
 * multiply C = A x B of floats under entry consistency.
 *
 * The paper's program: a master writes A and B; every processor takes a non-exclusive
 * lock on all of A and one on its portion of B, computes its portion of C, and crosses a
 * terminating barrier that carries its portion of C back to the master. The lock
 * acquires bring each processor exactly the input it reads (one message each way), the
 * barrier brings the master exactly the output; that is why MM-ec needs so few messages.
 *
 * Here each rank computes a band of ROWS of C (the paper's workers computed columns).
 * Since the matrices are row-major, a band of rows of C needs the same band of rows of
 * A and all of B, each one contiguous range. So the roles of A and B are swapped with
 * respect to the paper: one lock, lock_B, is bound to all of B and taken
 * non-exclusively by every rank, and lock_A[r] is bound to rank r's rows of A.
 *
 *   lock_B     <- B[0..n)               (every rank, MW_NONEXCLUSIVE)
 *   lock_A[r]  <- A[lo_r..hi_r)          (rank r, MW_NONEXCLUSIVE)
 *   done       <- C[lo_r..hi_r) for all r (mw_barrier_final gathers C at rank 0)
 *   start      <- nothing: it only orders "the master wrote the inputs" before the reads
 *
 * The master is rank 0: it writes A and B holding their locks exclusively, and the
 * start barrier plays the part of the paper's "then spawns slave processes". The phases
 * input (the acquires), compute and output (the final barrier) are Table 1's columns,
 * reported by `mwrun --stats`.
 *
 *   mwcc -O2 mm_ec.c -o mm_ec && mwrun -n 4 --stats ./mm_ec [-n 512] [-s seed] [--iterations K]
 *
 * Any N: up to 512 the matrices are the static arrays below; larger ones come from the
 * master's part of the shared heap (mw_malloc), their addresses passed to the others
 * through a barrier. --iterations K repeats input, compute and output K times over the
 * same matrices, the master rewriting the inputs each time (seed + k): the first
 * iteration is cold (every page and line moves for the first time), the others warm,
 * as ArgoDSM's benchmarks report them. Each iteration's time (rank 0, from the master's
 * first write to the gathered C) is the phase "iteration_<k>" in mwrun --stats.
 *
 * Rank 0 checks C against a sequential multiply of private copies of the inputs and
 * exits non-zero on any difference. The inputs are multiples of 1/8 no larger than 1 in
 * magnitude, so every sum is exact in float and the comparison is bitwise.
 *
 * Compiled with plain clang and -DMW_SEQUENTIAL (examples/mw_sequential.h), the same
 * source is the paper's single-processor program: no pass, no runtime, one process.
 * bench/mm_compare.py sets it, MM-rc (mm_rc.c) and this program side by side.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#ifdef MW_SEQUENTIAL
#include "mw_sequential.h" /* the single-process build: plain clang, no pass, no runtime */
#else
#include <midway.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAXN 512 /* up to this size the matrices are static; larger ones, mw_malloc */
#define MAXP 256 /* most ranks the program handles                                 */
/* Most iterations: each is a phase of its own (iteration_<k>, which mm_compare.py and the
 * main job read), beside input, compute and output, and a program names at most 32. */
#define MAXK 29

MW_SHARED __attribute__((aligned(4096))) float static_A[MAXN * MAXN];
MW_SHARED __attribute__((aligned(4096))) float static_B[MAXN * MAXN];
MW_SHARED __attribute__((aligned(4096))) float static_C[MAXN * MAXN];
/* Where the matrices are (static or the master's heap), written by the master before
 * the barrier `placed`, which carries them to every rank. On a page of its own, as bound
 * data should be: a page that also holds unbound data is fetched where the crossing's
 * data lands, from the master, busy then with its reference product. */
MW_SHARED __attribute__((aligned(4096))) float *placed_at[3];
MW_SHARED mw_barrier_t placed;

MW_SHARED mw_lock_t lock_A[MAXP]; /* lock_A[r]: rank r's rows of A */
MW_SHARED mw_lock_t lock_B;       /* all of B                      */
MW_SHARED mw_barrier_t start;     /* the inputs are written        */
MW_SHARED mw_barrier_t done;      /* carries C to rank 0           */

/* Every matrix is n x n floats, row i at m + i * n. */
static float *A, *B, *C;

static void usage(FILE *f) {
  fprintf(f,
          "usage: mm_ec [-n N] [-s SEED] [--iterations K]\n"
          "  C = A x B with N x N floats (N >= 1, default 512) under entry\n"
          "  consistency, Midway's MM-ec; SEED (default 1) varies the inputs.\n"
          "  K (1 to %d, default 1): input, compute and output K times, the inputs\n"
          "  rewritten by the master each time (the first iteration cold, the others warm).\n"
          "  Run with mwrun -n P [--stats]; rank 0 verifies C sequentially.\n",
          MAXK);
}

/* The inputs: multiples of 1/8 in [-1, 1], a hash of (i, j, seed, which matrix). */
static float input(int i, int j, unsigned seed, unsigned which) {
  unsigned h = (unsigned)i * 2654435761u ^ ((unsigned)j + 0x9e3779b9u * (seed + which)) * 40503u;
  h ^= h >> 15;
  h *= 2246822519u;
  h ^= h >> 13;
  return (float)((int)(h % 17u) - 8) / 8.0f;
}

static void fill(float *m, int lo, int hi, int n, unsigned seed, unsigned which) {
  for (int i = lo; i < hi; i++)
    for (int j = 0; j < n; j++) m[(size_t)i * n + j] = input(i, j, seed, which);
}

/* Rows [lo, hi) of c = a x b; the same code computes the shared and the private product. */
static void multiply(float *c, const float *a, const float *b, int lo, int hi, int n) {
  for (int i = lo; i < hi; i++) {
    float *ci = c + (size_t)i * n;
    for (int j = 0; j < n; j++) ci[j] = 0.0f;
    for (int k = 0; k < n; k++) {
      const float aik = a[(size_t)i * n + k], *bk = b + (size_t)k * n;
      for (int j = 0; j < n; j++) ci[j] += aik * bk[j];
    }
  }
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int parse_int(const char *s, int *out) {
  char *end;
  long v = strtol(s, &end, 10);
  if (*s == '\0' || *end != '\0' || v < -2147483647L || v > 2147483647L) return 0;
  *out = (int)v;
  return 1;
}

int main(int argc, char **argv) {
  int n = MAXN, seed = 1, iterations = 1;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      usage(stdout);
      return 0;
    } else if (!strcmp(argv[i], "-n") && i + 1 < argc && parse_int(argv[i + 1], &n)) {
      i++;
    } else if (!strcmp(argv[i], "-s") && i + 1 < argc && parse_int(argv[i + 1], &seed)) {
      i++;
    } else if (!strcmp(argv[i], "--iterations") && i + 1 < argc &&
               parse_int(argv[i + 1], &iterations)) {
      i++;
    } else {
      fprintf(stderr, "mm_ec: bad argument '%s'\n", argv[i]);
      usage(stderr);
      return 2;
    }
  }
  if (n < 1 || n > 46340) { /* n * n must fit an int */
    fprintf(stderr, "mm_ec: -n %d is out of range (1 to 46340)\n", n);
    usage(stderr);
    return 2;
  }
  if (iterations < 1 || iterations > MAXK) {
    fprintf(stderr, "mm_ec: --iterations %d is out of range (1 to %d)\n", iterations, MAXK);
    usage(stderr);
    return 2;
  }

  mw_init(&argc, &argv);
  const int me = mw_rank(), P = mw_nprocs();
  if (P > MAXP) {
    if (me == 0) fprintf(stderr, "mm_ec: at most %d ranks\n", MAXP);
    mw_finalize();
    return 2;
  }
  const size_t row = (size_t)n * sizeof(float), all = (size_t)n * row;
  mw_barrier_bind(&placed, placed_at, sizeof placed_at);
  if (me == 0) {
    int heap = n > MAXN;
    placed_at[0] = heap ? mw_malloc(all) : static_A;
    placed_at[1] = heap ? mw_malloc(all) : static_B;
    placed_at[2] = heap ? mw_malloc(all) : static_C;
  }
  mw_barrier(&placed);
  A = placed_at[0], B = placed_at[1], C = placed_at[2];
  const double t0 = now();
#define LO(r) ((int)((long)n * (r) / P))

  /* Start-up: every rank makes the same bindings before anyone acquires. A band of
   * rows is one contiguous range (whole rows of MAXN floats; columns >= n are never
   * written, so they never travel). A rank with no rows binds nothing. */
  mw_bind(&lock_B, B, (size_t)n * row);
  for (int r = 0; r < P; r++) {
    int lo = LO(r), hi = LO(r + 1);
    if (hi == lo) continue;
    mw_bind(&lock_A[r], A + (size_t)lo * n, (size_t)(hi - lo) * row);
    mw_barrier_bind(&done, C + (size_t)lo * n, (size_t)(hi - lo) * row);
  }
  const int lo = LO(me), hi = LO(me + 1);
  /* Private: the sequential reference, at the master. */
  float *refA = NULL, *refB = NULL, *refC = NULL;
  if (me == 0 && (!(refA = malloc(all)) || !(refB = malloc(all)) || !(refC = malloc(all)))) {
    fprintf(stderr, "mm_ec: no memory for the sequential reference (3 x %zu bytes)\n", all);
    mw_finalize();
    return 2;
  }
  double times[MAXK], first_end = t0;
  int status = 0;

  for (int it = 0; it < iterations; it++) { /* every rank runs them all, even after a mismatch */
    const unsigned s = (unsigned)seed + (unsigned)it;
    char name[32];
    snprintf(name, sizeof name, "iteration_%d", it + 1);
    const double ti = now();
    mw_phase_begin(name);
    /* The master writes the inputs, each under its lock held exclusively. */
    if (me == 0) {
      mw_acquire(&lock_B, MW_EXCLUSIVE);
      fill(B, 0, n, n, s, 1);
      mw_release(&lock_B);
      for (int r = 0; r < P; r++) {
        int rlo = LO(r), rhi = LO(r + 1);
        if (rhi == rlo) continue;
        mw_acquire(&lock_A[r], MW_EXCLUSIVE);
        fill(A, rlo, rhi, n, s, 0);
        mw_release(&lock_A[r]);
      }
    }
    mw_barrier(&start);

    mw_phase_begin("input");
    mw_acquire(&lock_B, MW_NONEXCLUSIVE);
    if (hi > lo) mw_acquire(&lock_A[me], MW_NONEXCLUSIVE);
    mw_phase_end("input");

    mw_phase_begin("compute");
    multiply(C, A, B, lo, hi, n);
    mw_phase_end("compute");
    if (hi > lo) mw_release(&lock_A[me]);
    mw_release(&lock_B);

    mw_phase_begin("output");
    mw_barrier_final(&done); /* rank 0 waits for every band of C; the others go on */
    mw_phase_end("output");
    mw_phase_end(name);
    const double tend = now();
    times[it] = tend - ti;
    if (it == 0) first_end = tend;

    if (me == 0) {
      fill(refA, 0, n, n, s, 0);
      fill(refB, 0, n, n, s, 1);
      multiply(refC, refA, refB, 0, n, n);
      long bad = 0;
      size_t first = 0;
      for (size_t e = 0; e < (size_t)n * n; e++)
        if (memcmp(&C[e], &refC[e], sizeof(float)) != 0 && bad++ == 0) first = e;
      if (bad) {
        const int bi = (int)(first / (size_t)n), bj = (int)(first % (size_t)n);
        int owner = 0;
        while (LO(owner + 1) <= bi) owner++;
        fprintf(stderr,
                "mm_ec: MISMATCH in iteration %d: %ld of %ld elements of C differ from the "
                "sequential product; first C[%d][%d] = %g, expected %g (row %d belongs to rank "
                "%d)\n",
                it + 1, bad, (long)n * n, bi, bj, (double)C[first], (double)refC[first], bi, owner);
        status = 1;
      }
    }
  }
  /* The iterations' times, without the checks between them (with one iteration, the
   * time since the start-up bindings, as before there were iterations). */
  double elapsed = iterations == 1 ? first_end - t0 : 0;
  for (int it = 0; iterations > 1 && it < iterations; it++) elapsed += times[it];

  if (me == 0) {
    printf("mm_ec: n=%d P=%d: result %s, elapsed %.6f s", n, P, status ? "WRONG" : "ok", elapsed);
    if (iterations > 1) {
      printf("; iterations (s):");
      for (int it = 0; it < iterations; it++) printf(" %.6f", times[it]);
    }
    printf("\n");
    free(refA), free(refB), free(refC);
  }
  mw_finalize();
  return status;
}
