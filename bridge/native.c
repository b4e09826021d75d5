/*
 * pyop._native: the module (its functions: current_ctx, view_call, depth,
 * log, registered_proto), its types and where they live: Tensor and
 * ViewBase (tensor.c), CallContext (context.c) and TensorDescBase (here);
 * plus the checked conversion of plugin numbers to C integers.
 *
 * A Tensor is a borrowed view of a host pyop_tensor, valid only during the
 * callback that handed it out (tensor.c); a call context works only on the
 * thread and during the callback it belongs to (context.c).
 *
 * pyop._native.TensorDescBase holds the fields of a pyop.TensorDesc (the
 * Python subclass in pyop/_types.py gives it its constructor and behaviour):
 * shape, dtype and format as C members the bridge reads and writes
 * directly (pb_desc).
 */
#include "native.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#if PY_VERSION_HEX >= 0x030C0000
#define PB_T_OBJECT_EX Py_T_OBJECT_EX
#else
#include <structmember.h>
#define PB_T_OBJECT_EX T_OBJECT_EX
#endif

const pb_dtype_row pb_dtype_info[PYOP_DTYPE_COUNT] = {
#define PB_DT(name, value, str, size) [value] = {size, str},
    PYOP_DTYPE_MAP(PB_DT)
#undef PB_DT
};

#ifdef Py_GIL_DISABLED
atomic_long pb_live_objects;
#endif

/* ------------------------------------------------------ plugin numbers */

/* o as an exact int (__index__), or NULL with a TypeError naming what. */
static PyObject *as_index(PyObject *o, const char *what) {
  PyObject *v = PyNumber_Index(o);
  if (v == NULL && PyErr_ExceptionMatches(PyExc_TypeError)) {
    PyErr_Clear();
    PyErr_Format(PyExc_TypeError, "%s must be an int, got %s", what, Py_TYPE(o)->tp_name);
  }
  return v;
}

/* The ValueError of a number v out of [lo, hi] ("[0, hi]" when lo is NULL). */
static void out_of_range(PyObject *v, const char *what, const char *lo, const char *hi) {
  PyErr_Clear();
  PyErr_Format(PyExc_ValueError, "%s %S is out of range [%s, %s]", what, v, lo ? lo : "0", hi);
}

/* See bridge.h. */
int pb_int_in(PyObject *o, int64_t lo, int64_t hi, int64_t *out, const char *what, ...) {
  int over = 0;
  if (PyLong_CheckExact(o)) { /* the usual case: no __index__, nothing formatted */
    long long x = PyLong_AsLongLongAndOverflow(o, &over);
    if (over == 0 && x >= lo && x <= hi && !(x == -1 && PyErr_Occurred())) {
      *out = (int64_t)x;
      return 0;
    }
  }
  char name[128], los[24], his[24];
  va_list ap;
  va_start(ap, what);
  vsnprintf(name, sizeof name, what, ap);
  va_end(ap);
  PyObject *v = as_index(o, name);
  if (v == NULL)
    return -1;
  long long x = PyLong_AsLongLongAndOverflow(v, &over);
  int rc = 0;
  if (x == -1 && PyErr_Occurred()) {
    rc = -1;
  } else if (over != 0 || x < lo || x > hi) {
    snprintf(los, sizeof los, "%lld", (long long)lo);
    snprintf(his, sizeof his, "%lld", (long long)hi);
    out_of_range(v, name, los, his);
    rc = -1;
  } else {
    *out = (int64_t)x;
  }
  Py_DECREF(v);
  return rc;
}

/* See bridge.h. */
int pb_uint_in(PyObject *o, uint64_t hi, uint64_t *out, const char *what, ...) {
  int over = 0;
  if (PyLong_CheckExact(o)) { /* the usual case, as in pb_int_in */
    long long x = PyLong_AsLongLongAndOverflow(o, &over);
    if (over == 0 && x >= 0 && (unsigned long long)x <= hi) {
      *out = (uint64_t)x;
      return 0;
    }
  }
  char name[128], his[24];
  va_list ap;
  va_start(ap, what);
  vsnprintf(name, sizeof name, what, ap);
  va_end(ap);
  PyObject *v = as_index(o, name);
  if (v == NULL)
    return -1;
  long long x = PyLong_AsLongLongAndOverflow(v, &over);
  unsigned long long u = (unsigned long long)x;
  bool bad = (x == -1 && PyErr_Occurred()) || over < 0 || (over == 0 && x < 0);
  if (!bad && over > 0) { /* beyond INT64_MAX: maybe within uint64_t */
    u = PyLong_AsUnsignedLongLong(v);
    bad = u == (unsigned long long)-1 && PyErr_Occurred();
  }
  int rc = 0;
  if (bad || u > hi) {
    snprintf(his, sizeof his, "%llu", (unsigned long long)hi);
    out_of_range(v, name, NULL, his);
    rc = -1;
  } else {
    *out = (uint64_t)u;
  }
  Py_DECREF(v);
  return rc;
}

/* log(level, message): a line in the host's log (pyop_options.log). */
static PyObject *native_log(PyObject *m, PyObject *args) {
  (void)m;
  int level = 0;
  const char *msg = NULL;
  if (!PyArg_ParseTuple(args, "is:log", &level, &msg))
    return NULL;
  if (level < PYOP_LOG_ERROR || level > PYOP_LOG_DEBUG) {
    PyErr_Format(PyExc_ValueError, "unknown log level %d", level);
    return NULL;
  }
  pb_log(level, "%s", msg);
  Py_RETURN_NONE;
}

static PyMethodDef native_methods[] = {
    {"current_ctx", pb_native_current_ctx, METH_O,
     "current_ctx(kind): context of the running callback (1 execute, 2 compile, 3 launch)"},
    {"log", native_log, METH_VARARGS,
     "log(level, message): a line in the host's log (0 error, 1 warn, 2 info, 3 debug)"},
    {"view_call", pb_native_view_call, METH_O,
     "view_call(min_depth): context of the innermost execute whose inputs are views of a "
     "package's class, when deeper than min_depth callbacks; else None"},
    {"depth", pb_native_depth, METH_NOARGS, "depth(): callbacks running on this thread"},
    {"registered_proto", pb_registered_proto, METH_O,
     "registered_proto(op_type): the prototype libpyop has registered (a host prototype), "
     "as a dict, or None"},
    {NULL, NULL, 0, NULL},
};

/* ------------------------------------------------------- TensorDescBase */

static int desc_traverse(PyObject *o, visitproc visit, void *arg) {
  pb_desc *d = (pb_desc *)o;
  Py_VISIT(d->shape);
  Py_VISIT(d->dtype);
  Py_VISIT(d->format);
  Py_VISIT(Py_TYPE(o)); /* a heap type's instances keep it */
  return 0;
}

static int desc_clear(PyObject *o) {
  pb_desc *d = (pb_desc *)o;
  Py_CLEAR(d->shape);
  Py_CLEAR(d->dtype);
  Py_CLEAR(d->format);
  return 0;
}

static void desc_dealloc(PyObject *o) {
  PyTypeObject *tp = Py_TYPE(o);
  PyObject_GC_UnTrack(o);
  desc_clear(o);
  tp->tp_free(o);
  Py_DECREF(tp);
}

/* Plain members, as __slots__ would make them: unset until assigned
 * (AttributeError), any object may be stored. */
static PyMemberDef desc_members[] = {
    {"shape", PB_T_OBJECT_EX, offsetof(pb_desc, shape), 0, "tuple of ints (-1: unknown)"},
    {"dtype", PB_T_OBJECT_EX, offsetof(pb_desc, dtype), 0, "pyop.DataType"},
    {"format", PB_T_OBJECT_EX, offsetof(pb_desc, format), 0, "pyop.Format"},
    {NULL, 0, 0, 0, NULL},
};

static PyType_Slot desc_slots[] = {
    {Py_tp_dealloc, desc_dealloc},
    {Py_tp_traverse, desc_traverse},
    {Py_tp_clear, desc_clear},
    {Py_tp_new, PyType_GenericNew},
    {Py_tp_members, desc_members},
    {Py_tp_doc, "The fields of pyop.TensorDesc, which subclasses it."},
    {0, NULL},
};

static PyType_Spec desc_spec = {
    "pyop._native.TensorDescBase", sizeof(pb_desc), 0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC, desc_slots,
};

/*
 * TensorDescBase as a type of module m, with __slots__ naming its members,
 * so that copy and pickle see pyop.TensorDesc's fields as they see slots.
 * New reference or NULL.
 */
static PyObject *desc_type_new(PyObject *m) {
  PyObject *tp = PyType_FromModuleAndSpec(m, &desc_spec, NULL);
  PyObject *names = tp != NULL ? Py_BuildValue("(sss)", "shape", "dtype", "format") : NULL;
  if (names == NULL || PyObject_SetAttrString(tp, "__slots__", names) < 0)
    Py_CLEAR(tp);
  Py_XDECREF(names);
  return tp;
}

static struct PyModuleDef native_def = {
    PyModuleDef_HEAD_INIT, "pyop._native",
    "Native part of pyop, provided by libpyop_bridge.so", -1, native_methods,
    NULL, NULL, NULL, NULL,
};

PyObject *pb_native_create(void) {
  PyObject *m = PyModule_Create(&native_def);
  if (m == NULL)
    return NULL;
#ifdef Py_GIL_DISABLED
  /* Safe without the GIL: what the GIL guarded is guarded otherwise
   * (pb_holder.lock, holders_lock in callbacks.c, pb_tls per thread). */
  if (PyUnstable_Module_SetGIL(m, Py_MOD_GIL_NOT_USED) < 0)
    goto fail;
#endif
  PyObject *tt = PyType_FromModuleAndSpec(m, &pb_tensor_spec, NULL);
  if (tt == NULL)
    goto fail;
  PyObject *ct = PyType_FromModuleAndSpec(m, &pb_ctx_spec, NULL);
  if (ct == NULL) {
    Py_DECREF(tt);
    goto fail;
  }
  PyObject *vt = PyType_FromModuleAndSpec(m, &pb_view_spec, NULL);
  if (vt == NULL) {
    Py_DECREF(tt);
    Py_DECREF(ct);
    goto fail;
  }
  PyObject *dt = desc_type_new(m);
  if (dt == NULL) {
    Py_DECREF(tt);
    Py_DECREF(ct);
    Py_DECREF(vt);
    goto fail;
  }
  Py_XSETREF(pb.tensor_type, (PyTypeObject *)tt);
  Py_XSETREF(pb.ctx_type, (PyTypeObject *)ct);
  Py_XSETREF(pb.view_type, (PyTypeObject *)vt);
  Py_XSETREF(pb.desc_type, (PyTypeObject *)dt);
  if (PyModule_AddObjectRef(m, "Tensor", tt) < 0 || PyModule_AddObjectRef(m, "CallContext", ct) < 0 ||
      PyModule_AddObjectRef(m, "ViewBase", vt) < 0 ||
      PyModule_AddObjectRef(m, "TensorDescBase", dt) < 0)
    goto fail;
  return m;
fail:
  Py_DECREF(m);
  return NULL;
}
