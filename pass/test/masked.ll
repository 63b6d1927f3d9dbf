; A masked store marks one dirty bit per byte of each lane it wrote: the mask
; selects lane-wide all-ones or zeros, read as one integer (bit i for byte p + i).
; If any bit is set, the bits are ORed into the shadow from the first byte
; written (cttz), never from p, whose lane may be masked off and lie outside the
; object or the window; at most 32 bits per OR, so that, shifted by that byte's
; address & 7, they fit the i64 of eight shadow bytes. A scatter marks each lane
; it wrote on its own, behind its mask bit. For pointers of unknown provenance
; every lane is also checked against the window.
; RUN: %opt -passes=midway-instrument -S %s 2>%t.err | FileCheck %s
; RUN: FileCheck %s --check-prefix=WARN < %t.err

target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
target triple = "x86_64-unknown-linux-gnu"

@grid = global [64 x float] zeroinitializer, section "mw_shared", align 32

; Lanes of 4 bytes at align 4: 32 bits; the first byte written is 4-aligned,
; so the shifted bits need 36 bits, an i64.
; CHECK-LABEL: define void @masked_store(
; CHECK:         call void @llvm.masked.store.v8f32.p0(<8 x float> %v, ptr %p, i32 4, <8 x i1> %m)
; CHECK-NEXT:    [[BASE:%.*]] = ptrtoint ptr %p to i64
; CHECK-NEXT:    [[INS:%.*]] = insertelement <8 x i64> poison, i64 [[BASE]], i64 0
; CHECK-NEXT:    [[SPLAT:%.*]] = shufflevector <8 x i64> [[INS]], <8 x i64> poison, <8 x i32> zeroinitializer
; CHECK-NEXT:    [[LANES:%.*]] = add <8 x i64> [[SPLAT]], <i64 0, i64 4, i64 8, i64 12, i64 16, i64 20, i64 24, i64 28>
; CHECK-NEXT:    [[OFF:%.*]] = sub <8 x i64> [[LANES]], <i64 1073741824,
; CHECK-NEXT:    [[IN:%.*]] = icmp ult <8 x i64> [[OFF]], <i64 1099511627776,
; CHECK-NEXT:    [[MASK:%.*]] = and <8 x i1> %m, [[IN]]
; CHECK-NEXT:    [[SEL:%.*]] = select <8 x i1> [[MASK]], <8 x i4> <i4 -1, i4 -1, i4 -1, i4 -1, i4 -1, i4 -1, i4 -1, i4 -1>, <8 x i4> zeroinitializer
; CHECK-NEXT:    [[BITS:%.*]] = bitcast <8 x i4> [[SEL]] to i32
; CHECK-NEXT:    [[ANY:%.*]] = icmp ne i32 [[BITS]], 0
; CHECK-NEXT:    br i1 [[ANY]], label %[[MARK:.*]], label %[[CONT:.*]]
; CHECK:       [[MARK]]:
; CHECK-NEXT:    [[FIRST:%.*]] = call i32 @llvm.cttz.i32(i32 [[BITS]], i1 true)
; CHECK-NEXT:    [[FIRST64:%.*]] = zext i32 [[FIRST]] to i64
; CHECK-NEXT:    [[START:%.*]] = getelementptr i8, ptr %p, i64 [[FIRST64]]
; CHECK-NEXT:    [[TRIM:%.*]] = lshr i32 [[BITS]], [[FIRST]]
; CHECK-NEXT:    [[WIDE:%.*]] = zext i32 [[TRIM]] to i64
; CHECK-NEXT:    [[SINT:%.*]] = ptrtoint ptr [[START]] to i64
; CHECK-NEXT:    [[BIT:%.*]] = and i64 [[SINT]], 7
; CHECK-NEXT:    [[SHIFTED:%.*]] = shl i64 [[WIDE]], [[BIT]]
; CHECK-NEXT:    [[SINT2:%.*]] = ptrtoint ptr [[START]] to i64
; CHECK-NEXT:    [[IDX:%.*]] = lshr i64 [[SINT2]], 3
; CHECK-NEXT:    [[SH:%.*]] = add i64 [[IDX]], 17592186044416
; CHECK-NEXT:    [[SHP:%.*]] = inttoptr i64 [[SH]] to ptr
; CHECK-NEXT:    [[OLD:%.*]] = load i64, ptr [[SHP]], align 1, !nosanitize
; CHECK-NEXT:    [[NEW:%.*]] = or i64 [[OLD]], [[SHIFTED]]
; CHECK-NEXT:    [[C1:%.*]] = icmp ne i64 [[NEW]], [[OLD]]
; CHECK-NEXT:    br i1 [[C1]], label %[[C1S:.*]], label
; CHECK:  [[C1S]]:
; CHECK-NEXT:    store i64 [[NEW]], ptr [[SHP]], align 1, !nosanitize
; CHECK:    br label %[[CONT]]
; CHECK:       [[CONT]]:
; CHECK-NEXT:    ret void
define void @masked_store(ptr %p, <8 x float> %v, <8 x i1> %m) {
  call void @llvm.masked.store.v8f32.p0(<8 x float> %v, ptr %p, i32 4, <8 x i1> %m)
  ret void
}

; 8-byte lanes at align 8: every lane is a whole shadow byte, so the first one
; written is 8-aligned and the 32 bits are ORed unshifted, as an i32.
; CHECK-LABEL: define void @masked_store_shared(
; CHECK:         call void @llvm.masked.store.v4f64.p0(<4 x double> %v, ptr %q, i32 8, <4 x i1> %m)
; CHECK-NEXT:    [[SEL:%.*]] = select <4 x i1> %m, <4 x i8> <i8 -1, i8 -1, i8 -1, i8 -1>, <4 x i8> zeroinitializer
; CHECK-NEXT:    [[BITS:%.*]] = bitcast <4 x i8> [[SEL]] to i32
; CHECK-NEXT:    [[ANY:%.*]] = icmp ne i32 [[BITS]], 0
; CHECK-NEXT:    br i1 [[ANY]], label %[[MARK:.*]], label %[[CONT:.*]]
; CHECK:       [[MARK]]:
; CHECK-NEXT:    [[FIRST:%.*]] = call i32 @llvm.cttz.i32(i32 [[BITS]], i1 true)
; CHECK-NEXT:    [[FIRST64:%.*]] = zext i32 [[FIRST]] to i64
; CHECK-NEXT:    [[START:%.*]] = getelementptr i8, ptr %q, i64 [[FIRST64]]
; CHECK-NEXT:    [[TRIM:%.*]] = lshr i32 [[BITS]], [[FIRST]]
; CHECK-NEXT:    [[SINT:%.*]] = ptrtoint ptr [[START]] to i64
; CHECK-NEXT:    [[IDX:%.*]] = lshr i64 [[SINT]], 3
; CHECK-NEXT:    [[SH:%.*]] = add i64 [[IDX]], 17592186044416
; CHECK-NEXT:    [[SHP:%.*]] = inttoptr i64 [[SH]] to ptr
; CHECK-NEXT:    [[OLD:%.*]] = load i32, ptr [[SHP]], align 1, !nosanitize
; CHECK-NEXT:    [[NEW:%.*]] = or i32 [[OLD]], [[TRIM]]
; CHECK-NEXT:    [[C2:%.*]] = icmp ne i32 [[NEW]], [[OLD]]
; CHECK-NEXT:    br i1 [[C2]], label %[[C2S:.*]], label
; CHECK:  [[C2S]]:
; CHECK-NEXT:    store i32 [[NEW]], ptr [[SHP]], align 1, !nosanitize
; CHECK:    br label %[[CONT]]
; CHECK:       [[CONT]]:
; CHECK-NEXT:    ret void
define void @masked_store_shared(i64 %i, <4 x double> %v, <4 x i1> %m) {
  %q = getelementptr inbounds float, ptr @grid, i64 %i
  call void @llvm.masked.store.v4f64.p0(<4 x double> %v, ptr %q, i32 8, <4 x i1> %m)
  ret void
}

; 64 bytes (AVX-512): two 32-bit halves, each guarded and ORed from its own first
; byte written; the second half's bytes start 32 bytes in.
; CHECK-LABEL: define void @masked_store_wide(
; CHECK:         call void @llvm.masked.store.v16f32.p0(<16 x float> %v, ptr %q, i32 4, <16 x i1> %m)
; CHECK-NEXT:    [[SEL:%.*]] = select <16 x i1> %m, <16 x i4> <i4 -1, {{.*}}>, <16 x i4> zeroinitializer
; CHECK-NEXT:    [[BITS:%.*]] = bitcast <16 x i4> [[SEL]] to i64
; CHECK-NEXT:    [[LO:%.*]] = trunc i64 [[BITS]] to i32
; CHECK-NEXT:    [[ANY0:%.*]] = icmp ne i32 [[LO]], 0
; CHECK-NEXT:    br i1 [[ANY0]], label %[[MARK0:.*]], label %[[NEXT:.*]]
; CHECK:       [[MARK0]]:
; CHECK-NEXT:    [[F0:%.*]] = call i32 @llvm.cttz.i32(i32 [[LO]], i1 true)
; CHECK-NEXT:    [[F0W:%.*]] = zext i32 [[F0]] to i64
; CHECK-NEXT:    [[S0:%.*]] = getelementptr i8, ptr %q, i64 [[F0W]]
; CHECK-NEXT:    [[T0:%.*]] = lshr i32 [[LO]], [[F0]]
; CHECK-NEXT:    [[W0:%.*]] = zext i32 [[T0]] to i64
; CHECK-NEXT:    [[I0:%.*]] = ptrtoint ptr [[S0]] to i64
; CHECK-NEXT:    [[B0:%.*]] = and i64 [[I0]], 7
; CHECK-NEXT:    [[M0:%.*]] = shl i64 [[W0]], [[B0]]
; CHECK-NEXT:    [[J0:%.*]] = ptrtoint ptr [[S0]] to i64
; CHECK-NEXT:    [[X0:%.*]] = lshr i64 [[J0]], 3
; CHECK-NEXT:    [[A0:%.*]] = add i64 [[X0]], 17592186044416
; CHECK-NEXT:    [[P0:%.*]] = inttoptr i64 [[A0]] to ptr
; CHECK-NEXT:    [[O0:%.*]] = load i64, ptr [[P0]], align 1, !nosanitize
; CHECK-NEXT:    [[N0:%.*]] = or i64 [[O0]], [[M0]]
; CHECK-NEXT:    [[C3:%.*]] = icmp ne i64 [[N0]], [[O0]]
; CHECK-NEXT:    br i1 [[C3]], label %[[C3S:.*]], label
; CHECK:  [[C3S]]:
; CHECK-NEXT:    store i64 [[N0]], ptr [[P0]], align 1, !nosanitize
; CHECK:    br label %[[NEXT]]
; CHECK:       [[NEXT]]:
; CHECK-NEXT:    [[HI64:%.*]] = lshr i64 [[BITS]], 32
; CHECK-NEXT:    [[HI:%.*]] = trunc i64 [[HI64]] to i32
; CHECK-NEXT:    [[ANY1:%.*]] = icmp ne i32 [[HI]], 0
; CHECK-NEXT:    br i1 [[ANY1]], label %[[MARK1:.*]], label %[[CONT:.*]]
; CHECK:       [[MARK1]]:
; CHECK-NEXT:    [[F1:%.*]] = call i32 @llvm.cttz.i32(i32 [[HI]], i1 true)
; CHECK-NEXT:    [[F1W:%.*]] = zext i32 [[F1]] to i64
; CHECK-NEXT:    [[F1O:%.*]] = add i64 [[F1W]], 32
; CHECK-NEXT:    [[S1:%.*]] = getelementptr i8, ptr %q, i64 [[F1O]]
; CHECK-NEXT:    [[T1:%.*]] = lshr i32 [[HI]], [[F1]]
; CHECK-NEXT:    [[W1:%.*]] = zext i32 [[T1]] to i64
; CHECK-NEXT:    [[I1:%.*]] = ptrtoint ptr [[S1]] to i64
; CHECK-NEXT:    [[B1:%.*]] = and i64 [[I1]], 7
; CHECK-NEXT:    [[M1:%.*]] = shl i64 [[W1]], [[B1]]
; CHECK-NEXT:    [[J1:%.*]] = ptrtoint ptr [[S1]] to i64
; CHECK-NEXT:    [[X1:%.*]] = lshr i64 [[J1]], 3
; CHECK-NEXT:    [[A1:%.*]] = add i64 [[X1]], 17592186044416
; CHECK-NEXT:    [[P1:%.*]] = inttoptr i64 [[A1]] to ptr
; CHECK-NEXT:    [[O1:%.*]] = load i64, ptr [[P1]], align 1, !nosanitize
; CHECK-NEXT:    [[N1:%.*]] = or i64 [[O1]], [[M1]]
; CHECK-NEXT:    [[C4:%.*]] = icmp ne i64 [[N1]], [[O1]]
; CHECK-NEXT:    br i1 [[C4]], label %[[C4S:.*]], label
; CHECK:  [[C4S]]:
; CHECK-NEXT:    store i64 [[N1]], ptr [[P1]], align 1, !nosanitize
; CHECK:    br label %[[CONT]]
; CHECK:       [[CONT]]:
; CHECK-NEXT:    ret void
define void @masked_store_wide(i64 %i, <16 x float> %v, <16 x i1> %m) {
  %q = getelementptr inbounds float, ptr @grid, i64 %i
  call void @llvm.masked.store.v16f32.p0(<16 x float> %v, ptr %q, i32 4, <16 x i1> %m)
  ret void
}

; A scatter: each lane is marked on its own, like a 4-byte store at align 4 to its
; address (15 << (lane & 7) ORed into the lane's shadow byte), if its mask bit is
; set and, without MW_SHARED provenance, its address is in the window.
; CHECK-LABEL: define void @scatter(
; CHECK:         call void @llvm.masked.scatter.v4i32.v4p0(<4 x i32> %v, <4 x ptr> %ptrs, i32 4, <4 x i1> %m)
; CHECK-NEXT:    [[P0:%.*]] = extractelement <4 x ptr> %ptrs, i64 0
; CHECK-NEXT:    [[MB0:%.*]] = extractelement <4 x i1> %m, i64 0
; CHECK-NEXT:    [[I0:%.*]] = ptrtoint ptr [[P0]] to i64
; CHECK-NEXT:    [[D0:%.*]] = sub i64 [[I0]], 1073741824
; CHECK-NEXT:    [[W0:%.*]] = icmp ult i64 [[D0]], 1099511627776
; CHECK-NEXT:    [[C0:%.*]] = and i1 [[MB0]], [[W0]]
; CHECK-NEXT:    br i1 [[C0]], label %[[MARK0:.*]], label %[[NEXT0:.*]]
; CHECK:       [[MARK0]]:
; CHECK-NEXT:    [[J0:%.*]] = ptrtoint ptr [[P0]] to i64
; CHECK-NEXT:    [[B0:%.*]] = and i64 [[J0]], 7
; CHECK-NEXT:    [[BT0:%.*]] = trunc i64 [[B0]] to i8
; CHECK-NEXT:    [[BITS0:%.*]] = shl i8 15, [[BT0]]
; CHECK-NEXT:    [[K0:%.*]] = ptrtoint ptr [[P0]] to i64
; CHECK-NEXT:    [[X0:%.*]] = lshr i64 [[K0]], 3
; CHECK-NEXT:    [[A0:%.*]] = add i64 [[X0]], 17592186044416
; CHECK-NEXT:    [[S0:%.*]] = inttoptr i64 [[A0]] to ptr
; CHECK-NEXT:    [[O0:%.*]] = load i8, ptr [[S0]], align 1, !nosanitize
; CHECK-NEXT:    [[N0:%.*]] = or i8 [[O0]], [[BITS0]]
; CHECK-NEXT:    [[C5:%.*]] = icmp ne i8 [[N0]], [[O0]]
; CHECK-NEXT:    br i1 [[C5]], label %[[C5S:.*]], label
; CHECK:  [[C5S]]:
; CHECK-NEXT:    store i8 [[N0]], ptr [[S0]], align 1, !nosanitize
; CHECK:    br label %[[NEXT0]]
; CHECK:       [[NEXT0]]:
; CHECK-NEXT:    [[P1:%.*]] = extractelement <4 x ptr> %ptrs, i64 1
; CHECK-NEXT:    [[MB1:%.*]] = extractelement <4 x i1> %m, i64 1
; CHECK-NEXT:    [[I1:%.*]] = ptrtoint ptr [[P1]] to i64
; CHECK-NEXT:    [[D1:%.*]] = sub i64 [[I1]], 1073741824
; CHECK-NEXT:    [[W1:%.*]] = icmp ult i64 [[D1]], 1099511627776
; CHECK-NEXT:    [[C1:%.*]] = and i1 [[MB1]], [[W1]]
; CHECK-NEXT:    br i1 [[C1]], label %[[MARK1:.*]], label %[[NEXT1:.*]]
; CHECK:       [[MARK1]]:
; CHECK-NEXT:    [[J1:%.*]] = ptrtoint ptr [[P1]] to i64
; CHECK-NEXT:    [[B1:%.*]] = and i64 [[J1]], 7
; CHECK-NEXT:    [[BT1:%.*]] = trunc i64 [[B1]] to i8
; CHECK-NEXT:    [[BITS1:%.*]] = shl i8 15, [[BT1]]
; CHECK-NEXT:    [[K1:%.*]] = ptrtoint ptr [[P1]] to i64
; CHECK-NEXT:    [[X1:%.*]] = lshr i64 [[K1]], 3
; CHECK-NEXT:    [[A1:%.*]] = add i64 [[X1]], 17592186044416
; CHECK-NEXT:    [[S1:%.*]] = inttoptr i64 [[A1]] to ptr
; CHECK-NEXT:    [[O1:%.*]] = load i8, ptr [[S1]], align 1, !nosanitize
; CHECK-NEXT:    [[N1:%.*]] = or i8 [[O1]], [[BITS1]]
; CHECK-NEXT:    [[C6:%.*]] = icmp ne i8 [[N1]], [[O1]]
; CHECK-NEXT:    br i1 [[C6]], label %[[C6S:.*]], label
; CHECK:  [[C6S]]:
; CHECK-NEXT:    store i8 [[N1]], ptr [[S1]], align 1, !nosanitize
; CHECK:    br label %[[NEXT1]]
; CHECK:       [[NEXT1]]:
; CHECK-NEXT:    [[P2:%.*]] = extractelement <4 x ptr> %ptrs, i64 2
; CHECK-NEXT:    [[MB2:%.*]] = extractelement <4 x i1> %m, i64 2
; CHECK-NEXT:    [[I2:%.*]] = ptrtoint ptr [[P2]] to i64
; CHECK-NEXT:    [[D2:%.*]] = sub i64 [[I2]], 1073741824
; CHECK-NEXT:    [[W2:%.*]] = icmp ult i64 [[D2]], 1099511627776
; CHECK-NEXT:    [[C2:%.*]] = and i1 [[MB2]], [[W2]]
; CHECK-NEXT:    br i1 [[C2]], label %[[MARK2:.*]], label %[[NEXT2:.*]]
; CHECK:       [[MARK2]]:
; CHECK-NEXT:    [[J2:%.*]] = ptrtoint ptr [[P2]] to i64
; CHECK-NEXT:    [[B2:%.*]] = and i64 [[J2]], 7
; CHECK-NEXT:    [[BT2:%.*]] = trunc i64 [[B2]] to i8
; CHECK-NEXT:    [[BITS2:%.*]] = shl i8 15, [[BT2]]
; CHECK-NEXT:    [[K2:%.*]] = ptrtoint ptr [[P2]] to i64
; CHECK-NEXT:    [[X2:%.*]] = lshr i64 [[K2]], 3
; CHECK-NEXT:    [[A2:%.*]] = add i64 [[X2]], 17592186044416
; CHECK-NEXT:    [[S2:%.*]] = inttoptr i64 [[A2]] to ptr
; CHECK-NEXT:    [[O2:%.*]] = load i8, ptr [[S2]], align 1, !nosanitize
; CHECK-NEXT:    [[N2:%.*]] = or i8 [[O2]], [[BITS2]]
; CHECK-NEXT:    [[C7:%.*]] = icmp ne i8 [[N2]], [[O2]]
; CHECK-NEXT:    br i1 [[C7]], label %[[C7S:.*]], label
; CHECK:  [[C7S]]:
; CHECK-NEXT:    store i8 [[N2]], ptr [[S2]], align 1, !nosanitize
; CHECK:    br label %[[NEXT2]]
; CHECK:       [[NEXT2]]:
; CHECK-NEXT:    [[P3:%.*]] = extractelement <4 x ptr> %ptrs, i64 3
; CHECK-NEXT:    [[MB3:%.*]] = extractelement <4 x i1> %m, i64 3
; CHECK-NEXT:    [[I3:%.*]] = ptrtoint ptr [[P3]] to i64
; CHECK-NEXT:    [[D3:%.*]] = sub i64 [[I3]], 1073741824
; CHECK-NEXT:    [[W3:%.*]] = icmp ult i64 [[D3]], 1099511627776
; CHECK-NEXT:    [[C3:%.*]] = and i1 [[MB3]], [[W3]]
; CHECK-NEXT:    br i1 [[C3]], label %[[MARK3:.*]], label %[[CONT:.*]]
; CHECK:       [[MARK3]]:
; CHECK-NEXT:    [[J3:%.*]] = ptrtoint ptr [[P3]] to i64
; CHECK-NEXT:    [[B3:%.*]] = and i64 [[J3]], 7
; CHECK-NEXT:    [[BT3:%.*]] = trunc i64 [[B3]] to i8
; CHECK-NEXT:    [[BITS3:%.*]] = shl i8 15, [[BT3]]
; CHECK-NEXT:    [[K3:%.*]] = ptrtoint ptr [[P3]] to i64
; CHECK-NEXT:    [[X3:%.*]] = lshr i64 [[K3]], 3
; CHECK-NEXT:    [[A3:%.*]] = add i64 [[X3]], 17592186044416
; CHECK-NEXT:    [[S3:%.*]] = inttoptr i64 [[A3]] to ptr
; CHECK-NEXT:    [[O3:%.*]] = load i8, ptr [[S3]], align 1, !nosanitize
; CHECK-NEXT:    [[N3:%.*]] = or i8 [[O3]], [[BITS3]]
; CHECK-NEXT:    [[C8:%.*]] = icmp ne i8 [[N3]], [[O3]]
; CHECK-NEXT:    br i1 [[C8]], label %[[C8S:.*]], label
; CHECK:  [[C8S]]:
; CHECK-NEXT:    store i8 [[N3]], ptr [[S3]], align 1, !nosanitize
; CHECK:    br label %[[CONT]]
; CHECK:       [[CONT]]:
; CHECK-NEXT:    ret void
define void @scatter(<4 x ptr> %ptrs, <4 x i32> %v, <4 x i1> %m) {
  call void @llvm.masked.scatter.v4i32.v4p0(<4 x i32> %v, <4 x ptr> %ptrs, i32 4, <4 x i1> %m)
  ret void
}

; Lanes of one MW_SHARED base: no lane check, only the mask bit.
; CHECK-LABEL: define void @scatter_shared(
; CHECK:         call void @llvm.masked.scatter.v4f32.v4p0(<4 x float> %v, <4 x ptr> %ptrs, i32 4, <4 x i1> %m)
; CHECK-NEXT:    [[P0:%.*]] = extractelement <4 x ptr> %ptrs, i64 0
; CHECK-NEXT:    [[MB0:%.*]] = extractelement <4 x i1> %m, i64 0
; CHECK-NEXT:    br i1 [[MB0]], label %[[MARK0:.*]], label %[[NEXT0:.*]]
; CHECK:       [[MARK0]]:
; CHECK-NEXT:    [[J0:%.*]] = ptrtoint ptr [[P0]] to i64
; CHECK-NEXT:    [[B0:%.*]] = and i64 [[J0]], 7
; CHECK-NEXT:    [[BT0:%.*]] = trunc i64 [[B0]] to i8
; CHECK-NEXT:    [[BITS0:%.*]] = shl i8 15, [[BT0]]
; CHECK-NEXT:    [[K0:%.*]] = ptrtoint ptr [[P0]] to i64
; CHECK-NEXT:    [[X0:%.*]] = lshr i64 [[K0]], 3
; CHECK-NEXT:    [[A0:%.*]] = add i64 [[X0]], 17592186044416
; CHECK-NEXT:    [[S0:%.*]] = inttoptr i64 [[A0]] to ptr
; CHECK-NEXT:    [[O0:%.*]] = load i8, ptr [[S0]], align 1, !nosanitize
; CHECK-NEXT:    [[N0:%.*]] = or i8 [[O0]], [[BITS0]]
; CHECK-NEXT:    [[C9:%.*]] = icmp ne i8 [[N0]], [[O0]]
; CHECK-NEXT:    br i1 [[C9]], label %[[C9S:.*]], label
; CHECK:  [[C9S]]:
; CHECK-NEXT:    store i8 [[N0]], ptr [[S0]], align 1, !nosanitize
; CHECK:    br label %[[NEXT0]]
; CHECK:       [[NEXT0]]:
; CHECK-NEXT:    [[P1:%.*]] = extractelement <4 x ptr> %ptrs, i64 1
; CHECK-NEXT:    [[MB1:%.*]] = extractelement <4 x i1> %m, i64 1
; CHECK-NEXT:    br i1 [[MB1]], label %[[MARK1:.*]], label %[[NEXT1:.*]]
; CHECK:       [[MARK1]]:
; CHECK-NEXT:    [[J1:%.*]] = ptrtoint ptr [[P1]] to i64
; CHECK-NEXT:    [[B1:%.*]] = and i64 [[J1]], 7
; CHECK-NEXT:    [[BT1:%.*]] = trunc i64 [[B1]] to i8
; CHECK-NEXT:    [[BITS1:%.*]] = shl i8 15, [[BT1]]
; CHECK-NEXT:    [[K1:%.*]] = ptrtoint ptr [[P1]] to i64
; CHECK-NEXT:    [[X1:%.*]] = lshr i64 [[K1]], 3
; CHECK-NEXT:    [[A1:%.*]] = add i64 [[X1]], 17592186044416
; CHECK-NEXT:    [[S1:%.*]] = inttoptr i64 [[A1]] to ptr
; CHECK-NEXT:    [[O1:%.*]] = load i8, ptr [[S1]], align 1, !nosanitize
; CHECK-NEXT:    [[N1:%.*]] = or i8 [[O1]], [[BITS1]]
; CHECK-NEXT:    [[C10:%.*]] = icmp ne i8 [[N1]], [[O1]]
; CHECK-NEXT:    br i1 [[C10]], label %[[C10S:.*]], label
; CHECK:  [[C10S]]:
; CHECK-NEXT:    store i8 [[N1]], ptr [[S1]], align 1, !nosanitize
; CHECK:    br label %[[NEXT1]]
; CHECK:       [[NEXT1]]:
; CHECK-NEXT:    [[P2:%.*]] = extractelement <4 x ptr> %ptrs, i64 2
; CHECK-NEXT:    [[MB2:%.*]] = extractelement <4 x i1> %m, i64 2
; CHECK-NEXT:    br i1 [[MB2]], label %[[MARK2:.*]], label %[[NEXT2:.*]]
; CHECK:       [[MARK2]]:
; CHECK-NEXT:    [[J2:%.*]] = ptrtoint ptr [[P2]] to i64
; CHECK-NEXT:    [[B2:%.*]] = and i64 [[J2]], 7
; CHECK-NEXT:    [[BT2:%.*]] = trunc i64 [[B2]] to i8
; CHECK-NEXT:    [[BITS2:%.*]] = shl i8 15, [[BT2]]
; CHECK-NEXT:    [[K2:%.*]] = ptrtoint ptr [[P2]] to i64
; CHECK-NEXT:    [[X2:%.*]] = lshr i64 [[K2]], 3
; CHECK-NEXT:    [[A2:%.*]] = add i64 [[X2]], 17592186044416
; CHECK-NEXT:    [[S2:%.*]] = inttoptr i64 [[A2]] to ptr
; CHECK-NEXT:    [[O2:%.*]] = load i8, ptr [[S2]], align 1, !nosanitize
; CHECK-NEXT:    [[N2:%.*]] = or i8 [[O2]], [[BITS2]]
; CHECK-NEXT:    [[C11:%.*]] = icmp ne i8 [[N2]], [[O2]]
; CHECK-NEXT:    br i1 [[C11]], label %[[C11S:.*]], label
; CHECK:  [[C11S]]:
; CHECK-NEXT:    store i8 [[N2]], ptr [[S2]], align 1, !nosanitize
; CHECK:    br label %[[NEXT2]]
; CHECK:       [[NEXT2]]:
; CHECK-NEXT:    [[P3:%.*]] = extractelement <4 x ptr> %ptrs, i64 3
; CHECK-NEXT:    [[MB3:%.*]] = extractelement <4 x i1> %m, i64 3
; CHECK-NEXT:    br i1 [[MB3]], label %[[MARK3:.*]], label %[[CONT:.*]]
; CHECK:       [[MARK3]]:
; CHECK-NEXT:    [[J3:%.*]] = ptrtoint ptr [[P3]] to i64
; CHECK-NEXT:    [[B3:%.*]] = and i64 [[J3]], 7
; CHECK-NEXT:    [[BT3:%.*]] = trunc i64 [[B3]] to i8
; CHECK-NEXT:    [[BITS3:%.*]] = shl i8 15, [[BT3]]
; CHECK-NEXT:    [[K3:%.*]] = ptrtoint ptr [[P3]] to i64
; CHECK-NEXT:    [[X3:%.*]] = lshr i64 [[K3]], 3
; CHECK-NEXT:    [[A3:%.*]] = add i64 [[X3]], 17592186044416
; CHECK-NEXT:    [[S3:%.*]] = inttoptr i64 [[A3]] to ptr
; CHECK-NEXT:    [[O3:%.*]] = load i8, ptr [[S3]], align 1, !nosanitize
; CHECK-NEXT:    [[N3:%.*]] = or i8 [[O3]], [[BITS3]]
; CHECK-NEXT:    [[C12:%.*]] = icmp ne i8 [[N3]], [[O3]]
; CHECK-NEXT:    br i1 [[C12]], label %[[C12S:.*]], label
; CHECK:  [[C12S]]:
; CHECK-NEXT:    store i8 [[N3]], ptr [[S3]], align 1, !nosanitize
; CHECK:    br label %[[CONT]]
; CHECK:       [[CONT]]:
; CHECK-NEXT:    ret void
define void @scatter_shared(<4 x i64> %idx, <4 x float> %v, <4 x i1> %m) {
  %ptrs = getelementptr inbounds float, ptr @grid, <4 x i64> %idx
  call void @llvm.masked.scatter.v4f32.v4p0(<4 x float> %v, <4 x ptr> %ptrs, i32 4, <4 x i1> %m)
  ret void
}

; Sub-byte lanes cannot be mirrored byte for byte: a warning, no mark.
; WARN: midway: in function 'masked_bits': intrinsic 'llvm.masked.store.v8i1.p0' may write shared memory through argument 2, which Midway cannot mark dirty
; CHECK-LABEL: define void @masked_bits(
; CHECK-NEXT:    call void @llvm.masked.store.v8i1.p0(
; CHECK-NEXT:    ret void
define void @masked_bits(ptr %p, <8 x i1> %v, <8 x i1> %m) {
  call void @llvm.masked.store.v8i1.p0(<8 x i1> %v, ptr %p, i32 1, <8 x i1> %m)
  ret void
}

declare void @llvm.masked.store.v8f32.p0(<8 x float>, ptr, i32, <8 x i1>)
declare void @llvm.masked.store.v4f64.p0(<4 x double>, ptr, i32, <4 x i1>)
declare void @llvm.masked.store.v16f32.p0(<16 x float>, ptr, i32, <16 x i1>)
declare void @llvm.masked.store.v8i1.p0(<8 x i1>, ptr, i32, <8 x i1>)
declare void @llvm.masked.scatter.v4i32.v4p0(<4 x i32>, <4 x ptr>, i32, <4 x i1>)
declare void @llvm.masked.scatter.v4f32.v4p0(<4 x float>, <4 x ptr>, i32, <4 x i1>)
