// Globals put into mw_shared with `#pragma clang section` are shared like MW_SHARED
// ones: they lie in the window, their stores are marked, and what rank 0 writes
// arrives at rank 1. (clang records the pragma as attributes, not as a section: the
// pass used to read only the section, left these stores unmarked, and rank 1 kept
// seeing zeros.)
// RUN: %mwcc -O2 %s %inputs/Inputs/pragma_bss.c -o %t
// RUN: %mwrun -n 2 %t | FileCheck %s
// RUN: %mwcc -O0 %s %inputs/Inputs/pragma_bss.c -o %t.O0
// RUN: %mwrun -n 2 %t.O0 | FileCheck %s
// CHECK: rank 1 sees 42 43 44.5 45 46 47
#include <midway.h>
#include <stdio.h>

#pragma clang section data = "mw_shared"
int counter;                /* zero-initialized: in the range, so shared too */
long table[1024] = {1, 2};  /* with initial values */
static double statics[512];
#pragma clang section data = ""
extern int zeros[1024];     /* Inputs/pragma_bss.c: bss = "mw_shared" */
extern int with_value;
void store_zeros(int i, int v);

MW_SHARED mw_barrier_t step;

int main(int argc, char **argv) {
  mw_init(&argc, &argv);
  int me = mw_rank();
  if (!mw_in_window(&counter) || !mw_in_window(table) || !mw_in_window(statics) ||
      !mw_in_window(zeros) || mw_in_window(&with_value)) {
    printf("FAIL: a pragma global is not in the shared window, or one outside the pragma is\n");
    return 1;
  }
  /* Rank 1 takes a copy of every page first: it then sees rank 0's writes only if
     they were marked (a first touch after them would fetch the page whole). */
  if (me == 1 && counter + table[1000] + statics[500] + zeros[1000] + zeros[3] + table[1] != 2) {
    printf("FAIL: initial values\n");
    return 1;
  }
  mw_barrier(&step);
  if (me == 0) {
    counter = 42;
    table[1000] = 43;
    statics[500] = 44.5;
    zeros[1000] = 45;
    table[1] = 46;
    store_zeros(3, 47);
  }
  mw_barrier(&step);
  if (me == 1)
    printf("rank 1 sees %d %ld %g %d %ld %d\n", counter, table[1000], statics[500], zeros[1000],
           table[1], zeros[3]);
  mw_finalize();
  return 0;
}
