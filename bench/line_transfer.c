/* line_transfer.c — the floor under a two-rank barrier on this machine: two threads on
 * CPUs 0 and 1 that each store their count to a cache line of their own and wait for the
 * other's (a symmetric barrier, nothing else), and the same two lines ping-ponged (a
 * round trip). A barrier crossing of two processes through shared memory, MPI's or
 * mw_barrier's, cannot take less than the first (docs/PERFORMANCE.md, "No stalls").
 *
 *   line_transfer [N]      (default 2,000,000 crossings)
 *
 * Prints barrier_ns and round_trip_ns. Not a Midway program: built with the C compiler alone. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static _Alignas(128) _Atomic long line_a;
static _Alignas(128) _Atomic long line_b;
static long n = 2000000;
static int round_trip;

static void pin(int cpu) {
  cpu_set_t s;
  CPU_ZERO(&s);
  CPU_SET(cpu, &s);
  pthread_setaffinity_np(pthread_self(), sizeof s, &s);
}

static void *other(void *arg) {
  (void)arg;
  pin(1);
  for (long i = 1; i <= n; i++) {
    if (!round_trip) atomic_store_explicit(&line_b, i, memory_order_release);
    while (atomic_load_explicit(&line_a, memory_order_acquire) < i) {
    }
    if (round_trip) atomic_store_explicit(&line_b, i, memory_order_release);
  }
  return NULL;
}

static double run(int rt) {
  round_trip = rt;
  atomic_store(&line_a, 0);
  atomic_store(&line_b, 0);
  pthread_t t;
  if (pthread_create(&t, NULL, other, NULL) != 0) {
    perror("line_transfer: pthread_create");
    exit(1);
  }
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  for (long i = 1; i <= n; i++) {
    atomic_store_explicit(&line_a, i, memory_order_release);
    while (atomic_load_explicit(&line_b, memory_order_acquire) < i) {
    }
  }
  clock_gettime(CLOCK_MONOTONIC, &b);
  pthread_join(t, NULL);
  return ((double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec)) / (double)n;
}

int main(int argc, char **argv) {
  if (argc > 1) n = atol(argv[1]);
  if (n <= 0) {
    fprintf(stderr, "usage: line_transfer [N]\n");
    return 2;
  }
  pin(0);
  printf("barrier_ns=%.1f\n", run(0));
  printf("round_trip_ns=%.1f\n", run(1));
  return 0;
}
