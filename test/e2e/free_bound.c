// A freed block whose bytes were bound to a barrier or a lock is not handed out again:
// the bindings stay on every rank that made or saw them, so a new block at the same
// address would still be bound, and its ordinary (release-consistent) data would move
// only with that barrier or lock: the other ranks read stale bytes, silently.
// RUN: %mwcc -O2 %s -o %t
// RUN: %mwrun -n 2 %t barrier | FileCheck %s
// RUN: %mwrun -n 3 %t barrier | FileCheck %s
// RUN: %mwrun -n 4 %t lock | FileCheck %s
// RUN: env FI_TCP_IFACE=lo %mwrun -n 3 --provider tcp %t lock | FileCheck %s
// CHECK-NOT: WRONG
// CHECK: new block read right on every rank
#include <midway.h>
#include <stdio.h>
#include <string.h>

enum { N = 512 };
MW_SHARED long *block;
MW_SHARED mw_barrier_t gathered, plain;
MW_SHARED mw_lock_t guard, publish;

int main(int argc, char **argv) {
  const int by_barrier = argc > 1 && !strcmp(argv[1], "barrier");
  mw_init(&argc, &argv);
  const int me = mw_rank(), np = mw_nprocs();
  if (me == 0) block = mw_malloc(N * sizeof(long));
  mw_barrier(&plain);
  long *old = block;
  if (by_barrier) {
    // Each rank writes its share, bound to `gathered`; rank 0 gathers them.
    mw_barrier_bind(&gathered, old, N * sizeof(long));
    mw_barrier(&plain);
    for (int i = me; i < N; i += np) old[i] = i;
    mw_barrier_final(&gathered);
  } else {
    // Bound to `guard` by rank 0, holding it; every rank adds under it.
    if (me == 0) {
      mw_acquire(&guard, MW_EXCLUSIVE);
      mw_bind(&guard, old, N * sizeof(long));
      mw_release(&guard);
    }
    mw_barrier(&plain);
    mw_acquire(&guard, MW_EXCLUSIVE);
    for (int i = 0; i < N; i++) old[i] += 1;
    mw_release(&guard);
  }
  mw_barrier(&plain);
  // Rank 0 frees the block and makes a new one of the same size, written as ordinary data.
  if (me == 0) {
    mw_free(old);
    long *fresh = mw_malloc(N * sizeof(long));
    for (int i = 0; i < N; i++) fresh[i] = 7 * i + 1;
    mw_acquire(&publish, MW_EXCLUSIVE);
    block = fresh;
    mw_release(&publish);
  }
  mw_barrier(&plain);
  mw_acquire(&publish, MW_NONEXCLUSIVE);
  long *fresh = block;
  mw_release(&publish);
  int wrong = 0;
  for (int i = 0; i < N; i++)
    if (fresh[i] != 7 * i + 1 && wrong++ < 3)
      printf("WRONG rank %d: new block [%d] = %ld, want %d\n", me, i, fresh[i], 7 * i + 1);
  mw_barrier(&plain);
  if (me == 0) printf("new block read right on every rank\n");
  fflush(stdout);
  mw_finalize();
  return wrong != 0;
}
