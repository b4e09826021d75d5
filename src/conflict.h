/*
 * Conflicts between two descriptors of one op type (conflict.c): a
 * prototype or implementation n that arrives while o is held (where says
 * where o is: "already registered", "registered by the host", "registered
 * earlier in this load", ...). PYOP_OK when n may stand with o (the same
 * key, content and definition: a repeat); else PYOP_ECONFLICT recorded,
 * naming both, where, and what differs. Comparisons of strings only: a
 * commit makes them under the registry lock.
 */
#ifndef PYOP_CONFLICT_H
#define PYOP_CONFLICT_H

#include "descriptor.h"

/*
 * True when a and b have the same content (op type, inputs, outputs, attrs
 * with defaults, caps, data type constraints; not key, source, digest or
 * callbacks). Otherwise false and a short description of the first
 * difference appended to why.
 */
bool pyop__proto_same(const pyop__proto *a, const pyop__proto *b, pyop__sb *why);
bool pyop__impl_same(const pyop__impl *a, const pyop__impl *b, pyop__sb *why);

int pyop__check_protos(const pyop__proto *n, const pyop__proto *o, const char *where);
int pyop__check_impls(const pyop__impl *n, const pyop__impl *o, const char *where);

#endif
