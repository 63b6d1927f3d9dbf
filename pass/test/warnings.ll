; Writes the pass cannot mark are reported as warnings, with the source location
; when there is one: C library functions it does not model that may write
; through a pointer argument that is not provably private, intrinsics it does
; not model, and (with -midway-warn-unknown-calls) calls to functions that are
; neither C library functions nor defined here. Nothing else warns.
; RUN: %opt -passes=midway-instrument -S %s -o /dev/null 2>&1 \
; RUN:   | FileCheck %s --implicit-check-not=warning:
; RUN: %opt -passes=midway-instrument -midway-warn-unknown-calls -S %s -o /dev/null 2>&1 \
; RUN:   | FileCheck %s --check-prefixes=CHECK,UNKNOWN --implicit-check-not=warning:
; RUN: %opt -passes=midway-instrument -midway-warn-unmarked=false -S %s -o /dev/null 2>&1 \
; RUN:   | count 0

target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
target triple = "x86_64-unknown-linux-gnu"

%struct.FILE = type opaque

@stdout = external global ptr
@fmt.d = private constant [3 x i8] c"%d\00"
@fmt.n = private constant [3 x i8] c"%n\00"

; CHECK: warning: warnings.c:7:12: midway: call to 'frexp' may write shared memory through argument 2, which Midway cannot mark dirty; pass it private memory and copy the result
; CHECK: warning: midway: in function 'qsort_shared': call to 'qsort' may write shared memory through argument 1, which Midway cannot mark dirty; pass it private memory and copy the result
; CHECK: warning: midway: in function 'scan': call to 'sscanf' may write shared memory through argument 3, which Midway cannot mark dirty
; CHECK: warning: midway: in function 'print_count': call to 'printf' may write shared memory through argument 2, which Midway cannot mark dirty
; CHECK: warning: midway: in function 'target_intrinsic': intrinsic 'llvm.x86.avx.maskstore.ps.256' may write shared memory through argument 1, which Midway cannot mark dirty
; CHECK: warning: midway: in function 'invoked': call to 'memcpy' may write shared memory through argument 1, which Midway cannot mark dirty after an invoke or musttail call; make it a plain call
; UNKNOWN: warning: midway: in function 'unknown_calls': call to 'external_fill' may write shared memory through argument 1; it is marked dirty only if the callee is compiled with Midway (mwcc)
; UNKNOWN: warning: midway: in function 'unknown_calls': indirect call may write shared memory through argument 1; it is marked dirty only if the callee is compiled with Midway (mwcc)

define double @frexp_out(double %x, ptr %e) !dbg !5 {
  %m = call double @frexp(double %x, ptr %e), !dbg !8
  ret double %m
}

; Into a local: private, no warning.
define double @frexp_local(double %x) {
  %e = alloca i32
  %m = call double @frexp(double %x, ptr %e)
  ret double %m
}

define void @qsort_shared(ptr %base, i64 %n, ptr %cmp) {
  call void @qsort(ptr %base, i64 %n, i64 4, ptr %cmp)
  ret void
}

; scanf-family functions write through their variadic arguments; with a format
; that is not a constant the pass cannot tell what (scanf.ll has those it marks).
define void @scan(ptr %s, ptr %out, ptr %fmt) {
  %local = alloca i32
  %r1 = call i32 (ptr, ptr, ...) @sscanf(ptr %s, ptr %fmt, ptr %local)
  %r2 = call i32 (ptr, ptr, ...) @sscanf(ptr %s, ptr %fmt, ptr %out)
  ret void
}

; printf writes through a variadic argument only for %n.
define void @print_count(ptr %s, ptr %count) {
  %r1 = call i32 (ptr, ...) @printf(ptr @fmt.d, ptr %s)
  %r2 = call i32 (ptr, ...) @printf(ptr @fmt.n, ptr %count)
  ret void
}

; No warning: FILE objects belong to libc; free releases its argument; null
; pointers and readonly arguments are not written; exec* only reads.
define void @quiet(ptr %s, ptr %p, ptr %argv) {
  %out = load ptr, ptr @stdout
  %r1 = call i32 @fputs(ptr %s, ptr %out)
  %r2 = call i32 @fflush(ptr %out)
  call void @free(ptr %p)
  %t = call i64 @time(ptr null)
  %l = call i64 @strtol(ptr %s, ptr null, i32 10)
  %n = call i64 @strlen(ptr %s)
  %w = call i64 @fwrite(ptr %s, i64 1, i64 %n, ptr %out)
  %e = call i32 @execv(ptr %s, ptr %argv)
  ret void
}

; Unmodelled intrinsics are judged by their attributes; lifetime markers are not
; writes.
define void @target_intrinsic(ptr %p, <8 x i32> %m, <8 x float> %v) {
  %local = alloca i32
  call void @llvm.lifetime.start.p0(i64 4, ptr %local)
  call void @llvm.x86.avx.maskstore.ps.256(ptr %p, <8 x i32> %m, <8 x float> %v)
  call void @llvm.lifetime.end.p0(i64 4, ptr %local)
  ret void
}

; A mark cannot follow an invoke on its (possibly shared) normal edge.
define void @invoked(ptr %d, ptr %s, i64 %n) personality ptr @__gxx_personality_v0 {
  %r = invoke ptr @memcpy(ptr %d, ptr %s, i64 %n) to label %ok unwind label %lp
ok:
  ret void
lp:
  %x = landingpad { ptr, i32 } cleanup
  resume { ptr, i32 } %x
}

; Functions with a body elsewhere that are not C library functions are assumed
; to be compiled with Midway; the runtime's own functions never warn.
define void @unknown_calls(ptr %p, ptr %fn) {
  call void @external_fill(ptr %p)
  call void %fn(ptr %p)
  call void @mw_bind(ptr %p, ptr %p, i64 8)
  call void @defined_here(ptr %p)
  ret void
}

define void @defined_here(ptr %p) {
  ret void
}

declare double @frexp(double, ptr)
declare void @qsort(ptr, i64, i64, ptr)
declare i32 @sscanf(ptr, ptr, ...)
declare i32 @printf(ptr, ...)
declare i32 @fputs(ptr, ptr)
declare i32 @fflush(ptr)
declare void @free(ptr)
declare i64 @time(ptr)
declare i64 @strtol(ptr, ptr, i32)
declare i64 @strlen(ptr)
declare i64 @fwrite(ptr, i64, i64, ptr)
declare i32 @execv(ptr, ptr)
declare ptr @memcpy(ptr, ptr, i64)
declare i32 @__gxx_personality_v0(...)
declare void @external_fill(ptr)
declare void @mw_bind(ptr, ptr, i64)
declare void @llvm.x86.avx.maskstore.ps.256(ptr, <8 x i32>, <8 x float>)
declare void @llvm.lifetime.start.p0(i64, ptr)
declare void @llvm.lifetime.end.p0(i64, ptr)

!llvm.dbg.cu = !{!0}
!llvm.module.flags = !{!3, !4}
!0 = distinct !DICompileUnit(language: DW_LANG_C11, file: !1, producer: "clang", isOptimized: false, runtimeVersion: 0, emissionKind: LineTablesOnly)
!1 = !DIFile(filename: "warnings.c", directory: "/src")
!3 = !{i32 2, !"Debug Info Version", i32 3}
!4 = !{i32 7, !"Dwarf Version", i32 5}
!5 = distinct !DISubprogram(name: "frexp_out", scope: !1, file: !1, line: 6, type: !6, scopeLine: 6, spFlags: DISPFlagDefinition, unit: !0)
!6 = !DISubroutineType(types: !7)
!7 = !{}
!8 = !DILocation(line: 7, column: 12, scope: !5)
