// Counting semaphores (mw_sem_post, mw_sem_wait) and condition variables (mw_cond_wait,
// mw_cond_signal, mw_cond_broadcast) whose waiters sleep.
//
// Each object has a manager, the rank locks::manager_of names for its address, which
// keeps its state: a semaphore's count and the ranks waiting for it, a condition's
// waiting ranks. A waiter sends its request and sleeps in transport::progress_until
// until the manager's answer comes: no rank polls the object through acquires and
// releases. Posting and signalling are releases (the poster's pending updates go out
// first), so what a rank wrote before it posted is there when the waiter wakes.
#pragma once

#include <cstdint>

#include "midway.h"

namespace mw::semaphores {

// Registers the handlers (every rank, before the transport connects).
void init();

void post(const mw_sem_t *s);
void wait(const mw_sem_t *s);

// Queues this rank at c's manager, releases l, sleeps until signalled, re-acquires l.
void cond_wait(const mw_cond_t *c, mw_lock_t *l);
void cond_signal(const mw_cond_t *c, bool all);

}  // namespace mw::semaphores
