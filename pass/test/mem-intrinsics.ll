; memset, memcpy, memmove, their .inline forms and their element-wise unordered
; atomic forms mark their destination range after they ran: inline when the
; length is a constant, through the runtime's __mw_mark_range (which checks the
; window itself) when it is not.
; RUN: %opt -passes=midway-instrument -S %s | FileCheck %s
; RUN: %opt -passes=midway-instrument -midway-instrument-memintrinsics=false -S %s \
; RUN:   | FileCheck %s --check-prefix=NOMEM

target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
target triple = "x86_64-unknown-linux-gnu"

@table = global [256 x i8] zeroinitializer, section "mw_shared", align 16

; CHECK-LABEL: define void @constant_lengths(
; CHECK:         call void @llvm.memset.p0.i64(ptr align 8 %p, i8 0, i64 100, i1 false)
; CHECK-NEXT:    ptrtoint ptr %p to i64
; CHECK:         icmp ult
; CHECK:         call void @llvm.memset.p0.i64(ptr align 8 {{%.*}}, i8 1, i64 100, i1 false), !nosanitize
; CHECK:         call void @llvm.memcpy.p0.p0.i64(ptr align 4 %p, ptr %q, i64 4, i1 false)
; CHECK-NEXT:    ptrtoint ptr %p to i64
; CHECK:         store i32 16843009, ptr {{%.*}}, align 4, !nosanitize
; CHECK:         call void @llvm.memmove.p0.p0.i64(ptr %p, ptr %q, i64 24, i1 false)
; CHECK-NEXT:    ptrtoint ptr %p to i64
; CHECK:         call void @llvm.memset.p0.i64(ptr align 1 {{%.*}}, i8 1, i64 24, i1 false), !nosanitize
; CHECK:         call void @llvm.memcpy.inline.p0.p0.i64(ptr %p, ptr %q, i64 8, i1 false)
; CHECK-NEXT:    ptrtoint ptr %p to i64
; CHECK:         store i64 72340172838076673, ptr {{%.*}}, align 1, !nosanitize
; CHECK:         call void @llvm.memset.inline.p0.i64(ptr %p, i8 0, i64 2, i1 false)
; CHECK-NEXT:    ptrtoint ptr %p to i64
; CHECK:         store i16 257, ptr {{%.*}}, align 1, !nosanitize
; CHECK:         call void @llvm.memset.p0.i64(ptr %p, i8 0, i64 0, i1 false)
; CHECK-NEXT:    ret void
; NOMEM-LABEL: define void @constant_lengths(
; NOMEM-NOT:     !nosanitize
; NOMEM:         ret void
define void @constant_lengths(ptr %p, ptr %q) {
  call void @llvm.memset.p0.i64(ptr align 8 %p, i8 0, i64 100, i1 false)
  call void @llvm.memcpy.p0.p0.i64(ptr align 4 %p, ptr %q, i64 4, i1 false)
  call void @llvm.memmove.p0.p0.i64(ptr %p, ptr %q, i64 24, i1 false)
  call void @llvm.memcpy.inline.p0.p0.i64(ptr %p, ptr %q, i64 8, i1 false)
  call void @llvm.memset.inline.p0.i64(ptr %p, i8 0, i64 2, i1 false)
  call void @llvm.memset.p0.i64(ptr %p, i8 0, i64 0, i1 false)
  ret void
}

; A run-time length goes to the runtime, behind the same window check (so that
; private memory pays no call); the runtime clips the range to the window.
; CHECK-LABEL: define void @variable_lengths(
; CHECK-NEXT:    call void @llvm.memcpy.p0.p0.i64(ptr %p, ptr %q, i64 %n, i1 false)
; CHECK-NEXT:    [[INT:%.*]] = ptrtoint ptr %p to i64
; CHECK-NEXT:    [[OFF:%.*]] = sub i64 [[INT]], 1073741824
; CHECK-NEXT:    [[IN:%.*]] = icmp ult i64 [[OFF]], 1099511627776
; CHECK-NEXT:    br i1 [[IN]], label %[[MARK:.*]], label %[[CONT:.*]]
; CHECK:       [[MARK]]:
; CHECK-NEXT:    call void @__mw_mark_range(ptr %p, i64 %n), !nosanitize
; CHECK-NEXT:    br label %[[CONT]]
; CHECK:       [[CONT]]:
; CHECK-NEXT:    call void @llvm.memset.p0.i32(ptr %p, i8 0, i32 %m, i1 true)
; CHECK:         [[LEN:%.*]] = zext i32 %m to i64
; CHECK-NEXT:    call void @__mw_mark_range(ptr %p, i64 [[LEN]]), !nosanitize
define void @variable_lengths(ptr %p, ptr %q, i64 %n, i32 %m) {
  call void @llvm.memcpy.p0.p0.i64(ptr %p, ptr %q, i64 %n, i1 false)
  call void @llvm.memset.p0.i32(ptr %p, i8 0, i32 %m, i1 true)
  ret void
}

; Into an MW_SHARED global: no window check.
; CHECK-LABEL: define void @shared(
; CHECK:         call void @llvm.memset.p0.i64(ptr align 16 @table, i8 0, i64 256, i1 false)
; CHECK-NEXT:    call void @llvm.memset.p0.i64(ptr align 16 inttoptr (i64 add (i64 ptrtoint (ptr @table to i64), i64 17592186044416) to ptr), i8 1, i64 256, i1 false), !nosanitize
; CHECK-NEXT:    ret void
define void @shared() {
  call void @llvm.memset.p0.i64(ptr align 16 @table, i8 0, i64 256, i1 false)
  ret void
}

; Element-wise unordered-atomic forms mark their whole destination too.
; CHECK-LABEL: define void @element_atomic(
; CHECK:         call void @llvm.memcpy.element.unordered.atomic.p0.p0.i64(ptr align 4 %p, ptr align 4 %q, i64 64, i32 4)
; CHECK-NEXT:    ptrtoint ptr %p to i64
; CHECK:         call void @llvm.memset.p0.i64(ptr align 4 {{%.*}}, i8 1, i64 64, i1 false), !nosanitize
; CHECK:         call void @llvm.memmove.element.unordered.atomic.p0.p0.i64(ptr align 8 %p, ptr align 8 %q, i64 %n, i32 8)
; CHECK-NEXT:    ptrtoint ptr %p to i64
; CHECK:         call void @__mw_mark_range(ptr %p, i64 %n), !nosanitize
; CHECK:         call void @llvm.memset.element.unordered.atomic.p0.i64(ptr align 4 %p, i8 0, i64 16, i32 4)
; CHECK-NEXT:    ptrtoint ptr %p to i64
; CHECK:         store i128 1334440654591915542993625911497130241, ptr {{%.*}}, align 4, !nosanitize
define void @element_atomic(ptr %p, ptr %q, i64 %n) {
  call void @llvm.memcpy.element.unordered.atomic.p0.p0.i64(ptr align 4 %p, ptr align 4 %q, i64 64, i32 4)
  call void @llvm.memmove.element.unordered.atomic.p0.p0.i64(ptr align 8 %p, ptr align 8 %q, i64 %n, i32 8)
  call void @llvm.memset.element.unordered.atomic.p0.i64(ptr align 4 %p, i8 0, i64 16, i32 4)
  ret void
}

declare void @llvm.memset.p0.i64(ptr, i8, i64, i1)
declare void @llvm.memset.p0.i32(ptr, i8, i32, i1)
declare void @llvm.memcpy.p0.p0.i64(ptr, ptr, i64, i1)
declare void @llvm.memmove.p0.p0.i64(ptr, ptr, i64, i1)
declare void @llvm.memcpy.inline.p0.p0.i64(ptr, ptr, i64, i1)
declare void @llvm.memset.inline.p0.i64(ptr, i8, i64, i1)
declare void @llvm.memcpy.element.unordered.atomic.p0.p0.i64(ptr, ptr, i64, i32)
declare void @llvm.memmove.element.unordered.atomic.p0.p0.i64(ptr, ptr, i64, i32)
declare void @llvm.memset.element.unordered.atomic.p0.i64(ptr, i8, i64, i32)
