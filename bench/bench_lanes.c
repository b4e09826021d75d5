/*
 * Rows 10l, 10s and 10u (bench/README.md): pyop_op_execute of a pure-Python
 * elementwise float32[4096] op (tests/lanes/plugins/pure, Scale) from 2
 * host threads, one instance each, throughput over 1 thread, in one of
 * three modes, each a process of its own (argv[1]):
 *   lanes     pyop_options.lanes = 2 (the instances in two lanes)
 *   shared    no lanes (one GIL)
 *   single    one thread only, printing its time per call (the caller
 *             compares `single` with and without lanes: argv[2] = lanes)
 * with a C control (a plain loop from 2 threads vs 1) in the same run:
 * the throughput ratio of the best times and the median of the repetitions,
 * printed as "ratio BEST MEDIAN control BEST MEDIAN" (BEST: the ratio of
 * the minimum times). Numbers, not pass/fail.
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
    if (pyop_op_create("Scale", NULL, 0, &ops[i]) != PYOP_OK) {
      fprintf(stderr, "pyop_op_create Scale: %s\n", pyop_last_error());
      return 1;
    }
  /* The row means two lanes at once: say so when the op stayed serial or
   * both instances landed in one lane, rather than print a ratio of 1. */
  uint32_t l0 = pyop_op_lane(ops[0]), l1 = pyop_op_lane(ops[1]);
  if (lanes && !strcmp(mode, "lanes") && (l0 == 0 || l1 == 0 || l0 == l1)) {
    const pyop_op_info *info = NULL;
    const char *why = pyop_op_get("Scale", &info) == PYOP_OK && info->serial_reason != NULL
                          ? info->serial_reason
                          : "the two instances share a lane";
    fprintf(stderr, "Scale is not in two lanes (lanes %u and %u): %s\n", (unsigned)l0,
            (unsigned)l1, why);
    return 1;
  }
  timed(1, op_loop); /* warm-up: thread states, caches */
  /* Per repetition: the ratio; across them the best (minimum) times, from
   * which the judged ratio is made as run.sh's other ratio rows are (its
   * "time:min" column: the figure least disturbed by the machine). */
  double r[REPS], c[REPS];
  double best[4] = {1e300, 1e300, 1e300, 1e300}; /* op 1, op 2, C 1, C 2 */
  for (int k = 0; k < REPS; k++) {
    if (!strcmp(mode, "single")) {
      r[k] = timed(1, op_loop) / calls * 1e9; /* ns per call */
      c[k] = 0;
      continue;
    }
    double t[4] = {timed(1, op_loop), timed(2, op_loop), timed(1, c_loop), timed(2, c_loop)};
    for (int i = 0; i < 4; i++)
      best[i] = t[i] < best[i] ? t[i] : best[i];
    r[k] = 2 * t[0] / t[1];
    c[k] = 2 * t[2] / t[3];
  }
  qsort(r, REPS, sizeof r[0], cmp);
  qsort(c, REPS, sizeof c[0], cmp);
  if (!strcmp(mode, "single"))
    printf("ns_per_call %.0f %.0f\n", r[0], r[REPS / 2]);
  else /* the ratio of the best times, and the median of the repetitions' */
    printf("ratio %.2f %.2f control %.2f %.2f\n", 2 * best[0] / best[1], r[REPS / 2],
           2 * best[2] / best[3], c[REPS / 2]);
  for (int i = 0; i < 2; i++)
    pyop_op_destroy(ops[i]);
  pyop_shutdown();
  return 0;
}
