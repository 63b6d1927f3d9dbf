/* stress.c — a randomized stress test of entry consistency (locks and bindings), and
 * with --mix of entry, release and processor consistency in one program.
 *
 *   mwrun -n N [--model ec|rc|pc] stress [--seed S] [--locks M] [--iters K] [--nest PCT]
 *                     [--delay US] [--line L] [--mix] [--big] [--pc-interval US] [--discard PCT]
 *                     [--stall S] [--no-oracle] [--verbose]
 *
 * The layout. M locks guard a byte arena (MW_SHARED). From the seed alone (so every rank
 * computes the same layout) each lock gets 1 to 4 ranges of the arena, 1 byte to 4 KiB
 * long, at unaligned offsets, often adjacent to a range of another lock (so one 64-byte
 * timestamp line holds bytes of several locks); no byte is bound to two locks. Every
 * rank makes the same mw_bind calls right after mw_init, then crosses a barrier, before
 * anyone acquires (the start-up pattern). With --line L the arena is instead a block of
 * rank 0's mw_malloc_lines(size, L) (L a power of two, 1 to 4096: the granularity at
 * which written data is stamped), its address passed to the others by a barrier.
 *
 * A lock's data. The first 24 bytes of its first range are a header
 *     { uint64 version; uint64 writer; uint64 checksum }
 * and the rest of its ranges are data. The checksum covers version, writer and every
 * data byte, so a holder that sees a mix of two updates (a torn or partial grant, a
 * stale line) sees a checksum that does not match. Version 0 means never written: all
 * the lock's bytes are zero.
 *
 * The run. Each rank performs K random critical sections: one lock (or, PCT% of the
 * time, two, acquired in index order), each exclusive with probability 2/3, else
 * non-exclusive. In every section the holder checks the lock's checksum and that the
 * version is not older than any it saw before (per-rank monotonicity); an exclusive
 * holder then writes version v+1: random bytes in random sub-ranges of the lock's ranges
 * (some ranges untouched), a pure function of (seed, lock, v+1, writer rank), then the
 * header. It waits a little and checks again before releasing. Each section is logged
 * privately: (lock, mode, version seen).
 *
 * An oracle outside Midway: a POSIX shared-memory page (all ranks run on one host) holds
 * a reader/writer count per lock, updated just after mw_acquire returns and just before
 * mw_release, and the version the last exclusive holder released. An exclusive holder
 * that finds another holder, or a reader that finds an exclusive one, is a failure of
 * mutual exclusion; a holder that sees another version than the last one released was
 * given stale data (a lost revocation, a stale cached copy, an update not shipped).
 * Both are caught when they happen.
 *
 * The end. mw_barrier (nothing bound) ends the random phase. Every rank then acquires
 * every lock non-exclusively, checks it and records its final version and a digest of
 * all its bytes. The logs and these records go to rank 0 through mw_barrier_final on a
 * barrier-bound array. Rank 0 then checks:
 *   - every rank saw the same final version and bytes of every lock;
 *   - the exclusive sections of each lock saw versions 0, 1, ..., final-1, each exactly
 *     once (two writers that saw the same version did not exclude each other, or one
 *     was granted stale data);
 *   - a sequential replay: starting from zeros, it applies the writes of versions
 *     1..final of every lock in order, each by its logged writer, and compares the
 *     result with its own copy of the arena byte by byte (the gaps between ranges too,
 *     which nobody writes).
 * A watchdog (--stall S, default 30 s) fails a rank whose mw_acquire, mw_release or
 * mw_barrier has not returned after S seconds, naming the call: the job is stuck (a lost
 * request or grant), and the run fails at once instead of at mwrun's timeout.
 *
 * Mixed consistency (--mix). Each range is now one of three kinds, drawn from the seed:
 * entry consistent (bound to its lock, as above), release consistent (guarded by its
 * lock but bound to nothing: mw_acquire and mw_release order it, and under eager RC a
 * release pushes the holder's updates to every rank holding a copy of the page before the
 * lock moves on) or processor consistent (the same, and given mw_processor_consistent(,
 * , --pc-interval US, default 1000): the flusher also pushes it while the holder writes,
 * yet a lock hand-over still delivers all of it). A lock may guard ranges of all three
 * kinds, its header in any of them; the checksum, the versions, the oracle and the replay
 * are the same. The layout puts ranges of bound and unbound data side by side on pages
 * and in 64-byte lines (never in the same bytes); see make_layout_mix. After the ranges,
 * an unlocked zone of processor-consistent words, each written by one rank alone with no
 * lock and read by every rank at random moments: a word must never go back and never be
 * torn, and after the barrier that ends the random phase it must hold its writer's last
 * value on every rank. Every rank touches the pages holding both bound and unbound data
 * before the first acquire (first_touches: a documented limit of the runtime). At the
 * end every rank's digest of the whole arena (gaps, unbound data and the unlocked words
 * included) must equal rank 0's, and the replay covers the unlocked words too.
 *
 * Discarding (--discard PCT, with or without --mix). After PCT% of the sections (holding
 * no lock) a rank calls mw_discard on a random part of the arena, or one time in eight
 * on all of it: unbound pages leave their copysets and are fetched again at the next
 * touch, bound data of locks this rank does not own is dropped and comes back whole
 * with the next acquire. The checks do not change: the data must come back current
 * (an update a member sent before it heard of the leave, a PC flusher's above all, must
 * not land over the page the discarding rank fetches again).
 *
 * Big updates (--big). Ranges up to 24 KiB (less when many locks must share the
 * arena), and half of the sub-ranges a version writes are scattered runs (a few bytes
 * every few bytes, up to 2 KiB each) instead of one block: a release then ships many
 * short runs, which travel copied and fill update messages to the transport's eager
 * limit. Over tcp;ofi_rxm such a message is bigger than the provider's own eager size
 * and completes after the smaller messages sent behind it; the transport must still
 * hand them to their handlers in the order sent (transport.cpp, take_received). Under
 * --model rc|pc every such update is a copyset update (test/ec/CMakeLists.txt).
 *
 * The consistency dial. The same binary runs under mwrun --model ec (the default: bound
 * ranges entry consistent, the others release or processor consistent), rc (every datum
 * release consistent: bindings ship nothing, the lock orders everything) or pc (every
 * datum processor consistent, pushed every MW_PC_INTERVAL_US too); every check is the
 * same under all three.
 *
 * Any failure prints "ec-stress: FAIL seed=S rank=R lock=L: what" and the command that
 * reproduces it (with mwrun's --model and --provider), and exits 1.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <inttypes.h>
#include <midway.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define MAXL 64                /* locks                                          */
#define MAXRANGES 4            /* ranges per lock                                */
#define MAXRANKS 16
#define MAXITERS 4096
#define MAXLOG (2 * MAXITERS)  /* a nested section logs two entries              */
#define ARENA (1280 * 1024)    /* > 64 locks x 4 ranges x (4096 + 100 gap)       */
#define HDR 24                 /* version, writer, checksum                      */
#define PAGE 4096              /* copysets work in pages (checked at start)      */
#define MAXFREE 1024           /* --mix: unlocked processor-consistent words     */

struct entry {
  uint16_t lock;
  uint8_t exclusive;
  uint8_t nested;
  uint32_t version; /* the version the section saw (an exclusive one wrote +1) */
};

struct report {
  uint32_t entries;
  uint32_t done; /* 1: the rank reached the end                         */
  uint64_t final_version[MAXL];
  uint64_t final_digest[MAXL];
  uint64_t arena_digest; /* every byte of the arena, as this rank sees it at the end */
};

MW_SHARED _Alignas(4096) unsigned char static_arena[ARENA];
MW_SHARED uint64_t heap_arena;         /* --line: rank 0's mw_malloc_lines block */
MW_SHARED mw_lock_t locks[MAXL];
MW_SHARED mw_barrier_t phase_barrier;  /* nothing bound: separates the phases      */
MW_SHARED mw_barrier_t gather_barrier; /* logs and reports: gathered at rank 0     */
MW_SHARED mw_barrier_t setup_barrier;  /* heap_arena: rank 0's block to everyone   */
MW_SHARED _Alignas(64) struct entry logs[MAXRANKS][MAXLOG];
MW_SHARED _Alignas(64) struct report reports[MAXRANKS];

/* ---- parameters and identity ---- */
static uint64_t seed = 1;
static int nlocks = 8, iters = 200, nest_pct = 12, delay_us = 5, use_oracle = 1, verbose = 0;
static int stall_s = 30; /* a call that blocks longer than this is a failure (0: never) */
static long line = 0; /* 0: the static arena (64-byte lines); else mw_malloc_lines(, line) */
static int mix = 0;   /* --mix: entry, release and processor consistent ranges in one arena */
static unsigned pc_interval = 1000; /* --pc-interval: mw_processor_consistent's flush interval */
static int discard_pct = 0; /* --discard: PCT% of sections are followed by an mw_discard */
static int big = 0;         /* --big: ranges up to 24 KiB, written in scattered runs too */
static int rank, nprocs;

/* The command that runs this job again, for failure messages (with the model and the
 * provider mwrun was given, which reach the ranks as MW_MODEL and MW_PROVIDER). */
static char repro[512];
static void make_repro(void) {
  const char *model = getenv("MW_MODEL"), *provider = getenv("MW_PROVIDER");
  char mixarg[96] = "";
  if (mix) snprintf(mixarg, sizeof mixarg, " --mix --pc-interval %u", pc_interval);
  if (discard_pct)
    snprintf(mixarg + strlen(mixarg), sizeof mixarg - strlen(mixarg), " --discard %d", discard_pct);
  if (big) snprintf(mixarg + strlen(mixarg), sizeof mixarg - strlen(mixarg), " --big");
  snprintf(repro, sizeof repro,
           "mwrun -n %d%s%s%s%s%s stress --seed %" PRIu64 " --locks %d --iters %d --nest %d --delay %d "
           "--line %ld%s%s",
           nprocs, model ? " --model " : "", model ? model : "", provider ? " --provider '" : "",
           provider ? provider : "", provider ? "'" : "", seed, nlocks, iters, nest_pct, delay_us, line,
           mixarg, use_oracle ? "" : " --no-oracle");
}

static void fail(int lock, const char *fmt, ...) __attribute__((format(printf, 2, 3), noreturn));
static void fail(int lock, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  fprintf(stderr, "ec-stress: FAIL seed=%" PRIu64 " rank=%d lock=%d: %s\nec-stress: reproduce with: %s\n",
          seed, rank, lock, msg, repro);
  fflush(stderr);
  exit(1);
}

/* ---- the watchdog: a lock or barrier call that does not return (a lost request or
 * grant) fails the run with the call's name, rather than waiting for mwrun's timeout ---- */
static char stall_msg[512];
static size_t stall_len;

static void on_stall(int sig) {
  (void)sig;
  ssize_t w = write(2, stall_msg, stall_len);
  (void)w;
  _exit(1);
}

/* Before a call that may block: what to say if it has not returned in stall_s seconds. */
static void watch(int lock, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void watch(int lock, const char *fmt, ...) {
  if (stall_s <= 0) return;
  char what[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  int n = snprintf(stall_msg, sizeof stall_msg,
                   "ec-stress: FAIL seed=%" PRIu64 " rank=%d lock=%d: %s has not returned after %d s "
                   "(a lost request, grant or release: the job is stuck)\nec-stress: reproduce with: %s\n",
                   seed, rank, lock, what, stall_s, repro);
  stall_len = n < 0 ? 0 : (size_t)n < sizeof stall_msg ? (size_t)n : sizeof stall_msg - 1;
  alarm((unsigned)stall_s);
}
static void unwatch(void) {
  if (stall_s > 0) alarm(0);
}

/* ---- randomness: splitmix64, deterministic from its seed ---- */
static uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
typedef struct { uint64_t s; } rng_t;
static uint64_t next(rng_t *r) { return mix64(r->s += 0x9e3779b97f4a7c15ULL); }
static uint32_t below(rng_t *r, uint32_t n) { return n ? (uint32_t)(next(r) % n) : 0; }
static rng_t rng_of(uint64_t a, uint64_t b, uint64_t c, uint64_t d) {
  rng_t r = {mix64(mix64(mix64(mix64(a) ^ b) ^ c) ^ d)};
  return r;
}

/* ---- the layout ---- */
struct range { uint32_t off, len; };
static int nranges[MAXL];
static struct range ranges[MAXL][MAXRANGES];
enum { K_EC, K_RC, K_PC }; /* bound to its lock; guarded, bound to nothing; the same, processor consistent */
static uint8_t kinds[MAXL][MAXRANGES]; /* all K_EC without --mix */
static const char *const kind_name[] = {"ec", "rc", "pc"};
static uint32_t free_off, free_words; /* --mix: the unlocked words, [free_off, +8 * free_words) */
static size_t arena_used;
static unsigned char *arena; /* static_arena, or the heap block of --line */

/* --big: the longest range, so that every lock's four fit the arena. */
static uint32_t big_len(void) {
  uint32_t fit = (uint32_t)(ARENA / ((size_t)nlocks * MAXRANGES)) - 200;
  return fit < 24 * 1024 ? fit : 24 * 1024;
}

static uint32_t pick_len(rng_t *r) {
  switch (below(r, 20)) {
    case 0: case 1: case 2: case 3: case 4: return 1 + below(r, 8);          /* tiny       */
    case 5: case 6: case 7: case 8: case 9: return 9 + below(r, 56);         /* < a line   */
    case 10: case 11: case 12: case 13: case 14: case 15: return 65 + below(r, 448);
    default:                                             /* up to 4 KiB, or to 24 with --big */
      return big && below(r, 2) ? 4097 + below(r, big_len() - 4096) : 513 + below(r, 3584);
  }
}

static void make_layout(void) {
  rng_t r = rng_of(seed, 0x1a70u, 0, 0);
  int order[MAXL * MAXRANGES][2], n = 0;
  for (int l = 0; l < nlocks; l++) {
    nranges[l] = 1 + (int)below(&r, MAXRANGES);
    for (int j = 0; j < nranges[l]; j++) order[n][0] = l, order[n][1] = j, n++;
  }
  for (int i = n - 1; i > 0; i--) { /* shuffle: ranges of different locks interleave */
    int k = (int)below(&r, (uint32_t)i + 1), t0 = order[i][0], t1 = order[i][1];
    order[i][0] = order[k][0], order[i][1] = order[k][1];
    order[k][0] = t0, order[k][1] = t1;
  }
  size_t cur = below(&r, 64);
  for (int i = 0; i < n; i++) {
    int l = order[i][0], j = order[i][1];
    uint32_t len = pick_len(&r);
    if (j == 0 && len < HDR) len = HDR + below(&r, 8);
    cur += below(&r, 10) < 4 ? 0 : 1 + below(&r, 100); /* 40%: adjacent to the last one */
    ranges[l][j].off = (uint32_t)cur;
    ranges[l][j].len = len;
    cur += len;
  }
  if (cur > ARENA) fail(-1, "layout needs %zu bytes, the arena has %d", cur, ARENA);
  arena_used = cur;
}

/* --mix: each range is entry consistent (bound to its lock, 40%), release consistent
 * (guarded by its lock but bound to nothing, 30%) or processor consistent (the same, and
 * given mw_processor_consistent, 30%). The arena has two zones of pages: the first holds
 * the entry- and release-consistent ranges, shuffled together, the second (from a page
 * boundary, sometimes after a page nobody uses) the entry- and processor-consistent ones
 * (mw_processor_consistent works on whole pages: a release-consistent range there would
 * be processor consistent). So pages hold bound and unbound bytes side by side, even in
 * one 64-byte line, as well as pages wholly of one kind. Then, from the next word or
 * page, the unlocked zone: 16 to 1024 words, processor consistent, word i written with
 * no lock by rank i % P alone. */
static void make_layout_mix(void) {
  rng_t r = rng_of(seed, 0x1a71u, 0, 0);
  int order[2][MAXL * MAXRANGES][2], n[2] = {0, 0};
  for (int l = 0; l < nlocks; l++) {
    nranges[l] = 1 + (int)below(&r, MAXRANGES);
    for (int j = 0; j < nranges[l]; j++) {
      uint32_t k = below(&r, 10);
      kinds[l][j] = k < 4 ? K_EC : k < 7 ? K_RC : K_PC;
      int z = kinds[l][j] == K_RC ? 0 : kinds[l][j] == K_PC ? 1 : (int)below(&r, 2);
      order[z][n[z]][0] = l, order[z][n[z]][1] = j, n[z]++;
    }
  }
  size_t cur = below(&r, 64);
  for (int z = 0; z < 2; z++) {
    if (z == 1) {
      cur = (cur + PAGE - 1) / PAGE * PAGE + (below(&r, 4) == 0 ? PAGE : 0) + below(&r, 64);
    }
    for (int i = n[z] - 1; i > 0; i--) {
      int k = (int)below(&r, (uint32_t)i + 1), t0 = order[z][i][0], t1 = order[z][i][1];
      order[z][i][0] = order[z][k][0], order[z][i][1] = order[z][k][1];
      order[z][k][0] = t0, order[z][k][1] = t1;
    }
    for (int i = 0; i < n[z]; i++) {
      int l = order[z][i][0], j = order[z][i][1];
      uint32_t len = pick_len(&r);
      if (j == 0 && len < HDR) len = HDR + below(&r, 8);
      cur += below(&r, 10) < 4 ? 0 : 1 + below(&r, 100);
      ranges[l][j].off = (uint32_t)cur;
      ranges[l][j].len = len;
      cur += len;
    }
  }
  cur = (cur + 7) / 8 * 8;
  if (below(&r, 2)) cur = (cur + PAGE - 1) / PAGE * PAGE;
  free_off = (uint32_t)cur;
  free_words = 16 + below(&r, MAXFREE - 15);
  cur += 8 * (size_t)free_words;
  if (cur > ARENA) fail(-1, "layout needs %zu bytes, the arena has %d", cur, ARENA);
  arena_used = cur;
}

/* ---- --mix: the unlocked words. Word i is written only by rank i % P, with no lock,
 * each time with its next count c (1, 2, ...) as c << 32 | c; every rank reads words of
 * any writer at random moments and checks that each is whole (both halves alike) and
 * never goes back (processor consistency delivers a writer's flushes in order). What a
 * writer writes is a pure function of (seed, writer rank, section), so every rank can
 * tell each word's final count. ---- */
static uint64_t free_count[MAXFREE]; /* this rank's own words: what it wrote last */
static uint32_t free_seen[MAXFREE];  /* the highest count this rank has read     */
static uint64_t n_free_writes, n_free_reads, n_free_news; /* news: another writer's word had grown */

static volatile uint64_t *free_word(uint32_t i) { return (volatile uint64_t *)(arena + free_off) + i; }

/* Writer w's step in one section: 0 to 3 words of its own, each to its next count. With
 * store = 0 only counts (the replay). */
static void free_step(rng_t *pw, int w, uint64_t *count, int store) {
  uint32_t mine = free_words > (uint32_t)w ? (free_words - (uint32_t)w + (uint32_t)nprocs - 1) / (uint32_t)nprocs : 0;
  if (mine == 0) return;
  uint32_t k = below(pw, 4);
  for (uint32_t m = 0; m < k; m++) {
    uint32_t i = below(pw, mine) * (uint32_t)nprocs + (uint32_t)w;
    uint64_t c = ++count[i];
    if (store) {
      *free_word(i) = c << 32 | c;
      n_free_writes++;
    }
  }
}

/* Each word's count after every writer's `iters` sections. */
static void free_final(uint64_t *count) {
  memset(count, 0, MAXFREE * sizeof *count);
  for (int w = 0; w < nprocs; w++) {
    rng_t pw = rng_of(seed, 0xf7ee, (uint64_t)w, 0);
    for (int it = 0; it < iters; it++) free_step(&pw, w, count, 0);
  }
}

/* Reads a run of 1 to 64 words and checks them. */
static void free_read(rng_t *r, const char *when) {
  uint32_t i0 = below(r, free_words), n = 1 + below(r, 64);
  for (uint32_t i = i0; i < free_words && i < i0 + n; i++) {
    uint64_t v = *free_word(i);
    uint32_t lo = (uint32_t)v, hi = (uint32_t)(v >> 32);
    int w = (int)(i % (uint32_t)nprocs);
    if (lo != hi)
      fail(-1, "%s: unlocked word %u (written by rank %d alone) holds %016" PRIx64 ": the halves of one "
               "aligned 8-byte store differ (a torn update)", when, i, w, v);
    if (lo < free_seen[i])
      fail(-1, "%s: unlocked word %u (written by rank %d alone) went back from count %u to %u (processor "
               "consistency: a writer's updates arrive in the order it flushed them)", when, i, w,
           free_seen[i], lo);
    if (w == rank && lo != free_count[i])
      fail(-1, "%s: unlocked word %u, this rank's own, holds count %u, but this rank last wrote %" PRIu64
               " (another rank's update overwrote it)", when, i, lo, free_count[i]);
    n_free_news += w != rank && lo > free_seen[i];
    free_seen[i] = lo;
    n_free_reads++;
  }
}

/* The data of lock l: its ranges, less the header at the start of range 0. */
static void data_segment(int l, int j, uint32_t *off, uint32_t *len) {
  *off = ranges[l][j].off + (j == 0 ? HDR : 0);
  *len = ranges[l][j].len - (j == 0 ? HDR : 0);
}

static uint64_t fnv(uint64_t h, const unsigned char *p, size_t n) {
  for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ULL;
  return h;
}

/* The checksum stored in the header: version, writer and the data bytes. */
static uint64_t checksum(const unsigned char *base, int l, uint64_t version, uint64_t writer) {
  uint64_t h = 0xcbf29ce484222325ULL;
  h = fnv(h, (const unsigned char *)&version, 8);
  h = fnv(h, (const unsigned char *)&writer, 8);
  for (int j = 0; j < nranges[l]; j++) {
    uint32_t off, len;
    data_segment(l, j, &off, &len);
    h = fnv(h, base + off, len);
  }
  return h;
}

/* A digest of every byte bound to l, header included. */
static uint64_t digest_all(const unsigned char *base, int l) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (int j = 0; j < nranges[l]; j++) h = fnv(h, base + ranges[l][j].off, ranges[l][j].len);
  return h;
}

struct header { uint64_t version, writer, checksum; };

static struct header read_header(const unsigned char *base, int l) {
  struct header h;
  memcpy(&h, base + ranges[l][0].off, sizeof h);
  return h;
}

/* The write that makes version v of lock l, by rank w: a pure function of
 * (seed, l, v, w) and of the bytes it does not overwrite. */
static void apply_write(unsigned char *base, int l, uint64_t v, int w) {
  rng_t r = rng_of(seed, (uint64_t)l, v, (uint64_t)w);
  for (int j = 0; j < nranges[l]; j++) {
    uint32_t off, len;
    data_segment(l, j, &off, &len);
    if (len == 0) continue;
    int nsub = (int)below(&r, big ? 5 : 3); /* 0: this range untouched in this version */
    for (int s = 0; s < nsub; s++) {
      uint32_t a = below(&r, len), n = 1 + below(&r, len - a);
      if (big && below(&r, 2)) {
        /* --big: scattered runs over most of the range, `run` bytes every `stride`: an
         * update of many short runs, which travel copied and fill messages to the eager
         * limit */
        uint32_t stride = 8 + below(&r, 505), run = 1 + below(&r, stride - 1);
        a = below(&r, len / 8 + 1);
        n = len - a;
        for (uint32_t i = 0; i < n; i++)
          if (i % stride < run) base[off + a + i] = (unsigned char)next(&r);
      } else {
        for (uint32_t i = 0; i < n; i++) base[off + a + i] = (unsigned char)next(&r);
      }
    }
  }
  struct header h = {v, (uint64_t)w, 0};
  h.checksum = checksum(base, l, v, (uint64_t)w);
  memcpy(base + ranges[l][0].off, &h, sizeof h);
}

/* Checks lock l's bytes as its holder sees them; returns the version. */
static uint64_t verify(int l, const char *when) {
  struct header h = read_header(arena, l);
  if (h.version == 0) {
    for (int j = 0; j < nranges[l]; j++)
      for (uint32_t i = 0; i < ranges[l][j].len; i++)
        if (arena[ranges[l][j].off + i])
          fail(l, "%s: version 0 (never written) but byte %u of range %d (arena offset %u) is 0x%02x",
               when, i, j, ranges[l][j].off + i, arena[ranges[l][j].off + i]);
    return 0;
  }
  if (h.writer >= (uint64_t)nprocs)
    fail(l, "%s: header says version %" PRIu64 " was written by rank %" PRIu64
            ", not a rank (a torn or foreign header)", when, h.version, h.writer);
  uint64_t c = checksum(arena, l, h.version, h.writer);
  if (c != h.checksum)
    fail(l, "%s: checksum mismatch at version %" PRIu64 " (writer %" PRIu64
            "): header says %016" PRIx64 ", data gives %016" PRIx64
            " (data not consistent with its header: torn, partial or stale update)",
         when, h.version, h.writer, h.checksum, c);
  return h.version;
}

/* ---- the oracle: holders and versions in host shared memory, outside Midway ---- */
struct oracle_page {
  _Atomic int32_t holders[MAXL];  /* -1: an exclusive holder; n > 0: n readers        */
  _Atomic uint64_t version[MAXL]; /* the version the last exclusive holder released  */
};
static struct oracle_page *oracle; /* NULL: off */

/* Off with --no-oracle, and outside mwrun (no MW_JOB_ID to name the page by). */
static void oracle_open(void) {
  const char *job = getenv("MW_JOB_ID");
  if (!use_oracle || !job) return;
  char name[256];
  snprintf(name, sizeof name, "/mw-ec-stress-%s", job);
  int fd = shm_open(name, O_RDWR | O_CREAT, 0600);
  if (fd < 0 || ftruncate(fd, sizeof *oracle) != 0) {
    perror("ec-stress: shm_open (the oracle; --no-oracle runs without it)");
    exit(1);
  }
  void *p = mmap(NULL, sizeof *oracle, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (p == MAP_FAILED) {
    perror("ec-stress: mmap of the oracle");
    exit(1);
  }
  oracle = p;
}
static void oracle_unlink(void) {
  char name[256];
  snprintf(name, sizeof name, "/mw-ec-stress-%s", getenv("MW_JOB_ID"));
  shm_unlink(name);
}

/* Just after mw_acquire returned. */
static void oracle_acquired(int l, int excl) {
  if (!oracle) return;
  if (excl) {
    int32_t expect = 0;
    if (!atomic_compare_exchange_strong(&oracle->holders[l], &expect, -1))
      fail(l, "mw_acquire(EXCLUSIVE) returned while %s", expect < 0
               ? "another rank holds the lock exclusively"
               : "other ranks hold it non-exclusively");
  } else {
    int32_t s = atomic_load(&oracle->holders[l]);
    do {
      if (s < 0) fail(l, "mw_acquire(NONEXCLUSIVE) returned while another rank holds the lock exclusively");
    } while (!atomic_compare_exchange_weak(&oracle->holders[l], &s, s + 1));
  }
}

/* The holder sees version v: it must be the one the last exclusive holder released,
 * since that release came before this acquire returned (the holders' count says so). */
static void oracle_version(int l, uint64_t v, const char *when) {
  if (!oracle) return;
  uint64_t latest = atomic_load(&oracle->version[l]);
  if (v != latest)
    fail(l, "%s: sees version %" PRIu64 ", but the last exclusive holder released version %" PRIu64
            " before this acquire returned (%s)", when, v, latest,
         v < latest ? "a stale copy: the newer data was not delivered" : "a version from nowhere");
}

/* Just before mw_release; an exclusive holder leaves version v. */
static void oracle_releasing(int l, int excl, uint64_t v) {
  if (!oracle) return;
  if (excl) {
    atomic_store(&oracle->version[l], v);
    int32_t expect = -1;
    if (!atomic_compare_exchange_strong(&oracle->holders[l], &expect, 0))
      fail(l, "releasing an exclusive hold, the oracle says %d holders", expect);
  } else {
    atomic_fetch_sub(&oracle->holders[l], 1);
  }
}

/* ---- the random phase ---- */
static struct entry mylog[MAXLOG];
static uint32_t nlog;
static uint64_t last_seen[MAXL];
static uint64_t n_excl, n_nonexcl, n_nested, n_discards;

/* --discard: between sections (no lock held) this rank drops its copies of a random
 * part of the arena, or of all of it: release- and processor-consistent pages leave
 * their copysets (fetched again at the next touch), bound data of locks this rank does
 * not own comes back whole with the next acquire (Midway 4.3). Every check stays. */
static void random_discard(rng_t *r) {
  size_t a = 0, n = arena_used;
  if (below(r, 8) != 0) {
    a = below(r, (uint32_t)arena_used);
    n = 1 + below(r, (uint32_t)(arena_used - a < 3 * PAGE ? arena_used - a : 3 * PAGE));
  }
  mw_discard(arena + a, n);
  n_discards++;
}

static void pause_a_little(rng_t *r) {
  if (delay_us <= 0) return;
  uint32_t k = below(r, 8);
  if (k == 0) {
    sched_yield();
  } else if (k == 1) {
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    long ns = (long)below(r, (uint32_t)delay_us * 1000u + 1);
    do clock_gettime(CLOCK_MONOTONIC, &t);
    while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) < ns);
  }
}

static uint64_t enter(int l, int excl, int nested, int it) {
  char when[96];
  snprintf(when, sizeof when, "section %d (%s%s), on entry", it,
           excl ? "exclusive" : "non-exclusive", nested ? ", nested" : "");
  uint64_t v = verify(l, when);
  if (v < last_seen[l])
    fail(l, "%s: saw version %" PRIu64 " after having seen version %" PRIu64
            " (versions went backwards: stale data granted)", when, v, last_seen[l]);
  oracle_version(l, v, when);
  mylog[nlog++] = (struct entry){(uint16_t)l, (uint8_t)excl, (uint8_t)nested, (uint32_t)v};
  if (excl) {
    apply_write(arena, l, v + 1, rank);
    last_seen[l] = v + 1;
    n_excl++;
  } else {
    last_seen[l] = v;
    n_nonexcl++;
  }
  return last_seen[l];
}

static void recheck(int l, uint64_t expect, int it) {
  char when[64];
  snprintf(when, sizeof when, "section %d, before release", it);
  uint64_t v = verify(l, when);
  if (v != expect)
    fail(l, "%s: version changed under the holder from %" PRIu64 " to %" PRIu64, when, expect, v);
}

static void random_phase(void) {
  rng_t r = rng_of(seed, 0x5eed, (uint64_t)rank, 0);
  rng_t pw = rng_of(seed, 0xf7ee, (uint64_t)rank, 0); /* --mix: this rank's unlocked writes */
  char when[64];
  for (int it = 0; it < iters; it++) {
    /* --mix: the unlocked words are written once per section, inside it or after it, and
     * read inside it and after it, each half of the time */
    int free_inside = mix && below(&r, 2), free_read_in = mix && below(&r, 2),
        free_read_out = mix && below(&r, 2);
    int l[2], excl[2], n = 1;
    l[0] = below(&r, 10) < 3 ? 0 : (int)below(&r, (uint32_t)nlocks); /* lock 0 is hot */
    if (nlocks > 1 && (int)below(&r, 100) < nest_pct) {
      l[1] = (int)below(&r, (uint32_t)nlocks - 1);
      if (l[1] >= l[0]) l[1]++;
      if (l[1] < l[0]) { int t = l[0]; l[0] = l[1]; l[1] = t; } /* index order: no deadlock */
      n = 2;
      n_nested++;
    }
    uint64_t v[2];
    for (int i = 0; i < n; i++) {
      excl[i] = below(&r, 3) < 2;
      watch(l[i], "mw_acquire(%s) in section %d", excl[i] ? "MW_EXCLUSIVE" : "MW_NONEXCLUSIVE", it);
      mw_acquire(&locks[l[i]], excl[i] ? MW_EXCLUSIVE : MW_NONEXCLUSIVE);
      unwatch();
      oracle_acquired(l[i], excl[i]);
      v[i] = enter(l[i], excl[i], n == 2, it);
      if (i == 0 && free_inside) free_step(&pw, rank, free_count, 1);
      if (i == 0 && free_read_in) {
        snprintf(when, sizeof when, "section %d, inside", it);
        free_read(&r, when);
      }
      pause_a_little(&r);
    }
    for (int i = n - 1; i >= 0; i--) {
      recheck(l[i], v[i], it);
      oracle_releasing(l[i], excl[i], v[i]);
      watch(l[i], "mw_release in section %d", it);
      mw_release(&locks[l[i]]);
      unwatch();
    }
    if (mix && !free_inside) free_step(&pw, rank, free_count, 1);
    if (free_read_out) {
      snprintf(when, sizeof when, "after section %d", it);
      free_read(&r, when);
    }
    if (discard_pct && (int)below(&r, 100) < discard_pct) random_discard(&r);
    pause_a_little(&r);
  }
}

/* ---- rank 0: the final checks and the replay ---- */
static void check_at_rank0(void) {
  uint64_t *final = reports[0].final_version;
  for (int p = 0; p < nprocs; p++) {
    if (!reports[p].done)
      fail(-1, "rank %d's report did not arrive through mw_barrier_final (gathered data missing)", p);
    if (reports[p].entries > MAXLOG) fail(-1, "rank %d reports %u log entries", p, reports[p].entries);
    for (int l = 0; l < nlocks; l++)
      if (reports[p].final_version[l] != final[l] || reports[p].final_digest[l] != reports[0].final_digest[l])
        fail(l, "after the random phase rank %d sees version %" PRIu64 " (digest %016" PRIx64
                "), rank 0 sees version %" PRIu64 " (digest %016" PRIx64 ")",
             p, reports[p].final_version[l], reports[p].final_digest[l], final[l],
             reports[0].final_digest[l]);
    if (reports[p].arena_digest != reports[0].arena_digest)
      fail(-1, "at the end rank %d's copy of the arena (digest %016" PRIx64 ") differs from rank 0's "
               "(%016" PRIx64 "), though every lock's bytes agree: unbound bytes (release or processor "
               "consistent data, or gaps nobody writes) are not coherent", p, reports[p].arena_digest,
           reports[0].arena_digest);
  }
  /* writer[l][v] = the rank whose exclusive section saw version v, i.e. wrote v+1 */
  int *writer[MAXL];
  for (int l = 0; l < nlocks; l++) {
    writer[l] = malloc((final[l] + 1) * sizeof(int));
    for (uint64_t v = 0; v <= final[l]; v++) writer[l][v] = -1;
  }
  uint64_t total_excl = 0;
  for (int p = 0; p < nprocs; p++) {
    uint64_t seen[MAXL] = {0};
    for (uint32_t i = 0; i < reports[p].entries; i++) {
      struct entry e = logs[p][i];
      if (e.lock >= nlocks) fail(-1, "rank %d's log entry %u names lock %u", p, i, e.lock);
      int l = e.lock;
      if (e.version < seen[l])
        fail(l, "rank %d's log: saw version %u after %" PRIu64 " (entry %u)", p, e.version, seen[l], i);
      seen[l] = e.version + (e.exclusive ? 1 : 0);
      if (!e.exclusive) {
        if (e.version > final[l])
          fail(l, "rank %d read version %u, beyond the final version %" PRIu64, p, e.version, final[l]);
        continue;
      }
      total_excl++;
      if (e.version >= final[l])
        fail(l, "rank %d wrote version %u, but the final version is %" PRIu64 " (an update was lost)",
             p, e.version + 1, final[l]);
      if (writer[l][e.version] >= 0)
        fail(l, "ranks %d and %d both held the lock exclusively at version %u and both wrote version %u "
                "(mutual exclusion failed, or one was granted stale data)",
             writer[l][e.version], p, e.version, e.version + 1);
      writer[l][e.version] = p;
    }
  }
  for (int l = 0; l < nlocks; l++)
    for (uint64_t v = 0; v < final[l]; v++)
      if (writer[l][v] < 0)
        fail(l, "no exclusive section saw version %" PRIu64 ", yet the final version is %" PRIu64, v, final[l]);

  /* The replay: versions 1..final of every lock, in order, on private memory. */
  unsigned char *img = calloc(1, arena_used);
  for (int l = 0; l < nlocks; l++)
    for (uint64_t v = 1; v <= final[l]; v++) apply_write(img, l, v, writer[l][v - 1]);
  if (mix) { /* the unlocked words: each writer's final counts */
    static uint64_t count[MAXFREE];
    free_final(count);
    for (uint32_t i = 0; i < free_words; i++) {
      uint64_t c = count[i] << 32 | count[i];
      memcpy(img + free_off + 8 * (size_t)i, &c, 8);
    }
  }
  for (size_t i = 0; i < arena_used; i++) {
    if (arena[i] == img[i]) continue;
    int owner = -1, rj = -1;
    for (int l = 0; l < nlocks && owner < 0; l++)
      for (int j = 0; j < nranges[l]; j++)
        if (i >= ranges[l][j].off && i < (size_t)ranges[l][j].off + ranges[l][j].len) owner = l, rj = j;
    size_t diff = 0;
    for (size_t k = i; k < arena_used; k++) diff += arena[k] != img[k];
    if (mix && i >= free_off && i < free_off + 8 * (size_t)free_words)
      fail(-1, "replay: byte %zu of unlocked word %zu (written by rank %zu alone) is 0x%02x, its final count "
               "gives 0x%02x (%zu bytes differ from here on)", (i - free_off) % 8, (i - free_off) / 8,
           (i - free_off) / 8 % (size_t)nprocs, arena[i], img[i], diff);
    if (owner < 0)
      fail(-1, "replay: arena byte %zu, guarded by no lock and never written, is 0x%02x (%zu bytes differ in all)",
           i, arena[i], diff);
    fail(owner, "replay: byte %zu of range %d (%s, arena offset %zu, range [%u, +%u)) is 0x%02x, the "
                "sequential replay of versions 1..%" PRIu64 " gives 0x%02x (%zu bytes differ from here on)",
         i - ranges[owner][rj].off, rj, kind_name[kinds[owner][rj]], i, ranges[owner][rj].off,
         ranges[owner][rj].len, arena[i], final[owner], img[i], diff);
  }
  uint64_t versions = 0;
  for (int l = 0; l < nlocks; l++) versions += final[l];
  if (versions != total_excl)
    fail(-1, "%" PRIu64 " exclusive sections but the final versions add up to %" PRIu64, total_excl, versions);
  int nr = 0, nk[3] = {0, 0, 0};
  for (int l = 0; l < nlocks; l++) {
    nr += nranges[l];
    for (int j = 0; j < nranges[l]; j++) nk[kinds[l][j]]++;
  }
  char kinds_msg[96] = "";
  if (mix)
    snprintf(kinds_msg, sizeof kinds_msg, " (ec %d, rc %d, pc %d) and %u unlocked words", nk[K_EC], nk[K_RC],
             nk[K_PC], free_words);
  const char *model = getenv("MW_MODEL");
  printf("ec-stress: OK seed=%" PRIu64 " ranks=%d model=%s locks=%d ranges=%d%s arena=%zu bytes (%s, %ld-byte "
         "lines) iters=%d: %" PRIu64 " versions replayed and compared byte by byte\n",
         seed, nprocs, model ? model : "ec", nlocks, nr, kinds_msg, arena_used,
         line ? "mw_malloc_lines" : "MW_SHARED", line ? line : 64, iters, versions);
  free(img);
  for (int l = 0; l < nlocks; l++) free(writer[l]);
}

static void usage(void) {
  fprintf(stderr, "usage: stress [--seed S] [--locks M (1..%d)] [--iters K (0..%d)] [--nest PCT] "
                  "[--delay US] [--line L] [--mix] [--big] [--pc-interval US] [--discard PCT] [--stall S] "
                  "[--no-oracle] [--verbose]\n", MAXL, MAXITERS);
  exit(2);
}

/* --mix, before the first acquire: the first touches. A page that holds bound bytes and
 * bytes of release- or processor-consistent data is touched by every rank here. This
 * designs around a documented limit (docs/ARCHITECTURE.md, "Mixing models on one page";
 * runtime/rc/copysets.hpp): if a grant's data lands on a partly bound page that a rank has
 * not touched yet, the page becomes entry consistent on that rank and its unbound bytes
 * are no longer kept coherent there. Every other page (only bound bytes and gaps, or only
 * unbound data) each rank touches with probability 1/2, so that the rest are first
 * touched during the random phase: copyset faults and joins while other ranks push
 * updates to the same page. (Under --model rc|pc no page is entry consistent and the
 * limit does not apply; the same touches are made.) */
static void first_touches(void) {
  const uintptr_t a0 = (uintptr_t)arena, a1 = a0 + arena_used;
  const uintptr_t p0 = a0 / PAGE * PAGE;
  const size_t npages = (a1 - p0 + PAGE - 1) / PAGE;
  unsigned char *has = calloc(npages, 1); /* bit 0: bound bytes; bit 1: unbound data */
  for (int l = 0; l < nlocks; l++)
    for (int j = 0; j < nranges[l]; j++) {
      uintptr_t s = a0 + ranges[l][j].off, e = s + ranges[l][j].len;
      for (uintptr_t q = s / PAGE * PAGE; q < e; q += PAGE) has[(q - p0) / PAGE] |= kinds[l][j] == K_EC ? 1 : 2;
    }
  for (uintptr_t q = (a0 + free_off) / PAGE * PAGE; q < a0 + free_off + 8 * (uintptr_t)free_words; q += PAGE)
    has[(q - p0) / PAGE] |= 2;
  rng_t r = rng_of(seed, 0x70c4, (uint64_t)rank, 0);
  int mixed = 0;
  for (size_t k = 0; k < npages; k++) {
    mixed += has[k] == 3;
    if (has[k] == 3 || below(&r, 2)) {
      uintptr_t q = p0 + k * PAGE;
      (void)*(volatile unsigned char *)(q < a0 ? a0 : q);
    }
  }
  if (verbose && rank == 0) printf("%zu pages, %d with bound and unbound data\n", npages, mixed);
  free(has);
}

int main(int argc, char **argv) {
  mw_init(&argc, &argv);
  rank = mw_rank();
  nprocs = mw_nprocs();
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--no-oracle")) { use_oracle = 0; continue; }
    if (!strcmp(a, "--verbose")) { verbose = 1; continue; }
    if (!strcmp(a, "--mix")) { mix = 1; continue; }
    if (!strcmp(a, "--big")) { big = 1; continue; }
    if (i + 1 >= argc) usage();
    const char *v = argv[++i];
    if (!strcmp(a, "--seed")) seed = strtoull(v, NULL, 0);
    else if (!strcmp(a, "--locks")) nlocks = atoi(v);
    else if (!strcmp(a, "--iters")) iters = atoi(v);
    else if (!strcmp(a, "--nest")) nest_pct = atoi(v);
    else if (!strcmp(a, "--delay")) delay_us = atoi(v);
    else if (!strcmp(a, "--line")) line = atol(v);
    else if (!strcmp(a, "--stall")) stall_s = atoi(v);
    else if (!strcmp(a, "--pc-interval")) pc_interval = (unsigned)atoi(v);
    else if (!strcmp(a, "--discard")) discard_pct = atoi(v);
    else usage();
  }
  if (nlocks < 1 || nlocks > MAXL || iters < 0 || iters > MAXITERS || line < 0 || line > 4096 ||
      (line & (line - 1)) || pc_interval == 0 || discard_pct < 0 || discard_pct > 100)
    usage();
  if (sysconf(_SC_PAGESIZE) != PAGE) {
    fprintf(stderr, "ec-stress: this test assumes %d-byte pages, not %ld\n", PAGE, sysconf(_SC_PAGESIZE));
    return 77;
  }
  if (nprocs > MAXRANKS) {
    fprintf(stderr, "ec-stress: at most %d ranks\n", MAXRANKS);
    return 2;
  }

  make_repro();
  signal(SIGALRM, on_stall);
  if (mix) make_layout_mix();
  else make_layout();
  arena = static_arena;
  if (line) { /* rank 0 allocates; the block's address reaches the others by a barrier */
    mw_barrier_bind(&setup_barrier, &heap_arena, sizeof heap_arena);
    if (rank == 0) {
      /* --mix: the zones start at page boundaries of the arena, so it starts at one */
      uintptr_t b = (uintptr_t)mw_malloc_lines(arena_used + (mix ? PAGE : 0), (size_t)line);
      heap_arena = mix ? (b + PAGE - 1) / PAGE * PAGE : b;
    }
    mw_barrier(&setup_barrier);
    arena = (unsigned char *)(uintptr_t)heap_arena;
  }
  for (int l = 0; l < nlocks; l++)
    for (int j = 0; j < nranges[l]; j++) {
      const void *p = arena + ranges[l][j].off;
      if (kinds[l][j] == K_EC) mw_bind(&locks[l], p, ranges[l][j].len);
      else if (kinds[l][j] == K_PC) mw_processor_consistent(p, ranges[l][j].len, pc_interval);
    }
  if (mix) mw_processor_consistent(arena + free_off, 8 * (size_t)free_words, pc_interval);
  mw_barrier_bind(&gather_barrier, logs, sizeof logs);
  mw_barrier_bind(&gather_barrier, reports, sizeof reports);
  oracle_open();
  if (rank == 0 && verbose) {
    for (int l = 0; l < nlocks; l++)
      for (int j = 0; j < nranges[l]; j++)
        printf("lock %2d range %d: [%7u, +%4u) %s\n", l, j, ranges[l][j].off, ranges[l][j].len,
               kind_name[kinds[l][j]]);
    if (mix) printf("unlocked words: [%7u, +%4u)\n", free_off, 8 * free_words);
  }
  if (mix) first_touches();
  mw_barrier(&phase_barrier); /* every binding is made before anyone acquires */
  if (rank == 0 && oracle) oracle_unlink(); /* everyone has it open by now */

  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  random_phase();
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double secs = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
  if (verbose || rank == 0)
    printf("ec-stress: rank %d: %d sections (%" PRIu64 " exclusive, %" PRIu64 " non-exclusive, %" PRIu64
           " nested; %" PRIu64 " discards; %" PRIu64 " unlocked writes, %" PRIu64 " reads, %" PRIu64
           " of them news) in %.3f s\n", rank, iters, n_excl, n_nonexcl, n_nested, n_discards, n_free_writes,
           n_free_reads, n_free_news, secs);

  watch(-1, "mw_barrier at the end of the random phase");
  mw_barrier(&phase_barrier); /* nothing bound: ends the random phase */
  unwatch();

  if (mix) { /* every writer's last updates to the unlocked words came with the barrier */
    static uint64_t count[MAXFREE];
    free_final(count);
    for (uint32_t i = 0; i < free_words; i++) {
      uint64_t v = *free_word(i);
      if (v != (count[i] << 32 | count[i]))
        fail(-1, "after the barrier that ends the random phase, unlocked word %u holds %016" PRIx64
                 ", but its writer, rank %u, last wrote count %" PRIu64 " (%s)", i, v, i % (uint32_t)nprocs,
             count[i], (uint32_t)v < count[i] ? "an update the barrier should have delivered is missing"
                                              : "a count never written");
    }
  }

  /* The final view: every lock, non-exclusively. */
  struct report *me = &reports[rank];
  for (int l = 0; l < nlocks; l++) {
    watch(l, "mw_acquire(MW_NONEXCLUSIVE) for the final view");
    mw_acquire(&locks[l], MW_NONEXCLUSIVE);
    unwatch();
    oracle_acquired(l, 0);
    uint64_t v = verify(l, "final view");
    oracle_version(l, v, "final view");
    if (v < last_seen[l])
      fail(l, "final view: version %" PRIu64 ", older than version %" PRIu64 " this rank saw before",
           v, last_seen[l]);
    me->final_version[l] = v;
    me->final_digest[l] = digest_all(arena, l);
    oracle_releasing(l, 0, v);
    mw_release(&locks[l]);
  }
  /* Every byte of the arena: each lock's bytes were just acquired, everything else came
   * with the barrier (gaps nobody writes are zeros everywhere). */
  me->arena_digest = fnv(0xcbf29ce484222325ULL, arena, arena_used);
  memcpy(logs[rank], mylog, nlog * sizeof mylog[0]);
  me->entries = nlog;
  me->done = 1;
  mw_barrier_final(&gather_barrier);
  if (rank == 0) check_at_rank0();
  mw_finalize();
  return 0;
}
