; Stores of one block at constant distances from each other that fill a range
; together get one mark after the last of them (-midway-merge-adjacent, on by
; default): one wide mark instead of a chain of ORs into the same shadow byte.
; Gaps split a run; a call (which might not return) ends a group; a lone store
; keeps its own mark. A merged mark never covers a byte no store wrote.
; RUN: %opt -passes=midway-instrument -S %s | FileCheck %s
; RUN: %opt -passes=midway-instrument -midway-merge-adjacent=false -S %s \
; RUN:   | FileCheck %s --check-prefix=OFF

target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
target triple = "x86_64-unknown-linux-gnu"

@g = global [64 x [64 x float]] zeroinitializer, section "mw_shared", align 16

declare void @may_not_return()

; A struct's fields through an unknown pointer: 4 + 4 + 8 bytes from %p, in
; any order, are one 16-byte mark after the last store, behind one window check.
; 16 bytes at an 8-aligned address are two whole shadow bytes.
; CHECK-LABEL: define void @fields(
; CHECK-NEXT:    store i32 %x, ptr %p, align 8
; CHECK-NEXT:    %c = getelementptr inbounds i8, ptr %p, i64 8
; CHECK-NEXT:    store double %d, ptr %c, align 8
; CHECK-NEXT:    %b = getelementptr inbounds i8, ptr %p, i64 4
; CHECK-NEXT:    store i32 %x, ptr %b, align 4
; CHECK-NEXT:    [[I:%.*]] = ptrtoint ptr %p to i64
; CHECK-NEXT:    [[O:%.*]] = sub i64 [[I]], 1073741824
; CHECK-NEXT:    %midway.in.window = icmp ult i64 [[O]], 1099511627776
; CHECK-NEXT:    br i1 %midway.in.window
; CHECK:         [[C1O:%.*]] = load i16, ptr {{%.*}}, align 1, !nosanitize
; CHECK-NEXT:         [[C1:%.*]] = icmp ne i16 -1, [[C1O]]
; CHECK-NEXT:         br i1 [[C1]], label %[[C1S:.*]], label
; CHECK:       [[C1S]]:
; CHECK-NEXT:         store i16 -1, ptr {{%.*}}, align 1, !nosanitize
; CHECK-NOT:     !nosanitize
; CHECK:         ret void
; OFF-LABEL: define void @fields(
; OFF-COUNT-3:   %midway.in.window
define void @fields(ptr %p, i32 %x, double %d) {
  store i32 %x, ptr %p, align 8
  %c = getelementptr inbounds i8, ptr %p, i64 8
  store double %d, ptr %c, align 8
  %b = getelementptr inbounds i8, ptr %p, i64 4
  store i32 %x, ptr %b, align 4
  ret void
}

; Row-column addresses (@g + 256 * i + 4 * j): three stores to g[i][1..3] are one
; 12-byte mark at g[i][1], an OR of 12 bits shifted by its place in the shadow byte.
; CHECK-LABEL: define void @row(
; CHECK:         store float %v, ptr %p3, align 4
; CHECK-NEXT:    [[B:%.*]] = ptrtoint ptr %p1 to i64
; CHECK-NEXT:    [[L:%.*]] = and i64 [[B]], 7
; CHECK-NEXT:    [[L16:%.*]] = trunc i64 [[L]] to i16
; CHECK-NEXT:    [[M:%.*]] = shl i16 4095, [[L16]]
; CHECK:         [[OLD:%.*]] = load i16, ptr [[S:%.*]], align 1, !nosanitize
; CHECK-NEXT:    [[NEW:%.*]] = or i16 [[OLD]], [[M]]
; CHECK-NEXT:    [[C2:%.*]] = icmp ne i16 [[NEW]], [[OLD]]
; CHECK-NEXT:    br i1 [[C2]], label %[[C2S:.*]], label
; CHECK:  [[C2S]]:
; CHECK-NEXT:    store i16 [[NEW]], ptr [[S]], align 1, !nosanitize
; CHECK:    ret void
define void @row(i64 %i, float %v) {
  %p1 = getelementptr inbounds [64 x [64 x float]], ptr @g, i64 0, i64 %i, i64 1
  store float %v, ptr %p1, align 4
  %p2 = getelementptr inbounds [64 x [64 x float]], ptr @g, i64 0, i64 %i, i64 2
  store float %v, ptr %p2, align 4
  %p3 = getelementptr inbounds [64 x [64 x float]], ptr @g, i64 0, i64 %i, i64 3
  store float %v, ptr %p3, align 4
  ret void
}

; A gap (g[i][2] is not written) splits the run: g[i][0..1], 8 bytes at a
; 16-aligned address, are one whole shadow byte stored after the second store;
; g[i][3] keeps its own OR of 4 bits. No mark covers g[i][2].
; CHECK-LABEL: define void @gap(
; CHECK:         store float %v, ptr %p1, align 4
; CHECK-NEXT:    [[B0:%.*]] = ptrtoint ptr %p0 to i64
; CHECK-NEXT:    [[X0:%.*]] = lshr i64 [[B0]], 3
; CHECK-NEXT:    [[A0:%.*]] = add i64 [[X0]], 17592186044416
; CHECK-NEXT:    [[S0:%.*]] = inttoptr i64 [[A0]] to ptr
; CHECK-NEXT:    [[C3O:%.*]] = load i8, ptr [[S0]], align 2, !nosanitize
; CHECK-NEXT:    [[C3:%.*]] = icmp ne i8 -1, [[C3O]]
; CHECK-NEXT:    br i1 [[C3]], label %[[C3S:.*]], label
; CHECK:  [[C3S]]:
; CHECK-NEXT:    store i8 -1, ptr [[S0]], align 2, !nosanitize
; CHECK:    %p3 = getelementptr
; CHECK-NEXT:    store float %v, ptr %p3, align 4
; CHECK-NEXT:    [[B3:%.*]] = ptrtoint ptr %p3 to i64
; CHECK-NEXT:    [[L3:%.*]] = and i64 [[B3]], 7
; CHECK-NEXT:    [[T3:%.*]] = trunc i64 [[L3]] to i8
; CHECK-NEXT:    shl i8 15, [[T3]]
; CHECK:         store i8 {{%.*}}, ptr {{%.*}}, align 1, !nosanitize
; CHECK:         ret void
define void @gap(i64 %i, float %v) {
  %p0 = getelementptr inbounds [64 x [64 x float]], ptr @g, i64 0, i64 %i, i64 0
  store float %v, ptr %p0, align 16
  %p1 = getelementptr inbounds [64 x [64 x float]], ptr @g, i64 0, i64 %i, i64 1
  store float %v, ptr %p1, align 4
  %p3 = getelementptr inbounds [64 x [64 x float]], ptr @g, i64 0, i64 %i, i64 3
  store float %v, ptr %p3, align 4
  ret void
}

; A call that might not return ends the group: the store before it is marked
; before the call, so a mark never waits for a store that might not happen.
; CHECK-LABEL: define void @call_between(
; CHECK:         store i32 %x, ptr %p, align 8
; CHECK:         !nosanitize
; CHECK:         call void @may_not_return()
; CHECK:         store i32 %x, ptr %b, align 4
; CHECK:         !nosanitize
define void @call_between(ptr %p, i32 %x) {
  store i32 %x, ptr %p, align 8
  call void @may_not_return()
  %b = getelementptr inbounds i8, ptr %p, i64 4
  store i32 %x, ptr %b, align 4
  ret void
}
