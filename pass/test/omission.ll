; Each omission rule, and the two ways of marking what is not omitted. A pointer
; is classified by all of its underlying objects: all private -> no mark; all
; MW_SHARED globals -> a mark without a window check; otherwise a window check.
; RUN: %opt -passes=midway-instrument -S %s | FileCheck %s
; RUN: %opt -passes=midway-instrument -midway-omit-private=false -S %s \
; RUN:   | FileCheck %s --check-prefix=KEEP

target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
target triple = "x86_64-unknown-linux-gnu"

@shared = global [16 x i32] zeroinitializer, section "mw_shared", align 4
@shared.extern = external global [16 x i32], section "mw_shared", align 4
@private = global [16 x i32] zeroinitializer, align 4
@private.tls = thread_local global i32 0, align 4
@constant = constant [16 x i32] zeroinitializer, align 4
@extern = external global [16 x i32], align 4
@weak = weak global i32 0, align 4

; (a) Stack memory is never in the window, even when its address escapes.
; CHECK-LABEL: define void @stack(
; CHECK-NEXT:    %local = alloca i32
; CHECK-NEXT:    %escaping = alloca [4 x i32]
; CHECK-NEXT:    store i32 1, ptr %local
; CHECK-NEXT:    %e = getelementptr inbounds [4 x i32], ptr %escaping, i64 0, i64 %i
; CHECK-NEXT:    store i32 2, ptr %e
; CHECK-NEXT:    call void @use(ptr %escaping)
; CHECK-NEXT:    ret void
; KEEP-LABEL:  define void @stack(
; KEEP:          store i32 1, ptr %local
; KEEP-NEXT:     ptrtoint ptr %local
define void @stack(i64 %i) {
  %local = alloca i32
  %escaping = alloca [4 x i32]
  store i32 1, ptr %local
  %e = getelementptr inbounds [4 x i32], ptr %escaping, i64 0, i64 %i
  store i32 2, ptr %e
  call void @use(ptr %escaping)
  ret void
}

; (b) Globals defined outside section mw_shared (thread-locals included), and
; (c) constant data, need no mark.
; CHECK-LABEL: define void @globals(
; CHECK-NEXT:    %p = getelementptr inbounds [16 x i32], ptr @private, i64 0, i64 %i
; CHECK-NEXT:    store i32 1, ptr %p
; CHECK-NEXT:    store i32 2, ptr @private.tls
; CHECK-NEXT:    %c = getelementptr inbounds [16 x i32], ptr @constant, i64 0, i64 %i
; CHECK-NEXT:    store i32 3, ptr %c
; CHECK-NEXT:    ret void
define void @globals(i64 %i) {
  %p = getelementptr inbounds [16 x i32], ptr @private, i64 0, i64 %i
  store i32 1, ptr %p
  store i32 2, ptr @private.tls
  %c = getelementptr inbounds [16 x i32], ptr @constant, i64 0, i64 %i
  store i32 3, ptr %c
  ret void
}

; A declaration without the section, or a weak definition, may be an MW_SHARED
; definition elsewhere: checked, not omitted.
; CHECK-LABEL: define void @maybe_shared_globals(
; CHECK:         store i32 1, ptr @extern
; CHECK-NEXT:    icmp ult i64 sub (i64 ptrtoint (ptr @extern to i64), i64 1073741824), 1099511627776
; CHECK:         store i32 2, ptr @weak
; CHECK-NEXT:    icmp ult i64 sub (i64 ptrtoint (ptr @weak to i64), i64 1073741824), 1099511627776
define void @maybe_shared_globals() {
  store i32 1, ptr @extern
  store i32 2, ptr @weak
  ret void
}

; (d) The C library's heap is never in the window.
; CHECK-LABEL: define void @libc_heap(
; CHECK-NEXT:    %m = call ptr @malloc(i64 64)
; CHECK-NEXT:    store i32 1, ptr %m
; CHECK-NEXT:    %c = call ptr @calloc(i64 4, i64 16)
; CHECK-NEXT:    store i32 2, ptr %c
; CHECK-NEXT:    %r = call ptr @realloc(ptr %m, i64 128)
; CHECK-NEXT:    store i32 3, ptr %r
; CHECK-NEXT:    %a = call ptr @aligned_alloc(i64 64, i64 64)
; CHECK-NEXT:    store i32 4, ptr %a
; CHECK-NEXT:    %n = call ptr @_Znwm(i64 16)
; CHECK-NEXT:    store i32 5, ptr %n
; CHECK-NEXT:    ret void
; KEEP-LABEL:  define void @libc_heap(
; KEEP:          store i32 1, ptr %m
; KEEP-NEXT:     ptrtoint ptr %m
define void @libc_heap() {
  %m = call ptr @malloc(i64 64)
  store i32 1, ptr %m
  %c = call ptr @calloc(i64 4, i64 16)
  store i32 2, ptr %c
  %r = call ptr @realloc(ptr %m, i64 128)
  store i32 3, ptr %r
  %a = call ptr @aligned_alloc(i64 64, i64 64)
  store i32 4, ptr %a
  %n = call ptr @_Znwm(i64 16)
  store i32 5, ptr %n
  ret void
}

; posix_memalign leaves its block in a slot that is otherwise only read.
; CHECK-LABEL: define void @posix_memalign_block(
; CHECK:         %block = load ptr, ptr %slot
; CHECK-NEXT:    store i32 1, ptr %block
; CHECK-NEXT:    ret void
define void @posix_memalign_block() {
  %slot = alloca ptr
  %err = call i32 @posix_memalign(ptr %slot, i64 64, i64 256)
  %block = load ptr, ptr %slot
  store i32 1, ptr %block
  ret void
}

; A slot that is also written some other way may hold any pointer.
; CHECK-LABEL: define void @posix_memalign_overwritten(
; CHECK:         store i32 1, ptr %block
; CHECK-NEXT:    ptrtoint ptr %block
define void @posix_memalign_overwritten(ptr %other) {
  %slot = alloca ptr
  %err = call i32 @posix_memalign(ptr %slot, i64 64, i64 256)
  store ptr %other, ptr %slot
  %block = load ptr, ptr %slot
  store i32 1, ptr %block
  ret void
}

; -fno-builtin: a nobuiltin malloc is not trusted to be the C library's.
; CHECK-LABEL: define void @nobuiltin_malloc(
; CHECK:         store i32 1, ptr %m
; CHECK-NEXT:    ptrtoint ptr %m
define void @nobuiltin_malloc() {
  %m = call ptr @malloc(i64 64) nobuiltin
  store i32 1, ptr %m
  ret void
}

; MW_SHARED globals, defined here or declared: a mark without a window check.
; CHECK-LABEL: define void @shared_globals(
; CHECK-NEXT:    %p = getelementptr inbounds [16 x i32], ptr @shared, i64 0, i64 %i
; CHECK-NEXT:    store i32 1, ptr %p
; CHECK-NEXT:    [[INT:%.*]] = ptrtoint ptr %p to i64
; CHECK-NEXT:    [[BIT:%.*]] = and i64 [[INT]], 7
; CHECK-NEXT:    [[BIT8:%.*]] = trunc i64 [[BIT]] to i8
; CHECK-NEXT:    [[BITS:%.*]] = shl i8 15, [[BIT8]]
; CHECK-NEXT:    [[INT2:%.*]] = ptrtoint ptr %p to i64
; CHECK-NEXT:    [[IDX:%.*]] = lshr i64 [[INT2]], 3
; CHECK-NEXT:    [[SH:%.*]] = add i64 [[IDX]], 17592186044416
; CHECK-NEXT:    [[SHP:%.*]] = inttoptr i64 [[SH]] to ptr
; CHECK-NEXT:    [[OLD:%.*]] = load i8, ptr [[SHP]], align 1, !nosanitize
; CHECK-NEXT:    [[NEW:%.*]] = or i8 [[OLD]], [[BITS]]
; CHECK-NEXT:    [[C1:%.*]] = icmp ne i8 [[NEW]], [[OLD]]
; CHECK-NEXT:    br i1 [[C1]], label %[[C1S:.*]], label
; CHECK:  [[C1S]]:
; CHECK-NEXT:    store i8 [[NEW]], ptr [[SHP]], align 1, !nosanitize
; CHECK:    store i32 2, ptr @shared.extern
; CHECK-NEXT:    [[EBIT:%.*]] = and i64 ptrtoint (ptr @shared.extern to i64), 7
; CHECK-NEXT:    [[EBIT8:%.*]] = trunc i64 [[EBIT]] to i8
; CHECK-NEXT:    [[EBITS:%.*]] = shl i8 15, [[EBIT8]]
; CHECK-NEXT:    [[EIDX:%.*]] = lshr i64 ptrtoint (ptr @shared.extern to i64), 3
; CHECK-NEXT:    [[ESH:%.*]] = add i64 [[EIDX]], 17592186044416
; CHECK-NEXT:    [[ESHP:%.*]] = inttoptr i64 [[ESH]] to ptr
; CHECK-NEXT:    [[EOLD:%.*]] = load i8, ptr [[ESHP]], align 1, !nosanitize
; CHECK-NEXT:    [[ENEW:%.*]] = or i8 [[EOLD]], [[EBITS]]
; CHECK-NEXT:    [[C2:%.*]] = icmp ne i8 [[ENEW]], [[EOLD]]
; CHECK-NEXT:    br i1 [[C2]], label %[[C2S:.*]], label
; CHECK:  [[C2S]]:
; CHECK-NEXT:    store i8 [[ENEW]], ptr [[ESHP]], align 1, !nosanitize
; CHECK:    ret void
define void @shared_globals(i64 %i) {
  %p = getelementptr inbounds [16 x i32], ptr @shared, i64 0, i64 %i
  store i32 1, ptr %p
  store i32 2, ptr @shared.extern
  ret void
}

; Every underlying object counts: private or private -> omitted; shared or
; private -> checked; unknown (an argument) -> checked.
; CHECK-LABEL: define void @select_objects(
; CHECK-NEXT:    %local = alloca i32
; CHECK-NEXT:    %pp = select i1 %c, ptr %local, ptr @private
; CHECK-NEXT:    store i32 1, ptr %pp
; CHECK-NEXT:    %sp = select i1 %c, ptr %local, ptr @shared
; CHECK-NEXT:    store i32 2, ptr %sp
; CHECK-NEXT:    ptrtoint ptr %sp
; CHECK-NEXT:    sub
; CHECK-NEXT:    icmp ult
; CHECK-NEXT:    br i1
; CHECK:         %ap = select i1 %c, ptr %arg, ptr @shared
; CHECK-NEXT:    store i32 3, ptr %ap
; CHECK-NEXT:    ptrtoint ptr %ap
; CHECK-NEXT:    sub
define void @select_objects(i1 %c, ptr %arg) {
  %local = alloca i32
  %pp = select i1 %c, ptr %local, ptr @private
  store i32 1, ptr %pp
  %sp = select i1 %c, ptr %local, ptr @shared
  store i32 2, ptr %sp
  %ap = select i1 %c, ptr %arg, ptr @shared
  store i32 3, ptr %ap
  ret void
}

; Pointers loaded from memory, or made from integers, are unknown.
; CHECK-LABEL: define void @unknown(
; CHECK:         store i32 1, ptr %loaded
; CHECK-NEXT:    ptrtoint ptr %loaded
; CHECK:         store i32 2, ptr %fromint
; CHECK-NEXT:    ptrtoint ptr %fromint
define void @unknown(ptr %pp, i64 %addr) {
  %loaded = load ptr, ptr %pp
  store i32 1, ptr %loaded
  %fromint = inttoptr i64 %addr to ptr
  store i32 2, ptr %fromint
  ret void
}

declare void @use(ptr)
declare ptr @malloc(i64)
declare ptr @calloc(i64, i64)
declare ptr @realloc(ptr, i64)
declare ptr @aligned_alloc(i64, i64)
declare noalias ptr @_Znwm(i64)
declare i32 @posix_memalign(ptr, i64, i64)
