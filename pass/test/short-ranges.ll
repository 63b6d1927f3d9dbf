; A loop's range whose length is known only at run time: when it ends within
; -midway-inline-range-bytes (default 256) of its first shadow byte it is marked
; inline, one word-wide OR of the shadow per 64 bytes, each made only if the range
; reaches into its word (so no OR reaches more than 7 shadow bytes past the last
; one marked, midway.h), or, when it is whole shadow bytes (8-aligned, a multiple of
; 8 long), by stores of all ones; longer ranges, and a length of 0, call the runtime.
; Other run-time lengths (a memset, a library call) always call the runtime.
; RUN: %opt -passes=midway-instrument -S %s | FileCheck %s
; RUN: %opt -passes=midway-instrument -midway-inline-range-bytes=64 -S %s \
; RUN:   | FileCheck %s --check-prefix=ONEWORD
; RUN: %opt -passes=midway-instrument -midway-inline-range-bytes=0 -S %s \
; RUN:   | FileCheck %s --check-prefix=CALL

target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
target triple = "x86_64-unknown-linux-gnu"

@D = global [512 x double] zeroinitializer, section "mw_shared", align 16

; daxpy: for (i = 0; i < n; i++) a[i] += alpha * b[i];  doubles, 8-aligned, so the
; range is N = 8n / 8 whole shadow bytes: stored, not ORed, as pairs of overlapping
; stores from the front and the back (4, 2 or 1 bytes wide below 8 shadow bytes; 8 wide,
; the second pair only past 16, up to the 32 of 256 bytes).
; CHECK-LABEL: define void @daxpy(
; CHECK:       exit:
; CHECK-NEXT:    [[LEN:%.*]] = shl i64 %n, 3
; CHECK-NEXT:    [[INT:%.*]] = ptrtoint ptr %a to i64
; CHECK-NEXT:    [[OFF:%.*]] = sub i64 [[INT]], 1073741824
; CHECK-NEXT:    [[IN:%.*]] = icmp ult i64 [[OFF]], 1099511627776
; CHECK-NEXT:    br i1 [[IN]], label %[[WINDOW:.*]], label %[[DONE:.*]]
; CHECK:       [[WINDOW]]:
; CHECK-NEXT:    [[L1:%.*]] = sub i64 [[LEN]], 1
; CHECK-NEXT:    %midway.short = icmp ult i64 [[L1]], 256
; CHECK-NEXT:    br i1 %midway.short, label %[[SHORT:.*]], label %[[LONG:.*]]
; CHECK:       [[SHORT]]:
; CHECK-NEXT:    [[A:%.*]] = ptrtoint ptr %a to i64
; CHECK-NEXT:    [[A3:%.*]] = lshr i64 [[A]], 3
; CHECK-NEXT:    [[S:%.*]] = add i64 [[A3]], 17592186044416
; CHECK-NEXT:    [[SHADOW:%.*]] = inttoptr i64 [[S]] to ptr
; CHECK-NEXT:    %midway.shadow.bytes = lshr i64 [[LEN]], 3
; CHECK-NEXT:    [[LT8:%.*]] = icmp ult i64 %midway.shadow.bytes, 8
; CHECK-NEXT:    br i1 [[LT8]], label %[[SMALL:.*]], label %[[LARGE:.*]]
; CHECK:       [[SMALL]]:
; CHECK-NEXT:    [[GE4:%.*]] = icmp uge i64 %midway.shadow.bytes, 4
; CHECK-NEXT:    br i1 [[GE4]], label %[[FOUR:.*]], label %[[BELOW4:.*]]
; CHECK:       [[FOUR]]:
; CHECK-NEXT:    store i32 -1, ptr [[SHADOW]], align 1, !nosanitize
; CHECK-NEXT:    [[E4:%.*]] = getelementptr i8, ptr [[SHADOW]], i64 %midway.shadow.bytes
; CHECK-NEXT:    [[B4:%.*]] = getelementptr i8, ptr [[E4]], i64 -4
; CHECK-NEXT:    store i32 -1, ptr [[B4]], align 1, !nosanitize
; CHECK:       [[BELOW4]]:
; CHECK-NEXT:    [[GE2:%.*]] = icmp uge i64 %midway.shadow.bytes, 2
; CHECK-NEXT:    br i1 [[GE2]], label %[[TWO:.*]], label %[[ONE:.*]]
; CHECK:       [[TWO]]:
; CHECK-NEXT:    store i16 -1, ptr [[SHADOW]], align 1, !nosanitize
; CHECK-NEXT:    [[E2:%.*]] = getelementptr i8, ptr [[SHADOW]], i64 %midway.shadow.bytes
; CHECK-NEXT:    [[B2:%.*]] = getelementptr i8, ptr [[E2]], i64 -2
; CHECK-NEXT:    store i16 -1, ptr [[B2]], align 1, !nosanitize
; CHECK:       [[ONE]]:
; CHECK-NEXT:    store i8 -1, ptr [[SHADOW]], align 1, !nosanitize
; CHECK:       [[LARGE]]:
; CHECK-NEXT:    store i64 -1, ptr [[SHADOW]], align 1, !nosanitize
; CHECK-NEXT:    [[E8:%.*]] = getelementptr i8, ptr [[SHADOW]], i64 %midway.shadow.bytes
; CHECK-NEXT:    [[B8:%.*]] = getelementptr i8, ptr [[E8]], i64 -8
; CHECK-NEXT:    store i64 -1, ptr [[B8]], align 1, !nosanitize
; CHECK-NEXT:    [[GT16:%.*]] = icmp ugt i64 %midway.shadow.bytes, 16
; CHECK-NEXT:    br i1 [[GT16]], label %[[PAIR1:.*]], label
; CHECK:       [[PAIR1]]:
; CHECK-NEXT:    [[F1:%.*]] = getelementptr i8, ptr [[SHADOW]], i64 8
; CHECK-NEXT:    store i64 -1, ptr [[F1]], align 1, !nosanitize
; CHECK-NEXT:    [[E16:%.*]] = getelementptr i8, ptr [[SHADOW]], i64 %midway.shadow.bytes
; CHECK-NEXT:    [[B16:%.*]] = getelementptr i8, ptr [[E16]], i64 -16
; CHECK-NEXT:    store i64 -1, ptr [[B16]], align 1, !nosanitize
; CHECK-NOT:     icmp ugt i64 %midway.shadow.bytes, 32
; CHECK-NOT:     load i64
; CHECK:       [[LONG]]:
; CHECK-NEXT:    call void @__mw_mark_range(ptr %a, i64 [[LEN]]), !nosanitize
; ONEWORD-LABEL: define void @daxpy(
; ONEWORD:         %midway.short = icmp ult i64 {{%.*}}, 64
; ONEWORD:         store i64 -1,
; ONEWORD:         store i64 -1,
; ONEWORD-NOT:     icmp ugt i64 %midway.shadow.bytes, 16
; ONEWORD:         call void @__mw_mark_range(ptr %a,
; CALL-LABEL: define void @daxpy(
; CALL-NOT:        midway.short
; CALL-NOT:        17592186044416
; CALL:            call void @__mw_mark_range(ptr %a,
define void @daxpy(ptr %a, ptr %b, i64 %n, double %alpha) {
entry:
  %guard = icmp sgt i64 %n, 0
  br i1 %guard, label %loop, label %end
loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  %pa = getelementptr inbounds double, ptr %a, i64 %i
  %pb = getelementptr inbounds double, ptr %b, i64 %i
  %x = load double, ptr %pb, align 8
  %y = load double, ptr %pa, align 8
  %m = fmul double %alpha, %x
  %s = fadd double %y, %m
  store double %s, ptr %pa, align 8
  %i.next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i.next, %n
  br i1 %done, label %exit, label %loop
exit:
  br label %end
end:
  ret void
}

; Floats, 4-aligned: the range may start 4 bytes into a shadow byte. The room is
; 256 less that offset, the end counts from the shadow byte's bit 0, and the first
; word's bits start at the offset.
; CHECK-LABEL: define void @floats(
; CHECK:         [[LEN:%.*]] = shl i64 %n, 2
; CHECK:         br i1 %midway.in.window
; CHECK:         [[A:%.*]] = ptrtoint ptr %p to i64
; CHECK-NEXT:    [[LO:%.*]] = and i64 [[A]], 7
; CHECK-NEXT:    [[ROOM:%.*]] = sub i64 256, [[LO]]
; CHECK-NEXT:    [[L1:%.*]] = sub i64 [[LEN]], 1
; CHECK-NEXT:    %midway.short = icmp ult i64 [[L1]], [[ROOM]]
; CHECK:         [[A2:%.*]] = ptrtoint ptr %p to i64
; CHECK-NEXT:    [[SHIFT:%.*]] = and i64 [[A2]], 7
; CHECK-NEXT:    [[END:%.*]] = add i64 [[SHIFT]], [[LEN]]
; CHECK:         [[SH0:%.*]] = call i64 @llvm.usub.sat.i64(i64 64, i64 [[END]])
; CHECK-NEXT:    [[UPTO:%.*]] = lshr i64 -1, [[SH0]]
; CHECK-NEXT:    [[FROM:%.*]] = shl i64 -1, [[SHIFT]]
; CHECK-NEXT:    [[BITS0:%.*]] = and i64 [[UPTO]], [[FROM]]
; CHECK-NEXT:    [[OLD0:%.*]] = load i64
; CHECK-NEXT:    or i64 [[OLD0]], [[BITS0]]
; CHECK:         icmp ugt i64 [[END]], 64
; CHECK:         call void @__mw_mark_range(ptr %p, i64 [[LEN]])
define void @floats(ptr %p, i64 %n, float %v) {
entry:
  %guard = icmp sgt i64 %n, 0
  br i1 %guard, label %loop, label %end
loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  %q = getelementptr inbounds float, ptr %p, i64 %i
  store float %v, ptr %q, align 4
  %i.next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i.next, %n
  br i1 %done, label %exit, label %loop
exit:
  br label %end
end:
  ret void
}

; MW_SHARED data needs no window check; its known 16-byte alignment means no shift.
; CHECK-LABEL: define void @shared(
; CHECK:       exit:
; CHECK-NOT:     1073741824
; CHECK:         %midway.short = icmp ult i64 {{%.*}}, 256
; CHECK-NOT:     and i64 {{.*}}, 7
; CHECK:         call void @__mw_mark_range(ptr @D,
define void @shared(i64 %n, double %v) {
entry:
  %guard = icmp sgt i64 %n, 0
  br i1 %guard, label %loop, label %end
loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  %q = getelementptr inbounds [512 x double], ptr @D, i64 0, i64 %i
  store double %v, ptr %q, align 8
  %i.next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i.next, %n
  br i1 %done, label %exit, label %loop
exit:
  br label %end
end:
  ret void
}

; A memset of run-time length is not a loop's range: the runtime marks it.
; CHECK-LABEL: define void @memset_n(
; CHECK:         call void @llvm.memset
; CHECK-NOT:     midway.short
; CHECK:         call void @__mw_mark_range(ptr %p, i64 %n)
define void @memset_n(ptr %p, i64 %n) {
  call void @llvm.memset.p0.i64(ptr %p, i8 0, i64 %n, i1 false)
  ret void
}

declare void @llvm.memset.p0.i64(ptr, i8, i64, i1)
