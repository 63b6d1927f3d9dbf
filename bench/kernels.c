/* kernels.c — the instrumentation-overhead kernels, compiled twice: through mwcc (the
 * pass) and with plain clang -O2. KERNEL(name) gives each copy its own symbols, and
 * each copy its own MW_SHARED data, so both run on the same kind of memory.
 *
 *   mm      512x512 float matrix multiply, C = A * B (MM-ec's kernel)
 *   jacobi  1024x1024 float Jacobi relaxation, 20 sweeps
 *   chase   a linked list threaded through shared memory in random order; each visit
 *           updates the node (stores through pointers the compiler cannot classify)
 *   fft     the two halves of Splash-3's FFT on 256 rows of 256 complex numbers: radix-2
 *           butterflies along each row (groups of 2^q elements, their halves written by
 *           inner loops whose adjacency the pass cannot prove), then a transpose into
 *           padded rows (a column written per inner loop)
 */
#include <midway.h>
#include <stddef.h>

#ifndef VARIANT
#error "compile with -DVARIANT=plain or -DVARIANT=midway"
#endif
#define CAT2(a, b) a##_##b
#define CAT(a, b) CAT2(a, b)
#define KERNEL(name) CAT(name, VARIANT)

#define MM_N 512
#define JACOBI_N 1024
#define CHASE_N (1 << 18)

MW_SHARED static float A[MM_N][MM_N], B[MM_N][MM_N], C[MM_N][MM_N];
MW_SHARED static float G[2][JACOBI_N][JACOBI_N];

#define FFT_M 8
#define FFT_N (1 << FFT_M) /* complex numbers per row, and rows */
#define FFT_PAD 4
MW_SHARED static double X[FFT_N][FFT_N][2], Y[FFT_N][FFT_N + FFT_PAD][2];
static double twiddle[2 * FFT_N];

struct node {
  struct node *next;
  long value;
};
MW_SHARED static struct node nodes[CHASE_N];

void KERNEL(mm_init)(void) {
  for (int i = 0; i < MM_N; i++)
    for (int j = 0; j < MM_N; j++) {
      A[i][j] = (float)((i + j) % 7);
      B[i][j] = (float)((i * j) % 5);
    }
}

/* i-k-j order: the inner loop streams a row of B into a row of C. */
float KERNEL(mm)(void) {
  for (int i = 0; i < MM_N; i++) {
    for (int j = 0; j < MM_N; j++) C[i][j] = 0.0f;
    for (int k = 0; k < MM_N; k++) {
      float a = A[i][k];
      for (int j = 0; j < MM_N; j++) C[i][j] += a * B[k][j];
    }
  }
  return C[MM_N - 1][MM_N - 1];
}

void KERNEL(jacobi_init)(void) {
  for (int g = 0; g < 2; g++)
    for (int i = 0; i < JACOBI_N; i++)
      for (int j = 0; j < JACOBI_N; j++) G[g][i][j] = (i == 0) ? 1.0f : 0.0f;
}

float KERNEL(jacobi)(int sweeps) {
  for (int s = 0; s < sweeps; s++) {
    float(*src)[JACOBI_N] = G[s % 2];
    float(*dst)[JACOBI_N] = G[1 - s % 2];
    for (int i = 1; i < JACOBI_N - 1; i++)
      for (int j = 1; j < JACOBI_N - 1; j++)
        dst[i][j] = 0.25f * (src[i - 1][j] + src[i + 1][j] + src[i][j - 1] + src[i][j + 1]);
  }
  return G[sweeps % 2][JACOBI_N / 2][JACOBI_N / 2];
}

/* Threads the list through the nodes in the order perm[] gives. */
void KERNEL(chase_init)(const int *perm) {
  for (int i = 0; i < CHASE_N; i++) {
    nodes[perm[i]].value = i;
    nodes[perm[i]].next = i + 1 < CHASE_N ? &nodes[perm[i + 1]] : NULL;
  }
}

/* The list head is passed in, so the stores go through a pointer of unknown origin. */
long KERNEL(chase_walk)(struct node *head) {
  long sum = 0;
  for (struct node *n = head; n; n = n->next) {
    n->value = n->value * 3 + 1;
    sum += n->value;
  }
  return sum;
}

struct node *KERNEL(chase_head)(const int *perm) { return &nodes[perm[0]]; }

void KERNEL(fft_init)(void) {
  for (int i = 0; i < FFT_N; i++)
    for (int j = 0; j < FFT_N; j++) {
      X[i][j][0] = (double)((i * 7 + j) % 11) / 11;
      X[i][j][1] = (double)((i + j * 3) % 13) / 13;
    }
  for (int j = 0; j < 2 * FFT_N; j++) twiddle[j] = (double)(j % 17) / 17 - 0.5;
}

/* One row in place, as Splash-3's FFT1DOnce loops: group size L = 2^q (int arithmetic),
 * its lower half x1 and upper half x2 written by the innermost loop. */
static void KERNEL(butterflies)(double *x) {
  for (int q = 1; q <= FFT_M; q++) {
    long L = 1 << q, groups = FFT_N / L, half = L / 2;
    const double *w = &twiddle[2 * (half - 1)];
    for (long k = 0; k < groups; k++) {
      double *x1 = &x[2 * (k * L)], *x2 = &x[2 * (k * L + half)];
      for (long j = 0; j < half; j++) {
        double tr = w[2 * j] * x2[2 * j] - w[2 * j + 1] * x2[2 * j + 1];
        double ti = w[2 * j] * x2[2 * j + 1] + w[2 * j + 1] * x2[2 * j];
        double ur = x1[2 * j], ui = x1[2 * j + 1];
        x2[2 * j] = ur - tr;
        x2[2 * j + 1] = ui - ti;
        x1[2 * j] = ur + tr;
        x1[2 * j + 1] = ui + ti;
      }
    }
  }
}

double KERNEL(fft)(void) {
  for (int r = 0; r < FFT_N; r++) KERNEL(butterflies)(&X[r][0][0]);
  for (int i = 0; i < FFT_N; i++)
    for (int j = 0; j < FFT_N; j++) {
      Y[j][i][0] = X[i][j][0];
      Y[j][i][1] = X[i][j][1];
    }
  return Y[FFT_N - 1][FFT_N - 1][0];
}
