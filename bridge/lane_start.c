/*
 * Starting interpreter lanes and loading their plugins, in parallel
 * (docs/design.md §Lanes): the lanes' part of a load runs on worker
 * threads, one per core and at most one per lane, while the loading thread
 * waits with the main GIL released. Each lane has its own GIL, so a
 * worker makes its lane's sub-interpreter (or configures a new image for a
 * kept one, lane_pool.c) and imports every path element into it without
 * waiting for another lane.
 *
 * What a worker produces reaches the host only from the loading thread,
 * once every worker is done: its log lines, in lane order, and the error
 * of the lowest lane that failed (which lane gets which instance stays
 * libpyop's round-robin; nothing here depends on which worker ran first).
 * A worker never calls into libpyop's hooks: a host's log hook that called
 * pyop_load from a worker would wait for the very load that waits for the
 * worker. Workers block every signal (the host's go to its own threads,
 * the loading one included).
 *
 * Also here: the services the lane images call (errors and log lines of a
 * worker are captured into its job instead of reaching libpyop).
 */
#include "lanes.h"

#ifdef PB_LANES

#include <assert.h>
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <unistd.h>

/* A log line of a worker, replayed by the loading thread. */
typedef struct job_line {
  int level;
  char *text;
} job_line;

/* The lanes' part of a load for one lane, run by a worker. */
typedef struct lane_job {
  pb_lane *lane;
  bool start;                    /* make or take up the lane's interpreter first */
  int src;                       /* the main image's file, when start */
  const pyop_str *paths;         /* the load's elements */
  char *const *names;            /* the same, NUL-terminated */
  size_t n_paths;
  int rc;                        /* first failure, PYOP_OK if none */
  char *msg;                     /* its message (malloc'd; NULL: out of memory) */
  char *captured;                /* the last error a lane image reported */
  job_line *lines;
  size_t n_lines, cap_lines;
  /* Images the worker closed, closed by the loading thread once every
   * worker is done (pb_lane_image_close): at most the lane's kept one and
   * its new one. */
  void *late_handle[2];
  int late_fd[2];
  int n_late;
} lane_job;

/* The job the calling thread runs, or NULL (not a worker). */
static _Thread_local lane_job *cur_job;

/* malloc'd vprintf, NULL on failure. */
static char *vformat(const char *fmt, va_list ap) {
  char *s = NULL;
  return vasprintf(&s, fmt, ap) < 0 ? NULL : s;
}

/* Records the job's first failure; returns status. */
static int job_fail(lane_job *j, int status, const char *fmt, ...) PB_PRINTF(3, 4);
static int job_fail(lane_job *j, int status, const char *fmt, ...) {
  if (j->rc != PYOP_OK)
    return status;
  va_list ap;
  va_start(ap, fmt);
  j->msg = vformat(fmt, ap);
  va_end(ap);
  j->rc = status;
  return status;
}

/* Keeps a log line for the loading thread (dropped when out of memory). */
static void job_keep_line(lane_job *j, int level, char *text) {
  if (text == NULL)
    return;
  if (j->n_lines == j->cap_lines) {
    size_t cap = j->cap_lines ? 2 * j->cap_lines : 8;
    job_line *l = realloc(j->lines, cap * sizeof *l);
    if (l == NULL) {
      free(text);
      return;
    }
    j->lines = l;
    j->cap_lines = cap;
  }
  j->lines[j->n_lines++] = (job_line){level, text};
}

/* A printf-style log line kept for the loading thread. */
static void job_log(lane_job *j, int level, const char *fmt, ...) PB_PRINTF(3, 4);
static void job_log(lane_job *j, int level, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  job_keep_line(j, level, vformat(fmt, ap));
  va_end(ap);
}

/* -------------------------------------------------- services for images */

/* Outside a worker, libpyop's services run with the host's thread state
 * attached (lane_calls.c): they may reach its hooks. */

/* set_error of a lane image: captured into the worker's job, else
 * libpyop's (an image's error outside a load: an op call in a lane). */
static void lane_set_error(int status, pyop_str m) {
  lane_job *j = cur_job;
  if (j != NULL) {
    free(j->captured);
    j->captured = strndup(m.data != NULL ? m.data : "", m.len);
    return;
  }
  if (status == PB_STATUS_LANE_REFUSED || status == PB_STATUS_LANE_CAUGHT) { /* the dispatcher's */
    pb_lanes_refused_note(m);
    return;
  }
  if (pb.services.set_error != NULL) {
    pb_host_turn t = pb_lanes_to_host();
    pb.services.set_error(status, m);
    pb_lanes_from_host(t);
  }
}

/* log of a lane image: kept in the worker's job, else libpyop's. */
static void lane_log(int level, pyop_str m) {
  lane_job *j = cur_job;
  if (j != NULL) {
    job_keep_line(j, level, strndup(m.data != NULL ? m.data : "", m.len));
    return;
  }
  if (pb.services.log != NULL) {
    pb_host_turn t = pb_lanes_to_host();
    pb.services.log(level, m);
    pb_lanes_from_host(t);
  }
}

/* Whether libpyop's services offer the prototype lookups (ABI 1.2). */
static bool svc_has_protos(void) {
  return pb.services.find_proto != NULL && pb.services.release_proto != NULL;
}

/* find_proto / release_proto / last_error of a lane image: libpyop's. */
static int lane_find_proto(pyop_str op_type, const pyop_op_info **out) {
  if (!svc_has_protos()) {
    *out = NULL;
    return PYOP_ENOENT;
  }
  pb_host_turn t = pb_lanes_to_host();
  int rc = pb.services.find_proto(op_type, out);
  pb_lanes_from_host(t);
  return rc;
}

static void lane_release_proto(const pyop_op_info *info) {
  if (svc_has_protos()) {
    pb_host_turn t = pb_lanes_to_host();
    pb.services.release_proto(info);
    pb_lanes_from_host(t);
  }
}

static pyop_str lane_last_error(void) {
  const char *s = pb_loader_last_error();
  return (pyop_str){s != NULL ? s : "", s != NULL ? strlen(s) : 0};
}

static const pb_lane_services lane_services = {
    {sizeof(pb_lane_services), lane_set_error, lane_log, lane_find_proto, lane_release_proto,
     lane_last_error},
    &pb_ext_gate_main};

/* ------------------------------------------------------------- images */

static void image_close_now(void *handle, int fd) {
  if (handle != NULL)
    dlclose(handle);
  if (fd >= 0)
    close(fd);
}

/* On a worker the image is closed only after every worker is done, so that
 * no other worker's new image takes its addresses or its descriptor's
 * number (its /proc/self/fd name) while the load runs: ThreadSanitizer
 * took the entry of a new image mapped where a closed one had been for a
 * race with the closed one's (lanes_host start_fail_first). */
void pb_lane_image_close(pb_lane *l) {
  l->api = NULL;
  lane_job *j = cur_job;
  if (j != NULL && (l->handle != NULL || l->fd >= 0) && j->n_late < 2) {
    j->late_handle[j->n_late] = l->handle;
    j->late_fd[j->n_late++] = l->fd;
  } else {
    image_close_now(l->handle, l->fd);
  }
  l->handle = NULL;
  l->fd = -1;
}

/* A new image for the job's lane: a copy of src dlopened, its entry
 * negotiated (api set). PYOP_OK or a status (job failed; nothing left):
 * PYOP_EUNSUPPORTED when this process cannot make it (no memfd, no
 * /proc/self/fd: lanes then stay off, pb_lanes_unavailable). */
static int image_open(lane_job *j) {
  pb_lane *l = j->lane;
  char why[256];
  l->fd = pb_lane_image_copy(j->src, l->index, why, sizeof why);
  if (l->fd < 0)
    return job_fail(j, PYOP_EUNSUPPORTED, "%s", why);
  char path[64];
  snprintf(path, sizeof path, "/proc/self/fd/%d", l->fd);
  l->handle = PB_OS(dlopen)(path, RTLD_NOW | RTLD_LOCAL);
  if (l->handle == NULL) {
    const char *e = dlerror();
    job_fail(j, PYOP_EUNSUPPORTED, "cannot open the copy of the bridge (%s): %s", path,
             e != NULL ? e : "(no dlerror)");
    pb_lane_image_close(l);
    return j->rc;
  }
  pyop_bridge_entry_fn entry;
  *(void **)&entry = dlsym(l->handle, PYOP_BRIDGE_ENTRY_SYMBOL);
  pyop_bridge_request req = {sizeof req, PYOP_BRIDGE_ABI_MAJOR, PYOP_BRIDGE_ABI_MINOR,
                             &lane_services.base};
  const pyop_bridge_api *api = NULL;
  if (entry == NULL || entry(&req, &api) != PYOP_OK || api == NULL) {
    pb_lane_image_close(l);
    return job_fail(j, PYOP_EINTERNAL, "lane %u: the bridge's image refused its entry",
                    (unsigned)l->index);
  }
  l->api = api;
  return PYOP_OK;
}

/* set_config of the lane's new image, the lane's interpreter attached:
 * PYOP_OK or a status (job failed; the image closed). */
static int image_configure(lane_job *j) {
  pb_lane *l = j->lane;
  pyop_bridge_config c;
  memset(&c, 0, sizeof c);
  c.struct_size = sizeof c;
  c.artifact_dir = (pyop_str){pb.artifact_dir, strlen(pb.artifact_dir)};
  c.flags = PB_CONFIG_LANE;
  int rc = l->api->set_config(&c);
  if (rc != PYOP_OK) {
    job_fail(j, rc, "lane %u: the bridge's image refused its configuration: %s",
             (unsigned)l->index, j->captured != NULL ? j->captured : "(no detail)");
    pb_lane_image_close(l);
  }
  return rc;
}

#if PY_VERSION_HEX < 0x030D0000
/*
 * CPython 3.12 cannot end a sub-interpreter that imported asyncio (the end
 * hangs or crashes; 3.13 can): in a lane of 3.12 importing it raises
 * ImportError, so a plugin that needs it stays serial, saying why, and the
 * refusal is recorded as an extension module's is (lane_imports.c: an
 * import of it inside execute runs the op in the main interpreter). Runs in
 * the lane (its state attached), once per interpreter; a failure to
 * install only logs.
 */
static void refuse_asyncio(lane_job *j) {
  static const char code[] =
      "import sys\n"
      "class _PyopNoAsyncio:\n"
      "    @staticmethod\n"
      "    def find_spec(name, path=None, target=None):\n"
      "        if name == 'asyncio' or name.startswith('asyncio.'):\n"
      "            e = ImportError('asyncio is refused in an interpreter lane on Python "
      "3.12 (CPython 3.12 cannot end a sub-interpreter that imported it; 3.13 can)', "
      "name=name)\n"
      "            seen = getattr(sys.modules.get('_imp'), '_pyop_refused', None)\n"
      "            if seen is not None:\n" /* lane_imports.c, pyop/_lanes.py */
      "                seen.append((name, 'ImportError: %s' % e))\n"
      "            raise e\n"
      "        return None\n"
      "sys.meta_path.insert(0, _PyopNoAsyncio)\n";
  if (PyRun_SimpleString(code) != 0)
    job_log(j, PYOP_LOG_WARN, "lanes: cannot refuse asyncio in lane %u of Python 3.12",
            (unsigned)j->lane->index);
}
#endif

/* Held while a worker makes a sub-interpreter (lane_create). */
static pthread_mutex_t create_lock = PTHREAD_MUTEX_INITIALIZER;

/*
 * Makes the job's lane: its image, then its sub-interpreter (made on this
 * thread, which has no thread state attached, and left detached in ts0),
 * the image configured to adopt it. PYOP_OK or a status (job failed; an
 * interpreter made is kept in the lane, without image, for the pool).
 */
static int lane_create(lane_job *j) {
  pb_lane *l = j->lane;
  int rc = image_open(j);
  if (rc != PYOP_OK)
    return rc;
  PyInterpreterConfig cfg = {
      .use_main_obmalloc = 0,
      .allow_fork = 0,
      .allow_exec = 0,
      .allow_threads = 1,
      .allow_daemon_threads = 0,
      .check_multi_interp_extensions = 1,
      .gil = PyInterpreterConfig_OWN_GIL,
  };
  char seam[32];
  snprintf(seam, sizeof seam, "fail-start-%u", (unsigned)l->index);
  if (pb_lanes_test_seam(seam)) {
    pb_lane_image_close(l);
    return job_fail(j, PYOP_EPYTHON, "lane %u: cannot start a sub-interpreter: "
                    "PYOP_TEST_LANES=%s", (unsigned)l->index, seam);
  }
  PyThreadState *ts = NULL;
  /* One interpreter made at a time: CPython 3.12 and 3.13 initialise some
   * static tables in place while they make one (posixmodule_exec sorts its
   * confname tables; ThreadSanitizer reports two workers writing them at
   * once), so only the imports, most of a lane's start, run in parallel. */
  pthread_mutex_lock(&create_lock);
  PyStatus st = Py_NewInterpreterFromConfig(&ts, &cfg);
  pthread_mutex_unlock(&create_lock);
  if (PyStatus_Exception(st) || ts == NULL) {
    if (pb_attached_tstate() != NULL)
      (void)PyEval_SaveThread();
    pb_lane_image_close(l);
    return job_fail(j, PYOP_EPYTHON, "lane %u: cannot start a sub-interpreter: %s",
                    (unsigned)l->index, st.err_msg != NULL ? st.err_msg : "(no reason)");
  }
  l->interp = PyThreadState_GetInterpreter(ts);
  l->interp_id = PyInterpreterState_GetID(l->interp);
  l->ts0_thread = pthread_self();
  /* What belongs to the interpreter, whichever image serves it later:
   * threading's main thread is the state that imports it first, ts0, the
   * one that ends the interpreter (else 3.12's threading._shutdown finds
   * the lock of a state an image deleted and complains at the end). */
  PyObject *m = PyImport_ImportModule("threading");
  if (m == NULL)
    PyErr_Clear();
  Py_XDECREF(m);
#if PY_VERSION_HEX < 0x030D0000
  refuse_asyncio(j);
#endif
  rc = image_configure(j);
  l->ts0 = PyEval_SaveThread(); /* the image keeps states of its own */
  return rc;
}

/*
 * Takes up the job's kept lane (its interpreter made by an earlier load):
 * the image of its last load closed, a new one configured to adopt it
 * through a state made for the purpose on this thread and deleted after.
 * PYOP_OK or a status (job failed; the interpreter stays in the lane).
 */
static int lane_adopt(lane_job *j) {
  pb_lane *l = j->lane;
  pb_lane_image_close(l);
  int rc = image_open(j);
  if (rc != PYOP_OK)
    return rc;
  PyThreadState *ts = PyThreadState_New(l->interp);
  if (ts == NULL) {
    pb_lane_image_close(l);
    return job_fail(j, PYOP_ENOMEM, "lane %u: out of memory taking it up",
                    (unsigned)l->index);
  }
  PyEval_RestoreThread(ts);
  rc = image_configure(j);
  PyThreadState_Clear(ts);
  PyThreadState_DeleteCurrent();
  return rc;
}

/* The first line of s, at most 300 bytes (for a serial reason). */
static char *first_line(const char *s) {
  size_t n = strcspn(s, "\n");
  return strndup(s, n < 300 ? n : 300);
}

/* Loads every element of the job into its lane, one at a time. */
static void lane_load(lane_job *j) {
  pb_lane *l = j->lane;
  pyop_registrar reg = {sizeof reg, l, pb_lane_collect_proto, pb_lane_collect_impl};
  for (size_t i = 0; i < j->n_paths && j->rc == PYOP_OK; i++) {
    free(j->captured);
    j->captured = NULL;
    l->element = i;
    int r = l->api->register_custom_ops(&reg, &j->paths[i], 1);
    const char *msg = j->captured != NULL ? j->captured : "(no detail)";
    if (r == PYOP_EUNSUPPORTED) {
      char *line = first_line(msg);
      /* Said once per element after every lane loaded (lanes.c), naming
       * the first lane that refused it. */
      l->serial_why[i] = line != NULL ? pb_strdupf("lane %u: %s", (unsigned)l->index, line)
                                      : NULL;
      free(line);
    } else if (r != PYOP_OK) {
      job_fail(j, r,
               "lane %u: loading the plugins of %s failed (every lane must load what the "
               "main interpreter does): %s",
               (unsigned)l->index, j->names[i], msg);
    }
  }
  free(j->captured);
  j->captured = NULL;
}

/* A worker's job: the lane made or taken up when it has no image yet, then
 * the load (cur_job set meanwhile: the lane images' messages go to j). */
static void job_run(lane_job *j) {
  cur_job = j;
  if (j->start && j->lane->api == NULL)
    (void)(j->lane->interp != NULL ? lane_adopt(j) : lane_create(j));
  if (j->rc == PYOP_OK)
    lane_load(j);
  cur_job = NULL;
}

/* ------------------------------------------------------------ workers */

typedef struct lane_work {
  lane_job *jobs;
  uint32_t n;
  atomic_uint next; /* the next job a worker takes */
} lane_work;

/* A worker: runs the next job not yet taken until none is left. */
static void *worker(void *p) {
  lane_work *w = p;
  for (;;) {
    unsigned k = atomic_fetch_add(&w->next, 1);
    if (k >= w->n)
      return NULL;
    job_run(&w->jobs[k]);
  }
}

/* The cores this process may run on (at least 1). */
static uint32_t cores(void) {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
    return (uint32_t)CPU_COUNT(&set);
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? (uint32_t)n : 1;
}

/* Runs every job of w on at most `most` workers; the caller's thread runs
 * them itself when no worker can be made. */
static void run_workers(lane_work *w, uint32_t most) {
  pthread_t t[PYOP_MAX_LANES];
  uint32_t made = 0;
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old); /* workers inherit it: no host signal */
  for (; made < most; made++)
    if (pthread_create(&t[made], NULL, worker, w) != 0)
      break;
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (made == 0)
    (void)worker(w);
  for (uint32_t i = 0; i < made; i++)
    pthread_join(t[i], NULL);
}

/* Why a lane's image could not be made, for pb_lane_jobs_unavailable (the
 * loading thread writes and reads it). */
static char unavailable[384];

const char *pb_lane_jobs_unavailable(void) { return unavailable; }

int pb_lane_jobs_run(pb_lane *lanes, uint32_t n, bool start, int src, const pyop_str *paths,
                     char *const *path_names, size_t n_paths, bool *started_all) {
  assert(n >= 1 && n <= PYOP_MAX_LANES && pb_attached_tstate() == NULL);
  lane_job *jobs = calloc(n, sizeof *jobs);
  if (jobs == NULL) {
    *started_all = true;
    for (uint32_t k = 0; k < n; k++)
      *started_all = *started_all && lanes[k].api != NULL;
    return pb_error(PYOP_ENOMEM, "lanes: out of memory");
  }
  for (uint32_t k = 0; k < n; k++)
    jobs[k] = (lane_job){.lane = &lanes[k], .start = start, .src = src, .paths = paths,
                         .names = path_names, .n_paths = n_paths, .rc = PYOP_OK};
  lane_work w = {jobs, n, 0};
  uint32_t most = cores();
  run_workers(&w, most < n ? most : n);
  int rc = PYOP_OK;
  *started_all = true;
  for (uint32_t k = 0; k < n; k++) {
    lane_job *j = &jobs[k];
    for (int i = 0; i < j->n_late; i++)
      image_close_now(j->late_handle[i], j->late_fd[i]);
    for (size_t i = 0; i < j->n_lines; i++) {
      pb_log(j->lines[i].level, "%s", j->lines[i].text);
      free(j->lines[i].text);
    }
    free(j->lines);
    if (lanes[k].api == NULL)
      *started_all = false;
    if (j->rc == PYOP_EUNSUPPORTED && rc == PYOP_OK) {
      rc = PYOP_EUNSUPPORTED; /* the caller says why, with no error recorded */
      snprintf(unavailable, sizeof unavailable, "%s", j->msg != NULL ? j->msg : "?");
    } else if (j->rc != PYOP_OK && rc == PYOP_OK) {
      rc = pb_error(j->rc, "%s", j->msg != NULL ? j->msg : "lanes: out of memory");
    }
    free(j->msg);
    free(j->captured);
  }
  free(jobs);
  return rc;
}

#endif /* PB_LANES */
