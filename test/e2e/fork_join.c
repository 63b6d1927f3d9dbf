// Fork/join (mw_fork_serve, mw_fork, mw_join): only rank 0 runs main; each fork starts
// the function on every other rank once the creator's writes are there, and mw_join
// returns once the workers' writes are there. Rank 0 may end with exit(): the job is
// finalized, not failed.
// RUN: %mwcc -O2 %s -o %t
// RUN: %mwrun -n 1 %t | FileCheck %s --check-prefix=ONE
// RUN: %mwrun -n 3 %t | FileCheck %s --check-prefix=THREE
// RUN: %mwrun -n 4 %t exit | FileCheck %s --check-prefix=EXIT
// RUN: %mwrun -n 3 %t print | FileCheck %s --check-prefix=PRINT
// RUN: not %mwrun -n 2 %t fork-on-worker 2>&1 | FileCheck %s --check-prefix=WORKER
// RUN: not %mwrun -n 2 %t join-twice 2>&1 | FileCheck %s --check-prefix=JOIN
// RUN: not %mwrun -n 2 %t fork-twice 2>&1 | FileCheck %s --check-prefix=TWICE
// RUN: not %mwrun -n 2 %t no-serve 2>&1 | FileCheck %s --check-prefix=SERVE
#include <midway.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 4096
MW_SHARED int input[N];        // written by the creator before the fork
MW_SHARED int output[64][N];   // each rank's row, written in the forked function
MW_SHARED int round_no;
MW_SHARED mw_lock_t id_lock;
MW_SHARED int next_id;
MW_SHARED int mains;           // how many ranks ran main
MW_SHARED char mode[32];      // the test's mode, for the workers too

static void work(void) {
  mw_acquire(&id_lock, MW_EXCLUSIVE);
  const int id = next_id++;
  mw_release(&id_lock);
  for (int i = 0; i < N; i++) output[id][i] = input[i] * 10 + round_no;
  if (!strcmp(mode, "print") && mw_rank() != 0 && round_no == 1) printf("worker: rank %d\n", mw_rank());
  if (!strcmp(mode, "fork-on-worker") && mw_rank() == 1) mw_fork(work);
}

int main(int argc, char **argv) {
  mw_init(&argc, &argv);
  if (argc > 1 && !strcmp(argv[1], "no-serve")) {
    mw_join();
    return 1;
  }
  mw_fork_serve();
  mains++;  // only rank 0 gets here: others never return from mw_fork_serve
  if (argc > 1) snprintf(mode, sizeof mode, "%s", argv[1]);
  const int P = mw_nprocs();
  // Output as threads would give it: what the creator printed before a fork comes out
  // before the workers' lines, theirs before what it prints after the join (stdout is a
  // pipe here, fully buffered).
  if (!strcmp(mode, "print")) printf("creator: before the fork\n");
  for (round_no = 1; round_no <= 2; round_no++) {
    for (int i = 0; i < N; i++) input[i] = i + round_no;
    next_id = 0;
    mw_fork(work);
    if (!strcmp(mode, "fork-twice")) mw_fork(work);
    work();
    mw_join();
    if (!strcmp(mode, "join-twice")) mw_join();
    int bad = 0;
    for (int r = 0; r < P; r++)
      for (int i = 0; i < N; i++) bad += output[r][i] != (i + round_no) * 10 + round_no;
    printf("round %d: %d ranks, %d wrong, %d ran main\n", round_no, next_id, bad, mains);
  }
  if (!strcmp(mode, "exit")) exit(0);  // no mw_finalize: exit finalizes
  mw_finalize();
  return 0;
}
// ONE: round 1: 1 ranks, 0 wrong, 1 ran main
// ONE-NEXT: round 2: 1 ranks, 0 wrong, 1 ran main
// THREE: round 1: 3 ranks, 0 wrong, 1 ran main
// THREE-NEXT: round 2: 3 ranks, 0 wrong, 1 ran main
// EXIT: round 2: 4 ranks, 0 wrong, 1 ran main
// WORKER: mw_fork: called on a worker: only rank 0 (the creator) forks and joins
// JOIN: mw_join: no fork is outstanding: call mw_fork first
// TWICE: mw_fork: a fork is outstanding: call mw_join before forking again
// SERVE: mw_join: called without mw_fork_serve
// PRINT: creator: before the fork
// PRINT-DAG: worker: rank 1
// PRINT-DAG: worker: rank 2
// PRINT: round 1: 3 ranks, 0 wrong, 1 ran main
