/* water_ec.c — a simplified SPLASH-style molecular dynamics under entry consistency.
 *
 * K molecules (point masses of mass 1) interact pairwise through a softened
 * Lennard-Jones force and move by semi-implicit Euler steps. As in SPLASH's Water, the
 * pairs are divided among the ranks, each rank adds the forces it computed into the
 * molecules' shared force accumulators under a lock per molecule, and each rank then
 * moves its own molecules.
 *
 * Shared data and what it is bound to (the same calls on every rank at start-up):
 *
 *   force_lock[m] <- force[m], molecule m's force accumulator (its own 64-byte line)
 *   step          <- pos, every molecule's position: each rank writes only its own
 *                    molecules', and crossing `step` carries them to every rank
 *   final         <- vel: each rank reads and writes only its own molecules'; the
 *                    terminating barrier gathers them at rank 0 for the check
 *
 * One time step, on every rank:
 *   1. the forces of its pairs (i, j > i for the molecules i = rank, rank + P, ...),
 *      summed in private memory, both ways (Newton's third law);
 *   2. for each molecule it has a contribution for: take force_lock[m] exclusively,
 *      add the contribution to force[m], release;
 *   3. cross `step` (no position has changed, so it carries nothing: it only says that
 *      every contribution is in);
 *   4. for each of its own molecules: take its lock exclusively, read the total force
 *      and zero the accumulator, release; update the velocity and the position;
 *   5. cross `step`, which carries the new positions.
 *
 *   mwcc -O2 water_ec.c -o water_ec -lm && mwrun -n 4 ./water_ec [-k 216] [-t 20]
 *
 * Rank 0 compares the final positions and velocities with a sequential run. The ranks
 * add their contributions to a molecule's force in whatever order they get its lock, so
 * the sums may round differently: the check allows a relative difference of 1e-9.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <math.h>
#ifdef MW_SEQUENTIAL
#include "mw_sequential.h" /* the single-process build: plain clang, no pass, no runtime */
#else
#include <midway.h>
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAXK 1024
#define DT 0.002
#define TOLERANCE 1e-9

struct accum {
  double f[3];
} __attribute__((aligned(64))); /* one line per lock: no two locks share a line */

MW_SHARED __attribute__((aligned(64))) double pos[MAXK][3];
MW_SHARED __attribute__((aligned(64))) double vel[MAXK][3];
MW_SHARED struct accum force[MAXK];
MW_SHARED mw_lock_t force_lock[MAXK];
MW_SHARED mw_barrier_t step, final;

/* Private: this rank's contributions, and rank 0's sequential reference. */
static double contrib[MAXK][3];
static unsigned char touched[MAXK];
static double rpos[MAXK][3], rvel[MAXK][3], rforce[MAXK][3];

static void usage(FILE *f) {
  fprintf(f,
          "usage: water_ec [-k MOLECULES] [-t STEPS]\n"
          "  molecular dynamics of MOLECULES point masses (2 <= MOLECULES <= %d, default\n"
          "  216) for STEPS time steps (default 20) under entry consistency, with a lock\n"
          "  per molecule's force. Run with mwrun -n P; rank 0 verifies the final state\n"
          "  against a sequential run (relative tolerance %g).\n",
          MAXK, TOLERANCE);
}

static double hash01(unsigned i, unsigned salt) {
  uint64_t x = (uint64_t)i * 0x9e3779b97f4a7c15ULL + salt * 0xbf58476d1ce4e5b9ULL + 7;
  x ^= x >> 31;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 29;
  return (double)(x >> 11) / 9007199254740992.0; /* [0, 1) */
}

/* Molecule m starts on a cubic lattice of spacing 1.2, slightly displaced, with a small
 * random velocity. */
static void initial(int m, int k, double p[3], double v[3]) {
  int side = 1;
  while (side * side * side < k) side++;
  int c[3] = {m % side, m / side % side, m / (side * side)};
  for (int a = 0; a < 3; a++) {
    p[a] = 1.2 * c[a] + 0.1 * (hash01((unsigned)m, (unsigned)a) - 0.5);
    v[a] = 0.2 * (hash01((unsigned)m, 3u + (unsigned)a) - 0.5);
  }
}

/* The force on molecule i from molecule j (the force on j is its opposite). */
static void pair_force(const double *pi, const double *pj, double f[3]) {
  double d[3] = {pi[0] - pj[0], pi[1] - pj[1], pi[2] - pj[2]};
  double inv = 1.0 / (d[0] * d[0] + d[1] * d[1] + d[2] * d[2] + 0.25); /* softened */
  double s6 = inv * inv * inv;
  double mag = 24.0 * inv * s6 * (2.0 * s6 - 1.0);
  for (int a = 0; a < 3; a++) f[a] = mag * d[a];
}

static void move(double p[3], double v[3], const double f[3]) {
  for (int a = 0; a < 3; a++) {
    v[a] += DT * f[a];
    p[a] += DT * v[a];
  }
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int parse_int(const char *s, int *out) {
  char *e;
  long v = strtol(s, &e, 10);
  if (*s == '\0' || *e != '\0' || v < -2147483647L || v > 2147483647L) return 0;
  *out = (int)v;
  return 1;
}

/* Largest |x - y| / max(1, |y|) over n triples. */
static double max_rel_diff(double (*x)[3], double (*y)[3], int n, int *where) {
  double worst = 0;
  for (int m = 0; m < n; m++)
    for (int a = 0; a < 3; a++) {
      double diff = fabs(x[m][a] - y[m][a]) / fmax(1.0, fabs(y[m][a]));
      if (!(diff <= worst)) { /* also catches NaN */
        worst = isnan(diff) ? INFINITY : diff;
        *where = m;
      }
    }
  return worst;
}

int main(int argc, char **argv) {
  int k = 216, steps = 20;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      usage(stdout);
      return 0;
    } else if (!strcmp(argv[i], "-k") && i + 1 < argc && parse_int(argv[i + 1], &k)) {
      i++;
    } else if (!strcmp(argv[i], "-t") && i + 1 < argc && parse_int(argv[i + 1], &steps)) {
      i++;
    } else {
      fprintf(stderr, "water_ec: bad argument '%s'\n", argv[i]);
      usage(stderr);
      return 2;
    }
  }
  if (k < 2 || k > MAXK || steps < 0) {
    fprintf(stderr, "water_ec: -k or -t out of range\n");
    usage(stderr);
    return 2;
  }

  mw_init(&argc, &argv);
  const int me = mw_rank(), P = mw_nprocs();
  const double t0 = now();
#define LO(r) ((int)((long)k * (r) / P))

  for (int m = 0; m < k; m++) mw_bind(&force_lock[m], &force[m], sizeof force[m]);
  mw_barrier_bind(&step, pos, (size_t)k * sizeof pos[0]);
  mw_barrier_bind(&final, vel, (size_t)k * sizeof vel[0]);

  const int lo = LO(me), hi = LO(me + 1);
  for (int m = lo; m < hi; m++) initial(m, k, pos[m], vel[m]);
  mw_barrier(&step); /* every rank sees every starting position */

  mw_phase_begin("compute");
  for (int s = 0; s < steps; s++) {
    memset(contrib, 0, (size_t)k * sizeof contrib[0]);
    memset(touched, 0, (size_t)k);
    for (int i = me; i < k; i += P)
      for (int j = i + 1; j < k; j++) {
        double f[3];
        pair_force(pos[i], pos[j], f);
        for (int a = 0; a < 3; a++) {
          contrib[i][a] += f[a];
          contrib[j][a] -= f[a];
        }
        touched[i] = touched[j] = 1;
      }
    for (int m = 0; m < k; m++) {
      if (!touched[m]) continue;
      mw_acquire(&force_lock[m], MW_EXCLUSIVE);
      for (int a = 0; a < 3; a++) force[m].f[a] += contrib[m][a];
      mw_release(&force_lock[m]);
    }
    mw_barrier(&step); /* every contribution is in */

    for (int m = lo; m < hi; m++) {
      double f[3];
      mw_acquire(&force_lock[m], MW_EXCLUSIVE);
      for (int a = 0; a < 3; a++) {
        f[a] = force[m].f[a];
        force[m].f[a] = 0.0;
      }
      mw_release(&force_lock[m]);
      move(pos[m], vel[m], f);
    }
    mw_barrier(&step); /* carries the new positions */
  }
  mw_phase_end("compute");

  mw_phase_begin("output");
  mw_barrier_final(&final); /* every velocity reaches rank 0 */
  mw_phase_end("output");
  const double elapsed = now() - t0;

  int status = 0;
  if (me == 0) {
    for (int m = 0; m < k; m++) initial(m, k, rpos[m], rvel[m]);
    for (int s = 0; s < steps; s++) {
      memset(rforce, 0, sizeof rforce);
      for (int i = 0; i < k; i++)
        for (int j = i + 1; j < k; j++) {
          double f[3];
          pair_force(rpos[i], rpos[j], f);
          for (int a = 0; a < 3; a++) {
            rforce[i][a] += f[a];
            rforce[j][a] -= f[a];
          }
        }
      for (int m = 0; m < k; m++) move(rpos[m], rvel[m], rforce[m]);
    }
    int wp = -1, wv = -1;
    double dp = max_rel_diff(pos, rpos, k, &wp), dv = max_rel_diff(vel, rvel, k, &wv);
    if (!(dp <= TOLERANCE && dv <= TOLERANCE)) {
      int m = dp > TOLERANCE ? wp : wv;
      int owner = 0;
      while (LO(owner + 1) <= m) owner++;
      fprintf(stderr,
              "water_ec: MISMATCH with the sequential run: max relative difference %.3g in "
              "positions, %.3g in velocities (tolerance %g); worst: molecule %d (rank %d's) "
              "at (%.17g, %.17g, %.17g), expected (%.17g, %.17g, %.17g)\n",
              dp, dv, TOLERANCE, m, owner, pos[m][0], pos[m][1], pos[m][2], rpos[m][0],
              rpos[m][1], rpos[m][2]);
      status = 1;
    }
    printf("water_ec: %d molecules, %d steps, P=%d: result %s (max rel. diff %.2g), elapsed "
           "%.6f s\n",
           k, steps, P, status ? "WRONG" : "ok", fmax(dp, dv), elapsed);
  }
  mw_finalize();
  return status;
}
