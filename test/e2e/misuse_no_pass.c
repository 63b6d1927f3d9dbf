// A program linked with mwcc's flags whose code was not compiled by the pass (plain
// clang, or the pass switched off): no store to shared data would be marked, and every
// rank would compute alone with wrong answers. mw_init stops it, saying how to fix it,
// on every rank, naming the rank mwrun gave.
// RUN: clang-19 -O2 -I%midway_include -c %s -o %t.o
// RUN: clang-19 -no-pie %t.o -Wl,-T,%midway_lib/midway.ld %midway_lib/midway_exe.o \
// RUN:   -L%midway_lib -Wl,-rpath,%midway_lib -lmidway -o %t
// RUN: not %t 2>&1 | FileCheck %s
// RUN: not %mwrun -n 2 %t 2>&1 | FileCheck %s --check-prefix=RANKS
// The same source through mwcc runs.
// RUN: %mwcc -O2 %s -o %t.mwcc
// RUN: %mwrun -n 2 %t.mwcc | FileCheck %s --check-prefix=OK
// CHECK: midway: mw_init: this program was linked with mwcc's flags, but none of its code was compiled by the Midway pass (its objects have no section mw_defined), so no store to shared data would be marked and every rank would compute with its own copy: compile every source file with mwcc (or clang-19 with -fpass-plugin and -fplugin naming lib/MidwayInstrument.so, docs/INSTALL.md) (rank 0)
// RANKS: midway: mw_init: this program was linked with mwcc's flags, but none of its code was compiled by the Midway pass {{.*}} (rank {{[01]}})
// OK: sum 3
#include <midway.h>
#include <stdio.h>

MW_SHARED int slots[2];
MW_SHARED mw_barrier_t done;

int main(int argc, char **argv) {
  mw_init(&argc, &argv);
  mw_barrier_bind(&done, slots, sizeof slots);
  slots[mw_rank()] = mw_rank() + 1;
  mw_barrier(&done);
  if (mw_rank() == 0) printf("sum %d\n", slots[0] + slots[1]);
  mw_finalize();
  return 0;
}
