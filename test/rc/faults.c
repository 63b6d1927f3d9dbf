/* faults.c — the copyset fault paths of release consistency, as a user sees them.
 *
 *   mwrun -n P [--provider shm|tcp] [--model ec|rc|pc] faults [--only NAME] [--iters N]
 *
 * Every part runs in one job, in this order (--only runs one), separated by barriers;
 * rank 0 prints "ok   <part>" for each, and any failed check prints
 * "rc-faults: FAIL rank=R/P test=<part>: <what>" and exits 1. Nothing here is bound to a
 * lock or a barrier (but `counter-bound`), so under every model the data is release
 * consistent; the fault counts are this rank's mw_stats page_faults, taken around the
 * accesses that must (or must not) fault.
 *
 * first-touch  every page of `area` is written by its home; after a barrier each rank
 *              reads its own pages (no fault at all) and then every other page: its
 *              first access faults exactly once (+1 per page), reads what the home wrote,
 *              and further accesses to the page do not fault; fault_wait_seconds grew.
 *              Then each rank stores (a store is the first touch) into its slot of a
 *              page homed at the next rank: one fault, the store is kept, and after a
 *              barrier the home, and every other rank (one fault each), read it.
 * join         a page homed at rank 0. Rank 1 joins it (first touch), then rank 2 (at
 *              P >= 3), after it. The home writes while holding a lock; a rank that
 *              acquires the lock next sees the write (release consistency across a lock
 *              hand-over), with no fault. A non-home member writes and crosses a
 *              barrier: every member sees it, with no fault. At P >= 4, rank 3 joins only
 *              now and sees every write so far (one fault). At P >= 3, rank 2 writes
 *              under the lock and every other rank sees it after acquiring; then rank 1
 *              writes under the lock to a page rank 2 has never held, and rank 2, acquiring
 *              next, fetches it from the home with the write. A writer waits 30 ms after
 *              its release before the next barrier, so that only the release can have
 *              brought the value.
 * leave        rank 1 (and rank 2 at P >= 3) hold a page homed at rank 0. Rank 1 writes
 *              and leaves at once (mw_discard): its write reaches the others. While
 *              it is out, the home and rank 2 write (barriers between). Rank 1's next
 *              touch faults again (+1 exactly) and sees all of it; after that it is a
 *              member again and gets updates without faulting. Leaving a page this rank
 *              homes, or one it does not hold, changes nothing.
 * heap         the last rank allocates 3 pages and a bit with mw_malloc, fills them, and
 *              passes the pointer through static shared data. Every other rank's first
 *              read of each page of the block faults once (fetched from the allocating
 *              rank) and reads its data; the owner never faults on it. Rank 0 then
 *              writes into the block and crosses a barrier: the owner and the others see
 *              it; the owner writes under a lock: an acquirer sees it.
 * heap-bind    the last rank allocates 2 pages (mw_malloc_lines, page-aligned) and fills them; every rank binds them to a
 *              lock (under ec only the first 64 bytes, so the rest stays release
 *              consistent; under rc and pc, read from MW_MODEL, all of it: bindings ship
 *              nothing). The others' reads after a barrier fault once per page and see
 *              the data.
 * heap-first-use  rank 0 allocates 4 pages and leaves them untouched; rank 1 touches
 *              them first (stores), and becomes their home (not under pc, read from
 *              MW_MODEL: rank 0 stays home there): its writes to all of them then cross
 *              a barrier with no payload sent, as nobody else holds the pages. Rank 0 (and rank 2) read
 *              rank 1's data, fetched from it (forwarded by rank 0 for rank 2), and see
 *              rank 1 as the home; rank 0 writes, and rank 1 sees it after a barrier.
 * heap-shared-use  rank 0 allocates 66 pages and leaves them untouched; rank 1's first
 *              store takes the first of them (the fault and the pages it asks ahead, at
 *              most 64, become its own), then rank 0 stores into the first page (one
 *              fault: it gave the page away, and so it uses the block itself). Rank 1's
 *              store into the last page, past its read-ahead, then leaves rank 0 its home,
 *              and rank 0's store there does not fault. Ranks 0 and 1 read both stores to
 *              both pages after a barrier.
 * home-moves   rank 0 allocates 4 pages and fills them; rank 1 reads them (it joins their
 *              copysets), then writes them at every step while rank 0 leaves them alone.
 *              After two such steps rank 1 is their home (not under pc, read from MW_MODEL:
 *              rank 0 stays home there), and its next steps cross the barrier with no
 *              payload sent. Rank 0 (and rank 2, which never held them: forwarded by rank
 *              0) read rank 1's last writes, fetched from it; rank 0 writes, and rank 1
 *              sees it after a barrier. Then 2 more pages the same way, but rank 1 leaves
 *              them (mw_discard) as rank 0 crosses the barrier that offers them: the offer
 *              finds rank 1 holding them (it takes them; its leave then skips them), or
 *              not (it declines), or the leave comes first (no offer). Whichever, every
 *              rank then reads rank 1's writes, and rank 1 reads rank 0's next ones.
 * counter      a counter in unbound data, behind a lock bound to nothing: every rank
 *              increments it N times (--iters, 300), checking inside each critical
 *              section that it never goes back. After a barrier every rank reads P*N.
 * counter-bound the same with the counter bound to its lock (mw_bind on every rank): under
 *              ec the lock carries it, under rc and pc the release does. P*N.
 */
#include "rc_test.h"

#define NAREA 160 /* first-touch pages: one block of them homed at each rank (at P = 2, more than the default read-ahead) */

MW_SHARED _Alignas(4096) unsigned char area[NAREA][RC_PAGE];
MW_SHARED _Alignas(4096) unsigned char store_area[16][RC_PAGE]; /* first touch by a store */
MW_SHARED _Alignas(4096) unsigned char join_pages[16][RC_PAGE];
MW_SHARED _Alignas(4096) unsigned char leave_pages[16][RC_PAGE];
MW_SHARED _Alignas(4096) uint64_t *heap_block[RC_PAGE / sizeof(uint64_t *)];
MW_SHARED _Alignas(4096) long counter[RC_PAGE / sizeof(long)];
MW_SHARED _Alignas(4096) long bound_counter[RC_PAGE / sizeof(long)];
MW_SHARED mw_barrier_t bar;
MW_SHARED mw_lock_t join_lock, heap_lock, heap_bind_lock, counter_lock, bound_lock;

static uint64_t tag(int page, int what) { return 0x5a5a000000000000ull | ((uint64_t)page << 16) | (uint64_t)what; }

/* The first page of pages[n] homed at rank h. */
static unsigned char *page_homed_at(unsigned char (*pages)[RC_PAGE], int n, int h) {
  for (int k = 0; k < n; k++)
    if (rc_home(pages[k]) == h) return pages[k];
  rc_fail("no page of the array is homed at rank %d", h);
}

/* The last page of pages[n] homed at rank h: not the first, where each rank homes a
 * block of two pages or more of the array (16 pages at up to 8 ranks). */
static unsigned char *last_page_homed_at(unsigned char (*pages)[RC_PAGE], int n, int h) {
  for (int k = n - 1; k >= 0; k--)
    if (rc_home(pages[k]) == h) return pages[k];
  rc_fail("no page of the array is homed at rank %d", h);
}

/* Reads p and checks the fault counter moved by exactly `faults`. */
static uint64_t read_counting(const void *p, uint64_t faults, const char *what) {
  uint64_t f0 = rc_faults();
  uint64_t v = rd(p);
  uint64_t f1 = rc_faults();
  RC_CHECK(f1 - f0 == faults, "reading %s at %p: %llu page faults, expected %llu", what, p,
           (unsigned long long)(f1 - f0), (unsigned long long)faults);
  return v;
}

static void first_touch(void) {
  rc_test = "first-touch";
  const int me = rc_rank, P = rc_nprocs;
  for (int k = 0; k < NAREA; k++)
    if (rc_home(area[k]) == me) {
      wr(area[k], tag(k, 1));
      wr(area[k] + RC_PAGE / 2, tag(k, 2));
      wr(area[k] + RC_PAGE - 8, tag(k, 3));
    }
  mw_barrier(&bar);
  /* Own pages: no fault at all. */
  uint64_t f0 = rc_faults();
  int own = 0;
  for (int k = 0; k < NAREA; k++)
    if (rc_home(area[k]) == me) {
      own++;
      RC_CHECK(rd(area[k]) == tag(k, 1) && rd(area[k] + RC_PAGE - 8) == tag(k, 3),
               "own page %d (%p) does not hold what this rank wrote", k, (void *)area[k]);
    }
  RC_CHECK(rc_faults() == f0, "reading the %d pages this rank homes faulted %llu times", own,
           (unsigned long long)(rc_faults() - f0));
  RC_CHECK(own >= NAREA / P, "only %d of %d pages are homed here", own, NAREA);
  /* Pages homed elsewhere: at most one fault each, at the first access. The first access
   * to a home's block faults and brings the pages after it that the home holds alone
   * (read-ahead): at two ranks, where nobody else can have fetched them first, exactly the
   * first page of each read-ahead window faults (1, 2, 4, ... pages, up to MW_READ_AHEAD).
   * Under processor consistency there is no read-ahead: every page faults. */
  const char *model = getenv("MW_MODEL");
  const int pc = model && strcmp(model, "pc") == 0;
  double w0 = rc_fault_wait();
  int others = 0, window = 0, left = 0;
  uint64_t faults = 0;
  for (int k = 0; k < NAREA; k++) {
    if (rc_home(area[k]) == me) continue;
    others++;
    const int first = k == 0 || rc_home(area[k - 1]) != rc_home(area[k]);
    if (first) window = left = 0;
    uint64_t want = (pc || left == 0) ? 1 : 0;
    if (left == 0) left = window = rc_next_window(window);
    left--;
    uint64_t f0 = rc_faults();
    uint64_t v = P == 2 || pc || first ? read_counting(area[k] + RC_PAGE / 2, want, "a page homed elsewhere, first access")
                                       : rd(area[k] + RC_PAGE / 2);
    RC_CHECK(rc_faults() - f0 <= 1, "reading a page homed elsewhere at %p: %llu faults", (void *)area[k],
             (unsigned long long)(rc_faults() - f0));
    faults += rc_faults() - f0;
    RC_CHECK(v == tag(k, 2), "page %d (%p, home %d): first read gives 0x%llx, the home wrote 0x%llx",
             k, (void *)area[k], rc_home(area[k]), (unsigned long long)v, (unsigned long long)tag(k, 2));
    v = read_counting(area[k], 0, "a page already fetched");
    RC_CHECK(v == tag(k, 1), "page %d: 0x%llx, expected 0x%llx", k, (unsigned long long)v,
             (unsigned long long)tag(k, 1));
    RC_CHECK(read_counting(area[k] + RC_PAGE - 8, 0, "a page already fetched") == tag(k, 3),
             "page %d: last word wrong", k);
    RC_CHECK(rd(area[k] + 8) == 0, "page %d: a byte nobody wrote is not zero", k);
  }
  RC_CHECK(others == NAREA - own, "counted %d pages homed elsewhere", others);
  RC_CHECK(pc ? faults == (uint64_t)others : faults <= (uint64_t)others,
           "%llu faults for %d pages homed elsewhere (read-ahead %s)", (unsigned long long)faults, others,
           pc ? "off" : "on");
  uint64_t f1 = rc_faults();
  for (int k = 0; k < NAREA; k++) (void)rd(area[k] + 64);
  RC_CHECK(rc_faults() == f1, "a second pass over every page faulted %llu times",
           (unsigned long long)(rc_faults() - f1));
  if (others > 0)
    RC_CHECK(rc_fault_wait() > w0, "fault_wait_seconds did not grow over %d faults", others);

  /* A store as the first touch: faults once, and the store lands on the fetched page. */
  unsigned char *pg = page_homed_at(store_area, 16, (me + 1) % P);
  uint64_t f2 = rc_faults();
  wr(pg + 8 * (size_t)(me + 1), tag(me, 7));
  uint64_t want = (P > 1) ? 1 : 0;
  RC_CHECK(rc_faults() - f2 == want, "a first store to a page homed at rank %d: %llu faults", (me + 1) % P,
           (unsigned long long)(rc_faults() - f2));
  RC_CHECK(rd(pg + 8 * (size_t)(me + 1)) == tag(me, 7), "the first store to a fetched page was lost");
  mw_barrier(&bar);
  /* This rank homes the page the previous rank stored into: the store is here. */
  unsigned char *mine = page_homed_at(store_area, 16, me);
  int prev = (me + P - 1) % P;
  RC_CHECK(read_counting(mine + 8 * (size_t)(prev + 1), 0, "a page this rank homes") == tag(prev, 7),
           "rank %d's first store into this rank's page did not arrive: 0x%llx", prev,
           (unsigned long long)rd(mine + 8 * (size_t)(prev + 1)));
  /* Every other rank's store, on pages this rank has never held (one fault each): a page
   * that only a non-home rank wrote is not "unwritten" to the next rank that asks. */
  for (int r = 0; r < P; r++) {
    int h = (r + 1) % P;
    unsigned char *q = page_homed_at(store_area, 16, h);
    uint64_t want_faults = (h == me || r == me) ? 0 : 1;
    uint64_t got = read_counting(q + 8 * (size_t)(r + 1), want_faults, "another rank's first store");
    RC_CHECK(got == tag(r, 7), "rank %d stored 0x%llx into a page homed at rank %d; this rank reads 0x%llx", r,
             (unsigned long long)tag(r, 7), h, (unsigned long long)got);
  }
  mw_barrier(&bar);
  rc_ok("first-touch");
}

static void join(void) {
  rc_test = "join";
  const int me = rc_rank, P = rc_nprocs;
  unsigned char *x = page_homed_at(join_pages, 16, 0);
  uint64_t *v = (uint64_t *)x, *w = (uint64_t *)(x + 1024), *u = (uint64_t *)(x + 2048);
  if (P < 2) {
    rc_ok("join (nothing to join at 1 rank)");
    return;
  }
  /* Rank 1 joins first, then rank 2. */
  if (me == 1) RC_CHECK(read_counting(v, 1, "the join page, first touch") == 0, "fresh page not zero");
  mw_barrier(&bar);
  if (me == 2) RC_CHECK(read_counting(v, 1, "the join page, first touch") == 0, "fresh page not zero");
  if (me == 0) mw_acquire(&join_lock, MW_EXCLUSIVE);
  mw_barrier(&bar);
  /* The home writes under the lock; the next holders see it. */
  if (me == 0) {
    wr(v, 101);
    mw_release(&join_lock);
    rc_sleep_us(30000); /* no barrier (a flush too) until the others have looked */
  } else {
    mw_acquire(&join_lock, MW_EXCLUSIVE);
    uint64_t got = read_counting(v, me <= 2 ? 0 : 1, "the join page after acquiring the lock");
    RC_CHECK(got == 101, "after acquiring the lock the home released: %llu, expected 101",
             (unsigned long long)got);
    mw_release(&join_lock);
  }
  mw_barrier(&bar);
  if (me >= 3) mw_discard(x, RC_PAGE); /* rank 3 and up join again below */
  mw_barrier(&bar);
  /* A non-home member writes and crosses a barrier: every member sees it. */
  if (me == 1) wr(w, 202);
  mw_barrier(&bar);
  if (me <= 2) {
    uint64_t got = read_counting(w, 0, "a member's copy after a barrier");
    RC_CHECK(got == 202, "rank 1 wrote 202 before the barrier; this member reads %llu", (unsigned long long)got);
  }
  mw_barrier(&bar);
  /* A late joiner sees every write so far. */
  if (me == 3) {
    RC_CHECK(read_counting(w, 1, "the join page, touched again after leaving") == 202, "late joiner: w");
    RC_CHECK(rd(v) == 101, "late joiner: v is %llu, expected 101", (unsigned long long)rd(v));
  }
  mw_barrier(&bar);
  /* The second joiner writes under the lock; everyone acquiring after it sees it. */
  int writer = P >= 3 ? 2 : 1;
  if (me == writer) mw_acquire(&join_lock, MW_EXCLUSIVE);
  mw_barrier(&bar);
  if (me == writer) {
    wr(u, 303);
    mw_release(&join_lock);
    rc_sleep_us(30000);
  } else {
    mw_acquire(&join_lock, MW_NONEXCLUSIVE);
    int member = me <= 2 || me == 3;
    uint64_t got = read_counting(u, member ? 0 : 1, "the join page after acquiring the lock");
    RC_CHECK(got == 303, "rank %d wrote 303 and released; this rank acquired next and reads %llu",
             writer, (unsigned long long)got);
    mw_release(&join_lock);
  }
  mw_barrier(&bar);
  /* A rank that has never held the page acquires after a non-home member released: its
   * fault fetches the page from the home, which the release's flush reached first. */
  if (P >= 3) {
    unsigned char *fresh = last_page_homed_at(join_pages, 16, 0); /* not x */
    if (me == 1) {
      (void)rd(fresh); /* a member now: this touch fetched it, or x's fault read it ahead */
      mw_acquire(&join_lock, MW_EXCLUSIVE);
    }
    mw_barrier(&bar);
    if (me == 1) {
      wr(fresh + 8, 404);
      mw_release(&join_lock);
      rc_sleep_us(30000);
    } else if (me == 2) {
      mw_acquire(&join_lock, MW_EXCLUSIVE);
      uint64_t got = read_counting(fresh + 8, 1, "a page never held, after acquiring the lock");
      RC_CHECK(got == 404, "rank 1 (not the home) wrote 404 and released; this rank acquired next, "
               "fetched the page from its home, and reads %llu", (unsigned long long)got);
      mw_release(&join_lock);
    }
    mw_barrier(&bar);
  }
  rc_ok("join");
}

static void leave(void) {
  rc_test = "leave";
  const int me = rc_rank, P = rc_nprocs;
  if (P < 2) {
    rc_ok("leave (nothing to leave at 1 rank)");
    return;
  }
  unsigned char *y = page_homed_at(leave_pages, 16, 0);
  uint64_t *a = (uint64_t *)y, *b = (uint64_t *)(y + 8), *c = (uint64_t *)(y + 16), *d = (uint64_t *)(y + 3000);
  if (me == 1 || me == 2) (void)read_counting(a, 1, "the leave page, first touch");
  mw_barrier(&bar);
  /* Rank 1 writes and leaves at once: the leave flushes its write first. */
  if (me == 1) {
    wr(a, 11);
    mw_discard(y, RC_PAGE);
  }
  mw_barrier(&bar);
  if (me == 0 || me == 2)
    RC_CHECK(read_counting(a, 0, "a member's copy") == 11,
             "rank 1 wrote 11 and left the copyset; this member reads %llu", (unsigned long long)rd(a));
  /* While rank 1 is out, the home writes; then rank 2. */
  if (me == 0) wr(b, 22);
  mw_barrier(&bar);
  if (me == 2) {
    RC_CHECK(rd(b) == 22, "the home's write while rank 1 was out did not reach rank 2");
    wr(c, 33);
  }
  mw_barrier(&bar);
  if (me == 1) {
    uint64_t f0 = rc_faults();
    uint64_t gb = rd(b);
    RC_CHECK(rc_faults() - f0 == 1, "the first touch after mw_discard: %llu faults, expected 1",
             (unsigned long long)(rc_faults() - f0));
    RC_CHECK(gb == 22, "after leaving and touching again: b = %llu, the home wrote 22 meanwhile",
             (unsigned long long)gb);
    RC_CHECK(rd(a) == 11, "after leaving and touching again: a = %llu, this rank wrote 11", (unsigned long long)rd(a));
    if (P >= 3)
      RC_CHECK(rd(c) == 33, "after leaving and touching again: c = %llu, rank 2 wrote 33 meanwhile",
               (unsigned long long)rd(c));
    RC_CHECK(rc_faults() - f0 == 1, "more faults on a page fetched again");
  }
  mw_barrier(&bar);
  /* A member again: updates arrive without faults. */
  if (me == 0) wr(d, 44);
  mw_barrier(&bar);
  if (me == 1) RC_CHECK(read_counting(d, 0, "the page rejoined") == 44, "rejoined: d = %llu, expected 44", (unsigned long long)rd(d));
  mw_barrier(&bar);
  if (me == P - 1 && P >= 3) wr(d, 55);
  mw_barrier(&bar);
  if (me == 1 && P >= 3)
    RC_CHECK(read_counting(d, 0, "the page rejoined") == 55, "rejoined: d = %llu, rank %d wrote 55", (unsigned long long)rd(d), P - 1);
  /* Leaving a page this rank homes, or one it does not hold: nothing changes. */
  if (me == 0) {
    mw_discard(y, RC_PAGE);
    RC_CHECK(read_counting(a, 0, "the home's own page after mw_discard") == 11, "home lost its page");
  }
  unsigned char *z = last_page_homed_at(leave_pages, 16, (me + 1) % P); /* not y */
  mw_discard(z, RC_PAGE); /* never touched here */
  RC_CHECK(read_counting(z + 512, 1, "a page left before it was held, first touch") == 0, "fresh page not zero");
  mw_barrier(&bar);
  rc_ok("leave");
}

static void heap(void) {
  rc_test = "heap";
  const int me = rc_rank, P = rc_nprocs, owner = P - 1;
  const size_t n = (3 * RC_PAGE + 200) / sizeof(uint64_t);
  if (me == owner) {
    uint64_t *blk = mw_malloc(n * sizeof(uint64_t));
    for (size_t i = 0; i < n; i++) blk[i] = i * 7 + (uint64_t)owner;
    heap_block[0] = blk;
  }
  mw_barrier(&bar);
  uint64_t *blk = heap_block[0]; /* may fault on the page holding the pointer */
  RC_CHECK(blk != NULL && mw_in_window(blk), "the block's address did not arrive: %p", (void *)blk);
  uintptr_t first = (uintptr_t)blk & ~(uintptr_t)(RC_PAGE - 1);
  uintptr_t last = ((uintptr_t)(blk + n) - 1) & ~(uintptr_t)(RC_PAGE - 1);
  uint64_t npages = (last - first) / RC_PAGE + 1;
  uint64_t f0 = rc_faults();
  for (size_t i = 0; i < n; i++) {
    uint64_t got = rd(&blk[i]);
    RC_CHECK(got == i * 7 + (uint64_t)owner, "block word %zu: %llu, rank %d wrote %llu", i,
             (unsigned long long)got, owner, (unsigned long long)(i * 7 + (uint64_t)owner));
  }
  /* One fault a page, or (read-ahead, with release consistency) one per read-ahead window,
   * at two ranks, where nobody else can have fetched its pages first. */
  const char *model = getenv("MW_MODEL");
  const int pc = model && strcmp(model, "pc") == 0;
  uint64_t want = me == owner ? 0 : pc ? npages : rc_read_faults(npages);
  if (P > 2 && me != owner && !pc && rc_faults() - f0 > 1 && rc_faults() - f0 <= npages) want = rc_faults() - f0;
  RC_CHECK(rc_faults() - f0 == want, "reading a %llu-page block rank %d allocated: %llu faults, expected %llu",
           (unsigned long long)npages, owner, (unsigned long long)(rc_faults() - f0), (unsigned long long)want);
  mw_barrier(&bar);
  if (me == 0) wr(&blk[5], 999);
  mw_barrier(&bar);
  RC_CHECK(read_counting(&blk[5], 0, "the block after a barrier") == 999,
           "rank 0 wrote 999 into the block before the barrier; this rank reads %llu", (unsigned long long)rd(&blk[5]));
  if (me == owner) mw_acquire(&heap_lock, MW_EXCLUSIVE);
  mw_barrier(&bar);
  if (me == owner) {
    wr(&blk[n - 1], 777);
    mw_release(&heap_lock);
    rc_sleep_us(30000);
  } else {
    mw_acquire(&heap_lock, MW_EXCLUSIVE);
    RC_CHECK(read_counting(&blk[n - 1], 0, "the block after acquiring the lock") == 777,
             "the owner wrote 777 and released; this rank acquired next and reads %llu", (unsigned long long)rd(&blk[n - 1]));
    mw_release(&heap_lock);
  }
  mw_barrier(&bar);
  rc_ok("heap");
}

/* bound: the counter is bound to the lock, so under ec it is only current while the lock
 * is held (after the barrier only an acquire brings it); unbound, a barrier does. */
/* A block of another rank's heap, bound by every rank to a lock (under ec only its first
 * 64 bytes: the rest stays release consistent; under rc and pc all of it, and bindings
 * ship nothing). mw_bind used to make the block's pages accessible here without fetching
 * them, so the first read gave zeros and never faulted. */
/* Rank 0 writes word `word` of each of the n pages at p (base + k into page k), and after
 * a barrier every rank reads them all: wherever the pages' homes went, its writes reach
 * every rank. `which` names the pages in a failure. */
static void rank0_writes_all_read(uint64_t *p, int n, int word, uint64_t base, const char *which) {
  enum { W = RC_PAGE / sizeof(uint64_t) };
  if (rc_rank == 0)
    for (int k = 0; k < n; k++) wr(&p[k * W + word], base + (uint64_t)k);
  mw_barrier(&bar);
  for (int k = 0; k < n; k++)
    RC_CHECK(rd(&p[k * W + word]) == base + (uint64_t)k, "%spage %d: %llu, rank 0 wrote %llu before the barrier",
             which, k, (unsigned long long)rd(&p[k * W + word]), (unsigned long long)(base + (uint64_t)k));
  mw_barrier(&bar);
}

static void heap_first_use(void) {
  rc_test = "heap-first-use";
  const int me = rc_rank;
  const char *model = getenv("MW_MODEL");
  const int pc = model && strcmp(model, "pc") == 0;
  enum { NP = 4, W = RC_PAGE / sizeof(uint64_t) };
  if (me == 0) heap_block[2] = mw_malloc_lines(NP * RC_PAGE, RC_PAGE); /* not touched here */
  mw_barrier(&bar);
  uint64_t *blk = heap_block[2];
  const int home = pc ? 0 : 1;
  mw_stats_t s0, s1;
  if (me == 1) {
    for (int k = 0; k < NP; k++) wr(&blk[k * W + 1], 100 + (uint64_t)k); /* the first touch */
    for (int k = 0; k < NP; k++)
      RC_CHECK(rc_home(&blk[k * W]) == home, "page %d of a block rank 0 allocated and only this rank "
               "touched: home %d, expected %d", k, rc_home(&blk[k * W]), home);
  }
  mw_barrier(&bar);
  if (me == 1) {
    mw_stats_get(&s0);
    for (int k = 0; k < NP; k++)
      for (int i = 2; i < W; i++) wr(&blk[k * W + i], i == 3 ? 300 + (uint64_t)k : (uint64_t)i);
  }
  mw_barrier(&bar);
  if (me == 1 && !pc) {
    mw_stats_get(&s1);
    /* Had rank 0 stayed home, every byte written would have gone to it. */
    RC_CHECK(s1.payload_bytes_sent == s0.payload_bytes_sent,
             "%d KiB written to pages nobody else holds crossed a barrier with %llu bytes of payload sent",
             NP * RC_PAGE / 1024, (unsigned long long)(s1.payload_bytes_sent - s0.payload_bytes_sent));
  }
  mw_barrier(&bar); /* nobody fetches the pages before rank 1 has counted */
  if (me == 0 || me == 2) {
    for (int k = 0; k < NP; k++) {
      RC_CHECK(rd(&blk[k * W + 1]) == 100 + (uint64_t)k && rd(&blk[k * W + 3]) == 300 + (uint64_t)k,
               "page %d: %llu and %llu, rank 1 wrote %llu and %llu", k, (unsigned long long)rd(&blk[k * W + 1]),
               (unsigned long long)rd(&blk[k * W + 3]), 100ULL + (unsigned long long)k, 300ULL + (unsigned long long)k);
      RC_CHECK(rc_home(&blk[k * W]) == home, "page %d: home %d here after fetching it, expected %d", k,
               rc_home(&blk[k * W]), home);
    }
  }
  mw_barrier(&bar);
  rank0_writes_all_read(blk, NP, 5, 500, "");
  rc_ok("heap-first-use");
}

static void heap_shared_use(void) {
  rc_test = "heap-shared-use";
  const int me = rc_rank;
  enum { NP = 66, LAST = NP - 1, W = RC_PAGE / sizeof(uint64_t) };
  if (me == 0) heap_block[5] = mw_malloc_lines(NP * RC_PAGE, RC_PAGE); /* not touched here */
  mw_barrier(&bar);
  uint64_t *blk = heap_block[5];
  if (me == 1) wr(&blk[1], 11);
  mw_barrier(&bar);
  if (me == 0) {
    const uint64_t f0 = rc_faults();
    wr(&blk[2], 12);
    RC_CHECK(rc_faults() - f0 <= 1, "a store into the first page: %llu faults", (unsigned long long)(rc_faults() - f0));
  }
  mw_barrier(&bar);
  if (me == 1) {
    wr(&blk[LAST * W + 1], 21);
    RC_CHECK(rc_home(&blk[LAST * W]) == 0, "page %d of a block rank 0 allocated and uses: home %d here, "
             "expected 0", LAST, rc_home(&blk[LAST * W]));
  }
  mw_barrier(&bar);
  if (me == 0) {
    const uint64_t f0 = rc_faults();
    wr(&blk[LAST * W + 2], 22);
    RC_CHECK(rc_faults() == f0, "rank 0 allocated the block, uses it, and faulted %llu times storing into "
             "page %d, which rank 1 touched first", (unsigned long long)(rc_faults() - f0), LAST);
  }
  mw_barrier(&bar);
  const struct { int page; uint64_t by1, by0; } stored[] = {{0, 11, 12}, {LAST, 21, 22}};
  if (me <= 1)
    for (int i = 0; i < 2; i++) {
      const uint64_t *p = &blk[stored[i].page * W];
      RC_CHECK(rd(&p[1]) == stored[i].by1 && rd(&p[2]) == stored[i].by0,
               "page %d: %llu and %llu, ranks 1 and 0 stored %llu and %llu", stored[i].page,
               (unsigned long long)rd(&p[1]), (unsigned long long)rd(&p[2]),
               (unsigned long long)stored[i].by1, (unsigned long long)stored[i].by0);
    }
  mw_barrier(&bar);
  rc_ok("heap-shared-use");
}

static void home_moves(void) {
  rc_test = "home-moves";
  const int me = rc_rank;
  const char *model = getenv("MW_MODEL");
  const int pc = model && strcmp(model, "pc") == 0;
  enum { NP = 4, W = RC_PAGE / sizeof(uint64_t), STEPS = 4 };
  if (me == 0) {
    uint64_t *b = mw_malloc_lines(NP * RC_PAGE, RC_PAGE);
    for (int i = 0; i < NP * W; i++) wr(&b[i], 7); /* the allocator fills them: not a first use elsewhere */
    heap_block[3] = b;
  }
  mw_barrier(&bar);
  uint64_t *blk = heap_block[3];
  if (me == 1)
    for (int k = 0; k < NP; k++)
      RC_CHECK(rd(&blk[k * W + 9]) == 7, "page %d before any step: %llu, rank 0 wrote 7", k,
               (unsigned long long)rd(&blk[k * W + 9]));
  mw_barrier(&bar);
  mw_stats_t s0, s1;
  for (int step = 1; step <= STEPS; step++) {
    if (me == 1) {
      mw_stats_get(&s0);
      for (int k = 0; k < NP; k++)
        for (int i = 0; i < W; i += 2) wr(&blk[k * W + i], 1000 * (uint64_t)step + (uint64_t)(k * W + i));
    }
    mw_barrier(&bar);
    if (me == 1) mw_stats_get(&s1);
    mw_barrier(&bar); /* rank 1 counts what its step sent before anything else moves */
    if (me != 1) continue;
    /* Steps 1 and 2 go to rank 0, which holds the pages. Rank 0 offers them at its first
     * flush after the second (its flush before the next barrier at the latest), and waits
     * for the answer there: from step 3 on rank 1 is their home, alone. */
    const unsigned long long sent = s1.payload_bytes_sent - s0.payload_bytes_sent;
    const int home = step <= 1 || pc ? 0 : 1;
    if (step <= 2 || pc)
      RC_CHECK(sent >= NP * RC_PAGE / 2, "step %d: %llu bytes of payload sent, rank 1 wrote %d KiB rank 0 holds",
               step, sent, NP * RC_PAGE / 2 / 1024);
    else
      RC_CHECK(sent == 0, "step %d: %llu bytes of payload sent for pages rank 0 has not written for %d steps",
               step, sent, step - 1);
    for (int k = 0; k < NP; k++)
      RC_CHECK(rc_home(&blk[k * W]) == home, "page %d after step %d: home %d, expected %d", k, step,
               rc_home(&blk[k * W]), home);
  }
  if (me == 0 || me == 2)
    for (int k = 0; k < NP; k++)
      for (int i = 0; i < W; i += 97)
        RC_CHECK(rd(&blk[k * W + i]) == (i % 2 ? 7 : 1000 * (uint64_t)STEPS + (uint64_t)(k * W + i)),
                 "page %d word %d: %llu after rank 1's last step", k, i, (unsigned long long)rd(&blk[k * W + i]));
  mw_barrier(&bar);
  rank0_writes_all_read(blk, NP, 1, 500, "");

  enum { NQ = 2 };
  if (me == 0) {
    uint64_t *b = mw_malloc_lines(NQ * RC_PAGE, RC_PAGE);
    for (int i = 0; i < NQ * W; i++) wr(&b[i], 8);
    heap_block[4] = b;
  }
  mw_barrier(&bar);
  uint64_t *q = heap_block[4];
  if (me == 1)
    for (int k = 0; k < NQ; k++) RC_CHECK(rd(&q[k * W]) == 8, "page %d of the second block: %llu, rank 0 wrote 8", k,
                                          (unsigned long long)rd(&q[k * W]));
  for (int step = 1; step <= 2; step++) {
    if (me == 1)
      for (int k = 0; k < NQ; k++) wr(&q[k * W + 4], 2000 * (uint64_t)step + (uint64_t)k);
    mw_barrier(&bar); /* rank 0's flush at the next barrier offers the pages (not under pc) */
  }
  if (me == 1) mw_discard(q, NQ * RC_PAGE); /* as rank 0 offers */
  mw_barrier(&bar);
  for (int k = 0; k < NQ; k++)
    RC_CHECK(rd(&q[k * W + 4]) == 4000 + (uint64_t)k && rd(&q[k * W + 5]) == 8,
             "page %d of the second block: %llu %llu, rank 1 wrote %llu before leaving it", k,
             (unsigned long long)rd(&q[k * W + 4]), (unsigned long long)rd(&q[k * W + 5]), 4000ULL + (unsigned long long)k);
  mw_barrier(&bar);
  rank0_writes_all_read(q, NQ, 6, 600, "second block, ");
  rc_ok("home-moves");
}

static void heap_bind(void) {
  rc_test = "heap-bind";
  const int me = rc_rank, P = rc_nprocs, owner = P - 1;
  const char *model = getenv("MW_MODEL");
  const int ec = !model || !*model || !strcmp(model, "ec");
  const size_t n = 2 * RC_PAGE / sizeof(uint64_t);
  if (me == owner) {
    uint64_t *blk = mw_malloc_lines(n * sizeof(uint64_t), RC_PAGE); /* page-aligned: 2 fresh pages */
    /* Not the bytes bound under ec: a start-up binding of written data is refused
     * (test/e2e/bind_after_writes.c). */
    for (size_t i = ec ? 8 : 0; i < n; i++) blk[i] = 5000 + i;
    heap_block[1] = blk;
  }
  mw_barrier(&bar);
  uint64_t *blk = heap_block[1];
  mw_bind(&heap_bind_lock, blk, ec ? 64 : n * sizeof(uint64_t)); /* every rank, before any acquire */
  mw_barrier(&bar);
  const uint64_t pages = 2;
  RC_CHECK((uintptr_t)blk % RC_PAGE == 0, "mw_malloc_lines(, 4096) gave %p", (void *)blk);
  uint64_t f0 = rc_faults();
  for (size_t i = 8; i < n; i += 61)
    RC_CHECK(rd(&blk[i]) == 5000 + i, "word %zu of a block rank %d allocated and this rank bound (%s): %llu, "
             "expected %llu", i, owner, ec ? "64 bytes" : "all of it", (unsigned long long)rd(&blk[i]),
             (unsigned long long)(5000 + i));
  /* A fault a page: these are reads, and a read's first fault asks for one page. */
  const uint64_t got = rc_faults() - f0;
  const uint64_t want = me == owner ? 0 : pages;
  RC_CHECK(got == want, "reading the bound block: %llu faults, expected %llu", (unsigned long long)got,
           (unsigned long long)want);
  mw_barrier(&bar);
  rc_ok("heap-bind");
}

static void count(long *ctr, mw_lock_t *l, int iters, const char *name, int bound) {
  rc_test = name;
  long last = -1;
  for (int i = 0; i < iters; i++) {
    mw_acquire(l, MW_EXCLUSIVE);
    long v = ctr[0];
    RC_CHECK(v >= last, "iteration %d: the counter is %ld, it was %ld after this rank's last increment", i, v, last);
    RC_CHECK(v < (long)iters * rc_nprocs, "iteration %d: the counter is already %ld", i, v);
    ctr[0] = v + 1;
    last = v + 1;
    mw_release(l);
  }
  mw_barrier(&bar);
  long want = (long)iters * rc_nprocs;
  if (!bound) RC_CHECK(ctr[0] == want, "after the barrier the counter is %ld, expected %d ranks x %d = %ld", ctr[0],
           rc_nprocs, iters, want);
  mw_acquire(l, MW_NONEXCLUSIVE);
  RC_CHECK(ctr[0] == want, "holding the lock: the counter is %ld, expected %ld", ctr[0], want);
  mw_release(l);
  mw_barrier(&bar);
  rc_ok(name);
}

/* A rank that writes into another rank's block: its first fault brings MW_READ_AHEAD pages
 * (a writer fills what it writes into), where a reader's first fault brings one
 * (first-touch). At two ranks only: at more, another rank may hold pages first. */
static void write_ahead(void) {
  rc_test = "write-ahead";
  const int me = rc_rank, P = rc_nprocs, owner = P - 1;
  if (P != 2) {
    rc_ok("write-ahead (counted at 2 ranks only)");
    return;
  }
  enum { kPages = 12 };
  const size_t per_page = RC_PAGE / sizeof(uint64_t), n = kPages * per_page;
  if (me == owner) {
    uint64_t *blk = mw_malloc_lines(n * sizeof(uint64_t), RC_PAGE); /* page-aligned, fresh */
    for (size_t i = 0; i < n; i++) blk[i] = 9000 + i;
    heap_block[2] = blk;
  }
  mw_barrier(&bar);
  uint64_t *blk = heap_block[2];
  if (me != owner) {
    const char *model = getenv("MW_MODEL");
    const uint64_t ra = (uint64_t)rc_read_ahead();
    const uint64_t want = model && !strcmp(model, "pc") ? kPages : (kPages + ra - 1) / ra;
    const uint64_t f0 = rc_faults();
    for (size_t k = 0; k < kPages; k++) wr(&blk[k * per_page + 1], 1);
    RC_CHECK(rc_faults() - f0 == want, "writing one word in each of %d pages rank %d allocated: %llu faults, "
             "expected %llu (MW_READ_AHEAD %llu)", kPages, owner, (unsigned long long)(rc_faults() - f0),
             (unsigned long long)want, (unsigned long long)ra);
    for (size_t k = 0; k < kPages; k++)
      RC_CHECK(rd(&blk[k * per_page]) == 9000 + k * per_page && rd(&blk[k * per_page + 1]) == 1,
               "page %zu after this rank's write: 0x%llx 0x%llx, expected 0x%llx and 1", k,
               (unsigned long long)rd(&blk[k * per_page]), (unsigned long long)rd(&blk[k * per_page + 1]),
               (unsigned long long)(9000 + k * per_page));
  }
  mw_barrier(&bar);
  if (me == owner)
    for (size_t k = 0; k < kPages; k++)
      RC_CHECK(rd(&blk[k * per_page + 1]) == 1 && rd(&blk[k * per_page + 2]) == 9000 + k * per_page + 2,
               "page %zu at its home after the barrier: 0x%llx 0x%llx, rank %d wrote 1", k,
               (unsigned long long)rd(&blk[k * per_page + 1]), (unsigned long long)rd(&blk[k * per_page + 2]),
               1 - owner);
  mw_barrier(&bar);
  rc_ok("write-ahead");
}

int main(int argc, char **argv) {
  rc_start("rc-faults", &argc, &argv);
  const char *only = NULL;
  int iters = 300;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--only") && i + 1 < argc) only = argv[++i];
    else if (!strcmp(argv[i], "--iters") && i + 1 < argc) iters = atoi(argv[++i]);
    else rc_fail("unknown argument %s", argv[i]);
  }
  mw_bind(&bound_lock, bound_counter, sizeof(long)); /* the start-up pattern, every rank */
  mw_barrier(&bar);
#define RUN(name, call) \
  if (!only || !strcmp(only, name)) call
  RUN("first-touch", first_touch());
  RUN("join", join());
  RUN("leave", leave());
  RUN("heap", heap());
  RUN("heap-bind", heap_bind());
  RUN("heap-first-use", heap_first_use());
  RUN("heap-shared-use", heap_shared_use());
  RUN("write-ahead", write_ahead());
  RUN("home-moves", home_moves());
  RUN("counter", count(counter, &counter_lock, iters, "counter", 0));
  RUN("counter-bound", count(bound_counter, &bound_lock, iters, "counter-bound", 1));
  mw_finalize();
  return 0;
}
