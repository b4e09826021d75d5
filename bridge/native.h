/*
 * Internal to pyop._native's three files: native.c (the module, its
 * functions, TensorDescBase and plugin numbers), tensor.c (Tensor,
 * ViewBase and the frames that hand them out) and context.c (the call
 * contexts). What more than one of them needs: the context's struct, the
 * dtype table, the live-object count, the heap types' dealloc and a _x
 * slot's get and set. The module as a whole is described in native.c.
 */
#ifndef PYOP_BRIDGE_NATIVE_H
#define PYOP_BRIDGE_NATIVE_H

#include "frames.h"

/*
 * A call context. Its frame, and the host arguments the frame points to,
 * live on the stack of the host thread running the callback: a method reads
 * them only on that thread (owner) and only while the callback runs (frame
 * != NULL), and checks both again after every argument conversion that can
 * run plugin code (__index__, __getattr__, a buffer export...), never
 * trusting a check made before plugin code ran.
 */
typedef struct pb_ctx {
  PyObject_HEAD
  /* NULL once the callback returned. Another thread may read it (and is
   * then refused by the owner check), or read and set _x: in a
   * free-threaded build frame and ext change together in the context's
   * critical section (pb_frame_ctx_end, ctx_x_set). */
  PB_SHARED(pb_frame *) frame;
  pb_thread *owner; /* the thread running the callback (its &pb_tls) */
  int kind;
  PB_SHARED(PyObject *) ext; /* _x: what a package keeps for the call (ge: its context), or NULL */
} pb_ctx;

/* Size and name of each dtype by value (PYOP_DTYPE_MAP), native.c. */
typedef struct pb_dtype_row {
  size_t size;
  const char *name;
} pb_dtype_row;
extern const pb_dtype_row pb_dtype_info[PYOP_DTYPE_COUNT];

/* The element size of dtype d, 0 for an unknown one. */
static inline size_t pb_dtype_size(int32_t d) {
  return d >= 0 && d < PYOP_DTYPE_COUNT ? pb_dtype_info[d].size : 0;
}

/* Counts a Tensor or context made (+1) or freed (-1): pb_live_objects. */
#ifdef Py_GIL_DISABLED
#define LIVE_ADD(n) atomic_fetch_add_explicit(&pb_live_objects, (n), memory_order_relaxed)
#else
#define LIVE_ADD(n) ((void)0)
#endif

/* tp_dealloc of both heap types (Tensor, CallContext): no references held. */
static inline void pb_heap_dealloc(PyObject *o) {
  PyTypeObject *tp = Py_TYPE(o);
  PyObject_Free(o);
  Py_DECREF(tp);
  LIVE_ADD(-1);
}

/* The _x of a view or a context: *slot, a field of o read in o's critical
 * section (None when NULL). New reference. */
static inline PyObject *pb_ext_get(PyObject *o, PB_SHARED(PyObject *) *slot) {
  PyObject *x;
  PB_CS_BEGIN(o);
  x = *slot;
  x = Py_NewRef(x != NULL ? x : Py_None);
  PB_CS_END(o);
  return x;
}

/*
 * _x = v (None or a delete: NULL) of a view or a context: stored in *slot
 * in o's critical section while live(o) holds there (its call runs), or
 * when v clears it and clear_any; else RuntimeError(refused), as nothing
 * would drop the value after the call. The old value goes after the
 * section. 0 or -1.
 */
static inline int pb_ext_set(PyObject *o, PB_SHARED(PyObject *) *slot, PyObject *v,
                                         bool (*live)(PyObject *), bool clear_any, const char *refused) {
  PyObject *x = v == Py_None ? NULL : Py_XNewRef(v), *old = NULL;
  bool ok;
  PB_CS_BEGIN(o);
  ok = (x == NULL && clear_any) || live(o);
  if (ok) {
    old = *slot;
    *slot = x;
  }
  PB_CS_END(o);
  if (!ok) {
    Py_XDECREF(x);
    PyErr_SetString(PyExc_RuntimeError, refused);
    return -1;
  }
  Py_XDECREF(old);
  return 0;
}

/* The type specs of tensor.c and context.c, for pb_native_create. */
extern PyType_Spec pb_tensor_spec, pb_view_spec, pb_ctx_spec;

/* pyop._native's functions of context.c (native.c's method table):
 * current_ctx(kind), view_call(min_depth), depth(). */
PyObject *pb_native_current_ctx(PyObject *m, PyObject *arg);
PyObject *pb_native_view_call(PyObject *m, PyObject *arg);
PyObject *pb_native_depth(PyObject *m, PyObject *unused);

#endif /* PYOP_BRIDGE_NATIVE_H */
