; The dirty mark of each (size, alignment) class, in one place. Every byte p has
; one dirty bit: bit (p & 7) of the shadow byte at (p >> 3) + 16 TiB
; (17592186044416). A write of Size bytes at an address known to be Align-aligned
; is marked as follows (midway.h's contract):
;   * Align >= 8 and Size a multiple of 8: whole shadow bytes, a plain store of
;     0xFF: one integer store for 1, 2, 4, 8 or 16 shadow bytes (aligned
;     Align / 8), a memset of the shadow beyond;
;   * otherwise, if Size bits shifted by p & 7 (at most 8 - Align, or 0 when
;     Align >= 8) fit 128 bits: a non-atomic load, or, store of the narrowest
;     integer that holds them, Size ones shifted left by p & 7;
;   * otherwise (a constant size over 120 bytes, not 8-aligned) the first and last
;     shadow bytes ORed and two overlapping memsets between them.
; The writes below go to an MW_SHARED global at a run-time offset: no window
; check, and p & 7 is not a constant.
; RUN: %opt -passes=midway-instrument -S %s | FileCheck %s

target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
target triple = "x86_64-unknown-linux-gnu"

@g = global [4096 x i8] zeroinitializer, section "mw_shared", align 64

; 1 byte, align 1: 1 bit, shifted by up to 7: an i8.
; CHECK-LABEL: define void @byte(
; CHECK-NEXT:    %p = getelementptr inbounds i8, ptr @g, i64 %i
; CHECK-NEXT:    store i8 %x, ptr %p, align 1
; CHECK-NEXT:    [[I:%.*]] = ptrtoint ptr %p to i64
; CHECK-NEXT:    [[BIT:%.*]] = and i64 [[I]], 7
; CHECK-NEXT:    [[SHIFT:%.*]] = trunc i64 [[BIT]] to i8
; CHECK-NEXT:    [[BITS:%.*]] = shl i8 1, [[SHIFT]]
; CHECK-NEXT:    [[I2:%.*]] = ptrtoint ptr %p to i64
; CHECK-NEXT:    [[IDX:%.*]] = lshr i64 [[I2]], 3
; CHECK-NEXT:    [[SH:%.*]] = add i64 [[IDX]], 17592186044416
; CHECK-NEXT:    [[SHP:%.*]] = inttoptr i64 [[SH]] to ptr
; CHECK-NEXT:    [[OLD:%.*]] = load i8, ptr [[SHP]], align 1, !nosanitize
; CHECK-NEXT:    [[NEW:%.*]] = or i8 [[OLD]], [[BITS]]
; CHECK-NEXT:    [[C1:%.*]] = icmp ne i8 [[NEW]], [[OLD]]
; CHECK-NEXT:    br i1 [[C1]], label %[[C1S:.*]], label
; CHECK:  [[C1S]]:
; CHECK-NEXT:    store i8 [[NEW]], ptr [[SHP]], align 1, !nosanitize
; CHECK:    ret void
define void @byte(i64 %i, i8 %x) {
  %p = getelementptr inbounds i8, ptr @g, i64 %i
  store i8 %x, ptr %p, align 1
  ret void
}

; 2 bytes, align 2: 2 bits shifted by 0, 2, 4 or 6: an i8.
; CHECK-LABEL: define void @half(
; CHECK-NEXT:    %p = getelementptr inbounds i8, ptr @g, i64 %i
; CHECK-NEXT:    store i16 %x, ptr %p, align 2
; CHECK-NEXT:    [[I:%.*]] = ptrtoint ptr %p to i64
; CHECK-NEXT:    [[BIT:%.*]] = and i64 [[I]], 7
; CHECK-NEXT:    [[SHIFT:%.*]] = trunc i64 [[BIT]] to i8
; CHECK-NEXT:    [[BITS:%.*]] = shl i8 3, [[SHIFT]]
; CHECK-NEXT:    [[I2:%.*]] = ptrtoint ptr %p to i64
; CHECK-NEXT:    [[IDX:%.*]] = lshr i64 [[I2]], 3
; CHECK-NEXT:    [[SH:%.*]] = add i64 [[IDX]], 17592186044416
; CHECK-NEXT:    [[SHP:%.*]] = inttoptr i64 [[SH]] to ptr
; CHECK-NEXT:    [[OLD:%.*]] = load i8, ptr [[SHP]], align 1, !nosanitize
; CHECK-NEXT:    [[NEW:%.*]] = or i8 [[OLD]], [[BITS]]
; CHECK-NEXT:    [[C2:%.*]] = icmp ne i8 [[NEW]], [[OLD]]
; CHECK-NEXT:    br i1 [[C2]], label %[[C2S:.*]], label
; CHECK:  [[C2S]]:
; CHECK-NEXT:    store i8 [[NEW]], ptr [[SHP]], align 1, !nosanitize
; CHECK:    ret void
define void @half(i64 %i, i16 %x) {
  %p = getelementptr inbounds i8, ptr @g, i64 %i
  store i16 %x, ptr %p, align 2
  ret void
}

; 4 bytes, align 4: 4 bits shifted by 0 or 4: an i8.
; CHECK-LABEL: define void @word(
; CHECK-NEXT:    %p = getelementptr inbounds i8, ptr @g, i64 %i
; CHECK-NEXT:    store i32 %x, ptr %p, align 4
; CHECK-NEXT:    [[I:%.*]] = ptrtoint ptr %p to i64
; CHECK-NEXT:    [[BIT:%.*]] = and i64 [[I]], 7
; CHECK-NEXT:    [[SHIFT:%.*]] = trunc i64 [[BIT]] to i8
; CHECK-NEXT:    [[BITS:%.*]] = shl i8 15, [[SHIFT]]
; CHECK-NEXT:    [[I2:%.*]] = ptrtoint ptr %p to i64
; CHECK-NEXT:    [[IDX:%.*]] = lshr i64 [[I2]], 3
; CHECK-NEXT:    [[SH:%.*]] = add i64 [[IDX]], 17592186044416
; CHECK-NEXT:    [[SHP:%.*]] = inttoptr i64 [[SH]] to ptr
; CHECK-NEXT:    [[OLD:%.*]] = load i8, ptr [[SHP]], align 1, !nosanitize
; CHECK-NEXT:    [[NEW:%.*]] = or i8 [[OLD]], [[BITS]]
; CHECK-NEXT:    [[C3:%.*]] = icmp ne i8 [[NEW]], [[OLD]]
; CHECK-NEXT:    br i1 [[C3]], label %[[C3S:.*]], label
; CHECK:  [[C3S]]:
; CHECK-NEXT:    store i8 [[NEW]], ptr [[SHP]], align 1, !nosanitize
; CHECK:    ret void
define void @word(i64 %i, i32 %x) {
  %p = getelementptr inbounds i8, ptr @g, i64 %i
  store i32 %x, ptr %p, align 4
  ret void
}

; 8 bytes, align 8: one whole shadow byte.
; CHECK-LABEL: define void @dword(
; CHECK-NEXT:    %p = getelementptr inbounds i8, ptr @g, i64 %i
; CHECK-NEXT:    store i64 %x, ptr %p, align 8
; CHECK-NEXT:    [[I:%.*]] = ptrtoint ptr %p to i64
; CHECK-NEXT:    [[IDX:%.*]] = lshr i64 [[I]], 3
; CHECK-NEXT:    [[SH:%.*]] = add i64 [[IDX]], 17592186044416
; CHECK-NEXT:    [[SHP:%.*]] = inttoptr i64 [[SH]] to ptr
; CHECK-NEXT:    [[C4O:%.*]] = load i8, ptr [[SHP]], align 1, !nosanitize
; CHECK-NEXT:    [[C4:%.*]] = icmp ne i8 -1, [[C4O]]
; CHECK-NEXT:    br i1 [[C4]], label %[[C4S:.*]], label
; CHECK:  [[C4S]]:
; CHECK-NEXT:    store i8 -1, ptr [[SHP]], align 1, !nosanitize
; CHECK:    ret void
define void @dword(i64 %i, i64 %x) {
  %p = getelementptr inbounds i8, ptr @g, i64 %i
  store i64 %x, ptr %p, align 8
  ret void
}

; 4 bytes, align 1: 4 bits shifted by up to 7 may reach the next shadow byte: an
; i16.
; CHECK-LABEL: define void @word_align1(
; CHECK-NEXT:    %p = getelementptr inbounds i8, ptr @g, i64 %i
; CHECK-NEXT:    store i32 %x, ptr %p, align 1
; CHECK-NEXT:    [[I:%.*]] = ptrtoint ptr %p to i64
; CHECK-NEXT:    [[BIT:%.*]] = and i64 [[I]], 7
; CHECK-NEXT:    [[SHIFT:%.*]] = trunc i64 [[BIT]] to i16
; CHECK-NEXT:    [[BITS:%.*]] = shl i16 15, [[SHIFT]]
; CHECK-NEXT:    [[I2:%.*]] = ptrtoint ptr %p to i64
; CHECK-NEXT:    [[IDX:%.*]] = lshr i64 [[I2]], 3
; CHECK-NEXT:    [[SH:%.*]] = add i64 [[IDX]], 17592186044416
; CHECK-NEXT:    [[SHP:%.*]] = inttoptr i64 [[SH]] to ptr
; CHECK-NEXT:    [[OLD:%.*]] = load i16, ptr [[SHP]], align 1, !nosanitize
; CHECK-NEXT:    [[NEW:%.*]] = or i16 [[OLD]], [[BITS]]
; CHECK-NEXT:    [[C5:%.*]] = icmp ne i16 [[NEW]], [[OLD]]
; CHECK-NEXT:    br i1 [[C5]], label %[[C5S:.*]], label
; CHECK:  [[C5S]]:
; CHECK-NEXT:    store i16 [[NEW]], ptr [[SHP]], align 1, !nosanitize
; CHECK:    ret void
define void @word_align1(i64 %i, i32 %x) {
  %p = getelementptr inbounds i8, ptr @g, i64 %i
  store i32 %x, ptr %p, align 1
  ret void
}

; 12 bytes, align 4: 12 bits shifted by 0 or 4: an i16.
; CHECK-LABEL: define void @twelve_align4(
; CHECK-NEXT:    %p = getelementptr inbounds i8, ptr @g, i64 %i
; CHECK-NEXT:    store <3 x float> %x, ptr %p, align 4
; CHECK-NEXT:    [[I:%.*]] = ptrtoint ptr %p to i64
; CHECK-NEXT:    [[BIT:%.*]] = and i64 [[I]], 7
; CHECK-NEXT:    [[SHIFT:%.*]] = trunc i64 [[BIT]] to i16
; CHECK-NEXT:    [[BITS:%.*]] = shl i16 4095, [[SHIFT]]
; CHECK-NEXT:    [[I2:%.*]] = ptrtoint ptr %p to i64
; CHECK-NEXT:    [[IDX:%.*]] = lshr i64 [[I2]], 3
; CHECK-NEXT:    [[SH:%.*]] = add i64 [[IDX]], 17592186044416
; CHECK-NEXT:    [[SHP:%.*]] = inttoptr i64 [[SH]] to ptr
; CHECK-NEXT:    [[OLD:%.*]] = load i16, ptr [[SHP]], align 1, !nosanitize
; CHECK-NEXT:    [[NEW:%.*]] = or i16 [[OLD]], [[BITS]]
; CHECK-NEXT:    [[C6:%.*]] = icmp ne i16 [[NEW]], [[OLD]]
; CHECK-NEXT:    br i1 [[C6]], label %[[C6S:.*]], label
; CHECK:  [[C6S]]:
; CHECK-NEXT:    store i16 [[NEW]], ptr [[SHP]], align 1, !nosanitize
; CHECK:    ret void
define void @twelve_align4(i64 %i, <3 x float> %x) {
  %p = getelementptr inbounds i8, ptr @g, i64 %i
  store <3 x float> %x, ptr %p, align 4
  ret void
}

; 16 bytes, align 16: two whole shadow bytes, 2-aligned.
; CHECK-LABEL: define void @sixteen_align16(
; CHECK-NEXT:    %p = getelementptr inbounds i8, ptr @g, i64 %i
; CHECK-NEXT:    store <4 x float> %x, ptr %p, align 16
; CHECK-NEXT:    [[I:%.*]] = ptrtoint ptr %p to i64
; CHECK-NEXT:    [[IDX:%.*]] = lshr i64 [[I]], 3
; CHECK-NEXT:    [[SH:%.*]] = add i64 [[IDX]], 17592186044416
; CHECK-NEXT:    [[SHP:%.*]] = inttoptr i64 [[SH]] to ptr
; CHECK-NEXT:    [[C7O:%.*]] = load i16, ptr [[SHP]], align 2, !nosanitize
; CHECK-NEXT:    [[C7:%.*]] = icmp ne i16 -1, [[C7O]]
; CHECK-NEXT:    br i1 [[C7]], label %[[C7S:.*]], label
; CHECK:  [[C7S]]:
; CHECK-NEXT:    store i16 -1, ptr [[SHP]], align 2, !nosanitize
; CHECK:    ret void
define void @sixteen_align16(i64 %i, <4 x float> %x) {
  %p = getelementptr inbounds i8, ptr @g, i64 %i
  store <4 x float> %x, ptr %p, align 16
  ret void
}

; 16 bytes, align 4: 16 bits shifted by 0 or 4 need 20: an i32.
; CHECK-LABEL: define void @sixteen_align4(
; CHECK-NEXT:    %p = getelementptr inbounds i8, ptr @g, i64 %i
; CHECK-NEXT:    store <4 x float> %x, ptr %p, align 4
; CHECK-NEXT:    [[I:%.*]] = ptrtoint ptr %p to i64
; CHECK-NEXT:    [[BIT:%.*]] = and i64 [[I]], 7
; CHECK-NEXT:    [[SHIFT:%.*]] = trunc i64 [[BIT]] to i32
; CHECK-NEXT:    [[BITS:%.*]] = shl i32 65535, [[SHIFT]]
; CHECK-NEXT:    [[I2:%.*]] = ptrtoint ptr %p to i64
; CHECK-NEXT:    [[IDX:%.*]] = lshr i64 [[I2]], 3
; CHECK-NEXT:    [[SH:%.*]] = add i64 [[IDX]], 17592186044416
; CHECK-NEXT:    [[SHP:%.*]] = inttoptr i64 [[SH]] to ptr
; CHECK-NEXT:    [[OLD:%.*]] = load i32, ptr [[SHP]], align 1, !nosanitize
; CHECK-NEXT:    [[NEW:%.*]] = or i32 [[OLD]], [[BITS]]
; CHECK-NEXT:    [[C8:%.*]] = icmp ne i32 [[NEW]], [[OLD]]
; CHECK-NEXT:    br i1 [[C8]], label %[[C8S:.*]], label
; CHECK:  [[C8S]]:
; CHECK-NEXT:    store i32 [[NEW]], ptr [[SHP]], align 1, !nosanitize
; CHECK:    ret void
define void @sixteen_align4(i64 %i, <4 x float> %x) {
  %p = getelementptr inbounds i8, ptr @g, i64 %i
  store <4 x float> %x, ptr %p, align 4
  ret void
}

; 64 bytes, align 64: eight whole shadow bytes, one i64 store, 8-aligned.
; CHECK-LABEL: define void @sixtyfour_align64(
; CHECK-NEXT:    %p = getelementptr inbounds i8, ptr @g, i64 %i
; CHECK-NEXT:    store <16 x float> %x, ptr %p, align 64
; CHECK-NEXT:    [[I:%.*]] = ptrtoint ptr %p to i64
; CHECK-NEXT:    [[IDX:%.*]] = lshr i64 [[I]], 3
; CHECK-NEXT:    [[SH:%.*]] = add i64 [[IDX]], 17592186044416
; CHECK-NEXT:    [[SHP:%.*]] = inttoptr i64 [[SH]] to ptr
; CHECK-NEXT:    [[C9O:%.*]] = load i64, ptr [[SHP]], align 8, !nosanitize
; CHECK-NEXT:    [[C9:%.*]] = icmp ne i64 -1, [[C9O]]
; CHECK-NEXT:    br i1 [[C9]], label %[[C9S:.*]], label
; CHECK:  [[C9S]]:
; CHECK-NEXT:    store i64 -1, ptr [[SHP]], align 8, !nosanitize
; CHECK:    ret void
define void @sixtyfour_align64(i64 %i, <16 x float> %x) {
  %p = getelementptr inbounds i8, ptr @g, i64 %i
  store <16 x float> %x, ptr %p, align 64
  ret void
}

; 24 bytes, align 8: three whole shadow bytes, not a power of two: a memset.
; CHECK-LABEL: define void @memset24_align8(
; CHECK-NEXT:    %p = getelementptr inbounds i8, ptr @g, i64 %i
; CHECK-NEXT:    call void @llvm.memset.p0.i64(ptr align 8 %p, i8 %x, i64 24, i1 false)
; CHECK-NEXT:    [[I:%.*]] = ptrtoint ptr %p to i64
; CHECK-NEXT:    [[IDX:%.*]] = lshr i64 [[I]], 3
; CHECK-NEXT:    [[SH:%.*]] = add i64 [[IDX]], 17592186044416
; CHECK-NEXT:    [[SHP:%.*]] = inttoptr i64 [[SH]] to ptr
; CHECK-NEXT:    call void @llvm.memset.p0.i64(ptr align 1 [[SHP]], i8 -1, i64 3, i1 false), !nosanitize
; CHECK-NEXT:    ret void
define void @memset24_align8(i64 %i, i8 %x) {
  %p = getelementptr inbounds i8, ptr @g, i64 %i
  call void @llvm.memset.p0.i64(ptr align 8 %p, i8 %x, i64 24, i1 false)
  ret void
}

; 128 bytes, align 8: sixteen whole shadow bytes, one i128 store.
; CHECK-LABEL: define void @memset128_align8(
; CHECK-NEXT:    %p = getelementptr inbounds i8, ptr @g, i64 %i
; CHECK-NEXT:    call void @llvm.memset.p0.i64(ptr align 8 %p, i8 %x, i64 128, i1 false)
; CHECK-NEXT:    [[I:%.*]] = ptrtoint ptr %p to i64
; CHECK-NEXT:    [[IDX:%.*]] = lshr i64 [[I]], 3
; CHECK-NEXT:    [[SH:%.*]] = add i64 [[IDX]], 17592186044416
; CHECK-NEXT:    [[SHP:%.*]] = inttoptr i64 [[SH]] to ptr
; CHECK-NEXT:    [[C10O:%.*]] = load i128, ptr [[SHP]], align 1, !nosanitize
; CHECK-NEXT:    [[C10:%.*]] = icmp ne i128 -1, [[C10O]]
; CHECK-NEXT:    br i1 [[C10]], label %[[C10S:.*]], label
; CHECK:  [[C10S]]:
; CHECK-NEXT:    store i128 -1, ptr [[SHP]], align 1, !nosanitize
; CHECK:    ret void
define void @memset128_align8(i64 %i, i8 %x) {
  %p = getelementptr inbounds i8, ptr @g, i64 %i
  call void @llvm.memset.p0.i64(ptr align 8 %p, i8 %x, i64 128, i1 false)
  ret void
}

; 136 bytes, align 8: seventeen whole shadow bytes, a memset.
; CHECK-LABEL: define void @memset136_align8(
; CHECK-NEXT:    %p = getelementptr inbounds i8, ptr @g, i64 %i
; CHECK-NEXT:    call void @llvm.memset.p0.i64(ptr align 8 %p, i8 %x, i64 136, i1 false)
; CHECK-NEXT:    [[I:%.*]] = ptrtoint ptr %p to i64
; CHECK-NEXT:    [[IDX:%.*]] = lshr i64 [[I]], 3
; CHECK-NEXT:    [[SH:%.*]] = add i64 [[IDX]], 17592186044416
; CHECK-NEXT:    [[SHP:%.*]] = inttoptr i64 [[SH]] to ptr
; CHECK-NEXT:    call void @llvm.memset.p0.i64(ptr align 1 [[SHP]], i8 -1, i64 17, i1 false), !nosanitize
; CHECK-NEXT:    ret void
define void @memset136_align8(i64 %i, i8 %x) {
  %p = getelementptr inbounds i8, ptr @g, i64 %i
  call void @llvm.memset.p0.i64(ptr align 8 %p, i8 %x, i64 136, i1 false)
  ret void
}

; 100 bytes, align 8: not a multiple of 8, but no shift: 2^100 - 1 ORed as an
; i128.
; CHECK-LABEL: define void @memset100_align8(
; CHECK-NEXT:    %p = getelementptr inbounds i8, ptr @g, i64 %i
; CHECK-NEXT:    call void @llvm.memset.p0.i64(ptr align 8 %p, i8 %x, i64 100, i1 false)
; CHECK-NEXT:    [[I:%.*]] = ptrtoint ptr %p to i64
; CHECK-NEXT:    [[IDX:%.*]] = lshr i64 [[I]], 3
; CHECK-NEXT:    [[SH:%.*]] = add i64 [[IDX]], 17592186044416
; CHECK-NEXT:    [[SHP:%.*]] = inttoptr i64 [[SH]] to ptr
; CHECK-NEXT:    [[OLD:%.*]] = load i128, ptr [[SHP]], align 1, !nosanitize
; CHECK-NEXT:    [[NEW:%.*]] = or i128 [[OLD]], 1267650600228229401496703205375
; CHECK-NEXT:    [[C11:%.*]] = icmp ne i128 [[NEW]], [[OLD]]
; CHECK-NEXT:    br i1 [[C11]], label %[[C11S:.*]], label
; CHECK:  [[C11S]]:
; CHECK-NEXT:    store i128 [[NEW]], ptr [[SHP]], align 1, !nosanitize
; CHECK:    ret void
define void @memset100_align8(i64 %i, i8 %x) {
  %p = getelementptr inbounds i8, ptr @g, i64 %i
  call void @llvm.memset.p0.i64(ptr align 8 %p, i8 %x, i64 100, i1 false)
  ret void
}

; 100 bytes, align 1: 100 bits shifted by up to 7 fit 128: an i128, 2^100 - 1
; shifted.
; CHECK-LABEL: define void @memset100_align1(
; CHECK-NEXT:    %p = getelementptr inbounds i8, ptr @g, i64 %i
; CHECK-NEXT:    call void @llvm.memset.p0.i64(ptr align 1 %p, i8 %x, i64 100, i1 false)
; CHECK-NEXT:    [[I:%.*]] = ptrtoint ptr %p to i64
; CHECK-NEXT:    [[BIT:%.*]] = and i64 [[I]], 7
; CHECK-NEXT:    [[SHIFT:%.*]] = zext i64 [[BIT]] to i128
; CHECK-NEXT:    [[BITS:%.*]] = shl i128 1267650600228229401496703205375, [[SHIFT]]
; CHECK-NEXT:    [[I2:%.*]] = ptrtoint ptr %p to i64
; CHECK-NEXT:    [[IDX:%.*]] = lshr i64 [[I2]], 3
; CHECK-NEXT:    [[SH:%.*]] = add i64 [[IDX]], 17592186044416
; CHECK-NEXT:    [[SHP:%.*]] = inttoptr i64 [[SH]] to ptr
; CHECK-NEXT:    [[OLD:%.*]] = load i128, ptr [[SHP]], align 1, !nosanitize
; CHECK-NEXT:    [[NEW:%.*]] = or i128 [[OLD]], [[BITS]]
; CHECK-NEXT:    [[C12:%.*]] = icmp ne i128 [[NEW]], [[OLD]]
; CHECK-NEXT:    br i1 [[C12]], label %[[C12S:.*]], label
; CHECK:  [[C12S]]:
; CHECK-NEXT:    store i128 [[NEW]], ptr [[SHP]], align 1, !nosanitize
; CHECK:    ret void
define void @memset100_align1(i64 %i, i8 %x) {
  %p = getelementptr inbounds i8, ptr @g, i64 %i
  call void @llvm.memset.p0.i64(ptr align 1 %p, i8 %x, i64 100, i1 false)
  ret void
}

; 121 bytes, align 1: 121 + 7 = 128 bits, the widest inline OR.
; CHECK-LABEL: define void @memset121_align1(
; CHECK-NEXT:    %p = getelementptr inbounds i8, ptr @g, i64 %i
; CHECK-NEXT:    call void @llvm.memset.p0.i64(ptr align 1 %p, i8 %x, i64 121, i1 false)
; CHECK-NEXT:    [[I:%.*]] = ptrtoint ptr %p to i64
; CHECK-NEXT:    [[BIT:%.*]] = and i64 [[I]], 7
; CHECK-NEXT:    [[SHIFT:%.*]] = zext i64 [[BIT]] to i128
; CHECK-NEXT:    [[BITS:%.*]] = shl i128 2658455991569831745807614120560689151, [[SHIFT]]
; CHECK-NEXT:    [[I2:%.*]] = ptrtoint ptr %p to i64
; CHECK-NEXT:    [[IDX:%.*]] = lshr i64 [[I2]], 3
; CHECK-NEXT:    [[SH:%.*]] = add i64 [[IDX]], 17592186044416
; CHECK-NEXT:    [[SHP:%.*]] = inttoptr i64 [[SH]] to ptr
; CHECK-NEXT:    [[OLD:%.*]] = load i128, ptr [[SHP]], align 1, !nosanitize
; CHECK-NEXT:    [[NEW:%.*]] = or i128 [[OLD]], [[BITS]]
; CHECK-NEXT:    [[C13:%.*]] = icmp ne i128 [[NEW]], [[OLD]]
; CHECK-NEXT:    br i1 [[C13]], label %[[C13S:.*]], label
; CHECK:  [[C13S]]:
; CHECK-NEXT:    store i128 [[NEW]], ptr [[SHP]], align 1, !nosanitize
; CHECK:    ret void
define void @memset121_align1(i64 %i, i8 %x) {
  %p = getelementptr inbounds i8, ptr @g, i64 %i
  call void @llvm.memset.p0.i64(ptr align 1 %p, i8 %x, i64 121, i1 false)
  ret void
}

; 122 bytes, align 1: 122 + 7 > 128 bits, too wide for one OR: the first and last
; shadow bytes are ORed, and the 14 or 15 whole bytes between are covered exactly by
; two memsets of 14 (122/8 - 1), one from each end.
; CHECK-LABEL: define void @memset122_align1(
; CHECK-NEXT:    %p = getelementptr inbounds i8, ptr @g, i64 %i
; CHECK-NEXT:    call void @llvm.memset.p0.i64(ptr align 1 %p, i8 %x, i64 122, i1 false)
; CHECK-NEXT:    [[BEGIN:%.*]] = ptrtoint ptr %p to i64
; CHECK-NEXT:    [[END:%.*]] = add i64 [[BEGIN]], 122
; CHECK-NEXT:    [[B2:%.*]] = ptrtoint ptr %p to i64
; CHECK-NEXT:    [[BS:%.*]] = lshr i64 [[B2]], 3
; CHECK-NEXT:    [[FI:%.*]] = add i64 [[BS]], 17592186044416
; CHECK-NEXT:    [[FIRST:%.*]] = inttoptr i64 [[FI]] to ptr
; CHECK-NEXT:    [[EP:%.*]] = inttoptr i64 [[END]] to ptr
; CHECK-NEXT:    [[E2:%.*]] = ptrtoint ptr [[EP]] to i64
; CHECK-NEXT:    [[ES:%.*]] = lshr i64 [[E2]], 3
; CHECK-NEXT:    [[LA:%.*]] = add i64 [[ES]], 17592186044416
; CHECK-NEXT:    [[LAST:%.*]] = inttoptr i64 [[LA]] to ptr
; CHECK-NEXT:    [[LO:%.*]] = and i64 [[BEGIN]], 7
; CHECK-NEXT:    [[LO8:%.*]] = trunc i64 [[LO]] to i8
; CHECK-NEXT:    [[HEAD:%.*]] = shl i8 -1, [[LO8]]
; CHECK-NEXT:    [[OLD1:%.*]] = load i8, ptr [[FIRST]], align 1
; CHECK-NEXT:    [[NEW1:%.*]] = or i8 [[OLD1]], [[HEAD]]
; CHECK-NEXT:    store i8 [[NEW1]], ptr [[FIRST]], align 1, !nosanitize
; CHECK-NEXT:    [[MID:%.*]] = getelementptr i8, ptr [[FIRST]], i64 1
; CHECK-NEXT:    call void @llvm.memset.p0.i64(ptr align 1 [[MID]], i8 -1, i64 14, i1 false), !nosanitize
; CHECK-NEXT:    [[MID2:%.*]] = getelementptr i8, ptr [[LAST]], i64 -14
; CHECK-NEXT:    call void @llvm.memset.p0.i64(ptr align 1 [[MID2]], i8 -1, i64 14, i1 false), !nosanitize
; CHECK-NEXT:    [[HI:%.*]] = and i64 [[END]], 7
; CHECK-NEXT:    [[HI8:%.*]] = trunc i64 [[HI]] to i8
; CHECK-NEXT:    [[ONE:%.*]] = shl i8 1, [[HI8]]
; CHECK-NEXT:    [[TAIL:%.*]] = sub i8 [[ONE]], 1
; CHECK-NEXT:    [[OLD2:%.*]] = load i8, ptr [[LAST]], align 1
; CHECK-NEXT:    [[NEW2:%.*]] = or i8 [[OLD2]], [[TAIL]]
; CHECK-NEXT:    store i8 [[NEW2]], ptr [[LAST]], align 1, !nosanitize
; CHECK-NEXT:    ret void
define void @memset122_align1(i64 %i, i8 %x) {
  %p = getelementptr inbounds i8, ptr @g, i64 %i
  call void @llvm.memset.p0.i64(ptr align 1 %p, i8 %x, i64 122, i1 false)
  ret void
}

; 200 bytes, align 1: the same, with two memsets of 24 (200/8 - 1) bytes.
; CHECK-LABEL: define void @memset200_align1(
; CHECK-NEXT:    %p = getelementptr inbounds i8, ptr @g, i64 %i
; CHECK-NEXT:    call void @llvm.memset.p0.i64(ptr align 1 %p, i8 %x, i64 200, i1 false)
; CHECK-NEXT:    [[BEGIN:%.*]] = ptrtoint ptr %p to i64
; CHECK-NEXT:    [[END:%.*]] = add i64 [[BEGIN]], 200
; CHECK-NEXT:    [[B2:%.*]] = ptrtoint ptr %p to i64
; CHECK-NEXT:    [[BS:%.*]] = lshr i64 [[B2]], 3
; CHECK-NEXT:    [[FI:%.*]] = add i64 [[BS]], 17592186044416
; CHECK-NEXT:    [[FIRST:%.*]] = inttoptr i64 [[FI]] to ptr
; CHECK-NEXT:    [[EP:%.*]] = inttoptr i64 [[END]] to ptr
; CHECK-NEXT:    [[E2:%.*]] = ptrtoint ptr [[EP]] to i64
; CHECK-NEXT:    [[ES:%.*]] = lshr i64 [[E2]], 3
; CHECK-NEXT:    [[LA:%.*]] = add i64 [[ES]], 17592186044416
; CHECK-NEXT:    [[LAST:%.*]] = inttoptr i64 [[LA]] to ptr
; CHECK-NEXT:    [[LO:%.*]] = and i64 [[BEGIN]], 7
; CHECK-NEXT:    [[LO8:%.*]] = trunc i64 [[LO]] to i8
; CHECK-NEXT:    [[HEAD:%.*]] = shl i8 -1, [[LO8]]
; CHECK-NEXT:    [[OLD1:%.*]] = load i8, ptr [[FIRST]], align 1
; CHECK-NEXT:    [[NEW1:%.*]] = or i8 [[OLD1]], [[HEAD]]
; CHECK-NEXT:    store i8 [[NEW1]], ptr [[FIRST]], align 1, !nosanitize
; CHECK-NEXT:    [[MID:%.*]] = getelementptr i8, ptr [[FIRST]], i64 1
; CHECK-NEXT:    call void @llvm.memset.p0.i64(ptr align 1 [[MID]], i8 -1, i64 24, i1 false), !nosanitize
; CHECK-NEXT:    [[MID2:%.*]] = getelementptr i8, ptr [[LAST]], i64 -24
; CHECK-NEXT:    call void @llvm.memset.p0.i64(ptr align 1 [[MID2]], i8 -1, i64 24, i1 false), !nosanitize
; CHECK-NEXT:    [[HI:%.*]] = and i64 [[END]], 7
; CHECK-NEXT:    [[HI8:%.*]] = trunc i64 [[HI]] to i8
; CHECK-NEXT:    [[ONE:%.*]] = shl i8 1, [[HI8]]
; CHECK-NEXT:    [[TAIL:%.*]] = sub i8 [[ONE]], 1
; CHECK-NEXT:    [[OLD2:%.*]] = load i8, ptr [[LAST]], align 1
; CHECK-NEXT:    [[NEW2:%.*]] = or i8 [[OLD2]], [[TAIL]]
; CHECK-NEXT:    store i8 [[NEW2]], ptr [[LAST]], align 1, !nosanitize
; CHECK-NEXT:    ret void
define void @memset200_align1(i64 %i, i8 %x) {
  %p = getelementptr inbounds i8, ptr @g, i64 %i
  call void @llvm.memset.p0.i64(ptr align 1 %p, i8 %x, i64 200, i1 false)
  ret void
}

declare void @llvm.memset.p0.i64(ptr, i8, i64, i1)
