/* barrier_rotation.c — every rank sees every other rank's barrier-bound writes, whoever
 * arrives last.
 *
 *   mwrun -n P barrier_rotation [--rounds R] [--late-us US]     (P >= 3 to mean much)
 *
 * A barrier is bound to two rows per rank. In round k every rank writes its own row of
 * set k % 2 (a pattern of k and the rank, over a length that changes with k; two sets,
 * so that no rank writes a row another may still be reading: the manager's copy changes
 * as arrivals come in), then crosses; rank
 * k % P first waits --late-us microseconds (default 20000), so that it arrives last,
 * the manager (rank 0) in its turn too. After the crossing every rank checks every row:
 * a non-manager reads the other non-managers' writes, which reach it only through the
 * manager's release. A manager that completed the crossing with the last arrival's runs
 * left out of what it sends back would leave that row stale everywhere but at the
 * writer and the manager. Exits 1 naming the round, the reader, the row and the byte.
 */
#include <midway.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAXP 16
#define ROW 3000 /* bytes: not a multiple of a line, so rows share lines */

MW_SHARED _Alignas(4096) unsigned char rows[2][MAXP][ROW];
MW_SHARED mw_barrier_t crossing;
MW_SHARED mw_barrier_t start;

static unsigned char value(int round, int r, int i) { return (unsigned char)(round * 13 + r * 101 + i + 1); }
/* How many bytes of its row rank r writes in round k (the rest keep older rounds'). */
static int written(int round, int r) { return 1 + (round * 977 + r * 389) % ROW; }

int main(int argc, char **argv) {
  mw_init(&argc, &argv);
  const int me = mw_rank(), P = mw_nprocs();
  int rounds = 0, late_us = 20000;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--rounds") && i + 1 < argc) rounds = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--late-us") && i + 1 < argc) late_us = atoi(argv[++i]);
    else {
      fprintf(stderr, "usage: barrier_rotation [--rounds R] [--late-us US]\n");
      return 2;
    }
  }
  if (P > MAXP) {
    fprintf(stderr, "barrier_rotation: at most %d ranks\n", MAXP);
    return 2;
  }
  if (rounds <= 0) rounds = 3 * P; /* each rank last three times */
  for (int set = 0; set < 2; set++) mw_barrier_bind(&crossing, rows[set], sizeof rows[set][0] * (size_t)P);
  mw_barrier(&start);

  /* What each row holds now, as every rank must see it (a private replay). */
  static unsigned char expect[2][MAXP][ROW];
  for (int k = 0; k < rounds; k++) {
    unsigned char(*row)[ROW] = rows[k % 2], (*want)[ROW] = expect[k % 2];
    for (int i = 0; i < written(k, me); i++) row[me][i] = value(k, me, i);
    if (me == k % P) {
      struct timespec t = {late_us / 1000000, (long)(late_us % 1000000) * 1000};
      nanosleep(&t, NULL);
    }
    mw_barrier(&crossing);
    for (int r = 0; r < P; r++)
      for (int i = 0; i < written(k, r); i++) want[r][i] = value(k, r, i);
    for (int r = 0; r < P; r++)
      for (int i = 0; i < ROW; i++)
        if (row[r][i] != want[r][i]) {
          fprintf(stderr,
                  "barrier_rotation: FAIL round %d (rank %d arrived last): rank %d reads byte %d of "
                  "rank %d's row as %u, expected %u (%s)\n",
                  k, k % P, me, i, r, row[r][i], want[r][i],
                  r == k % P ? "the last arrival's write was not delivered" : "a write was not delivered");
          return 1;
        }
  }
  mw_finalize();
  if (me == 0) printf("barrier_rotation: OK, %d ranks, %d rounds, each rank last in turn\n", P, rounds);
  return 0;
}
