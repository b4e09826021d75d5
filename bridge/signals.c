/*
 * Signal dispositions around plugins: the host's handlers saved before
 * plugins run and put back where a plugin's Python code replaced them, and
 * the host's SIGINT kept when the interpreter libpyop starts imports signal.
 */
#include "bridge.h"
#include "os.h"

#include <dlfcn.h>
#include <signal.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

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

void pb_signals_forget(void) { saved_sig_valid = false; }

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
void pb_signals_keep_host_sigint(void) {
  struct sigaction before;
  if (sigaction(SIGINT, NULL, &before) != 0)
    return;
  PyObject *mod = PyImport_ImportModule("signal");
  if (mod == NULL) {
    PyErr_Clear();
    return;
  }
  /* Test seam: a SIGINT that Python's handler took meanwhile (on a host
   * thread: this one blocks it), as its C handler leaves it. */
  if (pb_lanes_test_seam("sigint-at-start"))
    (void)PyErr_SetInterruptEx(SIGINT);
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
