/*
 * Row 10-lanes (bench/README.md): pyop_op_execute of a pure-Python
 * elementwise float32[4096] op (tests/lanes/plugins/pure, Scale) from 2
 * host threads, one instance each, throughput over 1 thread, in one of
 * three modes, each a process of its own (argv[1]):
 *   lanes     pyop_options.lanes = 2 (the instances in two lanes)
 *   shared    no lanes (one GIL)
 *   single    one thread only, printing its time per call (the caller
 *             compares `single` with and without lanes: argv[2] = lanes)
 * with a C control (a plain loop from 2 threads vs 1) in the same run:
 * the throughput ratios' minimum and median over the repetitions are
 * printed as "ratio MIN MEDIAN control MIN MEDIAN". Numbers, not pass/fail.
 * Built and run by bench/lanes.sh against a libpyop whose default Python is
 * CPython 3.12+.
 */
#include "../tests/e2e/e2e_util.h"

#include <pthread.h>

#define N 4096
#define REPS 7

static pyop_op *ops[2];
static int calls = 200;

static void *op_loop(void *p) {
  pyop_op *op = p;
  float x[N], y[N];
  for (int i = 0; i < N; i++)
    x[i] = (float)i;
  pyop_tensor tx = f32_1d(x, N), ty = f32_1d(y, N);
  pyop_tensor_list in[1] = {one(&tx)};
  for (int i = 0; i < calls; i++) {
    pyop_exec_ctx ctx = PYOP_EXEC_CTX_INIT;
    if (pyop_op_execute(op, in, 1, &ty, 1, &ctx) != PYOP_OK) {
      fprintf(stderr, "execute: %s\n", pyop_last_error());
      exit(1);
    }
  }
  return NULL;
}

static void *c_loop(void *p) {
  (void)p;
  volatile double acc = 0;
  for (long i = 0; i < 20000000; i++)
    acc += (double)i * 0.5;
  return NULL;
}

/* Seconds for nt threads running fn (ops[i] as argument). */
static double timed(int nt, void *(*fn)(void *)) {
  pthread_t t[2];
  double t0 = now_s();
  for (int i = 0; i < nt; i++)
    if (pthread_create(&t[i], NULL, fn, ops[i]) != 0)
      exit(1);
  for (int i = 0; i < nt; i++)
    pthread_join(t[i], NULL);
  return now_s() - t0;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s lanes|shared|single PLUGINS [lanes]\n", argv[0]);
    return 2;
  }
  const char *mode = argv[1];
  bool lanes = !strcmp(mode, "lanes") || (argc > 3 && !strcmp(argv[3], "lanes"));
  setenv("ASCEND_CUSTOM_OPP_PATH", argv[2], 1);
  pyop_options o = PYOP_OPTIONS_INIT;
  o.start_python = true;
  o.lanes = lanes ? 2 : 0;
  if (pyop_set_options(&o) != PYOP_OK || pyop_load() != PYOP_OK) {
    fprintf(stderr, "%s\n", pyop_last_error());
    return 1;
  }
  for (int i = 0; i < 2; i++)
    if (pyop_op_create("Scale", NULL, 0, &ops[i]) != PYOP_OK)
      return 1;
  timed(1, op_loop); /* warm-up: thread states, caches */
  double r[REPS], c[REPS];
  for (int k = 0; k < REPS; k++) {
    if (!strcmp(mode, "single")) {
      r[k] = timed(1, op_loop) / calls * 1e9; /* ns per call */
      c[k] = 0;
      continue;
    }
    double one_t = timed(1, op_loop), two_t = timed(2, op_loop);
    r[k] = 2 * one_t / two_t;
    double c1 = timed(1, c_loop), c2 = timed(2, c_loop);
    c[k] = 2 * c1 / c2;
  }
  qsort(r, REPS, sizeof r[0], cmp);
  qsort(c, REPS, sizeof c[0], cmp);
  if (!strcmp(mode, "single"))
    printf("ns_per_call %.0f %.0f\n", r[0], r[REPS / 2]);
  else /* a throughput ratio: the minimum is the worst repetition */
    printf("ratio %.2f %.2f control %.2f %.2f\n", r[0], r[REPS / 2], c[0], c[REPS / 2]);
  for (int i = 0; i < 2; i++)
    pyop_op_destroy(ops[i]);
  pyop_shutdown();
  return 0;
}
