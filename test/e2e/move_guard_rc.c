// Under the dial's rc, data moved from one lock to another (unbound holding the first on
// one rank, bound holding the second on another) is no conflict of guards: bindings move
// no data there, and an unbinding tells no rank, so a rank that saw the first binding and
// then gets the second lock's bindings must not take it for two guards (audit 30).
// RUN: %mwcc -O1 %s -o %t
// RUN: %mwrun -n 3 --model rc %t 2>&1 | FileCheck %s
// CHECK-NOT: midway:
// CHECK: moved right
#include <midway.h>
#include <stdio.h>

MW_SHARED __attribute__((aligned(4096))) long table[64];
MW_SHARED mw_lock_t first, second;
MW_SHARED mw_barrier_t phase;

int main(int argc, char **argv) {
  mw_init(&argc, &argv);
  const int me = mw_rank();
  mw_barrier(&phase);
  if (me == 0) {
    mw_acquire(&first, MW_EXCLUSIVE);
    mw_bind(&first, table, sizeof table);
    for (int i = 0; i < 64; i++) table[i] = i;
    mw_release(&first);
  }
  mw_barrier(&phase);
  if (me == 1) {
    mw_acquire(&first, MW_EXCLUSIVE);
    for (int i = 0; i < 64; i++) table[i] += 100;
    mw_unbind(&first, table, sizeof table);
    mw_release(&first);
  }
  mw_barrier(&phase);
  if (me == 2) {
    mw_acquire(&second, MW_EXCLUSIVE);
    mw_bind(&second, table, sizeof table);
    for (int i = 0; i < 64; i++) table[i] += 1000;
    mw_release(&second);
  }
  mw_barrier(&phase);
  int wrong = 0;
  mw_acquire(&second, MW_NONEXCLUSIVE);
  for (int i = 0; i < 64; i++) wrong += table[i] != i + 1100;
  mw_release(&second);
  mw_barrier(&phase);
  if (me == 0) printf(wrong ? "WRONG\n" : "moved right\n");
  fflush(stdout);
  mw_finalize();
  return 0;
}
