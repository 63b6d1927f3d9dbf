// Faults that are not copyset faults are reported naming the address, what lies there
// and the rank; the rank then dies by SIGSEGV, and mwrun says so. The program and its
// CHECK lines are in misuse_rc.c (this file holds only the runs, so that lit runs them
// next to misuse_rc.c's, in parallel).
// RUN: %mwcc -O1 %S/misuse_rc.c -o %t
// A fault outside the window.
// RUN: not %mwrun -n 2 %t segv-outside 1 2>&1 | FileCheck %S/misuse_rc.c --check-prefix=OUTSIDE
// RUN: not %mwrun -n 3 --model pc %t segv-outside 2 2>&1 | FileCheck %S/misuse_rc.c --check-prefix=OUTSIDE2
// A touch of another rank's part of the shared heap that it never allocated.
// RUN: not %mwrun -n 2 %t segv-heap 0 2>&1 | FileCheck %S/misuse_rc.c --check-prefix=HEAP
// RUN: not %mwrun -n 2 --provider 'tcp;ofi_rxm' %t segv-heap 1 2>&1 | FileCheck %S/misuse_rc.c --check-prefix=HEAP1
// ... and of this rank's own part, past what it allocated.
// RUN: not %mwrun -n 2 %t segv-own-heap 1 2>&1 | FileCheck %S/misuse_rc.c --check-prefix=OWN-HEAP
// Under mwrun --trace, ranks stopped before mw_finalize leave no timeline, and mwrun says so.
// RUN: not %mwrun -n 2 --trace=%t.trace.json %t segv-outside 1 2>&1 | FileCheck %S/misuse_rc.c --check-prefix=TRACE-CRASH
// RUN: not %mwrun -n 2 --trace= %t ok 2>&1 | FileCheck %S/misuse_rc.c --check-prefix=TRACE-EMPTY
// A one-rank job reports them too, started by mwrun or not.
// RUN: not %mwrun -n 1 %t segv-own-heap 0 2>&1 | FileCheck %S/misuse_rc.c --check-prefix=ONE-HEAP
// RUN: not --crash %t segv-outside 0 2>&1 | FileCheck %S/misuse_rc.c --check-prefix=ONE-OUTSIDE
