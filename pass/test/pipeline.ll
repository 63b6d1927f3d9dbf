; The plugin adds the pass at the end of the optimizer pipeline (the
; OptimizerLast extension point), at -O0 as well as at -O1..-O3: after
; vectorization and the passes that delete, merge or widen stores, so that only
; the stores that remain are marked. -midway-instrument=false turns it off.
; RUN: %opt -passes='default<O0>' -midway-merge-adjacent=false -S %s | FileCheck %s --check-prefix=O0
; RUN: %opt -passes='default<O2>' -S %s | FileCheck %s --check-prefix=O2
; RUN: %opt -passes='default<O2>' -midway-instrument=false -S %s \
; RUN:   | FileCheck %s --check-prefix=OFF
; RUN: %opt -passes='default<O0>' -print-pipeline-passes -disable-output %s \
; RUN:   | FileCheck %s --check-prefix=PIPELINE-O0
; RUN: %opt -passes='default<O2>' -print-pipeline-passes -disable-output %s \
; RUN:   | FileCheck %s --check-prefix=PIPELINE-O2

target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
target triple = "x86_64-unknown-linux-gnu"

; At -O0 both stores are marked (one by one, with merging off: merged, the two
; marks of one address would be one).
; O0-LABEL: define void @dead_store(
; O0:         store i32 %a, ptr %p
; O0-NEXT:    ptrtoint ptr %p
; O0:         store i32 %b, ptr %p
; O0-NEXT:    ptrtoint ptr %p

; At -O2 the dead store is gone before the pass runs: one mark.
; O2-LABEL: define void @dead_store(
; O2-NEXT:    store i32 %b, ptr %p, align 4
; O2-NEXT:    ptrtoint ptr %p
; O2:         [[BITS:%.*]] = shl i8 15, {{%.*}}
; O2:         [[X:%.*]] = lshr i64 {{%.*}}, 3
; O2-NEXT:    [[A:%.*]] = add i64 [[X]], 17592186044416
; O2-NEXT:    [[S:%.*]] = inttoptr i64 [[A]] to ptr
; O2-NEXT:    [[OLD:%.*]] = load i8, ptr [[S]], align 1, !nosanitize
; O2-NEXT:    [[NEW:%.*]] = or i8 [[OLD]], [[BITS]]
; O2-NEXT:    [[C1:%.*]] = icmp ne i8 [[NEW]], [[OLD]]
; O2-NEXT:    br i1 [[C1]], label %[[C1S:.*]], label
; O2:  [[C1S]]:
; O2-NEXT:    store i8 [[NEW]], ptr [[S]], align 1, !nosanitize
; O2-NOT:     !nosanitize
; O2:         ret void

; OFF-LABEL: define void @dead_store(
; OFF-NOT:     !nosanitize
; OFF:         ret void

; PIPELINE-O0: always-inline,{{.*}},midway-instrument,function(annotation-remarks),verify
; PIPELINE-O2: loop-vectorize{{.*}},slp-vectorizer,{{.*}}),midway-instrument,globaldce,
define void @dead_store(ptr %p, i32 %a, i32 %b) {
  store i32 %a, ptr %p, align 4
  store i32 %b, ptr %p, align 4
  ret void
}
