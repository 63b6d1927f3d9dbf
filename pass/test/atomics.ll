; Atomic writes are marked after they complete: atomic store and atomicrmw
; always, cmpxchg only when it succeeded (a failed cmpxchg writes nothing, and a
; mark would claim another rank's bytes). libatomic calls, which clang emits for
; atomics wider than the lock-free width, are marked the same way.
; RUN: %opt -passes=midway-instrument -S %s | FileCheck %s
; RUN: %opt -passes=midway-instrument -midway-instrument-atomics=false -S %s \
; RUN:   | FileCheck %s --check-prefix=NOATOMICS

target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
target triple = "x86_64-unknown-linux-gnu"

@counter = global i64 0, section "mw_shared", align 8

; CHECK-LABEL: define void @atomic_store(
; CHECK:         store atomic i32 %v, ptr %p seq_cst, align 4
; CHECK-NEXT:    ptrtoint ptr %p to i64
; CHECK:         icmp ult
; CHECK:         [[B:%.*]] = and i64 {{%.*}}, 7
; CHECK-NEXT:    [[BT:%.*]] = trunc i64 [[B]] to i8
; CHECK-NEXT:    [[M:%.*]] = shl i8 15, [[BT]]
; CHECK-NEXT:    ptrtoint ptr %p to i64
; CHECK-NEXT:    [[X:%.*]] = lshr i64 {{%.*}}, 3
; CHECK-NEXT:    [[A:%.*]] = add i64 [[X]], 17592186044416
; CHECK-NEXT:    [[S:%.*]] = inttoptr i64 [[A]] to ptr
; CHECK-NEXT:    [[O:%.*]] = load i8, ptr [[S]], align 1, !nosanitize
; CHECK-NEXT:    [[N:%.*]] = or i8 [[O]], [[M]]
; CHECK-NEXT:    [[C1:%.*]] = icmp ne i8 [[N]], [[O]]
; CHECK-NEXT:    br i1 [[C1]], label %[[C1S:.*]], label
; CHECK:  [[C1S]]:
; CHECK-NEXT:    store i8 [[N]], ptr [[S]], align 1, !nosanitize
; NOATOMICS-LABEL:   define void @atomic_store(
; NOATOMICS-NEXT:      store atomic i32 %v, ptr %p seq_cst, align 4
; NOATOMICS-NEXT:      ret void
define void @atomic_store(ptr %p, i32 %v) {
  store atomic i32 %v, ptr %p seq_cst, align 4
  ret void
}

; CHECK-LABEL: define i64 @rmw(
; CHECK:         %old = atomicrmw add ptr %p, i64 1 monotonic, align 8
; CHECK-NEXT:    ptrtoint ptr %p to i64
; CHECK:         [[I:%.*]] = ptrtoint ptr %p to i64
; CHECK-NEXT:    [[X:%.*]] = lshr i64 [[I]], 3
; CHECK-NEXT:    [[A:%.*]] = add i64 [[X]], 17592186044416
; CHECK-NEXT:    [[S:%.*]] = inttoptr i64 [[A]] to ptr
; CHECK-NEXT:    [[C2O:%.*]] = load i8, ptr [[S]], align 1, !nosanitize
; CHECK-NEXT:    [[C2:%.*]] = icmp ne i8 -1, [[C2O]]
; CHECK-NEXT:    br i1 [[C2]], label %[[C2S:.*]], label
; CHECK:  [[C2S]]:
; CHECK-NEXT:    store i8 -1, ptr [[S]], align 1, !nosanitize
; NOATOMICS-LABEL:   define i64 @rmw(
; NOATOMICS-NEXT:      atomicrmw
; NOATOMICS-NEXT:      ret i64
define i64 @rmw(ptr %p) {
  %old = atomicrmw add ptr %p, i64 1 monotonic, align 8
  ret i64 %old
}

; On an MW_SHARED global the mark needs no window check: the 8-aligned i64 is
; one whole shadow byte.
; CHECK-LABEL: define i64 @rmw_shared(
; CHECK:         %old = atomicrmw xchg ptr @counter, i64 7 seq_cst, align 8
; CHECK-NEXT:    [[X:%.*]] = lshr i64 ptrtoint (ptr @counter to i64), 3
; CHECK-NEXT:    [[A:%.*]] = add i64 [[X]], 17592186044416
; CHECK-NEXT:    [[S:%.*]] = inttoptr i64 [[A]] to ptr
; CHECK-NEXT:    [[C3O:%.*]] = load i8, ptr [[S]], align 1, !nosanitize
; CHECK-NEXT:    [[C3:%.*]] = icmp ne i8 -1, [[C3O]]
; CHECK-NEXT:    br i1 [[C3]], label %[[C3S:.*]], label
; CHECK:  [[C3S]]:
; CHECK-NEXT:    store i8 -1, ptr [[S]], align 1, !nosanitize
; CHECK:    ret i64 %old
define i64 @rmw_shared() {
  %old = atomicrmw xchg ptr @counter, i64 7 seq_cst, align 8
  ret i64 %old
}

; cmpxchg through an unknown pointer: success and the window check in one branch.
; CHECK-LABEL: define i1 @cas(
; CHECK:         %res = cmpxchg ptr %p, i32 %old, i32 %new seq_cst seq_cst, align 4
; CHECK-NEXT:    [[OK:%.*]] = extractvalue { i32, i1 } %res, 1
; CHECK-NEXT:    [[INT:%.*]] = ptrtoint ptr %p to i64
; CHECK-NEXT:    [[OFF:%.*]] = sub i64 [[INT]], 1073741824
; CHECK-NEXT:    [[IN:%.*]] = icmp ult i64 [[OFF]], 1099511627776
; CHECK-NEXT:    [[BOTH:%.*]] = and i1 [[OK]], [[IN]]
; CHECK-NEXT:    br i1 [[BOTH]], label %[[MARK:.*]], label
; CHECK:       [[MARK]]:
; CHECK-NEXT:    [[I:%.*]] = ptrtoint ptr %p to i64
; CHECK-NEXT:    [[B:%.*]] = and i64 [[I]], 7
; CHECK-NEXT:    [[BT:%.*]] = trunc i64 [[B]] to i8
; CHECK-NEXT:    [[M:%.*]] = shl i8 15, [[BT]]
; CHECK-NEXT:    [[J:%.*]] = ptrtoint ptr %p to i64
; CHECK-NEXT:    [[X:%.*]] = lshr i64 [[J]], 3
; CHECK-NEXT:    [[A:%.*]] = add i64 [[X]], 17592186044416
; CHECK-NEXT:    [[S:%.*]] = inttoptr i64 [[A]] to ptr
; CHECK-NEXT:    [[O:%.*]] = load i8, ptr [[S]], align 1, !nosanitize
; CHECK-NEXT:    [[N:%.*]] = or i8 [[O]], [[M]]
; CHECK-NEXT:    [[C4:%.*]] = icmp ne i8 [[N]], [[O]]
; CHECK-NEXT:    br i1 [[C4]], label %[[C4S:.*]], label
; CHECK:  [[C4S]]:
; CHECK-NEXT:    store i8 [[N]], ptr [[S]], align 1, !nosanitize
define i1 @cas(ptr %p, i32 %old, i32 %new) {
  %res = cmpxchg ptr %p, i32 %old, i32 %new seq_cst seq_cst, align 4
  %ok = extractvalue { i32, i1 } %res, 1
  ret i1 %ok
}

; cmpxchg on an MW_SHARED global: the branch tests success only.
; CHECK-LABEL: define i1 @cas_shared(
; CHECK:         %res = cmpxchg ptr @counter, i64 0, i64 1 acquire monotonic, align 8
; CHECK-NEXT:    [[OK:%.*]] = extractvalue { i64, i1 } %res, 1
; CHECK-NEXT:    br i1 [[OK]], label %[[MARK:.*]], label
; CHECK:       [[MARK]]:
; CHECK-NEXT:    [[X:%.*]] = lshr i64 ptrtoint (ptr @counter to i64), 3
; CHECK-NEXT:    [[A:%.*]] = add i64 [[X]], 17592186044416
; CHECK-NEXT:    [[S:%.*]] = inttoptr i64 [[A]] to ptr
; CHECK-NEXT:    [[C5O:%.*]] = load i8, ptr [[S]], align 1, !nosanitize
; CHECK-NEXT:    [[C5:%.*]] = icmp ne i8 -1, [[C5O]]
; CHECK-NEXT:    br i1 [[C5]], label %[[C5S:.*]], label
; CHECK:  [[C5S]]:
; CHECK-NEXT:    store i8 -1, ptr [[S]], align 1, !nosanitize
define i1 @cas_shared() {
  %res = cmpxchg ptr @counter, i64 0, i64 1 acquire monotonic, align 8
  %ok = extractvalue { i64, i1 } %res, 1
  ret i1 %ok
}

; Generic libatomic: __atomic_store(size, ptr, val, order) marks size bytes;
; __atomic_compare_exchange only when it returns true; loads mark nothing. The
; object's alignment is not known: 32 bits shifted by p & 7 are ORed as an i64,
; the 16 bits of __atomic_fetch_add_16 as an i32.
; CHECK-LABEL: define void @libatomic(
; CHECK:         call void @__atomic_store(i64 32, ptr %p, ptr %tmp, i32 5)
; CHECK-NEXT:    ptrtoint ptr %p
; CHECK:         [[B:%.*]] = and i64 {{%.*}}, 7
; CHECK-NEXT:    [[M:%.*]] = shl i64 4294967295, [[B]]
; CHECK-NEXT:    ptrtoint ptr %p to i64
; CHECK-NEXT:    [[X:%.*]] = lshr i64 {{%.*}}, 3
; CHECK-NEXT:    [[A:%.*]] = add i64 [[X]], 17592186044416
; CHECK-NEXT:    [[S:%.*]] = inttoptr i64 [[A]] to ptr
; CHECK-NEXT:    [[O:%.*]] = load i64, ptr [[S]], align 1, !nosanitize
; CHECK-NEXT:    [[N:%.*]] = or i64 [[O]], [[M]]
; CHECK-NEXT:    [[C6:%.*]] = icmp ne i64 [[N]], [[O]]
; CHECK-NEXT:    br i1 [[C6]], label %[[C6S:.*]], label
; CHECK:  [[C6S]]:
; CHECK-NEXT:    store i64 [[N]], ptr [[S]], align 1, !nosanitize
; CHECK:         %ok = call zeroext i1 @__atomic_compare_exchange(i64 %n, ptr %p, ptr %tmp, ptr %tmp, i32 5, i32 5)
; CHECK-NEXT:    br i1 %ok, label %[[THEN:.*]], label
; CHECK:       [[THEN]]:
; CHECK-NEXT:    ptrtoint ptr %p to i64
; CHECK-NEXT:    sub i64
; CHECK-NEXT:    icmp ult i64
; CHECK-NEXT:    br i1
; CHECK:         call void @__mw_mark_range(ptr %p, i64 %n), !nosanitize
; CHECK:         %old = call i128 @__atomic_fetch_add_16(ptr %p, i128 1, i32 5)
; CHECK-NEXT:    ptrtoint ptr %p
; CHECK:         [[B16:%.*]] = and i64 {{%.*}}, 7
; CHECK-NEXT:    [[B16T:%.*]] = trunc i64 [[B16]] to i32
; CHECK-NEXT:    [[M16:%.*]] = shl i32 65535, [[B16T]]
; CHECK-NEXT:    ptrtoint ptr %p to i64
; CHECK-NEXT:    [[X16:%.*]] = lshr i64 {{%.*}}, 3
; CHECK-NEXT:    [[A16:%.*]] = add i64 [[X16]], 17592186044416
; CHECK-NEXT:    [[S16:%.*]] = inttoptr i64 [[A16]] to ptr
; CHECK-NEXT:    [[O16:%.*]] = load i32, ptr [[S16]], align 1, !nosanitize
; CHECK-NEXT:    [[N16:%.*]] = or i32 [[O16]], [[M16]]
; CHECK-NEXT:    [[C7:%.*]] = icmp ne i32 [[N16]], [[O16]]
; CHECK-NEXT:    br i1 [[C7]], label %[[C7S:.*]], label
; CHECK:  [[C7S]]:
; CHECK-NEXT:    store i32 [[N16]], ptr [[S16]], align 1, !nosanitize
; CHECK:         call void @__atomic_load(i64 32, ptr %p, ptr %tmp, i32 5)
; CHECK-NEXT:    ret void
; NOATOMICS-LABEL:   define void @libatomic(
; NOATOMICS-NOT:       __mw_mark_range
; NOATOMICS-NOT:       !nosanitize
; NOATOMICS:           ret void
define void @libatomic(ptr %p, i64 %n) {
  %tmp = alloca [32 x i8], align 16
  call void @__atomic_store(i64 32, ptr %p, ptr %tmp, i32 5)
  %ok = call zeroext i1 @__atomic_compare_exchange(i64 %n, ptr %p, ptr %tmp, ptr %tmp, i32 5, i32 5)
  %old = call i128 @__atomic_fetch_add_16(ptr %p, i128 1, i32 5)
  call void @__atomic_load(i64 32, ptr %p, ptr %tmp, i32 5)
  ret void
}

declare void @__atomic_store(i64, ptr, ptr, i32)
declare void @__atomic_load(i64, ptr, ptr, i32)
declare zeroext i1 @__atomic_compare_exchange(i64, ptr, ptr, ptr, i32, i32)
declare i128 @__atomic_fetch_add_16(ptr, i128, i32)
