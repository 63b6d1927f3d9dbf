dnl What the pthread reference build adds after codes/pthread_macros/pthread.m4.POSIX_BARRIER,
dnl which leaves two macros of the programs undefined: the region-of-interest markers
dnl (empty, as in the suite's pthread.m4.stougie), and a CLOCK in microseconds, the
dnl same as annotations/c.m4.midway's (the file's own counts whole seconds), so that the
dnl programs' reported times compare.
divert(-1)
define(`SPLASH3_ROI_BEGIN', `')
define(`SPLASH3_ROI_END', `')
define(`CLOCK', `{ struct timeval mw_clock_tv_; gettimeofday(&mw_clock_tv_, NULL); ($1) = (unsigned long)(mw_clock_tv_.tv_usec + mw_clock_tv_.tv_sec * 1000000UL); }')
define(`INCLUDES',`
#include <pthread.h>
#include <stdlib.h>
#include <semaphore.h>
#include <assert.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/time.h>
#define PAGE_SIZE 4096
#define __MAX_THREADS__ 256
')
divert(0)
