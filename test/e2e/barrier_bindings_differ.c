// mw_barrier_bind made on some ranks only: a rank that skipped it neither sends its
// writes with the crossings nor receives the others', and every rank reads stale data,
// silently. The barrier's manager compares the ranks' bindings at their first crossing
// and stops the job, whichever rank skipped the call (the manager, or another).
// RUN: %mwcc -O1 %s -o %t
// RUN: not %mwrun -n 2 %t 1 2>&1 | FileCheck %s --check-prefix=LAST
// RUN: not %mwrun -n 3 %t 2 2>&1 | FileCheck %s --check-prefix=LAST
// RUN: not %mwrun -n 3 %t 0 2>&1 | FileCheck %s --check-prefix=MANAGER
// LAST: midway: mw_barrier: barrier phase: the ranks bound different data to it (mw_barrier_bind must be the same calls on every rank, before its first crossing): rank {{[12]}} bound 0 ranges of 0 bytes, this rank 1 range of 8192 bytes (rank 0)
// MANAGER: midway: mw_barrier: barrier phase: the ranks bound different data to it (mw_barrier_bind must be the same calls on every rank, before its first crossing): rank {{[12]}} bound 1 range of 8192 bytes, this rank 0 ranges of 0 bytes (rank 0)
// Each rank binding only its own part is the same mistake, at other addresses.
// RUN: not %mwrun -n 2 %t own 2>&1 | FileCheck %s --check-prefix=OWN
// OWN: midway: mw_barrier: barrier phase: the ranks bound different data to it {{.*}}: rank 1 bound 1 range of 4096 bytes, this rank 1 range of 4096 bytes, at other addresses (rank 0)
#include <midway.h>
#include <stdlib.h>
#include <string.h>

MW_SHARED __attribute__((aligned(4096))) long grid[1024];
MW_SHARED mw_barrier_t phase, start;

int main(int argc, char **argv) {
  mw_init(&argc, &argv);
  const int me = mw_rank(), np = mw_nprocs();
  if (!strcmp(argv[1], "own"))
    mw_barrier_bind(&phase, grid + me * 512, 4096);
  else if (me != atoi(argv[1]))
    mw_barrier_bind(&phase, grid, sizeof grid);
  mw_barrier(&start);
  for (int round = 0; round < 3; round++) {
    for (int i = me; i < 1024; i += np) grid[i] = round;
    mw_barrier(&phase);
  }
  mw_finalize();
  return 0;
}
