/* sor_rc.c — red-black successive over-relaxation under release consistency: the
 * program of sor_ec.c with nothing bound.
 *
 * An M x N grid of doubles: the outer rows and columns hold fixed boundary values, and
 * each iteration updates the interior points in two half-sweeps, first the red points
 * ((i + j) even) and then the black ones, each point becoming
 *
 *     g = (1 - w) g + w (north + south + west + east) / 4.
 *
 * Rank r owns the band of rows [lo_r, hi_r) and is the only rank that writes them; it
 * reads its own rows and the two rows just outside its band. The same grid, bands,
 * sweeps, barriers and bitwise verification at rank 0 as sor_ec.c. What differs: no
 * mw_barrier_bind. The grid is release consistent (run it with mwrun --model=rc, or
 * under the default model, where unbound data falls back to release consistency): a
 * rank's first load of a row it does not hold faults and fetches the row's page from
 * its home, which puts the rank in the page's copyset, and its stores reach the copyset
 * at its next release. The barriers only order:
 *
 *   edges  after each half-sweep: every rank's stores of the sweep are released before
 *          its neighbours load the edge rows;
 *   final  at the end: every band is released before rank 0 verifies the grid.
 *
 * It is the binding advisor's example (docs/CHECKER.md): a check build run with
 * `mwrun --advise` proposes sor_ec.c's bindings, edge rows to `edges` and inner rows
 * to `final` (test/e2e/advise_examples.test).
 *
 *   mwcc -O2 sor_rc.c -o sor_rc && mwrun -n 4 --model=rc ./sor_rc [-m 256] [-n 256] [-i 50]
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

#define MAXM 512
#define MAXN 512
#define OMEGA 1.5

MW_SHARED __attribute__((aligned(4096))) double G[MAXM][MAXN];
MW_SHARED mw_barrier_t edges; /* after each half-sweep */
MW_SHARED mw_barrier_t final; /* before rank 0 verifies */

static double ref[MAXM][MAXN]; /* private: the sequential reference */

static void usage(FILE *f) {
  fprintf(f,
          "usage: sor_rc [-m ROWS] [-n COLS] [-i ITERATIONS]\n"
          "  red-black SOR on a ROWS x COLS grid of doubles (3 <= ROWS <= %d, default 256;\n"
          "  3 <= COLS <= %d, default 256; ITERATIONS >= 0, default 50) under release\n"
          "  consistency. Run with mwrun -n P (P <= ROWS); rank 0 verifies the grid.\n",
          MAXM, MAXN);
}

/* The initial value of point (i, j): the boundary holds a profile, the interior 0. */
static double initial(int i, int j, int m, int n) {
  if (i == 0) return 1.0 + (double)j / n;
  if (i == m - 1) return -1.0;
  if (j == 0) return (double)i / m;
  if (j == n - 1) return 0.5;
  return 0.0;
}

static void init_rows(double (*g)[MAXN], int lo, int hi, int m, int n) {
  for (int i = lo; i < hi; i++)
    for (int j = 0; j < n; j++) g[i][j] = initial(i, j, m, n);
}

/* One half-sweep of colour `colour` over the interior points of rows [lo, hi). The same
 * code updates the shared grid and the private one. */
static void half_sweep(double (*g)[MAXN], int lo, int hi, int m, int n, int colour) {
  if (lo < 1) lo = 1;
  if (hi > m - 1) hi = m - 1;
  for (int i = lo; i < hi; i++)
    for (int j = 1 + ((i + 1 + colour) & 1); j < n - 1; j += 2)
      g[i][j] = (1.0 - OMEGA) * g[i][j] +
                OMEGA * 0.25 * (g[i - 1][j] + g[i + 1][j] + g[i][j - 1] + g[i][j + 1]);
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
  int m = 256, n = 256, iters = 50;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      usage(stdout);
      return 0;
    } else if (!strcmp(argv[i], "-m") && i + 1 < argc && parse_int(argv[i + 1], &m)) {
      i++;
    } else if (!strcmp(argv[i], "-n") && i + 1 < argc && parse_int(argv[i + 1], &n)) {
      i++;
    } else if (!strcmp(argv[i], "-i") && i + 1 < argc && parse_int(argv[i + 1], &iters)) {
      i++;
    } else {
      fprintf(stderr, "sor_rc: bad argument '%s'\n", argv[i]);
      usage(stderr);
      return 2;
    }
  }
  if (m < 3 || m > MAXM || n < 3 || n > MAXN || iters < 0) {
    fprintf(stderr, "sor_rc: size or iteration count out of range\n");
    usage(stderr);
    return 2;
  }

  mw_init(&argc, &argv);
  const int me = mw_rank(), P = mw_nprocs();
  if (P > m) {
    if (me == 0) fprintf(stderr, "sor_rc: %d ranks need at least %d rows (-m)\n", P, P);
    mw_finalize();
    return 2;
  }
  const double t0 = now();
#define LO(r) ((int)((long)m * (r) / P))

  /* No start-up bindings: the grid belongs to no lock or barrier. */

  const int lo = LO(me), hi = LO(me + 1);
  init_rows(G, lo, hi, m, n); /* each rank writes only its own band */
  mw_barrier(&edges);         /* ... and sees its neighbours' edge rows */

  mw_phase_begin("compute");
  for (int it = 0; it < iters; it++)
    for (int colour = 0; colour < 2; colour++) {
      half_sweep(G, lo, hi, m, n, colour);
      mw_barrier(&edges);
    }
  mw_phase_end("compute");

  mw_phase_begin("output");
  mw_barrier_final(&final); /* every band is released before rank 0 reads it */
  mw_phase_end("output");
  const double elapsed = now() - t0;

  int status = 0;
  if (me == 0) {
    init_rows(ref, 0, m, m, n);
    for (int it = 0; it < iters; it++)
      for (int colour = 0; colour < 2; colour++) half_sweep(ref, 0, m, m, n, colour);
    long bad = 0;
    int bi = -1, bj = -1;
    for (int i = 0; i < m; i++)
      for (int j = 0; j < n; j++)
        if (memcmp(&G[i][j], &ref[i][j], sizeof(double)) != 0 && bad++ == 0) bi = i, bj = j;
    if (bad) {
      int owner = 0;
      while (LO(owner + 1) <= bi) owner++;
      fprintf(stderr,
              "sor_rc: MISMATCH: %ld of %ld points differ from the sequential SOR; first "
              "G[%d][%d] = %.17g, expected %.17g (row %d of rank %d's band [%d, %d))\n",
              bad, (long)m * n, bi, bj, G[bi][bj], ref[bi][bj], bi, owner, LO(owner),
              LO(owner + 1));
      status = 1;
    }
    printf("sor_rc: %dx%d, %d iterations, P=%d: result %s, elapsed %.6f s\n", m, n, iters, P,
           status ? "WRONG" : "ok", elapsed);
  }
  mw_finalize();
  return status;
}
