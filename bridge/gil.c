/*
 * Taking and giving back the GIL from any host thread (pb_enter_on,
 * pb_leave): the Python thread state the bridge keeps per host thread, the
 * generation that retires kept states when their interpreter is gone, and
 * which host thread inside libpyop holds the GIL (for the GIL-wait watch,
 * gil_watch.c).
 */
#include "bridge.h"

#include <assert.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

_Thread_local pb_thread pb_tls;

/*
 * Each host thread that calls in gets one Python thread state, made by a
 * PyGILState_Ensure that is never released while the thread lives (each
 * call then only attaches and detaches it: pb_enter/pb_leave), and torn
 * down by a pthread key destructor at thread exit. Threads that already have
 * a thread state (Python threads, the thread that initialised Python) use it
 * as it is. generation changes when the bridge shuts down, so a destructor
 * never touches a thread state of a finished interpreter.
 *
 * Thread states are per (thread, interpreter), and the bridge's objects
 * live in the main interpreter. CPython's PyGILState_* knows one state per
 * thread: the first one made on it, whatever its interpreter. On a thread
 * whose first state belongs to a sub-interpreter (one the host made, or
 * one of its own the host runs there) PyGILState_Ensure would attach that
 * state and run the bridge's objects in the wrong interpreter (issue 20):
 * such a thread gets a kept state made for the main interpreter with
 * PyThreadState_New, attached and detached directly. A thread that enters
 * with another interpreter's state attached has it detached for the call
 * and attached again after (pb_gil.other).
 */
typedef struct pb_kept {
  PyThreadState *ts;
  unsigned gen;
  struct pb_kept *next, *prev; /* kept_list, under key_lock */
} pb_kept;

static pthread_mutex_t key_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_key_t ts_key;
static bool ts_key_ok;
static atomic_uint generation = 1;
/* Every thread's pb_kept, until it exits or the key goes (a lane image ends
 * their states first: pb_kept_end_all). */
static pb_kept *kept_list;

/*
 * The interpreter this image's objects live in: the main one, or for the
 * image of an interpreter lane (lanes.c) its sub-interpreter. Set once, at
 * set_config, before any thread state is kept.
 */
static PyInterpreterState *home_interp;

void pb_gil_set_home(PyInterpreterState *interp) { home_interp = interp; }

static inline PyInterpreterState *home(void) {
  return home_interp != NULL ? home_interp : PyInterpreterState_Main();
}

static void kept_unlink_locked(pb_kept *k) {
  if (k->prev != NULL)
    k->prev->next = k->next;
  else if (kept_list == k)
    kept_list = k->next;
  if (k->next != NULL)
    k->next->prev = k->prev;
  k->next = k->prev = NULL;
}

static bool python_finalizing(void) {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsFinalizing();
#else
  return _Py_IsFinalizing();
#endif
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

long pb_gil_holder(void) { return atomic_load_explicit(&gil_holder, memory_order_relaxed); }

static void kept_destructor(void *p) {
  pb_kept *k = NULL;
  /* p is only dereferenced while on kept_list: pb_kept_key_delete, racing
   * with this thread's exit, may have freed it already (compared by
   * address until found). */
  pthread_mutex_lock(&key_lock);
  for (pb_kept *i = kept_list; i != NULL && k == NULL; i = i->next)
    if (i == p)
      k = i;
  if (k != NULL)
    kept_unlink_locked(k);
  pthread_mutex_unlock(&key_lock);
  pb_watch_remove(&pb_tls);
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

void pb_kept_key_create(void) {
  pthread_mutex_lock(&key_lock);
  if (!ts_key_ok)
    ts_key_ok = pthread_key_create(&ts_key, kept_destructor) == 0;
  pthread_mutex_unlock(&key_lock);
}

void pb_kept_key_delete(void) {
  pthread_mutex_lock(&key_lock);
  if (ts_key_ok) {
    /* No destructor may run into this image after dlclose. */
    pthread_key_delete(ts_key);
    ts_key_ok = false;
    /* With the key gone no destructor frees the blocks of the threads still
     * alive (the calling one included), and the next key may take the same
     * slot and overwrite their values: free them here. */
    while (kept_list != NULL) {
      pb_kept *k = kept_list;
      kept_unlink_locked(k);
      free(k);
    }
  }
  pthread_mutex_unlock(&key_lock);
}

void pb_kept_retire(void) { atomic_fetch_add(&generation, 1); }

void pb_kept_end_all(void) {
  assert(home_interp != NULL);
  assert(pb_attached_tstate() == NULL); /* lanes.c detached the caller's */
  PyThreadState *ts = PyThreadState_New(home_interp);
  if (ts == NULL)
    return;
  PyEval_RestoreThread(ts);
  unsigned gen = atomic_load(&generation);
  /* One state at a time, taken off its block under key_lock and cleared
   * without it: clearing runs Python (a thread-local's __del__), which must
   * not find the lock held (it may enter the bridge: keep_thread_state). The
   * block stays the thread's key value, and on kept_list, until the thread
   * exits (kept_destructor) or the key goes (pb_kept_key_delete). */
  for (;;) {
    PyThreadState *victim = NULL;
    pthread_mutex_lock(&key_lock);
    for (pb_kept *k = kept_list; k != NULL && victim == NULL; k = k->next) {
      if (k->ts != NULL && k->gen == gen)
        victim = k->ts;
      k->ts = NULL;
    }
    pthread_mutex_unlock(&key_lock);
    if (victim == NULL)
      break;
    PyThreadState_Clear(victim);
    PyThreadState_Delete(victim);
  }
  PyThreadState_Clear(ts);
  PyThreadState_DeleteCurrent();
}

/*
 * The key, in the state's own dict, marking a thread state this image's
 * PyGILState_Ensure made. A shutdown forgets the kept states (the thread
 * key goes) but the thread keeps the state as its PyGILState one; t->made
 * remembers its address. In a later session of the same Python the mark
 * tells that state from one of a Python the host started since at the same
 * address (a new runtime's state has a dict of its own, without the mark).
 */
#define KEPT_MARK "libpyop.kept_thread_state"

/* Whether the attached thread state carries KEPT_MARK. */
static bool attached_has_mark(void) {
  PyObject *d = PyThreadState_GetDict();
  return d != NULL && PyDict_GetItemString(d, KEPT_MARK) == Py_True;
}

/* Marks the attached thread state (just made by PyGILState_Ensure, so no
 * exception of the host's is pending) as this image's. */
static void mark_attached(void) {
  PyObject *d = PyThreadState_GetDict();
  if (d == NULL || PyDict_SetItemString(d, KEPT_MARK, Py_True) < 0)
    PyErr_Clear(); /* unmarked: a later session will not take it again */
}

/*
 * Gives this thread a kept thread state when it has none of its own. The
 * key's value is set first, so the thread leaves the watch list at exit
 * whatever happens; the first PyGILState_Ensure may wait for the GIL, as a
 * watched wait of (kind, op). A state of its own that an earlier session
 * made (t->made, still marked) is taken again, the same way.
 */
static void keep_thread_state(pb_thread *t, int kind, const pb_op *op) {
  unsigned gen = atomic_load(&generation);
  PyInterpreterState *here = home();
  PyThreadState *own = PyGILState_GetThisThreadState();
  bool again = false;
  if (own != NULL && PyThreadState_GetInterpreter(own) == here) {
    if (own != t->made)
      return; /* its own state in the bridge's interpreter: PyGILState finds it */
    again = true; /* made by an earlier session, if its mark says so */
  }
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
    pthread_mutex_lock(&key_lock);
    k->next = kept_list;
    if (kept_list != NULL)
      kept_list->prev = k;
    kept_list = k;
    pthread_mutex_unlock(&key_lock);
  }
  bool was_watched = t->watched;
  pb_watch_add(t);
  if (again) {
    bool attached = pb_attached_tstate() == own;
    if (!attached) {
      pb_wait_begin(t, kind, op);
      PyEval_RestoreThread(own);
      pb_wait_end(t);
    }
    bool mine = attached_has_mark();
    if (!attached)
      PyEval_SaveThread();
    if (!mine) {
      /* The host's state at a known address: leave it to PyGILState. */
      t->made = NULL;
      if (!was_watched)
        pb_watch_remove(t);
      return;
    }
    k->ts = own;
    k->gen = gen;
    t->ts = own;
    t->gen = gen;
    return;
  }
  if (own != NULL || here != PyInterpreterState_Main()) {
    /* PyGILState's state of this thread is another interpreter's, or this
     * image is a lane's (PyGILState only ever makes main-interpreter
     * states). */
    PyThreadState *ts = PyThreadState_New(here);
    if (ts == NULL)
      return;
    pb_wait_begin(t, kind, op);
    PyEval_RestoreThread(ts);
    pb_wait_end(t);
  } else {
    pb_wait_begin(t, kind, op);
    PyGILState_STATE st = PyGILState_Ensure();
    pb_wait_end(t);
    (void)st; /* never released: the state stays this thread's until it exits */
    mark_attached();
    t->made = pb_attached_tstate();
  }
  k->ts = PyEval_SaveThread();
  k->gen = gen;
  t->ts = k->ts;
  t->gen = gen;
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
/*
 * The state attached to this thread when it belongs to another interpreter
 * than the bridge's, detached (its GIL released), or NULL. Cold: only a
 * host that runs a sub-interpreter on the calling thread gets here.
 */
static PyThreadState *detach_other(PyThreadState *cur) {
  if (cur == NULL || PyThreadState_GetInterpreter(cur) == home())
    return NULL;
  return PyEval_SaveThread();
}

pb_gil pb_enter_on(pb_thread *t, int kind, const pb_op *op) {
  unsigned gen = atomic_load(&generation);
  PyThreadState *cur = pb_attached_tstate();
  if (t->ts == NULL || t->gen != gen) {
    PyThreadState *other = __builtin_expect(cur != NULL, 0) ? detach_other(cur) : NULL;
    keep_thread_state(t, kind, op);
    if (t->ts == NULL || t->gen != gen) {
      if (t->tid == 0)
        t->tid = (long)syscall(SYS_gettid);
      pb_wait_begin(t, kind, op);
      pb_gil g = {PB_GIL_ENSURED, PyGILState_Ensure(), other};
      pb_wait_end(t);
      if (g.ensured == PyGILState_UNLOCKED)
        holder_set(t, kind);
      return g;
    }
    if (other != NULL)
      cur = NULL; /* detached above: t->ts is attached below */
    else
      cur = pb_attached_tstate();
    if (cur == t->ts)
      return (pb_gil){PB_GIL_HELD, PyGILState_LOCKED, NULL};
    pb_wait_begin(t, kind, op);
    PyEval_RestoreThread(t->ts);
    pb_wait_end(t);
    holder_set(t, kind);
    return (pb_gil){PB_GIL_KEPT, PyGILState_LOCKED, other};
  }
  if (cur == t->ts)
    return (pb_gil){PB_GIL_HELD, PyGILState_LOCKED, NULL};
  PyThreadState *other = __builtin_expect(cur != NULL, 0) ? detach_other(cur) : NULL;
  pb_wait_begin(t, kind, op);
  PyEval_RestoreThread(t->ts);
  pb_wait_end(t);
  holder_set(t, kind);
  return (pb_gil){PB_GIL_KEPT, PyGILState_LOCKED, other};
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
  if (__builtin_expect(g.other != NULL, 0))
    PyEval_RestoreThread(g.other);
}
