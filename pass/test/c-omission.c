// The omission rules on C code, at -O0 and -O2: stores to locals (escaping or
// not), to globals outside MW_SHARED and to the C library's heap get no mark;
// stores to MW_SHARED globals get a mark without a window check.
// RUN: %clang_mw -O0 -S -emit-llvm -o - %s | FileCheck %s --check-prefixes=CHECK,O0
// RUN: %clang_mw -O2 -S -emit-llvm -o - %s | FileCheck %s --check-prefixes=CHECK,O2

#include <midway.h>
#include <stdio.h>
#include <stdlib.h>

MW_SHARED int shared_counter;
static int private_counter;
int global_counter;

void use(int *);

// CHECK-LABEL: define {{.*}}void @locals(
// CHECK-NOT:     !nosanitize
// CHECK:         ret void
void locals(int n) {
  int x = n;
  int escaping[8];
  escaping[n & 7] = x;
  use(escaping);
}

// CHECK-LABEL: define {{.*}}void @globals(
// CHECK-NOT:     !nosanitize
// CHECK:         ret void
void globals(int v) {
  private_counter = v;
  global_counter = v;
}

// posix_memalign's block is the C library's at any level.
// CHECK-LABEL: define {{.*}}void @aligned_block(
// CHECK-NOT:     !nosanitize
// CHECK:         ret void
void aligned_block(int n) {
  void *block;
  if (posix_memalign(&block, 64, 256) == 0) {
    ((int *)block)[n & 63] = 1;
    use(block);
  }
}

// malloc's block is the C library's. At -O0 the pointer passes through a local
// variable, which hides where it came from: the store is checked instead.
// CHECK-LABEL: define {{.*}}void @heap(
// O2-NOT:        !nosanitize
// O0:            icmp ult
// O0:            [[HBITS:%.*]] = shl i8 15, {{%.*}}
// O0:            [[HX:%.*]] = lshr i64 {{%.*}}, 3
// O0-NEXT:       [[HA:%.*]] = add i64 [[HX]], 17592186044416
// O0-NEXT:       [[HS:%.*]] = inttoptr i64 [[HA]] to ptr
// O0-NEXT:       [[HO:%.*]] = load i8, ptr [[HS]], align 1, !nosanitize
// O0-NEXT:       [[HN:%.*]] = or i8 [[HO]], [[HBITS]]
// O0-NEXT:       [[C1:%.*]] = icmp ne i8 [[HN]], [[HO]]
// O0-NEXT:       br i1 [[C1]], label %[[C1S:.*]], label
// O0:     [[C1S]]:
// O0-NEXT:       store i8 [[HN]], ptr [[HS]], align 1, !nosanitize
// CHECK:         ret void
void heap(int n) {
  int *p = malloc(16 * sizeof *p);
  p[n & 15] = 1;
  use(p);
}

// CHECK-LABEL: define {{.*}}void @shared(
// CHECK-NOT:     icmp ult
// CHECK:         store i32 {{%.*}}, ptr @shared_counter, align 4
// CHECK-NEXT:    [[BIT:%.*]] = and i64 ptrtoint (ptr @shared_counter to i64), 7
// CHECK-NEXT:    [[BIT8:%.*]] = trunc i64 [[BIT]] to i8
// CHECK-NEXT:    [[BITS:%.*]] = shl i8 15, [[BIT8]]
// CHECK-NEXT:    [[X:%.*]] = lshr i64 ptrtoint (ptr @shared_counter to i64), 3
// CHECK-NEXT:    [[A:%.*]] = add i64 [[X]], 17592186044416
// CHECK-NEXT:    [[S:%.*]] = inttoptr i64 [[A]] to ptr
// CHECK-NEXT:    [[O:%.*]] = load i8, ptr [[S]], align 1, !nosanitize
// CHECK-NEXT:    [[N:%.*]] = or i8 [[O]], [[BITS]]
// CHECK-NEXT:    [[C2:%.*]] = icmp ne i8 [[N]], [[O]]
// CHECK-NEXT:    br i1 [[C2]], label %[[C2S:.*]], label
// CHECK:  [[C2S]]:
// CHECK-NEXT:    store i8 [[N]], ptr [[S]], align 1, !nosanitize
// CHECK-NOT:     icmp ult
// CHECK:         ret void
void shared(int v) { shared_counter = v; }

// A pointer parameter may point anywhere: checked.
// CHECK-LABEL: define {{.*}}void @through(
// CHECK:         icmp ult i64 {{%.*}}, 1099511627776
// CHECK:         [[TBITS:%.*]] = shl i8 15, {{%.*}}
// CHECK:         [[TX:%.*]] = lshr i64 {{%.*}}, 3
// CHECK-NEXT:    [[TA:%.*]] = add i64 [[TX]], 17592186044416
// CHECK-NEXT:    [[TS:%.*]] = inttoptr i64 [[TA]] to ptr
// CHECK-NEXT:    [[TO:%.*]] = load i8, ptr [[TS]], align 1, !nosanitize
// CHECK-NEXT:    [[TN:%.*]] = or i8 [[TO]], [[TBITS]]
// CHECK-NEXT:    [[C3:%.*]] = icmp ne i8 [[TN]], [[TO]]
// CHECK-NEXT:    br i1 [[C3]], label %[[C3S:.*]], label
// CHECK:  [[C3S]]:
// CHECK-NEXT:    store i8 [[TN]], ptr [[TS]], align 1, !nosanitize
void through(int *p, int v) { *p = v; }

// A library call whose result is no allocation (fopen's FILE carries no allockind)
// next to a shared store: classified without crashing the compiler; the store is marked.
MW_SHARED long readings[8];
// CHECK-LABEL: define {{.*}}void @read_one(
// CHECK:         call {{.*}}fopen
// CHECK:         store i64 0, ptr [[R:%.*]], align 8
// CHECK:         lshr i64 {{%.*}}, 3
// CHECK:         ret void
void read_one(int k) {
  FILE *fp = fopen("readings", "r");
  if (fscanf(fp, "%ld", &readings[k]) != 1) readings[k] = 0;
}
