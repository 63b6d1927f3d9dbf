// Ranks that cross a barrier different numbers of times deadlock at the next one: mwrun
// says which crossing each rank is at, so that the extra crossing is plain to see.
// RUN: %mwcc -O0 -g %s -o %t
// RUN: not %mwrun -n 2 %t 2>&1 | FileCheck %s
// RUN: not %mwrun -n 3 %t 2>&1 | FileCheck %s --check-prefix=THREE
// CHECK: mwrun: deadlock: every rank waits for what only another waiting rank can give:
// CHECK-DAG: rank 0: rank 1 will not arrive: it waits at another barrier, its crossing number 3 of that one
// CHECK-DAG: rank 1: rank 0 will not arrive: it waits at another barrier, its crossing number 1 of that one
// CHECK: what each rank waits for:
// CHECK-NEXT: rank 0 {{.*}}: waits for barrier done ({{.*}}), its manager rank 0, called from main+0x{{[0-9a-f]+}} at {{.*}}barrier_counts.c:[[@LINE+15]] (0x{{[0-9a-f]+}}), its crossing number 1, for
// CHECK-NEXT: rank 1 {{.*}}: waits for barrier phase ({{.*}}), its manager rank 0, called from main+0x{{[0-9a-f]+}} at {{.*}}barrier_counts.c:[[@LINE+13]] (0x{{[0-9a-f]+}}), its crossing number 3, for
// THREE-DAG: rank 0: rank 1 will not arrive: it waits at another barrier, its crossing number 3 of that one
// THREE-DAG: rank 2: rank 1 will not arrive: it waits at another barrier, its crossing number 3 of that one
// THREE-DAG: rank 2 {{.*}}: waits for barrier done ({{.*}}), {{.*}}, its crossing number 1, for
#include <midway.h>

MW_SHARED mw_barrier_t phase, done;

int main(int argc, char **argv) {
  mw_init(&argc, &argv);
  // Rank 1 takes one more round than the others.
  const int rounds = mw_rank() == 1 ? 3 : 2;
  for (int i = 0; i < rounds; i++)
    mw_barrier(&phase);
  mw_barrier(&done);
  mw_finalize();
  return 0;
}
