/* pc.c — processor consistency: writes reach the other ranks with no lock and no barrier,
 * in the order they were issued.
 *
 *   mwrun -n P [--model ec|rc|pc] pc [--no-call] [--interval US] [--seconds S]
 *                                    [--bound S] [--min-distinct N] [--max-distinct N]
 *                                    [--expect-none] [--no-leave]
 *
 * Every rank calls mw_processor_consistent(pages, ..., US) (US = --interval, 1000) on
 * the data below, alike, unless --no-call (then only --model=pc makes it processor
 * consistent, flushed every MW_PC_INTERVAL_US).
 *
 * sequence   rank 0 writes 1, 2, 3, ... to two words, `xa` on a page it homes and `xb`
 *            on a page rank 1 homes, for --seconds (0.5) with short pauses and no lock
 *            or barrier, then writes the last value to `last`. Every other rank has
 *            touched the three pages (it holds copies) and polls them with short sleeps:
 *            each word must never go back (issue order), must reach the last value
 *            within --bound seconds (2) of the end of the sequence, and must have shown
 *            at least --min-distinct (5) values in between (updates flowed during the sequence, not only
 *            at its end). Then each reader writes its acknowledgement to a processor-
 *            consistent word of its own, which rank 0 must see within the bound, also
 *            with no synchronization. Without the flusher none of it would arrive before
 *            the next barrier, and the test would fail.
 *            --max-distinct N: a reader may see at most N values in between (the flush
 *            interval is honoured: MW_PC_INTERVAL_US=200000 allows a handful in 0.5 s).
 *            --expect-none: the negative control (release consistency: --model=rc
 *            --no-call): nothing may arrive before the barrier, everything after it.
 * pc-leave   rank 1 leaves the copyset of xa's page (mw_discard), touches it again
 *            (a fault), and then writes a value there with no synchronization: rank 0
 *            must see it within the bound. The page is still processor consistent after
 *            a rank leaves and rejoins its copyset. (Skipped with --expect-none, and at
 *            one rank.)
 *
 * A failure prints "rc-pc: FAIL rank=R/P test=<part>: <what>" and exits 1.
 */
#include "rc_test.h"

#define NPAGES 16

MW_SHARED _Alignas(4096) unsigned char pages[NPAGES][RC_PAGE]; /* processor consistent */
MW_SHARED mw_barrier_t bar;

static double seconds = 0.5, bound = 2.0;
static unsigned interval = 1000;
static int call = 1, expect_none = 0, min_distinct = 5, max_distinct = 0, do_leave = 1;

static unsigned char *page_homed_at(int h, int skip) {
  for (int k = 0; k < NPAGES; k++)
    if (rc_home(pages[k]) == h && skip-- == 0) return pages[k];
  rc_fail("no page homed at rank %d", h);
}

int main(int argc, char **argv) {
  rc_start("rc-pc", &argc, &argv);
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--no-call")) call = 0;
    else if (!strcmp(argv[i], "--expect-none")) expect_none = 1;
    else if (!strcmp(argv[i], "--no-leave")) do_leave = 0;
    else if (!strcmp(argv[i], "--interval") && i + 1 < argc) interval = (unsigned)atoi(argv[++i]);
    else if (!strcmp(argv[i], "--seconds") && i + 1 < argc) seconds = atof(argv[++i]);
    else if (!strcmp(argv[i], "--bound") && i + 1 < argc) bound = atof(argv[++i]);
    else if (!strcmp(argv[i], "--max-distinct") && i + 1 < argc) max_distinct = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--min-distinct") && i + 1 < argc) min_distinct = atoi(argv[++i]);
    else rc_fail("unknown argument %s", argv[i]);
  }
  const int me = rc_rank, P = rc_nprocs;
  if (P < 2) {
    printf("ok   nothing to test at 1 rank\n");
    mw_finalize();
    return 0;
  }
  if (call) mw_processor_consistent(pages, sizeof pages, interval);

  rc_test = "sequence";
  unsigned char *pa = page_homed_at(0, 0), *pb = page_homed_at(1, 0), *pack = page_homed_at(0, 1);
  uint64_t *xa = (uint64_t *)(pa + 256), *last = (uint64_t *)(pa + 1024);
  uint64_t *xb = (uint64_t *)(pb + 512);
  uint64_t *ack = (uint64_t *)pack; /* ack[r]: reader r's acknowledgement */
  uint64_t *go = (uint64_t *)(pack + 2048); /* rank 0: every acknowledgement arrived */
  /* Every rank holds a copy of every page before the sequence starts. */
  RC_CHECK(rd(xa) == 0 && rd(xb) == 0 && rd(last) == 0 && rd(&ack[me]) == 0, "fresh pages are not zero");
  mw_barrier(&bar);

  if (me == 0) {
    double t0 = rc_now();
    uint64_t i = 0;
    while (rc_now() - t0 < seconds) {
      ++i;
      wr(xa, i);
      wr(xb, i);
      rc_sleep_us(20);
    }
    wr(last, i);
    double t_end = rc_now();
    /* The readers' acknowledgements, also processor consistent. */
    int seen = 0;
    double waited = 0;
    for (;;) {
      seen = 0;
      for (int r = 1; r < P; r++) seen += rd(&ack[r]) == i;
      waited = rc_now() - t_end;
      /* expect_none: the readers stop looking 0.2 s after the sequence; wait well past that */
      if (seen == P - 1 || waited > (expect_none ? 0.6 : 2 * bound + 1)) break;
      rc_sleep_us(100);
    }
    if (expect_none)
      RC_CHECK(seen == 0, "without the flusher, %d acknowledgement(s) arrived before the barrier", seen);
    else
      RC_CHECK(seen == P - 1, "%d of %d readers' acknowledgements arrived within %.1f s (no barrier)", seen,
               P - 1, waited);
    printf("pc: rank 0 wrote %llu values in %.2f s; acknowledgements after %.3f s\n",
           (unsigned long long)i, t_end - t0, waited);
    wr(go, 1); /* the readers wait for it before the barrier, whose flush would carry their acknowledgements */
  } else {
    const double t0 = rc_now(), deadline = t0 + seconds + bound;
    uint64_t pa_prev = 0, pb_prev = 0, final = 0;
    int distinct = 0;
    double t_final = 0;
    for (;;) {
      uint64_t l = rd(last); /* read before the words: they were written before it */
      uint64_t a = rd(xa), b = rd(xb);
      RC_CHECK(a >= pa_prev, "xa went back from %llu to %llu (values must arrive in issue order)",
               (unsigned long long)pa_prev, (unsigned long long)a);
      RC_CHECK(b >= pb_prev, "xb went back from %llu to %llu (values must arrive in issue order)",
               (unsigned long long)pb_prev, (unsigned long long)b);
      if (a != pa_prev && l == 0) distinct++;
      pa_prev = a;
      pb_prev = b;
      if (expect_none) {
        RC_CHECK(a == 0 && b == 0 && l == 0,
                 "release consistency: values arrived with no release and no barrier (xa %llu, xb %llu)",
                 (unsigned long long)a, (unsigned long long)b);
        if (rc_now() > t0 + seconds + 0.2) break;
      } else if (l != 0 && a == l && b == l) {
        final = l;
        t_final = rc_now();
        break;
      } else if (rc_now() > deadline) {
        rc_fail("the last values did not arrive within %.1f s of the end of a %.1f s sequence, with no "
                "barrier: xa %llu, xb %llu, last %llu (%d values seen in between)",
                bound, seconds, (unsigned long long)a, (unsigned long long)b, (unsigned long long)l, distinct);
      }
      rc_sleep_us(50);
    }
    if (!expect_none) {
      RC_CHECK(distinct >= min_distinct, "only %d values of xa arrived during the sequence (at least %d "
               "expected): updates were not pushed every %u us", distinct, min_distinct, interval);
      if (max_distinct)
        RC_CHECK(distinct <= max_distinct, "%d values of xa arrived during a %.1f s sequence: more than "
                 "the flush interval allows (%d)", distinct, seconds, max_distinct);
      wr(&ack[me], final);
      /* Not into the barrier before rank 0 has seen the acknowledgement: the barrier's
       * flush would carry it there. */
      double t1 = rc_now();
      while (rd(go) != 1 && rc_now() - t1 < 2 * bound + 2) rc_sleep_us(100);
      if (me == 1)
        printf("pc: rank 1 saw %d values in between; the last %.3f s after the sequence began\n", distinct,
               t_final - t0);
    }
  }
  mw_barrier(&bar);
  /* After the barrier everything is everywhere, under any model. */
  uint64_t l = rd(last);
  RC_CHECK(l > 0 && rd(xa) == l && rd(xb) == l, "after the barrier: xa %llu, xb %llu, last %llu",
           (unsigned long long)rd(xa), (unsigned long long)rd(xb), (unsigned long long)l);
  if (me == 0 && expect_none)
    for (int r = 1; r < P; r++) RC_CHECK(rd(&ack[r]) == 0, "rank %d acknowledged", r);
  mw_barrier(&bar);
  rc_ok(expect_none ? "sequence (nothing before the barrier)" : "sequence");

  if (do_leave && !expect_none) {
    rc_test = "pc-leave";
    uint64_t *y = (uint64_t *)(pa + 2048), *seen = (uint64_t *)(pack + 2056);
    if (me == 1) {
      mw_discard(pa, RC_PAGE);
      uint64_t f0 = rc_faults();
      RC_CHECK(rd(xa) == l, "xa after leaving and touching again");
      RC_CHECK(rc_faults() - f0 == 1, "the touch after mw_discard: %llu faults, expected 1",
               (unsigned long long)(rc_faults() - f0));
      wr(y, 4242);
      double t1 = rc_now(); /* not into the barrier (a flush) before rank 0 has seen it */
      while (rd(seen) != 1 && rc_now() - t1 < bound + 2) rc_sleep_us(100);
    } else if (me == 0) {
      double t0 = rc_now();
      while (rd(y) != 4242 && rc_now() - t0 < bound) rc_sleep_us(100);
      RC_CHECK(rd(y) == 4242, "rank 1 left the copyset, touched the page again and wrote 4242 there; "
               "%.1f s later, with no barrier, rank 0 reads %llu", bound, (unsigned long long)rd(y));
      wr(seen, 1);
    }
    mw_barrier(&bar);
    RC_CHECK(rd(y) == 4242, "after the barrier y is %llu", (unsigned long long)rd(y));
    rc_ok("pc-leave");
  }
  mw_finalize();
  return 0;
}
