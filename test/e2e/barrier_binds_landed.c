// Two start-up bindings to one barrier that together bind a whole page: another rank's
// crossing may bring its bytes between them, while the page is still bound in part (it
// is then fetched at this rank's next crossing, to join its copyset). Once the second
// binding makes the page wholly bound, that fetch must not happen: the home's copy would
// overwrite the crossing's bytes, and every rank would read zeros. Rank 0, the
// barrier's manager, waits between its bindings so that the others' arrivals come then.
// RUN: %mwcc -O2 %s -o %t
// RUN: %mwrun -n 2 %t | FileCheck %s
// RUN: %mwrun -n 3 %t | FileCheck %s
// RUN: %mwrun -n 4 %t | FileCheck %s
// CHECK-NOT: WRONG
// CHECK: crossed right
#include <midway.h>
#include <stdio.h>
#include <unistd.h>

MW_SHARED mw_barrier_t crossing;
MW_SHARED __attribute__((aligned(4096))) long head[640];  // the first page, and into the second
MW_SHARED long tail[4];                                   // the rest of the second page's data

int main(int argc, char **argv) {
  mw_init(&argc, &argv);
  const int me = mw_rank(), np = mw_nprocs();
  mw_barrier_bind(&crossing, head, sizeof head);
  if (me == 0) usleep(200 * 1000);
  mw_barrier_bind(&crossing, tail, sizeof tail);
  tail[me] = 100 + me;
  head[600 + me] = 200 + me;
  mw_barrier(&crossing);
  int wrong = 0;
  for (int r = 0; r < np; r++) {
    if (tail[r] != 100 + r) wrong = printf("WRONG rank %d: tail[%d] = %ld, want %d\n", me, r, tail[r], 100 + r);
    if (head[600 + r] != 200 + r)
      wrong = printf("WRONG rank %d: head[%d] = %ld, want %d\n", me, 600 + r, head[600 + r], 200 + r);
  }
  mw_barrier(&crossing);
  if (me == 0) printf("crossed right\n");
  fflush(stdout);
  mw_finalize();
  return wrong != 0;
}
