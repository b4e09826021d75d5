/*
 * The package set-up: importing the pyop package (by file location) and
 * pyop._native, filling the Python objects the bridge holds (PB_PY_STATE)
 * from it, and dropping or forgetting them at shutdown.
 */
#include "bridge.h"

#include <assert.h>

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

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
    Py_ssize_t n = 0;
    const char *s = PyUnicode_AsUTF8AndSize(k, &n);
    if (s == NULL) {
      PyErr_Clear();
      continue;
    }
    /* By length: a name holding a NUL ("pyop\0x") is not "pyop". */
    if ((n == 4 && memcmp(s, "pyop", 4) == 0) || strncmp(s, "pyop.", 5) == 0) {
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
  pb_lane_imports_unwatch();
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
  if (py_state_from_modules() < 0 || desc_layout_check() < 0 ||
      (pb_lanes_image() && pb_lane_imports_watch() < 0))
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
  pb.lane_seen = PyDict_New();
  if (pb.modules == NULL || pb.lane_seen == NULL || pb_exit_watch_register() < 0)
    goto fail;
  return PYOP_OK;
fail:;
  int rc = pb_error_python(PYOP_EPLUGIN, "importing the pyop package from %s/python/pyop failed",
                           pb.artifact_dir);
  pb_package_drop();
  return rc;
}

void pb_package_forget(void) {
#ifdef Py_GIL_DISABLED
  pb_gil_watch_stop(false);
#endif
  pb_ops_free(pb.ops); /* pb_python_usable() is false: C memory only */
  pb.ops = NULL;
  saved_foreign_pyop = NULL;
#define PB_PY_FORGET(type, name, dims, image, module, attr) memset(&pb.name, 0, sizeof pb.name);
  PB_PY_STATE(PB_PY_FORGET)
#undef PB_PY_FORGET
}

