// mwcc -fmidway-shared-globals shares every global and static variable, as threads
// share them, with no MW_SHARED in the source: what rank 0 writes to them arrives at
// rank 1. Thread-locals, constants and string literals, and variables in other
// sections stay private. Stack memory stays private too: the program stores to it,
// passes it around and copies into it, and the build (-Werror) has no warning.
// RUN: %mwcc -fmidway-shared-globals -O2 %s -o %t
// RUN: %mwrun -n 2 %t | FileCheck %s
// RUN: %mwcc -fmidway-shared-globals -O0 %s -o %t.O0
// RUN: %mwrun -n 2 %t.O0 | FileCheck %s
// CHECK: rank 1 sees 42 43 44.5 45 46 47
// CHECK: rank 1 private: 0 0 0
#include <midway.h>
#include <stdio.h>
#include <string.h>

int counter;                   /* bss */
long table[1024] = {1, 2};     /* data */
static double statics[512];
struct point { int x, y; } points[256];
__thread int per_thread;       /* private: one per thread */
const int constant[4] = {1, 2, 3, 4};
__attribute__((section("mine"))) int elsewhere; /* private: the program chose */
int *pointer_to_shared = &points[3].y;
mw_barrier_t step;             /* synchronization objects need no MW_SHARED either */

static int bump(void) {
  static int calls; /* a function's static */
  return ++calls;
}

static void fill(int *p, int n) {
  for (int i = 0; i < n; i++) p[i] = i;
}

int main(int argc, char **argv) {
  mw_init(&argc, &argv);
  int me = mw_rank();
  if (!mw_in_window(&counter) || !mw_in_window(table) || !mw_in_window(statics) ||
      !mw_in_window(points) || !mw_in_window(&step) || !mw_in_window(&pointer_to_shared) ||
      mw_in_window(&per_thread) || mw_in_window(constant) || mw_in_window(&elsewhere) ||
      mw_in_window("a string literal")) {
    printf("FAIL: placement\n");
    return 1;
  }
  /* Private stack data: written directly, through a callee and by memcpy. */
  int local[64];
  fill(local, 64);
  char buf[32];
  memcpy(buf, "stack", 6);
  /* Rank 1 takes a copy of every page first (see pragma_section.c). */
  if (me == 1 && counter + table[1000] + statics[500] + points[200].x + *pointer_to_shared +
                         table[1] != 2) {
    printf("FAIL: initial values\n");
    return 1;
  }
  mw_barrier(&step);
  if (me == 0) {
    counter = 42;
    table[1000] = 43;
    statics[500] = 44.5;
    points[200].x = 45;
    *pointer_to_shared = 46;
    table[1] = 46 + bump();
    per_thread = 1;
    elsewhere = 1;
  }
  mw_barrier(&step);
  if (me == 1) {
    printf("rank 1 sees %d %ld %g %d %d %ld\n", counter, table[1000], statics[500],
           points[200].x, points[3].y, table[1]);
    printf("rank 1 private: %d %d %d\n", per_thread, elsewhere, local[0] + buf[5]);
  }
  mw_finalize();
  return 0;
}
