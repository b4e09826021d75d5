/*
 * fork(): the pthread_atfork handlers that keep every libpyop lock
 * consistent in the child, and the forked flag behind PYOP__FORK_GUARD
 * (fork.h; docs/design.md §Threads).
 */
#include "candidates.h"
#include "fork.h"
#include "hooks.h"
#include "kernel_libs.h"
#include "lifecycle.h"
#include "registry.h"

#include <pthread.h>
#include <stdatomic.h>

atomic_bool pyop__forked_flag;

int pyop__error_forked(const char *fn) {
  return pyop__error(PYOP_EFORKED,
                     "%s: this process was forked while libpyop had Python loaded (a "
                     "bridge open or a load in progress); libpyop cannot be used in the "
                     "child: load in each process after fork(), or exec() in the child "
                     "(docs/host-guide.md, \"fork\")",
                     fn);
}

/*
 * pthread_atfork handlers. Every libpyop mutex is taken around fork(), so the
 * child gets consistent, unlocked copies: the lifecycle's, the registry's,
 * the hooks', the artifacts root's and the kernel library table's (error.c
 * has none: its state is thread-local). None of them is ever held across a
 * slow call (the bridge, Python, a hook, dlopen, a path resolution), so
 * this never waits long. The condition variables are re-made in the child:
 * their waiters were threads the child does not have. The child is marked
 * forked when a bridge was open or a lifecycle call was running in the
 * parent; otherwise it starts with libpyop as it was.
 */
static void fork_prepare(void) {
  pyop__lifecycle_fork_lock();
  pyop__registry_fork_lock();
  pyop__hooks_fork_lock();
  pyop__artifacts_fork_lock();
  pyop__kernel_libs_fork_lock();
}

static void fork_parent(void) {
  pyop__kernel_libs_fork_unlock();
  pyop__artifacts_fork_unlock();
  pyop__hooks_fork_unlock();
  pyop__registry_fork_unlock();
  pyop__lifecycle_fork_unlock();
}

static void fork_child(void) {
  if (pyop__lifecycle_fork_in_use()) atomic_store(&pyop__forked_flag, true);
  pyop__kernel_libs_fork_unlock();
  pyop__artifacts_fork_unlock();
  pyop__hooks_fork_child();
  pyop__registry_fork_unlock();
  pyop__lifecycle_fork_child();
}

__attribute__((constructor)) static void fork_handlers_install(void) {
  /* glibc drops the handlers when libpyop is unloaded. */
  pthread_atfork(fork_prepare, fork_parent, fork_child);
}
