/* pc_sync.c — processor-consistent data is still release consistent: whatever the flusher
 * has pushed (or not yet), a barrier or a lock hand-over delivers all of it.
 *
 *   mwrun -n P --model pc pc_sync [--rounds N] [--lock]
 *
 * 64 pages every rank holds. Round r's writer (rank r % P) writes every other word of
 * every page twice: first r + 100000, then, after 3 ms (the flusher has pushed the first
 * pass by then, and may be pushing the second when the writer reaches the barrier), r.
 * In odd rounds it then waits 1.2 ms, so that the flusher has taken the second pass too.
 * Then a barrier (with --lock: the writer releases a lock it took before the round, and
 * every other rank acquires it in turn), after which every rank must read r in every
 * word written. A release used to wait only for the acknowledgements of its own
 * messages: when the flusher had just taken the marks, the release sent nothing and the
 * flusher's message could still be on its way (seen over tcp: the second pass arrived
 * after the barrier). A failure prints "rc-pc-sync: FAIL ..." with the word and the value
 * it held then and 100 ms later, and exits 1.
 */
#include "rc_test.h"

#define NP 64
#define WORDS (RC_PAGE / 8)

MW_SHARED _Alignas(4096) uint64_t R[NP][WORDS];
MW_SHARED mw_barrier_t bar;
MW_SHARED mw_lock_t lock;

static void check(int r, int w) {
  for (int p = 0; p < NP; p++)
    for (int k = r & 1; k < WORDS; k += 2)
      if (rd(&R[p][k]) != (uint64_t)r) {
        uint64_t v0 = rd(&R[p][k]);
        rc_sleep_us(100000);
        rc_fail("round %d: R[%d][%d] is %llu after the %s (rank %d wrote %d); 100 ms later %llu", r, p, k,
                (unsigned long long)v0, rc_test, w, r, (unsigned long long)rd(&R[p][k]));
      }
}

int main(int argc, char **argv) {
  rc_start("rc-pc-sync", &argc, &argv);
  int rounds = 150, use_lock = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--rounds") && i + 1 < argc) rounds = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--lock")) use_lock = 1;
    else rc_fail("unknown argument %s", argv[i]);
  }
  rc_test = use_lock ? "lock hand-over" : "barrier";
  const int me = rc_rank, P = rc_nprocs;
  for (int p = 0; p < NP; p++) (void)rd(&R[p][0]); /* every rank holds every page */
  mw_barrier(&bar);
  for (int r = 1; r <= rounds; r++) {
    const int w = r % P;
    if (use_lock && me == w) mw_acquire(&lock, MW_EXCLUSIVE);
    if (use_lock) mw_barrier(&bar);
    if (me == w) {
      for (int p = 0; p < NP; p++)
        for (int k = r & 1; k < WORDS; k += 2) R[p][k] = (uint64_t)r + 100000;
      rc_sleep_us(3000);
      for (int p = 0; p < NP; p++)
        for (int k = r & 1; k < WORDS; k += 2) R[p][k] = (uint64_t)r;
      if (r % 2) rc_sleep_us(1200); /* often the flusher then takes the whole second pass */
    }
    if (use_lock) {
      if (me == w) {
        mw_release(&lock);
      } else {
        mw_acquire(&lock, MW_NONEXCLUSIVE);
        check(r, w);
        mw_release(&lock);
      }
    } else {
      mw_barrier(&bar);
      check(r, w);
    }
    mw_barrier(&bar);
  }
  rc_ok(use_lock ? "pc-sync lock hand-over" : "pc-sync barrier");
  mw_finalize();
  return 0;
}
