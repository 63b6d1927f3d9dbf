// memcpy, memset and memmove (constant and run-time lengths) and libc calls that write
// through a pointer (strcpy, snprintf, fread) mark exactly the bytes they write, called
// directly or through a function pointer.
// RUN: %mwcc -O0 %s -o %t.O0 && %t.O0
// RUN: %mwcc -O2 %s -o %t.O2 && %t.O2
#include "check.h"

#include <stdlib.h>

MW_SHARED char buf[256];

int main(int argc, char **argv) {
  mw_init(&argc, &argv);
  size_t n = (size_t)opaque(37);
  char src[256];
  for (int i = 0; i < 256; i++) src[i] = (char)i;

  mw_dirty_clear(buf, sizeof buf);
  memcpy(buf + 10, src, 16);
  check_dirty("memcpy, constant length", buf, sizeof buf, 10, 16);

  mw_dirty_clear(buf, sizeof buf);
  memcpy(buf + 3, src, n);
  check_dirty("memcpy, run-time length", buf, sizeof buf, 3, n);

  mw_dirty_clear(buf, sizeof buf);
  memset(buf + 100, 0, n);
  check_dirty("memset, run-time length", buf, sizeof buf, 100, n);

  mw_dirty_clear(buf, sizeof buf);
  memmove(buf + 20, buf + 10, n);
  check_dirty("memmove within shared data", buf, sizeof buf, 20, n);

  mw_dirty_clear(buf, sizeof buf);
  memcpy(src, buf, sizeof src); /* into private memory: nothing shared is written */
  check_dirty("memcpy into private memory", buf, sizeof buf, 0, 0);

  char *heap = mw_malloc(1000);
  mw_dirty_clear(heap, 1000);
  memset(heap + 1, 7, (size_t)opaque(998));
  check_dirty("memset of mw_malloc memory", heap, 1000, 1, 998);

  mw_dirty_clear(buf, sizeof buf);
  strcpy(buf + 50, opaque(1) ? "midway" : "x");
  check_dirty("strcpy", buf, sizeof buf, 50, 7);

  mw_dirty_clear(buf, sizeof buf);
  int len = snprintf(buf + 60, 100, "rank %d of %d", mw_rank(), mw_nprocs());
  check_dirty("snprintf", buf, sizeof buf, 60, (size_t)len + 1);

  /* Through a function pointer: a dispatch table of memcpy and memmove (audit 32). */
  void *(*copy)(void *, const void *, size_t) = opaque(1) ? memmove : memcpy;
  mw_dirty_clear(buf, sizeof buf);
  copy(buf + 120, src, n);
  check_dirty("memmove through a function pointer", buf, sizeof buf, 120, n);
  void *(*fill)(void *, int, size_t) = opaque(1) ? memset : NULL;
  mw_dirty_clear(buf, sizeof buf);
  fill(buf + 130, 1, n);
  check_dirty("memset through a function pointer", buf, sizeof buf, 130, n);

  FILE *f = tmpfile();
  fwrite(src, 1, 40, f);
  rewind(f);
  mw_dirty_clear(buf, sizeof buf);
  size_t got = fread(buf + 200, 2, 30, f); /* 20 whole items of 2 bytes */
  fclose(f);
  check_dirty("fread", buf, sizeof buf, 200, got * 2);

  if (memcmp(buf + 60, "rank 0 of 1", 12) != 0 || heap[998] != 7) {
    printf("FAIL data\n");
    return 1;
  }
  mw_free(heap);
  mw_finalize();
  return check_report();
}
