/* mw_sequential.h — the midway.h API as trivial single-process stubs, for the paper's
 * single-processor row: "we compiled the program to run on a uniprocessor, eliminating
 * synchronization and timestamp management overhead" (Midway 1993, section 5.2).
 *
 * A program that includes this header instead of <midway.h> when MW_SEQUENTIAL is
 * defined is compiled with plain clang (no mwcc, so no midway-instrument pass and no
 * dirty marks) and linked without libmidway:
 *
 *   clang -O2 -no-pie -DMW_SEQUENTIAL -I<dir of midway.h> mm_ec.c -o mm_ec_seq \
 *         <lib>/libmidway_sequential.a -lstdc++
 *
 * It takes its types and declarations from midway.h itself (so the two cannot drift
 * apart) and defines every function for a job of one rank: MW_SHARED is ordinary static
 * data, locks, bindings and barriers do nothing, mw_malloc is malloc. Phases and
 * statistics are the runtime's own: the program links lib/libmidway_sequential.a (the
 * runtime's statistics module alone, runtime/core/stats_sequential.cpp, C++: add -lstdc++),
 * so its statistics file is written by the same code as a rank's (every counter zero, the
 * elapsed time and the phases), and a driver reads this run's figures like any rank's:
 *   - with MW_JOB_DIR set (under mwrun), to MW_JOB_DIR/stats.0.json if MW_STATS is set;
 *   - otherwise, with MW_STATS=json:PATH, to PATH.0.json.
 *
 * Only one translation unit of a program may include it (it defines the functions).
 */
#ifndef MW_SEQUENTIAL_H
#define MW_SEQUENTIAL_H

#include <midway.h>
#include <stdio.h>
#include <stdlib.h>

/* Shared data is plain data: one process, nothing to place at the window base. */
#undef MW_SHARED
#define MW_SHARED

/* ---- phases and statistics: the runtime's (libmidway_sequential.a) ---- */

void mw_sequential_start(void);
void mw_sequential_finish(void);

/* ---- the job ---- */

static int mw_seq_state_; /* 0 before mw_init, 1 running, 2 after mw_finalize */

int mw_init(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  mw_seq_state_ = 1;
  mw_sequential_start();
  return 0;
}
int mw_rank(void) { return 0; }
int mw_nprocs(void) { return 1; }

/* ---- shared heap, locks, bindings, barriers: one process, nothing to do ---- */

void *mw_malloc(size_t size) {
  if (size == 0) {
    fprintf(stderr, "midway (sequential): mw_malloc: zero bytes\n");
    exit(1);
  }
  void *p = calloc(1, size); /* the runtime's heap pages are zero too */
  if (!p) {
    fprintf(stderr, "midway (sequential): mw_malloc: out of memory (%zu bytes)\n", size);
    exit(1);
  }
  return p;
}
void *mw_malloc_lines(size_t size, size_t line) {
  (void)line;
  return mw_malloc(size);
}
void mw_free(void *p) { free(p); }
void mw_acquire(mw_lock_t *l, mw_mode_t mode) {
  (void)l;
  (void)mode;
}
void mw_release(mw_lock_t *l) { (void)l; }
void mw_bind(mw_lock_t *l, const void *addr, size_t len) {
  (void)l;
  (void)addr;
  (void)len;
}
void mw_unbind(mw_lock_t *l, const void *addr, size_t len) {
  (void)l;
  (void)addr;
  (void)len;
}
void mw_barrier(mw_barrier_t *b) { (void)b; }
void mw_barrier_bind(mw_barrier_t *b, const void *addr, size_t len) {
  (void)b;
  (void)addr;
  (void)len;
}
void mw_barrier_final(mw_barrier_t *b) { (void)b; }
void mw_processor_consistent(const void *addr, size_t len, unsigned flush_interval_us) {
  (void)addr;
  (void)len;
  (void)flush_interval_us;
}
size_t mw_dirty_count(const void *addr, size_t len) {
  (void)addr;
  (void)len;
  return 0; /* nothing is compiled to mark */
}
void mw_dirty_clear(const void *addr, size_t len) {
  (void)addr;
  (void)len;
}

void mw_finalize(void) {
  if (mw_seq_state_ != 1) {
    fprintf(stderr, "midway (sequential): mw_finalize: called %s\n",
            mw_seq_state_ ? "twice" : "before mw_init");
    exit(1);
  }
  mw_seq_state_ = 2;
  mw_sequential_finish(); /* a phase still running stops here; MW_STATS writes the file */
}

#endif /* MW_SEQUENTIAL_H */
