/*
 * What the lifecycle (lifecycle.c: load, unload, shutdown, options) lends
 * the files beside it: the report of its state for pyop_doctor (doctor.c)
 * and its lock around fork() (fork.c). Its settings flow down: strict
 * outputs and the serial reason of a load go to the registry
 * (registry.h), nothing below reads them from here. Lifecycle calls are
 * serialised by a busy flag (docs/design.md §Threads).
 */
#ifndef PYOP_LIFECYCLE_H
#define PYOP_LIFECYCLE_H

#include "core.h"

/*
 * Appends the bridge's line ("bridge: loaded <path> (ABI x.y)" and whether
 * its interpreter was finalized, or "bridge: not loaded") and, when one is
 * kept, the candidate report of the last bridge load to sb. Takes the busy
 * flag (waiting for a running lifecycle call) unless called from a hook of
 * the lifecycle call running on this thread. *bridge_open: a bridge is
 * open. Returns whether a report was kept.
 */
bool pyop__lifecycle_describe(pyop__sb *sb, bool *bridge_open);

/* Around fork() (fork.c only): take / release the lifecycle mutex. */
void pyop__lifecycle_fork_lock(void);
void pyop__lifecycle_fork_unlock(void);
/* With the mutex taken: whether a lifecycle call runs or a bridge is open
 * (the child of such a fork is marked forked). */
bool pyop__lifecycle_fork_in_use(void);
/* In the child: re-makes the condition variable, releases the mutex. */
void pyop__lifecycle_fork_child(void);

#endif
