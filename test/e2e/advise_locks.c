// The binding advisor (mwrun --advise) on a release-consistent program that uses locks:
// data always accessed under one lock gets an mw_bind naming the lock and the variable
// (an array's elements by index); data written under different locks gets "no
// consistent lock" with the two access sites; data one rank writes before a barrier
// and the others read after it gets an mw_barrier_bind; data only read needs nothing.
// RUN: %mwcc -fmidway-check -O0 %s -o %t
// The program races on `racy` on purpose; whether the check build also catches the race
// (and then exits with status 66) depends on the order the updates meet at the home, as
// in ~1 run in 10 at two ranks. The advice is printed either way.
// RUN: bash -c '%mwrun -n 3 --model rc --advise=%t.json %t > %t.three 2>&1; s=$?; test $s -eq 0 -o $s -eq 66'
// RUN: FileCheck %s < %t.three
// RUN: FileCheck %s --input-file %t.json --check-prefix=JSON
// The same under the default model (unbound data is release consistent there too):
// RUN: bash -c '%mwrun -n 2 --advise %t > %t.two 2>&1; s=$?; test $s -eq 0 -o $s -eq 66'
// RUN: FileCheck %s --check-prefix=TWO < %t.two
// A program that is not a check build cannot be advised:
// RUN: %mwcc -O1 %s -o %t.plain
// RUN: not %mwrun -n 2 --advise %t.plain 2>&1 | FileCheck %s --check-prefix=PLAIN
// RUN: not %mwrun -n 2 --advise= %t 2>&1 | FileCheck %s --check-prefix=EMPTY
//
// CHECK: mwrun: binding advice (--advise) from 3 ranks, 2 barrier crossings:
// CHECK-NEXT: bind:
// CHECK-DAG: mw_bind(&total_lock, &total, sizeof total);  // held at every access
// CHECK-DAG: mw_bind(&slot_lock[1], &slots[16], 16 * sizeof slots[0]);  // held at every access
// CHECK-DAG: mw_bind(&slot_lock[2], &slots[32], 16 * sizeof slots[0]);  // held at every access
// CHECK-DAG: mw_barrier_bind(&ready, &table[0], 64 * sizeof table[0]);  // stored by rank 0, loaded by ranks 1, 2 after it
// CHECK-DAG: mw_barrier_bind(&ready, &block, sizeof block);  // stored by rank 0, loaded by ranks 1, 2 after it
// CHECK-DAG: mw_bind(&block_lock, (char *)P, 64);  // P = mw_malloc(64) at main+0x{{[0-9a-f]+}}; held at every access
// CHECK: no consistent lock:
// CHECK-NEXT: &racy, sizeof racy:
// CHECK-NEXT: no lock is held at every access: holding a_lock at {{.*}}advise_locks.c:[[#@LINE+66]]:{{.*}} (rank {{[0-9]}}), b_lock at {{.*}}advise_locks.c:[[#@LINE+70]]:{{.*}} (rank {{[0-9]}})
// CHECK-NEXT: no barrier: ranks {{[0-9]}} and {{[0-9]}} both store to it between barrier crossings 1 and 2, at {{.*}}advise_locks.c:{{[0-9]+}}
// CHECK-NEXT: &count, sizeof count:
// CHECK-NEXT: no lock is held at every access: holding count_lock at {{.*}}advise_locks.c:[[#@LINE+74]]:{{.*}} (rank 0), then no lock at {{.*}}advise_locks.c:[[#@LINE+77]]:{{.*}} (rank 0)
// CHECK-NEXT: no barrier: ranks
// CHECK: no binding needed:
// CHECK-DAG: &slots[0], 16 * sizeof slots[0]  // used by rank 0 alone
// CHECK-DAG: &constants[0], 4 * sizeof constants[0]  // only loaded, never stored
// JSON: "advice": "mw_bind",
// JSON-NEXT: "variable": "total",
// JSON: "lock": "total_lock",
// JSON-NEXT: "call": "mw_bind(&total_lock, &total, sizeof total);",
// JSON: "advice": "no consistent lock",
// JSON-NEXT: "variable": "racy",
// TWO: mw_bind(&total_lock, &total, sizeof total);
// EMPTY: mwrun: --advise=FILE needs a file name
// PLAIN: mwrun --advise records the accesses of a check build, and this program is not one: compile it with mwcc -fmidway-check
#include <midway.h>
#include <stdio.h>

MW_SHARED __attribute__((aligned(64))) long total;
MW_SHARED mw_lock_t total_lock;
MW_SHARED __attribute__((aligned(64))) int slots[3 * 16];  // 16 ints (a line) per rank
MW_SHARED mw_lock_t slot_lock[3];
MW_SHARED __attribute__((aligned(64))) long racy;
MW_SHARED mw_lock_t a_lock, b_lock;
MW_SHARED __attribute__((aligned(64))) int count;
MW_SHARED mw_lock_t count_lock;
MW_SHARED __attribute__((aligned(64))) double table[64];
MW_SHARED mw_barrier_t ready;
MW_SHARED __attribute__((aligned(64))) int constants[4] = {1, 2, 3, 4};
MW_SHARED __attribute__((aligned(64))) int *block;  // rank 0's mw_malloc(64)
MW_SHARED mw_lock_t block_lock;

int main(int argc, char **argv) {
  mw_init(&argc, &argv);
  const int me = mw_rank(), P = mw_nprocs();
  if (me == 0) {
    for (int i = 0; i < 64; i++) table[i] = i;
    block = mw_malloc(64);
  }
  mw_barrier(&ready);
  mw_acquire(&block_lock, MW_EXCLUSIVE);
  block[me] = me;
  mw_release(&block_lock);
  double sum = 0;
  for (int i = 0; i < 64; i++) sum += table[i] + constants[i % 4];

  for (int k = 0; k < 10; k++) {
    mw_acquire(&total_lock, MW_EXCLUSIVE);
    total += k;
    mw_release(&total_lock);
  }
  // Rank r's slots under slot_lock[r], and read by rank 0 under the same lock.
  mw_acquire(&slot_lock[me], MW_EXCLUSIVE);
  for (int i = 0; i < 16; i++) slots[me * 16 + i] = me + i;
  mw_release(&slot_lock[me]);
  if (me == 0)
    for (int r = 1; r < P; r++) {
      mw_acquire(&slot_lock[r], MW_NONEXCLUSIVE);
      sum += slots[r * 16];
      mw_release(&slot_lock[r]);
    }
  // Rank 0 writes racy under a_lock, the others under b_lock: no lock orders them.
  if (me == 0) {
    mw_acquire(&a_lock, MW_EXCLUSIVE);
    racy += 1; // RACY-A
    mw_release(&a_lock);
  } else {
    mw_acquire(&b_lock, MW_EXCLUSIVE);
    racy += 2; // RACY-B
    mw_release(&b_lock);
  }
  // count is incremented under count_lock, but rank 0 reads it at the end without it
  // (correct under release consistency: the barrier orders it; not under entry
  // consistency, where only count_lock would bring it up to date).
  mw_acquire(&count_lock, MW_EXCLUSIVE);
  count++; // COUNT-LOCKED
  mw_release(&count_lock);
  mw_barrier(&ready);
  if (me == 0) printf("sum %g count %d\n", sum, count); // COUNT-UNLOCKED
  mw_finalize();
  return 0;
}
