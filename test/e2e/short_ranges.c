// Loops of run-time length mark exactly the bytes they wrote, at every start within a
// shadow byte and every length: short ones inline (a word-wide OR per 64 bytes, or, for
// 8-byte elements, overlapping stores of whole shadow bytes), long ones through the
// runtime, with the boundary between the two (256 bytes from the first shadow byte)
// crossed. Marks already set around the range stay set: the OR rewrites its neighbours
// unchanged, the stores do not reach them. The same with the inline path switched off.
// RUN: %mwcc -O2 %s -o %t.O2 && %t.O2
// RUN: %mwcc -O0 %s -o %t.O0 && %t.O0
// RUN: %mwcc -O2 -mllvm -midway-inline-range-bytes=64 %s -o %t.64 && %t.64
// RUN: %mwcc -O2 -mllvm -midway-inline-range-bytes=0 %s -o %t.call && %t.call
// RUN: %if avx2 %{ %mwcc -O3 -march=x86-64-v3 %s -o %t.avx2 && %t.avx2 %}
#include "check.h"

#define SPAN 640  /* bytes checked around each range */
#define BEFORE 64 /* the range starts BEFORE + offset bytes into the span */

__attribute__((noinline)) static void bump_bytes(unsigned char *p, int n) {
  for (int i = 0; i < n; i++) p[i] = (unsigned char)(p[i] + i);
}
__attribute__((noinline)) static void scale_floats(float *p, int n) {
  for (int i = 0; i < n; i++) p[i] = p[i] * 0.5f + 1.0f;
}
__attribute__((noinline)) static void daxpy(double *a, const double *b, long n, double alpha) {
  for (long i = 0; i < n; i++) a[i] += alpha * b[i];
}

/* Exactly [lo, hi) of the span is dirty, and the marks of `keep` (byte offsets in the
 * span) too. Quiet on success: one line per kind of loop. */
static int span_is(const unsigned char *span, size_t lo, size_t hi, const unsigned char *keep,
                   const char *what, size_t off, size_t len) {
  for (size_t i = 0; i < SPAN; i++) {
    int dirty = mw_dirty_count(span + i, 1) != 0;
    int want = (i >= lo && i < hi) || (keep && keep[i]);
    if (dirty != want) {
      printf("FAIL %s at offset %zu, %zu bytes: byte %zu of the span is %s\n", what, off, len, i,
             dirty ? "dirty" : "clean");
      check_failures++;
      return 0;
    }
  }
  return 1;
}

int main(int argc, char **argv) {
  mw_init(&argc, &argv);
  unsigned char *bytes = mw_malloc(SPAN);
  double *doubles = mw_malloc(SPAN);
  double src[SPAN / sizeof(double)];
  for (size_t i = 0; i < SPAN / sizeof(double); i++) src[i] = (double)i;

  int ok = 1;
  for (int off = 0; off < 16 && ok; off++)
    for (int len = 0; len <= 300 && ok; len++) {
      mw_dirty_clear(bytes, SPAN);
      bump_bytes(bytes + BEFORE + off, opaque(len));
      ok = span_is(bytes, BEFORE + off, BEFORE + off + len, NULL, "byte loop", off, len);
    }
  if (ok) printf("ok   byte loops at 16 offsets, 0 to 300 bytes\n");

  ok = 1;
  for (int off = 0; off < 16 && ok; off += 4)
    for (int n = 0; n <= 80 && ok; n++) {
      mw_dirty_clear(bytes, SPAN);
      scale_floats((float *)(bytes + BEFORE + off), opaque(n));
      ok = span_is(bytes, BEFORE + off, BEFORE + off + n * sizeof(float), NULL, "float loop", off,
                   n * sizeof(float));
    }
  if (ok) printf("ok   float loops at 4 offsets, 0 to 80 floats\n");

  ok = 1;
  for (int n = 0; n <= 40 && ok; n++) {
    mw_dirty_clear(doubles, SPAN);
    daxpy(doubles + BEFORE / sizeof(double), src, opaque(n), 2.0);
    ok = span_is((unsigned char *)doubles, BEFORE, BEFORE + n * sizeof(double), NULL,
                 "daxpy", BEFORE, n * sizeof(double));
  }
  if (ok) printf("ok   daxpy rows of 0 to 40 doubles\n");
  mw_dirty_clear(doubles, SPAN);
  daxpy(doubles + BEFORE / sizeof(double), src, opaque(16), 2.0);
  check_dirty("a block row of 16 doubles (LU's -b16)", doubles, SPAN, BEFORE, 16 * sizeof(double));

  /* Marks on both sides of the range, in its first and last shadow bytes and in the
   * words past it, are kept. */
  unsigned char keep[SPAN] = {0};
  for (size_t i = 0; i < SPAN; i += 5) keep[i] = 1;
  ok = 1;
  for (int off = 0; off < 8 && ok; off++)
    for (int len = 1; len <= 270 && ok; len += 7) {
      mw_dirty_clear(bytes, SPAN);
      for (size_t i = 0; i < SPAN; i++)
        if (keep[i]) mw_written(bytes + i, 1);
      bump_bytes(bytes + BEFORE + off, opaque(len));
      ok = span_is(bytes, BEFORE + off, BEFORE + off + len, keep, "byte loop among marks", off,
                   len);
    }
  if (ok) printf("ok   byte loops among marked neighbours\n");

  if (doubles[BEFORE / sizeof(double) + 3] != 2.0 * 3 * 38) {
    printf("FAIL data: %f\n", doubles[BEFORE / sizeof(double) + 3]);
    return 1;
  }
  /* Rows of doubles at every shadow byte of a shadow word, 0 to 40 long (the short path's
   * 1, 2-3, 4-7, 8-16 and 17-32 shadow bytes, and the runtime's beyond), among marks. */
  ok = 1;
  for (int start = 0; start < 64 && ok; start += 8)
    for (int n = 0; n <= 40 && ok; n++) {
      mw_dirty_clear(doubles, SPAN);
      for (size_t i = 0; i < SPAN; i++)
        if (keep[i]) mw_written((unsigned char *)doubles + i, 1);
      daxpy(doubles + start / (int)sizeof(double), src, opaque(n), 2.0);
      ok = span_is((unsigned char *)doubles, (size_t)start, (size_t)start + n * sizeof(double), keep,
                   "daxpy among marks", (size_t)start, n * sizeof(double));
    }
  if (ok) printf("ok   daxpy rows at 8 starts among marked neighbours\n");
  mw_finalize();
  return check_report();
}
