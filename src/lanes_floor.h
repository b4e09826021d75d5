/*
 * Which CPython can end an interpreter lane safely: one rule, header-only,
 * for the bridge (the running Py_Version, bridge/lanes.c) and for libpyop's
 * choice of the Python start_python starts (a manifest's python_version_hex,
 * src/start_python.c).
 *
 * CPython 3.12.0 to 3.12.3 cannot: an extension function first called with
 * keyword arguments in an own-GIL sub-interpreter leaves objects of that
 * interpreter behind, and the process crashes when Python finalizes
 * (CPython gh-119213, fixed in 3.12.4). No plugin can be kept from such a
 * call (hashlib makes one at import), so lanes are off there.
 */
#ifndef PYOP_LANES_FLOOR_H
#define PYOP_LANES_FLOOR_H

#include <stdbool.h>

/* The first 3.12 release that ends sub-interpreters safely (PY_VERSION_HEX). */
#define PYOP__LANES_FIXED_312 0x030C0400UL

/* True when the CPython of this PY_VERSION_HEX value cannot end a lane
 * safely. */
static inline bool pyop__lanes_unsafe_end(unsigned long hexversion) {
  return hexversion >= 0x030C0000UL && hexversion < PYOP__LANES_FIXED_312;
}

#endif
