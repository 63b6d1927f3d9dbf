// Loop-level marking on C code at -O2: loops that write a contiguous range mark it
// once after the loop (a row-major 2-D array is one range, even in a matrix
// multiply), nothing inside; conditional stores keep per-store marks. At -O0 the
// induction variables live in memory, so every store keeps its own mark.
// RUN: %clang_mw -fplugin=%plugin -mllvm -midway-polls=false -O2 -S -emit-llvm -o - %s | FileCheck %s
// RUN: %clang_mw -fplugin=%plugin -mllvm -midway-polls=false -O0 -S -emit-llvm -o - %s | FileCheck %s --check-prefix=O0

#include <midway.h>

#define N 512
MW_SHARED float A[N][N], B[N][N], C[N][N];

// Vectorized: the vector loop and the scalar remainder each get one mark after
// them.
// CHECK-LABEL: define {{.*}}void @fill(
// CHECK:         store <4 x float>
// CHECK-NOT:     !nosanitize
// CHECK:         br i1 {{%.*}}, label %[[VEXIT:.*]], label
// CHECK:       [[VEXIT]]:
// CHECK:         call void @__mw_mark_range(ptr %0, i64 {{%.*}}), !nosanitize
// CHECK:         store float
// CHECK-NOT:     !nosanitize
// CHECK:         br i1 {{%.*}}, label %[[SEXIT:.*]], label
// CHECK:       [[SEXIT]]:
// CHECK:         call void @__mw_mark_range(ptr {{%.*}}, i64 {{%.*}}), !nosanitize
// CHECK-NOT:     !nosanitize
// CHECK:       }
// O0-LABEL: define {{.*}}void @fill(
// O0:         getelementptr inbounds float, ptr
// O0-NEXT:    store float {{%.*}}, ptr [[P:%.*]], align 4
// O0-NEXT:    ptrtoint ptr [[P]] to i64
// O0-NOT:     __mw_mark_range
// O0:         ret void
void fill(float *a, int n, float v) {
  for (int i = 0; i < n; i++)
    a[i] = v;
}

// The nest writes all of A, which is 16-aligned: the 1 MiB of A is 128 KiB of
// whole shadow bytes, one memset of 0xFF after the nest (planned before the
// vectorizer, so the optimizer after it adds what it knows: exact, nuw, ...).
// CHECK-LABEL: define {{.*}}void @init(
// CHECK-NOT:     !nosanitize
// CHECK:         [[X:%.*]] = lshr {{(exact )?}}i64 ptrtoint (ptr @A to i64), 3
// CHECK-NEXT:    [[AD:%.*]] = add {{(nuw )?(nsw )?}}i64 [[X]], 17592186044416
// CHECK-NEXT:    [[S:%.*]] = inttoptr i64 [[AD]] to ptr
// CHECK-NEXT:    call void @llvm.memset.p0.i64(ptr {{.*}}align 2 {{.*}}[[S]], i8 -1, i64 131072, i1 false), !nosanitize
// CHECK-NEXT:    ret void
void init(float v) {
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++)
      A[i][j] = v * i + j;
}

// The stores to C are scalar, only 4-aligned, but the range starts at C, whose own
// alignment is known: the 1 MiB is one memset of 131072 whole shadow bytes.
// CHECK-LABEL: define {{.*}}void @matmul(
// CHECK-NOT:     !nosanitize
// CHECK:         call void @llvm.memset.p0.i64(ptr {{.*}}align {{[0-9]+}} {{.*}}%{{.*}}, i8 -1, i64 131072, i1 false), !nosanitize
// CHECK-NEXT:    ret void
// CHECK-NOT:     !nosanitize
// CHECK:       }
void matmul(void) {
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++) {
      float s = 0;
      for (int k = 0; k < N; k++)
        s += A[i][k] * B[k][j];
      C[i][j] = s;
    }
}

// CHECK-LABEL: define {{.*}}void @positives(
// CHECK-NOT:     __mw_mark_range
// CHECK:         icmp ult
// CHECK:         [[BIT:%.*]] = and i64 {{%.*}}, 7
// CHECK-NEXT:    [[BIT8:%.*]] = trunc i64 [[BIT]] to i8
// CHECK-NEXT:    [[BITS:%.*]] = shl i8 15, [[BIT8]]
// CHECK-NEXT:    ptrtoint
// CHECK-NEXT:    [[X:%.*]] = lshr i64 {{%.*}}, 3
// CHECK-NEXT:    [[AD:%.*]] = add i64 [[X]], 17592186044416
// CHECK-NEXT:    [[S:%.*]] = inttoptr i64 [[AD]] to ptr
// CHECK-NEXT:    [[OLD:%.*]] = load i8, ptr [[S]], align 1, !nosanitize
// CHECK-NEXT:    [[NEW:%.*]] = or i8 [[OLD]], [[BITS]]
// CHECK-NEXT:    [[C1:%.*]] = icmp ne i8 [[NEW]], [[OLD]]
// CHECK-NEXT:    br i1 [[C1]], label %[[C1S:.*]], label
// CHECK:  [[C1S]]:
// CHECK-NEXT:    store i8 [[NEW]], ptr [[S]], align 1, !nosanitize
// CHECK-NOT:     __mw_mark_range
// CHECK:       }
void positives(float *a, const float *b, int n) {
  for (int i = 0; i < n; i++)
    if (b[i] > 0)
      a[i] = b[i];
}
