/* atomics.c — atomic operations on shared data reach the other ranks like stores do.
 *
 *   mwrun -n P [--model ec|rc|pc] atomics [--iters K]     (K from 1 to 64, default 64)
 *
 * C11 and __atomic operations on shared data are stores as far as Midway is concerned:
 * the pass marks the bytes they write (test/e2e/atomics.c checks the marks on one rank),
 * and what is marked travels with the lock (entry consistency) or as the copysets'
 * updates (rc, pc). Here every rank, K times, takes a lock and changes the data bound to
 * it only through atomics:
 *   sum       __atomic_fetch_add of 1
 *   doubled   a compare-exchange loop adding 2 (the first try fails only if the read was
 *             stale, and a failed compare-exchange writes nothing)
 *   last      atomic_exchange of ((rank + 1) << 32 | iteration), the value it replaced checked
 *             against the previous holder's
 *   stamp     __atomic_store_n of the number of sections so far, read back with
 *             __atomic_load_n by the next holder
 *   flags[r]  atomic_fetch_or of a bit per iteration into the rank's own word
 * Rank 0 then reads everything under the lock: sum == P*K, doubled == 2*P*K, stamp ==
 * P*K, every flags word has its K bits. An atomic that the pass left unmarked is lost at
 * the first hand-over. Exits 1 naming what differs.
 */
#include <inttypes.h>
#include <midway.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXP 64

struct counters {
  long sum;
  long doubled;
  uint64_t last;
  uint64_t stamp;
  _Atomic uint64_t flags[MAXP];
};
MW_SHARED _Alignas(4096) struct counters c;
MW_SHARED mw_lock_t lock;
MW_SHARED mw_barrier_t done;

static int failures;
static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "atomics: FAIL rank %d: ", mw_rank());
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  failures++;
}

int main(int argc, char **argv) {
  mw_init(&argc, &argv);
  const int me = mw_rank(), P = mw_nprocs();
  int iters = 64;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--iters") && i + 1 < argc) iters = atoi(argv[++i]);
    else {
      fprintf(stderr, "usage: atomics [--iters K (1..64)]\n");
      return 2;
    }
  }
  if (iters < 1 || iters > 64 || P > MAXP) {
    fprintf(stderr, "atomics: --iters from 1 to 64, at most %d ranks\n", MAXP);
    return 2;
  }
  mw_bind(&lock, &c, sizeof c);
  mw_barrier(&done);

  for (int it = 0; it < iters && !failures; it++) {
    mw_acquire(&lock, MW_EXCLUSIVE);
    __atomic_fetch_add(&c.sum, 1, __ATOMIC_SEQ_CST);
    long seen = __atomic_load_n(&c.doubled, __ATOMIC_RELAXED);
    while (!__atomic_compare_exchange_n(&c.doubled, &seen, seen + 2, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
    }
    const uint64_t stamp = __atomic_load_n(&c.stamp, __ATOMIC_ACQUIRE);
    const uint64_t prev = atomic_exchange((_Atomic uint64_t *)&c.last, (uint64_t)(me + 1) << 32 | (uint64_t)it);
    if (stamp > 0 && prev == 0)
      fail("section %d: %" PRIu64 " sections came before, but the last holder's exchange is missing", it, stamp);
    __atomic_store_n(&c.stamp, stamp + 1, __ATOMIC_RELEASE);
    atomic_fetch_or(&c.flags[me], (uint64_t)1 << it);
    mw_release(&lock);
  }
  mw_barrier(&done);

  if (me == 0) {
    mw_acquire(&lock, MW_NONEXCLUSIVE);
    const long n = (long)P * iters;
    if (c.sum != n) fail("sum is %ld after %ld atomic increments", c.sum, n);
    if (c.doubled != 2 * n) fail("doubled is %ld after %ld compare-exchange additions of 2", c.doubled, n);
    if (c.stamp != (uint64_t)n) fail("stamp is %" PRIu64 " after %ld atomic stores", c.stamp, n);
    const uint64_t all = iters == 64 ? ~(uint64_t)0 : ((uint64_t)1 << iters) - 1;
    for (int r = 0; r < P; r++)
      if (atomic_load(&c.flags[r]) != all)
        fail("rank %d's flags are %016" PRIx64 ", expected %016" PRIx64, r, atomic_load(&c.flags[r]), all);
    mw_release(&lock);
    if (!failures) printf("atomics: OK, %d ranks x %d sections of atomic updates\n", P, iters);
  }
  mw_finalize();
  return failures ? 1 : 0;
}
