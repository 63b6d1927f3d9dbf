// Ranks that take the locks of an array one after another (as WATER-NSQUARED adds each
// molecule's forces under its lock) have the next locks on their stride asked for ahead
// (ec/locks.cpp, "Asking ahead"). A lock asked for ahead and not used yet must go back
// at once to a peer that asks for it, and its data must be the latest: each sweep adds
// one to the counter each lock guards, in the orders that make asking ahead pay (each
// rank from its own start, like WATER), collide (every rank from 0 at once, and walking
// down) and stop at the array's end (the locks past it are asked for and never used).
// A lost update shows as a wrong total; a lock kept by a rank that does not use it, as a
// hang (mwrun's stall report).
// RUN: %mwcc -O2 -Wno-backend-plugin %s -o %t
// RUN: %mwrun -n 2 %t | FileCheck %s
// RUN: %mwrun -n 2 --model rc %t | FileCheck %s
// RUN: %mwrun -n 2 --model pc %t | FileCheck %s
// RUN: %mwrun -n 3 --model rc %t | FileCheck %s
// RUN: %mwrun -n 2 --model rc --provider tcp %t | FileCheck %s
#include <midway.h>
#include <stdio.h>

enum { N = 200, kSweeps = 6 };
MW_SHARED mw_lock_t lock[N];
MW_SHARED long counter[N];  // counter[i] is guarded by lock[i]
MW_SHARED mw_barrier_t b;

static void add(int i) {
  mw_acquire(&lock[i], MW_EXCLUSIVE);
  counter[i] += 1;
  mw_release(&lock[i]);
}

int main(int argc, char **argv) {
  mw_init(&argc, &argv);
  const int me = mw_rank(), np = mw_nprocs();
  for (int s = 0; s < kSweeps; s++) {
    const int start = (s % 3 == 0) ? me * N / np : 0;  // own start, else all from 0
    for (int k = 0; k < N; k++) {
      const int i = (s % 3 == 2) ? N - 1 - k : (start + k) % N;  // every third sweep walks down
      add(i);
    }
  }
  // A rank alone sweeping locks the others last held, while they wait at the barrier.
  if (me == np - 1)
    for (int i = 0; i < N; i++) add(i);
  mw_barrier(&b);
  long wrong = 0;
  for (int i = 0; i < N; i++) {
    mw_acquire(&lock[i], MW_EXCLUSIVE);
    wrong += counter[i] != (long)np * kSweeps + 1;
    mw_release(&lock[i]);
  }
  printf("rank %d: %ld of %d counters wrong\n", me, wrong, N);
  mw_barrier(&b);
  mw_finalize();
  return 0;
}
// CHECK-DAG: rank 0: 0 of 200 counters wrong
// CHECK-DAG: rank 1: 0 of 200 counters wrong
