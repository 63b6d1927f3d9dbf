// Two ranks writing the same bytes of barrier-bound data in one phase: the barrier keeps
// one rank's bytes. Found where the barrier's manager (rank 0) merges the ranks' updates,
// naming both writers, the bytes and the barrier: a report (exit 66) in a check build, a
// warning (once per barrier) in a default build. Writers of different bytes, even of
// one cache line, are correct and say nothing.
// RUN: %mwcc -fmidway-check -O1 %s -o %t.check
// RUN: not %mwrun -n 2 %t.check same 2>&1 | FileCheck %s --check-prefix=CHECK-BUILD
// RUN: not %mwrun -n 4 %t.check same 2>&1 | FileCheck %s --check-prefix=CHECK-BUILD
// RUN: env FI_TCP_IFACE=lo not %mwrun -n 2 --provider tcp %t.check same 2>&1 | FileCheck %s --check-prefix=CHECK-BUILD
// RUN: %mwrun -n 4 %t.check apart 2>&1 | FileCheck %s --check-prefix=APART --allow-empty
// RUN: %mwcc -O1 %s -o %t
// RUN: %mwrun -n 2 %t same 2>&1 | FileCheck %s --check-prefix=DEFAULT
// RUN: %mwrun -n 4 %t apart 2>&1 | FileCheck %s --check-prefix=APART --allow-empty
// CHECK-BUILD: midway: check: two ranks wrote the same bytes of barrier-bound data in one phase (rank 0)
// CHECK-BUILD-NEXT: ranks 0 and 1 both wrote cells[3] [4 bytes] before crossing 2 of barrier phase
// CHECK-BUILD: midway: check: 1 report: exiting with status 66 (rank 0)
// DEFAULT: midway: warning: mw_barrier: ranks 0 and 1 both wrote cells[3] [4 bytes], bound to barrier phase, in one phase (crossing 2)
// DEFAULT-NOT: warning
// APART-NOT: midway:
#include <midway.h>
#include <stdio.h>
#include <string.h>

MW_SHARED int cells[16];
MW_SHARED mw_barrier_t phase;

int main(int argc, char **argv) {
  const int same = argc > 1 && !strcmp(argv[1], "same");
  mw_init(&argc, &argv);
  mw_barrier_bind(&phase, cells, sizeof cells);
  mw_barrier(&phase);
  const int me = mw_rank();
  for (int step = 0; step < 3; step++) {
    cells[8 + me] = me + step;                    // each rank its own cell
    if (same && me < 2 && step == 0) cells[3] = me;  // ranks 0 and 1 both write cells[3]
    mw_barrier(&phase);
  }
  mw_finalize();
  return 0;
}
