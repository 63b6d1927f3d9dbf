/* polls.c — a rank busy in a loop serves its peers at the loop's polls, and a poll in a
 * signal handler serves nothing.
 *
 *   mwrun -n 2 polls
 *
 * Rank 0 takes 64 locks, so that it owns them, and both cross a barrier. Then rank 1,
 * 200 ms later, acquires each lock once (64 requests to rank 0) while rank 0 never calls the runtime
 * to wait: it computes in loops that mwcc gave polls (the default), and reads its
 * polls_served figure between two rounds. Before that, rank 0 raises a signal whose
 * handler runs the same loops, and an explicit __mw_poll(), once its poll word says
 * messages wait: the word must still say so when the handler returns (the handler's
 * polls left it alone; one outside a handler clears it). Meanwhile an interval timer
 * interrupts both ranks every 200 us between the two barriers with a handler that runs a polled loop, inside the
 * runtime as well as outside it: the job must finish with every lock served.
 * Exits 1 naming what failed.
 */
#include <midway.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#define NLOCKS 64

MW_SHARED mw_lock_t locks[NLOCKS];
MW_SHARED int counts[NLOCKS];
MW_SHARED mw_barrier_t step;

static volatile uint64_t *const poll_word = (volatile uint64_t *)MW_POLL_WORD;
static volatile double sink;

/* A loop nest: the pass polls at the outer loop's back-edge (or every 1024 iterations
 * of the inner one, if it unrolls the inner loop away). */
__attribute__((noinline)) static double work(long rounds, long width) {
  double acc = 0;
  for (long i = 0; i < rounds; i++)
    for (long j = 0; j < width; j++) acc += (double)(i ^ j) * 1e-9;
  return acc;
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int handler_failed;

static void on_usr1(int sig) {
  (void)sig;
  double until = now() + 5;
  while (*poll_word == 0 && now() < until) sink = work(100, 100);
  if (*poll_word == 0) {
    handler_failed = 1;  /* no message came at all */
    return;
  }
  sink = work(2000, 500);
  __mw_poll();
  if (*poll_word == 0) handler_failed = 2;  /* a poll in the handler served */
}

static void on_alarm(int sig) {
  (void)sig;
  sink = work(20, 64);
  __mw_poll();
}

int main(int argc, char **argv) {
  mw_init(&argc, &argv);
  const int rank = mw_rank();
  if (mw_nprocs() != 2) {
    if (rank == 0) fprintf(stderr, "polls: run with 2 ranks\n");
    mw_finalize();
    return 2;
  }
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_alarm;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGALRM, &sa, NULL);
  sa.sa_handler = on_usr1;
  sigaction(SIGUSR1, &sa, NULL);
  if (rank == 0)
    for (int i = 0; i < NLOCKS; i++) {
      mw_acquire(&locks[i], MW_EXCLUSIVE);
      counts[i]++;
      mw_release(&locks[i]);
    }
  mw_barrier(&step);

  struct itimerval every = {{0, 200}, {0, 200}}, off = {{0, 0}, {0, 0}};
  setitimer(ITIMER_REAL, &every, NULL);
  int failed = 0;
  if (rank == 0) {
    raise(SIGUSR1);
    if (handler_failed == 1) {
      fprintf(stderr, "polls: rank 0: no message set the poll word within 5 s\n");
      failed = 1;
    } else if (handler_failed == 2) {
      fprintf(stderr, "polls: rank 0: a poll inside a signal handler cleared the poll word\n");
      failed = 1;
    }
    mw_stats_t s;
    const double until = now() + 10;
    do {
      sink = work(2000, 500);
      mw_stats_get(&s);
    } while (s.polls_served == 0 && now() < until);
    if (s.polls_served == 0) {
      fprintf(stderr, "polls: rank 0: its loops' polls served no message in 10 s\n");
      failed = 1;
    }
  } else {
    /* Once rank 0 is surely in its loops (its service thread asleep by then). */
    struct timespec pause = {0, 200 * 1000 * 1000};
    while (nanosleep(&pause, &pause) != 0) {
    }
    /* One request at a time, each after rank 0's service thread has gone back to sleep:
     * 64 races between its wake-up and rank 0's next poll. */
    for (int i = 0; i < NLOCKS; i++) {
      pause.tv_nsec = 3 * 1000 * 1000;
      while (nanosleep(&pause, &pause) != 0) {
      }
      mw_acquire(&locks[i], MW_EXCLUSIVE);
      counts[i]++;
      mw_release(&locks[i]);
    }
  }
  setitimer(ITIMER_REAL, &off, NULL);
  mw_barrier(&step);
  if (rank == 1)
    for (int i = 0; i < NLOCKS; i++) {
      mw_acquire(&locks[i], MW_NONEXCLUSIVE);
      if (counts[i] != 2) {
        fprintf(stderr, "polls: rank 1: lock %d guards %d increments, not 2\n", i, counts[i]);
        failed = 1;
      }
      mw_release(&locks[i]);
    }
  mw_finalize();
  return failed;
}
