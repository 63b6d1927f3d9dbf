// Release/processor-consistency misuse is reported naming the call and the rank (the
// fault reports' runs are in fault_reports.c, their CHECK lines here, by the code).
// RUN: %mwcc -O1 %s -o %t
// mw_processor_consistent and mw_discard with bad arguments.
// RUN: not %t pc-zero 2>&1 | FileCheck %s --check-prefix=PC-ZERO
// RUN: not %mwrun -n 2 %t pc-zero 1 2>&1 | FileCheck %s --check-prefix=PC-ZERO1
// RUN: not %t pc-private 2>&1 | FileCheck %s --check-prefix=PC-PRIVATE
// RUN: not %mwrun -n 2 %t pc-null 1 2>&1 | FileCheck %s --check-prefix=PC-NULL
// RUN: not %mwrun -n 2 %t pc-unallocated 1 2>&1 | FileCheck %s --check-prefix=PC-UNALLOC
// RUN: not %mwrun -n 2 %t leave-private 1 2>&1 | FileCheck %s --check-prefix=LEAVE-PRIVATE
// RUN: not %mwrun -n 2 %t discard-held 1 2>&1 | FileCheck %s --check-prefix=DISCARD-HELD
// RUN: not %t pc-before-init 2>&1 | FileCheck %s --check-prefix=PC-BEFORE
// The dial's settings.
// RUN: env MW_MODEL=tso not %t ok 2>&1 | FileCheck %s --check-prefix=MODEL
// RUN: env MW_PC_INTERVAL_US=0 not %t ok 2>&1 | FileCheck %s --check-prefix=INTERVAL
// A rank that exits without mw_finalize while the processor-consistency flusher runs
// exits with its own status (it used to die by SIGABRT: std::terminate).
// RUN: not %mwrun -n 2 --model pc %t exit 1 2>&1 | FileCheck %s --check-prefix=EXIT
// RUN: not %mwrun -n 2 %t exit-pc 1 2>&1 | FileCheck %s --check-prefix=EXIT
// RUN: %mwrun -n 2 --model pc %t ok | FileCheck %s --check-prefix=OK
#include <midway.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

MW_SHARED _Alignas(4096) char data[2][4096];
MW_SHARED _Alignas(4096) char *block_of[64];
MW_SHARED mw_barrier_t barrier;
MW_SHARED mw_lock_t lock;

#define FAR (64ul << 20) /* 64 MiB past a small block: in its rank's part, never allocated */

int main(int argc, char **argv) {
  const char *what = argc > 1 ? argv[1] : "ok";
  int who = argc > 2 ? atoi(argv[2]) : 0;
  if (!strcmp(what, "pc-before-init")) {
    // PC-BEFORE: midway: mw_processor_consistent: called before mw_init
    mw_processor_consistent(data, sizeof data, 1000);
  }
  mw_init(&argc, &argv);
  const int me = mw_rank(), P = mw_nprocs();
  char *mine = mw_malloc(64);
  block_of[me] = mine;
  mw_barrier(&barrier);
  if (me == who) {
    if (!strcmp(what, "segv-outside")) {
      // OUTSIDE: midway: rank 1: segmentation fault at 0x10 (outside the shared window)
      // OUTSIDE: mwrun: rank 1 (pid {{[0-9]+}}) was killed by signal 11 (SIGSEGV){{( \(core dumped\))?}} in main+0x{{[0-9a-f]+}} at {{.*}}misuse_rc.c:[[@LINE+8]]; stopping the job
      // OUTSIDE2: midway: rank 2: segmentation fault at 0x10 (outside the shared window)
      // OUTSIDE2: mwrun: rank 2 (pid {{[0-9]+}}) was killed by signal 11 (SIGSEGV)
      // TRACE-CRASH: mwrun: rank 1 (pid {{[0-9]+}}) was killed by signal 11 (SIGSEGV){{( \(core dumped\))?}} in main+0x{{[0-9a-f]+}} at {{.*}}misuse_rc.c:[[@LINE+5]]; stopping the job
      // TRACE-CRASH-DAG: mwrun: --trace: rank 0 wrote no trace (it did not reach mw_finalize)
      // TRACE-CRASH-DAG: mwrun: --trace: rank 1 wrote no trace (it did not reach mw_finalize)
      // TRACE-EMPTY: mwrun: --trace needs a file name: --trace=FILE
      // ONE-OUTSIDE: midway: rank 0: segmentation fault at 0x10 (outside the shared window)
      *(volatile int *)16 = 1;
    }
    if (!strcmp(what, "segv-heap")) {
      char *p = block_of[(me + 1) % P] + FAR;
      fprintf(stderr, "touching %p\n", (void *)p);
      // HEAP: touching [[ADDR:0x[0-9a-f]+]]
      // HEAP: midway: rank 0: segmentation fault at [[ADDR]]: in the shared heap of rank 1, but not in memory it allocated with mw_malloc
      // HEAP: mwrun: rank 0 (pid {{[0-9]+}}) was killed by signal 11 (SIGSEGV)
      // HEAP1: touching [[ADDR:0x[0-9a-f]+]]
      // HEAP1: midway: rank 1: segmentation fault at [[ADDR]]: in the shared heap of rank 0, but not in memory it allocated with mw_malloc
      // HEAP1: mwrun: rank 1 (pid {{[0-9]+}}) was killed by signal 11 (SIGSEGV)
      printf("read %d\n", *(volatile char *)p);
    }
    if (!strcmp(what, "segv-own-heap")) {
      char *p = mine + FAR;
      fprintf(stderr, "touching %p\n", (void *)p);
      // OWN-HEAP: touching [[ADDR:0x[0-9a-f]+]]
      // OWN-HEAP: midway: rank 1: segmentation fault at [[ADDR]]: inside the shared window but not shared memory (no MW_SHARED data and no mw_malloc block there)
      // OWN-HEAP: mwrun: rank 1 (pid {{[0-9]+}}) was killed by signal 11 (SIGSEGV)
      // ONE-HEAP: touching [[ADDR:0x[0-9a-f]+]]
      // ONE-HEAP: midway: rank 0: segmentation fault at [[ADDR]]: inside the shared window but not shared memory (no MW_SHARED data and no mw_malloc block there)
      // ONE-HEAP: mwrun: rank 0 (pid {{[0-9]+}}) was killed by signal 11 (SIGSEGV)
      printf("read %d\n", *(volatile char *)p);
    }
    if (!strcmp(what, "pc-zero")) {
      // PC-ZERO: midway: mw_processor_consistent: flush interval 0 for [0x{{[0-9a-f]+}}, +8192): give a number of microseconds greater than 0 (rank 0)
      // PC-ZERO1: midway: mw_processor_consistent: flush interval 0 for [0x{{[0-9a-f]+}}, +8192): give a number of microseconds greater than 0 (rank 1)
      // PC-ZERO1: mwrun: rank 1 (pid {{[0-9]+}}) exited with status 1; stopping the job
      mw_processor_consistent(data, sizeof data, 0);
    }
    if (!strcmp(what, "pc-private")) {
      // PC-PRIVATE: midway: mw_processor_consistent: {{.*}}private_int [0x{{[0-9a-f]+}}, +4) is not in shared memory: give MW_SHARED data or memory from mw_malloc (rank 0)
      static int private_int;
      mw_processor_consistent(&private_int, sizeof private_int, 1000);
    }
    if (!strcmp(what, "pc-null")) {
      // PC-NULL: midway: mw_processor_consistent: [{{\(nil\)|0x0}}, +8) is not in shared memory: give MW_SHARED data or memory from mw_malloc (rank 1)
      mw_processor_consistent(NULL, 8, 1000);
    }
    if (!strcmp(what, "pc-unallocated")) {
      // In the window, but in no block: every rank calls it alike, so the rank whose part
      // of the heap it is can tell.
      // PC-UNALLOC: midway: mw_processor_consistent: [0x{{[0-9a-f]+}}, +4096) is not in shared memory: {{.*}}(rank 1)
      mw_processor_consistent(mine + FAR, 4096, 1000);
    }
    if (!strcmp(what, "leave-private")) {
      // LEAVE-PRIVATE: midway: mw_discard: [0x{{[0-9a-f]+}}, +16) is not in shared memory: give MW_SHARED data or memory from mw_malloc (rank 1)
      char local[16];
      mw_discard(local, sizeof local);
    }
    if (!strcmp(what, "discard-held")) {
      // DISCARD-HELD: midway: mw_discard: [0x{{[0-9a-f]+}}, 0x{{[0-9a-f]+}}) holds data bound to lock lock, which this rank holds: release the lock before discarding its data (rank 1)
      mw_acquire(&lock, MW_EXCLUSIVE);
      mw_bind(&lock, data[1], 64);
      mw_discard(data, sizeof data);
    }
    if (!strcmp(what, "exit-pc") || !strcmp(what, "exit")) {
      // EXIT-NOT: terminate called
      // EXIT: mwrun: rank 1 (pid {{[0-9]+}}) exited with status 3; stopping the job
      // EXIT-NOT: SIGABRT
      if (!strcmp(what, "exit-pc")) mw_processor_consistent(data, sizeof data, 500);
      data[0][0] = 1; /* something for the flusher to do */
      exit(3);
    }
  } else if (!strcmp(what, "exit-pc")) {
    mw_processor_consistent(data, sizeof data, 500);
  }
  mw_barrier(&barrier);
  // MODEL: midway: mw_init: MW_MODEL=tso {{.*}}ec{{.*}}rc{{.*}}pc{{.*}}(rank 0)
  // INTERVAL: midway: mw_init: MW_PC_INTERVAL_US=0 is not a number of microseconds from 1 to 60000000 (rank 0)
  // OK: rank 0 of 2: done
  if (me == 0) printf("rank 0 of %d: done\n", P);
  mw_finalize();
  return 0;
}
