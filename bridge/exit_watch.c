/*
 * Whether the interpreter the bridge's objects belong to still runs: the
 * exit watch, a capsule in its state dict that marks everything the bridge
 * holds as gone when the host finalizes it (pb_lost), and whether that
 * interpreter is one libpyop started (pb_python_ours).
 */
#include "bridge.h"

#include <stdatomic.h>
#include <stdbool.h>

atomic_bool pb_lost;

/*
 * The bridge learns that the interpreter its objects belong to was
 * finalized from a capsule it keeps in that interpreter's state dict
 * (PyInterpreterState_GetDict): Py_FinalizeEx clears the dict, and the
 * capsule's destructor marks everything the bridge holds as gone. No Python
 * code reaches that dict (an atexit callback, which this replaced, was
 * removed by a plugin's atexit._clear()), and a host may initialise a new
 * interpreter afterwards, where Py_IsInitialized() is true again but none
 * of the bridge's objects exist. The capsule is armed (its context
 * non-NULL) while registered; the bridge disarms it before removing it, so
 * its own removal marks nothing. It must be gone before this image is
 * unloaded: pb_exit_watch_unregister runs at every package drop.
 */
#define PB_EXIT_WATCH_KEY "pyop.bridge.exit_watch"
/* Set in the state dict of a Python that libpyop started (owned_python.c). */
#define PB_STARTED_KEY "pyop.bridge.started_by_libpyop"

static PyObject *exit_watch; /* the capsule registered (the dict owns it), or NULL */
static bool exit_watch_armed_token; /* its context: any non-NULL address */
atomic_bool pb_python_ours;

static void on_interpreter_exit(PyObject *capsule) {
  if (PyCapsule_GetContext(capsule) == NULL)
    return; /* disarmed: the bridge removed it */
  atomic_store(&pb_lost, true);
  /* Kept thread states die with the interpreter: no destructor may use one. */
  pb_kept_retire();
}

int pb_exit_watch_register(void) {
  if (exit_watch != NULL)
    return 0;
  PyObject *d = PyInterpreterState_GetDict(PyInterpreterState_Get());
  if (d == NULL) {
    PyErr_SetString(PyExc_RuntimeError, "the interpreter has no state dict");
    return -1;
  }
  PyObject *c = PyCapsule_New(&exit_watch_armed_token, PB_EXIT_WATCH_KEY, on_interpreter_exit);
  if (c == NULL)
    return -1;
  if (PyCapsule_SetContext(c, &exit_watch_armed_token) < 0 ||
      PyDict_SetItemString(d, PB_EXIT_WATCH_KEY, c) < 0) {
    PyCapsule_SetContext(c, NULL);
    Py_DECREF(c);
    return -1;
  }
  Py_DECREF(c); /* the dict keeps it */
  exit_watch = c;
  /* A Python that libpyop started (this image or an earlier one) says so. */
  PyObject *ours = PyDict_GetItemString(d, PB_STARTED_KEY); /* borrowed */
  atomic_store(&pb_python_ours, ours == Py_True);
  return 0;
}

void pb_exit_watch_unregister(void) {
  if (exit_watch == NULL)
    return;
  PyCapsule_SetContext(exit_watch, NULL);
  PyObject *d = PyInterpreterState_GetDict(PyInterpreterState_Get());
  if (d == NULL || PyDict_DelItemString(d, PB_EXIT_WATCH_KEY) < 0)
    PyErr_Clear();
  exit_watch = NULL;
}

/* The interpreter's state dict died with it (pb_lost): the capsule is gone
 * without the bridge removing it. */
void pb_exit_watch_forget(void) { exit_watch = NULL; }

/* Marks the interpreter as libpyop's in its state dict (GIL held). */
void pb_python_mark_ours(void) {
  PyObject *d = PyInterpreterState_GetDict(PyInterpreterState_Get());
  if (d == NULL || PyDict_SetItemString(d, PB_STARTED_KEY, Py_True) < 0)
    PyErr_Clear();
  atomic_store(&pb_python_ours, true);
}
