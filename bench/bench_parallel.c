/*
 * Row 10 of bench/README.md: Python ops from several host threads at once.
 *
 * pyop_op_execute of a pure-Python elementwise float32[4096] op
 * (BenchElementwise, plugins/bench_parallel_ops.py) from 2 host threads,
 * one op instance each, against 1 thread: the throughput ratio
 * time-per-call(1 thread) / time-per-call(2 threads together). Beside it,
 * in the same interleaved run, the ~2 us op (BenchSmall) the same way and a
 * plain C loop of similar duration (the control: what 2 threads get on this
 * machine right now; below 1.8x the machine is busy and the parallel row is
 * not judged).
 *
 * A "parallel mode" is a way to configure libpyop (a pyop_options, set
 * before its own pyop_load) for which the row is measured. Each mode says
 * whether it can run in this process; the first one that can and is
 * parallel gives the target row 10. Modes today: one shared GIL (any
 * Python with a GIL: the serialisation the row is about, a figure without
 * a target) and free-threaded (a CPython built with --disable-gil: rows
 * 10f/10g, with the target). A mode is one entry of `modes` below.
 *
 * The host links the build's default libpython (bench_python.h); run by
 * bench/run.sh, and by tools/test-all.sh's freethreaded stage in a build
 * whose default Python is a free-threaded 3.13t.
 */
#include "bench_python.h"
#include "bench_util.h"

#include <math.h>
#include <pyop/pyop.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define ELEMS 4096
#define THREADS 2
#define PAR_TARGET 1.6  /* parallel mode: 2 threads / 1 thread */
#define CONTROL_MIN 1.8 /* the control must reach this for the row to be judged */

static void check(int rc, const char *what) {
  if (rc != PYOP_OK)
    bench_die("%s: %s: %s", what, pyop_status_name(rc), pyop_last_error());
}

/* ------------------------------------------------------------- modes */

/*
 * One way to run Python ops from several host threads. configure() fills
 * *o (initialised with PYOP_OPTIONS_INIT) for the mode and returns NULL
 * when the mode can run in this process, else why not (a static string).
 * parallel: the mode is meant to run Python ops at once (the target row);
 * false for the shared GIL, whose figure only documents serialisation.
 * rows: the ids of its elementwise and ~2 us rows.
 */
typedef struct par_mode {
  const char *name;
  bool parallel;
  const char *row_elementwise, *row_small;
  const char *(*configure)(pyop_options *o);
} par_mode;

/* Whether this Python runs without a GIL now (a free-threaded build that
 * did not turn it back on: PYTHON_GIL=1, or an extension module without
 * Py_mod_gil imported). */
#ifdef Py_GIL_DISABLED
static bool python_gil_disabled(void) {
  PyGILState_STATE st = PyGILState_Ensure();
  PyObject *sys = PyImport_ImportModule("sys");
  PyObject *r = sys != NULL ? PyObject_CallMethod(sys, "_is_gil_enabled", NULL) : NULL;
  bool off = r == Py_False;
  if (r == NULL)
    PyErr_Clear();
  Py_XDECREF(r);
  Py_XDECREF(sys);
  PyGILState_Release(st);
  return off;
}
#endif

static const char *mode_shared_gil(pyop_options *o) {
  (void)o;
#ifdef Py_GIL_DISABLED
  return "n/a on a free-threaded Python (no GIL to share)";
#else
  return NULL;
#endif
}

static const char *mode_free_threaded(pyop_options *o) {
  (void)o;
#ifdef Py_GIL_DISABLED
  return python_gil_disabled() ? NULL
                               : "the free-threaded Python runs with its GIL enabled "
                                 "(PYTHON_GIL=1, or an extension turned it on)";
#else
  return "not present: this Python has a GIL (a build whose default Python is a "
         "free-threaded 3.13t measures it: tools/test-all.sh freethreaded)";
#endif
}

static const par_mode modes[] = {
    {"one shared GIL", false, "10a", "10b", mode_shared_gil},
    {"free-threaded", true, "10f", "10g", mode_free_threaded},
};
#define NMODES (sizeof modes / sizeof modes[0])

/* ----------------------------------------------------------- the work */

typedef struct lane {
  pyop_op *elementwise, *small;
  float x[ELEMS], y[ELEMS];
  float c[ELEMS]; /* the control's buffer */
  pyop_tensor in, out, in_small;
  pyop_tensor_list slot, slot_small;
  pyop_exec_ctx ctx;
  bench_worker w;
  double cpu; /* CPU seconds its jobs spent on the worker (thread_cpu) */
} lane;

static lane lanes_[THREADS];

/* CPU seconds this thread has used. */
static double thread_cpu(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}
static long control_steps; /* inner steps of one control call (~ one op call) */

static void lane_setup(lane *l) {
  for (int i = 0; i < ELEMS; i++)
    l->x[i] = (float)i;
  memset(&l->in, 0, sizeof l->in);
  l->in.data = l->x;
  l->in.dtype = PYOP_DTYPE_FLOAT32;
  l->in.format = PYOP_FORMAT_ND;
  l->in.ndim = 1;
  l->in.shape[0] = ELEMS;
  l->in.nbytes = sizeof l->x;
  l->out = l->in;
  l->out.data = l->y;
  l->in_small = l->in;
  l->in_small.shape[0] = 4;
  l->in_small.nbytes = 4 * sizeof(float);
  l->slot = (pyop_tensor_list){&l->in, 1};
  l->slot_small = (pyop_tensor_list){&l->in_small, 1};
  /* Outputs are passed in allocated: the op's malloc_output_tensor gets them. */
  l->ctx = (pyop_exec_ctx)PYOP_EXEC_CTX_INIT;
}

static double job_elementwise(void *arg, long n) {
  lane *l = arg;
  double t0 = bench_now(), c0 = thread_cpu();
  for (long i = 0; i < n; i++) {
    pyop_tensor out = l->out;
    check(pyop_op_execute(l->elementwise, &l->slot, 1, &out, 1, &l->ctx),
          "pyop_op_execute BenchElementwise");
  }
  l->cpu += thread_cpu() - c0;
  return bench_now() - t0;
}

static double job_small(void *arg, long n) {
  lane *l = arg;
  double t0 = bench_now(), c0 = thread_cpu();
  for (long i = 0; i < n; i++)
    check(pyop_op_execute(l->small, &l->slot_small, 1, NULL, 0, &l->ctx),
          "pyop_op_execute BenchSmall");
  l->cpu += thread_cpu() - c0;
  return bench_now() - t0;
}

/* The control: plain C on the lane's own buffer, control_steps passes of
 * arithmetic per call (no memory traffic beyond one cache-resident array). */
static double job_control(void *arg, long n) {
  lane *l = arg;
  double t0 = bench_now(), c0 = thread_cpu();
  for (long i = 0; i < n; i++) {
    for (long s = 0; s < control_steps; s++)
      for (int k = 0; k < 64; k++)
        l->c[k] = l->c[k] * 0.999f + 1.0f;
    __asm__ volatile("" ::"r"(l->c) : "memory");
  }
  l->cpu += thread_cpu() - c0;
  return bench_now() - t0;
}

typedef double (*job_fn)(void *, long);

/* A variant's argument: a job on THREADS or on one lane's worker. */
typedef struct par_job {
  job_fn job;
  int threads;
  double cpu; /* CPU seconds of all its runs, summed over its threads */
  long calls; /* calls of all its runs */
} par_job;

typedef struct par_start {
  bench_worker *w;
  job_fn job;
  void *arg;
  long n;
  double t;
} par_start;

static void *par_thread(void *p) {
  par_start *s = p;
  s->t = bench_worker_run(s->w, s->job, s->arg, s->n);
  return NULL;
}

/*
 * n calls of the job: on lane 0's worker alone, or split over the THREADS
 * lanes' workers at once (each on its own instance); returns the wall time
 * of the whole. The workers keep their thread states (as a host's pool
 * does).
 */
static double run_par(void *arg, long n) {
  par_job *j = arg;
  double cpu0 = 0;
  for (int i = 0; i < j->threads; i++)
    cpu0 += lanes_[i].cpu;
  j->calls += n / j->threads * j->threads;
  if (j->threads == 1) {
    double t = bench_worker_run(&lanes_[0].w, j->job, &lanes_[0], n);
    j->cpu += lanes_[0].cpu - cpu0;
    return t;
  }
  par_start s[THREADS];
  pthread_t t[THREADS];
  double t0 = bench_now();
  for (int i = 0; i < THREADS; i++) {
    s[i] = (par_start){&lanes_[i].w, j->job, &lanes_[i], n / THREADS, 0};
    if (pthread_create(&t[i], NULL, par_thread, &s[i]) != 0)
      bench_die("pthread_create");
  }
  for (int i = 0; i < THREADS; i++)
    pthread_join(t[i], NULL);
  double t1 = bench_now();
  for (int i = 0; i < THREADS; i++)
    j->cpu += lanes_[i].cpu;
  j->cpu -= cpu0;
  return t1 - t0;
}

/*
 * "# ... CPU per call" line: the CPU time a call costs when THREADS threads
 * run at once over what it costs alone (warm-up and calibration included on
 * both sides). Unlike the time ratio it does not depend on whether the
 * machine had a core free: work that two threads add to each other
 * (contended reference counts or locks spinning, cache lines moving
 * between cores) raises it above 1; waiting (a lock that blocks, a
 * stop-the-world collection) does not show in it.
 */
static void print_cpu(const char *what, const par_job *one, const par_job *two) {
  double c1 = one->calls ? one->cpu / (double)one->calls : 0;
  double c2 = two->calls ? two->cpu / (double)two->calls : 0;
  printf("# %s: CPU per call %.2f us alone, %.2f us with %d threads at once: %.2fx\n", what,
         c1 * 1e6, c2 * 1e6, THREADS, c1 > 0 ? c2 / c1 : 0);
}

/* Iterations so that one repetition of job on one thread takes ~ms. */
static long calibrate(job_fn job, double ms) {
  long n = 2;
  for (;;) {
    double t = bench_worker_run(&lanes_[0].w, job, &lanes_[0], n);
    if (t >= ms / 1e3 / 8 || n >= (1L << 26)) {
      double per = t / (double)n;
      long want = (long)(ms / 1e3 / (per > 0 ? per : 1e-9));
      want += want % THREADS;
      return want < THREADS * 2 ? THREADS * 2 : want;
    }
    n *= 4;
  }
}

static int par_reps(void) {
  const char *s = getenv("PYOP_BENCH_PAR_REPS");
  int r = s && atoi(s) >= 3 ? atoi(s) | 1 : 5;
  return bench_quick() ? 3 : r;
}

/* min and median ratio of one-thread to THREADS-thread time per call. */
static void ratios(const bench_variant *one, const bench_variant *two, double *min,
                   double *med) {
  *min = two->min_iter > 0 ? one->min_iter / two->min_iter : 0;
  *med = two->per_iter > 0 ? one->per_iter / two->per_iter : 0;
}

/*
 * Measures one mode (a pyop_load with its options) and prints its rows.
 * target: the mode gives row 10 (its elementwise row then has that id).
 */
static void run_mode(const par_mode *m, bool target) {
  pyop_options o = PYOP_OPTIONS_INIT;
  const char *why = m->configure(&o);
  if (why != NULL) {
    printf("# %s: rows %s and %s skipped: %s\n", m->name, m->row_elementwise, m->row_small,
           why);
    return;
  }
  check(pyop_set_options(&o), "pyop_set_options");
  check(pyop_load(), "pyop_load");
  for (int i = 0; i < THREADS; i++) {
    check(pyop_op_create("BenchElementwise", NULL, 0, &lanes_[i].elementwise),
          "pyop_op_create BenchElementwise");
    check(pyop_op_create("BenchSmall", NULL, 0, &lanes_[i].small), "pyop_op_create BenchSmall");
  }
  const char *ms_env = getenv("PYOP_BENCH_PAR_MS");
  double ms = bench_quick() ? 2 : ms_env && atof(ms_env) > 0 ? atof(ms_env) : 40;
  long n_el = calibrate(job_elementwise, ms), n_sm = calibrate(job_small, ms);
  /* The control: as long a call as the elementwise op's. */
  /* On CPU time: a busy machine's waits would make the control too long. */
  lane *l0 = &lanes_[0];
  double cpu0 = l0->cpu;
  bench_worker_run(&l0->w, job_elementwise, l0, n_el);
  double per_el = (l0->cpu - cpu0) / (double)n_el;
  control_steps = 10000;
  cpu0 = l0->cpu;
  bench_worker_run(&l0->w, job_control, l0, 20);
  double per_call = (l0->cpu - cpu0) / 20;
  control_steps = per_call > 0 ? (long)(per_el / (per_call / control_steps)) : 10000;
  if (control_steps < 1)
    control_steps = 1;
  long n_c = n_el;

  par_job el1 = {job_elementwise, 1}, el2 = {job_elementwise, THREADS};
  par_job sm1 = {job_small, 1}, sm2 = {job_small, THREADS};
  par_job c1 = {job_control, 1}, c2 = {job_control, THREADS};
  bench_variant v[] = {
      {"elementwise float32[4096], 1 thread", run_par, &el1, n_el, 0, NULL, -1},
      {"elementwise float32[4096], 2 threads", run_par, &el2, n_el, 0, NULL, -1},
      {"~2 us op, 1 thread", run_par, &sm1, n_sm, 0, NULL, -1},
      {"~2 us op, 2 threads", run_par, &sm2, n_sm, 0, NULL, -1},
      {"C control, 1 thread", run_par, &c1, n_c, 0, NULL, -1},
      {"C control, 2 threads", run_par, &c2, n_c, 0, NULL, -1},
  };
  size_t nv = sizeof v / sizeof v[0];
  int reps = par_reps();
  printf("# %s: %d repetitions, ~%.0f ms each; elementwise %ld calls, ~2 us op %ld calls, "
         "control %ld calls of %ld steps\n",
         m->name, reps, ms, n_el, n_sm, n_c, control_steps);
  bench_interleave(v, nv, reps);
  for (size_t i = 0; i < nv; i++)
    bench_print_variant(&v[i], reps);
  print_cpu("elementwise", &el1, &el2);
  print_cpu("~2 us op", &sm1, &sm2);
  print_cpu("C control", &c1, &c2);
  double cmin, cmed, emin, emed;
  ratios(&v[4], &v[5], &cmin, &cmed);
  ratios(&v[0], &v[1], &emin, &emed);
  char what[160], raw[240], cid[16];
  const char *id = target ? "10" : m->row_elementwise;
  snprintf(what, sizeof what, "%s%s: elementwise 2 threads / 1 thread",
           target ? "parallel, " : "", m->name);
  if (!m->parallel) {
    bench_row_ratio(id, what, &v[0], &v[1], "info", 0);
  } else if (cmin < CONTROL_MIN) {
    /* Not a miss, not a pass: the machine could not run 2 threads at once. */
    snprintf(raw, sizeof raw,
             "not judged, machine busy: the C control reached %.2fx (median %.2fx), under "
             "%.2fx; measured %.2fx (median %.2fx)",
             cmin, cmed, CONTROL_MIN, emin, emed);
    bench_row(id, what, emin, "x", "n/a>=", PAR_TARGET, raw);
  } else {
    bench_row_ratio(id, what, &v[0], &v[1], ">=", PAR_TARGET);
  }
  snprintf(what, sizeof what, "%s: ~2 us op 2 threads / 1 thread", m->name);
  bench_row_ratio(m->row_small, what, &v[2], &v[3], "info", 0);
  snprintf(what, sizeof what, "%s: C control 2 threads / 1 thread", m->name);
  snprintf(cid, sizeof cid, "%sc", m->row_elementwise);
  bench_row_ratio(cid, what, &v[4], &v[5], "info", 0);
  bench_variants_free(v, nv);
  for (int i = 0; i < THREADS; i++) {
    pyop_op_destroy(lanes_[i].elementwise);
    pyop_op_destroy(lanes_[i].small);
    lanes_[i].elementwise = lanes_[i].small = NULL;
  }
  check(pyop_unload(), "pyop_unload");
}

int main(void) {
  bench_init();
  if (bench_counting()) {
    /* Several threads: timed only (bench/README.md, "Instruction counts"). */
    printf("ICOUNT|*|-|-|-|several threads: not counted\n");
    return 0;
  }
  const char *plugins = getenv("PYOP_BENCH_PLUGINS");
  if (!plugins || !plugins[0])
    plugins = PYOP_BENCH_PLUGINS_DIR;
  char opp[4096];
  snprintf(opp, sizeof opp, "%s/bench_parallel_ops.py", plugins);
  setenv("ASCEND_CUSTOM_OPP_PATH", opp, 1);
  printf("# bench_parallel: %s, %d host threads, one op instance each; plugins %s\n",
#ifdef Py_GIL_DISABLED
         "free-threaded Python",
#else
         "Python with a GIL",
#endif
         THREADS, opp);
  for (int i = 0; i < THREADS; i++) {
    lane_setup(&lanes_[i]);
    bench_worker_start(&lanes_[i].w);
  }
  bench_python_start();
  /* The first parallel mode that can run here gives row 10. */
  const par_mode *target = NULL;
  for (size_t i = 0; i < NMODES && target == NULL; i++) {
    pyop_options o = PYOP_OPTIONS_INIT;
    if (modes[i].parallel && modes[i].configure(&o) == NULL)
      target = &modes[i];
  }
  if (target == NULL)
    bench_row("10", "parallel: elementwise 2 threads / 1 thread", 0, "x", "n/a>=", PAR_TARGET,
              "not run in this process (its Python has neither lanes nor free threading): "
              "lanes are rows 10l (bench/lanes.sh, CPython 3.12+), free threading 10f");
  for (size_t i = 0; i < NMODES; i++)
    run_mode(&modes[i], &modes[i] == target);
  for (int i = 0; i < THREADS; i++)
    bench_worker_stop(&lanes_[i].w);
  check(pyop_shutdown(), "pyop_shutdown");
  bench_python_stop();
  return 0;
}
