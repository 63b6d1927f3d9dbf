/* barrier_exchange.c — two ranks: crossings with nothing to carry (where rank 1 leaves on
 * the manager's arrival, runtime/ec/barriers.cpp "Two ranks") mixed with crossings that
 * carry data, on the same barrier and on another, in every order.
 *
 *   mwrun -n 2 barrier_exchange [--rounds R]
 *
 * Each rank has a cell (of two sets) bound to `crossing`. Round k, by k % 6: nobody writes; rank 1
 * writes (its arrival is a message, right after a crossing it may have left before the
 * manager took its arrival); nobody; rank 0 writes (the manager's arrival carries runs:
 * no exchange); both write; nobody, then a crossing of `other` (nothing bound) in
 * between. In half the rounds rank 1 dawdles a few microseconds, so that the manager
 * arrives first and rank 1 can leave on its arrival; in the others rank 0 does. After
 * each crossing both ranks check both cells against a private replay. After `other`,
 * rank 1 writes a cell bound to `done` and both cross `done` with mw_barrier_final, right
 * after an exchange rank 1 may have left before the manager took its arrival (a final
 * arrival goes by message, and the manager takes the line's arrival first): the
 * manager must read the cell. Exits 1 naming the round, the reader and the cell.
 */
#define _POSIX_C_SOURCE 200809L
#include <midway.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Two sets, used in turn, so that no rank writes a cell the other may still be reading:
 * the manager places an arrival's data as it comes. Rank r writes cells[k % 2][r][0]. */
MW_SHARED _Alignas(4096) long cells[2][2][8];
MW_SHARED mw_barrier_t crossing;
MW_SHARED mw_barrier_t other;
MW_SHARED _Alignas(4096) long last[8]; /* rank 1's, for the manager */
MW_SHARED mw_barrier_t done;

static void dawdle(long ns) {
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  do clock_gettime(CLOCK_MONOTONIC, &t);
  while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) < ns);
}

int main(int argc, char **argv) {
  mw_init(&argc, &argv);
  const int me = mw_rank();
  int rounds = 3000;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--rounds") && i + 1 < argc) rounds = atoi(argv[++i]);
    else {
      fprintf(stderr, "usage: barrier_exchange [--rounds R]\n");
      return 2;
    }
  }
  if (mw_nprocs() != 2) {
    fprintf(stderr, "barrier_exchange: runs with 2 ranks (mwrun -n 2)\n");
    return 2;
  }
  mw_barrier_bind(&crossing, cells, sizeof cells);
  mw_barrier_bind(&done, last, sizeof last);
  mw_barrier(&other);
  long want[2][2] = {{0, 0}, {0, 0}};
  for (int k = 1; k <= rounds; k++) {
    const int pattern = k % 6;
    const int writes[2] = {pattern == 3 || pattern == 4, pattern == 1 || pattern == 4};
    long(*cell)[8] = cells[k % 2], *expect = want[k % 2];
    for (int r = 0; r < 2; r++)
      if (writes[r]) expect[r] = (long)k * 2 + r;
    if (writes[me]) cell[me][0] = expect[me];
    if (me == (k / 6) % 2) dawdle(3000);
    mw_barrier(&crossing);
    for (int r = 0; r < 2; r++)
      if (cell[r][0] != expect[r]) {
        fprintf(stderr, "barrier_exchange: FAIL round %d: rank %d reads rank %d's cell as %ld, expected %ld\n", k,
                me, r, cell[r][0], expect[r]);
        return 1;
      }
    if (pattern != 5) continue;
    if (me == 1 && (k / 6) % 2) dawdle(3000);
    mw_barrier(&other);
    if (me == 1) last[0] = k;
    mw_barrier_final(&done);
    if (me == 0 && last[0] != k) {
      fprintf(stderr, "barrier_exchange: FAIL round %d: the manager reads rank 1's final cell as %ld\n", k, last[0]);
      return 1;
    }
  }
  mw_finalize();
  if (me == 0) printf("barrier_exchange: OK, %d rounds\n", rounds);
  return 0;
}
