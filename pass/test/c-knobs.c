// Clang parses -mllvm options before it loads pass plugins, so the pass's knobs
// need the library loaded early too: -fplugin= (mwcc passes both). Without it
// clang rejects them.
// RUN: not %clang_mw -O2 -mllvm -midway-loop-ranges=false -S -o /dev/null %s 2>&1 \
// RUN:   | FileCheck %s --check-prefix=UNKNOWN
// RUN: %clang_mw -fplugin=%plugin -O2 -S -emit-llvm -o - %s | FileCheck %s --check-prefix=RANGES
// RUN: %clang_mw -fplugin=%plugin -O2 -mllvm -midway-loop-ranges=false -mllvm -midway-merge-adjacent=false \
// RUN:   -S -emit-llvm -o - %s | FileCheck %s --check-prefix=NORANGES
// RUN: %clang_mw -fplugin=%plugin -O2 -mllvm -midway-instrument=false -S -emit-llvm -o - %s \
// RUN:   | FileCheck %s --check-prefix=OFF

#include <midway.h>

MW_SHARED int counts[1024];

// UNKNOWN: Unknown command line argument '-midway-loop-ranges=false'

// With loop ranges, one mark after the loop: the 4096 bytes, stored 16-aligned,
// are 512 whole shadow bytes, a memset of 0xFF.
// RANGES-LABEL: define {{.*}}void @reset(
// RANGES-NOT:     !nosanitize
// RANGES:         [[X:%.*]] = lshr i64 ptrtoint (ptr @counts to i64), 3
// RANGES-NEXT:    [[A:%.*]] = add i64 [[X]], 17592186044416
// RANGES-NEXT:    [[S:%.*]] = inttoptr i64 [[A]] to ptr
// RANGES-NEXT:    call void @llvm.memset.p0.i64(ptr align 2 [[S]], i8 -1, i64 512, i1 false), !nosanitize
// RANGES-NOT:     !nosanitize
// RANGES:       }

// The loop is not turned into a memset (n is not 0): with per-store marks (and
// no merging of the unrolled stores' marks), the vector stores in the loop are
// each followed by a 16-byte mark, two whole shadow bytes.
// NORANGES-LABEL: define {{.*}}void @reset(
// NORANGES:       store <4 x i32> {{%.*}}, ptr [[P:%.*]], align 16
// NORANGES-NEXT:  [[I:%.*]] = ptrtoint ptr [[P]] to i64
// NORANGES-NEXT:  [[X:%.*]] = lshr i64 [[I]], 3
// NORANGES-NEXT:  [[A:%.*]] = add i64 [[X]], 17592186044416
// NORANGES-NEXT:  [[S:%.*]] = inttoptr i64 [[A]] to ptr
// NORANGES-NEXT:  [[C1O:%.*]] = load i16, ptr [[S]], align 2, !nosanitize
// NORANGES-NEXT:  [[C1:%.*]] = icmp ne i16 -1, [[C1O]]
// NORANGES-NEXT:  br i1 [[C1]], label %[[C1S:.*]], label
// NORANGES: [[C1S]]:
// NORANGES-NEXT:  store i16 -1, ptr [[S]], align 2, !nosanitize

// OFF-NOT: !nosanitize
void reset(int n) {
  for (int i = 0; i < 1024; i++)
    counts[i] = n;
}
