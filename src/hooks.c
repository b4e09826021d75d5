/*
 * Host hooks (hooks.h; pyop_set_host_hooks, pyop.h): the installed hooks,
 * the calls of them in progress, and the fork handlers' part of them.
 */
#include "hooks.h"

#include <assert.h>
#include <pthread.h>
#include <stdint.h>

/*
 * The installed hooks and the calls of them in progress. A hook is called
 * with no lock held: the call is counted under hk.mu, made, and uncounted.
 * pyop_set_host_hooks replaces the hooks and bumps gen, so every call that
 * starts afterwards sees the new ones, and then waits until the calls of
 * earlier generations (running_old) have ended.
 *
 * Invariants (under hk.mu): running counts the calls of generation gen in
 * progress, running_old those of earlier generations since fork_gen; a
 * call of a generation before fork_gen began in the parent of a fork and
 * is not counted.
 */
static struct {
  pthread_mutex_t mu;
  pthread_cond_t drained;
  pyop_host_hooks h; /* all NULL: none installed */
  uint64_t gen;
  uint64_t fork_gen;
  size_t running;
  size_t running_old;
} hk = {.mu = PTHREAD_MUTEX_INITIALIZER, .drained = PTHREAD_COND_INITIALIZER};

/* Hook calls in progress on this thread (a hook that called libpyop). */
static _Thread_local unsigned hook_depth;

#ifndef NDEBUG
/* Libpyop locks held by this thread, as their owners mark them. */
static _Thread_local unsigned locks_held;

void pyop__hooks_barred(bool on) {
  assert(on || locks_held > 0);
  locks_held += on ? 1u : (unsigned)-1;
}
#endif

typedef struct hook_call {
  uint64_t gen;
  pyop__error_saved saved;
} hook_call;

/* Counts one call of the current hooks; the caller has copied the member
 * it calls under hk.mu. Keeps the thread's last error aside. */
static void hook_begin_locked(hook_call *c) {
  c->gen = hk.gen;
  hk.running++;
}

static void hook_enter(hook_call *c) {
  assert(locks_held == 0);
  hook_depth++;
  pyop__error_save(&c->saved);
}

static void hook_end(hook_call *c) {
  pyop__error_restore(&c->saved);
  hook_depth--;
  pthread_mutex_lock(&hk.mu);
  if (c->gen == hk.gen) {
    assert(hk.running > 0);
    hk.running--;
  } else if (c->gen >= hk.fork_gen) {
    assert(hk.running_old > 0);
    if (--hk.running_old == 0) pthread_cond_broadcast(&hk.drained);
  }
  pthread_mutex_unlock(&hk.mu);
}

unsigned pyop__hooks_present(void) {
  pthread_mutex_lock(&hk.mu);
  unsigned m = (hk.h.owns_op ? PYOP__HOOK_OWNS_OP : 0) |
               (hk.h.on_register ? PYOP__HOOK_ON_REGISTER : 0) |
               (hk.h.on_unregister ? PYOP__HOOK_ON_UNREGISTER : 0) |
               (hk.h.log ? PYOP__HOOK_LOG : 0);
  pthread_mutex_unlock(&hk.mu);
  return m;
}

int pyop__hook_owns_op(const char *op_type) {
  hook_call c;
  pthread_mutex_lock(&hk.mu);
  int (*fn)(void *, const char *) = hk.h.owns_op;
  void *user = hk.h.user;
  if (fn) hook_begin_locked(&c);
  pthread_mutex_unlock(&hk.mu);
  if (!fn) return 0;
  hook_enter(&c);
  int owns = fn(user, op_type) != 0;
  hook_end(&c);
  return owns;
}

void pyop__hook_on_register(const pyop_op_info *info) {
  hook_call c;
  pthread_mutex_lock(&hk.mu);
  void (*fn)(void *, const pyop_op_info *) = hk.h.on_register;
  void *user = hk.h.user;
  if (fn) hook_begin_locked(&c);
  pthread_mutex_unlock(&hk.mu);
  if (!fn) return;
  hook_enter(&c);
  fn(user, info);
  hook_end(&c);
}

void pyop__hook_on_unregister(const char *op_type) {
  hook_call c;
  pthread_mutex_lock(&hk.mu);
  void (*fn)(void *, const char *) = hk.h.on_unregister;
  void *user = hk.h.user;
  if (fn) hook_begin_locked(&c);
  pthread_mutex_unlock(&hk.mu);
  if (!fn) return;
  hook_enter(&c);
  fn(user, op_type);
  hook_end(&c);
}

/* A line logged while the host's log hook runs on this thread (the hook
 * called a libpyop function that logs) goes to stderr: re-entering the hook
 * could recurse without end. */
static _Thread_local bool in_log_hook;

bool pyop__hook_log(int level, const char *line) {
  if (in_log_hook) return false;
  hook_call c;
  pthread_mutex_lock(&hk.mu);
  void (*fn)(void *, int, const char *) = hk.h.log;
  void *user = hk.h.user;
  if (fn) hook_begin_locked(&c);
  pthread_mutex_unlock(&hk.mu);
  if (!fn) return false;
  hook_enter(&c);
  in_log_hook = true;
  fn(user, level, line);
  in_log_hook = false;
  hook_end(&c);
  return true;
}

/*
 * Installs a copy of the hooks (NULL: none). Members the caller's
 * struct_size does not cover whole stay NULL. Returns when no call of the
 * previous hooks is running, except when called from inside a hook (this
 * thread runs one): it then does not wait, since the waits of two such
 * calls could be each other's (docs/host-guide.md, "Hooks").
 */
int pyop_set_host_hooks(const pyop_host_hooks *in) {
  PYOP__FORK_GUARD();
  pyop_host_hooks copy;
  memset(&copy, 0, sizeof copy);
  if (in) {
    if (!PYOP__HAS(pyop_host_hooks, in, user))
      return pyop__error(PYOP_EINVAL,
                         "pyop_set_host_hooks: struct_size %zu is too small "
                         "(initialise with PYOP_HOST_HOOKS_INIT)",
                         in->struct_size);
    /* Each member whole or not at all: an older, shorter struct leaves the
     * newer ones NULL. */
    copy.struct_size = sizeof copy;
    copy.user = in->user;
    if (PYOP__HAS(pyop_host_hooks, in, owns_op)) copy.owns_op = in->owns_op;
    if (PYOP__HAS(pyop_host_hooks, in, on_register)) copy.on_register = in->on_register;
    if (PYOP__HAS(pyop_host_hooks, in, on_unregister)) copy.on_unregister = in->on_unregister;
    if (PYOP__HAS(pyop_host_hooks, in, log)) copy.log = in->log;
  }
  pthread_mutex_lock(&hk.mu);
  hk.h = copy;
  hk.gen++;
  hk.running_old += hk.running;
  hk.running = 0;
  if (hook_depth == 0)
    while (hk.running_old > 0) pthread_cond_wait(&hk.drained, &hk.mu);
  pthread_mutex_unlock(&hk.mu);
  return PYOP_OK;
}

/* Around fork() (fork.c): the child gets the hooks unlocked, and the
 * calls in progress in the parent (of threads the child does not have, or
 * of the forking thread, which ends them uncounted) are forgotten. */
void pyop__hooks_fork_lock(void) { pthread_mutex_lock(&hk.mu); }
void pyop__hooks_fork_unlock(void) { pthread_mutex_unlock(&hk.mu); }
void pyop__hooks_fork_child(void) {
  hk.gen++;
  hk.fork_gen = hk.gen;
  hk.running = hk.running_old = 0;
  pthread_cond_init(&hk.drained, NULL);
  pthread_mutex_unlock(&hk.mu);
}
