// The C library's scanf family writes shared data the pass cannot see stored; with a
// constant format mwcc marks what each conversion assigned (and only that), so the
// values reach the other ranks with no mw_written and no warning. The data is bound
// to a barrier, which carries marked bytes only: an unmarked conversion would not
// arrive, and a conversion that failed but was marked would carry rank 1's stale
// copy over rank 0's write of the same bytes (and draw a two-writers warning).
// RUN: %mwcc -O2 -Wno-backend-plugin %s -o %t 2>&1 | FileCheck %s --allow-empty --check-prefix=BUILD
// RUN: %mwrun -n 2 %t %s 2>&1 | FileCheck %s --implicit-check-not=warning
// BUILD-NOT: warning
#include <midway.h>
#include <stdio.h>
#include <string.h>

MW_SHARED __attribute__((aligned(4096))) int counts[2];
MW_SHARED __attribute__((aligned(4096))) double weight;
MW_SHARED __attribute__((aligned(4096))) char text[64];
MW_SHARED mw_barrier_t b;

int main(int argc, char **argv) {
  mw_init(&argc, &argv);
  char *volatile hidden = text;  // a pointer the pass cannot trace: checked at run time
  char *word = hidden;
  mw_barrier_bind(&b, counts, sizeof counts);
  mw_barrier_bind(&b, &weight, sizeof weight);
  mw_barrier_bind(&b, text, sizeof text);
  if (mw_rank() == 1) {
    // Only the first %d converts: counts[1] is not assigned and must not be marked.
    int n = sscanf("12 x", "%d %d", &counts[0], &counts[1]);
    FILE *f = fopen(argv[1], "r");  // this file: its first line is "// The C ..."
    int m = f ? fscanf(f, "%*s %lf", &weight) : -1;  // "The" is no number: nothing assigned
    if (f) rewind(f);
    int k = f ? fscanf(f, "%*s %63s", word) : -1;
    if (f) fclose(f);
    printf("rank 1: sscanf %d, fscanf %d and %d\n", n, m, k);
  } else {
    counts[1] = 99;
    weight = 0.5;
  }
  mw_barrier(&b);
  printf("rank %d sees %d %d %g '%s'\n", mw_rank(), counts[0], counts[1], weight, word);
  mw_finalize();
  return 0;
}
// CHECK-DAG: rank 1: sscanf 1, fscanf 0 and 1
// CHECK-DAG: rank 0 sees 12 99 0.5 'The'
// CHECK-DAG: rank 1 sees 12 99 0.5 'The'
