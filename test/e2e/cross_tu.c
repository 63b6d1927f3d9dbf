// Stores through pointers passed to functions in another translation unit mark shared
// data and only shared data: the callee checks each pointer at run time.
// RUN: %mwcc -O0 -c %inputs/Inputs/other_tu.c -o %t.other.O0.o
// RUN: %mwcc -O0 %s %t.other.O0.o -o %t.O0 && %t.O0
// RUN: %mwcc -O2 -c %inputs/Inputs/other_tu.c -o %t.other.O2.o
// RUN: %mwcc -O2 %s %t.other.O2.o -o %t.O2 && %t.O2
#include "check.h"

void fill(float *p, int n, float v);
void set_one(int *p, int v);

MW_SHARED float shared_row[100];
MW_SHARED int shared_int[3];
float private_row[100];

int main(int argc, char **argv) {
  mw_init(&argc, &argv);

  mw_dirty_clear(shared_row, sizeof shared_row);
  fill(shared_row + 10, opaque(20), 1.5f);
  check_dirty("fill() in another unit, shared pointer", shared_row, sizeof shared_row,
              10 * sizeof(float), 20 * sizeof(float));

  mw_dirty_clear(shared_row, sizeof shared_row);
  fill(private_row, 100, 2.5f);
  check_dirty("fill() in another unit, private pointer", shared_row, sizeof shared_row, 0, 0);

  mw_dirty_clear(shared_int, sizeof shared_int);
  set_one(&shared_int[2], opaque(4));
  int local = 0;
  set_one(&local, 5);
  check_dirty("set_one() in another unit", shared_int, sizeof shared_int, 2 * sizeof(int),
              sizeof(int));

  if (shared_row[15] != 1.5f || private_row[99] != 2.5f || shared_int[2] != 4 || local != 5) {
    printf("FAIL data\n");
    return 1;
  }
  mw_finalize();
  return check_report();
}
