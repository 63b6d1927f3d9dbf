/* jacobi.c — Jacobi relaxation on a shared grid, showing Midway's write detection.
 *
 * The grids are MW_SHARED: every store to them is marked in the dirty map by the code
 * mwcc adds. After each sweep the program asks the runtime which bytes were written
 * and checks that they are exactly the interior of the new grid: the set of bytes a
 * rank would ship to the next holder of a lock guarding the grid.
 *
 *   mwcc -O2 jacobi.c -o jacobi && ./jacobi [n] [iterations]
 *
 * Exits non-zero if the dirty map is not exactly what was written, or if the result
 * differs from a sequential run on private memory.
 */
#include <midway.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define MAXN 1024

MW_SHARED float grid[2][MAXN][MAXN];
static float ref[2][MAXN][MAXN]; /* private: the sequential reference */

static void sweep(float (*dst)[MAXN], float (*src)[MAXN], int n) {
  for (int i = 1; i < n - 1; i++)
    for (int j = 1; j < n - 1; j++)
      dst[i][j] = 0.25f * (src[i - 1][j] + src[i + 1][j] + src[i][j - 1] + src[i][j + 1]);
}

static void boundary(float (*g)[MAXN], int n) {
  for (int k = 0; k < n; k++) {
    g[0][k] = 1.0f; /* hot top edge, cold elsewhere */
    g[n - 1][k] = g[k][0] = g[k][n - 1] = 0.0f;
  }
}

int main(int argc, char **argv) {
  mw_init(&argc, &argv);
  int n = argc > 1 ? atoi(argv[1]) : 512;
  int iters = argc > 2 ? atoi(argv[2]) : 10;
  if (n < 3 || n > MAXN || iters < 1) {
    fprintf(stderr, "usage: jacobi [n (3..%d)] [iterations (>= 1)]\n", MAXN);
    return 2;
  }
  for (int g = 0; g < 2; g++) {
    boundary(grid[g], n);
    boundary(ref[g], n);
  }
  size_t row_bytes = (size_t)(n - 2) * sizeof(float);
  size_t expect = (size_t)(n - 2) * row_bytes;
  int bad = 0;
  printf("jacobi %dx%d, %d sweeps over MW_SHARED grids (%zu bytes each)\n", n, n, iters,
         sizeof grid[0]);
  for (int it = 0; it < iters; it++) {
    int s = it % 2, d = 1 - s;
    mw_dirty_clear(grid, sizeof grid);
    sweep(grid[d], grid[s], n);
    sweep(ref[d], ref[s], n);
    size_t dirty = mw_dirty_count(grid, sizeof grid);
    size_t in_dst = 0;
    for (int i = 1; i < n - 1; i++) in_dst += mw_dirty_count(&grid[d][i][1], row_bytes);
    int exact = dirty == expect && in_dst == expect;
    bad |= !exact;
    if (it < 3 || it == iters - 1 || !exact)
      printf("  sweep %2d: %zu bytes dirty, %zu of them in the interior of grid[%d] (%s)\n", it,
             dirty, in_dst, d, exact ? "exactly what was written" : "MISMATCH");
  }
  int last = iters % 2;
  double err = 0;
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++) err = fmax(err, fabs(grid[last][i][j] - ref[last][i][j]));
  printf("result vs sequential run on private memory: max |diff| = %g\n", err);
  mw_finalize();
  if (bad || err != 0) {
    printf("FAILED\n");
    return 1;
  }
  printf("OK\n");
  return 0;
}
