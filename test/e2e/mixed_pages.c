// A page that holds both data bound to a lock or a barrier and release-consistent data:
// the unbound bytes stay coherent on a rank whose first contact with the page is the
// bound data landing there (a grant, a crossing), before it touched the page itself.
// (They did not: the landing took the page for wholly bound, it never joined the copyset,
// and the rank read zeros and its writes reached no one, silently. A pthread program
// with a counter bound to a lock next to ordinary globals failed at every run.)
// RUN: %mwcc -O2 %s -o %t
// A token bound to a lock, passed from rank to rank, next to data each rank writes.
// RUN: %mwrun -n 3 %t chain 2>&1 | FileCheck %s --check-prefix=OK
// RUN: %mwrun -n 4 %t chain 2>&1 | FileCheck %s --check-prefix=OK
// RUN: env FI_TCP_IFACE=lo %mwrun -n 3 --provider tcp %t chain 2>&1 | FileCheck %s --check-prefix=OK
// The same on a block from mw_malloc.
// RUN: %mwrun -n 4 %t chain-heap 2>&1 | FileCheck %s --check-prefix=OK
// Fork/join: the creator binds a counter next to globals it sets before mw_fork; each
// worker takes the lock first, then reads the globals.
// RUN: %mwrun -n 2 %t fork 2>&1 | FileCheck %s --check-prefix=OK
// RUN: %mwrun -n 4 %t fork 2>&1 | FileCheck %s --check-prefix=OK
// Bytes bound to a barrier next to unbound ones; a crossing's data may reach the manager
// before it has bound them itself.
// RUN: %mwrun -n 2 %t barrier 2>&1 | FileCheck %s --check-prefix=OK
// RUN: %mwrun -n 4 %t barrier 2>&1 | FileCheck %s --check-prefix=OK
// OK: every rank read what was written
#include <midway.h>
#include <stdio.h>
#include <string.h>

struct mix {
  int token;  // bound to token_lock
  int rc[15];
};
MW_SHARED __attribute__((aligned(4096))) struct mix m;
MW_SHARED struct mix *heap_m;
MW_SHARED mw_lock_t token_lock;
MW_SHARED __attribute__((aligned(4096))) mw_barrier_t bar;  // a page of its own

// fork: a counter next to the globals the workers read.
MW_SHARED __attribute__((aligned(4096))) long total;
MW_SHARED int n;
MW_SHARED int *in;
MW_SHARED mw_lock_t total_lock;

// barrier: bound bytes next to unbound ones.
MW_SHARED __attribute__((aligned(4096))) struct {
  int bb[4];
  int rc[12];
} mb;

static int bad;

static void expect(const char *what, int got, int want) {
  if (got == want) return;
  if (bad++ < 5) printf("rank %d: %s = %d, want %d\n", mw_rank(), what, got, want);
}

static void chain(struct mix *x) {
  const int me = mw_rank(), np = mw_nprocs();
  for (;;) {  // wait for this rank's turn
    mw_acquire(&token_lock, MW_EXCLUSIVE);
    if (x->token == me) break;
    mw_release(&token_lock);
  }
  if (me > 0) expect("rc[0] (the previous rank's, before its release)", x->rc[0], 100 + me - 1);
  x->rc[0] = 100 + me;
  x->token = me + 1;
  mw_release(&token_lock);
  mw_barrier(&bar);
  expect("rc[0] after the barrier", x->rc[0], 100 + np - 1);
}

static void work(void) {
  mw_acquire(&total_lock, MW_EXCLUSIVE);
  expect("n (set before mw_fork)", n, 100);
  if (in) total += in[mw_rank()];
  else expect("in != NULL (set before mw_fork)", 0, 1);
  mw_release(&total_lock);
}

int main(int argc, char **argv) {
  mw_init(&argc, &argv);
  const char *c = argc > 1 ? argv[1] : "";
  if (!strcmp(c, "fork")) mw_fork_serve();  // the workers serve forks here until rank 0 ends
  const int me = mw_rank(), np = mw_nprocs();
  if (!strcmp(c, "chain")) {
    mw_bind(&token_lock, &m.token, sizeof m.token);
    mw_barrier(&bar);
    chain(&m);
  } else if (!strcmp(c, "chain-heap")) {
    if (me == 0) heap_m = mw_malloc(4096);
    mw_barrier(&bar);
    mw_bind(&token_lock, &heap_m->token, sizeof heap_m->token);
    mw_barrier(&bar);
    chain(heap_m);
  } else if (!strcmp(c, "fork")) {
    mw_acquire(&total_lock, MW_EXCLUSIVE);
    mw_bind(&total_lock, &total, sizeof total);
    total = 0;
    mw_release(&total_lock);
    n = 100;
    in = mw_malloc(n * sizeof(int));
    for (int i = 0; i < n; i++) in[i] = i + 1;
    mw_fork(work);
    mw_join();
    long want = 0;
    for (int r = 1; r < np; r++) want += r + 1;
    mw_acquire(&total_lock, MW_EXCLUSIVE);
    expect("total", (int)total, (int)want);
    mw_release(&total_lock);
  } else if (!strcmp(c, "barrier")) {
    mw_barrier_bind(&bar, mb.bb, sizeof mb.bb);
    mb.bb[me] = me + 1;
    if (me == 0) mb.rc[0] = 42;
    mw_barrier(&bar);
    for (int q = 0; q < np; q++) expect("bb[q]", mb.bb[q], q + 1);
    expect("rc[0] (rank 0's, before the crossing)", mb.rc[0], 42);
    mw_barrier(&bar);
    if (me == np - 1) mb.rc[1] = 43;
    mw_barrier(&bar);
    expect("rc[1] (the last rank's)", mb.rc[1], 43);
  } else {
    printf("unknown case '%s'\n", c);
    bad = 1;
  }
  if (strcmp(c, "fork")) mw_barrier(&bar);
  if (me == 0 && !bad) printf("every rank read what was written\n");
  mw_finalize();
  return bad != 0;
}
