// Fork and join carry data bound to a barrier, as a crossing would: what the creator
// wrote before mw_fork is there when the workers start, what a worker wrote after its
// last crossing is there when mw_join returns, and in the next round the creator's newer
// writes are not overwritten by those older ones. (Before, the workers saw the creator's
// writes only at their first crossing, and the creator never saw the workers' last ones.)
// The binding is made in a forked function on every rank, as API.md says to bind in a
// fork/join program; the round number, set by the creator before each fork, is bound too,
// as mwrun --advise proposes. Unbound data on the same page as round_no (notes) comes
// with the fork too: the fork's data lands on that page, bound in part, which the worker
// then fetches before it runs (it read zeros: audit 30).
// RUN: %mwcc -O2 %s -o %t
// RUN: %mwrun -n 2 %t | FileCheck %s
// RUN: %mwrun -n 3 %t | FileCheck %s
// RUN: %mwrun -n 4 %t | FileCheck %s
// RUN: env FI_TCP_IFACE=lo %mwrun -n 3 --provider tcp %t | FileCheck %s
// CHECK-NOT: WRONG
// CHECK: 3 rounds right
#include <midway.h>
#include <stdio.h>

enum { N = 2048, ROUNDS = 3 };
MW_SHARED mw_barrier_t phase;
MW_SHARED long grid[N];
MW_SHARED long round_no;
MW_SHARED long notes[64];  // bound to nothing
MW_SHARED int wrong;  // counted under a lock after the join
MW_SHARED mw_lock_t count;

static void bind(void) {
  mw_barrier_bind(&phase, grid, sizeof grid);
  mw_barrier_bind(&phase, &round_no, sizeof round_no);
}

static void report(const char *where, long i, long got, long want) {
  mw_acquire(&count, MW_EXCLUSIVE);
  if (wrong++ < 4) printf("WRONG rank %d round %ld %s: [%ld] = %ld, want %ld\n", mw_rank(), round_no, where, i, got, want);
  mw_release(&count);
}

static void work(void) {
  const int me = mw_rank(), np = mw_nprocs();
  const long r = round_no;
  for (long i = 0; i < 64; i++)
    if (notes[i] != 5 * r + i) report("in notes at the start", i, notes[i], 5 * r + i);
  // The creator's writes before the fork, here at the start.
  for (long i = 0; i < N; i++)
    if (grid[i] != 1000 * r + i) report("at the start", i, grid[i], 1000 * r + i);
  mw_barrier(&phase);
  // Each rank's share, crossed, then checked by all; then written once more, after the
  // last crossing, for the creator to see at the join.
  for (long i = me; i < N; i += np) grid[i] = -(1000 * r + i);
  mw_barrier(&phase);
  for (long i = 0; i < N; i++)
    if (grid[i] != -(1000 * r + i)) report("after the crossing", i, grid[i], -(1000 * r + i));
  mw_barrier(&phase);
  for (long i = me; i < N; i += np) grid[i] = 7 * i + r;
}

int main(int argc, char **argv) {
  mw_init(&argc, &argv);
  mw_fork_serve();
  mw_fork(bind);
  bind();
  mw_join();
  for (long r = 0; r < ROUNDS; r++) {
    if (r > 0)
      for (long i = 0; i < N; i++)
        if (grid[i] != 7 * i + r - 1) report("after the join", i, grid[i], 7 * i + r - 1);
    round_no = r;
    for (long i = 0; i < 64; i++) notes[i] = 5 * r + i;
    for (long i = 0; i < N; i++) grid[i] = 1000 * r + i;
    mw_fork(work);
    work();
    mw_join();
  }
  for (long i = 0; i < N; i++)
    if (grid[i] != 7 * i + ROUNDS - 1) report("at the end", i, grid[i], 7 * i + ROUNDS - 1);
  if (!wrong) printf("%d rounds right\n", ROUNDS);
  fflush(stdout);
  mw_finalize();
  return wrong != 0;
}
