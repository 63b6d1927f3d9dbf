/* barrier_mpi.c — the message-passing baseline for mw_barrier (bench/ec_bench barrier).
 *
 *   mpirun -n P bench/barrier_mpi [--iters N (default 10000)]
 *
 * Times N MPI_Barrier calls at rank 0, after 100 untimed ones, and prints
 *   barrier_mpi nprocs=P iters=N barrier_us=1.234
 * (microseconds per barrier). For P above the number of cores, run it as the figures
 * in DESIGN.md were: mpirun --oversubscribe --mca mpi_yield_when_idle 1.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, nprocs;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
  long iters = 10000;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--iters") && i + 1 < argc) iters = atol(argv[++i]);
    else {
      if (rank == 0) fprintf(stderr, "usage: barrier_mpi [--iters N]\n");
      MPI_Finalize();
      return 2;
    }
  }
  if (iters < 1) iters = 1;
  for (int i = 0; i < 100; i++) MPI_Barrier(MPI_COMM_WORLD);
  const double t0 = MPI_Wtime();
  for (long i = 0; i < iters; i++) MPI_Barrier(MPI_COMM_WORLD);
  const double t1 = MPI_Wtime();
  if (rank == 0) {
    printf("barrier_mpi nprocs=%d iters=%ld barrier_us=%.3f\n", nprocs, iters,
           (t1 - t0) * 1e6 / (double)iters);
    fflush(stdout);
  }
  MPI_Finalize();
  return 0;
}
