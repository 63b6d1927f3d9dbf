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
// Bindings on one rank only (`if (rank == 1) mw_bind(...)`), one acquire each: the
// owner that bound nothing compares too, once it has held the lock (it went unnoticed
// when the lock moved only from it to the binder, and rank 0 read a wrong sum, exit 0).
// RUN: not %mwrun -n 2 %t one 2>&1 | FileCheck %s --check-prefix=ONE
// RUN: not %mwrun -n 3 %t one 2>&1 | FileCheck %s --check-prefix=ONE
// ONE: midway: mw_acquire: lock sum_lock: the ranks made different start-up bindings (mw_bind before any rank holds the lock must be the same call on every rank): {{this rank bound sums \[32 bytes\], which rank [02] did not|rank 1 bound sums \[32 bytes\], which this rank did not}}
// ONE-NOT: totals
// The same program with the same bindings on every rank adds right.
// RUN: %mwrun -n 4 %t same 2>&1 | FileCheck %s --check-prefix=SAME
// SAME: totals: 200 200 200 200 200 200 200 200 (expected 200)
// The same bindings made at different speeds: rank 0 binds each of four locks' rows at
// once and takes the locks straight away, while the other ranks, the locks' first
// owners, are still binding theirs element by element. An owner compares only bindings
// it has finished (a synchronizing call since its last start-up bind): this once
// stopped correct programs (test/ec/accounting.c, binding row by row) when a request
// came early.
// RUN: %mwrun -n 4 %t slow 2>&1 | FileCheck %s --check-prefix=SLOW
// SLOW-NOT: different start-up bindings
// SLOW: rows: right
#include <midway.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define COUNTERS 8
#define ROUNDS 20

MW_SHARED int sums[COUNTERS];
MW_SHARED mw_lock_t sum_lock;
MW_SHARED mw_barrier_t step;
// Neighbouring locks have different managers, so three of the four start elsewhere.
MW_SHARED int rows[4][COUNTERS];
MW_SHARED mw_lock_t row_locks[4];

static int slow_bindings(int me) {
  if (me == 0) {
    for (int l = 0; l < 4; l++) mw_bind(&row_locks[l], rows[l], sizeof rows[l]);
    usleep(3000);  /* the others are halfway through theirs */
  } else {
    for (int i = 0; i < COUNTERS; i++) {
      for (int l = 0; l < 4; l++) mw_bind(&row_locks[l], &rows[l][i], sizeof rows[l][i]);
      usleep(1000);
    }
  }
  if (me == 0)
    for (int l = 0; l < 4; l++) {
      mw_acquire(&row_locks[l], MW_EXCLUSIVE);
      for (int i = 0; i < COUNTERS; i++) rows[l][i] = 100 * l + i;
      mw_release(&row_locks[l]);
    }
  mw_barrier(&step);
  int wrong = 0;
  for (int l = 0; l < 4; l++) {
    mw_acquire(&row_locks[l], MW_NONEXCLUSIVE);
    for (int i = 0; i < COUNTERS; i++) wrong += rows[l][i] != 100 * l + i;
    mw_release(&row_locks[l]);
  }
  mw_barrier(&step);
  if (me == 0) printf("rows: %s\n", wrong ? "wrong" : "right");
  mw_finalize();
  return wrong != 0;
}

int main(int argc, char **argv) {
  const int differ = argc > 1 && !strcmp(argv[1], "differ");
  mw_init(&argc, &argv);
  const int me = mw_rank(), n = mw_nprocs();
  if (argc > 1 && !strcmp(argv[1], "slow")) return slow_bindings(me);
  if (argc > 1 && !strcmp(argv[1], "one")) {
    if (me == 1) mw_bind(&sum_lock, sums, sizeof sums);  // the mistake: rank 1 alone
    mw_barrier(&step);
    mw_acquire(&sum_lock, MW_EXCLUSIVE);
    sums[0] += 1;
    mw_release(&sum_lock);
    mw_barrier(&step);
    // Unbound on rank 0: release-consistent data, read after the barrier.
    if (me == 0) printf("totals: %d (expected %d)\n", sums[0], n);
    mw_finalize();
    return 0;
  }
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
