/*
 * pyop._native's call contexts (get_execute_ctx()...) and the functions
 * that find them.
 *
 * A call context (get_execute_ctx()...) points at its callback's frame on
 * the host thread's stack: it works only on that thread and during that
 * callback (pb_ctx). Sequence arguments are read from a tuple snapshot.
 */
#include "native.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

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
      if (strcmp(s, pb_dtype_info[i].name) == 0) {
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
  const pyop_loader_services *s = &pb.services;
  const pyop_op_info *info = NULL;
  if (index >= 0 && s->find_proto != NULL && s->release_proto != NULL) { /* ABI 1.2 */
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
  if (pyop__shape_size(t.shape, t.ndim, pb_dtype_size(t.dtype), UINT64_MAX, &t.nbytes) !=
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
  if (s == NULL || !PB_HAS(pyop_exec_services, s, alias_output) || s->alias_output == NULL) {
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
  /* Numbered among this call's workspaces (what a message about a view
   * kept of it names), not among every tensor the call made. */
  size_t k = 0;
  for (size_t i = 0; i < f->n_made; i++)
    k += f->made[i].role == PB_ROLE_WORKSPACE;
  return frame_tensor(f, NULL, &t, PB_ROLE_WORKSPACE, k);
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
  return pb_ext_get(o, &((pb_ctx *)o)->ext);
}

/* _x = v: kept until the callback ends (refused after it, even None:
 * nothing would drop it, and it may hold the context). */
static int ctx_x_set(PyObject *o, PyObject *v, void *c) {
  (void)c;
  return pb_ext_set(o, &((pb_ctx *)o)->ext, v, ctx_live, false,
                 "_x: context used outside its callback");
}

static void ctx_dealloc(PyObject *o) {
  PyObject *x = ((pb_ctx *)o)->ext; /* nothing else holds o */
  ((pb_ctx *)o)->ext = NULL;
  Py_XDECREF(x);
  pb_heap_dealloc(o);
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

PyType_Spec pb_ctx_spec = {
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
PyObject *pb_native_current_ctx(PyObject *m, PyObject *arg) {
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
PyObject *pb_native_view_call(PyObject *m, PyObject *arg) {
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
PyObject *pb_native_depth(PyObject *m, PyObject *unused) {
  (void)m;
  (void)unused;
  return PyLong_FromLong(frame_depth(pb_tls.frame));
}

