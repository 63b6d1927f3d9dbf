// The plugin loads into clang at every optimization level and instruments the
// program: the store through p is checked and marked, the local is not.
// RUN: %clang_mw -O1 -S -emit-llvm -o - %s | FileCheck %s
// RUN: %clang_mw -O3 -S -emit-llvm -o - %s | FileCheck %s
// RUN: %clang_mw -Os -S -emit-llvm -o - %s | FileCheck %s
// clang -mllvm -stats prints the pass's counters too.
// RUN: %clang_mw -O3 -mllvm -stats -S -o /dev/null %s 2>&1 | FileCheck %s --check-prefix=STATS

#include <midway.h>

MW_SHARED long total;

void keep(long *);

// CHECK-LABEL: define {{.*}}void @accumulate(
// CHECK-SAME:    ptr {{.*}}[[P:%[0-9]+]],
// CHECK-NOT:     !nosanitize
// CHECK:         store i64 {{%.*}}, ptr [[P]]
// CHECK-NEXT:    ptrtoint ptr [[P]] to i64
// CHECK:         icmp ult
// An 8-aligned long is one whole shadow byte: a store of 0xFF.
// CHECK:         [[I:%.*]] = ptrtoint ptr [[P]] to i64
// CHECK-NEXT:    [[X:%.*]] = lshr i64 [[I]], 3
// CHECK-NEXT:    [[A:%.*]] = add i64 [[X]], 17592186044416
// CHECK-NEXT:    [[S:%.*]] = inttoptr i64 [[A]] to ptr
// CHECK-NEXT:    [[C1O:%.*]] = load i8, ptr [[S]], align 1, !nosanitize
// CHECK-NEXT:    [[C1:%.*]] = icmp ne i8 -1, [[C1O]]
// CHECK-NEXT:    br i1 [[C1]], label %[[C1S:.*]], label
// CHECK:  [[C1S]]:
// CHECK-NEXT:    store i8 -1, ptr [[S]], align 1, !nosanitize
// CHECK:         store i64 {{%.*}}, ptr @total
// CHECK-NEXT:    [[TX:%.*]] = lshr i64 ptrtoint (ptr @total to i64), 3
// CHECK-NEXT:    [[TA:%.*]] = add i64 [[TX]], 17592186044416
// CHECK-NEXT:    [[TS:%.*]] = inttoptr i64 [[TA]] to ptr
// CHECK-NEXT:    [[C2O:%.*]] = load i8, ptr [[TS]], align 1, !nosanitize
// CHECK-NEXT:    [[C2:%.*]] = icmp ne i8 -1, [[C2O]]
// CHECK-NEXT:    br i1 [[C2]], label %[[C2S:.*]], label
// CHECK:  [[C2S]]:
// CHECK-NEXT:    store i8 -1, ptr [[TS]], align 1, !nosanitize
// STATS: 2 midway-instrument - Number of writes instrumented with their own mark
void accumulate(long *p, long v) {
  long local[4] = {v, v, v, v};
  keep(local);
  *p = local[0] + local[3];
  total = v;
}
