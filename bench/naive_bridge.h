/*
 * A naive C-API bridge: what calling a Python op's execute from C looks like
 * when written the obvious way, with no per-instance preparation. The
 * comparison point of target 1 (bench/README.md).
 */
#ifndef PYOP_BENCH_NAIVE_BRIDGE_H
#define PYOP_BENCH_NAIVE_BRIDGE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/*
 * impl.execute(x, y, alpha=alpha) from any host thread: PyGILState_Ensure,
 * PyObject_GetAttrString(impl, "execute"), Py_BuildValue for the argument
 * tuple, a kwargs dict, PyObject_Call, the decrefs, PyGILState_Release.
 * Returns 0, or -1 after printing the Python exception.
 */
int naive_execute(PyObject *impl, PyObject *x, PyObject *y, double alpha);

#endif
