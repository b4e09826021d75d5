/*
 * Host threads and Python threads sharing libpyop's objects (issue 30). A
 * free-threaded CPython (3.13t, tools/test-all.sh stage freethreaded) runs
 * them at once; every case also runs on the default GIL build, where it
 * must pass as well. A C host linking the default Python's libpython, as
 * host_e2e; plugins from tests/e2e/plugins/ft, copied to a temporary tree.
 *
 *   host_ft --list | CASE
 *
 * The cases are HOST_FT_CASES at the end (one ctest each, tests/cases.h;
 * tests/e2e/CMakeLists.txt drops those a build cannot run); the comment
 * above each case_<name> says what it checks.
 *
 * Each case runs under a watchdog: a hang fails it with a message saying
 * what was waiting (E2E_FT_WATCHDOG seconds, default 90).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "e2e_util.h"
#include "../cases.h"

#ifndef E2E_PLUGINS
#error "E2E_PLUGINS (tests/e2e/plugins) must be defined"
#endif

static char *g_tmp;
static PyThreadState *g_main_ts;

/* Points ASCEND_CUSTOM_OPP_PATH at the copy of plugins/ft/<rel>. */
static void opp_ft(const char *rel) {
  char *p = xasprintf("%s/e2e/ft/%s", g_tmp, rel);
  set_opp_path(p);
  free(p);
}

/* ------------------------------------------------------------- watchdog */

/* What the running case waits for, for the watchdog's message (set by the
 * case; read once, when the watchdog fires). */
static void (*g_watch_say)(char *buf, size_t n);

static void *watchdog(void *arg) {
  int seconds = *(int *)arg;
  sleep((unsigned)seconds);
  char what[512] = "no detail";
  if (g_watch_say)
    g_watch_say(what, sizeof what);
  fprintf(stderr, "FAIL [%s]: watchdog: the case hung for %d s: %s\n", e2e_case, seconds,
          what);
  _exit(3);
}

static void start_watchdog(void) {
  static int seconds = 90;
  const char *s = getenv("E2E_FT_WATCHDOG");
  if (s && atoi(s) > 0)
    seconds = atoi(s);
  pthread_t t;
  if (pthread_create(&t, NULL, watchdog, &seconds) != 0)
    abort();
  pthread_detach(t);
}

/* ------------------------------------------------------------- helpers */

static pyop_op *create(const char *op_type) {
  pyop_op *op = NULL;
  int rc = pyop_op_create(op_type, NULL, 0, &op);
  REQUIRE(rc == PYOP_OK, "create %s: %s", op_type, pyop_status_name(rc));
  return op;
}

/* Executes op on x (float32[n]) into out (n floats, NULL: no output). */
static int exec_into(pyop_op *op, float *x, int64_t n, float *out) {
  pyop_tensor tx = f32_1d(x, n);
  pyop_tensor_list in[1] = {one(&tx)};
  pyop_tensor o[1];
  pyop_tensor_list *ins = in;
  host_mem mem = {0};
  pyop_exec_ctx ctx = host_ctx(&mem);
  memset(o, 0, sizeof o);
  int rc = pyop_op_execute(op, ins, 1, o, out ? 1 : 0, &ctx);
  if (rc == PYOP_OK && out && o[0].data)
    memcpy(out, o[0].data, (size_t)n * sizeof(float));
  host_mem_reset(&mem);
  return rc;
}

static void fill(float *x, int64_t n, float base) {
  for (int64_t i = 0; i < n; i++)
    x[i] = base + (float)i;
}

static bool same(const float *a, const float *b, int64_t n) {
  return memcmp(a, b, (size_t)n * sizeof(float)) == 0;
}

/* The warnings and errors of the host's log hook, one a line. */
static char g_log[8192];
static pthread_mutex_t g_log_lock = PTHREAD_MUTEX_INITIALIZER;

static void capture_log(void *user, int level, const char *line) {
  (void)user;
  if (level > PYOP_LOG_WARN)
    return;
  pthread_mutex_lock(&g_log_lock);
  size_t n = strlen(g_log);
  snprintf(g_log + n, sizeof g_log - n, "%s\n", line);
  pthread_mutex_unlock(&g_log_lock);
}

/* How many lines of the captured log contain s. */
static int log_count(const char *s) {
  int n = 0;
  pthread_mutex_lock(&g_log_lock);
  for (const char *p = g_log; (p = strstr(p, s)) != NULL; p += strlen(s))
    n++;
  pthread_mutex_unlock(&g_log_lock);
  return n;
}

/* ======================================================== nested_cross */

#define NEST_N 8
#define NEST_ROUNDS 20

typedef struct nest_arg {
  pyop_op *mine, *other;
  int id;
  float x[NEST_N], out[NEST_N], inner_out[NEST_N];
  int inner_rc;      /* the nested execute's status, this round */
  int ok;            /* rounds whose outer and nested calls were right */
  atomic_int rounds; /* rounds begun */
} nest_arg;

static atomic_int g_nest_done;
static nest_arg g_nest[2];
#ifdef Py_GIL_DISABLED
static pthread_barrier_t g_nest_barrier;
#endif

/*
 * The outer call's alloc_output: waits until the other thread is inside
 * its own outer call too (a free-threaded Python runs both at once; under
 * a GIL the thread waiting here would keep the GIL from the other), then
 * executes the other thread's instance, then hands out the output. It
 * waits detached from Python, as a host service that blocks should: a
 * garbage collection the other thread starts meanwhile stops every
 * attached thread first.
 */
static int nest_alloc(void *user, size_t index, pyop_tensor *t) {
  nest_arg *a = user;
  if (index != 0 || t->nbytes != sizeof a->out)
    return -1;
#ifdef Py_GIL_DISABLED
  PyThreadState *ts = PyEval_SaveThread();
  pthread_barrier_wait(&g_nest_barrier);
  PyEval_RestoreThread(ts);
#endif
  memset(a->inner_out, 0, sizeof a->inner_out);
  a->inner_rc = exec_into(a->other, a->x, NEST_N, a->inner_out);
  t->data = a->out;
  return 0;
}

static void *nest_thread(void *p) {
  nest_arg *a = p;
  for (int r = 0; r < NEST_ROUNDS; r++) {
    atomic_fetch_add(&a->rounds, 1);
    fill(a->x, NEST_N, (float)(100 * a->id + r));
    memset(a->out, 0, sizeof a->out);
    pyop_tensor tx = f32_1d(a->x, NEST_N);
    pyop_tensor_list in[1] = {one(&tx)};
    pyop_tensor o[1];
    memset(o, 0, sizeof o);
    pyop_exec_ctx ctx = PYOP_EXEC_CTX_INIT;
    ctx.user = a;
    ctx.alloc_output = nest_alloc;
    int rc = pyop_op_execute(a->mine, in, 1, o, 1, &ctx);
    CHECK(rc == PYOP_OK, "thread %d round %d: outer execute: %s", a->id, r,
          pyop_status_name(rc));
    CHECK(a->inner_rc == PYOP_OK, "thread %d round %d: nested execute: %s", a->id, r,
          pyop_status_name(a->inner_rc));
    if (rc == PYOP_OK && a->inner_rc == PYOP_OK && same(a->out, a->x, NEST_N) &&
        same(a->inner_out, a->x, NEST_N))
      a->ok++;
#ifdef Py_GIL_DISABLED
    /* Both out of round r before either begins r + 1: a thread waiting in
     * nest_alloc would otherwise keep its instance from the other thread's
     * nested call of round r (the host's wait, not libpyop's). */
    pthread_barrier_wait(&g_nest_barrier);
#endif
  }
  atomic_fetch_add(&g_nest_done, 1);
  return NULL;
}

static void nest_say(char *buf, size_t n) {
  snprintf(buf, n,
           "deadlock: %d of 2 threads finished (rounds begun: %d and %d of %d); each "
           "executes its own instance and its alloc_output executes the other's",
           atomic_load(&g_nest_done), atomic_load(&g_nest[0].rounds),
           atomic_load(&g_nest[1].rounds), NEST_ROUNDS);
}

/*
 * Two host threads each execute their own instance, and the host's
 * alloc_output of each (both threads inside their outer call first)
 * executes the other thread's instance: 20 rounds, every call right, no
 * thread waits forever (the watchdog names the deadlock).
 */
static void case_nested_cross(void) {
  opp_ft("nest");
  REQUIRE_RC(pyop_load(), PYOP_OK);
  pyop_op *x = create("FtCopy"), *y = create("FtCopy");
#ifdef Py_GIL_DISABLED
  pthread_barrier_init(&g_nest_barrier, NULL, 2);
#endif
  g_nest[0].mine = x;
  g_nest[0].other = y;
  g_nest[1].mine = y;
  g_nest[1].other = x;
  g_watch_say = nest_say;
  pthread_t th[2];
  for (int i = 0; i < 2; i++) {
    g_nest[i].id = i;
    REQUIRE(pthread_create(&th[i], NULL, nest_thread, &g_nest[i]) == 0, "pthread_create");
  }
  for (int i = 0; i < 2; i++)
    pthread_join(th[i], NULL);
  g_watch_say = NULL;
  for (int i = 0; i < 2; i++)
    CHECK(g_nest[i].ok == NEST_ROUNDS, "thread %d: %d of %d rounds right", i, g_nest[i].ok,
          NEST_ROUNDS);
  fprintf(stderr, "[nested_cross] 2 threads x %d rounds, each nesting into the other's "
          "instance: %d and %d right\n", NEST_ROUNDS, g_nest[0].ok, g_nest[1].ok);
  pyop_op_destroy(x);
  pyop_op_destroy(y);
#ifdef Py_GIL_DISABLED
  pthread_barrier_destroy(&g_nest_barrier);
#endif
  CHECK_RC(pyop_unload(), PYOP_OK);
}

/* =========================================================== lock_wait */

/*
 * A host service that waits for another thread's call of its own instance:
 * that call waits for the instance's lock, which the waiting call holds. The
 * bridge names the wait after 3 s; the service gives up after 20 s.
 */
#ifdef Py_GIL_DISABLED
static pthread_mutex_t g_lw_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_lw_cond = PTHREAD_COND_INITIALIZER;
static bool g_lw_go;
static pyop_op *g_lw_op;
static int g_lw_rc = -1;
static const char g_lw_said[] = "has waited 3 s for the lock of its op instance";

static void *lw_thread(void *p) {
  (void)p;
  pthread_mutex_lock(&g_lw_lock);
  while (!g_lw_go)
    pthread_cond_wait(&g_lw_cond, &g_lw_lock);
  pthread_mutex_unlock(&g_lw_lock);
  float x[4] = {1, 2, 3, 4}, out[4] = {0};
  g_lw_rc = exec_into(g_lw_op, x, 4, out);
  return NULL;
}

/* alloc_output: starts the other thread's call and waits (detached) until
 * the log names its wait, 20 s at most. */
static int lw_alloc(void *user, size_t index, pyop_tensor *t) {
  (void)index;
  PyThreadState *ts = PyEval_SaveThread();
  pthread_mutex_lock(&g_lw_lock);
  g_lw_go = true;
  pthread_cond_broadcast(&g_lw_cond);
  pthread_mutex_unlock(&g_lw_lock);
  for (int i = 0; i < 200 && log_count(g_lw_said) == 0; i++)
    usleep(100000);
  PyEval_RestoreThread(ts);
  t->data = user;
  return 0;
}
#endif

/*
 * (Free-threaded builds; a GIL build only says why it does nothing.) The
 * host's alloc_output waits for another thread's call of the same instance:
 * that call's wait for the instance's lock is named in one log line after 3
 * s (the service then gives up waiting and both calls complete).
 */
static void case_lock_wait(void) {
#ifndef Py_GIL_DISABLED
  fprintf(stderr, "[lock_wait] a GIL build: the waiting service would keep the GIL\n");
#else
  pyop_host_hooks hooks = PYOP_HOST_HOOKS_INIT;
  hooks.log = capture_log;
  REQUIRE_RC(pyop_set_host_hooks(&hooks), PYOP_OK);
  opp_ft("nest");
  REQUIRE_RC(pyop_load(), PYOP_OK);
  g_lw_op = create("FtCopy");
  pthread_t t;
  REQUIRE(pthread_create(&t, NULL, lw_thread, NULL) == 0, "pthread_create");
  float x[4] = {5, 6, 7, 8}, out[4] = {0};
  pyop_tensor tx = f32_1d(x, 4);
  pyop_tensor_list in[1] = {one(&tx)};
  pyop_tensor o[1];
  memset(o, 0, sizeof o);
  pyop_exec_ctx ctx = PYOP_EXEC_CTX_INIT;
  ctx.user = out;
  ctx.alloc_output = lw_alloc;
  CHECK_RC(pyop_op_execute(g_lw_op, in, 1, o, 1, &ctx), PYOP_OK);
  pthread_join(t, NULL);
  CHECK(g_lw_rc == PYOP_OK, "the other thread's call: %s", pyop_status_name(g_lw_rc));
  CHECK(log_count(g_lw_said) == 1 && log_count("execute of op 'FtCopy' on thread ") == 1,
        "the wait for the instance's lock is not named once:\n%s", g_log);
  fprintf(stderr, "[lock_wait] log:\n%s", g_log);
  pyop_op_destroy(g_lw_op);
  CHECK_RC(pyop_unload(), PYOP_OK);
#endif
}

/* ========================================================== views cases */

static atomic_int g_calls;

static void calls_say(char *buf, size_t n) {
  snprintf(buf, n, "%d calls made", atomic_load(&g_calls));
}

#define VIEWS_N 64
#define VIEWS_CALLS 100

/*
 * An execute splits its copy over two Python threads that take and release
 * views of the input and the output: 100 of 100 calls right, the instance
 * never refused (the count of open buffers is shared).
 */
static void case_views_split(void) {
  opp_ft("views");
  REQUIRE_RC(pyop_load(), PYOP_OK);
  g_watch_say = calls_say;
  pyop_op *op = create("FtSplit");
  float x[VIEWS_N], out[VIEWS_N];
  int ok = 0;
  for (int i = 0; i < VIEWS_CALLS; i++) {
    atomic_fetch_add(&g_calls, 1);
    fill(x, VIEWS_N, (float)i);
    memset(out, 0, sizeof out);
    int rc = exec_into(op, x, VIEWS_N, out);
    if (rc != PYOP_OK && ok == i)
      show_error("first failed call");
    if (rc == PYOP_OK && same(out, x, VIEWS_N))
      ok++;
  }
  CHECK(ok == VIEWS_CALLS, "%d of %d calls right (the count of open views is shared by the "
        "two threads)", ok, VIEWS_CALLS);
  fprintf(stderr, "[views_split] %d of %d calls right\n", ok, VIEWS_CALLS);
  pyop_op_destroy(op);
  CHECK_RC(pyop_unload(), PYOP_OK);
}

/*
 * One Python thread keeps a view past the call while another takes and
 * releases views: every call fails naming the escape; after the view's
 * release the next call runs.
 */
static void case_views_keep(void) {
  opp_ft("views");
  REQUIRE_RC(pyop_load(), PYOP_OK);
  g_watch_say = calls_say;
  pyop_op *keep = create("FtKeep"), *release = create("FtRelease");
  float x[VIEWS_N];
  fill(x, VIEWS_N, 0);
  int seen = 0, rounds = VIEWS_CALLS / 2;
  for (int i = 0; i < rounds; i++) {
    atomic_fetch_add(&g_calls, 1);
    int rc = exec_into(keep, x, VIEWS_N, NULL);
    bool named = rc == PYOP_EPYTHON && err_has("still alive after the callback returned");
    if (!named && seen == i)
      show_error("first call whose kept view went unseen or that was refused");
    if (named)
      seen++;
    rc = exec_into(release, x, VIEWS_N, NULL);
    CHECK(rc == PYOP_OK, "round %d: release: %s", i, pyop_status_name(rc));
  }
  CHECK(seen == rounds, "%d of %d kept views seen", seen, rounds);
  fprintf(stderr, "[views_keep] %d of %d kept views seen\n", seen, rounds);
  pyop_op_destroy(keep);
  pyop_op_destroy(release);
  CHECK_RC(pyop_unload(), PYOP_OK);
}

/*
 * One Python thread sets _x of an input view (pyop._native.ViewBase) and of
 * the call's context while two read them: no crash, every call ok (before
 * issue 30: SIGSEGV in 8 of 8 runs).
 */
static void case_view_x(void) {
  opp_ft("views");
  REQUIRE_RC(pyop_load(), PYOP_OK);
  g_watch_say = calls_say;
  pyop_op *op = create("FtViewX");
  float x[VIEWS_N];
  fill(x, VIEWS_N, 0);
  int ok = 0, calls = 30;
  for (int i = 0; i < calls; i++) {
    atomic_fetch_add(&g_calls, 1);
    int rc = exec_into(op, x, VIEWS_N, NULL);
    if (rc != PYOP_OK && ok == i)
      show_error("first failed call");
    ok += rc == PYOP_OK;
  }
  CHECK(ok == calls, "%d of %d calls ok", ok, calls);
  fprintf(stderr, "[view_x] %d of %d calls ok\n", ok, calls);
  pyop_op_destroy(op);
  CHECK_RC(pyop_unload(), PYOP_OK);
}

/* ========================================================= reload_leak */

typedef struct big_arg {
  pyop_op *op;
  int rc;
  float flag;
} big_arg;

/* One FtBig call; flag: its out[0] (1: the plugin is immortal). */
static int big_exec(pyop_op *op, float *flag) {
  float x[4] = {5, 1, 2, 3}, out[4] = {0};
  int rc = exec_into(op, x, 4, out);
  if (rc == PYOP_OK && (out[1] != 1 || out[3] != 3))
    rc = PYOP_EPYTHON;
  *flag = out[0];
  return rc;
}

static void *big_thread(void *p) {
  big_arg *a = p;
  a->rc = big_exec(a->op, &a->flag);
  return NULL;
}

/*
 * cycles loads, each executing FtBig on this thread and on another, ended
 * by pyop_unload (shutdown false) or pyop_shutdown; checks the RSS growth
 * per cycle after the first warm ones against per_cycle.
 */
static void reload_cycles(bool shutdown, int warm, int cycles, long per_cycle) {
  const char *what = shutdown ? "load/shutdown" : "load/unload";
  long base = 0;
  int immortal = 0;
  for (int i = 0; i < cycles; i++) {
    atomic_fetch_add(&g_calls, 1);
    REQUIRE_RC(pyop_load(), PYOP_OK);
    pyop_op *op = create("FtBig");
    /* Two host threads run Python: a free-threaded CPython then makes every
     * new module, function and class immortal. */
    big_arg a = {op, 0, 0};
    float flag = 0;
    CHECK_RC(big_exec(op, &flag), PYOP_OK);
    pthread_t t;
    REQUIRE(pthread_create(&t, NULL, big_thread, &a) == 0, "pthread_create");
    pthread_join(t, NULL);
    CHECK(a.rc == PYOP_OK, "cycle %d: execute on a second thread: %s", i,
          pyop_status_name(a.rc));
    immortal += a.flag == 1.0f;
    pyop_op_destroy(op);
    REQUIRE_RC(shutdown ? pyop_shutdown() : pyop_unload(), PYOP_OK);
    if (i + 1 == warm)
      base = rss_bytes();
  }
  long grown = rss_bytes() - base, per = grown / (cycles - warm);
  fprintf(stderr, "[reload_leak] %d %s cycles (the plugin immortal in %d): RSS %+ld KiB after "
          "the first %d, %+ld KiB per cycle (bound %ld KiB)\n", cycles, what, immortal,
          grown / 1024, warm, per / 1024, per_cycle / 1024);
#ifdef Py_GIL_DISABLED
  /* Else the case would measure nothing it is meant to. */
  CHECK(immortal == cycles, "%s: the plugin's functions were immortal in %d of %d cycles",
        what, immortal, cycles);
#else
  CHECK(immortal == 0, "%s: immortal plugin functions in a GIL build (%d cycles)", what,
        immortal);
#endif
  if (!getenv("E2E_NO_RSS"))
    CHECK(per <= per_cycle, "RSS grew by %ld KiB per %s cycle (bound %ld KiB)", per / 1024,
          what, per_cycle / 1024);
}

/*
 * A plugin holding 1 MiB of module state, executed on two host threads, 40
 * load / unload and 20 load / shutdown cycles: the RSS grows by at most 256
 * KiB and 768 KiB per cycle (a free-threaded Python makes the dropped
 * modules immortal: libpyop clears them, and the case checks it did).
 */
static void case_reload_leak(void) {
  opp_ft("reload");
  g_watch_say = calls_say;
  reload_cycles(false, 8, 40, 256L << 10);
  reload_cycles(true, 4, 20, 768L << 10);
}

/* The string sys._pyop_ft_thread holds (malloc'd), NULL while unset. */
static char *thread_result(void) {
  PyGILState_STATE g = PyGILState_Ensure();
  PyObject *v = PySys_GetObject("_pyop_ft_thread"); /* borrowed */
  const char *s = v != NULL && PyUnicode_Check(v) ? PyUnicode_AsUTF8(v) : NULL;
  char *out = s != NULL ? xstrdup(s) : NULL;
  PyErr_Clear();
  PyGILState_Release(g);
  return out;
}

/*
 * A plugin's thread still runs after pyop_unload and then uses its module's
 * globals: they are still there.
 */
static void case_reload_thread(void) {
  opp_ft("thread");
  REQUIRE_RC(pyop_load(), PYOP_OK);
  REQUIRE_RC(pyop_unload(), PYOP_OK);
  char *r = NULL;
  for (int i = 0; i < 3000 && r == NULL; i++) {
    usleep(10000);
    r = thread_result();
  }
  CHECK(r != NULL && !strcmp(r, "ok 10"), "the plugin's thread after the unload: %s",
        r != NULL ? r : "no result after 30 s");
  fprintf(stderr, "[reload_thread] the plugin's thread after pyop_unload: %s\n",
          r != NULL ? r : "(none)");
  free(r);
}

/* =========================================================== ge_shared */

#define GE_THREADS 4
#define GE_CALLS 3000

typedef struct ge_arg {
  pyop_op *op;
  int failed;
} ge_arg;

static void *ge_thread(void *p) {
  ge_arg *a = p;
  float x[4] = {1, 2, 3, 4}, out[4];
  for (int i = 0; i < GE_CALLS; i++) {
    atomic_fetch_add(&g_calls, 1);
    if (exec_into(a->op, x, 4, out) != PYOP_OK && a->failed++ == 0)
      show_error("a GE call failed");
  }
  return NULL;
}

/*
 * 4 host threads, an instance each of one GE op type (one shared
 * implementation object): 3,000 calls each counted exactly, none
 * overlapping (free-threaded builds; under a GIL only that they succeed);
 * an input read by three Python threads at once.
 */
static void case_ge_shared(void) {
  opp_ft("ge");
  REQUIRE_RC(pyop_load(), PYOP_OK);
  g_watch_say = calls_say;
  ge_arg args[GE_THREADS];
  pthread_t th[GE_THREADS];
  for (int i = 0; i < GE_THREADS; i++) {
    args[i] = (ge_arg){create("FtGeCount"), 0};
    REQUIRE(pthread_create(&th[i], NULL, ge_thread, &args[i]) == 0, "pthread_create");
  }
  int failed = 0;
  for (int i = 0; i < GE_THREADS; i++) {
    pthread_join(th[i], NULL);
    failed += args[i].failed;
  }
  CHECK(failed == 0, "%d GE calls failed", failed);
  /* One more call reads the count and the overlaps of the shared object. */
  float x[4] = {1, 2, 3, 4}, out[4] = {0};
  CHECK_RC(exec_into(args[0].op, x, 4, out), PYOP_OK);
  int want = GE_THREADS * GE_CALLS + 1;
#ifdef Py_GIL_DISABLED
  /* Under a GIL the calls take turns at the GIL, so their Python code may
   * interleave at a switch (every 5 ms): only free-threaded builds promise
   * one call at a time. */
  CHECK((int)out[0] == want && out[1] == 0, "the shared GE object counted %d of %d calls, "
        "%d overlapping", (int)out[0], want, (int)out[1]);
#endif
  fprintf(stderr, "[ge_shared] %d threads x %d calls on one GE object: counted %d of %d, %d "
          "overlapping\n", GE_THREADS, GE_CALLS, (int)out[0], want, (int)out[1]);
  for (int i = 0; i < GE_THREADS; i++)
    pyop_op_destroy(args[i].op);
  pyop_op *share = create("FtGeShare");
  int ok = 0;
  for (int i = 0; i < 20; i++) {
    float y[4] = {0};
    int rc = exec_into(share, x, 4, y);
    if (rc != PYOP_OK && ok == i)
      show_error("first failed FtGeShare call");
    ok += rc == PYOP_OK && same(x, y, 4);
  }
  CHECK(ok == 20, "FtGeShare: %d of 20 calls right", ok);
  pyop_op_destroy(share);
  CHECK_RC(pyop_unload(), PYOP_OK);
}

/* ============================================================ gil_late */

/*
 * (Free-threaded builds, where ctest sets PYOP_TEST_GIL_EXT.) An execute
 * imports an extension module without Py_mod_gil: one warning through the
 * host's log hook, after the call, naming the module.
 */
static void case_gil_late(void) {
#ifndef Py_GIL_DISABLED
  fprintf(stderr, "[gil_late] a GIL build: nothing to turn back on\n");
  return;
#else
  REQUIRE(getenv("PYOP_TEST_GIL_EXT") != NULL, "PYOP_TEST_GIL_EXT is not set");
  pyop_host_hooks hooks = PYOP_HOST_HOOKS_INIT;
  hooks.log = capture_log;
  REQUIRE_RC(pyop_set_host_hooks(&hooks), PYOP_OK);
  opp_ft("gil_late");
  REQUIRE_RC(pyop_load(), PYOP_OK);
  const char *said = "turned the GIL of this free-threaded Python back on";
  CHECK(log_count(said) == 0, "a GIL warning before any call:\n%s", g_log);
  pyop_op *op = create("FtGilLate");
  float x[4] = {0};
  for (int i = 0; i < 3; i++)
    CHECK_RC(exec_into(op, x, 4, NULL), PYOP_OK);
  CHECK(log_count(said) == 1, "%d GIL warnings after 3 calls (want 1):\n%s", log_count(said),
        g_log);
  CHECK(log_count("'_pyop_gil_ext' (") == 1, "the warning does not name the module:\n%s",
        g_log);
  fprintf(stderr, "[gil_late] log:\n%s", g_log);
  pyop_op_destroy(op);
  CHECK_RC(pyop_unload(), PYOP_OK);
#endif
}

/* ========================================================== lanes_note */

/* Lanes asked for where this Python cannot have them: the warning says how
 * the ops run instead (free-threaded: in parallel; before 3.12: serially). */
static void case_lanes_note(void) {
  pyop_host_hooks hooks = PYOP_HOST_HOOKS_INIT;
  hooks.log = capture_log;
  REQUIRE_RC(pyop_set_host_hooks(&hooks), PYOP_OK);
  pyop_options opt = PYOP_OPTIONS_INIT;
  opt.lanes = 2;
  REQUIRE_RC(pyop_set_options(&opt), PYOP_OK);
  opp_ft("nest");
  REQUIRE_RC(pyop_load(), PYOP_OK);
  fprintf(stderr, "[lanes_note] log:\n%s", g_log);
  CHECK(log_count("lanes: 2 asked for, but ") == 1, "no lanes warning:\n%s", g_log);
#ifdef Py_GIL_DISABLED
  CHECK(log_count("this Python is free-threaded") == 1 &&
            log_count("the Python ops run in the main interpreter, those of different op "
                      "instances in parallel") == 1 &&
            log_count("serially") == 0,
        "the lanes warning of a free-threaded Python:\n%s", g_log);
#else
  CHECK(log_count("every Python op runs serially in the main interpreter") == 1,
        "the lanes warning of a Python with one GIL:\n%s", g_log);
#endif
  CHECK_RC(pyop_unload(), PYOP_OK);
}

/* ================================================================ main */

static void remove_tmp(void) {
  if (g_tmp)
    remove_tree(g_tmp);
}

/* The cases, one ctest e2e.ft.<name> each: X(name, labels, timeout,
 * variants), tests/cases.h. */
#define HOST_FT_CASES(X)                                                      \
  X(nested_cross, "e2e threads", 300, "")                                     \
  X(views_split, "e2e threads", 300, "")                                      \
  X(views_keep, "e2e threads", 300, "")                                       \
  X(view_x, "e2e threads", 300, "")                                           \
  X(reload_leak, "e2e threads", 300, "")                                      \
  X(reload_thread, "e2e threads", 300, "")                                    \
  X(ge_shared, "e2e threads", 300, "")                                        \
  X(lanes_note, "e2e threads", 300, "")                                       \
  X(lock_wait, "e2e threads", 300, "")                                        \
  X(gil_late, "e2e threads", 300, "")

int main(int argc, char **argv) {
  static const harness_case cases[] = {HOST_FT_CASES(HARNESS_CASE)};
  int status;
  const harness_case *c = harness_pick(argc, argv, 1, "CASE", cases, HARNESS_N(cases), &status);
  if (c == NULL)
    return status;
  e2e_case = c->name;
  start_watchdog();
  g_tmp = make_temp_dir(e2e_case);
  atexit(remove_tmp);
  char *e2e = path_join(g_tmp, "e2e");
  copy_tree(E2E_PLUGINS, e2e);
  free(e2e);
  Py_InitializeEx(0);
  g_main_ts = PyEval_SaveThread();
  c->run();
  CHECK_RC(pyop_shutdown(), PYOP_OK);
  PyEval_RestoreThread(g_main_ts);
  CHECK(Py_FinalizeEx() == 0, "Py_FinalizeEx failed");
  return e2e_finish();
}
