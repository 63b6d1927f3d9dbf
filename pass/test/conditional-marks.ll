; -midway-conditional-marks (on by default): a mark of a known size up to 128
; bytes (a store's) is stored only if it changes the shadow, so data written again
; before the runtime collects its marks costs a load and a branch, not a write to
; the shadow's cache line (RADIX's permutation at one rank). A range of run-time
; length, marked once after its loop, stays plain stores and ORs: it is not made
; again and again. The runtime fences the application
; thread where another thread takes marks (runtime/memory/dirty.hpp).
; RUN: %opt -passes=midway-instrument -S %s | FileCheck %s
; RUN: %opt -passes=midway-instrument -midway-conditional-marks=false -S %s \
; RUN:   | FileCheck %s --check-prefix=PLAIN

target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
target triple = "x86_64-unknown-linux-gnu"

@g = global [64 x i64] zeroinitializer, section "mw_shared", align 16

; A whole shadow byte: load it, store 0xFF only if it is not 0xFF already.
; CHECK-LABEL: define void @whole_byte(
; CHECK:         store i64 %v, ptr %p, align 8
; CHECK:         [[S:%.*]] = inttoptr i64 {{%.*}} to ptr
; CHECK-NEXT:    [[OLD:%.*]] = load i8, ptr [[S]], align 1, !nosanitize
; CHECK-NEXT:    [[CHANGED:%.*]] = icmp ne i8 -1, [[OLD]]
; CHECK-NEXT:    br i1 [[CHANGED]], label %[[STORE:.*]], label %[[DONE:.*]]
; CHECK:       [[STORE]]:
; CHECK-NEXT:    store i8 -1, ptr [[S]], align 1, !nosanitize
; CHECK-NEXT:    br label %[[DONE]]
; PLAIN-LABEL: define void @whole_byte(
; PLAIN-NOT:     icmp
; PLAIN:         store i8 -1, ptr {{%.*}}, align 1, !nosanitize
; PLAIN-NEXT:    ret void
define void @whole_byte(i64 %i, i64 %v) {
  %p = getelementptr inbounds i64, ptr @g, i64 %i
  store i64 %v, ptr %p, align 8
  ret void
}

; Part of a shadow byte: the OR's own load is the old value; store only if the
; OR changed it.
; CHECK-LABEL: define void @partial_byte(
; CHECK:         [[OLD:%.*]] = load i8, ptr [[S:%.*]], align 1, !nosanitize
; CHECK-NEXT:    [[NEW:%.*]] = or i8 [[OLD]], {{%.*}}
; CHECK-NEXT:    [[CHANGED:%.*]] = icmp ne i8 [[NEW]], [[OLD]]
; CHECK-NEXT:    br i1 [[CHANGED]], label %[[STORE:.*]], label %[[DONE:.*]]
; CHECK:       [[STORE]]:
; CHECK-NEXT:    store i8 [[NEW]], ptr [[S]], align 1, !nosanitize
; PLAIN-LABEL: define void @partial_byte(
; PLAIN:         [[NEW:%.*]] = or i8
; PLAIN-NEXT:    store i8 [[NEW]], ptr {{%.*}}, align 1, !nosanitize
; PLAIN-NEXT:    ret void
define void @partial_byte(i64 %i, i32 %v) {
  %p = getelementptr inbounds i32, ptr @g, i64 %i
  store i32 %v, ptr %p, align 4
  ret void
}

; A loop's range of run-time length, marked inline after the loop: stores of all
; ones (doubles) with no look at the shadow first.
; CHECK-LABEL: define void @range(
; CHECK:       exit:
; CHECK-NOT:     load i{{[0-9]+}}, ptr {{%.*}}, align 1, !nosanitize
; CHECK-NOT:     icmp ne
; CHECK:         store i32 -1, ptr {{%.*}}, align 1, !nosanitize
; CHECK-NOT:     icmp ne
; CHECK:         call void @__mw_mark_range(ptr %a,
; CHECK:       end:
define void @range(ptr %a, i64 %n, double %x) {
entry:
  %guard = icmp sgt i64 %n, 0
  br i1 %guard, label %loop, label %end
loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  %pa = getelementptr inbounds double, ptr %a, i64 %i
  store double %x, ptr %pa, align 8
  %i.next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i.next, %n
  br i1 %done, label %exit, label %loop
exit:
  br label %end
end:
  ret void
}
