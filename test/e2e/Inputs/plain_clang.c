/* Compiled by plain clang (no mwcc): its stores are not marked. */
void plain_fill(int *p, int n) {
  for (int i = 0; i < n; i++) p[i] = i;
}

void plain_fill_private(int *p, int n) {
  for (int i = 0; i < n; i++) p[i] = -i;
}
