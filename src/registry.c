/*
 * The operator registry (docs/design.md §Registry).
 *
 * Storage: one hash map (hashmap.h; FNV-1a hashes) of entry pointers keyed
 * by op type, guarded by one mutex. The mutex is held only
 * for lookups, table edits and allocations; never across a call into the
 * bridge, Python or a host hook (lock order: GIL -> registry lock).
 *
 * Entries are immutable once published and refcounted: the table holds one
 * reference, pyop_op_get and every op instance one more; the last release
 * frees the entry even after it left the table.
 *
 * Transactions: a load's descriptors are validated and deep-copied as they
 * arrive (merged per op type in a txn-local hash index, so conflicts inside
 * a load are O(1) lookups too) and published together by pyop__txn_commit,
 * or not at all.
 *
 * Decisions:
 * - An implementation may bind to a prototype in the same transaction, or
 *   to a registered prototype that has no implementation yet (a host
 *   prototype, typically). The bound entry replaces the prototype's entry
 *   and keeps it as base; unload restores a host base.
 * - The host's owns_op veto is asked for every op type whose prototype a
 *   load brings (not for an implementation bound to an already registered
 *   prototype, and not for host prototypes: the host registers those itself).
 * - on_register is called for every entry a load publishes and on_unregister
 *   for every entry an unload removes (a host prototype that loses its
 *   Python implementation counts as removed: the pair stays symmetric).
 *   Host prototype registration calls neither.
 * - Unload refuses with PYOP_EBUSY while any op instance is alive.
 * - An implementation with no prototype (none in its load, none registered)
 *   does not fail the load: it waits on the pending list (not in the table,
 *   no hooks; pyop_op_create and pyop_op_get say what is missing) until the
 *   host registers its prototype with pyop_register_host_prototype, which
 *   binds it as a load's implementation (on_register then). Unload drops
 *   the pending list.
 */
#include "registry.h"
#include "conflict.h"
#include "hooks.h"
#include "scan.h"

#include "hashmap.h"

#include <assert.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

enum { ACT_NONE = 0, ACT_NEW, ACT_BIND, ACT_SKIP, ACT_PENDING };

static struct {
  pthread_mutex_t mu;
  pyop__hmap ops; /* op type -> published pyop__entry * */
  atomic_size_t live;
  pyop__entry *pending; /* implementations waiting for a prototype */
  atomic_bool strict;   /* pyop__registry_set_strict */
} reg = {.mu = PTHREAD_MUTEX_INITIALIZER};

#ifndef NDEBUG
/* True on the thread that holds reg.mu, while it holds it (for asserts
 * only: a release build keeps lookups free of it). */
static _Thread_local bool reg_locked;
#define REG_LOCKED(v) (reg_locked = (v), pyop__hooks_barred(v))
bool pyop__registry_lock_held(void) { return reg_locked; }
#else
#define REG_LOCKED(v) ((void)0)
bool pyop__registry_lock_held(void) { return false; }
#endif

static void lock(void) {
  pthread_mutex_lock(&reg.mu);
  REG_LOCKED(true);
}
static void unlock(void) {
  assert(pyop__registry_lock_held());
  REG_LOCKED(false);
  pthread_mutex_unlock(&reg.mu);
}

/* Around fork() (fork.c): the child gets the registry unlocked. */
void pyop__registry_fork_lock(void) { lock(); }
void pyop__registry_fork_unlock(void) { unlock(); }

/* ------------------------------------------------------------ entries */

/* The op type of a transaction's entry (its own prototype or implementation). */
static const char *entry_op_type(const pyop__entry *e) {
  return e->own_proto ? e->own_proto->op_type : e->own_impl->op_type;
}

/* Points e->info at the effective prototype and implementation. */
static void entry_fill_info(pyop__entry *e) {
  const pyop__proto *p = e->proto;
  pyop_op_info *i = &e->info;
  i->struct_size = sizeof *i;
  i->op_type = p->op_type;
  i->proto_key = p->key;
  i->proto_source = p->source;
  i->impl_key = e->impl ? e->impl->key : NULL;
  i->impl_source = e->impl ? e->impl->source : NULL;
  i->inputs = p->inputs;
  i->n_inputs = p->n_inputs;
  i->outputs = p->outputs;
  i->n_outputs = p->n_outputs;
  i->attrs = p->attrs;
  i->n_attrs = p->n_attrs;
  i->capabilities = p->caps | (e->impl ? e->impl->caps : 0);
  i->input_flags = p->input_flags;
  i->output_alias = p->output_alias;
  i->input_dtypes = p->dtypes.inputs;
  i->output_dtypes = p->dtypes.outputs;
  /* Lanes: an instance is placed in one lane for both of its holders, so
   * the op runs in lanes only when each Python descriptor it uses does. */
  const pyop__impl *im = e->impl;
  bool proto_runs = (p->caps & PYOP_CAP_INFER_META) != 0;
  uint32_t lanes = UINT32_MAX;
  const char *reason = "";
  if (proto_runs) {
    lanes = p->lanes;
    reason = p->serial_reason;
  }
  if (im && im->lanes < lanes) {
    lanes = im->lanes;
    if (!reason[0]) reason = im->serial_reason;
  }
  if (lanes == UINT32_MAX) lanes = 0; /* nothing Python runs: a host prototype */
  if (!lanes && !reason[0] && (proto_runs || im)) reason = e->serial_fallback;
  i->serial_reason = reason;
  i->lanes = lanes;
}

/* Frees an entry nobody references (never published, or refs reached 0). */
static void entry_free(pyop__entry *e) {
  pyop__proto_free(e->own_proto);
  pyop__impl_free(e->own_impl);
  if (e->base) pyop__entry_release(e->base);
  pyop__free(e);
}

void pyop__entry_release(pyop__entry *e) {
  if (e && atomic_fetch_sub(&e->refs, 1) == 1) entry_free(e);
}

/* ---------------------------------------------------------- the table */

/* The entry a slot of reg.ops holds. */
static pyop__entry *slot_entry(size_t i) { return (pyop__entry *)reg.ops.slots[i].val; }

/* hashmap.h's eq: whether the entry val has the op type key (a C string). */
static bool entry_is(const void *key, uintptr_t val) {
  return strcmp(((const pyop__entry *)val)->info.op_type, (const char *)key) == 0;
}

/* The slot holding op_type, or the empty slot where it would go. The caller
 * holds the lock and the table is allocated. */
static size_t find_slot_locked(const char *op_type, uint64_t h) {
  return pyop__hmap_find(&reg.ops, h, entry_is, op_type);
}

static pyop__entry *lookup_locked(const char *op_type, uint64_t h) {
  return (pyop__entry *)pyop__hmap_get(&reg.ops, h, entry_is, op_type);
}

/* Publishes e (hash h) in slot i of the table (from find_slot_locked or
 * pyop__hmap_free_slot; room reserved). */
static void set_slot_locked(size_t i, uint64_t h, pyop__entry *e) {
  pyop__hmap_set(&reg.ops, i, h, (uintptr_t)e);
}

/* Takes a reference to the entry of op_type (whose hash is h); NULL when
 * unknown. */
static pyop__entry *get_entry_hashed(const char *op_type, uint64_t h) {
  lock();
  pyop__entry *e = lookup_locked(op_type, h);
  if (e) atomic_fetch_add(&e->refs, 1);
  unlock();
  return e;
}

static pyop__entry *get_entry(const char *op_type) {
  return get_entry_hashed(op_type, pyop__hash_str(op_type));
}

/* The pending implementation of op_type, or NULL; *prev_next the link that
 * points at it. Under the lock. */
static pyop__entry *pending_find_locked(const char *op_type, pyop__entry ***prev_next) {
  for (pyop__entry **pp = &reg.pending; *pp; pp = &(*pp)->next_pending)
    if (strcmp((*pp)->own_impl->op_type, op_type) == 0) {
      if (prev_next) *prev_next = pp;
      return *pp;
    }
  return NULL;
}

/*
 * True when b is close to a (a likely typo of it): the same but for case,
 * or at most one edit (insert, delete, substitute) per four characters of
 * a, at least one, at most three.
 */
static bool near_name(const char *a, const char *b) {
  size_t la = strlen(a), lb = strlen(b);
  if (la > PYOP__MAX_NAME_LEN || lb > PYOP__MAX_NAME_LEN) return false;
  if (la == lb && strcasecmp(a, b) == 0) return true;
  size_t limit = la / 4 < 1 ? 1 : la / 4 > 3 ? 3 : la / 4;
  if ((la > lb ? la - lb : lb - la) > limit) return false;
  size_t row[PYOP__MAX_NAME_LEN + 1], prev[PYOP__MAX_NAME_LEN + 1];
  for (size_t j = 0; j <= lb; j++) prev[j] = j;
  for (size_t i = 1; i <= la; i++) {
    row[0] = i;
    size_t best = row[0];
    for (size_t j = 1; j <= lb; j++) {
      size_t sub = prev[j - 1] + (a[i - 1] != b[j - 1]);
      size_t del = prev[j] + 1, ins = row[j - 1] + 1;
      row[j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
      if (row[j] < best) best = row[j];
    }
    if (best > limit) return false;
    memcpy(prev, row, (lb + 1) * sizeof row[0]);
  }
  return prev[lb] <= limit;
}

enum { NEAR_MAX = 3 };

/* The registered op types (unless pending_only) and waiting
 * implementations near op_type (at most NEAR_MAX, copied), and whether the
 * registry holds nothing at all. Cold: walks every slot. */
typedef struct near_names {
  size_t n;
  bool empty;
  char name[NEAR_MAX][PYOP__MAX_NAME_LEN + 1];
  char pending_source[NEAR_MAX][PYOP__MAX_SOURCE_LEN + 16]; /* "" for a registered op */
} near_names;

static void near_names_locked(const char *op_type, bool pending_only, near_names *out) {
  out->n = 0;
  out->empty = reg.ops.count == 0 && reg.pending == NULL;
  if (!pending_only)
    for (size_t i = 0; i < reg.ops.cap && out->n < NEAR_MAX; i++) {
      const pyop__entry *e = (const pyop__entry *)reg.ops.slots[i].val;
      if (e && near_name(op_type, e->info.op_type)) {
        snprintf(out->name[out->n], sizeof out->name[0], "%s", e->info.op_type);
        out->pending_source[out->n++][0] = '\0';
      }
    }
  for (const pyop__entry *p = reg.pending; p && out->n < NEAR_MAX; p = p->next_pending)
    if (near_name(op_type, p->own_impl->op_type)) {
      snprintf(out->name[out->n], sizeof out->name[0], "%s", p->own_impl->op_type);
      snprintf(out->pending_source[out->n++], sizeof out->pending_source[0], "%s",
               p->own_impl->source);
    }
}

void pyop__registry_near_pending(const char *op_type, char *buf, size_t len) {
  assert(len > 0);
  buf[0] = '\0';
  near_names *near = pyop__calloc(1, sizeof *near);
  if (!near) return;
  /* Only the waiting implementations: registered names near op_type (op_type
   * itself among them) would take their places. */
  lock();
  near_names_locked(op_type, true, near);
  unlock();
  size_t used = 0;
  for (size_t i = 0; i < near->n && used < len; i++) {
    int w = snprintf(buf + used, len - used, "; the implementation of \"%s\" (%s) waits for a "
                     "prototype of that name: a typo in its register_op_impl op type?",
                     near->name[i], near->pending_source[i]);
    if (w < 0) break;
    used += (size_t)w;
  }
  pyop__free(near);
}

/*
 * The ENOENT of an op type that is not registered: with what is missing
 * when its implementation waits for a prototype; else with the near names
 * (a registered op, or an implementation waiting under a mistyped op type),
 * and, when nothing is registered, why (ASCEND_CUSTOM_OPP_PATH).
 */
static __attribute__((noinline, cold)) int not_registered(const char *op_type) {
  char src[PYOP__MAX_SOURCE_LEN + 16] = "";
  near_names *near = pyop__calloc(1, sizeof *near);
  lock();
  pyop__entry *p = pending_find_locked(op_type, NULL);
  if (p) snprintf(src, sizeof src, "%s", p->own_impl->source);
  else if (near) near_names_locked(op_type, false, near);
  unlock();
  if (src[0]) {
    pyop__free(near);
    return pyop__error(PYOP_ENOENT,
                       "op \"%.256s\": its implementation (%s) is loaded but has no prototype: "
                       "register one with pyop_register_host_prototype (or load a Python "
                       "register_op for it); GE, which needs that prototype (the canonical IR) "
                       "at the load, fails there with \"canonical IR not found\"",
                       op_type, src);
  }
  if (!near) return pyop__error(PYOP_ENOENT, "no operator \"%.256s\" is registered", op_type);
  pyop__sb sb = PYOP__SB_INIT;
  pyop__sb_printf(&sb, "no operator \"%.256s\" is registered", op_type);
  bool pending = false;
  for (size_t i = 0; i < near->n; i++) pending |= near->pending_source[i][0] != '\0';
  if (pending) pyop__sb_puts(&sb, " (no prototype and implementation pair has that name)");
  for (size_t i = 0; i < near->n; i++) {
    pyop__sb_printf(&sb, "%s\"%s\"", i == 0 ? "; did you mean " : " or ", near->name[i]);
    if (near->pending_source[i][0])
      pyop__sb_printf(&sb, ", an implementation (%s) waiting for a prototype of that name: a "
                      "typo in its register_op_impl op type?", near->pending_source[i]);
  }
  if (near->n) pyop__sb_puts(&sb, near->pending_source[near->n - 1][0] ? "" : "?");
  if (near->empty) {
    pyop__sb_puts(&sb, " (none is: ");
    pyop__scan_explain(pyop__getenv(PYOP__OPP_VAR), &sb);
    pyop__sb_puts(&sb, ")");
  }
  pyop__free(near);
  int rc = sb.oom ? pyop__error(PYOP_ENOENT, "no operator \"%.256s\" is registered", op_type)
                  : pyop__error(PYOP_ENOENT, "%s", pyop__sb_str(&sb));
  pyop__sb_free(&sb);
  return rc;
}

/* The committed entry with the op type of e (not yet committed, hash h), or
 * NULL. e is read only when a slot has the same hash, so a commit probes
 * the table without touching its entries. Under the lock. */
static bool entry_like(const void *key, uintptr_t val) {
  return entry_is(entry_op_type(key), val);
}
static pyop__entry *lookup_like_locked(const pyop__entry *e, uint64_t h) {
  return (pyop__entry *)pyop__hmap_get(&reg.ops, h, entry_like, e);
}

/* ------------------------------------------------------- transactions */

/* What an item brought (titem.own). */
enum { OWN_PROTO = 1, OWN_IMPL = 2 };

/*
 * One item (op type) of a transaction. The items are kept dense so that a
 * commit reads these records and the table slots, not the entries: a big
 * load's entries are long out of the CPU caches when it commits.
 */
typedef struct titem {
  uint64_t hash; /* == e->hash */
  pyop__entry *e;
  uint8_t own; /* OWN_* */
  uint8_t act; /* ACT_*, decided by the commit */
} titem;

/*
 * A transaction finds its items by op type through one hash map (hashmap.h)
 * whose values are item positions + 1, always in sync with the items:
 * every item 0..n-1 is in the index exactly once, and nothing else is (no
 * item is ever removed). A lookup reads an item's entry only when the
 * slot's hash matches.
 */
struct pyop__txn {
  bool host; /* host prototypes: no veto, no hooks, kept across unload */
  const char *serial_reason; /* pyop__txn_set_serial_reason; "" for none */
  titem *items; /* one per op type, in order of arrival */
  size_t n, cap;
  pyop__hmap index; /* op type -> item position + 1 */
};

/* What txn_find looks for. */
typedef struct txn_key {
  const pyop__txn *t;
  const char *op_type;
} txn_key;

static bool item_is(const void *key, uintptr_t val) {
  const txn_key *k = key;
  return strcmp(entry_op_type(k->t->items[val - 1].e), k->op_type) == 0;
}

/* The item of op_type (hash h) in t, or NULL. */
static inline titem *txn_find(const pyop__txn *t, const char *op_type, uint64_t h) {
  txn_key k = {t, op_type};
  uintptr_t pos = pyop__hmap_get(&t->index, h, item_is, &k);
  return pos ? &t->items[pos - 1] : NULL;
}

/* Appends and indexes e, an op type not yet in t. PYOP_ENOMEM leaves t as
 * it was. The items and the room of the index grow together: the index
 * always has room for cap items. */
static int txn_append(pyop__txn *t, pyop__entry *e, uint8_t own) {
  if (t->n == t->cap) {
    size_t cap = t->cap ? 2 * t->cap : 8;
    if (cap > SIZE_MAX / sizeof(titem)) return PYOP_ENOMEM;
    titem *items = pyop__malloc(cap * sizeof *items);
    if (!items) return PYOP_ENOMEM;
    if (pyop__hmap_reserve(&t->index, cap - t->n) != PYOP_OK) {
      pyop__free(items);
      return PYOP_ENOMEM;
    }
    if (t->n) memcpy(items, t->items, t->n * sizeof *items);
    pyop__free(t->items);
    t->items = items;
    t->cap = cap;
  }
  t->items[t->n] = (titem){.hash = e->hash, .e = e, .own = own, .act = ACT_NONE};
  pyop__hmap_set(&t->index, pyop__hmap_free_slot(&t->index, e->hash), e->hash, t->n + 1);
  t->n++;
  return PYOP_OK;
}

/*
 * Prepares an item's entry for publication as a new op type while its
 * descriptors are still in the cache (a commit then only decides and links):
 * proto and impl are its own, info points at them, the table's reference.
 * A commit that binds the item to a registered prototype redoes the info.
 * Nothing here is visible to another thread before the commit publishes it.
 */
static void entry_prepare(pyop__entry *e, bool host) {
  e->proto = e->own_proto;
  e->impl = e->own_impl;
  if (e->proto) entry_fill_info(e);
  e->from_load = !host;
  /* The table's reference, set now: the commit then links e without
   * touching it (a big load's entries are out of the cache by then). */
  atomic_store_explicit(&e->refs, 1, memory_order_relaxed);
}

/*
 * Adds the reference the commit holds on a published entry while it calls
 * the hooks and the debug log after unlocking (an unload may remove e in
 * between). Invariant: e is not yet visible to any other thread — the
 * commit calls this under the lock, before the unlock publishes e — and
 * its count is the table's 1 from entry_prepare, so a plain store of 2 is
 * exactly an increment; the post-commit loop drops it with
 * pyop__entry_release.
 */
static void entry_hold_unpublished(pyop__entry *e) {
  atomic_store_explicit(&e->refs, 2, memory_order_relaxed);
}

/* Frees t's own memory (not its items). */
static void txn_free_shell(pyop__txn *t) {
  pyop__free(t->items);
  pyop__hmap_free(&t->index);
  pyop__free(t);
}

static pyop__txn *txn_new(bool host) {
  pyop__txn *t = pyop__calloc(1, sizeof *t);
  if (t) {
    t->host = host;
    t->serial_reason = "";
  }
  return t;
}

void pyop__txn_set_serial_reason(pyop__txn *t, const char *reason) {
  assert(t && t->n == 0); /* before the first descriptor */
  t->serial_reason = reason ? reason : "";
}

int pyop__txn_begin(pyop__txn **out) {
  if (!out) return pyop__error(PYOP_EINVAL, "pyop__txn_begin: out is NULL");
  *out = txn_new(false);
  if (!*out) return pyop__error(PYOP_ENOMEM, "out of memory starting a registration");
  return PYOP_OK;
}

void pyop__txn_abort(pyop__txn *t) {
  if (!t) return;
  for (size_t i = 0; i < t->n; i++) entry_free(t->items[i].e);
  txn_free_shell(t);
}

static const char *where_registered(const pyop__entry *e) {
  return e->proto && e->proto->host ? "registered by the host" : "already registered";
}

/*
 * Adding one descriptor copy to a transaction, a prototype p or an
 * implementation q (the other NULL), in stages: a repeat of its kind in
 * this load is checked against the first (add_repeat) and dropped; else it
 * is checked against the committed registry (add_check_committed: a load
 * fails early, the commit checks again under the lock) and put into the
 * transaction (txn_put). Every path but the last frees the copy.
 */

/* A repeat in this load of e's prototype or implementation. */
static int add_repeat(const pyop__entry *e, const pyop__proto *p, const pyop__impl *q) {
  const char *where = "registered earlier in this load";
  return p ? pyop__check_protos(p, e->own_proto, where) : pyop__check_impls(q, e->own_impl, where);
}

/* Conflicts of the copy (op type hash h) with the committed registry. */
static int add_check_committed(const pyop__proto *p, const pyop__impl *q, uint64_t h) {
  pyop__entry *e = get_entry_hashed(p ? p->op_type : q->op_type, h);
  if (!e) return PYOP_OK;
  int rc = p ? pyop__check_protos(p, e->proto, where_registered(e))
             : e->impl ? pyop__check_impls(q, e->impl, "already registered") : PYOP_OK;
  pyop__entry_release(e);
  return rc;
}

/*
 * Puts a checked copy — a prototype p or an implementation q, the other
 * NULL — of an op type (hash h) into t: into the op type's item it, or as
 * a new item when it is NULL. Takes the copy on PYOP_OK; PYOP_ENOMEM
 * (nothing recorded) leaves t and the copy as they were.
 */
static int txn_put(pyop__txn *t, titem *it, uint64_t h, pyop__proto *p, pyop__impl *q) {
  uint8_t own = p ? OWN_PROTO : OWN_IMPL;
  pyop__entry *e;
  if (it) {
    e = it->e;
    it->own |= own;
  } else {
    e = pyop__calloc(1, sizeof *e);
    if (!e) return PYOP_ENOMEM;
    e->hash = h;
    e->serial_fallback = t->serial_reason;
    if (txn_append(t, e, own) != PYOP_OK) {
      pyop__free(e);
      return PYOP_ENOMEM;
    }
  }
  if (p) e->own_proto = p;
  else e->own_impl = q;
  entry_prepare(e, t->host);
  return PYOP_OK;
}

/* The stages above for a validated copy p or q (taken: kept or freed). */
static int txn_add(pyop__txn *t, pyop__proto *p, pyop__impl *q) {
  assert((p != NULL) != (q != NULL));
  const char *op_type = p ? p->op_type : q->op_type;
  uint64_t h = pyop__hash_str(op_type);
  titem *it = txn_find(t, op_type, h);
  int rc;
  if (it && (p ? it->e->own_proto != NULL : it->e->own_impl != NULL)) {
    rc = add_repeat(it->e, p, q);
  } else {
    rc = add_check_committed(p, q, h);
    if (rc == PYOP_OK) rc = txn_put(t, it, h, p, q);
    if (rc == PYOP_OK) return PYOP_OK;
    if (rc == PYOP_ENOMEM)
      rc = pyop__error(PYOP_ENOMEM, "%s \"%s\" (%s): out of memory registering it",
                       p ? "prototype" : "implementation", op_type,
                       p ? p->source : q->source);
  }
  if (p) pyop__proto_free(p);
  else pyop__impl_free(q);
  return rc;
}

int pyop__txn_add_proto(pyop__txn *t, const pyop_proto_view *v) {
  if (!t) return pyop__error(PYOP_EINVAL, "pyop__txn_add_proto: no transaction");
  pyop__proto *p;
  int rc = pyop__proto_copy(v, t->host, &p);
  return rc == PYOP_OK ? txn_add(t, p, NULL) : rc;
}

int pyop__txn_add_impl(pyop__txn *t, const pyop_impl_view *v) {
  if (!t) return pyop__error(PYOP_EINVAL, "pyop__txn_add_impl: no transaction");
  if (t->host)
    return pyop__error(PYOP_EINVAL, "pyop__txn_add_impl: a host transaction takes prototypes only");
  pyop__impl *q;
  int rc = pyop__impl_copy(v, &q);
  return rc == PYOP_OK ? txn_add(t, NULL, q) : rc;
}

/*
 * Decides what item it of a txn does against the committed table: a new
 * entry, an implementation bound to a registered prototype, or an
 * idempotent repeat. Under the lock; records the error and returns it on
 * conflict. A new op type (the common case) is decided from the item and
 * the table alone: its entry was prepared when it was added.
 */
static int classify_locked(titem *it) {
  pyop__entry *cur = lookup_like_locked(it->e, it->hash);
  if (!cur) {
    if (it->own & OWN_PROTO) {
      it->act = ACT_NEW;
      return PYOP_OK;
    }
    /* No prototype anywhere yet: the implementation waits for one. */
    pyop__entry *p = pending_find_locked(it->e->own_impl->op_type, NULL);
    if (p) {
      int rc = pyop__check_impls(it->e->own_impl, p->own_impl, "waiting for a prototype");
      if (rc != PYOP_OK) return rc;
      it->act = ACT_SKIP;
      return PYOP_OK;
    }
    it->act = ACT_PENDING;
    return PYOP_OK;
  }
  pyop__entry *e = it->e;
  e->txn_target = cur;
  if (e->own_proto) {
    int rc = pyop__check_protos(e->own_proto, cur->proto, where_registered(cur));
    if (rc != PYOP_OK) return rc;
  }
  /* A registered prototype equal to ours (or none of ours). */
  if (!e->own_impl) {
    it->act = ACT_SKIP;
    return PYOP_OK;
  }
  if (cur->impl) {
    int rc = pyop__check_impls(e->own_impl, cur->impl, "already registered");
    if (rc != PYOP_OK) return rc;
    it->act = ACT_SKIP;
    return PYOP_OK;
  }
  it->act = ACT_BIND;
  return PYOP_OK;
}

/* Commit stage 1, with no lock held: the host's owns_op veto of every
 * prototype of t. PYOP_OK, or the conflict recorded. */
static int commit_veto(const pyop__txn *t) {
  for (size_t i = 0; i < t->n; i++) {
    const pyop__proto *p = t->items[i].e->own_proto;
    if (p && pyop__hook_owns_op(p->op_type))
      return pyop__error(PYOP_ECONFLICT,
                         "op type \"%s\": prototype \"%s\" (%s) conflicts with an "
                         "operator owned by the host",
                         p->op_type, p->key, p->source);
  }
  return PYOP_OK;
}

/* How many items of a commit do what (ACT_*). */
typedef struct commit_counts {
  size_t n_new, n_skip, n_pending;
} commit_counts;

/* Commit stage 2, under the lock: classifies every item (classify_locked)
 * and makes room in the table for the new ones. PYOP_OK, or the first
 * conflict (or PYOP_ENOMEM) recorded, nothing changed. */
static int commit_classify_locked(pyop__txn *t, commit_counts *c) {
  assert(pyop__registry_lock_held());
  int rc = PYOP_OK;
  /* Big loads are cache-bound: fetch the slots ahead of time. */
  for (size_t i = 0; i < t->n && rc == PYOP_OK; i++) {
    if (reg.ops.count && i + 16 < t->n)
      __builtin_prefetch(&reg.ops.slots[(size_t)t->items[i + 16].hash & (reg.ops.cap - 1)]);
    rc = classify_locked(&t->items[i]);
    c->n_new += t->items[i].act == ACT_NEW;
    c->n_skip += t->items[i].act == ACT_SKIP;
    c->n_pending += t->items[i].act == ACT_PENDING;
  }
  if (rc == PYOP_OK && pyop__hmap_reserve(&reg.ops, c->n_new) != PYOP_OK)
    rc = pyop__error(PYOP_ENOMEM, "out of memory publishing %zu %s", c->n_new,
                     PYOP__PLURAL(c->n_new, "op type", "op types"));
  return rc;
}

/* Commit stage 3, under the lock, after stage 2 succeeded: nothing can fail.
 * A new entry is only linked in (its entry is not read); bound ones get the
 * registered prototype; pending ones join the pending list. hold: take a
 * reference on each published entry for stage 4. */
static void commit_publish_locked(pyop__txn *t, bool hold) {
  assert(pyop__registry_lock_held());
  size_t mask = reg.ops.cap - 1;
  for (size_t i = 0; i < t->n; i++) {
    if (i + 16 < t->n) __builtin_prefetch(&reg.ops.slots[(size_t)t->items[i + 16].hash & mask], 1);
    const titem *it = &t->items[i];
    if (it->act == ACT_SKIP) continue;
    pyop__entry *e = it->e;
    if (it->act == ACT_PENDING) {
      pyop_op_info *info = &e->info;
      info->struct_size = sizeof *info;
      info->op_type = e->own_impl->op_type;
      info->impl_key = e->own_impl->key;
      info->impl_source = e->own_impl->source;
      info->capabilities = e->own_impl->caps;
      e->next_pending = reg.pending;
      reg.pending = e; /* the list holds entry_prepare's reference */
      continue;
    }
    size_t i_slot;
    if (it->act == ACT_BIND) {
      e->base = e->txn_target; /* takes over the table's reference */
      e->proto = e->base->proto;
      e->impl = e->own_impl;
      entry_fill_info(e);
      i_slot = find_slot_locked(e->info.op_type, it->hash);
    } else {
      i_slot = pyop__hmap_free_slot(&reg.ops, it->hash);
    }
    if (hold) entry_hold_unpublished(e);
    set_slot_locked(i_slot, it->hash, e);
  }
}

/* Commit stage 4, unlocked: frees the repeats, says which implementations
 * wait for a prototype and, when held (stage 3's hold), logs each published
 * entry, calls on_register and drops the hold. */
static void commit_after(const pyop__txn *t, bool held) {
  for (size_t i = 0; i < t->n; i++) {
    pyop__entry *e = t->items[i].e;
    if (t->items[i].act == ACT_SKIP) {
      entry_free(e);
      continue;
    }
    if (t->items[i].act == ACT_PENDING) {
      PYOP_LOG_I("implementation of %s (%s) has no prototype yet: it runs once the host "
                 "registers one (pyop_register_host_prototype)",
                 e->own_impl->op_type, e->own_impl->source);
      continue;
    }
    if (!held) continue;
    PYOP_LOG_D("registered %s (prototype %s, %s)", e->info.op_type, e->info.proto_source,
               e->impl ? e->impl->source : "infer-only");
    if (!t->host) pyop__hook_on_register(&e->info);
    pyop__entry_release(e);
  }
}

/* The four stages; see the header. */
int pyop__txn_commit(pyop__txn *t) {
  if (!t) return pyop__error(PYOP_EINVAL, "pyop__txn_commit: no transaction");
  unsigned hooks = t->host ? 0 : pyop__hooks_present();
  int rc = hooks & PYOP__HOOK_OWNS_OP ? commit_veto(t) : PYOP_OK;
  if (rc != PYOP_OK) {
    pyop__txn_abort(t);
    return rc;
  }
  commit_counts c = {0, 0, 0};
  lock();
  rc = commit_classify_locked(t, &c);
  if (rc != PYOP_OK) {
    unlock();
    pyop__txn_abort(t);
    return rc;
  }
  /* After unlocking, published entries are used only for the hooks and the
   * debug log: hold a reference for them (entry_hold_unpublished). */
  bool hold = (hooks & PYOP__HOOK_ON_REGISTER) || pyop__log_enabled(PYOP_LOG_DEBUG);
  commit_publish_locked(t, hold);
  unlock();
  if (hold || c.n_skip || c.n_pending) commit_after(t, hold);
  txn_free_shell(t);
  return PYOP_OK;
}

/* ------------------------------------------------------------- unload */

/* Appends "N of "X"" for entries with live instances; under the lock. */
static void describe_live_locked(char *buf, size_t n) {
  size_t used = 0, shown = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < reg.ops.cap; i++) {
    for (pyop__entry *e = slot_entry(i); e; e = e->base) {
      size_t live = atomic_load(&e->live);
      if (!live) continue;
      int w = shown < 8 ? snprintf(buf + used, n - used, "%s%zu of \"%s\"",
                                   shown ? ", " : "", live, e->info.op_type)
                        : snprintf(buf + used, n - used, ", ...");
      if (w < 0 || (size_t)w >= n - used) return;
      used += (size_t)w;
      if (++shown > 8) return;
    }
  }
}

/* Removes entries (all, or those of loads) into a retired list. Under the
 * lock; EBUSY (message recorded) while instances live. */
static int remove_locked(bool all, pyop__entry **retired) {
  size_t live = atomic_load(&reg.live);
  if (live) {
    char what[600];
    describe_live_locked(what, sizeof what);
    return pyop__error(PYOP_EBUSY,
                       "cannot unload: %zu op instance%s alive (%s); destroy them first",
                       live, live == 1 ? " is" : "s are", what);
  }
  *retired = NULL;
  /* Pending implementations were never published: freed here (memory
   * only), with no hook. */
  while (reg.pending) {
    pyop__entry *p = reg.pending;
    reg.pending = p->next_pending;
    pyop__entry_release(p);
  }
  size_t i = 0;
  while (i < reg.ops.cap) {
    pyop__entry *e = slot_entry(i);
    if (!e || (!all && !e->from_load)) {
      i++;
      continue;
    }
    e->next_retired = *retired;
    *retired = e;
    if (!all && e->base && !e->base->from_load) {
      atomic_fetch_add(&e->base->refs, 1); /* the table's again */
      reg.ops.slots[i].val = (uintptr_t)e->base;
      i++;
    } else {
      pyop__hmap_remove_at(&reg.ops, i); /* slot i now holds a later entry: look again */
    }
  }
  return PYOP_OK;
}

int pyop__registry_unload(void) {
  pyop__entry *retired;
  lock();
  int rc = remove_locked(false, &retired);
  unlock();
  if (rc != PYOP_OK) return rc;
  size_t n = 0;
  while (retired) {
    pyop__entry *e = retired;
    retired = e->next_retired;
    pyop__hook_on_unregister(e->info.op_type);
    pyop__entry_release(e);
    n++;
  }
  PYOP_LOG_D("unloaded %zu %s", n, PYOP__PLURAL(n, "op type", "op types"));
  return PYOP_OK;
}

int pyop__registry_clear(void) {
  pyop__entry *retired;
  lock();
  int rc = remove_locked(true, &retired);
  if (rc == PYOP_OK) {
    pyop__hmap_free(&reg.ops);
  }
  unlock();
  if (rc != PYOP_OK) return rc;
  while (retired) {
    pyop__entry *e = retired;
    retired = e->next_retired;
    pyop__entry_release(e);
  }
  return PYOP_OK;
}

void pyop__registry_set_strict(bool option) {
  const char *v = pyop__getenv("PYOP_STRICT_OUTPUTS");
  bool strict = option || (v && v[0] && strcmp(v, "0") != 0);
  atomic_store_explicit(&reg.strict, strict, memory_order_relaxed);
}

bool pyop__strict_outputs(void) {
  return atomic_load_explicit(&reg.strict, memory_order_relaxed);
}

size_t pyop__registry_count(void) {
  lock();
  size_t n = reg.ops.count;
  unlock();
  return n;
}

size_t pyop__registry_live_instances(void) { return atomic_load(&reg.live); }

int pyop__registry_acquire_instance(const char *op_type, pyop__entry **out) {
  uint64_t h = pyop__hash_str(op_type);
  lock();
  pyop__entry *e = lookup_locked(op_type, h);
  if (e) {
    atomic_fetch_add(&e->refs, 1);
    atomic_fetch_add(&e->live, 1);
    atomic_fetch_add(&reg.live, 1);
  }
  unlock();
  if (!e) return not_registered(op_type);
  *out = e;
  return PYOP_OK;
}

void pyop__registry_release_instance(pyop__entry *e) {
  atomic_fetch_sub(&e->live, 1);
  atomic_fetch_sub(&reg.live, 1);
  pyop__entry_release(e);
}

/* ------------------------------------------------------- public queries */

/* Takes a reference; *out stays valid until pyop_op_info_release. */
int pyop_op_get(const char *op_type, const pyop_op_info **out) {
  PYOP__FORK_GUARD();
  if (!op_type || !out) return pyop__error(PYOP_EINVAL, "pyop_op_get: op_type or out is NULL");
  pyop__entry *e = get_entry(op_type);
  if (!e) {
    *out = NULL;
    return not_registered(op_type);
  }
  *out = &e->info;
  return PYOP_OK;
}

int pyop__registry_find_proto(pyop_str op_type, const pyop_op_info **out) {
  char name[PYOP__MAX_NAME_LEN + 1];
  if (!out) return PYOP_EINVAL;
  *out = NULL;
  if ((op_type.len && !op_type.data) || op_type.len == 0 || op_type.len > PYOP__MAX_NAME_LEN ||
      memchr(op_type.data, '\0', op_type.len))
    return PYOP_ENOENT;
  memcpy(name, op_type.data, op_type.len);
  name[op_type.len] = '\0';
  pyop__entry *e = get_entry(name);
  if (!e) return PYOP_ENOENT;
  *out = &e->info;
  return PYOP_OK;
}

void pyop__registry_release_proto(const pyop_op_info *info) { pyop_op_info_release(info); }

/* Drops the reference pyop_op_get took; NULL is ignored. */
void pyop_op_info_release(const pyop_op_info *info) {
  if (!info) return;
  pyop__entry *e = (pyop__entry *)((char *)(uintptr_t)info - offsetof(pyop__entry, info));
  pyop__entry_release(e);
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * Sorted op types in one allocation (the pointer array, then the strings);
 * free with pyop_free. With no op registered: *out_types NULL, count 0.
 */
int pyop_op_list(char ***out_types, size_t *out_count) {
  PYOP__FORK_GUARD();
  if (!out_types || !out_count)
    return pyop__error(PYOP_EINVAL, "pyop_op_list: out_types or out_count is NULL");
  *out_types = NULL;
  *out_count = 0;
  lock();
  size_t n = reg.ops.count, bytes = n * sizeof(char *);
  for (size_t i = 0; i < reg.ops.cap; i++)
    if (slot_entry(i)) bytes += strlen(slot_entry(i)->info.op_type) + 1;
  char **types = NULL;
  if (n) {
    types = pyop__malloc(bytes);
    if (!types) {
      unlock();
      return pyop__error(PYOP_ENOMEM, "pyop_op_list: out of memory for %zu %s", n,
                         PYOP__PLURAL(n, "op type", "op types"));
    }
    char *s = (char *)(types + n);
    size_t k = 0;
    for (size_t i = 0; i < reg.ops.cap; i++) {
      const pyop__entry *e = slot_entry(i);
      if (!e) continue;
      size_t len = strlen(e->info.op_type) + 1;
      memcpy(s, e->info.op_type, len);
      types[k++] = s;
      s += len;
    }
  }
  unlock();
  if (n) qsort(types, n, sizeof *types, cmp_str);
  *out_types = types;
  *out_count = n;
  return PYOP_OK;
}

void pyop_free(void *p) { pyop__free(p); }

/* ---------------------------------------------------- host prototypes */

/*
 * Binds the implementation waiting for op_type's prototype (if any) to the
 * entry just registered, as a load's commit binds one (the bound entry is
 * the load's: unload restores the prototype alone), then calls on_register
 * for it with no lock held.
 */
void pyop__registry_bind_pending(const char *op_type) {
  uint64_t h = pyop__hash_str(op_type);
  lock();
  pyop__entry **pp = NULL, *e = pending_find_locked(op_type, &pp);
  size_t i_slot = e && reg.ops.count ? find_slot_locked(op_type, h) : 0;
  pyop__entry *cur = e && reg.ops.count ? slot_entry(i_slot) : NULL;
  if (!cur || cur->impl) {
    unlock();
    return;
  }
  *pp = e->next_pending;
  e->next_pending = NULL;
  e->base = cur; /* takes over the table's reference */
  e->proto = cur->proto;
  e->impl = e->own_impl;
  e->hash = h;
  entry_fill_info(e);
  atomic_fetch_add(&e->refs, 1); /* ours for the hook below */
  set_slot_locked(i_slot, h, e);
  unlock();
  PYOP_LOG_D("registered %s (prototype %s, %s)", e->info.op_type, e->info.proto_source,
             e->impl->source);
  pyop__hook_on_register(&e->info);
  pyop__entry_release(e);
}

int pyop__txn_begin_host(pyop__txn **out) {
  *out = txn_new(true);
  return *out ? PYOP_OK : pyop__error(PYOP_ENOMEM, "out of memory starting a registration");
}
