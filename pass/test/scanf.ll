; scanf, fscanf and sscanf (and glibc's __isoc99_ and __isoc23_ entry points, which
; TLI does not know) write through their variadic arguments. With a constant format
; the pass reads what each assigning conversion stores and marks it after the call,
; only if the result counts it as assigned (result > K for the K-th): a conversion
; that failed left its object alone, and marking it would publish a stale copy.
; A mark of N bytes (N < 9) is inline: the shadow bits of (2^N - 1) shifted to the
; address. %s and %[ mark the string stored and its NUL. A format the pass cannot read (not
; a constant, %n, positional arguments) keeps the warning.
; RUN: %opt -passes=midway-instrument -S %s 2>&1 | FileCheck %s
; RUN: %opt -passes=midway-instrument -midway-instrument-lib-calls=false -S %s 2>&1 \
; RUN:   | FileCheck %s --check-prefix=NOLIB

target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
target triple = "x86_64-unknown-linux-gnu"

@buf = global [4096 x i8] zeroinitializer, section "mw_shared", align 16
@fmt.three = private constant [15 x i8] c"%d %lf %*s %hx\00"
@fmt.str = private constant [11 x i8] c"%15s %[^,]\00"
@fmt.c = private constant [8 x i8] c"%3c%%%p\00"
@fmt.n = private constant [5 x i8] c"%d%n\00"
@fmt.pos = private constant [4 x i8] c"%1$d"

; Warnings come first (they are printed while the pass runs).
; CHECK: warning: midway: in function 'unreadable': call to 'sscanf' may write shared memory through argument 3
; fscanf's C99 entry point is not in TLI: its arguments after the format are still the
; ones named (the FILE and the format are not written), and it is not recorded as a
; function mwcc is assumed to have built (mw_init would blame argument 1).
; CHECK: warning: midway: in function 'unreadable': call to 'fscanf' may write shared memory through argument 3
; CHECK: warning: midway: in function 'unreadable': call to 'sscanf' may write shared memory through argument 3
; CHECK: warning: midway: in function 'unreadable': call to 'sscanf' may write shared memory through argument 3
; CHECK-NOT: warning:
; CHECK-NOT: mw_calls{{.*}}__isoc99_fscanf

; CHECK-LABEL: define void @numbers(
; CHECK:         %r = call i32 (ptr, ptr, ...) @__isoc99_fscanf(ptr %f, ptr @fmt.three, ptr %a, ptr %b, ptr %c)
; CHECK-NEXT:    [[A:%.*]] = icmp sgt i32 %r, 0
; CHECK-NEXT:    br i1 [[A]]
; CHECK:         ptrtoint ptr %a to i64
; CHECK:         shl i16 15,
; CHECK:         [[B:%.*]] = icmp sgt i32 %r, 1
; CHECK-NEXT:    br i1 [[B]]
; CHECK:         ptrtoint ptr %b to i64
; CHECK:         shl i16 255,
; The suppressed %*s takes no argument: %hx is the third assignment, 2 bytes.
; CHECK:         [[C:%.*]] = icmp sgt i32 %r, 2
; CHECK-NEXT:    br i1 [[C]]
; CHECK:         ptrtoint ptr %c to i64
; CHECK:         shl i16 3,
; CHECK:         ret void
; NOLIB-LABEL: define void @numbers(
; NOLIB-NOT:     shl i16
; NOLIB:         ret void
define void @numbers(ptr %f, i64 %i) {
  %a = getelementptr inbounds [4096 x i8], ptr @buf, i64 0, i64 %i
  %b = getelementptr inbounds i8, ptr %a, i64 64
  %c = getelementptr inbounds i8, ptr %a, i64 128
  %r = call i32 (ptr, ptr, ...) @__isoc99_fscanf(ptr %f, ptr @fmt.three, ptr %a, ptr %b, ptr %c)
  ret void
}

; CHECK-LABEL: define void @strings(
; CHECK:         %r = call i32 (ptr, ...) @scanf(ptr @fmt.str, ptr %a, ptr %b)
; CHECK:         [[LA:%.*]] = call i64 @strlen(ptr %a)
; CHECK-NEXT:    [[NA:%.*]] = add i64 [[LA]], 1
; CHECK-NEXT:    call void @__mw_mark_range(ptr %a, i64 [[NA]])
; CHECK:         [[LB:%.*]] = call i64 @strlen(ptr %b)
; CHECK-NEXT:    [[NB:%.*]] = add i64 [[LB]], 1
; CHECK-NEXT:    call void @__mw_mark_range(ptr %b, i64 [[NB]])
; %3c stores three characters; %% is no conversion; %p stores a pointer.
; CHECK:         %s = call i32 (ptr, ptr, ...) @__isoc23_sscanf(ptr %in, ptr @fmt.c, ptr %a, ptr %b)
; CHECK:         icmp sgt i32 %s, 0
; CHECK:         ptrtoint ptr %a to i64
; CHECK:         shl i16 7,
; CHECK:         icmp sgt i32 %s, 1
; CHECK:         ptrtoint ptr %b to i64
; CHECK:         shl i16 255,
; CHECK:         ret void
define void @strings(ptr %in, i64 %i) {
  %a = getelementptr inbounds [4096 x i8], ptr @buf, i64 0, i64 %i
  %b = getelementptr inbounds i8, ptr %a, i64 64
  %r = call i32 (ptr, ...) @scanf(ptr @fmt.str, ptr %a, ptr %b)
  %s = call i32 (ptr, ptr, ...) @__isoc23_sscanf(ptr %in, ptr @fmt.c, ptr %a, ptr %b)
  ret void
}

; A destination of unknown provenance is marked only in the window; a private one
; is not marked at all.
; CHECK-LABEL: define void @provenance(
; CHECK:         %r = call i32 (ptr, ptr, ...) @sscanf(ptr %in, ptr @fmt.three, ptr %p, ptr %local, ptr %p)
; CHECK:         icmp sgt i32 %r, 0
; CHECK:         ptrtoint ptr %p to i64
; CHECK:         icmp ult i64
; CHECK:         shl i16 15,
; CHECK-NOT:     ptrtoint ptr %local
; CHECK:         icmp sgt i32 %r, 2
; CHECK:         shl i16 3,
; CHECK:         ret void
define void @provenance(ptr %in, ptr %p) {
  %local = alloca double
  %r = call i32 (ptr, ptr, ...) @sscanf(ptr %in, ptr @fmt.three, ptr %p, ptr %local, ptr %p)
  ret void
}

; CHECK-LABEL: define void @unreadable(
; CHECK-NOT:     {{shl|__mw_mark_range}}
; CHECK:         ret void
define void @unreadable(ptr %in, ptr %fmt, i64 %i) {
  %a = getelementptr inbounds [4096 x i8], ptr @buf, i64 0, i64 %i
  %r1 = call i32 (ptr, ptr, ...) @__isoc99_sscanf(ptr %in, ptr %fmt, ptr %a)
  %r0 = call i32 (ptr, ptr, ...) @__isoc99_fscanf(ptr %in, ptr %fmt, ptr %a)
  %r2 = call i32 (ptr, ptr, ...) @sscanf(ptr %in, ptr @fmt.n, ptr %a, ptr %a)
  %r3 = call i32 (ptr, ptr, ...) @sscanf(ptr %in, ptr @fmt.pos, ptr %a)
  ret void
}

declare i32 @__isoc99_fscanf(ptr, ptr, ...)
declare i32 @__isoc99_sscanf(ptr, ptr, ...)
declare i32 @__isoc23_sscanf(ptr, ptr, ...)
declare i32 @sscanf(ptr, ptr, ...)
declare i32 @scanf(ptr, ...)
