; Polls at loop back-edges (-midway-polls, on by default): one atomic load of the word at
; MW_POLL_WORD (0x3FFFF000) and a branch, predicted not taken, to __mw_poll.
; Where: a loop that contains loops polls on its back-edge; an innermost loop
; polls only if no loop of its function contains it, or if it scatters (stores
; through an address that does not step with it), and then every
; -midway-poll-budget iterations, unless its trip count is at most the budget.
; Nowhere else: not in other loops nested in a loop, not in functions without loops,
; not in the runtime, not with -midway-polls=false or -midway-instrument=false.
; RUN: %opt -passes=midway-instrument -S %s | FileCheck %s
; RUN: %opt -passes=midway-instrument -midway-polls -stats -disable-output %s 2>&1 \
; RUN:   | FileCheck %s --check-prefix=STATS
; RUN: %opt -passes=midway-instrument -midway-polls=false -S %s | FileCheck %s --check-prefix=OFF
; RUN: %opt -passes=midway-instrument -midway-polls -midway-instrument=false -S %s \
; RUN:   | FileCheck %s --check-prefix=OFF
; The poll goes on the back-edge after a check build's checks split the loop's
; blocks, and the loop's stores are still marked once after it.
; RUN: %opt -passes=midway-instrument -midway-polls -midway-check -S %s \
; RUN:   | FileCheck %s --check-prefix=CHECKED
; STATS-DAG: 5 midway-instrument - Number of polls at loop back-edges
; STATS-DAG: 3 midway-instrument - Number of polls made every -midway-poll-budget iterations
; OFF-NOT: __mw_poll
; OFF-NOT: 1073737728

target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
target triple = "x86_64-unknown-linux-gnu"

@A = global [64 x [64 x float]] zeroinitializer, section "mw_shared", align 16

; A nest: the outer loop polls on its back-edge, the inner loop does not.
; CHECK-LABEL: define void @nest(
; CHECK:       inner:
; CHECK-NOT:     __mw_poll
; CHECK:       outer.latch:
; CHECK:         [[W:%.*]] = load atomic i64, ptr inttoptr (i64 1073737728 to ptr) monotonic, align 8, !nosanitize
; CHECK-NEXT:    [[P:%.*]] = icmp ne i64 [[W]], 0
; CHECK-NEXT:    br i1 [[P]], label %[[POLL:.*]], label %[[CONT:.*]], !prof [[UNLIKELY:![0-9]+]]
; CHECK:       [[POLL]]:
; CHECK-NEXT:    call void @__mw_poll(), !nosanitize
; CHECK-NEXT:    br label %[[CONT]]
; CHECK:       [[CONT]]:
; CHECK-NEXT:    br i1 %outer.done, label %exit, label %outer
define void @nest(i64 %n) {
entry:
  br label %outer
outer:
  %i = phi i64 [ 0, %entry ], [ %i.next, %outer.latch ]
  br label %inner
inner:
  %j = phi i64 [ 0, %outer ], [ %j.next, %inner ]
  %q = getelementptr inbounds [64 x [64 x float]], ptr @A, i64 0, i64 %i, i64 %j
  store float 1.0, ptr %q, align 4
  %j.next = add nuw nsw i64 %j, 1
  %inner.done = icmp eq i64 %j.next, %n
  br i1 %inner.done, label %outer.latch, label %inner
outer.latch:
  %i.next = add nuw nsw i64 %i, 1
  %outer.done = icmp eq i64 %i.next, %n
  br i1 %outer.done, label %exit, label %outer
exit:
  ret void
}

; A nest whose inner loop scatters (a sort's permutation: to[pos[k]] = k): the
; inner loop counts its iterations and polls every 1024 of them, and the outer
; loop polls on its back-edge as any nest's.
; CHECK-LABEL: define void @scatter(
; CHECK:       inner:
; CHECK-NEXT:    %midway.poll.left = phi i32
; CHECK:         call void @__mw_poll()
; CHECK:       outer.latch:
; CHECK:         call void @__mw_poll()
; CHECK-NEXT:    br label
define void @scatter(ptr %to, ptr %pos, i64 %n) {
entry:
  br label %outer
outer:
  %i = phi i64 [ 0, %entry ], [ %i.next, %outer.latch ]
  br label %inner
inner:
  %k = phi i64 [ 0, %outer ], [ %k.next, %inner ]
  %pk = getelementptr inbounds i64, ptr %pos, i64 %k
  %at = load i64, ptr %pk, align 8
  %q = getelementptr inbounds i64, ptr %to, i64 %at
  store i64 %k, ptr %q, align 8
  %k.next = add nuw nsw i64 %k, 1
  %inner.done = icmp eq i64 %k.next, %n
  br i1 %inner.done, label %outer.latch, label %inner
outer.latch:
  %i.next = add nuw nsw i64 %i, 1
  %outer.done = icmp eq i64 %i.next, %n
  br i1 %outer.done, label %exit, label %outer
exit:
  ret void
}

; A flat loop of unknown length: a count of iterations left, and the poll when it
; runs out (then the count starts again).
; CHECK-LABEL: define void @sweep(
; CHECK:       loop:
; CHECK-NEXT:    [[LEFT:%midway.poll.left]] = phi i32 [ [[NEXT:%midway.poll.next]], %[[LATCH:.*]] ], [ 1024, %entry ]
; CHECK:         [[DEC:%.*]] = sub i32 [[LEFT]], 1
; CHECK-NEXT:    [[OUT:%.*]] = icmp eq i32 [[DEC]], 0
; CHECK-NEXT:    br i1 [[OUT]], label %[[EXPIRED:.*]], label %[[LATCH]], !prof [[UNLIKELY]]
; CHECK:       [[EXPIRED]]:
; CHECK-NEXT:    load atomic i64, ptr inttoptr (i64 1073737728 to ptr) monotonic
; CHECK:         call void @__mw_poll()
; CHECK:       [[LATCH]]:
; CHECK-NEXT:    [[NEXT]] = phi i32 [ [[DEC]], %loop ], [ 1024, %{{.*}} ]
; CHECK-NEXT:    br i1 %done, label %exit, label %loop
define void @sweep(ptr %p, i64 %n) {
entry:
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  %q = getelementptr inbounds float, ptr %p, i64 %i
  %v = load float, ptr %q, align 4
  %d = fmul float %v, 2.0
  store float %d, ptr %q, align 4
  %i.next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i.next, %n
  br i1 %done, label %exit, label %loop
exit:
  ret void
}

; A flat loop known to run at most 1024 times: tiny and bounded, no poll. One of
; 5000 iterations gets its count.
; CHECK-LABEL: define void @bounded(
; CHECK-NOT:     __mw_poll
; CHECK:         ret void
; CHECK-LABEL: define void @long_bounded(
; CHECK:         %midway.poll.left = phi i32
; CHECK:         call void @__mw_poll()
define void @bounded(ptr %p) {
entry:
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  %q = getelementptr inbounds float, ptr %p, i64 %i
  store float 0.0, ptr %q, align 4
  %i.next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i.next, 1000
  br i1 %done, label %exit, label %loop
exit:
  ret void
}

define void @long_bounded(ptr %p) {
entry:
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  %q = getelementptr inbounds float, ptr %p, i64 %i
  store float 0.0, ptr %q, align 4
  %i.next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i.next, 5000
  br i1 %done, label %exit, label %loop
exit:
  ret void
}

; No loop, no poll; the runtime's functions get none either.
; CHECK-LABEL: define i64 @straight(
; CHECK-NOT:     __mw_poll
; CHECK:         ret i64
; CHECK-LABEL: define void @__mw_runtime_loop(
; CHECK-NOT:     __mw_poll
; CHECK:         ret void
define i64 @straight(i64 %x) {
  %y = mul i64 %x, 3
  ret i64 %y
}

define void @__mw_runtime_loop(ptr %p, i64 %n) {
entry:
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  %q = getelementptr inbounds i8, ptr %p, i64 %i
  store i8 0, ptr %q, align 1
  %i.next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i.next, %n
  br i1 %done, label %exit, label %loop
exit:
  ret void
}

; CHECK: declare void @__mw_poll() [[ATTRS:#[0-9]+]]
; CHECK: attributes [[ATTRS]] = { cold nounwind }
; CHECK: [[UNLIKELY]] = !{!"branch_weights", i32 1, i32 1048575}

; CHECKED-LABEL: define void @nest(
; CHECKED:       inner:
; CHECKED:         call void @__mw_check_store(
; CHECKED-NOT:     __mw_poll
; CHECKED:         br i1 %inner.done, label %outer.latch, label %inner
; CHECKED:       outer.latch:
; CHECKED-NOT:     __mw_mark
; CHECKED:         call void @__mw_poll()
; CHECKED:         br i1 %outer.done, label %exit, label %outer
; CHECKED:       exit:
; CHECKED-NEXT:    [[LEN:%.*]] = shl i64 %n, 2
; CHECKED-NEXT:    call void @__mw_mark_rows(ptr @A, i64 [[LEN]], i64 256, i64 %n)
; CHECKED-LABEL: define void @sweep(
; CHECKED:         call void @__mw_check_load(
; CHECKED:         call void @__mw_check_store(
; CHECKED:         call void @__mw_poll()
; CHECKED:         [[NEXT:%midway.poll.next]] = phi i32
; CHECKED-NEXT:    br i1 %done, label %exit, label %loop
