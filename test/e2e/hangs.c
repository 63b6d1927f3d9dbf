// Hangs that explain themselves (issue 14, section 3): a job in which every rank waits
// for what only another waiting rank can give stops within seconds, and mwrun says what
// each rank waits for, by the object's name and the line of the call; SIGUSR1 prints
// the same table at any time; a stopped rank shows as not answering, and stops its
// peers' wait after the liveness timeout.
// RUN: %mwcc -O0 -g %s -o %t
//
// Two ranks at different barriers (shm, and tcp: the records do not depend on the fabric).
// RUN: not %mwrun -n 2 %t two-barriers 2>&1 | FileCheck %s --check-prefix=BARRIERS
// RUN: env FI_TCP_IFACE=lo not %mwrun -n 2 --provider tcp %t two-barriers 2>&1 | FileCheck %s --check-prefix=BARRIERS
// BARRIERS: mwrun: deadlock: every rank waits for what only another waiting rank can give:
// BARRIERS-DAG: rank 0: rank 1 will not arrive
// BARRIERS-DAG: rank 1: rank 0 will not arrive
// BARRIERS: what each rank waits for:
// BARRIERS-NEXT: rank 0 (pid {{[0-9]+}}, host {{.*}}): waits for barrier first (0x{{[0-9a-f]+}}), its manager rank 0, called from main+0x{{[0-9a-f]+}} at {{.*}}hangs.c:[[@LINE+102]]
// BARRIERS-NEXT: rank 1 (pid {{[0-9]+}}, host {{.*}}): waits for barrier second (0x{{[0-9a-f]+}}), its manager rank 0, called from main+0x{{[0-9a-f]+}} at {{.*}}hangs.c:[[@LINE+103]]
// BARRIERS: stopping the job
//
// A lock cycle: rank r holds lock r and asks for the other.
// RUN: not %mwrun -n 2 %t lock-cycle 2>&1 | FileCheck %s --check-prefix=CYCLE
// CYCLE: mwrun: deadlock:
// CYCLE-DAG: rank 0: held by rank 1
// CYCLE-DAG: rank 1: held by rank 0
// CYCLE-DAG: rank 0 {{.*}}: waits for lock locks[1] ({{.*}}) (exclusive), its manager rank 1, called from main{{.*}}hangs.c:[[@LINE+100]] (0x{{[0-9a-f]+}}), holding lock locks[0] (0x{{[0-9a-f]+}})
// CYCLE-DAG: rank 1 {{.*}}: waits for lock locks[0] ({{.*}}) (exclusive), its manager rank 0, called from main{{.*}}hangs.c:[[@LINE+101]] (0x{{[0-9a-f]+}}), holding lock locks[1] (0x{{[0-9a-f]+}})
//
// A semaphore nobody posts (rank 1 waits at a barrier instead), a condition variable
// nobody signals, a creator that joins while its worker waits inside the forked
// function, and a creator at a barrier its workers, never forked, cannot reach.
// RUN: not %mwrun -n 2 --timeout 60 %t semaphore 2>&1 | FileCheck %s --check-prefix=SEM
// SEM: mwrun: deadlock:
// SEM-DAG: rank 0: no rank is left to post it
// SEM-DAG: rank 1: rank 0 will not arrive
// SEM-DAG: rank 0 {{.*}}: waits for semaphore sem (0x{{[0-9a-f]+}}), its manager rank {{[01]}}, called from main+0x{{[0-9a-f]+}} at {{.*}}hangs.c:{{[0-9]+}}
// RUN: not %mwrun -n 2 --timeout 60 %t condition 2>&1 | FileCheck %s --check-prefix=COND
// COND: mwrun: deadlock:
// COND-DAG: rank 0: no rank is left to signal it
// COND-DAG: rank 1: rank 0 will not arrive
// COND-DAG: rank 0 {{.*}}: waits for condition variable cond (0x{{[0-9a-f]+}}), its manager rank {{[01]}}, called from main+0x{{[0-9a-f]+}} at {{.*}}hangs.c:{{[0-9]+}}
// RUN: not %mwrun -n 2 --timeout 60 %t fork-join 2>&1 | FileCheck %s --check-prefix=JOIN
// JOIN: mwrun: deadlock:
// JOIN-DAG: rank 0: rank 1 will not end the forked function
// JOIN-DAG: rank 1: no rank is left to post it
// JOIN-DAG: rank 0 {{.*}}: waits for mw_join: the other ranks' ends of the fork, called from main+0x{{[0-9a-f]+}} at {{.*}}hangs.c:{{[0-9]+}}
// JOIN-DAG: rank 1 {{.*}}: waits for semaphore sem (0x{{[0-9a-f]+}}), its manager rank {{[01]}}, called from worker+0x{{[0-9a-f]+}} at {{.*}}hangs.c:{{[0-9]+}}
// RUN: not %mwrun -n 2 --timeout 60 %t fork-barrier 2>&1 | FileCheck %s --check-prefix=FORK
// FORK: mwrun: deadlock:
// FORK-DAG: rank 0: rank 1 will not arrive
// FORK-DAG: rank 1: rank 0 will not fork
// FORK-DAG: rank 1 {{.*}}: waits for the next mw_fork, its creator rank 0, called from main+0x{{[0-9a-f]+}} at {{.*}}hangs.c:{{[0-9]+}}
//
// A program that waits long but makes progress is not a deadlock: rank 0 waits 2 s at
// a semaphore, then 2 s at the barrier, while rank 1 computes, posts, computes.
// RUN: %mwrun -n 2 %t slow 2>&1 | FileCheck %s --check-prefix=SLOW
// SLOW-NOT: deadlock
// SLOW: done
//
// SIGUSR1 to mwrun prints the table and the job goes on; a rank stopped by SIGSTOP is
// "not answering", and after --liveness seconds its peer stops the job naming it.
// The signal goes once rank 1 has said it stops (up to 20 s: a loaded machine may take
// seconds to start the job), and half a second more for rank 0 to reach its barrier.
// RUN: bash -c '%mwrun -n 2 --liveness 4 %t stop & for i in $(seq 200); do grep -q "rank 1 stops" %t.stop && break; sleep 0.1; done; sleep 0.5; kill -USR1 $!; wait $!; echo exit $?' > %t.stop 2>&1
// RUN: FileCheck %s --check-prefix=STOP < %t.stop
// STOP: mwrun: what each rank waits for:
// STOP-NEXT: rank 0 {{.*}}: waits for barrier first {{.*}}, for {{[0-9.]+}} s
// STOP-NEXT: rank 1 {{.*}}: not answering: its process is stopped (SIGSTOP or a debugger)
// STOP: midway: liveness: rank 1 (host {{.*}}) has not answered for {{[0-9.]+}} s (MW_LIVENESS_TIMEOUT is 4 s): its host or the link to it is lost, or its process is stopped; it last said it was waiting for: nothing: running its program, outside Midway{{.*}} This rank waits for: barrier first (0x{{[0-9a-f]+}}), its manager rank 0, called from main+0x{{[0-9a-f]+}} at {{.*}}hangs.c:{{[0-9]+}}
// STOP: exit 1
//
// A rank spinning outside Midway is "not answering" too, while its peer waits.
// RUN: bash -c '%mwrun -n 2 %t spin & for i in $(seq 200); do grep -q "rank 1 spins" %t.spin && break; sleep 0.1; done; sleep 0.5; kill -USR1 $!; wait $!; echo exit $?' > %t.spin 2>&1
// RUN: FileCheck %s --check-prefix=SPIN < %t.spin
// SPIN: mwrun: what each rank waits for:
// SPIN-NEXT: rank 0 {{.*}}: waits for barrier first
// SPIN-NEXT: rank 1 {{.*}}: running outside Midway (computing or spinning) for {{[0-9.]+}} s
// SPIN: exit 0
// One asleep in a system call of its own is told apart by its process's state.
// RUN: bash -c '%mwrun -n 2 %t sleep & for i in $(seq 200); do grep -q "rank 1 sleeps" %t.sleep && break; sleep 0.1; done; sleep 0.5; kill -USR1 $!; wait $!; echo exit $?' > %t.sleep 2>&1
// RUN: FileCheck %s --check-prefix=SLEEP < %t.sleep
// SLEEP: mwrun: what each rank waits for:
// SLEEP-NEXT: rank 0 {{.*}}: waits for barrier first
// SLEEP-NEXT: rank 1 {{.*}}: running outside Midway (blocked in a system call) for {{[0-9.]+}} s
// SLEEP: exit 0
#include <midway.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <time.h>

MW_SHARED mw_barrier_t first, second;
MW_SHARED mw_lock_t locks[2];
MW_SHARED mw_sem_t sem;
MW_SHARED mw_cond_t cond;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void compute(double seconds) {
  volatile unsigned long spins = 0;
  for (double t0 = now(); now() - t0 < seconds;) spins++;
}

/* The forked function of fork-join: the worker waits for a post that never comes. */
static void worker(void) { mw_sem_wait(&sem); }

int main(int argc, char **argv) {
  mw_init(&argc, &argv);
  const int me = mw_rank();
  const char *mode = argc > 1 ? argv[1] : "";
  if (strncmp(mode, "fork-", 5) == 0) mw_fork_serve(); /* a worker stays inside */
  if (strcmp(mode, "two-barriers") == 0) {
    if (me == 0)
      mw_barrier(&first);
    else
      mw_barrier(&second);
  } else if (strcmp(mode, "lock-cycle") == 0) {
    mw_acquire(&locks[me], MW_EXCLUSIVE);
    mw_barrier(&first);
    if (me == 0)
      mw_acquire(&locks[1], MW_EXCLUSIVE);
    else
      mw_acquire(&locks[0], MW_EXCLUSIVE);
  } else if (strcmp(mode, "semaphore") == 0) {
    if (me == 0)
      mw_sem_wait(&sem);
    else
      mw_barrier(&first);
  } else if (strcmp(mode, "condition") == 0) {
    if (me == 0) {
      mw_acquire(&locks[0], MW_EXCLUSIVE);
      mw_cond_wait(&cond, &locks[0]);
    } else {
      mw_barrier(&first);
    }
  } else if (strcmp(mode, "fork-join") == 0) {
    mw_fork(worker);
    mw_join();
  } else if (strcmp(mode, "fork-barrier") == 0) {
    mw_barrier(&first);
  } else if (strcmp(mode, "slow") == 0) {
    if (me == 1) {
      compute(2);
      mw_sem_post(&sem);
      compute(2);
    } else {
      mw_sem_wait(&sem);
    }
    mw_barrier(&first);
  } else if (strcmp(mode, "spin") == 0) {
    if (me == 1) {
      fprintf(stderr, "hangs: rank 1 spins for 4 s\n");
      compute(4);
    }
    mw_barrier(&first);
  } else if (strcmp(mode, "sleep") == 0) {
    if (me == 1) {
      fprintf(stderr, "hangs: rank 1 sleeps for 4 s\n");
      sleep(4);
    }
    mw_barrier(&first);
  } else if (strcmp(mode, "stop") == 0) {
    if (me == 1) {
      fprintf(stderr, "hangs: rank 1 stops itself\n");
      raise(SIGSTOP);
    }
    mw_barrier(&first);
  }
  if (me == 0) printf("done\n");
  mw_finalize();
  return 0;
}
