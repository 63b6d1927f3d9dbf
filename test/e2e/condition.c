// Condition variables (mw_cond_wait, mw_cond_signal, mw_cond_broadcast): a bounded
// queue of one slot between a producer and consumers, and a broadcast that wakes every
// waiter; waiters sleep, the data written under the lock is there after the wait.
// RUN: %mwcc -O2 %s -o %t
// RUN: %mwrun -n 2 %t | FileCheck %s
// RUN: %mwrun -n 4 %t | FileCheck %s
// RUN: not %mwrun -n 2 %t unlocked 2>&1 | FileCheck %s --check-prefix=UNLOCKED
#include <midway.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#define ITEMS 200
MW_SHARED mw_lock_t l;
MW_SHARED mw_cond_t nonempty, nonfull, go;
MW_SHARED int slot, full, taken_sum, taken_count, started;
MW_SHARED mw_barrier_t b;

static double cpu_seconds(void) {
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

int main(int argc, char **argv) {
  mw_init(&argc, &argv);
  const int me = mw_rank();
  if (argc > 1 && !strcmp(argv[1], "unlocked")) mw_cond_wait(&go, &l);
  // Broadcast: every rank but 0 waits for `started`; rank 0 sets it after half a second.
  if (me == 0) {
    struct timespec t = {0, 500 * 1000 * 1000};
    nanosleep(&t, NULL);
    mw_acquire(&l, MW_EXCLUSIVE);
    started = 42;
    mw_cond_broadcast(&go);
    mw_release(&l);
  } else {
    const double before = cpu_seconds();
    mw_acquire(&l, MW_EXCLUSIVE);
    while (started == 0) mw_cond_wait(&go, &l);
    const int seen = started;
    mw_release(&l);
    printf("rank %d woke: started=%d, slept: %s\n", me, seen,
           cpu_seconds() - before < 0.25 ? "yes" : "no");
  }
  mw_barrier(&b);
  // A one-slot queue: rank 0 produces 1..ITEMS, the others consume until all are taken.
  if (me == 0) {
    for (int i = 1; i <= ITEMS; i++) {
      mw_acquire(&l, MW_EXCLUSIVE);
      while (full) mw_cond_wait(&nonfull, &l);
      slot = i;
      full = 1;
      mw_cond_signal(&nonempty);
      mw_release(&l);
    }
  } else {
    for (;;) {
      mw_acquire(&l, MW_EXCLUSIVE);
      while (!full && taken_count < ITEMS) mw_cond_wait(&nonempty, &l);
      if (taken_count == ITEMS) {
        mw_cond_broadcast(&nonempty);  // the other consumers stop too
        mw_release(&l);
        break;
      }
      taken_sum += slot;
      taken_count++;
      full = 0;
      mw_cond_signal(&nonfull);
      if (taken_count == ITEMS) mw_cond_broadcast(&nonempty);
      mw_release(&l);
    }
  }
  mw_barrier(&b);
  if (me == 0) printf("taken %d items, sum %d\n", taken_count, taken_sum);
  mw_finalize();
  return 0;
}
// CHECK-DAG: rank 1 woke: started=42, slept: yes
// CHECK-DAG: taken 200 items, sum 20100
// UNLOCKED: mw_cond_wait: lock {{.*}} is not held exclusively by this rank
