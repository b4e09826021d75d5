/*
 * What the bridge keeps (pb, declared in bridge.h: the loader's services,
 * the negotiated ABI, the process-wide members and every Python object it
 * holds) and the small checks every file of the bridge uses on what the
 * loader hands in. No file that defines pb's users also defines pb: entry.c
 * (the API table) and register.c (the load) both depend on this one.
 */
#include "bridge.h"

#include <string.h>

pb_state pb;

/* Whether s is NUL-free, non-NULL when len > 0 and, when required,
 * non-empty (see bridge.h). */
bool pb_str_ok(pyop_str s, bool required) {
  if (s.len > 0 && s.data == NULL)
    return false;
  if (required && s.len == 0)
    return false;
  return s.len == 0 || memchr(s.data, '\0', s.len) == NULL;
}
