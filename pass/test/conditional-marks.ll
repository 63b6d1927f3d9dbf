; -midway-conditional-marks: a mark is stored only if it changes the shadow, so
; data written again before the runtime collects it costs a load and a branch,
; not a write. Off by default (a write-once phase would pay for nothing).
; RUN: %opt -passes=midway-instrument -midway-conditional-marks -S %s | FileCheck %s
; RUN: %opt -passes=midway-instrument -S %s | FileCheck %s --check-prefix=DEFAULT

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
; DEFAULT-LABEL: define void @whole_byte(
; DEFAULT-NOT:     icmp
; DEFAULT:         store i8 -1, ptr {{%.*}}, align 1, !nosanitize
; DEFAULT-NEXT:    ret void
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
; DEFAULT-LABEL: define void @partial_byte(
; DEFAULT:         [[NEW:%.*]] = or i8
; DEFAULT-NEXT:    store i8 [[NEW]], ptr {{%.*}}, align 1, !nosanitize
; DEFAULT-NEXT:    ret void
define void @partial_byte(i64 %i, i32 %v) {
  %p = getelementptr inbounds i32, ptr @g, i64 %i
  store i32 %v, ptr %p, align 4
  ret void
}
