/*
 * Importing the pyop package (by file location) and the plugins, and
 * turning their descriptors into the views the registrar receives.
 */
#include "bridge.h"

#include <assert.h>

#include <dlfcn.h>
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

/* ------------------------------------------------------------ the package */

static PyObject *saved_foreign_pyop; /* a "pyop" found in sys.modules before ours */

/* Removes pyop and pyop.* from sys.modules (a foreign pyop saved at the
 * import goes back); in a free-threaded build returns the modules removed
 * (a new list, for pb_modules_release), else NULL. */
static PyObject *drop_package_modules(void) {
  PyObject *mods = PyImport_GetModuleDict(); /* borrowed */
  PyObject *keys = PyDict_Keys(mods), *removed = NULL;
#ifdef Py_GIL_DISABLED
  removed = PyList_New(0);
#endif
  if (keys == NULL) {
    PyErr_Clear();
    return removed;
  }
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(keys); i++) {
    PyObject *k = PyList_GET_ITEM(keys, i);
    if (!PyUnicode_Check(k))
      continue;
    const char *s = PyUnicode_AsUTF8(k);
    if (s == NULL) {
      PyErr_Clear();
      continue;
    }
    if (strcmp(s, "pyop") == 0 || strncmp(s, "pyop.", 5) == 0) {
#ifdef Py_GIL_DISABLED
      PyObject *m = NULL;
      if (removed != NULL && PyDict_GetItemRef(mods, k, &m) > 0 && PyList_Append(removed, m) < 0)
        Py_CLEAR(removed);
      Py_XDECREF(m);
#endif
      if (PyDict_DelItem(mods, k) < 0)
        PyErr_Clear();
    }
  }
  Py_DECREF(keys);
  PyErr_Clear();
  if (saved_foreign_pyop != NULL) {
    if (PyDict_SetItemString(mods, "pyop", saved_foreign_pyop) < 0)
      PyErr_Clear();
    Py_CLEAR(saved_foreign_pyop);
  }
  return removed;
}

/*
 * Something outside the bridge still holds a Tensor or context (a plugin
 * kept one in a module that outlives the package): their types' code lives
 * in this image, so it must never be unmapped. Pins it with RTLD_NODELETE.
 */
static void pin_image(bool referenced) {
  Dl_info info;
  if (dladdr((void *)pin_image, &info) != 0 && info.dli_fname != NULL) {
    void *self = dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
    (void)self; /* the extra reference is never dropped on purpose */
  }
  if (referenced)
    pb_log(PYOP_LOG_WARN, "Python objects of the bridge (Tensor or context) are still "
                          "referenced at shutdown; the bridge stays mapped");
  else
    pb_log(PYOP_LOG_DEBUG, "the bridge stays mapped: this free-threaded Python made its "
                           "module and types immortal (they are never freed)");
}

static bool weakref_alive(PyObject *ref) {
#if PY_VERSION_HEX >= 0x030D0000
  PyObject *o = NULL;
  int r = PyWeakref_GetRef(ref, &o);
  Py_XDECREF(o);
  if (r < 0)
    PyErr_Clear();
  return r != 0;
#else
  return PyWeakref_GetObject(ref) != Py_None;
#endif
}

/*
 * typing memoizes subscriptions in process-wide caches: a plugin annotation
 * such as Optional[Tensor], List[Tensor] or Union[Tensor, None] leaves an
 * entry whose arguments hold the Tensor type, hence pyop._native, for the
 * life of the process (and Optional[TensorDesc] the package's modules). The
 * caches cannot drop single entries, so they are cleared: they are only
 * memos, typing rebuilds an entry on the next subscription. Nothing is done
 * when typing was never imported or has no such caches (the watch in
 * pb_package_drop then decides).
 */
static void clear_typing_caches(void) {
  PyObject *name = PyUnicode_FromString("typing");
  PyObject *typing = name != NULL ? PyImport_GetModule(name) : NULL; /* no import */
  Py_XDECREF(name);
  PyObject *cleanups = NULL, *list = NULL;
  if (typing == NULL)
    goto out;
  cleanups = PyObject_GetAttrString(typing, "_cleanups");
  if (cleanups == NULL)
    goto out;
  list = PySequence_List(cleanups); /* a copy: a callback cannot change what we walk */
  if (list == NULL)
    goto out;
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(list); i++) {
    PyObject *clear = PyList_GET_ITEM(list, i);
    if (!PyCallable_Check(clear))
      continue;
    PyObject *r = PyObject_CallNoArgs(clear);
    if (r == NULL)
      PyErr_Clear();
    Py_XDECREF(r);
  }
out:
  PyErr_Clear();
  Py_XDECREF(list);
  Py_XDECREF(cleanups);
  Py_XDECREF(typing);
}

/* Drops the size bytes of owned references at members (NULL ones skipped),
 * each set to NULL before its reference goes, as Py_CLEAR does. */
static void refs_release(void *members, size_t size) {
  for (size_t off = 0; off + sizeof(PyObject *) <= size; off += sizeof(PyObject *)) {
    PyObject *o;
    memcpy(&o, (char *)members + off, sizeof o);
    memset((char *)members + off, 0, sizeof o);
    Py_XDECREF(o);
  }
}

/* Releases the PB_PY_STATE members of group image, in table order. */
static void py_state_release(int image) {
#define PB_PY_RELEASE(type, name, dims, img, module, attr)                                    \
  if ((img) == image)                                                                         \
    refs_release(&pb.name, sizeof pb.name);
  PB_PY_STATE(PB_PY_RELEASE)
#undef PB_PY_RELEASE
}

/* How many objects PB_PY_STATE's image group holds at most. */
#define PB_PY_IMAGE_COUNT(type, name, dims, img, module, attr)                                \
  +((img) ? sizeof(((pb_state *)0)->name) / sizeof(PyObject *) : 0)
enum { PB_N_IMAGE_OBJECTS = 0 PB_PY_STATE(PB_PY_IMAGE_COUNT) };
#undef PB_PY_IMAGE_COUNT

/* The objects of PB_PY_STATE's image group (borrowed, NULL ones too) into
 * out[PB_N_IMAGE_OBJECTS]. */
static void py_state_image_objects(PyObject **out) {
  size_t n = 0;
#define PB_PY_IMAGE_OBJECTS(type, name, dims, img, module, attr)                              \
  if (img) {                                                                                  \
    memcpy(out + n, &pb.name, sizeof pb.name);                                                \
    n += sizeof pb.name / sizeof(PyObject *);                                                 \
  }
  PB_PY_STATE(PB_PY_IMAGE_OBJECTS)
#undef PB_PY_IMAGE_OBJECTS
  assert(n == PB_N_IMAGE_OBJECTS);
}

void pb_package_drop(void) {
  pb_exit_watch_unregister();
#ifdef Py_GIL_DISABLED
  pb_gil_watch_stop(true);
#endif
  /* The modules the package's shutdown (ge's) and the drop removed. */
  PyObject *removed[2] = {NULL, NULL};
  if (pb.fn_loader_shutdown != NULL) {
    removed[0] = PyObject_CallNoArgs(pb.fn_loader_shutdown);
    if (removed[0] == NULL)
      PyErr_Clear();
  }
  if (pb.pkg != NULL)
    removed[1] = drop_package_modules();
  py_state_release(0);
  clear_typing_caches();
  for (int i = 0; i < 2; i++) {
#ifdef Py_GIL_DISABLED
    pb_modules_release(removed[i]);
#endif
    Py_XDECREF(removed[i]);
  }
  /* Watch the objects whose code or static data live in this image. */
  PyObject *watch[PB_N_IMAGE_OBJECTS];
  PyObject *refs[PB_N_IMAGE_OBJECTS] = {NULL};
  py_state_image_objects(watch);
  bool alive = false, immortal = false;
#ifdef Py_GIL_DISABLED
  /* Once a second thread exists a free-threaded 3.13 makes every module,
   * type and function immortal: then the module, and the types it holds,
   * are never freed, and their weak references say nothing about what a
   * plugin kept (pb_live_objects does, below). */
  for (size_t i = 0; i < PB_N_IMAGE_OBJECTS; i++)
    if (watch[i] != NULL && _Py_IsImmortal(watch[i]))
      immortal = true;
#endif
  for (size_t i = 0; i < PB_N_IMAGE_OBJECTS && !immortal; i++) {
    if (watch[i] == NULL)
      continue;
    refs[i] = PyWeakref_NewRef(watch[i], NULL);
    if (refs[i] == NULL) {
      PyErr_Clear();
      alive = true; /* cannot tell: stay safe */
    }
  }
  py_state_release(1);
  /* The module and its heap types form cycles. */
  PyGC_Collect();
  for (size_t i = 0; i < PB_N_IMAGE_OBJECTS; i++) {
    if (refs[i] != NULL && weakref_alive(refs[i]))
      alive = true;
    Py_XDECREF(refs[i]);
  }
#ifdef Py_GIL_DISABLED
  if (atomic_load(&pb_live_objects) > 0)
    alive = true; /* a Tensor or context a plugin kept */
#endif
  if (alive || immortal)
    pin_image(alive);
}

/*
 * Whether pyop.TensorDesc keeps the layout the bridge reads and writes
 * (pb_desc): a subclass of pyop._native.TensorDescBase of the same size,
 * without __dict__ or __weakref__ (the reuse of a TensorDesc relies on its
 * reference count telling whether anything can still reach it). 0, or -1
 * with TypeError.
 */
static int desc_layout_check(void) {
  PyTypeObject *tp = PyType_Check(pb.tensor_desc) ? (PyTypeObject *)pb.tensor_desc : NULL;
  if (tp != NULL && pb.desc_type != NULL && PyType_IsSubtype(tp, pb.desc_type) &&
      tp->tp_basicsize == (Py_ssize_t)sizeof(pb_desc) && tp->tp_dictoffset == 0 &&
      tp->tp_weaklistoffset == 0)
    return 0;
  PyErr_Format(PyExc_TypeError,
               "pyop.TensorDesc (%R) must subclass pyop._native.TensorDescBase with "
               "__slots__ = () (no field, __dict__ or __weakref__ of its own)",
               pb.tensor_desc);
  return -1;
}

/* getattr(module, name) where module is sys.modules[modname]; new ref. */
static PyObject *module_attr(const char *modname, const char *name) {
  PyObject *mod = PyImport_ImportModule(modname);
  if (mod == NULL)
    return NULL;
  PyObject *r = PyObject_GetAttrString(mod, name);
  Py_DECREF(mod);
  return r;
}

/* Members of an IntEnum class for values 0..n-1 into out[]. */
static int enum_members(PyObject *cls, PyObject **out, size_t n) {
  for (size_t i = 0; i < n; i++) {
    PyObject *v = PyLong_FromSize_t(i);
    if (v == NULL)
      return -1;
    out[i] = PyObject_CallOneArg(cls, v);
    Py_DECREF(v);
    if (out[i] == NULL)
      return -1;
  }
  return 0;
}

/* The PB_PY_STATE members that are a module attribute: where they are in
 * pb and where they come from. */
static const struct py_from_module {
  size_t offset, size;
  const char *module, *attr;
} py_from_module[] = {
#define PB_PY_FROM_MODULE(type, name, dims, image, module, attr)                              \
  {offsetof(pb_state, name), sizeof(((pb_state *)0)->name), module, attr},
    PB_PY_STATE(PB_PY_FROM_MODULE)
#undef PB_PY_FROM_MODULE
};

/* Sets every PB_PY_STATE member that has a module and attribute, in table
 * order; -1 with an exception at the first that fails. */
static int py_state_from_modules(void) {
  for (size_t i = 0; i < sizeof py_from_module / sizeof py_from_module[0]; i++) {
    const struct py_from_module *m = &py_from_module[i];
    if (m->module == NULL)
      continue;
    assert(m->size == sizeof(PyObject *));
    PyObject *o = module_attr(m->module, m->attr);
    if (o == NULL)
      return -1;
    memcpy((char *)&pb + m->offset, &o, sizeof o);
  }
  return 0;
}

/* Imports <artifact_dir>/python/pyop as sys.modules["pyop"] (exception set
 * on failure, nothing left in sys.modules). */
static int import_package(void) {
  int rc = -1;
  PyObject *spec = NULL, *module = NULL, *locs = NULL, *kwargs = NULL, *fn = NULL,
           *args = NULL, *r = NULL;
  char *pkgdir = pb_strdupf("%s/python/pyop", pb.artifact_dir);
  char *init = pb_strdupf("%s/python/pyop/__init__.py", pb.artifact_dir);
  if (pkgdir == NULL || init == NULL) {
    PyErr_NoMemory();
    goto out;
  }
  PyObject *mods = PyImport_GetModuleDict();
  PyObject *existing = PyDict_GetItemString(mods, "pyop"); /* borrowed */
  if (existing != NULL) {
    pb_log(PYOP_LOG_WARN,
           "sys.modules['pyop'] is another module; the bridge's package %s replaces it "
           "until shutdown",
           pkgdir);
    saved_foreign_pyop = Py_NewRef(existing);
  }
  pb.native = pb_native_create();
  if (pb.native == NULL)
    goto out;
  if (PyDict_SetItemString(mods, "pyop._native", pb.native) < 0)
    goto out;
  fn = module_attr("importlib.util", "spec_from_file_location");
  if (fn == NULL)
    goto out;
  /* Paths as the file system's names (a directory that is not UTF-8 is
   * decoded with surrogateescape, as os.fsdecode does). */
  locs = Py_BuildValue("[N]", PyUnicode_DecodeFSDefault(pkgdir));
  args = Py_BuildValue("(sN)", "pyop", PyUnicode_DecodeFSDefault(init));
  kwargs = PyDict_New();
  if (locs == NULL || args == NULL || kwargs == NULL ||
      PyDict_SetItemString(kwargs, "submodule_search_locations", locs) < 0)
    goto out;
  spec = PyObject_Call(fn, args, kwargs);
  if (spec == NULL)
    goto out;
  if (spec == Py_None) {
    PyErr_Format(PyExc_ImportError, "cannot make a module spec for %s", init);
    goto out;
  }
  Py_CLEAR(fn);
  fn = module_attr("importlib.util", "module_from_spec");
  if (fn == NULL)
    goto out;
  module = PyObject_CallOneArg(fn, spec);
  if (module == NULL)
    goto out;
  if (PyDict_SetItemString(mods, "pyop", module) < 0)
    goto out;
  pb.pkg = Py_NewRef(module);
  PyObject *loader = PyObject_GetAttrString(spec, "loader");
  if (loader == NULL)
    goto out;
  r = PyObject_CallMethod(loader, "exec_module", "O", module);
  Py_DECREF(loader);
  if (r == NULL)
    goto out;
  rc = 0;
out:
  if (rc != 0 && pb.pkg == NULL && pb.native != NULL) {
    /* pyop._native may be in sys.modules without the package. */
    PyObject *exc = pb_exc_fetch();
    drop_package_modules();
    pb_exc_restore(exc);
  }
  Py_XDECREF(r);
  Py_XDECREF(spec);
  Py_XDECREF(module);
  Py_XDECREF(locs);
  Py_XDECREF(kwargs);
  Py_XDECREF(fn);
  Py_XDECREF(args);
  free(pkgdir);
  free(init);
  return rc;
}

int pb_package_ensure(void) {
  if (pb.pkg != NULL)
    return PYOP_OK;
  if (import_package() < 0)
    goto fail;
  for (size_t i = 0; i < PB_NKINDS; i++) {
    pb.str_method[i] = PyUnicode_InternFromString(pb_kind_names[i]);
    if (pb.str_method[i] == NULL)
      goto fail;
  }
  if (py_state_from_modules() < 0 || desc_layout_check() < 0)
    goto fail;
  PyObject *dt = PyObject_GetAttrString(pb.pkg, "DataType");
  if (dt == NULL)
    goto fail;
  int e = enum_members(dt, pb.dtypes, PYOP_DTYPE_COUNT);
  Py_DECREF(dt);
  if (e < 0)
    goto fail;
  PyObject *fmt = PyObject_GetAttrString(pb.pkg, "Format");
  if (fmt == NULL)
    goto fail;
  e = enum_members(fmt, pb.formats, PYOP_FORMAT_COUNT);
  Py_DECREF(fmt);
  if (e < 0)
    goto fail;
  pb.modules = PyList_New(0);
  if (pb.modules == NULL || pb_exit_watch_register() < 0)
    goto fail;
  return PYOP_OK;
fail:;
  int rc = pb_error_python(PYOP_EPLUGIN, "importing the pyop package from %s/python/pyop failed",
                           pb.artifact_dir);
  pb_package_drop();
  return rc;
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
  free(op->lane_ctx);
  free(op->lane_cb);
  free(op);
}

static void ops_free(pb_op *list) {
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
  if (get_long(desc, "caps", &caps) < 0)
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
 * How add_proto/add_impl ended. Two different failures, two values: a
 * Python error (an exception is pending, nothing reached the registrar) is
 * reported by the caller; a registrar refusal already has its detail
 * recorded by the registrar (libpyop), and its status is in *status.
 */
typedef enum {
  PB_ADD_OK = 0,      /* the registrar took the descriptor */
  PB_ADD_PY_ERROR,    /* converting the descriptor raised */
  PB_ADD_REFUSED,     /* the registrar returned *status (< 0) */
} pb_add_result;

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

/* Builds the proto view of desc and calls add_proto (see pb_add_result). */
static pb_add_result add_proto(const pyop_registrar *reg, PyObject *desc, pb_op **list,
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
  for (size_t i = 0; i < ni; i++) {
    PyObject *t = PyTuple_GET_ITEM(inputs, i);
    if (!PyTuple_Check(t) || PyTuple_GET_SIZE(t) != 2) {
      PyErr_SetString(PyExc_TypeError, "OpProto input must be (name, kind)");
      goto out;
    }
    iv[i].struct_size = sizeof iv[i];
    if (view_of(PyTuple_GET_ITEM(t, 0), &iv[i].name) < 0)
      goto out;
    int64_t k = 0;
    if (pb_int_in(PyTuple_GET_ITEM(t, 1), INT32_MIN, INT32_MAX, &k, "OpProto input %zu kind",
                  i) < 0)
      goto out;
    iv[i].kind = (int32_t)k;
    op->input_kinds[i] = (int32_t)k;
  }
  for (size_t i = 0; i < no; i++) {
    ov[i].struct_size = sizeof ov[i];
    ov[i].kind = out_kinds != NULL ? out_kinds[i] : PYOP_IO_REQUIRED;
    op->output_kinds[i] = ov[i].kind;
    if (view_of(PyTuple_GET_ITEM(outputs, i), &ov[i].name) < 0)
      goto out;
  }
  for (size_t i = 0; i < na; i++) {
    PyObject *t = PyTuple_GET_ITEM(attrs, i);
    if (!PyTuple_Check(t) || PyTuple_GET_SIZE(t) != 4) {
      PyErr_SetString(PyExc_TypeError, "OpProto attr must be (name, type, required, default)");
      goto out;
    }
    av[i].struct_size = sizeof av[i];
    if (view_of(PyTuple_GET_ITEM(t, 0), &av[i].name) < 0)
      goto out;
    int64_t type = 0;
    if (pb_int_in(PyTuple_GET_ITEM(t, 1), INT32_MIN, INT32_MAX, &type,
                  "OpProto attr %zu type", i) < 0)
      goto out;
    int req = PyObject_IsTrue(PyTuple_GET_ITEM(t, 2));
    if (req < 0)
      goto out;
    av[i].type = (int32_t)type;
    av[i].required = req;
    av[i].default_value.type = (int32_t)type;
    if (!req && value_from_py(PyTuple_GET_ITEM(t, 3), (int32_t)type, &av[i].default_value,
                              &arena) < 0)
      goto out;
  }
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
  if (pb.abi_minor < 7 && (v.input_dtypes != NULL || v.output_dtypes != NULL)) {
    /* An older loader would drop the constraints: refuse rather than lose them. */
    PyErr_Format(PyExc_TypeError, "op '%s' (%s) declares data types (dtypes=), which needs "
                 "bridge ABI 1.7; the loaded libpyop speaks 1.%u", op->op_type, op->where,
                 (unsigned)pb.abi_minor);
    goto out;
  }
  if (pb.abi_minor < 1) {
    /* A loader of ABI 1.0 reads neither the 1.1 members nor lists of
     * outputs: an op that needs them cannot be handed over. */
    const char *need = no == 0 ? "no outputs"
                       : out_kinds != NULL ? "a dynamic (list) output"
                       : in_flags != NULL  ? "mutated inputs (mutates_args)"
                                           : NULL;
    for (size_t i = 0; need == NULL && i < na; i++)
      if (av[i].type == PYOP_ATTR_TENSOR)
        need = "a Tensor attribute";
    if (need != NULL) {
      PyErr_Format(PyExc_TypeError, "op '%s' (%s) has %s, which needs bridge ABI 1.1; the "
                   "loaded libpyop speaks 1.%u", op->op_type, op->where, need,
                   (unsigned)pb.abi_minor);
      goto out;
    }
    v.struct_size = offsetof(pyop_proto_view, input_flags);
  } else if (pb.abi_minor < 3) {
    v.struct_size = offsetof(pyop_proto_view, source_digest); /* a loader of 1.1/1.2 */
  } else if (pb.abi_minor < 6) {
    v.struct_size = offsetof(pyop_proto_view, serial_reason); /* a loader of 1.3..1.5 */
  } else if (pb.abi_minor < 7) {
    v.struct_size = offsetof(pyop_proto_view, input_dtypes); /* a loader of 1.6 */
  }
  if (pb_lanes_view(op, v.key, v.source_digest, v.source_file, &v.serial_reason, &v.lanes) < 0)
    goto out;
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
static pb_add_result add_impl(const pyop_registrar *reg, PyObject *desc, pb_op **list,
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
  if (pb_lanes_view(op, v.key, v.source_digest, v.source_file, &v.serial_reason, &v.lanes) < 0)
    goto out;
  converted = true;
  rc = reg->add_impl(reg->ctx, &v);
out:
  Py_XDECREF(kinds);
  return op_settle(op, converted, rc, status, list, keep);
}

/* The list attribute name of a LoadResult as a tuple (new reference), or
 * NULL with an exception. */
static PyObject *get_tuple(PyObject *res, const char *name) {
  PyObject *l = PyObject_GetAttrString(res, name);
  if (l == NULL)
    return NULL;
  PyObject *t = PyList_Check(l) ? PyList_AsTuple(l) : NULL;
  if (t == NULL && !PyErr_Occurred())
    PyErr_Format(PyExc_TypeError, "load_plugins returned a malformed result (%s)", name);
  Py_DECREF(l);
  return t;
}

/* -------------------------------------------- interpreter state guard */

/*
 * What a load relies on in the interpreter and a plugin can break: the
 * sys.modules entries (the pyop package and its submodules, and the
 * standard modules the loader uses), sys.meta_path, sys.path_hooks,
 * sys.path_importer_cache and builtins.__import__. Saved before the plugins
 * run. After a failed load every one of them is put back (sys.modules
 * entries that existed are restored by identity, "pyop.*" entries the load
 * added that are not modules are removed); after a successful load only
 * the package's own entries are (a plugin may add finders or modules on
 * purpose, but "pyop" is libpyop's). Nothing here is interpreted: the saved
 * objects are put back as they were. sys.path is not here: its one owner is
 * the loader (pyop/_loader.py, load_plugins), which puts it back after
 * every load, failed or not.
 */
typedef struct pb_guard {
  PyObject *modules;       /* copy of sys.modules */
  PyObject *lists[2];      /* copies of sys.meta_path, sys.path_hooks */
  PyObject *importer_cache; /* copy of sys.path_importer_cache */
  PyObject *import_fn;     /* builtins.__import__ */
} pb_guard;

static const char *const guard_lists[2] = {"meta_path", "path_hooks"};

/* "pyop" or "pyop.<anything>". */
static bool is_package_name(PyObject *k) {
  const char *s = PyUnicode_Check(k) ? PyUnicode_AsUTF8(k) : NULL;
  if (s == NULL) {
    PyErr_Clear();
    return false;
  }
  return strcmp(s, "pyop") == 0 || strncmp(s, "pyop.", 5) == 0;
}

static void guard_free(pb_guard *g) {
  Py_CLEAR(g->modules);
  for (size_t i = 0; i < sizeof guard_lists / sizeof guard_lists[0]; i++)
    Py_CLEAR(g->lists[i]);
  Py_CLEAR(g->importer_cache);
  Py_CLEAR(g->import_fn);
}

/* Saves the state; -1 with an exception. */
static int guard_save(pb_guard *g) {
  memset(g, 0, sizeof *g);
  g->modules = PyDict_Copy(PyImport_GetModuleDict());
  if (g->modules == NULL)
    goto fail;
  for (size_t i = 0; i < sizeof guard_lists / sizeof guard_lists[0]; i++) {
    PyObject *l = PySys_GetObject(guard_lists[i]); /* borrowed */
    g->lists[i] = l != NULL ? PySequence_List(l) : NULL;
    if (g->lists[i] == NULL)
      goto fail;
  }
  PyObject *cache = PySys_GetObject("path_importer_cache"); /* borrowed */
  if (cache != NULL && PyDict_Check(cache) && (g->importer_cache = PyDict_Copy(cache)) == NULL)
    goto fail;
  PyObject *builtins = PyEval_GetBuiltins(); /* borrowed */
  g->import_fn = builtins != NULL ? PyDict_GetItemString(builtins, "__import__") : NULL;
  Py_XINCREF(g->import_fn);
  return 0;
fail:
  guard_free(g);
  return -1;
}

/* Puts a saved list back: into the same list object when sys.<name> is
 * still a list, else as a new list. */
static void restore_list(const char *name, PyObject *saved) {
  PyObject *cur = PySys_GetObject(name); /* borrowed */
  if (cur == NULL || !PyList_CheckExact(cur) ||
      PyList_SetSlice(cur, 0, PyList_GET_SIZE(cur), saved) < 0) {
    PyErr_Clear();
    PyObject *copy = PyList_GetSlice(saved, 0, PyList_GET_SIZE(saved));
    if (copy == NULL || PySys_SetObject(name, copy) < 0) {
      PyErr_Clear();
      pb_log(PYOP_LOG_WARN, "could not restore sys.%s after a plugin changed it", name);
    }
    Py_XDECREF(copy);
  }
}

/*
 * Restores what g saved (all: after a failed load; else only the package's
 * sys.modules entries). Keeps a pending exception. Logs what it repaired.
 */
static void guard_restore(const pb_guard *g, bool all) {
  PyObject *exc = pb_exc_fetch();
  PyObject *mods = PyImport_GetModuleDict(); /* borrowed */
  PyObject *keys = PyDict_Keys(mods);
  int repaired = 0;
  /* Entries the load removed or replaced. */
  Py_ssize_t pos = 0;
  PyObject *k, *v;
  while (PyDict_Next(g->modules, &pos, &k, &v)) {
    if (!all && !is_package_name(k))
      continue;
    PyObject *now = PyDict_GetItemWithError(mods, k); /* borrowed */
    if (now == v)
      continue;
    PyErr_Clear();
    if (PyDict_SetItem(mods, k, v) < 0)
      PyErr_Clear();
    else
      repaired++;
  }
  /* Package entries the load added that are not modules (a plugin's None
   * blocking a submodule not imported yet). A submodule a plugin imported
   * (pyop.launch) stays: importing it again would make a second copy of its
   * classes. */
  for (Py_ssize_t i = 0; keys != NULL && i < PyList_GET_SIZE(keys); i++) {
    PyObject *key = PyList_GET_ITEM(keys, i);
    if (!is_package_name(key) || PyDict_Contains(g->modules, key))
      continue;
    PyObject *now = PyDict_GetItemWithError(mods, key); /* borrowed */
    if (now == NULL || !PyModule_Check(now)) {
      if (PyDict_DelItem(mods, key) < 0)
        PyErr_Clear();
      else
        repaired++;
    }
  }
  PyErr_Clear();
  Py_XDECREF(keys);
  if (all) {
    for (size_t i = 0; i < sizeof guard_lists / sizeof guard_lists[0]; i++)
      restore_list(guard_lists[i], g->lists[i]);
    PyObject *cache = PySys_GetObject("path_importer_cache"); /* borrowed */
    if (g->importer_cache != NULL) {
      if (cache != NULL && PyDict_CheckExact(cache)) {
        PyDict_Clear(cache);
        if (PyDict_Update(cache, g->importer_cache) < 0)
          PyErr_Clear();
      } else {
        PyObject *copy = PyDict_Copy(g->importer_cache);
        if (copy == NULL || PySys_SetObject("path_importer_cache", copy) < 0)
          PyErr_Clear();
        Py_XDECREF(copy);
      }
    }
    PyObject *builtins = PyEval_GetBuiltins(); /* borrowed */
    if (builtins != NULL && g->import_fn != NULL &&
        PyDict_GetItemString(builtins, "__import__") != g->import_fn) {
      if (PyDict_SetItemString(builtins, "__import__", g->import_fn) < 0)
        PyErr_Clear();
      else
        repaired++;
    }
  }
  if (repaired > 0)
    pb_log(PYOP_LOG_WARN,
           "a plugin changed interpreter state libpyop relies on (sys.modules entries "
           "of the pyop package or the import system, builtins.__import__); %d entr%s "
           "restored",
           repaired, repaired == 1 ? "y" : "ies");
  pb_exc_restore(exc);
}

static void unload(PyObject *modules) {
  if (modules == NULL || pb.fn_unload == NULL)
    return;
  PyObject *r = PyObject_CallOneArg(pb.fn_unload, modules);
  if (r == NULL) {
    pb_log(PYOP_LOG_WARN, "removing plugin modules failed");
    PyErr_Clear();
  }
#ifdef Py_GIL_DISABLED
  pb_modules_release(r); /* the module objects removed */
#endif
  Py_XDECREF(r);
}

/*
 * Imports the plugins of paths and hands every descriptor to the registrar.
 * On failure nothing of this call stays: its op ctx are freed and its
 * modules removed from sys.modules. Python errors are reported with
 * PYOP_EPLUGIN (import, validation) or PYOP_EPYTHON; a registrar failure
 * returns the registrar's status without overwriting the error detail the
 * registrar recorded.
 */
int pb_register(const pyop_registrar *reg, const pyop_str *paths, size_t n_paths) {
  if (reg == NULL || reg->struct_size < offsetof(pyop_registrar, add_impl) + sizeof(reg->add_impl) ||
      reg->add_proto == NULL || reg->add_impl == NULL)
    return pb_error(PYOP_EINVAL, "bridge register_custom_ops: invalid registrar");
  if (n_paths > 0 && paths == NULL)
    return pb_error(PYOP_EINVAL, "bridge register_custom_ops: paths is NULL");
  for (size_t i = 0; i < n_paths; i++)
    if (!pb_str_ok(paths[i], true))
      return pb_error(PYOP_EINVAL, "bridge register_custom_ops: path %zu is empty or invalid", i);
  int rc = pb_package_ensure();
  if (rc != PYOP_OK)
    return rc;
  PyObject *list = PyList_New((Py_ssize_t)n_paths);
  PyObject *res = NULL, *protos = NULL, *impls = NULL, *modules = NULL;
  pb_op *mine = NULL;
  pb_guard guard;
  bool guarded = false;
  if (list == NULL)
    goto py_fail;
  for (size_t i = 0; i < n_paths; i++) {
    PyObject *s = PyUnicode_DecodeFSDefaultAndSize(paths[i].data, (Py_ssize_t)paths[i].len);
    if (s == NULL)
      goto py_fail;
    PyList_SET_ITEM(list, (Py_ssize_t)i, s);
  }
  pb_signals_save();
  if (guard_save(&guard) < 0)
    goto py_fail;
  guarded = true;
#ifdef Py_GIL_DISABLED
  bool gil_was_off = pb_gil_enabled() == 0;
#endif
  res = PyObject_CallOneArg(pb.fn_load, list);
#ifdef Py_GIL_DISABLED
  if (gil_was_off) {
    PyObject *exc = pb_exc_fetch(); /* a failed load's, kept for its message */
    pb_gil_watch_load(guard.modules);
    pb_exc_restore(exc);
  }
#endif
  if (res == NULL) {
    /* A lane's image: an ImportError leaves the element serial (lanes.c). */
    rc = pb_error_python(pb_lanes_refused_import() ? PYOP_EUNSUPPORTED : PYOP_EPLUGIN,
                         "loading Python plugins failed");
    goto out;
  }
  /* Tuples: converting a descriptor runs plugin code (__index__...), which
   * must not change what is walked. */
  modules = get_tuple(res, "modules"); /* first: a failure below unloads them */
  protos = modules ? get_tuple(res, "protos") : NULL;
  impls = protos ? get_tuple(res, "impls") : NULL;
  if (impls == NULL)
    goto py_fail;
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(protos); i++) {
    pb_add_result ar = add_proto(reg, PyTuple_GET_ITEM(protos, i), &mine, &rc);
    if (ar == PB_ADD_PY_ERROR)
      goto py_fail;
    if (ar == PB_ADD_REFUSED)
      goto out;
  }
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(impls); i++) {
    pb_add_result ar = add_impl(reg, PyTuple_GET_ITEM(impls, i), &mine, &rc);
    if (ar == PB_ADD_PY_ERROR)
      goto py_fail;
    if (ar == PB_ADD_REFUSED)
      goto out;
  }
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(modules); i++) {
    if (PyList_Append(pb.modules, PyTuple_GET_ITEM(modules, i)) < 0)
      goto py_fail;
  }
  /* Committed: the op ctx now belong to the bridge until reset(). */
  while (mine != NULL) {
    pb_op *next = mine->next;
    mine->next = pb.ops;
    pb.ops = mine;
    mine = next;
  }
  rc = PYOP_OK;
  goto out;
py_fail:
  rc = pb_error_python(PYOP_EPYTHON, "converting plugin descriptors failed");
out:
  if (rc != PYOP_OK) {
    ops_free(mine);
    unload(modules);
  }
  if (guarded) {
    guard_restore(&guard, rc != PYOP_OK);
    guard_free(&guard);
  }
  if (rc != PYOP_OK && (pb.modules == NULL || PyList_GET_SIZE(pb.modules) == 0))
    pb_signals_restore(); /* no plugin of any load is left */
  Py_XDECREF(list);
  Py_XDECREF(res);
  Py_XDECREF(protos);
  Py_XDECREF(impls);
  Py_XDECREF(modules);
  return rc;
}

void pb_package_forget(void) {
#ifdef Py_GIL_DISABLED
  pb_gil_watch_stop(false);
#endif
  ops_free(pb.ops); /* pb_python_usable() is false: C memory only */
  pb.ops = NULL;
  saved_foreign_pyop = NULL;
#define PB_PY_FORGET(type, name, dims, image, module, attr) memset(&pb.name, 0, sizeof pb.name);
  PB_PY_STATE(PB_PY_FORGET)
#undef PB_PY_FORGET
}

void pb_reset_gil(void) {
  assert(PyGILState_Check());
  ops_free(pb.ops);
  pb.ops = NULL;
  pb_signals_restore();
  if (pb.modules != NULL && PyList_GET_SIZE(pb.modules) > 0) {
    unload(pb.modules);
    if (PyList_SetSlice(pb.modules, 0, PyList_GET_SIZE(pb.modules), NULL) < 0)
      PyErr_Clear();
  }
  /* Plugin functions and their module globals form cycles. */
  PyGC_Collect();
}
