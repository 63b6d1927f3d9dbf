; The pass cannot see external functions that are not C library functions and
; assumes mwcc compiles them. It records each call through which such a function
; may write memory that is not provably private (callee, argument, location) in
; section mw_calls, and every external function it defines in mw_defined, so that
; the runtime can check the assumption once the program is linked.
; RUN: %opt -passes=midway-instrument -S %s | FileCheck %s
;
; CHECK: @midway.mw_defined = private constant [{{[0-9]+}} x i8] c"defined_here\0Acaller\0A", section "mw_defined", align 1
; CHECK: @midway.mw_calls = private constant [{{[0-9]+}} x i8] c"ext_write\091\09t.c:7:3\0Aext_second\092\09in function 'caller'\0A", section "mw_calls", align 1
; CHECK: @llvm.compiler.used = appending global [3 x ptr] [ptr @midway.object, ptr @midway.mw_defined, ptr @midway.mw_calls]

target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
target triple = "x86_64-unknown-linux-gnu"

@shared = global [16 x i32] zeroinitializer, section "mw_shared", align 16

declare void @ext_write(ptr)
declare void @ext_second(i32, ptr)
declare void @ext_reads(ptr readonly)
declare void @ext_private(ptr)
declare void @mw_barrier(ptr)

define void @defined_here(ptr %p) {
  store i32 1, ptr %p
  ret void
}

define internal void @local_helper() {
  ret void
}

define void @caller(ptr %unknown) {
  %local = alloca i32
  call void @ext_write(ptr @shared), !dbg !8       ; recorded, with its line
  call void @ext_second(i32 1, ptr %unknown)       ; recorded, no debug location
  call void @ext_reads(ptr @shared)                ; reads only: not recorded
  call void @ext_private(ptr %local)               ; private memory: not recorded
  call void @defined_here(ptr @shared)             ; defined here: not recorded
  call void @mw_barrier(ptr @shared)               ; the runtime: not recorded
  call void @local_helper()
  ret void
}

!llvm.dbg.cu = !{!0}
!llvm.module.flags = !{!3}
!0 = distinct !DICompileUnit(language: DW_LANG_C11, file: !1, emissionKind: LineTablesOnly)
!1 = !DIFile(filename: "t.c", directory: "/tmp")
!3 = !{i32 2, !"Debug Info Version", i32 3}
!5 = distinct !DISubprogram(name: "caller", scope: !1, file: !1, line: 5, unit: !0, spFlags: DISPFlagDefinition)
!8 = !DILocation(line: 7, column: 3, scope: !5)
