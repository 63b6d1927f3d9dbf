// A misuse error says where the program made the failed call, and a crash names the
// faulting instruction; a rank that runs out of stack says so before it dies. Built with
// -g, as a user hunting a bug builds: the call site then has its line.
// RUN: %mwcc -O1 -g %s -o %t
// RUN: not %t release-unheld 2>&1 | FileCheck %s --check-prefix=UNHELD
// A call made in an inlined function is named there, then where it was inlined.
// RUN: not %t inlined 2>&1 | FileCheck %s --check-prefix=INLINED
// RUN: not %mwrun -n 2 %t nested 2>&1 | FileCheck %s --check-prefix=NESTED
// RUN: not %mwrun -n 2 %t stack 2>&1 | FileCheck %s --check-prefix=STACK
// RUN: not %mwrun -n 2 %t null 2>&1 | FileCheck %s --check-prefix=NULL
// A static local is named as the source (and gdb) writes it, main::c, not main.c.
// RUN: not %t static-local 2>&1 | FileCheck %s --check-prefix=STATIC
// mw_free says what the pointer is instead of a block: another rank's, or static data.
// RUN: not %mwrun -n 2 %t free-other 2>&1 | FileCheck %s --check-prefix=FREE-OTHER
// RUN: not %t free-static 2>&1 | FileCheck %s --check-prefix=FREE-STATIC
// A rank that exits holding a lock, without mw_finalize, names the lock its peers lose.
// RUN: not %mwrun -n 2 %t exit-lock 2>&1 | FileCheck %s --check-prefix=EXIT-LOCK
// An error after the call returned names no call site (the runtime's own exit handler).
// RUN: not %t exit-holding 2>&1 | FileCheck %s --check-prefix=EXIT
#include <midway.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

MW_SHARED mw_lock_t guard;
MW_SHARED mw_barrier_t phase;
MW_SHARED int data[16];
MW_SHARED int *published;

// Not inlined, and the call not a tail call (which returns to main), so that the call
// site is this function's.
__attribute__((noinline)) void free_twice(void *p) {
  mw_free(p);
  // NESTED: midway: mw_free: {{.*}}(rank 1)
  // NESTED-NEXT: midway: mw_free was called from free_twice+0x{{[0-9a-f]+}} at {{.*}}error_sites.c:[[@LINE+1]] (rank 1)
  mw_free(p);
  __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) int recurse(int n) {
  volatile char frame[4096];
  memset((char *)frame, n, sizeof frame);
  return n == 0 ? 0 : recurse(n - 1) + frame[n % 4096];
}

__attribute__((noinline)) int touch(volatile int *p) { return *p; }

static inline __attribute__((always_inline)) void release_it(mw_lock_t *l) { mw_release(l); }

int main(int argc, char **argv) {
  const char *what = argc > 1 ? argv[1] : "ok";
  mw_init(&argc, &argv);
  if (!strcmp(what, "release-unheld")) {
    // UNHELD: midway: mw_release: lock guard is not held by this rank (rank 0)
    // UNHELD-NEXT: midway: mw_release was called from main+0x{{[0-9a-f]+}} at {{.*}}error_sites.c:[[@LINE+1]] (rank 0)
    mw_release(&guard);
  }
  if (!strcmp(what, "inlined")) {
    // INLINED: midway: mw_release: lock guard is not held by this rank (rank 0)
    // INLINED-NEXT: midway: mw_release was called from release_it at {{.*}}error_sites.c:{{[0-9]+}}, inlined in main+0x{{[0-9a-f]+}} at {{.*}}error_sites.c:[[@LINE+1]] (rank 0)
    release_it(&guard);
  }
  if (!strcmp(what, "nested") && mw_rank() == 1) free_twice(mw_malloc(64));
  if (!strcmp(what, "stack") && mw_rank() == 1) {
    // STACK: midway: rank 1: segmentation fault at 0x{{[0-9a-f]+}}: stack overflow (deep recursion, or large local arrays): raise the limit (ulimit -s) or allocate the arrays with malloc, by recurse+{{0|0x[0-9a-f]+}} (pc 0x{{[0-9a-f]+}})
    // STACK: mwrun: rank 1 (pid {{[0-9]+}}) was killed by signal 11 (SIGSEGV) in recurse+{{0x[0-9a-f]+}} at {{.*}}error_sites.c:{{[0-9]+}}; stopping the job
    printf("%d\n", recurse(1 << 30));
  }
  if (!strcmp(what, "null") && mw_rank() == 1) {
    // NULL: midway: rank 1: segmentation fault at (nil) (outside the shared window), by touch+{{0|0x[0-9a-f]+}} (pc 0x{{[0-9a-f]+}})
    // NULL-NEXT: mwrun: rank 1 (pid {{[0-9]+}}) was killed by signal 11 (SIGSEGV) in touch+{{0|0x[0-9a-f]+}} at {{.*}}error_sites.c:{{[0-9]+}}; stopping the job
    printf("%d\n", touch((volatile int *)(argc > 1000 ? data : NULL)));
  }
  if (!strcmp(what, "static-local")) {
    // STATIC: midway: mw_cond_wait: lock guard is not held exclusively by this rank: acquire it (MW_EXCLUSIVE) before waiting on condition main::c (rank 0)
    static MW_SHARED mw_cond_t c;
    mw_acquire(&guard, MW_NONEXCLUSIVE);
    mw_cond_wait(&c, &guard);
  }
  if (!strcmp(what, "free-other")) {
    // FREE-OTHER: midway: mw_free: 0x{{[0-9a-f]+}} is not a live block from mw_malloc on this rank: it is in rank 0's part of the shared heap, and only the rank that allocated a block frees it (rank 1)
    if (mw_rank() == 0) published = mw_malloc(64);
    mw_barrier(&phase);
    if (mw_rank() == 1) mw_free(published);
  }
  if (!strcmp(what, "free-static")) {
    // FREE-STATIC: midway: mw_free: 0x{{[0-9a-f]+}} is not a live block from mw_malloc on this rank: it is MW_SHARED data (data[2]), which lives as long as the program (rank 0)
    mw_free(&data[2]);
  }
  if (!strcmp(what, "exit-lock")) {
    // EXIT-LOCK: midway: warning: exit: this rank exits without mw_finalize, holding lock guard (exclusive): no other rank can have it (rank 0)
    // EXIT-LOCK: mwrun: rank 0 (pid {{[0-9]+}}) exited with status 0 without calling mw_finalize
    if (mw_rank() == 0) mw_acquire(&guard, MW_EXCLUSIVE);
    mw_barrier(&phase);  // rank 1 asks only once rank 0 holds it
    if (mw_rank() == 0) exit(0);
    mw_acquire(&guard, MW_EXCLUSIVE);
  }
  if (!strcmp(what, "exit-holding")) {
    // EXIT: midway: mw_finalize: lock guard is still held by this rank (exclusive): release every lock before mw_finalize (rank 0)
    // EXIT-NOT: was called from
    mw_fork_serve();
    mw_acquire(&guard, MW_EXCLUSIVE);
    exit(0);
  }
  mw_barrier(&phase);
  mw_finalize();
  return 0;
}
