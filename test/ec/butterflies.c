/* butterflies.c — FFT's butterflies (Splash-3's FFT1DOnce) on each rank's own rows of a
 * shared matrix, marked exactly: at level q a group k writes x1 = x + 2kL and x2 = x1 + L,
 * L/2 complex numbers each. The optimizer turns k * L into k << q, which the pass reads as
 * k * (1 << q), joins the two halves into one range per group, and marks the groups as
 * rows after the k loop, once per level (pass/test/c-rows.c); the runtime marks rows that
 * touch as one range. A mark wider than the bytes written would carry this rank's stale
 * copy of the other ranks' rows over theirs; a narrower one would leave some of its own
 * behind.
 *
 *   mwrun -n P butterflies [--unbound]      (P divides 96)
 *
 * Before each round's barrier a rank checks that its marks count exactly the bytes of its
 * rows (when the matrix is bound); after it, every rank checks every row against its own
 * computation. --unbound leaves the matrix bound to nothing (run it with --model rc).
 * Exits 1 naming the round, the rank and the element.
 */
#include <midway.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ROWS 96
#define M 8
#define N (1 << M) /* complex numbers a row */

MW_SHARED _Alignas(4096) double x[ROWS][2 * N];
MW_SHARED mw_barrier_t crossing;
static double twiddle[2 * N];

/* noinline, so that the row stays a pointer the pass must range-check. */
__attribute__((noinline)) static void butterflies(double *row) {
  for (int q = 1; q <= M; q++) {
    long L = 1 << q, groups = N / L, half = L / 2;
    const double *w = &twiddle[2 * (half - 1)];
    for (long k = 0; k < groups; k++) {
      double *x1 = &row[2 * (k * L)], *x2 = &row[2 * (k * L + half)];
      for (long j = 0; j < half; j++) {
        double tr = w[2 * j] * x2[2 * j] - w[2 * j + 1] * x2[2 * j + 1];
        double ti = w[2 * j] * x2[2 * j + 1] + w[2 * j + 1] * x2[2 * j];
        double ur = x1[2 * j], ui = x1[2 * j + 1];
        x2[2 * j] = ur - tr;
        x2[2 * j + 1] = ui - ti;
        x1[2 * j] = ur + tr;
        x1[2 * j + 1] = ui + ti;
      }
    }
  }
}

static double input(int round, long r, long i) { return (double)((r * 7 + i * 3 + round) % 17) / 17; }

int main(int argc, char **argv) {
  mw_init(&argc, &argv);
  const int unbound = argc > 1 && strcmp(argv[1], "--unbound") == 0;
  const int me = mw_rank(), np = mw_nprocs();
  if (ROWS % np != 0) {
    fprintf(stderr, "butterflies: %d ranks do not divide %d rows\n", np, ROWS);
    return 2;
  }
  for (long j = 0; j < 2 * N; j++) twiddle[j] = (double)(j % 13) / 13 - 0.5;
  if (!unbound) mw_barrier_bind(&crossing, x, sizeof x);
  const long rows = ROWS / np, lo = me * rows;
  static double want[2 * N];
  for (int round = 0; round < 2; round++) {
    for (long r = lo; r < lo + rows; r++)
      for (long i = 0; i < 2 * N; i++) x[r][i] = input(round, r, i);
    if (!unbound) mw_dirty_clear(x, sizeof x); /* what the butterflies mark alone */
    for (long r = lo; r < lo + rows; r++) butterflies(x[r]);
    const size_t marked = mw_dirty_count(x, sizeof x), wrote = (size_t)rows * sizeof x[0];
    if (!unbound && marked != wrote) {
      fprintf(stderr, "butterflies: round %d, rank %d: %zu bytes marked dirty, %zu written\n",
              round, me, marked, wrote);
      return 1;
    }
    mw_barrier(&crossing);
    for (long r = 0; r < ROWS; r++) {
      for (long i = 0; i < 2 * N; i++) want[i] = input(round, r, i);
      butterflies(want);
      for (long i = 0; i < 2 * N; i++)
        if (x[r][i] != want[i]) {
          fprintf(stderr, "butterflies: round %d, rank %d: x[%ld][%ld] is %.17g, expected %.17g\n",
                  round, me, r, i, x[r][i], want[i]);
          return 1;
        }
    }
    mw_barrier(&crossing); /* nobody writes rows another rank may still be reading */
  }
  mw_finalize();
  return 0;
}
