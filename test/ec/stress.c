/* stress.c — a randomized stress test of entry consistency (locks and bindings).
 *
 *   mwrun -n N stress [--seed S] [--locks M] [--iters K] [--nest PCT] [--delay US]
 *                     [--line L] [--stall S] [--no-oracle] [--verbose]
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
 * Any failure prints "ec-stress: FAIL seed=S rank=R lock=L: what" and the command that
 * reproduces it, and exits 1.
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
static int rank, nprocs;

/* The command that runs this job again, for failure messages. */
static char repro[256];
static void make_repro(void) {
  snprintf(repro, sizeof repro,
           "mwrun -n %d stress --seed %" PRIu64 " --locks %d --iters %d --nest %d --delay %d --line %ld%s",
           nprocs, seed, nlocks, iters, nest_pct, delay_us, line, use_oracle ? "" : " --no-oracle");
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
static size_t arena_used;
static unsigned char *arena; /* static_arena, or the heap block of --line */

static uint32_t pick_len(rng_t *r) {
  switch (below(r, 20)) {
    case 0: case 1: case 2: case 3: case 4: return 1 + below(r, 8);          /* tiny       */
    case 5: case 6: case 7: case 8: case 9: return 9 + below(r, 56);         /* < a line   */
    case 10: case 11: case 12: case 13: case 14: case 15: return 65 + below(r, 448);
    default: return 513 + below(r, 3584);                                    /* up to 4 KiB */
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
    int nsub = (int)below(&r, 3); /* 0: this range untouched in this version */
    for (int s = 0; s < nsub; s++) {
      uint32_t a = below(&r, len), n = 1 + below(&r, len - a);
      for (uint32_t i = 0; i < n; i++) base[off + a + i] = (unsigned char)next(&r);
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
static uint64_t n_excl, n_nonexcl, n_nested;

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
  for (int it = 0; it < iters; it++) {
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
      pause_a_little(&r);
    }
    for (int i = n - 1; i >= 0; i--) {
      recheck(l[i], v[i], it);
      oracle_releasing(l[i], excl[i], v[i]);
      watch(l[i], "mw_release in section %d", it);
      mw_release(&locks[l[i]]);
      unwatch();
    }
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
  for (size_t i = 0; i < arena_used; i++) {
    if (arena[i] == img[i]) continue;
    int owner = -1, rj = -1;
    for (int l = 0; l < nlocks && owner < 0; l++)
      for (int j = 0; j < nranges[l]; j++)
        if (i >= ranges[l][j].off && i < (size_t)ranges[l][j].off + ranges[l][j].len) owner = l, rj = j;
    size_t diff = 0;
    for (size_t k = i; k < arena_used; k++) diff += arena[k] != img[k];
    if (owner < 0)
      fail(-1, "replay: arena byte %zu, bound to no lock and never written, is 0x%02x (%zu bytes differ in all)",
           i, arena[i], diff);
    fail(owner, "replay: byte %zu of range %d (arena offset %zu, range [%u, +%u)) is 0x%02x, the sequential "
                "replay of versions 1..%" PRIu64 " gives 0x%02x (%zu bytes differ from here on)",
         i - ranges[owner][rj].off, rj, i, ranges[owner][rj].off, ranges[owner][rj].len, arena[i],
         final[owner], img[i], diff);
  }
  uint64_t versions = 0;
  for (int l = 0; l < nlocks; l++) versions += final[l];
  if (versions != total_excl)
    fail(-1, "%" PRIu64 " exclusive sections but the final versions add up to %" PRIu64, total_excl, versions);
  int nr = 0;
  for (int l = 0; l < nlocks; l++) nr += nranges[l];
  printf("ec-stress: OK seed=%" PRIu64 " ranks=%d locks=%d ranges=%d arena=%zu bytes (%s, %ld-byte lines) "
         "iters=%d: %" PRIu64 " versions replayed and compared byte by byte\n",
         seed, nprocs, nlocks, nr, arena_used, line ? "mw_malloc_lines" : "MW_SHARED", line ? line : 64,
         iters, versions);
  free(img);
  for (int l = 0; l < nlocks; l++) free(writer[l]);
}

static void usage(void) {
  fprintf(stderr, "usage: stress [--seed S] [--locks M (1..%d)] [--iters K (0..%d)] [--nest PCT] "
                  "[--delay US] [--line L] [--stall S] [--no-oracle] [--verbose]\n", MAXL, MAXITERS);
  exit(2);
}

int main(int argc, char **argv) {
  mw_init(&argc, &argv);
  rank = mw_rank();
  nprocs = mw_nprocs();
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--no-oracle")) { use_oracle = 0; continue; }
    if (!strcmp(a, "--verbose")) { verbose = 1; continue; }
    if (i + 1 >= argc) usage();
    const char *v = argv[++i];
    if (!strcmp(a, "--seed")) seed = strtoull(v, NULL, 0);
    else if (!strcmp(a, "--locks")) nlocks = atoi(v);
    else if (!strcmp(a, "--iters")) iters = atoi(v);
    else if (!strcmp(a, "--nest")) nest_pct = atoi(v);
    else if (!strcmp(a, "--delay")) delay_us = atoi(v);
    else if (!strcmp(a, "--line")) line = atol(v);
    else if (!strcmp(a, "--stall")) stall_s = atoi(v);
    else usage();
  }
  if (nlocks < 1 || nlocks > MAXL || iters < 0 || iters > MAXITERS || line < 0 || line > 4096 ||
      (line & (line - 1)))
    usage();
  if (nprocs > MAXRANKS) {
    fprintf(stderr, "ec-stress: at most %d ranks\n", MAXRANKS);
    return 2;
  }

  make_repro();
  signal(SIGALRM, on_stall);
  make_layout();
  arena = static_arena;
  if (line) { /* rank 0 allocates; the block's address reaches the others by a barrier */
    mw_barrier_bind(&setup_barrier, &heap_arena, sizeof heap_arena);
    if (rank == 0) heap_arena = (uint64_t)(uintptr_t)mw_malloc_lines(arena_used, (size_t)line);
    mw_barrier(&setup_barrier);
    arena = (unsigned char *)(uintptr_t)heap_arena;
  }
  for (int l = 0; l < nlocks; l++)
    for (int j = 0; j < nranges[l]; j++) mw_bind(&locks[l], arena + ranges[l][j].off, ranges[l][j].len);
  mw_barrier_bind(&gather_barrier, logs, sizeof logs);
  mw_barrier_bind(&gather_barrier, reports, sizeof reports);
  oracle_open();
  if (rank == 0 && verbose)
    for (int l = 0; l < nlocks; l++)
      for (int j = 0; j < nranges[l]; j++)
        printf("lock %2d range %d: [%7u, +%4u)\n", l, j, ranges[l][j].off, ranges[l][j].len);
  mw_barrier(&phase_barrier); /* every binding is made before anyone acquires */
  if (rank == 0 && oracle) oracle_unlink(); /* everyone has it open by now */

  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  random_phase();
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double secs = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
  if (verbose || rank == 0)
    printf("ec-stress: rank %d: %d sections (%" PRIu64 " exclusive, %" PRIu64 " non-exclusive, %" PRIu64
           " nested) in %.3f s\n", rank, iters, n_excl, n_nonexcl, n_nested, secs);

  watch(-1, "mw_barrier at the end of the random phase");
  mw_barrier(&phase_barrier); /* nothing bound: ends the random phase */
  unwatch();

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
  memcpy(logs[rank], mylog, nlog * sizeof mylog[0]);
  me->entries = nlog;
  me->done = 1;
  mw_barrier_final(&gather_barrier);
  if (rank == 0) check_at_rank0();
  mw_finalize();
  return 0;
}
