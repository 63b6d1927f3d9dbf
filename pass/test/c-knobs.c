// Clang parses -mllvm options before it loads pass plugins, so the pass's knobs
// need the library loaded early too: -fplugin= (mwcc passes both). Without it
// clang rejects them.
// RUN: not %clang_mw -O2 -mllvm -midway-loop-ranges=false -S -o /dev/null %s 2>&1 \
// RUN:   | FileCheck %s --check-prefix=UNKNOWN
// RUN: %clang_mw -fplugin=%plugin -O2 -S -emit-llvm -o - %s | FileCheck %s --check-prefix=RANGES
// RUN: %clang_mw -fplugin=%plugin -O2 -mllvm -midway-loop-ranges=false -S -emit-llvm -o - %s \
// RUN:   | FileCheck %s --check-prefix=NORANGES
// RUN: %clang_mw -fplugin=%plugin -O2 -mllvm -midway-instrument=false -S -emit-llvm -o - %s \
// RUN:   | FileCheck %s --check-prefix=OFF

#include <midway.h>

MW_SHARED int counts[1024];

// UNKNOWN: Unknown command line argument '-midway-loop-ranges=false'

// RANGES-LABEL: define {{.*}}void @reset(
// RANGES-NOT:     store i32 16843009
// RANGES:         call void @llvm.memset.p0.i64(ptr align 16 inttoptr {{.*}}@counts{{.*}}, i8 1, i64 4096, i1 false), !nosanitize
// RANGES-NOT:     !nosanitize
// RANGES:       }

// The loop is not turned into a memset (n is not 0): with per-store marks, the
// vector stores in the loop are each followed by a 16-byte mark.
// NORANGES-LABEL: define {{.*}}void @reset(
// NORANGES:       store <4 x i32>
// NORANGES-NEXT:  ptrtoint
// NORANGES:       store i128 1334440654591915542993625911497130241, {{.*}} !nosanitize

// OFF-NOT: !nosanitize
void reset(int n) {
  for (int i = 0; i < 1024; i++)
    counts[i] = n;
}
