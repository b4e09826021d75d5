/*
 * Loading a bridge: dlopen a vetted candidate, find the one entry symbol,
 * negotiate the ABI, validate the API table, apply the configuration.
 */
#ifndef PYOP_BRIDGE_LOADER_H
#define PYOP_BRIDGE_LOADER_H

#include "candidates.h"
#include "core.h"
#include "pyop/bridge_abi.h"
#include "runtime_key.h"

typedef struct pyop__bridge {
  void *handle;
  const pyop_bridge_api *api;
  uint32_t abi_major; /* negotiated */
  uint32_t abi_minor;
  char *path;         /* resolved bridge file */
  char *dir;          /* artifact directory */
} pyop__bridge;

/* The services table libpyop hands to every bridge. */
extern const pyop_loader_services pyop__loader_services;

/*
 * Tries the UNTRIED candidates in order until one loads; every candidate
 * tried gets its status and reason. Each candidate's set_config receives its
 * own resolved artifact directory, the libpython its manifest records,
 * config_flags (PYOP_BRIDGE_* bits) and lanes (pyop_options.lanes, read by
 * an ABI 1.6 bridge). On success *out owns the handle and
 * copies of the paths (release with pyop__bridge_close). On failure returns
 * PYOP_ENOBRIDGE (or PYOP_ENOMEM), *out is zeroed, and the last error lists
 * every candidate with its status and reason.
 */
int pyop__bridge_load(pyop__candidates *cands, uint32_t config_flags, uint32_t lanes,
                      pyop__bridge *out);
/*
 * The bridge of a load for the Python key (pyop_load's second stage): its
 * candidates ranked (candidates.h) and the first that works loaded
 * (pyop__bridge_load, with PYOP_BRIDGE_START_PYTHON when opt->start_python
 * and opt->lanes), logged. *report receives the candidate report for
 * pyop_doctor ("runtime: <key>" and every candidate with its verdict;
 * allocated, NULL when out of memory), on failure too. All or nothing: on
 * success *out is open and *report set; a report that cannot be built
 * closes the bridge again (PYOP_ENOMEM). On failure *out is zeroed and the
 * error recorded.
 */
int pyop__bridge_open(const pyop__runtime_key *key, const pyop_options *opt,
                      pyop__bridge *out, char **report);
/*
 * Why every Python op of a load through the open bridge b runs serially
 * when lanes were asked for (lanes > 0) and b cannot run them (ABI 1.5 or
 * older): a static text, "" when nothing stands in the way (the load's
 * transaction keeps it on its entries, registry.h).
 */
const char *pyop__bridge_serial_reason(const pyop__bridge *b, uint32_t lanes);
/*
 * True when the open bridge b says (ABI 1.5 interpreter_status) that the
 * interpreter its objects belong to was finalized, or that no Python is
 * initialised; false while it runs, and for a bridge that cannot tell (an
 * older minor). Calls the bridge: never with a libpyop lock held.
 */
bool pyop__bridge_interpreter_lost(const pyop__bridge *b);
/* Calls shutdown (if present) then dlclose; b is zeroed. */
void pyop__bridge_close(pyop__bridge *b);

#endif
