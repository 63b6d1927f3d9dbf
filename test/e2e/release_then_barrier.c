// At two ranks a lock's release sends its updates and asks no acknowledgement
// (rc/pending_updates.cpp); the barrier after it must still deliver them: rank 1, which
// holds a copy of the page, reads each value rank 0 wrote under the lock just before the
// barrier. A barrier that crossed before the update was in place shows as a stale value.
// RUN: %mwcc -O2 -Wno-backend-plugin %s -o %t
// RUN: %mwrun -n 2 %t | FileCheck %s
// RUN: %mwrun -n 2 --model rc %t | FileCheck %s
// RUN: %mwrun -n 2 --model rc --provider tcp %t | FileCheck %s
// RUN: %mwrun -n 3 --model rc %t | FileCheck %s
#include <midway.h>
#include <stdio.h>

enum { kRounds = 3000 };
MW_SHARED mw_lock_t lock;
MW_SHARED __attribute__((aligned(4096))) long value[512];  // guarded by nothing: release consistent
MW_SHARED mw_barrier_t b;

int main(int argc, char **argv) {
  mw_init(&argc, &argv);
  long stale = 0, first = -1;
  volatile long seen = value[0];  // every rank holds a copy from here on
  (void)seen;
  mw_barrier(&b);
  for (long r = 1; r <= kRounds; r++) {
    if (mw_rank() == 0) {
      mw_acquire(&lock, MW_EXCLUSIVE);
      value[r % 512] = r;
      mw_release(&lock);
    }
    mw_barrier(&b);
    if (mw_rank() != 0 && *(volatile long *)&value[r % 512] != r) {
      stale++;
      if (first < 0) first = r;
    }
    mw_barrier(&b);
  }
  printf("rank %d: %ld of %d values stale (first at round %ld)\n", mw_rank(), stale, kRounds, first);
  mw_finalize();
  return 0;
}
// CHECK-DAG: rank 0: 0 of 3000 values stale (first at round -1)
// CHECK-DAG: rank 1: 0 of 3000 values stale (first at round -1)
