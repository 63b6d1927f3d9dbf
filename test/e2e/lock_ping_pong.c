// Ranks that take one lock by turns ask for it back in the grant that hands it over
// (ec/locks.cpp, "Asking back"), so that it returns without a request of its own. The
// lock guards a counter (whose turn it is) and two pages of data, of which each turn
// rewrites one long: a grant ships only what the acquirer has not seen, so data lost or
// stale anywhere in the pages shows in the holder's check of all of them, every turn.
//  - Strict turns: the counter says whose turn it is; a rank whose turn it is not
//    releases and acquires again. At two ranks every hand-over after the first few must
//    be one message (the grant, the request back inside it): rank 0 checks its count.
//  - mw_discard of the data right after a release, while the request asked back is out:
//    the data this rank had seen must still be here when the lock comes back.
//  - Then rank 0 goes on alone: the lock last asked back by rank 1 comes to it unused,
//    and must come back to rank 0 at once, with its data.
// RUN: %mwcc -O2 -Wno-backend-plugin %s -o %t
// RUN: %mwrun -n 2 %t count | FileCheck %s --check-prefixes=CHECK,COUNT
// RUN: %mwrun -n 2 --provider tcp %t count | FileCheck %s --check-prefixes=CHECK,COUNT
// RUN: %mwrun -n 3 %t | FileCheck %s --check-prefix=THREE
// RUN: %mwrun -n 2 --model rc %t | FileCheck %s
#include <midway.h>
#include <stdio.h>
#include <string.h>

enum { kTurns = 6000, kLongs = 1024, kAlone = 500 };
MW_SHARED mw_lock_t lock;
MW_SHARED _Alignas(4096) long data[kLongs];  // bound to lock
MW_SHARED _Alignas(64) long turn;              // bound to lock
MW_SHARED mw_barrier_t b;

// What data[] holds after turns [0, t): turn u wrote data[u % kLongs] = u + 1.
static long expected(long t, int i) {
  if (t <= i) return 0;
  return i + kLongs * ((t - 1 - i) / kLongs) + 1;
}

static long wrong;  // longs found not as expected, over every check of this rank

static void check(long t) {
  for (int i = 0; i < kLongs; i++) wrong += data[i] != expected(t, i);
}

int main(int argc, char **argv) {
  mw_init(&argc, &argv);
  const int me = mw_rank(), np = mw_nprocs();
  mw_bind(&lock, data, sizeof data);
  mw_bind(&lock, &turn, sizeof turn);
  mw_barrier(&b);
  mw_stats_t s0, s1;
  mw_stats_get(&s0);
  long mine = 0;
  for (;;) {
    mw_acquire(&lock, MW_EXCLUSIVE);
    const long t = turn;
    if (t >= kTurns) {
      mw_release(&lock);
      break;
    }
    if (t % np != me) {
      mw_release(&lock);
      continue;
    }
    check(t);
    data[t % kLongs] = t + 1;
    turn = t + 1;
    mw_release(&lock);
    if (++mine % 64 == 0) mw_discard(data, sizeof data);
  }
  mw_stats_get(&s1);
  // Under release consistency (--model rc) each release also sends the data's updates.
  if (me == 0 && np == 2 && argc > 1 && strcmp(argv[1], "count") == 0) {
    const double per_turn = (double)(s1.msgs_sent - s0.msgs_sent) / (double)mine;
    printf("rank 0: %s\n", per_turn < 1.2 ? "one message a hand-over" : "more than one message a hand-over");
    if (per_turn >= 1.2) printf("rank 0: %.2f messages a turn\n", per_turn);
  }
  mw_barrier(&b);
  if (me == 0)
    for (long t = kTurns; t < kTurns + kAlone; t++) {
      mw_acquire(&lock, MW_EXCLUSIVE);
      check(t);
      data[t % kLongs] = t + 1;
      turn = t + 1;
      mw_release(&lock);
    }
  mw_barrier(&b);
  mw_acquire(&lock, MW_EXCLUSIVE);
  check(kTurns + kAlone);
  const long last = turn;
  mw_release(&lock);
  printf("rank %d: %ld turns, %ld longs wrong, last turn %ld\n", me, mine, wrong, last);
  mw_barrier(&b);
  mw_finalize();
  return 0;
}
// COUNT-DAG: rank 0: one message a hand-over
// CHECK-DAG: rank 0: 3000 turns, 0 longs wrong, last turn 6500
// CHECK-DAG: rank 1: 3000 turns, 0 longs wrong, last turn 6500
// THREE-DAG: rank 0: 2000 turns, 0 longs wrong, last turn 6500
// THREE-DAG: rank 1: 2000 turns, 0 longs wrong, last turn 6500
// THREE-DAG: rank 2: 2000 turns, 0 longs wrong, last turn 6500
