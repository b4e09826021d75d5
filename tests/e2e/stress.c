/*
 * Concurrency stress through the public API: 8 host threads load, list, get,
 * create, execute, infer, destroy, unload and shut down at random for a
 * bounded time (E2E_STRESS_SECONDS, default 3).
 *
 * Asserted:
 * - no crash, no deadlock: a watchdog thread aborts with a report when no
 *   call completed for 30 s;
 * - every call succeeds or fails with a documented status:
 *     pyop_load OK; pyop_unload / pyop_shutdown OK or PYOP_EBUSY (message
 *     naming the live instances); pyop_op_create / pyop_op_get OK or
 *     PYOP_ENOENT; execute / infer_meta on a live instance always OK with
 *     the right numbers;
 * - the registry is never seen half-loaded: pyop_op_list returns either no
 *   op or exactly the full set.
 *
 * Built twice from this source:
 *   stress_fake  (no STRESS_REAL) with the fake bridge (tests/fake_bridge,
 *                variant GOOD, via PYOP_BRIDGE_DIR). The process has no
 *                Python: it exports Py_IsInitialized and Py_Version itself so
 *                that libpyop's runtime key resolves to cp311-<machine> and
 *                the fake bridge (which never touches Python) is chosen.
 *                Under ThreadSanitizer it checks libpyop alone.
 *   stress_real  (STRESS_REAL) links libpython, initialises it, and uses the
 *                real bridge with tests/e2e/plugins/stress.
 * ASCEND_CUSTOM_OPP_PATH is set by the test (a directory with a .py file).
 */
#ifdef STRESS_REAL
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#endif

#include "e2e_util.h"

#ifndef STRESS_REAL
/* The fake Python of stress_fake (see above); exported (ENABLE_EXPORTS). */
__attribute__((visibility("default"))) int Py_IsInitialized(void);
__attribute__((visibility("default"))) int Py_IsInitialized(void) { return 1; }
__attribute__((visibility("default"))) extern const unsigned long Py_Version;
__attribute__((visibility("default"))) const unsigned long Py_Version = 0x030B04F0UL;
#define ADD_OP "FakeAdd"
#define FULL_LIST "FakeAdd,FakeIdentity"
#define INFER_ONLY_OP "FakeIdentity"
#else
#define ADD_OP "StressAdd"
#define FULL_LIST "StressAdd,StressInfer,StressNeg"
#define INFER_ONLY_OP "StressInfer"
#endif

enum { N_THREADS = 8 };

enum act {
  A_LOAD, A_UNLOAD, A_SHUTDOWN, A_LIST, A_GET, A_CREATE, A_EXEC, A_INFER, A_DESTROY,
  A_COUNT
};
static const char *const act_name[A_COUNT] = {"load", "unload", "shutdown", "list", "get",
                                              "create", "execute", "infer_meta", "destroy"};

typedef struct worker {
  int index;
  unsigned seed;
  atomic_int current; /* act being run, -1 between calls */
  long ok[A_COUNT];
  long busy[A_COUNT];   /* PYOP_EBUSY */
  long noent[A_COUNT];  /* PYOP_ENOENT */
  long lists_full, lists_empty;
  pyop_op *held;       /* an instance kept across iterations */
  int held_for;
} worker;

static worker g_w[N_THREADS];
static atomic_long g_progress;
static atomic_int g_stop;
static double g_deadline;
static char *g_full_list;

/* Log lines go to the host's hook (counted), not stderr: a refused
 * shutdown logs an error every time, and it happens thousands of times. */
static atomic_long g_log_lines, g_log_bad;

static void count_log(void *user, int level, const char *line) {
  (void)user;
  atomic_fetch_add(&g_log_lines, 1);
  if (level == PYOP_LOG_ERROR && !strstr(line, "shutdown refused")) {
    if (atomic_fetch_add(&g_log_bad, 1) < 5) fprintf(stderr, "unexpected error log: %s\n", line);
  }
}

static void unexpected(worker *w, int act, int rc) {
  CHECK(0, "thread %d: %s returned %s, which is not a documented outcome here: %s", w->index,
        act_name[act], pyop_status_name(rc), pyop_last_error());
}

/* x + alpha * y on 8 floats through inst; checks the numbers. */
static void exec_on(worker *w, pyop_op *inst, double alpha) {
  float x[8], y[8];
  for (int i = 0; i < 8; i++) {
    x[i] = (float)(w->index + i);
    y[i] = (float)(i % 3);
  }
  pyop_tensor tx = f32_1d(x, 8), ty = f32_1d(y, 8);
  pyop_tensor_list in[2] = {one(&tx), one(&ty)};
  pyop_tensor out[1];
  host_mem mem = {0};
  pyop_exec_ctx ctx = host_ctx(&mem);
  atomic_store(&w->current, A_EXEC);
  int rc = pyop_op_execute(inst, in, 2, out, 1, &ctx);
  if (rc != PYOP_OK) {
    unexpected(w, A_EXEC, rc);
  } else {
    bool right = out[0].data != NULL;
    for (int i = 0; right && i < 8; i++)
      right = ((float *)out[0].data)[i] == x[i] + (float)alpha * y[i];
    CHECK(right, "thread %d: execute gave wrong numbers", w->index);
    w->ok[A_EXEC]++;
  }
  host_mem_reset(&mem);
  atomic_store(&w->current, A_INFER);
  rc = pyop_op_infer_meta(inst, in, 2, out, 1);
  if (rc != PYOP_OK) unexpected(w, A_INFER, rc);
  else {
    CHECK(out[0].ndim == 1 && out[0].shape[0] == 8 && out[0].dtype == PYOP_DTYPE_FLOAT32,
          "thread %d: infer_meta result", w->index);
    w->ok[A_INFER]++;
  }
}

static void destroy_held(worker *w) {
  if (!w->held) return;
  atomic_store(&w->current, A_DESTROY);
  pyop_op_destroy(w->held);
  w->held = NULL;
  w->ok[A_DESTROY]++;
}

/* Calm phases (a fifth of the time): threads drop their held instances
 * and mostly load, unload, list and get, so that unloads succeed and race
 * with lookups; a few creates still race with the unloads. */
static atomic_int g_calm;

static void step(worker *w) {
  int r = (int)(rand_r(&w->seed) % 100);
  int rc;
  if (atomic_load(&g_calm)) {
    destroy_held(w);
    r = r < 5 ? 95 : r % 50; /* 5% create, else load/unload/list/get */
  }
  if (r < 8) {
    atomic_store(&w->current, A_LOAD);
    rc = pyop_load();
    if (rc == PYOP_OK) w->ok[A_LOAD]++;
    else unexpected(w, A_LOAD, rc);
  } else if (r < 18 || (r < 21 && !w->held)) {
    bool shut = r >= 16;
    int act = shut ? A_SHUTDOWN : A_UNLOAD;
    atomic_store(&w->current, act);
    rc = shut ? pyop_shutdown() : pyop_unload();
    if (rc == PYOP_OK) w->ok[act]++;
    else if (rc == PYOP_EBUSY) {
      w->busy[act]++;
      CHECK(err_has("alive") && err_has("destroy them first"),
            "thread %d: EBUSY message: %s", w->index, pyop_last_error());
    } else unexpected(w, act, rc);
  } else if (r < 40) {
    atomic_store(&w->current, A_LIST);
    size_t n = 0;
    char *s = op_list_str(&n);
    if (n == 0) w->lists_empty++;
    else if (strcmp(s, g_full_list) == 0) w->lists_full++;
    else CHECK(0, "thread %d: registry seen half-loaded: [%s] (full: [%s])", w->index, s,
               g_full_list);
    free(s);
    w->ok[A_LIST]++;
  } else if (r < 50) {
    atomic_store(&w->current, A_GET);
    const pyop_op_info *info = NULL;
    const char *which = (r & 1) ? ADD_OP : INFER_ONLY_OP;
    rc = pyop_op_get(which, &info);
    if (rc == PYOP_OK) {
      CHECK(strcmp(info->op_type, which) == 0 && info->n_inputs >= 1 && info->n_outputs == 1,
            "thread %d: description of %s", w->index, which);
      pyop_op_info_release(info);
      w->ok[A_GET]++;
    } else if (rc == PYOP_ENOENT) {
      w->noent[A_GET]++;
      CHECK(err_has(which), "thread %d: ENOENT does not name %s", w->index, which);
    } else unexpected(w, A_GET, rc);
  } else if (w->held && r < 80) {
    exec_on(w, w->held, 0.5);
    if (--w->held_for <= 0) destroy_held(w);
  } else {
    atomic_store(&w->current, A_CREATE);
    pyop_attr a = attr_float("alpha", 0.5);
    pyop_op *inst = NULL;
    rc = pyop_op_create(ADD_OP, &a, 1, &inst);
    if (rc == PYOP_OK) {
      w->ok[A_CREATE]++;
      exec_on(w, inst, 0.5);
      if (!w->held && r >= 90) {
        w->held = inst; /* keep it a while: unloads meet live instances */
        w->held_for = 1 + (int)(rand_r(&w->seed) % 6);
      } else {
        atomic_store(&w->current, A_DESTROY);
        pyop_op_destroy(inst);
        w->ok[A_DESTROY]++;
      }
    } else if (rc == PYOP_ENOENT) {
      w->noent[A_CREATE]++;
      CHECK(err_has(ADD_OP), "thread %d: ENOENT does not name " ADD_OP, w->index);
    } else unexpected(w, A_CREATE, rc);
  }
  atomic_store(&w->current, -1);
  atomic_fetch_add(&g_progress, 1);
}

static void *worker_main(void *p) {
  worker *w = p;
  while (now_s() < g_deadline && atomic_load(&e2e_failures) < 20) step(w);
  destroy_held(w);
  return NULL;
}

/* Aborts the process when no call completed for 30 s. */
static void *watchdog_main(void *p) {
  (void)p;
  long last = -1;
  double since = now_s();
  while (!atomic_load(&g_stop)) {
    struct timespec ts = {0, 200 * 1000 * 1000};
    nanosleep(&ts, NULL);
    long now = atomic_load(&g_progress);
    if (now != last) {
      last = now;
      since = now_s();
    } else if (now_s() - since > 30) {
      fprintf(stderr, "FAIL [%s]: no progress for 30 s (deadlock?) after %ld calls; "
              "threads are in:\n", e2e_case, now);
      for (int i = 0; i < N_THREADS; i++) {
        int c = atomic_load(&g_w[i].current);
        fprintf(stderr, "  thread %d: %s\n", i, c < 0 ? "(between calls)" : act_name[c]);
      }
      abort();
    }
  }
  return NULL;
}

int main(void) {
#ifdef STRESS_REAL
  e2e_case = "stress.real";
  Py_InitializeEx(0);
  PyThreadState *main_ts = PyEval_SaveThread();
#else
  e2e_case = "stress.fake";
#endif
  g_full_list = xstrdup(FULL_LIST);
  const char *secs = getenv("E2E_STRESS_SECONDS");
  double seconds = secs ? atof(secs) : 3.0;

  pyop_host_hooks hooks = PYOP_HOST_HOOKS_INIT;
  hooks.log = count_log;
  REQUIRE_RC(pyop_set_host_hooks(&hooks), PYOP_OK);

  /* The registry is complete after one load, before the race starts. */
  REQUIRE_RC(pyop_load(), PYOP_OK);
  CHECK_LIST(FULL_LIST);
  CHECK_RC(pyop_unload(), PYOP_OK);

  g_deadline = now_s() + seconds;
  pthread_t th[N_THREADS], dog;
  REQUIRE(pthread_create(&dog, NULL, watchdog_main, NULL) == 0, "watchdog");
  for (int i = 0; i < N_THREADS; i++) {
    g_w[i].index = i;
    g_w[i].seed = 12345u + (unsigned)i * 7919u;
    atomic_store(&g_w[i].current, -1);
    REQUIRE(pthread_create(&th[i], NULL, worker_main, &g_w[i]) == 0, "pthread_create");
  }
  while (now_s() < g_deadline) {
    struct timespec busy = {0, 80 * 1000 * 1000}, calm = {0, 20 * 1000 * 1000};
    nanosleep(&busy, NULL);
    atomic_store(&g_calm, 1);
    nanosleep(&calm, NULL);
    atomic_store(&g_calm, 0);
  }
  for (int i = 0; i < N_THREADS; i++) pthread_join(th[i], NULL);
  atomic_store(&g_stop, 1);
  pthread_join(dog, NULL);

  long total[A_COUNT] = {0}, busy[A_COUNT] = {0}, noent[A_COUNT] = {0}, full = 0, empty = 0;
  for (int i = 0; i < N_THREADS; i++) {
    for (int a = 0; a < A_COUNT; a++) {
      total[a] += g_w[i].ok[a];
      busy[a] += g_w[i].busy[a];
      noent[a] += g_w[i].noent[a];
    }
    full += g_w[i].lists_full;
    empty += g_w[i].lists_empty;
  }
  fprintf(stderr, "[%s] %ld calls in %.1f s:\n", e2e_case, atomic_load(&g_progress), seconds);
  for (int a = 0; a < A_COUNT; a++)
    fprintf(stderr, "  %-10s ok %6ld  EBUSY %5ld  ENOENT %5ld\n", act_name[a], total[a],
            busy[a], noent[a]);
  fprintf(stderr, "  lists: %ld full, %ld empty; %ld log lines\n", full, empty,
          atomic_load(&g_log_lines));
  CHECK(atomic_load(&g_log_bad) == 0, "%ld unexpected error lines logged",
        atomic_load(&g_log_bad));
  /* The race must have happened for the test to mean anything. */
  CHECK(total[A_EXEC] > 0 && total[A_UNLOAD] + total[A_SHUTDOWN] > 0 && total[A_LOAD] > 0,
        "too few operations to be a stress test");

  /* After the race: all instances gone, so unload and shutdown succeed. */
  CHECK_RC(pyop_load(), PYOP_OK);
  CHECK_LIST(FULL_LIST);
  CHECK_RC(pyop_shutdown(), PYOP_OK);
  CHECK_LIST("");
  free(g_full_list);
#ifdef STRESS_REAL
  PyEval_RestoreThread(main_ts);
  CHECK(Py_FinalizeEx() == 0, "Py_FinalizeEx");
#endif
  return e2e_finish();
}
