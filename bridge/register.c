/*
 * A load: the plugins of the given paths imported (pyop._loader, under the
 * import guard) and every descriptor they yield handed to the registrar
 * (views.c); its undo, when the lanes then refuse the load (entry.c); and
 * reset, which drops every load's plugins.
 */
#include "bridge.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

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

/* The arguments of register_custom_ops: PYOP_OK with the registrar's
 * normalised copy in *out, or PYOP_EINVAL (error reported) for a registrar
 * without its required members or a bad path. */
static int check_request(const pyop_registrar *given, const pyop_str *paths, size_t n_paths,
                         pyop_registrar *out) {
  if (!pb_take_registrar(given, out))
    return pb_error(PYOP_EINVAL, "bridge register_custom_ops: invalid registrar");
  if (n_paths > 0 && paths == NULL)
    return pb_error(PYOP_EINVAL, "bridge register_custom_ops: paths is NULL");
  for (size_t i = 0; i < n_paths; i++)
    if (!pb_str_ok(paths[i], true))
      return pb_error(PYOP_EINVAL, "bridge register_custom_ops: path %zu is empty or invalid", i);
  return PYOP_OK;
}

/* paths[0..n) as a list of str (file system encoding): new reference, or
 * NULL with an exception. */
static PyObject *path_list(const pyop_str *paths, size_t n) {
  PyObject *list = PyList_New((Py_ssize_t)n);
  if (list == NULL)
    return NULL;
  for (size_t i = 0; i < n; i++) {
    PyObject *s = PyUnicode_DecodeFSDefaultAndSize(paths[i].data, (Py_ssize_t)paths[i].len);
    if (s == NULL) {
      Py_DECREF(list);
      return NULL;
    }
    PyList_SET_ITEM(list, (Py_ssize_t)i, s);
  }
  return list;
}

/* Hands every prototype, then every implementation, to the registrar, in
 * order, until one fails (see pb_add_result); what it took joins *mine. */
static pb_add_result hand_over(const pyop_registrar *reg, PyObject *protos, PyObject *impls,
                               pb_op **mine, int *rc) {
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(protos); i++) {
    pb_add_result ar = pb_view_add_proto(reg, PyTuple_GET_ITEM(protos, i), mine, rc);
    if (ar != PB_ADD_OK)
      return ar;
  }
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(impls); i++) {
    pb_add_result ar = pb_view_add_impl(reg, PyTuple_GET_ITEM(impls, i), mine, rc);
    if (ar != PB_ADD_OK)
      return ar;
  }
  return PB_ADD_OK;
}

/*
 * Imports the plugins of paths and hands every descriptor to the registrar.
 * On failure nothing of this call stays: its op ctx are freed and its
 * modules removed from sys.modules. Python errors are reported with
 * PYOP_EPLUGIN (import, validation) or PYOP_EPYTHON; a registrar failure
 * returns the registrar's status without overwriting the error detail the
 * registrar recorded.
 */
int pb_register(const pyop_registrar *given, const pyop_str *paths, size_t n_paths) {
  pyop_registrar taken;
  const pyop_registrar *reg = &taken;
  int rc = check_request(given, paths, n_paths, &taken);
  if (rc != PYOP_OK)
    return rc;
  rc = pb_package_ensure();
  if (rc != PYOP_OK)
    return rc;
  PyObject *list = path_list(paths, n_paths);
  PyObject *res = NULL, *protos = NULL, *impls = NULL, *modules = NULL;
  pb_op *mine = NULL;
  pb_guard guard;
  bool guarded = false;
  if (list == NULL)
    goto py_fail;
  pb_signals_save();
  if (pb_guard_save(&guard) < 0)
    goto py_fail;
  guarded = true;
#ifdef Py_GIL_DISABLED
  bool gil_was_off = pb_gil_enabled() == 0;
#endif
  /* A lane image loads one path at a time: what its earlier paths of the
   * load imported is imported once, as in the main interpreter's load; and
   * an extension module refused there leaves the path serial, however the
   * plugin handled the ImportError (lane_imports.c). */
  if (pb_lanes_image())
    pb_lane_imports_load_begin();
  res = pb_lanes_image() ? PyObject_CallFunctionObjArgs(pb.fn_load, list, pb.lane_seen, NULL)
                         : PyObject_CallOneArg(pb.fn_load, list);
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
  if (pb_lanes_image() && (rc = pb_lane_imports_load_end(PYOP_OK)) != PYOP_OK)
    goto out;
  pb_add_result ar = hand_over(reg, protos, impls, &mine, &rc);
  if (ar == PB_ADD_PY_ERROR)
    goto py_fail;
  if (ar == PB_ADD_REFUSED)
    goto out;
  /* The lanes yielded what this interpreter did (lanes.c), checked before
   * committing: a refusal undoes the load as any failure here does, the
   * import system the plugins changed included. */
  if (!pb_lanes_image() && (rc = pb_lanes_check_all_matched()) != PYOP_OK)
    goto out;
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
  if (pb_lanes_image())
    (void)pb_lane_imports_load_end(PYOP_EINTERNAL); /* ends it, whatever happened */
  if (rc != PYOP_OK) {
    pb_ops_free(mine);
    unload(modules);
  }
  if (guarded) {
    pb_guard_restore(&guard, rc != PYOP_OK);
    pb_guard_free(&guard);
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

/* Every committed load undone, as pb_register's failure undoes its own:
 * the op ctx freed, the modules removed from sys.modules and pb.modules
 * (the list itself is handed to unload: nothing to allocate, so nothing
 * here can fail for lack of memory), the signal dispositions restored. */
void pb_reset_gil(void) {
  assert(PyGILState_Check());
  pb_ops_free(pb.ops);
  pb.ops = NULL;
  if (pb.modules != NULL && PyList_GET_SIZE(pb.modules) > 0) {
    unload(pb.modules);
    if (PyList_SetSlice(pb.modules, 0, PyList_GET_SIZE(pb.modules), NULL) < 0)
      PyErr_Clear();
  }
  pb_signals_restore(); /* no plugin of any load is left */
  if (pb.lane_seen != NULL)
    PyDict_Clear(pb.lane_seen);
  /* Plugin functions and their module globals form cycles. */
  PyGC_Collect();
}
