/* mm_mpi.c — the message-passing baseline for Midway's MM-ec (examples/mm_ec.c).
 *
 * A hand-written Open MPI matrix multiply with MM-ec's partitioning: C = A × B, n×n
 * floats (512 by default). Rank 0 holds A and B. Every rank gets all of B (MPI_Bcast)
 * and its own block of rows of A (MPI_Scatterv), computes those rows of C, and rank 0
 * gathers C (MPI_Gatherv). Rank 0 computes its own block too, as MM-ec's master does.
 *
 *   mpirun -n 2 bench/mm_mpi [--n N] [--verify] [--pretouch]
 *
 * Prints, at rank 0, one parseable line:
 *   mm_mpi n=512 nprocs=2 elapsed_ms=7.2 total_ms=9.0 fill_ms=1.8 input_ms=0.4 compute_ms=6.6 output_ms=0.2
 * all measured at rank 0 with MPI_Wtime, from a barrier after which every rank has
 * started:
 *   elapsed_ms  from the first send to C complete at rank 0 (input + compute + output);
 *   total_ms    fill + elapsed: as examples/mm_ec.c measures its elapsed time, from the
 *               start through the master writing A and B to C complete at the master;
 *   fill_ms     rank 0 writing A and B (mm_ec's input function, so the same work);
 *   input_ms    MPI_Bcast of B + MPI_Scatterv of A (mm_ec's "input" phase: its acquires);
 *   compute_ms  rank 0's own rows ("compute");
 *   output_ms   MPI_Gatherv of C, which waits for the slowest rank ("output").
 *
 * The inputs are mm_ec's: multiples of 1/8 in [-1, 1], so every sum is exact in float
 * and the result is checked for equality: the first and last row of every rank's block
 * and a sample of the rest, every entry with --verify. Exits 1 on a mismatch.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(void) {
  fprintf(stderr, "usage: mm_mpi [--n N (1..4096, default 512)] [--verify] [--pretouch]\n");
  exit(2);
}

/* examples/mm_ec.c's inputs: multiples of 1/8 in [-1, 1], a hash of (i, j, seed, which). */
static float input(int i, int j, unsigned seed, unsigned which) {
  unsigned h = (unsigned)i * 2654435761u ^ ((unsigned)j + 0x9e3779b9u * (seed + which)) * 40503u;
  h ^= h >> 15;
  h *= 2246822519u;
  h ^= h >> 13;
  return (float)((int)(h % 17u) - 8) / 8.0f;
}
static float a_of(int i, int k) { return input(i, k, 1, 0); }
static float b_of(int k, int j) { return input(k, j, 1, 1); }

/* `rows` rows of C = A × B, A's and C's starting at a and c. The loop nest is mm_ec's
 * (no restrict, as there), so that both compile to the same code. */
static void multiply(float *c, const float *a, const float *b, int rows, int n) {
  for (int i = 0; i < rows; i++) {
    float *ci = c + (size_t)i * n;
    for (int j = 0; j < n; j++) ci[j] = 0.0f;
    for (int k = 0; k < n; k++) {
      const float aik = a[(size_t)i * n + k];
      const float *bk = b + (size_t)k * n;
      for (int j = 0; j < n; j++) ci[j] += aik * bk[j];
    }
  }
}

static float expected(int i, int j, int n) {
  float s = 0.0f;
  for (int k = 0; k < n; k++) s += a_of(i, k) * b_of(k, j);
  return s;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, nprocs;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
  int n = 512, verify = 0, pretouch = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--n") && i + 1 < argc) n = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--verify")) verify = 1;
    else if (!strcmp(argv[i], "--pretouch")) pretouch = 1;
    else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      if (rank == 0) usage();
      MPI_Finalize();
      return 0;
    } else usage();
  }
  if (n < 1 || n > 4096) usage();

  /* Block row partition: rank r owns rows [r*n/P, (r+1)*n/P). */
  int *counts = malloc(sizeof(int) * (size_t)nprocs), *displs = malloc(sizeof(int) * (size_t)nprocs);
  for (int r = 0; r < nprocs; r++) {
    int lo = (int)((long)r * n / nprocs), hi = (int)((long)(r + 1) * n / nprocs);
    counts[r] = (hi - lo) * n;
    displs[r] = lo * n;
  }
  const int my_rows = counts[rank] / n;
  const size_t nn = (size_t)n * n;
  float *b = malloc(nn * sizeof(float));
  float *a_mine = malloc((size_t)counts[rank] * sizeof(float) + 1);
  float *c_mine = malloc((size_t)counts[rank] * sizeof(float) + 1);
  float *a = NULL, *c = NULL;
  if (rank == 0) {
    a = malloc(nn * sizeof(float));
    c = malloc(nn * sizeof(float));
  }
  /* mm_ec's matrices are static data no rank has touched when its clock starts, so each
   * rank's first touch of a page (the master's writes, the data arriving, C) faults in
   * the timed part. Fresh malloc'ed buffers (mmap'ed, at this size) are the same here;
   * --pretouch writes them all first, to take the faults out of both timings' reach. */
  if (pretouch) {
    if (rank == 0) {
      memset(a, 0, nn * sizeof(float));
      memset(c, 0, nn * sizeof(float));
    }
    memset(b, 0, nn * sizeof(float));
    memset(a_mine, 0, (size_t)counts[rank] * sizeof(float));
    memset(c_mine, 0, (size_t)counts[rank] * sizeof(float));
  }

  MPI_Barrier(MPI_COMM_WORLD); /* every rank has started */
  const double tf = MPI_Wtime();
  if (rank == 0) /* the master writes the inputs, as mm_ec's does */
    for (int i = 0; i < n; i++)
      for (int k = 0; k < n; k++) {
        a[(size_t)i * n + k] = a_of(i, k);
        b[(size_t)i * n + k] = b_of(i, k);
      }
  const double t0 = MPI_Wtime();
  MPI_Bcast(b, (int)nn, MPI_FLOAT, 0, MPI_COMM_WORLD);
  MPI_Scatterv(a, counts, displs, MPI_FLOAT, a_mine, counts[rank], MPI_FLOAT, 0, MPI_COMM_WORLD);
  const double t1 = MPI_Wtime();
  multiply(c_mine, a_mine, b, my_rows, n);
  const double t2 = MPI_Wtime();
  MPI_Gatherv(c_mine, counts[rank], MPI_FLOAT, c, counts, displs, MPI_FLOAT, 0, MPI_COMM_WORLD);
  const double t3 = MPI_Wtime();

  int bad = 0;
  if (rank == 0) {
    if (verify) {
      for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) bad += c[(size_t)i * n + j] != expected(i, j, n);
    } else {
      for (int s = 0; s < 256; s++) { /* every rank's block is sampled */
        int i = (int)((s * 2654435761u) % (unsigned)n), j = (int)((s * 40503u + 7) % (unsigned)n);
        bad += c[(size_t)i * n + j] != expected(i, j, n);
      }
      for (int r = 0; r < nprocs; r++) /* the first and last row of each block, whole */
        if (counts[r] > 0) {
          int first = displs[r] / n, last = (displs[r] + counts[r]) / n - 1;
          for (int j = 0; j < n; j++) {
            bad += c[(size_t)first * n + j] != expected(first, j, n);
            bad += c[(size_t)last * n + j] != expected(last, j, n);
          }
        }
    }
    printf("mm_mpi n=%d nprocs=%d elapsed_ms=%.3f total_ms=%.3f fill_ms=%.3f input_ms=%.3f "
           "compute_ms=%.3f output_ms=%.3f%s\n",
           n, nprocs, (t3 - t0) * 1e3, (t3 - tf) * 1e3, (t0 - tf) * 1e3, (t1 - t0) * 1e3,
           (t2 - t1) * 1e3, (t3 - t2) * 1e3, bad ? " FAILED" : "");
    if (bad) fprintf(stderr, "mm_mpi: %d entries of C differ from A x B\n", bad);
    fflush(stdout);
  }
  MPI_Finalize();
  return bad ? 1 : 0;
}
