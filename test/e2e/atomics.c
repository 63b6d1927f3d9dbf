// Atomic stores, read-modify-writes and compare-exchanges mark their bytes; a failed
// compare-exchange writes nothing and marks nothing.
// RUN: %mwcc -O0 %s -o %t.O0 && %t.O0
// RUN: %mwcc -O2 %s -o %t.O2 && %t.O2
#include "check.h"

#include <stdatomic.h>

MW_SHARED long counters[4];
MW_SHARED _Atomic int flag;

int main(int argc, char **argv) {
  mw_init(&argc, &argv);

  mw_dirty_clear(counters, sizeof counters);
  __atomic_store_n(&counters[1], opaque(5), __ATOMIC_RELEASE);
  check_dirty("atomic store", counters, sizeof counters, sizeof(long), sizeof(long));

  mw_dirty_clear(counters, sizeof counters);
  __atomic_fetch_add(&counters[2], 1, __ATOMIC_SEQ_CST);
  check_dirty("atomic fetch_add", counters, sizeof counters, 2 * sizeof(long), sizeof(long));

  mw_dirty_clear(counters, sizeof counters);
  long expected = 5;
  int ok = __atomic_compare_exchange_n(&counters[1], &expected, 6, 0, __ATOMIC_SEQ_CST,
                                       __ATOMIC_SEQ_CST);
  check_dirty("successful compare-exchange", counters, sizeof counters, sizeof(long),
              ok ? sizeof(long) : 0);

  mw_dirty_clear(counters, sizeof counters);
  expected = 99;
  int failed = !__atomic_compare_exchange_n(&counters[3], &expected, 1, 0, __ATOMIC_SEQ_CST,
                                            __ATOMIC_SEQ_CST);
  check_dirty("failed compare-exchange marks nothing", counters, sizeof counters, 0, 0);

  mw_dirty_clear(&flag, sizeof flag);
  atomic_exchange(&flag, opaque(1));
  check_dirty("C11 atomic_exchange", &flag, sizeof flag, 0, sizeof flag);

  if (!ok || !failed || counters[1] != 6 || counters[2] != 1 || flag != 1) {
    printf("FAIL data\n");
    return 1;
  }
  mw_finalize();
  return check_report();
}
