// At two ranks a lock's release sends nothing: what the rank wrote stays pending (its
// dirty marks) until a lock moves to the other rank, and goes just before that grant, or
// that answer to a revoke, on whichever thread serves it (rc/pending_updates.cpp). Rank 1
// must still see every value rank 0 wrote before a release it follows:
// - the lock passed back and forth, each rank computing a while before it asks again, so
//   that the owner's service thread or a poll in its loop grants it, not its release;
// - data written under a lock other than the one that moves: a release makes visible
//   all that came before it, not only what its lock guards;
// - a non-exclusive hold's release answering the owner's revoke.
// Without the flush before a lock moves, each shows as stale values.
// RUN: %mwcc -O2 -Wno-backend-plugin %s -o %t
// RUN: %mwrun -n 2 %t | FileCheck %s
// RUN: %mwrun -n 2 --model rc %t | FileCheck %s
// RUN: %mwrun -n 2 --model rc --provider tcp %t | FileCheck %s
// RUN: %mwrun -n 3 --model rc %t | FileCheck %s
#include <midway.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

enum { kRounds = 400, kSlots = 512 };
MW_SHARED mw_lock_t turn_lock, own_lock[2], read_lock;
MW_SHARED long turn;                                              // guarded by turn_lock
MW_SHARED __attribute__((aligned(4096))) long passed[kSlots];     // by turn_lock
MW_SHARED __attribute__((aligned(4096))) long own[2][kSlots];     // own[r] by own_lock[r]
MW_SHARED __attribute__((aligned(4096))) long before_read[kSlots];  // by own_lock[0]
MW_SHARED mw_barrier_t b;

static volatile double sink;

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

// A while of work with no call into the runtime: a request that comes meanwhile is
// served by the service thread or a poll of this loop.
static void compute(long r) {
  double x = 1;
  for (long i = 0; i < 2000 * (r % 4); i++) x = x * 1.000001 + 1e-9;
  sink = x;
}

int main(int argc, char **argv) {
  mw_init(&argc, &argv);
  const int me = mw_rank();
  long stale = 0;
  if (me < 2) {
    // Each rank reads the other's pages once, so it holds copies that updates must reach.
    volatile long seen = passed[0] + own[1 - me][0] + before_read[0];
    (void)seen;
  }
  mw_barrier(&b);
  // The lock passed back and forth: round r is rank r % 2's.
  for (long r = 1; r <= kRounds && me < 2; r++) {
    if (r % 2 != me) continue;
    const double give_up = now() + 10;  // the other rank's turn never seen: stale
    for (;;) {
      mw_acquire(&turn_lock, MW_EXCLUSIVE);
      if (turn == r - 1) break;
      mw_release(&turn_lock);
      if (now() > give_up) {
        printf("rank %d: round %ld never came (turn %ld)\n", me, r, turn);
        fflush(stdout);
        _exit(1);
      }
    }
    // What the other rank wrote before it passed the lock: under this lock and under its own.
    if (r > 1 && passed[(r - 1) % kSlots] != r - 1) stale++;
    if (r > 1 && own[1 - me][(r - 1) % kSlots] != r - 1) stale++;
    mw_acquire(&own_lock[me], MW_EXCLUSIVE);
    own[me][r % kSlots] = r;
    mw_release(&own_lock[me]);
    passed[r % kSlots] = r;
    turn = r;
    mw_release(&turn_lock);
    compute(r);
  }
  mw_barrier(&b);
  // A revoke: rank 1 owns read_lock and rank 0 holds a copy of it while it writes under
  // another lock; rank 1's exclusive acquire waits for rank 0's release, which answers
  // the revoke, and must then find what rank 0 wrote before.
  if (me == 1) {
    mw_acquire(&read_lock, MW_EXCLUSIVE);
    mw_release(&read_lock);
  }
  mw_barrier(&b);
  if (me == 0) mw_acquire(&read_lock, MW_NONEXCLUSIVE);
  mw_barrier(&b);
  if (me == 0) {
    compute(3);
    mw_acquire(&own_lock[0], MW_EXCLUSIVE);
    for (int i = 0; i < kSlots; i++) before_read[i] = i + 1;
    mw_release(&own_lock[0]);
    mw_release(&read_lock);
  } else if (me == 1) {
    mw_acquire(&read_lock, MW_EXCLUSIVE);
    for (int i = 0; i < kSlots; i++) stale += before_read[i] != i + 1;
    mw_release(&read_lock);
  }
  printf("rank %d: %ld stale\n", me, stale);
  mw_finalize();
  return 0;
}
// CHECK-DAG: rank 0: 0 stale
// CHECK-DAG: rank 1: 0 stale
