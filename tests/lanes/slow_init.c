/*
 * _pyop_slowinit: a single-phase extension module whose init takes 300 ms
 * and counts the inits that found another one running (any interpreter).
 * A lane refuses it (single-phase) after running its init, as CPython 3.12
 * and 3.13 do; the extension gate (bridge/lanes.h) must keep two lanes'
 * inits apart, as it keeps _ctypes's. The module's `overlaps` says how many
 * inits overlapped so far in this process (plugins/ext_gate; lanes_load.c,
 * ext_gate). Built by run.sh, found through LANES_SLOWINIT.
 */
#include <Python.h>

#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

static atomic_int running, overlaps;

static struct PyModuleDef slowinit_def = {PyModuleDef_HEAD_INIT, "_pyop_slowinit",
                                          "an init that takes its time", -1, NULL};

PyMODINIT_FUNC PyInit__pyop_slowinit(void) {
  if (atomic_fetch_add(&running, 1) != 0)
    atomic_fetch_add(&overlaps, 1);
  /* LANES_SLOWINIT_INNER names a module the init imports first (an
   * extension module made inside this one's init: the gate entered again
   * by the same interpreter, lanes_load.c ext_gate_nested). */
  const char *inner = getenv("LANES_SLOWINIT_INNER");
  if (inner != NULL && inner[0] != '\0') {
    PyObject *m = PyImport_ImportModule(inner);
    if (m == NULL) {
      atomic_fetch_sub(&running, 1);
      return NULL;
    }
    Py_DECREF(m);
  }
  struct timespec pause = {0, 300 * 1000 * 1000};
  nanosleep(&pause, NULL); /* the GIL held, as an init readying types holds it */
  atomic_fetch_sub(&running, 1);
  PyObject *m = PyModule_Create(&slowinit_def);
  if (m != NULL && PyModule_AddIntConstant(m, "overlaps", atomic_load(&overlaps)) < 0)
    Py_CLEAR(m);
  return m;
}
