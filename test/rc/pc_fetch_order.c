/* pc_fetch_order.c — processor consistency across pages when a page is fetched from
 * the rank that wrote it: the page a home serves holds every write it made there, so
 * the writes it issued before them, on other pages, must reach the requester first.
 *
 *   mwrun -n 2 pc_fetch_order
 *
 * Layout at two ranks: data (two pages: the first homed at rank 0, the second at rank
 * 1), flag (a page homed at rank 0), ack (a page homed at rank 1). Rank 0 writes data
 * (fetching its second page from rank 1), then flag = 1, then waits for ack. Rank 1
 * waits 20 ms, then polls flag: its first load fetches flag's page from rank 0, with
 * flag = 1 in it; it must then read all of data. The flush interval is 200 ms, so only
 * the fetch can bring anything in time. (It read zeros in every run: the home served
 * the flag's page before its flusher had pushed data's second page.)
 * Prints "rc-pc-fetch-order: FAIL ..." and exits 1 otherwise.
 */
#include "rc_test.h"

#include <sched.h>

#define N 2048
#define US 200000

MW_SHARED _Alignas(4096) int data[N];
MW_SHARED _Alignas(4096) int flag;
MW_SHARED _Alignas(4096) int ack;
MW_SHARED mw_barrier_t bar;

int main(int argc, char **argv) {
  rc_start("rc-pc-fetch-order", &argc, &argv);
  if (rc_nprocs != 2) rc_fail("run it with 2 ranks (the layout above), not %d", rc_nprocs);
  RC_CHECK(rc_home(data) == 0 && rc_home(&data[N - 1]) == 1 && rc_home(&flag) == 0 && rc_home(&ack) == 1,
           "the layout is not the one this test is about (homes %d %d %d %d)", rc_home(data),
           rc_home(&data[N - 1]), rc_home(&flag), rc_home(&ack));
  mw_processor_consistent(data, sizeof data, US);
  mw_processor_consistent(&flag, sizeof flag, US);
  mw_processor_consistent(&ack, sizeof ack, US);
  mw_barrier(&bar);
  if (rc_rank == 0) {
    for (int i = 0; i < N; i++) data[i] = 1 + i;
    __atomic_store_n(&flag, 1, __ATOMIC_RELEASE);
    while (__atomic_load_n(&ack, __ATOMIC_ACQUIRE) != 1) sched_yield();
  } else {
    usleep(20000);
    while (__atomic_load_n(&flag, __ATOMIC_ACQUIRE) != 1) sched_yield();
    for (int i = 0; i < N; i++)
      if (data[i] != 1 + i)
        rc_fail("saw flag = 1, then data[%d] = %d, not %d: rank 0 wrote data before the flag", i,
                data[i], 1 + i);
    __atomic_store_n(&ack, 1, __ATOMIC_RELEASE);
  }
  mw_barrier(&bar);
  rc_ok("pc-fetch-order: data written before the flag arrived before it");
  mw_finalize();
  return 0;
}
