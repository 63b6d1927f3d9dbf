// Bindings that cannot be right, in every build (not only check builds):
//  - start-up bindings (mw_bind before any rank holds the lock) that differ between
//    ranks: the acquire stops, before it returns, naming the lock and the first
//    difference (otherwise the acquirer is sent the owner's ranges, silently);
//  - a range bound to two locks, or to a lock and a barrier: mw_bind (mw_barrier_bind)
//    stops, naming both objects.
// RUN: %mwcc -O1 %s -o %t
// RUN: not %mwrun -n 2 %t differ 2>&1 | FileCheck %s --check-prefix=DIFFER
// RUN: not %mwrun -n 4 %t differ 2>&1 | FileCheck %s --check-prefix=DIFFER
// RUN: env FI_TCP_IFACE=lo not %mwrun -n 2 --provider tcp %t differ 2>&1 | FileCheck %s --check-prefix=DIFFER
// RUN: not %mwrun -n 2 %t missing 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: not %mwrun -n 1 %t two-locks 2>&1 | FileCheck %s --check-prefix=TWO-LOCKS
// RUN: not %mwrun -n 1 %t lock-barrier 2>&1 | FileCheck %s --check-prefix=LOCK-BARRIER
// RUN: not %mwrun -n 1 %t barrier-lock 2>&1 | FileCheck %s --check-prefix=BARRIER-LOCK
// The same bindings on every rank, and the same range bound twice to one lock: fine.
// RUN: %mwrun -n 4 %t same 2>&1 | FileCheck %s --check-prefix=SAME
#include <midway.h>
#include <stdio.h>
#include <string.h>

MW_SHARED mw_lock_t sum_lock;
MW_SHARED mw_lock_t other_lock;
MW_SHARED mw_barrier_t step;
MW_SHARED int sums[16];

int main(int argc, char **argv) {
  const char *what = argc > 1 ? argv[1] : "same";
  mw_init(&argc, &argv);
  const int me = mw_rank();
  if (!strcmp(what, "differ")) {
    // Rank 0 (sum_lock's manager, where it starts) binds 8 ints, the others 16.
    // DIFFER: midway: mw_acquire: lock sum_lock: the ranks made different start-up bindings (mw_bind before any rank holds the lock must be the same call on every rank): this rank bound sums [64 bytes] where rank 0 bound sums [32 bytes] (rank {{[1-3]}})
    mw_bind(&sum_lock, sums, (me == 0 ? 8 : 16) * sizeof(int));
    mw_barrier(&step);
    if (me != 0) {
      mw_acquire(&sum_lock, MW_EXCLUSIVE);
      sums[me] = me;
      mw_release(&sum_lock);
    }
  }
  if (!strcmp(what, "missing")) {
    // MISSING: midway: mw_acquire: lock sum_lock: the ranks made different start-up bindings {{.*}}: rank 0 bound sums[12] [16 bytes], which this rank did not (rank 1)
    mw_bind(&sum_lock, sums, 8 * sizeof(int));
    if (me == 0) mw_bind(&sum_lock, &sums[12], 4 * sizeof(int));
    mw_barrier(&step);
    if (me == 1) {
      mw_acquire(&sum_lock, MW_EXCLUSIVE);
      mw_release(&sum_lock);
    }
  }
  if (!strcmp(what, "two-locks")) {
    // TWO-LOCKS: midway: mw_bind: sums[4] ([0x{{[0-9a-f]+}}, +16)) cannot be bound to lock other_lock: its bytes [0x{{[0-9a-f]+}}, 0x{{[0-9a-f]+}}) are bound to lock sum_lock (bound as [0x{{[0-9a-f]+}}, +32)); a byte of shared data has at most one guard (unbind it from sum_lock first, or bind only the rest) (rank 0)
    mw_bind(&sum_lock, sums, 8 * sizeof(int));
    mw_bind(&other_lock, &sums[4], 4 * sizeof(int));
  }
  if (!strcmp(what, "lock-barrier")) {
    // LOCK-BARRIER: midway: mw_barrier_bind: sums ([0x{{[0-9a-f]+}}, +64)) cannot be bound to barrier step: its bytes {{.*}} are bound to lock sum_lock
    mw_bind(&sum_lock, &sums[2], sizeof(int));
    mw_barrier_bind(&step, sums, sizeof sums);
  }
  if (!strcmp(what, "barrier-lock")) {
    // BARRIER-LOCK: midway: mw_bind: sums[15] ([0x{{[0-9a-f]+}}, +4)) cannot be bound to lock sum_lock: its bytes {{.*}} are bound to barrier step
    mw_barrier_bind(&step, sums, sizeof sums);
    mw_bind(&sum_lock, &sums[15], sizeof(int));
  }
  if (!strcmp(what, "same")) {
    mw_bind(&sum_lock, sums, sizeof sums);
    mw_bind(&sum_lock, sums, sizeof sums);  // again: the ranges merge
    mw_barrier(&step);
    mw_acquire(&sum_lock, MW_EXCLUSIVE);
    sums[me] = me + 1;
    mw_release(&sum_lock);
    mw_barrier(&step);
    if (me == 0) {
      mw_acquire(&sum_lock, MW_NONEXCLUSIVE);
      int total = 0;
      for (int i = 0; i < 16; i++) total += sums[i];
      // SAME: total 10
      printf("total %d\n", total);
      mw_release(&sum_lock);
    }
  }
  mw_finalize();
  return 0;
}
