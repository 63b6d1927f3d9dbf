; Every kind of store through a pointer of unknown provenance gets a window check
; and a mark of exactly the bytes it writes, right after the store. The mark uses
; the store's alignment (the shadow offset is a multiple of every alignment).
; RUN: %opt -passes=midway-instrument -S %s | FileCheck %s

target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
target triple = "x86_64-unknown-linux-gnu"

; CHECK-LABEL: define void @scalar(
; CHECK:         store float %v, ptr %p, align 4
; CHECK-NEXT:    [[INT:%.*]] = ptrtoint ptr %p to i64
; CHECK-NEXT:    [[OFF:%.*]] = sub i64 [[INT]], 1073741824
; CHECK-NEXT:    [[IN:%.*]] = icmp ult i64 [[OFF]], 1099511627776
; CHECK-NEXT:    br i1 [[IN]], label %[[MARK:.*]], label %[[CONT:.*]]
; CHECK:       [[MARK]]:
; CHECK-NEXT:    [[INT2:%.*]] = ptrtoint ptr %p to i64
; CHECK-NEXT:    [[SH:%.*]] = add i64 [[INT2]], 17592186044416
; CHECK-NEXT:    [[SHP:%.*]] = inttoptr i64 [[SH]] to ptr
; CHECK-NEXT:    store i32 16843009, ptr [[SHP]], align 4, !nosanitize
; CHECK-NEXT:    br label %[[CONT]]
; CHECK:       [[CONT]]:
; CHECK-NEXT:    ret void
define void @scalar(ptr %p, float %v) {
  store float %v, ptr %p, align 4
  ret void
}

; One byte, two bytes and eight bytes are one integer store each.
; CHECK-LABEL: define void @sizes(
; CHECK:         store i8 1, ptr %p, align 1
; CHECK:         store i8 1, ptr {{%.*}}, align 1, !nosanitize
; CHECK:         store i16 2, ptr %p, align 2
; CHECK:         store i16 257, ptr {{%.*}}, align 2, !nosanitize
; CHECK:         store ptr null, ptr %p, align 8
; CHECK:         store i64 72340172838076673, ptr {{%.*}}, align 8, !nosanitize
; CHECK:         store double 1.0{{.*}}, ptr %p, align 8
; CHECK:         store i64 72340172838076673, ptr {{%.*}}, align 8, !nosanitize
define void @sizes(ptr %p) {
  store i8 1, ptr %p, align 1
  store i16 2, ptr %p, align 2
  store ptr null, ptr %p, align 8
  store double 1.0, ptr %p, align 8
  ret void
}

; Vectors: 16 bytes are one i128 store; 32 bytes a memset of the shadow.
; CHECK-LABEL: define void @vector(
; CHECK:         store <4 x float> %v, ptr %p, align 16
; CHECK:         store i128 1334440654591915542993625911497130241, ptr {{%.*}}, align 16, !nosanitize
; CHECK:         store <8 x float> %w, ptr %p, align 32
; CHECK:         call void @llvm.memset.p0.i64(ptr align 32 {{%.*}}, i8 1, i64 32, i1 false), !nosanitize
define void @vector(ptr %p, <4 x float> %v, <8 x float> %w) {
  store <4 x float> %v, ptr %p, align 16
  store <8 x float> %w, ptr %p, align 32
  ret void
}

; Unaligned and odd-sized stores: the mark has the store's alignment and size
; (an i24 writes 3 bytes, an x86_fp80 10).
; CHECK-LABEL: define void @unaligned(
; CHECK:         store i32 %x, ptr %p, align 1
; CHECK:         store i32 16843009, ptr {{%.*}}, align 1, !nosanitize
; CHECK:         store i24 %y, ptr %p, align 1
; CHECK:         call void @llvm.memset.p0.i64(ptr align 1 {{%.*}}, i8 1, i64 3, i1 false), !nosanitize
; CHECK:         store x86_fp80 %z, ptr %p, align 16
; CHECK:         call void @llvm.memset.p0.i64(ptr align 16 {{%.*}}, i8 1, i64 10, i1 false), !nosanitize
define void @unaligned(ptr %p, i32 %x, i24 %y, x86_fp80 %z) {
  store i32 %x, ptr %p, align 1
  store i24 %y, ptr %p, align 1
  store x86_fp80 %z, ptr %p, align 16
  ret void
}

; An aggregate store writes its fields, not the padding between them: {i8, i32}
; marks byte 0 and bytes 4..7, under one window check.
; CHECK-LABEL: define void @aggregate(
; CHECK:         store { i8, i32 } %s, ptr %p, align 4
; CHECK-NEXT:    ptrtoint
; CHECK-NEXT:    sub
; CHECK-NEXT:    icmp ult
; CHECK-NEXT:    br i1
; CHECK:         [[SHP:%.*]] = inttoptr i64 {{%.*}} to ptr
; CHECK-NEXT:    store i8 1, ptr [[SHP]], align 4, !nosanitize
; CHECK-NEXT:    [[F1:%.*]] = getelementptr i8, ptr [[SHP]], i64 4
; CHECK-NEXT:    store i32 16843009, ptr [[F1]], align 4, !nosanitize
; CHECK-NEXT:    br label
; An array of padded structs: [2 x {i32, i8}] marks 0..4 and 8..12.
; CHECK:         store [2 x { i32, i8 }] %a, ptr %p, align 4
; CHECK:         [[SHA:%.*]] = inttoptr i64 {{%.*}} to ptr
; CHECK-NEXT:    call void @llvm.memset.p0.i64(ptr align 4 [[SHA]], i8 1, i64 5, i1 false), !nosanitize
; CHECK-NEXT:    [[E1:%.*]] = getelementptr i8, ptr [[SHA]], i64 8
; CHECK-NEXT:    call void @llvm.memset.p0.i64(ptr align 4 [[E1]], i8 1, i64 5, i1 false), !nosanitize
; CHECK-NEXT:    br label
define void @aggregate(ptr %p, { i8, i32 } %s, [2 x { i32, i8 }] %a) {
  store { i8, i32 } %s, ptr %p, align 4
  store [2 x { i32, i8 }] %a, ptr %p, align 4
  ret void
}

; Volatile stores are marked like any other.
; CHECK-LABEL: define void @volatile(
; CHECK:         store volatile i32 0, ptr %p, align 4
; CHECK:         store i32 16843009, ptr {{%.*}}, align 4, !nosanitize
define void @volatile(ptr %p) {
  store volatile i32 0, ptr %p, align 4
  ret void
}

; Segment-relative address spaces hold offsets, not window addresses.
; CHECK-LABEL: define void @segment(
; CHECK-NEXT:    store i32 0, ptr addrspace(256) %p, align 4
; CHECK-NEXT:    ret void
define void @segment(ptr addrspace(256) %p) {
  store i32 0, ptr addrspace(256) %p, align 4
  ret void
}
