/* dgemm_ of a BLAS library, timed in thread CPU time: best of 5 per order n, in GFLOP/s
   (2 n^3 flop). docs/results/blas-kernels.md.
   Build: gcc -O2 dg.c -o dg -ldl
   Run:   OPENBLAS_CORETYPE=K OPENBLAS_NUM_THREADS=1 ./dg LIB N...   (LIB: a path or soname) */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

typedef void dgemm_t(const char*, const char*, const int*, const int*, const int*, const double*, const double*,
                     const int*, const double*, const int*, const double*, double*, const int*);

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char** argv) {
  if (argc < 3) { fprintf(stderr, "usage: %s LIB N...\n", argv[0]); return 2; }
  void* lib = dlopen(argv[1], RTLD_NOW);
  dgemm_t* dgemm = lib ? (dgemm_t*)dlsym(lib, "dgemm_") : NULL;
  if (!dgemm) { fprintf(stderr, "%s: no dgemm_ in %s: %s\n", argv[0], argv[1], dlerror()); return 1; }
  for (int i = 2; i < argc; ++i) {
    const int n = atoi(argv[i]);
    double* a = malloc(sizeof(double) * n * n), *b = malloc(sizeof(double) * n * n), *c = malloc(sizeof(double) * n * n);
    for (long k = 0; k < (long)n * n; ++k) { a[k] = (double)(k % 7) / 7.0; b[k] = (double)(k % 5) / 5.0; c[k] = 0.0; }
    const double one = 1.0, zero = 0.0;
    double best = 1e30;
    for (int r = 0; r < 5; ++r) {
      const double t0 = now();
      dgemm("N", "N", &n, &n, &n, &one, a, &n, b, &n, &zero, c, &n);
      const double t = now() - t0;
      if (t < best) best = t;
    }
    printf("n=%d %.1f GFLOP/s (c[0]=%g)\n", n, 2.0 * n * n * (double)n / best / 1e9, c[0]);
    free(a); free(b); free(c);
  }
  return 0;
}
