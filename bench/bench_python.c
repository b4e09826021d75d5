/* The benchmarks' Python host; see bench_python.h. */
#include "bench_python.h"

#include "bench_util.h"

#include <string.h>

static PyThreadState *main_ts;

void bench_python_start(void) {
  PyConfig config;
  PyConfig_InitIsolatedConfig(&config);
  config.write_bytecode = 0;
  config.install_signal_handlers = 0;
  /* A fixed string-hash seed: dict and set probing repeats from run to run,
   * so the count run's instruction figures do too. */
  config.use_hash_seed = 1;
  config.hash_seed = 0;
  PyStatus st = Py_InitializeFromConfig(&config);
  PyConfig_Clear(&config);
  if (PyStatus_Exception(st))
    bench_die("cannot initialise Python: %s", st.err_msg ? st.err_msg : "unknown error");
  main_ts = PyEval_SaveThread();
}

void bench_python_stop(void) {
  if (!main_ts) return;
  PyEval_RestoreThread(main_ts);
  main_ts = NULL;
  Py_FinalizeEx();
}

void bench_python_die(const char *what) {
  fprintf(stderr, "bench: %s failed:\n", what);
  if (PyErr_Occurred()) PyErr_Print();
  exit(1);
}

static void *worker_main(void *p) {
  bench_worker *w = p;
  pthread_mutex_lock(&w->mu);
  for (;;) {
    while (!w->pending && !w->quit) pthread_cond_wait(&w->cv, &w->mu);
    if (w->quit) break;
    pthread_mutex_unlock(&w->mu);
    double r = w->job(w->arg, w->n);
    pthread_mutex_lock(&w->mu);
    w->result = r;
    w->pending = false;
    w->done = true;
    pthread_cond_broadcast(&w->cv);
  }
  pthread_mutex_unlock(&w->mu);
  return NULL;
}

void bench_worker_start(bench_worker *w) {
  memset(w, 0, sizeof *w);
  pthread_mutex_init(&w->mu, NULL);
  pthread_cond_init(&w->cv, NULL);
  if (pthread_create(&w->thread, NULL, worker_main, w) != 0) bench_die("pthread_create");
}

double bench_worker_run(bench_worker *w, double (*job)(void *, long), void *arg, long n) {
  pthread_mutex_lock(&w->mu);
  w->job = job;
  w->arg = arg;
  w->n = n;
  w->done = false;
  w->pending = true;
  pthread_cond_broadcast(&w->cv);
  while (!w->done) pthread_cond_wait(&w->cv, &w->mu);
  double r = w->result;
  pthread_mutex_unlock(&w->mu);
  return r;
}

void bench_worker_stop(bench_worker *w) {
  pthread_mutex_lock(&w->mu);
  w->quit = true;
  pthread_cond_broadcast(&w->cv);
  pthread_mutex_unlock(&w->mu);
  pthread_join(w->thread, NULL);
  pthread_mutex_destroy(&w->mu);
  pthread_cond_destroy(&w->cv);
}

typedef struct fresh_job {
  double (*job)(void *, long);
  void *arg;
  long n;
  double result;
} fresh_job;

static void *fresh_main(void *p) {
  fresh_job *j = p;
  j->result = j->job(j->arg, j->n);
  return NULL;
}

double bench_fresh_thread_run(double (*job)(void *, long), void *arg, long n) {
  fresh_job j = {job, arg, n, 0.0};
  pthread_t t;
  if (pthread_create(&t, NULL, fresh_main, &j) != 0) bench_die("pthread_create");
  pthread_join(t, NULL);
  return j.result;
}
