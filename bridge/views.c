/*
 * Descriptor views: each OpProto / OpImpl the plugins' load yielded turned
 * into the pyop_proto_view / pyop_impl_view the registrar (libpyop)
 * receives, and into the op ctx (pb_op) the bridge keeps for it. The
 * views' strings and arrays live for one registrar call (a small arena and
 * the Python objects they point into).
 */
#include "bridge.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------- small arena */

/* Allocations, and references to the Python objects whose UTF-8 the views
 * point into, that live for one registrar call. */
typedef struct pb_arena {
  void **blocks;
  size_t n, cap;
  PyObject **refs;
  size_t n_refs, cap_refs;
} pb_arena;

static void *arena_alloc(pb_arena *a, size_t n, size_t size) {
  if (a->n == a->cap) {
    size_t cap = a->cap ? a->cap * 2 : 16;
    void **b = realloc(a->blocks, cap * sizeof *b);
    if (b == NULL)
      return NULL;
    a->blocks = b;
    a->cap = cap;
  }
  void *p = calloc(n ? n : 1, size ? size : 1);
  if (p != NULL)
    a->blocks[a->n++] = p;
  return p;
}

/* Keeps o (reference stolen) until arena_free; -1 with MemoryError (o is
 * then dropped). */
static int arena_keep(pb_arena *a, PyObject *o) {
  if (a->n_refs == a->cap_refs) {
    size_t cap = a->cap_refs ? a->cap_refs * 2 : 8;
    PyObject **r = realloc(a->refs, cap * sizeof *r);
    if (r == NULL) {
      Py_DECREF(o);
      PyErr_NoMemory();
      return -1;
    }
    a->refs = r;
    a->cap_refs = cap;
  }
  a->refs[a->n_refs++] = o;
  return 0;
}

static void arena_free(pb_arena *a) {
  for (size_t i = 0; i < a->n; i++)
    free(a->blocks[i]);
  free(a->blocks);
  for (size_t i = 0; i < a->n_refs; i++)
    Py_DECREF(a->refs[i]);
  free(a->refs);
  memset(a, 0, sizeof *a);
}

/* ------------------------------------------------------------ op ctx */

void pb_op_decref(pb_op *op) {
  if (op == NULL || --op->refs > 0)
    return;
  pb_watch_barrier(); /* the GIL-wait watch may be reading op->op_type */
  if (pb_python_usable()) { /* else they died with their interpreter */
    Py_XDECREF(op->desc);
    Py_XDECREF(op->callable);
  }
  free(op->op_type);
  free(op->where);
  free(op->source_dir);
  free(op->input_kinds);
  free(op->output_kinds);
  free(op->code_digest);
  free(atomic_load(&op->lane_refusal));
  free(op->lane_ctx);
  free(op->lane_cb);
  free(op);
}

void pb_ops_free(pb_op *list) {
  while (list != NULL) {
    pb_op *next = list->next;
    list->next = NULL;
    pb_op_decref(list);
    list = next;
  }
}

/* A str attribute of obj as a view valid while obj lives (exception set on
 * failure). */
static int get_str(PyObject *obj, const char *name, pyop_str *out, PyObject **keep) {
  PyObject *v = PyObject_GetAttrString(obj, name);
  if (v == NULL)
    return -1;
  if (!PyUnicode_Check(v)) {
    PyErr_Format(PyExc_TypeError, "descriptor attribute %s must be a str", name);
    Py_DECREF(v);
    return -1;
  }
  Py_ssize_t len = 0;
  const char *s = PyUnicode_AsUTF8AndSize(v, &len);
  if (s == NULL) {
    Py_DECREF(v);
    return -1;
  }
  out->data = s;
  out->len = (size_t)len;
  /* The descriptor holds the string too, so a borrowed view stays valid;
   * keep a reference anyway for the caller to drop. */
  *keep = v;
  return 0;
}

/*
 * A path attribute of obj as a view of its bytes as the file system has
 * them (os.fsencode: a name that is not UTF-8 was decoded with
 * surrogateescape and gives back the bytes it came from), valid while
 * *keep (the bytes object, for the caller to drop) lives.
 */
static int get_path(PyObject *obj, const char *name, pyop_str *out, PyObject **keep) {
  PyObject *v = PyObject_GetAttrString(obj, name);
  if (v == NULL)
    return -1;
  PyObject *b = NULL;
  int ok = PyUnicode_FSConverter(v, &b);
  Py_DECREF(v);
  if (!ok)
    return -1;
  out->data = PyBytes_AS_STRING(b);
  out->len = (size_t)PyBytes_GET_SIZE(b);
  *keep = b;
  return 0;
}

static int view_of(PyObject *s, pyop_str *out) {
  if (!PyUnicode_Check(s)) {
    PyErr_SetString(PyExc_TypeError, "expected a str in a descriptor");
    return -1;
  }
  Py_ssize_t len = 0;
  const char *d = PyUnicode_AsUTF8AndSize(s, &len);
  if (d == NULL)
    return -1;
  out->data = d;
  out->len = (size_t)len;
  return 0;
}

static int get_long(PyObject *obj, const char *name, long *out) {
  PyObject *v = PyObject_GetAttrString(obj, name);
  if (v == NULL)
    return -1;
  *out = PyLong_AsLong(v);
  Py_DECREF(v);
  return (*out == -1 && PyErr_Occurred()) ? -1 : 0;
}

static int value_from_py(PyObject *obj, int32_t type, pyop_attr_value *v, pb_arena *a);

/* Converts a Python list value of an attribute (already normalised by the
 * package) into v, allocating arrays in a: each item as a value of the
 * element type (a LIST_LIST_INT item as a LIST_INT). */
static int list_to_value(PyObject *obj, int32_t type, pyop_attr_value *v, pb_arena *a) {
  int32_t elem;
  size_t size;
  switch (type) {
  case PYOP_ATTR_LIST_INT: elem = PYOP_ATTR_INT; size = sizeof(int64_t); break;
  case PYOP_ATTR_LIST_FLOAT: elem = PYOP_ATTR_FLOAT; size = sizeof(double); break;
  case PYOP_ATTR_LIST_BOOL: elem = PYOP_ATTR_BOOL; size = sizeof(bool); break;
  case PYOP_ATTR_LIST_STR: elem = PYOP_ATTR_STR; size = sizeof(pyop_str); break;
  case PYOP_ATTR_LIST_DTYPE: elem = PYOP_ATTR_DTYPE; size = sizeof(int32_t); break;
  case PYOP_ATTR_LIST_LIST_INT: elem = PYOP_ATTR_LIST_INT; size = sizeof(pyop_int_list); break;
  default:
    PyErr_Format(PyExc_ValueError, "unknown list attribute type %d", (int)type);
    return -1;
  }
  /* A tuple of the items, kept with the arena: converting an item may run
   * code (__index__) that changes the list, and the string views of a
   * LIST_STR point into its items until the registrar call ends. */
  if (!PyList_Check(obj) && !PyTuple_Check(obj)) {
    PyErr_Format(PyExc_TypeError, "attribute value must be a list, got %s",
                 Py_TYPE(obj)->tp_name);
    return -1;
  }
  PyObject *seq = PySequence_Tuple(obj);
  if (seq == NULL || arena_keep(a, seq) < 0)
    return -1;
  size_t n = (size_t)PyTuple_GET_SIZE(seq);
  char *arr = arena_alloc(a, n, size);
  if (arr == NULL) {
    PyErr_NoMemory();
    return -1;
  }
  for (size_t i = 0; i < n; i++) {
    pyop_attr_value e;
    if (value_from_py(PyTuple_GET_ITEM(seq, (Py_ssize_t)i), elem, &e, a) < 0)
      return -1;
    void *dst = arr + i * size;
    switch (type) {
    case PYOP_ATTR_LIST_INT: *(int64_t *)dst = e.u.i; break;
    case PYOP_ATTR_LIST_FLOAT: *(double *)dst = e.u.f; break;
    case PYOP_ATTR_LIST_BOOL: *(bool *)dst = e.u.b; break;
    case PYOP_ATTR_LIST_STR: *(pyop_str *)dst = e.u.s; break;
    case PYOP_ATTR_LIST_DTYPE: *(int32_t *)dst = e.u.dtype; break;
    default: *(pyop_int_list *)dst = (pyop_int_list){e.u.ints.items, e.u.ints.count}; break;
    }
  }
  switch (type) {
  case PYOP_ATTR_LIST_INT:
    v->u.ints.items = (const int64_t *)arr;
    v->u.ints.count = n;
    break;
  case PYOP_ATTR_LIST_FLOAT:
    v->u.floats.items = (const double *)arr;
    v->u.floats.count = n;
    break;
  case PYOP_ATTR_LIST_BOOL:
    v->u.bools.items = (const bool *)arr;
    v->u.bools.count = n;
    break;
  case PYOP_ATTR_LIST_STR:
    v->u.strs.items = (const pyop_str *)arr;
    v->u.strs.count = n;
    break;
  case PYOP_ATTR_LIST_DTYPE:
    v->u.dtypes.items = (const int32_t *)arr;
    v->u.dtypes.count = n;
    break;
  default:
    v->u.int_lists.items = (const pyop_int_list *)arr;
    v->u.int_lists.count = n;
    break;
  }
  return 0;
}

/* A default value (Python) into a pyop_attr_value. */
static int value_from_py(PyObject *obj, int32_t type, pyop_attr_value *v, pb_arena *a) {
  memset(v, 0, sizeof *v);
  v->type = type;
  switch (type) {
  case PYOP_ATTR_INT:
    v->u.i = PyLong_AsLongLong(obj);
    return (v->u.i == -1 && PyErr_Occurred()) ? -1 : 0;
  case PYOP_ATTR_FLOAT:
    v->u.f = PyFloat_AsDouble(obj);
    return (v->u.f == -1.0 && PyErr_Occurred()) ? -1 : 0;
  case PYOP_ATTR_BOOL: {
    int t = PyObject_IsTrue(obj);
    if (t < 0)
      return -1;
    v->u.b = t != 0;
    return 0;
  }
  case PYOP_ATTR_STR:
    return view_of(obj, &v->u.s);
  case PYOP_ATTR_DTYPE: {
    int64_t d = 0;
    if (pb_int_in(obj, INT32_MIN, INT32_MAX, &d, "DataType attribute value") < 0)
      return -1;
    v->u.dtype = (int32_t)d; /* libpyop names a value outside the map */
    return 0;
  }
  default:
    return list_to_value(obj, type, v, a);
  }
}

static char *dir_of(const char *file) {
  const char *slash = strrchr(file, '/');
  if (slash == NULL)
    return strdup(".");
  if (slash == file)
    return strdup("/");
  return strndup(file, (size_t)(slash - file));
}

/* The descriptor's source_digest (a str, or None: the view gives none). */
static int get_digest(PyObject *desc, pyop_str *out, PyObject **keep) {
  PyObject *v = PyObject_GetAttrString(desc, "source_digest");
  if (v == NULL)
    return -1;
  bool none = v == Py_None;
  Py_DECREF(v);
  if (none) {
    *out = (pyop_str){NULL, 0};
    return 0;
  }
  return get_str(desc, "source_digest", out, keep);
}

/*
 * What interpreter lanes compare of a descriptor (lanes.c): the index of
 * the load's path it came from and its code_digest (docs/design.md
 * §Lanes). 0, or -1 with an exception.
 */
static int get_lane_identity(PyObject *desc, pb_op *op) {
  if (get_long(desc, "element", &op->element) < 0)
    return -1;
  PyObject *v = PyObject_GetAttrString(desc, "code_digest");
  if (v == NULL)
    return -1;
  const char *s = v != Py_None && PyUnicode_Check(v) ? PyUnicode_AsUTF8(v) : NULL;
  if (s != NULL && (op->code_digest = strdup(s)) == NULL)
    PyErr_NoMemory();
  Py_DECREF(v);
  return PyErr_Occurred() ? -1 : 0;
}

/* In a lane's image, the digest its views carry is op's code_digest: they
 * go to the main image only, which compares what each interpreter compiled
 * (lanes.c); libpyop's registry gets the source file's (docs/bridge-abi.md,
 * "Source digests"). */
static void lane_digest(const pb_op *op, pyop_str *digest) {
  if (pb_lanes_image() && op->code_digest != NULL)
    *digest = (pyop_str){op->code_digest, strlen(op->code_digest)};
}

/* Common part of a descriptor: op ctx with strings, location and callable;
 * the views' strings stay valid while keep[0..PB_KEEP) live. */
enum { PB_KEEP = 4 };
static pb_op *op_new(PyObject *desc, bool is_impl, pyop_str *op_type, pyop_str *key,
                     pyop_str *file, uint32_t *source_line, pyop_str *digest,
                     PyObject **keep) {
  pb_op *op = calloc(1, sizeof *op);
  if (op == NULL) {
    PyErr_NoMemory();
    return NULL;
  }
  op->refs = 1;
  op->is_impl = is_impl;
  op->desc = Py_NewRef(desc);
  long line = 0;
  if (get_str(desc, "op_type", op_type, &keep[0]) < 0 || get_str(desc, "key", key, &keep[1]) < 0 ||
      get_path(desc, "file", file, &keep[2]) < 0 || get_long(desc, "line", &line) < 0 ||
      get_digest(desc, digest, &keep[3]) < 0)
    goto fail;
  *source_line = line > 0 && line <= (long)UINT32_MAX ? (uint32_t)line : 0;
  op->callable = PyObject_GetAttrString(desc, is_impl ? "cls" : "infer");
  if (op->callable == NULL)
    goto fail;
  op->op_type = strndup(op_type->data, op_type->len);
  op->where = pb_strdupf("%.*s:%ld", (int)file->len, file->data, line);
  if (op->op_type == NULL || op->where == NULL)
    goto nomem;
  char *f = strndup(file->data, file->len);
  if (f == NULL)
    goto nomem;
  op->source_dir = dir_of(f);
  free(f);
  if (op->source_dir == NULL)
    goto nomem;
  long caps = 0;
  if (get_long(desc, "caps", &caps) < 0 || get_lane_identity(desc, op) < 0)
    goto fail;
  op->caps = (uint32_t)caps;
  op->callbacks.struct_size = sizeof op->callbacks;
  op->callbacks.create_holder = pb_cb_create_holder;
  op->callbacks.destroy_holder = pb_cb_destroy_holder;
  if (op->caps & PYOP_CAP_INFER_META)
    op->callbacks.infer_meta = pb_cb_infer_meta;
  if (op->caps & PYOP_CAP_EXECUTE)
    op->callbacks.execute = pb_cb_execute;
  if (op->caps & PYOP_CAP_COMPILE)
    op->callbacks.compile = pb_cb_compile;
  if (op->caps & PYOP_CAP_LAUNCH)
    op->callbacks.declare_launch_args = pb_cb_declare;
  return op;
nomem:
  PyErr_NoMemory();
fail:
  pb_op_decref(op);
  return NULL;
}


/*
 * Ends add_proto/add_impl: op (NULL if op_new failed) joins *list when the
 * registrar took it, else is dropped; the keep[] references are released.
 * converted: the view was built (else a Python exception is pending);
 * rc: what the registrar returned, a positive (out of contract) status
 * counting as PYOP_EINTERNAL.
 */
static pb_add_result op_settle(pb_op *op, bool converted, int rc, int *status, pb_op **list,
                               PyObject **keep) {
  pb_add_result res = PB_ADD_PY_ERROR;
  *status = PYOP_OK;
  if (converted) {
    res = rc == PYOP_OK ? PB_ADD_OK : PB_ADD_REFUSED;
    *status = rc > 0 ? PYOP_EINTERNAL : rc;
  }
  if (res == PB_ADD_OK) {
    op->next = *list;
    *list = op;
  } else {
    pb_op_decref(op);
  }
  for (size_t i = 0; i < PB_KEEP; i++)
    Py_XDECREF(keep[i]);
  return res;
}

/* A tuple attribute of desc of n ints into a[0..n) (arena); *out NULL when
 * the attribute is None or every value equals none_value. -1 with an
 * exception on failure. */
static int int_tuple(PyObject *desc, const char *name, size_t n, int32_t none_value,
                     pb_arena *arena, int32_t **out) {
  *out = NULL;
  PyObject *t = PyObject_GetAttrString(desc, name);
  if (t == NULL)
    return -1;
  int rc = -1;
  if (t == Py_None) {
    rc = 0;
    goto done;
  }
  if (!PyTuple_Check(t) || (size_t)PyTuple_GET_SIZE(t) != n) {
    PyErr_Format(PyExc_TypeError, "OpProto.%s must be a tuple of %zu ints", name, n);
    goto done;
  }
  int32_t *a = arena_alloc(arena, n, sizeof *a);
  if (a == NULL) {
    PyErr_NoMemory();
    goto done;
  }
  bool any = false;
  for (size_t i = 0; i < n; i++) {
    int64_t v = 0;
    if (pb_int_in(PyTuple_GET_ITEM(t, (Py_ssize_t)i), INT32_MIN, INT32_MAX, &v,
                  "OpProto.%s[%zu]", name, i) < 0)
      goto done;
    a[i] = (int32_t)v;
    if (a[i] != none_value)
      any = true;
  }
  *out = any ? a : NULL;
  rc = 0;
done:
  Py_DECREF(t);
  return rc;
}

/*
 * OpProto.<name> (input_dtypes / output_dtypes: a tuple of n (mask, symbol)
 * or None) as views in the arena; *out NULL for None. *keep holds the tuple
 * (the symbols' UTF-8 lives in it) until the caller releases it. -1 with an
 * exception on failure.
 */
static int dtype_sets(PyObject *desc, const char *name, size_t n, pb_arena *arena,
                      PyObject **keep, const pyop_dtype_set_view **out) {
  *out = NULL;
  PyObject *t = PyObject_GetAttrString(desc, name);
  if (t == NULL)
    return -1;
  *keep = t;
  if (t == Py_None)
    return 0;
  if (!PyTuple_Check(t) || (size_t)PyTuple_GET_SIZE(t) != n) {
    PyErr_Format(PyExc_TypeError, "OpProto.%s must be a tuple of %zu (mask, symbol)", name, n);
    return -1;
  }
  pyop_dtype_set_view *a = arena_alloc(arena, n, sizeof *a);
  if (a == NULL) {
    PyErr_NoMemory();
    return -1;
  }
  for (size_t i = 0; i < n; i++) {
    PyObject *e = PyTuple_GET_ITEM(t, (Py_ssize_t)i);
    int64_t mask = 0;
    if (!PyTuple_Check(e) || PyTuple_GET_SIZE(e) != 2) {
      PyErr_Format(PyExc_TypeError, "OpProto.%s[%zu] must be (mask, symbol)", name, i);
      return -1;
    }
    if (pb_int_in(PyTuple_GET_ITEM(e, 0), 0, INT64_MAX, &mask, "OpProto.%s[%zu] mask", name,
                  i) < 0 ||
        view_of(PyTuple_GET_ITEM(e, 1), &a[i].symbol) < 0)
      return -1;
    a[i].mask = (uint64_t)mask;
  }
  *out = a;
  return 0;
}

/* OpProto.inputs ((name, kind) each) into iv[] and op->input_kinds: 0, or
 * -1 with an exception. */
static int proto_inputs(PyObject *inputs, pyop_io_view *iv, pb_op *op) {
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(inputs); i++) {
    PyObject *t = PyTuple_GET_ITEM(inputs, i);
    if (!PyTuple_Check(t) || PyTuple_GET_SIZE(t) != 2) {
      PyErr_SetString(PyExc_TypeError, "OpProto input must be (name, kind)");
      return -1;
    }
    iv[i].struct_size = sizeof iv[i];
    if (view_of(PyTuple_GET_ITEM(t, 0), &iv[i].name) < 0)
      return -1;
    int64_t k = 0;
    if (pb_int_in(PyTuple_GET_ITEM(t, 1), INT32_MIN, INT32_MAX, &k, "OpProto input %zu kind",
                  (size_t)i) < 0)
      return -1;
    iv[i].kind = (int32_t)k;
    op->input_kinds[i] = (int32_t)k;
  }
  return 0;
}

/* OpProto.outputs (names) with their kinds (out_kinds, NULL: all
 * required) into ov[] and op->output_kinds: 0, or -1 with an exception. */
static int proto_outputs(PyObject *outputs, const int32_t *out_kinds, pyop_io_view *ov,
                         pb_op *op) {
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(outputs); i++) {
    ov[i].struct_size = sizeof ov[i];
    ov[i].kind = out_kinds != NULL ? out_kinds[i] : PYOP_IO_REQUIRED;
    op->output_kinds[i] = ov[i].kind;
    if (view_of(PyTuple_GET_ITEM(outputs, i), &ov[i].name) < 0)
      return -1;
  }
  return 0;
}

/* OpProto.attrs ((name, type, required, default) each) into av[], the
 * defaults' arrays in arena: 0, or -1 with an exception. */
static int proto_attrs(PyObject *attrs, pyop_attr_view *av, pb_arena *arena) {
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(attrs); i++) {
    PyObject *t = PyTuple_GET_ITEM(attrs, i);
    if (!PyTuple_Check(t) || PyTuple_GET_SIZE(t) != 4) {
      PyErr_SetString(PyExc_TypeError, "OpProto attr must be (name, type, required, default)");
      return -1;
    }
    av[i].struct_size = sizeof av[i];
    if (view_of(PyTuple_GET_ITEM(t, 0), &av[i].name) < 0)
      return -1;
    int64_t type = 0;
    if (pb_int_in(PyTuple_GET_ITEM(t, 1), INT32_MIN, INT32_MAX, &type,
                  "OpProto attr %zu type", (size_t)i) < 0)
      return -1;
    int req = PyObject_IsTrue(PyTuple_GET_ITEM(t, 2));
    if (req < 0)
      return -1;
    av[i].type = (int32_t)type;
    av[i].required = req;
    av[i].default_value.type = (int32_t)type;
    if (!req && value_from_py(PyTuple_GET_ITEM(t, 3), (int32_t)type, &av[i].default_value,
                              arena) < 0)
      return -1;
  }
  return 0;
}

/*
 * Fits the proto view *v of op (dynamic_outputs: an output has a kind
 * other than required) to the loader's ABI (pb.abi_minor): its
 * struct_size cut to what that loader reads, or -1 with a TypeError when
 * the op needs a member that loader would drop.
 */
static int proto_fit_abi(pyop_proto_view *v, const pb_op *op, bool dynamic_outputs) {
  if (pb.abi_minor < 7 && (v->input_dtypes != NULL || v->output_dtypes != NULL)) {
    /* An older loader would drop the constraints: refuse rather than lose them. */
    PyErr_Format(PyExc_TypeError, "op '%s' (%s) declares data types (dtypes=), which needs "
                 "bridge ABI 1.7; the loaded libpyop speaks 1.%u", op->op_type, op->where,
                 (unsigned)pb.abi_minor);
    return -1;
  }
  if (pb.abi_minor < 1) {
    /* A loader of ABI 1.0 reads neither the 1.1 members nor lists of
     * outputs: an op that needs them cannot be handed over. */
    const char *need = v->n_outputs == 0 ? "no outputs"
                       : dynamic_outputs ? "a dynamic (list) output"
                       : v->input_flags != NULL  ? "mutated inputs (mutates_args)"
                                                 : NULL;
    for (size_t i = 0; need == NULL && i < v->n_attrs; i++)
      if (v->attrs[i].type == PYOP_ATTR_TENSOR)
        need = "a Tensor attribute";
    if (need != NULL) {
      PyErr_Format(PyExc_TypeError, "op '%s' (%s) has %s, which needs bridge ABI 1.1; the "
                   "loaded libpyop speaks 1.%u", op->op_type, op->where, need,
                   (unsigned)pb.abi_minor);
      return -1;
    }
    v->struct_size = offsetof(pyop_proto_view, input_flags);
  } else if (pb.abi_minor < 3) {
    v->struct_size = offsetof(pyop_proto_view, source_digest); /* a loader of 1.1/1.2 */
  } else if (pb.abi_minor < 6) {
    v->struct_size = offsetof(pyop_proto_view, serial_reason); /* a loader of 1.3..1.5 */
  } else if (pb.abi_minor < 7) {
    v->struct_size = offsetof(pyop_proto_view, input_dtypes); /* a loader of 1.6 */
  }
  return 0;
}

/* Builds the proto view of desc and calls add_proto (see pb_add_result). */
pb_add_result pb_view_add_proto(const pyop_registrar *reg, PyObject *desc, pb_op **list,
                                int *status) {
  PyObject *keep[PB_KEEP] = {NULL, NULL, NULL, NULL};
  PyObject *inputs = NULL, *outputs = NULL, *attrs = NULL, *in_dt = NULL, *out_dt = NULL;
  int32_t *out_kinds = NULL, *in_flags = NULL, *alias = NULL;
  pb_arena arena = {0};
  pyop_proto_view v;
  memset(&v, 0, sizeof v);
  v.struct_size = sizeof v;
  bool converted = false;
  int rc = PYOP_OK;
  pb_op *op = op_new(desc, false, &v.op_type, &v.key, &v.source_file, &v.source_line,
                     &v.source_digest, keep);
  if (op == NULL)
    goto out;
  v.caps = op->caps;
  inputs = PyObject_GetAttrString(desc, "inputs");
  outputs = PyObject_GetAttrString(desc, "outputs");
  attrs = PyObject_GetAttrString(desc, "attrs");
  if (inputs == NULL || outputs == NULL || attrs == NULL)
    goto out;
  if (!PyTuple_Check(inputs) || !PyTuple_Check(outputs) || !PyTuple_Check(attrs)) {
    PyErr_SetString(PyExc_TypeError, "OpProto inputs/outputs/attrs must be tuples");
    goto out;
  }
  size_t ni = (size_t)PyTuple_GET_SIZE(inputs), no = (size_t)PyTuple_GET_SIZE(outputs),
         na = (size_t)PyTuple_GET_SIZE(attrs);
  pyop_io_view *iv = arena_alloc(&arena, ni, sizeof *iv);
  pyop_io_view *ov = arena_alloc(&arena, no, sizeof *ov);
  pyop_attr_view *av = arena_alloc(&arena, na, sizeof *av);
  op->input_kinds = calloc(ni ? ni : 1, sizeof *op->input_kinds);
  op->output_kinds = calloc(no ? no : 1, sizeof *op->output_kinds);
  if (iv == NULL || ov == NULL || av == NULL || op->input_kinds == NULL ||
      op->output_kinds == NULL) {
    PyErr_NoMemory();
    goto out;
  }
  if (int_tuple(desc, "output_kinds", no, PYOP_IO_REQUIRED, &arena, &out_kinds) < 0 ||
      int_tuple(desc, "input_flags", ni, 0, &arena, &in_flags) < 0 ||
      int_tuple(desc, "output_alias", no, -1, &arena, &alias) < 0 ||
      dtype_sets(desc, "input_dtypes", ni, &arena, &in_dt, &v.input_dtypes) < 0 ||
      dtype_sets(desc, "output_dtypes", no, &arena, &out_dt, &v.output_dtypes) < 0)
    goto out;
  op->n_kinds = ni;
  op->n_outputs = (long)no;
  if (proto_inputs(inputs, iv, op) < 0 || proto_outputs(outputs, out_kinds, ov, op) < 0 ||
      proto_attrs(attrs, av, &arena) < 0)
    goto out;
  v.inputs = iv;
  v.n_inputs = ni;
  v.outputs = ov;
  v.n_outputs = no;
  v.attrs = av;
  v.n_attrs = na;
  v.ctx = op;
  v.callbacks = &op->callbacks;
  v.input_flags = (const uint32_t *)in_flags;
  v.output_alias = alias;
  if (proto_fit_abi(&v, op, out_kinds != NULL) < 0)
    goto out;
  if (pb_lanes_view(op, v.key, &v.serial_reason, &v.lanes) < 0)
    goto out;
  lane_digest(op, &v.source_digest);
  /* The registrar is libpyop: it records its own error detail. */
  converted = true;
  rc = reg->add_proto(reg->ctx, &v);
out:
  Py_XDECREF(inputs);
  Py_XDECREF(outputs);
  Py_XDECREF(attrs);
  Py_XDECREF(in_dt);
  Py_XDECREF(out_dt);
  arena_free(&arena);
  return op_settle(op, converted, rc, status, list, keep);
}

/* Builds the impl view of desc and calls add_impl (see pb_add_result). */
pb_add_result pb_view_add_impl(const pyop_registrar *reg, PyObject *desc, pb_op **list,
                               int *status) {
  PyObject *keep[PB_KEEP] = {NULL, NULL, NULL, NULL};
  PyObject *kinds = NULL;
  pyop_impl_view v;
  memset(&v, 0, sizeof v);
  v.struct_size = sizeof v;
  bool converted = false;
  int rc = PYOP_OK;
  pb_op *op = op_new(desc, true, &v.op_type, &v.key, &v.source_file, &v.source_line,
                     &v.source_digest, keep);
  if (op == NULL)
    goto out;
  v.caps = op->caps;
  long n_out = -1, known = 0;
  if (get_long(desc, "n_outputs", &n_out) < 0 || get_long(desc, "proto_known", &known) < 0)
    goto out;
  op->n_outputs = n_out;
  op->proto_known = known != 0;
  kinds = PyObject_GetAttrString(desc, "input_kinds");
  if (kinds == NULL)
    goto out;
  if (kinds != Py_None) {
    if (!PyTuple_Check(kinds)) {
      PyErr_SetString(PyExc_TypeError, "OpImpl.input_kinds must be a tuple or None");
      goto out;
    }
    size_t n = (size_t)PyTuple_GET_SIZE(kinds);
    op->input_kinds = calloc(n ? n : 1, sizeof *op->input_kinds);
    if (op->input_kinds == NULL) {
      PyErr_NoMemory();
      goto out;
    }
    op->n_kinds = n;
    for (size_t i = 0; i < n; i++) {
      int64_t k = 0;
      if (pb_int_in(PyTuple_GET_ITEM(kinds, i), INT32_MIN, INT32_MAX, &k,
                    "OpImpl input %zu kind", i) < 0)
        goto out;
      op->input_kinds[i] = (int32_t)k;
    }
  }
  v.ctx = op;
  v.callbacks = &op->callbacks;
  if (pb.abi_minor < 3)
    v.struct_size = offsetof(pyop_impl_view, source_digest); /* a loader before 1.3 */
  else if (pb.abi_minor < 6)
    v.struct_size = offsetof(pyop_impl_view, serial_reason); /* a loader of 1.3..1.5 */
  if (pb_lanes_view(op, v.key, &v.serial_reason, &v.lanes) < 0)
    goto out;
  lane_digest(op, &v.source_digest);
  converted = true;
  rc = reg->add_impl(reg->ctx, &v);
out:
  Py_XDECREF(kinds);
  return op_settle(op, converted, rc, status, list, keep);
}

