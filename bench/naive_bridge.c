/* A naive C-API bridge; see naive_bridge.h. */
#include "naive_bridge.h"

int naive_execute(PyObject *impl, PyObject *x, PyObject *y, double alpha) {
  PyGILState_STATE st = PyGILState_Ensure();
  int rc = -1;
  PyObject *method = PyObject_GetAttrString(impl, "execute");
  PyObject *args = method ? Py_BuildValue("(OO)", x, y) : NULL;
  PyObject *kwargs = args ? Py_BuildValue("{s:d}", "alpha", alpha) : NULL;
  PyObject *res = kwargs ? PyObject_Call(method, args, kwargs) : NULL;
  if (res)
    rc = 0;
  else
    PyErr_Print();
  Py_XDECREF(res);
  Py_XDECREF(kwargs);
  Py_XDECREF(args);
  Py_XDECREF(method);
  PyGILState_Release(st);
  return rc;
}
