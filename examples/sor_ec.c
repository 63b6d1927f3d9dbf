/* sor_ec.c — red-black successive over-relaxation under entry consistency.
 *
 * An M x N grid of doubles: the outer rows and columns hold fixed boundary values, and
 * each iteration updates the interior points in two half-sweeps, first the red points
 * ((i + j) even) and then the black ones, each point becoming
 *
 *     g = (1 - w) g + w (north + south + west + east) / 4.
 *
 * A red point's neighbours are all black and the other way round, so within a
 * half-sweep the order of the updates does not matter: the parallel run computes
 * exactly, bit for bit, what the sequential one does.
 *
 * Rank r owns the band of rows [lo_r, hi_r) and is the only rank that writes them. To
 * update its band it reads its own rows and the two rows just outside it, which are the
 * last row of the band above and the first row of the band below. So the data is bound
 * to two barriers, each byte to exactly one (every rank makes the same calls):
 *
 *   edges  <- the first and the last row of every band: crossed after each half-sweep,
 *             it carries each rank's freshly written edge rows to the other ranks;
 *   final  <- the rows inside every band: written every half-sweep but needed by no
 *             other rank until the end, when mw_barrier_final gathers them at rank 0
 *             (everything written to them since the start travels once).
 *
 *   mwcc -O2 sor_ec.c -o sor_ec && mwrun -n 4 ./sor_ec [-m 256] [-n 256] [-i 50]
 *
 * Rank 0 then compares the whole grid, bitwise, with a sequential red-black SOR of the
 * same grid and exits non-zero on any difference.
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
MW_SHARED mw_barrier_t edges; /* first and last row of every band */
MW_SHARED mw_barrier_t final; /* the rows inside the bands         */

static double ref[MAXM][MAXN]; /* private: the sequential reference */

static void usage(FILE *f) {
  fprintf(f,
          "usage: sor_ec [-m ROWS] [-n COLS] [-i ITERATIONS]\n"
          "  red-black SOR on a ROWS x COLS grid of doubles (3 <= ROWS <= %d, default 256;\n"
          "  3 <= COLS <= %d, default 256; ITERATIONS >= 0, default 50) under entry\n"
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
      fprintf(stderr, "sor_ec: bad argument '%s'\n", argv[i]);
      usage(stderr);
      return 2;
    }
  }
  if (m < 3 || m > MAXM || n < 3 || n > MAXN || iters < 0) {
    fprintf(stderr, "sor_ec: size or iteration count out of range\n");
    usage(stderr);
    return 2;
  }

  mw_init(&argc, &argv);
  const int me = mw_rank(), P = mw_nprocs();
  if (P > m) {
    if (me == 0) fprintf(stderr, "sor_ec: %d ranks need at least %d rows (-m)\n", P, P);
    mw_finalize();
    return 2;
  }
  const double t0 = now();
#define LO(r) ((int)((long)m * (r) / P))
  const size_t edge_bytes = (size_t)n * sizeof(double);

  /* Start-up: the same barrier bindings on every rank. Each band has at least one row;
   * a band of one row is all edge. Inner rows are bound as one range of whole rows
   * (columns >= n are never written, so they never travel). */
  for (int r = 0; r < P; r++) {
    int lo = LO(r), hi = LO(r + 1);
    mw_barrier_bind(&edges, G[lo], edge_bytes);
    if (hi - 1 > lo) mw_barrier_bind(&edges, G[hi - 1], edge_bytes);
    if (hi - 2 > lo) mw_barrier_bind(&final, G[lo + 1], (size_t)(hi - lo - 2) * sizeof G[0]);
  }

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
  mw_barrier_final(&final); /* the inner rows of every band reach rank 0 */
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
              "sor_ec: MISMATCH: %ld of %ld points differ from the sequential SOR; first "
              "G[%d][%d] = %.17g, expected %.17g (row %d of rank %d's band [%d, %d))\n",
              bad, (long)m * n, bi, bj, G[bi][bj], ref[bi][bj], bi, owner, LO(owner),
              LO(owner + 1));
      status = 1;
    }
    printf("sor_ec: %dx%d, %d iterations, P=%d: result %s, elapsed %.6f s\n", m, n, iters, P,
           status ? "WRONG" : "ok", elapsed);
  }
  mw_finalize();
  return status;
}
