// Runtime misuse stops the program with a message naming the call, the object and the
// rank; nothing hangs.
// RUN: %mwcc -O1 %s -o %t
// RUN: not %t before-init 2>&1 | FileCheck %s --check-prefix=BEFORE
// RUN: not %t init-twice 2>&1 | FileCheck %s --check-prefix=TWICE
// RUN: not %t acquire-twice 2>&1 | FileCheck %s --check-prefix=TWICE-ACQ
// RUN: not %t release-unheld 2>&1 | FileCheck %s --check-prefix=UNHELD
// RUN: not %t private-lock 2>&1 | FileCheck %s --check-prefix=PRIVATE-LOCK
// RUN: not %t private-barrier 2>&1 | FileCheck %s --check-prefix=PRIVATE-BARRIER
// RUN: not %t bind-private 2>&1 | FileCheck %s --check-prefix=BIND-PRIVATE
// RUN: not %t bind-unheld 2>&1 | FileCheck %s --check-prefix=BIND-UNHELD
// RUN: not %t bind-too-long 2>&1 | FileCheck %s --check-prefix=BIND-LONG
// RUN: not %t bind-wraps 2>&1 | FileCheck %s --check-prefix=BIND-WRAPS
// RUN: not %t bad-mode 2>&1 | FileCheck %s --check-prefix=MODE
// RUN: not %t misaligned-lock 2>&1 | FileCheck %s --check-prefix=MISALIGNED
// RUN: not %t after-finalize 2>&1 | FileCheck %s --check-prefix=AFTER
// RUN: not %t finalize-holding 2>&1 | FileCheck %s --check-prefix=HOLDING
// Shared data this rank holds no copy of, read after mw_finalize: a crash that says so.
// RUN: not %mwrun -n 2 %t read-after-finalize 2>&1 | FileCheck %s --check-prefix=READ-AFTER
// A rank that exits 0 before mw_init: the job stops at once, saying so (not after the
// other rank's 30 s start-up timeout, blaming a slow start).
// RUN: not %mwrun -n 2 %t exit-before-init 2>&1 | FileCheck %s --check-prefix=EXIT-EARLY
// A rank slow to reach mw_init: the one waiting inside it is not said to be missing.
// RUN: not %mwrun -n 2 --timeout 3 %t sleep-before-init 2>&1 | FileCheck %s --check-prefix=SLOW-INIT
// SLOW-INIT: rank 0 (pid {{[0-9]+}}): waits in mw_init for the other ranks to reach it (not yet: rank 1)
// SLOW-INIT: rank 1 (pid {{[0-9]+}}): not answering: it has not reached mw_init
// mw_dirty_count on another rank's block, untouched here: said so, not "not shared memory".
// RUN: not %mwrun -n 2 %t dirty-remote 2>&1 | FileCheck %s --check-prefix=DIRTY-REMOTE
// A lock held at mw_finalize while another rank waits for it: stopped, not a hang.
// RUN: not %mwrun -n 2 %t finalize-holding 2>&1 | FileCheck %s --check-prefix=HOLDING
// RUN: env MW_NPROCS=4 not %t ok 2>&1 | FileCheck %s --check-prefix=NPROCS
// RUN: %t ok | FileCheck %s --check-prefix=OK
// A barrier that some ranks cross and another never does: the job stops, naming both.
// RUN: not %mwrun -n 2 %t skip-barrier 2>&1 | FileCheck %s --check-prefix=SKIP
// RUN: not %mwrun -n 3 %t skip-barrier 2>&1 | FileCheck %s --check-prefix=SKIP
// RUN: not %mwrun -n 3 %t skip-barrier-1 2>&1 | FileCheck %s --check-prefix=SKIP1
// On shm a crossing with nothing to move goes through the ranks' shared page, over tcp
// by messages: the same checks, on what arrived either way.
// RUN: env FI_TCP_IFACE=lo not %mwrun -n 3 --provider tcp %t skip-barrier 2>&1 | FileCheck %s --check-prefix=SKIP
// RUN: env FI_TCP_IFACE=lo not %mwrun -n 3 --provider tcp %t skip-barrier-1 2>&1 | FileCheck %s --check-prefix=SKIP1
// mw_barrier and mw_barrier_final on one barrier, either way round: the manager (rank 0)
// reports it, under the call it made.
// RUN: not %mwrun -n 2 %t mix-barrier 2>&1 | FileCheck %s --check-prefix=MIX
// RUN: not %mwrun -n 3 %t mix-barrier 2>&1 | FileCheck %s --check-prefix=MIX
// RUN: not %mwrun -n 3 %t mix-barrier-final 2>&1 | FileCheck %s --check-prefix=MIXF
// RUN: not %mwrun -n 2 %t mix-barrier-final 2>&1 | FileCheck %s --check-prefix=MIXF
// RUN: env FI_TCP_IFACE=lo not %mwrun -n 3 --provider tcp %t mix-barrier 2>&1 | FileCheck %s --check-prefix=MIX
// A rank that exits without mw_finalize while its service thread is busy serving a
// peer's lock requests and barrier arrivals: the job reports its exit status, not a
// crash of its runtime (static destructors ran under the service thread).
// RUN: not %mwrun -n 2 %t exit-busy 2>&1 | FileCheck %s --check-prefix=EXIT-BUSY
#include <midway.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

MW_SHARED mw_lock_t guard;
MW_SHARED mw_barrier_t phase;
MW_SHARED int data[16];
MW_SHARED __attribute__((aligned(4096))) long results[4096];
MW_SHARED mw_lock_t many[4096]; /* every other one managed by rank 1 */
MW_SHARED int *remote_block;

int main(int argc, char **argv) {
  const char *what = argc > 1 ? argv[1] : "ok";
  if (!strcmp(what, "before-init")) {
    // BEFORE: midway: mw_malloc: called before mw_init (rank not yet known)
    mw_malloc(8);
  }
  if (!strcmp(what, "sleep-before-init")) {
    const char *rank = getenv("MW_RANK");
    if (rank && !strcmp(rank, "1")) sleep(60);
  }
  if (!strcmp(what, "exit-before-init")) {
    // EXIT-EARLY: mwrun: rank 1 (pid {{[0-9]+}}) exited with status 0 without calling mw_init, which rank 0 waits for; stopping the job
    // EXIT-EARLY-NOT: timed out
    const char *rank = getenv("MW_RANK");
    if (rank && !strcmp(rank, "1")) return 0;
  }
  mw_init(&argc, &argv);
  if (!strcmp(what, "init-twice")) {
    // TWICE: midway: mw_init: called twice (each process joins the job once) (rank 0)
    mw_init(&argc, &argv);
  }
  if (!strcmp(what, "acquire-twice")) {
    // TWICE-ACQ: midway: mw_acquire: lock guard is already held by this rank (non-exclusive): release it before acquiring it again (rank 0)
    mw_acquire(&guard, MW_NONEXCLUSIVE);
    mw_acquire(&guard, MW_EXCLUSIVE);
  }
  if (!strcmp(what, "release-unheld")) {
    // UNHELD: midway: mw_release: lock guard is not held by this rank (rank 0)
    mw_acquire(&guard, MW_EXCLUSIVE);
    mw_release(&guard);
    mw_release(&guard);
  }
  if (!strcmp(what, "private-lock")) {
    // PRIVATE-LOCK: midway: mw_acquire: lock 0x{{[0-9a-f]+}} is not in shared memory: a lock must be MW_SHARED or allocated with mw_malloc, so that it is the same object on every rank (rank 0)
    mw_lock_t mine = {{0, 0}};
    mw_acquire(&mine, MW_EXCLUSIVE);
  }
  if (!strcmp(what, "private-barrier")) {
    // PRIVATE-BARRIER: midway: mw_barrier: barrier main::mine is not in shared memory
    static mw_barrier_t mine;
    mw_barrier(&mine);
  }
  if (!strcmp(what, "bind-private")) {
    // BIND-PRIVATE: midway: mw_bind: main::private_data [0x{{[0-9a-f]+}}, 0x{{[0-9a-f]+}}) is not in shared memory, so it cannot be bound to lock guard: bind MW_SHARED data or memory from mw_malloc (rank 0)
    static int private_data[4];
    mw_bind(&guard, private_data, sizeof private_data);
  }
  if (!strcmp(what, "bind-too-long")) {
    // BIND-LONG: midway: mw_bind: data [0x{{[0-9a-f]+}}, 0x{{[0-9a-f]+}}) runs {{[0-9]+}} bytes past the end of the static shared data, so it cannot be bound to lock guard: is the length right? (rank 0)
    mw_bind(&guard, data, 1 << 20);
  }
  if (!strcmp(what, "bind-wraps")) {
    // BIND-WRAPS: midway: mw_bind: binding 18446744073709551615 bytes at data (0x{{[0-9a-f]+}}) to lock guard: the range wraps around the address space (a negative length?) (rank 0)
    mw_bind(&guard, data, (size_t)-1);
  }
  if (!strcmp(what, "bind-unheld")) {
    // BIND-UNHELD: midway: mw_bind: lock guard is not held exclusively by this rank: change a lock's bindings while holding it in MW_EXCLUSIVE mode (or, the start-up pattern, on every rank before any acquires it) (rank 0)
    mw_bind(&guard, data, sizeof data);  // the start-up pattern: allowed
    mw_acquire(&guard, MW_NONEXCLUSIVE);
    mw_release(&guard);
    mw_bind(&guard, data, 4);
  }
  if (!strcmp(what, "misaligned-lock")) {
    // MISALIGNED: midway: mw_acquire: lock many[1]+4 (0x{{[0-9a-f]+}}) is not aligned to 8 bytes, as every lock is: a cast or pointer arithmetic slip? (rank 0)
    mw_acquire((mw_lock_t *)((char *)&many[1] + 4), MW_EXCLUSIVE);
  }
  if (!strcmp(what, "bad-mode")) {
    // MODE: midway: mw_acquire: lock guard: mode 7 is neither MW_EXCLUSIVE nor MW_NONEXCLUSIVE (rank 0)
    mw_acquire(&guard, (mw_mode_t)7);
  }
  if (!strcmp(what, "dirty-remote")) {
    // DIRTY-REMOTE: midway: mw_dirty_count: [0x{{[0-9a-f]+}}, +8192) is shared heap this rank holds no copy of: another rank's mw_malloc block it has not touched yet (touch it first: its dirty marks come with its pages), or no block at all (rank 1)
    if (mw_rank() == 0) remote_block = mw_malloc(8192);
    mw_barrier(&phase);
    if (mw_rank() == 1) printf("%zu\n", mw_dirty_count(remote_block, 8192));
    mw_barrier(&phase);
  }
  if (!strcmp(what, "finalize-holding")) {
    // HOLDING: midway: mw_finalize: lock guard is still held by this rank (exclusive): release every lock before mw_finalize (rank 0)
    if (mw_rank() == 0) mw_acquire(&guard, MW_EXCLUSIVE);
    mw_barrier(&phase);
    if (mw_rank() == 1) mw_acquire(&guard, MW_EXCLUSIVE);
  }
  if (!strcmp(what, "exit-busy")) {
    // EXIT-BUSY-NOT: segmentation fault
    // EXIT-BUSY: mwrun: rank 1 (pid {{[0-9]+}}) exited with status 3; stopping the job
    // EXIT-BUSY-NOT: SIG
    if (mw_rank() == 1) {
      usleep(20000);
      exit(3);
    }
    for (;;)
      for (int i = 0; i < 4096; ++i) {
        mw_acquire(&many[i], MW_EXCLUSIVE);
        mw_release(&many[i]);
      }
  }
  if (!strcmp(what, "skip-barrier")) {
    // SKIP: midway: {{mw_barrier|mw_finalize}}: barrier phase {{was reached by rank\(s\) [0-9, ]+, but this rank reached mw_finalize without crossing it|can never complete: .*rank 0 has reached mw_finalize without crossing it}}
    if (mw_rank() != 0) mw_barrier(&phase);
  }
  if (!strcmp(what, "skip-barrier-1")) {
    // SKIP1: midway: {{mw_barrier|mw_finalize}}: barrier phase can never complete: rank(s) {{[0-9, ]+}} reached it, but rank 1 has reached mw_finalize without crossing it
    if (mw_rank() != 1) mw_barrier(&phase);
  }
  if (!strcmp(what, "mix-barrier") || !strcmp(what, "mix-barrier-final")) {
    // MIX: midway: mw_barrier_final: barrier phase: rank {{[0-9]+}} crossed it with {{mw_barrier|mw_barrier_final}} while rank(s) {{[0-9, ]+}} crossed it with {{mw_barrier|mw_barrier_final}} (every rank must call the same one) (rank 0)
    // MIXF: midway: mw_barrier: barrier phase: rank {{[0-9]+}} crossed it with {{mw_barrier|mw_barrier_final}} while rank(s) {{[0-9, ]+}} crossed it with {{mw_barrier|mw_barrier_final}} (every rank must call the same one) (rank 0)
    // mix-barrier: the manager (rank 0) calls mw_barrier_final, the others mw_barrier
    // (on shm, through the shared page); mix-barrier-final: the other way round.
    const int final_here = (mw_rank() == 0) == !strcmp(what, "mix-barrier");
    if (final_here) mw_barrier_final(&phase);
    else mw_barrier(&phase);
  }
  if (!strcmp(what, "read-after-finalize")) {
    // READ-AFTER: midway: rank 1: segmentation fault at 0x{{[0-9a-f]+}}: shared memory touched after mw_finalize, on a page this rank holds no copy of (read shared results before mw_finalize)
    // READ-AFTER: mwrun: rank 1 (pid {{[0-9]+}}) was killed by signal 11 (SIGSEGV)
    const int me = mw_rank();
    if (me == 0) results[0] = 7;
    mw_barrier(&phase);
    mw_finalize();
    if (me == 1) return (int)results[0]; /* a page of rank 0's it never held */
    return 0;
  }
  mw_finalize();
  if (!strcmp(what, "after-finalize")) {
    // AFTER: midway: mw_rank: called after mw_finalize
    return mw_rank();
  }
  // NPROCS: midway: mw_init: MW_NPROCS=4 asks for a job of 4 processes, but MW_RANK and MW_JOB_DIR are not set: start the program with mwrun
  // OK: rank 0 of 1
  printf("rank 0 of 1\n");
  return 0;
}
