; Inline asm stores are invisible to the pass: it warns when the asm writes
; through an indirect output ("=*m") that is not provably private, or clobbers
; "memory" with a non-empty body. An empty asm with a memory clobber is a
; compiler barrier and stores nothing.
; RUN: %opt -passes=midway-instrument -S %s -o /dev/null 2>&1 \
; RUN:   | FileCheck %s --implicit-check-not=warning:

target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
target triple = "x86_64-unknown-linux-gnu"

; CHECK: warning: asm.c:3:5: midway: inline asm may write shared memory through operand %0, which Midway cannot mark dirty; keep its stores to private memory, or call mw_written on what it writes
define void @memory_output(ptr %p, i32 %v) !dbg !5 {
  call void asm sideeffect "movl $1, $0", "=*m,r,~{dirflag},~{fpsr},~{flags}"(ptr elementtype(i32) %p, i32 %v), !dbg !8
  ret void
}

; Operands are named as the asm names them (%0 the first output, the register
; output too); the private memory output (%1) does not warn, the next one (%2) does.
; CHECK: warning: midway: in function 'second_operand': inline asm may write shared memory through operand %2, which Midway cannot mark dirty
define i32 @second_operand(ptr %out, i32 %v) {
  %local = alloca i32
  %r = call i32 asm sideeffect "", "=r,=*m,=*m,r,~{dirflag}"(ptr elementtype(i32) %local, ptr elementtype(i32) %out, i32 %v)
  ret i32 %r
}

; CHECK: warning: midway: in function 'memory_clobber': inline asm clobbers "memory" and may write shared memory, which Midway cannot mark dirty; keep its stores to private memory, or call mw_written on what it writes
define void @memory_clobber() {
  call void asm sideeffect "rep stosb", "~{memory},~{dirflag},~{fpsr},~{flags}"()
  ret void
}

; No warnings: a private output, a compiler barrier, plain register asm.
define i32 @quiet(i32 %v) {
  %local = alloca i32
  call void asm sideeffect "movl $1, $0", "=*m,r"(ptr elementtype(i32) %local, i32 %v)
  call void asm sideeffect "", "~{memory}"()
  %r = call i32 asm "bswap $0", "=r,0"(i32 %v)
  ret i32 %r
}

!llvm.dbg.cu = !{!0}
!llvm.module.flags = !{!3}
!0 = distinct !DICompileUnit(language: DW_LANG_C11, file: !1, producer: "clang", isOptimized: false, runtimeVersion: 0, emissionKind: LineTablesOnly)
!1 = !DIFile(filename: "asm.c", directory: "/src")
!3 = !{i32 2, !"Debug Info Version", i32 3}
!5 = distinct !DISubprogram(name: "memory_output", scope: !1, file: !1, line: 2, type: !6, scopeLine: 2, spFlags: DISPFlagDefinition, unit: !0)
!6 = !DISubroutineType(types: !7)
!7 = !{}
!8 = !DILocation(line: 3, column: 5, scope: !5)
