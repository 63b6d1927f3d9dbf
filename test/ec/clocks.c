/* clocks.c — a rank that has been quiet still stamps its writes later than what the next
 * acquirer has seen: Lamport clocks advance on receive.
 *
 *   mwrun -n P clocks [--pump N]     (P >= 3; ranks 3.. only cross the barriers)
 *
 * An owner stamps the lines written under a lock with its clock when the lock is
 * requested, and ships those stamped later than the time the acquirer last saw the lock.
 * That is right only if a rank's clock has moved past every time it has received:
 *
 *   1. ranks 0 and 1 each take a lock N times (default 200; nothing bound to it, managed
 *      by rank 1, so rank 2 hears nothing of it): it goes back and forth between them,
 *      and their clocks move far ahead of rank 2's
 *   2. rank 1 takes `lock` and writes version 1 of the data bound to it
 *   3. rank 2 takes it from rank 1 (the grant carries rank 1's clock), checks version 1,
 *      writes version 2
 *   4. rank 1 takes it back: rank 2 stamps version 2 with its own clock, and ships it
 *      only if that is later than rank 1's hand-over in step 3
 *
 * Rank 2 must see version 1 in step 3 and rank 1 version 2 in step 4. With two ranks
 * both clocks move together and a clock that ignores what it receives goes unseen; it
 * takes a third rank that stays quiet while the others talk. Exits 1 naming the step.
 */
#include <midway.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DATA 4096
#define NPUMP 64

MW_SHARED _Alignas(4096) unsigned char data[DATA];
MW_SHARED mw_lock_t lock;
MW_SHARED mw_lock_t pumps[NPUMP];
MW_SHARED mw_barrier_t step;

static int check(int st, int rank, int version) {
  for (int i = 0; i < DATA; i++)
    if (data[i] != (unsigned char)(version * 37 + i)) {
      fprintf(stderr,
              "clocks: FAIL step %d: rank %d reads byte %d as %u, version %d would be %u (%s)\n", st,
              rank, i, data[i], version, (unsigned char)(version * 37 + i),
              "the owner stamped the writes no later than the acquirer last saw the lock, so "
              "they were not shipped");
      return 1;
    }
  return 0;
}

int main(int argc, char **argv) {
  mw_init(&argc, &argv);
  const int me = mw_rank(), P = mw_nprocs();
  int pump = 200;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--pump") && i + 1 < argc) pump = atoi(argv[++i]);
    else {
      fprintf(stderr, "usage: clocks [--pump N]\n");
      return 2;
    }
  }
  if (P < 3) {
    fprintf(stderr, "clocks: needs 3 ranks or more (with two, both clocks move together)\n");
    return 2;
  }
  /* A lock's manager is chosen by its address, (address >> 4) % P (docs/ARCHITECTURE.md):
   * pick one that rank 1 manages, so that passing it between ranks 0 and 1 sends rank 2
   * nothing. (Were the placement to change, the test would still pass, but might no
   * longer tell a clock that ignores what it receives.) */
  mw_lock_t *pl = NULL;
  for (int j = 0; j < NPUMP && !pl; j++)
    if (((uintptr_t)&pumps[j] >> 4) % (uintptr_t)P == 1) pl = &pumps[j];
  if (!pl) pl = &pumps[0];
  mw_bind(&lock, data, sizeof data);
  mw_barrier(&step);

  int failed = 0;
  if (me <= 1) /* 1 */
    for (int i = 0; i < pump; i++) {
      mw_acquire(pl, MW_EXCLUSIVE); /* nothing bound: only the hand-over's messages */
      mw_release(pl);
    }
  mw_barrier(&step);
  if (me == 1) { /* 2 */
    mw_acquire(&lock, MW_EXCLUSIVE);
    for (int i = 0; i < DATA; i++) data[i] = (unsigned char)(37 + i);
    mw_release(&lock);
  }
  mw_barrier(&step);
  if (me == 2) { /* 3 */
    mw_acquire(&lock, MW_EXCLUSIVE);
    failed |= check(3, me, 1);
    for (int i = 0; i < DATA; i++) data[i] = (unsigned char)(2 * 37 + i);
    mw_release(&lock);
  }
  mw_barrier(&step);
  if (me == 1) { /* 4 */
    mw_acquire(&lock, MW_EXCLUSIVE);
    failed |= check(4, me, 2);
    mw_release(&lock);
  }
  mw_barrier(&step);
  mw_finalize();
  if (me == 1 && !failed) printf("clocks: OK, %d ranks, %d acquires of the pump lock first\n", P, 2 * pump);
  return failed;
}
