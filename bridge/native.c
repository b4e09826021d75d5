/*
 * pyop._native: the Tensor view type and the call contexts.
 *
 * A Tensor is a borrowed view of a host pyop_tensor (copied by value: data
 * pointer, dtype, shape...). It is valid only during the callback that
 * handed it out: afterwards every attribute and buffer request raises
 * RuntimeError("tensor used outside its callback"). A buffer export
 * (memoryview, numpy array) still alive when the callback returns fails
 * that call. Buffer formats: float32 'f', float16 'e', bfloat16 'H' (the raw
 * 16 bits; view them with e.g. ml_dtypes.bfloat16), float64 'd', int8 'b',
 * int16 'h', int32 'i', int64 'q', uint8 'B', uint16 'H', uint32 'I',
 * uint64 'Q', bool '?'; C-contiguous, read-only for inputs except those the
 * op declares in mutates_args (a Tensor attribute is read-only and valid for
 * the op instance's life; its buffers still only during a callback). A
 * Tensor may be
 * read from any thread while its callback runs (it copied the host struct).
 *
 * pyop._native.ViewBase is the same view for a package's subclass that gives
 * it another API (ge.runtime.Tensor: the inputs of a GE kernel the bridge
 * calls directly; see pb_holder.in_type).
 *
 * pyop._native.TensorDescBase holds the fields of a pyop.TensorDesc (the
 * Python subclass in pyop/_types.py gives it its constructor and behaviour):
 * shape, dtype and format as C members the bridge reads and writes
 * directly (pb_desc).
 *
 * A call context (get_execute_ctx()...) points at its callback's frame on
 * the host thread's stack: it works only on that thread and during that
 * callback (pb_ctx). Sequence arguments are read from a tuple snapshot.
 */
#include "bridge.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#if PY_VERSION_HEX >= 0x030C0000
#define PB_T_OBJECT_EX Py_T_OBJECT_EX
#else
#include <structmember.h>
#define PB_T_OBJECT_EX T_OBJECT_EX
#endif

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

static const struct {
  size_t size;
  const char *name;
} dtype_info[PYOP_DTYPE_COUNT] = {
#define PB_DT(name, value, str, size) [value] = {size, str},
    PYOP_DTYPE_MAP(PB_DT)
#undef PB_DT
};

static const char *const dtype_fmt[PYOP_DTYPE_COUNT] = {
    [PYOP_DTYPE_FLOAT32] = "f", [PYOP_DTYPE_FLOAT16] = "e", [PYOP_DTYPE_BFLOAT16] = "H",
    [PYOP_DTYPE_FLOAT64] = "d", [PYOP_DTYPE_INT8] = "b",    [PYOP_DTYPE_INT16] = "h",
    [PYOP_DTYPE_INT32] = "i",   [PYOP_DTYPE_INT64] = "q",   [PYOP_DTYPE_UINT8] = "B",
    [PYOP_DTYPE_UINT16] = "H",  [PYOP_DTYPE_UINT32] = "I",  [PYOP_DTYPE_UINT64] = "Q",
    [PYOP_DTYPE_BOOL] = "?",
};

static size_t dtype_size(int32_t d) {
  return d >= 0 && d < PYOP_DTYPE_COUNT ? dtype_info[d].size : 0;
}

/* Element count of t (shape.h's rule), -1 for a negative dimension or when a
 * non-empty tensor's count exceeds INT64_MAX. */
static int64_t numel(const pyop_tensor *t) {
  uint64_t n;
  int32_t ndim = t->ndim < 0 ? 0 : t->ndim > PYOP_MAX_DIMS ? PYOP_MAX_DIMS : t->ndim;
  if (pyop__shape_size(t->shape, ndim, 1, INT64_MAX, &n) != PYOP__SHAPE_OK)
    return -1;
  return (int64_t)n;
}

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

/* --------------------------------------------------------------- Tensor */

static int tensor_check(pb_tensor *self) {
  if (!self->valid) {
    PyErr_SetString(PyExc_RuntimeError, "tensor used outside its callback");
    return -1;
  }
  return 0;
}

#ifdef Py_GIL_DISABLED
atomic_long pb_live_objects;
#define LIVE_ADD(n) atomic_fetch_add_explicit(&pb_live_objects, (n), memory_order_relaxed)
#else
#define LIVE_ADD(n) ((void)0)
#endif

/* tp_dealloc of both heap types (Tensor, CallContext): no references held. */
static void heap_dealloc(PyObject *o) {
  PyTypeObject *tp = Py_TYPE(o);
  PyObject_Free(o);
  Py_DECREF(tp);
  LIVE_ADD(-1);
}

/* A Tensor also frees the bytes it owns (a Tensor attribute's copy): no
 * buffer of it is left, since each holds a reference to it. */
static void tensor_dealloc(PyObject *o) {
  free(((pb_tensor *)o)->owned);
  heap_dealloc(o);
}

static PyObject *tensor_shape(PyObject *o, void *c) {
  (void)c;
  pb_tensor *self = (pb_tensor *)o;
  if (tensor_check(self) < 0)
    return NULL;
  PyObject *t = PyTuple_New(self->t.ndim);
  if (t == NULL)
    return NULL;
  for (int32_t i = 0; i < self->t.ndim; i++) {
    PyObject *d = PyLong_FromLongLong(self->t.shape[i]);
    if (d == NULL) {
      Py_DECREF(t);
      return NULL;
    }
    PyTuple_SET_ITEM(t, i, d);
  }
  return t;
}

static PyObject *tensor_dtype(PyObject *o, void *c) {
  (void)c;
  pb_tensor *self = (pb_tensor *)o;
  if (tensor_check(self) < 0)
    return NULL;
  PyObject *d = pb_dtype_obj(self->t.dtype);
  return d != NULL ? Py_NewRef(d) : PyLong_FromLong(self->t.dtype);
}

static PyObject *tensor_format(PyObject *o, void *c) {
  (void)c;
  pb_tensor *self = (pb_tensor *)o;
  if (tensor_check(self) < 0)
    return NULL;
  PyObject *f = pb_format_obj(self->t.format);
  return f != NULL ? Py_NewRef(f) : PyLong_FromLong(self->t.format);
}

static PyObject *tensor_ndim(PyObject *o, void *c) {
  (void)c;
  pb_tensor *self = (pb_tensor *)o;
  return tensor_check(self) < 0 ? NULL : PyLong_FromLong(self->t.ndim);
}

static PyObject *tensor_nbytes(PyObject *o, void *c) {
  (void)c;
  pb_tensor *self = (pb_tensor *)o;
  return tensor_check(self) < 0 ? NULL : PyLong_FromUnsignedLongLong(self->t.nbytes);
}

static PyObject *tensor_numel(PyObject *o, void *c) {
  (void)c;
  pb_tensor *self = (pb_tensor *)o;
  return tensor_check(self) < 0 ? NULL : PyLong_FromLongLong(numel(&self->t));
}

static PyObject *tensor_data_ptr(PyObject *o, void *c) {
  (void)c;
  pb_tensor *self = (pb_tensor *)o;
  return tensor_check(self) < 0 ? NULL : PyLong_FromVoidPtr(self->t.data);
}

static PyObject *tensor_writable(PyObject *o, void *c) {
  (void)c;
  pb_tensor *self = (pb_tensor *)o;
  return tensor_check(self) < 0 ? NULL : PyBool_FromLong(self->writable);
}

static PyObject *tensor_valid(PyObject *o, void *c) {
  (void)c;
  return PyBool_FromLong(((pb_tensor *)o)->valid);
}

static PyObject *tensor_repr(PyObject *o) {
  pb_tensor *self = (pb_tensor *)o;
  if (!self->valid)
    return PyUnicode_FromString("<pyop.Tensor (released: used outside its callback)>");
  char dims[PYOP_MAX_DIMS * 24 + 4];
  size_t p = 0;
  dims[p++] = '(';
  for (int32_t i = 0; i < self->t.ndim; i++)
    p += (size_t)snprintf(dims + p, sizeof dims - p, i ? ", %lld" : "%lld",
                          (long long)self->t.shape[i]);
  if (self->t.ndim == 1)
    dims[p++] = ',';
  dims[p++] = ')';
  dims[p] = '\0';
  const char *dt = self->t.dtype >= 0 && self->t.dtype < PYOP_DTYPE_COUNT
                       ? dtype_info[self->t.dtype].name
                       : "?";
  return PyUnicode_FromFormat("<pyop.Tensor shape=%s dtype=%s%s>", dims, dt,
                              self->writable ? " writable" : "");
}

static int tensor_getbuffer(PyObject *o, Py_buffer *view, int flags) {
  pb_tensor *self = (pb_tensor *)o;
  view->obj = NULL;
  if (tensor_check(self) < 0)
    return -1;
  size_t isz = dtype_size(self->t.dtype);
  if (isz == 0) {
    PyErr_Format(PyExc_BufferError, "tensor has an unknown dtype %d", (int)self->t.dtype);
    return -1;
  }
  uint64_t len = 0;
  pyop__shape_status ss = pyop__shape_size(self->t.shape, self->t.ndim, isz, UINT64_MAX, &len);
  if (ss != PYOP__SHAPE_OK) {
    PyErr_SetString(PyExc_BufferError, ss == PYOP__SHAPE_NEGATIVE
                                           ? "tensor shape has negative dimensions"
                                           : "tensor size overflows");
    return -1;
  }
  if (len > 0 && self->t.data == NULL) {
    PyErr_SetString(PyExc_BufferError, "tensor has no data (it is a description)");
    return -1;
  }
  if (len > self->t.nbytes || len > (uint64_t)PY_SSIZE_T_MAX) {
    PyErr_Format(PyExc_BufferError, "tensor of %llu %s needs %llu %s, buffer has %llu",
                 (unsigned long long)(len / isz), PB_PLURAL(len / isz, "element", "elements"),
                 (unsigned long long)len, PB_PLURAL(len, "byte", "bytes"),
                 (unsigned long long)self->t.nbytes);
    return -1;
  }
  if ((flags & PyBUF_WRITABLE) && !self->writable) {
    PyErr_SetString(PyExc_BufferError, "this tensor is read-only (an input not declared in "
                                       "mutates_args, or a Tensor attribute)");
    return -1;
  }
  view->buf = self->t.data;
  view->obj = Py_NewRef(o);
  view->len = (Py_ssize_t)len;
  view->readonly = !self->writable;
  view->itemsize = (Py_ssize_t)isz;
  view->format = (flags & PyBUF_FORMAT) ? (char *)dtype_fmt[self->t.dtype] : NULL;
  view->ndim = self->t.ndim;
  view->shape = (flags & PyBUF_ND) ? self->shape : NULL;
  view->strides = (flags & PyBUF_STRIDES) == PyBUF_STRIDES ? self->strides : NULL;
  view->suboffsets = NULL;
  view->internal = NULL;
  if (!(flags & PyBUF_ND)) {
    /* A flat request sees the bytes. */
    view->ndim = 1;
    view->itemsize = 1;
    if (view->format != NULL)
      view->format = "B";
  }
  self->exports++;
#ifdef Py_GIL_DISABLED
  /* Counted first, then checked again: a call ending on another thread
   * either sees this count or has cleared valid by now (pb_tensor). */
  if (!self->valid) {
    self->exports--;
    Py_CLEAR(view->obj);
    PyErr_SetString(PyExc_RuntimeError, "tensor used outside its callback");
    return -1;
  }
#endif
  return 0;
}

static void tensor_releasebuffer(PyObject *o, Py_buffer *view) {
  (void)view;
  ((pb_tensor *)o)->exports--;
}

static PyGetSetDef tensor_getset[] = {
    {"shape", tensor_shape, NULL, "tuple of ints", NULL},
    {"dtype", tensor_dtype, NULL, "pyop.DataType", NULL},
    {"format", tensor_format, NULL, "pyop.Format", NULL},
    {"ndim", tensor_ndim, NULL, "number of dimensions", NULL},
    {"nbytes", tensor_nbytes, NULL, "size of the host buffer in bytes", NULL},
    {"numel", tensor_numel, NULL, "number of elements", NULL},
    {"data_ptr", tensor_data_ptr, NULL, "address of the host buffer (int)", NULL},
    {"writable", tensor_writable, NULL, "True for outputs, workspaces and mutated inputs", NULL},
    {"valid", tensor_valid, NULL, "False once the callback returned (never raises)", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot tensor_slots[] = {
    {Py_tp_dealloc, tensor_dealloc},
    {Py_tp_repr, tensor_repr},
    {Py_tp_getset, tensor_getset},
    {Py_bf_getbuffer, tensor_getbuffer},
    {Py_bf_releasebuffer, tensor_releasebuffer},
    {Py_tp_doc, "A borrowed view of a host tensor, valid during one callback. "
                "Supports the buffer protocol (memoryview(t), numpy.asarray(t))."},
    {0, NULL},
};

static PyType_Spec tensor_spec = {
    "pyop.Tensor", sizeof(pb_tensor), 0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_DISALLOW_INSTANTIATION, tensor_slots,
};

/* ------------------------------------------------------------ ViewBase */

/*
 * pyop._native.ViewBase: the same view of a host tensor as pyop.Tensor
 * (same struct, validity, frame tracking and reuse), for a package's
 * subclass that gives the view its own API (ge.runtime.Tensor). It has no
 * buffer protocol and no public names, only what the subclass reads:
 * valid, _dims, _dtype, _format, _data, _nbytes (RuntimeError once the call
 * ended, as pyop.Tensor's), and _x, the subclass's state for this call
 * (None until set), dropped when the view's call ends (pb_frame_end), so a
 * view the holder reuses starts afresh. An implementation class names its
 * subclass in __pyop_input_view__ (callbacks.c). ViewBase() itself makes an
 * invalid view of nothing: the subclass's objects made in Python.
 */
/* The _x of a view or a context: *slot, a field of o read in o's critical
 * section (None when NULL). New reference. */
static PyObject *ext_get(PyObject *o, PB_SHARED(PyObject *) *slot) {
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
static int ext_set(PyObject *o, PB_SHARED(PyObject *) *slot, PyObject *v,
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

static bool view_live(PyObject *o) { return ((pb_tensor *)o)->valid; }

static PyObject *view_x_get(PyObject *o, void *c) {
  (void)c;
  return ext_get(o, &((pb_tensor *)o)->ext);
}

/* _x = v while the view's call runs; _x = None (or del) always clears it. */
static int view_x_set(PyObject *o, PyObject *v, void *c) {
  (void)c;
  return ext_set(o, &((pb_tensor *)o)->ext, v, view_live, true,
                 "tensor used outside its callback");
}

static int view_traverse(PyObject *o, visitproc visit, void *arg) {
  Py_VISIT(((pb_tensor *)o)->ext);
  Py_VISIT(Py_TYPE(o)); /* a heap type's instances keep it */
  return 0;
}

/* The collector runs it with every other thread stopped. */
static int view_clear(PyObject *o) {
  PyObject *x = ((pb_tensor *)o)->ext;
  ((pb_tensor *)o)->ext = NULL;
  Py_XDECREF(x);
  return 0;
}

static void view_dealloc(PyObject *o) {
  PyTypeObject *tp = Py_TYPE(o);
  PyObject_GC_UnTrack(o);
  view_clear(o);
  assert(((pb_tensor *)o)->owned == NULL);
  tp->tp_free(o);
  Py_DECREF(tp);
  LIVE_ADD(-1);
}

/* tp_new of ViewBase (and its subclasses): PyType_GenericNew, counted. */
static PyObject *view_new(PyTypeObject *tp, PyObject *args, PyObject *kw) {
  PyObject *o = PyType_GenericNew(tp, args, kw);
  if (o != NULL)
    LIVE_ADD(1);
  return o;
}

static PyGetSetDef view_getset[] = {
    {"valid", tensor_valid, NULL, "False once the callback returned (never raises)", NULL},
    {"_dims", tensor_shape, NULL, "the dimensions (tuple of ints)", NULL},
    {"_dtype", tensor_dtype, NULL, "pyop.DataType", NULL},
    {"_format", tensor_format, NULL, "pyop.Format", NULL},
    {"_data", tensor_data_ptr, NULL, "address of the host buffer (int)", NULL},
    {"_nbytes", tensor_nbytes, NULL, "size of the host buffer in bytes", NULL},
    {"_x", view_x_get, view_x_set, "the subclass's state for this call, or None", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot view_slots[] = {
    {Py_tp_dealloc, view_dealloc},
    {Py_tp_traverse, view_traverse},
    {Py_tp_clear, view_clear},
    {Py_tp_new, view_new},
    {Py_tp_getset, view_getset},
    {Py_tp_doc, "Base of a package's own view of a host tensor (ge.runtime.Tensor), valid "
                "during one callback."},
    {0, NULL},
};

static PyType_Spec view_spec = {
    "pyop._native.ViewBase", sizeof(pb_tensor), 0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC, view_slots,
};

static void tensor_fill(pb_tensor *self, const pyop_tensor *t, bool writable) {
  self->t = *t;
  if (self->t.ndim < 0)
    self->t.ndim = 0;
  if (self->t.ndim > PYOP_MAX_DIMS)
    self->t.ndim = PYOP_MAX_DIMS;
  self->valid = true;
  self->writable = writable;
  /* An empty tensor's strides may saturate at PY_SSIZE_T_MAX (shape.h);
   * a non-empty one's fit whenever its buffer can be viewed at all. */
  uint64_t strides[PYOP_MAX_DIMS];
  (void)pyop__shape_strides(self->t.shape, self->t.ndim, dtype_size(self->t.dtype),
                            (uint64_t)PY_SSIZE_T_MAX, strides);
  for (int32_t i = 0; i < self->t.ndim; i++) {
    self->shape[i] = (Py_ssize_t)self->t.shape[i];
    self->strides[i] = (Py_ssize_t)strides[i];
  }
}

PyObject *pb_tensor_make(PyTypeObject *tp, PyObject **cache, const pyop_tensor *t,
                         bool writable) {
  pb_tensor *self = NULL;
  if (cache != NULL && *cache != NULL && pb_only_cache_holds(*cache)) {
    self = (pb_tensor *)*cache;
    *cache = NULL;
  }
  if (self == NULL && tp != NULL) { /* a view: a GC-tracked subclass, zeroed */
    assert(PyType_IsSubtype(tp, pb.view_type));
    self = (pb_tensor *)tp->tp_alloc(tp, 0);
    if (self == NULL)
      return NULL;
    LIVE_ADD(1);
  } else if (self == NULL) {
    self = PyObject_New(pb_tensor, pb.tensor_type);
    if (self == NULL)
      return NULL;
    LIVE_ADD(1);
    self->exports = 0;
    self->owned = NULL;
    self->ext = NULL;
  }
  tensor_fill(self, t, writable);
  return (PyObject *)self;
}

PyObject *pb_tensor_own_copy(const pyop_tensor *t) {
  size_t n = (size_t)t->nbytes;
  void *bytes = malloc(n ? n : 1);
  if (bytes == NULL)
    return PyErr_NoMemory();
  if (n)
    memcpy(bytes, t->data, n);
  pyop_tensor d = *t;
  d.data = bytes;
  pb_tensor *self = (pb_tensor *)pb_tensor_make(NULL, NULL, &d, false);
  if (self == NULL) {
    free(bytes);
    return NULL;
  }
  self->owned = bytes;
  return (PyObject *)self;
}

/* -------------------------------------------------------------- frames */

int pb_frame_track_grow(pb_frame *f, PyObject *t, PyObject **cache, int role, size_t index) {
  if (f->n_made == f->cap_made) {
    size_t cap = f->cap_made * 2;
    pb_made *m = f->made == f->made_small ? malloc(cap * sizeof *m)
                                          : realloc(f->made, cap * sizeof *m);
    if (m == NULL) {
      ((pb_tensor *)t)->valid = false;
      Py_DECREF(t);
      PyErr_NoMemory();
      return -1;
    }
    if (f->made == f->made_small)
      memcpy(m, f->made_small, sizeof f->made_small);
    f->made = m;
    f->cap_made = cap;
  }
  f->made[f->n_made++] = (pb_made){t, cache, role, index};
  return 0;
}

void pb_frame_ctx_end(pb_frame *f) {
  pb_ctx *c = (pb_ctx *)f->ctx;
  PyObject *x; /* what a package kept for the call (and its cycle through c) */
  PB_CS_BEGIN(f->ctx);
  c->frame = NULL;
  x = c->ext;
  c->ext = NULL;
  PB_CS_END(f->ctx);
  Py_XDECREF(x);
  Py_CLEAR(f->ctx);
}

char *pb_frame_escaped(pb_frame *f, const pb_made *m) {
  static const char *const roles[] = {"input", "output", "workspace"};
  pb_holder *h = f->holder;
  if (h->escaped_why == NULL)
    h->escaped_why = pb_strdupf("a buffer of %s %zu (a memoryview or numpy array of it) "
                                "outlived an earlier call", roles[m->role], m->index);
  if (h->escaped == NULL)
    h->escaped = PyList_New(0);
  if (h->escaped == NULL || PyList_Append(h->escaped, m->obj) < 0) {
    /* Cannot watch it: refuse for good (holder_check_escapes, callbacks.c). */
    PyErr_Clear();
    h->escape_untracked = true;
  }
  return pb_strdupf("a buffer of %s %zu (a memoryview or numpy array of it) is still alive "
                    "after the callback returned; tensors are only valid during the "
                    "callback: copy the data instead of keeping a view. Every call of "
                    "this op instance is refused until that view is released",
                    roles[m->role], m->index);
}

void pb_collect_garbage(void) {
  PyObject *exc = pb_exc_fetch();
  PyObject *gc = PyImport_ImportModule("gc");
  PyObject *r = gc != NULL ? PyObject_CallMethod(gc, "collect", NULL) : NULL;
  Py_XDECREF(r);
  Py_XDECREF(gc);
  PyErr_Clear(); /* a failed collection only means the escape check is stricter */
  pb_exc_restore(exc);
}

bool pb_frame_end_exported(pb_frame *f, size_t from, char **why) {
  /* Invalid before any finalizer the collection runs could reach them. */
  for (size_t i = from; i < f->n_made; i++) {
    pb_tensor *t = (pb_tensor *)f->made[i].obj;
    t->valid = false;
    pb_tensor_drop_ext(t);
  }
  pb_collect_garbage();
  bool ok = true;
  *why = NULL;
  for (size_t i = from; i < f->n_made; i++) {
    pb_made *m = &f->made[i];
    if (((pb_tensor *)m->obj)->exports != 0) {
      char *w = pb_frame_escaped(f, m);
      if (ok)
        *why = w;
      else
        free(w);
      ok = false;
    }
    if (m->cache != NULL && *m->cache == NULL && pb_only_cache_holds(m->obj)) {
      *m->cache = m->obj;
      continue;
    }
    Py_DECREF(m->obj);
  }
  if (f->made != f->made_small)
    free(f->made);
  f->made = NULL;
  f->n_made = 0;
  return ok;
}

/* ------------------------------------------------------------ contexts */

/*
 * The frame of ctx o when it may be used here and now: its callback is
 * still running, on this thread, and is of kind. Else NULL with
 * RuntimeError. Call again after any conversion that can run plugin code.
 */
static pb_frame *ctx_frame(PyObject *o, int kind, const char *method) {
  pb_ctx *self = (pb_ctx *)o;
  if (self->frame == NULL) {
    PyErr_Format(PyExc_RuntimeError, "%s(): context used outside its callback", method);
    return NULL;
  }
  if (self->owner != pb_thread_self()) {
    PyErr_Format(PyExc_RuntimeError,
                 "%s(): context used from another thread; a context belongs to the thread "
                 "running its callback (hand other threads data, not the context)",
                 method);
    return NULL;
  }
  if (self->kind != kind) {
    PyErr_Format(PyExc_RuntimeError, "%s() is only available in %s (this is a %s context)",
                 method, pb_kind_names[kind], pb_kind_names[self->kind]);
    return NULL;
  }
  return self->frame;
}

/*
 * Records that a host service of f's call failed with rc, just after the
 * exception saying so was raised (the latest such failure is kept): the
 * call fails with that status only if that very exception is what it ends
 * with. The op may catch it and go on, or fail on its own: then the status
 * is the op's (frame_failure_status, callbacks.c).
 */
static void host_failed(pb_frame *f, int rc) {
  f->host_status = rc < 0 ? rc : PYOP_EHOST;
  PyObject *exc = pb_exc_fetch();
  PyObject *old = f->host_exc;
  f->host_exc = Py_XNewRef(exc);
  Py_XDECREF(old);
  pb_exc_restore(exc);
}

/* dtype argument: a DataType, an int value or a numpy-style name. May run
 * plugin code (__index__). */
static int parse_dtype(PyObject *o, int32_t *out) {
  if (PyUnicode_Check(o)) {
    const char *s = PyUnicode_AsUTF8(o);
    if (s == NULL)
      return -1;
    for (int i = 0; i < PYOP_DTYPE_COUNT; i++)
      if (strcmp(s, dtype_info[i].name) == 0) {
        *out = i;
        return 0;
      }
    PyErr_Format(PyExc_ValueError, "unknown data type '%s'", s);
    return -1;
  }
  int64_t v = 0;
  if (pb_int_in(o, 0, PYOP_DTYPE_COUNT - 1, &v, "data type value") < 0)
    return -1;
  *out = (int32_t)v;
  return 0;
}

/*
 * A sequence (or iterable) argument as a tuple: the items read are the ones
 * it held when the method began, whatever converting one of them
 * (__index__, __getattr__) does to it. New reference, or NULL (TypeError
 * saying what when o is not iterable).
 */
static PyObject *snapshot(PyObject *o, const char *what) {
  if (PyTuple_CheckExact(o))
    return Py_NewRef(o);
  if (Py_TYPE(o)->tp_iter == NULL && !PySequence_Check(o)) {
    PyErr_Format(PyExc_TypeError, "%s, got %s", what, Py_TYPE(o)->tp_name);
    return NULL;
  }
  return PySequence_Tuple(o);
}

/* A shape argument into t (may run plugin code: __index__). */
static int parse_shape(PyObject *o, pyop_tensor *t) {
  PyObject *seq = snapshot(o, "shape must be a sequence of ints");
  if (seq == NULL)
    return -1;
  Py_ssize_t n = PyTuple_GET_SIZE(seq);
  if (n > PYOP_MAX_DIMS) {
    PyErr_Format(PyExc_ValueError, "shape has %zd dimensions, at most %d are supported", n,
                 PYOP_MAX_DIMS);
    Py_DECREF(seq);
    return -1;
  }
  t->ndim = (int32_t)n;
  for (Py_ssize_t i = 0; i < n; i++) {
    if (pb_int_in(PyTuple_GET_ITEM(seq, i), 0, INT64_MAX, &t->shape[i], "shape dimension %zd",
                  i) < 0) {
      Py_DECREF(seq);
      return -1;
    }
  }
  Py_DECREF(seq);
  return 0;
}

/*
 * A writable Tensor of t handed to plugin code by a context method, tracked
 * in the call's frame under role and index (cache: the holder's slot to
 * reuse, or NULL); a new reference, NULL with an exception set.
 */
static inline PyObject *frame_tensor(pb_frame *f, PyObject **cache, const pyop_tensor *t,
                                     int role, size_t index) {
  PyObject *tensor = pb_tensor_get(NULL, cache, t, true);
  if (tensor == NULL)
    return NULL;
  if (pb_frame_track(f, tensor, cache, role, index) < 0)
    return NULL;
  return Py_NewRef(tensor);
}

/*
 * Raises the RuntimeError for an exec service that failed with rc when
 * asked to do `what` ("allocate output 0"), and records the failure
 * (host_failed). PYOP_EHOST: the host's callback failed; any other status:
 * libpyop refused the request. The status goes by its name, with libpyop's
 * reason when the loader gives it (bridge ABI 1.4): what it refused and why.
 */
static __attribute__((cold, noinline)) void service_failed(pb_frame *f, int rc,
                                                           const char *what) {
  const char *name = pb_status_name(rc);
  char num[32];
  if (name == NULL) {
    snprintf(num, sizeof num, "status %d", rc);
    name = num;
  }
  const char *why = pb_loader_last_error();
  if (why == NULL)
    why = pb_status_message(rc) != NULL ? pb_status_message(rc) : "no detail";
  PyErr_Format(PyExc_RuntimeError, "%s to %s (%s): %s",
               rc == PYOP_EHOST ? "the host failed" : "libpyop refused", what, name, why);
  host_failed(f, rc);
}

/*
 * Raises the IndexError of malloc_output_tensor(index, ...) for an index
 * outside the op's n outputs. An index is the output's, repeated for each
 * tensor of a dynamic output: past the last output of an op that has one,
 * the likely mistake is a flattened index (GE's), and the message says
 * which index to repeat. The outputs' names and kinds come from the
 * prototype libpyop registered (loader service find_proto, ABI 1.2); without
 * it the message gives the range only. Cold.
 */
static __attribute__((cold, noinline)) void output_index_error(const pb_frame *f,
                                                               long long index, size_t n) {
  char hint[512] = "";
  const pyop_loader_services *s = pb.services;
  const pyop_op_info *info = NULL;
  if (index >= 0 && pb.abi_minor >= 2 && s != NULL &&
      s->struct_size >= offsetof(pyop_loader_services, release_proto) + sizeof s->release_proto &&
      s->find_proto != NULL && s->release_proto != NULL) {
    const char *op_type = f->holder->op->op_type;
    if (s->find_proto((pyop_str){op_type, strlen(op_type)}, &info) != PYOP_OK)
      info = NULL;
  }
  if (info != NULL) {
    size_t used = 0;
    for (size_t i = 0; i < info->n_outputs && i < n && used < sizeof hint; i++) {
      if (info->outputs[i].kind != PYOP_IO_DYNAMIC)
        continue;
      int w = snprintf(hint + used, sizeof hint - used,
                       "; output %zu '%s' is dynamic: call malloc_output_tensor(%zu, ...) again "
                       "for its next tensor",
                       i, info->outputs[i].name != NULL ? info->outputs[i].name : "?", i);
      if (w < 0)
        break;
      used += (size_t)w;
    }
    s->release_proto(info);
  }
  PyErr_Format(PyExc_IndexError, "output index %lld out of range (the op has %zu %s)%s",
               index, n, PB_PLURAL(n, "output", "outputs"), hint);
}

static PyObject *ctx_malloc_output_tensor(PyObject *o, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"index", "shape", "dtype", "format", NULL};
  static const char name[] = "malloc_output_tensor";
  if (ctx_frame(o, PB_EXECUTE, name) == NULL)
    return NULL;
  PyObject *index_obj = NULL, *shape = NULL, *dtype = NULL, *format = NULL;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "OOO|O:malloc_output_tensor", kwlist, &index_obj,
                                   &shape, &dtype, &format))
    return NULL;
  int64_t index = 0;
  pyop_tensor t;
  memset(&t, 0, sizeof t);
  /* Out of int64 is out of range too (an IndexError below names the op's
   * outputs for the rest). */
  if (pb_int_in(index_obj, INT64_MIN, INT64_MAX, &index, "output index") < 0 ||
      parse_shape(shape, &t) < 0 || parse_dtype(dtype, &t.dtype) < 0)
    return NULL;
  if (format != NULL && format != Py_None) {
    int64_t fv = 0;
    if (pb_int_in(format, 0, PYOP_FORMAT_COUNT - 1, &fv, "format value") < 0)
      return NULL;
    t.format = (int32_t)fv;
  }
  pb_frame *f = ctx_frame(o, PB_EXECUTE, name); /* plugin code may have run */
  if (f == NULL)
    return NULL;
  const pyop_exec_args *a = f->args;
  if (index < 0 || (uint64_t)index >= a->n_outputs) {
    output_index_error(f, (long long)index, a->n_outputs);
    return NULL;
  }
  /* Empty before overflow: (0, 3**20, 3**20) is an empty output. */
  if (pyop__shape_size(t.shape, t.ndim, dtype_size(t.dtype), UINT64_MAX, &t.nbytes) !=
      PYOP__SHAPE_OK) {
    PyErr_Format(PyExc_ValueError, "output %lld: shape x dtype size overflows 2**64 bytes",
                 (long long)index);
    return NULL;
  }
  const pyop_exec_services *s = a->services;
  if (s == NULL || s->alloc_output == NULL) {
    PyErr_SetString(PyExc_RuntimeError, "the host provides no output allocation");
    return NULL;
  }
  int rc = s->alloc_output(s->ctx, (size_t)index, &t);
  if (rc != 0) {
    char what[64];
    snprintf(what, sizeof what, "allocate output %lld", (long long)index);
    service_failed(f, rc, what);
    return NULL;
  }
  if (t.data == NULL && t.nbytes > 0) {
    PyErr_Format(PyExc_RuntimeError, "the host returned no memory for output %lld",
                 (long long)index);
    host_failed(f, PYOP_EHOST);
    return NULL;
  }
  pb_holder *h = f->holder;
  PyObject **cache = (size_t)index < h->n_out_cache ? &h->out_cache[index] : NULL;
  return frame_tensor(f, cache, &t, PB_ROLE_OUTPUT, (size_t)index);
}

/*
 * make_output_ref_input(output_index, input_index): output output_index
 * becomes the buffer of input slot input_index (declared with mutates_args
 * and an output of the input's name); returns it as a writable Tensor.
 */
static PyObject *ctx_make_output_ref_input(PyObject *o, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"output_index", "input_index", NULL};
  static const char name[] = "make_output_ref_input";
  if (ctx_frame(o, PB_EXECUTE, name) == NULL)
    return NULL;
  PyObject *index_obj = NULL, *input_obj = NULL;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "OO:make_output_ref_input", kwlist, &index_obj,
                                   &input_obj))
    return NULL;
  int64_t index = 0, input = 0;
  if (pb_int_in(index_obj, INT64_MIN, INT64_MAX, &index, "output index") < 0 ||
      pb_int_in(input_obj, INT64_MIN, INT64_MAX, &input, "input index") < 0)
    return NULL;
  pb_frame *f = ctx_frame(o, PB_EXECUTE, name); /* plugin code may have run */
  if (f == NULL)
    return NULL;
  const pyop_exec_args *a = f->args;
  if (index < 0 || (uint64_t)index >= a->n_outputs) {
    PyErr_Format(PyExc_IndexError, "output index %lld out of range (the op has %zu %s)",
                 (long long)index, a->n_outputs, PB_PLURAL(a->n_outputs, "output", "outputs"));
    return NULL;
  }
  if (input < 0 || (uint64_t)input >= a->n_inputs) {
    PyErr_Format(PyExc_IndexError, "input index %lld out of range (the op has %zu %s)",
                 (long long)input, a->n_inputs, PB_PLURAL(a->n_inputs, "input", "inputs"));
    return NULL;
  }
  const pyop_exec_services *s = a->services;
  if (s == NULL ||
      s->struct_size < offsetof(pyop_exec_services, alias_output) + sizeof s->alias_output ||
      s->alias_output == NULL) {
    PyErr_SetString(PyExc_RuntimeError, "the host's libpyop cannot alias outputs "
                                        "(bridge ABI 1.0)");
    return NULL;
  }
  pyop_tensor t;
  memset(&t, 0, sizeof t);
  int rc = s->alias_output(s->ctx, (size_t)index, (size_t)input, &t);
  if (rc != 0) {
    char what[96];
    snprintf(what, sizeof what, "make output %lld input %lld's buffer", (long long)index,
             (long long)input);
    service_failed(f, rc, what);
    return NULL;
  }
  return frame_tensor(f, NULL, &t, PB_ROLE_OUTPUT, (size_t)index);
}

static PyObject *ctx_malloc_workspace(PyObject *o, PyObject *arg) {
  static const char name[] = "malloc_workspace";
  if (ctx_frame(o, PB_EXECUTE, name) == NULL)
    return NULL;
  uint64_t nbytes = 0;
  if (pb_uint_in(arg, INT64_MAX, &nbytes, "malloc_workspace nbytes") < 0)
    return NULL;
  pb_frame *f = ctx_frame(o, PB_EXECUTE, name);
  if (f == NULL)
    return NULL;
  const pyop_exec_args *a = f->args;
  const pyop_exec_services *s = a->services;
  if (s == NULL || s->alloc_workspace == NULL) {
    PyErr_SetString(PyExc_RuntimeError, "the host provides no workspace allocation");
    return NULL;
  }
  void *p = NULL;
  int rc = s->alloc_workspace(s->ctx, nbytes, &p);
  if (rc != 0 || (p == NULL && nbytes > 0)) {
    char what[80];
    snprintf(what, sizeof what, "allocate a workspace of %llu %s", (unsigned long long)nbytes,
             PB_PLURAL(nbytes, "byte", "bytes"));
    if (rc != 0) {
      service_failed(f, rc, what);
    } else {
      PyErr_Format(PyExc_RuntimeError, "the host returned no memory when asked to %s", what);
      host_failed(f, PYOP_EHOST);
    }
    return NULL;
  }
  pyop_tensor t;
  memset(&t, 0, sizeof t);
  t.data = p;
  t.dtype = PYOP_DTYPE_UINT8;
  t.ndim = 1;
  t.shape[0] = (int64_t)nbytes;
  t.nbytes = nbytes;
  return frame_tensor(f, NULL, &t, PB_ROLE_WORKSPACE, f->n_made);
}

static PyObject *ctx_set_artifact(PyObject *o, PyObject *arg) {
  static const char name[] = "set_artifact";
  if (ctx_frame(o, PB_COMPILE, name) == NULL)
    return NULL;
  Py_buffer view;
  if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0) /* may run plugin code */
    return NULL;
  pb_frame *f = ctx_frame(o, PB_COMPILE, name);
  if (f == NULL) {
    PyBuffer_Release(&view);
    return NULL;
  }
  const pyop_compile_args *a = f->args;
  int rc = a->set_artifact != NULL ? a->set_artifact(a->sink_ctx, view.buf, (size_t)view.len)
                                   : PYOP_EUNSUPPORTED;
  PyBuffer_Release(&view);
  if (rc != 0) {
    PyErr_Format(PyExc_RuntimeError, "the host rejected the artifact (status %d)", rc);
    host_failed(f, rc);
    return NULL;
  }
  Py_RETURN_NONE;
}

static PyObject *ctx_add_workspace(PyObject *o, PyObject *arg) {
  static const char name[] = "add_workspace";
  if (ctx_frame(o, PB_LAUNCH, name) == NULL)
    return NULL;
  uint64_t nbytes = 0;
  if (pb_uint_in(arg, UINT64_MAX, &nbytes, "add_workspace nbytes") < 0)
    return NULL;
  pb_frame *f = ctx_frame(o, PB_LAUNCH, name);
  if (f == NULL)
    return NULL;
  const pyop_declare_args *a = f->args;
  int rc = a->add_workspace != NULL ? a->add_workspace(a->sink_ctx, nbytes) : PYOP_EUNSUPPORTED;
  if (rc != 0) {
    PyErr_Format(PyExc_RuntimeError, "the host rejected the workspace (status %d)", rc);
    host_failed(f, rc);
    return NULL;
  }
  Py_RETURN_NONE;
}

/* The C range of each scalar type's value as the plan carries it (the
 * member of pyop_launch_arg_view.value that libpyop reads, launch.h). */
static const struct {
  const char *name; /* as pyop.launch.scalar() spells it */
  int64_t lo, hi;   /* signed types */
  uint64_t umax;    /* unsigned types, bool and pointer (lo = hi = 0) */
} scalar_range[] = {
    [PYOP_SCALAR_INT8] = {"int8", INT8_MIN, INT8_MAX, 0},
    [PYOP_SCALAR_INT16] = {"int16", INT16_MIN, INT16_MAX, 0},
    [PYOP_SCALAR_INT32] = {"int32", INT32_MIN, INT32_MAX, 0},
    [PYOP_SCALAR_INT64] = {"int64", INT64_MIN, INT64_MAX, 0},
    [PYOP_SCALAR_UINT8] = {"uint8", 0, 0, UINT8_MAX},
    [PYOP_SCALAR_UINT16] = {"uint16", 0, 0, UINT16_MAX},
    [PYOP_SCALAR_UINT32] = {"uint32", 0, 0, UINT32_MAX},
    [PYOP_SCALAR_UINT64] = {"uint64", 0, 0, UINT64_MAX},
    [PYOP_SCALAR_FLOAT] = {"float32", 0, 0, 0},
    [PYOP_SCALAR_DOUBLE] = {"float64", 0, 0, 0},
    [PYOP_SCALAR_BOOL] = {"bool", 0, 0, 1},
    [PYOP_SCALAR_POINTER] = {"pointer", 0, 0, UINTPTR_MAX},
};

/*
 * Argument number j of add_launch into v (runs plugin code: attribute reads
 * and __index__). Every number is range-checked into its C type: kind and
 * scalar_type into int32_t (libpyop names an unknown one), index into
 * uint32_t, an integer scalar into its type's range; nothing wraps.
 */
static int launch_arg(PyObject *item, Py_ssize_t j, pyop_launch_arg_view *v) {
  memset(v, 0, sizeof *v);
  v->struct_size = sizeof *v;
  PyObject *kind = PyObject_GetAttrString(item, "kind");
  PyObject *index = kind ? PyObject_GetAttrString(item, "index") : NULL;
  PyObject *st = index ? PyObject_GetAttrString(item, "scalar_type") : NULL;
  PyObject *value = st ? PyObject_GetAttrString(item, "value") : NULL;
  int rc = -1;
  if (value == NULL) {
    PyErr_Clear();
    PyErr_SetString(PyExc_TypeError, "launch arguments must come from pyop.launch "
                                     "(input, output, workspace, scalar, stream)");
    goto out;
  }
  int64_t k = 0, s = 0, i = 0;
  if (pb_int_in(kind, INT32_MIN, INT32_MAX, &k, "launch argument %zd kind", j) < 0 ||
      pb_int_in(st, INT32_MIN, INT32_MAX, &s, "launch argument %zd scalar_type", j) < 0)
    goto out;
  v->kind = (int32_t)k;
  v->scalar_type = (int32_t)s;
  if (k == PYOP_LAUNCH_ARG_INPUT || k == PYOP_LAUNCH_ARG_OUTPUT ||
      k == PYOP_LAUNCH_ARG_WORKSPACE) {
    if (pb_int_in(index, 0, UINT32_MAX, &i, "launch argument %zd index", j) < 0)
      goto out;
    v->index = (uint32_t)i;
  }
  if (k == PYOP_LAUNCH_ARG_SCALAR) {
    const char *name = s > 0 && s < (int64_t)(sizeof scalar_range / sizeof scalar_range[0])
                           ? scalar_range[s].name
                           : NULL;
    if (s == PYOP_SCALAR_FLOAT || s == PYOP_SCALAR_DOUBLE) {
      v->value.f = PyFloat_AsDouble(value);
      if (v->value.f == -1.0 && PyErr_Occurred()) {
        PyErr_Clear();
        PyErr_Format(PyExc_ValueError, "launch argument %zd (%s) value %R is not a C double",
                     j, name, value);
        goto out;
      }
    } else if (name != NULL && scalar_range[s].umax != 0) {
      uint64_t u = 0;
      if (pb_uint_in(value, scalar_range[s].umax, &u, "launch argument %zd (%s) value", j,
                     name) < 0)
        goto out;
      if (s == PYOP_SCALAR_POINTER)
        v->value.p = (uintptr_t)u;
      else
        v->value.u = u;
    } else if (name != NULL) {
      if (pb_int_in(value, scalar_range[s].lo, scalar_range[s].hi, &v->value.i,
                    "launch argument %zd (%s) value", j, name) < 0)
        goto out;
    } /* an unknown scalar type: libpyop refuses it, naming it */
  }
  rc = 0;
out:
  Py_XDECREF(kind);
  Py_XDECREF(index);
  Py_XDECREF(st);
  Py_XDECREF(value);
  return rc;
}

static PyObject *ctx_add_launch(PyObject *o, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"library", "symbol", "args", NULL};
  static const char name[] = "add_launch";
  if (ctx_frame(o, PB_LAUNCH, name) == NULL)
    return NULL;
  /* library: str, bytes or os.PathLike, as the file system's bytes (a name
   * that is not UTF-8, read with surrogateescape, gives back its bytes). */
  PyObject *lib = NULL, *sym = NULL, *largs = NULL;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O&UO:add_launch", kwlist, PyUnicode_FSConverter,
                                   &lib, &sym, &largs))
    return NULL;
  Py_ssize_t slen = 0;
  const char *l = PyBytes_AS_STRING(lib);
  size_t llen = (size_t)PyBytes_GET_SIZE(lib);
  const char *s = PyUnicode_AsUTF8AndSize(sym, &slen);
  PyObject *seq = s != NULL ? snapshot(largs, "args must be a list of pyop.launch arguments")
                            : NULL;
  if (seq == NULL) {
    Py_DECREF(lib);
    return NULL;
  }
  Py_ssize_t n = PyTuple_GET_SIZE(seq);
  pyop_launch_arg_view *views = calloc(n > 0 ? (size_t)n : 1, sizeof *views);
  char *path = NULL;
  PyObject *ret = NULL;
  if (views == NULL) {
    PyErr_NoMemory();
    goto out;
  }
  for (Py_ssize_t i = 0; i < n; i++)
    if (launch_arg(PyTuple_GET_ITEM(seq, i), i, &views[i]) < 0)
      goto out;
  pb_frame *f = ctx_frame(o, PB_LAUNCH, name); /* plugin code may have run */
  if (f == NULL)
    goto out;
  const pyop_declare_args *a = f->args;
  if (llen > 0 && l[0] != '/') { /* relative to the implementation's file */
    path = pb_strdupf("%s/%s", f->holder->op->source_dir, l);
    if (path == NULL) {
      PyErr_NoMemory();
      goto out;
    }
  }
  pyop_launch_view lv;
  memset(&lv, 0, sizeof lv);
  lv.struct_size = sizeof lv;
  lv.library.data = path != NULL ? path : l;
  lv.library.len = path != NULL ? strlen(path) : llen;
  lv.symbol.data = s;
  lv.symbol.len = (size_t)slen;
  lv.args = views;
  lv.n_args = (size_t)n;
  int rc = a->add_launch != NULL ? a->add_launch(a->sink_ctx, &lv) : PYOP_EUNSUPPORTED;
  if (rc != 0) {
    PyErr_Format(PyExc_RuntimeError, "the host rejected the launch of %s in %s (status %d)", s,
                 lv.library.data, rc);
    host_failed(f, rc);
    goto out;
  }
  ret = Py_NewRef(Py_None);
out:
  free(views);
  free(path);
  Py_DECREF(seq);
  Py_DECREF(lib);
  return ret;
}

static PyObject *ctx_stream(PyObject *o, void *c) {
  (void)c;
  pb_frame *f = ctx_frame(o, PB_EXECUTE, "stream");
  if (f == NULL)
    return NULL;
  return PyLong_FromVoidPtr(((const pyop_exec_args *)f->args)->stream);
}

static PyObject *ctx_valid(PyObject *o, void *c) {
  (void)c;
  return PyBool_FromLong(((pb_ctx *)o)->frame != NULL);
}

/* _inputs: the call's positional arguments (a tuple; execute only). */
static PyObject *ctx_inputs(PyObject *o, void *c) {
  (void)c;
  pb_frame *f = ctx_frame(o, PB_EXECUTE, "_inputs");
  if (f == NULL)
    return NULL;
  PyObject *t = PyTuple_New((Py_ssize_t)f->npos);
  for (size_t i = 0; t != NULL && i < f->npos; i++)
    PyTuple_SET_ITEM(t, (Py_ssize_t)i, Py_NewRef(f->argv[i]));
  return t;
}

/* _attrs: the call's attribute values by name (a new dict; execute only). */
static PyObject *ctx_attrs(PyObject *o, void *c) {
  (void)c;
  pb_frame *f = ctx_frame(o, PB_EXECUTE, "_attrs");
  if (f == NULL)
    return NULL;
  const pb_holder *h = f->holder;
  PyObject *d = PyDict_New();
  for (size_t i = 0; d != NULL && i < h->n_attrs; i++)
    if (PyDict_SetItem(d, PyTuple_GET_ITEM(h->kwnames, (Py_ssize_t)i), f->argv[f->npos + i]) < 0)
      Py_CLEAR(d);
  return d;
}

/* _view: the class of the call's input views (pb_holder.in_type), or None. */
static PyObject *ctx_view(PyObject *o, void *c) {
  (void)c;
  pb_frame *f = ctx_frame(o, PB_EXECUTE, "_view");
  if (f == NULL)
    return NULL;
  PyObject *tp = (PyObject *)f->holder->in_type;
  return Py_NewRef(tp != NULL ? tp : Py_None);
}

static bool ctx_live(PyObject *o) { return ((pb_ctx *)o)->frame != NULL; }

static PyObject *ctx_x_get(PyObject *o, void *c) {
  (void)c;
  return ext_get(o, &((pb_ctx *)o)->ext);
}

/* _x = v: kept until the callback ends (refused after it, even None:
 * nothing would drop it, and it may hold the context). */
static int ctx_x_set(PyObject *o, PyObject *v, void *c) {
  (void)c;
  return ext_set(o, &((pb_ctx *)o)->ext, v, ctx_live, false,
                 "_x: context used outside its callback");
}

static void ctx_dealloc(PyObject *o) {
  PyObject *x = ((pb_ctx *)o)->ext; /* nothing else holds o */
  ((pb_ctx *)o)->ext = NULL;
  Py_XDECREF(x);
  heap_dealloc(o);
}

static PyMethodDef ctx_methods[] = {
    {"malloc_output_tensor", (PyCFunction)(void (*)(void))ctx_malloc_output_tensor,
     METH_VARARGS | METH_KEYWORDS,
     "malloc_output_tensor(index, shape, dtype, format=Format.ND) -> writable Tensor"},
    {"make_output_ref_input", (PyCFunction)(void (*)(void))ctx_make_output_ref_input,
     METH_VARARGS | METH_KEYWORDS,
     "make_output_ref_input(output_index, input_index) -> writable Tensor: the output is "
     "the buffer of that (mutated) input"},
    {"malloc_workspace", ctx_malloc_workspace, METH_O,
     "malloc_workspace(nbytes) -> writable uint8 Tensor valid for this call"},
    {"set_artifact", ctx_set_artifact, METH_O, "set_artifact(bytes): the compiled artefact"},
    {"add_workspace", ctx_add_workspace, METH_O,
     "add_workspace(nbytes): declares the next workspace"},
    {"add_launch", (PyCFunction)(void (*)(void))ctx_add_launch, METH_VARARGS | METH_KEYWORDS,
     "add_launch(library, symbol, args): appends a kernel launch (args from pyop.launch)"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef ctx_getset[] = {
    {"stream", ctx_stream, NULL, "the execution stream pointer (int)", NULL},
    {"valid", ctx_valid, NULL, "False once the callback returned", NULL},
    {"_inputs", ctx_inputs, NULL, "the call's positional arguments (execute)", NULL},
    {"_attrs", ctx_attrs, NULL, "the call's attribute values by name (execute)", NULL},
    {"_view", ctx_view, NULL, "the class of the input views, or None (execute)", NULL},
    {"_x", ctx_x_get, ctx_x_set, "what a package keeps for this call, or None", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot ctx_slots[] = {
    {Py_tp_dealloc, ctx_dealloc},
    {Py_tp_methods, ctx_methods},
    {Py_tp_getset, ctx_getset},
    {Py_tp_doc, "The context of the callback running on this thread."},
    {0, NULL},
};

static PyType_Spec ctx_spec = {
    "pyop.CallContext", sizeof(pb_ctx), 0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_DISALLOW_INSTANTIATION, ctx_slots,
};

/* The context of frame f (made on first request, kept by the frame). */
static PyObject *frame_ctx(pb_frame *f) {
  if (f->ctx == NULL) {
    pb_ctx *c = PyObject_New(pb_ctx, pb.ctx_type);
    if (c == NULL)
      return NULL;
    LIVE_ADD(1);
    c->frame = f;
    c->owner = f->thread;
    c->kind = f->kind;
    c->ext = NULL;
    f->ctx = (PyObject *)c;
  }
  return Py_NewRef(f->ctx);
}

/* current_ctx(kind): the context of the innermost callback on this thread. */
static PyObject *native_current_ctx(PyObject *m, PyObject *arg) {
  (void)m;
  long kind = PyLong_AsLong(arg);
  if (kind == -1 && PyErr_Occurred())
    return NULL;
  if (kind < PB_EXECUTE || kind >= PB_NKINDS) {
    PyErr_Format(PyExc_ValueError, "unknown callback kind %ld", kind);
    return NULL;
  }
  pb_frame *f = pb_tls.frame;
  if (f == NULL || f->kind != kind) {
    PyErr_Format(PyExc_RuntimeError,
                 "no %s callback is running on this thread (the context exists only "
                 "during the callback)",
                 pb_kind_names[kind]);
    return NULL;
  }
  return frame_ctx(f);
}

/* Frames on this thread (the innermost one's depth; 0: none). */
static long frame_depth(const pb_frame *f) {
  long n = 0;
  for (; f != NULL; f = f->prev)
    n++;
  return n;
}

/*
 * view_call(min_depth): the context of the innermost callback on this
 * thread when it is an execute whose inputs are views of a package's class
 * (pb_holder.in_type) and it runs deeper than min_depth frames; else None.
 * What ge.custom_op.get_execute_ctx() finds a directly called GE kernel by.
 */
static PyObject *native_view_call(PyObject *m, PyObject *arg) {
  (void)m;
  long min = PyLong_AsLong(arg);
  if (min == -1 && PyErr_Occurred())
    return NULL;
  pb_frame *f = pb_tls.frame;
  if (f == NULL || f->kind != PB_EXECUTE || f->holder->in_type == NULL ||
      frame_depth(f) <= min)
    Py_RETURN_NONE;
  return frame_ctx(f);
}

/* depth(): how many callbacks are running on this thread (nested). */
static PyObject *native_depth(PyObject *m, PyObject *unused) {
  (void)m;
  (void)unused;
  return PyLong_FromLong(frame_depth(pb_tls.frame));
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
    {"current_ctx", native_current_ctx, METH_O,
     "current_ctx(kind): context of the running callback (1 execute, 2 compile, 3 launch)"},
    {"log", native_log, METH_VARARGS,
     "log(level, message): a line in the host's log (0 error, 1 warn, 2 info, 3 debug)"},
    {"view_call", native_view_call, METH_O,
     "view_call(min_depth): context of the innermost execute whose inputs are views of a "
     "package's class, when deeper than min_depth callbacks; else None"},
    {"depth", native_depth, METH_NOARGS, "depth(): callbacks running on this thread"},
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
  PyObject *tt = PyType_FromModuleAndSpec(m, &tensor_spec, NULL);
  if (tt == NULL)
    goto fail;
  PyObject *ct = PyType_FromModuleAndSpec(m, &ctx_spec, NULL);
  if (ct == NULL) {
    Py_DECREF(tt);
    goto fail;
  }
  PyObject *vt = PyType_FromModuleAndSpec(m, &view_spec, NULL);
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
