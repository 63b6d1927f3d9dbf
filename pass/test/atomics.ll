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
; CHECK:         store i32 16843009, ptr {{%.*}}, align 4, !nosanitize
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
; CHECK:         store i64 72340172838076673, ptr {{%.*}}, align 8, !nosanitize
; NOATOMICS-LABEL:   define i64 @rmw(
; NOATOMICS-NEXT:      atomicrmw
; NOATOMICS-NEXT:      ret i64
define i64 @rmw(ptr %p) {
  %old = atomicrmw add ptr %p, i64 1 monotonic, align 8
  ret i64 %old
}

; On an MW_SHARED global the mark needs no window check.
; CHECK-LABEL: define i64 @rmw_shared(
; CHECK:         %old = atomicrmw xchg ptr @counter, i64 7 seq_cst, align 8
; CHECK-NEXT:    store i64 72340172838076673, ptr inttoptr (i64 add (i64 ptrtoint (ptr @counter to i64), i64 17592186044416) to ptr), align 8, !nosanitize
; CHECK-NEXT:    ret i64 %old
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
; CHECK:         store i32 16843009, ptr {{%.*}}, align 4, !nosanitize
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
; CHECK-NEXT:    store i64 72340172838076673, ptr inttoptr {{.*}}, align 8, !nosanitize
define i1 @cas_shared() {
  %res = cmpxchg ptr @counter, i64 0, i64 1 acquire monotonic, align 8
  %ok = extractvalue { i64, i1 } %res, 1
  ret i1 %ok
}

; Generic libatomic: __atomic_store(size, ptr, val, order) marks size bytes;
; __atomic_compare_exchange only when it returns true; loads mark nothing.
; CHECK-LABEL: define void @libatomic(
; CHECK:         call void @__atomic_store(i64 32, ptr %p, ptr %tmp, i32 5)
; CHECK-NEXT:    ptrtoint ptr %p
; CHECK:         call void @llvm.memset.p0.i64(ptr align 1 {{%.*}}, i8 1, i64 32, i1 false), !nosanitize
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
; CHECK:         store i128 1334440654591915542993625911497130241, ptr {{%.*}}, align 1, !nosanitize
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
