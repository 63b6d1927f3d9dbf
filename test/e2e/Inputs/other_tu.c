/* Compiled as a separate translation unit: it cannot know which pointers are shared. */
void fill(float *p, int n, float v) {
  for (int i = 0; i < n; i++) p[i] = v;
}

void set_one(int *p, int v) { *p = v; }
