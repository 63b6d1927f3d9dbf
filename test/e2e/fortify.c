// -D_FORTIFY_SOURCE turns fread into __fread_chk and printf into __printf_chk, which the
// pass does not know: the data fread wrote into shared memory was lost, and printf of
// shared data drew a false warning (audit 32). mwcc undefines it, and says so. A
// language named with -x is not applied to the runtime's objects that mwcc links.
// RUN: %mwcc -O2 -D_FORTIFY_SOURCE=2 %s -o %t 2>&1 | FileCheck %s --check-prefix=NOTE
// RUN: printf 'read from a file\n' > %t.in
// RUN: %mwrun -n 2 %t %t.in 2>&1 | FileCheck %s
// RUN: %mwcc -x c -O2 %s -o %t.x
// RUN: %mwrun -n 2 %t.x %t.in 2>&1 | FileCheck %s
// NOTE: mwcc: note: _FORTIFY_SOURCE is undefined (-U_FORTIFY_SOURCE): its checked C library calls (__fread_chk, __printf_chk, ...) are not ones Midway's pass knows, and what they write into shared data would not be marked
// CHECK-NOT: warning
// CHECK: rank 0 read: read from a file
#include <midway.h>
#include <stdio.h>

MW_SHARED char text[64];
MW_SHARED mw_barrier_t phase;

int main(int argc, char **argv) {
  mw_init(&argc, &argv);
  mw_barrier_bind(&phase, text, sizeof text);
  mw_barrier(&phase);
  if (mw_rank() == 1) {
    FILE *f = fopen(argv[1], "r");
    if (!f || fread(text, 1, 16, f) != 16) return 1;
    fclose(f);
  }
  mw_barrier(&phase);
  if (mw_rank() == 0) printf("rank 0 read: %s\n", text);
  mw_finalize();
  return 0;
}
