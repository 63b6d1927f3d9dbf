// A function that is given shared memory but was not compiled by mwcc cannot mark
// its stores: the runtime says so at start-up, once per function, with the first call's
// line. Functions compiled by mwcc, C library functions, and calls given only
// private memory are not reported.
// RUN: clang-19 -O2 -c %inputs/Inputs/plain_clang.c -o %t.plain.o
// RUN: %mwcc -O2 -c %inputs/Inputs/other_tu.c -o %t.other.o
// RUN: %mwcc -O2 %s %t.plain.o %t.other.o -o %t
// RUN: %t 2>&1 | FileCheck %s
// RUN: env MW_WARN_UNMARKED=0 %t 2>&1 | FileCheck %s --check-prefix=QUIET
//
// CHECK: midway: warning: mw_init: {{.*}}unmarked_calls.c:[[@LINE+24]]:3: 'plain_fill' may write shared memory through argument 1 (and 1 more calls), but it was not compiled by mwcc, so its writes are not marked dirty; compile it with mwcc, or pass it private memory and copy the result (rank 0)
// CHECK-NOT: plain_fill_private
// CHECK-NOT: 'fill'
// CHECK-NOT: set_one
// Nor a C library call given no object (SIG_IGN) or a function, or given shared data
// only where it reads (strftime's struct tm, here the C library's own).
// CHECK-NOT: 'signal'
// CHECK-NOT: 'strftime'
// CHECK: done
// QUIET-NOT: warning
// QUIET: done
#include <midway.h>
#include <signal.h>
#include <stdio.h>
#include <time.h>

void plain_fill(int *p, int n);
void plain_fill_private(int *p, int n);
void set_one(int *p, int v); /* Inputs/other_tu.c, compiled by mwcc */

MW_SHARED int shared[16];

int main(int argc, char **argv) {
  mw_init(&argc, &argv);
  plain_fill(shared, 16);
  plain_fill(shared + 8, 8);
  int private_data[4];
  plain_fill_private(private_data, 4);
  set_one(&shared[3], 7);
  signal(SIGPIPE, SIG_IGN);
  char when[32];
  const time_t t = 0;
  strftime(when, sizeof when, "%Y", gmtime(&t));
  printf("done %d %d %s\n", shared[15], private_data[3] + shared[3], when);
  mw_finalize();
  return 0;
}
