// A lock cycle while another rank runs: ranks 0 and 1 each hold a lock and wait for the
// other's, while rank 2 works on outside Midway (asleep here). No rank will ever give
// either lock back, whatever rank 2 does, so mwrun stops the job within seconds and
// says so (it waited silently until --timeout, or forever, while any rank was not
// waiting itself).
// RUN: %mwcc -O0 -g %s -o %t
// RUN: not %mwrun -n 3 --timeout 60 %t 2>&1 | FileCheck %s
// CHECK: mwrun: deadlock: ranks wait in a cycle, each for a lock the next one holds:
// CHECK-DAG: rank 0: held by rank 1
// CHECK-DAG: rank 1: held by rank 0
// CHECK: what each rank waits for:
// CHECK-DAG: rank 2 {{.*}}: running outside Midway
// CHECK: stopping the job
// CHECK-NOT: --timeout
#include <midway.h>
#include <unistd.h>

MW_SHARED mw_lock_t locks[2];
MW_SHARED mw_barrier_t start;

int main(int argc, char **argv) {
  mw_init(&argc, &argv);
  const int r = mw_rank();
  mw_barrier(&start);
  if (r >= 2) {
    sleep(120);  // long private work
  } else {
    mw_acquire(&locks[r], MW_EXCLUSIVE);
    usleep(300000);
    mw_acquire(&locks[1 - r], MW_EXCLUSIVE);
  }
  mw_finalize();
  return 0;
}
