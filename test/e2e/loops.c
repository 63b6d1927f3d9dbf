// Loops, vectorized or not, mark exactly what they write: whole ranges, partial ranges,
// reverse loops, strided loops (the gaps stay clean) and conditional stores.
// RUN: %mwcc -O0 %s -o %t.O0 && %t.O0
// RUN: %mwcc -O2 %s -o %t.O2 && %t.O2
// RUN: %if avx2 %{ %mwcc -O3 -march=x86-64-v3 %s -o %t.avx2 && %t.avx2 %}
// RUN: %if avx512f %{ %mwcc -O3 -march=x86-64-v4 %s -o %t.avx512 && %t.avx512 %}
#include "check.h"

#define N 1000
MW_SHARED float grid[64][64];

__attribute__((noinline)) static void saxpy(float *y, const float *x, float a, int lo, int hi) {
  for (int i = lo; i < hi; i++) y[i] = a * x[i] + y[i];
}

__attribute__((noinline)) static void reverse_fill(int *p, int n) {
  for (int i = n - 1; i >= 0; i--) p[i] = i;
}

__attribute__((noinline)) static void every_third(double *p, int n) {
  for (int i = 0; i < n; i += 3) p[i] = 1.0;
}

__attribute__((noinline)) static void positives(int *dst, const int *src, int n) {
  for (int i = 0; i < n; i++)
    if (src[i] > 0) dst[i] = src[i];
}

int main(int argc, char **argv) {
  mw_init(&argc, &argv);
  int n = opaque(N);
  float *y = mw_malloc(N * sizeof(float));
  float x[N];
  for (int i = 0; i < N; i++) x[i] = (float)i;

  mw_dirty_clear(y, N * sizeof(float));
  saxpy(y, x, 2.0f, 0, n);
  check_dirty("saxpy over the whole array", y, N * sizeof(float), 0, N * sizeof(float));

  mw_dirty_clear(y, N * sizeof(float));
  saxpy(y, x, 2.0f, opaque(5), n - 3);
  check_dirty("saxpy over [5, n-3)", y, N * sizeof(float), 5 * sizeof(float),
              (N - 8) * sizeof(float));

  int *ints = mw_malloc(N * sizeof(int));
  mw_dirty_clear(ints, N * sizeof(int));
  reverse_fill(ints + 1, n - 2);
  check_dirty("reverse loop", ints, N * sizeof(int), sizeof(int), (N - 2) * sizeof(int));

  double *d = mw_malloc(30 * sizeof(double));
  mw_dirty_clear(d, 30 * sizeof(double));
  every_third(d, opaque(30));
  unsigned char want[30 * sizeof(double)] = {0};
  for (int i = 0; i < 30; i += 3) memset(want + i * sizeof(double), 1, sizeof(double));
  check_dirty_map("stride-3 loop leaves the gaps clean", d, sizeof want, want);

  int src[N];
  for (int i = 0; i < N; i++) src[i] = (i % 7 == 0) ? i + 1 : -i;
  mw_dirty_clear(ints, N * sizeof(int));
  positives(ints, src, n);
  unsigned char want2[N * sizeof(int)] = {0};
  for (int i = 0; i < N; i++)
    if (src[i] > 0) memset(want2 + i * sizeof(int), 1, sizeof(int));
  check_dirty_map("conditional stores", ints, sizeof want2, want2);

  mw_dirty_clear(grid, sizeof grid);
  int rows = opaque(40);
  for (int i = 0; i < rows; i++)
    for (int j = 0; j < 64; j++) grid[i][j] = (float)(i * j);
  check_dirty("2-D loop nest over the first 40 rows", grid, sizeof grid, 0, 40 * 64 * sizeof(float));

  mw_dirty_clear(grid, sizeof grid);
  for (int i = 0; i < 64; i++)
    for (int j = 0; j < opaque(10); j++) grid[i][j] = 1.0f; /* 10 columns: gaps between rows */
  unsigned char want3[sizeof grid] = {0};
  for (int i = 0; i < 64; i++) memset(want3 + i * 64 * sizeof(float), 1, 10 * sizeof(float));
  check_dirty_map("2-D loop nest over 10 columns leaves the rest of each row clean", grid,
                  sizeof grid, want3);

  if (y[10] != 2.0f * 10 * 2 || ints[7] != 8 || grid[3][5] != 1.0f) {
    printf("FAIL data: %f %d %f\n", y[10], ints[7], grid[3][5]);
    return 1;
  }
  mw_finalize();
  return check_report();
}
