; memset, memcpy, memmove, their .inline forms and their element-wise unordered
; atomic forms mark their destination range after they ran: inline when the
; length is a constant, through the runtime's __mw_mark_range (which checks the
; window itself) when it is not. An inline mark ORs one bit per byte, shifted by
; p & 7 unless the alignment makes that 0, through the narrowest integer that
; holds them, or stores 0xFF to whole shadow bytes.
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
; 100 bytes at align 8: no shift, but 100 bits (2^100 - 1) need an i128.
; CHECK:         [[K1X:%.*]] = lshr i64 {{%.*}}, 3
; CHECK-NEXT:    [[K1A:%.*]] = add i64 [[K1X]], 17592186044416
; CHECK-NEXT:    [[K1S:%.*]] = inttoptr i64 [[K1A]] to ptr
; CHECK-NEXT:    [[K1O:%.*]] = load i128, ptr [[K1S]], align 1, !nosanitize
; CHECK-NEXT:    [[K1N:%.*]] = or i128 [[K1O]], 1267650600228229401496703205375
; CHECK-NEXT:    [[C1:%.*]] = icmp ne i128 [[K1N]], [[K1O]]
; CHECK-NEXT:    br i1 [[C1]], label %[[C1S:.*]], label
; CHECK:  [[C1S]]:
; CHECK-NEXT:    store i128 [[K1N]], ptr [[K1S]], align 1, !nosanitize
; CHECK:         call void @llvm.memcpy.p0.p0.i64(ptr align 4 %p, ptr %q, i64 4, i1 false)
; CHECK-NEXT:    ptrtoint ptr %p to i64
; CHECK:         [[K2B:%.*]] = and i64 {{%.*}}, 7
; CHECK-NEXT:    [[K2BT:%.*]] = trunc i64 [[K2B]] to i8
; CHECK-NEXT:    [[K2M:%.*]] = shl i8 15, [[K2BT]]
; CHECK-NEXT:    ptrtoint ptr %p to i64
; CHECK-NEXT:    [[K2X:%.*]] = lshr i64 {{%.*}}, 3
; CHECK-NEXT:    [[K2A:%.*]] = add i64 [[K2X]], 17592186044416
; CHECK-NEXT:    [[K2S:%.*]] = inttoptr i64 [[K2A]] to ptr
; CHECK-NEXT:    [[K2O:%.*]] = load i8, ptr [[K2S]], align 1, !nosanitize
; CHECK-NEXT:    [[K2N:%.*]] = or i8 [[K2O]], [[K2M]]
; CHECK-NEXT:    [[C2:%.*]] = icmp ne i8 [[K2N]], [[K2O]]
; CHECK-NEXT:    br i1 [[C2]], label %[[C2S:.*]], label
; CHECK:  [[C2S]]:
; CHECK-NEXT:    store i8 [[K2N]], ptr [[K2S]], align 1, !nosanitize
; CHECK:         call void @llvm.memmove.p0.p0.i64(ptr %p, ptr %q, i64 24, i1 false)
; CHECK-NEXT:    ptrtoint ptr %p to i64
; CHECK:         [[K3B:%.*]] = and i64 {{%.*}}, 7
; CHECK-NEXT:    [[K3BT:%.*]] = trunc i64 [[K3B]] to i32
; CHECK-NEXT:    [[K3M:%.*]] = shl i32 16777215, [[K3BT]]
; CHECK-NEXT:    ptrtoint ptr %p to i64
; CHECK-NEXT:    [[K3X:%.*]] = lshr i64 {{%.*}}, 3
; CHECK-NEXT:    [[K3A:%.*]] = add i64 [[K3X]], 17592186044416
; CHECK-NEXT:    [[K3S:%.*]] = inttoptr i64 [[K3A]] to ptr
; CHECK-NEXT:    [[K3O:%.*]] = load i32, ptr [[K3S]], align 1, !nosanitize
; CHECK-NEXT:    [[K3N:%.*]] = or i32 [[K3O]], [[K3M]]
; CHECK-NEXT:    [[C3:%.*]] = icmp ne i32 [[K3N]], [[K3O]]
; CHECK-NEXT:    br i1 [[C3]], label %[[C3S:.*]], label
; CHECK:  [[C3S]]:
; CHECK-NEXT:    store i32 [[K3N]], ptr [[K3S]], align 1, !nosanitize
; CHECK:         call void @llvm.memcpy.inline.p0.p0.i64(ptr %p, ptr %q, i64 8, i1 false)
; CHECK-NEXT:    ptrtoint ptr %p to i64
; CHECK:         [[K4B:%.*]] = and i64 {{%.*}}, 7
; CHECK-NEXT:    [[K4BT:%.*]] = trunc i64 [[K4B]] to i16
; CHECK-NEXT:    [[K4M:%.*]] = shl i16 255, [[K4BT]]
; CHECK-NEXT:    ptrtoint ptr %p to i64
; CHECK-NEXT:    [[K4X:%.*]] = lshr i64 {{%.*}}, 3
; CHECK-NEXT:    [[K4A:%.*]] = add i64 [[K4X]], 17592186044416
; CHECK-NEXT:    [[K4S:%.*]] = inttoptr i64 [[K4A]] to ptr
; CHECK-NEXT:    [[K4O:%.*]] = load i16, ptr [[K4S]], align 1, !nosanitize
; CHECK-NEXT:    [[K4N:%.*]] = or i16 [[K4O]], [[K4M]]
; CHECK-NEXT:    [[C4:%.*]] = icmp ne i16 [[K4N]], [[K4O]]
; CHECK-NEXT:    br i1 [[C4]], label %[[C4S:.*]], label
; CHECK:  [[C4S]]:
; CHECK-NEXT:    store i16 [[K4N]], ptr [[K4S]], align 1, !nosanitize
; CHECK:         call void @llvm.memset.inline.p0.i64(ptr %p, i8 0, i64 2, i1 false)
; CHECK-NEXT:    ptrtoint ptr %p to i64
; CHECK:         [[K5B:%.*]] = and i64 {{%.*}}, 7
; CHECK-NEXT:    [[K5BT:%.*]] = trunc i64 [[K5B]] to i16
; CHECK-NEXT:    [[K5M:%.*]] = shl i16 3, [[K5BT]]
; CHECK-NEXT:    ptrtoint ptr %p to i64
; CHECK-NEXT:    [[K5X:%.*]] = lshr i64 {{%.*}}, 3
; CHECK-NEXT:    [[K5A:%.*]] = add i64 [[K5X]], 17592186044416
; CHECK-NEXT:    [[K5S:%.*]] = inttoptr i64 [[K5A]] to ptr
; CHECK-NEXT:    [[K5O:%.*]] = load i16, ptr [[K5S]], align 1, !nosanitize
; CHECK-NEXT:    [[K5N:%.*]] = or i16 [[K5O]], [[K5M]]
; CHECK-NEXT:    [[C5:%.*]] = icmp ne i16 [[K5N]], [[K5O]]
; CHECK-NEXT:    br i1 [[C5]], label %[[C5S:.*]], label
; CHECK:  [[C5S]]:
; CHECK-NEXT:    store i16 [[K5N]], ptr [[K5S]], align 1, !nosanitize
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

; Into an MW_SHARED global: no window check. 256 16-aligned bytes are 32 whole
; shadow bytes: a memset of 0xFF, 2-aligned.
; CHECK-LABEL: define void @shared(
; CHECK:         call void @llvm.memset.p0.i64(ptr align 16 @table, i8 0, i64 256, i1 false)
; CHECK-NEXT:    [[X:%.*]] = lshr i64 ptrtoint (ptr @table to i64), 3
; CHECK-NEXT:    [[A:%.*]] = add i64 [[X]], 17592186044416
; CHECK-NEXT:    [[S:%.*]] = inttoptr i64 [[A]] to ptr
; CHECK-NEXT:    call void @llvm.memset.p0.i64(ptr align 2 [[S]], i8 -1, i64 32, i1 false), !nosanitize
; CHECK-NEXT:    ret void
define void @shared() {
  call void @llvm.memset.p0.i64(ptr align 16 @table, i8 0, i64 256, i1 false)
  ret void
}

; Element-wise unordered-atomic forms mark their whole destination too.
; CHECK-LABEL: define void @element_atomic(
; CHECK:         call void @llvm.memcpy.element.unordered.atomic.p0.p0.i64(ptr align 4 %p, ptr align 4 %q, i64 64, i32 4)
; CHECK-NEXT:    ptrtoint ptr %p to i64
; CHECK:         [[E1B:%.*]] = and i64 {{%.*}}, 7
; CHECK-NEXT:    [[E1BT:%.*]] = zext i64 [[E1B]] to i128
; CHECK-NEXT:    [[E1M:%.*]] = shl i128 18446744073709551615, [[E1BT]]
; CHECK-NEXT:    ptrtoint ptr %p to i64
; CHECK-NEXT:    [[E1X:%.*]] = lshr i64 {{%.*}}, 3
; CHECK-NEXT:    [[E1A:%.*]] = add i64 [[E1X]], 17592186044416
; CHECK-NEXT:    [[E1S:%.*]] = inttoptr i64 [[E1A]] to ptr
; CHECK-NEXT:    [[E1O:%.*]] = load i128, ptr [[E1S]], align 1, !nosanitize
; CHECK-NEXT:    [[E1N:%.*]] = or i128 [[E1O]], [[E1M]]
; CHECK-NEXT:    [[C6:%.*]] = icmp ne i128 [[E1N]], [[E1O]]
; CHECK-NEXT:    br i1 [[C6]], label %[[C6S:.*]], label
; CHECK:  [[C6S]]:
; CHECK-NEXT:    store i128 [[E1N]], ptr [[E1S]], align 1, !nosanitize
; CHECK:         call void @llvm.memmove.element.unordered.atomic.p0.p0.i64(ptr align 8 %p, ptr align 8 %q, i64 %n, i32 8)
; CHECK-NEXT:    ptrtoint ptr %p to i64
; CHECK:         call void @__mw_mark_range(ptr %p, i64 %n), !nosanitize
; CHECK:         call void @llvm.memset.element.unordered.atomic.p0.i64(ptr align 4 %p, i8 0, i64 16, i32 4)
; CHECK-NEXT:    ptrtoint ptr %p to i64
; CHECK:         [[E3B:%.*]] = and i64 {{%.*}}, 7
; CHECK-NEXT:    [[E3BT:%.*]] = trunc i64 [[E3B]] to i32
; CHECK-NEXT:    [[E3M:%.*]] = shl i32 65535, [[E3BT]]
; CHECK-NEXT:    ptrtoint ptr %p to i64
; CHECK-NEXT:    [[E3X:%.*]] = lshr i64 {{%.*}}, 3
; CHECK-NEXT:    [[E3A:%.*]] = add i64 [[E3X]], 17592186044416
; CHECK-NEXT:    [[E3S:%.*]] = inttoptr i64 [[E3A]] to ptr
; CHECK-NEXT:    [[E3O:%.*]] = load i32, ptr [[E3S]], align 1, !nosanitize
; CHECK-NEXT:    [[E3N:%.*]] = or i32 [[E3O]], [[E3M]]
; CHECK-NEXT:    [[C7:%.*]] = icmp ne i32 [[E3N]], [[E3O]]
; CHECK-NEXT:    br i1 [[C7]], label %[[C7S:.*]], label
; CHECK:  [[C7S]]:
; CHECK-NEXT:    store i32 [[E3N]], ptr [[E3S]], align 1, !nosanitize
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
