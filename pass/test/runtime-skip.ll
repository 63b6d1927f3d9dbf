; The pass leaves alone: functions of the runtime (__mw_*; the runtime is
; compiled without the pass anyway), naked functions, functions that ask for no
; instrumentation, and stores it emitted itself (tagged !nosanitize), so running
; it twice changes nothing more.
; RUN: %opt -passes=midway-instrument -S %s | FileCheck %s
; RUN: %opt -passes=midway-instrument,midway-instrument -S %s | FileCheck %s

target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
target triple = "x86_64-unknown-linux-gnu"

; CHECK-LABEL: define void @__mw_runtime_helper(
; CHECK-NEXT:    store i32 1, ptr %p
; CHECK-NEXT:    ret void
define void @__mw_runtime_helper(ptr %p) {
  store i32 1, ptr %p
  ret void
}

; A function the unit defines is the program's, whatever its name: only the
; API's functions, declared here and defined in the library, are the runtime's.
; CHECK-LABEL: define void @mw_fill_row(
; CHECK-NEXT:    store i32 1, ptr %p
; CHECK-NEXT:    ptrtoint ptr %p
define void @mw_fill_row(ptr %p) {
  store i32 1, ptr %p
  ret void
}

; CHECK-LABEL: define void @naked(
; CHECK-NEXT:    store i32 1, ptr %p
; CHECK-NEXT:    ret void
define void @naked(ptr %p) naked {
  store i32 1, ptr %p
  ret void
}

; CHECK-LABEL: define void @no_instrumentation(
; CHECK-NEXT:    store i32 1, ptr %p
; CHECK-NEXT:    ret void
define void @no_instrumentation(ptr %p) disable_sanitizer_instrumentation {
  store i32 1, ptr %p
  ret void
}

; Exactly one window check and one mark, however often the pass runs.
; CHECK-LABEL: define void @user(
; CHECK-NEXT:    store i32 1, ptr %p
; CHECK-NEXT:    ptrtoint ptr %p
; CHECK-NEXT:    sub
; CHECK-NEXT:    icmp ult
; CHECK-NEXT:    br i1
; CHECK-NOT:     icmp ult
; CHECK:         [[BITS:%.*]] = shl i8 15, {{%.*}}
; CHECK:         [[X:%.*]] = lshr i64 {{%.*}}, 3
; CHECK-NEXT:    [[A:%.*]] = add i64 [[X]], 17592186044416
; CHECK-NEXT:    [[S:%.*]] = inttoptr i64 [[A]] to ptr
; CHECK-NEXT:    [[OLD:%.*]] = load i8, ptr [[S]], align 1, !nosanitize
; CHECK-NEXT:    [[NEW:%.*]] = or i8 [[OLD]], [[BITS]]
; CHECK-NEXT:    [[C1:%.*]] = icmp ne i8 [[NEW]], [[OLD]]
; CHECK-NEXT:    br i1 [[C1]], label %[[C1S:.*]], label
; CHECK:  [[C1S]]:
; CHECK-NEXT:    store i8 [[NEW]], ptr [[S]], align 1, !nosanitize
; CHECK-NOT:     icmp ult
; CHECK:         ret void
define void @user(ptr %p) {
  store i32 1, ptr %p
  ret void
}

; CHECK: attributes #{{[0-9]+}} = { "midway-instrumented" }
