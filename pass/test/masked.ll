; A masked store is mirrored into the shadow by a masked store of dirty lanes with
; the same mask; a scatter by a scatter of dirty lanes to the lanes' shadows. For
; pointers of unknown provenance every lane is also checked against the window.
; RUN: %opt -passes=midway-instrument -S %s 2>%t.err | FileCheck %s
; RUN: FileCheck %s --check-prefix=WARN < %t.err

target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
target triple = "x86_64-unknown-linux-gnu"

@grid = global [64 x float] zeroinitializer, section "mw_shared", align 32

; CHECK-LABEL: define void @masked_store(
; CHECK:         call void @llvm.masked.store.v8f32.p0(<8 x float> %v, ptr %p, i32 4, <8 x i1> %m)
; CHECK-NEXT:    [[BASE:%.*]] = ptrtoint ptr %p to i64
; CHECK-NEXT:    [[INS:%.*]] = insertelement <8 x i64> poison, i64 [[BASE]], i64 0
; CHECK-NEXT:    [[SPLAT:%.*]] = shufflevector <8 x i64> [[INS]], <8 x i64> poison, <8 x i32> zeroinitializer
; CHECK-NEXT:    [[LANES:%.*]] = add <8 x i64> [[SPLAT]], <i64 0, i64 4, i64 8, i64 12, i64 16, i64 20, i64 24, i64 28>
; CHECK-NEXT:    [[OFF:%.*]] = sub <8 x i64> [[LANES]], <i64 1073741824,
; CHECK-NEXT:    [[IN:%.*]] = icmp ult <8 x i64> [[OFF]], <i64 1099511627776,
; CHECK-NEXT:    [[MASK:%.*]] = and <8 x i1> %m, [[IN]]
; CHECK-NEXT:    [[INT:%.*]] = ptrtoint ptr %p to i64
; CHECK-NEXT:    [[SH:%.*]] = add i64 [[INT]], 17592186044416
; CHECK-NEXT:    [[SHP:%.*]] = inttoptr i64 [[SH]] to ptr
; CHECK-NEXT:    call void @llvm.masked.store.v8i32.p0(<8 x i32> <i32 16843009, {{.*}}>, ptr [[SHP]], i32 4, <8 x i1> [[MASK]]), !nosanitize
; CHECK-NEXT:    ret void
define void @masked_store(ptr %p, <8 x float> %v, <8 x i1> %m) {
  call void @llvm.masked.store.v8f32.p0(<8 x float> %v, ptr %p, i32 4, <8 x i1> %m)
  ret void
}

; CHECK-LABEL: define void @masked_store_shared(
; CHECK:         call void @llvm.masked.store.v4f64.p0(<4 x double> %v, ptr %q, i32 8, <4 x i1> %m)
; CHECK-NEXT:    [[INT:%.*]] = ptrtoint ptr %q to i64
; CHECK-NEXT:    [[SH:%.*]] = add i64 [[INT]], 17592186044416
; CHECK-NEXT:    [[SHP:%.*]] = inttoptr i64 [[SH]] to ptr
; CHECK-NEXT:    call void @llvm.masked.store.v4i64.p0(<4 x i64> <i64 72340172838076673, {{.*}}>, ptr [[SHP]], i32 8, <4 x i1> %m), !nosanitize
; CHECK-NEXT:    ret void
define void @masked_store_shared(i64 %i, <4 x double> %v, <4 x i1> %m) {
  %q = getelementptr inbounds float, ptr @grid, i64 %i
  call void @llvm.masked.store.v4f64.p0(<4 x double> %v, ptr %q, i32 8, <4 x i1> %m)
  ret void
}

; CHECK-LABEL: define void @scatter(
; CHECK:         call void @llvm.masked.scatter.v4i32.v4p0(<4 x i32> %v, <4 x ptr> %ptrs, i32 4, <4 x i1> %m)
; CHECK-NEXT:    [[INT:%.*]] = ptrtoint <4 x ptr> %ptrs to <4 x i64>
; CHECK-NEXT:    [[OFF:%.*]] = sub <4 x i64> [[INT]], <i64 1073741824,
; CHECK-NEXT:    [[IN:%.*]] = icmp ult <4 x i64> [[OFF]], <i64 1099511627776,
; CHECK-NEXT:    [[MASK:%.*]] = and <4 x i1> %m, [[IN]]
; CHECK-NEXT:    [[INT2:%.*]] = ptrtoint <4 x ptr> %ptrs to <4 x i64>
; CHECK-NEXT:    [[SH:%.*]] = add <4 x i64> [[INT2]], <i64 17592186044416,
; CHECK-NEXT:    [[SHP:%.*]] = inttoptr <4 x i64> [[SH]] to <4 x ptr>
; CHECK-NEXT:    call void @llvm.masked.scatter.v4i32.v4p0(<4 x i32> <i32 16843009, {{.*}}>, <4 x ptr> [[SHP]], i32 4, <4 x i1> [[MASK]]), !nosanitize
; CHECK-NEXT:    ret void
define void @scatter(<4 x ptr> %ptrs, <4 x i32> %v, <4 x i1> %m) {
  call void @llvm.masked.scatter.v4i32.v4p0(<4 x i32> %v, <4 x ptr> %ptrs, i32 4, <4 x i1> %m)
  ret void
}

; Lanes of one MW_SHARED base: no lane check.
; CHECK-LABEL: define void @scatter_shared(
; CHECK:         call void @llvm.masked.scatter.v4f32.v4p0(<4 x float> %v, <4 x ptr> %ptrs, i32 4, <4 x i1> %m)
; CHECK-NEXT:    [[INT:%.*]] = ptrtoint <4 x ptr> %ptrs to <4 x i64>
; CHECK-NEXT:    [[SH:%.*]] = add <4 x i64> [[INT]], <i64 17592186044416,
; CHECK-NEXT:    [[SHP:%.*]] = inttoptr <4 x i64> [[SH]] to <4 x ptr>
; CHECK-NEXT:    call void @llvm.masked.scatter.v4i32.v4p0({{.*}}, <4 x ptr> [[SHP]], i32 4, <4 x i1> %m), !nosanitize
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
declare void @llvm.masked.store.v8i1.p0(<8 x i1>, ptr, i32, <8 x i1>)
declare void @llvm.masked.scatter.v4i32.v4p0(<4 x i32>, <4 x ptr>, i32, <4 x i1>)
declare void @llvm.masked.scatter.v4f32.v4p0(<4 x float>, <4 x ptr>, i32, <4 x i1>)
