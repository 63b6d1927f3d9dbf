// mw_written: a write the pass did not see (here an inline-assembly store, as a library
// not built by mwcc would make) reaches the other ranks once the range is marked, and
// not without (the data is bound to a barrier, which carries marked bytes only).
// Misuse: a range outside shared memory.
// RUN: %mwcc -O2 -Wno-backend-plugin %s -o %t
// RUN: %mwrun -n 2 %t marked | FileCheck %s --check-prefix=MARKED
// RUN: %mwrun -n 2 %t unmarked | FileCheck %s --check-prefix=UNMARKED
// RUN: not %mwrun -n 2 %t private 2>&1 | FileCheck %s --check-prefix=PRIVATE
#include <midway.h>
#include <stdio.h>
#include <string.h>

MW_SHARED __attribute__((aligned(4096))) long value[512];
MW_SHARED mw_barrier_t b;

static void store_unseen(long *p, long v) {  // a store the pass cannot mark
  __asm__ volatile("movq %1, (%0)" : : "r"(p), "r"(v) : "memory");
}

int main(int argc, char **argv) {
  mw_init(&argc, &argv);
  mw_barrier_bind(&b, value, sizeof value);
  const char *mode = argv[1];
  long local = 0;
  if (!strcmp(mode, "private")) mw_written(&local, sizeof local);
  if (mw_rank() == 1) {
    store_unseen(&value[7], 4242);
    if (!strcmp(mode, "marked")) mw_written(&value[7], sizeof value[7]);
  }
  mw_barrier(&b);
  if (mw_rank() == 0) printf("rank 0 sees %ld\n", value[7]);
  mw_finalize();
  return 0;
}
// MARKED: rank 0 sees 4242
// UNMARKED: rank 0 sees 0
// PRIVATE: mw_written: [{{.*}}) is not in shared memory
