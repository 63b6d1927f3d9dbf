; The check build (-midway-check): a call to the runtime before every access
; that may reach shared data, loads included, with a constant site descriptor
; (midway.h: struct mw_site) in section mw_sites. Shared globals are checked
; unconditionally; unknown pointers behind the inline window check, so that
; private memory pays a compare and a branch; provably private memory not at
; all. Marks are made as in a default build: a loop's stores are marked once
; after the loop, and each is checked in it.
; RUN: %opt -passes=midway-instrument -midway-check -S %s | FileCheck %s
; A default build has no check and no site.
; RUN: %opt -passes=midway-instrument -S %s | FileCheck %s --check-prefix=DEFAULT
; RUN: %opt -passes=midway-instrument -midway-check -stats -disable-output %s 2>&1 \
; RUN:   | FileCheck %s --check-prefix=STATS
; DEFAULT-NOT: __mw_check
; DEFAULT-NOT: mw_sites
; STATS-DAG: 3 midway-instrument - Number of loads checked (check build)
; STATS-DAG: 6 midway-instrument - Number of stores checked (check build)
; STATS-DAG: 1 midway-instrument - Number of loop ranges marked

target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
target triple = "x86_64-unknown-linux-gnu"

@A = global [8 x [16 x i32]] zeroinitializer, section "mw_shared", align 16
@counter = global i64 0, section "mw_shared", align 8
@private = global [16 x i32] zeroinitializer, align 4

; An object per shared global, in every build (section mw_objects): its name,
; address, size, element size and array shape; the check build's sites point at it.
; CHECK-DAG: [[A_NAME:@midway.name[.0-9]*]] = private unnamed_addr constant [2 x i8] c"A\00"
; CHECK-DAG: [[A_OBJ:@midway.object[.0-9]*]] = private constant { ptr, ptr, i64, i64, i32, i32, [4 x i64] } { ptr [[A_NAME]], ptr @A, i64 512, i64 4, i32 2, i32 0, [4 x i64] [i64 8, i64 16, i64 0, i64 0] }, section "mw_objects", align 8
; CHECK-DAG: [[COUNTER_OBJ:@midway.object[.0-9]*]] = private constant { ptr, ptr, i64, i64, i32, i32, [4 x i64] } { ptr {{@midway.name[.0-9]*}}, ptr @counter, i64 8, i64 8, i32 0, i32 0, [4 x i64] zeroinitializer }, section "mw_objects", align 8
; DEFAULT-DAG: @midway.object{{[.0-9]*}} = private constant { {{.*}} } { ptr {{@midway.name[.0-9]*}}, ptr @A, i64 512, i64 4, i32 2, {{.*}} section "mw_objects"
; DEFAULT-DAG: @llvm.compiler.used = appending global [{{[0-9]+}} x ptr] [{{.*}}ptr @midway.object
; A site per access kind and place: without debug information, its function;
; size, MW_ACCESS_* bits (1 load, 2 store, 4 atomic, 8 range).
; CHECK-DAG: [[LOADS:@midway.str[.0-9]*]] = private unnamed_addr constant [6 x i8] c"loads\00"
; CHECK-DAG: [[LOAD_A:@midway.site[.0-9]*]] = private constant %struct.mw_site { %struct.mw_location { ptr null, ptr [[LOADS]], i32 0, i32 0, ptr null }, ptr [[A_OBJ]], i32 4, i8 1, [3 x i8] zeroinitializer }, section "mw_sites", align 8
; CHECK-DAG: [[LOAD_P:@midway.site[.0-9]*]] = private constant %struct.mw_site { %struct.mw_location { ptr null, ptr [[LOADS]], i32 0, i32 0, ptr null }, ptr null, i32 4, i8 1, [3 x i8] zeroinitializer }, section "mw_sites", align 8
; CHECK-DAG: [[RMW:@midway.site[.0-9]*]] = private constant %struct.mw_site { {{.*}}, ptr [[COUNTER_OBJ]], i32 8, i8 7, [3 x i8] zeroinitializer }, section "mw_sites"
; CHECK-DAG: [[COPY_SRC:@midway.site[.0-9]*]] = private constant %struct.mw_site { {{.*}}, ptr [[A_OBJ]], i32 0, i8 9, [3 x i8] zeroinitializer }, section "mw_sites"
; CHECK-DAG: [[COPY_DST:@midway.site[.0-9]*]] = private constant %struct.mw_site { {{.*}}, ptr null, i32 0, i8 10, [3 x i8] zeroinitializer }, section "mw_sites"

; CHECK-LABEL: define i32 @loads(
; CHECK:         store i32 1, ptr %local
; CHECK-NEXT:    %a = load i32, ptr %local
; CHECK-NEXT:    %g = getelementptr
; CHECK-NEXT:    call void @__mw_check_load(ptr %g, i64 4, ptr [[LOAD_A]]), !nosanitize
; CHECK-NEXT:    %b = load i32, ptr %g
; CHECK-NEXT:    [[I:%.*]] = ptrtoint ptr %p to i64
; CHECK-NEXT:    [[D:%.*]] = sub i64 [[I]], 1073741824
; CHECK-NEXT:    [[W:%.*]] = icmp ult i64 [[D]], 1099511627776
; CHECK-NEXT:    br i1 [[W]], label %[[CHECK:.*]], label %[[LOAD:.*]]
; CHECK:       [[CHECK]]:
; CHECK-NEXT:    call void @__mw_check_load(ptr %p, i64 4, ptr [[LOAD_P]]), !nosanitize
; CHECK:       [[LOAD]]:
; CHECK-NEXT:    %c = load i32, ptr %p
; CHECK-NEXT:    %d = load i32, ptr @private
; CHECK-NOT:     __mw_check
; CHECK:         ret i32
define i32 @loads(ptr %p, i64 %i) {
  %local = alloca i32
  store i32 1, ptr %local
  %a = load i32, ptr %local
  %g = getelementptr inbounds [8 x [16 x i32]], ptr @A, i64 0, i64 3, i64 %i
  %b = load i32, ptr %g
  %c = load i32, ptr %p
  %d = load i32, ptr @private
  %s1 = add i32 %a, %b
  %s2 = add i32 %s1, %c
  %s3 = add i32 %s2, %d
  ret i32 %s3
}

; Stores are checked before they happen and marked after. An atomic
; read-modify-write is checked as a store (it both reads and writes).
; CHECK-LABEL: define void @stores(
; CHECK-NEXT:    call void @__mw_check_store(ptr @counter, i64 8, ptr {{@midway.site[.0-9]*}}), !nosanitize
; CHECK-NEXT:    store i64 %v, ptr @counter
; CHECK-NEXT:    lshr i64 ptrtoint (ptr @counter to i64), 3
; CHECK:         icmp ult
; CHECK:         call void @__mw_check_store(ptr %p, i64 8,
; CHECK:         store i64 %v, ptr %p
; CHECK:         call void @__mw_check_store(ptr @counter, i64 8, ptr [[RMW]]), !nosanitize
; CHECK-NEXT:    %old = atomicrmw add ptr @counter
define void @stores(ptr %p, i64 %v) {
  store i64 %v, ptr @counter
  store i64 %v, ptr %p
  %old = atomicrmw add ptr @counter, i64 1 seq_cst
  ret void
}

; A copy reads its source and writes its destination: two checks, each by its
; own region, with the length given at run time.
; CHECK-LABEL: define void @copy(
; CHECK-NEXT:    call void @__mw_check_load(ptr @A, i64 %n, ptr [[COPY_SRC]]), !nosanitize
; CHECK:         icmp ult
; CHECK:         call void @__mw_check_store(ptr %dst, i64 %n, ptr [[COPY_DST]]), !nosanitize
; CHECK:         call void @llvm.memcpy
; CHECK:         call void @__mw_mark_range(ptr %dst, i64 %n)
define void @copy(ptr %dst, i64 %n) {
  call void @llvm.memcpy.p0.p0.i64(ptr %dst, ptr @A, i64 %n, i1 false)
  ret void
}

; The loop's store is checked on every iteration, and marked once after the loop.
; CHECK-LABEL: define void @fill_row(
; CHECK:       loop:
; CHECK:         call void @__mw_check_store(ptr %q, i64 4,
; CHECK-NEXT:    store i32 %v, ptr %q
; CHECK-NOT:     17592186044416
; CHECK:       exit:
; CHECK:         add i64 {{.*}}, 17592186044416
define void @fill_row(i64 %row, i32 %v) {
entry:
  br label %loop
loop:
  %j = phi i64 [ 0, %entry ], [ %j.next, %loop ]
  %q = getelementptr inbounds [8 x [16 x i32]], ptr @A, i64 0, i64 %row, i64 %j
  store i32 %v, ptr %q, align 4
  %j.next = add nuw nsw i64 %j, 1
  %done = icmp eq i64 %j.next, 16
  br i1 %done, label %exit, label %loop
exit:
  ret void
}

; A masked store checks each lane its mask enables, if it is in the window.
; CHECK-LABEL: define void @masked(
; CHECK:         [[L0:%.*]] = extractelement <4 x i1> %m, i64 0
; CHECK:         [[W0:%.*]] = and i1 [[L0]], %midway.in.window
; CHECK-NEXT:    br i1 [[W0]]
; CHECK:         call void @__mw_check_store(ptr {{%.*}}, i64 4,
; CHECK:         extractelement <4 x i1> %m, i64 3
; CHECK:         call void @__mw_check_store(ptr {{%.*}}, i64 4,
; CHECK:         call void @llvm.masked.store
define void @masked(ptr %p, <4 x i32> %v, <4 x i1> %m) {
  call void @llvm.masked.store.v4i32.p0(<4 x i32> %v, ptr %p, i32 4, <4 x i1> %m)
  ret void
}

; CHECK: declare void @__mw_check_load(ptr, i64, ptr) [[ATTRS:#[0-9]+]]
; CHECK: declare void @__mw_check_store(ptr, i64, ptr) [[ATTRS]]
; CHECK: attributes [[ATTRS]] = { nounwind }

declare void @llvm.memcpy.p0.p0.i64(ptr, ptr, i64, i1)
declare void @llvm.masked.store.v4i32.p0(<4 x i32>, ptr, i32, <4 x i1>)
