/*
 * Interpreter lanes (bridge ABI 1.6, docs/design.md §Lanes): Python ops of
 * different instances run in parallel in sub-interpreters that have their
 * own GIL (CPython 3.12+, GIL builds).
 *
 * One image per lane. Everything the bridge keeps about Python (pb, the
 * kept thread states, pyop._native and its types, the op ctxs) belongs to
 * one interpreter. Rather than carry a lane through every access, each lane
 * runs its own image of this bridge: a copy of the very file that is
 * loaded (checked to be the mapped one, by device and inode), in a sealed
 * memfd, dlopened from /proc/self/fd. A copy has its own globals and TLS,
 * and its Py* symbols resolve against the one libpython of the process.
 * The main image (the one libpyop loaded) starts the lanes at the first
 * register_custom_ops (lane_start.c: in parallel, taking up first the
 * lanes an earlier main image kept, lane_pool.c), configures each image to
 * adopt its sub-interpreter (the private flag PB_CONFIG_LANE: set_config on
 * a thread with the lane's state attached), and talks to it through its
 * API table, as libpyop talks to the main image. Nothing of a lane image
 * is reachable by libpyop.
 *
 * A load: each lane imports each ASCEND_CUSTOM_OPP_PATH element on its own
 * (the unit that may stay serial; the lanes at the same time, on workers),
 * handing its descriptors to a collecting registrar here; then the main
 * interpreter's load runs as without lanes.
 * Each of its descriptors runs in lanes when every lane yielded the same one
 * (kind, op type, descriptor key, caps, from the same path element, of the
 * same compiled sources: its code digest): its callbacks become
 * dispatchers that keep, per holder, which image's callbacks and holder
 * serve it (create_holder_in: lane n; create_holder: the main interpreter).
 * An element whose import raised ImportError in a lane, or refused an
 * import the plugin went on without (an extension that refuses
 * sub-interpreters: numpy, single-phase modules, _ctypes on 3.12; the lane
 * image answers PYOP_EUNSUPPORTED for it, lane_imports.c), or that a lane
 * compiled from other sources, leaves its descriptors serial with the lane
 * and the reason. Any other failure in a lane, a descriptor a lane does not
 * yield, or one only a lane yields, fails the load naming the lane, the
 * plugin and the error.
 *
 * Thread states: a lane image keeps one per host thread for its
 * sub-interpreter (gil.c: PyThreadState_New, never PyGILState); entering a
 * lane from a thread that has the main interpreter attached detaches that
 * state and attaches it again after; what a lane calls out to libpyop runs
 * with the host's states again (lane_calls.c, with the dispatchers). Reset
 * drops every lane's plugins; shutdown shuts every lane's image down (it
 * deletes every thread state it kept) and keeps the lanes' interpreters for
 * the next load (lane_pool.c), which gives each a new image.
 *
 * Where this Python cannot have lanes (older than 3.12: one GIL for every
 * interpreter; free-threaded: its threads run Python in parallel without
 * them) the bridge accepts the configuration, logs one warning naming the
 * reason at set_config, and every view says lanes 0 with that reason
 * (docs/host-guide.md, "Python ops in parallel").
 *
 * Lane images never run lanes themselves. Every function here runs on the
 * loading thread under libpyop's lifecycle call, except the dispatchers
 * (any thread, no GIL), the collecting registrar and the image copy (a
 * worker of lane_start.c, for its own lane).
 */
#include "lanes.h"

#include <assert.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "../src/lanes_floor.h"

/* Set by set_config (the loader calls it before any other entry, on one
 * thread); read by the load. */
static uint32_t lanes_asked;
static bool lane_image;
/* Why no lane runs although this Python could have them, or "": a CPython
 * bug of the running version (set_config), or the lanes could not start in
 * this process (lanes_unavailable, at the first load; until set_config). */
static char lanes_refused[512];

/*
 * The test seam (docs/design.md §Lanes): PYOP_TEST_LANES, words separated
 * by commas, read at set_config and ignored under secure execution
 * (secure_getenv). "force": lanes even on a CPython that cannot end them
 * safely (tests that never end Python run the lanes code there); the
 * others are read where they act (no-proc, no-memfd below; fail-start-N in
 * lane_start.c).
 */
/* Why no lane can run in this Python, or NULL when lanes can. */
static const char *lanes_impossible(void) {
#if PY_VERSION_HEX < 0x030C0000
  return "Python " PB_XSTR(PY_MAJOR_VERSION) "." PB_XSTR(PY_MINOR_VERSION)
         " has no per-interpreter GIL (lanes need CPython 3.12.4 or later)";
#elif defined(Py_GIL_DISABLED)
  return "this Python is free-threaded (no GIL: its threads run Python in parallel "
         "without lanes)";
#else
  return NULL;
#endif
}

#ifdef PB_LANES
/*
 * Fills lanes_refused when the running CPython cannot end a sub-interpreter
 * with its own GIL safely. 3.12.0 - 3.12.3: an extension function (one of
 * a shared-library module: math, _struct, _hashlib, which hashlib calls at
 * import) first called with keyword arguments in a sub-interpreter keeps a
 * tuple allocated there; once that interpreter ended, the process crashes
 * when Python finalizes, or sooner (CPython gh-119213, fixed in 3.12.4).
 * No plugin can be kept from such a call, so there lanes stay off.
 */
static void check_running_cpython(void) {
  unsigned long v = Py_Version;
  if (pyop__lanes_unsafe_end(v))
    snprintf(lanes_refused, sizeof lanes_refused,
             "CPython %lu.%lu.%lu cannot end a sub-interpreter safely: an extension function "
             "first called with keyword arguments in one leaves that interpreter's objects "
             "behind, which crash the process when Python finalizes (CPython gh-119213, fixed "
             "in 3.12.4): lanes need CPython 3.12.4 or later",
             (v >> 24) & 0xff, (v >> 16) & 0xff, (v >> 8) & 0xff);
}
#else
static void check_running_cpython(void) {}
#endif

/* Why no lane runs in this process, or NULL when lanes can. */
static const char *lanes_off(void) {
  const char *why = lanes_impossible();
  return why != NULL ? why : lanes_refused[0] != '\0' ? lanes_refused : NULL;
}


/* What happens to the Python ops when the lanes asked for do not run. */
static const char *without_lanes(void) {
#ifdef Py_GIL_DISABLED
  return "the Python ops run in the main interpreter, those of different op instances in "
         "parallel";
#else
  return "every Python op runs serially in the main interpreter";
#endif
}
/* ------------------------------------------------------------- config */

int pb_lanes_configure(const pyop_bridge_config *config) {
  uint32_t n = config->lanes; /* 0 when the loader's config has none (pb_take_config) */
  if (n > PYOP_MAX_LANES)
    return pb_error(PYOP_EINVAL, "bridge set_config: lanes %" PRIu32 " is out of range (0..%u)",
                    n, PYOP_MAX_LANES);
  if (config->flags & PB_CONFIG_LANE) {
    /* A lane image: its interpreter is the one attached here. */
    PyThreadState *ts = pb_attached_tstate();
    if (ts == NULL || n != 0)
      return pb_error(PYOP_EINVAL, "bridge set_config: a lane image needs its interpreter "
                                   "attached and no lanes of its own");
    lane_image = true;
    pb_gil_set_home(PyThreadState_GetInterpreter(ts));
#ifdef PB_LANES
    const pyop_loader_services *s = pb.services_given;
    pb_lane_imports_gate(s != NULL && s->struct_size >= sizeof(pb_lane_services)
                             ? ((const pb_lane_services *)s)->gate
                             : NULL);
#endif
    return PYOP_OK;
  }
  lanes_asked = n;
  lanes_refused[0] = '\0';
  if (n && lanes_impossible() == NULL)
    check_running_cpython();
  if (lanes_refused[0] != '\0' && pb_lanes_test_seam("force")) {
    pb_log(PYOP_LOG_WARN, "lanes: PYOP_TEST_LANES=force: lanes although %s", lanes_refused);
    lanes_refused[0] = '\0';
  }
  const char *why = n ? lanes_off() : NULL;
  if (why != NULL)
    pb_log(PYOP_LOG_WARN, "lanes: %" PRIu32 " asked for, but %s: %s", n, why, without_lanes());
  return PYOP_OK;
}

bool pb_lanes_refused_import(void) {
  return lane_image && PyErr_ExceptionMatches(PyExc_ImportError);
}

bool pb_lanes_image(void) { return lane_image; }

#ifdef PB_LANES
/* ------------------------------------------------------------ lane state */

/*
 * lanes[0..n_lanes) serve this image's loads; lanes[n_lanes..n_kept) are
 * lanes an earlier main image kept that this one's loads do not use (it
 * asks for fewer): they go back to the pool at shutdown (lane_pool.c).
 */
static pb_lane lanes[PYOP_MAX_LANES];
static uint32_t n_lanes, n_kept;
/* Grows each time the lanes stop serving this image: what was made for
 * lanes of an earlier epoch (an op's dispatchers, a holder) never calls
 * into their images. */
static atomic_uint epoch = 1;
/* While lanes serve this image: the callable registered with atexit that
 * ends them before Python finalizes (lanes_at_exit), or NULL. */
static PyObject *exit_hook;
static char **load_paths; /* the elements of the load in progress (NUL-terminated copies) */
static size_t n_load_paths;

/* ------------------------------------------------- the collecting registrar */

static char *str_copy(pyop_str s) { return strndup(s.data != NULL ? s.data : "", s.len); }

static int collect(void *ctx, bool impl, pyop_str op_type, pyop_str key, pyop_str digest,
                   uint32_t caps, void *dctx, const pyop_op_callbacks *cb) {
  pb_lane *l = ctx;
  if (l->n_descs == l->cap_descs) {
    size_t cap = l->cap_descs ? 2 * l->cap_descs : 16;
    lane_desc *d = realloc(l->descs, cap * sizeof *d);
    if (d == NULL)
      return pb_error(PYOP_ENOMEM, "lane %u: out of memory", (unsigned)l->index);
    l->descs = d;
    l->cap_descs = cap;
  }
  lane_desc *d = &l->descs[l->n_descs];
  *d = (lane_desc){impl,           false,         caps,
                   l->element,     str_copy(op_type), str_copy(key),
                   str_copy(digest), dctx,        cb};
  if (d->op_type == NULL || d->key == NULL || d->digest == NULL) {
    free(d->op_type);
    free(d->key);
    free(d->digest);
    return pb_error(PYOP_ENOMEM, "lane %u: out of memory", (unsigned)l->index);
  }
  l->n_descs++;
  return PYOP_OK;
}

int pb_lane_collect_proto(void *ctx, const pyop_proto_view *v) {
  return collect(ctx, false, v->op_type, v->key, v->source_digest, v->caps, v->ctx,
                 v->callbacks);
}

int pb_lane_collect_impl(void *ctx, const pyop_impl_view *v) {
  return collect(ctx, true, v->op_type, v->key, v->source_digest, v->caps, v->ctx,
                 v->callbacks);
}

static void lane_forget_load(pb_lane *l) {
  for (size_t i = 0; i < l->n_descs; i++) {
    free(l->descs[i].op_type);
    free(l->descs[i].key);
    free(l->descs[i].digest);
  }
  free(l->descs);
  l->descs = NULL;
  l->n_descs = l->cap_descs = 0;
  if (l->serial_why != NULL)
    for (size_t i = 0; i < n_load_paths; i++)
      free(l->serial_why[i]);
  free(l->serial_why);
  l->serial_why = NULL;
}

static void forget_load(void) {
  for (uint32_t i = 0; i < n_lanes; i++)
    lane_forget_load(&lanes[i]);
  for (size_t i = 0; i < n_load_paths; i++)
    free(load_paths[i]);
  free(load_paths);
  load_paths = NULL;
  n_load_paths = 0;
}

/* ----------------------------------------------------- images and lanes */

/*
 * Lanes cannot start in this process (no /proc, memfd_create refused, the
 * bridge's file replaced): every descriptor stays serial with that reason,
 * as for a Python without lanes (lanes_refused, until set_config; one
 * warning; the loading thread only). PYOP_EUNSUPPORTED, no error recorded:
 * the load goes on.
 */
int pb_lanes_unavailable(const char *fmt, ...) {
  char why[384];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, sizeof why, fmt, ap);
  va_end(ap);
  snprintf(lanes_refused, sizeof lanes_refused, "interpreter lanes cannot start in this "
           "process: %s", why);
  pb_log(PYOP_LOG_WARN, "lanes: %" PRIu32 " asked for, but %s: %s", lanes_asked, lanes_refused,
         without_lanes());
  return PYOP_EUNSUPPORTED;
}

static void lanes_stop(bool keep);

/*
 * atexit's callback while lanes run (main GIL held): a host that finalizes
 * Python without pyop_shutdown (a Python program using libpyop through
 * ctypes that just ends) has the lanes ended here, first: atexit runs after
 * threading joined the non-daemon threads and before CPython ends the
 * interpreters left (3.13: 'Py_EndInterpreter: not the last thread', the
 * lanes' images still keeping thread states there) or finalizes with them
 * (3.12). They end for good (an atexit hook of the pool registered now
 * would not run). What refers to them then refuses to call them (epoch).
 */
static PyObject *lanes_at_exit(PyObject *self, PyObject *unused) {
  (void)self;
  (void)unused;
  if (n_lanes)
    pb_log(PYOP_LOG_INFO, "lanes: Python finalizes before pyop_shutdown: the lanes end now");
  lanes_stop(false);
  /* exit_hook stays registered, with our reference: a pyop_shutdown from a
   * later atexit callback unregisters and drops it (pb_lanes_exit_hook_drop)
   * while this image is mapped, before libpyop closes it (atexit's last
   * reference would otherwise read its PyMethodDef in the unmapped image);
   * without one, Python finalizes with the image mapped. */
  Py_RETURN_NONE;
}

static PyMethodDef exit_hook_def = {"pyop_lanes_at_exit", lanes_at_exit, METH_NOARGS,
                                    "Ends libpyop's interpreter lanes (atexit)."};

/* Calls atexit.NAME(exit_hook) (main GIL held): 0, or -1 with an
 * exception. */
static int exit_hook_call(const char *name) {
  PyObject *atexit = PyImport_ImportModule("atexit");
  PyObject *r = atexit != NULL ? PyObject_CallMethod(atexit, name, "O", exit_hook) : NULL;
  Py_XDECREF(atexit);
  Py_XDECREF(r);
  return r != NULL ? 0 : -1;
}

/* Registers lanes_at_exit with atexit (main GIL held); a failure only logs
 * (such a host must then call pyop_shutdown before Py_FinalizeEx). */
static void exit_hook_register(void) {
  if (exit_hook != NULL)
    return;
  exit_hook = PyCFunction_New(&exit_hook_def, NULL);
  if (exit_hook == NULL || exit_hook_call("register") < 0) {
    PyErr_Clear();
    Py_CLEAR(exit_hook);
    pb_log(PYOP_LOG_WARN, "lanes: cannot register their end with atexit: call pyop_shutdown "
                          "before Python finalizes");
  }
}

void pb_lanes_exit_hook_drop(void) {
  if (!pb_python_usable()) {
    exit_hook = NULL; /* died with the interpreter */
    return;
  }
  if (exit_hook != NULL && exit_hook_call("unregister") < 0)
    PyErr_Clear();
  Py_CLEAR(exit_hook);
}

unsigned pb_lanes_epoch(void) { return atomic_load_explicit(&epoch, memory_order_acquire); }

/* CLOCK_MONOTONIC in seconds. */
static double seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* The warning that element el of the load stays serial, and why. */
static void warn_serial(size_t el, const char *why) {
  pb_log(PYOP_LOG_WARN, "lanes: the plugins of %s stay serial in the main interpreter: %s",
         load_paths[el], why);
}

/*
 * One warning per element of the load a lane refused to run (its plugins
 * need what a sub-interpreter does not give): the reason of the first lane
 * that refused it. Lanes load at once, each may refuse alone, so this is
 * said after all of them loaded, not by one of them.
 */
static void log_serial_elements(size_t n) {
  for (size_t i = 0; i < n; i++)
    for (uint32_t k = 0; k < n_lanes; k++)
      if (lanes[k].serial_why[i] != NULL) {
        warn_serial(i, lanes[k].serial_why[i]);
        break;
      }
}

/*
 * Before the first load of this image (n_lanes 0): the lanes kept by an
 * earlier main image are taken up in their order (lane_pool.c), new ones
 * made for the rest, and the lanes' part of the load (their start, then
 * the import of every element) runs on workers (lane_start.c), the main
 * GIL released meanwhile. A lane that could not start fails the load, and
 * every lane goes back to the pool (all or nothing: this image keeps none);
 * one whose plugins failed fails it too, and every lane forgets the load.
 */
static int lanes_run(const pyop_str *paths, size_t n) {
  bool start = n_lanes == 0;
  int src = -1;
  uint32_t kept = 0;
  if (start) {
    char why[384];
    src = pb_lane_own_file((const void *)&pb_lanes_configure, why, sizeof why);
    if (src < 0)
      return pb_lanes_unavailable("%s", why);
    kept = pb_lane_pool_take(lanes, PYOP_MAX_LANES);
    for (uint32_t k = kept; k < lanes_asked; k++)
      lanes[k] = (pb_lane){.fd = -1};
    n_lanes = lanes_asked;
    n_kept = kept > lanes_asked ? kept : lanes_asked;
    for (uint32_t k = 0; k < n_kept; k++)
      lanes[k].index = k + 1;
  }
  int rc = PYOP_OK;
  for (uint32_t k = 0; k < n_lanes && rc == PYOP_OK; k++)
    if ((lanes[k].serial_why = calloc(n ? n : 1, sizeof(char *))) == NULL)
      rc = pb_error(PYOP_ENOMEM, "lanes: out of memory");
  /* The lanes take their own GIL: the main one is let go meanwhile. */
  PyThreadState *main = PyEval_SaveThread();
  double t0 = seconds();
  bool started = !start;
  if (rc == PYOP_OK)
    rc = pb_lane_jobs_run(lanes, n_lanes, start, src, paths, load_paths, n, &started);
  if (start) {
    close(src);
    /* Kept lanes this load does not use: their last images are not needed
     * (lane_pool.c's exit hook runs in a serving lane's). */
    for (uint32_t k = n_lanes; k < n_kept; k++)
      pb_lane_image_close(&lanes[k]);
  }
  if (!started)
    pb_lanes_stop(); /* all or nothing: every lane back to the pool */
  PyEval_RestoreThread(main);
  if (rc == PYOP_OK)
    log_serial_elements(n);
  if (rc == PYOP_EUNSUPPORTED) /* an image could not be made here */
    return pb_lanes_unavailable("%s", pb_lane_jobs_unavailable());
  if (start && started && rc == PYOP_OK) {
    uint32_t reused = kept < n_lanes ? kept : n_lanes;
    pb_log(PYOP_LOG_INFO, "lanes: %u %s GIL ready in %.0f ms "
           "(%u started, %u kept from an earlier load)", (unsigned)n_lanes,
           PB_PLURAL(n_lanes, "sub-interpreter with its own", "sub-interpreters with their own"),
           (seconds() - t0) * 1e3, (unsigned)(n_lanes - reused), (unsigned)reused);
  }
  return rc;
}

int pb_lanes_load(const pyop_str *paths, size_t n) {
  if (!lanes_asked || lane_image || lanes_off() != NULL)
    return PYOP_OK;
  if (n_lanes == 0) {
    /* The main interpreter imports the pyop package (hashlib, inspect, ...)
     * before any lane: what that first initialises belongs to the main
     * interpreter, which outlives every lane (CPython gh-119213). */
    int rc = pb_package_ensure();
    if (rc == PYOP_OK)
      rc = pb_lane_imports_gate_main();
    if (rc != PYOP_OK)
      return rc;
  }
  forget_load();
  load_paths = calloc(n ? n : 1, sizeof *load_paths);
  if (load_paths == NULL)
    return pb_error(PYOP_ENOMEM, "lanes: out of memory");
  n_load_paths = n;
  for (size_t i = 0; i < n; i++)
    if ((load_paths[i] = str_copy(paths[i])) == NULL) {
      forget_load();
      return pb_error(PYOP_ENOMEM, "lanes: out of memory");
    }
  int rc = lanes_run(paths, n);
  if (rc == PYOP_EUNSUPPORTED) {
    forget_load();
    return PYOP_OK; /* pb_lanes_unavailable: every op serial */
  }
  if (rc == PYOP_OK && exit_hook == NULL)
    exit_hook_register();
  if (rc != PYOP_OK && n_lanes > 0) {
    PyThreadState *m = PyEval_SaveThread();
    pb_lanes_reset();
    PyEval_RestoreThread(m);
  }
  return rc;
}

/* The descriptor of lane l that is op's (same kind, op type and key, from
 * the same path element): one not matched yet first (a path may yield the
 * same descriptor twice), else NULL. */
static lane_desc *lane_find(pb_lane *l, const pb_op *op, pyop_str key, size_t element) {
  lane_desc *again = NULL;
  for (size_t i = 0; i < l->n_descs; i++) {
    lane_desc *d = &l->descs[i];
    if (d->impl == op->is_impl && d->element == element && strcmp(d->op_type, op->op_type) == 0 &&
        strlen(d->key) == key.len && memcmp(d->key, key.data, key.len) == 0) {
      if (!d->matched)
        return d;
      if (again == NULL)
        again = d;
    }
  }
  return again;
}

/*
 * Why element el stays serial when lane l compiled other sources for it
 * than the main interpreter (a file replaced during the load: each
 * interpreter would run another version of an op's code), set once per
 * lane and element with one warning; NULL when out of memory.
 */
static const char *code_differs(pb_lane *l, size_t el) {
  if (l->serial_why[el] == NULL) {
    l->serial_why[el] = pb_strdupf("lane %u compiled other sources for the plugins of %s than "
                                   "the main interpreter (a file changed during the load?): "
                                   "load again to run them in lanes",
                                   (unsigned)l->index, load_paths[el]);
    if (l->serial_why[el] != NULL)
      warn_serial(el, l->serial_why[el]);
  }
  return l->serial_why[el];
}

/*
 * Matches op with each lane's descriptor (found[k]): NULL when every lane
 * yields it with the same code, else why it stays serial (*failed: a lane
 * yields other descriptors than the main interpreter, exception set).
 */
static const char *lanes_match(pb_op *op, pyop_str key, lane_desc **found, bool *failed) {
  size_t el = op->element >= 0 && (size_t)op->element < n_load_paths ? (size_t)op->element
                                                                      : SIZE_MAX;
  const char *serial = NULL, *code = op->code_digest != NULL ? op->code_digest : "";
  *failed = false;
  for (uint32_t k = 0; k < n_lanes; k++) {
    pb_lane *l = &lanes[k];
    found[k] = el != SIZE_MAX ? lane_find(l, op, key, el) : NULL;
    if (found[k] != NULL) {
      found[k]->matched = true;
      if (found[k]->caps != op->caps) {
        PyErr_Format(PyExc_ImportError,
                     "%s '%s' (%s) has capabilities 0x%x in lane %u but 0x%x in the main "
                     "interpreter: every lane must yield the same descriptors",
                     op->is_impl ? "implementation" : "prototype", op->op_type, op->where,
                     (unsigned)found[k]->caps, (unsigned)l->index, (unsigned)op->caps);
        *failed = true;
        return NULL;
      }
      if (serial == NULL && strcmp(found[k]->digest, code) != 0)
        serial = code_differs(l, el);
    } else if (serial == NULL && el != SIZE_MAX && l->serial_why[el] != NULL) {
      serial = l->serial_why[el];
    } else if (serial == NULL) {
      PyErr_Format(PyExc_ImportError,
                   "lane %u does not yield %s '%s' (%.*s, %s) that the main interpreter "
                   "does: every lane must yield the same descriptors (module state is per "
                   "lane: a plugin must not decide what it registers by it)",
                   (unsigned)l->index, op->is_impl ? "implementation" : "prototype",
                   op->op_type, (int)key.len, key.data, op->where);
      *failed = true;
      return NULL;
    }
  }
  return serial;
}

#else
int pb_lanes_load(const pyop_str *paths, size_t n) {
  (void)paths;
  (void)n;
  return PYOP_OK;
}

void pb_lanes_exit_hook_drop(void) {}
unsigned pb_lanes_epoch(void) { return 0; }
#endif /* PB_LANES */

int pb_lanes_view(pb_op *op, pyop_str key, pyop_str *reason, uint32_t *lanes_out) {
  *lanes_out = 0;
  *reason = (pyop_str){NULL, 0};
  if (!lanes_asked)
    return 0;
  const char *why = lanes_off();
  if (why != NULL) {
    *reason = (pyop_str){why, strlen(why)};
    return 0;
  }
#ifdef PB_LANES
  lane_desc *found[PYOP_MAX_LANES];
  bool failed = false;
  const char *serial = lanes_match(op, key, found, &failed);
  if (failed)
    return -1;
  if (serial != NULL) {
    *reason = (pyop_str){serial, strlen(serial)};
    return 0;
  }
  op->lane_ctx = calloc(n_lanes, sizeof *op->lane_ctx);
  op->lane_cb = calloc(n_lanes, sizeof *op->lane_cb);
  if (op->lane_ctx == NULL || op->lane_cb == NULL) {
    PyErr_NoMemory();
    return -1;
  }
  for (uint32_t k = 0; k < n_lanes; k++) {
    op->lane_ctx[k] = found[k]->ctx;
    op->lane_cb[k] = found[k]->cb;
  }
  op->n_lanes = n_lanes;
  op->lanes_epoch = pb_lanes_epoch();
  pb_lanes_dispatch(op);
  *lanes_out = n_lanes;
  return 0;
#else
  (void)op;
  (void)key;
  return 0;
#endif
}

int pb_lanes_check_all_matched(void) {
#ifdef PB_LANES
  for (uint32_t k = 0; k < n_lanes; k++)
    for (size_t i = 0; i < lanes[k].n_descs; i++) {
      lane_desc *d = &lanes[k].descs[i];
      if (!d->matched)
        return pb_error(PYOP_EPLUGIN,
                        "lane %u yields %s '%s' (%s) of %s that the main interpreter does not: "
                        "every lane must yield the same descriptors (module state is per "
                        "lane: a plugin must not decide what it registers by it)",
                        (unsigned)lanes[k].index, d->impl ? "implementation" : "prototype",
                        d->op_type, d->key, load_paths[d->element]);
    }
#endif
  return PYOP_OK;
}

void pb_lanes_reset(void) {
#ifdef PB_LANES
  pb_host_mark m = pb_lanes_enter(pb_attached_tstate());
  for (uint32_t k = 0; k < n_lanes; k++)
    if (lanes[k].api != NULL)
      lanes[k].api->reset();
  pb_lanes_leave(m);
  forget_load();
#endif
}

#ifdef PB_LANES
/*
 * Whether Python threads a plugin started are still running in lane l
 * (warned about, by name: they keep running there). No thread state
 * attached: the lane's GIL is taken through a state made for the purpose.
 */
static bool threads_left(const pb_lane *l) {
  PyThreadState *ts = PyThreadState_New(l->interp);
  if (ts == NULL) {
    pb_log(PYOP_LOG_WARN, "lane %u: out of memory listing its Python threads",
           (unsigned)l->index);
    return true;
  }
  PyEval_RestoreThread(ts);
  char *why = NULL;
  char *left = pb_threads_running(&why);
  if (left == NULL)
    pb_log(PYOP_LOG_WARN, "lane %u: could not list the Python threads left running at "
           "pyop_shutdown (%s)", (unsigned)l->index, why != NULL ? why : "unknown error");
  else if (left[0] != '\0')
    pb_log(PYOP_LOG_WARN, "lane %u: Python thread(s) %s started by a plugin are still running "
           "at pyop_shutdown; they keep running in the lane's sub-interpreter, which is kept "
           "for the next load (a host that finalizes Python waits for them, as for the main "
           "interpreter's)", (unsigned)l->index, left);
  bool any = left == NULL || left[0] != '\0';
  free(left);
  free(why);
  PyThreadState_Clear(ts);
  PyThreadState_DeleteCurrent();
  return any;
}

/*
 * Whether shutdown keeps the lanes (lane_pool.c) rather than ends them:
 * always in a Python libpyop started (never finalized), and on 3.13+,
 * whose Py_FinalizeEx ends the sub-interpreters left (the pool's exit hook
 * ends them first when it runs). CPython 3.12's aborts on one ("remaining
 * subinterpreters"), and the exit hook cannot be relied on there: a
 * pyop_shutdown made from an atexit callback registers it too late to run.
 */
static bool keep_lanes(void) {
  return atomic_load(&pb_python_ours) || Py_Version >= 0x030D0000;
}

/* Detaches the state attached to this thread, if any; returns it. */
static PyThreadState *detach_any(void) {
  return pb_attached_tstate() != NULL ? PyEval_SaveThread() : NULL;
}

/* Attaches ts again (detach_any's result), if any. */
static void attach_again(PyThreadState *ts) {
  if (ts != NULL)
    PyEval_RestoreThread(ts);
}

/*
 * When the lanes cannot be kept: ends each one's interpreter, except one
 * where a plugin's threads still run (ending it would wait for them:
 * pyop_shutdown never waits for a thread), which is left running with its
 * image mapped. No thread state attached.
 */
static void lanes_end(bool usable) {
  for (uint32_t k = 0; k < n_kept; k++) {
    pb_lane *l = &lanes[k];
    if (usable && l->interp != NULL) {
      if (threads_left(l)) {
        pb_log(PYOP_LOG_WARN, "lane %u: its sub-interpreter is left running and its bridge "
               "image mapped", (unsigned)l->index);
        if (l->fd >= 0)
          close(l->fd);
        continue;
      }
      pb_lane_end(l->interp, l->ts0, l->ts0_thread);
    }
    pb_lane_image_close(l);
  }
}

/*
 * Every lane's image shuts down (its plugins and pyop package dropped,
 * every thread state it kept ended); then, with keep, the lanes'
 * interpreters are kept for the next main image's loads (lane_pool.c)
 * instead of ended: CPython gives nothing back of an ended one. Without
 * keep (Python finalizes: lanes_at_exit), or when they cannot be kept, they
 * end. Works with or without a thread state attached on the calling thread
 * (a host that keeps the GIL): it is detached while the lanes' GILs are
 * taken, and attached again; what the images log meanwhile runs with it
 * (lane_calls.c).
 */
static void lanes_stop(bool keep) {
  forget_load();
  if (n_kept == 0)
    return;
  atomic_fetch_add(&epoch, 1);
  bool usable = pb_python_usable();
  PyThreadState *cur = detach_any();
  pb_host_mark m = pb_lanes_enter(cur);
  for (uint32_t k = 0; k < n_kept; k++) {
    pb_lane *l = &lanes[k];
    if (l->api != NULL)
      l->api->shutdown();
    l->api = NULL;
    if (usable && l->interp != NULL && k < n_lanes && keep)
      (void)threads_left(l);
  }
  pb_lanes_leave(m);
  attach_again(cur);
  int rc = PYOP_ENOTINIT;
  if (usable && keep && !keep_lanes()) {
    pb_log(PYOP_LOG_INFO, "lanes: ended at pyop_shutdown (the host's Python %s can be "
           "finalized after it, which aborts on a sub-interpreter left; the next load "
           "starts new ones)", PY_VERSION);
  } else if (usable && keep) {
    pb_gil st = pb_enter();
    rc = pb_lane_pool_put(lanes, n_kept);
    pb_leave(st);
  }
  if (rc != PYOP_OK) {
    cur = detach_any();
    lanes_end(usable);
    attach_again(cur);
  }
  memset(lanes, 0, n_kept * sizeof lanes[0]);
  n_lanes = n_kept = 0;
}
#endif

void pb_lanes_stop(void) {
#ifdef PB_LANES
  lanes_stop(true);
#endif
}
