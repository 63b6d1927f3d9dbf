// Runtime misuse stops the program with a message naming the call and the rank.
// RUN: %mwcc -O1 %s -o %t
// RUN: not %t before-init 2>&1 | FileCheck %s --check-prefix=BEFORE
// RUN: not %t init-twice 2>&1 | FileCheck %s --check-prefix=TWICE
// RUN: not %t acquire 2>&1 | FileCheck %s --check-prefix=ACQUIRE
// RUN: not %t barrier 2>&1 | FileCheck %s --check-prefix=BARRIER
// RUN: not %t after-finalize 2>&1 | FileCheck %s --check-prefix=AFTER
// RUN: env MW_NPROCS=4 not %t ok 2>&1 | FileCheck %s --check-prefix=NPROCS
// RUN: %t ok | FileCheck %s --check-prefix=OK
#include <midway.h>
#include <stdio.h>
#include <string.h>

MW_SHARED mw_lock_t lock;
MW_SHARED mw_barrier_t barrier;

int main(int argc, char **argv) {
  const char *what = argc > 1 ? argv[1] : "ok";
  if (!strcmp(what, "before-init")) {
    // BEFORE: midway: mw_malloc: called before mw_init (rank not yet known)
    mw_malloc(8);
  }
  mw_init(&argc, &argv);
  if (!strcmp(what, "init-twice")) {
    // TWICE: midway: mw_init: called twice (each process joins the job once) (rank 0)
    mw_init(&argc, &argv);
  }
  if (!strcmp(what, "acquire")) {
    // ACQUIRE: midway: mw_acquire: not implemented yet: locks (rank 0)
    mw_acquire(&lock, MW_EXCLUSIVE);
  }
  if (!strcmp(what, "barrier")) {
    // BARRIER: midway: mw_barrier: not implemented yet: barriers (rank 0)
    mw_barrier(&barrier);
  }
  mw_finalize();
  if (!strcmp(what, "after-finalize")) {
    // AFTER: midway: mw_rank: called after mw_finalize
    return mw_rank();
  }
  // NPROCS: midway: mw_init: MW_NPROCS=4 asks for a job of 4 processes, but MW_RANK and MW_JOB_DIR are not set: start the program with mwrun
  // OK: rank 0 of 1
  printf("rank 0 of 1\n");
  return 0;
}
