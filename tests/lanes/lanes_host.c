/*
 * Interpreter lanes with the real bridge (issue 20): a C host without
 * Python (pyop_options.start_python) of a libpyop whose default Python is
 * CPython 3.12 or later, built by tests/lanes/run.sh.
 *
 * Cases (argv[1]; the list is LANES_HOST_CASES at the end, `lanes_host
 * --list` prints it for run.sh):
 *   basic      2 lanes: Scale and Lane run in lanes (op info, pyop_op_lane
 *              round-robin, each instance in its own interpreter with its
 *              own module state), Refused (an extension that refuses
 *              sub-interpreters) stays serial with the reason; unload,
 *              reload, shutdown, load again
 *   threads    4 host threads on 8 instances over 3 lanes, results checked
 *   one_lane   a plugin that fails in one lane only fails the load, naming
 *              the lane, the plugin and the error (with the plugin's
 *              traceback, as from the main interpreter); one that fails in both
 *              names lane 1 (the lanes import at the same time); the
 *              registry stays empty and a load without the failure works
 *   main_differs  the lanes load but the main interpreter's load fails (a
 *              plugin error there; a plugin registering an op in the lanes
 *              only, twice): the load fails saying why, and every
 *              interpreter forgets it: the next loads import every plugin
 *              afresh in the lanes, and the main interpreter keeps no module
 *              of a refused load, nor the sys.meta_path entry it added
 *   hooks      a host allocator that calls back into libpyop (a lookup and
 *              another op's execute, in another lane) from inside a lane
 *   ge         GE plugins (tests/ge/plugins) in lanes on 3.13, serial with
 *              the reason on 3.12 (_ctypes)
 *   ge_impl_only  GE's sample shape: an implementation-only plugin bound to
 *              the host's REG_OP prototype, in lanes on 3.13
 *   asyncio    a plugin importing asyncio in lanes; shutdown from another
 *              thread, twice, with nothing on stderr (run.sh checks)
 *   refusals   os.fork() and daemon threads raise RuntimeError in a lane
 *   fork       the host forks with lanes loaded, once idle and once while
 *              another thread executes in a lane: in the child every call
 *              answers PYOP_EFORKED at once (as without lanes), nothing
 *              hangs; the parent goes on
 *   busy       pyop_unload and pyop_shutdown from a second host thread
 *              while an instance executes in a lane: PYOP_EBUSY naming the
 *              op type, the execute finishes; then both work
 *   escape     a plugin hands its execute ctx and a Tensor to a Python
 *              thread of its lane that uses them after the call: both
 *              refuse with RuntimeError, as in the main interpreter; one
 *              left waiting at pyop_shutdown is not waited for (warning)
 *   escape_last  the same thread left waiting in lane 2 of 2: the warning
 *              names lane 2, and lane 1 (no thread) is not named
 *   sigint     SIGINT (the host has a handler) while a lane and then the main
 *              interpreter import a slow plugin: the host's handler runs,
 *              the load completes, the loading thread's signal mask is as
 *              it was
 *   hook_swap  pyop_set_host_hooks replaced again and again (log hooks, NULL)
 *              while two threads create, run and destroy instances in lanes
 *              at log level DEBUG: every call succeeds, no crash
 *   cycles     40 pyop_load / pyop_shutdown cycles with 2 lanes: RSS flat
 *              (growth over cycles 10..40 under 8 MB), the lanes' interpreters
 *              reused with the plugins imported afresh; a fork's child starts
 *              lanes of its own; another bridge image (PYOP_BRIDGE_DIR, a
 *              copy) takes them up; 3, 1 and 3 lanes reuse them in order;
 *              unload/load cycles flat
 *   log_threads  a load with 2 lanes (which start and import on workers) at
 *              log level DEBUG: every line reaches the log hook on the
 *              loading thread, where a nested pyop_load is refused at once
 *   start_fail lane 2 cannot start (test seam): the load fails naming it, the
 *              registry is empty; the next load runs lane 1 in the interpreter
 *              started beside it (kept) and starts lane 2
 *   start_fail_one  one lane, which cannot start (test seam): the load fails
 *              naming lane 1, nothing is kept (no warning); the next load
 *              starts it
 *   start_fail_first  lane 1 of 2 cannot start (test seam): the load fails
 *              naming it, lane 2's interpreter is kept (no warning) and
 *              taken up by the next load, which starts one more
 *   one_lane_differs  a plugin (the path's second element) whose import
 *              differs in one lane only, lane 1's then lane 2's, across
 *              unload and load: refused there (serial, naming that lane),
 *              registering an extra op there (the load fails naming that
 *              lane and the element); its implementation without compile
 *              in one lane, its prototype under a longer key in one lane
 *              or not registered there, or not by an identical copy of it
 *              first on the path (each load fails naming it); then the
 *              same lanes load it again
 *   kept_counts  the log line of each start says how many lanes were
 *              started and how many taken up from an earlier load (2, 3,
 *              1, 2 lanes, one shutdown between each); one lane image open
 *              per lane of the load
 */
#include "lanes_util.h"

#include <dirent.h>
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* A C host without Python: libpyop starts it (start_python) and never
 * finalizes it, so lanes are forced (the test seam) where CPython cannot
 * end them safely (3.12.0 - 3.12.3: ending them is safe as long as Python
 * is not finalized), and the lanes code runs on every Python. */
static void load_with_lanes(uint32_t n, const char *opp) {
  setenv("PYOP_TEST_LANES", "force", 1);
  set_lanes(n, opp, true);
}

static void case_basic(void) {
  char *opp = xasprintf("%s/pure:%s/refused", LANES_PLUGINS, LANES_PLUGINS);
  load_with_lanes(2, opp);
  /* A successful load leaves the last failure's text as it was (start_python's
   * probe for a Python already in the process is not a failure). */
  CHECK_RC(pyop_set_log_level(99), PYOP_EINVAL);
  char before[512];
  snprintf(before, sizeof before, "%s", pyop_last_error());
  CHECK(before[0] != '\0', "pyop_set_log_level(99) left no message");
  REQUIRE_RC(pyop_load(), PYOP_OK);
  CHECK(strcmp(pyop_last_error(), before) == 0,
        "a successful pyop_load changed the last error to: %s", pyop_last_error());
  CHECK_RC(pyop_unload(), PYOP_OK);
  for (int round = 0; round < 2; round++) {
    REQUIRE_RC(pyop_load(), PYOP_OK);
    expect_info("Scale", 2, NULL);
    expect_info("Lane", 2, NULL);
    expect_info("Refused", 0, "does not support loading in subinterpreters");
    expect_info("Refused", 0, "lane 1: ");
    pyop_op *lane[4];
    float ids[4];
    for (int i = 0; i < 4; i++) {
      REQUIRE_RC(pyop_op_create("Lane", NULL, 0, &lane[i]), PYOP_OK);
      float x[2] = {0, 0}, y[2] = {-1, -1};
      CHECK_RC(run(lane[i], x, y, 2), PYOP_OK);
      CHECK(y[0] == 1.0f, "instance %d: module state imported %g times in its interpreter",
            i, y[0]);
      ids[i] = y[1];
      CHECK(ids[i] != 0.0f, "instance %d ran in the main interpreter", i);
    }
    CHECK(pyop_op_lane(lane[0]) != pyop_op_lane(lane[1]), "two instances in one lane");
    CHECK(pyop_op_lane(lane[0]) == pyop_op_lane(lane[2]), "round-robin over 2 lanes");
    CHECK(ids[0] != ids[1] && ids[0] == ids[2] && ids[1] == ids[3],
          "instances of a lane run in its interpreter: %g %g %g %g", ids[0], ids[1], ids[2],
          ids[3]);
    for (int i = 0; i < 4; i++)
      pyop_op_destroy(lane[i]);
    pyop_op *r = NULL;
    REQUIRE_RC(pyop_op_create("Refused", NULL, 0, &r), PYOP_OK);
    CHECK(pyop_op_lane(r) == 0, "a serial op placed in lane %u", (unsigned)pyop_op_lane(r));
    float x[3] = {1, 2, 3}, y[3] = {0, 0, 0};
    CHECK_RC(run(r, x, y, 3), PYOP_OK);
    CHECK(y[2] == 3.0f, "Refused: y[2] = %g", y[2]);
    pyop_op_destroy(r);
    CHECK_RC(pyop_unload(), PYOP_OK);
    CHECK_LIST("");
  }
  CHECK_RC(pyop_shutdown(), PYOP_OK);
  REQUIRE_RC(pyop_load(), PYOP_OK); /* the kept lanes are taken up again */
  expect_info("Scale", 2, NULL);
  CHECK_RC(pyop_shutdown(), PYOP_OK);
  free(opp);
}

typedef struct job {
  pyop_op **ops;
  int n_ops;
  int first;
  int iters;
  atomic_int bad;
} job;

static void *worker(void *p) {
  job *j = p;
  float x[64], y[64];
  for (int i = 0; i < 64; i++)
    x[i] = (float)i;
  for (int it = 0; it < j->iters; it++) {
    pyop_op *op = j->ops[(j->first + it) % j->n_ops];
    memset(y, 0, sizeof y);
    if (run(op, x, y, 64) != PYOP_OK || y[63] != 126.0f)
      atomic_fetch_add(&j->bad, 1);
  }
  return NULL;
}

static void case_threads(void) {
  char *opp = xasprintf("%s/pure", LANES_PLUGINS);
  load_with_lanes(3, opp);
  REQUIRE_RC(pyop_load(), PYOP_OK);
  pyop_op *ops[8];
  for (int i = 0; i < 8; i++)
    REQUIRE_RC(pyop_op_create("Scale", NULL, 0, &ops[i]), PYOP_OK);
  pthread_t t[4];
  job jobs[4];
  for (int i = 0; i < 4; i++) {
    jobs[i] = (job){ops, 8, i, 300, 0};
    REQUIRE(pthread_create(&t[i], NULL, worker, &jobs[i]) == 0, "thread");
  }
  for (int i = 0; i < 4; i++) {
    pthread_join(t[i], NULL);
    CHECK(atomic_load(&jobs[i].bad) == 0, "thread %d: %d wrong results", i,
          atomic_load(&jobs[i].bad));
  }
  for (int i = 0; i < 8; i++)
    pyop_op_destroy(ops[i]);
  CHECK_RC(pyop_shutdown(), PYOP_OK);
  free(opp);
}

static void case_one_lane(void) {
  char *dir = make_temp_dir("lanes-counter");
  char *counter = path_join(dir, "count");
  setenv("PYOP_TEST_COUNTER_FILE", counter, 1);
  /* Imports 1 and 2 are the lanes' first load (at the same time, in either
   * order), 3 and 4 their second, 5 and 6 then 7 (the main interpreter)
   * the third. */
  setenv("PYOP_TEST_COUNTER_FAIL", "2,3,4", 1);
  char *opp = xasprintf("%s/pure:%s/counter", LANES_PLUGINS, LANES_PLUGINS);
  load_with_lanes(2, opp);
  CHECK_RC(pyop_load(), PYOP_EPLUGIN);
  CHECK(err_has("lane 1: loading the plugins of ") != err_has("lane 2: loading the plugins of "),
        "not exactly one lane named");
  CHECK_ERR_HAS("/counter failed (every lane must load what the main interpreter does)");
  CHECK_ERR_HAS("RuntimeError: this plugin fails in the interpreter of import 2");
  CHECK_ERR_HAS("per_process.py");
  /* The lane's image describes its exception with the pyop formatter, as
   * the main interpreter does: the plugin's traceback, its raising line. */
  CHECK_ERR_HAS("Traceback (most recent call last):");
  CHECK_ERR_HAS("per_process.py\", line ");
  CHECK_ERR_HAS("raise RuntimeError(\"this plugin fails in the interpreter of import %d\" % n)");
  CHECK_LIST("");
  /* Both lanes fail: the first lane is named, whichever finished first. */
  CHECK_RC(pyop_load(), PYOP_EPLUGIN);
  CHECK_ERR_HAS("lane 1: loading the plugins of ");
  CHECK(!err_has("lane 2:"), "lane 2 named for a load lane 1 failed too");
  CHECK_LIST("");
  unsetenv("PYOP_TEST_COUNTER_FILE");
  unsetenv("PYOP_TEST_COUNTER_FAIL");
  CHECK_RC(pyop_load(), PYOP_OK); /* imports 5, 6 and 7 load in every lane */
  expect_info("Counted", 2, NULL);
  CHECK_RC(pyop_shutdown(), PYOP_OK);
  remove_tree(dir);
  free(dir);
  free(counter);
  free(opp);
}

/*
 * A load the lanes made but the main interpreter's part fails: its plugin
 * import (the counter plugin fails at import 3, the main interpreter's:
 * the lanes take 1 and 2), then a plugin that registers LaneOnly in the
 * lanes only (lane_only/extra.py), twice. Each fails the load with its own
 * message and leaves the registry empty, and every interpreter drops what
 * it imported: the next load imports each plugin afresh in every lane (a
 * lane that kept pure/scale.py would take it as imported already and yield
 * nothing for it), and extra.py finds no copy of itself left in the main
 * interpreter's sys.modules (its import fails if it does).
 */
static void case_main_differs(void) {
  char *dir = make_temp_dir("lanes-main-differs");
  char *counter = path_join(dir, "count");
  setenv("PYOP_TEST_COUNTER_FILE", counter, 1);
  setenv("PYOP_TEST_COUNTER_FAIL", "3", 1);
  char *opp = xasprintf("%s/pure:%s/counter", LANES_PLUGINS, LANES_PLUGINS);
  load_with_lanes(2, opp);
  CHECK_RC(pyop_load(), PYOP_EPLUGIN);
  CHECK_ERR_HAS("RuntimeError: this plugin fails in the interpreter of import 3");
  CHECK(!err_has("lane 1") && !err_has("lane 2"), "a lane named for the main interpreter's "
        "failure: %s", pyop_last_error());
  CHECK_LIST("");
  char *differs = xasprintf("%s/pure:%s/lane_only", LANES_PLUGINS, LANES_PLUGINS);
  set_opp_path(differs);
  /* Twice: the second import of extra.py fails where the first load's copy
   * is still in sys.modules (the main interpreter kept it: issue 31). */
  for (int i = 0; i < 2; i++) {
    CHECK_RC(pyop_load(), PYOP_EPLUGIN);
    CHECK_ERR_HAS("lane 1 yields prototype 'LaneOnly' (");
    CHECK_ERR_HAS("/lane_only that the main interpreter does not");
    CHECK(!err_has("left its plugin modules") && !err_has("left its finder"), "load %d: %s",
          i + 1, pyop_last_error());
    CHECK_LIST("");
  }
  set_opp_path(opp); /* imports 4 and 5 in the lanes, 6 in the main interpreter */
  REQUIRE_RC(pyop_load(), PYOP_OK);
  expect_info("Scale", 2, NULL);
  expect_info("Counted", 2, NULL);
  float ids[2] = {0, 0};
  lane_ids(2, ids, 3);
  CHECK_RC(pyop_shutdown(), PYOP_OK);
  unsetenv("PYOP_TEST_COUNTER_FILE");
  unsetenv("PYOP_TEST_COUNTER_FAIL");
  remove_tree(dir);
  free(dir), free(counter), free(opp), free(differs);
}

/* The allocator of Scale's output runs the Lane op of another instance
 * (placed in the other lane) and looks an op up: libpyop called back from
 * inside a lane's execute. */
typedef struct hook_user {
  pyop_op *other;
  int rc;
  float id;
  float buf[64];
} hook_user;

static int hook_alloc(void *user, size_t index, pyop_tensor *t) {
  (void)index;
  hook_user *u = user;
  const pyop_op_info *info = NULL;
  if (pyop_op_get("Scale", &info) == PYOP_OK)
    pyop_op_info_release(info);
  float x[2] = {0, 0}, y[2] = {-1, -1};
  u->rc = run(u->other, x, y, 2);
  u->id = y[1];
  t->data = u->buf;
  return 0;
}

static void case_hooks(void) {
  char *opp = xasprintf("%s/pure", LANES_PLUGINS);
  load_with_lanes(2, opp);
  REQUIRE_RC(pyop_load(), PYOP_OK);
  pyop_op *scale = NULL, *other = NULL, *same = NULL;
  REQUIRE_RC(pyop_op_create("Scale", NULL, 0, &scale), PYOP_OK);
  REQUIRE_RC(pyop_op_create("Lane", NULL, 0, &other), PYOP_OK);
  REQUIRE_RC(pyop_op_create("Lane", NULL, 0, &same), PYOP_OK);
  CHECK(pyop_op_lane(scale) != pyop_op_lane(other), "placement");
  CHECK(pyop_op_lane(scale) == pyop_op_lane(same), "placement");
  for (int k = 0; k < 2; k++) {
    hook_user u = {k ? same : other, -1, 0, {0}};
    float x[4] = {1, 2, 3, 4};
    pyop_tensor tx = f32_1d(x, 4);
    pyop_tensor_list in[1] = {one(&tx)};
    pyop_exec_ctx ctx = PYOP_EXEC_CTX_INIT;
    ctx.user = &u;
    ctx.alloc_output = hook_alloc;
    pyop_tensor out[1];
    memset(out, 0, sizeof out);
    CHECK_RC(pyop_op_execute(scale, in, 1, out, 1, &ctx), PYOP_OK);
    CHECK(u.rc == PYOP_OK, "the op run from the hook: %s", pyop_status_name(u.rc));
    CHECK(u.id != 0.0f, "the op run from the hook ran in the main interpreter");
    CHECK(u.buf[3] == 8.0f, "Scale's output: %g", u.buf[3]);
  }
  pyop_op_destroy(scale);
  pyop_op_destroy(other);
  pyop_op_destroy(same);
  CHECK_RC(pyop_shutdown(), PYOP_OK);
  free(opp);
}

/* GE plugins (tests/ge/plugins: the ge package, ctypes views) in 2 lanes:
 * on 3.13 every op runs in lanes and GeScaledAdd computes in one; on 3.12,
 * whose _ctypes refuses such interpreters, every op stays serial and says
 * why. */
static void case_ge(void) {
  load_with_lanes(2, LANES_GE_PLUGINS);
  REQUIRE_RC(pyop_load(), PYOP_OK);
  bool py313 = strstr(Py_VERSION_FOR_TEST, "3.12") == NULL;
  if (py313)
    expect_info("GeScaledAdd", 2, NULL);
  else
    expect_info("GeScaledAdd", 0, "module _ctypes does not support loading in subinterpreters");
  pyop_attr alpha = attr_float("alpha", 3.0);
  for (int k = 0; k < 3; k++) {
    pyop_op *op = NULL;
    REQUIRE_RC(pyop_op_create("GeScaledAdd", &alpha, 1, &op), PYOP_OK);
    CHECK(py313 ? pyop_op_lane(op) != 0 : pyop_op_lane(op) == 0, "instance %d in lane %u", k,
          (unsigned)pyop_op_lane(op));
    float x[3] = {1, 2, 3}, y[3] = {1, 1, 1}, z[3] = {0, 0, 0};
    pyop_tensor tx = f32_1d(x, 3), ty = f32_1d(y, 3), tz = f32_1d(z, 3);
    pyop_tensor_list in[2] = {one(&tx), one(&ty)};
    pyop_exec_ctx ctx = PYOP_EXEC_CTX_INIT;
    CHECK_RC(pyop_op_execute(op, in, 2, &tz, 1, &ctx), PYOP_OK);
    CHECK(z[0] == 4.0f && z[2] == 6.0f, "GeScaledAdd: z = %g %g %g", z[0], z[1], z[2]);
    pyop_op_destroy(op);
  }
  CHECK_RC(pyop_shutdown(), PYOP_OK);
}

/*
 * GE's sample shape: an implementation-only plugin
 * (tests/ge/impl_only/ge_add_custom.py) bound to the host's REG_OP
 * prototype, registered before the load. The lanes bind it as the main
 * interpreter does: on 3.13 instances run in lanes, on 3.12 serially with
 * _ctypes's reason; the result is the same everywhere.
 */
static void case_ge_impl_only(void) {
  pyop_io_info ins[2] = {{"x1", PYOP_IO_REQUIRED}, {"x2", PYOP_IO_REQUIRED}};
  pyop_io_info outs[1] = {{"y", PYOP_IO_REQUIRED}};
  pyop_attr_info alpha_info[1] = {{"alpha", PYOP_ATTR_FLOAT, false,
                                   {.type = PYOP_ATTR_FLOAT, .u.f = 1.0}}};
  pyop_op_info proto = {sizeof proto, "GeAddCustom", NULL, NULL, NULL, NULL, ins, 2,
                        outs, 1, alpha_info, 1, 0};
  REQUIRE_RC(pyop_register_host_prototype(&proto), PYOP_OK);
  char *opp = xasprintf("%s/../impl_only", LANES_GE_PLUGINS);
  load_with_lanes(2, opp);
  REQUIRE_RC(pyop_load(), PYOP_OK);
  bool py313 = strstr(Py_VERSION_FOR_TEST, "3.12") == NULL;
  if (py313)
    expect_info("GeAddCustom", 2, NULL);
  else
    expect_info("GeAddCustom", 0, "module _ctypes does not support loading in subinterpreters");
  pyop_attr alpha = attr_float("alpha", 0.5);
  uint32_t seen[2] = {0, 0};
  for (int k = 0; k < 2; k++) {
    pyop_op *op = NULL;
    REQUIRE_RC(pyop_op_create("GeAddCustom", &alpha, 1, &op), PYOP_OK);
    seen[k] = pyop_op_lane(op);
    float x[4] = {1, 2, 3, 4}, y[4] = {10, 20, 30, 40}, r[4] = {0};
    pyop_tensor tx = f32_1d(x, 4), ty = f32_1d(y, 4), tr = f32_1d(r, 4);
    pyop_tensor_list in[2] = {one(&tx), one(&ty)};
    pyop_exec_ctx ctx = PYOP_EXEC_CTX_INIT;
    CHECK_RC(pyop_op_execute(op, in, 2, &tr, 1, &ctx), PYOP_OK);
    CHECK(r[0] == 6.0f && r[3] == 24.0f, "GeAddCustom x1 + 0.5 * x2: %g %g", r[0], r[3]);
    pyop_op_destroy(op);
  }
  if (py313)
    CHECK(seen[0] != 0 && seen[1] != 0 && seen[0] != seen[1], "instances in lanes %u and %u",
          (unsigned)seen[0], (unsigned)seen[1]);
  else
    CHECK(seen[0] == 0 && seen[1] == 0, "serial on 3.12: lanes %u and %u", (unsigned)seen[0],
          (unsigned)seen[1]);
  CHECK_RC(pyop_shutdown(), PYOP_OK);
  free(opp);
}

static void *shutdown_thread(void *p) {
  (void)p;
  CHECK_RC(pyop_shutdown(), PYOP_OK);
  return NULL;
}

/* A plugin that imports asyncio runs in lanes on 3.13; 3.12 refuses
 * asyncio in a lane (it cannot end such an interpreter), so there the op
 * stays serial and says why. The lanes end from another thread than the
 * one that started them, and start again (run.sh fails the case on any
 * "Exception ignored" or fatal error on stderr). */
static void case_asyncio(void) {
  char *opp = xasprintf("%s/asyncio_user:%s/pure", LANES_PLUGINS, LANES_PLUGINS);
  load_with_lanes(2, opp);
  bool py312 = strstr(Py_VERSION_FOR_TEST, "3.12") != NULL;
  for (int round = 0; round < 2; round++) {
    REQUIRE_RC(pyop_load(), PYOP_OK);
    if (py312)
      expect_info("AsyncioUser", 0, "asyncio is refused in an interpreter lane on Python 3.12");
    else
      expect_info("AsyncioUser", 2, NULL);
    expect_info("Scale", 2, NULL);
    pyop_op *op = NULL;
    REQUIRE_RC(pyop_op_create("AsyncioUser", NULL, 0, &op), PYOP_OK);
    float x[2] = {5, 6}, y[2] = {0, 0};
    CHECK_RC(run(op, x, y, 2), PYOP_OK);
    CHECK(y[1] == 6.0f, "y[1] = %g", y[1]);
    pyop_op_destroy(op);
    pthread_t t;
    REQUIRE(pthread_create(&t, NULL, shutdown_thread, NULL) == 0, "thread");
    pthread_join(t, NULL);
  }
  free(opp);
}

/* What CPython refuses in a lane: os.fork() and daemon threads raise
 * RuntimeError in a plugin's execute there. */
static void case_refusals(void) {
  char *opp = xasprintf("%s/refusals", LANES_PLUGINS);
  load_with_lanes(1, opp);
  REQUIRE_RC(pyop_load(), PYOP_OK);
  expect_info("Refusals", 1, NULL);
  pyop_op *op = NULL;
  REQUIRE_RC(pyop_op_create("Refusals", NULL, 0, &op), PYOP_OK);
  float x[3] = {0, 0, 0}, y[3] = {-1, -1, -1};
  CHECK_RC(run(op, x, y, 3), PYOP_OK);
  CHECK(y[2] == 0.0f, "the instance ran in the main interpreter");
  CHECK(y[0] == 1.0f, "os.fork() was not refused in a lane");
  CHECK(y[1] == 1.0f, "a daemon thread was not refused in a lane");
  pyop_op_destroy(op);
  CHECK_RC(pyop_shutdown(), PYOP_OK);
  free(opp);
}

/* ------------------------------------------------------------------ fork */

/* The child's exit status, or -1 when it did not exit within seconds (killed). */
static int wait_child(pid_t pid, int seconds) {
  int st = 0;
  for (int i = 0; i < seconds * 50; i++) {
    pid_t r = waitpid(pid, &st, WNOHANG);
    if (r == pid)
      return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    if (r < 0)
      break;
    usleep(20 * 1000);
  }
  kill(pid, SIGKILL);
  waitpid(pid, &st, 0);
  return -1;
}

/* In the child: every call refused with PYOP_EFORKED, its own watchdog. */
static int fork_child_checks(pyop_op *in_lane) {
  alarm(10);
  int bad = 0;
#define CHILD_RC(expr, want)                                                             \
  do {                                                                                   \
    int rc_ = (expr);                                                                    \
    if (rc_ != (want)) {                                                                 \
      fprintf(stderr, "FAIL child: %s returned %s, expected %s (%s)\n", #expr,           \
              pyop_status_name(rc_), pyop_status_name(want), pyop_last_error());         \
      bad++;                                                                             \
    }                                                                                    \
  } while (0)
  float x[2] = {1, 2}, y[2] = {0, 0};
  CHILD_RC(run(in_lane, x, y, 2), PYOP_EFORKED);
  if (strstr(pyop_last_error(), "forked") == NULL) {
    fprintf(stderr, "FAIL child: message lacks 'forked': %s\n", pyop_last_error());
    bad++;
  }
  pyop_op *c = NULL;
  CHILD_RC(pyop_op_create("Scale", NULL, 0, &c), PYOP_EFORKED);
  CHILD_RC(pyop_load(), PYOP_EFORKED);
  CHILD_RC(pyop_unload(), PYOP_EFORKED);
  CHILD_RC(pyop_shutdown(), PYOP_EFORKED);
  pyop_op_destroy(in_lane); /* frees libpyop's memory, touches no Python */
  fprintf(stderr, "[fork child] %d failures\n", bad);
  return bad ? 1 : 0;
#undef CHILD_RC
}

typedef struct spin_job {
  pyop_op *op;
  float *x, *y;
  int64_t n;
  atomic_int rc;
} spin_job;

static void *spin_in_lane(void *p) {
  spin_job *j = p;
  atomic_store(&j->rc, run(j->op, j->x, j->y, j->n));
  return NULL;
}

static void case_fork(void) {
  char *opp = xasprintf("%s/pure", LANES_PLUGINS);
  load_with_lanes(2, opp);
  REQUIRE_RC(pyop_load(), PYOP_OK);
  pyop_op *a = NULL, *b = NULL;
  REQUIRE_RC(pyop_op_create("Scale", NULL, 0, &a), PYOP_OK);
  REQUIRE_RC(pyop_op_create("Scale", NULL, 0, &b), PYOP_OK);
  REQUIRE(pyop_op_lane(a) != 0 && pyop_op_lane(b) != 0, "Scale not in lanes");
  enum { N = 1 << 20 }; /* pure-Python Scale: a few hundred ms in the lane */
  float *x = calloc(N, sizeof *x), *y = calloc(N, sizeof *y);
  REQUIRE(x != NULL && y != NULL, "out of memory");
  for (int round = 0; round < 2; round++) {
    spin_job job = {b, x, y, N, PYOP_OK};
    pthread_t t;
    if (round == 1) { /* the other thread is inside execute, in lane b */
      REQUIRE(pthread_create(&t, NULL, spin_in_lane, &job) == 0, "thread");
      usleep(100 * 1000);
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0)
      _exit(fork_child_checks(a));
    int st = wait_child(pid, 30);
    CHECK(st == 0, "fork child (round %d) exited with %d (-1: hung, killed)", round, st);
    if (round == 1) {
      pthread_join(t, NULL);
      CHECK_RC(atomic_load(&job.rc), PYOP_OK);
      CHECK(y[N - 1] == 0.0f && y[0] == 0.0f, "Scale of zeros: %g", y[0]);
    }
  }
  /* The parent is unaffected: both lanes still run. */
  float x2[2] = {1, 2}, y2[2] = {0, 0};
  CHECK_RC(run(a, x2, y2, 2), PYOP_OK);
  CHECK(y2[1] == 4.0f, "Scale after the fork: y[1] = %g", y2[1]);
  CHECK_RC(run(b, x2, y2, 2), PYOP_OK);
  pyop_op_destroy(a);
  pyop_op_destroy(b);
  free(x);
  free(y);
  CHECK_RC(pyop_shutdown(), PYOP_OK);
  free(opp);
}

/* ------------------------------------------------------------ busy, escape */

typedef struct busy_job {
  atomic_int unload_rc, shutdown_rc;
  char unload_msg[512];
} busy_job;

static void *unload_from_another_thread(void *p) {
  busy_job *j = p;
  atomic_store(&j->unload_rc, pyop_unload());
  snprintf(j->unload_msg, sizeof j->unload_msg, "%s", pyop_last_error());
  atomic_store(&j->shutdown_rc, pyop_shutdown());
  return NULL;
}

static void case_busy(void) {
  char *opp = xasprintf("%s/pure", LANES_PLUGINS);
  load_with_lanes(2, opp);
  REQUIRE_RC(pyop_load(), PYOP_OK);
  pyop_op *b = NULL;
  REQUIRE_RC(pyop_op_create("Scale", NULL, 0, &b), PYOP_OK);
  REQUIRE(pyop_op_lane(b) != 0, "Scale not in a lane");
  enum { N = 1 << 20 };
  float *x = calloc(N, sizeof *x), *y = calloc(N, sizeof *y);
  REQUIRE(x != NULL && y != NULL, "out of memory");
  for (int i = 0; i < N; i++)
    x[i] = 1.0f;
  spin_job job = {b, x, y, N, PYOP_OK};
  pthread_t t, u;
  REQUIRE(pthread_create(&t, NULL, spin_in_lane, &job) == 0, "thread");
  usleep(100 * 1000); /* t is inside execute, in the lane */
  busy_job bj = {PYOP_OK, PYOP_OK, ""};
  REQUIRE(pthread_create(&u, NULL, unload_from_another_thread, &bj) == 0, "thread");
  pthread_join(u, NULL);
  pthread_join(t, NULL);
  CHECK_RC(atomic_load(&bj.unload_rc), PYOP_EBUSY);
  CHECK(strstr(bj.unload_msg, "Scale") != NULL, "the refusal does not name Scale: %s",
        bj.unload_msg);
  CHECK_RC(atomic_load(&bj.shutdown_rc), PYOP_EBUSY);
  CHECK_RC(atomic_load(&job.rc), PYOP_OK);
  CHECK(y[0] == 2.0f && y[N - 1] == 2.0f, "Scale: y = %g .. %g", y[0], y[N - 1]);
  pyop_op_destroy(b);
  CHECK_RC(pyop_unload(), PYOP_OK);
  CHECK_RC(pyop_shutdown(), PYOP_OK);
  free(x);
  free(y);
  free(opp);
}


static void case_escape(void) {
  char *opp = xasprintf("%s/escape", LANES_PLUGINS);
  load_with_lanes(1, opp);
  REQUIRE_RC(pyop_load(), PYOP_OK);
  expect_info("Keep", 1, NULL);
  pyop_op *keep = NULL, *check = NULL;
  REQUIRE_RC(pyop_op_create("Keep", NULL, 0, &keep), PYOP_OK);
  REQUIRE_RC(pyop_op_create("Check", NULL, 0, &check), PYOP_OK);
  REQUIRE(pyop_op_lane(keep) == 1 && pyop_op_lane(check) == 1, "not in lane 1");
  for (int round = 0; round < 2; round++) {
    float x[3] = {1, 2, 3}, y[3] = {-1, -1, -1};
    CHECK_RC(run(keep, x, y, 3), PYOP_OK);
    CHECK_RC(run(check, x, y, 3), PYOP_OK);
    CHECK(y[2] != 0.0f, "Check ran in the main interpreter");
    CHECK(y[0] == 1.0f, "a kept execute ctx was usable after its call (round %d)", round);
    CHECK(y[1] == 1.0f, "a kept Tensor was usable after its call (round %d)", round);
  }
  /* Keep's thread, left waiting: shutdown does not wait for it (as for the
   * main interpreter's), it keeps running in the kept lane, a warning names
   * it. */
  float x[3] = {1, 2, 3}, y[3] = {-1, -1, -1};
  CHECK_RC(run(keep, x, y, 3), PYOP_OK);
  pyop_op_destroy(keep);
  pyop_op_destroy(check);
  pyop_host_hooks h = PYOP_HOST_HOOKS_INIT;
  h.log = lanes_keep_warning;
  CHECK_RC(pyop_set_host_hooks(&h), PYOP_OK);
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  CHECK_RC(pyop_shutdown(), PYOP_OK);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double took = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
  CHECK(took < 10.0, "pyop_shutdown waited %.1f s for a lane's Python thread", took);
  CHECK(strstr(lanes_warnings, "lane 1: Python thread(s) 'Thread-") != NULL &&
            strstr(lanes_warnings, "still running at pyop_shutdown") != NULL,
        "no warning names the lane's thread: %s", lanes_warnings);
  CHECK_RC(pyop_set_host_hooks(NULL), PYOP_OK);
  REQUIRE_RC(pyop_load(), PYOP_OK); /* the kept lane, its thread still waiting, serves */
  expect_info("Keep", 1, NULL);
  CHECK_RC(pyop_shutdown(), PYOP_OK);
  free(opp);
}

/*
 * A plugin's thread left running in the LAST of two lanes (lifetime pass,
 * session 15: each lane's threads are listed, not lane 1's for all): the
 * shutdown warning names lane 2's thread, and lane 1, which has none, is
 * not named.
 */
static void case_escape_last(void) {
  char *opp = xasprintf("%s/escape", LANES_PLUGINS);
  load_with_lanes(2, opp);
  REQUIRE_RC(pyop_load(), PYOP_OK);
  expect_info("Keep", 2, NULL);
  pyop_op *keep = NULL;
  for (int tries = 0; tries < 2 && (keep == NULL || pyop_op_lane(keep) != 2); tries++) {
    if (keep != NULL)
      pyop_op_destroy(keep);
    REQUIRE_RC(pyop_op_create("Keep", NULL, 0, &keep), PYOP_OK);
  }
  REQUIRE(pyop_op_lane(keep) == 2, "Keep in lane %u, not 2", (unsigned)pyop_op_lane(keep));
  float x[3] = {1, 2, 3}, y[3] = {-1, -1, -1};
  CHECK_RC(run(keep, x, y, 3), PYOP_OK);
  pyop_op_destroy(keep);
  pyop_host_hooks h = PYOP_HOST_HOOKS_INIT;
  h.log = lanes_keep_warning;
  lanes_warnings[0] = '\0';
  CHECK_RC(pyop_set_host_hooks(&h), PYOP_OK);
  CHECK_RC(pyop_shutdown(), PYOP_OK);
  CHECK(strstr(lanes_warnings, "lane 2: Python thread(s) 'Thread-") != NULL &&
            strstr(lanes_warnings, "still running at pyop_shutdown") != NULL,
        "no warning names lane 2's thread: %s", lanes_warnings);
  CHECK(strstr(lanes_warnings, "lane 1: Python thread") == NULL,
        "lane 1 (no thread) named: %s", lanes_warnings);
  CHECK_RC(pyop_set_host_hooks(NULL), PYOP_OK);
  free(opp);
}

/* ----------------------------------------------------------------- sigint */

static volatile sig_atomic_t sigints;

static void on_sigint(int sig) {
  (void)sig;
  sigints++;
}

static void *send_sigints(void *p) {
  (void)p;
  usleep(200 * 1000); /* lane 1 imports slow.py (0.5 s) */
  kill(getpid(), SIGINT);
  usleep(600 * 1000); /* the main interpreter imports it */
  kill(getpid(), SIGINT);
  return NULL;
}

static void case_sigint(void) {
  struct sigaction sa, old;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  REQUIRE(sigaction(SIGINT, &sa, &old) == 0, "sigaction");
  char *opp = xasprintf("%s/slow_import", LANES_PLUGINS);
  load_with_lanes(1, opp);
  sigset_t before, after;
  REQUIRE(pthread_sigmask(SIG_BLOCK, NULL, &before) == 0, "pthread_sigmask");
  pthread_t t;
  REQUIRE(pthread_create(&t, NULL, send_sigints, NULL) == 0, "thread");
  CHECK_RC(pyop_load(), PYOP_OK);
  pthread_join(t, NULL);
  CHECK(sigints == 2, "the host's SIGINT handler ran %d times, expected 2", (int)sigints);
  /* The loading thread's signal mask is the host's again once the lanes'
   * workers are made (lifetime pass, session 15: they block every signal). */
  REQUIRE(pthread_sigmask(SIG_BLOCK, NULL, &after) == 0, "pthread_sigmask");
  static const int sigs[] = {SIGINT, SIGTERM, SIGUSR1, SIGCHLD};
  for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
    CHECK(sigismember(&after, sigs[i]) == sigismember(&before, sigs[i]),
          "signal %d %s on the loading thread after pyop_load", sigs[i],
          sigismember(&after, sigs[i]) ? "blocked" : "unblocked");
  expect_info("Slow", 1, NULL);
  pyop_op *op = NULL;
  REQUIRE_RC(pyop_op_create("Slow", NULL, 0, &op), PYOP_OK);
  float x[2] = {3, 4}, y[2] = {0, 0};
  CHECK_RC(run(op, x, y, 2), PYOP_OK);
  CHECK(y[1] == 4.0f, "Slow: y[1] = %g", y[1]);
  pyop_op_destroy(op);
  CHECK_RC(pyop_shutdown(), PYOP_OK);
  sigaction(SIGINT, &old, NULL);
  free(opp);
}

/* -------------------------------------------------------------- hook_swap */

static atomic_long swap_lines_a, swap_lines_b;

static void swap_log_a(void *user, int level, const char *line) {
  (void)user, (void)level, (void)line;
  atomic_fetch_add(&swap_lines_a, 1);
}

static void swap_log_b(void *user, int level, const char *line) {
  (void)user, (void)level, (void)line;
  atomic_fetch_add(&swap_lines_b, 1);
}

static atomic_bool swap_stop;

typedef struct swap_job {
  atomic_int bad;
  atomic_long runs;
} swap_job;

static void *swap_worker(void *p) {
  swap_job *j = p;
  while (!atomic_load(&swap_stop)) {
    pyop_op *op = NULL;
    if (pyop_op_create("Scale", NULL, 0, &op) != PYOP_OK) {
      atomic_fetch_add(&j->bad, 1);
      continue;
    }
    float x[2] = {1, 2}, y[2] = {0, 0};
    if (run(op, x, y, 2) != PYOP_OK || y[1] != 4.0f || pyop_op_lane(op) == 0)
      atomic_fetch_add(&j->bad, 1);
    pyop_op_destroy(op);
    atomic_fetch_add(&j->runs, 1);
  }
  return NULL;
}

static void case_hook_swap(void) {
  char *opp = xasprintf("%s/pure", LANES_PLUGINS);
  load_with_lanes(2, opp);
  REQUIRE_RC(pyop_load(), PYOP_OK);
  int level = pyop_get_log_level();
  CHECK_RC(pyop_set_log_level(PYOP_LOG_DEBUG), PYOP_OK);
  swap_job job = {0, 0};
  pthread_t t[2];
  for (int i = 0; i < 2; i++)
    REQUIRE(pthread_create(&t[i], NULL, swap_worker, &job) == 0, "thread");
  for (int i = 0; i < 2000 || (atomic_load(&job.runs) < 100 && i < 20000000); i++) {
    pyop_host_hooks h = PYOP_HOST_HOOKS_INIT;
    h.log = i % 2 ? swap_log_a : swap_log_b;
    CHECK_RC(pyop_set_host_hooks(i % 3 == 2 ? NULL : &h), PYOP_OK);
  }
  atomic_store(&swap_stop, true);
  for (int i = 0; i < 2; i++)
    pthread_join(t[i], NULL);
  CHECK(atomic_load(&job.bad) == 0, "%d of %ld runs failed while the hooks changed",
        atomic_load(&job.bad), atomic_load(&job.runs));
  CHECK(atomic_load(&job.runs) >= 100, "only %ld runs", atomic_load(&job.runs));
  CHECK_RC(pyop_set_host_hooks(NULL), PYOP_OK);
  CHECK_RC(pyop_set_log_level(level), PYOP_OK);
  CHECK_RC(pyop_shutdown(), PYOP_OK);
  free(opp);
}

/* ------------------------------------------------------------ log_threads */

static pthread_t log_loader;
static atomic_int log_foreign, log_lines, log_nested_busy;
static char log_serial[1024];

/* Every line of the load must come from the loading thread (the lanes'
 * workers hand theirs over), where a nested lifecycle call is refused at
 * once instead of waiting for the load that runs the hook. */
static void thread_log(void *user, int level, const char *line) {
  (void)user, (void)level;
  atomic_fetch_add(&log_lines, 1);
  if (!pthread_equal(pthread_self(), log_loader)) {
    atomic_fetch_add(&log_foreign, 1);
    return; /* a nested call from here would wait for the load */
  }
  if (strstr(line, "stay serial in the main interpreter") != NULL && log_serial[0] == '\0')
    snprintf(log_serial, sizeof log_serial, "%s", line);
  if (pyop_load() == PYOP_EBUSY)
    atomic_fetch_add(&log_nested_busy, 1);
}

static void case_log_threads(void) {
  char *opp = xasprintf("%s/pure:%s/refused", LANES_PLUGINS, LANES_PLUGINS);
  load_with_lanes(2, opp);
  log_loader = pthread_self();
  int level = pyop_get_log_level();
  CHECK_RC(pyop_set_log_level(PYOP_LOG_DEBUG), PYOP_OK);
  pyop_host_hooks h = PYOP_HOST_HOOKS_INIT;
  h.log = thread_log;
  CHECK_RC(pyop_set_host_hooks(&h), PYOP_OK);
  REQUIRE_RC(pyop_load(), PYOP_OK);
  CHECK_RC(pyop_set_host_hooks(NULL), PYOP_OK);
  CHECK_RC(pyop_set_log_level(level), PYOP_OK);
  CHECK(atomic_load(&log_foreign) == 0, "%d of %d log lines came from another thread than "
        "the loading one", atomic_load(&log_foreign), atomic_load(&log_lines));
  CHECK(strstr(log_serial, "lane 1: ") != NULL, "no line says Refused stays serial: '%s'",
        log_serial);
  CHECK(atomic_load(&log_nested_busy) == atomic_load(&log_lines) - atomic_load(&log_foreign),
        "a nested pyop_load from the log hook was not refused at once (%d of %d)",
        atomic_load(&log_nested_busy), atomic_load(&log_lines));
  expect_info("Scale", 2, NULL);
  CHECK_RC(pyop_shutdown(), PYOP_OK);
  free(opp);
}

/* ------------------------------------------------------------- start_fail */

/*
 * A lane that cannot start (the test seam fail-start-2: its sub-interpreter
 * refused) fails the whole load, naming it, while lane 1 starts beside it
 * on another worker: the registry stays empty, and lane 1's interpreter
 * (the process's first sub-interpreter, id 1) goes back to the kept lanes,
 * so the next load runs in it and starts only lane 2 (id 2).
 */
static void case_start_fail(void) {
  char *opp = xasprintf("%s/pure", LANES_PLUGINS);
  load_with_lanes(2, opp);
  setenv("PYOP_TEST_LANES", "force,fail-start-2", 1);
  CHECK_RC(pyop_load(), PYOP_EPYTHON);
  CHECK_ERR_HAS("lane 2: cannot start a sub-interpreter: PYOP_TEST_LANES=fail-start-2");
  CHECK(!err_has("lane 1"), "lane 1 named for a start lane 2 failed");
  CHECK_LIST("");
  setenv("PYOP_TEST_LANES", "force", 1);
  REQUIRE_RC(pyop_load(), PYOP_OK);
  float ids[2] = {0, 0};
  lane_ids(2, ids, 1);
  CHECK(ids[0] == 1.0f && ids[1] == 2.0f, "lanes in interpreters %g %g, expected 1 (kept from "
        "the failed load) and 2", ids[0], ids[1]);
  CHECK_RC(pyop_shutdown(), PYOP_OK);
  free(opp);
}

/*
 * One lane, the one that cannot start (the limit 1 and its first lane):
 * the load fails naming lane 1, and the shutdown of lanes that made no
 * interpreter keeps nothing and warns of nothing; the next load starts
 * lane 1 (configuration pass, session 12).
 */
static void case_start_fail_one(void) {
  char *opp = xasprintf("%s/pure", LANES_PLUGINS);
  load_with_lanes(1, opp);
  setenv("PYOP_TEST_LANES", "force,fail-start-1", 1);
  pyop_host_hooks h = PYOP_HOST_HOOKS_INIT;
  h.log = lanes_keep_warning;
  CHECK_RC(pyop_set_host_hooks(&h), PYOP_OK);
  lanes_warnings[0] = '\0';
  CHECK_RC(pyop_load(), PYOP_EPYTHON);
  CHECK_ERR_HAS("lane 1: cannot start a sub-interpreter: PYOP_TEST_LANES=fail-start-1");
  CHECK_LIST("");
  CHECK(strstr(lanes_warnings, "cannot keep them") == NULL,
        "lanes that made no interpreter warned of keeping them:\n%s", lanes_warnings);
  setenv("PYOP_TEST_LANES", "force", 1);
  REQUIRE_RC(pyop_load(), PYOP_OK);
  expect_info("Scale", 1, NULL);
  float ids[1] = {0};
  lane_ids(1, ids, 1);
  CHECK(ids[0] != 0.0f, "Scale's lane ran in the main interpreter");
  CHECK_RC(pyop_shutdown(), PYOP_OK);
  CHECK(strstr(lanes_warnings, "cannot keep them") == NULL, "the lanes not kept:\n%s",
        lanes_warnings);
  CHECK_RC(pyop_set_host_hooks(NULL), PYOP_OK);
  free(opp);
}

/*
 * Lane 1 of 2 cannot start, lane 2 does: the load fails naming lane 1, and
 * lane 2's interpreter, the only one made, is kept (its image runs the
 * pool's exit hook) without a warning: the next load takes it up and
 * starts one more (configuration pass, session 12).
 */
static char ready_lines[2048];
static void keep_ready(void *user, int level, const char *line);

static void case_start_fail_first(void) {
  char *opp = xasprintf("%s/pure", LANES_PLUGINS);
  load_with_lanes(2, opp);
  setenv("PYOP_TEST_LANES", "force,fail-start-1", 1);
  int level = pyop_get_log_level();
  CHECK_RC(pyop_set_log_level(PYOP_LOG_INFO), PYOP_OK);
  pyop_host_hooks h = PYOP_HOST_HOOKS_INIT;
  h.log = lanes_keep_warning;
  CHECK_RC(pyop_set_host_hooks(&h), PYOP_OK);
  lanes_warnings[0] = '\0';
  CHECK_RC(pyop_load(), PYOP_EPYTHON);
  CHECK_ERR_HAS("lane 1: cannot start a sub-interpreter: PYOP_TEST_LANES=fail-start-1");
  CHECK_LIST("");
  CHECK(strstr(lanes_warnings, "cannot keep them") == NULL,
        "lane 2's interpreter not kept:\n%s", lanes_warnings);
  setenv("PYOP_TEST_LANES", "force", 1);
  h.log = keep_ready;
  ready_lines[0] = '\0';
  CHECK_RC(pyop_set_host_hooks(&h), PYOP_OK);
  REQUIRE_RC(pyop_load(), PYOP_OK);
  CHECK(strstr(ready_lines, "(1 started, 1 kept from an earlier load)") != NULL,
        "the load after said: '%s'", ready_lines);
  expect_info("Scale", 2, NULL);
  CHECK_RC(pyop_shutdown(), PYOP_OK);
  CHECK_RC(pyop_set_host_hooks(NULL), PYOP_OK);
  CHECK_RC(pyop_set_log_level(level), PYOP_OK);
  free(opp);
}

/* ------------------------------------------------------- one_lane_differs */

/* What tests/lanes/plugins/per_interp does differently in interpreter id. */
static void by_interp(const char *file, const char *action, float id) {
  char *text = xasprintf("%s %d\n", action, (int)id);
  write_file(file, text);
  free(text);
}

/*
 * Each lane's load of an element is its own: per_interp (the second
 * element, after pure) refused in lane 1 only, then in lane 2 only, leaves
 * its op serial naming that lane, while pure's ops run in both; registering
 * an extra op in one lane only fails the load naming that lane and the
 * element; so does one whose prototype has a longer key in one lane, or
 * is not registered there (the implementation, under the same key, is),
 * or whose implementation has other capabilities there; or whose identical
 * copy, first on the path, registers no prototype in one lane (the
 * original there does). The lanes keep their interpreters across unload and load (ids
 * from lane_ids), so the plugin knows which one differs. After that, the
 * same lanes load it alike again and it runs in both.
 */
static char serial_lines[2048];

/* Keeps the warnings that say an element stays serial. */
static void keep_serial(void *user, int level, const char *line) {
  (void)user, (void)level;
  size_t used = strlen(serial_lines);
  if (strstr(line, "stay serial in the main interpreter") != NULL &&
      used + strlen(line) + 2 < sizeof serial_lines) {
    strcat(serial_lines, line);
    strcat(serial_lines, "\n");
  }
}

/* Lane 1, then lane 2, has by_interp do ACTION: the load fails, its
 * error has WANT (a format of the lane's number) and ALSO (or NULL), and
 * nothing is registered. */
static void load_fails_per_lane(const char *file, const float *ids, const char *action,
                                const char *want_fmt, const char *also) {
  for (int k = 0; k < 2; k++) {
    by_interp(file, action, ids[k]);
    CHECK(pyop_load() != PYOP_OK, "'%s' in lane %d accepted", action, k + 1);
    char want[96];
    snprintf(want, sizeof want, want_fmt, k + 1);
    CHECK_ERR_HAS(want);
    if (also != NULL)
      CHECK_ERR_HAS(also);
    CHECK_LIST("");
  }
}

static void case_one_lane_differs(void) {
  char *dir = make_temp_dir("lanes-by-interp");
  char *file = path_join(dir, "action");
  setenv("PYOP_TEST_BY_INTERP_FILE", file, 1); /* before Python starts: its os.environ */
  char *opp = xasprintf("%s/pure:%s/per_interp", LANES_PLUGINS, LANES_PLUGINS);
  load_with_lanes(2, opp);
  REQUIRE_RC(pyop_load(), PYOP_OK);
  expect_info("ByInterp", 2, NULL);
  float ids[2] = {0, 0};
  lane_ids(2, ids, 0);
  REQUIRE(ids[0] != 0 && ids[1] != 0 && ids[0] != ids[1], "lanes in interpreters %g %g",
          ids[0], ids[1]);
  for (int k = 0; k < 2; k++) {
    by_interp(file, "refuse", ids[k]);
    CHECK_RC(pyop_unload(), PYOP_OK);
    pyop_host_hooks h = PYOP_HOST_HOOKS_INIT;
    h.log = keep_serial;
    serial_lines[0] = '\0';
    CHECK_RC(pyop_set_host_hooks(&h), PYOP_OK);
    REQUIRE_RC(pyop_load(), PYOP_OK);
    CHECK_RC(pyop_set_host_hooks(NULL), PYOP_OK);
    char want[128];
    snprintf(want, sizeof want, "lane %d: loading Python plugins failed: ImportError: by_interp refuses interpreter %d",
             k + 1,
             (int)ids[k]);
    expect_info("ByInterp", 0, want);
    /* One warning says so, whichever lane refused (lane 2 alone too). */
    const char *warned = strstr(serial_lines, want);
    CHECK(warned != NULL && strchr(serial_lines, '\n') == serial_lines + strlen(serial_lines) - 1,
          "refused by lane %d alone: warnings '%s'", k + 1, serial_lines);
    const pyop_op_info *info = NULL;
    CHECK_RC(pyop_op_get("ByInterp", &info), PYOP_OK);
    if (info != NULL) { /* the first line of the lane's error only (no traceback) */
      CHECK(strchr(info->serial_reason, '\n') == NULL, "a reason of several lines: %s",
            info->serial_reason);
      pyop_op_info_release(info);
    }
    expect_info("Scale", 2, NULL);
    expect_info("Lane", 2, NULL);
    pyop_op *op = NULL;
    REQUIRE_RC(pyop_op_create("ByInterp", NULL, 0, &op), PYOP_OK);
    CHECK(pyop_op_lane(op) == 0, "refused in lane %d: placed in lane %u", k + 1,
          (unsigned)pyop_op_lane(op));
    float x[2] = {3, 4}, y[2] = {0, 0};
    CHECK_RC(run(op, x, y, 2), PYOP_OK);
    CHECK(y[1] == 4.0f, "ByInterp: y[1] = %g", y[1]);
    pyop_op_destroy(op);
  }
  CHECK_RC(pyop_unload(), PYOP_OK);
  char *elem = xasprintf("of %s/per_interp that the main interpreter does not", LANES_PLUGINS);
  for (int k = 0; k < 2; k++) {
    by_interp(file, "extra", ids[k]);
    CHECK_RC(pyop_load(), PYOP_EPLUGIN);
    char want[64];
    snprintf(want, sizeof want, "lane %d yields prototype 'ByInterpExtra' (", k + 1);
    CHECK_ERR_HAS(want);
    CHECK_ERR_HAS(elem);
    CHECK(!err_has(k ? "lane 1" : "lane 2"), "the other lane named: %s", pyop_last_error());
    CHECK_LIST("");
  }
  /* An implementation with other capabilities in one lane (no compile
   * there): the load fails naming that lane (configuration pass, session
   * 12). */
  load_fails_per_lane(file, ids, "nocompile", "in lane %d but ", "implementation 'ByInterp' (");
  /* The prototype under a longer key in one lane (its function renamed
   * there; the main interpreter's key a prefix of it): that lane does not
   * yield the main interpreter's, and the load fails naming it (the lanes
   * C pass, session 18: a key was matched by its prefix). */
  load_fails_per_lane(file, ids, "rename", "lane %d does not yield prototype 'ByInterp' (", NULL);
  /* No prototype in one lane, only the implementation, whose key is the
   * prototype's: the lane does not yield the prototype (the lanes C pass,
   * session 18: a descriptor was matched whatever its kind). */
  load_fails_per_lane(file, ids, "noproto", "lane %d does not yield prototype 'ByInterp' (", NULL);
  /* The same plugin through two path elements, an identical copy of it
   * first: lane 1, then lane 2, registers no prototype from the copy alone
   * (the other element's it does): that lane does not yield the copy's, and
   * the load fails naming it (the lanes C pass, session 18: the other
   * element's descriptor was matched, and the op stayed serial as if the
   * lane had compiled other sources). */
  char *copy_dir = path_join(dir, "copy"), *copy = path_join(copy_dir, "by_interp.py");
  char *src = xasprintf("%s/per_interp/by_interp.py", LANES_PLUGINS);
  char *two = xasprintf("%s/pure:%s:%s/per_interp", LANES_PLUGINS, copy_dir, LANES_PLUGINS);
  make_dir(copy_dir);
  copy_file(src, copy);
  set_opp_path(two);
  for (int k = 0; k < 2; k++) {
    char *text = xasprintf("noproto %d %s\n", (int)ids[k], copy_dir);
    write_file(file, text);
    free(text);
    CHECK(pyop_load() != PYOP_OK, "no prototype from the copy in lane %d accepted", k + 1);
    char want[64];
    snprintf(want, sizeof want, "lane %d does not yield prototype 'ByInterp' (", k + 1);
    CHECK_ERR_HAS(want);
    CHECK_ERR_HAS(copy_dir);
    CHECK_LIST("");
  }
  set_opp_path(opp);
  free(copy_dir), free(copy), free(src), free(two);
  REQUIRE(remove(file) == 0, "remove %s", file);
  REQUIRE_RC(pyop_load(), PYOP_OK);
  expect_info("ByInterp", 2, NULL);
  expect_info("Scale", 2, NULL);
  float again[2] = {0, 0};
  lane_ids(2, again, 1);
  CHECK(again[0] == ids[0] && again[1] == ids[1], "interpreters %g %g, then %g %g", ids[0],
        ids[1], again[0], again[1]);
  CHECK_RC(pyop_shutdown(), PYOP_OK);
  unsetenv("PYOP_TEST_BY_INTERP_FILE");
  remove_tree(dir);
  free(dir), free(file), free(opp), free(elem);
}

/* ------------------------------------------------------------ kept_counts */

/* Keeps the lines that say the lanes are ready (INFO). */
static void keep_ready(void *user, int level, const char *line) {
  (void)user, (void)level;
  size_t used = strlen(ready_lines);
  if (strstr(line, "GIL ready in") != NULL && used + strlen(line) + 2 < sizeof ready_lines) {
    strcat(ready_lines, line);
    strcat(ready_lines, "\n");
  }
}


/*
 * How many lanes each start made and took up from the kept ones, as its
 * log line says: 2 lanes (both new), 3 (two kept, one new), 1 (one of the
 * three kept), 2 (two of the three kept); a load after unload starts none
 * and says nothing.
 */
static void case_kept_counts(void) {
  char *opp = xasprintf("%s/pure", LANES_PLUGINS);
  int level = pyop_get_log_level();
  CHECK_RC(pyop_set_log_level(PYOP_LOG_INFO), PYOP_OK);
  pyop_host_hooks h = PYOP_HOST_HOOKS_INIT;
  h.log = keep_ready;
  CHECK_RC(pyop_set_host_hooks(&h), PYOP_OK);
  static const struct {
    uint32_t lanes;
    const char *says;
  } loads[] = {
      {2, "lanes: 2 sub-interpreters with their own GIL ready in "},
      {3, "(1 started, 2 kept from an earlier load)"},
      {1, "lanes: 1 sub-interpreter with its own GIL ready in "},
      {2, "(0 started, 2 kept from an earlier load)"},
  };
  static const char *const counts[] = {"(2 started, 0 kept", "lanes: 3 sub-interpreters",
                                       "(0 started, 1 kept", "lanes: 2 sub-interpreters"};
  for (size_t i = 0; i < sizeof loads / sizeof loads[0]; i++) {
    ready_lines[0] = '\0';
    load_with_lanes(loads[i].lanes, opp);
    REQUIRE_RC(pyop_load(), PYOP_OK);
    CHECK(strstr(ready_lines, loads[i].says) != NULL && strstr(ready_lines, counts[i]) != NULL,
          "load %zu (%u lanes) said: '%s'", i, (unsigned)loads[i].lanes, ready_lines);
    expect_info("Scale", loads[i].lanes, NULL);
    /* One image per lane of this load: a kept lane's last image is closed
     * when a new one takes it up, and the kept lanes this load does not use
     * keep none (configuration pass, session 12). */
    int images = lane_images_open();
    CHECK(images == (int)loads[i].lanes, "load %zu (%u lanes): %d lane images open", i,
          (unsigned)loads[i].lanes, images);
    if (i == 3) {
      ready_lines[0] = '\0';
      CHECK_RC(pyop_unload(), PYOP_OK);
      REQUIRE_RC(pyop_load(), PYOP_OK);
      CHECK(ready_lines[0] == '\0', "a load after unload started lanes: '%s'", ready_lines);
    }
    CHECK_RC(pyop_shutdown(), PYOP_OK);
  }
  CHECK_RC(pyop_set_host_hooks(NULL), PYOP_OK);
  CHECK_RC(pyop_set_log_level(level), PYOP_OK);
  free(opp);
}

/* ----------------------------------------------------------------- cycles */

/* A copy of this libpyop's artifact directory for the running Python, in
 * a new temporary directory (malloc'd path of the copy). */
static char *bridge_copy(void) {
  Dl_info di;
  char key[64];
  REQUIRE(dladdr((void *)pyop_load, &di) != 0 && di.dli_fname != NULL, "dladdr");
  REQUIRE_RC(pyop_runtime_key(key, sizeof key), PYOP_OK);
  char *lib = strndup(di.dli_fname, strrchr(di.dli_fname, '/') - di.dli_fname);
  char *tmp = make_temp_dir("lanes-bridge");
  char *copy = xasprintf("%s/%s", tmp, key);
  char *cmd = xasprintf("cp -a '%s/pyop/artifacts/%s' '%s'", lib, key, copy);
  REQUIRE(system(cmd) == 0, "%s", cmd);
  free(cmd);
  free(lib);
  free(tmp);
  return copy;
}

/* A sanitizer's allocator keeps freed memory back (ASan's quarantine) and
 * adds its own: RSS bounds mean nothing there (the figures are printed). */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define RSS_JUDGED 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define RSS_JUDGED 0
#endif
#endif
#ifndef RSS_JUDGED
#define RSS_JUDGED 1
#endif

/* RSS growth within bound (when judged). */
static void check_growth(long from, long growth, long bound, const char *what) {
  fprintf(stderr, "[cycles] RSS growth over %s: %ld kB%s\n", what, growth / 1024,
          RSS_JUDGED ? "" : " (not judged under a sanitizer)");
  CHECK(from > 0, "no RSS figure (/proc/self/statm)");
  CHECK(!RSS_JUDGED || growth < bound, "RSS grew by %ld kB over %s (bound %ld kB)",
        growth / 1024, what, bound / 1024);
}

/*
 * pyop_load / pyop_shutdown cycles with 2 lanes: RSS stays flat (the
 * lanes' sub-interpreters are kept and reused: CPython does not give back
 * an ended one's memory, ~4-5 MB per lane and cycle), each load imports
 * the plugins afresh in every lane, lane n is the same interpreter in
 * every cycle; then other lane counts reuse what is kept (3: two kept, one
 * new; 1: lane 1 kept; 2 again: both kept), and unload/load cycles stay
 * flat too. The bound is on memory, not time: growth over cycles 10..40
 * below 8 MB (the old code grew ~250 MB there).
 */
static void case_cycles(void) {
  char *opp = xasprintf("%s/pure", LANES_PLUGINS);
  enum { CYCLES = 40, FROM = 10 };
  const long bound = 8l << 20;
  float first[2] = {0, 0}, ids[3] = {0, 0, 0};
  long rss_from = -1;
  for (int c = 0; c < CYCLES; c++) {
    load_with_lanes(2, opp);
    REQUIRE_RC(pyop_load(), PYOP_OK);
    lane_ids(2, ids, c);
    if (c == 0) {
      memcpy(first, ids, sizeof first);
      CHECK(first[0] != first[1] && first[0] != 0 && first[1] != 0,
            "two lanes, two interpreters: %g %g", first[0], first[1]);
    } else {
      CHECK(ids[0] == first[0] && ids[1] == first[1],
            "cycle %d: lanes run in interpreters %g %g, the first cycle's were %g %g (not "
            "reused)", c, ids[0], ids[1], first[0], first[1]);
    }
    REQUIRE_RC(pyop_shutdown(), PYOP_OK);
    if (c == FROM)
      rss_from = rss_bytes();
  }
  check_growth(rss_from, rss_bytes() - rss_from, bound,
               "load/shutdown cycles 10..40 with 2 lanes");

  /* A fork's child never takes up (or ends) the lanes its parent kept: it
   * starts lanes of its own; the parent's are untouched. */
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    alarm(60);
    int failed_before = atomic_load(&e2e_failures);
    load_with_lanes(2, opp);
    int bad = pyop_load() != PYOP_OK;
    float child[2] = {0, 0};
    if (!bad)
      lane_ids(2, child, -1);
    bad |= child[0] == first[0] || child[1] == first[1] || child[0] == 0 || child[1] == 0;
    bad |= pyop_shutdown() != PYOP_OK;
    bad |= atomic_load(&e2e_failures) != failed_before;
    fprintf(stderr, "[cycles child] lanes in interpreters %g %g (the parent kept %g %g)%s\n",
            child[0], child[1], first[0], first[1], bad ? ": FAIL" : "");
    _exit(bad); /* the parent's failures so far are counted in the parent */
  }
  REQUIRE(pid > 0, "fork");
  CHECK(wait_child(pid, 120) == 0, "the fork's child failed (or hung)");
  load_with_lanes(2, opp);
  REQUIRE_RC(pyop_load(), PYOP_OK);
  lane_ids(2, ids, CYCLES);
  CHECK(ids[0] == first[0] && ids[1] == first[1], "after a fork: interpreters %g %g (kept: "
        "%g %g)", ids[0], ids[1], first[0], first[1]);
  REQUIRE_RC(pyop_shutdown(), PYOP_OK);

  /* Another bridge image (a copy of the artifact directory, through
   * PYOP_BRIDGE_DIR: another file, so another mapping) takes the same kept
   * lanes up, with images of its own file. */
  char *copy = bridge_copy();
  setenv("PYOP_BRIDGE_DIR", copy, 1);
  load_with_lanes(2, opp);
  REQUIRE_RC(pyop_load(), PYOP_OK);
  char *report = NULL;
  CHECK_RC(pyop_doctor(&report), PYOP_OK);
  CHECK(report != NULL && strstr(report, copy) != NULL, "the copy's bridge is not loaded: %s",
        report != NULL ? report : "(none)");
  pyop_free(report);
  lane_ids(2, ids, CYCLES);
  CHECK(ids[0] == first[0] && ids[1] == first[1], "another bridge image: interpreters %g %g "
        "(kept: %g %g)", ids[0], ids[1], first[0], first[1]);
  REQUIRE_RC(pyop_shutdown(), PYOP_OK);
  unsetenv("PYOP_BRIDGE_DIR");
  char *dir = strndup(copy, strrchr(copy, '/') - copy);
  remove_tree(dir);
  free(dir);
  free(copy);

  /* Other lane counts take the kept lanes in order and start the rest. */
  load_with_lanes(3, opp);
  REQUIRE_RC(pyop_load(), PYOP_OK);
  lane_ids(3, ids, CYCLES);
  CHECK(ids[0] == first[0] && ids[1] == first[1] && ids[2] != first[0] &&
            ids[2] != first[1] && ids[2] != 0,
        "3 lanes after 2: interpreters %g %g %g (kept: %g %g)", ids[0], ids[1], ids[2],
        first[0], first[1]);
  float third = ids[2];
  REQUIRE_RC(pyop_shutdown(), PYOP_OK);
  load_with_lanes(1, opp);
  REQUIRE_RC(pyop_load(), PYOP_OK);
  lane_ids(1, ids, CYCLES + 1);
  CHECK(ids[0] == first[0], "1 lane after 3: interpreter %g (lane 1 was %g)", ids[0],
        first[0]);
  REQUIRE_RC(pyop_shutdown(), PYOP_OK);
  load_with_lanes(3, opp);
  REQUIRE_RC(pyop_load(), PYOP_OK);
  lane_ids(3, ids, CYCLES + 2);
  CHECK(ids[0] == first[0] && ids[1] == first[1] && ids[2] == third,
        "3 lanes again: interpreters %g %g %g (kept: %g %g %g)", ids[0], ids[1], ids[2],
        first[0], first[1], third);

  /* pyop_unload / pyop_load cycles: flat as well. */
  long rss_unload = -1;
  for (int c = 0; c < CYCLES; c++) {
    REQUIRE_RC(pyop_unload(), PYOP_OK);
    REQUIRE_RC(pyop_load(), PYOP_OK);
    if (c == FROM)
      rss_unload = rss_bytes();
  }
  lane_ids(3, ids, CYCLES + 3);
  check_growth(rss_unload, rss_bytes() - rss_unload, bound,
               "unload/load cycles 10..40 with 3 lanes");
  REQUIRE_RC(pyop_shutdown(), PYOP_OK);
  free(opp);
}

#define LANES_HOST_CASES(X)                                                      \
  X(basic) X(threads) X(one_lane) X(main_differs) X(hooks) X(ge) X(ge_impl_only) X(asyncio) X(refusals)  \
  X(fork) X(busy) X(escape) X(escape_last) X(sigint) X(hook_swap) X(cycles) X(log_threads) X(start_fail) \
  X(start_fail_one) X(start_fail_first) X(one_lane_differs) X(kept_counts)

int main(int argc, char **argv) {
  static const lanes_case cases[] = {LANES_HOST_CASES(LANES_CASE_ENTRY)};
  return lanes_main(argc, argv, cases, sizeof cases / sizeof cases[0]);
}
