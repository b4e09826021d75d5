/*
 * The bridge's one exported symbol, its API table, configuration (optional
 * start-up of an isolated Python on a thread of its own), the lifecycle
 * calls, error reporting to the loader, the per-thread Python thread states,
 * the GIL-wait watch thread, signal dispositions around plugins and the
 * atexit detection of a Python finalized by the host.
 */
#include "bridge.h"

#include <assert.h>
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

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

const char *pb_loader_last_error(void) {
  const pyop_loader_services *s = pb.services;
  if (pb.abi_minor < 4 || s == NULL ||
      s->struct_size < offsetof(pyop_loader_services, last_error) + sizeof s->last_error ||
      s->last_error == NULL)
    return NULL;
  pyop_str v = s->last_error();
  /* A view is (pointer, length); the loader's is NUL-terminated too. */
  if (v.data == NULL || v.len == 0 || v.data[v.len] != '\0')
    return NULL;
  return v.data;
}

const char *pb_status_name(int status) {
  switch (status) {
#define PB_STATUS_NAME(name, value, message)                                                 \
  case value:                                                                                \
    return "PYOP_" #name;
    PYOP_STATUS_MAP(PB_STATUS_NAME)
#undef PB_STATUS_NAME
  default:
    return NULL;
  }
}

const char *pb_status_message(int status) {
  switch (status) {
#define PB_STATUS_MESSAGE(name, value, message)                                              \
  case value:                                                                                \
    return message;
    PYOP_STATUS_MAP(PB_STATUS_MESSAGE)
#undef PB_STATUS_MESSAGE
  default:
    return NULL;
  }
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
  out = pb_strdupf("%s: %s", Py_TYPE(exc)->tp_name,
                   msg != NULL ? msg : "<exception str() failed>");
  free(msg);
  Py_XDECREF(str);
  return out;
}

/* A KeyboardInterrupt is an interrupt, never an ordinary error: its
 * status is PYOP_EINTR (pb_interrupt_caller then hands it back). */
static int interrupt_status(PyObject *exc, int status) {
  if (exc == NULL || !PyErr_GivenExceptionMatches(exc, PyExc_KeyboardInterrupt))
    return status;
  return PYOP_EINTR;
}

void pb_interrupt_caller(void) {
  PyFrameObject *caller = PyThreadState_GetFrame(PyThreadState_Get());
  if (caller == NULL)
    return; /* a C host: the status is all it gets */
  Py_DECREF(caller);
  PyErr_SetInterrupt();
}

int pb_error_python(int status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *prefix = vstrdupf(fmt, ap);
  va_end(ap);
  PyObject *exc = pb_exc_fetch();
  status = interrupt_status(exc, status);
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

/* ------------------------------------------------------------ signals */

/*
 * A plugin's signal.signal() (at import or in a callback) replaces the
 * host's handler process-wide. The bridge saves every signal's disposition
 * before plugins run (pb_signals_save, at each load) and, when their state
 * is dropped (unload, shutdown, a failed load: pb_signals_restore), puts the
 * saved one back for each signal whose handler changed to one installed by
 * Python (a handler inside libpython, SIG_IGN or SIG_DFL). A handler the
 * host itself installed meanwhile is left alone. Python's own table is
 * reset to SIG_DFL first when possible (signal.signal only works on Python's
 * main thread), so Python neither calls the plugin's function nor resets
 * the signal when it finalizes.
 */
static struct sigaction saved_sig[NSIG];
static bool saved_sig_valid;

static void *handler_of(const struct sigaction *sa) {
  return (sa->sa_flags & SA_SIGINFO) ? (void *)sa->sa_sigaction : (void *)sa->sa_handler;
}

void pb_signals_save(void) {
  if (saved_sig_valid)
    return;
  for (int s = 1; s < NSIG; s++)
    if (sigaction(s, NULL, &saved_sig[s]) != 0)
      memset(&saved_sig[s], 0, sizeof saved_sig[s]);
  saved_sig_valid = true;
}

/* Whether h was installed by Python: SIG_DFL/SIG_IGN or code of libpython. */
static bool python_handler(void *h) {
  if (h == (void *)SIG_DFL || h == (void *)SIG_IGN)
    return true;
  Dl_info py, hi;
  return dladdr((void *)PyOS_setsig, &py) != 0 && dladdr(h, &hi) != 0 &&
         py.dli_fbase == hi.dli_fbase;
}

/* signal.signal(s, SIG_DFL) in Python when it is allowed (GIL held). */
static void python_table_reset(int s) {
  PyObject *mod = PyImport_ImportModule("signal");
  PyObject *r = mod != NULL ? PyObject_CallMethod(mod, "signal", "ii", s, 0) : NULL;
  Py_XDECREF(r);
  Py_XDECREF(mod);
  PyErr_Clear(); /* not on Python's main thread: only the C handler is restored */
}

void pb_signals_restore(void) {
  if (!saved_sig_valid)
    return;
  saved_sig_valid = false;
  for (int s = 1; s < NSIG; s++) {
    if (s == SIGKILL || s == SIGSTOP)
      continue;
    struct sigaction now;
    if (sigaction(s, NULL, &now) != 0)
      continue;
    void *was = handler_of(&saved_sig[s]), *is = handler_of(&now);
    if (is == was || !python_handler(is))
      continue;
    python_table_reset(s);
    if (sigaction(s, &saved_sig[s], NULL) == 0)
      pb_log(PYOP_LOG_WARN, "restored the host's handler for SIG%s (signal %d), which a "
             "plugin had replaced", sigabbrev_np(s) != NULL ? sigabbrev_np(s) : "?", s);
  }
}

/* ------------------------------------------------ interpreter exit */

/*
 * The bridge learns that the interpreter its objects belong to was
 * finalized from a capsule it keeps in that interpreter's state dict
 * (PyInterpreterState_GetDict): Py_FinalizeEx clears the dict, and the
 * capsule's destructor marks everything the bridge holds as gone. No Python
 * code reaches that dict (an atexit callback, which this replaced, was
 * removed by a plugin's atexit._clear()), and a host may initialise a new
 * interpreter afterwards, where Py_IsInitialized() is true again but none
 * of the bridge's objects exist. The capsule is armed (its context
 * non-NULL) while registered; the bridge disarms it before removing it, so
 * its own removal marks nothing. It must be gone before this image is
 * unloaded: pb_exit_watch_unregister runs at every package drop.
 */
#define PB_EXIT_WATCH_KEY "pyop.bridge.exit_watch"
/* Set in the state dict of a Python that libpyop started (entry.c). */
#define PB_STARTED_KEY "pyop.bridge.started_by_libpyop"

static PyObject *exit_watch; /* the capsule registered (the dict owns it), or NULL */
static bool exit_watch_armed_token; /* its context: any non-NULL address */
atomic_bool pb_python_ours;

static void on_interpreter_exit(PyObject *capsule) {
  if (PyCapsule_GetContext(capsule) == NULL)
    return; /* disarmed: the bridge removed it */
  atomic_store(&pb_lost, true);
  /* Kept thread states die with the interpreter: no destructor may use one. */
  atomic_fetch_add(&generation, 1);
}

int pb_exit_watch_register(void) {
  if (exit_watch != NULL)
    return 0;
  PyObject *d = PyInterpreterState_GetDict(PyInterpreterState_Get());
  if (d == NULL) {
    PyErr_SetString(PyExc_RuntimeError, "the interpreter has no state dict");
    return -1;
  }
  PyObject *c = PyCapsule_New(&exit_watch_armed_token, PB_EXIT_WATCH_KEY, on_interpreter_exit);
  if (c == NULL)
    return -1;
  if (PyCapsule_SetContext(c, &exit_watch_armed_token) < 0 ||
      PyDict_SetItemString(d, PB_EXIT_WATCH_KEY, c) < 0) {
    PyCapsule_SetContext(c, NULL);
    Py_DECREF(c);
    return -1;
  }
  Py_DECREF(c); /* the dict keeps it */
  exit_watch = c;
  /* A Python that libpyop started (this image or an earlier one) says so. */
  PyObject *ours = PyDict_GetItemString(d, PB_STARTED_KEY); /* borrowed */
  atomic_store(&pb_python_ours, ours == Py_True);
  return 0;
}

void pb_exit_watch_unregister(void) {
  if (exit_watch == NULL)
    return;
  PyCapsule_SetContext(exit_watch, NULL);
  PyObject *d = PyInterpreterState_GetDict(PyInterpreterState_Get());
  if (d == NULL || PyDict_DelItemString(d, PB_EXIT_WATCH_KEY) < 0)
    PyErr_Clear();
  exit_watch = NULL;
}

/* ------------------------------------------------------ GIL-wait watch */

/*
 * A host that keeps the GIL (initialised Python and never called
 * PyEval_SaveThread) makes every call from another thread wait forever.
 * pb_enter_on marks the wait in the thread's pb_thread (a few plain stores,
 * no lock, no clock); a watch thread, started with the first kept thread
 * state and stopped at shutdown, looks at the marks once a second and logs,
 * once per wait, a call that has waited PB_WATCH_SECONDS.
 *
 * The list of watched threads and every read of a pb_op through wait_op
 * are under watch_lock; a pb_op is only freed after pb_watch_barrier, and a
 * thread clears wait_op before its call can end, so the watch never reads
 * a freed op. A thread leaves the list at exit (kept_destructor) or when
 * the bridge shuts down.
 */
#define PB_WATCH_SECONDS 3

static pthread_mutex_t watch_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t watch_cond = PTHREAD_COND_INITIALIZER;
static pb_thread *watch_list;
static bool watch_running, watch_stop;
static pthread_t watch_thread;
/* Whether this thread holds watch_lock (for the asserts of `_locked`). */
static _Thread_local bool watch_held;

static void watch_lock_take(void) {
  pthread_mutex_lock(&watch_lock);
  watch_held = true;
}

static void watch_lock_give(void) {
  assert(watch_held);
  watch_held = false;
  pthread_mutex_unlock(&watch_lock);
}

void pb_watch_barrier(void) {
  watch_lock_take();
  watch_lock_give();
}

/*
 * The host thread that took the GIL through pb_enter_on and has not given
 * it back through pb_leave yet: gettid() << 4 | (kind + 1), 0 when none (a
 * thread libpyop did not enter holds it, or nobody). Written by that thread
 * (one plain store each way), read by the watch to name who makes the
 * others wait.
 */
static atomic_long gil_holder;

static inline void holder_set(const pb_thread *t, int kind) {
  atomic_store_explicit(&gil_holder, (t->tid << 4) | (long)(kind + 1), memory_order_relaxed);
}

/* The watch's line for a call that waited PB_WATCH_SECONDS (malloc'd). */
static char *wait_line(const char *call, long tid) {
  long holder = atomic_load_explicit(&gil_holder, memory_order_relaxed);
  long htid = holder >> 4;
  int hkind = (int)(holder & 15) - 1;
  if (htid != 0 && htid != tid)
    return pb_strdupf(
        "%s on thread %ld has waited %d s for the Python GIL. Thread %ld holds it, inside "
        "a libpyop call (%s) that has not released it: plugin code running C that keeps "
        "the GIL (a C extension, a function called through ctypes.PyDLL) or a long "
        "computation; see docs/host-guide.md",
        call, tid, PB_WATCH_SECONDS, htid,
        hkind >= 0 && hkind < PB_NKINDS ? pb_kind_names[hkind] : "load, create or destroy");
  if (atomic_load(&pb_python_ours))
    return pb_strdupf(
        "%s on thread %ld has waited %d s for the Python GIL. No host thread inside "
        "libpyop holds it, and libpyop, which started this Python, released it after "
        "start-up: a Python thread a plugin started holds it, running C that keeps the GIL "
        "(a C extension, a function called through ctypes.PyDLL) or a long computation; "
        "see docs/host-guide.md",
        call, tid, PB_WATCH_SECONDS);
  return pb_strdupf(
      "%s on thread %ld has waited %d s for the Python GIL. Another thread "
      "holds the GIL without running Python: most likely the host thread that "
      "initialised Python and never released it. After Py_Initialize call "
      "PyEval_SaveThread() (and PyEval_RestoreThread() before Py_FinalizeEx); see "
      "docs/host-guide.md",
      call, tid, PB_WATCH_SECONDS);
}

/* Per watched thread, kept by the watch thread only. */
typedef struct watch_seen {
  const pb_thread *t;
  unsigned seq;
  int scans;
} watch_seen;

static void *watch_main(void *arg) {
  (void)arg;
  watch_seen seen[64];
  size_t n_seen = 0;
  watch_lock_take();
  while (!watch_stop) {
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 1;
    pthread_cond_timedwait(&watch_cond, &watch_lock, &until);
    if (watch_stop)
      break;
    char *lines[8];
    size_t n_lines = 0;
    size_t n_now = 0;
    watch_seen now[64];
    for (pb_thread *t = watch_list; t != NULL && n_now < 64; t = t->watch_next) {
      unsigned seq = atomic_load_explicit(&t->wait_seq, memory_order_acquire);
      if (!(seq & 1u))
        continue; /* not waiting */
      int scans = 1;
      for (size_t i = 0; i < n_seen; i++)
        if (seen[i].t == t && seen[i].seq == seq)
          scans = seen[i].scans + 1;
      now[n_now++] = (watch_seen){t, seq, scans};
      if (scans != PB_WATCH_SECONDS || n_lines == sizeof lines / sizeof lines[0])
        continue; /* logged once per wait: when it reaches the threshold */
      int kind = atomic_load_explicit(&t->wait_kind, memory_order_relaxed);
      const pb_op *op = atomic_load_explicit(&t->wait_op, memory_order_acquire);
      char call[200];
      if (kind >= 0 && kind < PB_NKINDS && op != NULL)
        snprintf(call, sizeof call, "%s of op '%s'", pb_kind_names[kind], op->op_type);
      else
        snprintf(call, sizeof call, "a libpyop call (load, create or destroy)");
      lines[n_lines++] = wait_line(call, t->tid);
    }
    memcpy(seen, now, n_now * sizeof now[0]);
    n_seen = n_now;
    if (n_lines > 0) {
      /* The log hook may call libpyop: no lock held. */
      watch_lock_give();
      for (size_t i = 0; i < n_lines; i++) {
        if (lines[i] != NULL)
          pb_log(PYOP_LOG_WARN, "%s", lines[i]);
        free(lines[i]);
      }
      watch_lock_take();
    }
  }
  watch_lock_give();
  return NULL;
}

/* Puts this thread on the watch list (starting the watch thread). */
static void watch_add(pb_thread *t) {
  watch_lock_take();
  if (!t->watched) {
    t->tid = (long)syscall(SYS_gettid);
    t->watch_next = watch_list;
    watch_list = t;
    t->watched = true;
  }
  if (!watch_running) {
    /* The watch thread takes no signal meant for the host. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    watch_stop = false;
    watch_running = pthread_create(&watch_thread, NULL, watch_main, NULL) == 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
  }
  watch_lock_give();
}

/* Takes t off the watch list; the caller holds watch_lock (asserted). */
static void watch_remove_locked(pb_thread *t) {
  assert(watch_held);
  for (pb_thread **p = &watch_list; *p != NULL; p = &(*p)->watch_next)
    if (*p == t) {
      *p = t->watch_next;
      break;
    }
  t->watch_next = NULL;
  t->watched = false;
}

/* Stops the watch thread and empties the list (bridge shutdown). */
static void watch_stop_all(void) {
  watch_lock_take();
  bool running = watch_running;
  watch_stop = true;
  pthread_cond_broadcast(&watch_cond);
  watch_lock_give();
  if (running)
    pthread_join(watch_thread, NULL);
  watch_lock_take();
  watch_running = false;
  while (watch_list != NULL)
    watch_remove_locked(watch_list);
  watch_lock_give();
}

/* Marks the start and the end of a wait for the GIL (owner thread only:
 * plain loads and stores, no read-modify-write). */
static inline void wait_begin(pb_thread *t, int kind, const pb_op *op) {
  unsigned seq = atomic_load_explicit(&t->wait_seq, memory_order_relaxed);
  atomic_store_explicit(&t->wait_kind, kind, memory_order_relaxed);
  atomic_store_explicit(&t->wait_op, op, memory_order_relaxed);
  atomic_store_explicit(&t->wait_seq, seq + 1, memory_order_release);
}

static inline void wait_end(pb_thread *t) {
  unsigned seq = atomic_load_explicit(&t->wait_seq, memory_order_relaxed);
  atomic_store_explicit(&t->wait_op, NULL, memory_order_release);
  atomic_store_explicit(&t->wait_seq, seq + 1, memory_order_release);
}

/* ----------------------------------------------------- kept thread states */

static void kept_destructor(void *p) {
  pb_kept *k = p;
  watch_lock_take();
  if (pb_tls.watched)
    watch_remove_locked(&pb_tls);
  watch_lock_give();
  if (k != NULL && k->ts != NULL && k->gen == atomic_load(&generation) && Py_IsInitialized() &&
      !python_finalizing() && !atomic_load(&pb_lost)) {
    /* glibc may already have cleared CPython's own thread-specific slot
     * (keys are destroyed in creation order), so do not go through
     * PyGILState_Release: delete the state directly. */
    PyEval_RestoreThread(k->ts);
    PyThreadState_Clear(k->ts);
    PyThreadState_DeleteCurrent(); /* also drops the GIL */
  }
  free(k);
}

/*
 * Gives this thread a kept thread state when it has none of its own. The
 * key's value is set first, so the thread leaves the watch list at exit
 * whatever happens; the first PyGILState_Ensure may wait for the GIL, as a
 * watched wait of (kind, op).
 */
static void keep_thread_state(pb_thread *t, int kind, const pb_op *op) {
  unsigned gen = atomic_load(&generation);
  if (PyGILState_GetThisThreadState() != NULL)
    return;
  pthread_mutex_lock(&key_lock);
  bool ok = ts_key_ok;
  pthread_mutex_unlock(&key_lock);
  if (!ok)
    return;
  pb_kept *k = pthread_getspecific(ts_key);
  if (k == NULL) {
    k = calloc(1, sizeof *k);
    if (k == NULL)
      return;
    if (pthread_setspecific(ts_key, k) != 0) {
      free(k);
      return;
    }
  }
  watch_add(t);
  wait_begin(t, kind, op);
  PyGILState_STATE st = PyGILState_Ensure();
  wait_end(t);
  (void)st; /* never released: the state stays this thread's until it exits */
  k->ts = PyEval_SaveThread();
  k->gen = gen;
  t->ts = k->ts;
  t->gen = gen;
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
 * had one of their own) go through PyGILState. Every wait is marked for the
 * GIL-wait watch.
 */
pb_gil pb_enter_on(pb_thread *t, int kind, const pb_op *op) {
  unsigned gen = atomic_load(&generation);
  if (t->ts == NULL || t->gen != gen) {
    keep_thread_state(t, kind, op);
    if (t->ts == NULL || t->gen != gen) {
      if (t->tid == 0)
        t->tid = (long)syscall(SYS_gettid);
      wait_begin(t, kind, op);
      pb_gil g = {PB_GIL_ENSURED, PyGILState_Ensure()};
      wait_end(t);
      if (g.ensured == PyGILState_UNLOCKED)
        holder_set(t, kind);
      return g;
    }
  }
  if (attached_tstate() == t->ts)
    return (pb_gil){PB_GIL_HELD, PyGILState_LOCKED};
  wait_begin(t, kind, op);
  PyEval_RestoreThread(t->ts);
  wait_end(t);
  holder_set(t, kind);
  return (pb_gil){PB_GIL_KEPT, PyGILState_LOCKED};
}

pb_gil pb_enter(void) { return pb_enter_on(&pb_tls, -1, NULL); }

void pb_leave(pb_gil g) {
  switch (g.how) {
  case PB_GIL_KEPT:
    atomic_store_explicit(&gil_holder, 0, memory_order_relaxed);
    PyEval_SaveThread();
    break;
  case PB_GIL_ENSURED:
    if (g.ensured == PyGILState_UNLOCKED)
      atomic_store_explicit(&gil_holder, 0, memory_order_relaxed);
    PyGILState_Release(g.ensured);
    break;
  case PB_GIL_HELD:
    break;
  }
}

/* ------------------------------------------------------------- config */

bool pb_str_ok(pyop_str s, bool required) {
  if (s.len > 0 && s.data == NULL)
    return false;
  if (required && s.len == 0)
    return false;
  return s.len == 0 || memchr(s.data, '\0', s.len) == NULL;
}

/* ---------------------------------------------------- owned interpreter */

/*
 * With PYOP_BRIDGE_START_PYTHON the bridge starts Python on a thread of its
 * own, the interpreter thread: pyop_load and pyop_shutdown may come from any
 * host threads. The thread imports threading first, so that
 * threading.main_thread() is the interpreter thread and never a host
 * thread's Python state. It blocks every signal (the host's signals go to
 * the host's threads), Python installs no handlers, and the SIGINT handler
 * that importing signal would install is given back to the host
 * (keep_host_sigint); plugins, which never run on that thread, cannot
 * install any either (signal.signal only works on Python's main thread).
 *
 * libpyop never finalizes the Python it started. Py_FinalizeEx cannot be
 * undone: extension modules a plugin imported stay loaded and cannot be
 * initialised a second time (numpy crashes in the next Py_Initialize), and
 * it would wait forever for a non-daemon thread a plugin left. So at
 * shutdown everything of libpyop's is released (ops, the plugins' modules,
 * the pyop package), sys.stdout and sys.stderr are flushed, non-daemon
 * threads still running are named in a warning, the interpreter thread
 * ends, and the interpreter stays initialised and idle (its GIL free) for
 * the life of the process: the next pyop_load uses it. Its state dict says
 * it is libpyop's (PB_STARTED_KEY), for every later bridge image.
 */
enum { IT_NONE, IT_STARTING, IT_READY, IT_FAILED, IT_FINISH, IT_DONE };

static struct {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  pthread_t thread;
  int state;
  int rc;         /* start status */
  char *msg;      /* start failure (malloc'd) */
} it = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER};

static void it_set(int state) {
  pthread_mutex_lock(&it.mu);
  it.state = state;
  pthread_cond_broadcast(&it.cv);
  pthread_mutex_unlock(&it.mu);
}

/* Waits until it.state is a or b; returns it. */
static int it_wait(int a, int b) {
  pthread_mutex_lock(&it.mu);
  while (it.state != a && it.state != b)
    pthread_cond_wait(&it.cv, &it.mu);
  int st = it.state;
  pthread_mutex_unlock(&it.mu);
  return st;
}

/* Py_InitializeFromConfig, isolated; *msg (malloc'd) on failure. */
static int init_python(char **msg) {
  PyConfig config;
  PyConfig_InitIsolatedConfig(&config);
  config.install_signal_handlers = 0;
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
  return PYOP_OK;
fail:
  PyConfig_Clear(&config);
  if (PyStatus_IsExit(status))
    *msg = pb_strdupf("starting Python (isolated configuration) failed: exit code %d",
                      status.exitcode);
  else
    *msg = pb_strdupf("starting Python (isolated configuration) failed: %s%s%s",
                      status.func != NULL ? status.func : "", status.func != NULL ? ": " : "",
                      status.err_msg != NULL ? status.err_msg : "unknown error");
  return PYOP_EPYTHON;
}

/*
 * CPython's signal module, when it is first imported in the main
 * interpreter, installs its own SIGINT handler (KeyboardInterrupt) if
 * SIGINT is at SIG_DFL, whatever install_signal_handlers says (3.11:
 * signal_get_set_handlers, called from the module's exec). A plugin that
 * imports subprocess would so take Ctrl-C from a C host. The interpreter
 * thread imports it first (GIL held, before any plugin) and gives SIGINT
 * back: Python's table is set to SIG_DFL (so Python neither runs a handler
 * nor resets the signal later) and the disposition the host had is put
 * back. A SIGINT that Python caught in between is sent again, to the host.
 */
static void keep_host_sigint(void) {
  struct sigaction before;
  if (sigaction(SIGINT, NULL, &before) != 0)
    return;
  PyObject *mod = PyImport_ImportModule("signal");
  if (mod == NULL) {
    PyErr_Clear();
    return;
  }
  struct sigaction now;
  if (sigaction(SIGINT, NULL, &now) == 0 && handler_of(&now) != handler_of(&before)) {
    sigaction(SIGINT, &before, NULL);
    bool caught = PyErr_CheckSignals() < 0; /* Python's table still has its handler */
    PyErr_Clear();
    PyObject *r = PyObject_CallMethod(mod, "signal", "ii", SIGINT, 0 /* SIG_DFL */);
    if (r == NULL)
      PyErr_Clear();
    Py_XDECREF(r);
    sigaction(SIGINT, &before, NULL);
    if (caught)
      kill(getpid(), SIGINT);
  }
  Py_DECREF(mod);
}

/* Marks the interpreter as libpyop's in its state dict (GIL held). */
static void mark_python_ours(void) {
  PyObject *d = PyInterpreterState_GetDict(PyInterpreterState_Get());
  if (d == NULL || PyDict_SetItemString(d, PB_STARTED_KEY, Py_True) < 0)
    PyErr_Clear();
  atomic_store(&pb_python_ours, true);
}

/*
 * The live non-daemon threads other than this one and Python's main thread
 * ("'name' (ident N), ..."; "" when none), malloc'd. NULL when Python could
 * not tell: *why (malloc'd, may be NULL) then says why. An exception raised
 * while listing is an error, never "no threads"; a KeyboardInterrupt (a
 * pending interrupt surfacing here) is cleared and the listing tried again,
 * a bounded number of times. Never waits for a thread.
 */
static char *threads_running(char **why) {
  static const char src[] =
      "def running():\n"
      "    import threading\n"
      "    skip = (threading.current_thread(), threading.main_thread())\n"
      "    return ', '.join(\"'%s' (ident %s)\" % (t.name, t.ident)\n"
      "                     for t in threading.enumerate()\n"
      "                     if t not in skip and not t.daemon and t.is_alive())\n";
  *why = NULL;
  char *out = NULL;
  for (int attempt = 0; attempt < 3 && out == NULL; attempt++) {
    PyObject *g = PyDict_New();
    PyObject *r = NULL, *names = NULL;
    if (g != NULL && PyDict_SetItemString(g, "__builtins__", PyEval_GetBuiltins()) == 0)
      r = PyRun_String(src, Py_file_input, g, g);
    PyObject *fn = r != NULL ? PyDict_GetItemString(g, "running") : NULL; /* borrowed */
    if (fn != NULL)
      names = PyObject_CallNoArgs(fn);
    if (names != NULL && !PyUnicode_Check(names))
      PyErr_Format(PyExc_TypeError, "the listing returned %s", Py_TYPE(names)->tp_name);
    const char *s = names != NULL && PyUnicode_Check(names) ? PyUnicode_AsUTF8(names) : NULL;
    if (s != NULL)
      out = strdup(s);
    if (out == NULL) {
      bool interrupted = PyErr_ExceptionMatches(PyExc_KeyboardInterrupt);
      PyObject *exc = pb_exc_fetch();
      free(*why);
      *why = exc != NULL ? describe_exception(exc) : pb_strdupf("out of memory");
      Py_XDECREF(exc);
      if (!interrupted)
        attempt = 3;
    }
    Py_XDECREF(names);
    Py_XDECREF(r);
    Py_XDECREF(g);
  }
  PyErr_Clear();
  if (out != NULL) {
    free(*why);
    *why = NULL;
  }
  return out;
}

/*
 * What pyop_shutdown does to a Python libpyop started, which stays
 * initialised (see above; GIL held, after the package is dropped): flushes
 * sys.stdout and sys.stderr, and names the plugin threads left running.
 */
static void leave_python_ours(void) {
  for (int i = 0; i < 2; i++) {
    PyObject *stream = PySys_GetObject(i == 0 ? "stdout" : "stderr"); /* borrowed */
    PyObject *r = stream != NULL && stream != Py_None ? PyObject_CallMethod(stream, "flush", NULL)
                                                      : NULL;
    Py_XDECREF(r);
    PyErr_Clear();
  }
  char *why = NULL;
  char *left = threads_running(&why);
  if (left == NULL)
    pb_log(PYOP_LOG_WARN,
           "pyop_shutdown: could not list the Python threads left running: %s",
           why != NULL ? why : "unknown error");
  else if (left[0] != '\0')
    pb_log(PYOP_LOG_WARN,
           "Python thread(s) %s started by a plugin are still running at pyop_shutdown; "
           "they keep running: libpyop never finalizes the Python it started (the ops, the "
           "plugins' modules and the pyop package are released; the interpreter stays "
           "initialised and idle, and the next pyop_load uses it)",
           left);
  free(left);
  free(why);
}

static void *interp_main(void *arg) {
  (void)arg;
  char *msg = NULL;
  int rc = init_python(&msg);
  if (rc == PYOP_OK) {
    PyObject *threading = PyImport_ImportModule("threading");
    if (threading == NULL)
      PyErr_Clear();
    Py_XDECREF(threading);
    keep_host_sigint();
    mark_python_ours();
    pb.main_tstate = PyEval_SaveThread();
  }
  pthread_mutex_lock(&it.mu);
  it.rc = rc;
  it.msg = msg;
  it.state = rc == PYOP_OK ? IT_READY : IT_FAILED;
  pthread_cond_broadcast(&it.cv);
  if (rc == PYOP_OK) {
    /* Python's main thread while the bridge that started it is loaded. */
    while (it.state != IT_FINISH)
      pthread_cond_wait(&it.cv, &it.mu);
    it.state = IT_DONE;
    pthread_cond_broadcast(&it.cv);
  }
  pthread_mutex_unlock(&it.mu);
  return NULL;
}

/* Starts an isolated Python that the bridge owns on the interpreter thread;
 * the GIL is left released. */
static int start_python(void) {
  it.state = IT_STARTING;
  it.msg = NULL;
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old); /* the thread inherits: no host signal */
  int e = pthread_create(&it.thread, NULL, interp_main, NULL);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (e != 0) {
    it.state = IT_NONE;
    return pb_error(PYOP_EPYTHON, "starting Python: cannot create its thread: %s", strerror(e));
  }
  if (it_wait(IT_READY, IT_FAILED) == IT_FAILED) {
    pthread_join(it.thread, NULL);
    int rc = pb_error(it.rc, "%s", it.msg != NULL ? it.msg : "starting Python failed");
    free(it.msg);
    it.msg = NULL;
    it.state = IT_NONE;
    return rc;
  }
  pb.owns_python = true;
  return PYOP_OK;
}

/* Ends the interpreter thread (Python stays initialised). */
static void finish_python(void) {
  it_set(IT_FINISH);
  it_wait(IT_DONE, IT_DONE);
  pthread_join(it.thread, NULL);
  it.state = IT_NONE;
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
  int lrc = pb_lanes_configure(config);
  if (lrc != PYOP_OK)
    return lrc;
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

/*
 * A host thread that holds the GIL while running no Python (it initialised
 * Python and never released it) makes every call from another thread wait.
 * Said at each load (GIL held).
 */
static void warn_if_gil_kept(pb_gil how) {
  bool held_before = how.how == PB_GIL_HELD ||
                     (how.how == PB_GIL_ENSURED && how.ensured == PyGILState_LOCKED);
  if (!held_before)
    return; /* the GIL was free: taken for this call */
  PyFrameObject *frame = PyThreadState_GetFrame(attached_tstate());
  if (frame != NULL) {
    Py_DECREF(frame); /* a Python caller (ctypes.PyDLL): it releases the GIL as it runs */
    return;
  }
  pb_log(PYOP_LOG_WARN,
         "the thread calling pyop_load holds the GIL while running no Python: calls "
         "from other threads will wait until it releases it. A host that initialised Python "
         "should call PyEval_SaveThread() right after Py_Initialize (and "
         "PyEval_RestoreThread() before Py_FinalizeEx)");
}

static int pb_register_custom_ops(const pyop_registrar *registrar, const pyop_str *paths,
                                  size_t n_paths) {
  if (pb.artifact_dir == NULL)
    return pb_error(PYOP_ESTATE, "bridge register_custom_ops: set_config was not called");
  if (!pb_python_usable())
    return pb_error_no_python("loading Python plugins");
  pb_gil st = pb_enter();
  warn_if_gil_kept(st);
  int rc = pb_register(registrar, paths, n_paths);
  if (rc == PYOP_EINTR)
    pb_interrupt_caller();
  pb_leave(st);
  return rc;
}

static void pb_reset(void) {
  if (!pb_python_usable()) {
    pb_package_forget();
    return;
  }
  pb_gil st = pb_enter();
  pb_reset_gil();
  pb_leave(st);
}

static void pb_shutdown(void) {
  if (!pb_python_usable()) {
    /* The interpreter is gone (or is another one): forget, touch nothing. */
    pb_package_forget();
    exit_watch = NULL; /* died with that interpreter's state dict */
    atomic_fetch_add(&generation, 1);
    if (pb.owns_python) {
      pb_log(PYOP_LOG_WARN, "the Python libpyop started was finalized by someone else");
      finish_python();
    }
  } else {
    pb_gil st = pb_enter();
    pb_reset_gil();
    pb_package_drop();
    if (atomic_load(&pb_python_ours))
      leave_python_ours();
    pb_leave(st);
    atomic_fetch_add(&generation, 1);
    if (pb.owns_python)
      finish_python();
  }
  atomic_store(&pb_python_ours, false);
  pb.owns_python = false;
  pb.main_tstate = NULL;
  watch_stop_all();
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

/*
 * ABI 1.5: whether the interpreter the bridge's objects belong to still
 * runs (pb_lost is set by the exit watch, which does not depend on atexit).
 * No GIL, no Python call, no error recorded.
 */
static int pb_interpreter_status(void) {
  return pb_python_usable() ? PYOP_OK : PYOP_ENOTINIT;
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
    pb_interpreter_status,
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
