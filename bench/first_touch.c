/* first_touch.c — what a page costs the first time it is used, on this machine: the
 * figures behind mw_bind's populating of bound pages (docs/PERFORMANCE.md, "No stalls").
 *
 *   first_touch [MIB]      (default 8 MiB for the touches, 512 KiB for the reads)
 *
 * Prints, in µs per 4 KiB page, or ms and GB/s for a 512 KiB process_vm_readv (the copy
 * an RMA read is on libfabric's shm provider):
 *   fault        a write to each page of fresh anonymous memory (a page fault each)
 *   populate     MADV_POPULATE_WRITE of the range, then a write to each page
 *   warm         a write to each page again
 *   read into untouched / populated / touched pages, and the same read repeated (warm),
 *   from a child process's populated memory, as a grant's data is read.
 * Not a Midway program: built with the C compiler alone. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static char *fresh(size_t len) {
  char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    perror("first_touch: mmap");
    exit(1);
  }
  return p;
}

static double touch(char *p, size_t len) {
  const double t0 = now();
  for (size_t i = 0; i < len; i += 4096) p[i] = 1;
  return now() - t0;
}

int main(int argc, char **argv) {
  const size_t mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 8;
  if (mib < 1 || mib > 4096) {
    fprintf(stderr, "usage: first_touch [MIB]  (1 to 4096; default 8)\n");
    return 2;
  }
  const size_t len = mib << 20, pages = len / 4096;
  char *a = fresh(len);
  printf("fault_us_per_page=%.2f\n", touch(a, len) * 1e6 / (double)pages);
  printf("warm_us_per_page=%.3f\n", touch(a, len) * 1e6 / (double)pages);
  char *b = fresh(len);
  double t0 = now();
  if (madvise(b, len, MADV_POPULATE_WRITE) != 0) {
    perror("first_touch: madvise(MADV_POPULATE_WRITE) (Linux 5.14)");
    return 1;
  }
  const double pop = now() - t0;
  printf("populate_us_per_page=%.2f then_touch_us_per_page=%.2f\n", pop * 1e6 / (double)pages,
         touch(b, len) * 1e6 / (double)pages);

  const size_t rlen = 512 << 10;
  char *src = fresh(rlen);
  memset(src, 1, rlen);
  const pid_t child = fork();
  if (child == 0) {
    pause();
    _exit(0);
  }
  static const char *const kinds[] = {"untouched", "populated", "touched"};
  for (int k = 0; k < 3; k++) {
    char *dst = fresh(rlen);
    if (k >= 1) madvise(dst, rlen, MADV_POPULATE_WRITE);
    if (k == 2) touch(dst, rlen);
    for (int rep = 0; rep < 2; rep++) {
      struct iovec l = {dst, rlen}, r = {src, rlen};
      t0 = now();
      const ssize_t n = process_vm_readv(child, &l, 1, &r, 1, 0);
      const double t = now() - t0;
      if (n != (ssize_t)rlen) {
        perror("first_touch: process_vm_readv");
        kill(child, SIGKILL);
        return 1;
      }
      printf("read_512KiB_into_%s%s_ms=%.3f gbps=%.2f\n", kinds[k], rep ? "_again" : "", t * 1e3,
             (double)rlen / t / 1e9);
    }
  }
  kill(child, SIGKILL);
  waitpid(child, NULL, 0);
  return 0;
}
