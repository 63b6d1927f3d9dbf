// A barrier arrival too big for one message (more than 256 runs, or more short runs
// than fit one eager message) reaches every rank, not only the manager: the manager
// passes on the runs of all of the arrival's messages. Before, ranks other than rank 0
// got only the runs of each other rank's last message (found by docs/PORTING.md's
// example, every element of an array written by another rank).
// RUN: %mwcc -O2 %s -o %t
// RUN: %mwrun -n 3 %t strided
// RUN: %mwrun -n 4 %t strided
// RUN: %mwrun -n 4 %t short-and-long
// RUN: env FI_TCP_IFACE=lo %mwrun -n 3 --provider tcp %t strided
#include <midway.h>
#include <stdio.h>
#include <string.h>

#define N 8192
MW_SHARED __attribute__((aligned(4096))) double x[N];
MW_SHARED __attribute__((aligned(4096))) char rows[64][3000];
MW_SHARED mw_barrier_t b;

int main(int argc, char **argv) {
  mw_init(&argc, &argv);
  const int me = mw_rank(), P = mw_nprocs();
  const int strided = argc > 1 && !strcmp(argv[1], "strided");
  mw_barrier_bind(&b, x, sizeof x);
  mw_barrier_bind(&b, rows, sizeof rows);
  if (strided) {
    for (int i = me; i < N; i += P) x[i] = 1 + i;  // N/P separate 8-byte runs per rank
  } else {
    // Short runs over more than one eager message, and long runs besides: updates::send
    // puts the short ones in the first messages and the long ones in the last.
    for (int i = me; i < 40 * P; i += P) x[16 * i] = 1 + 16 * i;   // 40 short runs
    for (int r = me; r < 64; r += P) memset(rows[r], 1 + r, 100);  // short, 100 bytes
    for (int r = me; r < 64; r += P)
      if (r % 3 == 0) memset(rows[r], 1 + r, sizeof rows[r]);      // long, 3000 bytes
  }
  mw_barrier(&b);
  int bad = 0;
  for (int i = 0; i < N; i++) {
    const double want = strided || (i % 16 == 0 && i / 16 < 40 * P) ? 1 + i : 0;
    if (x[i] != want && bad++ == 0)
      fprintf(stderr, "rank %d: x[%d] = %g, not %g (written by rank %d)\n", me, i, x[i], want,
              strided ? i % P : (i / 16) % P);
  }
  for (int r = 0; !strided && r < 64; r++)
    for (int j = 0; j < (int)sizeof rows[r]; j++) {
      const char want = j < 100 || r % 3 == 0 ? (char)(1 + r) : 0;
      if (rows[r][j] != want && bad++ == 0)
        fprintf(stderr, "rank %d: rows[%d][%d] = %d, not %d (written by rank %d)\n", me, r, j,
                rows[r][j], want, r % P);
    }
  if (bad) return 1;
  mw_finalize();
  return 0;
}
