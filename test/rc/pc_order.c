/* pc_order.c — processor consistency across locations: writes of one rank to two words
 * must be seen by every other rank in the order they were issued.
 *
 *   mwrun -n 2 --model pc pc_order [--seconds S] [--high]
 *
 * Rank 0 stores data[i % 400] = i and then count = i, for i = 1, 2, ... for --seconds
 * (1), in one page, with no synchronization. Rank 1 polls (with 5 µs pauses): having
 * read count = c, it must read data[c % 400] >= c, since that store was issued before
 * count = c. --high puts count after the data in the page instead of before it.
 * Prints "rc-pc-order: FAIL ..." with how often the order was broken, and exits 1.
 *
 * KNOWN TO FAIL (issue 5 report): the dirty map records which bytes were written, not in
 * what order, and the flusher thread reads the marks and then the data while the writer
 * goes on writing, so a flush can carry count = c without the store of data[c % 400]
 * that preceded it (it is marked after the flusher passed it); and a receiver applies a
 * flush's runs in address order while its application reads them. Per-location order (a
 * word's values never go back) holds and is what pc.c checks.
 */
#include "rc_test.h"

#define S 400

MW_SHARED _Alignas(4096) uint64_t pg[2][RC_PAGE / 8];
MW_SHARED mw_barrier_t bar;

int main(int argc, char **argv) {
  rc_start("rc-pc-order", &argc, &argv);
  double secs = 1.0;
  int high = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--seconds") && i + 1 < argc) secs = atof(argv[++i]);
    else if (!strcmp(argv[i], "--high")) high = 1;
    else rc_fail("unknown argument %s", argv[i]);
  }
  rc_test = high ? "count after data" : "count before data";
  uint64_t *count = high ? &pg[0][500] : &pg[0][0];
  uint64_t *data = high ? &pg[0][0] : &pg[0][64];
  uint64_t *done = &pg[1][0];
  (void)rd(count);
  (void)rd(done);
  mw_barrier(&bar);
  if (rc_rank == 0) {
    double t0 = rc_now();
    uint64_t i = 0;
    while (rc_now() - t0 < secs) {
      ++i;
      wr(&data[i % S], i);
      wr(count, i);
      if ((i & 63) == 0) rc_sleep_us(1);
    }
    wr(done, i);
  } else if (rc_rank == 1) {
    long checks = 0, broken = 0;
    uint64_t first_c = 0, first_d = 0;
    const double deadline = rc_now() + secs + 5;
    for (;;) {
      uint64_t d0 = rd(done);
      uint64_t c = rd(count);
      uint64_t d = rd(&data[c % S]);
      if (c && d < c && broken++ == 0) first_c = c, first_d = d;
      checks++;
      if ((d0 && c == d0) || rc_now() > deadline) break;
      rc_sleep_us(5);
    }
    if (broken)
      rc_fail("%ld of %ld reads saw count = c before data[c %% %d] = c (first: count %llu, data %llu)",
              broken, checks, S, (unsigned long long)first_c, (unsigned long long)first_d);
  }
  mw_barrier(&bar);
  rc_ok("pc-order");
  mw_finalize();
  return 0;
}
