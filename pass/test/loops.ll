; Loop-level marking: a loop that writes one contiguous range, with a trip count
; known when it exits, is marked once on its exit edge instead of after every
; store; the mark is made only if every iteration ran and covers exactly the
; bytes written. Everything else keeps its per-store marks.
; RUN: %opt -passes=midway-instrument -midway-polls=false -S %s | FileCheck %s
; RUN: %opt -passes=midway-instrument -midway-polls=false -midway-loop-ranges=false -S %s \
; RUN:   | FileCheck %s --check-prefix=NORANGES

target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
target triple = "x86_64-unknown-linux-gnu"

@A = global [1024 x float] zeroinitializer, section "mw_shared", align 16
@M = global [64 x [64 x float]] zeroinitializer, section "mw_shared", align 16
@D = global [512 x double] zeroinitializer, section "mw_shared", align 16

; for (i = 0; i < n; i++) p[i] = v;  ->  one mark of [p, p + 4n) after the loop.
; CHECK-LABEL: define void @simple(
; CHECK:       loop:
; CHECK-NOT:     !nosanitize
; CHECK:         br i1 %done, label %exit, label %loop
; The range starts at p, which may or may not be in the window: checked.
; CHECK:       exit:
; CHECK-NEXT:    [[LEN:%.*]] = shl i64 %n, 2
; CHECK-NEXT:    [[INT:%.*]] = ptrtoint ptr %p to i64
; CHECK-NEXT:    [[OFF:%.*]] = sub i64 [[INT]], 1073741824
; CHECK-NEXT:    [[IN:%.*]] = icmp ult i64 [[OFF]], 1099511627776
; CHECK-NEXT:    br i1 [[IN]], label %[[MARK:.*]], label
; Its length is known only at run time: marked inline if short (short-ranges.ll),
; by the runtime if not.
; CHECK:       [[MARK]]:
; CHECK:         %midway.short = icmp ult
; CHECK:         call void @__mw_mark_range(ptr %p, i64 [[LEN]]), !nosanitize
; NORANGES-LABEL: define void @simple(
; NORANGES:       loop:
; NORANGES:         store float %v, ptr %addr
; NORANGES-NEXT:    ptrtoint ptr %addr
define void @simple(ptr %p, float %v, i64 %n) {
entry:
  %guard = icmp sgt i64 %n, 0
  br i1 %guard, label %loop, label %end
loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  %addr = getelementptr inbounds float, ptr %p, i64 %i
  store float %v, ptr %addr, align 4
  %i.next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i.next, %n
  br i1 %done, label %exit, label %loop
exit:
  br label %end
end:
  ret void
}

; An MW_SHARED array with a constant trip count: the range has a constant length
; and needs no window check. Its stores are only 4-aligned, but its start is @A,
; known to be 16-aligned, so its 4096 bytes are 512 whole shadow bytes: a memset.
; CHECK-LABEL: define void @shared_constant(
; CHECK:       exit:
; CHECK-NEXT:    [[X:%.*]] = lshr i64 ptrtoint (ptr @A to i64), 3
; CHECK-NEXT:    [[Y:%.*]] = add i64 [[X]], 17592186044416
; CHECK-NEXT:    [[S:%.*]] = inttoptr i64 [[Y]] to ptr
; CHECK-NEXT:    call void @llvm.memset.p0.i64(ptr align 2 [[S]], i8 -1, i64 512, i1 false), !nosanitize
; CHECK-NEXT:    ret void
define void @shared_constant(float %v) {
entry:
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  %addr = getelementptr inbounds [1024 x float], ptr @A, i64 0, i64 %i
  store float %v, ptr %addr, align 4
  %i.next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i.next, 1024
  br i1 %done, label %exit, label %loop
exit:
  ret void
}

; The same with 8-aligned stores: the 4096 bytes are 512 whole shadow bytes, one
; inline memset of 0xFF, aligned as @D (16) / 8.
; CHECK-LABEL: define void @shared_constant_aligned(
; CHECK:       exit:
; CHECK-NEXT:    [[X:%.*]] = lshr i64 ptrtoint (ptr @D to i64), 3
; CHECK-NEXT:    [[S:%.*]] = add i64 [[X]], 17592186044416
; CHECK-NEXT:    [[SP:%.*]] = inttoptr i64 [[S]] to ptr
; CHECK-NEXT:    call void @llvm.memset.p0.i64(ptr align 2 [[SP]], i8 -1, i64 512, i1 false), !nosanitize
; CHECK-NEXT:    ret void
define void @shared_constant_aligned(double %v) {
entry:
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  %addr = getelementptr inbounds [512 x double], ptr @D, i64 0, i64 %i
  store double %v, ptr %addr, align 8
  %i.next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i.next, 512
  br i1 %done, label %exit, label %loop
exit:
  ret void
}

; for (i = n - 1; i >= 0; i--) p[i] = v;  ->  the range starts at the last
; address written.
; CHECK-LABEL: define void @negative_step(
; CHECK:       exit:
; CHECK-NEXT:    [[LEN:%.*]] = shl i64 %n, 2
; CHECK-NEXT:    ptrtoint ptr %p to i64
; CHECK:         call void @__mw_mark_range(ptr %p, i64 [[LEN]]), !nosanitize
define void @negative_step(ptr %p, float %v, i64 %n) {
entry:
  %guard = icmp sgt i64 %n, 0
  br i1 %guard, label %preheader, label %end
preheader:
  %last = add nsw i64 %n, -1
  br label %loop
loop:
  %i = phi i64 [ %last, %preheader ], [ %i.next, %loop ]
  %addr = getelementptr inbounds float, ptr %p, i64 %i
  store float %v, ptr %addr, align 4
  %i.next = add nsw i64 %i, -1
  %done = icmp slt i64 %i.next, 0
  br i1 %done, label %exit, label %loop
exit:
  br label %end
end:
  ret void
}

; Several stores whose bytes tile the step (an interleaved, vectorized loop):
; p[2i] and p[2i+1] together write [p, p + 8n).
; CHECK-LABEL: define void @tiled(
; CHECK:       loop:
; CHECK-NOT:     !nosanitize
; CHECK:       exit:
; CHECK-NEXT:    [[LEN:%.*]] = shl i64 %n, 3
; CHECK-NEXT:    ptrtoint ptr %p to i64
; CHECK:         call void @__mw_mark_range(ptr %p, i64 [[LEN]]), !nosanitize
define void @tiled(ptr %p, <4 x float> %v, i64 %n) {
entry:
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  %even.i = shl i64 %i, 1
  %odd.i = or disjoint i64 %even.i, 1
  %even = getelementptr inbounds float, ptr %p, i64 %even.i
  %odd = getelementptr inbounds float, ptr %p, i64 %odd.i
  store float 1.0, ptr %odd, align 4
  store float 0.0, ptr %even, align 4
  %i.next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i.next, %n
  br i1 %done, label %exit, label %loop
exit:
  ret void
}

; Row by row over a row-major MW_SHARED array: each row's range is contiguous
; across the rows too, so it is lifted out of the outer loop as well.
; CHECK-LABEL: define void @rows_shared(
; CHECK:       inner:
; CHECK-NOT:     !nosanitize
; CHECK:       inner.exit:
; CHECK-NOT:     !nosanitize
; CHECK:       exit:
; CHECK-NEXT:    [[X:%.*]] = lshr i64 ptrtoint (ptr @M to i64), 3
; CHECK-NEXT:    [[Y:%.*]] = add i64 [[X]], 17592186044416
; CHECK-NEXT:    [[S:%.*]] = inttoptr i64 [[Y]] to ptr
; CHECK-NEXT:    call void @llvm.memset.p0.i64(ptr align 2 [[S]], i8 -1, i64 2048, i1 false), !nosanitize
; CHECK-NEXT:    ret void
define void @rows_shared(float %v) {
entry:
  br label %outer
outer:
  %i = phi i64 [ 0, %entry ], [ %i.next, %inner.exit ]
  br label %inner
inner:
  %j = phi i64 [ 0, %outer ], [ %j.next, %inner ]
  %addr = getelementptr inbounds [64 x [64 x float]], ptr @M, i64 0, i64 %i, i64 %j
  store float %v, ptr %addr, align 4
  %j.next = add nuw nsw i64 %j, 1
  %inner.done = icmp eq i64 %j.next, 64
  br i1 %inner.done, label %inner.exit, label %inner
inner.exit:
  %i.next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i.next, 64
  br i1 %done, label %exit, label %outer
exit:
  ret void
}

; The same with run-time sizes: p[i*m + j] for i < n, j < m.
; CHECK-LABEL: define void @rows_variable(
; CHECK:       inner.exit:
; CHECK-NOT:     __mw_mark_range
; CHECK:       exit:
; CHECK-NEXT:    [[MN:%.*]] = mul i64 %m, %n
; CHECK-NEXT:    [[LEN:%.*]] = shl i64 [[MN]], 2
; CHECK-NEXT:    ptrtoint ptr %p to i64
; CHECK:         call void @__mw_mark_range(ptr %p, i64 [[LEN]]), !nosanitize
define void @rows_variable(ptr %p, float %v, i64 %n, i64 %m) {
entry:
  br label %outer
outer:
  %i = phi i64 [ 0, %entry ], [ %i.next, %inner.exit ]
  %row = mul nsw i64 %i, %m
  br label %inner
inner:
  %j = phi i64 [ 0, %outer ], [ %j.next, %inner ]
  %k = add nsw i64 %row, %j
  %addr = getelementptr inbounds float, ptr %p, i64 %k
  store float %v, ptr %addr, align 4
  %j.next = add nuw nsw i64 %j, 1
  %inner.done = icmp eq i64 %j.next, %m
  br i1 %inner.done, label %inner.exit, label %inner
inner.exit:
  %i.next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i.next, %n
  br i1 %done, label %exit, label %outer
exit:
  ret void
}

; A triangle (j < i): each row's length varies with i, so the rows are not one
; range; row i, [p + 4ni, p + 4ni + 4i), is marked after its inner loop.
; CHECK-LABEL: define void @triangle(
; CHECK:       entry:
; CHECK-NEXT:    [[ROW0:%.*]] = shl i64 %n, 2
; CHECK-NEXT:    [[ROWSTEP:%.*]] = shl i64 %n, 2
; CHECK:       outer:
; CHECK-NEXT:    [[K:%.*]] = phi i64 [ {{%.*}}, {{%.*}} ], [ 0, %entry ]
; CHECK:         [[T:%.*]] = mul i64 [[ROWSTEP]], [[K]]
; CHECK-NEXT:    [[OFF:%.*]] = add i64 [[ROW0]], [[T]]
; CHECK-NEXT:    [[START:%.*]] = getelementptr i8, ptr %p, i64 [[OFF]]
; CHECK-NEXT:    [[K4:%.*]] = shl i64 [[K]], 2
; CHECK-NEXT:    [[LEN:%.*]] = add i64 [[K4]], 4
; CHECK:       inner:
; CHECK-NOT:     !nosanitize
; CHECK:       inner.exit:
; CHECK-NEXT:    ptrtoint ptr [[START]] to i64
; CHECK:         call void @__mw_mark_range(ptr [[START]], i64 [[LEN]]), !nosanitize
; CHECK:       exit:
; CHECK-NEXT:    ret void
define void @triangle(ptr %p, float %v, i64 %n) {
entry:
  br label %outer
outer:
  %i = phi i64 [ 1, %entry ], [ %i.next, %inner.exit ]
  %row = mul nsw i64 %i, %n
  br label %inner
inner:
  %j = phi i64 [ 0, %outer ], [ %j.next, %inner ]
  %k = add nsw i64 %row, %j
  %addr = getelementptr inbounds float, ptr %p, i64 %k
  store float %v, ptr %addr, align 4
  %j.next = add nuw nsw i64 %j, 1
  %inner.done = icmp eq i64 %j.next, %i
  br i1 %inner.done, label %inner.exit, label %inner
inner.exit:
  %i.next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i.next, %n
  br i1 %done, label %exit, label %outer
exit:
  ret void
}

; An exit block with other predecessors gets a dedicated block for the mark, so
; the mark is not made when the loop did not run.
; CHECK-LABEL: define void @shared_exit(
; CHECK:         br i1 %done, label %midway.loop.exit, label %loop
; CHECK:       midway.loop.exit:
; CHECK-NEXT:    [[LEN:%.*]] = shl i64 %n, 2
; CHECK-NEXT:    ptrtoint ptr %p to i64
; CHECK:         call void @__mw_mark_range(ptr %p, i64 [[LEN]]), !nosanitize
; CHECK:         br label %end
; CHECK:       end:
; CHECK-NEXT:    ret void
define void @shared_exit(ptr %p, float %v, i64 %n) {
entry:
  %guard = icmp sgt i64 %n, 0
  br i1 %guard, label %loop, label %end
loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  %addr = getelementptr inbounds float, ptr %p, i64 %i
  store float %v, ptr %addr, align 4
  %i.next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i.next, %n
  br i1 %done, label %end, label %loop
end:
  ret void
}

; Per-store: a store that does not run on every iteration.
; CHECK-LABEL: define void @conditional(
; CHECK:       then:
; CHECK:         store float %v, ptr %addr
; CHECK-NEXT:    ptrtoint ptr %addr
; CHECK-NOT:     __mw_mark_range
; CHECK:         ret void
define void @conditional(ptr %p, ptr %c, float %v, i64 %n) {
entry:
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %latch ]
  %ca = getelementptr inbounds i8, ptr %c, i64 %i
  %cv = load i8, ptr %ca
  %test = icmp ne i8 %cv, 0
  br i1 %test, label %then, label %latch
then:
  %addr = getelementptr inbounds float, ptr %p, i64 %i
  store float %v, ptr %addr, align 4
  br label %latch
latch:
  %i.next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i.next, %n
  br i1 %done, label %exit, label %loop
exit:
  ret void
}

; Per-store: stride 2 leaves gaps (p[2i] only).
; CHECK-LABEL: define void @gaps(
; CHECK:         store float %v, ptr %addr
; CHECK-NEXT:    ptrtoint ptr %addr
; CHECK-NOT:     __mw_mark_range
; CHECK:         ret void
define void @gaps(ptr %p, float %v, i64 %n) {
entry:
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  %k = shl i64 %i, 1
  %addr = getelementptr inbounds float, ptr %p, i64 %k
  store float %v, ptr %addr, align 4
  %i.next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i.next, %n
  br i1 %done, label %exit, label %loop
exit:
  ret void
}

; Per-store: the trip count is not computable (copy up to a NUL).
; CHECK-LABEL: define void @unknown_trip_count(
; CHECK:         store i8 %c, ptr %dst
; CHECK-NEXT:    ptrtoint ptr %dst
; CHECK-NOT:     __mw_mark_range
; CHECK:         ret void
define void @unknown_trip_count(ptr %d, ptr %s) {
entry:
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  %src = getelementptr inbounds i8, ptr %s, i64 %i
  %c = load i8, ptr %src
  %dst = getelementptr inbounds i8, ptr %d, i64 %i
  store i8 %c, ptr %dst, align 1
  %i.next = add nuw nsw i64 %i, 1
  %done = icmp eq i8 %c, 0
  br i1 %done, label %exit, label %loop
exit:
  ret void
}

; Per-store: an early exit (break) leaves the loop before the latch.
; CHECK-LABEL: define void @early_exit(
; CHECK:         store float %v, ptr %addr
; CHECK-NEXT:    ptrtoint ptr %addr
; CHECK-NOT:     __mw_mark_range
; CHECK:         ret void
define void @early_exit(ptr %p, ptr %stop, float %v, i64 %n) {
entry:
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %latch ]
  %addr = getelementptr inbounds float, ptr %p, i64 %i
  store float %v, ptr %addr, align 4
  %sv = load volatile i8, ptr %stop
  %brk = icmp ne i8 %sv, 0
  br i1 %brk, label %exit, label %latch
latch:
  %i.next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i.next, %n
  br i1 %done, label %exit, label %loop
exit:
  ret void
}

; Per-store: a call that may not return to the loop (it may synchronize, unwind
; or longjmp) must see the marks made so far.
; CHECK-LABEL: define void @call_in_loop(
; CHECK:         store float %v, ptr %addr
; CHECK-NEXT:    ptrtoint ptr %addr
; CHECK-NOT:     __mw_mark_range
; CHECK:         ret void
define void @call_in_loop(ptr %p, ptr %b, float %v, i64 %n) {
entry:
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  %addr = getelementptr inbounds float, ptr %p, i64 %i
  store float %v, ptr %addr, align 4
  call void @mw_barrier(ptr %b)
  %i.next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i.next, %n
  br i1 %done, label %exit, label %loop
exit:
  ret void
}

; Per-store: volatile and atomic stores keep their own marks.
; CHECK-LABEL: define void @volatile_and_atomic(
; CHECK:         store volatile float %v, ptr %addr
; CHECK-NEXT:    ptrtoint ptr %addr
; CHECK:         store atomic i32 0, ptr %addr2 unordered, align 4
; CHECK-NEXT:    ptrtoint ptr %addr2
; CHECK-NOT:     __mw_mark_range
; CHECK:         ret void
define void @volatile_and_atomic(ptr %p, ptr %q, float %v, i64 %n) {
entry:
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  %addr = getelementptr inbounds float, ptr %p, i64 %i
  store volatile float %v, ptr %addr, align 4
  %addr2 = getelementptr inbounds i32, ptr %q, i64 %i
  store atomic i32 0, ptr %addr2 unordered, align 4
  %i.next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i.next, %n
  br i1 %done, label %exit, label %loop
exit:
  ret void
}

; memset of one row per iteration: a memory intrinsic steps like a store.
; CHECK-LABEL: define void @memset_rows(
; CHECK:       loop:
; CHECK-NOT:     __mw_mark_range
; CHECK:       exit:
; CHECK-NEXT:    [[LEN:%.*]] = mul i64 %m, %n
; CHECK-NEXT:    ptrtoint ptr %p to i64
; CHECK:         call void @__mw_mark_range(ptr %p, i64 [[LEN]]), !nosanitize
define void @memset_rows(ptr %p, i64 %n, i64 %m) {
entry:
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  %off = mul i64 %i, %m
  %row = getelementptr inbounds i8, ptr %p, i64 %off
  call void @llvm.memset.p0.i64(ptr %row, i8 0, i64 %m, i1 false)
  %i.next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i.next, %n
  br i1 %done, label %exit, label %loop
exit:
  ret void
}

declare void @mw_barrier(ptr)
declare void @llvm.memset.p0.i64(ptr, i8, i64, i1)
