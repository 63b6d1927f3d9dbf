/* Checks for the end-to-end tests: after a program stores, exactly the bytes it wrote
 * must be dirty in the dirty map, and nothing else. */
#ifndef MIDWAY_E2E_CHECK_H
#define MIDWAY_E2E_CHECK_H

#include <midway.h>
#include <stdio.h>
#include <string.h>

static int check_failures;

/* Byte i of [base, base+len) must be dirty exactly when want[i] is non-zero. */
static void check_dirty_map(const char *what, const void *base, size_t len,
                            const unsigned char *want) {
  const char *p = (const char *)base;
  for (size_t i = 0; i < len; i++) {
    int dirty = mw_dirty_count(p + i, 1) != 0;
    if (dirty != (want[i] != 0)) {
      printf("FAIL %s: byte %zu of %zu is %s, expected %s\n", what, i, len,
             dirty ? "dirty" : "clean", dirty ? "clean" : "dirty");
      check_failures++;
      return;
    }
  }
  printf("ok   %s\n", what);
}

/* Exactly [off, off+n) of [base, base+len) must be dirty. */
static void check_dirty(const char *what, const void *base, size_t len, size_t off, size_t n) {
  unsigned char want[1 << 16];
  if (len > sizeof want) {
    printf("FAIL %s: region of %zu bytes is too large to check\n", what, len);
    check_failures++;
    return;
  }
  memset(want, 0, len);
  memset(want + off, 1, n);
  check_dirty_map(what, base, len, want);
}

static int check_report(void) {
  if (check_failures) printf("%d check(s) failed\n", check_failures);
  return check_failures != 0;
}

/* Keeps the optimizer from treating a value as known (so stores stay stores). */
static inline int opaque(int x) {
  __asm__("" : "+r"(x));
  return x;
}

#endif
