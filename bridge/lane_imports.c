/*
 * What the image of an interpreter lane watches while its sub-interpreter
 * imports (docs/design.md §Lanes; the record itself: pyop/_lanes.py).
 *
 * A lane refuses extension modules that do not support a sub-interpreter
 * with its own GIL; a plugin may catch that ImportError and go on without
 * the module (the optional-extension pattern), or import it lazily, inside
 * execute. Either way the lane would not run what the main interpreter
 * runs. The image records every such refusal and:
 *   - after a path element's load: any refusal leaves the element serial
 *     (PYOP_EUNSUPPORTED from register_custom_ops, the reason naming the
 *     module), whatever the plugin did with the ImportError;
 *   - when a call fails: a refusal recorded since the last look makes the
 *     failure PB_STATUS_LANE_REFUSED, which the main image's dispatcher
 *     takes as "run this op in the main interpreter" (lane_calls.c);
 *   - when a call succeeds: a refusal recorded since the last look (the
 *     plugin caught the ImportError inside execute or its constructor)
 *     makes it PB_STATUS_LANE_CAUGHT: the dispatcher keeps the call's
 *     result and runs the op in the main interpreter from then on.
 * Only in a lane's image; the main image never records.
 *
 * Also here: the extension gate (lanes.h), which the wrappers of both kinds
 * of image take around every extension module they make: a lane image's
 * (pb_lane_imports_watch) and, while lanes serve, the main image's for the
 * main interpreter (pb_lane_imports_gate_main). The gate is an import lock,
 * held across the module's init (Python code) on purpose; no libpyop lock
 * is taken with it.
 */
#include "lanes.h"

#include <stdatomic.h>
#include <unistd.h>

#ifdef PB_LANES

/* Whether a load of this image is in progress (its refusals are the load's,
 * not a call's). One loading thread at a time (a worker of lane_start.c). */
static bool loading;

/* pyop._lanes.fn() (new reference), or NULL with an exception. */
static PyObject *lanes_call(const char *fn) {
  PyObject *m = PyImport_ImportModule("pyop._lanes");
  PyObject *r = m != NULL ? PyObject_CallMethod(m, fn, NULL) : NULL;
  Py_XDECREF(m);
  return r;
}

/* ------------------------------------------------ the extension gate */

pb_ext_gate pb_ext_gate_main = {.mu = PTHREAD_MUTEX_INITIALIZER, .freed = PTHREAD_COND_INITIALIZER};

/* The gate this image takes: a lane image's main image's (set_config),
 * the main image's own once its lanes load (pb_lane_imports_gate_main). */
static pb_ext_gate *gate;

void pb_lane_imports_gate(pb_ext_gate *g) { gate = g; }

/* This interpreter's key in the gate: its id + 1 (0 is "free"). */
static int64_t gate_key(void) {
  return PyInterpreterState_GetID(PyInterpreterState_Get()) + 1;
}

/* In a fork's child the gate's state is the parent's at the fork: the
 * first to enter starts it afresh (the holder may be a thread the child
 * does not have). */
static void gate_after_fork(pb_ext_gate *g) {
  pid_t seen = atomic_load(&g->pid), now = getpid();
  if (seen == now || !atomic_compare_exchange_strong(&g->pid, &seen, now))
    return;
  pthread_mutex_init(&g->mu, NULL);
  pthread_cond_init(&g->freed, NULL);
  g->owner = 0;
  g->depth = 0;
}

/* pyop._lanes's wrappers call these around making an extension module. The
 * wait runs with this interpreter's GIL released: another of its threads
 * may hold the gate and need the GIL to leave it. */
static PyObject *gate_enter(PyObject *self, PyObject *unused) {
  (void)self, (void)unused;
  pb_ext_gate *g = gate;
  if (g != NULL) {
    int64_t me = gate_key();
    gate_after_fork(g);
    Py_BEGIN_ALLOW_THREADS
    pthread_t self = pthread_self();
    pthread_mutex_lock(&g->mu);
    while (g->owner != 0 && g->owner != me && !pthread_equal(g->thread, self))
      pthread_cond_wait(&g->freed, &g->mu);
    if (g->owner == 0) {
      g->owner = me;
      g->thread = self;
    }
    g->depth++;
    pthread_mutex_unlock(&g->mu);
    Py_END_ALLOW_THREADS
  }
  Py_RETURN_NONE;
}

static PyObject *gate_leave(PyObject *self, PyObject *unused) {
  (void)self, (void)unused;
  pb_ext_gate *g = gate;
  if (g != NULL) {
    int64_t me = gate_key();
    pthread_mutex_lock(&g->mu);
    bool mine = g->owner == me || (g->owner != 0 && pthread_equal(g->thread, pthread_self()));
    if (mine && g->depth > 0 && --g->depth == 0) {
      g->owner = 0;
      pthread_cond_broadcast(&g->freed);
    }
    pthread_mutex_unlock(&g->mu);
  }
  Py_RETURN_NONE;
}

static PyMethodDef gate_defs[] = {
    {"gate_enter", gate_enter, METH_NOARGS, NULL},
    {"gate_leave", gate_leave, METH_NOARGS, NULL},
};

/* pyop._lanes.fn(enter, leave) with this image's gate functions (new
 * reference), or NULL with an exception. */
static PyObject *lanes_call_gated(const char *fn) {
  PyObject *enter = PyCFunction_New(&gate_defs[0], NULL);
  PyObject *leave = enter != NULL ? PyCFunction_New(&gate_defs[1], NULL) : NULL;
  PyObject *m = leave != NULL ? PyImport_ImportModule("pyop._lanes") : NULL;
  PyObject *r = m != NULL ? PyObject_CallMethod(m, fn, "OO", enter, leave) : NULL;
  Py_XDECREF(m);
  Py_XDECREF(enter);
  Py_XDECREF(leave);
  return r;
}

/* Whether this main image put the main interpreter behind the gate. */
static bool main_gated;

int pb_lane_imports_gate_main(void) {
  if (main_gated)
    return PYOP_OK;
  /* Before any lane runs: free, whatever a thread that entered it before
   * an earlier drop of this image's package left (its wrapper does not give
   * back a gate no longer set, pyop/_lanes.py). */
  atomic_store(&pb_ext_gate_main.pid, getpid());
  pthread_mutex_lock(&pb_ext_gate_main.mu);
  pb_ext_gate_main.owner = 0;
  pb_ext_gate_main.depth = 0;
  pthread_cond_broadcast(&pb_ext_gate_main.freed);
  pthread_mutex_unlock(&pb_ext_gate_main.mu);
  gate = &pb_ext_gate_main;
  PyObject *r = lanes_call_gated("gate_main");
  if (r == NULL) {
    gate = NULL;
    return pb_error_python(PYOP_EPYTHON, "lanes: putting the main interpreter's extension "
                                         "modules behind the lanes' gate failed");
  }
  Py_DECREF(r);
  main_gated = true;
  return PYOP_OK;
}

int pb_lane_imports_watch(void) {
  PyObject *r = lanes_call_gated("install");
  if (r != NULL && !PyList_Check(r)) {
    PyErr_SetString(PyExc_TypeError, "pyop._lanes.install() did not return a list");
    Py_CLEAR(r);
  }
  Py_XSETREF(pb.lane_refused, r); /* released with the package (pb_package_drop) */
  return r != NULL ? 0 : -1;
}

void pb_lane_imports_unwatch(void) {
  if (!pb_lanes_image() && !main_gated)
    return;
  /* The wrappers outlive this image (they live on _imp): they must not
   * call its functions once it is closed. */
  PyObject *imp = PyImport_ImportModule("_imp");
  if (imp == NULL || PyObject_SetAttrString(imp, "_pyop_gate", Py_None) < 0)
    PyErr_Clear();
  Py_XDECREF(imp);
  main_gated = false;
}

/* The refusals recorded since the last look, taken, as text ("extension
 * module 'x' (ImportError: ...)", the first two and how many more), or
 * NULL when none. GIL held; no exception is left. */
static char *take_refused(void) {
  PyObject *r = lanes_call("take");
  char *out = NULL;
  Py_ssize_t n = r != NULL && PyList_Check(r) ? PyList_GET_SIZE(r) : 0;
  for (Py_ssize_t i = 0; i < n && i < 2; i++) {
    const char *name = NULL, *why = NULL;
    PyObject *item = PyList_GET_ITEM(r, i);
    if (!PyArg_ParseTuple(item, "ss", &name, &why))
      break;
    char *more = pb_strdupf("%s%sextension module '%s' (%s)", out != NULL ? out : "",
                            out != NULL ? ", " : "", name, why);
    free(out);
    out = more;
  }
  if (out != NULL && n > 2) {
    char *more = pb_strdupf("%s and %zd more", out, (Py_ssize_t)(n - 2));
    free(out);
    out = more;
  }
  if (n > 0 && out == NULL)
    out = pb_strdupf("an extension module");
  Py_XDECREF(r);
  PyErr_Clear();
  return out;
}

void pb_lane_imports_load_begin(void) {
  loading = true;
  free(take_refused()); /* what came before is not this load's */
}

int pb_lane_imports_load_end(int rc) {
  /* PYOP_OK: the check before the load hands its descriptors over, which
   * is still the load (converting one runs plugin code: a Python error
   * there is the load's PYOP_EPYTHON, not a call's refusal); any other rc
   * ends it. */
  if (rc != PYOP_OK) {
    loading = false;
  }
  char *why = take_refused();
  if (why == NULL || rc != PYOP_OK) {
    free(why);
    return rc;
  }
  rc = pb_error(PYOP_EUNSUPPORTED,
                "the plugins imported %s, which cannot be imported in an interpreter lane, "
                "and went on without it: in the main interpreter they run with it",
                why);
  free(why);
  return rc;
}

int pb_lane_imports_status(int status) {
  if (loading || status != PYOP_EPYTHON)
    return status;
  char *why = take_refused();
  if (why == NULL)
    return status;
  free(why);
  return PB_STATUS_LANE_REFUSED;
}

int pb_lane_imports_done(int status) {
  if (loading || status != PYOP_OK || pb.lane_refused == NULL ||
      PyList_GET_SIZE(pb.lane_refused) == 0)
    return status;
  char *why = take_refused();
  if (why == NULL)
    return status;
  pb_error(PB_STATUS_LANE_CAUGHT, "the plugin caught the ImportError of %s and went on without it",
           why);
  free(why);
  return PB_STATUS_LANE_CAUGHT;
}

#else
int pb_lane_imports_watch(void) { return 0; }
void pb_lane_imports_unwatch(void) {}
void pb_lane_imports_load_begin(void) {}
int pb_lane_imports_load_end(int rc) { return rc; }
int pb_lane_imports_status(int status) { return status; }
int pb_lane_imports_done(int status) { return status; }
#endif /* PB_LANES */
