/*
 * The bridge's one exported symbol, its API table, configuration (optional
 * start-up of an isolated Python), the lifecycle calls, error reporting to
 * the loader and the per-thread Python thread states.
 */
#include "bridge.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#ifndef PYOP_BRIDGE_BUILD_INFO
#define PYOP_BRIDGE_BUILD_INFO "unknown compiler"
#endif
#ifndef PYOP_BRIDGE_PYTHON_HOME
#define PYOP_BRIDGE_PYTHON_HOME ""
#endif

pb_state pb;
_Thread_local pb_thread pb_tls;
atomic_bool pb_lost;

static const char pb_build_info[] =
    PYOP_BRIDGE_BUILD_INFO ", Python headers " PY_VERSION;

/* ------------------------------------------------------------ messages */

/* malloc'd vprintf; NULL on failure. */
static char *vstrdupf(const char *fmt, va_list ap) {
  char *s = NULL;
  return vasprintf(&s, fmt, ap) < 0 ? NULL : s;
}

char *pb_strdupf(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *s = vstrdupf(fmt, ap);
  va_end(ap);
  return s;
}

static bool services_have_set_error(void) {
  const pyop_loader_services *s = pb.services;
  return s != NULL &&
         s->struct_size >= offsetof(pyop_loader_services, set_error) + sizeof(s->set_error) &&
         s->set_error != NULL;
}

static void send_error(int status, const char *msg) {
  if (!services_have_set_error())
    return;
  if (msg == NULL)
    msg = "bridge: out of memory while formatting an error";
  pyop_str m = {msg, strlen(msg)};
  pb.services->set_error(status, m);
}

int pb_error(int status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *s = vstrdupf(fmt, ap);
  va_end(ap);
  send_error(status, s);
  free(s);
  return status;
}

void pb_log(int level, const char *fmt, ...) {
  const pyop_loader_services *s = pb.services;
  if (s == NULL || s->struct_size < offsetof(pyop_loader_services, log) + sizeof(s->log) ||
      s->log == NULL)
    return;
  va_list ap;
  va_start(ap, fmt);
  char *m = vstrdupf(fmt, ap);
  va_end(ap);
  if (m != NULL) {
    pyop_str v = {m, strlen(m)};
    s->log(level, v);
    free(m);
  }
}

/*
 * A str as a malloc'd C string for a message: UTF-8, where the bytes of a
 * file name that is not UTF-8 (decoded with surrogateescape) are given back
 * as they are, any other lone surrogate written as an escape. NULL when s
 * is not a str or on failure; no exception is left.
 */
static char *message_text(PyObject *s) {
  PyObject *b = NULL;
  if (s != NULL && PyUnicode_Check(s)) {
    b = PyUnicode_AsEncodedString(s, "utf-8", "surrogateescape");
    if (b == NULL) {
      PyErr_Clear();
      b = PyUnicode_AsEncodedString(s, "utf-8", "backslashreplace");
    }
  }
  char *out = b != NULL ? strdup(PyBytes_AS_STRING(b)) : NULL;
  Py_XDECREF(b);
  PyErr_Clear();
  return out;
}

/* "Type: message\n<traceback>" of exc; malloc'd, NULL on failure. */
static char *describe_exception(PyObject *exc) {
  char *out = NULL;
  if (pb.fn_format != NULL) {
    PyObject *r = PyObject_CallOneArg(pb.fn_format, exc);
    PyErr_Clear();
    out = message_text(r);
    Py_XDECREF(r);
    if (out != NULL)
      return out;
  }
  PyObject *str = PyObject_Str(exc);
  PyErr_Clear();
  char *msg = message_text(str);
  out = pb_strdupf("%s: %s", Py_TYPE(exc)->tp_name, msg != NULL ? msg : "<unprintable>");
  free(msg);
  Py_XDECREF(str);
  return out;
}

int pb_error_python(int status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *prefix = vstrdupf(fmt, ap);
  va_end(ap);
  PyObject *exc = pb_exc_fetch();
  char *text = exc != NULL ? describe_exception(exc) : NULL;
  /* Dropping exc frees the traceback and with it the frames' locals. */
  Py_XDECREF(exc);
  PyErr_Clear();
  char *msg = pb_strdupf("%s: %s", prefix != NULL ? prefix : "Python error",
                         text != NULL ? text : "unknown Python error");
  send_error(status, msg);
  free(msg);
  free(text);
  free(prefix);
  return status;
}

int pb_error_no_python(const char *what) {
  if (atomic_load(&pb_lost))
    return pb_error(PYOP_ENOTINIT,
                    "%s: the Python interpreter the ops were loaded into has been finalized "
                    "(Py_FinalizeEx by the host); destroy the op instances and call "
                    "pyop_shutdown, then pyop_load again in a running interpreter",
                    what);
  return pb_error(PYOP_ENOTINIT,
                  "%s: the Python interpreter is not initialised (it was finalized by the "
                  "host); destroy the op instances and call pyop_shutdown",
                  what);
}

/* ------------------------------------------------------- thread states */

/*
 * Each host thread that calls in gets one Python thread state, made by a
 * PyGILState_Ensure that is never released while the thread lives (each
 * call then only attaches and detaches it: pb_enter/pb_leave), and torn
 * down by a pthread key destructor at thread exit. Threads that already have
 * a thread state (Python threads, the thread that initialised Python) use it
 * as it is. generation changes when the bridge shuts down, so a destructor
 * never touches a thread state of a finished interpreter.
 */
typedef struct pb_kept {
  PyThreadState *ts;
  unsigned gen;
} pb_kept;

static pthread_mutex_t key_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_key_t ts_key;
static bool ts_key_ok;
static atomic_uint generation = 1;

static bool python_finalizing(void) {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsFinalizing();
#else
  return _Py_IsFinalizing();
#endif
}

/* ------------------------------------------------ interpreter exit */

/*
 * An atexit callback of the interpreter the package was imported into: it
 * runs inside the Py_FinalizeEx of that interpreter (the host's, or ours
 * when the unregistration failed) and marks everything the bridge holds as
 * gone. The bridge never learns about finalization otherwise, and a host
 * may initialise a new interpreter afterwards, where Py_IsInitialized() is
 * true again but none of the bridge's objects exist.
 */
static PyObject *atexit_fn; /* the callback registered, or NULL */

static PyObject *on_interpreter_exit(PyObject *self, PyObject *unused) {
  (void)self;
  (void)unused;
  atomic_store(&pb_lost, true);
  /* Kept thread states die with the interpreter: no destructor may use one. */
  atomic_fetch_add(&generation, 1);
  Py_RETURN_NONE;
}

static PyMethodDef exit_def = {"pyop_bridge_interpreter_exit", on_interpreter_exit,
                               METH_NOARGS, NULL};

/* atexit.<name>(atexit_fn); -1 with an exception. */
static int atexit_call(const char *name) {
  PyObject *mod = PyImport_ImportModule("atexit");
  PyObject *r = mod != NULL ? PyObject_CallMethod(mod, name, "O", atexit_fn) : NULL;
  Py_XDECREF(mod);
  Py_XDECREF(r);
  return r != NULL ? 0 : -1;
}

int pb_atexit_register(void) {
  if (atexit_fn != NULL)
    return 0;
  atexit_fn = PyCFunction_New(&exit_def, NULL);
  if (atexit_fn == NULL)
    return -1;
  if (atexit_call("register") < 0) {
    Py_CLEAR(atexit_fn);
    return -1;
  }
  return 0;
}

void pb_atexit_unregister(void) {
  if (atexit_fn == NULL)
    return;
  if (atexit_call("unregister") < 0)
    PyErr_Clear();
  Py_CLEAR(atexit_fn);
}

static void kept_destructor(void *p) {
  pb_kept *k = p;
  if (k != NULL && k->gen == atomic_load(&generation) && Py_IsInitialized() &&
      !python_finalizing()) {
    /* glibc may already have cleared CPython's own thread-specific slot
     * (keys are destroyed in creation order), so do not go through
     * PyGILState_Release: delete the state directly. */
    PyEval_RestoreThread(k->ts);
    PyThreadState_Clear(k->ts);
    PyThreadState_DeleteCurrent(); /* also drops the GIL */
  }
  free(k);
}

static void keep_thread_state(void) {
  unsigned gen = atomic_load(&generation);
  if (PyGILState_GetThisThreadState() != NULL)
    return;
  pb_kept *k = malloc(sizeof *k);
  if (k == NULL)
    return;
  pthread_mutex_lock(&key_lock);
  bool ok = ts_key_ok;
  pthread_mutex_unlock(&key_lock);
  if (!ok) {
    free(k);
    return;
  }
  PyGILState_STATE st = PyGILState_Ensure();
  k->ts = PyEval_SaveThread();
  k->gen = gen;
  if (pthread_setspecific(ts_key, k) != 0) {
    PyEval_RestoreThread(k->ts);
    PyGILState_Release(st);
    free(k);
    return;
  }
  pb_tls.ts = k->ts;
  pb_tls.gen = gen;
}

/* The thread state attached to this thread (holding the GIL), or NULL. */
static inline PyThreadState *attached_tstate(void) {
#if PY_VERSION_HEX >= 0x030D0000
  return PyThreadState_GetUnchecked();
#else
  return _PyThreadState_UncheckedGet();
#endif
}

/*
 * With a kept thread state the GIL is taken by attaching it directly
 * (PyEval_RestoreThread / PyEval_SaveThread): what PyGILState_Ensure and
 * Release do for a thread whose state already exists, without their
 * thread-specific lookups and counter updates. When this thread already
 * holds the GIL through that state (a callback that calls back into
 * libpyop) nothing is taken or dropped. Threads without a kept state (they
 * had one of their own) go through PyGILState as before.
 */
pb_gil pb_enter_on(pb_thread *t) {
  unsigned gen = atomic_load(&generation);
  if (t->ts == NULL || t->gen != gen) {
    keep_thread_state();
    if (t->ts == NULL || t->gen != gen)
      return PB_GIL_ENSURED + (int)PyGILState_Ensure();
  }
  if (attached_tstate() == t->ts)
    return PB_GIL_HELD;
  PyEval_RestoreThread(t->ts);
  return PB_GIL_KEPT;
}

pb_gil pb_enter(void) { return pb_enter_on(&pb_tls); }

void pb_leave(pb_gil g) {
  if (g == PB_GIL_KEPT)
    PyEval_SaveThread();
  else if (g >= PB_GIL_ENSURED)
    PyGILState_Release((PyGILState_STATE)(g - PB_GIL_ENSURED));
}

/* ------------------------------------------------------------- config */

bool pb_str_ok(pyop_str s, bool required) {
  if (s.len > 0 && s.data == NULL)
    return false;
  if (required && s.len == 0)
    return false;
  return s.len == 0 || memchr(s.data, '\0', s.len) == NULL;
}

static pthread_t init_thread;

/* Starts an isolated Python that the bridge owns; leaves the GIL released. */
static int start_python(void) {
  PyConfig config;
  PyConfig_InitIsolatedConfig(&config);
  PyStatus status;
  const char *home = PYOP_BRIDGE_PYTHON_HOME;
  struct stat st;
  /* Pin the standard library of the Python the bridge was built for (the
   * default path search could follow PATH to another installation). */
  if (home[0] != '\0' && stat(home, &st) == 0 && S_ISDIR(st.st_mode)) {
    status = PyConfig_SetBytesString(&config, &config.home, home);
    if (PyStatus_Exception(status))
      goto fail;
  }
  status = Py_InitializeFromConfig(&config);
  if (PyStatus_Exception(status))
    goto fail;
  PyConfig_Clear(&config);
  pb.owns_python = true;
  init_thread = pthread_self();
  pb.main_tstate = PyEval_SaveThread();
  return PYOP_OK;
fail:
  PyConfig_Clear(&config);
  if (PyStatus_IsExit(status))
    return pb_error(PYOP_EPYTHON, "starting Python (isolated configuration) failed: exit code %d",
                    status.exitcode);
  return pb_error(PYOP_EPYTHON, "starting Python (isolated configuration) failed: %s%s%s",
                  status.func != NULL ? status.func : "",
                  status.func != NULL ? ": " : "",
                  status.err_msg != NULL ? status.err_msg : "unknown error");
}

/* The running interpreter must be the major.minor the bridge was built for. */
static int check_running_version(void) {
#if PY_VERSION_HEX >= 0x030B0000
  unsigned long running = Py_Version;
#else
  unsigned a = 0, b = 0;
  if (sscanf(Py_GetVersion(), "%u.%u", &a, &b) != 2)
    return pb_error(PYOP_EABI, "cannot parse the running Python version '%s'", Py_GetVersion());
  unsigned long running = ((unsigned long)a << 24) | ((unsigned long)b << 16);
#endif
  if ((running >> 16) != ((unsigned long)PY_VERSION_HEX >> 16))
    return pb_error(PYOP_EABI,
                    "bridge built for Python %d.%d but the process runs Python %lu.%lu",
                    PY_MAJOR_VERSION, PY_MINOR_VERSION, (running >> 24) & 0xff,
                    (running >> 16) & 0xff);
  return PYOP_OK;
}

/*
 * Stores the artifact directory. When Python is not initialised: starts an
 * isolated one (owned by the bridge, finalised at shutdown) if the flag
 * PYOP_BRIDGE_START_PYTHON is set, else fails with PYOP_ENOTINIT.
 */
static int pb_set_config(const pyop_bridge_config *config) {
  if (config == NULL ||
      config->struct_size < offsetof(pyop_bridge_config, flags) + sizeof(config->flags))
    return pb_error(PYOP_EINVAL, "bridge set_config: config is NULL or too small");
  if (!pb_str_ok(config->artifact_dir, true))
    return pb_error(PYOP_EINVAL, "bridge set_config: artifact_dir is empty or invalid");
  char *dir = strndup(config->artifact_dir.data, config->artifact_dir.len);
  if (dir == NULL)
    return pb_error(PYOP_ENOMEM, "bridge set_config: out of memory");
  if (!Py_IsInitialized()) {
    if (!(config->flags & PYOP_BRIDGE_START_PYTHON)) {
      free(dir);
      return pb_error(PYOP_ENOTINIT,
                      "the Python interpreter is not initialised in this process: initialise "
                      "it before loading (Py_Initialize), or let libpyop start one "
                      "(pyop_options.start_python)");
    }
    int rc = start_python();
    if (rc != PYOP_OK) {
      free(dir);
      return rc;
    }
  } else {
    int rc = check_running_version();
    if (rc != PYOP_OK) {
      free(dir);
      return rc;
    }
  }
  free(pb.artifact_dir);
  pb.artifact_dir = dir;
  return PYOP_OK;
}

/* ------------------------------------------------------ the API table */

static int pb_register_custom_ops(const pyop_registrar *registrar, const pyop_str *paths,
                                  size_t n_paths) {
  if (pb.artifact_dir == NULL)
    return pb_error(PYOP_ESTATE, "bridge register_custom_ops: set_config was not called");
  if (!pb_python_usable())
    return pb_error_no_python("loading Python plugins");
  pb_gil st = pb_enter();
  int rc = pb_register(registrar, paths, n_paths);
  pb_leave(st);
  return rc;
}

static void pb_reset(void) {
  if (!pb_python_usable()) {
    pb_package_forget();
    return;
  }
  pb_gil st = pb_enter();
  pb_reset_locked();
  pb_leave(st);
}

static void pb_shutdown(void) {
  if (!pb_python_usable()) {
    /* The interpreter is gone (or is another one): forget, touch nothing. */
    pb_package_forget();
    atexit_fn = NULL;
    atomic_fetch_add(&generation, 1);
    if (pb.owns_python)
      pb_log(PYOP_LOG_WARN, "bridge: the Python libpyop started was finalized by someone "
                            "else; nothing left to finalize");
    pb.owns_python = false;
    pb.main_tstate = NULL;
  } else {
    if (pb.owns_python) {
      PyGILState_STATE st = PyGILState_UNLOCKED;
      bool on_init_thread = pthread_equal(init_thread, pthread_self()) != 0;
      if (on_init_thread)
        PyEval_RestoreThread(pb.main_tstate);
      else
        st = PyGILState_Ensure();
      (void)st;
      pb_reset_locked();
      pb_package_drop();
      atomic_fetch_add(&generation, 1);
      if (Py_FinalizeEx() != 0)
        pb_log(PYOP_LOG_WARN, "bridge: Py_FinalizeEx reported an error while flushing");
      pb.owns_python = false;
      pb.main_tstate = NULL;
    } else {
      pb_gil st = pb_enter();
      pb_reset_locked();
      pb_package_drop();
      pb_leave(st);
      atomic_fetch_add(&generation, 1);
    }
  }
  pthread_mutex_lock(&key_lock);
  if (ts_key_ok) {
    /* No destructor may run into this image after dlclose. */
    pthread_key_delete(ts_key);
    ts_key_ok = false;
  }
  pthread_mutex_unlock(&key_lock);
  free(pb.artifact_dir);
  pb.artifact_dir = NULL;
  pb.services = NULL;
  atomic_store(&pb_lost, false);
}

static pyop_bridge_api pb_api = {
    sizeof(pyop_bridge_api),
    PYOP_BRIDGE_ABI_MAJOR,
    PYOP_BRIDGE_ABI_MINOR,
    {pb_build_info, sizeof pb_build_info - 1},
    pb_set_config,
    pb_register_custom_ops,
    pb_reset,
    pb_shutdown,
};

__attribute__((visibility("default"))) int
pyop_bridge_entry(const pyop_bridge_request *request, const pyop_bridge_api **out_api);

/*
 * Negotiates the ABI: same major required; the answer is the lower of the
 * two minors. Returns PYOP_OK and the table, or PYOP_EABI / PYOP_EINVAL.
 * Touches no Python.
 */
int pyop_bridge_entry(const pyop_bridge_request *request, const pyop_bridge_api **out_api) {
  if (request == NULL || out_api == NULL)
    return PYOP_EINVAL;
  *out_api = NULL;
  if (request->struct_size < offsetof(pyop_bridge_request, services) + sizeof(request->services))
    return PYOP_EABI;
  const pyop_loader_services *s = request->services;
  if (s != NULL && s->struct_size >= offsetof(pyop_loader_services, set_error) +
                                         sizeof(s->set_error))
    pb.services = s;
  else
    pb.services = NULL;
  if (request->abi_major != PYOP_BRIDGE_ABI_MAJOR)
    return pb_error(PYOP_EABI, "bridge speaks ABI %u.%u, the loader asked for %u.%u",
                    (unsigned)PYOP_BRIDGE_ABI_MAJOR, (unsigned)PYOP_BRIDGE_ABI_MINOR,
                    (unsigned)request->abi_major, (unsigned)request->abi_minor);
  pthread_mutex_lock(&key_lock);
  if (!ts_key_ok)
    ts_key_ok = pthread_key_create(&ts_key, kept_destructor) == 0;
  pthread_mutex_unlock(&key_lock);
  uint32_t ours = PYOP_BRIDGE_ABI_MINOR;
  pb_api.abi_minor = request->abi_minor < ours ? request->abi_minor : ours;
  pb.abi_minor = pb_api.abi_minor;
  *out_api = &pb_api;
  return PYOP_OK;
}
