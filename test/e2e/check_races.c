// Data races on release-consistent data (issue 14): two ranks that write the same bytes
// of data bound to nothing, with no lock or barrier between their writes, are found where
// their updates merge, at the home of the data's page, naming both writers, the datum and
// the bytes; the home exits with status 66. Writes ordered by a lock or by barriers, and
// writers of different bytes, are correct and report nothing, under ec (unbound data is
// release consistent there too) and rc; processor consistency is not checked.
// RUN: %mwcc -fmidway-check -O1 %s -o %t
// RUN: not %mwrun -n 2 %t race 2>&1 | FileCheck %s --check-prefix=RACE
// RUN: not %mwrun -n 4 %t race 2>&1 | FileCheck %s --check-prefix=RACE
// RUN: not %mwrun -n 3 --model rc %t race 2>&1 | FileCheck %s --check-prefix=RACE
// RUN: env FI_TCP_IFACE=lo not %mwrun -n 2 --provider tcp %t race 2>&1 | FileCheck %s --check-prefix=RACE
// RACE: midway: check: data race: two ranks wrote the same bytes of release-consistent data between synchronizations (rank {{[0-9]}}, the data's home)
// RACE-NEXT: ranks 0 and 1 both wrote cells[3] [4 bytes], and no lock or barrier orders one write before the other
// RACE: midway: check: 1 report: exiting with status 66 (rank {{[0-9]}})
//
// RUN: %mwrun -n 4 %t locked 2>&1 | FileCheck %s --check-prefix=CLEAN
// RUN: %mwrun -n 4 --model rc %t locked 2>&1 | FileCheck %s --check-prefix=CLEAN
// RUN: %mwrun -n 3 %t phases 2>&1 | FileCheck %s --check-prefix=CLEAN
// RUN: %mwrun -n 4 --model rc %t apart 2>&1 | FileCheck %s --check-prefix=CLEAN
// RUN: %mwrun -n 2 --model pc %t race 2>&1 | FileCheck %s --check-prefix=CLEAN
// CLEAN-NOT: midway:
// CLEAN: done
//
// A default build checks nothing: the race is not reported.
// RUN: %mwcc -O1 %s -o %t.default
// RUN: %mwrun -n 2 %t.default race 2>&1 | FileCheck %s --check-prefix=CLEAN
#include <midway.h>
#include <stdio.h>
#include <string.h>

MW_SHARED int cells[16];
MW_SHARED mw_lock_t order;
MW_SHARED mw_barrier_t phase;

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "";
  mw_init(&argc, &argv);
  const int me = mw_rank(), n = mw_nprocs();
  // Every rank holds a copy of the page from here on, so that every write is flushed.
  volatile int first = cells[0];
  (void)first;
  mw_barrier(&phase);
  for (int step = 0; step < 3; step++) {
    if (!strcmp(mode, "race") && me < 2 && step == 1) cells[3] = me;  // ranks 0 and 1, one phase
    if (!strcmp(mode, "apart")) cells[me] = step;                     // each rank its own cell
    if (!strcmp(mode, "phases") && step == me % 3) cells[3] = me;     // one writer per phase
    if (!strcmp(mode, "locked")) {                                    // ordered by a lock
      mw_acquire(&order, MW_EXCLUSIVE);
      cells[3] += 1;
      mw_release(&order);
    }
    mw_barrier(&phase);
  }
  if (me == 0) printf("done: cells[3] = %d (%d ranks)\n", cells[3], n);
  mw_finalize();
  return 0;
}
