// Stores to private memory (locals, escaping locals, private globals, malloc'd memory)
// run correctly and mark nothing shared.
// RUN: %mwcc -O0 %s -o %t.O0 && %t.O0
// RUN: %mwcc -O2 %s -o %t.O2 && %t.O2
#include "check.h"

#include <stdlib.h>

MW_SHARED char shared_sentinel[4096];
int private_global[64];

struct Node {
  struct Node *next;
  int value;
};

__attribute__((noinline)) static void bump(int *p) { *p += 1; }

int main(int argc, char **argv) {
  mw_init(&argc, &argv);
  mw_dirty_clear(shared_sentinel, sizeof shared_sentinel);
  char *heap_block = mw_malloc(4096);
  mw_dirty_clear(heap_block, 4096);

  int local = opaque(1);
  bump(&local); /* an escaping local, stored through an unknown pointer */
  int stack_array[32];
  for (int i = 0; i < 32; i++) stack_array[i] = i * local;
  for (int i = 0; i < 64; i++) private_global[i] = stack_array[i % 32];

  struct Node *head = NULL;
  for (int i = 0; i < 100; i++) {
    struct Node *n = malloc(sizeof *n);
    n->value = i;
    n->next = head;
    head = n;
  }
  long sum = 0;
  for (struct Node *n = head; n; n = n->next) {
    bump(&n->value);
    sum += n->value;
  }

  check_dirty("static shared data after private stores", shared_sentinel,
              sizeof shared_sentinel, 0, 0);
  check_dirty("shared heap after private stores", heap_block, 4096, 0, 0);

  if (local != 2 || private_global[63] != 62 || sum != 5050) {
    printf("FAIL data: %d %d %ld\n", local, private_global[63], sum);
    return 1;
  }
  while (head) {
    struct Node *n = head->next;
    free(head);
    head = n;
  }
  mw_free(heap_block);
  mw_finalize();
  return check_report();
}
