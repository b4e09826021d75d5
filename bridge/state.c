/*
 * What the bridge keeps (pb, declared in bridge.h: the loader's services,
 * the negotiated ABI, the process-wide members and every Python object it
 * holds) and the small checks every file of the bridge uses on what the
 * loader hands in. No file that defines pb's users also defines pb: entry.c
 * (the API table) and register.c (the load) both depend on this one.
 */
#include "bridge.h"
#include "../src/str_view.h"

#include <assert.h>
#include <stdint.h>
#include <string.h>

pb_state pb;

/*
 * The members of each table the loader hands in, X(member, minor): the ABI
 * minor that added it. The static asserts below fail when a table grows
 * without its new member listed here (it would be dropped silently).
 */
#define PB_SERVICES_MEMBERS(X)                                                               \
  X(set_error, 0) X(log, 0) X(find_proto, 2) X(release_proto, 2) X(last_error, 4)
#define PB_CONFIG_MEMBERS(X)                                                                 \
  X(artifact_dir, 0) X(manifest_libpython, 0) X(flags, 0) X(lanes, 6)
#define PB_REGISTRAR_MEMBERS(X) X(ctx, 0) X(add_proto, 0) X(add_impl, 0)
/* What a table's last listed member leaves of it: a reserved_ member at
 * most (no versioned struct ends in padding: docs/bridge-abi.md). */
#define PB_LAST_IS(T, m)                                                                     \
  _Static_assert(sizeof(T) - PYOP_MEMBER_END(T, m) < sizeof(void *),                          \
                 #T " grew: list its new members in state.c")
PB_LAST_IS(pyop_loader_services, last_error);
PB_LAST_IS(pyop_bridge_config, lanes);
PB_LAST_IS(pyop_registrar, add_impl);

/* Whether a member added in ABI minor since is within the negotiated minor
 * (a function: the comparison is always true for the 1.0 members). */
static bool within(uint32_t minor, uint32_t since) { return minor >= since; }

/* See bridge.h (pb_take_*). */
pyop_loader_services pb_take_services(const pyop_loader_services *s, uint32_t minor) {
  pyop_loader_services t;
  memset(&t, 0, sizeof t);
  t.struct_size = sizeof t;
  if (s == NULL || !PB_HAS(pyop_loader_services, s, set_error))
    return t;
#define PB_TAKE(m, since)                                                                    \
  if (within(minor, since) && PB_HAS(pyop_loader_services, s, m))                            \
    t.m = s->m;
  PB_SERVICES_MEMBERS(PB_TAKE)
#undef PB_TAKE
  return t;
}

/* Config members are taken by size alone, as set_config always read them
 * (their minor is not asked). */
pyop_bridge_config pb_take_config(const pyop_bridge_config *c) {
  pyop_bridge_config t;
  memset(&t, 0, sizeof t);
  t.struct_size = sizeof t;
  assert(c != NULL && PB_HAS(pyop_bridge_config, c, flags));
#define PB_TAKE(m, since)                                                                    \
  if (PB_HAS(pyop_bridge_config, c, m))                                                      \
    t.m = c->m;
  PB_CONFIG_MEMBERS(PB_TAKE)
#undef PB_TAKE
  return t;
}

/* All three members are ABI 1.0's; add_proto and add_impl are required. */
bool pb_take_registrar(const pyop_registrar *r, pyop_registrar *out) {
  memset(out, 0, sizeof *out);
  out->struct_size = sizeof *out;
  if (r == NULL)
    return false;
#define PB_TAKE(m, since)                                                                    \
  if (PB_HAS(pyop_registrar, r, m))                                                          \
    out->m = r->m;
  PB_REGISTRAR_MEMBERS(PB_TAKE)
#undef PB_TAKE
  return out->add_proto != NULL && out->add_impl != NULL;
}

/* See bridge.h: libpyop's own check of a view (src/str_view.h). */
bool pb_str_ok(pyop_str s, bool required) {
  return pyop__str_view_problem(s, required, SIZE_MAX) == NULL;
}
