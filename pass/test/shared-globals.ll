; -midway-shared-globals (mwcc -fmidway-shared-globals): every global and static
; variable the module defines is shared, as threads share them, except what is
; not the program's writable data. Stack memory stays private: no window checks,
; no warnings.
; RUN: %opt -passes=midway-instrument -midway-shared-globals -S %s 2>%t.err | FileCheck %s
; RUN: FileCheck %s --check-prefix=WARN < %t.err
; RUN: %opt -passes=midway-instrument -S %s 2>/dev/null | FileCheck %s --check-prefix=DEFAULT

target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
target triple = "x86_64-unknown-linux-gnu"

; Shared: zero-initialized data in the NOBITS section, the rest in mw_shared.
; CHECK-DAG: @global.zero = global [1024 x double] zeroinitializer, align 16 #[[BSS:[0-9]+]]
; CHECK-DAG: @global.init = global i32 1, section "mw_shared", align 4 #[[DATA:[0-9]+]]
; CHECK-DAG: @file.static = internal global i32 0, align 4 #[[BSS]]
; CHECK-DAG: @f.local.static = internal unnamed_addr global i64 5, section "mw_shared", align 8 #[[DATA]]
; CHECK-DAG: @.compoundliteral = internal global [2 x i32] [i32 1, i32 2], section "mw_shared", align 4 #[[DATA]]
; CHECK-DAG: @weak.def = weak global i32 0, align 4 #[[BSS]]
; CHECK-DAG: @already = global i32 0, align 4 #[[BSS]]
@global.zero = global [1024 x double] zeroinitializer, align 16
@global.init = global i32 1, align 4
@file.static = internal global i32 0, align 4
@f.local.static = internal unnamed_addr global i64 5, align 8
@.compoundliteral = internal global [2 x i32] [i32 1, i32 2], align 4
@weak.def = weak global i32 0, align 4
@already = global i32 0, section "mw_shared", align 4

; Not shared, each for its reason: thread-locals, constants and string literals,
; LLVM's own arrays, globals in other sections (chosen by the program, the
; pragma or an instrumentation), instrumentation counters, C++ guard variables,
; declarations, and another module's definition copied for inlining.
; CHECK-DAG: @tls = thread_local global i32 0, align 4{{$}}
; CHECK-DAG: @constant = constant [4 x i32] [i32 1, i32 2, i32 3, i32 4], align 4{{$}}
; CHECK-DAG: @.str = private unnamed_addr constant [6 x i8] c"hello\00", align 1{{$}}
; CHECK-DAG: @other.section = global i32 0, section "mine", align 4{{$}}
; CHECK-DAG: @other.pragma = global i32 0, align 4 #[[OTHER:[0-9]+]]
; CHECK-DAG: @__llvm_gcov_ctr = internal global [4 x i64] zeroinitializer{{$}}
; CHECK-DAG: @__profc_f = private global [1 x i64] zeroinitializer, section "__llvm_prf_cnts", align 8{{$}}
; CHECK-DAG: @_ZGVZ1gvE1x = internal global i64 0, align 8{{$}}
; CHECK-DAG: @extern = external global i32, align 4{{$}}
; CHECK-DAG: @avail = available_externally global i32 3, align 4{{$}}
@tls = thread_local global i32 0, align 4
@constant = constant [4 x i32] [i32 1, i32 2, i32 3, i32 4], align 4
@.str = private unnamed_addr constant [6 x i8] c"hello\00", align 1
@other.section = global i32 0, section "mine", align 4
@other.pragma = global i32 0, align 4 #0
@__llvm_gcov_ctr = internal global [4 x i64] zeroinitializer
@__profc_f = private global [1 x i64] zeroinitializer, section "__llvm_prf_cnts", align 8
@_ZGVZ1gvE1x = internal global i64 0, align 8
@extern = external global i32, align 4
@avail = available_externally global i32 3, align 4
@llvm.used = appending global [1 x ptr] [ptr @other.section], section "llvm.metadata"

; A common symbol (-fcommon) cannot take a section: it stays private, and the pass
; says so (mwcc passes -fno-common).
; CHECK-DAG: @common = common global i32 0, align 4{{$}}
; WARN: warning: midway: {{.*}}shared-globals.ll: 'common' is a common symbol, which cannot be shared; it stays private to each rank: compile with -fno-common
; WARN-NOT: warning
@common = common global i32 0, align 4

; Stores to the shared globals are marked without a window check; stores to the
; stack (escaping or not) and to what stays private are not marked, and nothing
; is range-checked.
; CHECK-LABEL: define void @stores(
; CHECK:         store double 1.0{{.*}}, ptr %p
; CHECK-NEXT:    [[A:%.*]] = ptrtoint ptr %p to i64
; CHECK-NEXT:    lshr i64 [[A]], 3
; CHECK:         store i32 2, ptr @file.static
; CHECK:         lshr i64 ptrtoint (ptr @file.static to i64), 3
; CHECK:         store i32 3, ptr %local
; CHECK-NEXT:    call void @use(ptr %local)
; CHECK-NEXT:    store i32 4, ptr @tls
; CHECK-NEXT:    store i32 5, ptr @other.section
; CHECK-NEXT:    store i64 6, ptr @_ZGVZ1gvE1x
; CHECK-NEXT:    ret void
; CHECK-NOT:   midway.in.window
define void @stores(i64 %i) {
  %local = alloca i32
  %p = getelementptr inbounds [1024 x double], ptr @global.zero, i64 0, i64 %i
  store double 1.0, ptr %p, align 8
  store i32 2, ptr @file.static, align 4
  store i32 3, ptr %local, align 4
  call void @use(ptr %local)
  store i32 4, ptr @tls, align 4
  store i32 5, ptr @other.section, align 4
  store i64 6, ptr @_ZGVZ1gvE1x, align 8
  ret void
}

; Without the option, only MW_SHARED data is shared.
; DEFAULT-DAG: @global.zero = global [1024 x double] zeroinitializer, align 16{{$}}
; DEFAULT-DAG: @global.init = global i32 1, align 4{{$}}
; DEFAULT-DAG: @already = global i32 0, align 4 #{{[0-9]+}}

declare void @use(ptr)

; CHECK-DAG: attributes #[[BSS]] = { "bss-section"="mw_shared_bss" "data-section"="mw_shared" }
; CHECK-DAG: attributes #[[DATA]] = { "data-section"="mw_shared" }
; CHECK-DAG: attributes #[[OTHER]] = { "data-section"="mine" }
attributes #0 = { "data-section"="mine" }
