// Scalar, unaligned and static stores to MW_SHARED data mark exactly their bytes.
// RUN: %mwcc -O0 %s -o %t.O0 && %t.O0
// RUN: %mwcc -O2 %s -o %t.O2 && %t.O2
#include "check.h"

struct __attribute__((packed)) Packed {
  char tag;
  int value;  /* at offset 1: an unaligned 4-byte store */
  double d;   /* at offset 5 */
};

MW_SHARED char c_pad[3];
MW_SHARED long longs[10];
MW_SHARED struct Packed packed;
static MW_SHARED short file_static[8];

int main(int argc, char **argv) {
  mw_init(&argc, &argv);
  int v = opaque(argc + 41);

  mw_dirty_clear(longs, sizeof longs);
  longs[3] = v;
  check_dirty("long store", longs, sizeof longs, 3 * sizeof(long), sizeof(long));

  mw_dirty_clear(c_pad, sizeof c_pad);
  c_pad[1] = (char)v;
  check_dirty("char store", c_pad, sizeof c_pad, 1, 1);

  mw_dirty_clear(&packed, sizeof packed);
  packed.value = v;
  check_dirty("unaligned int store", &packed, sizeof packed, 1, 4);
  mw_dirty_clear(&packed, sizeof packed);
  packed.d = v * 0.5;
  check_dirty("unaligned double store", &packed, sizeof packed, 5, 8);

  mw_dirty_clear(file_static, sizeof file_static);
  file_static[opaque(7)] = (short)v;
  check_dirty("store to a file-scope static", file_static, sizeof file_static, 14, 2);

  /* A value that is stored is what is read back: the marks do not disturb data. */
  if (longs[3] != 42 || packed.value != 42 || file_static[7] != 42) {
    printf("FAIL data: %ld %d %d\n", longs[3], packed.value, file_static[7]);
    return 1;
  }
  mw_finalize();
  return check_report();
}
