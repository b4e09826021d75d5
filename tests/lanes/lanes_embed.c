/*
 * Interpreter lanes in hosts that own Python (issue 28): a C host linking
 * the tree's libpython initialises it itself, as an embedding engine does,
 * and calls libpyop with its own thread state in the states a host really
 * is in. Built and run by tests/lanes/run.sh (the list is LANES_EMBED_CASES
 * at the end; `lanes_embed --list` prints it).
 *
 *   gil_kept        the host keeps the GIL (its main thread state attached)
 *                   across load, execute and pyop_shutdown, twice: it gets
 *                   its own state back, attached, and finalizes Python
 *   host_subinterp  a sub-interpreter of the host's is current on the
 *                   calling thread across load, execute and pyop_shutdown:
 *                   it is still current after, the host ends it
 *                   (Py_EndInterpreter) and finalizes Python
 *   finalize        the host guide's sequence: Py_Initialize,
 *                   PyEval_SaveThread, lanes, pyop_shutdown,
 *                   PyEval_RestoreThread, Py_FinalizeEx (0, no crash at
 *                   exit); lanes run where CPython can end them safely
 *                   (3.12.4+), else every op is serial naming the version
 *   finalize_first  the host finalizes Python with lanes loaded, before
 *                   pyop_shutdown (the lanes end at its atexit): the
 *                   pyop_shutdown after returns PYOP_OK and touches nothing
 *                   of the finalized Python (its exit hook is forgotten, not
 *                   unregistered); skipped where lanes are off (3.12.0-3.12.3)
 *   kept_exit       3.13+: lanes kept across pyop_shutdown: the next load
 *                   runs in the same interpreters; a C fork's child running
 *                   the exit hook leaves its copies of them alone (still
 *                   listed); the exit hook in atexit ends them
 *                   (atexit._run_exitfuncs), the load after starts
 *                   new ones; Python finalizes. 3.12: they end at
 *                   pyop_shutdown (forced lanes on 3.12.0-3.12.3: no finalize)
 *   exit_main_holder  the exit hook in atexit ends the lanes while the host
 *                   keeps an op that fell back to the main interpreter
 *                   (LazyDel): its instance made in the main interpreter
 *                   still runs and is deleted there when destroyed; the
 *                   one made in a lane is refused (PYOP_ENOTINIT, the
 *                   lane ended), its destroy safe; Python finalizes
 *                   (forced lanes on 3.12.0-3.12.3: no finalize)
 *   kept_address_reused  3.13+: the host ends the kept lanes itself and
 *                   makes sub-interpreters of its own, one at a kept
 *                   lane's address: the next load takes none of them up
 *                   (new lanes, in neither a kept nor a host's interpreter)
 *   kept_one_ended  3.13+: the host ends one of the two kept lanes itself: the
 *                   next load takes up the other (the last ended: lane 1 is
 *                   the same interpreter, lane 2 a new one; the ended one's
 *                   image closed, 2 open) and the exit hook
 *                   ends the kept lane left when the host ended the first
 *                   (no sub-interpreter remains); atexit holds one exit
 *                   hook of libpyop's at a time (the kept lanes' or the
 *                   running lanes')
 *   shutdown_atexit pyop_shutdown run by an atexit callback of the host's, while
 *                   Py_FinalizeEx runs: it finishes (0, no abort); skipped
 *                   where lanes are off (3.12.0-3.12.3)
 *   fork_gate       3.12: a C fork while a lane holds the extension gate:
 *                   the child's import of an extension module in the main
 *                   interpreter completes (the gate starts afresh there)
 *
 * Where CPython cannot end a lane safely (3.12.0 - 3.12.3, gh-119213) lanes
 * run only with the test seam PYOP_TEST_LANES=force, and then Python is not
 * finalized (it would crash in CPython): gil_kept and host_subinterp force
 * lanes there, so the lanes code is exercised on every Python.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "lanes_util.h"

#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

/* The thread state attached to this thread, or NULL. */
static PyThreadState *attached(void) {
#if PY_VERSION_HEX >= 0x030D0000
  return PyThreadState_GetUnchecked();
#else
  return _PyThreadState_UncheckedGet();
#endif
}

/* Whether this CPython ends a sub-interpreter with its own GIL safely
 * (gh-119213: 3.12.0 - 3.12.3 do not). */
static bool lanes_end_safely(void) {
  return !(Py_Version >= 0x030C0000 && Py_Version < 0x030C0400);
}

/* Lanes as a host of this Python gets them: forced (the test seam) where
 * CPython cannot end them safely when `force`. */
static void embed_lanes(uint32_t n, const char *opp, bool force) {
  if (force && !lanes_end_safely())
    setenv("PYOP_TEST_LANES", "force", 1);
  else
    unsetenv("PYOP_TEST_LANES");
  set_lanes(n, opp, false);
}

/* How many lanes an op of the pure plugin gets. */
static uint32_t expected_lanes(uint32_t n, bool forced) {
  return lanes_end_safely() || forced ? n : 0;
}

/* Two Scale instances (in lanes 1 and 2 when lanes run) compute 2x. */
static void run_two(uint32_t lanes) {
  pyop_op *op[2] = {NULL, NULL};
  for (int i = 0; i < 2; i++) {
    REQUIRE_RC(pyop_op_create("Scale", NULL, 0, &op[i]), PYOP_OK);
    float x[3] = {1, 2, 3}, y[3] = {0, 0, 0};
    CHECK_RC(run(op[i], x, y, 3), PYOP_OK);
    CHECK(y[2] == 6.0f, "Scale in lane %u: y[2] = %g", (unsigned)pyop_op_lane(op[i]), y[2]);
  }
  if (lanes)
    CHECK(pyop_op_lane(op[0]) != 0 && pyop_op_lane(op[0]) != pyop_op_lane(op[1]),
          "instances in lanes %u and %u", (unsigned)pyop_op_lane(op[0]),
          (unsigned)pyop_op_lane(op[1]));
  for (int i = 0; i < 2; i++)
    pyop_op_destroy(op[i]);
}

/* Python code runs in the interpreter of the attached state. */
static void check_python_runs(const char *where) {
  CHECK(PyRun_SimpleString("assert sum(range(4)) == 6\n") == 0, "%s: Python does not run",
        where);
}

/* Finalizes Python (mine attached) where that is safe after lanes. */
static void finish_python(PyThreadState *mine, bool forced) {
  CHECK(attached() == mine, "the host's thread state is not attached at the end");
  if (forced && !lanes_end_safely()) {
    fprintf(stderr, "[%s] Python %s: lanes forced, not finalized (CPython gh-119213)\n",
            e2e_case, Py_GetVersion());
    return;
  }
  CHECK(Py_FinalizeEx() == 0, "Py_FinalizeEx failed");
}

static void case_gil_kept(void) {
  Py_InitializeEx(0);
  PyThreadState *mine = attached();
  REQUIRE(mine != NULL && PyGILState_Check(), "no GIL after Py_InitializeEx");
  char *opp = xasprintf("%s/pure", LANES_PLUGINS);
  embed_lanes(2, opp, true);
  uint32_t want = expected_lanes(2, true);
  for (int round = 0; round < 2; round++) {
    REQUIRE_RC(pyop_load(), PYOP_OK);
    expect_info("Scale", want, NULL);
    run_two(want);
    CHECK(attached() == mine, "round %d: execute left another thread state attached", round);
    CHECK_RC(pyop_shutdown(), PYOP_OK);
    CHECK(attached() == mine, "round %d: pyop_shutdown left %p attached, not the host's %p",
          round, (void *)attached(), (void *)mine);
    CHECK(PyGILState_Check(), "round %d: the host lost the GIL in pyop_shutdown", round);
    check_python_runs("after pyop_shutdown");
  }
  finish_python(mine, true);
  free(opp);
}

static void case_host_subinterp(void) {
  Py_InitializeEx(0);
  PyThreadState *mine = attached();
  PyThreadState *sub = Py_NewInterpreter(); /* the host's, current on this thread */
  REQUIRE(sub != NULL && attached() == sub, "Py_NewInterpreter");
  char *opp = xasprintf("%s/pure", LANES_PLUGINS);
  embed_lanes(2, opp, true);
  uint32_t want = expected_lanes(2, true);
  REQUIRE_RC(pyop_load(), PYOP_OK);
  expect_info("Scale", want, NULL);
  run_two(want);
  CHECK(attached() == sub, "execute left %p attached, not the host's sub-interpreter %p",
        (void *)attached(), (void *)sub);
  CHECK_RC(pyop_shutdown(), PYOP_OK);
  CHECK(attached() == sub, "pyop_shutdown left %p attached, not the host's sub-interpreter %p",
        (void *)attached(), (void *)sub);
  if (attached() == sub) {
    check_python_runs("in the host's sub-interpreter after pyop_shutdown");
    Py_EndInterpreter(sub);
    PyThreadState_Swap(mine);
  }
  finish_python(mine, true);
  free(opp);
}

static void case_finalize(void) {
  Py_InitializeEx(0);
  PyThreadState *mine = PyEval_SaveThread();
  char *opp = xasprintf("%s/pure", LANES_PLUGINS);
  embed_lanes(2, opp, false);
  uint32_t want = expected_lanes(2, false);
  REQUIRE_RC(pyop_load(), PYOP_OK);
  if (want)
    expect_info("Scale", 2, NULL);
  else
    expect_info("Scale", 0, "(CPython gh-119213, fixed in 3.12.4): lanes need CPython 3.12.4");
  run_two(want);
  CHECK_RC(pyop_shutdown(), PYOP_OK);
  PyEval_RestoreThread(mine);
  finish_python(mine, false);
  free(opp);
}

/*
 * Py_FinalizeEx before pyop_shutdown (lifetime pass, session 15): atexit
 * runs libpyop's exit hook, which ends the lanes; the pyop_shutdown after
 * finds Python gone and forgets what it held there, the exit hook included
 * (unregistering it would call into the finalized Python).
 */
static void case_finalize_first(void) {
  if (!lanes_end_safely()) {
    fprintf(stderr, "[%s] Python %s: skipped (lanes off, CPython gh-119213)\n", e2e_case,
            Py_GetVersion());
    return;
  }
  Py_InitializeEx(0);
  PyThreadState *mine = PyEval_SaveThread();
  char *opp = xasprintf("%s/pure", LANES_PLUGINS);
  embed_lanes(2, opp, false);
  REQUIRE_RC(pyop_load(), PYOP_OK);
  expect_info("Scale", 2, NULL);
  run_two(2);
  PyEval_RestoreThread(mine);
  CHECK(Py_FinalizeEx() == 0, "Py_FinalizeEx failed");
  CHECK_RC(pyop_shutdown(), PYOP_OK);
  free(opp);
}

/*
 * A child of a C fork (Python used as the parent left it: no
 * PyOS_AfterFork_Child) that runs the exit hooks, as its Py_FinalizeEx
 * would: the kept lanes' record is the parent's, so the hook ends nothing
 * there: the lanes' interpreters ids[0..2) are still listed after. The
 * parent's lanes and hook are left as they were. mine: detached.
 */
static void fork_leaves_kept_lanes(PyThreadState *mine, const float *ids) {
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  REQUIRE(pid >= 0, "fork: %s", strerror(errno));
  if (pid == 0) {
    alarm(60); /* a hook that waits for a parent's thread: killed, not hung */
    PyEval_RestoreThread(mine);
    char code[512];
    snprintf(code, sizeof code,
             "import atexit, _interpreters\n"
             "atexit._run_exitfuncs()\n"
             "ids = {t[0] if isinstance(t, tuple) else int(t) for t in "
             "_interpreters.list_all()}\n"
             "assert {%d, %d} <= ids, 'the exit hook ended the parent\\'s lanes in a forked "
             "child: %%s' %% sorted(ids)\n",
             (int)ids[0], (int)ids[1]);
    _exit(PyRun_SimpleString(code) == 0 ? 0 : 1);
  }
  int st = 0;
  REQUIRE(waitpid(pid, &st, 0) == pid, "waitpid: %s", strerror(errno));
  CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0,
        "the forked child running the exit hooks: %s %d (the lanes kept by its parent)",
        WIFEXITED(st) ? "exit status" : "signal", WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
}

/*
 * The lanes kept across pyop_shutdown in a host that owns Python (3.13+:
 * its Py_FinalizeEx ends sub-interpreters left; 3.12's aborts on one, so
 * there they end at pyop_shutdown): the next load takes up the same
 * interpreters; the exit hook libpyop registered in atexit ends them
 * (atexit._run_exitfuncs() runs it, as Py_FinalizeEx does), except in a C
 * fork's child (fork_leaves_kept_lanes), so the load after that starts new
 * ones; Python then finalizes.
 */
static void case_kept_exit(void) {
  Py_InitializeEx(0);
  PyThreadState *mine = PyEval_SaveThread();
  char *opp = xasprintf("%s/pure", LANES_PLUGINS);
  embed_lanes(2, opp, true);
  REQUIRE(expected_lanes(2, true) == 2, "no lanes");
  bool kept = Py_Version >= 0x030D0000;
  float first[2] = {0, 0}, ids[2] = {0, 0};
  for (int round = 0; round < 2; round++) {
    REQUIRE_RC(pyop_load(), PYOP_OK);
    lane_ids(2, round ? ids : first, round);
    CHECK_RC(pyop_shutdown(), PYOP_OK);
  }
  CHECK(first[0] != first[1] && (ids[0] == first[0] && ids[1] == first[1]) == kept,
        "the second load ran in interpreters %g %g, the first in %g %g (%s)", ids[0], ids[1],
        first[0], first[1], kept ? "not kept" : "kept on 3.12");
  if (kept) {
    fork_leaves_kept_lanes(mine, first);
    PyEval_RestoreThread(mine);
    CHECK(PyRun_SimpleString("import atexit; atexit._run_exitfuncs()\n") == 0, "atexit");
    mine = PyEval_SaveThread();
    REQUIRE_RC(pyop_load(), PYOP_OK);
    lane_ids(2, ids, 2);
    CHECK(ids[0] != first[0] && ids[0] != first[1] && ids[1] != first[0] &&
              ids[1] != first[1],
          "after the exit hook the load ran in interpreters %g %g, the kept ones were %g %g "
          "(not ended)", ids[0], ids[1], first[0], first[1]);
    CHECK_RC(pyop_shutdown(), PYOP_OK);
  }
  PyEval_RestoreThread(mine);
  finish_python(mine, true);
  free(opp);
}

/* One call of LazyDel (tests/lanes/plugins/lazy_import) with x[0] = x0: y
 * = {x0, the interpreter's id, how many LazyDel objects it deleted}. */
static int run_del(pyop_op *op, float x0, float *y) {
  float x[3] = {x0, 0, 0};
  y[0] = y[1] = y[2] = -1;
  return run(op, x, y, 3);
}

/*
 * The lanes end at libpyop's exit hook (atexit._run_exitfuncs() runs it,
 * as Py_FinalizeEx would) while the host still holds instances of an op
 * that fell back to the main interpreter (issue 31): LazyDel's first
 * instance is made in a lane and falls back at its first call; the two
 * made after are the main interpreter's from the start. After the hook the
 * lane's instance is refused (PYOP_ENOTINIT, naming the lane's end) and
 * its destroy is safe (its main interpreter's object deleted); the main
 * interpreter's instances still run there, and one destroyed has its
 * object deleted there (the lanes C pass, session 18: survivor
 * bridge.plc.lane_calls.main_holder_gone refused them as if in a lane, so
 * its object was never deleted). Then pyop_shutdown and Python finalizes.
 */
static void case_exit_main_holder(void) {
  Py_InitializeEx(0);
  PyThreadState *mine = PyEval_SaveThread();
  char *opp = xasprintf("%s/lazy_import", LANES_PLUGINS);
  embed_lanes(2, opp, true);
  REQUIRE(expected_lanes(2, true) == 2, "no lanes");
  REQUIRE_RC(pyop_load(), PYOP_OK);
  expect_info("LazyDel", 2, NULL);
  pyop_op *lane = NULL, *main[2] = {NULL, NULL};
  float y[3];
  REQUIRE_RC(pyop_op_create("LazyDel", NULL, 0, &lane), PYOP_OK);
  CHECK(pyop_op_lane(lane) != 0, "LazyDel in lane %u", (unsigned)pyop_op_lane(lane));
  CHECK_RC(run_del(lane, 7, y), PYOP_OK); /* falls back: run again in the main interpreter */
  CHECK(y[0] == 7 && y[1] == 0 && y[2] == 0, "LazyDel's fallback: y = %g %g %g", y[0], y[1],
        y[2]);
  for (int i = 0; i < 2; i++) {
    REQUIRE_RC(pyop_op_create("LazyDel", NULL, 0, &main[i]), PYOP_OK);
    CHECK_RC(run_del(main[i], 3 + i, y), PYOP_OK);
    CHECK(y[0] == 3 + i && y[1] == 0 && y[2] == 0,
          "LazyDel made after the fallback (%d): y = %g %g %g", i, y[0], y[1], y[2]);
  }
  PyEval_RestoreThread(mine);
  CHECK(PyRun_SimpleString("import atexit; atexit._run_exitfuncs()\n") == 0, "atexit");
  mine = PyEval_SaveThread();
  CHECK_RC(run_del(lane, 5, y), PYOP_ENOTINIT);
  CHECK(strstr(pyop_last_error(), "interpreter lane ended") != NULL,
        "the lane's instance after the exit hook: %s", pyop_last_error());
  for (int i = 0; i < 2; i++) {
    CHECK_RC(run_del(main[i], 8 + i, y), PYOP_OK);
    CHECK(y[0] == 8 + i && y[1] == 0 && y[2] == 0,
          "the main interpreter's LazyDel (%d) after the exit hook: y = %g %g %g", i, y[0],
          y[1], y[2]);
  }
  pyop_op_destroy(main[0]);
  CHECK_RC(run_del(main[1], 6, y), PYOP_OK);
  CHECK(y[0] == 6 && y[1] == 0 && y[2] == 1,
        "a main interpreter's LazyDel destroyed after the exit hook: the main interpreter "
        "deleted %g LazyDel objects, expected 1 (y = %g %g)", y[2], y[0], y[1]);
  pyop_op_destroy(lane);
  CHECK_RC(run_del(main[1], 4, y), PYOP_OK);
  CHECK(y[0] == 4 && y[1] == 0 && y[2] == 2,
        "the lane's LazyDel destroyed after the exit hook: the main interpreter deleted %g "
        "LazyDel objects, expected 2 (its fallback's too; y = %g %g)", y[2], y[0], y[1]);
  pyop_op_destroy(main[1]);
  CHECK_RC(pyop_shutdown(), PYOP_OK);
  PyEval_RestoreThread(mine);
  finish_python(mine, true);
  free(opp);
}

/* Ends interp (no state attached on this thread) as libpyop's exit hook
 * does: a state of this thread ends it, every other state deleted first. */
static void end_interp(PyInterpreterState *interp) {
  PyThreadState *ts = PyThreadState_New(interp);
  REQUIRE(ts != NULL, "PyThreadState_New");
  PyEval_RestoreThread(ts);
  for (PyThreadState *o = PyInterpreterState_ThreadHead(interp); o != NULL;) {
    PyThreadState *next = PyThreadState_Next(o);
    if (o != ts) {
      PyThreadState_Clear(o);
      PyThreadState_Delete(o);
    }
    o = next;
  }
  Py_EndInterpreter(ts); /* leaves no state attached */
}

/*
 * 3.13+: a host that ends the lanes kept across pyop_shutdown itself (as
 * every sub-interpreter it finds) and makes sub-interpreters of its own,
 * one at an address a kept lane's had (malloc reuses it): the next load
 * takes none of them as a kept lane (another id at that address), starts
 * two new lanes, and the ops run in neither a kept nor a host's
 * interpreter (batch 15 survivor bridge.b15.lane_pool.interp_id_unchecked:
 * the host's interpreter was driven as the lane). Where no address is
 * reused (a sanitizer's allocator) that is noted, the rest still checked.
 */
static void case_kept_address_reused(void) {
  if (Py_Version < 0x030D0000) {
    fprintf(stderr, "[%s] Python %s: skipped (lanes are kept from 3.13)\n", e2e_case,
            Py_GetVersion());
    return;
  }
  /* Every interpreter in a mapping of its own (a fixed threshold: glibc's
   * own moves up after the first is freed, and a lane's worker thread
   * allocates from another arena than the host's thread): the kernel gives
   * a new one the hole an ended one left. */
  (void)mallopt(M_MMAP_THRESHOLD, 64 * 1024);
  Py_InitializeEx(0);
  PyThreadState *mine = PyEval_SaveThread();
  char *opp = xasprintf("%s/pure", LANES_PLUGINS);
  embed_lanes(2, opp, true);
  float first[2] = {0, 0}, ids[2] = {0, 0};
  REQUIRE_RC(pyop_load(), PYOP_OK);
  lane_ids(2, first, 0);
  CHECK_RC(pyop_shutdown(), PYOP_OK); /* both lanes kept */
  PyEval_RestoreThread(mine);
  PyInterpreterState *main_interp = PyInterpreterState_Main(), *gone[8];
  size_t n_gone = 0;
  for (PyInterpreterState *i = PyInterpreterState_Head(); i != NULL && n_gone < 8;
       i = PyInterpreterState_Next(i))
    if (i != main_interp)
      gone[n_gone++] = i;
  CHECK(n_gone == 2, "%zu sub-interpreters kept, expected the 2 lanes", n_gone);
  (void)PyEval_SaveThread();
  for (size_t k = 0; k < n_gone; k++)
    end_interp(gone[k]);
  /* The host's own sub-interpreters, until one is where a kept lane's was. */
  PyThreadState *host[8];
  int64_t host_id[8];
  size_t n_host = 0;
  bool reused = false;
  while (n_host < 8 && !reused) {
    PyEval_RestoreThread(mine);
    PyThreadState *ts = NULL;
    PyInterpreterConfig cfg = {.check_multi_interp_extensions = 1,
                               .gil = PyInterpreterConfig_OWN_GIL};
    PyStatus st = Py_NewInterpreterFromConfig(&ts, &cfg);
    REQUIRE(!PyStatus_Exception(st) && ts != NULL, "Py_NewInterpreterFromConfig");
    PyInterpreterState *i = PyThreadState_GetInterpreter(ts);
    host_id[n_host] = PyInterpreterState_GetID(i);
    host[n_host++] = ts;
    for (size_t k = 0; k < n_gone; k++)
      reused = reused || i == gone[k];
    fprintf(stderr, "[%s] host sub-interpreter %lld at %p (kept lanes' were at %p %p)\n",
            e2e_case, (long long)host_id[n_host - 1], (void *)i, (void *)gone[0],
            (void *)gone[n_gone > 1]);
    (void)PyEval_SaveThread(); /* ts detached, its own GIL released */
  }
  if (!reused)
    fprintf(stderr, "[%s] no sub-interpreter of the host's at a kept lane's address (%zu "
            "made): the id check is not reached\n", e2e_case, n_host);
  REQUIRE_RC(pyop_load(), PYOP_OK);
  lane_ids(2, ids, 1);
  for (int k = 0; k < 2; k++) {
    CHECK(ids[k] != first[0] && ids[k] != first[1],
          "lane %d runs in interpreter %g, one the host ended (kept: %g %g)", k + 1, ids[k],
          first[0], first[1]);
    for (size_t h = 0; h < n_host; h++)
      CHECK(ids[k] != (float)host_id[h],
            "lane %d runs in interpreter %g, the host's own (made at a kept lane's address)",
            k + 1, ids[k]);
  }
  CHECK(ids[0] != ids[1], "both lanes in interpreter %g", ids[0]);
  CHECK_RC(pyop_shutdown(), PYOP_OK);
  for (size_t h = n_host; h-- > 0;) {
    PyEval_RestoreThread(host[h]);
    Py_EndInterpreter(host[h]);
  }
  PyEval_RestoreThread(mine);
  finish_python(mine, true);
  free(opp);
}

/* Wraps atexit.register and unregister (main GIL held) to keep the
 * callbacks registered since, as __main__._pyop_live (atexit lists none). */
static void atexit_track(void) {
  CHECK(PyRun_SimpleString("import atexit\n"
                           "_pyop_live, _reg, _unreg = [], atexit.register, atexit.unregister\n"
                           "def _track_reg(f, *a, **k):\n"
                           "    _pyop_live.append(f)\n"
                           "    return _reg(f, *a, **k)\n"
                           "def _track_unreg(f):\n"
                           "    _pyop_live[:] = [g for g in _pyop_live if g != f]\n"
                           "    return _unreg(f)\n"
                           "atexit.register, atexit.unregister = _track_reg, _track_unreg\n") == 0,
        "atexit tracker");
}

/* How many callbacks named `name` atexit holds of those registered since
 * atexit_track (main GIL held), or -1. */
static long atexit_live(const char *name) {
  PyObject *main = PyImport_AddModule("__main__"); /* borrowed */
  PyObject *g = main != NULL ? PyModule_GetDict(main) : NULL;
  char expr[160];
  snprintf(expr, sizeof expr, "sum(getattr(f, '__name__', '') == '%s' for f in _pyop_live)", name);
  PyObject *r = g != NULL ? PyRun_String(expr, Py_eval_input, g, g) : NULL;
  long n = r != NULL ? PyLong_AsLong(r) : -1;
  Py_XDECREF(r);
  if (n < 0)
    PyErr_Clear();
  return n;
}

/* The exit hooks libpyop has registered (main GIL held): the kept lanes'
 * (lane_pool.c) and the running lanes' (lanes.c), as "pool P, lanes L". */
static void atexit_expect(long pool, long lanes, const char *when) {
  long p = atexit_live("_pyop_end_kept_lanes"), l = atexit_live("pyop_lanes_at_exit");
  CHECK(p == pool && l == lanes, "%s: atexit holds %ld exit hook(s) of kept lanes and %ld of "
        "running lanes, expected %ld and %ld", when, p, l, pool, lanes);
}

/* The sub-interpreters of the process (main GIL held): how many, the first
 * `max` in out. */
static size_t sub_interps(PyInterpreterState **out, size_t max) {
  PyInterpreterState *main_interp = PyInterpreterState_Main();
  size_t n = 0;
  for (PyInterpreterState *i = PyInterpreterState_Head(); i != NULL;
       i = PyInterpreterState_Next(i))
    if (i != main_interp) {
      if (n < max)
        out[n] = i;
      n++;
    }
  return n;
}

/* The sub-interpreter whose id is id (main GIL held), or NULL. */
static PyInterpreterState *interp_of_id(float id) {
  for (PyInterpreterState *i = PyInterpreterState_Head(); i != NULL;
       i = PyInterpreterState_Next(i))
    if ((float)PyInterpreterState_GetID(i) == id)
      return i;
  return NULL;
}

/*
 * 3.13+: one of several kept lanes is gone when the next load or the exit
 * hook comes (the host ended it, as any sub-interpreter it finds): each
 * kept lane is checked on its own (lifetime pass, session 15: the pool
 * judged every kept lane by the first's interpreter; its exit hook stopped
 * at the first one gone). The host ends the LAST kept lane: the next load
 * takes lane 1 up (same interpreter) and starts lane 2; then it ends the
 * FIRST: atexit's hook ends the other, and no sub-interpreter is left.
 */
static void case_kept_one_ended(void) {
  if (Py_Version < 0x030D0000) {
    fprintf(stderr, "[%s] Python %s: skipped (lanes are kept from 3.13)\n", e2e_case,
            Py_GetVersion());
    return;
  }
  Py_InitializeEx(0);
  atexit_track();
  PyThreadState *mine = PyEval_SaveThread();
  char *opp = xasprintf("%s/pure", LANES_PLUGINS);
  embed_lanes(2, opp, true);
  float first[2] = {0, 0}, ids[2] = {0, 0};
  REQUIRE_RC(pyop_load(), PYOP_OK);
  lane_ids(2, first, 0);
  CHECK_RC(pyop_shutdown(), PYOP_OK); /* both lanes kept */
  PyEval_RestoreThread(mine);
  /* One exit hook registered for the kept lanes, none for running ones:
   * taking the kept lanes up unregisters theirs (lifetime pass, session 15). */
  atexit_expect(1, 0, "after the first shutdown");
  PyInterpreterState *subs[4], *last = interp_of_id(first[1]);
  CHECK(sub_interps(subs, 4) == 2 && last != NULL, "kept: %zu sub-interpreters, lane 2's "
        "(%g) %s", sub_interps(subs, 4), first[1], last != NULL ? "found" : "missing");
  (void)PyEval_SaveThread();
  REQUIRE(last != NULL, "lane 2's interpreter");
  end_interp(last);
  REQUIRE_RC(pyop_load(), PYOP_OK);
  lane_ids(2, ids, 1);
  CHECK(ids[0] == first[0], "lane 1 runs in interpreter %g, the kept lane 1 was %g", ids[0],
        first[0]);
  CHECK(ids[1] != first[0] && ids[1] != first[1] && ids[1] != 0,
        "lane 2 runs in interpreter %g (kept: %g, ended by the host: %g)", ids[1], first[0],
        first[1]);
  run_two(2);
  /* The ended lane's last image is closed when the load finds its
   * interpreter gone (batch 23 survivor bridge.b23.lane_pool.surplus_not_closed:
   * its memfd stayed open for good): one image per serving lane. */
  CHECK(lane_images_open() == 2, "%d lane images open after the second load, expected 2",
        lane_images_open());
  PyEval_RestoreThread(mine);
  atexit_expect(0, 1, "after the second load");
  (void)PyEval_SaveThread();
  float second[2] = {ids[0], ids[1]};
  CHECK_RC(pyop_shutdown(), PYOP_OK); /* kept again: lane 1's and the new lane 2's */
  PyEval_RestoreThread(mine);
  atexit_expect(1, 0, "after the second shutdown");
  PyInterpreterState *one = interp_of_id(second[0]);
  (void)PyEval_SaveThread();
  REQUIRE(one != NULL, "lane 1's interpreter");
  end_interp(one);
  PyEval_RestoreThread(mine);
  CHECK(PyRun_SimpleString("import atexit; atexit._run_exitfuncs()\n") == 0, "atexit");
  size_t left = sub_interps(subs, 4);
  CHECK(left == 0, "after the exit hook %zu sub-interpreter(s) left (lane 2's, %g, not ended: "
        "%s)", left, second[1], interp_of_id(second[1]) != NULL ? "still there" : "another");
  mine = PyEval_SaveThread();
  REQUIRE_RC(pyop_load(), PYOP_OK);
  lane_ids(2, ids, 2);
  for (int k = 0; k < 2; k++)
    CHECK(ids[k] != second[0] && ids[k] != second[1],
          "after the exit hook lane %d runs in interpreter %g (kept were %g %g)", k + 1,
          ids[k], second[0], second[1]);
  CHECK_RC(pyop_shutdown(), PYOP_OK);
  PyEval_RestoreThread(mine);
  finish_python(mine, true);
  free(opp);
}

/* pyop_shutdown as an atexit callback of the host's (as a Python program
 * through ctypes would register it): the shutdown runs while Python
 * finalizes, after the point where an exit hook registered then could run. */
static PyObject *shutdown_at_exit(PyObject *self, PyObject *unused) {
  (void)self, (void)unused;
  CHECK_RC(pyop_shutdown(), PYOP_OK);
  Py_RETURN_NONE;
}

static PyMethodDef shutdown_def = {"pyop_shutdown", shutdown_at_exit, METH_NOARGS, NULL};

/*
 * pyop_shutdown from an atexit callback, then Py_FinalizeEx goes on: no
 * abort (3.13: the lanes kept are ended by Py_FinalizeEx itself; 3.12: they
 * end at pyop_shutdown). Not where lanes cannot end safely (3.12.0-3.12.3).
 */
static void case_shutdown_atexit(void) {
  if (!lanes_end_safely()) {
    fprintf(stderr, "[%s] Python %s: skipped (lanes off, CPython gh-119213)\n", e2e_case,
            Py_GetVersion());
    return;
  }
  Py_InitializeEx(0);
  PyObject *fn = PyCFunction_New(&shutdown_def, NULL);
  PyObject *m = PyImport_ImportModule("atexit");
  PyObject *r = fn != NULL && m != NULL ? PyObject_CallMethod(m, "register", "O", fn) : NULL;
  REQUIRE(r != NULL, "atexit.register");
  Py_DECREF(r);
  Py_DECREF(m);
  Py_DECREF(fn);
  PyThreadState *mine = PyEval_SaveThread();
  char *opp = xasprintf("%s/pure", LANES_PLUGINS);
  embed_lanes(2, opp, false);
  REQUIRE_RC(pyop_load(), PYOP_OK);
  expect_info("Scale", 2, NULL);
  run_two(2);
  PyEval_RestoreThread(mine);
  CHECK(Py_FinalizeEx() == 0, "Py_FinalizeEx failed");
  free(opp);
}

/* One call of op (SlowLazy) on a thread of its own. */
typedef struct gate_call {
  pyop_op *op;
  int rc;
} gate_call;

static void *gate_call_run(void *p) {
  gate_call *c = p;
  float x[2] = {1, 2}, y[2] = {0, 0};
  c->rc = run(c->op, x, y, 2);
  return NULL;
}

/*
 * A C fork while a lane holds the extension gate (bridge/lanes.h): SlowLazy
 * (plugins/ext_gate_lazy) imports, in its lane, a single-phase extension
 * whose init takes 300 ms, and the host forks 150 ms into it. The child
 * (Python as the parent left it) imports an extension module in the main
 * interpreter, behind the same gate, which the holder (a thread the child
 * does not have) can never give back there: the child's first entry starts
 * the gate afresh, and the import completes (the lanes C pass, session
 * 18: the parent's holder was kept, and the child waited forever). The
 * parent's call goes on in the main interpreter. 3.12 only: 3.13 runs the
 * init in the main interpreter, its GIL held, which such a child cannot
 * take either.
 */
static void case_fork_gate(void) {
  if (getenv("LANES_SLOWINIT") == NULL) {
    printf("fork_gate: skipped: LANES_SLOWINIT is not set (run.sh builds it)\n");
    return;
  }
  if (Py_Version >= 0x030D0000) { /* the init runs holding the main interpreter's GIL */
    printf("fork_gate: skipped: CPython 3.13+ runs a lane's single-phase init in the main "
           "interpreter\n");
    return;
  }
  Py_InitializeEx(0);
  PyThreadState *mine = PyEval_SaveThread();
  char *opp = xasprintf("%s/ext_gate_lazy", LANES_PLUGINS);
  embed_lanes(2, opp, true);
  REQUIRE_RC(pyop_load(), PYOP_OK);
  expect_info("SlowLazy", 2, NULL);
  gate_call c = {NULL, PYOP_OK};
  REQUIRE_RC(pyop_op_create("SlowLazy", NULL, 0, &c.op), PYOP_OK);
  CHECK(pyop_op_lane(c.op) != 0, "SlowLazy in lane %u", (unsigned)pyop_op_lane(c.op));
  pthread_t t;
  REQUIRE(pthread_create(&t, NULL, gate_call_run, &c) == 0, "thread");
  usleep(150 * 1000);
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  REQUIRE(pid >= 0, "fork: %s", strerror(errno));
  if (pid == 0) {
    alarm(20); /* an import that waits for the parent's holder: killed, not hung */
    PyEval_RestoreThread(mine);
    _exit(PyRun_SimpleString("import _statistics\n") == 0 ? 0 : 1);
  }
  int st = 0;
  REQUIRE(waitpid(pid, &st, 0) == pid, "waitpid: %s", strerror(errno));
  CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0,
        "the forked child importing an extension module: %s %d (a lane held the gate at the "
        "fork)",
        WIFEXITED(st) ? "exit status" : "signal", WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
  pthread_join(t, NULL);
  CHECK_RC(c.rc, PYOP_OK);
  pyop_op_destroy(c.op);
  CHECK_RC(pyop_shutdown(), PYOP_OK);
  PyEval_RestoreThread(mine);
  finish_python(mine, true);
  free(opp);
}

#define LANES_EMBED_CASES(X) X(gil_kept) X(host_subinterp) X(finalize) X(finalize_first) X(kept_exit) \
  X(exit_main_holder) X(kept_address_reused) X(kept_one_ended) X(shutdown_atexit) X(fork_gate)

int main(int argc, char **argv) {
  static const lanes_case cases[] = {LANES_EMBED_CASES(LANES_CASE_ENTRY)};
  return lanes_main(argc, argv, cases, sizeof cases / sizeof cases[0]);
}
