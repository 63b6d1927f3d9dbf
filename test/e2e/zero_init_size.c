// Zero-initialized MW_SHARED data takes no room in the executable file: the pass puts
// it in the NOBITS section mw_shared_bss, which mwcc links right after the initialized
// shared data. A program with a 64 MiB shared array is small, and the array works
// across ranks (its last page included); the shared heap starts above it.
// RUN: %mwcc -O2 %s -o %t
// RUN: %mwrun -n 2 %t | FileCheck %s
// Without the pass's placement (the section as MW_SHARED wrote it), the file holds
// the zeros: the same program is over 64 MiB.
// RUN: %mwcc -O2 -mllvm -midway-instrument=false %s -o %t.off
// RUN: %t.off size-only | FileCheck %s --check-prefix=OFF
// RUN: rm %t.off
// CHECK: executable: small
// CHECK: rank 1 sees 11 22 33 44
// OFF: executable: 64 MiB or more
#include <midway.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#define N (64u << 20)
MW_SHARED char big[N];                  /* 64 MiB of zeros */
MW_SHARED int initialized[4] = {11, 0, 0, 0};
/* Aligned past a page: the zero-initialized part then starts 64 KiB-aligned, not right
   at the end of the initialized part (the runtime's start-up check allows exactly that). */
MW_SHARED char aligned_zeros[16] __attribute__((aligned(65536)));
MW_SHARED mw_barrier_t step;

int main(int argc, char **argv) {
  struct stat st;
  if (stat("/proc/self/exe", &st) != 0) return 1;
  const char *size = st.st_size < (1 << 20)   ? "small"
                     : st.st_size >= (off_t)N ? "64 MiB or more"
                                              : "between";
  if (argc > 1 && !strcmp(argv[1], "size-only")) {
    printf("executable: %s\n", size);
    return 0;
  }
  mw_init(&argc, &argv);
  if (mw_rank() == 1) printf("executable: %s\n", size);
  char *heap = mw_malloc(64);
  if ((char *)heap < big + N || (char *)initialized >= big ||
      (uintptr_t)aligned_zeros % 65536 != 0 || !mw_in_window(aligned_zeros)) {
    printf("FAIL: layout: initialized %p, big %p, heap %p\n", (void *)initialized,
           (void *)big, (void *)heap);
    return 1;
  }
  if (mw_rank() == 1 && big[0] + big[N / 2] + big[N - 1] != 0) {
    printf("FAIL: not zero\n");
    return 1;
  }
  mw_barrier(&step);
  if (mw_rank() == 0) {
    big[0] = 22;
    big[N / 2] = 33;
    big[N - 1] = 44;
  }
  mw_barrier(&step);
  if (mw_rank() == 1)
    printf("rank 1 sees %d %d %d %d\n", initialized[0], big[0], big[N / 2], big[N - 1]);
  mw_finalize();
  return 0;
}
