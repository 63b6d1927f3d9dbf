; Every kind of store through a pointer of unknown provenance gets a window check
; and a mark of exactly the bytes it writes, right after the store: their dirty
; bits, bit (p & 7) of the shadow byte at (p >> 3) + 16 TiB. Bytes filling whole
; shadow bytes (8-aligned, a multiple of 8 long) are a store of all-ones; others
; OR their bits, shifted by p & 7, into the narrowest integer the store's alignment
; says can hold them (a 4-aligned address has p & 7 = 0 or 4). Either is written
; only if it changes the shadow byte (conditional-marks.ll).
; Each function stores to one pointer several times, one size class after another;
; merging adjacent marks (merge-adjacent.ll) is off so that each keeps its own.
; RUN: %opt -passes=midway-instrument -midway-merge-adjacent=false -S %s | FileCheck %s

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
; CHECK-NEXT:    [[BIT:%.*]] = and i64 [[INT2]], 7
; CHECK-NEXT:    [[BIT8:%.*]] = trunc i64 [[BIT]] to i8
; CHECK-NEXT:    [[BITS:%.*]] = shl i8 15, [[BIT8]]
; CHECK-NEXT:    [[INT3:%.*]] = ptrtoint ptr %p to i64
; CHECK-NEXT:    [[IDX:%.*]] = lshr i64 [[INT3]], 3
; CHECK-NEXT:    [[SH:%.*]] = add i64 [[IDX]], 17592186044416
; CHECK-NEXT:    [[SHP:%.*]] = inttoptr i64 [[SH]] to ptr
; CHECK-NEXT:    [[OLD:%.*]] = load i8, ptr [[SHP]], align 1, !nosanitize
; CHECK-NEXT:    [[NEW:%.*]] = or i8 [[OLD]], [[BITS]]
; CHECK-NEXT:    [[C1:%.*]] = icmp ne i8 [[NEW]], [[OLD]]
; CHECK-NEXT:    br i1 [[C1]], label %[[C1S:.*]], label
; CHECK:  [[C1S]]:
; CHECK-NEXT:    store i8 [[NEW]], ptr [[SHP]], align 1, !nosanitize
; CHECK:    br label %[[CONT]]
; CHECK:       [[CONT]]:
; CHECK-NEXT:    ret void
define void @scalar(ptr %p, float %v) {
  store float %v, ptr %p, align 4
  ret void
}

; One byte and two naturally aligned bytes OR 1 and 3 into their shadow byte;
; eight 8-aligned bytes are the whole shadow byte, a plain store of 0xFF.
; CHECK-LABEL: define void @sizes(
; CHECK:         store i8 1, ptr %p, align 1
; CHECK:         [[B1:%.*]] = and i64 {{%.*}}, 7
; CHECK-NEXT:    [[B1T:%.*]] = trunc i64 [[B1]] to i8
; CHECK-NEXT:    [[M1:%.*]] = shl i8 1, [[B1T]]
; CHECK-NEXT:    ptrtoint ptr %p to i64
; CHECK-NEXT:    lshr i64 {{%.*}}, 3
; CHECK-NEXT:    add i64 {{%.*}}, 17592186044416
; CHECK-NEXT:    [[S1:%.*]] = inttoptr i64 {{%.*}} to ptr
; CHECK-NEXT:    [[O1:%.*]] = load i8, ptr [[S1]], align 1, !nosanitize
; CHECK-NEXT:    [[N1:%.*]] = or i8 [[O1]], [[M1]]
; CHECK-NEXT:    [[C2:%.*]] = icmp ne i8 [[N1]], [[O1]]
; CHECK-NEXT:    br i1 [[C2]], label %[[C2S:.*]], label
; CHECK:  [[C2S]]:
; CHECK-NEXT:    store i8 [[N1]], ptr [[S1]], align 1, !nosanitize
; CHECK:         store i16 2, ptr %p, align 2
; CHECK:         [[B2:%.*]] = and i64 {{%.*}}, 7
; CHECK-NEXT:    [[B2T:%.*]] = trunc i64 [[B2]] to i8
; CHECK-NEXT:    [[M2:%.*]] = shl i8 3, [[B2T]]
; CHECK-NEXT:    ptrtoint ptr %p to i64
; CHECK-NEXT:    lshr i64 {{%.*}}, 3
; CHECK-NEXT:    add i64 {{%.*}}, 17592186044416
; CHECK-NEXT:    [[S2:%.*]] = inttoptr i64 {{%.*}} to ptr
; CHECK-NEXT:    [[O2:%.*]] = load i8, ptr [[S2]], align 1, !nosanitize
; CHECK-NEXT:    [[N2:%.*]] = or i8 [[O2]], [[M2]]
; CHECK-NEXT:    [[C3:%.*]] = icmp ne i8 [[N2]], [[O2]]
; CHECK-NEXT:    br i1 [[C3]], label %[[C3S:.*]], label
; CHECK:  [[C3S]]:
; CHECK-NEXT:    store i8 [[N2]], ptr [[S2]], align 1, !nosanitize
; CHECK:         store ptr null, ptr %p, align 8
; CHECK:         br i1 %midway.in.window
; CHECK:         [[I3:%.*]] = ptrtoint ptr %p to i64
; CHECK-NEXT:    [[X3:%.*]] = lshr i64 [[I3]], 3
; CHECK-NEXT:    [[A3:%.*]] = add i64 [[X3]], 17592186044416
; CHECK-NEXT:    [[S3:%.*]] = inttoptr i64 [[A3]] to ptr
; CHECK-NEXT:    [[C4O:%.*]] = load i8, ptr [[S3]], align 1, !nosanitize
; CHECK-NEXT:    [[C4:%.*]] = icmp ne i8 -1, [[C4O]]
; CHECK-NEXT:    br i1 [[C4]], label %[[C4S:.*]], label
; CHECK:  [[C4S]]:
; CHECK-NEXT:    store i8 -1, ptr [[S3]], align 1, !nosanitize
; CHECK:    br label
; CHECK:         store double 1.0{{.*}}, ptr %p, align 8
; CHECK:         br i1 %midway.in.window
; CHECK:         [[I4:%.*]] = ptrtoint ptr %p to i64
; CHECK-NEXT:    [[X4:%.*]] = lshr i64 [[I4]], 3
; CHECK-NEXT:    [[A4:%.*]] = add i64 [[X4]], 17592186044416
; CHECK-NEXT:    [[S4:%.*]] = inttoptr i64 [[A4]] to ptr
; CHECK-NEXT:    [[C5O:%.*]] = load i8, ptr [[S4]], align 1, !nosanitize
; CHECK-NEXT:    [[C5:%.*]] = icmp ne i8 -1, [[C5O]]
; CHECK-NEXT:    br i1 [[C5]], label %[[C5S:.*]], label
; CHECK:  [[C5S]]:
; CHECK-NEXT:    store i8 -1, ptr [[S4]], align 1, !nosanitize
; CHECK:    br label
define void @sizes(ptr %p) {
  store i8 1, ptr %p, align 1
  store i16 2, ptr %p, align 2
  store ptr null, ptr %p, align 8
  store double 1.0, ptr %p, align 8
  ret void
}

; Vectors: 16 aligned bytes are two whole shadow bytes, one i16 store of all
; ones (with the alignment 16 / 8); 32 bytes four, one i32 store.
; CHECK-LABEL: define void @vector(
; CHECK:         store <4 x float> %v, ptr %p, align 16
; CHECK:         [[X1:%.*]] = lshr i64 {{%.*}}, 3
; CHECK-NEXT:    [[A1:%.*]] = add i64 [[X1]], 17592186044416
; CHECK-NEXT:    [[S1:%.*]] = inttoptr i64 [[A1]] to ptr
; CHECK-NEXT:    [[C6O:%.*]] = load i16, ptr [[S1]], align 2, !nosanitize
; CHECK-NEXT:    [[C6:%.*]] = icmp ne i16 -1, [[C6O]]
; CHECK-NEXT:    br i1 [[C6]], label %[[C6S:.*]], label
; CHECK:  [[C6S]]:
; CHECK-NEXT:    store i16 -1, ptr [[S1]], align 2, !nosanitize
; CHECK:         store <8 x float> %w, ptr %p, align 32
; CHECK:         [[X2:%.*]] = lshr i64 {{%.*}}, 3
; CHECK-NEXT:    [[A2:%.*]] = add i64 [[X2]], 17592186044416
; CHECK-NEXT:    [[S2:%.*]] = inttoptr i64 [[A2]] to ptr
; CHECK-NEXT:    [[C7O:%.*]] = load i32, ptr [[S2]], align 4, !nosanitize
; CHECK-NEXT:    [[C7:%.*]] = icmp ne i32 -1, [[C7O]]
; CHECK-NEXT:    br i1 [[C7]], label %[[C7S:.*]], label
; CHECK:  [[C7S]]:
; CHECK-NEXT:    store i32 -1, ptr [[S2]], align 4, !nosanitize
define void @vector(ptr %p, <4 x float> %v, <8 x float> %w) {
  store <4 x float> %v, ptr %p, align 16
  store <8 x float> %w, ptr %p, align 32
  ret void
}

; Unaligned and odd-sized stores: as many bits as the store writes bytes (an i24
; writes 3 bytes, an x86_fp80 10), shifted by p & 7 when the alignment leaves it
; unknown. At align 1 a shift of up to 7 may carry 4 or 3 bits into the next
; shadow byte: an i16 load/or/store. At align 16 there is no shift, but 10 bits
; still span two shadow bytes.
; CHECK-LABEL: define void @unaligned(
; CHECK:         store i32 %x, ptr %p, align 1
; CHECK:         [[B1:%.*]] = and i64 {{%.*}}, 7
; CHECK-NEXT:    [[B1T:%.*]] = trunc i64 [[B1]] to i16
; CHECK-NEXT:    [[M1:%.*]] = shl i16 15, [[B1T]]
; CHECK-NEXT:    ptrtoint ptr %p to i64
; CHECK-NEXT:    lshr i64 {{%.*}}, 3
; CHECK-NEXT:    add i64 {{%.*}}, 17592186044416
; CHECK-NEXT:    [[S1:%.*]] = inttoptr i64 {{%.*}} to ptr
; CHECK-NEXT:    [[O1:%.*]] = load i16, ptr [[S1]], align 1, !nosanitize
; CHECK-NEXT:    [[N1:%.*]] = or i16 [[O1]], [[M1]]
; CHECK-NEXT:    [[C8:%.*]] = icmp ne i16 [[N1]], [[O1]]
; CHECK-NEXT:    br i1 [[C8]], label %[[C8S:.*]], label
; CHECK:  [[C8S]]:
; CHECK-NEXT:    store i16 [[N1]], ptr [[S1]], align 1, !nosanitize
; CHECK:         store i24 %y, ptr %p, align 1
; CHECK:         [[B2:%.*]] = and i64 {{%.*}}, 7
; CHECK-NEXT:    [[B2T:%.*]] = trunc i64 [[B2]] to i16
; CHECK-NEXT:    [[M2:%.*]] = shl i16 7, [[B2T]]
; CHECK-NEXT:    ptrtoint ptr %p to i64
; CHECK-NEXT:    lshr i64 {{%.*}}, 3
; CHECK-NEXT:    add i64 {{%.*}}, 17592186044416
; CHECK-NEXT:    [[S2:%.*]] = inttoptr i64 {{%.*}} to ptr
; CHECK-NEXT:    [[O2:%.*]] = load i16, ptr [[S2]], align 1, !nosanitize
; CHECK-NEXT:    [[N2:%.*]] = or i16 [[O2]], [[M2]]
; CHECK-NEXT:    [[C9:%.*]] = icmp ne i16 [[N2]], [[O2]]
; CHECK-NEXT:    br i1 [[C9]], label %[[C9S:.*]], label
; CHECK:  [[C9S]]:
; CHECK-NEXT:    store i16 [[N2]], ptr [[S2]], align 1, !nosanitize
; CHECK:         store x86_fp80 %z, ptr %p, align 16
; CHECK:         br i1 %midway.in.window
; CHECK:         [[I3:%.*]] = ptrtoint ptr %p to i64
; CHECK-NEXT:    [[X3:%.*]] = lshr i64 [[I3]], 3
; CHECK-NEXT:    [[A3:%.*]] = add i64 [[X3]], 17592186044416
; CHECK-NEXT:    [[S3:%.*]] = inttoptr i64 [[A3]] to ptr
; CHECK-NEXT:    [[O3:%.*]] = load i16, ptr [[S3]], align 1, !nosanitize
; CHECK-NEXT:    [[N3:%.*]] = or i16 [[O3]], 1023
; CHECK-NEXT:    [[C10:%.*]] = icmp ne i16 [[N3]], [[O3]]
; CHECK-NEXT:    br i1 [[C10]], label %[[C10S:.*]], label
; CHECK:  [[C10S]]:
; CHECK-NEXT:    store i16 [[N3]], ptr [[S3]], align 1, !nosanitize
; CHECK:    br label
define void @unaligned(ptr %p, i32 %x, i24 %y, x86_fp80 %z) {
  store i32 %x, ptr %p, align 1
  store i24 %y, ptr %p, align 1
  store x86_fp80 %z, ptr %p, align 16
  ret void
}

; An aggregate store writes its fields, not the padding between them: {i8, i32}
; marks byte 0 (bit 1 << (p & 7)) and bytes 4..7 (bits 15 << ((p + 4) & 7)), under
; one window check; the field's shadow is that of its own address.
; CHECK-LABEL: define void @aggregate(
; CHECK:         store { i8, i32 } %s, ptr %p, align 4
; CHECK-NEXT:    ptrtoint
; CHECK-NEXT:    sub
; CHECK-NEXT:    icmp ult
; CHECK-NEXT:    br i1
; CHECK:         [[P0:%.*]] = ptrtoint ptr %p to i64
; CHECK-NEXT:    [[B0:%.*]] = and i64 [[P0]], 7
; CHECK-NEXT:    [[B0T:%.*]] = trunc i64 [[B0]] to i8
; CHECK-NEXT:    [[M0:%.*]] = shl i8 1, [[B0T]]
; CHECK-NEXT:    [[Q0:%.*]] = ptrtoint ptr %p to i64
; CHECK-NEXT:    [[X0:%.*]] = lshr i64 [[Q0]], 3
; CHECK-NEXT:    [[A0:%.*]] = add i64 [[X0]], 17592186044416
; CHECK-NEXT:    [[S0:%.*]] = inttoptr i64 [[A0]] to ptr
; CHECK-NEXT:    [[O0:%.*]] = load i8, ptr [[S0]], align 1, !nosanitize
; CHECK-NEXT:    [[N0:%.*]] = or i8 [[O0]], [[M0]]
; CHECK-NEXT:    [[C11:%.*]] = icmp ne i8 [[N0]], [[O0]]
; CHECK-NEXT:    br i1 [[C11]], label %[[C11S:.*]], label
; CHECK:  [[C11S]]:
; CHECK-NEXT:    store i8 [[N0]], ptr [[S0]], align 1, !nosanitize
; CHECK:    [[F1:%.*]] = getelementptr i8, ptr %p, i64 4
; CHECK-NEXT:    [[P1:%.*]] = ptrtoint ptr [[F1]] to i64
; CHECK-NEXT:    [[B1:%.*]] = and i64 [[P1]], 7
; CHECK-NEXT:    [[B1T:%.*]] = trunc i64 [[B1]] to i8
; CHECK-NEXT:    [[M1:%.*]] = shl i8 15, [[B1T]]
; CHECK-NEXT:    [[Q1:%.*]] = ptrtoint ptr [[F1]] to i64
; CHECK-NEXT:    [[X1:%.*]] = lshr i64 [[Q1]], 3
; CHECK-NEXT:    [[A1:%.*]] = add i64 [[X1]], 17592186044416
; CHECK-NEXT:    [[S1:%.*]] = inttoptr i64 [[A1]] to ptr
; CHECK-NEXT:    [[O1:%.*]] = load i8, ptr [[S1]], align 1, !nosanitize
; CHECK-NEXT:    [[N1:%.*]] = or i8 [[O1]], [[M1]]
; CHECK-NEXT:    [[C12:%.*]] = icmp ne i8 [[N1]], [[O1]]
; CHECK-NEXT:    br i1 [[C12]], label %[[C12S:.*]], label
; CHECK:  [[C12S]]:
; CHECK-NEXT:    store i8 [[N1]], ptr [[S1]], align 1, !nosanitize
; CHECK:    br label
; An array of padded structs: [2 x {i32, i8}] marks 0..4 and 8..12: five bits
; each, which at align 4 (a shift of 0 or 4) may span two shadow bytes.
; CHECK:         store [2 x { i32, i8 }] %a, ptr %p, align 4
; CHECK:         [[B2:%.*]] = and i64 {{%.*}}, 7
; CHECK-NEXT:    [[B2T:%.*]] = trunc i64 [[B2]] to i16
; CHECK-NEXT:    [[M2:%.*]] = shl i16 31, [[B2T]]
; CHECK-NEXT:    [[Q2:%.*]] = ptrtoint ptr %p to i64
; CHECK-NEXT:    [[X2:%.*]] = lshr i64 [[Q2]], 3
; CHECK-NEXT:    [[A2:%.*]] = add i64 [[X2]], 17592186044416
; CHECK-NEXT:    [[S2:%.*]] = inttoptr i64 [[A2]] to ptr
; CHECK-NEXT:    [[O2:%.*]] = load i16, ptr [[S2]], align 1, !nosanitize
; CHECK-NEXT:    [[N2:%.*]] = or i16 [[O2]], [[M2]]
; CHECK-NEXT:    [[C13:%.*]] = icmp ne i16 [[N2]], [[O2]]
; CHECK-NEXT:    br i1 [[C13]], label %[[C13S:.*]], label
; CHECK:  [[C13S]]:
; CHECK-NEXT:    store i16 [[N2]], ptr [[S2]], align 1, !nosanitize
; CHECK:    [[E1:%.*]] = getelementptr i8, ptr %p, i64 8
; CHECK-NEXT:    [[P3:%.*]] = ptrtoint ptr [[E1]] to i64
; CHECK-NEXT:    [[B3:%.*]] = and i64 [[P3]], 7
; CHECK-NEXT:    [[B3T:%.*]] = trunc i64 [[B3]] to i16
; CHECK-NEXT:    [[M3:%.*]] = shl i16 31, [[B3T]]
; CHECK-NEXT:    [[Q3:%.*]] = ptrtoint ptr [[E1]] to i64
; CHECK-NEXT:    [[X3:%.*]] = lshr i64 [[Q3]], 3
; CHECK-NEXT:    [[A3:%.*]] = add i64 [[X3]], 17592186044416
; CHECK-NEXT:    [[S3:%.*]] = inttoptr i64 [[A3]] to ptr
; CHECK-NEXT:    [[O3:%.*]] = load i16, ptr [[S3]], align 1, !nosanitize
; CHECK-NEXT:    [[N3:%.*]] = or i16 [[O3]], [[M3]]
; CHECK-NEXT:    [[C14:%.*]] = icmp ne i16 [[N3]], [[O3]]
; CHECK-NEXT:    br i1 [[C14]], label %[[C14S:.*]], label
; CHECK:  [[C14S]]:
; CHECK-NEXT:    store i16 [[N3]], ptr [[S3]], align 1, !nosanitize
; CHECK:    br label
define void @aggregate(ptr %p, { i8, i32 } %s, [2 x { i32, i8 }] %a) {
  store { i8, i32 } %s, ptr %p, align 4
  store [2 x { i32, i8 }] %a, ptr %p, align 4
  ret void
}

; Volatile stores are marked like any other.
; CHECK-LABEL: define void @volatile(
; CHECK:         store volatile i32 0, ptr %p, align 4
; CHECK:         [[M:%.*]] = shl i8 15, {{%.*}}
; CHECK:         [[O:%.*]] = load i8, ptr [[S:%.*]], align 1, !nosanitize
; CHECK-NEXT:    [[N:%.*]] = or i8 [[O]], [[M]]
; CHECK-NEXT:    [[C15:%.*]] = icmp ne i8 [[N]], [[O]]
; CHECK-NEXT:    br i1 [[C15]], label %[[C15S:.*]], label
; CHECK:  [[C15S]]:
; CHECK-NEXT:    store i8 [[N]], ptr [[S]], align 1, !nosanitize
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
