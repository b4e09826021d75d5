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

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
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

#if PY_VERSION_HEX >= 0x030C0000 && !defined(Py_GIL_DISABLED)
#define PB_LANES 1
#endif

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
  const char *why = n ? lanes_impossible() : NULL;
#ifdef Py_GIL_DISABLED
  const char *then = "the Python ops run in the main interpreter, those of different op "
                     "instances in parallel";
#else
  const char *then = "every Python op runs serially in the main interpreter";
#endif
  if (why != NULL)
    pb_log(PYOP_LOG_WARN, "lanes: %" PRIu32 " asked for, but %s: %s", n, why, then);
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
} pb_lane;

static pb_lane *lanes;
static uint32_t n_lanes;
static char **load_paths; /* the elements of the load in progress (NUL-terminated copies) */
static size_t n_load_paths;

/* A lane image's register_custom_ops in progress on this thread: its
 * errors are captured here instead of reaching libpyop. */
static _Thread_local bool capturing;
static char *captured;

/* -------------------------------------------------- services for images */

static void lane_set_error(int status, pyop_str m) {
  if (capturing) {
    free(captured);
    captured = strndup(m.data != NULL ? m.data : "", m.len);
    return;
  }
  if (pb.services != NULL && pb.services->set_error != NULL)
    pb.services->set_error(status, m);
}

static void lane_log(int level, pyop_str m) {
  if (pb.services != NULL && pb.services->log != NULL)
    pb.services->log(level, m);
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
  return pb.services->find_proto(op_type, out);
}

static void lane_release_proto(const pyop_op_info *info) {
  if (svc_has_protos())
    pb.services->release_proto(info);
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
  *d = (lane_desc){impl, false, caps, str_copy(op_type), str_copy(key), str_copy(digest),
                   dctx, cb};
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
 * An fd of the file this image was loaded from, checked to be the mapped
 * object (same device and inode as /proc/self/maps says for our base), or
 * -1 with the reason in why.
 */
static int own_file(const char **why) {
  Dl_info di;
  if (dladdr((void *)&pb_lanes_configure, &di) == 0 || di.dli_fname == NULL) {
    *why = "dladdr cannot name the bridge's file";
    return -1;
  }
  int fd = open(di.dli_fname, O_RDONLY | O_CLOEXEC);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0) {
    *why = "cannot open the bridge's file";
    if (fd >= 0)
      close(fd);
    return -1;
  }
  FILE *maps = fopen("/proc/self/maps", "re");
  bool same = false;
  if (maps != NULL) {
    char line[4096];
    while (!same && fgets(line, sizeof line, maps) != NULL) {
      unsigned long lo = 0, hi = 0, off = 0, ino = 0;
      unsigned maj = 0, mnr = 0;
      char perm[8];
      if (sscanf(line, "%lx-%lx %7s %lx %x:%x %lu", &lo, &hi, perm, &off, &maj, &mnr, &ino) ==
              7 &&
          lo == (unsigned long)(uintptr_t)di.dli_fbase)
        same = maj == major(st.st_dev) && mnr == minor(st.st_dev) &&
               ino == (unsigned long)st.st_ino;
    }
    fclose(maps);
  }
  if (!same) {
    close(fd);
    *why = "the bridge's file is not the mapped one (replaced since it was loaded?)";
    return -1;
  }
  return fd;
}

/* A sealed memfd holding a copy of src (from offset 0), or -1. */
static int image_copy(int src, uint32_t index) {
  char name[32];
  snprintf(name, sizeof name, "pyop-lane-%u", (unsigned)index);
  int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0)
    return -1;
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
fail:
  close(fd);
  return -1;
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
 * thread's attached state), which is attached again on return. PYOP_OK or
 * a status (error reported; what was made is undone).
 */
static int lane_start(pb_lane *l, int src) {
  PyThreadState *main = pb_attached_tstate();
  l->fd = image_copy(src, l->index);
  if (l->fd < 0)
    return pb_error(PYOP_EIO, "lane %u: cannot copy the bridge's image: %s",
                    (unsigned)l->index, strerror(errno));
  char path[64];
  snprintf(path, sizeof path, "/proc/self/fd/%d", l->fd);
  l->handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (l->handle == NULL) {
    const char *e = dlerror();
    int rc = pb_error(PYOP_EIO, "lane %u: cannot open the bridge's image: %s",
                      (unsigned)l->index, e != NULL ? e : "(no dlerror)");
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
 * then its interpreter, then the image. No GIL held. */
static void lane_stop(pb_lane *l) {
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

/* Starts n lanes (main GIL held). PYOP_OK or a status (error reported; no
 * lane left). */
static int lanes_start(uint32_t n) {
  const char *why = NULL;
  int src = own_file(&why);
  if (src < 0)
    return pb_error(PYOP_EIO, "lanes: %s", why);
  lanes = calloc(n, sizeof *lanes);
  if (lanes == NULL) {
    close(src);
    return pb_error(PYOP_ENOMEM, "lanes: out of memory");
  }
  int rc = PYOP_OK;
  for (uint32_t i = 0; i < n && rc == PYOP_OK; i++) {
    lanes[i].index = i + 1;
    rc = lane_start(&lanes[i], src);
    if (rc == PYOP_OK)
      n_lanes = i + 1;
  }
  close(src);
  if (rc != PYOP_OK) {
    PyThreadState *main = PyEval_SaveThread();
    pb_lanes_stop();
    PyEval_RestoreThread(main);
  } else {
    pb_log(PYOP_LOG_INFO, "lanes: %u %s with their own GIL started", (unsigned)n,
           PB_PLURAL(n, "sub-interpreter", "sub-interpreters"));
  }
  return rc;
}

/* The first line of s, at most 300 bytes (for a serial reason). */
static char *first_line(const char *s) {
  size_t n = strcspn(s, "\n");
  return strndup(s, n < 300 ? n : 300);
}

int pb_lanes_load(const pyop_str *paths, size_t n) {
  if (!lanes_asked || lane_image)
    return PYOP_OK;
  if (n_lanes == 0) {
    int rc = lanes_start(lanes_asked);
    if (rc != PYOP_OK)
      return rc;
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
  int rc = PYOP_OK;
  for (uint32_t k = 0; k < n_lanes && rc == PYOP_OK; k++) {
    pb_lane *l = &lanes[k];
    pyop_registrar reg = {sizeof reg, l, collect_proto, collect_impl};
    for (size_t i = 0; i < n && rc == PYOP_OK; i++) {
      capturing = true;
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
  PyEval_RestoreThread(main);
  if (rc != PYOP_OK) {
    PyThreadState *m = PyEval_SaveThread();
    pb_lanes_reset();
    PyEval_RestoreThread(m);
  }
  return rc;
nomem:
  forget_load();
  return pb_error(PYOP_ENOMEM, "lanes: out of memory");
}

/* The index of the load's element file comes from (a directory it is in,
 * or the file itself), or SIZE_MAX. */
static size_t element_of(const char *file) {
  for (size_t i = 0; i < n_load_paths; i++) {
    size_t n = strlen(load_paths[i]);
    if (strncmp(file, load_paths[i], n) == 0 && (file[n] == '\0' || file[n] == '/'))
      return i;
  }
  return SIZE_MAX;
}

static lane_desc *lane_find(pb_lane *l, const pb_op *op, pyop_str key, pyop_str digest) {
  for (size_t i = 0; i < l->n_descs; i++) {
    lane_desc *d = &l->descs[i];
    if (d->impl == op->is_impl && strcmp(d->op_type, op->op_type) == 0 &&
        strlen(d->key) == key.len && memcmp(d->key, key.data, key.len) == 0 &&
        strlen(d->digest) == digest.len &&
        (digest.len == 0 || memcmp(d->digest, digest.data, digest.len) == 0))
      return d;
  }
  return NULL;
}

/* ------------------------------------------------------------ dispatch */

/* A holder of an op that runs in lanes: whose callbacks serve it. */
typedef struct lane_holder {
  const pyop_op_callbacks *cb;
  void *holder;
} lane_holder;

static const pyop_op_callbacks main_callbacks = {
    sizeof(pyop_op_callbacks), pb_cb_create_holder, pb_cb_destroy_holder, pb_cb_infer_meta,
    pb_cb_execute,             pb_cb_compile,       pb_cb_declare,        NULL};

static int hold(const pyop_op_callbacks *cb, void *ctx, const pyop_attr_view *attrs,
                size_t n, void **out) {
  lane_holder *w = malloc(sizeof *w);
  if (w == NULL)
    return pb_error(PYOP_ENOMEM, "create_holder: out of memory");
  w->cb = cb;
  int rc = cb->create_holder(ctx, attrs, n, &w->holder);
  if (rc != PYOP_OK) {
    free(w);
    return rc;
  }
  *out = w;
  return PYOP_OK;
}

static int disp_create(void *ctx, const pyop_attr_view *attrs, size_t n, void **out) {
  return hold(&main_callbacks, ctx, attrs, n, out);
}

static int disp_create_in(void *ctx, const pyop_attr_view *attrs, size_t n, uint32_t lane,
                          void **out) {
  pb_op *op = ctx;
  if (lane == 0)
    return disp_create(ctx, attrs, n, out);
  if (lane > op->n_lanes)
    return pb_error(PYOP_EINVAL, "create_holder of op '%s': lane %u does not exist (%u %s)",
                    op->op_type, (unsigned)lane, (unsigned)op->n_lanes,
                    PB_PLURAL(op->n_lanes, "lane", "lanes"));
  return hold(op->lane_cb[lane - 1], op->lane_ctx[lane - 1], attrs, n, out);
}

static void disp_destroy(void *h) {
  lane_holder *w = h;
  w->cb->destroy_holder(w->holder);
  free(w);
}

static int disp_infer(void *h, const pyop_infer_args *a) {
  lane_holder *w = h;
  return w->cb->infer_meta(w->holder, a);
}

static int disp_execute(void *h, const pyop_exec_args *a) {
  lane_holder *w = h;
  return w->cb->execute(w->holder, a);
}

static int disp_compile(void *h, const pyop_compile_args *a) {
  lane_holder *w = h;
  return w->cb->compile(w->holder, a);
}

static int disp_declare(void *h, const pyop_declare_args *a) {
  lane_holder *w = h;
  return w->cb->declare_launch_args(w->holder, a);
}

#else
int pb_lanes_load(const pyop_str *paths, size_t n) {
  (void)paths;
  (void)n;
  return PYOP_OK;
}
#endif /* PB_LANES */

int pb_lanes_view(pb_op *op, pyop_str key, pyop_str digest, pyop_str file, pyop_str *reason,
                  uint32_t *lanes_out) {
  *lanes_out = 0;
  *reason = (pyop_str){NULL, 0};
  if (!lanes_asked)
    return 0;
  const char *why = lanes_impossible();
  if (why != NULL) {
    *reason = (pyop_str){why, strlen(why)};
    return 0;
  }
#ifdef PB_LANES
  lane_desc *found[PYOP_MAX_LANES];
  const char *serial = NULL;
  char *f = strndup(file.data != NULL ? file.data : "", file.len);
  if (f == NULL) {
    PyErr_NoMemory();
    return -1;
  }
  size_t el = element_of(f);
  for (uint32_t k = 0; k < n_lanes; k++) {
    pb_lane *l = &lanes[k];
    found[k] = lane_find(l, op, key, digest);
    if (found[k] != NULL) {
      found[k]->matched = true;
      if (found[k]->caps != op->caps) {
        PyErr_Format(PyExc_ImportError,
                     "%s '%s' (%s) of %s has capabilities %#x in lane %u but %#x in the main "
                     "interpreter: every lane must yield the same descriptors",
                     op->is_impl ? "implementation" : "prototype", op->op_type, op->where, f,
                     (unsigned)found[k]->caps, (unsigned)l->index, (unsigned)op->caps);
        free(f);
        return -1;
      }
    } else if (serial == NULL && el != SIZE_MAX && l->serial_why[el] != NULL) {
      serial = l->serial_why[el];
    } else if (serial == NULL) {
      PyErr_Format(PyExc_ImportError,
                   "lane %u does not yield %s '%s' (%.*s, %s) that the main interpreter "
                   "does: every lane must yield the same descriptors (module state is per "
                   "lane: a plugin must not decide what it registers by it)",
                   (unsigned)l->index, op->is_impl ? "implementation" : "prototype",
                   op->op_type, (int)key.len, key.data, op->where);
      free(f);
      return -1;
    }
  }
  free(f);
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
  pyop_op_callbacks *cb = &op->callbacks;
  cb->create_holder = disp_create;
  cb->create_holder_in = disp_create_in;
  cb->destroy_holder = disp_destroy;
  if (cb->infer_meta != NULL)
    cb->infer_meta = disp_infer;
  if (cb->execute != NULL)
    cb->execute = disp_execute;
  if (cb->compile != NULL)
    cb->compile = disp_compile;
  if (cb->declare_launch_args != NULL)
    cb->declare_launch_args = disp_declare;
  *lanes_out = n_lanes;
  return 0;
#else
  (void)op;
  (void)key;
  (void)digest;
  (void)file;
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
                        "lane %u yields %s '%s' (%s) that the main interpreter does not: "
                        "every lane must yield the same descriptors (module state is per "
                        "lane: a plugin must not decide what it registers by it)",
                        (unsigned)lanes[k].index, d->impl ? "implementation" : "prototype",
                        d->op_type, d->key);
    }
#endif
  return PYOP_OK;
}

void pb_lanes_reset(void) {
#ifdef PB_LANES
  for (uint32_t k = 0; k < n_lanes; k++)
    lanes[k].api->reset();
  forget_load();
#endif
}

void pb_lanes_stop(void) {
#ifdef PB_LANES
  forget_load();
  for (uint32_t k = n_lanes; k-- > 0;)
    lane_stop(&lanes[k]);
  free(lanes);
  lanes = NULL;
  n_lanes = 0;
#endif
}
