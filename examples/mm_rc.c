/* mm_rc.c — Midway's MM-rc (Bershad, Zekauskas and Sawdon 1993, section 5.2): the matrix
 * multiply C = A x B of mm_ec.c, written to release consistency.
 *
 * The paper wrote MM-rc "to assess the importance of this clustering": MM-ec's lock
 * acquires bring each processor its whole input in one message and its final barrier
 * carries its whole output back, while under release consistency "there is no associated
 * synchronization object and no way to know which data to prefetch or when", so every
 * page travels on its own, on a copyset fault (Table 1: 1802 messages at 2 processors
 * against MM-ec's 24, for nearly the same bytes).
 *
 * The same program as mm_ec.c: the same inputs, the same partitioning (rank r computes
 * rows [lo_r, hi_r) of C, reading the same rows of A and all of B), the same phases, the
 * same options and the same bitwise verification at rank 0. What differs:
 *
 *   - nothing is bound: no mw_bind, no mw_barrier_bind, and no locks at all. A, B and C
 *     are release consistent (run it with mwrun --model=rc). A rank's first touch of a
 *     page it does not hold faults and fetches the page from its home, which puts the
 *     rank in the page's copyset; its writes reach the copyset at its next release.
 *   - the barriers only order: `start` (the master's writes of A and B are released
 *     before anyone reads them) and `done` (every band of C is released before the
 *     master reads it; mw_barrier_final, as in mm_ec.c, so the other ranks go on).
 *   - phase input is each rank's first touch of every page it will use (one read per
 *     page of its rows of A, all of B and its rows of C): under RC those copyset faults
 *     are the input transfer, where under EC the two lock acquires were. Compute then
 *     runs without faults, as under EC. Touching the rows of C it will write belongs
 *     here too: RC fetches a page before anyone may write it.
 *   - phase output on the master is the final barrier and then its first touch of
 *     every page of C (the faults that bring the other ranks' bands), where under EC
 *     the barrier alone carried C. The other ranks' output phase is the barrier alone.
 *
 *   mwcc -O2 mm_rc.c -o mm_rc && mwrun -n 4 --model=rc --stats ./mm_rc [-n 512] [-s seed]
 *
 * Compiled with plain clang and -DMW_SEQUENTIAL (examples/mw_sequential.h) it is the
 * paper's single-processor program, as mm_ec.c is; bench/mm_compare.py sets the two
 * side by side.
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

#define MAXN 512 /* the matrices' size is fixed at compile time; -n picks n <= MAXN */
#define MAXP 256 /* most ranks the program handles                               */
#define TOUCH_STEP 4096 /* no larger than a page: one read per page faults every page in */

MW_SHARED __attribute__((aligned(4096))) float A[MAXN][MAXN];
MW_SHARED __attribute__((aligned(4096))) float B[MAXN][MAXN];
MW_SHARED __attribute__((aligned(4096))) float C[MAXN][MAXN];

MW_SHARED mw_barrier_t start; /* the inputs are written        */
MW_SHARED mw_barrier_t done;  /* every band of C is written    */

/* Private: the sequential reference. */
static float refA[MAXN][MAXN], refB[MAXN][MAXN], refC[MAXN][MAXN];

static void usage(FILE *f) {
  fprintf(f,
          "usage: mm_rc [-n N] [-s SEED]\n"
          "  C = A x B with N x N floats (1 <= N <= %d, default 512) under release\n"
          "  consistency, Midway's MM-rc; SEED (default 1) varies the inputs.\n"
          "  Run with mwrun -n P --model=rc [--stats]; rank 0 verifies C sequentially.\n",
          MAXN);
}

/* The inputs: multiples of 1/8 in [-1, 1], a hash of (i, j, seed, which matrix). */
static float input(int i, int j, unsigned seed, unsigned which) {
  unsigned h = (unsigned)i * 2654435761u ^ ((unsigned)j + 0x9e3779b9u * (seed + which)) * 40503u;
  h ^= h >> 15;
  h *= 2246822519u;
  h ^= h >> 13;
  return (float)((int)(h % 17u) - 8) / 8.0f;
}

static void fill(float (*m)[MAXN], int lo, int hi, int n, unsigned seed, unsigned which) {
  for (int i = lo; i < hi; i++)
    for (int j = 0; j < n; j++) m[i][j] = input(i, j, seed, which);
}

/* Rows [lo, hi) of c = a x b; the same code computes the shared and the private product. */
static void multiply(float (*c)[MAXN], float (*a)[MAXN], float (*b)[MAXN], int lo, int hi,
                     int n) {
  for (int i = lo; i < hi; i++) {
    for (int j = 0; j < n; j++) c[i][j] = 0.0f;
    for (int k = 0; k < n; k++) {
      float aik = a[i][k];
      for (int j = 0; j < n; j++) c[i][j] += aik * b[k][j];
    }
  }
}

/* Reads one byte of every page of [p, p + len): a page this rank is not in the copyset
 * of faults and is fetched from its home. */
static void touch(const void *p, size_t len) {
  const volatile char *c = p;
  if (len == 0) return;
  for (size_t off = 0; off < len; off += TOUCH_STEP) (void)c[off];
  (void)c[len - 1];
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
  int n = MAXN, seed = 1;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      usage(stdout);
      return 0;
    } else if (!strcmp(argv[i], "-n") && i + 1 < argc && parse_int(argv[i + 1], &n)) {
      i++;
    } else if (!strcmp(argv[i], "-s") && i + 1 < argc && parse_int(argv[i + 1], &seed)) {
      i++;
    } else {
      fprintf(stderr, "mm_rc: bad argument '%s'\n", argv[i]);
      usage(stderr);
      return 2;
    }
  }
  if (n < 1 || n > MAXN) {
    fprintf(stderr, "mm_rc: -n %d is out of range\n", n);
    usage(stderr);
    return 2;
  }

  mw_init(&argc, &argv);
  const int me = mw_rank(), P = mw_nprocs();
  if (P > MAXP) {
    if (me == 0) fprintf(stderr, "mm_rc: at most %d ranks\n", MAXP);
    mw_finalize();
    return 2;
  }
  const double t0 = now();
  const size_t row = sizeof A[0];
#define LO(r) ((int)((long)n * (r) / P))

  /* No start-up bindings: A, B and C belong to no lock or barrier. */

  /* The master writes the inputs; the start barrier releases them. */
  if (me == 0) {
    fill(B, 0, n, n, (unsigned)seed, 1);
    fill(A, 0, n, n, (unsigned)seed, 0);
  }
  mw_barrier(&start);

  const int lo = LO(me), hi = LO(me + 1);
  mw_phase_begin("input");
  if (hi > lo) {
    touch(B, (size_t)n * row);
    touch(A[lo], (size_t)(hi - lo) * row);
    touch(C[lo], (size_t)(hi - lo) * row);
  }
  mw_phase_end("input");

  mw_phase_begin("compute");
  multiply(C, A, B, lo, hi, n);
  mw_phase_end("compute");

  mw_phase_begin("output");
  mw_barrier_final(&done); /* rank 0 waits for every band of C to be released; the others go on */
  if (me == 0) touch(C, (size_t)n * row); /* the other ranks' bands fault in */
  mw_phase_end("output");
  const double elapsed = now() - t0;

  int status = 0;
  if (me == 0) {
    fill(refA, 0, n, n, (unsigned)seed, 0);
    fill(refB, 0, n, n, (unsigned)seed, 1);
    multiply(refC, refA, refB, 0, n, n);
    long bad = 0;
    int bi = -1, bj = -1;
    for (int i = 0; i < n; i++)
      for (int j = 0; j < n; j++)
        if (memcmp(&C[i][j], &refC[i][j], sizeof(float)) != 0 && bad++ == 0) bi = i, bj = j;
    if (bad) {
      int owner = 0;
      while (LO(owner + 1) <= bi) owner++;
      fprintf(stderr,
              "mm_rc: MISMATCH: %ld of %ld elements of C differ from the sequential product; "
              "first C[%d][%d] = %g, expected %g (row %d belongs to rank %d)\n",
              bad, (long)n * n, bi, bj, (double)C[bi][bj], (double)refC[bi][bj], bi, owner);
      status = 1;
    }
    printf("mm_rc: n=%d P=%d: result %s, elapsed %.6f s\n", n, P, status ? "WRONG" : "ok",
           elapsed);
  }
  mw_finalize();
  return status;
}
