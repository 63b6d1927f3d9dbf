; C library functions that write through a pointer, and are not compiled with
; Midway, get their written range marked after the call: computed from the
; arguments and the result, only on success, and never larger than what was
; written. Run-time lengths go to __mw_mark_range. Most destinations below are
; in an MW_SHARED buffer, so the marks are unconditional; @unknown_destination
; shows the window check that guards everything else.
; RUN: %opt -passes=midway-instrument -S %s 2>&1 | FileCheck %s
; RUN: %opt -passes=midway-instrument -midway-instrument-lib-calls=false -S %s \
; RUN:   | FileCheck %s --check-prefix=NOLIB

target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
target triple = "x86_64-unknown-linux-gnu"

@buf = global [4096 x i8] zeroinitializer, section "mw_shared", align 16

; The calls' other pointer arguments (sources, FILE, va_list) need no warning.
; CHECK-NOT:     warning:

; CHECK-LABEL: define void @memory(
; CHECK:         call ptr @memcpy(ptr %d, ptr %s, i64 %n)
; CHECK-NEXT:    call void @__mw_mark_range(ptr %d, i64 %n), !nosanitize
; CHECK-NEXT:    call ptr @mempcpy(ptr %d, ptr %s, i64 %n)
; CHECK-NEXT:    call void @__mw_mark_range(ptr %d, i64 %n), !nosanitize
; CHECK-NEXT:    call ptr @memmove(ptr %d, ptr %s, i64 %n)
; CHECK-NEXT:    call void @__mw_mark_range(ptr %d, i64 %n), !nosanitize
; CHECK-NEXT:    call ptr @memset(ptr %d, i32 0, i64 %n)
; CHECK-NEXT:    call void @__mw_mark_range(ptr %d, i64 %n), !nosanitize
; CHECK-NEXT:    call void @bzero(ptr %d, i64 %n)
; CHECK-NEXT:    call void @__mw_mark_range(ptr %d, i64 %n), !nosanitize
; CHECK-NEXT:    call void @bcopy(ptr %s, ptr %d, i64 %n)
; CHECK-NEXT:    call void @__mw_mark_range(ptr %d, i64 %n), !nosanitize
; CHECK-NEXT:    call ptr @__memcpy_chk(ptr %d, ptr %s, i64 %n, i64 %n)
; CHECK-NEXT:    call void @__mw_mark_range(ptr %d, i64 %n), !nosanitize
; memccpy stops after the byte it looks for and returns the next address, or NULL.
; CHECK-NEXT:    %cc = call ptr @memccpy(ptr %d, ptr %s, i32 0, i64 %n)
; CHECK-NEXT:    [[END:%.*]] = ptrtoint ptr %cc to i64
; CHECK-NEXT:    [[DST:%.*]] = ptrtoint ptr %d to i64
; CHECK-NEXT:    [[COPIED:%.*]] = sub i64 [[END]], [[DST]]
; CHECK-NEXT:    [[NULL:%.*]] = icmp eq ptr %cc, null
; CHECK-NEXT:    [[LEN:%.*]] = select i1 [[NULL]], i64 %n, i64 [[COPIED]]
; CHECK-NEXT:    call void @__mw_mark_range(ptr %d, i64 [[LEN]]), !nosanitize
; CHECK-NEXT:    ret void
; NOLIB-LABEL: define void @memory(
; NOLIB-NOT:     __mw_mark_range
; NOLIB:         ret void
define void @memory(i64 %i, ptr %s, i64 %n) {
  %d = getelementptr inbounds [4096 x i8], ptr @buf, i64 0, i64 %i
  call ptr @memcpy(ptr %d, ptr %s, i64 %n)
  call ptr @mempcpy(ptr %d, ptr %s, i64 %n)
  call ptr @memmove(ptr %d, ptr %s, i64 %n)
  call ptr @memset(ptr %d, i32 0, i64 %n)
  call void @bzero(ptr %d, i64 %n)
  call void @bcopy(ptr %s, ptr %d, i64 %n)
  call ptr @__memcpy_chk(ptr %d, ptr %s, i64 %n, i64 %n)
  %cc = call ptr @memccpy(ptr %d, ptr %s, i32 0, i64 %n)
  ret void
}

; CHECK-LABEL: define void @strings(
; strcpy: the copy's length, measured after the call, and its NUL.
; CHECK:         call ptr @strcpy(ptr %d, ptr %s)
; CHECK-NEXT:    [[L1:%.*]] = call i64 @strlen(ptr %d)
; CHECK-NEXT:    [[N1:%.*]] = add i64 [[L1]], 1
; CHECK-NEXT:    call void @__mw_mark_range(ptr %d, i64 [[N1]]), !nosanitize
; stpcpy returns the address of the NUL it wrote.
; CHECK-NEXT:    %end = call ptr @stpcpy(ptr %d, ptr %s)
; CHECK-NEXT:    [[E:%.*]] = ptrtoint ptr %end to i64
; CHECK-NEXT:    [[D:%.*]] = ptrtoint ptr %d to i64
; CHECK-NEXT:    [[DIFF:%.*]] = sub i64 [[E]], [[D]]
; CHECK-NEXT:    [[N2:%.*]] = add i64 [[DIFF]], 1
; CHECK-NEXT:    call void @__mw_mark_range(ptr %d, i64 [[N2]]), !nosanitize
; strcat writes from the old end of the string only: its length is taken first.
; CHECK-NEXT:    [[OLD:%.*]] = call i64 @strlen(ptr %d)
; CHECK-NEXT:    call ptr @strcat(ptr %d, ptr %s)
; CHECK-NEXT:    [[TAIL:%.*]] = getelementptr i8, ptr %d, i64 [[OLD]]
; CHECK-NEXT:    [[L3:%.*]] = call i64 @strlen(ptr [[TAIL]])
; CHECK-NEXT:    [[N3:%.*]] = add i64 [[L3]], 1
; CHECK-NEXT:    call void @__mw_mark_range(ptr [[TAIL]], i64 [[N3]]), !nosanitize
; CHECK-NEXT:    [[OLD4:%.*]] = call i64 @strlen(ptr %d)
; CHECK-NEXT:    call ptr @strncat(ptr %d, ptr %s, i64 %n)
; CHECK-NEXT:    [[TAIL4:%.*]] = getelementptr i8, ptr %d, i64 [[OLD4]]
; CHECK:         call void @__mw_mark_range(ptr [[TAIL4]],
; strncpy and stpncpy write exactly n bytes (NUL padding included).
; CHECK:         call ptr @strncpy(ptr %d, ptr %s, i64 %n)
; CHECK-NEXT:    call void @__mw_mark_range(ptr %d, i64 %n), !nosanitize
; CHECK-NEXT:    call ptr @stpncpy(ptr %d, ptr %s, i64 %n)
; CHECK-NEXT:    call void @__mw_mark_range(ptr %d, i64 %n), !nosanitize
; CHECK-NEXT:    ret void
define void @strings(i64 %i, ptr %s, i64 %n) {
  %d = getelementptr inbounds [4096 x i8], ptr @buf, i64 0, i64 %i
  call ptr @strcpy(ptr %d, ptr %s)
  %end = call ptr @stpcpy(ptr %d, ptr %s)
  call ptr @strcat(ptr %d, ptr %s)
  call ptr @strncat(ptr %d, ptr %s, i64 %n)
  call ptr @strncpy(ptr %d, ptr %s, i64 %n)
  call ptr @stpncpy(ptr %d, ptr %s, i64 %n)
  ret void
}

; CHECK-LABEL: define void @input(
; read: the byte count it returns, nothing when it fails (-1). The kernel writes the
; buffer, so the runtime first brings in the pages of all it may write (the kernel meets a
; page this rank holds no copy of with EFAULT, not with a fault).
; CHECK:         call void @__mw_before_syscall(ptr %d, i64 %n, i32 1)
; CHECK-NEXT:    %r = call i64 @read(i32 %fd, ptr %d, i64 %n)
; CHECK-NEXT:    [[R:%.*]] = call i64 @llvm.smax.i64(i64 %r, i64 0)
; CHECK-NEXT:    call void @__mw_mark_range(ptr %d, i64 [[R]]), !nosanitize
; fread: whole items read times their size; brought in: all the items it may read.
; CHECK-NEXT:    [[ALL:%.*]] = mul i64 8, %n
; CHECK-NEXT:    call void @__mw_before_syscall(ptr %d, i64 [[ALL]], i32 1)
; CHECK-NEXT:    %items = call i64 @fread(ptr %d, i64 8, i64 %n, ptr %f)
; CHECK-NEXT:    [[B:%.*]] = mul i64 8, %items
; CHECK-NEXT:    call void @__mw_mark_range(ptr %d, i64 [[B]]), !nosanitize
; fgets: the line and its NUL, only if it read one.
; CHECK-NEXT:    %line = call ptr @fgets(ptr %d, i32 64, ptr %f)
; CHECK-NEXT:    [[OK:%.*]] = icmp ne ptr %line, null
; CHECK-NEXT:    br i1 [[OK]], label %[[THEN:.*]], label %[[DONE:.*]]
; CHECK:       [[THEN]]:
; CHECK-NEXT:    [[L:%.*]] = call i64 @strlen(ptr %d)
; CHECK-NEXT:    [[N:%.*]] = add i64 [[L]], 1
; CHECK-NEXT:    call void @__mw_mark_range(ptr %d, i64 [[N]]), !nosanitize
; CHECK-NEXT:    br label %[[DONE]]
define void @input(i32 %fd, i64 %i, i64 %n, ptr %f) {
  %d = getelementptr inbounds [4096 x i8], ptr @buf, i64 0, i64 %i
  %r = call i64 @read(i32 %fd, ptr %d, i64 %n)
  %items = call i64 @fread(ptr %d, i64 8, i64 %n, ptr %f)
  %line = call ptr @fgets(ptr %d, i32 64, ptr %f)
  ret void
}

; CHECK-LABEL: define void @output(
; The kernel reads the buffer: brought in (i32 0: for reading), nothing marked. Also from
; a pointer the pass cannot place (the runtime looks whether it is in the window), never
; from private memory, and fgets copies through user space (it faults as any code does).
; CHECK:         call void @__mw_before_syscall(ptr %d, i64 %n, i32 0)
; CHECK-NEXT:    %w = call i64 @write(i32 %fd, ptr %d, i64 %n)
; CHECK-NEXT:    call void @__mw_before_syscall(ptr %d, i64 %n, i32 0)
; CHECK-NEXT:    %pw = call i64 @pwrite(i32 %fd, ptr %d, i64 %n, i64 0)
; CHECK-NEXT:    [[ALL:%.*]] = mul i64 %n, 4
; CHECK-NEXT:    call void @__mw_before_syscall(ptr %p, i64 [[ALL]], i32 0)
; CHECK-NEXT:    %fw = call i64 @fwrite(ptr %p, i64 %n, i64 4, ptr %f)
; CHECK-NEXT:    %own = call i64 @write(i32 %fd, ptr %private, i64 16)
; CHECK-NEXT:    ret void
; NOLIB-LABEL: define void @output(
; NOLIB-NOT:     __mw_before_syscall
; NOLIB:         ret void
define void @output(i32 %fd, i64 %i, i64 %n, ptr %p, ptr %f) {
  %private = alloca [16 x i8]
  %d = getelementptr inbounds [4096 x i8], ptr @buf, i64 0, i64 %i
  %w = call i64 @write(i32 %fd, ptr %d, i64 %n)
  %pw = call i64 @pwrite(i32 %fd, ptr %d, i64 %n, i64 0)
  %fw = call i64 @fwrite(ptr %p, i64 %n, i64 4, ptr %f)
  %own = call i64 @write(i32 %fd, ptr %private, i64 16)
  ret void
}

; CHECK-LABEL: define void @printing(
; sprintf: the string and its NUL, nothing on error (negative result).
; CHECK:         %w = call i32 (ptr, ptr, ...) @sprintf(ptr %d, ptr %fmt, i32 %x)
; CHECK-NEXT:    [[W1:%.*]] = add i32 %w, 1
; CHECK-NEXT:    [[W2:%.*]] = call i32 @llvm.smax.i32(i32 [[W1]], i32 0)
; CHECK-NEXT:    [[W3:%.*]] = zext i32 [[W2]] to i64
; CHECK-NEXT:    call void @__mw_mark_range(ptr %d, i64 [[W3]]), !nosanitize
; snprintf: the same, truncated to n.
; CHECK-NEXT:    %t = call i32 (ptr, i64, ptr, ...) @snprintf(ptr %d, i64 %n, ptr %fmt, i32 %x)
; CHECK-NEXT:    [[T1:%.*]] = add i32 %t, 1
; CHECK-NEXT:    [[T2:%.*]] = call i32 @llvm.smax.i32(i32 [[T1]], i32 0)
; CHECK-NEXT:    [[T3:%.*]] = zext i32 [[T2]] to i64
; CHECK-NEXT:    [[T4:%.*]] = call i64 @llvm.umin.i64(i64 [[T3]], i64 %n)
; CHECK-NEXT:    call void @__mw_mark_range(ptr %d, i64 [[T4]]), !nosanitize
; CHECK-NEXT:    %v = call i32 @vsnprintf(ptr %d, i64 %n, ptr %fmt, ptr %ap)
; CHECK:         call i64 @llvm.umin.i64(
; CHECK-NEXT:    call void @__mw_mark_range(ptr %d,
define void @printing(i64 %i, i64 %n, ptr %fmt, i32 %x, ptr %ap) {
  %d = getelementptr inbounds [4096 x i8], ptr @buf, i64 0, i64 %i
  %w = call i32 (ptr, ptr, ...) @sprintf(ptr %d, ptr %fmt, i32 %x)
  %t = call i32 (ptr, i64, ptr, ...) @snprintf(ptr %d, i64 %n, ptr %fmt, i32 %x)
  %v = call i32 @vsnprintf(ptr %d, i64 %n, ptr %fmt, ptr %ap)
  ret void
}

; CHECK-LABEL: define void @others(
; posix_memalign stores the block's address (8 bytes) on success only.
; CHECK:         %e = call i32 @posix_memalign(ptr %slot, i64 64, i64 %n)
; CHECK-NEXT:    [[OK:%.*]] = icmp eq i32 %e, 0
; CHECK-NEXT:    [[L:%.*]] = select i1 [[OK]], i64 8, i64 0
; CHECK-NEXT:    call void @__mw_mark_range(ptr %slot, i64 [[L]]), !nosanitize
; realpath returns the buffer it filled (or NULL).
; CHECK-NEXT:    %rp = call ptr @realpath(ptr %s, ptr %d)
; CHECK-NEXT:    [[RPOK:%.*]] = icmp ne ptr %rp, null
; CHECK-NEXT:    br i1 [[RPOK]]
; CHECK:         [[RL:%.*]] = call i64 @strlen(ptr %rp)
; CHECK-NEXT:    [[RN:%.*]] = add i64 [[RL]], 1
; CHECK-NEXT:    call void @__mw_mark_range(ptr %rp, i64 [[RN]]), !nosanitize
define void @others(ptr %s, i64 %i, i64 %n) {
  %slot = getelementptr inbounds [4096 x i8], ptr @buf, i64 0, i64 %i
  %d = getelementptr inbounds [4096 x i8], ptr @buf, i64 0, i64 %n
  %e = call i32 @posix_memalign(ptr %slot, i64 64, i64 %n)
  %rp = call ptr @realpath(ptr %s, ptr %d)
  ret void
}

; The same rules as for stores: a private buffer needs no mark, an MW_SHARED one
; no window check (and a constant length is marked inline). A library call's
; destination is taken as unaligned, but @buf is known to be 16-aligned, so its 64
; bytes fill 8 whole shadow bytes: one store of all-ones.
; CHECK-LABEL: define void @provenance(
; CHECK-NEXT:    %local = alloca [64 x i8]
; CHECK-NEXT:    call ptr @memcpy(ptr %local, ptr %s, i64 %n)
; CHECK-NEXT:    call ptr @memcpy(ptr @buf, ptr %s, i64 64)
; CHECK-NEXT:    [[X:%.*]] = lshr i64 ptrtoint (ptr @buf to i64), 3
; CHECK-NEXT:    [[A:%.*]] = add i64 [[X]], 17592186044416
; CHECK-NEXT:    [[S:%.*]] = inttoptr i64 [[A]] to ptr
; CHECK-NEXT:    [[C1O:%.*]] = load i64, ptr [[S]], align 2, !nosanitize
; CHECK-NEXT:    [[C1:%.*]] = icmp ne i64 -1, [[C1O]]
; CHECK-NEXT:    br i1 [[C1]], label %[[C1S:.*]], label
; CHECK:  [[C1S]]:
; CHECK-NEXT:    store i64 -1, ptr [[S]], align 2, !nosanitize
; CHECK:    ret void
define void @provenance(ptr %s, i64 %n) {
  %local = alloca [64 x i8]
  call ptr @memcpy(ptr %local, ptr %s, i64 %n)
  call ptr @memcpy(ptr @buf, ptr %s, i64 64)
  ret void
}

declare ptr @memcpy(ptr, ptr, i64)
declare ptr @mempcpy(ptr, ptr, i64)
declare ptr @memmove(ptr, ptr, i64)
declare ptr @memset(ptr, i32, i64)
declare void @bzero(ptr, i64)
declare void @bcopy(ptr, ptr, i64)
declare ptr @__memcpy_chk(ptr, ptr, i64, i64)
declare ptr @memccpy(ptr, ptr, i32, i64)
declare ptr @strcpy(ptr, ptr)
declare ptr @stpcpy(ptr, ptr)
declare ptr @strcat(ptr, ptr)
declare ptr @strncat(ptr, ptr, i64)
declare ptr @strncpy(ptr, ptr, i64)
declare ptr @stpncpy(ptr, ptr, i64)
declare i64 @read(i32, ptr, i64)
declare i64 @write(i32, ptr, i64)
declare i64 @pwrite(i32, ptr, i64, i64)
declare i64 @fwrite(ptr, i64, i64, ptr)
declare i64 @fread(ptr, i64, i64, ptr)
declare ptr @fgets(ptr, i32, ptr)
declare i32 @sprintf(ptr, ptr, ...)
declare i32 @snprintf(ptr, i64, ptr, ...)
declare i32 @vsnprintf(ptr, i64, ptr, ptr)
declare i32 @posix_memalign(ptr, i64, i64)
declare ptr @realpath(ptr, ptr)

; Without MW_SHARED provenance the destination is checked first, and the range
; (here a strlen) is computed only for memory in the window.
; CHECK-LABEL: define void @unknown_destination(
; CHECK:         call ptr @strcpy(ptr %d, ptr %s)
; CHECK-NEXT:    [[INT:%.*]] = ptrtoint ptr %d to i64
; CHECK-NEXT:    [[OFF:%.*]] = sub i64 [[INT]], 1073741824
; CHECK-NEXT:    [[IN:%.*]] = icmp ult i64 [[OFF]], 1099511627776
; CHECK-NEXT:    br i1 [[IN]], label %[[THEN:.*]], label %[[DONE:.*]]
; CHECK:       [[THEN]]:
; CHECK-NEXT:    [[L:%.*]] = call i64 @strlen(ptr %d)
; CHECK-NEXT:    [[N:%.*]] = add i64 [[L]], 1
; CHECK-NEXT:    call void @__mw_mark_range(ptr %d, i64 [[N]]), !nosanitize
; CHECK-NEXT:    br label %[[DONE]]
; fgets: success first, then the window.
; CHECK:         %line = call ptr @fgets(ptr %d, i32 64, ptr %f)
; CHECK-NEXT:    [[OK:%.*]] = icmp ne ptr %line, null
; CHECK-NEXT:    br i1 [[OK]], label %[[READ:.*]], label
; CHECK:       [[READ]]:
; CHECK-NEXT:    ptrtoint ptr %d to i64
; CHECK-NEXT:    sub i64
; CHECK-NEXT:    icmp ult i64
; CHECK-NEXT:    br i1
; CHECK:         call i64 @strlen(ptr %d)
define void @unknown_destination(ptr %d, ptr %s, ptr %f) {
  call ptr @strcpy(ptr %d, ptr %s)
  %line = call ptr @fgets(ptr %d, i32 64, ptr %f)
  ret void
}

; An indirect call of memcpy's type is marked as memcpy if it calls one of the
; functions of that type the pass knows (a dispatch table of memcpy and memmove);
; of memset's, as memset. One of another type, or with a private destination,
; is not.
; CHECK-LABEL: define void @through_pointers(
; CHECK:         call ptr %copy(ptr %d, ptr %s, i64 %n)
; CHECK-NEXT:    [[IS1:%.*]] = icmp eq ptr %copy, @memcpy
; CHECK-NEXT:    [[IS2:%.*]] = icmp eq ptr %copy, @memmove
; CHECK-NEXT:    [[OR1:%.*]] = or i1 [[IS1]], [[IS2]]
; CHECK:         br i1 {{%.*}}, label %[[MARK:.*]], label
; CHECK:       [[MARK]]:
; CHECK-NEXT:    call void @__mw_mark_range(ptr %d, i64 %n), !nosanitize
; CHECK:         call ptr %fill(ptr %d, i32 0, i64 %n)
; CHECK-NEXT:    icmp eq ptr %fill, @memset
; CHECK:         call void @__mw_mark_range(
; CHECK:         call i32 %other(ptr %d, i64 %n)
; CHECK-NOT:     icmp eq ptr %other
; CHECK:         call ptr %copy(ptr %private, ptr %s, i64 %n)
; CHECK-NOT:     icmp eq ptr %copy
; CHECK:         ret void
define void @through_pointers(ptr %copy, ptr %fill, ptr %other, ptr %s, i64 %n) {
  %d = getelementptr inbounds [4096 x i8], ptr @buf, i64 0, i64 16
  call ptr %copy(ptr %d, ptr %s, i64 %n)
  call ptr %fill(ptr %d, i32 0, i64 %n)
  call i32 %other(ptr %d, i64 %n)
  %private = alloca [64 x i8]
  call ptr %copy(ptr %private, ptr %s, i64 %n)
  ret void
}
