// Clang shows the pass's warnings like its own: "warning: file:line:col: midway:
// ..." with -g, "midway: in function ..." without; -Werror makes them errors and
// -Wno-backend-plugin silences them.
// RUN: %clang_mw -O0 -g -S -o /dev/null %s 2>&1 | FileCheck %s --check-prefix=LOC --implicit-check-not=warning:
// RUN: %clang_mw -O2 -g -S -o /dev/null %s 2>&1 | FileCheck %s --check-prefix=LOC --implicit-check-not=warning:
// RUN: %clang_mw -O2 -S -o /dev/null %s 2>&1 | FileCheck %s --check-prefix=NOLOC --implicit-check-not=warning:
// RUN: not %clang_mw -O2 -Werror -S -o /dev/null %s 2>&1 | FileCheck %s --check-prefix=WERROR
// RUN: %clang_mw -O2 -Wno-backend-plugin -S -o /dev/null %s 2>&1 | count 0

#include <math.h>
#include <midway.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

MW_SHARED int exponents[16];
MW_SHARED char words[256];

// LOC: warning: {{.*}}c-warnings.c:[[@LINE+2]]:43: midway: call to 'frexp' may write shared memory through argument 2, which Midway cannot mark dirty; pass it private memory and copy the result [-Wbackend-plugin]
// NOLOC: warning: midway: in function 'mantissa': call to 'frexp' may write shared memory through argument 2, which Midway cannot mark dirty
double mantissa(double x, int i) { return frexp(x, &exponents[i & 15]); }

// A private out-parameter is fine.
double mantissa_local(double x, int *out) {
  int e;
  double m = frexp(x, &e);
  *out = e;
  return m;
}

// LOC: warning: {{.*}}c-warnings.c:[[@LINE+2]]:33: midway: call to 'strtok' may write shared memory through argument 1
// NOLOC: warning: midway: in function 'first_word': call to 'strtok' may write shared memory through argument 1
char *first_word(void) { return strtok(words, " "); }

// LOC: warning: {{.*}}c-warnings.c:[[@LINE+2]]:33: midway: inline asm may write shared memory through operand %0, which Midway cannot mark dirty; keep its stores to private memory, or call mw_written on what it writes
// NOLOC: warning: midway: in function 'asm_store': inline asm may write shared memory through operand %0
void asm_store(int *p, int v) { __asm__ volatile("movl %1, %0" : "=m"(*p) : "r"(v)); }

// An asm store the program marks itself, with mw_written after it: nothing to warn of,
// on the heap (p) and in a shared global alike.
void asm_store_written(int *p, int v, int i) {
  __asm__ volatile("movl %1, %0" : "=m"(*p) : "r"(v));
  mw_written(p, sizeof *p);
  __asm__ volatile("movl %1, %0" : "=m"(exponents[i & 15]) : "r"(v));
  if (v > 0) mw_written(exponents, sizeof exponents);
}

// scanf with a format the pass cannot read is named as the source calls it, not by
// glibc's __isoc99_sscanf.
// LOC: warning: {{.*}}c-warnings.c:[[@LINE+2]]:{{[0-9]+}}: midway: call to 'sscanf' may write shared memory through argument 3
// NOLOC: warning: midway: in function 'parse_any': call to 'sscanf' may write shared memory through argument 3
int parse_any(const char *s, const char *fmt) { return sscanf(s, fmt, &exponents[0]); }

// A compiler barrier stores nothing; printing and freeing write no shared data.
void quiet(char *s, void *p) {
  __asm__ volatile("" ::: "memory");
  printf("%s\n", s);
  fputs(s, stderr);
  free(p);
}

// WERROR: error: midway: in function 'mantissa': call to 'frexp' {{.*}} [-Werror,-Wbackend-plugin]
