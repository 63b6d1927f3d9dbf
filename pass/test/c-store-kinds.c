// Each kind of write in C, at -O0 and -O2: a mark after it, with a window check
// unless the memory is MW_SHARED, and none for the stack traffic of -O0 code.
// RUN: %clang_mw -O0 -S -emit-llvm -o - %s | FileCheck %s --check-prefixes=CHECK,O0
// RUN: %clang_mw -O2 -S -emit-llvm -o - %s | FileCheck %s

#include <midway.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>

typedef float float4 __attribute__((vector_size(16)));
struct particle { double x, y; int id; };

MW_SHARED struct particle particles[64];
MW_SHARED float grid[256];
MW_SHARED _Atomic long counter;

// CHECK-LABEL: define {{.*}}void @store_float(
// O0:            load ptr, ptr
// CHECK:         store float {{%.*}}, ptr [[P:%.*]], align 4
// CHECK-NEXT:    ptrtoint ptr [[P]] to i64
// CHECK-NEXT:    sub i64 {{%.*}}, 1073741824
// CHECK-NEXT:    icmp ult i64 {{%.*}}, 1099511627776
// A 4-aligned float: bits 15 << (p & 7), which stay within one shadow byte.
// CHECK:         [[BIT:%.*]] = and i64 {{%.*}}, 7
// CHECK-NEXT:    [[BITT:%.*]] = trunc i64 [[BIT]] to i8
// CHECK-NEXT:    [[BITS:%.*]] = shl i8 15, [[BITT]]
// CHECK-NEXT:    ptrtoint
// CHECK-NEXT:    [[X:%.*]] = lshr i64 {{%.*}}, 3
// CHECK-NEXT:    [[A:%.*]] = add i64 [[X]], 17592186044416
// CHECK-NEXT:    [[S:%.*]] = inttoptr i64 [[A]] to ptr
// CHECK-NEXT:    [[O:%.*]] = load i8, ptr [[S]], align 1, !nosanitize
// CHECK-NEXT:    [[N:%.*]] = or i8 [[O]], [[BITS]]
// CHECK-NEXT:    [[C1:%.*]] = icmp ne i8 [[N]], [[O]]
// CHECK-NEXT:    br i1 [[C1]], label %[[C1S:.*]], label
// CHECK:  [[C1S]]:
// CHECK-NEXT:    store i8 [[N]], ptr [[S]], align 1, !nosanitize
// CHECK-NOT:     !nosanitize
// CHECK:         ret void
void store_float(float *p, float v) { *p = v; }

// CHECK-LABEL: define {{.*}}void @store_shared(
// CHECK-NOT:     icmp ult
// O0:            getelementptr inbounds [256 x float], ptr @grid
// CHECK:         store float {{%.*}}, ptr [[G:%.*]], align 4
// CHECK-NEXT:    [[I:%.*]] = ptrtoint ptr [[G]] to i64
// CHECK-NEXT:    [[BIT:%.*]] = and i64 [[I]], 7
// CHECK-NEXT:    [[BIT8:%.*]] = trunc i64 [[BIT]] to i8
// CHECK-NEXT:    [[BITS:%.*]] = shl i8 15, [[BIT8]]
// CHECK-NEXT:    [[I2:%.*]] = ptrtoint ptr [[G]] to i64
// CHECK-NEXT:    [[X:%.*]] = lshr i64 [[I2]], 3
// CHECK-NEXT:    [[S:%.*]] = add i64 [[X]], 17592186044416
// CHECK-NEXT:    [[SP:%.*]] = inttoptr i64 [[S]] to ptr
// CHECK-NEXT:    [[O:%.*]] = load i8, ptr [[SP]], align 1, !nosanitize
// CHECK-NEXT:    [[N:%.*]] = or i8 [[O]], [[BITS]]
// CHECK-NEXT:    [[C2:%.*]] = icmp ne i8 [[N]], [[O]]
// CHECK-NEXT:    br i1 [[C2]], label %[[C2S:.*]], label
// CHECK:  [[C2S]]:
// CHECK-NEXT:    store i8 [[N]], ptr [[SP]], align 1, !nosanitize
void store_shared(int i, float v) { grid[i] = v; }

// A struct assignment is a memcpy of the whole struct, padding included: 24
// 8-aligned bytes, three whole shadow bytes set to 0xFF.
// CHECK-LABEL: define {{.*}}void @store_struct(
// CHECK-NOT:     icmp ult
// CHECK:         call void @llvm.memcpy.p0.p0.i64(ptr {{.*}}align 8 {{.*}}[[D:%[0-9]+]], {{.*}}, i64 24, i1 false)
// CHECK-NEXT:    [[I:%.*]] = ptrtoint ptr [[D]] to i64
// CHECK-NEXT:    [[X:%.*]] = lshr i64 [[I]], 3
// CHECK-NEXT:    [[A:%.*]] = add i64 [[X]], 17592186044416
// CHECK-NEXT:    [[S:%.*]] = inttoptr i64 [[A]] to ptr
// CHECK-NEXT:    call void @llvm.memset.p0.i64(ptr align 1 [[S]], i8 -1, i64 3, i1 false), !nosanitize
void store_struct(int i, struct particle p) { particles[i] = p; }

// CHECK-LABEL: define {{.*}}void @store_vector(
// CHECK:         store <4 x float> {{%.*}}, ptr {{%.*}}, align 16
// CHECK:         icmp ult
// CHECK:         [[X:%.*]] = lshr i64 {{%.*}}, 3
// CHECK-NEXT:    [[A:%.*]] = add i64 [[X]], 17592186044416
// CHECK-NEXT:    [[S:%.*]] = inttoptr i64 [[A]] to ptr
// CHECK-NEXT:    [[C3O:%.*]] = load i16, ptr [[S]], align 2, !nosanitize
// CHECK-NEXT:    [[C3:%.*]] = icmp ne i16 -1, [[C3O]]
// CHECK-NEXT:    br i1 [[C3]], label %[[C3S:.*]], label
// CHECK:  [[C3S]]:
// CHECK-NEXT:    store i16 -1, ptr [[S]], align 2, !nosanitize
void store_vector(float4 *p, float4 v) { *p = v; }

// CHECK-LABEL: define {{.*}}void @store_unaligned(
// CHECK:         icmp ult
// Four bytes at align 1: shifted by up to 7, they may reach the next shadow byte.
// CHECK:         [[BIT:%.*]] = and i64 {{%.*}}, 7
// CHECK-NEXT:    [[BITT:%.*]] = trunc i64 [[BIT]] to i16
// CHECK-NEXT:    [[BITS:%.*]] = shl i16 15, [[BITT]]
// CHECK-NEXT:    ptrtoint
// CHECK-NEXT:    [[X:%.*]] = lshr i64 {{%.*}}, 3
// CHECK-NEXT:    [[A:%.*]] = add i64 [[X]], 17592186044416
// CHECK-NEXT:    [[S:%.*]] = inttoptr i64 [[A]] to ptr
// CHECK-NEXT:    [[O:%.*]] = load i16, ptr [[S]], align 1, !nosanitize
// CHECK-NEXT:    [[N:%.*]] = or i16 [[O]], [[BITS]]
// CHECK-NEXT:    [[C4:%.*]] = icmp ne i16 [[N]], [[O]]
// CHECK-NEXT:    br i1 [[C4]], label %[[C4S:.*]], label
// CHECK:  [[C4S]]:
// CHECK-NEXT:    store i16 [[N]], ptr [[S]], align 1, !nosanitize
void store_unaligned(char *p, int v) { __builtin_memcpy(p + 1, &v, sizeof v); }

// CHECK-LABEL: define {{.*}}void @atomic_add(
// CHECK:         atomicrmw add ptr @counter
// CHECK-NEXT:    [[X:%.*]] = lshr i64 ptrtoint (ptr @counter to i64), 3
// CHECK-NEXT:    [[A:%.*]] = add i64 [[X]], 17592186044416
// CHECK-NEXT:    [[S:%.*]] = inttoptr i64 [[A]] to ptr
// CHECK-NEXT:    [[C5O:%.*]] = load i8, ptr [[S]], align 1, !nosanitize
// CHECK-NEXT:    [[C5:%.*]] = icmp ne i8 -1, [[C5O]]
// CHECK-NEXT:    br i1 [[C5]], label %[[C5S:.*]], label
// CHECK:  [[C5S]]:
// CHECK-NEXT:    store i8 -1, ptr [[S]], align 1, !nosanitize
void atomic_add(void) { atomic_fetch_add(&counter, 1); }

// CHECK-LABEL: define {{.*}}i32 @cas(
// CHECK:         [[RES:%.*]] = cmpxchg ptr [[P:%.*]], i32 {{%.*}}, i32 {{%.*}} seq_cst seq_cst, align 4
// CHECK-NEXT:    [[OK:%.*]] = extractvalue { i32, i1 } [[RES]], 1
// CHECK:         [[IN:%.*]] = icmp ult i64 {{%.*}}, 1099511627776
// CHECK-NEXT:    [[BOTH:%.*]] = and i1 [[OK]], [[IN]]
// CHECK-NEXT:    br i1 [[BOTH]]
// CHECK:         [[BIT:%.*]] = and i64 {{%.*}}, 7
// CHECK-NEXT:    [[BITT:%.*]] = trunc i64 [[BIT]] to i8
// CHECK-NEXT:    [[BITS:%.*]] = shl i8 15, [[BITT]]
// CHECK-NEXT:    ptrtoint
// CHECK-NEXT:    [[X:%.*]] = lshr i64 {{%.*}}, 3
// CHECK-NEXT:    [[A:%.*]] = add i64 [[X]], 17592186044416
// CHECK-NEXT:    [[S:%.*]] = inttoptr i64 [[A]] to ptr
// CHECK-NEXT:    [[O:%.*]] = load i8, ptr [[S]], align 1, !nosanitize
// CHECK-NEXT:    [[N:%.*]] = or i8 [[O]], [[BITS]]
// CHECK-NEXT:    [[C6:%.*]] = icmp ne i8 [[N]], [[O]]
// CHECK-NEXT:    br i1 [[C6]], label %[[C6S:.*]], label
// CHECK:  [[C6S]]:
// CHECK-NEXT:    store i8 [[N]], ptr [[S]], align 1, !nosanitize
int cas(_Atomic int *p, int old, int new) {
  return atomic_compare_exchange_strong(p, &old, new);
}

// A run-time length: the runtime marks the range, behind the window check.
// CHECK-LABEL: define {{.*}}void @copy(
// CHECK:         call void @llvm.memcpy.p0.p0.i64(ptr align 1 [[D:%.*]], ptr align 1 {{%.*}}, i64 [[N:%.*]], i1 false)
// CHECK-NEXT:    ptrtoint ptr [[D]] to i64
// CHECK:         icmp ult
// CHECK:         call void @__mw_mark_range(ptr [[D]], i64 [[N]]), !nosanitize
void copy(void *d, const void *s, size_t n) { memcpy(d, s, n); }

// CHECK-LABEL: define {{.*}}void @clear(
// CHECK:         call void @llvm.memset.p0.i64(ptr {{.*}}@grid, i8 0, i64 1024, i1 false)
// CHECK-NEXT:    [[X:%.*]] = lshr i64 ptrtoint (ptr @grid to i64), 3
// CHECK-NEXT:    [[A:%.*]] = add i64 [[X]], 17592186044416
// CHECK-NEXT:    [[S:%.*]] = inttoptr i64 [[A]] to ptr
// CHECK-NEXT:    call void @llvm.memset.p0.i64(ptr align 2 [[S]], i8 -1, i64 128, i1 false), !nosanitize
void clear(void) { memset(grid, 0, sizeof grid); }
