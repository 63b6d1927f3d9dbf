// Release-consistent data written just before a barrier must be in place at every other
// rank just after it. At two ranks on one host a barrier's flush waits for no
// acknowledgement: the writer announces its last flush with its arrival and the reader,
// across, waits until it has applied it (rc/pending_updates.hpp, flush_for_barrier). Each
// crossing here, one rank rewrites a block of pages (a run per page, or every other
// long: many short runs), crosses, and the other checks every long of it; neither holds
// a lock. At two ranks over shm the reader then sends no acknowledgement: each rank
// counts the messages it sent in the crossings where it only read. (Acknowledged, that
// would be one a crossing, ~146; an arrival may still go by message when the rank's
// line is busy with its previous crossing, which a heavily loaded machine made happen
// once in a run, so a few are allowed.)
// RUN: %mwcc -O2 -Wno-backend-plugin %s -o %t
// RUN: %mwrun -n 2 %t count | FileCheck %s --check-prefixes=CHECK,COUNT
// RUN: %mwrun -n 2 --provider tcp %t | FileCheck %s
// RUN: %mwrun -n 3 %t | FileCheck %s
#include <midway.h>
#include <stdio.h>
#include <string.h>

enum { kLongs = 3 * 4096 / 8, kCrossings = 300 };  // each update eager: no read to answer
MW_SHARED _Alignas(4096) long block[kLongs];  // bound to nothing: release consistent
MW_SHARED mw_barrier_t b;

int main(int argc, char **argv) {
  mw_init(&argc, &argv);
  const int me = mw_rank(), np = mw_nprocs();
  long wrong = 0;
  mw_barrier(&b);
  unsigned long long reading = 0;  // messages sent in the crossings this rank only read, after the first
  for (long c = 1; c <= kCrossings; c++) {
    mw_stats_t s0, s1;
    mw_stats_get(&s0);
    const int writer = (int)(c % np);
    const int stride = (c / np) % 2 ? 2 : 1;  // every other long: short runs
    if (me == writer)
      for (int i = 0; i < kLongs; i += stride) block[i] = c * 100000 + i;
    mw_barrier(&b);
    if (me != writer)
      for (int i = 0; i < kLongs; i += stride) wrong += block[i] != c * 100000 + i;
    mw_barrier(&b);
    mw_stats_get(&s1);
    if (me != writer && c > 8) reading += s1.msgs_sent - s0.msgs_sent;  // pages in place by then
  }
  if (np == 2 && argc > 1 && strcmp(argv[1], "count") == 0)
    printf("rank %d: %s messages sent in the crossings it only read (%llu)\n", me,
           reading <= kCrossings / 50 ? "no more than a few" : "too many", reading);
  printf("rank %d: %ld longs wrong\n", me, wrong);
  mw_finalize();
  return 0;
}
// COUNT-DAG: rank 0: no more than a few messages sent in the crossings it only read
// COUNT-DAG: rank 1: no more than a few messages sent in the crossings it only read
// CHECK-DAG: rank 0: 0 longs wrong
// CHECK-DAG: rank 1: 0 longs wrong
