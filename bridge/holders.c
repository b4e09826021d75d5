/*
 * The holders of the op callbacks (create_holder / destroy_holder: one per
 * op instance, its attribute values converted to Python once, its call
 * targets resolved once) and _native.registered_proto, the view of a host
 * prototype a holder's class may ask for. The callbacks that run on a
 * holder are in callbacks.c.
 */
#include "frames.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------- attributes */

static PyObject *dtype_value(int32_t d) {
  PyObject *o = pb_dtype_obj(d);
  if (o == NULL) {
    PyErr_Format(PyExc_ValueError, "unknown data type value %d", (int)d);
    return NULL;
  }
  return Py_NewRef(o);
}

static PyObject *str_value(pyop_str s) {
  if (s.len > 0 && s.data == NULL) {
    PyErr_SetString(PyExc_ValueError, "string attribute with NULL data");
    return NULL;
  }
  return PyUnicode_DecodeUTF8(s.data != NULL ? s.data : "", (Py_ssize_t)s.len, "strict");
}

static PyObject *int_tuple(const int64_t *items, size_t n) {
  if (n > 0 && items == NULL) {
    PyErr_SetString(PyExc_ValueError, "list attribute with NULL items");
    return NULL;
  }
  PyObject *l = PyTuple_New((Py_ssize_t)n);
  if (l == NULL)
    return NULL;
  for (size_t i = 0; i < n; i++) {
    PyObject *v = PyLong_FromLongLong(items[i]);
    if (v == NULL) {
      Py_DECREF(l);
      return NULL;
    }
    PyTuple_SET_ITEM(l, (Py_ssize_t)i, v);
  }
  return l;
}

/* The Python object the holder keeps for an attribute value: int, float,
 * bool, str, DataType, or for a list type a tuple of those (a tuple of
 * tuples for LIST_LIST_INT), from which each call gets new lists
 * (call_list). */
static PyObject *attr_to_py(const pyop_attr_value *v, int32_t type) {
  if (v->type != type) {
    PyErr_Format(PyExc_TypeError, "attribute value of type %d given for type %d", (int)v->type,
                 (int)type);
    return NULL;
  }
  size_t n = 0;
  const void *items = NULL;
  switch (type) {
  case PYOP_ATTR_TENSOR:
    /* A read-only Tensor over the bridge's own copy of the bytes (libpyop's
     * copy is valid until destroy_holder, but a view of the Tensor may live
     * longer, and calls on one instance from several threads cannot tell
     * whose view it is): views keep the Tensor, and so the bytes, alive.
     * holder_free invalidates the Tensor itself. */
    if (v->u.tensor == NULL) {
      PyErr_SetString(PyExc_ValueError, "Tensor attribute with no tensor");
      return NULL;
    }
    return pb_tensor_own_copy(v->u.tensor);
  case PYOP_ATTR_INT:
    return PyLong_FromLongLong(v->u.i);
  case PYOP_ATTR_FLOAT:
    return PyFloat_FromDouble(v->u.f);
  case PYOP_ATTR_BOOL:
    return PyBool_FromLong(v->u.b);
  case PYOP_ATTR_STR:
    return str_value(v->u.s);
  case PYOP_ATTR_DTYPE:
    return dtype_value(v->u.dtype);
  case PYOP_ATTR_LIST_INT:
    return int_tuple(v->u.ints.items, v->u.ints.count);
  case PYOP_ATTR_LIST_FLOAT:
    n = v->u.floats.count;
    items = v->u.floats.items;
    break;
  case PYOP_ATTR_LIST_BOOL:
    n = v->u.bools.count;
    items = v->u.bools.items;
    break;
  case PYOP_ATTR_LIST_STR:
    n = v->u.strs.count;
    items = v->u.strs.items;
    break;
  case PYOP_ATTR_LIST_DTYPE:
    n = v->u.dtypes.count;
    items = v->u.dtypes.items;
    break;
  case PYOP_ATTR_LIST_LIST_INT:
    n = v->u.int_lists.count;
    items = v->u.int_lists.items;
    break;
  default:
    PyErr_Format(PyExc_ValueError, "unknown attribute type %d", (int)type);
    return NULL;
  }
  if (n > 0 && items == NULL) {
    PyErr_SetString(PyExc_ValueError, "list attribute with NULL items");
    return NULL;
  }
  PyObject *l = PyTuple_New((Py_ssize_t)n);
  if (l == NULL)
    return NULL;
  for (size_t i = 0; i < n; i++) {
    PyObject *e = NULL;
    switch (type) {
    case PYOP_ATTR_LIST_FLOAT:
      e = PyFloat_FromDouble(v->u.floats.items[i]);
      break;
    case PYOP_ATTR_LIST_BOOL:
      e = PyBool_FromLong(v->u.bools.items[i]);
      break;
    case PYOP_ATTR_LIST_STR:
      e = str_value(v->u.strs.items[i]);
      break;
    case PYOP_ATTR_LIST_DTYPE:
      e = dtype_value(v->u.dtypes.items[i]);
      break;
    default:
      e = int_tuple(v->u.int_lists.items[i].items, v->u.int_lists.items[i].count);
      break;
    }
    if (e == NULL) {
      Py_DECREF(l);
      return NULL;
    }
    PyTuple_SET_ITEM(l, (Py_ssize_t)i, e);
  }
  return l;
}

/* -------------------------------------------------------------- holders */

/*
 * What create_holder and destroy_holder share between instances of any op:
 * each pb_op's refs and desc_names below. The GIL guards them; a
 * free-threaded Python has none, so there this mutex does (a PyMutex: a
 * thread that waits for it lets a stop-the-world collection go on). The
 * other bridge entries that change them (load, reset, shutdown) never run
 * while an instance lives.
 */
#ifdef Py_GIL_DISABLED
static PyMutex holders_lock;
#define HOLDERS_LOCK() PB_MUTEX_LOCK(&holders_lock)
#define HOLDERS_UNLOCK() PB_MUTEX_UNLOCK(&holders_lock)
#else
#define HOLDERS_LOCK() ((void)0)
#define HOLDERS_UNLOCK() ((void)0)
#endif

/* See bridge.h. */
pb_desc_names_t pb_desc_names;

static int desc_names_acquire(void) {
  if (pb_desc_names.holders == 0) {
    pb_desc_names.shape = PyUnicode_InternFromString("shape");
    pb_desc_names.dtype = PyUnicode_InternFromString("dtype");
    pb_desc_names.format = PyUnicode_InternFromString("format");
    if (pb_desc_names.shape == NULL || pb_desc_names.dtype == NULL || pb_desc_names.format == NULL) {
      Py_CLEAR(pb_desc_names.shape);
      Py_CLEAR(pb_desc_names.dtype);
      Py_CLEAR(pb_desc_names.format);
      return -1;
    }
  }
  pb_desc_names.holders++;
  return 0;
}

/* Drops a holder's use of the names; without Python only forgets them. */
static void desc_names_release(bool python) {
  if (--pb_desc_names.holders > 0)
    return;
  if (python) {
    Py_CLEAR(pb_desc_names.shape);
    Py_CLEAR(pb_desc_names.dtype);
    Py_CLEAR(pb_desc_names.format);
  } else {
    pb_desc_names.shape = pb_desc_names.dtype = pb_desc_names.format = NULL;
  }
}

static void holder_free(pb_holder *h) {
  for (size_t i = 0; i < PB_NKINDS; i++) {
    Py_XDECREF(h->target[i]);
    Py_XDECREF(h->func[i]);
  }
  Py_XDECREF(h->self);
  Py_XDECREF((PyObject *)h->in_type);
  Py_XDECREF(h->kwnames);
  for (size_t i = 0; i < h->n_attrs; i++) {
    PyObject *v = h->attr_values[i];
    if (v != NULL && Py_IS_TYPE(v, pb.tensor_type))
      ((pb_tensor *)v)->valid = false; /* the op instance is gone (its views stay safe) */
    Py_XDECREF(v);
  }
  free(h->attr_values);
  free(h->list_attrs);
  for (size_t i = 0; i < h->n_in_cache; i++)
    Py_XDECREF(h->in_cache[i]);
  free(h->in_cache);
  for (size_t i = 0; i < h->n_out_cache; i++)
    Py_XDECREF(h->out_cache[i]);
  free(h->out_cache);
  for (size_t i = 0; i < h->n_desc_cache; i++) {
    Py_XDECREF(h->desc_cache[i].desc);
    Py_XDECREF(h->desc_cache[i].shape);
  }
  free(h->desc_cache);
  Py_XDECREF(h->escaped);
  free(h->escaped_why);
#ifdef Py_GIL_DISABLED
  pb_call_lock_unbind(h, true);
#endif
  HOLDERS_LOCK();
  pb_op_decref(h->op);
  HOLDERS_UNLOCK();
  free(h);
}

/* (name, kind) tuples of n io infos. New reference or NULL. */
static PyObject *io_list(const pyop_io_info *io, size_t n) {
  PyObject *l = PyList_New((Py_ssize_t)n);
  for (size_t i = 0; l != NULL && i < n; i++) {
    PyObject *t = Py_BuildValue("(si)", io[i].name, (int)io[i].kind);
    if (t == NULL)
      Py_CLEAR(l);
    else
      PyList_SET_ITEM(l, (Py_ssize_t)i, t);
  }
  return l;
}

/* The registered prototype as a dict (see pb_registered_proto). */
static PyObject *info_dict(const pyop_op_info *in) {
  PyObject *attrs = PyList_New((Py_ssize_t)in->n_attrs);
  for (size_t i = 0; attrs != NULL && i < in->n_attrs; i++) {
    const pyop_attr_info *a = &in->attrs[i];
    PyObject *d = a->required ? Py_NewRef(Py_None) : attr_to_py(&a->default_value, a->type);
    PyObject *t = d != NULL ? Py_BuildValue("(siON)", a->name, (int)a->type,
                                            a->required ? Py_True : Py_False, d)
                            : NULL;
    if (t == NULL)
      Py_CLEAR(attrs);
    else
      PyList_SET_ITEM(attrs, (Py_ssize_t)i, t);
  }
  PyObject *flags = Py_NewRef(Py_None), *alias = Py_NewRef(Py_None);
  if (in->input_flags != NULL) {
    Py_SETREF(flags, PyTuple_New((Py_ssize_t)in->n_inputs));
    for (size_t i = 0; flags != NULL && i < in->n_inputs; i++)
      PyTuple_SET_ITEM(flags, (Py_ssize_t)i, PyLong_FromUnsignedLong(in->input_flags[i]));
  }
  if (in->output_alias != NULL) {
    Py_SETREF(alias, PyTuple_New((Py_ssize_t)in->n_outputs));
    for (size_t i = 0; alias != NULL && i < in->n_outputs; i++)
      PyTuple_SET_ITEM(alias, (Py_ssize_t)i, PyLong_FromLong(in->output_alias[i]));
  }
  PyObject *ins = io_list(in->inputs, in->n_inputs), *outs = io_list(in->outputs, in->n_outputs);
  PyObject *r = NULL;
  if (attrs != NULL && flags != NULL && alias != NULL && ins != NULL && outs != NULL &&
      !PyErr_Occurred())
    r = Py_BuildValue("{s:s,s:z,s:z,s:O,s:O,s:O,s:O,s:O}", "op_type", in->op_type, "proto_key",
                      in->proto_key, "proto_source", in->proto_source, "inputs", ins,
                      "outputs", outs, "attrs", attrs, "input_flags", flags,
                      "output_alias", alias);
  Py_XDECREF(attrs);
  Py_XDECREF(flags);
  Py_XDECREF(alias);
  Py_XDECREF(ins);
  Py_XDECREF(outs);
  return r;
}

/*
 * _native.registered_proto(op_type): the prototype libpyop has registered
 * for op_type (a host prototype, or one of an earlier load) through the
 * loader service find_proto (bridge ABI 1.2), as a dict {op_type,
 * proto_key, proto_source, inputs [(name, kind)], outputs [(name, kind)],
 * attrs [(name, type, required, default)], input_flags, output_alias}; None
 * when there is none, or when the loader is older than ABI 1.2.
 */
PyObject *pb_registered_proto(PyObject *self, PyObject *arg) {
  (void)self;
  const pyop_loader_services *s = &pb.services;
  if (!PyUnicode_Check(arg)) {
    PyErr_SetString(PyExc_TypeError, "registered_proto() takes the op type (str)");
    return NULL;
  }
  if (s->find_proto == NULL || s->release_proto == NULL) /* NULL before ABI 1.2 */
    Py_RETURN_NONE;
  Py_ssize_t len;
  const char *name = PyUnicode_AsUTF8AndSize(arg, &len);
  if (name == NULL)
    return NULL;
  const pyop_op_info *info = NULL;
  if (s->find_proto((pyop_str){name, (size_t)len}, &info) != PYOP_OK || info == NULL)
    Py_RETURN_NONE;
  PyObject *r = info->op_type != NULL && info->proto_key != NULL ? info_dict(info)
                                                                 : Py_NewRef(Py_None);
  s->release_proto(info);
  return r;
}

/*
 * h->in_type from the implementation class's __pyop_input_view__ (absent or
 * None: pyop.Tensor views): a subclass of pyop._native.ViewBase whose
 * instances execute gets as its inputs. 0, or -1 with TypeError.
 */
static int input_view(pb_holder *h) {
  PyObject *tp = PyObject_GetAttrString(h->op->callable, "__pyop_input_view__");
  if (tp == NULL) {
    if (!PyErr_ExceptionMatches(PyExc_AttributeError))
      return -1;
    PyErr_Clear();
    return 0;
  }
  if (tp == Py_None) {
    Py_DECREF(tp);
    return 0;
  }
  if (!PyType_Check(tp) || !PyType_IsSubtype((PyTypeObject *)tp, pb.view_type) ||
      ((PyTypeObject *)tp)->tp_basicsize < pb.view_type->tp_basicsize) {
    PyErr_Format(PyExc_TypeError, "__pyop_input_view__ must be a subclass of "
                 "pyop._native.ViewBase, got %R", tp);
    Py_DECREF(tp);
    return -1;
  }
  h->in_type = (PyTypeObject *)tp;
  return 0;
}

const char *const pb_kind_names[PB_NKINDS] = {
#define PB_KIND_NAME(kind, name) [PB_##kind] = name,
    PB_KIND_MAP(PB_KIND_NAME)
#undef PB_KIND_NAME
};

/* create_holder's report of a failed Python call; returns its status. */
static int create_failed(const pb_op *op) {
  return pb_error_python(PYOP_EPYTHON, "op '%s' (%s): create_holder failed", op->op_type,
                         op->where);
}

/*
 * Stage 1: a holder of op (which it refers to) with room for n_attrs
 * attributes and the Tensor / TensorDesc caches of op's inputs and outputs;
 * NULL when out of memory (nothing left).
 */
static pb_holder *holder_new(pb_op *op, size_t n_attrs) {
  pb_holder *h = calloc(1, sizeof *h);
  if (h == NULL)
    return NULL;
  h->op = op;
#ifdef Py_GIL_DISABLED
  h->lock = &h->own_lock;
#endif
  HOLDERS_LOCK();
  op->refs++;
  HOLDERS_UNLOCK();
  h->attr_values = calloc(n_attrs ? n_attrs : 1, sizeof *h->attr_values);
  h->list_attrs = calloc(n_attrs ? n_attrs : 1, sizeof *h->list_attrs);
  size_t n_in = op->n_kinds, n_out = op->n_outputs > 0 ? (size_t)op->n_outputs : 0;
  h->in_cache = calloc(n_in ? n_in : 1, sizeof *h->in_cache);
  h->out_cache = calloc(n_out ? n_out : 1, sizeof *h->out_cache);
  h->desc_cache = calloc(n_in ? n_in : 1, sizeof *h->desc_cache);
  if (h->attr_values == NULL || h->list_attrs == NULL || h->in_cache == NULL ||
      h->out_cache == NULL || h->desc_cache == NULL) {
    holder_free(h);
    return NULL;
  }
  h->n_in_cache = n_in;
  h->n_out_cache = n_out;
  h->n_desc_cache = n_in;
  return h;
}

/*
 * Stage 2: the attribute values converted once (in the order given, which
 * libpyop makes the prototype's), the list-typed ones noted, and the
 * kwnames tuple. PYOP_OK or the status reported.
 */
static int holder_attrs(pb_holder *h, const pyop_attr_view *attrs, size_t n_attrs) {
  const pb_op *op = h->op;
  if (n_attrs > 0) {
    h->kwnames = PyTuple_New((Py_ssize_t)n_attrs);
    if (h->kwnames == NULL)
      return create_failed(op);
  }
  for (size_t i = 0; i < n_attrs; i++) {
    const pyop_attr_view *a = &attrs[i];
    if (a->struct_size < sizeof *a || !pb_str_ok(a->name, true))
      return pb_error(PYOP_EINVAL, "bridge create_holder: attribute %zu of op '%s' is invalid",
                      i, op->op_type);
    PyObject *name = PyUnicode_DecodeUTF8(a->name.data, (Py_ssize_t)a->name.len, "strict");
    if (name == NULL)
      return create_failed(op);
    PyUnicode_InternInPlace(&name);
    PyTuple_SET_ITEM(h->kwnames, (Py_ssize_t)i, name);
    h->attr_values[i] = attr_to_py(&a->default_value, a->type);
    h->n_attrs = i + 1;
    if (h->attr_values[i] != NULL && a->type >= PYOP_ATTR_LIST_INT &&
        a->type <= PYOP_ATTR_LIST_LIST_INT)
      h->list_attrs[h->n_list_attrs++] =
          (pb_list_attr){i, a->type == PYOP_ATTR_LIST_LIST_INT};
    if (h->attr_values[i] == NULL) {
      PyObject *exc = pb_exc_fetch();
      PyErr_Format(PyExc_ValueError, "attribute '%U': cannot convert its value", name);
      if (exc != NULL) {
        PyObject *now = pb_exc_fetch();
        PyException_SetCause(now, exc);
        pb_exc_restore(now);
      }
      return create_failed(op);
    }
  }
  return PYOP_OK;
}

/*
 * Stage 3 of an implementation not validated against a Python prototype:
 * its descriptor checks the attribute names the host's prototype gave
 * (OpImpl.check_attrs). PYOP_OK or the status reported.
 */
static int impl_check_attrs(pb_holder *h) {
  const pb_op *op = h->op;
  PyObject *names = h->kwnames != NULL ? Py_NewRef(h->kwnames) : PyTuple_New(0);
  PyObject *r = names != NULL ? PyObject_CallMethod(op->desc, "check_attrs", "(O)", names) : NULL;
  Py_XDECREF(names);
  if (r == NULL)
    return pb_error_python(PYOP_EDESCRIPTOR,
                           "op '%s' (%s): the implementation does not match the prototype's "
                           "attributes",
                           op->op_type, op->where);
  Py_DECREF(r);
  return PYOP_OK;
}

/*
 * Stage 4 of an implementation: an instance of the class, its methods for
 * the capabilities bound (with the function and instance of a plain bound
 * method kept for direct calls) and the execute input view class. PYOP_OK
 * or the status reported.
 */
static int impl_bind(pb_holder *h) {
  const pb_op *op = h->op;
  h->self = PyObject_CallNoArgs(op->callable);
  if (h->self == NULL)
    return pb_error_python(PYOP_EPYTHON, "op '%s': creating the implementation (class at %s) "
                           "failed", op->op_type, op->where);
  for (int k = PB_EXECUTE; k < PB_NKINDS; k++) {
    if (!(op->caps & (PYOP_CAP_INFER_META << k)))
      continue;
    h->target[k] = PyObject_GetAttr(h->self, pb.str_method[k]);
    if (h->target[k] == NULL)
      return create_failed(op);
    if (PyMethod_Check(h->target[k])) {
      h->func[k] = Py_NewRef(PyMethod_GET_FUNCTION(h->target[k]));
      h->fself[k] = PyMethod_GET_SELF(h->target[k]);
    }
  }
  if ((op->caps & PYOP_CAP_EXECUTE) && input_view(h) < 0)
    return create_failed(op);
#ifdef Py_GIL_DISABLED
  if (pb_call_lock_bind(h) < 0)
    return create_failed(op);
#endif
  return PYOP_OK;
}

/*
 * Makes the per-instance state, stage by stage: the holder (holder_new),
 * the attribute values (holder_attrs), then for an implementation the
 * attribute check (impl_check_attrs) and the bound instance (impl_bind),
 * for a prototype its infer function; last the TensorDesc names. On
 * failure nothing is left.
 */
int pb_cb_create_holder(void *ctx, const pyop_attr_view *attrs, size_t n_attrs,
                        void **out_holder) {
  pb_op *op = ctx;
  if (op == NULL || out_holder == NULL || (n_attrs > 0 && attrs == NULL))
    return pb_error(PYOP_EINVAL, "bridge create_holder: invalid arguments");
  *out_holder = NULL;
  if (!pb_python_usable()) {
    char what[160];
    snprintf(what, sizeof what, "creating an instance of op '%s'", op->op_type);
    return pb_error_no_python(what);
  }
  pb_gil st = pb_enter();
  pb_holder *h = holder_new(op, n_attrs);
  if (h == NULL) {
    pb_leave(st);
    return pb_error(PYOP_ENOMEM, "bridge create_holder of op '%s': out of memory", op->op_type);
  }
  int rc = holder_attrs(h, attrs, n_attrs);
  if (rc == PYOP_OK && op->is_impl && !op->proto_known)
    rc = impl_check_attrs(h);
  if (rc == PYOP_OK && op->is_impl)
    rc = impl_bind(h);
  if (rc == PYOP_OK && !op->is_impl)
    h->target[PB_INFER] = Py_NewRef(op->callable);
  if (rc == PYOP_OK) {
    HOLDERS_LOCK();
    int named = desc_names_acquire();
    HOLDERS_UNLOCK();
    if (named < 0)
      rc = create_failed(op);
  }
  if (rc != PYOP_OK) {
    holder_free(h);
    h = NULL;
  }
#ifdef Py_GIL_DISABLED
  pb_gil_watch_after(-1, op);
#endif
  if (rc == PYOP_EINTR)
    pb_interrupt_caller();
  else if (rc == PYOP_OK && pb_lanes_image())
    rc = pb_lane_imports_done(rc); /* PB_STATUS_LANE_CAUGHT: h is made all the same */
  pb_leave(st);
  *out_holder = h;
  return rc;
}

/* Guards the op refs and desc_names when holders are destroyed without an
 * interpreter (no GIL to do it). */
static pthread_mutex_t no_python_lock = PTHREAD_MUTEX_INITIALIZER;

/* Releases the holder; without its interpreter only its C memory (its
 * Python objects died with the interpreter). */
void pb_cb_destroy_holder(void *holder) {
  pb_holder *h = holder;
  if (h == NULL)
    return;
  if (!pb_python_usable()) {
    pthread_mutex_lock(&no_python_lock);
    desc_names_release(false);
    pb_op_decref(h->op);
    pthread_mutex_unlock(&no_python_lock);
#ifdef Py_GIL_DISABLED
    pb_call_lock_unbind(h, false);
#endif
    free(h->attr_values);
    free(h->list_attrs);
    free(h->in_cache);
    free(h->out_cache);
    free(h->desc_cache);
    free(h->escaped_why);
    free(h);
    return;
  }
  pb_gil st = pb_enter();
  holder_free(h);
  HOLDERS_LOCK();
  desc_names_release(true);
  HOLDERS_UNLOCK();
  pb_leave(st);
}

