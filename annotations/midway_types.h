/*
 * midway_types.h — Midway's synchronization objects, and nothing else.
 *
 * midway.h includes this file; a program includes midway.h. It exists on its own for
 * code that declares a lock, a barrier, a semaphore or a condition variable before
 * midway.h can be included: a PARMACS header may declare them (LOCKDEC, CONDVARDEC, ...)
 * above its file's EXTERN_ENV, and threads get away with it because <stdlib.h> happens to
 * declare pthread's types (Splash-3's FMM does that). So c.m4.midway puts this file at the
 * top of every file it writes. It includes no system header, so that a program's own
 * `#define _GNU_SOURCE` further down still takes effect.
 *
 * Valid C11 and C++17.
 */
#ifndef MIDWAY_TYPES_H
#define MIDWAY_TYPES_H

/* ------------------------------------------------------------------------------------
 * Synchronization objects. They live in shared memory; their identity is their address
 * and a zero-initialized object is ready to use. The bytes are the runtime's.
 * (__UINT64_TYPE__ is the compiler's name for uint64_t, whose header is left out.)
 * ---------------------------------------------------------------------------------- */
typedef struct mw_lock {
  __UINT64_TYPE__ mw_private_[2];
} mw_lock_t;

typedef struct mw_barrier {
  __UINT64_TYPE__ mw_private_[2];
} mw_barrier_t;

typedef enum { MW_EXCLUSIVE, MW_NONEXCLUSIVE } mw_mode_t;

/* A counting semaphore; zero-initialized, its count is 0. */
typedef struct mw_sem {
  __UINT64_TYPE__ mw_private_[2];
} mw_sem_t;

/* A condition variable, waited on with a mw_lock_t held. */
typedef struct mw_cond {
  __UINT64_TYPE__ mw_private_[2];
} mw_cond_t;

#endif /* MIDWAY_TYPES_H */
