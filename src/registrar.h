/*
 * The registrar of a load (registrar.c): what libpyop hands the bridge's
 * register_custom_ops, its add_proto / add_impl adding to a transaction of
 * registry.h, valid during that call and on its thread only.
 */
#ifndef PYOP_REGISTRAR_H
#define PYOP_REGISTRAR_H

#include "call.h"
#include "core.h"
#include "pyop/bridge_abi.h"
#include "registry.h"

/*
 * Opens the registrar of one register_custom_ops call on the calling thread
 * (a call of call.h's pyop__call) and fills out (handed to the bridge): its
 * callbacks add to t while it is open, on this thread only. At most one session is open at
 * a time (the caller is the serialised lifecycle).
 */
void pyop__registrar_open(pyop__txn *t, pyop__call *call, pyop_registrar *out);
/*
 * Closes it right after register_custom_ops returned: every later
 * call of that registrar is refused (PYOP_ESTATE, logged). Returns PYOP_OK,
 * or PYOP_ESTATE with a message naming bridge (its path) when calls from
 * other threads were refused during the call: their descriptors are lost,
 * so the caller must abort t.
 */
int pyop__registrar_close(const pyop__call *call, const char *bridge);

#endif
