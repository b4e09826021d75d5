/*
 * The Python libpyop starts for a C host that has none (PYOP_BRIDGE_START_PYTHON):
 * its isolated configuration, the interpreter thread it lives on, and what
 * shutdown does to it (it is never finalized).
 */
#include "bridge.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#ifndef PYOP_BRIDGE_PYTHON_HOME
#define PYOP_BRIDGE_PYTHON_HOME ""
#endif

/*
 * With PYOP_BRIDGE_START_PYTHON the bridge starts Python on a thread of its
 * own, the interpreter thread: pyop_load and pyop_shutdown may come from any
 * host threads. The thread imports threading first, so that
 * threading.main_thread() is the interpreter thread and never a host
 * thread's Python state. It blocks every signal (the host's signals go to
 * the host's threads), Python installs no handlers, and the SIGINT handler
 * that importing signal would install is given back to the host
 * (pb_signals_keep_host_sigint); plugins, which never run on that thread, cannot
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
 * The live non-daemon threads of the attached state's interpreter other
 * than this one and that interpreter's main thread ("'name' (ident N),
 * ..."; "" when none), malloc'd. See bridge.h. This thread is skipped by
 * its ident: threading.current_thread() would make a dummy Thread for a
 * thread threading does not know (a lane ended from another host thread),
 * whose finalizer complains when the state goes. NULL when Python could
 * not tell: *why (malloc'd, may be NULL) then says why. An exception raised
 * while listing is an error, never "no threads"; a KeyboardInterrupt (a
 * pending interrupt surfacing here) is cleared and the listing tried again,
 * a bounded number of times. Never waits for a thread.
 */
char *pb_threads_running(char **why) {
  static const char src[] =
      "def running():\n"
      "    import threading\n"
      "    me, main = threading.get_ident(), threading.main_thread()\n"
      "    return ', '.join(\"'%s' (ident %s)\" % (t.name, t.ident)\n"
      "                     for t in threading.enumerate()\n"
      "                     if t is not main and t.ident != me\n"
      "                     and not t.daemon and t.is_alive())\n";
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
      *why = exc != NULL ? pb_describe_exception(exc) : pb_strdupf("out of memory");
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
void pb_python_leave_ours(void) {
  for (int i = 0; i < 2; i++) {
    PyObject *stream = PySys_GetObject(i == 0 ? "stdout" : "stderr"); /* borrowed */
    PyObject *r = stream != NULL && stream != Py_None ? PyObject_CallMethod(stream, "flush", NULL)
                                                      : NULL;
    Py_XDECREF(r);
    PyErr_Clear();
  }
  char *why = NULL;
  char *left = pb_threads_running(&why);
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
    pb_signals_keep_host_sigint();
    pb_python_mark_ours();
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
int pb_python_start(void) {
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
void pb_python_finish(void) {
  it_set(IT_FINISH);
  it_wait(IT_DONE, IT_DONE);
  pthread_join(it.thread, NULL);
  it.state = IT_NONE;
}
