/*
 * The benchmarks' Python host: a C program that links the default Python's
 * libpython (as an embedding host would), initialises it, releases the GIL
 * and then calls libpyop from host threads.
 */
#ifndef PYOP_BENCH_PYTHON_H
#define PYOP_BENCH_PYTHON_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <pthread.h>
#include <stdbool.h>

/*
 * Initialises Python with an isolated configuration (no PYTHON* variables,
 * no cwd or user site on sys.path) that never writes bytecode and hashes
 * strings with the fixed seed 0 (repeatable instruction counts), then
 * releases the GIL: from here on every thread takes it with
 * PyGILState_Ensure. Exits on failure.
 */
void bench_python_start(void);

/* Takes the GIL back on the initialising thread and finalises Python. Call
 * after pyop_shutdown and after every worker thread ended. */
void bench_python_stop(void);

/* Prints the pending Python exception (the GIL is held) and exits. */
void bench_python_die(const char *what) __attribute__((noreturn));

/*
 * A persistent host thread that runs jobs on request, so a benchmark can
 * measure on a thread of its choice (one that keeps the Python thread state
 * the bridge gave it, or one that never called libpyop).
 */
typedef struct bench_worker {
  pthread_t thread;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  double (*job)(void *arg, long n);
  void *arg;
  long n;
  double result;
  bool pending, done, quit;
} bench_worker;

void bench_worker_start(bench_worker *w);
/* Runs job(arg, n) on w's thread and returns its result. */
double bench_worker_run(bench_worker *w, double (*job)(void *, long), void *arg, long n);
/* Ends the thread (its thread-specific destructors run) and joins it. */
void bench_worker_stop(bench_worker *w);

/* Runs job(arg, n) on a brand-new thread, joins it, returns the result. */
double bench_fresh_thread_run(double (*job)(void *, long), void *arg, long n);

#endif
