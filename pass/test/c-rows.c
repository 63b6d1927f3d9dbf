// Rows: a nest that writes a block column by column (a transpose: the inner loop
// strides down a column, the outer loop steps to the next column by the width the
// inner loop's stores write) is marked once after the outer loop, with one runtime
// call for all the rows (__mw_mark_rows: Rows ranges of Len bytes, Stride apart),
// instead of a mark after every store. Each row is exactly the bytes written; a nest
// whose rows would have gaps, or whose inner loop runs a different number of times
// per column, or writes only sometimes, keeps its per-store marks.
// RUN: %clang_mw -O2 -fno-discard-value-names -S -emit-llvm -o - %s | FileCheck %s
// RUN: %clang_mw -fplugin=%plugin -O2 -mllvm -midway-strided-ranges=false -fno-discard-value-names -S -emit-llvm -o - %s \
// RUN:   | FileCheck %s --check-prefix=OFF
// RUN: %clang_mw -fplugin=%plugin -O2 -mllvm -stats -S -o /dev/null %s 2>&1 \
// RUN:   | FileCheck %s --check-prefix=STATS

// One each for transpose, shared_block, bmod and butterflies (below), planned
// before the vectorizer (midway-nest-ranges).
// STATS: 4 midway-instrument - Number of loop nest ranges marked before vectorization
// STATS: 4 midway-instrument - Number of loop ranges marked as rows a stride apart

#include <midway.h>

#define N 256
MW_SHARED double M[N][N + 4][2];

// Complex numbers (pairs of doubles), as Splash-3's FFT transposes them: rows of
// 16 * n bytes, 16 * ld apart, n of them. dst may or may not be in the window:
// checked once, before the call.
// CHECK-LABEL: define {{.*}}void @transpose(
// CHECK-NOT:     store i{{8|16|32|64}} -1
// CHECK:         ptrtoint ptr %dst to i64
// CHECK-NEXT:    add i64 {{%.*}}, -1073741824
// CHECK-NEXT:    icmp ult i64 {{%.*}}, 1099511627776
// CHECK-DAG:     [[LEN:%.*]] = shl i64 %n, 4
// CHECK-DAG:     [[STRIDE:%.*]] = shl i64 %ld, 4
// CHECK:         call void @__mw_mark_rows(ptr %dst, i64 [[LEN]], i64 [[STRIDE]], i64 %n), !nosanitize
// CHECK-NOT:     store i{{8|16|32|64}} -1
// CHECK:       }
// OFF-LABEL: define {{.*}}void @transpose(
// OFF-NOT:     __mw_mark_rows
// OFF:         store double
// OFF:         store i16 -1
// OFF:       }
void transpose(double *dst, const double *src, long n, long ld) {
  for (long i = 0; i < n; i++)
    for (long j = 0; j < n; j++) {
      dst[2 * (j * ld + i)] = src[2 * (i * ld + j)];
      dst[2 * (j * ld + i) + 1] = src[2 * (i * ld + j) + 1];
    }
}

// A shared array with constant bounds: no window check. The block is 256 rows of
// 4096 bytes, 4160 bytes apart. (Planned after the vectorizer, which unrolls the
// inner loop by two, rows j and j + 1 in one iteration, it would be two sets of
// rows, even and odd, two rows apart.)
// CHECK-LABEL: define {{.*}}void @shared_block(
// CHECK-NOT:     store i{{8|16|32|64}} -1
// CHECK-NOT:     icmp ult i64 {{%.*}}, 1099511627776
// CHECK:         call void @__mw_mark_rows(ptr nonnull @M, i64 4096, i64 4160, i64 256), !nosanitize
// CHECK-NOT:     store i{{8|16|32|64}} -1
// CHECK:       }
void shared_block(const double *src) {
  for (long i = 0; i < N; i++)
    for (long j = 0; j < N; j++) {
      M[j][i][0] = src[2 * (i * N + j)];
      M[j][i][1] = src[2 * (i * N + j) + 1];
    }
}

// LU's bmod: daxpy into row j of a block, j * stride apart, for every k. The
// stride is not known to be the rows' width, and the same rows are written for
// every k: Rows = dimj rows of 8 * dimi bytes, marked once after the whole nest
// if its loops ran, where after the vectorizer each row would keep marks for its
// vector loop, its peeled iteration and its remainder (nest-ranges.ll).
// CHECK-LABEL: define {{.*}}void @bmod(
// CHECK-NOT:     store i{{8|16|32|64}} -1
// CHECK-NOT:     __mw_mark_range
// CHECK:         call void @__mw_mark_rows(ptr %c, i64 {{%.*}}, i64 {{%.*}}, i64 %dimj), !nosanitize
// CHECK-NOT:     store i{{8|16|32|64}} -1
// CHECK-NOT:     __mw_mark_range
// CHECK:       }
// OFF-LABEL: define {{.*}}void @bmod(
// OFF-NOT:     __mw_mark_rows
// OFF:       }
void bmod(const double *a, const double *b, double *c, long dimi, long dimj,
          long dimk, long stridea, long strideb, long stridec) {
  for (long k = 0; k < dimk; k++)
    for (long j = 0; j < dimj; j++) {
      double alpha = -b[k + j * strideb];
      for (long i = 0; i < dimi; i++)
        c[j * stridec + i] += alpha * a[k * stridea + i];
    }
}

// FFT's butterflies (Splash-3's FFT1DOnce, as overhead_bench's kernel writes it):
// level q writes x1 = x + 2kL and x2 = x1 + L, L/2 complex numbers each, for
// every group k. The optimizer makes k * L a shift, k << q, which ScalarEvolution
// sees only as k * (1 << q); the two halves are joined into one range per group
// (the inner loop, rotated without its guard, runs umax(L/2, 1) times: the
// halves are known to touch, not to be the same length as the distance); the
// groups are rows, L complex numbers apart, which the runtime marks as one range
// when they touch. One call per level, no mark per store.
// CHECK-LABEL: define {{.*}}void @butterflies(
// CHECK-NOT:     store i{{8|16|32|64}} -1
// CHECK-NOT:     __mw_mark_range
// CHECK:         call void @__mw_mark_rows(ptr %x,
// CHECK-NOT:     __mw_mark
// CHECK-NOT:     store i{{8|16|32|64}} -1
// CHECK:       }
void butterflies(double *x, const double *twiddle) {
  for (int q = 1; q <= 8; q++) {
    long L = 1 << q, groups = 256 / L, half = L / 2;
    const double *w = &twiddle[2 * (half - 1)];
    for (long k = 0; k < groups; k++) {
      double *x1 = &x[2 * (k * L)], *x2 = &x[2 * (k * L + half)];
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

// Only the real parts: the rows would have gaps (8 bytes written, 16 stepped).
// CHECK-LABEL: define {{.*}}void @real_parts(
// CHECK-NOT:     __mw_mark_rows
// CHECK:         store double 1.0
// CHECK-NEXT:    ptrtoint
// CHECK:         store i8 -1
// CHECK-NOT:     __mw_mark_rows
// CHECK:       }
void real_parts(double *dst, long n, long ld) {
  for (long i = 0; i < n; i++)
    for (long j = 0; j < n; j++)
      dst[2 * (j * ld + i)] = 1.0;
}

// The inner loop's trip count changes with the column: not rows of one length.
// CHECK-LABEL: define {{.*}}void @triangle(
// CHECK-NOT:     __mw_mark_rows
// CHECK:         store i8 -1
// CHECK-NOT:     __mw_mark_rows
// CHECK:       }
void triangle(double *dst, long n, long ld) {
  for (long i = 0; i < n; i++)
    for (long j = 0; j < i; j++)
      dst[j * ld + i] = 1.0;
}

// A store that not every iteration makes: its own mark.
// CHECK-LABEL: define {{.*}}void @some(
// CHECK-NOT:     __mw_mark_rows
// CHECK:         store double
// CHECK-NEXT:    ptrtoint
// CHECK:         store i8 -1
// CHECK-NOT:     __mw_mark_rows
// CHECK:       }
void some(double *dst, const double *src, long n, long ld) {
  for (long i = 0; i < n; i++)
    for (long j = 0; j < n; j++)
      if (src[j] > 0)
        dst[j * ld + i] = src[j];
}

// A column alone, with no loop around it to fill rows: its own marks.
// CHECK-LABEL: define {{.*}}void @column(
// CHECK-NOT:     __mw_mark_rows
// CHECK:         store i8 -1
// CHECK-NOT:     __mw_mark_rows
// CHECK:       }
void column(double *dst, long n, long ld) {
  for (long j = 0; j < n; j++)
    dst[j * ld] = 1.0;
}
