/* tsp_ec.c — branch-and-bound travelling salesman under entry consistency.
 *
 * A random symmetric instance of n cities (points on a 1000 x 1000 square, rounded
 * Euclidean distances, seeded) is solved by every rank together. The work is a shared
 * stack of partial tours, all starting at city 0. A rank pops one; if it is short it
 * expands it into its children (one more city each) and pushes them back, otherwise it
 * finishes it alone with a depth-first search. Partial tours whose lower bound reaches
 * the best tour found so far are dropped.
 *
 * Shared data and the lock each datum is bound to (the same mw_bind calls on every rank
 * at start-up):
 *
 *   queue_lock <- queue: the stack of partial tours and `outstanding`, the number of
 *                 tasks queued or being worked on (the work is done when the stack is
 *                 empty and nothing is outstanding); taken exclusively to pop or push
 *   best_lock  <- best: the length and path of the best tour so far; taken
 *                 non-exclusively to read the bound, exclusively to improve it
 *   dist_lock  <- dist: the distance matrix, written once by rank 0 and then taken
 *                 non-exclusively by every rank
 *   start      <- (a barrier bound to nothing) rank 0 has written the instance
 *   end        <- (likewise) every rank has stopped, after rank 0 read the result
 *
 *   mwcc -O2 tsp_ec.c -o tsp_ec -lm && mwrun -n 4 ./tsp_ec [-c 13] [-s 1] [-k 4]
 *
 * Rank 0 checks the tour it gets (a permutation whose length is the reported length)
 * and its length against a sequential branch and bound, and exits non-zero if the
 * parallel search did not find an optimal tour.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, nanosleep */
#include <limits.h>
#include <math.h>
#ifdef MW_SEQUENTIAL
#include "mw_sequential.h" /* the single-process build: plain clang, no pass, no runtime */
#else
#include <midway.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAXC 14   /* most cities                  */
#define MAXQ 4096 /* capacity of the shared stack */
#define MAXP 256  /* most ranks                   */

typedef struct task {
  int cost;                  /* length of the path so far   */
  int len;                   /* cities on it, path[0] == 0  */
  unsigned char path[MAXC];
} task_t;

struct work_queue {
  int top;         /* tasks in items[0, top)                      */
  int outstanding; /* tasks in the stack or being worked on        */
  int pushed;      /* tasks ever pushed (reported at the end)      */
  int popped[MAXP]; /* tasks each rank took (reported at the end)   */
  task_t items[MAXQ];
} __attribute__((aligned(64)));

struct best_tour {
  int len; /* INT_MAX until a tour is found */
  unsigned char path[MAXC];
} __attribute__((aligned(64)));

MW_SHARED struct work_queue queue;
MW_SHARED struct best_tour best;
MW_SHARED __attribute__((aligned(64))) int dist[MAXC][MAXC];

MW_SHARED mw_lock_t queue_lock, best_lock, dist_lock;
MW_SHARED mw_barrier_t start, end;

/* Private to each rank: its copy of the instance and the search. */
static int n, cut;
static int d[MAXC][MAXC];
static int minedge[MAXC]; /* shortest edge out of each city */

static void usage(FILE *f) {
  fprintf(f,
          "usage: tsp_ec [-c CITIES] [-s SEED] [-k CUT]\n"
          "  optimal tour of CITIES random cities (3 <= CITIES <= %d, default 13; SEED\n"
          "  default 1) by branch and bound with a shared work stack, under entry\n"
          "  consistency. Partial tours of fewer than CUT cities (2 <= CUT <= CITIES,\n"
          "  default 4) are split into tasks; longer ones are searched by one rank.\n"
          "  Run with mwrun -n P; rank 0 verifies the length sequentially.\n",
          MAXC);
}

static void make_instance(unsigned seed) {
  int x[MAXC], y[MAXC];
  unsigned long s = seed * 6364136223846793005UL + 1442695040888963407UL;
  for (int i = 0; i < n; i++) {
    s = s * 6364136223846793005UL + 1442695040888963407UL;
    x[i] = (int)((s >> 33) % 1000);
    s = s * 6364136223846793005UL + 1442695040888963407UL;
    y[i] = (int)((s >> 33) % 1000);
  }
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++)
      dist[i][j] = (int)lround(sqrt((double)((x[i] - x[j]) * (x[i] - x[j]) +
                                             (y[i] - y[j]) * (y[i] - y[j]))));
}

/* The sum of minedge[] over the cities not in `visited`. */
static int remaining_bound(unsigned visited) {
  int s = 0;
  for (int c = 0; c < n; c++)
    if (!(visited & (1u << c))) s += minedge[c];
  return s;
}

static unsigned visited_of(const task_t *t) {
  unsigned v = 0;
  for (int i = 0; i < t->len; i++) v |= 1u << t->path[i];
  return v;
}

/* A lower bound on every tour extending t: its cost, then one shortest edge out of its
 * last city and out of every city still to visit. */
static int lower_bound(const task_t *t) {
  if (t->len == n) return t->cost + d[t->path[n - 1]][0];
  return t->cost + minedge[t->path[t->len - 1]] + remaining_bound(visited_of(t));
}

/* Depth-first search below path[0, len): improves *bound and bestpath. `rem` is
 * remaining_bound(visited). */
static void dfs(unsigned char *path, int len, int cost, unsigned visited, int rem, int *bound,
                unsigned char *bestpath) {
  int last = path[len - 1];
  if (len == n) {
    int total = cost + d[last][0];
    if (total < *bound) {
      *bound = total;
      memcpy(bestpath, path, (size_t)n);
    }
    return;
  }
  for (int c = 1; c < n; c++) {
    if (visited & (1u << c)) continue;
    int nc = cost + d[last][c];
    if (nc + rem >= *bound) continue; /* nc + minedge[c] + (rem - minedge[c]) */
    path[len] = (unsigned char)c;
    dfs(path, len + 1, nc, visited | (1u << c), rem - minedge[c], bound, bestpath);
  }
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
  int seed = 1;
  n = 13;
  cut = -1;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      usage(stdout);
      return 0;
    } else if (!strcmp(argv[i], "-c") && i + 1 < argc && parse_int(argv[i + 1], &n)) {
      i++;
    } else if (!strcmp(argv[i], "-s") && i + 1 < argc && parse_int(argv[i + 1], &seed)) {
      i++;
    } else if (!strcmp(argv[i], "-k") && i + 1 < argc && parse_int(argv[i + 1], &cut)) {
      i++;
    } else {
      fprintf(stderr, "tsp_ec: bad argument '%s'\n", argv[i]);
      usage(stderr);
      return 2;
    }
  }
  if (cut < 0) cut = n > 4 ? 4 : n;
  if (n < 3 || n > MAXC || cut < 2 || cut > n) {
    fprintf(stderr, "tsp_ec: -c or -k out of range\n");
    usage(stderr);
    return 2;
  }

  mw_init(&argc, &argv);
  const int me = mw_rank(), P = mw_nprocs();
  if (P > MAXP) {
    if (me == 0) fprintf(stderr, "tsp_ec: at most %d ranks\n", MAXP);
    mw_finalize();
    return 2;
  }
  const double t0 = now();

  mw_bind(&queue_lock, &queue, sizeof queue);
  mw_bind(&best_lock, &best, sizeof best);
  mw_bind(&dist_lock, dist, sizeof dist);

  if (me == 0) { /* rank 0 writes the instance and the first task */
    mw_acquire(&dist_lock, MW_EXCLUSIVE);
    make_instance((unsigned)seed);
    mw_release(&dist_lock);
    mw_acquire(&best_lock, MW_EXCLUSIVE);
    best.len = INT_MAX;
    mw_release(&best_lock);
    mw_acquire(&queue_lock, MW_EXCLUSIVE);
    queue.items[0].cost = 0;
    queue.items[0].len = 1;
    queue.items[0].path[0] = 0;
    queue.top = 1;
    queue.outstanding = 1;
    queue.pushed = 1;
    mw_release(&queue_lock);
  }
  mw_barrier(&start);

  mw_acquire(&dist_lock, MW_NONEXCLUSIVE);
  memcpy(d, dist, sizeof d);
  mw_release(&dist_lock);
  for (int i = 0; i < n; i++) {
    minedge[i] = INT_MAX;
    for (int j = 0; j < n; j++)
      if (j != i && d[i][j] < minedge[i]) minedge[i] = d[i][j];
  }

  mw_phase_begin("compute");
  int backoff_us = 50;
  int pending_done = 0; /* a finished task, subtracted at the next visit to the queue */
  for (;;) {
    task_t t;
    mw_acquire(&queue_lock, MW_EXCLUSIVE);
    queue.outstanding -= pending_done;
    pending_done = 0;
    const int have = queue.top > 0;
    if (have) {
      t = queue.items[--queue.top];
      queue.popped[me]++;
    }
    const int finished = !have && queue.outstanding == 0;
    mw_release(&queue_lock);
    if (finished) break;
    if (!have) {
      idle(&backoff_us);
      continue;
    }
    backoff_us = 50;

    mw_acquire(&best_lock, MW_NONEXCLUSIVE);
    int bound = best.len;
    mw_release(&best_lock);

    if (lower_bound(&t) >= bound) {
      pending_done = 1;
    } else if (t.len < cut) { /* split: push the children that may still win */
      task_t kids[MAXC];
      int nk = 0;
      unsigned visited = visited_of(&t);
      int rem = remaining_bound(visited), last = t.path[t.len - 1];
      for (int c = n - 1; c >= 1; c--) { /* pushed last = popped first: city 1 */
        if (visited & (1u << c)) continue;
        int nc = t.cost + d[last][c];
        if (nc + rem >= bound) continue;
        kids[nk] = t;
        kids[nk].path[t.len] = (unsigned char)c;
        kids[nk].len = t.len + 1;
        kids[nk].cost = nc;
        nk++;
      }
      mw_acquire(&queue_lock, MW_EXCLUSIVE);
      if (queue.top + nk > MAXQ) {
        fprintf(stderr, "tsp_ec: rank %d: the work stack overflows (%d tasks)\n", me, MAXQ);
        exit(1);
      }
      for (int k = 0; k < nk; k++) queue.items[queue.top++] = kids[k];
      queue.outstanding += nk - 1; /* the children are queued, the parent is done */
      queue.pushed += nk;
      mw_release(&queue_lock);
    } else { /* search alone */
      unsigned char path[MAXC], bestpath[MAXC];
      memcpy(path, t.path, sizeof path);
      unsigned visited = visited_of(&t);
      int found = bound;
      dfs(path, t.len, t.cost, visited, remaining_bound(visited), &found, bestpath);
      if (found < bound) {
        mw_acquire(&best_lock, MW_EXCLUSIVE);
        if (found < best.len) {
          best.len = found;
          memcpy(best.path, bestpath, (size_t)n);
        }
        mw_release(&best_lock);
      }
      pending_done = 1;
    }
  }
  mw_phase_end("compute");

  int length = 0, pushed = 0, popped[MAXP];
  unsigned char tour[MAXC];
  if (me == 0) {
    mw_acquire(&best_lock, MW_NONEXCLUSIVE);
    length = best.len;
    memcpy(tour, best.path, sizeof tour);
    mw_release(&best_lock);
    mw_acquire(&queue_lock, MW_NONEXCLUSIVE);
    pushed = queue.pushed;
    memcpy(popped, queue.popped, (size_t)P * sizeof popped[0]);
    mw_release(&queue_lock);
  }
  mw_barrier(&end);
  const double elapsed = now() - t0;

  int status = 0;
  if (me == 0) {
    /* The sequential branch and bound, from scratch on the private copy of dist. */
    unsigned char path[MAXC] = {0}, seqpath[MAXC];
    int optimum = INT_MAX;
    dfs(path, 1, 0, 1u, remaining_bound(1u), &optimum, seqpath);

    unsigned seen = 0;
    int walked = 0;
    for (int i = 0; i < n && length != INT_MAX; i++) {
      seen |= 1u << tour[i];
      walked += d[tour[i]][tour[(i + 1) % n]];
    }
    if (length == INT_MAX) {
      fprintf(stderr, "tsp_ec: MISMATCH: no tour was found\n");
      status = 1;
    } else if (seen != (1u << n) - 1 || tour[0] != 0 || walked != length) {
      fprintf(stderr,
              "tsp_ec: MISMATCH: the best tour is not a tour of length %d (visits mask "
              "%#x, walks %d)\n",
              length, seen, walked);
      status = 1;
    } else if (length != optimum) {
      fprintf(stderr, "tsp_ec: MISMATCH: parallel tour length %d, sequential optimum %d\n",
              length, optimum);
      status = 1;
    }
    printf("tsp_ec: %d cities, P=%d, %d tasks (by rank:", n, P, pushed);
    for (int r = 0; r < P; r++) printf(" %d", popped[r]);
    printf("): tour length %d (optimum %d): result %s, elapsed %.6f s\n", length, optimum,
           status ? "WRONG" : "ok", elapsed);
  }
  mw_finalize();
  return status;
}
