; Loop nests' ranges, planned before the vectorizer (midway-nest-ranges, at the
; vectorizer's start in -O1 and up): LU's bmod, c[j * stride + i] += ... for
; every k, is Rows = dimj rows of 8 * dimi bytes, stride * 8 apart, the same for
; every k: one call after the whole nest, made only if the guards of the i and j
; loops let them run (a count of -1 would otherwise be a row of -8 bytes). The
; stores it covers are tagged, and the last stage leaves them unmarked. The loops
; come as the pipeline leaves them there: not yet with preheaders.
; RUN: %opt -passes='function(midway-nest-ranges)' -S %s | FileCheck %s
; RUN: %opt -passes='function(midway-nest-ranges),midway-instrument' -S %s \
; RUN:   | FileCheck %s --check-prefix=LAST
; RUN: %opt -passes='function(midway-nest-ranges)' -midway-nest-ranges=false -S %s \
; RUN:   | FileCheck %s --check-prefix=OFF

target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
target triple = "x86_64-unknown-linux-gnu"

; CHECK-LABEL: define void @bmod(
; CHECK-SAME:    #[[ATTRS:[0-9]+]]
; CHECK:         store double %sum, ptr %cij, align 8, !noalias [[TAGS:![0-9]+]]
; CHECK-NOT:     __mw_mark
; CHECK:         br i1 %k.done
; CHECK:         [[GUARDS:%.*]] = and i1 %i.guard, %j.guard
; CHECK-NEXT:    br i1 [[GUARDS]], label %[[MARK:.*]], label
; CHECK:       [[MARK]]:
; CHECK:         call void @__mw_mark_rows(ptr %c, i64 {{%.*}}, i64 {{%.*}}, i64 %dimj), !nosanitize
; LAST-LABEL: define void @bmod(
; LAST:         store double %sum, ptr %cij, align 8, !noalias
; LAST-NEXT:    %i.next = add
; LAST-NOT:     store i{{8|16|32|64}} -1
; LAST-NOT:     __mw_mark_range
; LAST:         call void @__mw_mark_rows(ptr %c,
; LAST-NOT:     store i{{8|16|32|64}} -1
; LAST:       }
; OFF-LABEL: define void @bmod(
; OFF-NOT:     __mw_mark
; OFF-NOT:     noalias !
; OFF:       }
define void @bmod(ptr noalias %a, ptr noalias %c, i64 %dimi, i64 %dimj, i64 %dimk, i64 %stride) #0 {
entry:
  %k.guard = icmp sgt i64 %dimk, 0
  br i1 %k.guard, label %pre, label %end
pre:
  %j.guard = icmp sgt i64 %dimj, 0
  %i.guard = icmp sgt i64 %dimi, 0
  br label %k.loop
k.loop:
  %k = phi i64 [ 0, %pre ], [ %k.next, %k.latch ]
  br i1 %j.guard, label %j.pre, label %k.latch
j.pre:
  %ak = getelementptr inbounds double, ptr %a, i64 %k
  br label %j.loop
j.loop:
  %j = phi i64 [ 0, %j.pre ], [ %j.next, %j.latch ]
  %row = mul nsw i64 %j, %stride
  %cj = getelementptr inbounds double, ptr %c, i64 %row
  br i1 %i.guard, label %i.loop, label %j.latch
i.loop:
  %i = phi i64 [ %i.next, %i.loop ], [ 0, %j.loop ]
  %cij = getelementptr inbounds double, ptr %cj, i64 %i
  %old = load double, ptr %cij, align 8
  %x = load double, ptr %ak, align 8
  %sum = fadd double %old, %x
  store double %sum, ptr %cij, align 8
  %i.next = add nuw nsw i64 %i, 1
  %i.done = icmp eq i64 %i.next, %dimi
  br i1 %i.done, label %j.latch, label %i.loop
j.latch:
  %j.next = add nuw nsw i64 %j, 1
  %j.done = icmp eq i64 %j.next, %dimj
  br i1 %j.done, label %k.latch, label %j.loop
k.latch:
  %k.next = add nuw nsw i64 %k, 1
  %k.done = icmp eq i64 %k.next, %dimk
  br i1 %k.done, label %end, label %k.loop
end:
  ret void
}

; A single loop's range is left to the last stage, which plans it on the loop the
; vectorizer made of it: nothing here.
; CHECK-LABEL: define void @single(
; CHECK-NOT:     __mw_mark
; CHECK-NOT:     !noalias
; CHECK:       }
define void @single(ptr %p, i64 %n) {
entry:
  %guard = icmp sgt i64 %n, 0
  br i1 %guard, label %loop, label %end
loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  %q = getelementptr inbounds double, ptr %p, i64 %i
  store double 1.0, ptr %q, align 8
  %i.next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i.next, %n
  br i1 %done, label %end, label %loop
end:
  ret void
}

; An inner loop behind a condition that changes with j (a row is written only if
; flag[j]): not every iteration of j writes a row, so its range stays after the
; inner loop, for the last stage.
; CHECK-LABEL: define void @some_rows(
; CHECK-NOT:     __mw_mark
; CHECK:       }
define void @some_rows(ptr %c, ptr %flag, i64 %n, i64 %stride) {
entry:
  %guard = icmp sgt i64 %n, 0
  br i1 %guard, label %j.loop, label %end
j.loop:
  %j = phi i64 [ 0, %entry ], [ %j.next, %j.latch ]
  %fj = getelementptr inbounds i8, ptr %flag, i64 %j
  %f = load i8, ptr %fj, align 1
  %on = icmp ne i8 %f, 0
  %row = mul nsw i64 %j, %stride
  %cj = getelementptr inbounds double, ptr %c, i64 %row
  br i1 %on, label %i.loop, label %j.latch
i.loop:
  %i = phi i64 [ %i.next, %i.loop ], [ 0, %j.loop ]
  %cij = getelementptr inbounds double, ptr %cj, i64 %i
  store double 1.0, ptr %cij, align 8
  %i.next = add nuw nsw i64 %i, 1
  %i.done = icmp eq i64 %i.next, %n
  br i1 %i.done, label %j.latch, label %i.loop
j.latch:
  %j.next = add nuw nsw i64 %j, 1
  %j.done = icmp eq i64 %j.next, %n
  br i1 %j.done, label %end, label %j.loop
end:
  ret void
}

; A store with !noalias scopes of its own (restrict, inlined) keeps them: the tag
; joins them in its list.
; CHECK-LABEL: define void @scoped(
; CHECK:         store float 0.000000e+00, ptr %q, align 4, !noalias [[BOTH:![0-9]+]]
; CHECK:         call void @__mw_mark_rows(
; The marks touch memory the program does not see.
; CHECK: attributes #[[ATTRS]] = { {{.*}}memory(argmem: readwrite, inaccessiblemem: readwrite)
; CHECK: !midway.covered = !{[[TAG:![0-9]+]]}
; CHECK: [[TAG]] = distinct !{[[TAG]], [[DOMAIN:![0-9]+]], !"covered by a loop nest's mark"}
; CHECK: [[DOMAIN]] = distinct !{[[DOMAIN]], !"midway"}
; CHECK: [[TAGS]] = !{[[TAG]]}
; CHECK: [[BOTH]] = !{[[SCOPE:![0-9]+]], [[TAG]]}
; CHECK: [[SCOPE]] = distinct !{[[SCOPE]], {{.*}}!"restrict"}
; LAST-LABEL: define void @scoped(
; LAST:         store float 0.000000e+00, ptr %q, align 4, !noalias
; LAST-NEXT:    %i.next = add
define void @scoped(ptr %c, i64 %n, i64 %stride) {
entry:
  %guard = icmp sgt i64 %n, 0
  br i1 %guard, label %j.loop, label %end
j.loop:
  %j = phi i64 [ 0, %entry ], [ %j.next, %j.latch ]
  %row = mul nsw i64 %j, %stride
  %cj = getelementptr inbounds float, ptr %c, i64 %row
  br label %i.loop
i.loop:
  %i = phi i64 [ %i.next, %i.loop ], [ 0, %j.loop ]
  %q = getelementptr inbounds float, ptr %cj, i64 %i
  store float 0.0, ptr %q, align 4, !noalias !0
  %i.next = add nuw nsw i64 %i, 1
  %i.done = icmp eq i64 %i.next, %n
  br i1 %i.done, label %j.latch, label %i.loop
j.latch:
  %j.next = add nuw nsw i64 %j, 1
  %j.done = icmp eq i64 %j.next, %n
  br i1 %j.done, label %end, label %j.loop
end:
  ret void
}

attributes #0 = { memory(argmem: readwrite) }

!0 = !{!1}
!1 = distinct !{!1, !2, !"restrict"}
!2 = distinct !{!2, !"caller"}
