; The window ends above 1 TiB and its dirty map lies above 16 TiB: a target with
; 32-bit pointers cannot have them, and the pass says so instead of emitting
; truncated addresses.
; RUN: not %opt -passes=midway-instrument -S %s -o /dev/null 2>&1 | FileCheck %s

target datalayout = "e-m:e-p:32:32-i64:64-n8:16:32-S128"
target triple = "i386-unknown-linux-gnu"

; CHECK: error: midway: shared memory needs 64-bit pointers; 'i386-unknown-linux-gnu' has 32-bit pointers
define void @store(ptr %p) {
  store i32 0, ptr %p
  ret void
}
