// The plain-clang recipe (README): what mwcc does, by hand. Compiling takes the plugin
// twice: -fpass-plugin runs the pass, and -fplugin loads the same library before clang
// parses -mllvm, so that the pass's knobs are known (clang 19 loads pass plugins only
// when it builds the pipeline, after parsing -mllvm). Linking takes mwcc's link flags:
// -no-pie, the layout of shared data (midway.ld), the start-up object and the runtime.
// RUN: clang-19 -O2 -fpass-plugin=%midway_lib/MidwayInstrument.so -fplugin=%midway_lib/MidwayInstrument.so \
// RUN:   -I%midway_include -c %s -o %t.o
// RUN: clang-19 -no-pie %t.o -Wl,-T,%midway_lib/midway.ld %midway_lib/midway_exe.o \
// RUN:   -L%midway_lib -Wl,-rpath,%midway_lib -lmidway -o %t
// RUN: %t | FileCheck %s --check-prefix=MARKED
// The pass's defaults are mwcc's: loops poll (mwcc_flags.c).
// RUN: llvm-nm %t.o | FileCheck %s --check-prefix=POLLS
// A knob takes effect: with the pass switched off, nothing is compiled by it, and mw_init
// refuses the program (misuse_no_pass.c).
// RUN: clang-19 -O2 -fpass-plugin=%midway_lib/MidwayInstrument.so -fplugin=%midway_lib/MidwayInstrument.so \
// RUN:   -mllvm -midway-instrument=false -I%midway_include -c %s -o %t.off.o
// RUN: clang-19 -no-pie %t.off.o -Wl,-T,%midway_lib/midway.ld %midway_lib/midway_exe.o \
// RUN:   -L%midway_lib -Wl,-rpath,%midway_lib -lmidway -o %t.off
// RUN: not %t.off 2>&1 | FileCheck %s --check-prefix=OFF
// Without -fplugin, clang 19 rejects the knob before it loads the pass plugin.
// RUN: not clang-19 -O2 -fpass-plugin=%midway_lib/MidwayInstrument.so -mllvm -midway-instrument=false \
// RUN:   -I%midway_include -c %s -o /dev/null 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// mwcc --showme:link prints the same link flags.
// RUN: %mwcc --showme:link | FileCheck %s --check-prefix=LINK
// MARKED: dirty bytes: 4
// POLLS: U __mw_poll
// OFF: midway: mw_init: this program was linked with mwcc's flags, but none of its code was compiled by the Midway pass
// UNKNOWN: Unknown command line argument '-midway-instrument=false'
// LINK: -no-pie -Wl,-T,{{.*}}/lib/midway.ld {{.*}}/lib/midway_exe.o {{.*}}-lmidway
#include <midway.h>
#include <stdio.h>

MW_SHARED int data[16];

int main(int argc, char **argv) {
  mw_init(&argc, &argv);
  mw_dirty_clear(data, sizeof data);
  data[argc] = 42;
  for (int i = 0; i < argc * 1000; i++) data[i % 16] += i; /* a loop, which polls */
  mw_dirty_clear(data, sizeof data);
  data[argc] = 42;
  printf("dirty bytes: %zu\n", mw_dirty_count(data, sizeof data));
  mw_finalize();
  return 0;
}
