/*
 * String views (pyop_str): the one check of a view's form and its
 * equality. Header-only, as shape.h is, so that libpyop (src/) and the
 * bridge (bridge/, which links no libpyop object) compile the very same
 * code; it needs only pyop/pyop.h and <string.h>.
 *
 * A view is well formed when its data is not NULL while len > 0 and its
 * bytes hold no NUL; a limit and "non-empty" are the caller's. Reasons are
 * static texts, checked in this order: NULL data, empty (when required),
 * too long, embedded NUL.
 */
#ifndef PYOP_STR_VIEW_H
#define PYOP_STR_VIEW_H

#include "pyop/pyop.h"

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

/* NULL when s is a well-formed view of at most max bytes (and non-empty
 * when required); else the reason (static). max SIZE_MAX: no limit. */
static inline const char *pyop__str_view_problem(pyop_str s, bool required, size_t max) {
  if (s.len > 0 && !s.data) return "length > 0 with NULL data";
  if (s.len == 0) return required ? "empty" : NULL;
  if (s.len > max) return "too long";
  if (memchr(s.data, '\0', s.len)) return "embedded NUL";
  return NULL;
}

/* Equal views (an empty view may have NULL data). */
static inline bool pyop__str_view_same(pyop_str a, pyop_str b) {
  return a.len == b.len && (a.len == 0 || memcmp(a.data, b.data, a.len) == 0);
}

#endif
