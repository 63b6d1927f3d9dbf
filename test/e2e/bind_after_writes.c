// A start-up binding of data that has been written already is refused: those writes
// travel as release consistency sends them (to the pages' copysets, at a release), not
// with the lock, so a rank that takes the data from the lock would read stale bytes. (It
// did, silently: a master that filled its input and then bound it gave the other ranks
// zeros, at 2, 3 and 4 ranks, whichever ranks had touched the page.) The writer is
// refused when its writes are still its own; when they were released (a barrier between
// the writes and the binding), the page's home refuses.
// RUN: %mwcc -O2 %s -o %t
// RUN: not %mwrun -n 3 %t pending 2>&1 | FileCheck %s --check-prefix=PENDING
// RUN: not %mwrun -n 2 %t touched 2>&1 | FileCheck %s --check-prefix=TOUCHED
// RUN: not %mwrun -n 3 %t released 2>&1 | FileCheck %s --check-prefix=RELEASED
// RUN: not %mwrun -n 2 %t heap 2>&1 | FileCheck %s --check-prefix=HEAP
// RUN: not %mwrun -n 3 %t barrier 2>&1 | FileCheck %s --check-prefix=BARRIER
// The start-up pattern: bind, then write holding the lock; and a page bound in part
// whose unbound bytes were written before the binding, which is no reason to refuse it:
// every rank reads them, also one where the lock's data lands on the page before its
// first touch (test/e2e/mixed_pages.c).
// RUN: %mwrun -n 3 %t bind-first 2>&1 | FileCheck %s --check-prefix=OK
// RUN: %mwrun -n 4 %t partly 2>&1 | FileCheck %s --check-prefix=OK
// A binding made again, to the object that guards the data already, after writes made
// under it: those writes are that object's to carry.
// RUN: %mwrun -n 3 %t again 2>&1 | FileCheck %s --check-prefix=OK
// PENDING: midway: mw_bind: data ([0x{{[0-9a-f]+}}, +4096)) cannot be bound to lock data_lock at start-up: this rank has written to it, and those writes would not reach the ranks that take the data from the lock. Bind shared data before any rank writes it, then write it holding the lock MW_EXCLUSIVE (rank 0)
// TOUCHED: midway: mw_bind: data ({{.*}}) cannot be bound to lock data_lock at start-up: this rank has written to it{{.*}} (rank 1)
// RELEASED: mw_bind: data ({{.*}}) cannot be bound to lock data_lock at start-up: {{this rank has written to it|it has been written since the job began}}
// HEAP: mw_bind: 0x{{[0-9a-f]+}} ({{.*}}) cannot be bound to lock data_lock at start-up: this rank has written to it{{.*}} (rank 1)
// BARRIER: midway: mw_barrier_bind: data ({{.*}}) cannot be bound to barrier bar at start-up: this rank has written to it, and those writes would not reach the ranks that take the data from the barrier. Bind shared data before any rank writes it, then write it between crossings (rank 2)
// OK: every rank read what was written
#include <midway.h>
#include <stdio.h>
#include <string.h>

#define N 1024 /* ints: one page */

MW_SHARED __attribute__((aligned(4096))) int data[N];
MW_SHARED __attribute__((aligned(4096))) struct {
  int bound[N / 2];
  int unbound[N / 2];
} partly;
MW_SHARED int *heap;
MW_SHARED mw_lock_t data_lock;
MW_SHARED mw_barrier_t bar;

static void fill(int *a, int n) {
  for (int i = 0; i < n; i++) a[i] = i * 7 + 1;
}

static int check(const int *a, int n) {
  for (int i = 0; i < n; i++)
    if (a[i] != i * 7 + 1) return 1;
  return 0;
}

int main(int argc, char **argv) {
  mw_init(&argc, &argv);
  const int me = mw_rank(), last = mw_nprocs() - 1;
  const char *c = argc > 1 ? argv[1] : "";
  int bad = 0;
  if (me == 0) heap = mw_malloc(N * sizeof(int));
  if (!strcmp(c, "touched")) {
    volatile int t = data[0]; /* every rank holds a copy */
    (void)t;
  }
  mw_barrier(&bar);
  if (!strcmp(c, "pending") || !strcmp(c, "released")) {
    if (me == 0) fill(data, N);
    if (!strcmp(c, "released")) mw_barrier(&bar);
    mw_bind(&data_lock, data, sizeof data);
  } else if (!strcmp(c, "touched")) {
    if (me == last) fill(data, N);
    mw_bind(&data_lock, data, sizeof data);
  } else if (!strcmp(c, "heap")) {
    if (me == last) fill(heap, N);
    mw_bind(&data_lock, heap, N * sizeof(int));
  } else if (!strcmp(c, "barrier")) {
    if (me == last) fill(data, N);
    mw_barrier_bind(&bar, data, sizeof data);
  } else if (!strcmp(c, "bind-first")) {
    mw_bind(&data_lock, data, sizeof data);
    mw_barrier(&bar);
    if (me == 0) {
      mw_acquire(&data_lock, MW_EXCLUSIVE);
      fill(data, N);
      mw_release(&data_lock);
    }
    mw_barrier(&bar);
    mw_acquire(&data_lock, MW_NONEXCLUSIVE);
    bad = check(data, N);
    mw_release(&data_lock);
  } else if (!strcmp(c, "again")) {
    for (int round = 1; round <= 3; round++) {
      mw_barrier_bind(&bar, data, sizeof data); /* every round, the same */
      data[me] = round;
      mw_barrier(&bar);
    }
    for (int r = 0; r <= last; r++) bad |= data[r] != 3;
  } else if (!strcmp(c, "partly")) {
    if (me == last) fill(partly.unbound, N / 2); /* release consistent, and stays so */
    mw_bind(&data_lock, partly.bound, sizeof partly.bound);
    mw_barrier(&bar);
    if (me == 0) {
      mw_acquire(&data_lock, MW_EXCLUSIVE);
      fill(partly.bound, N / 2);
      mw_release(&data_lock);
    }
    mw_barrier(&bar);
    mw_acquire(&data_lock, MW_NONEXCLUSIVE);
    bad = check(partly.bound, N / 2) || check(partly.unbound, N / 2);
    mw_release(&data_lock);
  }
  mw_barrier(&bar);
  mw_finalize();
  if (bad) {
    fprintf(stderr, "rank %d read stale data\n", me);
    return 1;
  }
  if (me == 0) printf("every rank read what was written\n");
  return 0;
}
