// A program whose shared data was not linked by mwcc stops before main with a message
// that says what to do, instead of crashing on its first shared store: both the
// initialized part of its shared data (section mw_shared) and the zero-initialized part
// (mw_shared_bss, where the pass moves zero-initialized MW_SHARED variables).
// RUN: %mwcc -c %s -o %t.o
// RUN: clang-19 %t.o -L%midway_lib -Wl,-rpath,%midway_lib -lmidway -o %t
// RUN: not %t 2>&1 | FileCheck %s --check-prefix=DATA
// RUN: %mwcc -DONLY_ZEROS -c %s -o %t.zeros.o
// RUN: clang-19 %t.zeros.o -L%midway_lib -Wl,-rpath,%midway_lib -lmidway -o %t.zeros
// RUN: not %t.zeros 2>&1 | FileCheck %s --check-prefix=BSS
// Linked with mwcc's layout but the sections the other way round: the runtime checks
// that the zero-initialized part follows the initialized part.
// RUN: clang-19 -no-pie %t.o -Wl,--section-start=mw_shared_bss=0x40000000 \
// RUN:   -Wl,--section-start=mw_shared=0x40100000 -L%midway_lib -Wl,-rpath,%midway_lib \
// RUN:   -lmidway -o %t.swapped
// RUN: not %t.swapped 2>&1 | FileCheck %s --check-prefix=SWAPPED
// DATA: midway: mw_init: the program's shared data (section mw_shared) is at 0x{{[0-9a-f]+}}, not at the window base 0x40000000: compile and link it with mwcc
// BSS: midway: mw_init: the program's zero-initialized shared data (section mw_shared_bss) is at 0x{{[0-9a-f]+}}, not at 0x40000000 (after the initialized shared data, from the window base): compile and link it with mwcc
// SWAPPED: midway: mw_init: the program's shared data (section mw_shared) is at 0x40100000, not at the window base 0x40000000
#include <midway.h>

MW_SHARED int data[16];
#ifndef ONLY_ZEROS
MW_SHARED int initialized = 1;
#endif

int main(int argc, char **argv) {
  mw_init(&argc, &argv);
  data[3] = argc;
  mw_finalize();
  return 0;
}
