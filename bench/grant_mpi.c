/* grant_mpi.c — a lock grant's data movement done by hand with MPI: the baseline that
 * moves what bench/ec_bench grant moves, the same way.
 *
 *   mpirun -n 2 bench/grant_mpi SIZE [N (default 20)]
 *
 * Repetition k: rank k % 2 writes every word of a SIZE-byte buffer (the loop ec_bench's
 * writer runs), both ranks cross a barrier, and the writer sends the buffer to the other
 * rank, which times from the barrier to the receive's completion, then checks every
 * word. So the data travels freshly written, from the writer's cache, into memory the
 * receiver last wrote itself: unlike fi_pingpong's, whose two buffers are never written
 * and stay cached on both sides. Prints the medians over N repetitions at rank 0:
 *   grant_mpi size=1048576 reps=20 gbs=12.3 us=85.2
 * (GB/s = 10^9 bytes per second, as fi_pingpong's MB/sec.)
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, nprocs;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
  if (argc < 2 || nprocs != 2) {
    if (rank == 0) fprintf(stderr, "usage: mpirun -n 2 grant_mpi SIZE [N]\n");
    MPI_Finalize();
    return 2;
  }
  const size_t size = strtoull(argv[1], NULL, 0);
  const long n = argc > 2 ? atol(argv[2]) : 20, warm = 2;
  if (size < 8 || size % 8 || n < 1 || size / 8 > (size_t)1 << 30) {
    if (rank == 0) fprintf(stderr, "grant_mpi: SIZE must be a multiple of 8 (up to 8 GiB), N >= 1\n");
    MPI_Finalize();
    return 2;
  }
  const size_t words = size / 8;
  uint64_t *data = malloc(size);
  memset(data, 0, size);
  double *t = calloc((size_t)(n + warm), sizeof *t);
  long mine = 0, bad = 0;
  for (long k = 0; k < n + warm; k++) {
    const int writer = (int)(k % 2);
    const uint64_t stamp = (uint64_t)(k + 1) << 40;
    if (rank == writer)
      for (size_t i = 0; i < words; i++) data[i] = stamp + i;
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == writer) {
      MPI_Send(data, (int)words, MPI_UINT64_T, 1 - writer, 0, MPI_COMM_WORLD);
    } else {
      double a = MPI_Wtime();
      MPI_Recv(data, (int)words, MPI_UINT64_T, writer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      double b = MPI_Wtime();
      for (size_t i = 0; i < words; i++) bad += data[i] != stamp + i;
      if (k >= warm) t[mine++] = b - a;
    }
    MPI_Barrier(MPI_COMM_WORLD);
  }
  /* Both directions' times, at rank 0. */
  double *all = rank == 0 ? calloc((size_t)(2 * n), sizeof *all) : NULL;
  int counts[2] = {0, 0}, displs[2] = {0, 0};
  int m = (int)mine;
  MPI_Gather(&m, 1, MPI_INT, counts, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (rank == 0) displs[1] = counts[0];
  MPI_Gatherv(t, m, MPI_DOUBLE, all, counts, displs, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  long bad_all = 0;
  MPI_Reduce(&bad, &bad_all, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    const int total = counts[0] + counts[1];
    qsort(all, (size_t)total, sizeof *all, cmp_double);
    const double med = total % 2 ? all[total / 2] : 0.5 * (all[total / 2 - 1] + all[total / 2]);
    printf("grant_mpi size=%zu reps=%ld gbs=%.4f us=%.2f%s\n", size, n, (double)size / med * 1e-9,
           med * 1e6, bad_all ? " FAILED" : "");
    if (bad_all) fprintf(stderr, "grant_mpi: %ld words arrived wrong\n", bad_all);
  }
  MPI_Finalize();
  return bad_all ? 1 : 0;
}
