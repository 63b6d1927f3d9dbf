/* mw_sequential.h — the midway.h API as trivial single-process stubs, for the paper's
 * single-processor row: "we compiled the program to run on a uniprocessor, eliminating
 * synchronization and timestamp management overhead" (Midway 1993, section 5.2).
 *
 * A program that includes this header instead of <midway.h> when MW_SEQUENTIAL is
 * defined is compiled with plain clang (no mwcc, so no midway-instrument pass and no
 * dirty marks) and linked without libmidway:
 *
 *   clang -O2 -no-pie -DMW_SEQUENTIAL -I<dir of midway.h> mm_ec.c -o mm_ec_seq
 *
 * It takes its types and declarations from midway.h itself (so the two cannot drift
 * apart) and defines every function for a job of one rank: MW_SHARED is ordinary static
 * data, locks, bindings and barriers do nothing, mw_malloc is malloc. Phases are timed as
 * the runtime times them, and statistics are written as the runtime writes them (one
 * flat JSON object with every counter zero, the elapsed time and the phases), so a
 * driver reads this run's figures like any rank's:
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
#include <string.h>
#include <time.h>

/* Shared data is plain data: one process, nothing to place at the window base. */
#undef MW_SHARED
#define MW_SHARED

static double mw_seq_now_(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void mw_seq_fatal_(const char *call, const char *what, const char *name) {
  fprintf(stderr, "midway (sequential): %s: %s \"%s\"\n", call, what, name);
  exit(1);
}

/* ---- the job ---- */

static double mw_seq_start_;
static int mw_seq_state_; /* 0 before mw_init, 1 running, 2 after mw_finalize */

int mw_init(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  mw_seq_start_ = mw_seq_now_();
  mw_seq_state_ = 1;
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

/* ---- phases and statistics, as the runtime keeps them ---- */

#define MW_SEQ_MAX_PHASES 32
#define MW_SEQ_MAX_PHASE_NAME 63
static struct {
  char name[MW_SEQ_MAX_PHASE_NAME + 1];
  double total, since; /* since < 0: not running */
} mw_seq_phases_[MW_SEQ_MAX_PHASES];
static int mw_seq_nphases_;

static int mw_seq_find_phase_(const char *call, const char *name) {
  if (!name || !*name || strlen(name) > MW_SEQ_MAX_PHASE_NAME)
    mw_seq_fatal_(call, "bad phase name", name ? name : "(null)");
  for (const char *c = name; *c; c++)
    if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
          *c == '_' || *c == '-'))
      mw_seq_fatal_(call, "a phase name holds only letters, digits, '_' and '-':", name);
  for (int i = 0; i < mw_seq_nphases_; i++)
    if (!strcmp(mw_seq_phases_[i].name, name)) return i;
  return -1;
}

void mw_phase_begin(const char *name) {
  int i = mw_seq_find_phase_("mw_phase_begin", name);
  if (i < 0) {
    if (mw_seq_nphases_ == MW_SEQ_MAX_PHASES)
      mw_seq_fatal_("mw_phase_begin", "too many phases; cannot begin", name);
    i = mw_seq_nphases_++;
    strcpy(mw_seq_phases_[i].name, name);
    mw_seq_phases_[i].total = 0;
  } else if (mw_seq_phases_[i].since >= 0) {
    mw_seq_fatal_("mw_phase_begin", "already running:", name);
  }
  mw_seq_phases_[i].since = mw_seq_now_();
}

void mw_phase_end(const char *name) {
  const double now = mw_seq_now_();
  int i = mw_seq_find_phase_("mw_phase_end", name);
  if (i < 0) mw_seq_fatal_("mw_phase_end", "never begun:", name);
  if (mw_seq_phases_[i].since < 0) mw_seq_fatal_("mw_phase_end", "not running:", name);
  mw_seq_phases_[i].total += now - mw_seq_phases_[i].since;
  mw_seq_phases_[i].since = -1;
}

double mw_phase_seconds(const char *name) {
  int i = mw_seq_find_phase_("mw_phase_seconds", name);
  if (i < 0) mw_seq_fatal_("mw_phase_seconds", "never begun:", name);
  return mw_seq_phases_[i].total +
         (mw_seq_phases_[i].since >= 0 ? mw_seq_now_() - mw_seq_phases_[i].since : 0.0);
}

void mw_stats_get(mw_stats_t *out) {
  memset(out, 0, sizeof *out);
  out->elapsed_seconds = mw_seq_now_() - mw_seq_start_;
}

void mw_stats_reset(void) {
  const double now = mw_seq_now_();
  mw_seq_start_ = now;
  for (int i = 0; i < mw_seq_nphases_; i++) {
    mw_seq_phases_[i].total = 0;
    if (mw_seq_phases_[i].since >= 0) mw_seq_phases_[i].since = now;
  }
}

/* The runtime's file: one flat object; every message and wait counter is zero. */
static void mw_seq_write_stats_(const char *path, double elapsed) {
  static const char *const counters[] = {
      "msgs_sent", "msgs_received", "payload_bytes_sent", "payload_bytes_received",
      "protocol_bytes_sent", "protocol_bytes_received", "lock_acquires_local",
      "lock_acquires_remote", "barrier_crossings", "page_faults", "rejected_messages"};
  static const char *const waits[] = {"acquire_wait_seconds", "barrier_wait_seconds",
                                      "fault_wait_seconds"};
  FILE *f = fopen(path, "w");
  if (!f) {
    perror(path);
    exit(1);
  }
  fprintf(f, "{\n  \"elapsed_seconds\": %.9f", elapsed);
  for (size_t i = 0; i < sizeof counters / sizeof *counters; i++)
    fprintf(f, ",\n  \"%s\": 0", counters[i]);
  for (size_t i = 0; i < sizeof waits / sizeof *waits; i++)
    fprintf(f, ",\n  \"%s\": 0.000000000", waits[i]);
  for (int i = 0; i < mw_seq_nphases_; i++)
    fprintf(f, ",\n  \"phase.%s.seconds\": %.9f", mw_seq_phases_[i].name, mw_seq_phases_[i].total);
  fprintf(f, "\n}\n");
  if (fclose(f) != 0) {
    perror(path);
    exit(1);
  }
}

void mw_finalize(void) {
  const double elapsed = mw_seq_now_() - mw_seq_start_;
  if (mw_seq_state_ != 1) {
    fprintf(stderr, "midway (sequential): mw_finalize: called %s\n",
            mw_seq_state_ ? "twice" : "before mw_init");
    exit(1);
  }
  mw_seq_state_ = 2;
  for (int i = 0; i < mw_seq_nphases_; i++)
    if (mw_seq_phases_[i].since >= 0)
      mw_seq_fatal_("mw_finalize", "a phase is still running:", mw_seq_phases_[i].name);
  const char *spec = getenv("MW_STATS"), *dir = getenv("MW_JOB_DIR");
  if (!spec || !*spec) return;
  char path[4096];
  if (dir && *dir)
    snprintf(path, sizeof path, "%s/stats.0.json", dir);
  else if (!strncmp(spec, "json:", 5))
    snprintf(path, sizeof path, "%s.0.json", spec + 5);
  else
    return; /* a table, and no mwrun to print it */
  mw_seq_write_stats_(path, elapsed);
}

#endif /* MW_SEQUENTIAL_H */
