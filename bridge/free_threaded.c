/*
 * What only a free-threaded CPython (3.13t, Py_GIL_DISABLED) needs from the
 * bridge: there no GIL serialises what it serialises elsewhere, and CPython
 * behaves differently in two ways libpyop must answer.
 *
 * - Call locks (pb_call_lock): the lock a callback holds while it runs
 *   (taken and given back by holder_lock/holder_unlock, callbacks.c). An
 *   instance has its own, unless its implementation object names an object
 *   it shares with other instances (__pyop_shared__: ge's one object per op
 *   type, ge/custom_op/registry.py): every instance sharing one object then
 *   uses one lock from the table here, so that object too sees one call at
 *   a time (docs/host-guide.md, "Free-threaded Python").
 * - The GIL watch: importing an extension module that does not declare
 *   Py_mod_gil turns the GIL back on for the whole process, at a load or at
 *   any time after it (an import inside execute, a plugin's thread). After a
 *   load the bridge checks at once; after every call it compares the size
 *   of sys.modules with the one it last saw (two loads, no call), and only
 *   when that changed asks CPython. It says so once, naming the extension
 *   modules that are new since it last looked.
 * - Dropped plugin modules: once a second thread has run Python, CPython
 *   3.13t makes every new module, function and class immortal (they use
 *   deferred reference counts, which 3.13 does not yet collect), so a module
 *   pyop_unload drops is never freed, and with it all it holds. The bridge
 *   clears the dicts of the dropped modules that are immortal, unless a
 *   thread a plugin started still runs (it may use them); the module,
 *   function, class and code objects themselves stay (CPython's).
 *
 * In a build with a GIL this file is empty.
 */
#include "bridge.h"

#ifdef Py_GIL_DISABLED

#include <assert.h>
#include <stdio.h>
#include <string.h>

/* ----------------------------------------------------------- call locks */

/* The shared call locks in use (one per shared object), guarded by
 * shared_lock; only create and destroy touch them. */
static PyMutex shared_lock;
static pb_call_lock *shared_list;

/* See bridge.h. */
int pb_call_lock_bind(pb_holder *h) {
  assert(h->lock == &h->own_lock);
  PyObject *key = NULL;
  if (h->self == NULL)
    return 0;
  if (PyObject_GetOptionalAttrString(h->self, "__pyop_shared__", &key) < 0)
    return -1;
  if (key == NULL || key == Py_None) {
    Py_XDECREF(key);
    return 0;
  }
  pb_call_lock *fresh = calloc(1, sizeof *fresh), *l;
  if (fresh == NULL) {
    Py_DECREF(key);
    PyErr_NoMemory();
    return -1;
  }
  PB_MUTEX_LOCK(&shared_lock);
  for (l = shared_list; l != NULL && l->key != key; l = l->next)
    ;
  if (l == NULL) {
    l = fresh;
    l->key = key; /* the table's reference keeps the address unique */
    l->next = shared_list;
    shared_list = l;
    fresh = NULL;
    key = NULL;
  }
  l->users++;
  PB_MUTEX_UNLOCK(&shared_lock);
  free(fresh);
  Py_XDECREF(key);
  h->lock = l;
  return 0;
}

/* See bridge.h. */
void pb_call_lock_unbind(pb_holder *h, bool python) {
  pb_call_lock *l = h->lock;
  h->lock = NULL;
  if (l == NULL || l == &h->own_lock)
    return;
  PB_MUTEX_LOCK(&shared_lock);
  assert(l->users > 0);
  bool last = --l->users == 0;
  if (last) {
    pb_call_lock **p = &shared_list;
    while (*p != l)
      p = &(*p)->next;
    *p = l->next;
  }
  PB_MUTEX_UNLOCK(&shared_lock);
  if (!last)
    return;
  if (python)
    Py_DECREF(l->key); /* may run code: after the table's lock */
  free(l);
}

/* ------------------------------------------------------------ GIL watch */

pb_gil_watch_state pb_gil_watch;

/* The module names of sys.modules when the watch last looked (a set,
 * owned): what is new since is what turned the GIL on; and whether the GIL
 * was reported on (the watch then never runs again until shutdown). Both
 * guarded by watch_lock. */
static PyMutex watch_lock;
static PyObject *watch_known;
static bool watch_reported;

/* See bridge.h. */
int pb_gil_enabled(void) {
  PyObject *fn = PySys_GetObject("_is_gil_enabled"); /* borrowed */
  PyObject *r = fn != NULL ? PyObject_CallNoArgs(fn) : NULL;
  int on = r == NULL ? -1 : PyObject_IsTrue(r);
  Py_XDECREF(r);
  if (on < 0)
    PyErr_Clear();
  return on;
}

/*
 * "'name' (file), ..." of the extension modules in sys.modules that are not
 * in before (a dict or set of names; NULL: every one), with a shared-object
 * file outside CPython's lib-dynload (whose modules all declare Py_mod_gil)
 * into names[size]; returns how many.
 */
static size_t new_extensions(PyObject *before, char *names, size_t size) {
  PyObject *mods = PyImport_GetModuleDict(); /* borrowed */
  PyObject *keys = PyDict_Keys(mods);
  PyObject *std = PySys_GetObject("_stdlib_dir"); /* borrowed */
  const char *stdlib = std != NULL && PyUnicode_Check(std) ? PyUnicode_AsUTF8(std) : NULL;
  char dynload[4096] = "";
  if (stdlib != NULL)
    snprintf(dynload, sizeof dynload, "%s/lib-dynload/", stdlib);
  size_t used = 0, n = 0;
  names[0] = '\0';
  for (Py_ssize_t i = 0; keys != NULL && i < PyList_GET_SIZE(keys); i++) {
    PyObject *k = PyList_GET_ITEM(keys, i);
    if (before != NULL && PySequence_Contains(before, k) != 0)
      continue;
    PyObject *m = NULL; /* a new reference: other threads may change sys.modules */
    PyObject *file = PyDict_GetItemRef(mods, k, &m) > 0 ? PyObject_GetAttrString(m, "__file__")
                                                        : NULL;
    Py_XDECREF(m);
    const char *f = file != NULL && PyUnicode_Check(file) ? PyUnicode_AsUTF8(file) : NULL;
    const char *name = PyUnicode_Check(k) ? PyUnicode_AsUTF8(k) : NULL;
    size_t fl = f != NULL ? strlen(f) : 0;
    if (f != NULL && name != NULL && fl > 3 && strcmp(f + fl - 3, ".so") == 0 &&
        (dynload[0] == '\0' || strncmp(f, dynload, strlen(dynload)) != 0)) {
      int w = snprintf(names + used, size - used, "%s'%s' (%s)", n ? ", " : "", name, f);
      if (w > 0 && (size_t)w < size - used)
        used += (size_t)w;
      n++;
    }
    Py_XDECREF(file);
    PyErr_Clear();
  }
  Py_XDECREF(keys);
  PyErr_Clear();
  return n;
}

/*
 * The warning that the GIL is back on: who turned it on ("loading the
 * plugins"), and the extension modules in sys.modules that are not in
 * before (named as what imported them: "the load imported").
 */
static void warn_gil_enabled(const char *who, PyObject *before, const char *imported) {
  char names[512];
  size_t n = new_extensions(before, names, sizeof names);
  pb_log(PYOP_LOG_WARN,
         "%s turned the GIL of this free-threaded Python back on: %s%s%s%s "
         "not declare that it can run without it (Py_mod_gil), so from now on the Python "
         "ops of all host threads run one at a time. Use a build of it for free-threaded "
         "Python, or set PYTHON_GIL=0 to keep the GIL off at your own risk "
         "(docs/host-guide.md, \"Free-threaded Python\")",
         who, n > 1 ? "an extension module " : n == 1 ? "the extension module " : "",
         n > 1 ? imported : n == 1 ? "" : "an extension module a plugin imported",
         names, n > 1 ? ", does" : " does");
}

/* Looks at sys.modules now: its names and size become what later calls
 * compare with, and the watch runs. Called with the GIL off. */
static void watch_arm(PyObject *mods) {
  Py_ssize_t size = PyDict_GET_SIZE(mods); /* before the copy: a change re-checks */
  PyObject *known = PySet_New(mods);
  if (known == NULL) {
    PyErr_Clear();
    return; /* not watched: no false report either */
  }
  PB_MUTEX_LOCK(&watch_lock);
  PyObject *old = known;
  if (!watch_reported) { /* else another thread saw the GIL on meanwhile */
    old = watch_known;
    watch_known = known;
    atomic_store(&pb_gil_watch.size, size);
    atomic_store(&pb_gil_watch.modules, mods);
  }
  PB_MUTEX_UNLOCK(&watch_lock);
  Py_XDECREF(old);
}

/* Stops the watch, for good when reported (else until the next arm);
 * returns the names it knew (owned, may be NULL) and in *first whether
 * this call is the one that reports. */
static PyObject *watch_disarm(bool reported, bool *first) {
  PB_MUTEX_LOCK(&watch_lock);
  PyObject *known = watch_known;
  watch_known = NULL;
  atomic_store(&pb_gil_watch.modules, NULL);
  if (first != NULL)
    *first = !watch_reported;
  watch_reported = reported;
  PB_MUTEX_UNLOCK(&watch_lock);
  return known;
}

/* See bridge.h. */
void pb_gil_watch_load(PyObject *before) {
  if (pb_gil_enabled() != 1) {
    watch_arm(PyImport_GetModuleDict());
    return;
  }
  Py_XDECREF(watch_disarm(true, NULL));
  warn_gil_enabled("loading the plugins", before, "the load imported, one of ");
}

/* The GIL is on after a call of kind of op: one thread reports it (the one
 * that stops the watch), naming what is new since the watch last looked. */
static void watch_report(int kind, const pb_op *op) {
  bool mine = false;
  PyObject *known = watch_disarm(true, &mine);
  if (mine) {
    char who[256];
    snprintf(who, sizeof who, "a plugin, after the load (seen after %s of op '%s'),",
             kind >= 0 && kind < PB_NKINDS ? pb_kind_names[kind] : "creating an instance",
             op != NULL ? op->op_type : "?");
    warn_gil_enabled(who, known, "imported since, one of ");
  }
  Py_XDECREF(known);
}

/* See bridge.h. */
void pb_gil_watch_changed(int kind, const pb_op *op) {
  PyObject *mods = atomic_load(&pb_gil_watch.modules);
  if (mods == NULL)
    return;
  PyObject *exc = pb_exc_fetch(); /* the call's, if one is pending */
  int on = pb_gil_enabled();
  if (on == 0)
    watch_arm(mods);
  if (on == 1)
    watch_report(kind, op);
  pb_exc_restore(exc);
}

/* See bridge.h. */
void pb_gil_watch_stop(bool python) {
  PyObject *known = watch_disarm(false, NULL);
  if (python)
    Py_XDECREF(known);
}

/* ------------------------------------------------------ dropped modules */

/*
 * Whether a Python thread other than this one and the main thread, and not
 * a host thread Python only knows of (a threading._DummyThread), has
 * started or still runs: a plugin's, whose code may still use the globals
 * of its modules. Read from threading's own tables (never calling
 * threading.enumerate, which a plugin may have replaced); true when it
 * cannot be told.
 */
static bool plugin_threads_alive(void) {
  static const char src[] =
      "def alive():\n"
      "    import sys\n"
      "    threading = sys.modules.get('threading')\n"
      "    if threading is None:\n"
      "        return False\n"
      "    me, main = threading.get_ident(), threading._main_thread\n"
      "    for t in list(threading._active.values()) + list(threading._limbo):\n"
      "        if t is not main and t.ident != me and \\\n"
      "                not isinstance(t, threading._DummyThread):\n"
      "            return True\n"
      "    return False\n";
  PyObject *g = PyDict_New(), *r = NULL, *res = NULL;
  if (g != NULL && PyDict_SetItemString(g, "__builtins__", PyEval_GetBuiltins()) == 0)
    r = PyRun_String(src, Py_file_input, g, g);
  PyObject *fn = r != NULL ? PyDict_GetItemString(g, "alive") : NULL; /* borrowed */
  if (fn != NULL)
    res = PyObject_CallNoArgs(fn);
  int alive = res != NULL ? PyObject_IsTrue(res) : -1;
  Py_XDECREF(res);
  Py_XDECREF(r);
  Py_XDECREF(g);
  PyErr_Clear();
  return alive != 0;
}

/* See bridge.h. */
void pb_modules_release(PyObject *modules) {
  if (modules == NULL || !PyList_Check(modules))
    return;
  Py_ssize_t n = 0;
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(modules); i++) {
    PyObject *m = PyList_GET_ITEM(modules, i);
    n += PyModule_Check(m) && _Py_IsImmortal(m);
  }
  if (n == 0)
    return;
  if (plugin_threads_alive()) {
    pb_log(PYOP_LOG_DEBUG, "%zd dropped module(s) kept whole: a Python thread a plugin "
           "started is still running and may use them (this free-threaded Python made them "
           "immortal: their memory stays)", n);
    return;
  }
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(modules); i++) {
    PyObject *m = PyList_GET_ITEM(modules, i);
    PyObject *d = PyModule_Check(m) && _Py_IsImmortal(m) ? PyModule_GetDict(m) : NULL;
    if (d != NULL)
      PyDict_Clear(d); /* runs what its values' destructors do */
  }
  PyErr_Clear();
}

#endif /* Py_GIL_DISABLED */
