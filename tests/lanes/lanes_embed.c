/*
 * Interpreter lanes in hosts that own Python (issue 28): a C host linking
 * the tree's libpython initialises it itself, as an embedding engine does,
 * and calls libpyop with its own thread state in the states a host really
 * is in. Built and run by tests/lanes/run.sh (the list is LANES_EMBED_CASES
 * at the end; `lanes_embed --list` prints it).
 *
 *   finalize        the host guide's sequence: Py_Initialize,
 *                   PyEval_SaveThread, lanes, pyop_shutdown,
 *                   PyEval_RestoreThread, Py_FinalizeEx (0, no crash at
 *                   exit); lanes run where CPython can end them safely
 *                   (3.12.4+), else every op is serial naming the version
 *
 * Where CPython cannot end a lane safely (3.12.0 - 3.12.3, gh-119213) lanes
 * run only with the test seam PYOP_TEST_LANES=force, and then Python is not
 * finalized (it would crash in CPython).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "lanes_util.h"

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

#define LANES_EMBED_CASES(X) X(finalize)

int main(int argc, char **argv) {
  static const lanes_case cases[] = {LANES_EMBED_CASES(LANES_CASE_ENTRY)};
  return lanes_main(argc, argv, cases, sizeof cases / sizeof cases[0]);
}
