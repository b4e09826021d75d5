/*
 * The operator registry (docs/design.md §Registry): validated deep copies of descriptor
 * views, one entry per op type in a hash table (O(1) lookups under a short
 * mutex that is never held across a call into the bridge, Python or a host
 * hook), per-load transactions, refcounted read access and op instances.
 *
 * Public functions implemented behind this header: registry.c —
 * pyop_op_get, pyop_op_info_release, pyop_op_list, pyop_free,
 * pyop_register_host_prototype; op.c — pyop_op_create, pyop_op_destroy,
 * pyop_op_get_info, pyop_op_capabilities, pyop_op_infer_meta,
 * pyop_op_infer_meta_list, pyop_op_execute, pyop_op_execute_list,
 * pyop_op_compile, pyop_op_declare_launch_args, pyop_op_launch;
 * descriptor.c — validation, deep copies and comparison. (The dtype, format
 * and attribute-type helpers are in types.c, behind pyop.h alone.)
 */
#ifndef PYOP_REGISTRY_H
#define PYOP_REGISTRY_H

#include "core.h"
#include "hashmap.h"
#include "pyop/bridge_abi.h"

/*
 * Descriptor validation (also the fuzz target): checks struct_size, every
 * string view (NULL data with len > 0, embedded NUL, empty required string),
 * names are identifiers and unique across inputs/outputs/attrs, known kinds,
 * attribute types and default values, caps and callbacks consistent.
 * Returns PYOP_OK or PYOP_EDESCRIPTOR with a message naming the op type (when
 * readable), the field and the reason.
 */
int pyop__validate_proto_view(const pyop_proto_view *v);
/* Whether a proto view's struct_size covers the members of bridge ABI 1.1. */
bool pyop__proto_view_v11(const pyop_proto_view *v);
int pyop__validate_impl_view(const pyop_impl_view *v);

/* A load transaction: nothing is visible until pyop__txn_commit. */
typedef struct pyop__txn pyop__txn;

int pyop__txn_begin(pyop__txn **out);
/* Validates and deep-copies; checks conflicts within the txn and against
 * committed entries. Returns PYOP_OK, PYOP_EDESCRIPTOR, PYOP_ECONFLICT,
 * PYOP_ENOMEM. A failed add leaves the txn usable but the loader aborts. */
int pyop__txn_add_proto(pyop__txn *t, const pyop_proto_view *v);
int pyop__txn_add_impl(pyop__txn *t, const pyop_impl_view *v);
/*
 * Opens the registrar of one register_custom_ops call on the calling thread
 * (a call of core.h's pyop__call) and fills out (handed to the bridge): its
 * callbacks add to t while it is open, on this thread only. At most one session is open at
 * a time (the caller is the serialised lifecycle).
 */
void pyop__registrar_open(pyop__txn *t, pyop__call *call, pyop_registrar *out);
/*
 * Closes it right after register_custom_ops returned: every later
 * call of that registrar is refused (PYOP_ESTATE, logged). Returns PYOP_OK,
 * or PYOP_ESTATE with a message naming bridge (its path) when calls from
 * other threads were refused during the call: their descriptors are lost,
 * so the caller must abort t.
 */
int pyop__registrar_close(const pyop__call *call, const char *bridge);
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

/* Number of op types registered (host prototypes included). */
size_t pyop__registry_count(void);
/* Test-only: the number of live op instances. */
size_t pyop__registry_live_instances(void);

/* Test-only (the unit tests' reset between cases): removes every entry, host
 * prototypes included. PYOP_EBUSY while an op instance is alive. No hooks
 * are called. */
int pyop__registry_clear(void);

/* ------------------------------------------- internals (registry, op) */

#include <stdatomic.h>

/* Sanity limits of a descriptor (PYOP_EDESCRIPTOR beyond them). */
#define PYOP__MAX_IOS 1024          /* inputs, outputs, attrs: each */
#define PYOP__MAX_NAME_LEN 256      /* op type, io and attr names */
#define PYOP__MAX_KEY_LEN 1024      /* descriptor keys */
#define PYOP__MAX_SOURCE_LEN 4096   /* source file paths */
#define PYOP__MAX_DIGEST_LEN 256    /* source digests (bridge ABI 1.3) */
#define PYOP__MAX_REASON_LEN 1024   /* serial reasons of lanes (bridge ABI 1.6) */
#define PYOP__MAX_LIST_LEN (1u << 20) /* elements of a list attribute value */
#define PYOP__MAX_STR_VALUE_LEN (1u << 20)

/*
 * A validated deep copy of a prototype view, in one allocation (free with
 * pyop__proto_free). Strings are NUL-terminated; ctx/callbacks are the
 * bridge's (host prototypes: NULL).
 */
typedef struct pyop__proto {
  char *op_type;
  char *key;
  char *source; /* "file.py:12", or "<host>" */
  uint32_t line; /* the 12 of source; 0 for a host prototype */
  char *digest;  /* the view's source_digest, "" when none */
  char *serial_reason; /* the view's (ABI 1.6), "" when none */
  uint32_t lanes;      /* the view's lanes (ABI 1.6): 0 serial */
  bool host;     /* registered with pyop_register_host_prototype */
  uint32_t caps;
  pyop_io_info *inputs;
  size_t n_inputs;
  pyop_io_info *outputs;
  size_t n_outputs;
  pyop_attr_info *attrs;
  size_t n_attrs;
  uint32_t *input_flags;  /* NULL when no input is mutated */
  int32_t *output_alias;  /* NULL when no output aliases an input */
  bool dynamic_outputs;   /* some output is PYOP_IO_DYNAMIC */
  size_t n_tensor_attrs;  /* attributes of type PYOP_ATTR_TENSOR */
  /* attr name -> attr index + 1 (hashmap.h; fixed slots in the copy). */
  pyop__hmap attr_index;
  void *ctx;
  const pyop_op_callbacks *callbacks;
} pyop__proto;

/* A validated deep copy of an implementation view (one allocation). */
typedef struct pyop__impl {
  char *op_type;
  char *key;
  char *source;
  uint32_t line;
  char *digest; /* "" when none */
  char *serial_reason; /* as in pyop__proto */
  uint32_t lanes;
  uint32_t caps;
  void *ctx;
  const pyop_op_callbacks *callbacks;
} pyop__impl;

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
  atomic_size_t refs;
  atomic_size_t live; /* op instances of this entry */
  struct pyop__entry *next_retired;
  /* Registry-private: the next implementation waiting for a prototype
   * (pending list; such an entry has no proto and is not in the table). */
  struct pyop__entry *next_pending;
  pyop_op_info info; /* strings point into proto/impl */
} pyop__entry;

/* Validates v and deep-copies it. host: a host prototype (source "<host>").
 * PYOP_EDESCRIPTOR / PYOP_ENOMEM. */
int pyop__proto_copy(const pyop_proto_view *v, bool host, pyop__proto **out);
int pyop__impl_copy(const pyop_impl_view *v, pyop__impl **out);
void pyop__proto_free(pyop__proto *p);
void pyop__impl_free(pyop__impl *p);
/*
 * True when a and b have the same content (op type, inputs, outputs, attrs
 * with defaults, caps; not key, source, digest or callbacks). Otherwise false and a
 * short description of the first difference in why.
 */
bool pyop__proto_same(const pyop__proto *a, const pyop__proto *b, char *why,
                      size_t why_len);
bool pyop__impl_same(const pyop__impl *a, const pyop__impl *b, char *why,
                     size_t why_len);
/* Index of the attr named name (NUL-terminated), or -1. O(1). */
long pyop__proto_attr_find(const pyop__proto *p, const char *name);
/*
 * Checks an attribute value of a known type: string views (NULL data with
 * len > 0, embedded NUL, length), list pointers and lengths, dtypes in range.
 * True when valid; else false with the reason in why.
 */
bool pyop__attr_value_check(const pyop_attr_value *v, char *why, size_t why_len);
/* Whether strict output checks are on (pyop_options.strict_outputs or
 * PYOP_STRICT_OUTPUTS, as of the last pyop_load; lifecycle.c). */
bool pyop__strict_outputs(void);
/*
 * Why every op runs serially when the host asked for lanes and the open
 * bridge is too old to say per descriptor (ABI < 1.6): a static text, ""
 * otherwise (lifecycle.c; set before a load registers anything).
 */
const char *pyop__lanes_fallback_reason(void);
/* FNV-1a of a NUL-terminated string. */
uint64_t pyop__hash_str(const char *s);

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

/* Take / release the registry lock around fork() (lifecycle.c only). */
void pyop__registry_fork_lock(void);
void pyop__registry_fork_unlock(void);

#endif
