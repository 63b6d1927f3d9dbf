// Issue 14's row "start-up mw_bind calls that differ between ranks: wrong sums". Four
// ranks add into eight shared counters under one lock; by mistake rank 0 binds only the
// first four counters to the lock, the others all eight. Without a check the counters
// rank 0 left unbound do not travel with the lock, and the totals come out wrong (4 runs
// in 4 before the check). Now the first acquire that meets the difference stops the job
// before it returns, naming the lock, both bindings and the rank, and no total is printed.
// RUN: %mwcc -O1 %s -o %t
// RUN: not %mwrun -n 4 %t differ 2>&1 | FileCheck %s --check-prefix=DIFFER
// RUN: not %mwrun -n 2 %t differ 2>&1 | FileCheck %s --check-prefix=DIFFER
// RUN: env FI_TCP_IFACE=lo not %mwrun -n 3 --provider tcp %t differ 2>&1 | FileCheck %s --check-prefix=DIFFER
// DIFFER: midway: mw_acquire: lock sum_lock: the ranks made different start-up bindings (mw_bind before any rank holds the lock must be the same call on every rank): this rank bound sums [{{16|32}} bytes] where rank {{[0-3]}} bound sums [{{16|32}} bytes] (rank {{[0-3]}})
// DIFFER-NOT: totals
// The same program with the same bindings on every rank adds right.
// RUN: %mwrun -n 4 %t same 2>&1 | FileCheck %s --check-prefix=SAME
// SAME: totals: 200 200 200 200 200 200 200 200 (expected 200)
#include <midway.h>
#include <stdio.h>
#include <string.h>

#define COUNTERS 8
#define ROUNDS 20

MW_SHARED int sums[COUNTERS];
MW_SHARED mw_lock_t sum_lock;
MW_SHARED mw_barrier_t step;

int main(int argc, char **argv) {
  const int differ = argc > 1 && !strcmp(argv[1], "differ");
  mw_init(&argc, &argv);
  const int me = mw_rank(), n = mw_nprocs();
  const int bound = differ && me == 0 ? COUNTERS / 2 : COUNTERS;  // the mistake
  mw_bind(&sum_lock, sums, bound * sizeof sums[0]);
  mw_barrier(&step);
  for (int round = 0; round < ROUNDS; round++) {
    mw_acquire(&sum_lock, MW_EXCLUSIVE);
    for (int i = 0; i < COUNTERS; i++) sums[i] += me + 1;
    mw_release(&sum_lock);
  }
  mw_barrier(&step);
  if (me == 0) {
    mw_acquire(&sum_lock, MW_NONEXCLUSIVE);
    printf("totals:");
    for (int i = 0; i < COUNTERS; i++) printf(" %d", sums[i]);
    printf(" (expected %d)\n", ROUNDS * n * (n + 1) / 2);
    mw_release(&sum_lock);
  }
  mw_finalize();
  return 0;
}
