/* discard.c — mw_discard (Midway 4.3): a rank may drop its cached copy of data whose lock
 * it does not own; its next acquire is served as if it had never held the lock, so the
 * data comes back whole. What only this rank keeps stays. Run with 3 or more ranks:
 *   rank 1 writes the bound data under the lock (and so owns it), ranks 0 and 2 read it;
 *   rank 2 discards: its pages of the data are dropped (they read as the initial image:
 *   reading without the lock is outside the guarantees, which is how a test sees it), and its next
 *   acquire receives every written byte again and reads the right values, where rank 0,
 *   which kept its copy, receives nothing;
 *   rank 1 discards too: it owns the lock, so its copy (the only current one) stays;
 *   barrier-bound data stays where it is (the barrier would not send it again);
 *   a release-consistent page leaves its copyset and is fetched again at the next touch. */
#include "rc_test.h"

#define NPAGES 4
MW_SHARED _Alignas(RC_PAGE) unsigned char data[NPAGES][RC_PAGE]; /* bound to lock */
MW_SHARED _Alignas(RC_PAGE) unsigned char phase[RC_PAGE];         /* bound to barrier */
MW_SHARED _Alignas(RC_PAGE) unsigned char loose[RC_PAGE];         /* bound to nothing */
MW_SHARED mw_lock_t lock;
MW_SHARED mw_barrier_t barrier;

static unsigned char value(int round, size_t i) { return (unsigned char)(round * 31 + i * 7 + 1); }

/* Pages of [p, p+len) that still hold this rank's copy of the data written in round 1
 * (a dropped page reads as the program's initial image, zeros, until the next grant). */
static int kept(const void *p, size_t len) {
  int n = 0;
  for (size_t page = 0; page < len / RC_PAGE; ++page) {
    const unsigned char *b = (const unsigned char *)p + page * RC_PAGE;
    size_t off = (size_t)(b - &data[0][0]);
    n += b[0] == value(1, off);
  }
  return n;
}

static uint64_t received(void) {
  mw_stats_t s;
  mw_stats_get(&s);
  return s.payload_bytes_received;
}

/* Acquires the lock non-exclusively, checks every byte, returns the payload bytes the
 * acquire brought. */
static uint64_t read_checked(int round, const char *what) {
  uint64_t before = received();
  mw_acquire(&lock, MW_NONEXCLUSIVE);
  uint64_t got = received() - before;
  for (size_t i = 0; i < sizeof data; ++i)
    RC_CHECK((&data[0][0])[i] == value(round, i), "%s: byte %zu is %u, expected %u", what, i,
             (&data[0][0])[i], value(round, i));
  mw_release(&lock);
  return got;
}

int main(int argc, char **argv) {
  rc_start("discard", &argc, &argv);
  RC_CHECK(rc_nprocs >= 3, "run with 3 or more ranks");
  const int me = rc_rank;
  mw_bind(&lock, data, sizeof data);
  mw_barrier_bind(&barrier, phase, sizeof phase);

  rc_test = "write";
  if (me == 1) {
    mw_acquire(&lock, MW_EXCLUSIVE);
    for (size_t i = 0; i < sizeof data; ++i) (&data[0][0])[i] = value(1, i);
    mw_release(&lock);
  }
  if (me == 0) memset(phase, 0x5a, sizeof phase);
  mw_barrier(&barrier);
  if (me == 0 || me == 2) read_checked(1, "first read");
  mw_barrier(&barrier);
  rc_ok("written and read under the lock");

  rc_test = "discard a copy";
  if (me == 2) {
    RC_CHECK(kept(data, sizeof data) == NPAGES, "the copy is not here before mw_discard");
    mw_discard(data, sizeof data);
    /* The page this rank homes stays (it serves the page's release-consistent bytes). */
    const int homed = rc_home(data[0]) == me || rc_home(data[1]) == me || rc_home(data[2]) == me ||
                      rc_home(data[3]) == me;
    RC_CHECK(kept(data, sizeof data) == homed, "%d of %d pages still here after mw_discard (%d homed here)",
             kept(data, sizeof data), NPAGES, homed);
    uint64_t got = read_checked(1, "read after mw_discard");
    RC_CHECK(got >= sizeof data, "the acquire after mw_discard brought %llu bytes, expected the "
             "whole %zu", (unsigned long long)got, sizeof data);
  }
  if (me == 0) {
    uint64_t got = read_checked(1, "read keeping the copy");
    RC_CHECK(got < sizeof data, "an acquire with the copy kept brought %llu bytes (control)",
             (unsigned long long)got);
  }
  mw_barrier(&barrier);
  rc_ok("a discarded copy comes back whole at the next acquire");

  rc_test = "the owner keeps";
  if (me == 1) {
    mw_discard(data, sizeof data);
    RC_CHECK(kept(data, sizeof data) == NPAGES, "the lock's owner dropped its copy");
  }
  mw_barrier(&barrier);
  if (me == 2) {
    mw_discard(data, sizeof data);
    read_checked(1, "read from an owner that discarded");
  }
  mw_barrier(&barrier);
  rc_ok("the owner's copy stays");

  rc_test = "barrier-bound data";
  if (me == 2) {
    mw_discard(phase, sizeof phase);
    for (size_t i = 0; i < sizeof phase; ++i)
      RC_CHECK(phase[i] == 0x5a, "barrier-bound byte %zu is %u after mw_discard", i, phase[i]);
  }
  mw_barrier(&barrier);
  rc_ok("barrier-bound data stays");

  rc_test = "release-consistent page";
  /* rank 2 holds a copy of a page another rank homes, discards it, and faults again. */
  if (me == rc_home(loose)) loose[0] = 9;
  mw_barrier(&barrier);
  if (me != rc_home(loose)) {
    RC_CHECK(loose[0] == 9, "first read of the page: %u", loose[0]);
    uint64_t f0 = rc_faults();
    mw_discard(loose, sizeof loose);
    RC_CHECK(loose[0] == 9, "read after mw_discard: %u", loose[0]);
    RC_CHECK(rc_faults() - f0 == 1, "the touch after mw_discard: %llu faults, expected 1",
             (unsigned long long)(rc_faults() - f0));
  }
  mw_barrier(&barrier);
  rc_ok("a release-consistent page leaves its copyset and is fetched again");
  mw_finalize();
  return 0;
}
