/* pc_order.c — processor consistency across locations: writes of one rank to two words
 * must be seen by every other rank in the order they were issued.
 *
 *   mwrun -n P --model pc pc_order [--seconds S] [--high] [--two-pages] [--every K]
 *                                  [--writers W] [--spin]
 *
 * Each writer (ranks 0 .. W-1, W = --writers, 1) stores data[i % N] = i and then
 * count = i, for i = 1, 2, ... for --seconds (1), with no synchronization (N = 400 / W
 * words of data each). Every other rank polls (with 5 µs pauses, none with --spin): having
 * read a writer's count = c, it must read data[c % N] >= c, since that store was issued
 * before count = c. The writers' words share their pages.
 *   --high       count after the data in the page (in the later page, with --two-pages)
 *                instead of before: a receiver that applied an update's runs in address
 *                order while its application read would be caught by the default, a
 *                flusher that took count's mark before data was stored by this one.
 *   --two-pages  counts on one page, data on another.
 *   --every K    data is stored only when i is a multiple of K (1): a reader that reads
 *                count = c checks the store of c - c % K. Between two of those stores
 *                only count's page has marks, so a flush that looks for marked pages
 *                before it freezes them finds count's page alone; it must take the data
 *                page's store too if count's store that followed it is in the flush.
 *   --spin       readers poll without pausing.
 * Prints "rc-pc-order: FAIL ..." with how often the order was broken, and exits 1.
 *
 * The runtime orders a flush's stores by freezing the pages it takes (copysets.hpp,
 * "issue order"); pc.c checks per-location order, delivery and the flush interval.
 */
#include "rc_test.h"

#define MAXW 4

MW_SHARED _Alignas(4096) uint64_t pg[3][RC_PAGE / 8];
MW_SHARED mw_barrier_t bar;

int main(int argc, char **argv) {
  rc_start("rc-pc-order", &argc, &argv);
  double secs = 1.0;
  int high = 0, two = 0, spin = 0, writers = 1;
  uint64_t every = 1;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--seconds") && i + 1 < argc) secs = atof(argv[++i]);
    else if (!strcmp(argv[i], "--high")) high = 1;
    else if (!strcmp(argv[i], "--two-pages")) two = 1;
    else if (!strcmp(argv[i], "--spin")) spin = 1;
    else if (!strcmp(argv[i], "--every") && i + 1 < argc) every = strtoull(argv[++i], NULL, 10);
    else if (!strcmp(argv[i], "--writers") && i + 1 < argc) writers = atoi(argv[++i]);
    else rc_fail("unknown argument %s", argv[i]);
  }
  if (writers < 1 || writers > MAXW || writers >= rc_nprocs)
    rc_fail("--writers %d: from 1 to %d, and fewer than the ranks", writers, MAXW);
  if (every < 1) rc_fail("--every must be at least 1");
  rc_test = high ? "count after data" : "count before data";
  const int n = 400 / writers;
  uint64_t *count[MAXW], *data[MAXW], *done[MAXW];
  for (int w = 0; w < writers; w++) {
    if (two) {
      uint64_t *cp = pg[high], *dp = pg[1 - high];
      count[w] = &cp[w * 8];
      data[w] = &dp[w * n];
    } else {
      count[w] = high ? &pg[0][500 + w] : &pg[0][w * 8];
      data[w] = high ? &pg[0][w * n] : &pg[0][64 + w * n];
    }
    done[w] = &pg[2][w];
  }
  for (int k = 0; k < 3; k++) (void)rd(&pg[k][0]);  /* every rank holds every page */
  mw_barrier(&bar);
  if (rc_rank < writers) {
    const int w = rc_rank;
    double t0 = rc_now();
    uint64_t i = 0;
    while (rc_now() - t0 < secs) {
      ++i;
      if (i % every == 0) wr(&data[w][i % n], i);
      wr(count[w], i);
      if ((i & 63) == 0) rc_sleep_us(1);
    }
    wr(done[w], i);
  } else {
    long checks = 0, broken = 0;
    uint64_t first_c = 0, first_d = 0;
    int first_w = 0, left = writers;
    int finished[MAXW] = {0};
    const double deadline = rc_now() + secs + 5;
    while (left > 0) {
      for (int w = 0; w < writers; w++) {
        if (finished[w]) continue;
        uint64_t d0 = rd(done[w]);
        uint64_t c = rd(count[w]);
        uint64_t s = c - c % every;  /* the last data store issued before count = c */
        uint64_t d = rd(&data[w][s % n]);
        if (s && d < s && broken++ == 0) first_c = c, first_d = d, first_w = w;
        checks++;
        if (d0 && c == d0) finished[w] = 1, left--;
      }
      if (rc_now() > deadline) break;
      if (!spin) rc_sleep_us(5);
    }
    if (broken)
      rc_fail("%ld of %ld reads saw count = c before data[c %% %d] = c (every %llu; first: writer %d, count "
              "%llu, data %llu)",
              broken, checks, n, (unsigned long long)every, first_w, (unsigned long long)first_c,
              (unsigned long long)first_d);
    if (left > 0) rc_fail("%d writers' last values did not arrive within %g s", left, secs + 5);
  }
  mw_barrier(&bar);
  rc_ok("pc-order");
  mw_finalize();
  return 0;
}
