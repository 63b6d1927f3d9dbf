// A pointer to the C library's own data, stored in shared memory by one rank, is valid
// in every rank with no flag: each rank runs with address-space randomization off
// (runtime/memory/same_layout.hpp), under mwrun as under mpirun and srun.
// MW_SAME_LAYOUT=0 keeps randomization.
// RUN: %mwcc -O2 %s -o %t
// RUN: %mwrun -n 3 %t | FileCheck %s
// RUN: env MW_SAME_LAYOUT=0 %mwrun -n 2 %t | FileCheck %s --check-prefix=KEEP
// mwrun starts its ranks with randomization off already; `setarch x86_64` turns it back on
// for the rank, as under mpirun or srun, so that the rank re-executes itself.
// RUN: %mwrun -n 3 --exec-prefix 'setarch x86_64' %t | FileCheck %s
#include <midway.h>
#include <stdio.h>
#include <string.h>
#include <sys/personality.h>

MW_SHARED FILE *out;  // as WATER-NSQUARED's `six = stdout`
MW_SHARED void *libc_function;
MW_SHARED mw_barrier_t b;

int main(int argc, char **argv) {
  mw_init(&argc, &argv);
  if (mw_rank() == 0) {
    out = stdout;
    libc_function = (void *)&printf;
  }
  mw_barrier(&b);
  const int same = out == stdout && libc_function == (void *)&printf;
  const int norandom = (personality(0xffffffff) & ADDR_NO_RANDOMIZE) != 0;
  printf("rank %d: same addresses %s, randomization off %s\n", mw_rank(), same ? "yes" : "no",
         norandom ? "yes" : "no");
  fflush(stdout);
  if (same) {  // where they differ, rank 0's FILE * is garbage here (a crash, with ASLR)
    fprintf(out, "rank %d writes through rank 0's pointer\n", mw_rank());
    fflush(out);
  }
  mw_barrier(&b);
  mw_finalize();
  return 0;
}
// CHECK-DAG: rank 0: same addresses yes, randomization off yes
// CHECK-DAG: rank 1: same addresses yes, randomization off yes
// CHECK-DAG: rank 2: same addresses yes, randomization off yes
// CHECK-DAG: rank 2 writes through rank 0's pointer
// KEEP: randomization off no
