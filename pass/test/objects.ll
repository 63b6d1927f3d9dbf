; Every build describes each shared global it defines with a struct mw_object in
; section mw_objects (name, address, size, element size, array shape), so that the
; runtime and mwrun name shared data as the source writes it. An array initialized in
; part, which clang lays out as a struct of pieces, is described as the array it is;
; a struct is one element; private globals, declarations and midway.h's anchor are
; not described.
; RUN: %opt -passes=midway-instrument -S %s | FileCheck %s
; RUN: %opt -passes=midway-instrument -S %s | FileCheck %s --check-prefix=NONE

target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
target triple = "x86_64-unknown-linux-gnu"

%struct.part = type { i32, i32 }

@grid = global [3 x [4 x i32]] zeroinitializer, section "mw_shared", align 16
@table = global <{ i32, i32, [14 x i32] }> <{ i32 1, i32 2, [14 x i32] zeroinitializer }>, section "mw_shared", align 16
@parts = global [4 x %struct.part] zeroinitializer, section "mw_shared", align 16
@one = global %struct.part zeroinitializer, section "mw_shared", align 4
@elsewhere = external global [8 x i32], section "mw_shared"
@private = global [16 x i32] zeroinitializer, align 4
@__mw_section_anchor = linkonce_odr global i32 0, section "mw_shared", align 4

; CHECK-DAG: @midway.object{{[.0-9]*}} = private constant {{.*}} { ptr {{@midway.name[.0-9]*}}, ptr @grid, i64 48, i64 4, i32 2, i32 0, [4 x i64] [i64 3, i64 4, i64 0, i64 0] }, section "mw_objects", align 8
; CHECK-DAG: @midway.object{{[.0-9]*}} = private constant {{.*}} { ptr {{@midway.name[.0-9]*}}, ptr @table, i64 64, i64 4, i32 1, i32 0, [4 x i64] [i64 16, i64 0, i64 0, i64 0] }, section "mw_objects", align 8
; CHECK-DAG: @midway.object{{[.0-9]*}} = private constant {{.*}} { ptr {{@midway.name[.0-9]*}}, ptr @parts, i64 32, i64 8, i32 1, i32 0, [4 x i64] [i64 4, i64 0, i64 0, i64 0] }, section "mw_objects", align 8
; CHECK-DAG: @midway.object{{[.0-9]*}} = private constant {{.*}} { ptr {{@midway.name[.0-9]*}}, ptr @one, i64 8, i64 8, i32 0, i32 0, [4 x i64] zeroinitializer }, section "mw_objects", align 8
; CHECK-DAG: @midway.name{{[.0-9]*}} = private unnamed_addr constant [5 x i8] c"grid\00"
; NONE-NOT: ptr @elsewhere, i64
; NONE-NOT: ptr @private, i64
; NONE-NOT: ptr @__mw_section_anchor, i64

define void @touch() {
  store i32 1, ptr @grid, align 4
  ret void
}
