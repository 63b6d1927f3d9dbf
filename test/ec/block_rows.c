/* block_rows.c — a block updated row by row through a stride known only at run time (LU's
 * bmod: daxpy into row j of the block, j * stride apart, for every k) is marked as rows
 * after the nest, exactly. The pass cannot show that the stride is the rows' width (here
 * it is not: each rank's block is its own columns of every row, beside the other ranks'
 * columns and the padding nobody writes), so it marks Rows rows of the block's width, once
 * after the k loop, planned before the vectorizer splits the i loop (pass/test/c-nests.c);
 * this runs it. The mark is made only if the i and j loops' guards let them run: a block
 * of -1 columns or -1 rows marks nothing (without the guard, a row of -8 bytes, or -1 rows:
 * most of the address space). A mark wider than the bytes written
 * would carry the rank's stale copy of its neighbours' bytes over theirs (barrier
 * coalescing merges every rank's marked bytes; release consistency sends them as
 * updates), and a narrower one would leave some of its own behind.
 *
 *   mwrun -n P block_rows [--unbound]      (P divides 96)
 *
 * Before each round's barrier a rank checks that its dirty marks count exactly the bytes
 * it wrote (when the matrix is bound), and that updates of no rows or columns marked nothing;
 * after the barrier, every rank checks the whole matrix.
 * --unbound leaves it bound to nothing (release consistency: run it with --model rc).
 * Exits 1 naming the round, the rank and the element.
 */
#include <midway.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 96
#define LD (N + 5)
#define K 4
#define PAD (-1.0)

MW_SHARED _Alignas(4096) double c[N][LD];
MW_SHARED mw_barrier_t crossing;

static double value(int round, long row, long col) { return round * 1e6 + col * 1e3 + row; }

/* c[j * stride + i] += alpha[k][j] * a[k][i] for i < dimi, j < dimj, every k: the rows of
 * the block, each written K times. noinline, so that stride and the sizes stay unknown. */
__attribute__((noinline)) static void bmod(double *restrict blk, const double *a, long dimi,
                                           long dimj, long dimk, long stride) {
  for (long k = 0; k < dimk; k++)
    for (long j = 0; j < dimj; j++) {
      const double alpha = (double)(k + 1) * 0.5;
      for (long i = 0; i < dimi; i++) blk[j * stride + i] += alpha * a[k * dimi + i];
    }
}

int main(int argc, char **argv) {
  mw_init(&argc, &argv);
  const int unbound = argc > 1 && strcmp(argv[1], "--unbound") == 0;
  const int me = mw_rank(), np = mw_nprocs();
  if (N % np != 0) {
    fprintf(stderr, "block_rows: %d ranks do not divide %d columns\n", np, N);
    return 2;
  }
  if (!unbound) mw_barrier_bind(&crossing, c, sizeof c);
  if (me == 0)
    for (long j = 0; j < N; j++)
      for (long i = N; i < LD; i++) c[j][i] = PAD;
  mw_barrier(&crossing);
  const long cols = N / np, lo = me * cols;
  /* a[k][i]: sum over k of (k + 1) / 2 * a[k][i] is 1 for every i. */
  double *a = malloc(sizeof(double) * K * cols);
  for (long k = 0; k < K; k++)
    for (long i = 0; i < cols; i++) a[k * cols + i] = 1.0 / (K * (k + 1) * 0.5);
  for (int round = 0; round < 2; round++) {
    /* Set the block to value - 1 (its own rows, a plain loop), then add 1 through bmod. */
    for (long j = 0; j < N; j++)
      for (long i = lo; i < lo + cols; i++) c[j][i] = value(round, j, i) - 1;
    /* What bmod marks alone. Unbound, the marks of release-consistent data that were not
     * sent yet (rank 0's padding, on pages no other rank holds) would be lost with them
     * (docs/API.md, mw_dirty_clear); the count is checked only when bound. */
    if (!unbound) mw_dirty_clear(c, sizeof c);
    /* Counts below zero, as hi - lo can be: the loops do not run, and nothing is marked. */
    bmod(&c[0][lo], a, -1, N, K, LD);
    bmod(&c[0][lo], a, cols, -1, K, LD);
    if (!unbound && mw_dirty_count(c, sizeof c) != 0) {
      fprintf(stderr, "block_rows: round %d, rank %d: updates of no rows or columns marked %zu bytes\n",
              round, me, mw_dirty_count(c, sizeof c));
      return 1;
    }
    bmod(&c[0][lo], a, cols, N, K, LD);
    const size_t marked = mw_dirty_count(c, sizeof c), wrote = (size_t)N * cols * sizeof(double);
    if (!unbound && marked != wrote) {
      fprintf(stderr, "block_rows: round %d, rank %d: %zu bytes marked dirty, %zu written\n", round,
              me, marked, wrote);
      return 1;
    }
    mw_barrier(&crossing);
    for (long j = 0; j < N; j++)
      for (long i = 0; i < LD; i++) {
        const double want = i < N ? value(round, j, i) : PAD;
        if (c[j][i] < want - 1e-9 || c[j][i] > want + 1e-9) {
          fprintf(stderr, "block_rows: round %d, rank %d: %s [%ld][%ld] is %.9g, expected %.9g\n",
                  round, me, i < N ? "c" : "padding", j, i, c[j][i], want);
          return 1;
        }
      }
    mw_barrier(&crossing); /* nobody writes a block another rank may still be reading */
  }
  free(a);
  mw_finalize();
  return 0;
}
