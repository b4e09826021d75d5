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
 * pyop_load's register stage: one load transaction for the plugins at
 * paths, filled by the open bridge b's register_custom_ops through the
 * registrar, then committed. The transaction carries the serial reason of
 * b for lanes (pyop__bridge_serial_reason: the ops of this load run
 * serially when b cannot run them in lanes). During the call the
 * registrar's add_proto and add_impl add to the transaction, on this
 * thread only; a call after it returned, or from another thread, is
 * refused (PYOP_ESTATE, logged).
 *
 * Returns PYOP_OK when the bridge succeeded, nothing was refused and the
 * commit succeeded. Otherwise nothing of this load is registered and the
 * status is recorded: the calls refused from other threads (their
 * descriptors are lost), the bridge's failure read once
 * (pyop__bridge_failed: its own message, or one naming the status it
 * returned when it gave none or returned one outside PYOP_STATUS_MAP), or
 * the commit's refusal (a conflict). When the bridge may hold the plugins
 * of this unregistered load (a refused call, a refused commit), its reset
 * drops them. One call at a time (the caller is the serialised lifecycle).
 */
int pyop__registrar_load(const pyop__bridge *b, uint32_t lanes, const pyop_str *paths,
                         size_t n_paths);

#endif
