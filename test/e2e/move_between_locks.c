// Data moved from one lock to another through other ranks: the holder of the first lock
// unbinds it (mw_unbind), and another rank, which may never have held the data, binds it
// to the second lock while holding that one, as API.md's recipe says. Every rank then
// reads it under the new lock, and the next round moves it back, between other ranks.
//
// Each set of data shares its page with its two locks (bound in part), and there are
// P * P sets, so that in the first round every rank unbinds data on pages of every home.
// Before, a binder that had never held the data read zeros, when the page's home was the
// rank that had unbound it (audit 30); and under rc or pc the second move was refused as
// a second guard, since an unbinding told no other rank.
// RUN: %mwcc -O1 %s -o %t
// RUN: %mwrun -n 3 %t 2>&1 | FileCheck %s
// RUN: %mwrun -n 4 %t 2>&1 | FileCheck %s
// RUN: %mwrun -n 3 --model rc %t 2>&1 | FileCheck %s
// RUN: %mwrun -n 3 --model pc %t 2>&1 | FileCheck %s
// CHECK-NOT: midway:
// CHECK-NOT: wrong
// CHECK: moved right
#include <midway.h>
#include <stdio.h>

#define N 64
struct __attribute__((aligned(4096))) set {
  long data[N];
  mw_lock_t lock[2];
};
MW_SHARED struct set sets[16];
MW_SHARED mw_barrier_t phase;

int main(int argc, char **argv) {
  mw_init(&argc, &argv);
  const int me = mw_rank(), np = mw_nprocs(), nsets = np * np;
  if (np < 3 || nsets > 16) {
    fprintf(stderr, "run it on 3 or 4 ranks\n");
    return 2;
  }
  for (int k = 0; k < nsets; k++)
    if (me == 0) {
      mw_acquire(&sets[k].lock[0], MW_EXCLUSIVE);
      mw_bind(&sets[k].lock[0], sets[k].data, sizeof sets[k].data);
      for (int i = 0; i < N; i++) sets[k].data[i] = i;
      mw_release(&sets[k].lock[0]);
    }
  mw_barrier(&phase);
  long offset = 0;  // what every element holds beyond its index
  for (int round = 0; round < 3; round++) {
    for (int k = 0; k < nsets; k++) {
      struct set *s = &sets[k];
      mw_lock_t *from = &s->lock[round % 2];
      if (me == (k + round) % np) {
        mw_acquire(from, MW_EXCLUSIVE);
        for (int i = 0; i < N; i++) s->data[i] += 1;
        mw_unbind(from, s->data, sizeof s->data);
        mw_release(from);
      }
    }
    mw_barrier(&phase);
    for (int k = 0; k < nsets; k++) {
      // The rank after the unbinding one, but not rank 0, which bound every set first.
      const int binder = (k + round + 1) % np ? (k + round + 1) % np : 1;
      struct set *s = &sets[k];
      mw_lock_t *to = &s->lock[(round + 1) % 2];
      if (me == binder) {
        mw_acquire(to, MW_EXCLUSIVE);
        mw_bind(to, s->data, sizeof s->data);
        for (int i = 0; i < N; i++) s->data[i] += 10;
        mw_release(to);
      }
    }
    mw_barrier(&phase);
    offset += 11;
    for (int k = 0; k < nsets; k++) {
      struct set *s = &sets[k];
      mw_lock_t *to = &s->lock[(round + 1) % 2];
      mw_acquire(to, MW_NONEXCLUSIVE);
      int wrong = 0;
      for (int i = 0; i < N; i++) wrong += s->data[i] != i + offset;
      if (wrong)
        printf("rank %d, round %d, set %d: %d of %d wrong (data[1] %ld, want %ld)\n", me, round, k,
               wrong, N, s->data[1], 1 + offset);
      mw_release(to);
    }
    mw_barrier(&phase);
  }
  if (me == 0) printf("moved right\n");
  mw_finalize();
  return 0;
}
