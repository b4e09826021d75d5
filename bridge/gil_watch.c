/*
 * Who holds the GIL when a call waits for it, the one diagnosis: the load
 * notes a host thread that keeps the GIL (pb_watch_note_load), and a watch
 * thread logs, once per wait, a call that has waited PB_WATCH_SECONDS for
 * the GIL and who holds it.
 */
#include "bridge.h"

#include <assert.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

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

/* What both lines tell a host whose thread keeps the GIL. */
#define PB_GIL_KEPT_ADVICE                                                                    \
  "After Py_Initialize call PyEval_SaveThread() (and PyEval_RestoreThread() before "          \
  "Py_FinalizeEx); see docs/host-guide.md"

/*
 * The load's finding: gettid() of the thread that called pyop_load holding
 * the GIL while running no Python, 0 when the last load found it free (or
 * taken by Python code). The watch names that thread instead of guessing.
 */
static atomic_long kept_by;

/*
 * A host thread that holds the GIL while running no Python (it initialised
 * Python and never released it) makes every call from another thread wait.
 * Said at each load and recorded for the watch (GIL held).
 */
void pb_watch_note_load(pb_gil how) {
  bool held_before = how.how == PB_GIL_HELD ||
                     (how.how == PB_GIL_ENSURED && how.ensured == PyGILState_LOCKED);
  PyFrameObject *frame = held_before ? PyThreadState_GetFrame(pb_attached_tstate()) : NULL;
  if (!held_before || frame != NULL) {
    /* The GIL was free (taken for this call), or a Python caller
     * (ctypes.PyDLL) holds it, which releases it as it runs. */
    Py_XDECREF(frame);
    atomic_store_explicit(&kept_by, 0, memory_order_relaxed);
    return;
  }
  long tid = (long)syscall(SYS_gettid);
  atomic_store_explicit(&kept_by, tid, memory_order_relaxed);
  pb_log(PYOP_LOG_WARN,
         "the thread calling pyop_load (thread %ld) holds the GIL while running no Python: "
         "calls from other threads will wait until it releases it. " PB_GIL_KEPT_ADVICE,
         tid);
}

/* The watch's line for a call that waited PB_WATCH_SECONDS (malloc'd). */
static char *wait_line(const char *call, long tid) {
  long holder = pb_gil_holder();
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
  long kept = atomic_load_explicit(&kept_by, memory_order_relaxed);
  if (kept != 0 && kept != tid)
    return pb_strdupf(
        "%s on thread %ld has waited %d s for the Python GIL. No host thread inside "
        "libpyop holds it; thread %ld held it while running no Python when it called "
        "pyop_load (the host thread that initialised Python and never released it) and "
        "still does. " PB_GIL_KEPT_ADVICE,
        call, tid, PB_WATCH_SECONDS, kept);
  return pb_strdupf(
      "%s on thread %ld has waited %d s for the Python GIL. No host thread inside libpyop "
      "holds it: a thread libpyop did not enter does (a host thread that took the GIL "
      "and runs no Python, or a Python thread running C that keeps it). " PB_GIL_KEPT_ADVICE,
      call, tid, PB_WATCH_SECONDS);
}

/* The watch's line for a call that waited PB_WATCH_SECONDS for the call
 * lock of its instance (a free-threaded Python; malloc'd). */
static char *lock_wait_line(const char *call, long tid) {
  return pb_strdupf(
      "%s on thread %ld has waited %d s for the lock of its op instance (a free-threaded "
      "Python runs one call of an instance, or of the instances sharing a GE object, at a "
      "time): another thread is inside a call of it and has not returned, such as a host "
      "service of that call (alloc_output, alloc_workspace) waiting for this thread's call, "
      "or a long computation; see docs/host-guide.md, \"Free-threaded Python\"",
      call, tid, PB_WATCH_SECONDS);
}

/* A wait seen by the last scan (kept by the watch thread only): the
 * thread's block, its thread id (a block freed when its thread ended can
 * come back at the same address for a new thread, whose first wait has the
 * same count), the wait's count and for how many scans it has waited. */
typedef struct watch_seen {
  const pb_thread *t;
  long tid;
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
        if (seen[i].t == t && seen[i].tid == t->tid && seen[i].seq == seq)
          scans = seen[i].scans + 1;
      now[n_now++] = (watch_seen){t, t->tid, seq, scans};
      if (scans != PB_WATCH_SECONDS || n_lines == sizeof lines / sizeof lines[0])
        continue; /* logged once per wait: when it reaches the threshold */
      int kind = atomic_load_explicit(&t->wait_kind, memory_order_relaxed);
      bool call_lock = kind >= PB_WAIT_CALL_LOCK - 1;
      if (call_lock)
        kind -= PB_WAIT_CALL_LOCK;
      const pb_op *op = atomic_load_explicit(&t->wait_op, memory_order_acquire);
      char call[200];
      if (kind >= 0 && kind < PB_NKINDS && op != NULL)
        snprintf(call, sizeof call, "%s of op '%s'", pb_kind_names[kind], op->op_type);
      else
        snprintf(call, sizeof call, "a libpyop call (load, create or destroy)");
      lines[n_lines++] = call_lock ? lock_wait_line(call, t->tid) : wait_line(call, t->tid);
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
void pb_watch_add(pb_thread *t) {
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
void pb_watch_stop_all(void) {
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
  atomic_store_explicit(&kept_by, 0, memory_order_relaxed);
}

/* Takes t off the watch list if it is on it (its thread exits). */
void pb_watch_remove(pb_thread *t) {
  watch_lock_take();
  if (t->watched)
    watch_remove_locked(t);
  watch_lock_give();
}
