// mw_bind puts the bound pages in memory at once, so that a grant's data lands (or the
// owner writes it) without a page fault on the way (docs/PERFORMANCE.md, "No stalls"),
// and changes no byte doing so: initialized data keeps its values, and a lock's data
// still travels. Pages bound to nothing stay out of memory until touched.
// RUN: %mwcc -O2 %s -o %t
// (mincore only reads the shared range it is given: its warning is silenced.)
// RUN: env MW_WARN_UNMARKED=0 %mwrun -n 2 %t | FileCheck %s
// CHECK-DAG: rank 0: before mw_bind 0 of 64 pages in memory, after 64; unbound 0
// CHECK-DAG: rank 1: before mw_bind 0 of 64 pages in memory, after 64; unbound 0
// CHECK-DAG: rank 0: initialized 7 8 9
// CHECK-DAG: rank 1: initialized 7 8 9
// CHECK: rank 1 read 4242 at the end of the bound range
#include <midway.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#define PAGES 64
MW_SHARED _Alignas(4096) char zeros[PAGES * 4096];     /* bound to lock */
MW_SHARED _Alignas(4096) char untouched[PAGES * 4096]; /* bound to nothing */
MW_SHARED _Alignas(4096) int initialized[1024] = {7, 8, 9};
MW_SHARED mw_lock_t lock;
MW_SHARED mw_lock_t lock_init;
MW_SHARED mw_barrier_t step;

static int resident(const void *p, size_t len) {
  unsigned char v[PAGES];
  if (mincore((void *)p, len, v) != 0) return -1;
  int n = 0;
  for (size_t i = 0; i < len / 4096; i++) n += v[i] & 1;
  return n;
}

int main(int argc, char **argv) {
  mw_init(&argc, &argv);
  const int me = mw_rank();
  const int before = resident(zeros, sizeof zeros);
  mw_bind(&lock, zeros, sizeof zeros);
  mw_bind(&lock_init, initialized, sizeof initialized);
  printf("rank %d: before mw_bind %d of %d pages in memory, after %d; unbound %d\n", me, before,
         PAGES, resident(zeros, sizeof zeros), resident(untouched, sizeof untouched));
  printf("rank %d: initialized %d %d %d\n", me, initialized[0], initialized[1], initialized[2]);
  fflush(stdout);
  mw_barrier(&step);
  if (me == 0) {
    mw_acquire(&lock, MW_EXCLUSIVE);
    *(int *)(zeros + sizeof zeros - sizeof(int)) = 4242;
    mw_release(&lock);
  }
  mw_barrier(&step);
  if (me == 1) {
    mw_acquire(&lock, MW_NONEXCLUSIVE);
    printf("rank 1 read %d at the end of the bound range\n", *(int *)(zeros + sizeof zeros - sizeof(int)));
    mw_release(&lock);
  }
  mw_finalize();
  return 0;
}
