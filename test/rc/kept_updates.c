/* kept_updates.c — updates that reach a rank while it fetches a page are kept and applied
 * over the page when it comes; one the home had already applied before serving the page
 * must not be applied again over a newer write.
 *
 *   mwrun -n 4 --model rc kept_updates [--rounds N] [--delay-ms MS] [--first-writer 0|1]
 *
 * Ranks: 0 is the home of the pages, 1 and 2 hold copies of them, 3 fetches them. Each
 * round, on a page rank 3 has never held:
 *   - rank 3 touches the page: the home tells ranks 1 and 2 of the join, and answers only
 *     once both have acknowledged. The notice to rank 2 leaves MS ms late (fault
 *     injection, __mw_test_delay_joins), as one overtaken by other ranks' messages does;
 *   - meanwhile rank 1, which has heard of the join, writes 1 under the lock: its update
 *     goes to the home and to rank 3, which keeps it (its fetch is under way);
 *   - then rank 2, which has not heard, takes the lock, sees 1 and writes 2: its update
 *     goes to the home (and rank 1) only;
 *   - the page rank 3 gets holds 2. After a barrier, every rank must read 2: rank 1's kept
 *     update is older than the page, and applied over it would bring 1 back.
 * With --first-writer 0 the home itself writes 1 (its update, sent to rank 3 before the
 * page, is as old).
 * Rank 3 prints "kept-updates: round R: fetched after S ms" so that a run shows the
 * overlap happened (S close to MS). Exits 1 with "FAIL" on a wrong value. */
#include "rc_test.h"

#define NPAGES 16 /* at 4 ranks, a block of 4 pages homed at each rank */

MW_SHARED _Alignas(4096) uint64_t pages[NPAGES][RC_PAGE / sizeof(uint64_t)];
MW_SHARED mw_barrier_t bar;
MW_SHARED mw_lock_t lock;

void __mw_test_delay_joins(int to, unsigned ms);

int main(int argc, char **argv) {
  rc_start("kept-updates", &argc, &argv);
  int rounds = 3, delay_ms = 600, first = 1;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--rounds") && i + 1 < argc) rounds = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--delay-ms") && i + 1 < argc) delay_ms = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--first-writer") && i + 1 < argc) first = atoi(argv[++i]);
    else {
      fprintf(stderr, "usage: kept_updates [--rounds N] [--delay-ms MS] [--first-writer 0|1]\n");
      return 2;
    }
  }
  if (first != 0 && first != 1) {
    fprintf(stderr, "kept_updates: --first-writer is 0 or 1, not %d\n", first);
    return 2;
  }
  if (rc_nprocs != 4) {
    fprintf(stderr, "kept_updates: needs exactly 4 ranks, not %d\n", rc_nprocs);
    return 2;
  }
  uint64_t *page[NPAGES];
  int n = 0;
  for (int k = 0; k < NPAGES; k++)
    if (rc_home(pages[k]) == 0) page[n++] = pages[k];
  RC_CHECK(n >= rounds, "only %d pages are homed at rank 0, for %d rounds", n, rounds);
  const int slot = 100; /* a word in the middle of the page */

  /* Ranks 1 and 2 hold copies of every page (nothing is read ahead past a shared page). */
  rc_test = "setup";
  if (rc_rank == 1 || rc_rank == 2)
    for (int k = 0; k < n; k++) (void)rd(&page[k][slot]);
  if (rc_rank == 0) __mw_test_delay_joins(2, (unsigned)delay_ms);
  mw_barrier(&bar);

  for (int round = 0; round < rounds; round++) {
    uint64_t *p = page[round];
    rc_test = "round";
    if (rc_rank == 3) {
      const double t0 = rc_now();
      (void)rd(&p[slot]); /* the fetch: ends once rank 2 has heard of the join */
      printf("kept-updates: round %d: fetched after %.0f ms\n", round, (rc_now() - t0) * 1e3);
      fflush(stdout);
    } else if (rc_rank == first) {
      rc_sleep_us(delay_ms * 1000L / 6); /* the join's notice has reached this rank */
      mw_acquire(&lock, MW_EXCLUSIVE);
      wr(&p[slot], 1);
      mw_release(&lock);
    } else if (rc_rank == 2) {
      for (;;) { /* after rank 1's write, and before the late notice */
        mw_acquire(&lock, MW_EXCLUSIVE);
        const uint64_t v = rd(&p[slot]);
        if (v == 1) wr(&p[slot], 2);
        mw_release(&lock);
        if (v == 1) break;
        RC_CHECK(v == 0, "round %d: read %llu before rank %d wrote 1", round, (unsigned long long)v, first);
        rc_sleep_us(2000);
      }
    }
    mw_barrier(&bar);
    const uint64_t v = rd(&p[slot]);
    RC_CHECK(v == 2, "round %d: read %llu after the barrier; rank 2 wrote 2 after rank %d wrote 1",
             round, (unsigned long long)v, first);
    mw_barrier(&bar);
  }
  rc_ok("kept updates older than the page are dropped");
  mw_finalize();
  return 0;
}
