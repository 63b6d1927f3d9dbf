/* rc_test.h — what the release/processor-consistency tests of test/rc/ share: where a
 * shared page lives, this rank's fault counter, failure reports, and timing.
 *
 * Page homes (runtime/rc/copysets.hpp): static page i of the window (counted from
 * MW_WINDOW_BASE) is homed at rank i % P; a heap page at the rank that allocated it. */
#ifndef MIDWAY_RC_TEST_H
#define MIDWAY_RC_TEST_H

#define _GNU_SOURCE
#include <midway.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define RC_PAGE 4096 /* the tests lay their data out in 4 KiB pages (checked at start) */
/* Pages a copyset fault asks for at most: MW_READ_AHEAD, 64 unless set (rc/page_fault.cpp). */
static inline int rc_read_ahead(void) {
  const char *v = getenv("MW_READ_AHEAD");
  return v && *v ? atoi(v) : 64;
}
/* A fault that writes asks for rc_read_ahead() pages; one that reads asks for one page, and
 * for twice as many as the last fault from that home while the reads walk on (the
 * read-ahead window, rc/page_fault.cpp). The window after `last` (0: none yet). */
static inline int rc_next_window(int last) {
  const int ra = rc_read_ahead();
  return last == 0 ? 1 : 2 * last < ra ? 2 * last : ra;
}
/* How many faults a rank takes reading `n` pages of one home, none held before, in address
 * order, at two ranks (nobody else fetches them first); release consistency. */
static inline unsigned long long rc_read_faults(unsigned long long n) {
  unsigned long long faults = 0, done = 0;
  for (int w = 0; done < n; faults++) {
    w = rc_next_window(w);
    done += (unsigned long long)w;
  }
  return faults;
}

static int rc_rank, rc_nprocs;
static const char *rc_prog = "rc", *rc_test = "start";

static void rc_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void rc_fail(const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  fprintf(stderr, "%s: FAIL rank=%d/%d test=%s: %s\n", rc_prog, rc_rank, rc_nprocs, rc_test, msg);
  fflush(stderr);
  exit(1);
}

#define RC_CHECK(cond, ...)  \
  do {                       \
    if (!(cond)) rc_fail(__VA_ARGS__); \
  } while (0)

static void rc_start(const char *prog, int *argc, char ***argv) {
  rc_prog = prog;
  mw_init(argc, argv);
  rc_rank = mw_rank();
  rc_nprocs = mw_nprocs();
  if (sysconf(_SC_PAGESIZE) != RC_PAGE) {
    fprintf(stderr, "%s: this test assumes 4 KiB pages, not %ld\n", prog, sysconf(_SC_PAGESIZE));
    exit(77);
  }
}

static inline void rc_ok(const char *what) {
  if (rc_rank == 0) printf("ok   %s (%d ranks)\n", what, rc_nprocs);
  fflush(stdout);
}

/* The home of the shared page holding p: asked of the runtime (an exported symbol that
 * midway.h does not declare), which places static homes by object and by block. */
int __mw_home_of(const void *p);
static inline int rc_home(const void *p) { return __mw_home_of(p); }

static inline uint64_t rc_faults(void) {
  mw_stats_t s;
  mw_stats_get(&s);
  return s.page_faults;
}

static inline double rc_fault_wait(void) {
  mw_stats_t s;
  mw_stats_get(&s);
  return s.fault_wait_seconds;
}

static inline double rc_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static inline void rc_sleep_us(long us) {
  struct timespec t = {us / 1000000, (us % 1000000) * 1000};
  nanosleep(&t, NULL);
}

/* Reads and writes that the optimizer keeps where they are. */
static inline uint64_t rd(const void *p) { return *(const volatile uint64_t *)p; }
static inline void wr(void *p, uint64_t v) { *(volatile uint64_t *)p = v; }

#endif
