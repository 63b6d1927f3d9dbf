// Data unbound from its lock is release consistent again, on every rank: what was written
// under the lock reaches even a rank that never acquires the lock again, and later writes
// to it travel as release consistency sends them. (Before, its pages stayed entry
// consistent on the ranks that held them bound, so those writes reached no rank: every
// rank read zeros for the others' writes, at 2, 3 and 4 ranks, over shm and tcp.)
// RUN: %mwcc -O2 %s -o %t
// RUN: %mwrun -n 2 %t whole 2>&1 | FileCheck %s --check-prefix=OK
// RUN: %mwrun -n 3 %t whole 2>&1 | FileCheck %s --check-prefix=OK
// RUN: %mwrun -n 4 %t whole 2>&1 | FileCheck %s --check-prefix=OK
// RUN: env FI_TCP_IFACE=lo %mwrun -n 3 --provider tcp %t whole 2>&1 | FileCheck %s --check-prefix=OK
// A page bound in part (its other half release consistent from the start), unbound at a
// rank that is not the page's home.
// RUN: %mwrun -n 3 %t part 2>&1 | FileCheck %s --check-prefix=OK
// RUN: env FI_TCP_IFACE=lo %mwrun -n 2 --provider tcp %t part 2>&1 | FileCheck %s --check-prefix=OK
// The tail of a page unbound, by a rank that is not the page's home (its next grant
// reads the page's bytes still bound: it crashed there), and by the home, with another
// rank writing the unbound bytes before it acquires the lock (the grant must not bring
// them back, and the others must see that write).
// RUN: %mwrun -n 3 %t tail 2>&1 | FileCheck %s --check-prefix=OK
// RUN: %mwrun -n 4 %t tail-home 2>&1 | FileCheck %s --check-prefix=OK
// RUN: env FI_TCP_IFACE=lo %mwrun -n 2 --provider tcp %t tail 2>&1 | FileCheck %s --check-prefix=OK
// Moved to another lock: it travels with that lock from then on.
// RUN: %mwrun -n 3 %t move 2>&1 | FileCheck %s --check-prefix=OK
// A list node unbound and freed when taken out of the list, its block reused.
// RUN: %mwrun -n 2 %t free 2>&1 | FileCheck %s --check-prefix=OK
// A start-up binding made after another rank has acquired the lock and unbound the data:
// the page's home refuses it (rank 1 is the home of data's second page at two ranks).
// RUN: not %mwrun -n 2 %t late 2>&1 | FileCheck %s --check-prefix=LATE
// LATE: midway: mw_bind: data ([0x{{[0-9a-f]+}}, +8192)) cannot be bound to lock data_lock at start-up: another rank has already acquired the lock it was bound to and unbound it (this rank is the home of page 0x{{[0-9a-f]+}} (data[1024])). Make start-up bindings on every rank before any rank first acquires the lock (a barrier after them) (rank 1)
// OK: every rank read what was written
#include <midway.h>
#include <stdio.h>
#include <string.h>

int __mw_home_of(const void *p);  // the runtime's, for tests: the rank that homes p's page

#define N 2048 /* ints: two pages */

MW_SHARED __attribute__((aligned(4096))) int data[N];
MW_SHARED __attribute__((aligned(4096))) struct {
  int rc[512];  // release consistent from the start
  int bound[512];
} partly;
MW_SHARED int *nodes[2];
MW_SHARED mw_lock_t data_lock, other_lock;
MW_SHARED mw_barrier_t bar;

static int bad;

static void expect(const char *what, int i, int got, int want) {
  if (got == want) return;
  if (bad++ < 5) printf("rank %d: %s[%d] = %d, want %d\n", mw_rank(), what, i, got, want);
}

// Each rank in turn writes its slice of `a` under the lock; the last to hold it unbinds.
static void write_under_lock(int *a, int n, int step) {
  const int me = mw_rank(), np = mw_nprocs();
  for (int turn = 0; turn < np; turn++) {
    if (turn == me) {
      mw_acquire(&data_lock, MW_EXCLUSIVE);
      for (int i = me; i < n; i += np) a[i] = i + step;
      if (me == np - 1) mw_unbind(&data_lock, a, n * sizeof(int));
      mw_release(&data_lock);
    }
    mw_barrier(&bar);
  }
}

int main(int argc, char **argv) {
  mw_init(&argc, &argv);
  const int me = mw_rank(), np = mw_nprocs();
  const char *c = argc > 1 ? argv[1] : "";
  if (!strcmp(c, "whole")) {
    mw_bind(&data_lock, data, sizeof data);
    mw_barrier(&bar);
    write_under_lock(data, N, 1000);
    // Rank 0 never holds the lock again: what the others wrote under it is there.
    for (int i = 0; i < N; i++) expect("data", i, data[i], i + 1000);
    mw_barrier(&bar);
    // Release consistent now: each rank writes its own slice, a barrier, all read all.
    for (int i = me; i < N; i += np) data[i] = i + 2000;
    mw_barrier(&bar);
    for (int i = 0; i < N; i++) expect("data", i, data[i], i + 2000);
  } else if (!strcmp(c, "part")) {
    mw_bind(&data_lock, partly.bound, sizeof partly.bound);
    mw_barrier(&bar);
    for (int i = me; i < 512; i += np) partly.rc[i] = i + 1;
    write_under_lock(partly.bound, 512, 3000);
    for (int i = 0; i < 512; i++) expect("partly.bound", i, partly.bound[i], i + 3000);
    for (int i = 0; i < 512; i++) expect("partly.rc", i, partly.rc[i], i + 1);
    mw_barrier(&bar);
    for (int i = me; i < 512; i += np) partly.bound[i] = i + 4000;
    mw_barrier(&bar);
    for (int i = 0; i < 512; i++) expect("partly.bound", i, partly.bound[i], i + 4000);
  } else if (!strcmp(c, "tail") || !strcmp(c, "tail-home")) {
    // data's second page keeps its first 512 bytes bound.
    const int cut = 1024 + 128, home = __mw_home_of(&data[1024]);
    const int unbinder = !strcmp(c, "tail") ? (home + 1) % np : home, next = (unbinder + 1) % np;
    mw_bind(&data_lock, data, sizeof data);
    mw_barrier(&bar);
    if (me == unbinder) {
      mw_acquire(&data_lock, MW_EXCLUSIVE);
      for (int i = 0; i < N; i++) data[i] = 1;
      mw_unbind(&data_lock, &data[cut], (N - cut) * sizeof(int));
      mw_release(&data_lock);
    }
    mw_barrier(&bar);
    if (me == next) {
      data[cut + 100] = 42;  // release consistent now
      mw_acquire(&data_lock, MW_EXCLUSIVE);  // from the unbinder, with data[0 .. cut)
      for (int i = 0; i < cut; i++) expect("data", i, data[i], 1);
      expect("data", cut + 100, data[cut + 100], 42);
      mw_release(&data_lock);
    }
    mw_barrier(&bar);
    for (int i = cut; i < N; i++) expect("data", i, data[i], i == cut + 100 ? 42 : 1);
  } else if (!strcmp(c, "move")) {
    mw_bind(&data_lock, data, sizeof data);
    mw_barrier(&bar);
    if (me == 0) {
      mw_acquire(&data_lock, MW_EXCLUSIVE);
      for (int i = 0; i < N; i++) data[i] = i + 5000;
      mw_unbind(&data_lock, data, sizeof data);
      mw_acquire(&other_lock, MW_EXCLUSIVE);
      mw_bind(&other_lock, data, sizeof data);
      mw_release(&other_lock);
      mw_release(&data_lock);
    }
    mw_barrier(&bar);
    for (int turn = 1; turn < np; turn++) {
      if (turn == me) {
        mw_acquire(&other_lock, MW_EXCLUSIVE);
        for (int i = 0; i < N; i++) {
          expect("data", i, data[i], i + 5000 + turn - 1);
          data[i]++;
        }
        mw_release(&other_lock);
      }
      mw_barrier(&bar);
    }
    mw_acquire(&other_lock, MW_NONEXCLUSIVE);
    for (int i = 0; i < N; i++) expect("data", i, data[i], i + 5000 + np - 1);
    mw_release(&other_lock);
  } else if (!strcmp(c, "free")) {
    for (int round = 0; round < 3; round++) {
      if (me == 0) {  // taken into the list: bound, under the lock
        nodes[0] = mw_malloc(64 * sizeof(int));
        mw_acquire(&data_lock, MW_EXCLUSIVE);
        mw_bind(&data_lock, nodes[0], 64 * sizeof(int));
        for (int i = 0; i < 64; i++) nodes[0][i] = 0;
        mw_release(&data_lock);
      }
      mw_barrier(&bar);
      int *node = nodes[0];
      mw_acquire(&data_lock, MW_EXCLUSIVE);
      for (int i = 0; i < 64; i++) node[i] += round + 1;
      mw_release(&data_lock);
      mw_barrier(&bar);
      if (me == np - 1) {
        mw_acquire(&data_lock, MW_EXCLUSIVE);
        for (int i = 0; i < 64; i++) expect("node", i, node[i], np * (round + 1));
        mw_unbind(&data_lock, node, 64 * sizeof(int));
        mw_release(&data_lock);
      }
      mw_barrier(&bar);
      for (int i = 0; i < 64; i++) expect("node", i, node[i], np * (round + 1));
      mw_barrier(&bar);
      if (me == 0) mw_free(node);
      mw_barrier(&bar);
    }
  } else if (!strcmp(c, "late")) {
    if (me == 0) {
      mw_bind(&data_lock, data, sizeof data);
      mw_acquire(&data_lock, MW_EXCLUSIVE);
      for (int i = 0; i < N; i++) data[i] = i;
      mw_unbind(&data_lock, data, sizeof data);
      mw_release(&data_lock);
    }
    mw_barrier(&bar);
    if (me == 1) mw_bind(&data_lock, data, sizeof data);
    mw_barrier(&bar);
  } else {
    printf("unknown case '%s'\n", c);
    bad = 1;
  }
  mw_barrier(&bar);
  if (me == 0 && !bad) printf("every rank read what was written\n");
  mw_finalize();
  return bad != 0;
}
