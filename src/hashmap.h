/*
 * The one hash map of libpyop: open addressing with linear probing over a
 * power-of-two number of slots, load factor at most 2/3, backward-shift
 * deletion (no tombstones). Every table of libpyop is one: the registry's
 * op table and a load transaction's index (registry.c), a prototype's
 * attribute index and validation's name set (descriptor.c).
 *
 * A slot holds a key's 64-bit hash and a value: a pointer, or an index + 1;
 * value 0 is an empty slot. The map never sees keys: a lookup walks the
 * probe sequence of a hash and asks the caller's eq(key, value) only for
 * slots whose stored hash matches, so a probe reads the slots alone. The
 * functions are static inline so that eq, a constant at each call site, is
 * inlined there (the registry's lookup is a hot path: bench row 6a).
 *
 * Invariants (checked by asserts where cheap): count < cap when cap > 0,
 * so every probe sequence ends at an empty slot; the value of hash h sits
 * on the sequence h, h+1, ... (mod cap) before its first empty slot.
 * Not thread-safe: the owner guards it (the registry with its mutex).
 */
#ifndef PYOP_HASHMAP_H
#define PYOP_HASHMAP_H

#include "core.h"

#include <assert.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct pyop__hslot {
  uint64_t hash;
  uintptr_t val; /* 0: empty */
} pyop__hslot;

typedef struct pyop__hmap {
  pyop__hslot *slots; /* NULL while cap is 0 */
  size_t cap;         /* 0 or a power of two */
  size_t count;
  bool fixed; /* slots are the caller's (an arena): never grown or freed */
} pyop__hmap;

/* Whether cap slots (a power of two) may hold n values (n <= SIZE_MAX / 2):
 * load at most 2/3, and always one empty slot. */
static inline bool pyop__hmap_fits(size_t n, size_t cap) {
  return n < cap && n + n / 2 <= cap;
}

/* The fewest slots (a power of two) that hold n values; n is small (a
 * descriptor's count). */
static inline size_t pyop__hmap_slots_for(size_t n) {
  assert(n <= SIZE_MAX / 4 / sizeof(pyop__hslot));
  size_t need = n < 2 ? n + 1 : n + n / 2;
  return need == 1 ? 1 : (size_t)1 << (64 - __builtin_clzll((unsigned long long)need - 1));
}

/* A map over the caller's cap zeroed slots (cap from pyop__hmap_slots_for
 * of the most values it will hold); never grown or freed by the map. */
static inline void pyop__hmap_init_fixed(pyop__hmap *m, pyop__hslot *slots, size_t cap) {
  assert(cap && (cap & (cap - 1)) == 0);
  m->slots = slots;
  m->cap = cap;
  m->count = 0;
  m->fixed = true;
}

/* Frees a map's own slots; the map is empty afterwards. */
static inline void pyop__hmap_free(pyop__hmap *m) {
  if (!m->fixed) pyop__free(m->slots);
  m->slots = NULL;
  m->cap = m->count = 0;
}

/* The slot holding the value eq(key, value) accepts among those of hash h,
 * or the empty slot where it would go. cap > 0. */
static inline size_t pyop__hmap_find(const pyop__hmap *m, uint64_t h,
                                     bool (*eq)(const void *key, uintptr_t val),
                                     const void *key) {
  assert(m->cap);
  size_t mask = m->cap - 1;
  for (size_t i = (size_t)h & mask;; i = (i + 1) & mask) {
    const pyop__hslot *s = &m->slots[i];
    if (!s->val || (s->hash == h && eq(key, s->val))) return i;
  }
}

/* The value of hash h that eq accepts, or 0. */
static inline uintptr_t pyop__hmap_get(const pyop__hmap *m, uint64_t h,
                                       bool (*eq)(const void *key, uintptr_t val),
                                       const void *key) {
  if (!m->count) return 0;
  return m->slots[pyop__hmap_find(m, h, eq, key)].val;
}

/* The empty slot where a new value of hash h goes (its key known absent). */
static inline size_t pyop__hmap_free_slot(const pyop__hmap *m, uint64_t h) {
  assert(m->count < m->cap);
  size_t mask = m->cap - 1;
  size_t i = (size_t)h & mask;
  while (m->slots[i].val) i = (i + 1) & mask;
  return i;
}

/* Stores val (not 0) of hash h in slot i, found by pyop__hmap_find or
 * pyop__hmap_free_slot (an empty slot: one more value; else a replacement
 * of the value there, of the same key). Room was reserved. */
static inline void pyop__hmap_set(pyop__hmap *m, size_t i, uint64_t h, uintptr_t val) {
  assert(val && i < m->cap);
  if (!m->slots[i].val) {
    m->count++;
    assert(m->count < m->cap);
  }
  m->slots[i].hash = h;
  m->slots[i].val = val;
}

/* Makes room for `more` new values. PYOP_ENOMEM leaves the map as it was;
 * a fixed map must already have the room. */
static inline int pyop__hmap_reserve(pyop__hmap *m, size_t more) {
  size_t need = m->count + more;
  if (need < m->count || need > SIZE_MAX / 2) return PYOP_ENOMEM;
  if (m->cap && pyop__hmap_fits(need, m->cap)) return PYOP_OK;
  assert(!m->fixed);
  size_t cap = m->cap ? m->cap : 16;
  while (!pyop__hmap_fits(need, cap)) {
    if (cap > SIZE_MAX / 4 / sizeof(pyop__hslot)) return PYOP_ENOMEM;
    cap *= 2;
  }
  pyop__hslot *slots = pyop__calloc(cap, sizeof *slots);
  if (!slots) return PYOP_ENOMEM;
  pyop__hmap old = *m;
  m->slots = slots;
  m->cap = cap;
  for (size_t i = 0; i < old.cap; i++)
    if (old.slots[i].val) m->slots[pyop__hmap_free_slot(m, old.slots[i].hash)] = old.slots[i];
  pyop__free(old.slots);
  return PYOP_OK;
}

/* Empties slot i keeping every probe sequence intact (backward shift): a
 * later value may move into i, so an iteration that removes looks at i
 * again. */
static inline void pyop__hmap_remove_at(pyop__hmap *m, size_t i) {
  assert(i < m->cap && m->slots[i].val);
  size_t mask = m->cap - 1;
  for (size_t j = i;;) {
    j = (j + 1) & mask;
    if (!m->slots[j].val) break;
    size_t home = (size_t)m->slots[j].hash & mask;
    /* The value at j may move to i when its home is not in (i, j] cyclically. */
    bool in_range = i <= j ? (home > i && home <= j) : (home > i || home <= j);
    if (in_range) continue;
    m->slots[i] = m->slots[j];
    i = j;
  }
  m->slots[i].val = 0;
  m->slots[i].hash = 0;
  m->count--;
}

#endif
