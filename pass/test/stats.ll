; -stats prints what the pass decided, in LLVM's statistics format, although
; Debian's release libLLVM compiles STATISTIC out (its own exit-time printer then
; only adds "Statistics are disabled").
; RUN: %opt -passes=midway-instrument -midway-polls=false -stats -disable-output %s 2>&1 | FileCheck %s
; RUN: %opt -passes=midway-instrument -disable-output %s 2>&1 \
; RUN:   | FileCheck %s --check-prefix=NOSTATS

target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
target triple = "x86_64-unknown-linux-gnu"

@S = global i32 0, section "mw_shared", align 4

; CHECK:      ... Statistics Collected ...
; CHECK:      1 midway-instrument - Number of writes marked by a loop range instead
; CHECK-NEXT: 1 midway-instrument - Number of marks made unconditionally (MW_SHARED)
; CHECK-NEXT: 2 midway-instrument - Number of writes instrumented with their own mark
; CHECK-NEXT: 1 midway-instrument - Number of library calls whose writes are marked
; CHECK-NEXT: 1 midway-instrument - Number of loop ranges marked
; CHECK-NEXT: 1 midway-instrument - Number of writes omitted: memory is private
; CHECK-NEXT: 3 midway-instrument - Number of marks guarded by a window check
; CHECK-NEXT: 1 midway-instrument - Number of shared globals placed in the NOBITS section (zero-initialized)
; CHECK-NEXT: 1 midway-instrument - Number of writes reported as not marked

; NOSTATS-NOT: Statistics

define void @everything(ptr %p, i64 %n, double %x) {
entry:
  %local = alloca i32
  store i32 1, ptr %local               ; omitted: private
  store i32 2, ptr @S                   ; instrumented, direct
  store i32 3, ptr %p                   ; instrumented, range-checked
  call ptr @memcpy(ptr %p, ptr %local, i64 %n) ; lib call, range-checked
  %m = call double @frexp(double %x, ptr %p)   ; warning
  br label %loop
loop:                                   ; one loop range, range-checked
  %i = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  %addr = getelementptr inbounds i32, ptr %p, i64 %i
  store i32 0, ptr %addr                ; coalesced
  %i.next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i.next, %n
  br i1 %done, label %exit, label %loop
exit:
  ret void
}

declare ptr @memcpy(ptr, ptr, i64)
declare double @frexp(double, ptr)
