/*
 * pyop._native's Tensor and ViewBase, and the frames of the callbacks that
 * hand them out (frames.h: made, reused, invalidated when the call ends).
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
 * Tensor may be read from any thread while its callback runs (it copied
 * the host struct).
 *
 * pyop._native.ViewBase is the same view for a package's subclass that gives
 * it another API (ge.runtime.Tensor: the inputs of a GE kernel the bridge
 * calls directly; see pb_holder.in_type).
 */
#include "native.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

static const char *const dtype_fmt[PYOP_DTYPE_COUNT] = {
    [PYOP_DTYPE_FLOAT32] = "f", [PYOP_DTYPE_FLOAT16] = "e", [PYOP_DTYPE_BFLOAT16] = "H",
    [PYOP_DTYPE_FLOAT64] = "d", [PYOP_DTYPE_INT8] = "b",    [PYOP_DTYPE_INT16] = "h",
    [PYOP_DTYPE_INT32] = "i",   [PYOP_DTYPE_INT64] = "q",   [PYOP_DTYPE_UINT8] = "B",
    [PYOP_DTYPE_UINT16] = "H",  [PYOP_DTYPE_UINT32] = "I",  [PYOP_DTYPE_UINT64] = "Q",
    [PYOP_DTYPE_BOOL] = "?",
};

/* Element count of t (shape.h's rule), -1 for a negative dimension or when a
 * non-empty tensor's count exceeds INT64_MAX. */
static int64_t numel(const pyop_tensor *t) {
  uint64_t n;
  int32_t ndim = t->ndim < 0 ? 0 : t->ndim > PYOP_MAX_DIMS ? PYOP_MAX_DIMS : t->ndim;
  if (pyop__shape_size(t->shape, ndim, 1, INT64_MAX, &n) != PYOP__SHAPE_OK)
    return -1;
  return (int64_t)n;
}

/* --------------------------------------------------------------- Tensor */

static int tensor_check(pb_tensor *self) {
  if (!self->valid) {
    PyErr_SetString(PyExc_RuntimeError, "tensor used outside its callback");
    return -1;
  }
  return 0;
}



/* A Tensor also frees the bytes it owns (a Tensor attribute's copy): no
 * buffer of it is left, since each holds a reference to it. */
static void tensor_dealloc(PyObject *o) {
  free(((pb_tensor *)o)->owned);
  pb_heap_dealloc(o);
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
                       ? pb_dtype_info[self->t.dtype].name
                       : "?";
  return PyUnicode_FromFormat("<pyop.Tensor shape=%s dtype=%s%s>", dims, dt,
                              self->writable ? " writable" : "");
}

static int tensor_getbuffer(PyObject *o, Py_buffer *view, int flags) {
  pb_tensor *self = (pb_tensor *)o;
  view->obj = NULL;
  if (tensor_check(self) < 0)
    return -1;
  size_t isz = pb_dtype_size(self->t.dtype);
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

PyType_Spec pb_tensor_spec = {
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
 * invalid view of nothing: the subclass's objects made in Python. Only _x
 * is dropped: whatever else a subclass keeps on the object (a __dict__'s
 * or a slot's values, weak references to it) outlives the call into the
 * view's reuse, the same object valid again in a later call of the holder
 * (ge.runtime's _View keeps its state in _x and has no __dict__).
 */

static bool view_live(PyObject *o) { return ((pb_tensor *)o)->valid; }

static PyObject *view_x_get(PyObject *o, void *c) {
  (void)c;
  return pb_ext_get(o, &((pb_tensor *)o)->ext);
}

/* _x = v while the view's call runs; _x = None (or del) always clears it. */
static int view_x_set(PyObject *o, PyObject *v, void *c) {
  (void)c;
  return pb_ext_set(o, &((pb_tensor *)o)->ext, v, view_live, true,
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

PyType_Spec pb_view_spec = {
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
  (void)pyop__shape_strides(self->t.shape, self->t.ndim, pb_dtype_size(self->t.dtype),
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

