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
 * register_custom_ops, configures each image to adopt its sub-interpreter
 * (the private flag PB_CONFIG_LANE: set_config on a thread with the lane's
 * state attached), and talks to it through its API table, as libpyop talks
 * to the main image. Nothing of a lane image is reachable by libpyop.
 *
 * A load: each lane imports each ASCEND_CUSTOM_OPP_PATH element on its own
 * (the unit that may stay serial), handing its descriptors to a collecting
 * registrar here; then the main interpreter's load runs as without lanes.
 * Each of its descriptors runs in lanes when every lane yielded the same one
 * (kind, op type, descriptor key, source digest, caps): its callbacks become
 * dispatchers that keep, per holder, which image's callbacks and holder
 * serve it (create_holder_in: lane n; create_holder: the main interpreter).
 * An element whose import raised ImportError in a lane (an extension that
 * refuses sub-interpreters: numpy, single-phase modules, _ctypes on 3.12;
 * the lane image answers PYOP_EUNSUPPORTED for it) leaves its descriptors
 * serial with the lane and the error as reason. Any other failure in a
 * lane, a descriptor a lane does not yield, or one only a lane yields,
 * fails the load naming the lane, the plugin and the error.
 *
 * Thread states: a lane image keeps one per host thread for its
 * sub-interpreter (gil.c: PyThreadState_New, never PyGILState); entering a
 * lane from a thread that has the main interpreter attached detaches that
 * state and attaches it again after. Reset drops every lane's plugins;
 * shutdown ends every lane: its image's shutdown deletes every thread state
 * it kept, then Py_EndInterpreter, then dlclose.
 *
 * Where this Python cannot have lanes (older than 3.12: one GIL for every
 * interpreter; free-threaded: its threads run Python in parallel without
 * them) the bridge accepts the configuration, logs one warning naming the
 * reason at set_config, and every view says lanes 0 with that reason
 * (docs/host-guide.md, "Python ops in parallel").
 *
 * Lane images never run lanes themselves. Every function here runs on the
 * loading thread under libpyop's lifecycle call, except the dispatchers
 * (any thread, no GIL).
 */
#include "bridge.h"

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
#include <unistd.h>

/* set_config flag a bridge sets for the images of its lanes only (libpyop
 * never does): adopt the interpreter attached on the calling thread. */
#define PB_CONFIG_LANE (1u << 31)

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
 * safely (tests that never end Python run the lanes code there).
 */
static bool test_seam(const char *word) {
  const char *v = secure_getenv("PYOP_TEST_LANES");
  size_t n = strlen(word);
  for (const char *p = v; p != NULL && *p != '\0'; p += strcspn(p, ","), p += *p == ',') {
    if (strncmp(p, word, n) == 0 && (p[n] == ',' || p[n] == '\0'))
      return true;
  }
  return false;
}

/* Why no lane can run in this Python, or NULL when lanes can. */
static const char *lanes_impossible(void) {
#if PY_VERSION_HEX < 0x030C0000
  return "Python " PB_XSTR(PY_MAJOR_VERSION) "." PB_XSTR(PY_MINOR_VERSION)
         " has no per-interpreter GIL (lanes need CPython 3.12 or later)";
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
  if (v >= 0x030C0000 && v < 0x030C0400)
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

/* ------------------------------------------------------------- config */

int pb_lanes_configure(const pyop_bridge_config *config) {
  uint32_t n = 0;
  if (config->struct_size >= offsetof(pyop_bridge_config, lanes) + sizeof config->lanes)
    n = config->lanes;
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
    return PYOP_OK;
  }
  lanes_asked = n;
  lanes_refused[0] = '\0';
  if (n && lanes_impossible() == NULL)
    check_running_cpython();
  if (lanes_refused[0] != '\0' && test_seam("force")) {
    pb_log(PYOP_LOG_WARN, "lanes: PYOP_TEST_LANES=force: lanes although %s", lanes_refused);
    lanes_refused[0] = '\0';
  }
  const char *why = n ? lanes_off() : NULL;
  if (why != NULL)
    pb_log(PYOP_LOG_WARN,
           "lanes: %" PRIu32 " asked for, but %s: every Python op runs serially in the main "
           "interpreter",
           n, why);
  return PYOP_OK;
}

bool pb_lanes_refused_import(void) {
  return lane_image && PyErr_ExceptionMatches(PyExc_ImportError);
}

bool pb_lanes_image(void) { return lane_image; }

#ifdef PB_LANES
/* ------------------------------------------------------------ lane state */

/* One descriptor a lane yielded (deep copy of what identifies it). */
typedef struct lane_desc {
  bool impl;
  bool matched; /* a main-interpreter descriptor is the same */
  uint32_t caps;
  size_t element; /* the index of the load's path it came from */
  /* digest: what the lane's load of that path compiled (its code_digest,
   * register.c's lane_digest) */
  char *op_type, *key, *digest;
  void *ctx;
  const pyop_op_callbacks *cb;
} lane_desc;

typedef struct pb_lane {
  uint32_t index; /* 1..n_lanes */
  PyInterpreterState *interp;
  /* The state the interpreter was made with (its initial one), detached,
   * until it ends the interpreter: 3.12 cannot make its initial state
   * again once deleted. */
  PyThreadState *ts0;
  pthread_t ts0_thread; /* the thread ts0 was made on */
  int fd;       /* the image's memfd */
  void *handle; /* the image */
  const pyop_bridge_api *api;
  lane_desc *descs;
  size_t n_descs, cap_descs;
  char **serial_why; /* per path element of the load: why it stays serial, or NULL */
  size_t element;    /* the path element its image loads now (collect) */
} pb_lane;

static pb_lane *lanes;
static uint32_t n_lanes;
/* Grows each time the lanes end: what was made for lanes of an earlier
 * epoch (an op's dispatchers, a holder) never calls into their images. */
static atomic_uint epoch = 1;
/* While lanes run in this process: the callable registered with atexit
 * that ends them before Python finalizes (lanes_at_exit), or NULL. */
static PyObject *exit_hook;
static char **load_paths; /* the elements of the load in progress (NUL-terminated copies) */
static size_t n_load_paths;

/* A lane image's register_custom_ops in progress on this thread: its
 * errors are captured here instead of reaching libpyop. */
static _Thread_local bool capturing;
static char *captured;

/* -------------------------------------------------- services for images */

/* What the images call: libpyop's services, with the host's thread state
 * attached (lane_calls.c). */

static void lane_set_error(int status, pyop_str m) {
  if (capturing) {
    free(captured);
    captured = strndup(m.data != NULL ? m.data : "", m.len);
    return;
  }
  if (pb.services != NULL && pb.services->set_error != NULL) {
    pb_host_turn t = pb_lanes_to_host();
    pb.services->set_error(status, m);
    pb_lanes_from_host(t);
  }
}

static void lane_log(int level, pyop_str m) {
  if (pb.services != NULL && pb.services->log != NULL) {
    pb_host_turn t = pb_lanes_to_host();
    pb.services->log(level, m);
    pb_lanes_from_host(t);
  }
}

static bool svc_has_protos(void) {
  const pyop_loader_services *s = pb.services;
  return s != NULL && pb.abi_minor >= 2 &&
         s->struct_size >= offsetof(pyop_loader_services, release_proto) +
                               sizeof s->release_proto &&
         s->find_proto != NULL && s->release_proto != NULL;
}

static int lane_find_proto(pyop_str op_type, const pyop_op_info **out) {
  if (!svc_has_protos()) {
    *out = NULL;
    return PYOP_ENOENT;
  }
  pb_host_turn t = pb_lanes_to_host();
  int rc = pb.services->find_proto(op_type, out);
  pb_lanes_from_host(t);
  return rc;
}

static void lane_release_proto(const pyop_op_info *info) {
  if (svc_has_protos()) {
    pb_host_turn t = pb_lanes_to_host();
    pb.services->release_proto(info);
    pb_lanes_from_host(t);
  }
}

static pyop_str lane_last_error(void) {
  const char *s = pb_loader_last_error();
  return (pyop_str){s != NULL ? s : "", s != NULL ? strlen(s) : 0};
}

static const pyop_loader_services lane_services = {
    sizeof(pyop_loader_services), lane_set_error, lane_log,
    lane_find_proto,              lane_release_proto, lane_last_error};

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

static int collect_proto(void *ctx, const pyop_proto_view *v) {
  return collect(ctx, false, v->op_type, v->key, v->source_digest, v->caps, v->ctx,
                 v->callbacks);
}

static int collect_impl(void *ctx, const pyop_impl_view *v) {
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
 * warning). PYOP_EUNSUPPORTED, no error recorded: the load goes on.
 */
static int lanes_unavailable(const char *fmt, ...) {
  char why[384];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, sizeof why, fmt, ap);
  va_end(ap);
  snprintf(lanes_refused, sizeof lanes_refused, "interpreter lanes cannot start in this "
           "process: %s", why);
  pb_log(PYOP_LOG_WARN, "lanes: %" PRIu32 " asked for, but %s: every Python op runs serially "
         "in the main interpreter", lanes_asked, lanes_refused);
  return PYOP_EUNSUPPORTED;
}

/* fopen("/proc/self/maps"), or NULL; the test seam "no-proc": as if /proc
 * were not mounted (ENOENT). */
static FILE *open_maps(void) {
  if (test_seam("no-proc")) {
    errno = ENOENT;
    return NULL;
  }
  return fopen("/proc/self/maps", "re");
}

/*
 * An fd of the file this image was loaded from, checked to be the mapped
 * object (same device and inode as /proc/self/maps says for our base), or
 * -1 after lanes_unavailable with the reason.
 */
static int own_file(void) {
  Dl_info di;
  if (dladdr((void *)&pb_lanes_configure, &di) == 0 || di.dli_fname == NULL)
    return lanes_unavailable("dladdr cannot name the bridge's file"), -1;
  int fd = open(di.dli_fname, O_RDONLY | O_CLOEXEC);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0) {
    int e = errno;
    if (fd >= 0)
      close(fd);
    return lanes_unavailable("cannot open the bridge's file %s: %s", di.dli_fname,
                             strerror(e)), -1;
  }
  FILE *maps = open_maps();
  if (maps == NULL) {
    int e = errno;
    close(fd);
    return lanes_unavailable("cannot read /proc/self/maps (%s): is /proc mounted? (lanes copy "
                             "the bridge and open the copy through /proc/self/fd)",
                             strerror(e)), -1;
  }
  bool same = false;
  char line[4096];
  while (!same && fgets(line, sizeof line, maps) != NULL) {
    unsigned long lo = 0, hi = 0, off = 0, ino = 0;
    unsigned maj = 0, mnr = 0;
    char perm[8];
    if (sscanf(line, "%lx-%lx %7s %lx %x:%x %lu", &lo, &hi, perm, &off, &maj, &mnr, &ino) == 7 &&
        lo == (unsigned long)(uintptr_t)di.dli_fbase)
      same = maj == major(st.st_dev) && mnr == minor(st.st_dev) &&
             ino == (unsigned long)st.st_ino;
  }
  fclose(maps);
  if (!same) {
    close(fd);
    return lanes_unavailable("the bridge's file %s is not the one mapped in this process "
                             "(replaced since it was loaded?)", di.dli_fname), -1;
  }
  return fd;
}

/* memfd_create; the test seam "no-memfd": as if refused (EPERM, a seccomp
 * filter). */
static int open_memfd(const char *name) {
  if (test_seam("no-memfd")) {
    errno = EPERM;
    return -1;
  }
  return memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
}

/* A sealed memfd holding a copy of src (from offset 0), or -1 after
 * lanes_unavailable with the reason. */
static int image_copy(int src, uint32_t index) {
  char name[32];
  snprintf(name, sizeof name, "pyop-lane-%u", (unsigned)index);
  int fd = open_memfd(name);
  if (fd < 0)
    return lanes_unavailable("memfd_create failed: %s", strerror(errno)), -1;
  char buf[65536];
  off_t at = 0;
  for (;;) {
    ssize_t n = pread(src, buf, sizeof buf, at);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      if (n < 0)
        goto fail;
      break;
    }
    for (ssize_t done = 0; done < n;) {
      ssize_t w = write(fd, buf + done, (size_t)(n - done));
      if (w < 0 && errno == EINTR)
        continue;
      if (w <= 0)
        goto fail;
      done += w;
    }
    at += n;
  }
  if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) != 0)
    goto fail;
  return fd;
fail:;
  int e = errno;
  close(fd);
  return lanes_unavailable("cannot copy the bridge into a sealed memfd: %s", strerror(e)), -1;
}

#if PY_VERSION_HEX < 0x030D0000
/*
 * CPython 3.12 cannot end a sub-interpreter that imported asyncio (the end
 * hangs or crashes; 3.13 can): in a lane of 3.12 importing it raises
 * ImportError, so a plugin that needs it stays serial, saying why. Runs in
 * the lane (its state attached); a failure to install only logs.
 */
static void refuse_asyncio(void) {
  static const char code[] =
      "import sys\n"
      "class _PyopNoAsyncio:\n"
      "    @staticmethod\n"
      "    def find_spec(name, path=None, target=None):\n"
      "        if name == 'asyncio' or name.startswith('asyncio.'):\n"
      "            raise ImportError('asyncio is refused in an interpreter lane on Python "
      "3.12 (CPython 3.12 cannot end a sub-interpreter that imported it; 3.13 can)', "
      "name=name)\n"
      "        return None\n"
      "sys.meta_path.insert(0, _PyopNoAsyncio)\n";
  if (PyRun_SimpleString(code) != 0)
    pb_log(PYOP_LOG_WARN, "lanes: cannot refuse asyncio in a lane of Python 3.12");
}
#endif

/*
 * Starts lane l (index set): its sub-interpreter, its image configured to
 * adopt it. Called with the main interpreter's GIL held through main (this
 * thread's attached state), which is attached again on return. PYOP_OK,
 * PYOP_EUNSUPPORTED when its image cannot be made here (lanes_unavailable),
 * or a status (error reported); what was made is undone.
 */
static int lane_start(pb_lane *l, int src) {
  PyThreadState *main = pb_attached_tstate();
  l->fd = image_copy(src, l->index);
  if (l->fd < 0)
    return PYOP_EUNSUPPORTED;
  char path[64];
  snprintf(path, sizeof path, "/proc/self/fd/%d", l->fd);
  l->handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (l->handle == NULL) {
    const char *e = dlerror();
    int rc = lanes_unavailable("cannot open the copy of the bridge (%s): %s", path,
                               e != NULL ? e : "(no dlerror)");
    close(l->fd);
    return rc;
  }
  pyop_bridge_entry_fn entry;
  *(void **)&entry = dlsym(l->handle, PYOP_BRIDGE_ENTRY_SYMBOL);
  pyop_bridge_request req = {sizeof req, PYOP_BRIDGE_ABI_MAJOR, PYOP_BRIDGE_ABI_MINOR,
                             &lane_services};
  if (entry == NULL || entry(&req, &l->api) != PYOP_OK || l->api == NULL) {
    dlclose(l->handle);
    close(l->fd);
    return pb_error(PYOP_EINTERNAL, "lane %u: the bridge's image refused its entry",
                    (unsigned)l->index);
  }
  PyInterpreterConfig cfg = {
      .use_main_obmalloc = 0,
      .allow_fork = 0,
      .allow_exec = 0,
      .allow_threads = 1,
      .allow_daemon_threads = 0,
      .check_multi_interp_extensions = 1,
      .gil = PyInterpreterConfig_OWN_GIL,
  };
  PyThreadState *ts = NULL;
  PyStatus st = Py_NewInterpreterFromConfig(&ts, &cfg);
  if (PyStatus_Exception(st) || ts == NULL) {
    if (pb_attached_tstate() != main)
      PyEval_RestoreThread(main);
    l->api->shutdown();
    dlclose(l->handle);
    close(l->fd);
    return pb_error(PYOP_EPYTHON, "lane %u: cannot start a sub-interpreter: %s",
                    (unsigned)l->index, st.err_msg != NULL ? st.err_msg : "(no reason)");
  }
  l->interp = PyThreadState_GetInterpreter(ts);
  pyop_bridge_config c;
  memset(&c, 0, sizeof c);
  c.struct_size = sizeof c;
  c.artifact_dir = (pyop_str){pb.artifact_dir, strlen(pb.artifact_dir)};
  c.flags = PB_CONFIG_LANE;
  int rc = l->api->set_config(&c);
  if (rc != PYOP_OK) {
    Py_EndInterpreter(ts);
  } else {
    /* threading's main thread is the state that imports it first: ts0, the
     * one that ends the interpreter (else 3.12's threading._shutdown finds
     * the lock of a state the image deleted and complains at the end). */
    PyObject *m = PyImport_ImportModule("threading");
    if (m == NULL)
      PyErr_Clear();
    Py_XDECREF(m);
#if PY_VERSION_HEX < 0x030D0000
    refuse_asyncio();
#endif
    l->ts0_thread = pthread_self();
    l->ts0 = PyEval_SaveThread(); /* the image keeps states of its own */
  }
  PyEval_RestoreThread(main);
  if (rc != PYOP_OK) {
    l->api->shutdown();
    dlclose(l->handle);
    close(l->fd);
    return rc;
  }
  return PYOP_OK;
}

/* Ends lane l: its image's shutdown (ends every thread state it kept),
 * then its interpreter, then the image. No thread state attached. */
static void lane_stop(pb_lane *l) {
  assert(pb_attached_tstate() == NULL);
  lane_forget_load(l);
  l->api->shutdown();
  if (pb_python_usable()) {
    /* On ts0's thread ts0 ends the interpreter (threading's main thread is
     * ts0: its _shutdown releases ts0's lock). On another thread a state of
     * this thread does, ts0 deleted first (threading then ignores its main
     * thread, and 3.12 hangs ending an interpreter with a state made on
     * another thread). */
    PyThreadState *ts = l->ts0;
    if (!pthread_equal(l->ts0_thread, pthread_self())) {
      ts = PyThreadState_New(l->interp);
      if (ts == NULL) {
        pb_log(PYOP_LOG_WARN, "lane %u: out of memory ending it", (unsigned)l->index);
        ts = l->ts0;
      } else {
        PyEval_RestoreThread(ts);
        PyThreadState_Clear(l->ts0);
        PyThreadState_Delete(l->ts0);
        PyEval_SaveThread();
      }
    }
    PyEval_RestoreThread(ts);
    /* Py_EndInterpreter waits for every non-daemon thread of the
     * interpreter (threading._shutdown), forever for one that never ends;
     * pyop_shutdown never waits for a thread (docs/host-guide.md): such a
     * lane is left running, its image mapped (docs/design.md §Lanes). */
    char *why = NULL;
    char *left = pb_threads_running(&why);
    if (left == NULL || left[0] != '\0') {
      if (left == NULL)
        pb_log(PYOP_LOG_WARN, "lane %u: could not list the Python threads left running (%s): "
               "its sub-interpreter is left running and its bridge image mapped",
               (unsigned)l->index, why != NULL ? why : "unknown error");
      else
        pb_log(PYOP_LOG_WARN, "lane %u: Python thread(s) %s started by a plugin are still "
               "running at pyop_shutdown; they keep running: the lane's sub-interpreter is "
               "left running and its bridge image mapped (ending it would wait for them)",
               (unsigned)l->index, left);
      free(left);
      free(why);
      PyEval_SaveThread();
      close(l->fd);
      return;
    }
    free(left);
    free(why);
    Py_EndInterpreter(ts);
  }
  dlclose(l->handle);
  close(l->fd);
}

/* Starts n lanes (main GIL held). PYOP_OK, PYOP_EUNSUPPORTED when they
 * cannot start in this process (lanes_unavailable; no error recorded), or
 * a status (error reported); no lane left on failure. */
static int lanes_start(uint32_t n) {
  int src = own_file();
  if (src < 0)
    return PYOP_EUNSUPPORTED;
  lanes = calloc(n, sizeof *lanes);
  if (lanes == NULL) {
    close(src);
    return pb_error(PYOP_ENOMEM, "lanes: out of memory");
  }
  int rc = PYOP_OK;
  pb_host_mark m = pb_lanes_enter(pb_attached_tstate());
  for (uint32_t i = 0; i < n && rc == PYOP_OK; i++) {
    lanes[i].index = i + 1;
    rc = lane_start(&lanes[i], src);
    if (rc == PYOP_OK)
      n_lanes = i + 1;
  }
  pb_lanes_leave(m);
  close(src);
  if (rc != PYOP_OK) {
    PyThreadState *main = PyEval_SaveThread();
    pb_lanes_stop();
    PyEval_RestoreThread(main);
  } else {
    pb_log(PYOP_LOG_INFO, "lanes: %u sub-interpreters with their own GIL started",
           (unsigned)n);
  }
  return rc;
}

/*
 * atexit's callback while lanes run (main GIL held): a host that finalizes
 * Python without pyop_shutdown (a Python program using libpyop through
 * ctypes that just ends) has the lanes ended here, first: atexit runs after
 * threading joined the non-daemon threads and before CPython ends the
 * interpreters left (3.13: 'Py_EndInterpreter: not the last thread', the
 * lanes' images still keeping thread states there) or finalizes with them
 * (3.12). What refers to the lanes then refuses to call them (epoch).
 */
static PyObject *lanes_at_exit(PyObject *self, PyObject *unused) {
  (void)self;
  (void)unused;
  if (n_lanes)
    pb_log(PYOP_LOG_INFO, "lanes: Python finalizes before pyop_shutdown: the lanes end now");
  pb_lanes_stop();
  Py_CLEAR(exit_hook);
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

/* The first line of s, at most 300 bytes (for a serial reason). */
static char *first_line(const char *s) {
  size_t n = strcspn(s, "\n");
  return strndup(s, n < 300 ? n : 300);
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
      rc = lanes_start(lanes_asked);
    if (rc == PYOP_EUNSUPPORTED)
      return PYOP_OK; /* lanes_unavailable: every op serial */
    if (rc != PYOP_OK)
      return rc;
    exit_hook_register();
  }
  forget_load();
  load_paths = calloc(n ? n : 1, sizeof *load_paths);
  if (load_paths == NULL)
    return pb_error(PYOP_ENOMEM, "lanes: out of memory");
  n_load_paths = n;
  for (size_t i = 0; i < n; i++)
    if ((load_paths[i] = str_copy(paths[i])) == NULL)
      goto nomem;
  for (uint32_t k = 0; k < n_lanes; k++)
    if ((lanes[k].serial_why = calloc(n ? n : 1, sizeof(char *))) == NULL)
      goto nomem;
  /* The lanes' images take their own GIL: the main one is let go meanwhile. */
  PyThreadState *main = PyEval_SaveThread();
  pb_host_mark m = pb_lanes_enter(main);
  int rc = PYOP_OK;
  for (uint32_t k = 0; k < n_lanes && rc == PYOP_OK; k++) {
    pb_lane *l = &lanes[k];
    pyop_registrar reg = {sizeof reg, l, collect_proto, collect_impl};
    for (size_t i = 0; i < n && rc == PYOP_OK; i++) {
      capturing = true;
      l->element = i;
      int r = l->api->register_custom_ops(&reg, &paths[i], 1);
      capturing = false;
      const char *msg = captured != NULL ? captured : "(no detail)";
      if (r == PYOP_EUNSUPPORTED) {
        char *line = first_line(msg);
        l->serial_why[i] = line != NULL ? pb_strdupf("lane %u: %s", (unsigned)l->index, line)
                                        : NULL;
        if (k == 0)
          pb_log(PYOP_LOG_WARN, "lanes: the plugins of %s stay serial in the main interpreter: "
                 "lane %u: %s", load_paths[i], (unsigned)l->index, line ? line : msg);
        free(line);
      } else if (r != PYOP_OK) {
        rc = pb_error(r, "lane %u: loading the plugins of %s failed (every lane must load "
                      "what the main interpreter does): %s",
                      (unsigned)l->index, load_paths[i], msg);
      }
      free(captured);
      captured = NULL;
    }
  }
  pb_lanes_leave(m);
  PyEval_RestoreThread(main);
  if (rc != PYOP_OK) {
    PyThreadState *again = PyEval_SaveThread();
    pb_lanes_reset();
    PyEval_RestoreThread(again);
  }
  return rc;
nomem:
  forget_load();
  return pb_error(PYOP_ENOMEM, "lanes: out of memory");
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
      pb_log(PYOP_LOG_WARN, "lanes: the plugins of %s stay serial in the main interpreter: %s",
             load_paths[el], l->serial_why[el]);
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
                     "%s '%s' (%s) has capabilities %#x in lane %u but %#x in the main "
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
    lanes[k].api->reset();
  pb_lanes_leave(m);
  forget_load();
#endif
}

void pb_lanes_stop(void) {
#ifdef PB_LANES
  /* The lanes end with nothing attached on this thread: the state the
   * caller has attached (a host that keeps the GIL, a Python program
   * calling through ctypes.PyDLL, a host's own sub-interpreter) is detached
   * meanwhile and given back attached (issue 28). */
  PyThreadState *caller = n_lanes && pb_python_usable() ? pb_attached_tstate() : NULL;
  if (caller != NULL)
    PyEval_SaveThread();
  forget_load();
  if (n_lanes)
    atomic_fetch_add(&epoch, 1);
  pb_host_mark m = pb_lanes_enter(caller);
  for (uint32_t k = n_lanes; k-- > 0;)
    lane_stop(&lanes[k]);
  pb_lanes_leave(m);
  free(lanes);
  lanes = NULL;
  n_lanes = 0;
  if (caller != NULL)
    PyEval_RestoreThread(caller);
#endif
}
