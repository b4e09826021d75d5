/*
 * The lanes kept across shutdown (docs/design.md §Lanes, "Kept lanes").
 *
 * CPython gives back nothing of an ended sub-interpreter with its own GIL
 * (its allocator's arenas stay mapped: ~4-5 MB per lane), so a process
 * that ended its lanes at every pyop_shutdown and started new ones at the
 * next pyop_load grew by that much per lane and cycle. Like the Python
 * libpyop starts, which shutdown leaves initialised and the next load
 * uses, a lane's sub-interpreter outlives shutdown: its image shuts down
 * (plugins, pyop package and every thread state it kept gone, as for the
 * main interpreter), and the interpreter, with the state it was made with
 * (ts0), is kept in the pool for the next main image, which takes the kept
 * lanes up in their order with new images of its own (lane_start.c).
 *
 * The pool outlives the main image that fills it (libpyop closes that at
 * shutdown): a record in C memory, named by a capsule in the main
 * interpreter's state dict (PB_POOL_KEY; the key says the record's
 * version). A record another process made (the parent of a fork) is never
 * taken up or ended: after os.fork CPython itself deleted those
 * interpreters in the child, and a C fork's child must not end what it
 * only has a copy of.
 *
 * A host that finalizes Python after shutdown must find the kept lanes
 * ended first (Py_FinalizeEx of 3.12 aborts, "remaining subinterpreters",
 * when one is left), so the pool registers an exit hook in the main
 * interpreter's atexit: a builtin function whose code must stay mapped
 * while it is registered, so it is the code of one of the kept lanes'
 * images (their last images stay mapped while they are kept: pool_put
 * finds this file's function at the same offset in that byte-for-byte
 * copy of this image, and checks it). It ends every kept lane (waiting for
 * its non-daemon Python threads, as Py_FinalizeEx waits for the main
 * interpreter's), then closes the other images; its own stays mapped.
 * Taking the pool up unregisters the hook first. A hook registered while
 * atexit already runs (pyop_shutdown from an atexit callback) is not run
 * in that pass: 3.13's Py_FinalizeEx then ends the sub-interpreters left
 * itself, 3.12's would abort, so lanes.c (keep_lanes) keeps lanes on 3.12
 * only in a Python libpyop started.
 */
#include "lanes.h"

#ifdef PB_LANES

#include <dlfcn.h>
#include <link.h>
#include <unistd.h>

#define PB_POOL_KEY "pyop.bridge.lane_pool.1"

typedef struct pool_lane {
  PyInterpreterState *interp;
  int64_t interp_id;
  PyThreadState *ts0;
  pthread_t ts0_thread;
  void *handle; /* its last image, shut down, or NULL */
  int fd;       /* that image's memfd, or -1 */
} pool_lane;

typedef struct pb_pool {
  size_t size;         /* sizeof(pb_pool) */
  /* The capsule's name (PB_POOL_KEY): a capsule keeps the pointer, and
   * this main image's constants go when libpyop closes it. */
  char name[sizeof PB_POOL_KEY];
  pid_t pid;           /* the process that kept the lanes */
  PyObject *hook;      /* the registered exit hook (owned), or NULL */
  uint32_t hook_lane;  /* the lane whose image holds the hook's code */
  uint32_t n;
  pool_lane lane[PYOP_MAX_LANES];
} pb_pool;

/* See lanes.h. */
void pb_lane_end(PyInterpreterState *interp, PyThreadState *ts0, pthread_t ts0_thread) {
  /* On ts0's thread ts0 ends the interpreter (threading's main thread is
   * ts0: its _shutdown releases ts0's lock). On another thread a state of
   * this thread does, ts0 deleted first (threading then ignores its main
   * thread, and 3.12 hangs ending an interpreter with a live state made on
   * another thread). */
  PyThreadState *ts = ts0;
  if (!pthread_equal(ts0_thread, pthread_self())) {
    ts = PyThreadState_New(interp);
    if (ts == NULL) {
      ts = ts0;
    } else {
      PyEval_RestoreThread(ts);
      PyThreadState_Clear(ts0);
      PyThreadState_Delete(ts0);
      (void)PyEval_SaveThread();
    }
  }
  PyEval_RestoreThread(ts);
  Py_EndInterpreter(ts); /* leaves no state attached */
}

/* Whether interp is still one of the process's interpreters, with the same
 * id (an id is never reused; an address may be). */
static bool interp_alive(PyInterpreterState *interp, int64_t id) {
  for (PyInterpreterState *i = PyInterpreterState_Head(); i != NULL;
       i = PyInterpreterState_Next(i))
    if (i == interp)
      return PyInterpreterState_GetID(i) == id;
  return false;
}

/* Closes p's image (dlclose, close), if any. */
static void pool_lane_close(pool_lane *p) {
  if (p->handle != NULL)
    dlclose(p->handle);
  if (p->fd >= 0)
    close(p->fd);
  p->handle = NULL;
  p->fd = -1;
}

/* atexit.register(fn) or .unregister(fn) (what: the method's name): 0, or
 * -1 with an exception. */
static int atexit_call(const char *what, PyObject *fn) {
  PyObject *m = PyImport_ImportModule("atexit");
  PyObject *r = m != NULL ? PyObject_CallMethod(m, what, "O", fn) : NULL;
  Py_XDECREF(m);
  Py_XDECREF(r);
  return r != NULL ? 0 : -1;
}

/* Removes the pool's capsule from the main interpreter's state dict when it
 * is c (GIL held; no exception left). */
static void dict_forget(PyObject *c) {
  PyObject *d = PyInterpreterState_GetDict(PyInterpreterState_Get());
  if (d != NULL && PyDict_GetItemString(d, PB_POOL_KEY) == c &&
      PyDict_DelItemString(d, PB_POOL_KEY) < 0)
    PyErr_Clear();
}

/*
 * The exit hook (self: the pool's capsule), run by atexit when the host
 * finalizes Python (or calls atexit._run_exitfuncs), on the finalizing
 * thread with the main interpreter's state attached. Runs in a kept
 * lane's image: touches nothing of that image's own state.
 */
static PyObject *pool_end_all(PyObject *self, PyObject *unused) {
  (void)unused;
  pb_pool *pool = PyCapsule_GetPointer(self, PB_POOL_KEY);
  if (pool == NULL || PyCapsule_GetContext(self) == NULL) {
    PyErr_Clear();
    Py_RETURN_NONE; /* taken up by a load, or ended already */
  }
  PyCapsule_SetContext(self, NULL);
  dict_forget(self);
  if (pool->pid == getpid()) {
    PyThreadState *main = PyEval_SaveThread();
    for (uint32_t k = 0; k < pool->n; k++) {
      pool_lane *p = &pool->lane[k];
      if (interp_alive(p->interp, p->interp_id))
        pb_lane_end(p->interp, p->ts0, p->ts0_thread);
    }
    PyEval_RestoreThread(main);
    for (uint32_t k = 0; k < pool->n; k++) {
      if (k == pool->hook_lane)
        pool->lane[k].handle = NULL; /* this code's image: it stays mapped */
      pool_lane_close(&pool->lane[k]);
    }
  }
  PyObject *hook = pool->hook;
  free(pool);
  Py_XDECREF(hook); /* atexit holds its own reference while calling */
  Py_RETURN_NONE;
}

static PyMethodDef pool_hook_def = {"_pyop_end_kept_lanes", pool_end_all, METH_NOARGS,
                                    "Ends the interpreter lanes libpyop kept across "
                                    "pyop_shutdown (an exit hook)."};

/* The load bias of the object holding addr, or 0 (none found). */
static uintptr_t bias_of(const void *addr, struct link_map **map) {
  Dl_info info;
  *map = NULL;
  if (dladdr1(addr, &info, (void **)map, RTLD_DL_LINKMAP) == 0 || *map == NULL)
    return 0;
  return (uintptr_t)(*map)->l_addr;
}

/*
 * The exit hook as a function whose code is in image (a copy of this very
 * image's file, loaded elsewhere): this image's pool_hook_def moved by the
 * difference of the two load biases, checked to lie in that image and to
 * be the same definition there. New reference, or NULL with an exception.
 */
static PyObject *hook_in(void *image, PyObject *capsule) {
  struct link_map *there = NULL, *here = NULL, *found = NULL;
  if (dlinfo(image, RTLD_DI_LINKMAP, &there) != 0 || there == NULL ||
      bias_of(&pool_hook_def, &here) == 0 || here == there) {
    PyErr_SetString(PyExc_RuntimeError, "cannot locate the kept lane's bridge image");
    return NULL;
  }
  uintptr_t delta = (uintptr_t)there->l_addr - (uintptr_t)here->l_addr;
  PyMethodDef *def = (PyMethodDef *)((uintptr_t)&pool_hook_def + delta);
  PyCFunction fn = (PyCFunction)((uintptr_t)pool_end_all + delta);
  (void)bias_of(def, &found);
  if (found != there || def->ml_meth != fn || def->ml_flags != METH_NOARGS ||
      def->ml_name == NULL || strcmp(def->ml_name, pool_hook_def.ml_name) != 0) {
    PyErr_SetString(PyExc_RuntimeError, "the kept lane's bridge image is not a copy of this "
                                        "one");
    return NULL;
  }
  return PyCFunction_New(def, capsule);
}

/* Fills a new pool from lanes[0..n) (those with an interpreter). */
static pb_pool *pool_new(const pb_lane *lanes, uint32_t n) {
  pb_pool *pool = calloc(1, sizeof *pool);
  if (pool == NULL)
    return NULL;
  pool->size = sizeof *pool;
  memcpy(pool->name, PB_POOL_KEY, sizeof PB_POOL_KEY);
  pool->pid = getpid();
  pool->hook_lane = UINT32_MAX;
  for (uint32_t k = 0; k < n; k++) {
    const pb_lane *l = &lanes[k];
    if (l->interp == NULL)
      continue;
    if (pool->hook_lane == UINT32_MAX && l->handle != NULL)
      pool->hook_lane = pool->n;
    pool->lane[pool->n++] =
        (pool_lane){l->interp, l->interp_id, l->ts0, l->ts0_thread, l->handle, l->fd};
  }
  return pool;
}

/* See lanes.h. */
int pb_lane_pool_put(const pb_lane *lanes, uint32_t n) {
  pb_pool *pool = pool_new(lanes, n);
  if (pool == NULL) {
    pb_log(PYOP_LOG_WARN, "lanes: out of memory keeping them for the next load: they are "
                          "ended");
    return PYOP_ENOMEM;
  }
  if (pool->n == 0) {
    free(pool);
    return PYOP_OK;
  }
  PyObject *d = PyInterpreterState_GetDict(PyInterpreterState_Get());
  PyObject *capsule = NULL, *hook = NULL;
  const char *why = NULL;
  if (pool->hook_lane == UINT32_MAX)
    why = "no kept lane has a bridge image to run the exit hook in";
  else if (d == NULL || PyDict_GetItemString(d, PB_POOL_KEY) != NULL)
    why = "the main interpreter's state dict is missing or already holds kept lanes";
  if (why == NULL) {
    capsule = PyCapsule_New(pool, pool->name, NULL);
    if (capsule != NULL && PyCapsule_SetContext(capsule, pool) == 0)
      hook = hook_in(pool->lane[pool->hook_lane].handle, capsule);
    if (hook != NULL && atexit_call("register", hook) == 0) {
      if (PyDict_SetItemString(d, PB_POOL_KEY, capsule) == 0) {
        pool->hook = hook;
        Py_DECREF(capsule);
        return PYOP_OK;
      }
      PyObject *exc = pb_exc_fetch();
      (void)atexit_call("unregister", hook);
      PyErr_Clear();
      pb_exc_restore(exc);
    }
  }
  char *text = NULL;
  if (why == NULL) {
    PyObject *exc = pb_exc_fetch();
    text = exc != NULL ? pb_describe_exception(exc) : NULL;
    Py_XDECREF(exc);
  }
  pb_log(PYOP_LOG_WARN, "lanes: cannot keep them for the next load (%s): they are ended",
         why != NULL ? why : text != NULL ? text : "unknown error");
  free(text);
  if (capsule != NULL)
    PyCapsule_SetContext(capsule, NULL);
  Py_XDECREF(hook);
  Py_XDECREF(capsule);
  free(pool);
  return PYOP_ESTATE;
}

/* See lanes.h. */
uint32_t pb_lane_pool_take(pb_lane *out, uint32_t max) {
  PyObject *d = PyInterpreterState_GetDict(PyInterpreterState_Get());
  PyObject *c = d != NULL ? PyDict_GetItemString(d, PB_POOL_KEY) : NULL; /* borrowed */
  if (c == NULL || !PyCapsule_IsValid(c, PB_POOL_KEY) || PyCapsule_GetContext(c) == NULL)
    return 0;
  pb_pool *pool = PyCapsule_GetPointer(c, PB_POOL_KEY);
  if (pool == NULL || pool->size != sizeof *pool) {
    PyErr_Clear();
    return 0;
  }
  Py_INCREF(c);
  PyCapsule_SetContext(c, NULL);
  dict_forget(c);
  if (pool->hook != NULL && atexit_call("unregister", pool->hook) < 0) {
    /* Still registered: the hook (which now does nothing) keeps its code,
     * so its image is never closed. */
    PyErr_Clear();
    if (pool->hook_lane < pool->n)
      pool->lane[pool->hook_lane].handle = NULL;
  }
  Py_CLEAR(pool->hook);
  Py_DECREF(c);
  uint32_t got = 0;
  bool ours = pool->pid == getpid();
  for (uint32_t k = 0; k < pool->n && ours; k++) {
    pool_lane *p = &pool->lane[k];
    if (got < max && interp_alive(p->interp, p->interp_id))
      out[got++] = (pb_lane){.interp = p->interp, .interp_id = p->interp_id, .ts0 = p->ts0,
                             .ts0_thread = p->ts0_thread, .handle = p->handle, .fd = p->fd};
    else
      pool_lane_close(p); /* its interpreter is gone: nothing runs its image */
  }
  free(pool);
  return got;
}

#endif /* PB_LANES */
