// Two ranks bind the same bytes to two locks, each holding its own: every check of
// mw_bind passes on each rank, but a byte has one guard at most, and the later grant of
// either lock would overwrite the other's newer data. The conflict is reported where one
// lock's bindings reach a rank that bound those bytes to the other.
// RUN: %mwcc -O1 %s -o %t
// RUN: not %mwrun -n 2 %t 2>&1 | FileCheck %s
// RUN: not %mwrun -n 3 %t 2>&1 | FileCheck %s
// CHECK: midway: mw_acquire: lock {{L1|L2}}'s grant from rank {{[01]}} binds table to it, but this rank has bound those bytes to lock {{L1|L2}} ([0x{{[0-9a-f]+}}, +512)): a byte of shared data has at most one guard (two ranks bound it to two objects, each holding its own lock) (rank {{[01]}})
// (Data moved from one lock to another is no conflict: move_between_locks.c.)
#include <midway.h>

MW_SHARED __attribute__((aligned(4096))) long table[64];
MW_SHARED mw_lock_t L1, L2;
MW_SHARED mw_barrier_t phase;

int main(int argc, char **argv) {
  mw_init(&argc, &argv);
  const int me = mw_rank();
  mw_barrier(&phase);
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
  mw_barrier(&phase);
  mw_finalize();
  return 0;
}
