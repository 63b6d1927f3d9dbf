// What a mark costs in x86-64 code at -O2.
// RUN: %clang_mw -fplugin=%plugin --target=x86_64-unknown-linux-gnu -mllvm -midway-polls=false -O2 -S -o - %s | FileCheck %s

#include <midway.h>

MW_SHARED float A[512];

// A store into an MW_SHARED array: the shadow byte's address (p >> 3, plus the
// shadow offset, which needs a register) and its dirty bits, 15 << (p & 7), ORed
// into the shadow byte's value; the byte is written only if that changed it (a
// conditional mark: one branch, not taken once the data is marked); no call.
// CHECK-LABEL: shared_store:
// CHECK-NOT:     {{j[a-z]+ |call}}
// CHECK:         leaq ([[BASE:%r[a-z0-9]+]],[[IDX:%r[a-z0-9]+]],4), [[P:%r[a-z0-9]+]]
// CHECK-NEXT:    movss %xmm0, ([[BASE]],[[IDX]],4)
// CHECK-NOT:     {{j[a-z]+ |call}}
// CHECK:         andb $7, %cl
// CHECK-NEXT:    movb $15, [[M:%[a-z0-9]+]]
// CHECK-NEXT:    shlb %cl, [[M]]
// CHECK-NEXT:    shrq $3, [[P]]
// CHECK-NEXT:    movabsq $17592186044416, [[OFF:%r[a-z0-9]+]]
// CHECK-NEXT:    movzbl ([[P]],[[OFF]]), [[OLD:%e[a-z0-9]+]]
// CHECK-NEXT:    orb [[OLDB:%[a-z0-9]+]], [[M]]
// CHECK-NEXT:    cmpb [[OLDB]], [[M]]
// CHECK-NEXT:    je .LBB0_2
// CHECK-NEXT:  # %bb.1:
// CHECK-NEXT:    movb [[M]], ([[P]],[[OFF]])
// CHECK-NEXT:  .LBB0_2:
// CHECK-NEXT:    retq
void shared_store(int i, float v) { A[i] = v; }

// A store through a float *: the window check is one subtract (lea), one
// compare (shr) and one branch; then the mark.
// CHECK-LABEL: arg_store:
// CHECK:         movss %xmm0, (%rdi)
// CHECK-NEXT:    leaq -1073741824(%rdi), [[T:%r[a-z0-9]+]]
// CHECK-NEXT:    shrq $40, [[T]]
// CHECK-NEXT:    jne .LBB1_3
// CHECK-NEXT:  # %bb.1:
// CHECK-NEXT:    movl %edi, %ecx
// CHECK-NEXT:    andb $7, %cl
// CHECK-NEXT:    movb $15, [[M:%[a-z0-9]+]]
// CHECK-NEXT:    shlb %cl, [[M]]
// CHECK-NEXT:    shrq $3, %rdi
// CHECK-NEXT:    movabsq $17592186044416, [[OFF:%r[a-z0-9]+]]
// CHECK-NEXT:    movzbl (%rdi,[[OFF]]), [[OLD:%e[a-z0-9]+]]
// CHECK-NEXT:    orb [[OLDB:%[a-z0-9]+]], [[M]]
// CHECK-NEXT:    cmpb [[OLDB]], [[M]]
// CHECK-NEXT:    je .LBB1_3
// CHECK-NEXT:  # %bb.2:
// CHECK-NEXT:    movb [[M]], (%rdi,[[OFF]])
// CHECK-NEXT:  .LBB1_3:
// CHECK-NEXT:    retq
void arg_store(float *p, float v) { *p = v; }

// A loop over a float *: nothing inside the loops (the vector body and its
// scalar remainder: no shadow offset, which every inline mark materializes, and
// no call). After each, a window check, then a range of up to 256 bytes from its
// first shadow byte is marked inline (one word-wide OR per 64 bytes) and a longer
// one by a runtime call.
// CHECK-LABEL: loop_store:
// CHECK:       # =>This Inner Loop Header
// CHECK-NOT:     {{17592186044416|call}}
// CHECK:         movups
// CHECK-NOT:     {{17592186044416|call}}
// CHECK:         jne .LBB2_
// CHECK-NEXT:  # %bb.
// CHECK-NEXT:    leaq -1073741824(%rdi), [[T:%r[a-z0-9]+]]
// CHECK-NEXT:    cmpq {{%r[a-z0-9]+}}, [[T]]
// CHECK-NEXT:    jae .LBB2_
// CHECK-NOT:     {{17592186044416|call}}
// CHECK:         movl $256,
// CHECK-NOT:     {{17592186044416|call}}
// CHECK:         jae .LBB2_
// CHECK:         movabsq $17592186044416
// CHECK-NOT:     call
// CHECK:         orq {{%r[a-z0-9]+}}, (
// CHECK-NOT:     call
// CHECK:         orq {{%r[a-z0-9]+}}, 24(
// CHECK-NOT:     17592186044416
// CHECK:         callq __mw_mark_range@PLT
// CHECK:       # =>This Inner Loop Header
// CHECK-NOT:     {{17592186044416|call}}
// CHECK:         movss
// CHECK-NOT:     {{17592186044416|call}}
// CHECK:         jne .LBB2_
// CHECK-NEXT:  # %bb.
// CHECK-NOT:     17592186044416
// CHECK:         jae .LBB2_
// CHECK:         movabsq $17592186044416
// CHECK:         orq {{%r[a-z0-9]+}}, 24(
// CHECK-NOT:     17592186044416
// CHECK:         callq __mw_mark_range@PLT
// CHECK-NOT:     {{17592186044416|call}}
// CHECK:       .Lfunc_end2:
void loop_store(float *a, int n) {
  for (int i = 0; i < n; i++)
    a[i] = 2.0f * i;
}
