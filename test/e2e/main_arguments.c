// main's argv is private memory (the kernel's initial stack): getopt, which may permute
// it, draws no warning from mwcc or mw_init, in a -fmidway-shared-globals build too
// (as every Splash program's option parsing, whose ranks join from c.m4.midway's
// constructor: main's argv is then never passed to mw_init, whose &argv would make argv
// a reload the pass cannot follow).
// RUN: %mwcc -O2 -fmidway-shared-globals %s -o %t
// RUN: %mwrun -n 2 %t -p 3 extra 2>&1 | FileCheck %s --implicit-check-not=warning
#include <midway.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

long P = 1;  // a global, shared by the flag

int main(int argc, char **argv) {
  mw_init(NULL, NULL);
  int c;
  while ((c = getopt(argc, argv, "p:")) != -1)
    if (c == 'p') P = atol(optarg);
  printf("rank %d: P=%ld, first operand %s\n", mw_rank(), P, argv[optind]);
  mw_finalize();
  return 0;
}
// CHECK-DAG: rank 0: P=3, first operand extra
// CHECK-DAG: rank 1: P=3, first operand extra
