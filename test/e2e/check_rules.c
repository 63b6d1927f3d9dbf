// The checker (mwcc -fmidway-check): each rule of entry consistency broken once, and the
// report a user reads: the kind, the access (load/store, size, variable and element), its
// source line, the lock by name and where it was bound, the locks held, the rank; the
// rank exits with status 66. A correct program reports nothing.
// RUN: %mwcc -fmidway-check -O1 %s -o %t
// RUN: not %mwrun -n 2 %t store-unheld 2>&1 | FileCheck %s --check-prefix=UNHELD
// RUN: not %mwrun -n 2 %t store-shared 2>&1 | FileCheck %s --check-prefix=SHARED
// RUN: not %mwrun -n 2 %t load-unheld 2>&1 | FileCheck %s --check-prefix=LOAD
// RUN: not %mwrun -n 2 %t heap 2>&1 | FileCheck %s --check-prefix=HEAP
// RUN: not %mwrun -n 2 %t heap-other 2>&1 | FileCheck %s --check-prefix=HEAP-OTHER
// RUN: env FI_TCP_IFACE=lo not %mwrun -n 2 --provider tcp %t store-unheld 2>&1 | FileCheck %s --check-prefix=UNHELD
// One report per (kind, site, lock), however often the access runs; every kind and
// site reported before the exit.
// RUN: not %mwrun -n 1 %t twice 2>&1 | FileCheck %s --check-prefix=TWICE
// MW_CHECK=abort: the first report stops the rank.
// RUN: env MW_CHECK=abort not %mwrun -n 1 %t twice 2>&1 | FileCheck %s --check-prefix=ABORT
// RUN: %mwrun -n 1 %t ok 2>&1 | FileCheck %s --check-prefix=OK --allow-empty
// RUN: %mwrun -n 2 %t ok 2>&1 | FileCheck %s --check-prefix=OK --allow-empty
// RUN: %mwrun -n 4 %t ok 2>&1 | FileCheck %s --check-prefix=OK --allow-empty
// RUN: %mwrun -n 8 %t ok 2>&1 | FileCheck %s --check-prefix=OK --allow-empty
// RUN: %mwrun -n 8 --model rc %t ok 2>&1 | FileCheck %s --check-prefix=OK --allow-empty
// RUN: %mwrun -n 8 --model pc %t ok 2>&1 | FileCheck %s --check-prefix=OK --allow-empty
// Under rc a lock only orders: its bindings ship nothing, and these are not errors.
// RUN: %mwrun -n 2 --model rc %t store-unheld 2>&1 | FileCheck %s --check-prefix=OK --allow-empty
#include <midway.h>
#include <stdio.h>
#include <string.h>

MW_SHARED mw_lock_t total_lock;
MW_SHARED mw_lock_t row_lock[4];
MW_SHARED int total;
MW_SHARED double A[4][8];
MW_SHARED mw_barrier_t done;
MW_SHARED int *shared_block;

static void bind_all(void) {
  mw_bind(&total_lock, &total, sizeof total);
  for (int r = 0; r < 4; r++) mw_bind(&row_lock[r], A[r], sizeof A[r]);
}

int main(int argc, char **argv) {
  const char *what = argc > 1 ? argv[1] : "ok";
  mw_init(&argc, &argv);
  bind_all();
  mw_barrier(&done);
  const int me = mw_rank();
  if (!strcmp(what, "store-unheld") && me == 1) {
    // UNHELD: midway: check: store to lock-bound data without holding its lock (rank 1)
    // UNHELD-NEXT: store of 4 bytes to total at {{.*}}check_rules.c:[[@LINE+4]]:{{[0-9]+}} in main
    // UNHELD-NEXT: bound to lock total_lock with total +4 bytes (mw_bind called from {{bind_all\+0x[0-9a-f]+ at .*check_rules.c:37|bind_all at .*check_rules.c:37, inlined in main\+0x[0-9a-f]+ at .*check_rules.c:[0-9]+}})
    // UNHELD-NEXT: locks rank 1 holds: none
    // UNHELD: mwrun: rank 1 (pid {{[0-9]+}}) exited with status 66
    total = 42;
  }
  if (!strcmp(what, "store-shared") && me == 1) {
    // SHARED: midway: check: store to lock-bound data holding its lock only MW_NONEXCLUSIVE (rank 1)
    // SHARED-NEXT: store of 8 bytes to A[2][5] at {{.*}}check_rules.c:[[@LINE+4]]:{{[0-9]+}} in main
    // SHARED-NEXT: bound to lock row_lock[2] with A[2][0] +64 bytes (mw_bind called from {{bind_all\+0x[0-9a-f]+ at .*check_rules.c:38|bind_all at .*check_rules.c:38, inlined in main\+0x[0-9a-f]+ at .*check_rules.c:[0-9]+}})
    // SHARED-NEXT: locks rank 1 holds: row_lock[2] (MW_NONEXCLUSIVE)
    mw_acquire(&row_lock[2], MW_NONEXCLUSIVE);
    A[2][5] += 1.0;
    mw_release(&row_lock[2]);
  }
  if (!strcmp(what, "load-unheld") && me == 0) {
    // LOAD: midway: check: load of lock-bound data without holding its lock (rank 0)
    // LOAD-NEXT: load of 8 bytes from A[3][1] at {{.*}}check_rules.c:[[@LINE+4]]:{{[0-9]+}} in main
    // LOAD-NEXT: bound to lock row_lock[3] with A[3][0] +64 bytes
    // LOAD-NEXT: locks rank 0 holds: total_lock (MW_EXCLUSIVE)
    mw_acquire(&total_lock, MW_EXCLUSIVE);
    volatile double x = A[3][1];
    (void)x;
    mw_release(&total_lock);
  }
  if (!strcmp(what, "heap") && me == 0) {
    // HEAP: midway: check: store to lock-bound data without holding its lock (rank 0)
    // HEAP-NEXT: store of 4 bytes to offset 12 of mw_malloc(64) (called from main+0x{{[0-9a-f]+}} at {{.*}}check_rules.c:[[@LINE+2]]) at {{.*}}check_rules.c:[[@LINE+4]]
    // HEAP-NEXT: bound to lock total_lock with offset 0 of mw_malloc(64) (called from main+0x{{[0-9a-f]+}} at {{.*}}check_rules.c:[[@LINE+1]]) +64 bytes (mw_bind called from main+0x{{[0-9a-f]+}} at {{.*}}check_rules.c:[[@LINE+2]])
    int *volatile block = mw_malloc(64);
    mw_bind(&total_lock, block, 64);  // holding no lock yet: the start-up pattern
    block[3] = 7;
  }
  if (!strcmp(what, "heap-other")) {
    // A block of another rank's: only its allocator knows its call site, but the address
    // says which rank that is.
    // HEAP-OTHER: midway: check: store to lock-bound data without holding its lock (rank 1)
    // HEAP-OTHER-NEXT: store of 4 bytes to 0x{{[0-9a-f]+}} (in a block of mw_malloc memory rank 0 allocated) at {{.*}}check_rules.c:[[@LINE+6]]
    if (me == 0) shared_block = mw_malloc(64);
    mw_barrier(&done);
    int *volatile block = shared_block;
    mw_bind(&total_lock, block, 64);
    mw_barrier(&done);
    if (me == 1) block[3] = 7;
    mw_barrier(&done);
  }
  if (!strcmp(what, "twice")) {
    // TWICE-COUNT-1: store to lock-bound data without holding its lock
    // TWICE: midway: check: 2 reports: exiting with status 66 (rank 0)
    // ABORT: midway: check: {{load of|store to}} lock-bound data without holding its lock (rank 0)
    // ABORT: midway: check: stopping at the first report (MW_CHECK=abort) (rank 0)
    // ABORT-NOT: reports: exiting
    for (int i = 0; i < 10; i++) total += i;
  }
  if (!strcmp(what, "ok")) {
    // OK-NOT: midway: check
    for (int i = 0; i < 10; i++) {
      mw_acquire(&total_lock, MW_EXCLUSIVE);
      total += 1;
      mw_release(&total_lock);
      mw_acquire(&row_lock[i % 4], MW_NONEXCLUSIVE);
      volatile double x = A[i % 4][i % 8];
      (void)x;
      mw_release(&row_lock[i % 4]);
    }
  }
  mw_barrier(&done);
  if (!strcmp(what, "ok") && me == 0) {
    mw_acquire(&total_lock, MW_NONEXCLUSIVE);
    printf("total %d\n", total);
    mw_release(&total_lock);
  }
  mw_finalize();
  return 0;
}
