/* quicksort_ec.c — parallel quicksort of a shared array under entry consistency.
 *
 * The ranks share a stack of tasks, each a range [lo, hi) of the array still to sort.
 * A rank pops a range; if it is large it partitions it around a median-of-three pivot
 * and pushes the two parts, otherwise it sorts it alone. The work is done when the stack
 * is empty and no task is outstanding.
 *
 * Under entry consistency a rank may touch shared data only while it holds a lock the
 * data is bound to. The array is therefore cut into blocks of BLOCK ints, each bound to
 * its own lock, and a task takes the locks of every block its range touches, exclusively
 * and in ascending order (so two ranks never wait for each other in a cycle), before it
 * reads or writes the range. Two tasks whose ranges share a block take turns on it; the
 * block's lock carries the other task's writes. Shared data and its bindings (the same
 * calls on every rank at start-up):
 *
 *   block_lock[b] <- data[b * BLOCK, (b + 1) * BLOCK)
 *   queue_lock    <- queue: the stack of ranges, `outstanding`, the count of ranges
 *                    pushed (taken exclusively to pop or push)
 *   start, end    <- (barriers bound to nothing) rank 0 has written the input; rank 0
 *                    has read the result
 *
 *   mwcc -O2 quicksort_ec.c -o quicksort_ec && mwrun -n 4 ./quicksort_ec [-n 1048576]
 *
 * At the end rank 0 takes every block's lock non-exclusively, which brings it the whole
 * sorted array, and compares it with a sequential radix sort of the same input: a
 * difference means the array is not sorted or not a permutation of the input, and the
 * program exits non-zero.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, nanosleep */
#ifdef MW_SEQUENTIAL
#include "mw_sequential.h" /* the single-process build: plain clang, no pass, no runtime */
#else
#include <midway.h>
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAXN (1 << 22)
#define BLOCK 1024 /* ints per block lock (4 KiB) */
#define NBLOCKS (MAXN / BLOCK)
#define MAXQ 4096

struct range {
  int lo, hi;
};

struct task_stack {
  int top;         /* ranges in items[0, top)                */
  int outstanding; /* ranges in the stack or being worked on */
  int pushed;      /* ranges ever pushed                     */
  struct range items[MAXQ];
} __attribute__((aligned(64)));

MW_SHARED __attribute__((aligned(4096))) int data[MAXN];
MW_SHARED struct task_stack queue;
MW_SHARED mw_lock_t block_lock[NBLOCKS];
MW_SHARED mw_lock_t queue_lock;
MW_SHARED mw_barrier_t start, end;

/* Private to rank 0: the result it collects, and the sequential reference. */
static int result[MAXN], ref[MAXN], tmp[MAXN];

static void usage(FILE *f) {
  fprintf(f,
          "usage: quicksort_ec [-n N] [-l LEAF] [-s SEED]\n"
          "  sorts N random ints (2 <= N <= %d, default 1048576; SEED default 1) with a\n"
          "  shared task stack under entry consistency; ranges of at most LEAF ints\n"
          "  (default 8192, at least 16) are sorted by one rank. Run with mwrun -n P;\n"
          "  rank 0 verifies the result against a sequential radix sort.\n",
          MAXN);
}

static int input(long i, unsigned seed) {
  uint64_t x = (uint64_t)i * 0x9e3779b97f4a7c15ULL + seed * 0xbf58476d1ce4e5b9ULL + 1;
  x ^= x >> 31;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 29;
  return (int)(uint32_t)x;
}

static void swap(int *a, int *b) {
  int t = *a;
  *a = *b;
  *b = t;
}

/* Hoare partition of a[0, n), n >= 2, around the median of the first, middle and last
 * elements (moved to the middle). Returns k with 0 < k < n: a[0, k) <= a[k, n). */
static int partition(int *a, int n) {
  int mid = (n - 1) / 2;
  if (a[mid] < a[0]) swap(&a[mid], &a[0]);
  if (a[n - 1] < a[0]) swap(&a[n - 1], &a[0]);
  if (a[n - 1] < a[mid]) swap(&a[n - 1], &a[mid]);
  int pivot = a[mid], i = -1, j = n;
  for (;;) {
    do i++;
    while (a[i] < pivot);
    do j--;
    while (a[j] > pivot);
    if (i >= j) return j + 1;
    swap(&a[i], &a[j]);
  }
}

/* A rank's sequential sort of a range (quicksort with insertion sort below 16). */
static void sort(int *a, int n) {
  while (n > 16) {
    int k = partition(a, n);
    if (k < n - k) { /* recurse into the smaller part */
      sort(a, k);
      a += k;
      n -= k;
    } else {
      sort(a + k, n - k);
      n = k;
    }
  }
  for (int i = 1; i < n; i++) {
    int v = a[i], j = i;
    for (; j > 0 && a[j - 1] > v; j--) a[j] = a[j - 1];
    a[j] = v;
  }
}

/* The reference: an LSD radix sort of private memory, a different algorithm. */
static void radix_sort(int *a, int *t, int n) {
  for (int shift = 0; shift < 32; shift += 8) {
    int count[257] = {0};
    for (int i = 0; i < n; i++) count[(((uint32_t)a[i] ^ 0x80000000u) >> shift & 255) + 1]++;
    for (int b = 0; b < 256; b++) count[b + 1] += count[b];
    for (int i = 0; i < n; i++) t[count[((uint32_t)a[i] ^ 0x80000000u) >> shift & 255]++] = a[i];
    memcpy(a, t, (size_t)n * sizeof *a);
  }
}

static void lock_range(int lo, int hi, mw_mode_t mode) {
  for (int b = lo / BLOCK; b <= (hi - 1) / BLOCK; b++) mw_acquire(&block_lock[b], mode);
}

static void unlock_range(int lo, int hi) {
  for (int b = lo / BLOCK; b <= (hi - 1) / BLOCK; b++) mw_release(&block_lock[b]);
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int parse_int(const char *s, int *out) {
  char *e;
  long v = strtol(s, &e, 10);
  if (*s == '\0' || *e != '\0' || v < -2147483647L || v > 2147483647L) return 0;
  *out = (int)v;
  return 1;
}

/* An idle rank waits before it looks at the stack again, longer each time it finds it
 * empty (50 us doubling up to 2 ms), so that idle ranks do not keep the stack's lock
 * away from the ranks that have work to push. */
static void idle(int *backoff_us) {
  struct timespec ts = {0, (long)*backoff_us * 1000};
  nanosleep(&ts, NULL);
  if (*backoff_us < 2000) *backoff_us *= 2;
}

int main(int argc, char **argv) {
  int n = 1 << 20, leaf = 8192, seed = 1;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      usage(stdout);
      return 0;
    } else if (!strcmp(argv[i], "-n") && i + 1 < argc && parse_int(argv[i + 1], &n)) {
      i++;
    } else if (!strcmp(argv[i], "-l") && i + 1 < argc && parse_int(argv[i + 1], &leaf)) {
      i++;
    } else if (!strcmp(argv[i], "-s") && i + 1 < argc && parse_int(argv[i + 1], &seed)) {
      i++;
    } else {
      fprintf(stderr, "quicksort_ec: bad argument '%s'\n", argv[i]);
      usage(stderr);
      return 2;
    }
  }
  if (n < 2 || n > MAXN || leaf < 16) {
    fprintf(stderr, "quicksort_ec: -n or -l out of range\n");
    usage(stderr);
    return 2;
  }

  mw_init(&argc, &argv);
  const int me = mw_rank(), P = mw_nprocs();
  const double t0 = now();
  const int nblocks = (n + BLOCK - 1) / BLOCK;

  for (int b = 0; b < nblocks; b++) {
    int lo = b * BLOCK, hi = lo + BLOCK < n ? lo + BLOCK : n;
    mw_bind(&block_lock[b], &data[lo], (size_t)(hi - lo) * sizeof(int));
  }
  mw_bind(&queue_lock, &queue, sizeof queue);

  if (me == 0) { /* rank 0 writes the input, block by block, and the first task */
    for (int b = 0; b < nblocks; b++) {
      int lo = b * BLOCK, hi = lo + BLOCK < n ? lo + BLOCK : n;
      mw_acquire(&block_lock[b], MW_EXCLUSIVE);
      for (int i = lo; i < hi; i++) data[i] = input(i, (unsigned)seed);
      mw_release(&block_lock[b]);
    }
    mw_acquire(&queue_lock, MW_EXCLUSIVE);
    queue.items[0] = (struct range){0, n};
    queue.top = 1;
    queue.outstanding = 1;
    queue.pushed = 1;
    mw_release(&queue_lock);
  }
  mw_barrier(&start);

  mw_phase_begin("compute");
  int backoff_us = 50;
  int pending_done = 0; /* a finished task, subtracted at the next visit to the stack */
  for (;;) {
    struct range t;
    mw_acquire(&queue_lock, MW_EXCLUSIVE);
    queue.outstanding -= pending_done;
    pending_done = 0;
    const int have = queue.top > 0;
    if (have) t = queue.items[--queue.top];
    const int finished = !have && queue.outstanding == 0;
    mw_release(&queue_lock);
    if (finished) break;
    if (!have) {
      idle(&backoff_us);
      continue;
    }
    backoff_us = 50;

    lock_range(t.lo, t.hi, MW_EXCLUSIVE);
    if (t.hi - t.lo <= leaf) {
      sort(&data[t.lo], t.hi - t.lo);
      unlock_range(t.lo, t.hi);
      pending_done = 1;
      continue;
    }
    const int k = t.lo + partition(&data[t.lo], t.hi - t.lo);
    unlock_range(t.lo, t.hi);

    struct range kids[2] = {{t.lo, k}, {k, t.hi}};
    mw_acquire(&queue_lock, MW_EXCLUSIVE);
    int nk = 0;
    for (int c = 0; c < 2; c++) {
      if (kids[c].hi - kids[c].lo < 2) continue; /* one element is sorted */
      if (queue.top == MAXQ) {
        fprintf(stderr, "quicksort_ec: rank %d: the task stack overflows (%d)\n", me, MAXQ);
        exit(1);
      }
      queue.items[queue.top++] = kids[c];
      nk++;
    }
    queue.outstanding += nk - 1; /* the parts are queued, the parent is done */
    queue.pushed += nk;
    mw_release(&queue_lock);
  }
  mw_phase_end("compute");

  int pushed = 0;
  if (me == 0) { /* every block's lock brings rank 0 the block's final contents */
    mw_phase_begin("output");
    for (int b = 0; b < nblocks; b++) {
      int lo = b * BLOCK, hi = lo + BLOCK < n ? lo + BLOCK : n;
      mw_acquire(&block_lock[b], MW_NONEXCLUSIVE);
      memcpy(&result[lo], &data[lo], (size_t)(hi - lo) * sizeof(int));
      mw_release(&block_lock[b]);
    }
    mw_acquire(&queue_lock, MW_NONEXCLUSIVE);
    pushed = queue.pushed;
    mw_release(&queue_lock);
    mw_phase_end("output");
  }
  mw_barrier(&end); /* the other ranks stay until rank 0 has collected the blocks */
  const double elapsed = now() - t0;

  int status = 0;
  if (me == 0) {
    for (int i = 0; i < n; i++) ref[i] = input(i, (unsigned)seed);
    radix_sort(ref, tmp, n);
    long unsorted = 0, differ = 0;
    int first = -1;
    for (int i = 0; i < n; i++) {
      if (i > 0 && result[i - 1] > result[i]) unsorted++;
      if (result[i] != ref[i] && differ++ == 0) first = i;
    }
    if (unsorted || differ) {
      fprintf(stderr,
              "quicksort_ec: MISMATCH: %ld elements out of order, %ld differ from the "
              "sequential sort%s; first difference at %d (block %d): %d, expected %d\n",
              unsorted, differ, unsorted ? "" : " (sorted, but not a permutation of the input)",
              first, first / BLOCK, first >= 0 ? result[first] : 0, first >= 0 ? ref[first] : 0);
      status = 1;
    }
    printf("quicksort_ec: n=%d, P=%d, %d tasks: result %s, elapsed %.6f s\n", n, P, pushed,
           status ? "WRONG" : "ok", elapsed);
  }
  mw_finalize();
  return status;
}
