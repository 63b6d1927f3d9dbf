// A program whose shared data was not linked by mwcc stops before main with a message
// that says what to do, instead of crashing on its first shared store.
// RUN: %mwcc -c %s -o %t.o
// RUN: clang-19 %t.o -L%midway_lib -Wl,-rpath,%midway_lib -lmidway -o %t
// RUN: not %t 2>&1 | FileCheck %s
// CHECK: midway: mw_init: the program's shared data (section mw_shared) is at 0x{{[0-9a-f]+}}, not at the window base 0x40000000: compile and link it with mwcc
#include <midway.h>

MW_SHARED int data[16];

int main(int argc, char **argv) {
  mw_init(&argc, &argv);
  data[3] = argc;
  mw_finalize();
  return 0;
}
