/*
 * Interpreter lanes (bridge ABI 1.6, docs/design.md §Lanes): the lane count
 * the loader configured, and why the descriptors this bridge hands out run
 * serially in the main interpreter.
 *
 * A lane is a sub-interpreter with its own GIL (CPython 3.12+, GIL builds).
 * This Python cannot have them when it is older than 3.12 (one GIL for
 * every interpreter) or free-threaded (no GIL to have one of: its threads
 * already run Python in parallel). This bridge then accepts the
 * configuration, logs one warning naming the reason at set_config, and
 * every view says lanes 0 with that reason: the load is the one a host
 * without lanes gets (docs/host-guide.md, "Python ops in parallel").
 */
#include "bridge.h"

#include <inttypes.h>

/* Set by set_config (no GIL: the loader calls it before any other entry,
 * on one thread); read by register_custom_ops. */
static uint32_t lanes_asked;

/* Why no lane can run in this Python, or NULL when lanes can. */
static const char *lanes_impossible(void) {
#if PY_VERSION_HEX < 0x030C0000
  return "Python " PB_XSTR(PY_MAJOR_VERSION) "." PB_XSTR(PY_MINOR_VERSION)
         " has no per-interpreter GIL (lanes need CPython 3.12 or later)";
#elif defined(Py_GIL_DISABLED)
  return "this Python is free-threaded (no GIL: its threads run Python in parallel "
         "without lanes)";
#else
  return "this bridge does not start lanes yet";
#endif
}

int pb_lanes_configure(const pyop_bridge_config *config) {
  uint32_t n = 0;
  if (config->struct_size >= offsetof(pyop_bridge_config, lanes) + sizeof config->lanes)
    n = config->lanes;
  if (n > PYOP_MAX_LANES)
    return pb_error(PYOP_EINVAL, "bridge set_config: lanes %" PRIu32 " is out of range (0..%u)",
                    n, PYOP_MAX_LANES);
  lanes_asked = n;
  const char *why = n ? lanes_impossible() : NULL;
  if (why != NULL)
    pb_log(PYOP_LOG_WARN,
           "lanes: %" PRIu32 " asked for, but %s: every Python op runs serially in the main "
           "interpreter",
           n, why);
  return PYOP_OK;
}

void pb_lanes_view(const pb_op *op, pyop_str *reason, uint32_t *lanes) {
  (void)op;
  const char *why = lanes_asked ? lanes_impossible() : NULL;
  *lanes = 0;
  *reason = why != NULL ? (pyop_str){why, strlen(why)} : (pyop_str){NULL, 0};
}
