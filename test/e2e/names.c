// Names as the source writes them (issue 14, "Names everywhere"), in a default build:
// the pass records the shape of each shared global (section mw_objects), so that errors
// and warnings name an element of an array (`grid[1][2]`), of an array initialized in
// part (which clang lays out as a struct of pieces: `table[5]`), and a field of an
// element by its offset (`parts[1]+4`), where the symbol table alone says `grid+40`.
// RUN: %mwcc -O1 %s -o %t
// RUN: %mwrun -n 2 %t 2>&1 | FileCheck %s
// CHECK-DAG: midway: warning: mw_barrier: ranks 0 and 1 both wrote grid[1][2] [4 bytes], bound to barrier on_grid[0]
// CHECK-DAG: midway: warning: mw_barrier: ranks 0 and 1 both wrote parts[1]+4 [4 bytes], bound to barrier on_grid[1]
// CHECK-DAG: midway: warning: mw_barrier: ranks 0 and 1 both wrote table[5] [4 bytes], bound to barrier on_table
// CHECK: done
#include <midway.h>
#include <stdio.h>

struct part {
  int id;
  int weight;
};

MW_SHARED int grid[3][4];
MW_SHARED struct part parts[4];
MW_SHARED int table[16] = {1, 2, 3};
MW_SHARED mw_barrier_t on_grid[2];
MW_SHARED mw_barrier_t on_table;

int main(int argc, char **argv) {
  mw_init(&argc, &argv);
  const int me = mw_rank();
  mw_barrier_bind(&on_grid[0], grid, sizeof grid);
  mw_barrier_bind(&on_grid[1], parts, sizeof parts);
  mw_barrier_bind(&on_table, table, sizeof table);
  mw_barrier(&on_grid[0]);
  mw_barrier(&on_grid[1]);
  mw_barrier(&on_table);
  if (me < 2) {  // ranks 0 and 1 both write each of these in one phase
    grid[1][2] = me;
    parts[1].weight = me;
    table[5] = me;
  }
  mw_barrier(&on_grid[0]);
  mw_barrier(&on_grid[1]);
  mw_barrier(&on_table);
  if (me == 0) printf("done\n");
  mw_finalize();
  return 0;
}
