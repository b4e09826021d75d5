/*
 * The host's hooks as libpyop calls them (hooks.c): owns_op, on_register,
 * on_unregister and log, each called with no libpyop lock held; and the
 * hooks lock's part in fork() (fork.c).
 */
#ifndef PYOP_HOOKS_H
#define PYOP_HOOKS_H

#include "core.h"

/*
 * Calls of the host's hooks (hooks.c). Each reads the installed hook when it
 * starts and calls it with no libpyop lock held, keeping the thread's last
 * error aside; a hook not installed is not called (owns_op then answers 0).
 * pyop_set_host_hooks waits for the calls of the hooks it replaces, so once
 * it returns none of them runs or starts (docs/host-guide.md, "Hooks").
 * pyop__hook_log returns false when no log hook took the line (none set, or
 * the log hook itself is running on this thread).
 */
int pyop__hook_owns_op(const char *op_type);
void pyop__hook_on_register(const pyop_op_info *info);
void pyop__hook_on_unregister(const char *op_type);
bool pyop__hook_log(int level, const char *line);
/* Which hooks are installed now (PYOP__HOOK_* bits): to skip work whose only
 * use is a hook call; the call itself re-reads the hook. */
enum {
  PYOP__HOOK_OWNS_OP = 1u << 0,
  PYOP__HOOK_ON_REGISTER = 1u << 1,
  PYOP__HOOK_ON_UNREGISTER = 1u << 2,
  PYOP__HOOK_LOG = 1u << 3
};
unsigned pyop__hooks_present(void);
/* Take / release the hooks lock around fork() (fork.c only); the
 * child's handler also forgets the hook calls in progress in the parent. */
void pyop__hooks_fork_lock(void);
void pyop__hooks_fork_unlock(void);
void pyop__hooks_fork_child(void);
/*
 * Marks that the calling thread holds a libpyop lock (on) or released it
 * (off): a host hook or log line called meanwhile fails an assert (no hook
 * ever runs under a libpyop lock). The lock's owner marks it (registry.c);
 * hooks.c keeps the mark and asserts it. Nothing with NDEBUG.
 */
#ifndef NDEBUG
void pyop__hooks_barred(bool on);
#else
static inline void pyop__hooks_barred(bool on) { (void)on; }
#endif

#endif
