/*
 * The registrar of a load (registrar.c): what libpyop hands the bridge's
 * register_custom_ops, its add_proto / add_impl adding to a transaction of
 * registry.h, valid during that call and on its thread only.
 */
#ifndef PYOP_REGISTRAR_H
#define PYOP_REGISTRAR_H

#include "bridge_loader.h"
#include "call.h"
#include "core.h"
#include "pyop/bridge_abi.h"
#include "registry.h"

/*
 * Runs the open bridge b's register_custom_ops(registrar, paths) for the
 * transaction t (pyop_load's register stage): the registrar's add_proto
 * and add_impl add to t during that call and on this thread only; a call
 * after it returned, or from another thread, is refused (PYOP_ESTATE,
 * logged). Returns PYOP_OK when the bridge succeeded and nothing was
 * refused. Otherwise the status, recorded: the calls refused from other
 * threads (their descriptors are lost; *reset is set: the bridge may hold
 * the plugins of a load that will not be registered), or the bridge's
 * failure read once (pyop__bridge_failed: its own message, or one naming
 * the status it returned when it gave none or returned one outside
 * PYOP_STATUS_MAP). The caller aborts t on failure. One call at a time
 * (the caller is the serialised lifecycle).
 */
int pyop__registrar_call(pyop__txn *t, const pyop__bridge *b, const pyop_str *paths,
                         size_t n_paths, bool *reset);

#endif
