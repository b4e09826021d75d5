/*
 * Process- and interpreter-level behaviour of libpyop with the real bridge:
 * what a host does to the process around libpyop (finalize Python, fork,
 * keep the GIL, shut down from another thread) and what a plugin does to the
 * interpreter (break sys.modules, start threads, install signal handlers).
 *
 * Two builds of this file:
 *   host_proc        links the default Python's libpython (PROC_LINK_PYTHON)
 *   host_proc_start  links no Python: pyop_options.start_python
 *
 *   HOST --list | CASE
 *
 * The cases are HOST_PROC_CASES and HOST_PROC_START_CASES at the end (one
 * ctest each, tests/cases.h); the comment above each case_<name> says what
 * it checks.
 *
 * Each case runs under a watchdog: a hang fails the test instead of
 * blocking CI.
 */
#ifdef PROC_LINK_PYTHON
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#endif

#include "e2e_util.h"
#include "../cases.h"

#include <dlfcn.h>
#include <signal.h>
#include <spawn.h>
#include <unistd.h>

extern char **environ;
#include <sys/syscall.h>
#include <sys/wait.h>

#ifndef E2E_PLUGINS
#error "E2E_PLUGINS must be defined"
#endif

static char *g_tmp;

static void remove_tmp(void) {
  if (g_tmp) remove_tree(g_tmp);
}

/* ------------------------------------------------------------- watchdog */

static int g_watchdog_seconds = 60;

static void *watchdog(void *arg) {
  (void)arg;
  sleep((unsigned)g_watchdog_seconds);
  fprintf(stderr, "FAIL [%s]: watchdog: the case hung for %d s\n", e2e_case,
          g_watchdog_seconds);
  remove_tmp();
  _exit(3);
}

static void start_watchdog(void) {
  pthread_t t;
  if (pthread_create(&t, NULL, watchdog, NULL) != 0) abort();
  pthread_detach(t);
}

/* ------------------------------------------------------------------ log */

static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
static char g_log[1 << 16];
static size_t g_log_len;

static void log_hook(void *user, int level, const char *line) {
  (void)user;
  (void)level;
  fprintf(stderr, "[log] %s\n", line);
  pthread_mutex_lock(&log_mu);
  size_t n = strlen(line);
  if (g_log_len + n + 2 < sizeof g_log) {
    memcpy(g_log + g_log_len, line, n);
    g_log_len += n;
    g_log[g_log_len++] = '\n';
    g_log[g_log_len] = '\0';
  }
  pthread_mutex_unlock(&log_mu);
}

/* Whether a log line so far contains every one of the (NULL-ended) words. */
static bool log_has(const char *first, ...) {
  bool found = false;
  pthread_mutex_lock(&log_mu);
  for (char *line = g_log; *line && !found;) {
    char *end = strchr(line, '\n');
    size_t len = end ? (size_t)(end - line) : strlen(line);
    char save = line[len];
    line[len] = '\0';
    bool all = true;
    va_list ap;
    va_start(ap, first);
    for (const char *w = first; w; w = va_arg(ap, const char *))
      if (!strstr(line, w)) all = false;
    va_end(ap);
    line[len] = save;
    found = all;
    line += len + (end ? 1 : 0);
  }
  pthread_mutex_unlock(&log_mu);
  return found;
}

/* Number of log lines containing word. */
E2E_UNUSED static int log_count(const char *word) {
  int n = 0;
  pthread_mutex_lock(&log_mu);
  for (const char *p = g_log; (p = strstr(p, word)) != NULL; p += strlen(word)) n++;
  pthread_mutex_unlock(&log_mu);
  return n;
}

E2E_UNUSED static void log_clear(void) {
  pthread_mutex_lock(&log_mu);
  g_log_len = 0;
  g_log[0] = '\0';
  pthread_mutex_unlock(&log_mu);
}

static void install_log_hook(void) {
  pyop_host_hooks h = PYOP_HOST_HOOKS_INIT;
  h.log = log_hook;
  REQUIRE_RC(pyop_set_host_hooks(&h), PYOP_OK);
}

/* --------------------------------------------------------------- helpers */

/* A copy of plugins/proc/<name> in the temporary tree; malloc'd path. */
static char *plugin_dir(const char *name) {
  char *from = xasprintf("%s/proc/%s", E2E_PLUGINS, name);
  char *to = path_join(g_tmp, name);
  copy_tree(from, to);
  free(from);
  return to;
}

/* Executes op (Twice or Spin) on {1, 2, 3}; checks the doubled result when
 * it succeeds. Returns the status. */
static int run_twice(pyop_op *op) {
  float x[3] = {1, 2, 3};
  pyop_tensor tx = f32_1d(x, 3);
  pyop_tensor_list in[1] = {one(&tx)};
  pyop_tensor out[1];
  memset(out, 0, sizeof out);
  host_mem mem = {0};
  pyop_exec_ctx ctx = host_ctx(&mem);
  int rc = pyop_op_execute(op, in, 1, out, 1, &ctx);
  if (rc == PYOP_OK)
    for (int i = 0; i < 3; i++)
      CHECK(out[0].data && ((float *)out[0].data)[i] == 2 * x[i], "out[%d]", i);
  host_mem_reset(&mem);
  return rc;
}

E2E_UNUSED static int infer_twice(pyop_op *op) {
  pyop_tensor tx = f32_1d(NULL, 3);
  pyop_tensor_list in[1] = {one(&tx)};
  pyop_tensor out[1];
  return pyop_op_infer_meta(op, in, 1, out, 1);
}

static void (*current_handler(int sig))(int) {
  struct sigaction sa;
  sigaction(sig, NULL, &sa);
  return sa.sa_handler;
}

/* Waits for pid at most seconds; kills it on timeout. Its exit status, or -1. */
static int wait_child(pid_t pid, double seconds) {
  double until = now_s() + seconds;
  int st = 0;
  for (;;) {
    pid_t r = waitpid(pid, &st, WNOHANG);
    if (r == pid) return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    if (r < 0 || now_s() > until) break;
    usleep(20 * 1000);
  }
  kill(pid, SIGKILL);
  waitpid(pid, &st, 0);
  return -1;
}

#ifdef PROC_LINK_PYTHON
/* ================================================= hosts linking Python */

static PyThreadState *g_main_ts;

static void py_start(void) {
  Py_InitializeEx(0);
  g_main_ts = PyEval_SaveThread();
}

static void py_stop(void) {
  PyEval_RestoreThread(g_main_ts);
  CHECK(Py_FinalizeEx() == 0, "Py_FinalizeEx failed");
  g_main_ts = NULL;
}

/* ---------------------------------------------------- (12) finalized */

/*
 * (12) The host finalizes Python with instances alive: execute, infer_meta,
 * create and load return PYOP_ENOTINIT naming the cause; destroy, unload
 * and shutdown work without Python; a re-initialised Python loads again.
 */
static void case_finalized(void) {
  char *ops = plugin_dir("ops");
  set_opp_path(ops);
  py_start();
  REQUIRE_RC(pyop_load(), PYOP_OK);
  pyop_op *a = NULL, *b = NULL;
  REQUIRE_RC(pyop_op_create("Twice", NULL, 0, &a), PYOP_OK);
  REQUIRE_RC(pyop_op_create("Twice", NULL, 0, &b), PYOP_OK);
  CHECK_RC(run_twice(a), PYOP_OK);

  /* The host finalizes Python behind libpyop's back. */
  py_stop();

  CHECK_RC(run_twice(a), PYOP_ENOTINIT);
  show_error("execute after the host finalized Python");
  CHECK_ERR_HAS("finalized");
  CHECK_ERR_HAS("Twice");
  CHECK_RC(infer_twice(a), PYOP_ENOTINIT);
  pyop_op *c = NULL;
  CHECK_RC(pyop_op_create("Twice", NULL, 0, &c), PYOP_ENOTINIT);
  CHECK(c == NULL, "no instance on failure");
  CHECK_RC(pyop_load(), PYOP_ENOTINIT);
  show_error("pyop_load after the host finalized Python");
  char *doc = NULL;
  CHECK_RC(pyop_doctor(&doc), PYOP_OK);
  CHECK(doc && strstr(doc, "not initialised"), "doctor:\n%s", doc ? doc : "");
  pyop_free(doc);
  /* Instances still alive: unload refuses as always. */
  CHECK_RC(pyop_unload(), PYOP_EBUSY);
  /* destroy frees libpyop's memory without Python (valgrind/ASan check). */
  pyop_op_destroy(a);
  pyop_op_destroy(b);
  CHECK_RC(pyop_unload(), PYOP_OK);
  CHECK_RC(pyop_shutdown(), PYOP_OK);

  /* A new interpreter: everything starts again. */
  py_start();
  REQUIRE_RC(pyop_load(), PYOP_OK);
  REQUIRE_RC(pyop_op_create("Twice", NULL, 0, &a), PYOP_OK);
  CHECK_RC(run_twice(a), PYOP_OK);
  pyop_op_destroy(a);
  CHECK_RC(pyop_shutdown(), PYOP_OK);
  py_stop();
  free(ops);
}

/* The host finalizes and re-initialises Python without pyop_shutdown: a
 * kept instance is refused (PYOP_ENOTINIT), pyop_load refuses (PYOP_EBUSY
 * naming it) until it is destroyed, then loads afresh (also from an unload
 * with the bridge open); shutdown then load works. */
static void case_reinit(void) {
  char *ops = plugin_dir("ops");
  set_opp_path(ops);
  install_log_hook();
  py_start();
  REQUIRE_RC(pyop_load(), PYOP_OK);
  pyop_op *a = NULL;
  REQUIRE_RC(pyop_op_create("Twice", NULL, 0, &a), PYOP_OK);
  CHECK_RC(run_twice(a), PYOP_OK);
  py_stop();
  py_start();
  CHECK_RC(run_twice(a), PYOP_ENOTINIT);
  show_error("execute in a re-initialised Python");
  CHECK_ERR_HAS("finalized");
  CHECK_RC(infer_twice(a), PYOP_ENOTINIT);
  pyop_op *c = NULL;
  CHECK_RC(pyop_op_create("Twice", NULL, 0, &c), PYOP_ENOTINIT);
  /* The ops are dead: pyop_load says so, never PYOP_OK, while an
   * instance of the old interpreter lives. */
  CHECK_RC(pyop_load(), PYOP_EBUSY);
  show_error("pyop_load in a re-initialised Python with an instance alive");
  CHECK_ERR_HAS("interpreter the ops were loaded into was finalized");
  CHECK_ERR_HAS("\"Twice\"");
  CHECK_ERR_HAS("destroy them first");
  char *doc = NULL;
  CHECK_RC(pyop_doctor(&doc), PYOP_OK);
  CHECK(doc && strstr(doc, "it was loaded into was finalized"), "doctor:\n%s",
        doc ? doc : "");
  pyop_free(doc);
  pyop_op_destroy(a);
  /* Then it unloads what the old interpreter had and loads afresh, without
   * touching the new Python with the old one's objects. */
  REQUIRE_RC(pyop_load(), PYOP_OK);
  CHECK(log_has("was finalized", "closing it to load afresh", NULL), "reload logged");
  REQUIRE_RC(pyop_op_create("Twice", NULL, 0, &a), PYOP_OK);
  CHECK_RC(run_twice(a), PYOP_OK);
  pyop_op_destroy(a);
  CHECK_RC(pyop_load(), PYOP_OK); /* idempotent again */

  /* Unloaded (the bridge stays open), then finalize and start again: the
   * next load opens the bridge afresh. */
  CHECK_RC(pyop_unload(), PYOP_OK);
  py_stop();
  py_start();
  log_clear();
  REQUIRE_RC(pyop_load(), PYOP_OK);
  CHECK(log_has("closing it to load afresh", NULL), "reload from unloaded logged");
  REQUIRE_RC(pyop_op_create("Twice", NULL, 0, &a), PYOP_OK);
  CHECK_RC(run_twice(a), PYOP_OK);
  pyop_op_destroy(a);
  CHECK_RC(pyop_shutdown(), PYOP_OK);
  py_stop();
  free(ops);
}

/* The plugin clears atexit at import: the host's finalize and a new
 * interpreter are still seen (issue 17, item 5). */
static void case_atexit_clear(void) {
  char *dir = plugin_dir("atexit_clear");
  set_opp_path(dir);
  py_start();
  REQUIRE_RC(pyop_load(), PYOP_OK);
  pyop_op *a = NULL;
  REQUIRE_RC(pyop_op_create("Twice", NULL, 0, &a), PYOP_OK);
  CHECK_RC(run_twice(a), PYOP_OK);
  py_stop();
  py_start();
  CHECK_RC(run_twice(a), PYOP_ENOTINIT);
  show_error("execute in a re-initialised Python after atexit._clear()");
  CHECK_ERR_HAS("finalized");
  CHECK_ERR_HAS("Twice");
  CHECK_RC(infer_twice(a), PYOP_ENOTINIT);
  CHECK_ERR_HAS("finalized");
  pyop_op *c = NULL;
  CHECK_RC(pyop_op_create("Twice", NULL, 0, &c), PYOP_ENOTINIT);
  CHECK(c == NULL, "no instance on failure");
  CHECK_RC(pyop_load(), PYOP_EBUSY); /* not OK: the exit watch saw it */
  CHECK_ERR_HAS("was finalized");
  pyop_op_destroy(a);
  /* The documented explicit step works as well. */
  CHECK_RC(pyop_shutdown(), PYOP_OK);
  /* A new load in the new interpreter works. */
  REQUIRE_RC(pyop_load(), PYOP_OK);
  REQUIRE_RC(pyop_op_create("Twice", NULL, 0, &a), PYOP_OK);
  CHECK_RC(run_twice(a), PYOP_OK);
  pyop_op_destroy(a);
  CHECK_RC(pyop_shutdown(), PYOP_OK);
  py_stop();
  free(dir);
}

/* ------------------------------------------------------- (14) poison */

/*
 * (14) Plugins (plugins/proc/poison) that set sys.modules["pyop"] to None,
 * replace or delete its submodules, break sys.meta_path, sys.path_hooks,
 * builtins.__import__ or sys.path, then fail: the next load works; one that
 * poisons sys.modules["pyop"] and succeeds does not break the next load
 * either.
 */
static void case_poison(void) {
  char *ops = plugin_dir("ops"), *poison = plugin_dir("poison");
  py_start();
  static const char *const kinds[] = {"pyop_none", "pyop_submodules", "pyop_deleted",
                                      "meta_path", "meta_path_cleared", "path_hooks",
                                      "import",    "sys_path",        "sys_path_deleted",
                                      "succeed_pyop_none"};
  for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
    const char *k = kinds[i];
    e2e_case = k;
    bool succeeds = strncmp(k, "succeed_", 8) == 0;
    setenv("PROC_POISON", k, 1);
    /* Python reads the environment at start-up: set os.environ too. */
    PyGILState_STATE st = PyGILState_Ensure();
    PyObject *os = PyImport_ImportModule("os");
    PyObject *env = os ? PyObject_GetAttrString(os, "environ") : NULL;
    PyObject *v = PyUnicode_FromString(k), *key = PyUnicode_FromString("PROC_POISON");
    REQUIRE(env && v && key && PyObject_SetItem(env, key, v) == 0, "setting os.environ");
    Py_XDECREF(v);
    Py_XDECREF(key);
    Py_XDECREF(env);
    Py_XDECREF(os);
    PyGILState_Release(st);

    /* A first load, so the package is imported before the poison. */
    set_opp_path(ops);
    REQUIRE_RC(pyop_load(), PYOP_OK);
    CHECK_RC(pyop_unload(), PYOP_OK);
    set_opp_path(poison);
    int rc = pyop_load();
    if (succeeds) {
      CHECK_RC(rc, PYOP_OK);
    } else {
      CHECK(rc != PYOP_OK, "the poison plugin loaded");
      show_error("poison plugin");
      CHECK_ERR_HAS(k);
    }
    CHECK_RC(pyop_unload(), PYOP_OK);
    /* The next load must not see the poison. */
    set_opp_path(ops);
    rc = pyop_load();
    CHECK(rc == PYOP_OK, "load after poison %s: %s", k, pyop_status_name(rc));
    if (rc == PYOP_OK) {
      pyop_op *a = NULL;
      CHECK_RC(pyop_op_create("Twice", NULL, 0, &a), PYOP_OK);
      if (a) CHECK_RC(run_twice(a), PYOP_OK);
      pyop_op_destroy(a);
    }
    CHECK_RC(pyop_unload(), PYOP_OK);
  }
  e2e_case = "poison";
  CHECK_RC(pyop_shutdown(), PYOP_OK);
  py_stop();
  free(ops);
  free(poison);
}

/* ------------------------------------------------------ (17) gil kept */

typedef struct exec_job {
  pyop_op *op;
  atomic_int rc;
  atomic_bool done;
} exec_job;

static void *exec_thread(void *p) {
  exec_job *j = p;
  atomic_store(&j->rc, run_twice(j->op));
  atomic_store(&j->done, true);
  return NULL;
}

/*
 * The host initialises Python and keeps the GIL: pyop_load warns, and an
 * execute from another thread is named in one log line after 3 s (op,
 * "waited", the fix); after PyEval_SaveThread it completes.
 */
static void case_gil_kept(void) {
  char *ops = plugin_dir("ops");
  set_opp_path(ops);
  install_log_hook();
  /* The host initialises Python and keeps the GIL (no PyEval_SaveThread). */
  Py_InitializeEx(0);
  REQUIRE_RC(pyop_load(), PYOP_OK);
  CHECK(log_has("holds the GIL", "PyEval_SaveThread", NULL),
        "no warning that the loading thread holds the GIL");
  pyop_op *a = NULL;
  REQUIRE_RC(pyop_op_create("Twice", NULL, 0, &a), PYOP_OK);
  exec_job job = {a, 1, false};
  pthread_t t;
  REQUIRE(pthread_create(&t, NULL, exec_thread, &job) == 0, "thread");
  /* Keep the GIL, running no Python, for a while. */
  double until = now_s() + 8;
  while (now_s() < until && !log_has("waited", "GIL", NULL)) usleep(50 * 1000);
  CHECK(!atomic_load(&job.done), "execute ran while the host held the GIL");
  CHECK(log_has("execute", "Twice", "waited", "GIL", "PyEval_SaveThread", NULL),
        "no log line naming the call that waits for the GIL");
  /* The line names the thread the load found keeping the GIL: this one. */
  char *kept = xasprintf("thread %ld held it while running no Python when it called pyop_load",
                         (long)syscall(SYS_gettid));
  CHECK(log_has("has waited", kept, NULL), "the wait line does not say \"%s\":\n%s", kept, g_log);
  free(kept);
  /* Once per wait: keep it a while longer, no second line. */
  usleep(2500 * 1000);
  CHECK(log_count("has waited") == 1, "%d lines for one wait", log_count("has waited"));
  CHECK(log_has("libpyop: warn: bridge: execute of op 'Twice' on thread", NULL) &&
            log_count("bridge: bridge:") == 0,
        "the line does not read \"libpyop: warn: bridge: execute of op ...\":\n%s", g_log);
  /* The two lines the host guide gives: the call then completes. */
  PyThreadState *ts = PyEval_SaveThread();
  pthread_join(t, NULL);
  CHECK(atomic_load(&job.done) && atomic_load(&job.rc) == PYOP_OK, "execute: %s",
        pyop_status_name(atomic_load(&job.rc)));
  PyEval_RestoreThread(ts);
  pyop_op_destroy(a);
  CHECK_RC(pyop_shutdown(), PYOP_OK);
  CHECK(Py_FinalizeEx() == 0, "Py_FinalizeEx failed");
  free(ops);
}

/* ------------------------------------------------ (issue 20) subinterp */

/* SameInterp on one element: 1.0 when it ran in the plugin's interpreter,
 * 0.0 in another; -1 when the call failed. */
static float same_interp(pyop_op *op) {
  float x[1] = {0}, y[1] = {-1};
  pyop_tensor tx = f32_1d(x, 1), ty = f32_1d(y, 1);
  pyop_tensor_list in[1] = {one(&tx)};
  pyop_exec_ctx ctx = PYOP_EXEC_CTX_INIT; /* y is the output */
  int rc = pyop_op_execute(op, in, 1, &ty, 1, &ctx);
  CHECK_RC(rc, PYOP_OK);
  return rc == PYOP_OK ? y[0] : -1;
}

typedef struct sub_job {
  pyop_op *op;
  PyInterpreterState *sub;
} sub_job;

/* A host thread whose first thread state is the sub-interpreter's (so
 * PyGILState knows that one): calls with it detached, then with it
 * attached (the thread holds that interpreter's GIL), then once more. */
static void *sub_thread(void *p) {
  sub_job *j = p;
  PyThreadState *ts = PyThreadState_New(j->sub);
  REQUIRE(ts != NULL, "PyThreadState_New");
  CHECK(PyGILState_GetThisThreadState() == ts, "the sub-interpreter's state is not the "
        "thread's PyGILState state: the case tests nothing");
  CHECK(same_interp(j->op) == 1.0f, "execute on a thread of a sub-interpreter ran in the "
        "wrong interpreter");
  PyEval_RestoreThread(ts);
  CHECK(same_interp(j->op) == 1.0f, "execute with a sub-interpreter's state attached ran "
        "in the wrong interpreter");
  CHECK(PyThreadState_Get() == ts, "the sub-interpreter's state is not attached again");
  PyThreadState_Clear(ts);
  PyThreadState_DeleteCurrent();
  CHECK(same_interp(j->op) == 1.0f, "execute after the sub-interpreter's state went");
  return NULL;
}

/* Thread states per (thread, interpreter): a host that runs a
 * sub-interpreter of its own on a thread calls ops from it. Before issue 20
 * the bridge's PyGILState_Ensure attached the sub-interpreter's state and
 * ran the plugin in the wrong interpreter (and waited for itself when that
 * state was attached). */
static void case_subinterp(void) {
  char *dir = plugin_dir("interp");
  set_opp_path(dir);
  Py_InitializeEx(0);
  PyThreadState *main_ts = PyThreadState_Get();
  PyThreadState *sub_ts = Py_NewInterpreter();
  REQUIRE(sub_ts != NULL, "Py_NewInterpreter");
  PyInterpreterState *sub = PyThreadState_GetInterpreter(sub_ts);
  PyThreadState_Swap(main_ts);
  PyEval_SaveThread();
  REQUIRE_RC(pyop_load(), PYOP_OK);
  pyop_op *op = NULL;
  REQUIRE_RC(pyop_op_create("SameInterp", NULL, 0, &op), PYOP_OK);
  CHECK(same_interp(op) == 1.0f, "execute on the main thread");
  sub_job job = {op, sub};
  pthread_t t;
  REQUIRE(pthread_create(&t, NULL, sub_thread, &job) == 0, "thread");
  pthread_join(t, NULL);
  pyop_op_destroy(op);
  CHECK_RC(pyop_shutdown(), PYOP_OK);
  PyEval_RestoreThread(main_ts);
  PyThreadState_Swap(sub_ts);
  Py_EndInterpreter(sub_ts);
  PyThreadState_Swap(main_ts);
  CHECK(Py_FinalizeEx() == 0, "Py_FinalizeEx failed");
  free(dir);
}

/* ---------------------------------------------------------- (15) fork */

static void *spin_thread(void *p) {
  exec_job *j = p;
  atomic_store(&j->rc, run_twice(j->op));
  atomic_store(&j->done, true);
  return NULL;
}

/* In the child: every call fails at once, nothing hangs (its own watchdog). */
static int child_checks(pyop_op *a) {
  alarm(10);
  int bad = 0;
#define CHILD_RC(expr, want)                                                         \
  do {                                                                               \
    int rc_ = (expr);                                                                \
    if (rc_ != (want)) {                                                             \
      fprintf(stderr, "FAIL child: %s returned %s, expected %s\n", #expr,            \
              pyop_status_name(rc_), pyop_status_name(want));                        \
      bad++;                                                                         \
    }                                                                                \
  } while (0)
  CHILD_RC(run_twice(a), PYOP_EFORKED);
  if (!strstr(pyop_last_error(), "fork")) {
    fprintf(stderr, "FAIL child: message lacks 'fork': %s\n", pyop_last_error());
    bad++;
  }
  CHILD_RC(infer_twice(a), PYOP_EFORKED);
  pyop_op *c = NULL;
  CHILD_RC(pyop_op_create("Twice", NULL, 0, &c), PYOP_EFORKED);
  char **types = NULL;
  size_t n = 0;
  CHILD_RC(pyop_op_list(&types, &n), PYOP_EFORKED);
  const pyop_op_info *info = NULL;
  CHILD_RC(pyop_op_get("Twice", &info), PYOP_EFORKED);
  CHILD_RC(pyop_load(), PYOP_EFORKED);
  CHILD_RC(pyop_unload(), PYOP_EFORKED);
  CHILD_RC(pyop_shutdown(), PYOP_EFORKED);
  char *doc = NULL;
  CHILD_RC(pyop_doctor(&doc), PYOP_EFORKED);
  pyop_op_destroy(a); /* frees libpyop's memory, touches no Python */
  fprintf(stderr, "[fork child] %d failures\n", bad);
  return bad ? 1 : 0;
#undef CHILD_RC
}

/*
 * A child forked before any load uses libpyop; a child forked while another
 * thread runs an op (twice): every call fails at once with PYOP_EFORKED
 * (child watchdog 10 s), destroy returns; the parent is unaffected.
 */
static void case_fork(void) {
  char *ops = plugin_dir("ops");
  set_opp_path(ops);
  /* A child forked before anything is loaded may use libpyop. */
  pid_t pid = fork();
  if (pid == 0) {
    char **types = NULL;
    size_t n = 0;
    int rc = pyop_op_list(&types, &n);
    pyop_free(types);
    _exit(rc == PYOP_OK ? 0 : 1);
  }
  CHECK(wait_child(pid, 20) == 0, "a child forked before the load cannot use libpyop");

  py_start();
  REQUIRE_RC(pyop_load(), PYOP_OK);
  pyop_op *spin = NULL, *a = NULL;
  pyop_attr s = attr_float("seconds", 1.5);
  REQUIRE_RC(pyop_op_create("Spin", &s, 1, &spin), PYOP_OK);
  REQUIRE_RC(pyop_op_create("Twice", NULL, 0, &a), PYOP_OK);
  for (int round = 0; round < 2; round++) {
    exec_job job = {spin, 1, false};
    pthread_t t;
    REQUIRE(pthread_create(&t, NULL, spin_thread, &job) == 0, "thread");
    usleep(300 * 1000); /* the other thread is inside execute, in Python */
    pid = fork();
    if (pid == 0) _exit(child_checks(a));
    int st = wait_child(pid, 30);
    CHECK(st == 0, "fork child (round %d) exited with %d (-1: hung, killed)", round, st);
    pthread_join(t, NULL);
    CHECK(atomic_load(&job.rc) == PYOP_OK, "the parent's execute: %s",
          pyop_status_name(atomic_load(&job.rc)));
  }
  /* The parent is unaffected. */
  CHECK_RC(run_twice(a), PYOP_OK);
  pyop_op_destroy(a);
  pyop_op_destroy(spin);
  CHECK_RC(pyop_shutdown(), PYOP_OK);
  py_stop();
  free(ops);
}

/* ------------------------------------------------------- (15) signals */

static volatile sig_atomic_t g_usr1, g_usr2;
static void host_usr1(int sig) { (void)sig; g_usr1++; }
static void host_usr2(int sig) { (void)sig; g_usr2++; }


/*
 * (15) A plugin replaces SIGUSR1 (a Python handler) and SIGTERM (SIG_IGN)
 * at import: unload and shutdown restore the host's handlers (and the
 * host's SIGUSR1 handler runs) and log which; a SIGUSR2 handler the host
 * set while loaded is kept.
 */
static void case_signals(void) {
  char *dir = plugin_dir("signals");
  set_opp_path(dir);
  install_log_hook();
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = host_usr1;
  sigaction(SIGUSR1, &sa, NULL);
  py_start();
  for (int round = 0; round < 2; round++) {
    /* The load runs on the main thread: the plugin's signal.signal works. */
    REQUIRE_RC(pyop_load(), PYOP_OK);
    CHECK(current_handler(SIGUSR1) != host_usr1, "test bug: the plugin did not replace SIGUSR1");
    CHECK(current_handler(SIGTERM) == SIG_IGN, "test bug: the plugin did not ignore SIGTERM");
    /* A handler the host changes while loaded stays the host's. */
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = host_usr2;
    sigaction(SIGUSR2, &sa, NULL);
    CHECK_RC(round == 0 ? pyop_unload() : pyop_shutdown(), PYOP_OK);
    CHECK(current_handler(SIGUSR1) == host_usr1, "round %d: SIGUSR1 not restored", round);
    CHECK(current_handler(SIGTERM) == SIG_DFL, "round %d: SIGTERM not restored", round);
    CHECK(current_handler(SIGUSR2) == host_usr2, "round %d: the host's SIGUSR2 was changed",
          round);
    CHECK(log_has("SIGUSR1", "restored", NULL), "no log line names the restored handler");
    /* One prefix per line: libpyop's, then the bridge's origin once. */
    CHECK(log_has("libpyop: warn: bridge: restored the host's handler for SIGUSR1", NULL),
          "the line does not read \"libpyop: warn: bridge: restored ...\":\n%s", g_log);
    CHECK(log_count("bridge: bridge:") == 0, "a line with the prefix twice:\n%s", g_log);
    int before = g_usr1;
    raise(SIGUSR1);
    CHECK(g_usr1 == before + 1, "the host's SIGUSR1 handler did not run");
    log_clear();
  }
  py_stop();
  free(dir);
}

#else /* !PROC_LINK_PYTHON */
/* ========================================== hosts without Python linked */

static void start_python_option(void) {
  pyop_options o = PYOP_OPTIONS_INIT;
  o.start_python = true;
  REQUIRE_RC(pyop_set_options(&o), PYOP_OK);
}

static void *load_thread(void *p) {
  int *rc = p;
  *rc = pyop_load();
  return NULL;
}

static void *shutdown_thread(void *p) {
  int *rc = p;
  *rc = pyop_shutdown();
  return NULL;
}

/* ------------------------------------------------- (13) shutdown_thread */

/*
 * (13) start_python: load on one thread (the plugin imports logging, hence
 * threading), pyop_shutdown on the main thread, then on a third thread.
 */
static void case_shutdown_thread(void) {
  char *ops = plugin_dir("ops");
  set_opp_path(ops);
  start_python_option();
  for (int round = 0; round < 2; round++) {
    int rc = 1;
    pthread_t t;
    REQUIRE(pthread_create(&t, NULL, load_thread, &rc) == 0, "thread");
    pthread_join(t, NULL);
    REQUIRE_RC(rc, PYOP_OK);
    pyop_op *a = NULL;
    REQUIRE_RC(pyop_op_create("Twice", NULL, 0, &a), PYOP_OK);
    CHECK_RC(run_twice(a), PYOP_OK);
    pyop_op_destroy(a);
    /* Round 0: shutdown on the main thread; round 1: on a third thread. */
    if (round == 0) {
      CHECK_RC(pyop_shutdown(), PYOP_OK);
    } else {
      rc = 1;
      REQUIRE(pthread_create(&t, NULL, shutdown_thread, &rc) == 0, "thread");
      pthread_join(t, NULL);
      CHECK_RC(rc, PYOP_OK);
    }
  }
  free(ops);
}

/* --------------------------------------------------- (13) plugin_thread */

/*
 * (13) start_python: a plugin's non-daemon thread that never ends: shutdown
 * returns within seconds, a warning names the thread, the registry is
 * empty, and the next load works.
 */
static void case_plugin_thread(void) {
  char *dir = plugin_dir("thread");
  set_opp_path(dir);
  install_log_hook();
  start_python_option();
  int rc = 1;
  pthread_t t;
  REQUIRE(pthread_create(&t, NULL, load_thread, &rc) == 0, "thread");
  pthread_join(t, NULL);
  REQUIRE_RC(rc, PYOP_OK);
  double t0 = now_s();
  CHECK_RC(pyop_shutdown(), PYOP_OK);
  fprintf(stderr, "[plugin_thread] shutdown took %.1f s\n", now_s() - t0);
  CHECK(log_has("stubborn-worker", NULL), "no log line names the plugin thread");
  CHECK_LIST("");
  /* libpyop is usable again: the interpreter that could not be finalised
   * is reused. */
  REQUIRE_RC(pyop_load(), PYOP_OK);
  CHECK_LIST("Stubborn");
  CHECK_RC(pyop_shutdown(), PYOP_OK);
  CHECK_LIST("");
  free(dir);
}

/* Py_IsInitialized() of the Python libpyop loaded; -1 when none. */
static int python_initialized(void) {
  int (*is_init)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "Py_IsInitialized");
  return is_init ? is_init() : -1;
}

/* Executes NpImports; the count it reports, or -1. */
static long np_imports(void) {
  pyop_op *op = NULL;
  if (pyop_op_create("NpImports", NULL, 0, &op) != PYOP_OK) return -1;
  float x[1] = {0};
  pyop_tensor tx = f32_1d(x, 1);
  pyop_tensor_list in[1] = {one(&tx)};
  pyop_tensor out[1];
  memset(out, 0, sizeof out);
  host_mem mem = {0};
  pyop_exec_ctx ctx = host_ctx(&mem);
  long n = -1;
  if (pyop_op_execute(op, in, 1, out, 1, &ctx) == PYOP_OK && out[0].data)
    n = (long)*(const int64_t *)out[0].data;
  host_mem_reset(&mem);
  pyop_op_destroy(op);
  return n;
}

/* ------------------------------------------- (issue 17.2) restart_numpy */

/* start_python: load (a plugin that imports numpy), execute, shutdown,
 * three times: Python stays initialised across each shutdown and is used
 * again (numpy cannot be initialised twice in one process), the registry is
 * empty after each shutdown and the plugin is imported again (issue 17.2;
 * skipped, 77, without numpy). */
static void case_restart_numpy(void) {
  char *dir = plugin_dir("numpy");
  set_opp_path(dir);
  start_python_option();
  for (int round = 0; round < 3; round++) {
    e2e_case = round == 0 ? "restart_numpy[0]" : round == 1 ? "restart_numpy[1]"
                                                            : "restart_numpy[2]";
    int rc = pyop_load();
    if (rc != PYOP_OK && round == 0 && strstr(pyop_last_error(), "No module named 'numpy'")) {
      fprintf(stderr, "SKIP: the bridge's Python has no numpy: %s\n", pyop_last_error());
      exit(77);
    }
    REQUIRE_RC(rc, PYOP_OK);
    pyop_op *a = NULL;
    REQUIRE_RC(pyop_op_create("NpTwice", NULL, 0, &a), PYOP_OK);
    CHECK_RC(run_twice(a), PYOP_OK);
    pyop_op_destroy(a);
    /* The plugin's module was removed at the shutdown: imported again. */
    long n = np_imports();
    CHECK(n == round + 1, "round %d: the plugin was imported %ld times", round, n);
    CHECK_RC(pyop_shutdown(), PYOP_OK);
    CHECK_LIST("");
    CHECK(python_initialized() == 1, "round %d: Python not initialised after pyop_shutdown",
          round);
  }
  e2e_case = "restart_numpy";
  free(dir);
}

/* ------------------------------------------------- (issue 17.7) sigint */

static volatile sig_atomic_t g_int;
static void host_int(int sig) { (void)sig; g_int++; }

/*
 * (Issue 17.7) start_python and a plugin that imports subprocess: a child
 * with the default SIGINT disposition dies by SIGINT after the load
 * (case_sigint_child); the disposition is unchanged; the host's handler
 * runs; no log line blames a plugin.
 */
static void case_sigint(void) {
  char *dir = plugin_dir("sigint");
  set_opp_path(dir);
  install_log_hook();
  start_python_option();
  /* A child with the default disposition dies by the SIGINT it gets after a
   * load whose plugin imported subprocess. The child is this program run
   * afresh (case sigint_child, the same ASCEND_CUSTOM_OPP_PATH), not a fork:
   * a fork of this process (the watchdog thread runs) can copy the
   * sanitizers' allocator locks held, and the child then hangs in malloc. */
  pid_t pid = -1;
  char *child_argv[] = {(char *)"host_proc_start", (char *)"sigint_child", NULL};
  REQUIRE(posix_spawn(&pid, "/proc/self/exe", NULL, NULL, child_argv, environ) == 0,
          "spawn the sigint child");
  int st = wait_child(pid, 60);
  CHECK(st == 128 + SIGINT, "the child exited with %d, not by SIGINT (%d; 4: it survived "
        "SIGINT, 5: its load failed)", st, 128 + SIGINT);
  /* A SIGINT that Python's handler took while libpyop's Python started
   * (the seam raises one right after the interpreter thread imports
   * signal) is sent on to the host: the child, at the default disposition,
   * dies by it during the load (batch 23 survivor
   * bridge.b23.signals.sigint_swallowed: it was swallowed). */
  char *start_argv[] = {(char *)"host_proc_start", (char *)"sigint_child_start", NULL};
  setenv("PYOP_TEST_LANES", "sigint-at-start", 1);
  pid = -1;
  int spawned = posix_spawn(&pid, "/proc/self/exe", NULL, NULL, start_argv, environ);
  unsetenv("PYOP_TEST_LANES");
  REQUIRE(spawned == 0, "spawn the sigint_child_start child");
  st = wait_child(pid, 60);
  CHECK(st == 128 + SIGINT, "the child exited with %d, not by the SIGINT Python took while it "
        "started (%d; 4: it survived, 5: its load failed)", st, 128 + SIGINT);

  /* The host's default disposition, set with a mask of its own (SIGUSR2)
   * and no SA_ONSTACK: the load that starts Python (importing signal puts
   * Python's handler on SIGINT, and resetting Python's table puts SIG_DFL
   * with Python's flags, SA_ONSTACK and an empty mask) leaves it exactly as
   * the host set it (batch 18 survivor, session 15). */
  struct sigaction dfl, got;
  memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  sigaddset(&dfl.sa_mask, SIGUSR2);
  REQUIRE(sigaction(SIGINT, &dfl, NULL) == 0, "sigaction");
  REQUIRE_RC(pyop_load(), PYOP_OK);
  CHECK(current_handler(SIGINT) == SIG_DFL, "the load replaced the host's SIGINT disposition");
  REQUIRE(sigaction(SIGINT, NULL, &got) == 0, "sigaction");
  CHECK(sigismember(&got.sa_mask, SIGUSR2) == 1 && !(got.sa_flags & SA_ONSTACK),
        "the load changed the mask or flags of the host's SIGINT disposition (SIGUSR2 in its "
        "mask: %d, SA_ONSTACK: %d): Python's, not the host's",
        sigismember(&got.sa_mask, SIGUSR2), !!(got.sa_flags & SA_ONSTACK));
  CHECK_RC(pyop_unload(), PYOP_OK);
  CHECK(!log_has("SIGINT", NULL), "a log line blames a plugin for SIGINT:\n%s", g_log);
  /* The host's own handler, set while loaded, is the one that runs. */
  REQUIRE_RC(pyop_load(), PYOP_OK);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = host_int;
  sigaction(SIGINT, &sa, NULL);
  kill(getpid(), SIGINT);
  for (int i = 0; i < 100 && g_int == 0; i++) usleep(10 * 1000);
  CHECK(g_int == 1, "the host's SIGINT handler ran %d times", (int)g_int);
  CHECK_RC(pyop_shutdown(), PYOP_OK);
  CHECK(current_handler(SIGINT) == host_int, "shutdown changed the host's SIGINT handler");
  /* Loaded again (the same interpreter), with the host's handler set. */
  REQUIRE_RC(pyop_load(), PYOP_OK);
  kill(getpid(), SIGINT);
  for (int i = 0; i < 100 && g_int == 1; i++) usleep(10 * 1000);
  CHECK(g_int == 2, "the host's SIGINT handler ran %d times", (int)g_int);
  CHECK_RC(pyop_shutdown(), PYOP_OK);
  CHECK(!log_has("SIGINT", NULL), "a log line blames a plugin for SIGINT:\n%s", g_log);
  signal(SIGINT, SIG_DFL);
  free(dir);
}

/* The other child of case_sigint: the default disposition, a load that
 * starts Python with PYOP_TEST_LANES=sigint-at-start; it must die by that
 * SIGINT. Exit 5: the load failed; 4: it survived. */
static void case_sigint_child_start(void) {
  signal(SIGINT, SIG_DFL);
  start_python_option();
  if (pyop_load() != PYOP_OK) _exit(5);
  usleep(500 * 1000);
  _exit(4);
}

/* The child of case_sigint: load with start_python (the plugin imports
 * subprocess), then SIGINT itself with the default disposition; it must die
 * by it. Exit 5: the load failed; 4: it survived SIGINT. */
static void case_sigint_child(void) {
  signal(SIGINT, SIG_DFL);
  start_python_option();
  if (pyop_load() != PYOP_OK) _exit(5);
  kill(getpid(), SIGINT);
  usleep(500 * 1000);
  _exit(4);
}

/* ------------------------------------------ (issue 17.7) threads_broken */

/* Listing Python's threads fails at shutdown (a plugin broke
 * threading.enumerate) while a plugin's non-daemon thread runs: an error,
 * named, never "no threads" (which finalized and waited forever). */
static void case_threads_broken(void) {
  char *dir = plugin_dir("threads_broken");
  set_opp_path(dir);
  install_log_hook();
  start_python_option();
  for (int round = 0; round < 2; round++) {
    REQUIRE_RC(pyop_load(), PYOP_OK);
    double t0 = now_s();
    CHECK_RC(pyop_shutdown(), PYOP_OK);
    double took = now_s() - t0;
    CHECK(took < 5, "round %d: shutdown took %.1f s", round, took);
    CHECK(log_has("could not list the Python threads", "threading.enumerate broken", NULL),
          "round %d: no log line says the thread listing failed:\n%s", round, g_log);
    CHECK_LIST("");
    log_clear();
  }
  free(dir);
}

/* An interrupt surfacing in shutdown's thread listing (KeyboardInterrupt
 * from threading.enumerate) is cleared and the listing tried again: the
 * plugin's thread is named, nothing waits. */
static void case_threads_interrupted(void) {
  char *dir = plugin_dir("threads_interrupted");
  set_opp_path(dir);
  install_log_hook();
  start_python_option();
  REQUIRE_RC(pyop_load(), PYOP_OK);
  double t0 = now_s();
  CHECK_RC(pyop_shutdown(), PYOP_OK);
  CHECK(now_s() - t0 < 5, "shutdown took %.1f s", now_s() - t0);
  CHECK(log_has("'interrupted-worker'", "still running", NULL),
        "no log line names the plugin's thread:\n%s", g_log);
  CHECK(!log_has("could not list", NULL), "the listing was not retried:\n%s", g_log);
  CHECK_LIST("");
  free(dir);
}

/* --------------------------------------------- (issue 17.15) gil_holder */

typedef struct hog_job {
  pyop_op *op;
  atomic_long tid;
  atomic_int rc;
} hog_job;

static void *hog_thread(void *p) {
  hog_job *j = p;
  atomic_store(&j->tid, (long)syscall(SYS_gettid));
  float x[1] = {0};
  pyop_tensor tx = f32_1d(x, 1);
  pyop_tensor_list in[1] = {one(&tx)};
  host_mem mem = {0};
  pyop_exec_ctx ctx = host_ctx(&mem);
  atomic_store(&j->rc, pyop_op_execute(j->op, in, 1, NULL, 0, &ctx));
  host_mem_reset(&mem);
  return NULL;
}

/* In a start_python host the GIL-wait line names who holds the GIL: a host
 * thread inside a libpyop call, or a plugin's Python thread; never "the
 * host thread that initialised Python". */
static void case_gil_holder(void) {
#ifdef E2E_FREE_THREADED
  fprintf(stderr, "SKIP: the build's Python is free-threaded: no GIL for a thread to keep\n");
  exit(77);
#endif
  char *hog = plugin_dir("gil_hog"), *ops = plugin_dir("ops");
  char *opp = xasprintf("%s:%s", hog, ops);
  set_opp_path(opp);
  install_log_hook();
  start_python_option();
  REQUIRE_RC(pyop_load(), PYOP_OK);
  pyop_op *twice = NULL;
  REQUIRE_RC(pyop_op_create("Twice", NULL, 0, &twice), PYOP_OK);
  CHECK_RC(run_twice(twice), PYOP_OK); /* this thread's state is kept */
  static const char *const hogs[] = {"GilHog", "GilHogThread"};
  for (int k = 0; k < 2; k++) {
    e2e_case = hogs[k];
    pyop_attr secs = attr_float("seconds", 5);
    pyop_op *h = NULL;
    REQUIRE_RC(pyop_op_create(hogs[k], &secs, 1, &h), PYOP_OK);
    hog_job job = {h, 0, 1};
    pthread_t t;
    REQUIRE(pthread_create(&t, NULL, hog_thread, &job) == 0, "thread");
    if (k == 1) pthread_join(t, NULL); /* returns at once; its Python thread hogs */
    usleep(500 * 1000);
    CHECK_RC(run_twice(twice), PYOP_OK); /* waits until the hog lets go */
    if (k == 0) pthread_join(t, NULL);
    CHECK_RC(atomic_load(&job.rc), PYOP_OK);
    CHECK(log_has("execute of op 'Twice'", "has waited", "GIL", NULL),
          "no line names the call that waited:\n%s", g_log);
    CHECK(!log_has("initialised Python and never released it", NULL),
          "the line blames the host thread that initialised Python:\n%s", g_log);
    if (k == 0) {
      char *want = xasprintf("Thread %ld holds it, inside a libpyop call (execute)",
                             atomic_load(&job.tid));
      CHECK(log_has(want, NULL), "the line does not say \"%s\":\n%s", want, g_log);
      free(want);
    } else {
      CHECK(log_has("a Python thread a plugin started holds it", NULL),
            "the line does not name a plugin's Python thread:\n%s", g_log);
    }
    pyop_op_destroy(h);
    log_clear();
  }
  e2e_case = "gil_holder";
  pyop_op_destroy(twice);
  CHECK_RC(pyop_shutdown(), PYOP_OK);
  free(opp);
  free(hog);
  free(ops);
}
#endif

/* The cases of each build, one ctest e2e.proc.<name> each: X(name, labels,
 * timeout, variants), tests/cases.h; "valgrind": also e2e.valgrind.proc_<name>
 * (tests/e2e/CMakeLists.txt). Label "threads" (TSan) where a thread of the
 * bridge or the plugin is the point (the GIL-wait watch), not on fork and
 * sigint (which starts a child): TSan does not support fork() from a
 * multi-threaded process. */
#define HOST_PROC_CASES(X)                                                    \
  X(finalized, "e2e", 120, "valgrind")                                        \
  X(reinit, "e2e", 120, "valgrind")                                           \
  X(atexit_clear, "e2e", 120, "valgrind")                                     \
  X(poison, "e2e", 120, "valgrind")                                           \
  X(gil_kept, "e2e threads", 120, "")                                         \
  X(fork, "e2e", 120, "")                                                     \
  X(signals, "e2e", 120, "valgrind")                                          \
  X(subinterp, "e2e threads", 120, "")
#define HOST_PROC_START_CASES(X)                                              \
  X(shutdown_thread, "e2e threads", 120, "")                                  \
  X(plugin_thread, "e2e threads", 120, "")                                    \
  X(restart_numpy, "e2e threads", 120, "valgrind")                            \
  X(sigint, "e2e", 120, "")                                                   \
  X(threads_broken, "e2e threads", 120, "")                                   \
  X(threads_interrupted, "e2e threads", 120, "")                              \
  X(gil_holder, "e2e threads", 120, "")

int main(int argc, char **argv) {
#ifdef PROC_LINK_PYTHON
  static const harness_case cases[] = {HOST_PROC_CASES(HARNESS_CASE)};
#else
  static const harness_case cases[] = {HOST_PROC_START_CASES(HARNESS_CASE)};
  if (argc == 2 && !strcmp(argv[1], "sigint_child")) {
    e2e_case = argv[1];
    case_sigint_child(); /* no temp dir, no watchdog: it dies */
  }
  if (argc == 2 && !strcmp(argv[1], "sigint_child_start")) {
    e2e_case = argv[1];
    case_sigint_child_start();
  }
#endif
  int status;
  const harness_case *c = harness_pick(argc, argv, 1, "CASE", cases, HARNESS_N(cases), &status);
  if (c == NULL)
    return status;
  e2e_case = c->name;
  const char *w = getenv("PROC_WATCHDOG");
  if (w && atoi(w) > 0) g_watchdog_seconds = atoi(w);
  start_watchdog();
  g_tmp = make_temp_dir(e2e_case);
  atexit(remove_tmp);
  c->run();
  e2e_case = c->name;
  return e2e_finish();
}
