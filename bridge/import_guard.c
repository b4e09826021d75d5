/*
 * The import guard: what a load relies on in the interpreter and a plugin
 * can break, saved before the plugins run and put back after (see
 * pb_guard, bridge.h).
 */
#include "bridge.h"

#include <stdlib.h>
#include <string.h>

static const char *const guard_lists[2] = {"meta_path", "path_hooks"};

/* "pyop" or "pyop.<anything>" (by length: "pyop\0x" is neither). */
static bool is_package_name(PyObject *k) {
  Py_ssize_t n = 0;
  const char *s = PyUnicode_Check(k) ? PyUnicode_AsUTF8AndSize(k, &n) : NULL;
  if (s == NULL) {
    PyErr_Clear();
    return false;
  }
  return (n == 4 && memcmp(s, "pyop", 4) == 0) || strncmp(s, "pyop.", 5) == 0;
}

/* Releases what g holds (each member may be NULL). */
void pb_guard_free(pb_guard *g) {
  Py_CLEAR(g->modules);
  for (size_t i = 0; i < sizeof guard_lists / sizeof guard_lists[0]; i++)
    Py_CLEAR(g->lists[i]);
  Py_CLEAR(g->importer_cache);
  Py_CLEAR(g->import_fn);
}

/* Saves the state; -1 with an exception. */
int pb_guard_save(pb_guard *g) {
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
  pb_guard_free(g);
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
void pb_guard_restore(const pb_guard *g, bool all) {
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

