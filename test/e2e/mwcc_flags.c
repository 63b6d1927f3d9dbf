// mwcc's Midway options become the pass's options, and a check build gets the line
// tables its sites need.
// RUN: %mwcc --showme -O2 -c %s | FileCheck %s --check-prefix=DEFAULT
// RUN: %mwcc --showme -fmidway-check -O2 -c %s | FileCheck %s --check-prefix=CHECK-BUILD
// RUN: %mwcc --showme -fmidway-check -g -O2 -c %s | FileCheck %s --check-prefix=CHECK-G
// RUN: %mwcc --showme -fmidway-check -g0 -c %s 2>&1 | FileCheck %s --check-prefix=CHECK-G0
// RUN: %mwcc --showme -fmidway-shared-globals -O2 -c %s | FileCheck %s --check-prefix=GLOBALS
// Polls are the pass's default (a build by the plain-clang recipe, the CMake package or
// midway.pc has them too: plain_clang_recipe.c). -fno-midway-polls turns
// them off, and so does the user's own -mllvm -midway-polls=false, which mwcc then leaves
// to decide (the pass's option may occur only once). An -mllvm option's argument is not
// mwcc's: `mwcc -mllvm --help` is LLVM's help, with the pass's options.
// RUN: %mwcc -O2 -c %s -o %t.polls.o && llvm-nm %t.polls.o | FileCheck %s --check-prefix=POLLS
// RUN: %mwcc -fno-midway-polls -O2 -c %s -o %t.none.o && llvm-nm %t.none.o | FileCheck %s --check-prefix=NO-POLLS
// RUN: %mwcc -fno-midway-polls -fmidway-polls -O2 -c %s -o %t.on.o && llvm-nm %t.on.o | FileCheck %s --check-prefix=POLLS
// RUN: %mwcc -mllvm -midway-polls=false -O2 -c %s -o %t.user.o && llvm-nm %t.user.o | FileCheck %s --check-prefix=NO-POLLS
// RUN: %mwcc -fno-midway-polls -mllvm -midway-polls -O2 -c %s -o %t.user2.o && llvm-nm %t.user2.o | FileCheck %s --check-prefix=POLLS
// RUN: %mwcc --showme -fno-midway-polls -O2 -c %s | FileCheck %s --check-prefix=NO-POLLS-FLAGS
// RUN: %mwcc -mllvm --help -c -x c /dev/null -o /dev/null | FileCheck %s --check-prefix=LLVM-HELP
// POLLS: U __mw_poll
// NO-POLLS-NOT: __mw_poll
// NO-POLLS-FLAGS: -mllvm -midway-polls=false
// LLVM-HELP: Midway options:
// LLVM-HELP: --midway-polls
// DEFAULT-NOT: -midway-check
// DEFAULT-NOT: -midway-shared-globals
// DEFAULT-NOT: -fmidway
// CHECK-BUILD: -mllvm -midway-check {{.*}}-gline-tables-only
// CHECK-BUILD-NOT: -fmidway-check
// CHECK-G: -mllvm -midway-check
// CHECK-G-NOT: -gline-tables-only
// CHECK-G0: mwcc: note: -fmidway-check needs line tables: -gline-tables-only overrides -g0
// CHECK-G0: -g0 {{.*}}-gline-tables-only
// GLOBALS: -fno-common -mllvm -midway-shared-globals
// GLOBALS-NOT: -fmidway-shared-globals
//
// A check build's object calls the runtime's checks and carries its sites. (Linking
// one needs the runtime's side of the checks, which is not written yet.)
// RUN: %mwcc -fmidway-check -O2 -c %s -o %t.o
// RUN: llvm-nm %t.o | FileCheck %s --check-prefix=SYMBOLS
// RUN: llvm-readelf -S %t.o | FileCheck %s --check-prefix=SECTIONS
// SYMBOLS: U __mw_check_load
// SYMBOLS: U __mw_check_store
// SECTIONS: mw_sites
//
// Linking objects only compiles nothing: the pass's options stay off clang's command
// line (clang warned that -mllvm -midway-polls went unused), the link flags stay on.
// RUN: %mwcc --showme -fno-midway-polls %t.o -o %t.exe | FileCheck %s --check-prefix=LINK-ONLY
// RUN: %mwcc --showme -O2 %s -o %t.exe | FileCheck %s --check-prefix=COMPILE-AND-LINK
// LINK-ONLY-NOT: -midway-
// LINK-ONLY-NOT: -fpass-plugin
// LINK-ONLY: .o -o {{.*}}.exe {{.*}}-lmidway
// COMPILE-AND-LINK: -fpass-plugin={{.*}}-lmidway
//
// Sanitizers whose shadow memory would lie where Midway's data does are refused, by
// name, before clang runs; the others pass.
// RUN: not %mwcc -fsanitize=thread -O1 -c %s -o %t.tsan.o 2>&1 | FileCheck %s --check-prefix=TSAN
// RUN: not %mwcc -fsanitize=undefined,address -c %s -o %t.asan.o 2>&1 | FileCheck %s --check-prefix=ASAN
// RUN: %mwcc --showme -fsanitize=undefined -c %s | FileCheck %s --check-prefix=UBSAN
// TSAN: mwcc: -fsanitize=thread is not supported: its shadow memory lies where Midway's shared data and dirty map do
// ASAN: mwcc: -fsanitize=address is not supported
// UBSAN: -fsanitize=undefined
#include <midway.h>

MW_SHARED int data[16];

int bump(int i) { return ++data[i]; }

/* A loop: where the polls go. */
int sum(int n) {
  int s = 0;
  for (int i = 0; i < n; i++) s += data[i % 16]++;
  return s;
}
