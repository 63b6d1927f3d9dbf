/* reacquire.c — a lock moving back and forth ships only what the acquirer lacks.
 *
 *   mwrun -n P reacquire [--bytes S]     (P >= 2; ranks 2.. only cross the barriers)
 *
 * S bytes (default 64 KiB, a multiple of 128) are bound to one lock. Ranks 0 and 1 take
 * it in turn, one step between two crossings of a barrier bound to nothing, and each
 * counts the payload bytes its acquire received (mw_stats_get before and after: nothing
 * else moves data meanwhile):
 *
 *   step  who     what it does                       payload its acquire must receive
 *   1     rank 0  writes all S bytes                 (its first acquire: no data exists)
 *   2     rank 1  reads                              S    everything rank 0 wrote
 *   3     rank 0  takes it back, writes the 1st half 0    rank 1 wrote nothing
 *   4     rank 1  reads                              S/2  the half written since step 2
 *   5     rank 1  takes it again (cached here)       0    and no message
 *   6     rank 0  reads (non-exclusive)              0    it wrote everything there is
 *
 * An owner ships the lines stamped later than the acquirer last saw the lock; a grant
 * that also shipped the lines stamped at exactly that time re-sends what the acquirer
 * already holds (step 3: S, step 4: S, step 6: S/2). Every step also checks the bytes.
 * Exits 1 naming the step, the rank and the figure on any mismatch.
 */
#include <inttypes.h>
#include <midway.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXS (256 * 1024)

MW_SHARED _Alignas(4096) unsigned char data[MAXS];
MW_SHARED mw_lock_t lock;
MW_SHARED mw_barrier_t step;

static size_t S = 64 * 1024;
static int rank, failures;

static unsigned char value(size_t i, int version) { return (unsigned char)(i * 31 + (size_t)version * 7 + 1); }

/* The bytes as they must be after `first_half_version` was written over version 1. */
static void check_bytes(int st, int first_half_version) {
  for (size_t i = 0; i < S; i++) {
    unsigned char want = value(i, i < S / 2 ? first_half_version : 1);
    if (data[i] != want) {
      printf("reacquire: step %d: rank %d: FAIL byte %zu is %u, expected %u\n", st, rank, i, data[i], want);
      failures++;
      return;
    }
  }
}

/* Acquires the lock and checks the payload bytes and messages this acquire received. */
static void acquire(int st, mw_mode_t mode, uint64_t want_bytes, int want_no_message) {
  mw_stats_t a, b;
  mw_stats_get(&a);
  mw_acquire(&lock, mode);
  mw_stats_get(&b);
  const uint64_t got = b.payload_bytes_received - a.payload_bytes_received;
  const uint64_t msgs = b.msgs_sent - a.msgs_sent;
  if (got != want_bytes) {
    printf("reacquire: step %d: rank %d: FAIL the acquire received %" PRIu64 " payload bytes, expected %" PRIu64
           "%s\n", st, rank, got, want_bytes,
           got > want_bytes ? " (data the acquirer already held was sent again)" : "");
    failures++;
  } else {
    printf("reacquire: step %d: rank %d: ok   %" PRIu64 " payload bytes\n", st, rank, got);
  }
  if (want_no_message && msgs != 0) {
    printf("reacquire: step %d: rank %d: FAIL a cached re-acquire sent %" PRIu64 " messages\n", st, rank, msgs);
    failures++;
  }
}

int main(int argc, char **argv) {
  mw_init(&argc, &argv);
  rank = mw_rank();
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--bytes") && i + 1 < argc) {
      S = strtoul(argv[++i], NULL, 0);
    } else {
      fprintf(stderr, "usage: reacquire [--bytes S]\n");
      return 2;
    }
  }
  if (S == 0 || S > MAXS || S % 128 || mw_nprocs() < 2) {
    fprintf(stderr, "reacquire: --bytes must be a multiple of 128 up to %d, on 2 ranks or more\n", MAXS);
    return 2;
  }
  mw_bind(&lock, data, S);
  mw_barrier(&step);

  if (rank == 0) { /* 1 */
    mw_acquire(&lock, MW_EXCLUSIVE);
    for (size_t i = 0; i < S; i++) data[i] = value(i, 1);
    mw_release(&lock);
  }
  mw_barrier(&step);
  if (rank == 1) { /* 2 */
    acquire(2, MW_EXCLUSIVE, S, 0);
    check_bytes(2, 1);
    mw_release(&lock);
  }
  mw_barrier(&step);
  if (rank == 0) { /* 3 */
    acquire(3, MW_EXCLUSIVE, 0, 0);
    check_bytes(3, 1);
    for (size_t i = 0; i < S / 2; i++) data[i] = value(i, 2);
    mw_release(&lock);
  }
  mw_barrier(&step);
  if (rank == 1) { /* 4, 5 */
    acquire(4, MW_EXCLUSIVE, S / 2, 0);
    check_bytes(4, 2);
    mw_release(&lock);
    acquire(5, MW_EXCLUSIVE, 0, 1);
    check_bytes(5, 2);
    mw_release(&lock);
  }
  mw_barrier(&step);
  if (rank == 0) { /* 6 */
    acquire(6, MW_NONEXCLUSIVE, 0, 0);
    check_bytes(6, 2);
    mw_release(&lock);
  }
  mw_barrier(&step);
  mw_finalize();
  if (rank <= 1) printf("reacquire: rank %d: %s\n", rank, failures ? "FAIL" : "OK");
  return failures ? 1 : 0;
}
