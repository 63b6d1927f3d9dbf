; Which globals are shared, and where the pass puts them. A global is shared if it
; is in section mw_shared (MW_SHARED) or if `#pragma clang section` puts it there:
; clang records the pragma as "data-section"/"bss-section" attributes, which the
; backend applies by the global's kind, never as a section the IR shows. Stores to
; shared globals are marked without a window check; the pass then gives every
; shared definition one form: zero-initialized data goes to the NOBITS section
; mw_shared_bss (through "bss-section", so that it takes no room in the file, and
; "data-section" for -fno-zero-initialized-in-bss), the rest to section mw_shared.
; RUN: %opt -passes=midway-instrument -S %s | FileCheck %s
; RUN: %opt -passes=midway-instrument %s -o - | llc -O1 -o - | FileCheck %s --check-prefix=ASM
; Before the fix, a store to a pragma global was left unmarked (the pass read only
; the IR's section): -midway-instrument=false shows the input as it was.
; RUN: %opt -passes=midway-instrument -midway-instrument=false -S %s \
; RUN:   | FileCheck %s --check-prefix=OFF

target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
target triple = "x86_64-unknown-linux-gnu"

; CHECK-DAG: @explicit.zero = global [4 x i32] zeroinitializer, align 4 #[[BSS:[0-9]+]]
; CHECK-DAG: @explicit.init = global i32 5, section "mw_shared", align 4
; CHECK-DAG: @pragma.data.zero = global i32 0, align 4 #[[BSS]]
; CHECK-DAG: @pragma.data.init = global i32 3, section "mw_shared", align 4 #[[DATA:[0-9]+]]
; CHECK-DAG: @pragma.bss.zero = internal global [4 x i32] zeroinitializer, align 4 #[[BSS]]
; CHECK-DAG: @pragma.bss.init = global i32 3, align 4 #[[BSSONLY:[0-9]+]]
; CHECK-DAG: @pragma.const = constant i32 7, align 4 #[[DATA]]
; CHECK-DAG: @pragma.tls = thread_local global i32 0, align 4 #[[DATA]]
; CHECK-DAG: @plain = global i32 0, align 4{{$}}
@explicit.zero = global [4 x i32] zeroinitializer, section "mw_shared", align 4
@explicit.init = global i32 5, section "mw_shared", align 4
@pragma.data.zero = global i32 0, align 4 #0
@pragma.data.init = global i32 3, align 4 #0
@pragma.bss.zero = internal global [4 x i32] zeroinitializer, align 4 #1
@pragma.bss.init = global i32 3, align 4 #1
@pragma.const = constant i32 7, align 4 #0
@pragma.tls = thread_local global i32 0, align 4 #0
@plain = global i32 0, align 4

; The backend's placement: data with initial values in mw_shared (PROGBITS),
; zero-initialized data in mw_shared_bss (NOBITS), the rest where it was.
; ASM-DAG: .section mw_shared,"aw",@progbits{{$}}
; ASM-DAG: .section mw_shared_bss,"aw",@nobits
; ASM-NOT: .section mw_shared,"aw",@nobits
; ASM-NOT: .section mw_shared_bss,"aw",@progbits

; Every shared global: a mark without a window check. A pragma's bss="mw_shared"
; does not apply to data with an initial value (the backend puts it in .data),
; nor any pragma to constants or thread-locals: those stores need no mark.
; CHECK-LABEL: define void @stores(
; CHECK-NEXT:    store i32 1, ptr @explicit.zero, align 4
; CHECK:         lshr i64 ptrtoint (ptr @explicit.zero to i64), 3
; CHECK:         store i32 2, ptr @explicit.init, align 4
; CHECK:         lshr i64 ptrtoint (ptr @explicit.init to i64), 3
; CHECK:         store i32 3, ptr @pragma.data.zero, align 4
; CHECK:         lshr i64 ptrtoint (ptr @pragma.data.zero to i64), 3
; CHECK:         store i32 4, ptr @pragma.data.init, align 4
; CHECK:         lshr i64 ptrtoint (ptr @pragma.data.init to i64), 3
; CHECK:         store i32 5, ptr @pragma.bss.zero, align 4
; CHECK:         lshr i64 ptrtoint (ptr @pragma.bss.zero to i64), 3
; CHECK:         store i32 6, ptr @pragma.bss.init, align 4
; CHECK-NEXT:    store i32 8, ptr @pragma.tls, align 4
; CHECK-NEXT:    store i32 9, ptr @plain, align 4
; CHECK-NEXT:    ret void
; CHECK-NOT:   midway.in.window
; OFF-LABEL: define void @stores(
; OFF-NOT:     lshr
; OFF:         ret void
define void @stores() {
  store i32 1, ptr @explicit.zero, align 4
  store i32 2, ptr @explicit.init, align 4
  store i32 3, ptr @pragma.data.zero, align 4
  store i32 4, ptr @pragma.data.init, align 4
  store i32 5, ptr @pragma.bss.zero, align 4
  store i32 6, ptr @pragma.bss.init, align 4
  store i32 8, ptr @pragma.tls, align 4
  store i32 9, ptr @plain, align 4
  ret void
}

; CHECK-DAG: attributes #[[BSS]] = { "bss-section"="mw_shared_bss" "data-section"="mw_shared" }
; CHECK-DAG: attributes #[[DATA]] = { "data-section"="mw_shared" }
; CHECK-DAG: attributes #[[BSSONLY]] = { "bss-section"="mw_shared" }
attributes #0 = { "data-section"="mw_shared" }
attributes #1 = { "bss-section"="mw_shared" }
