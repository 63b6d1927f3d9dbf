/* transpose.c — blocks written column by column (a transpose: the inner loop strides down
 * a column, the outer loop steps to the next column) are marked as rows after the nest,
 * exactly. The pass marks such a nest with one __mw_mark_rows after it (pass/test/c-rows.c);
 * this runs it. Each rank transposes into its own columns of every row, beside the other
 * ranks' columns and the padding nobody writes: a mark wider than the bytes written would
 * carry the rank's stale copy of its neighbours' bytes over theirs (barrier coalescing
 * merges every rank's marked bytes; release consistency sends them as updates), and a
 * narrower one would leave some of its own behind.
 *
 *   mwrun -n P transpose [--unbound]      (P divides 96)
 *
 * dst holds N rows of LD complex numbers (two doubles); the LD - N at the end of each row
 * are padding, set once by rank 0. Round 0 runs both loops up, round 1 both down. Before
 * each round's barrier a rank checks that its dirty marks count exactly the bytes it wrote
 * (when dst is bound); after it, every rank checks all of dst. --unbound leaves dst bound to nothing (release
 * consistency: run it with --model rc). Exits 1 naming the round, the rank and the element.
 */
#include <midway.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 96
#define LD (N + 3)
#define PAD (-1.0)

MW_SHARED _Alignas(4096) double dst[N][LD][2];
MW_SHARED mw_barrier_t crossing;

static double value(int round, long row, long col, int part) {
  return round * 1e6 + col * 1e3 + row + part * 0.5;
}

static int fail(int round, const char *what, long row, long col, double got, double want) {
  fprintf(stderr, "transpose: round %d, rank %d: %s [%ld][%ld] is %g, expected %g\n", round,
          mw_rank(), what, row, col, got, want);
  return 1;
}

/* dst[j][i] for the columns i in [lo, hi) of every row j: the inner loop strides by a row. */
static void transpose_up(int round, long lo, long hi) {
  for (long i = lo; i < hi; i++)
    for (long j = 0; j < N; j++) {
      dst[j][i][0] = value(round, j, i, 0);
      dst[j][i][1] = value(round, j, i, 1);
    }
}

static void transpose_down(int round, long lo, long hi) {
  for (long i = hi - 1; i >= lo; i--)
    for (long j = N - 1; j >= 0; j--) {
      dst[j][i][0] = value(round, j, i, 0);
      dst[j][i][1] = value(round, j, i, 1);
    }
}

int main(int argc, char **argv) {
  mw_init(&argc, &argv);
  const int unbound = argc > 1 && strcmp(argv[1], "--unbound") == 0;
  const int me = mw_rank(), np = mw_nprocs();
  if (N % np != 0) {
    fprintf(stderr, "transpose: %d ranks do not divide %d columns\n", np, N);
    return 2;
  }
  if (!unbound) mw_barrier_bind(&crossing, dst, sizeof dst);
  if (me == 0)
    for (long j = 0; j < N; j++)
      for (long i = N; i < LD; i++) dst[j][i][0] = dst[j][i][1] = PAD;
  mw_barrier(&crossing);
  const long cols = N / np, lo = me * cols, hi = lo + cols;
  for (int round = 0; round < 2; round++) {
    if (round == 0)
      transpose_up(round, lo, hi);
    else
      transpose_down(round, lo, hi);
    /* Unbound, a page's marks go with it when another rank fetches it from its home. */
    const size_t marked = mw_dirty_count(dst, sizeof dst), wrote = (size_t)N * cols * 16;
    if (!unbound && marked != wrote) {
      fprintf(stderr, "transpose: round %d, rank %d: %zu bytes marked dirty, %zu written\n", round,
              me, marked, wrote);
      return 1;
    }
    mw_barrier(&crossing);
    for (long j = 0; j < N; j++)
      for (long i = 0; i < LD; i++)
        for (int part = 0; part < 2; part++) {
          const double want = i < N ? value(round, j, i, part) : PAD;
          if (dst[j][i][part] != want)
            return fail(round, i < N ? "dst" : "padding", j, i, dst[j][i][part], want);
        }
    mw_barrier(&crossing);  /* nobody writes a column another rank may still be reading */
  }
  mw_finalize();
  return 0;
}
