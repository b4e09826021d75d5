/*
 * The operator registry (registry.c; docs/design.md §Registry): one entry
 * per op type in a hash table (O(1) lookups under a short mutex that is
 * never held across a call into the bridge, Python or a host hook),
 * per-load transactions, refcounted read access and the live-instance
 * count op.c's instances hold. Also behind it, in registry.c: pyop_op_get,
 * pyop_op_info_release, pyop_op_list, pyop_free (pyop.h); in host_proto.c:
 * pyop_register_host_prototype; the conflict rules are conflict.h's. The
 * descriptors it holds are descriptor.h's.
 */
#ifndef PYOP_REGISTRY_H
#define PYOP_REGISTRY_H

#include "core.h"
#include "descriptor.h"
#include "hashmap.h"
#include "pyop/bridge_abi.h"

/* A load transaction: nothing is visible until pyop__txn_commit. */
typedef struct pyop__txn pyop__txn;

int pyop__txn_begin(pyop__txn **out);
/*
 * The settings a load hands its transaction (they flow down from the
 * lifecycle): reason, a static text, is why every Python op of t runs
 * serially when no descriptor of it says why (lanes asked for, the open
 * bridge too old to run them); "" (the default) when none. Each entry t
 * registers keeps it (pyop_op_info.serial_reason).
 */
void pyop__txn_set_serial_reason(pyop__txn *t, const char *reason);
/* A transaction of host prototypes (host_proto.c): no owns_op veto, no
 * hooks, kept across pyop_unload. */
int pyop__txn_begin_host(pyop__txn **out);
/*
 * After a host prototype of op_type was committed (host_proto.c): binds the
 * implementation waiting for it (if any) as a load's commit binds one (the
 * bound entry is the load's: unload restores the prototype alone), then
 * calls on_register for it with no lock held.
 */
void pyop__registry_bind_pending(const char *op_type);
/* Validates and deep-copies; checks conflicts within the txn and against
 * committed entries. Returns PYOP_OK, PYOP_EDESCRIPTOR, PYOP_ECONFLICT,
 * PYOP_ENOMEM. A failed add leaves the txn usable but the loader aborts. */
int pyop__txn_add_proto(pyop__txn *t, const pyop_proto_view *v);
int pyop__txn_add_impl(pyop__txn *t, const pyop_impl_view *v);
/*
 * Makes every descriptor of t visible at once, or none: runs the host's
 * owns_op veto (unlocked), binds each impl to its prototype (in t, or a
 * host prototype already registered), re-checks conflicts under the lock and
 * publishes. Calls on_register hooks after unlocking. Frees t either way.
 */
int pyop__txn_commit(pyop__txn *t);
void pyop__txn_abort(pyop__txn *t);

/*
 * Removes every entry that a load registered (host prototypes stay, without
 * their Python impls). PYOP_EBUSY (nothing removed) while an op instance is
 * alive. Calls on_unregister hooks after unlocking.
 */
int pyop__registry_unload(void);
/*
 * Writes into buf (len > 0) a hint naming each implementation that waits
 * for a prototype under an op type near op_type ("; the implementation of
 * "MyAd" (f.py:3) waits for ..."), "" when none. Cold: error messages of an
 * op without an implementation.
 */
void pyop__registry_near_pending(const char *op_type, char *buf, size_t len);

/*
 * Strict output checks as of the last pyop_load, which sets them
 * (lifecycle.c) from its option: on when option is true or the environment
 * variable PYOP_STRICT_OUTPUTS is set (read now) and neither empty nor
 * "0". Read by pyop_op_create for each new instance, whichever load
 * registered its op.
 */
void pyop__registry_set_strict(bool option);
bool pyop__strict_outputs(void);

/* Number of op types registered (host prototypes included). */
size_t pyop__registry_count(void);
/* Test-only: the number of live op instances. */
size_t pyop__registry_live_instances(void);

/* Test-only (the unit tests' reset between cases): removes every entry, host
 * prototypes included. PYOP_EBUSY while an op instance is alive. No hooks
 * are called. */
int pyop__registry_clear(void);

/* ------------------------------------------- entries (registry.c, op.c) */

#include <stdatomic.h>

/*
 * One op type as published: immutable once in the table, refcounted. An
 * entry that adds a Python impl to an already registered prototype keeps a
 * reference to that entry in base (restored on unload).
 */
typedef struct pyop__entry {
  pyop__proto *own_proto;
  pyop__impl *own_impl;
  const pyop__proto *proto; /* own_proto or base->proto */
  const pyop__impl *impl;   /* own_impl or NULL */
  uint64_t hash;
  struct pyop__entry *base;
  /* Registry-private scratch: the registered entry an item of a commit
   * binds to or repeats (used under the registry lock only). */
  struct pyop__entry *txn_target;
  bool from_load; /* removed by pyop__registry_unload */
  /* The serial reason of the load that brought it (pyop__txn_set_serial_reason;
   * static, "" for none): info.serial_reason when no descriptor says one. */
  const char *serial_fallback;
  atomic_size_t refs;
  atomic_size_t live; /* op instances of this entry */
  struct pyop__entry *next_retired;
  /* Registry-private: the next implementation waiting for a prototype
   * (pending list; such an entry has no proto and is not in the table). */
  struct pyop__entry *next_pending;
  pyop_op_info info; /* strings point into proto/impl */
} pyop__entry;

/*
 * For op.c: under the registry lock, looks op_type up, takes a reference
 * and counts one more live instance (so an unload cannot slip in between).
 * PYOP_ENOENT when unknown.
 */
int pyop__registry_acquire_instance(const char *op_type, pyop__entry **out);
/* Undoes pyop__registry_acquire_instance. */
void pyop__registry_release_instance(pyop__entry *e);
/* Drops one reference; frees at zero (even when no longer in the table). */
void pyop__entry_release(pyop__entry *e);

/*
 * The loader service find_proto (bridge ABI 1.2): a reference to the
 * registered entry of op_type as its pyop_op_info, or PYOP_ENOENT with *out
 * NULL and no error recorded. release_proto drops it.
 */
int pyop__registry_find_proto(pyop_str op_type, const pyop_op_info **out);
void pyop__registry_release_proto(const pyop_op_info *info);

/* Whether the calling thread holds the registry lock (asserts of the
 * _locked helpers; always false with NDEBUG). */
bool pyop__registry_lock_held(void);

/* Take / release the registry lock around fork() (fork.c only). */
void pyop__registry_fork_lock(void);
void pyop__registry_fork_unlock(void);

#endif
