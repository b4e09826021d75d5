/* A minimal GE-style host: it links libpython only to stand for "an engine
 * with Python running" — libpyop itself never links Python. */
#include <Python.h>
#include <pyop/pyop.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECK(expr)                                                           \
  do {                                                                        \
    int rc_ = (expr);                                                         \
    if (rc_ != 0) {                                                           \
      fprintf(stderr, "host: %s failed: %s: %s\n", #expr,                      \
              pyop_status_name(rc_), pyop_last_error());                      \
      exit(1);                                                                \
    }                                                                         \
  } while (0)

static size_t count_ops(void) {
  char **types = NULL;
  size_t n = 0;
  CHECK(pyop_op_list(&types, &n));
  pyop_free(types);
  return n;
}

int main(void) {
  Py_InitializeEx(0);
  PyThreadState *ts = PyEval_SaveThread();
  bool need = false;
  CHECK(CheckNeedLoadPythonCustomOps(&need));
  if (!need) { fprintf(stderr, "host: expected a Python entry\n"); return 1; }
  CHECK(LoadPythonCustomOps());
  size_t n = count_ops();
  if (n == 0) { fprintf(stderr, "host: no op registered\n"); return 1; }
  UnloadPythonCustomOps();
  if (count_ops() != 0) { fprintf(stderr, "host: ops left after unload\n"); return 1; }
  CHECK(LoadPythonCustomOps());
  if (count_ops() != n) { fprintf(stderr, "host: reload registered a different set\n"); return 1; }
  ShutdownPythonCustomOpsForProcess();
  CHECK(LoadPythonCustomOps());
  ShutdownPythonCustomOpsForProcess();
  printf("host: load/unload/load/shutdown/load ok (%zu ops)\n", n);
  PyEval_RestoreThread(ts);
  Py_Finalize();
  return 0;
}
