// mw_fence publishes this rank's writes to release-consistent data (bound to nothing)
// without a lock or a barrier: a rank that already holds a copy of the pages, and one
// that fetches them afterwards, both see the data once they see the flag written after
// the fence, without any call of their own. Run with a no-op mw_fence, the reader that
// holds a copy never sees the flag and the test fails on its deadline (20 s).
// RUN: %mwcc -O2 -Wno-backend-plugin %s -o %t
// RUN: %mwrun -n 3 %t | FileCheck %s
// RUN: %mwrun -n 3 --model rc %t | FileCheck %s
// RUN: %mwrun -n 3 --model pc %t | FileCheck %s
// RUN: %mwrun -n 2 --provider tcp %t | FileCheck %s --check-prefix=TWO
#include <midway.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

enum { N = 3000 };
MW_SHARED __attribute__((aligned(4096))) long data[N];
MW_SHARED __attribute__((aligned(4096))) int flag;
MW_SHARED __attribute__((aligned(4096))) int done[8];  // each reader's answer, fenced too
MW_SHARED mw_barrier_t b;

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  mw_init(&argc, &argv);
  long seen = 0;
  if (mw_rank() == 1) seen = data[0] + flag;  // rank 1 holds copies before the writes
  mw_barrier(&b);
  if (mw_rank() == 0) {
    for (int i = 0; i < N; i++) data[i] = 7L * i + 1;
    mw_fence();
    flag = 1;
    mw_fence();
    // Wait for the readers' answers before the barrier below, whose crossing would
    // publish everything anyway and hide a fence that did nothing.
    const double deadline = now() + 20;
    for (int r = 1; r < mw_nprocs() && r < 8; r++)
      while (*(volatile int *)&done[r] == 0 && now() < deadline) usleep(200);
  } else {
    const double deadline = now() + 20;
    while (*(volatile int *)&flag == 0 && now() < deadline) usleep(200);
    long wrong = 0;
    for (int i = 0; i < N; i++) wrong += data[i] != 7L * i + 1;
    printf("rank %d: flag %d, %ld of %d elements wrong (held a copy: %s)\n", mw_rank(),
           *(volatile int *)&flag, wrong, N, mw_rank() == 1 ? "yes" : "no");
    fflush(stdout);
    done[mw_rank()] = 1;
    mw_fence();
  }
  (void)seen;
  mw_barrier(&b);
  mw_finalize();
  return 0;
}
// CHECK-DAG: rank 1: flag 1, 0 of 3000 elements wrong (held a copy: yes)
// CHECK-DAG: rank 2: flag 1, 0 of 3000 elements wrong (held a copy: no)
// TWO: rank 1: flag 1, 0 of 3000 elements wrong (held a copy: yes)
