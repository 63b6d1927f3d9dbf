// Counting semaphores (mw_sem_post, mw_sem_wait): counts add up, what the poster wrote
// is there when the waiter wakes, and a waiter sleeps (its CPU time while it waits is
// a small part of the wait). A wait that no rank can end is an error.
// RUN: %mwcc -O2 %s -o %t
// RUN: %mwrun -n 2 %t | FileCheck %s
// RUN: %mwrun -n 4 %t | FileCheck %s
// RUN: not %mwrun -n 1 %t 2>&1 | FileCheck %s --check-prefix=ALONE
#include <midway.h>
#include <stdio.h>
#include <sys/resource.h>
#include <time.h>

#define K 50
MW_SHARED mw_sem_t items, slow;
MW_SHARED int data[K];
MW_SHARED mw_barrier_t b;

static double cpu_seconds(void) {
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

int main(int argc, char **argv) {
  mw_init(&argc, &argv);
  const int me = mw_rank(), P = mw_nprocs();
  if (P == 1) mw_sem_wait(&items);  // count 0, nobody to post
  // Counting: rank 0 posts K per other rank, each of them takes K.
  if (me == 0) {
    for (int i = 0; i < K * (P - 1); i++) mw_sem_post(&items);
  } else {
    for (int i = 0; i < K; i++) mw_sem_wait(&items);
  }
  mw_barrier(&b);
  // Publication and sleep: rank 0 writes, sleeps half a second, posts once per rank.
  if (me == 0) {
    struct timespec t = {0, 500 * 1000 * 1000};
    nanosleep(&t, NULL);
    for (int i = 0; i < K; i++) data[i] = i * i;
    for (int r = 1; r < P; r++) mw_sem_post(&slow);
  } else {
    const double before = cpu_seconds();
    mw_sem_wait(&slow);
    const double used = cpu_seconds() - before;
    int bad = 0;
    for (int i = 0; i < K; i++) bad += data[i] != i * i;
    printf("rank %d: %d wrong, slept: %s\n", me, bad, used < 0.25 ? "yes" : "no");
  }
  mw_barrier(&b);
  if (me == 0) printf("done\n");
  mw_finalize();
  return 0;
}
// CHECK-DAG: rank 1: 0 wrong, slept: yes
// CHECK-DAG: done
// ALONE: mw_sem_wait: semaphore {{.*}}: would wait forever, no other rank can wake it
