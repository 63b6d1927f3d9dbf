// Struct copies and field stores mark exactly the copied or stored bytes.
// RUN: %mwcc -O0 %s -o %t.O0 && %t.O0
// RUN: %mwcc -O2 %s -o %t.O2 && %t.O2
#include "check.h"

struct Particle {
  double pos[3];
  double vel[3];
  int id;
  char name[12];
};

MW_SHARED struct Particle particles[4];

static struct Particle make(int id) {
  struct Particle p = {{1, 2, 3}, {4, 5, 6}, id, "particle"};
  return p;
}

int main(int argc, char **argv) {
  mw_init(&argc, &argv);
  const size_t sz = sizeof(struct Particle);

  mw_dirty_clear(particles, sizeof particles);
  particles[2] = make(opaque(7));
  check_dirty("struct assignment", particles, sizeof particles, 2 * sz, sz);

  mw_dirty_clear(particles, sizeof particles);
  particles[1] = particles[2];
  check_dirty("struct copy between shared elements", particles, sizeof particles, sz, sz);

  mw_dirty_clear(particles, sizeof particles);
  particles[0].vel[1] = opaque(3);
  particles[3].id = opaque(9);
  unsigned char want[sizeof particles] = {0};
  memset(want + __builtin_offsetof(struct Particle, vel[1]), 1, sizeof(double));
  memset(want + 3 * sz + __builtin_offsetof(struct Particle, id), 1, sizeof(int));
  check_dirty_map("field stores", particles, sizeof particles, want);

  struct Particle *heap = mw_malloc(2 * sz);
  mw_dirty_clear(heap, 2 * sz);
  heap[1] = particles[1];
  check_dirty("struct copy into mw_malloc memory", heap, 2 * sz, sz, sz);

  if (heap[1].id != 7 || particles[3].id != 9) {
    printf("FAIL data\n");
    return 1;
  }
  mw_free(heap);
  mw_finalize();
  return check_report();
}
