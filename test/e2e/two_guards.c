// Two ranks bind the same bytes to two locks, each holding its own: every check of
// mw_bind passes on each rank, but a byte has one guard at most, and the later grant of
// either lock would overwrite the other's newer data. The conflict is reported where one
// lock's bindings reach a rank that bound those bytes to the other.
// RUN: %mwcc -O1 %s -o %t
// RUN: not %mwrun -n 2 %t both 2>&1 | FileCheck %s
// RUN: not %mwrun -n 3 %t both 2>&1 | FileCheck %s
// CHECK: midway: mw_acquire: lock {{L1|L2}}'s grant from rank {{[01]}} binds table to it, but this rank has bound those bytes to lock {{L1|L2}} ([0x{{[0-9a-f]+}}, +512)): a byte of shared data has at most one guard (two ranks bound it to two objects, each holding its own lock) (rank {{[01]}})
//
// Under the dial's rc, data moved from one lock to another (unbound holding the first on
// rank 1, bound holding the second on rank 2) is no conflict: bindings move no data
// there, and an unbinding tells no rank, so rank 0, which saw the first binding, must
// not take the second lock's bindings for two guards (audit 30).
// RUN: %mwrun -n 3 --model rc %t move 2>&1 | FileCheck %s --check-prefix=MOVE
// MOVE-NOT: midway:
// MOVE: moved right
#include <midway.h>
#include <stdio.h>
#include <string.h>

MW_SHARED __attribute__((aligned(4096))) long table[64];
MW_SHARED mw_lock_t L1, L2;
MW_SHARED mw_barrier_t phase;

// Rank `who`, holding `l`, adds `add` to every entry, binding or unbinding the table first.
static void as(int who, mw_lock_t *l, void (*change)(mw_lock_t *, const void *, size_t), long add) {
  if (mw_rank() == who) {
    mw_acquire(l, MW_EXCLUSIVE);
    if (change == mw_bind) change(l, table, sizeof table);
    for (int i = 0; i < 64; i++) table[i] += add;
    if (change == mw_unbind) change(l, table, sizeof table);
    mw_release(l);
  }
  mw_barrier(&phase);
}

int main(int argc, char **argv) {
  mw_init(&argc, &argv);
  const int me = mw_rank();
  mw_barrier(&phase);
  if (!strcmp(argv[1], "both")) {
    // Ranks 0 and 1 at once, each with its own lock; then each takes the other's.
    mw_lock_t *mine = me == 0 ? &L1 : &L2, *theirs = me == 0 ? &L2 : &L1;
    if (me < 2) {
      mw_acquire(mine, MW_EXCLUSIVE);
      mw_bind(mine, table, sizeof table);
      table[me] = me + 1;
      mw_release(mine);
    }
    mw_barrier(&phase);
    if (me < 2) {
      mw_acquire(theirs, MW_EXCLUSIVE);
      table[2 + me] = me + 3;
      mw_release(theirs);
    }
  } else {
    as(0, &L1, mw_bind, 0);
    as(1, &L1, mw_unbind, 100);
    as(2, &L2, mw_bind, 1000);
    int wrong = 0;
    mw_acquire(&L2, MW_NONEXCLUSIVE);
    for (int i = 0; i < 64; i++) wrong += table[i] != 1100;
    mw_release(&L2);
    mw_barrier(&phase);
    if (me == 0) printf(wrong ? "WRONG\n" : "moved right\n");
    fflush(stdout);
  }
  mw_barrier(&phase);
  mw_finalize();
  return 0;
}
