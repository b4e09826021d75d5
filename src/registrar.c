/*
 * The registrar (docs/bridge-abi.md, "The registrar"; docs/design.md
 * §Load): the callback table one register_custom_ops call fills a load
 * transaction through; the contract is in registrar.h.
 */
#include "registrar.h"

#include <assert.h>
#include <stdatomic.h>
#include <string.h>

/*
 * The registrar handed to the bridge for one register_custom_ops call
 * (docs/bridge-abi.md, "The registrar") is a callback table of one call
 * (call.h, pyop__call): its ctx is a token live only while the call runs,
 * and only on the thread that made it, so a registrar kept after the call
 * or called from another thread is refused without touching any
 * transaction. A call from another thread while the call runs also fails
 * the load: its descriptors are lost (counted in reg_foreign).
 *
 * Invariant: reg_open is 0 or the token of the one open registrar (the
 * lifecycle, which opens it, is serialised).
 */
static atomic_uintptr_t reg_open;
static atomic_size_t reg_foreign;

/* Records (and logs: a bridge that ignores the status still leaves a trace)
 * the refusal of registrar entry `what` called with ctx from pc. */
static int registrar_refused(void *ctx, const char *what, const void *pc) {
  char who[600];
  pyop__caller_object(pc, who, sizeof who);
  if (ctx && (uintptr_t)ctx == atomic_load(&reg_open)) {
    /* Logged once per call; the close counts them all. */
    if (atomic_fetch_add(&reg_foreign, 1) == 0)
      PYOP_LOG_E("%s called the registrar's %s from another thread than the one "
                 "libpyop called register_custom_ops on; refused (the load fails)",
                 who, what);
    return pyop__error(PYOP_ESTATE,
                       "registrar %s: called from another thread than the one "
                       "libpyop called register_custom_ops on (%s); refused",
                       what, who);
  }
  PYOP_LOG_E("%s: registrar used after register_custom_ops returned (its %s); refused",
             who, what);
  return pyop__error(PYOP_ESTATE,
                     "registrar %s: registrar used after register_custom_ops returned "
                     "(%s); a registrar is valid only during the call it was passed to",
                     what, who);
}

static int registrar_add_proto(void *ctx, const pyop_proto_view *v) {
  pyop__txn *t = pyop__call_state(ctx);
  if (!t) return registrar_refused(ctx, "add_proto", __builtin_return_address(0));
  return pyop__txn_add_proto(t, v);
}
static int registrar_add_impl(void *ctx, const pyop_impl_view *v) {
  pyop__txn *t = pyop__call_state(ctx);
  if (!t) return registrar_refused(ctx, "add_impl", __builtin_return_address(0));
  return pyop__txn_add_impl(t, v);
}

/* Opens the registrar of one register_custom_ops call on the calling
 * thread and fills out (handed to the bridge): its callbacks add to t
 * while it is open, on this thread only. */
static void registrar_open(pyop__txn *t, pyop__call *call, pyop_registrar *out) {
  assert(t && atomic_load(&reg_open) == 0);
  memset(out, 0, sizeof *out);
  out->struct_size = sizeof *out;
  out->ctx = pyop__call_open(call, t, NULL);
  out->add_proto = registrar_add_proto;
  out->add_impl = registrar_add_impl;
  atomic_store(&reg_foreign, 0);
  atomic_store(&reg_open, (uintptr_t)out->ctx);
}

/* Closes it right after register_custom_ops returned: every later call is
 * refused. PYOP_OK, or PYOP_ESTATE naming bridge when calls from other
 * threads were refused during the call (their descriptors are lost). */
static int registrar_close(const pyop__call *call, const char *bridge) {
  assert(atomic_load(&reg_open) != 0);
  atomic_store(&reg_open, 0);
  pyop__call_close(call);
  size_t foreign = atomic_exchange(&reg_foreign, 0);
  if (!foreign) return PYOP_OK;
  return pyop__error(PYOP_ESTATE,
                     "pyop_load: the bridge %s called the registrar from another "
                     "thread than the one libpyop called register_custom_ops on "
                     "(%zu call%s refused, their ops lost); nothing of this load "
                     "is registered. A bridge registers on the calling thread only "
                     "(docs/bridge-abi.md, \"The registrar\")",
                     bridge, foreign, foreign == 1 ? "" : "s");
}

/*
 * Runs b's register_custom_ops(registrar, paths) for the transaction t.
 * Returns PYOP_OK when the bridge succeeded and nothing was refused;
 * otherwise the status, recorded (see pyop__registrar_load), with *reset
 * set when calls from other threads were refused (the bridge may hold the
 * plugins of a load that will not be registered).
 */
static int registrar_call(pyop__txn *t, const pyop__bridge *b, const pyop_str *paths,
                          size_t n_paths, bool *reset) {
  *reset = false;
  pyop_registrar reg;
  pyop__call call;
  registrar_open(t, &call, &reg);
  unsigned mark = pyop__error_mark();
  int brc = b->api->register_custom_ops(&reg, paths, n_paths);
  /* A registrar call from another bridge thread lost its descriptors:
   * whatever the bridge returned, this load cannot be committed. */
  int rc = registrar_close(&call, b->path);
  if (rc != PYOP_OK) {
    *reset = true; /* harmless when the bridge failed and kept nothing */
    return rc;
  }
  if (brc == PYOP_OK) return PYOP_OK;
  pyop__bridge_failure f = pyop__bridge_failed(brc, mark);
  rc = f.status;
  if (f.odd && f.said)
    pyop__error_prefix(rc, "pyop_load: the bridge's register_custom_ops returned "
                           "%d, which is not a libpyop status (reported as %s); "
                           "its message",
                       brc, pyop_status_name(rc));
  else if (f.odd)
    pyop__error(rc, "pyop_load: the bridge's register_custom_ops returned %d, "
                    "which is not a libpyop status (reported as %s), and gave "
                    "no detail",
                brc, pyop_status_name(rc));
  else if (!f.said)
    pyop__error(rc, "pyop_load: the bridge failed to register ops (%s) and "
                    "gave no detail", pyop_status_name(rc));
  return rc;
}

int pyop__registrar_load(const pyop__bridge *b, uint32_t lanes, const pyop_str *paths,
                         size_t n_paths) {
  assert(b->api != NULL);
  pyop__txn *txn = NULL;
  int rc = pyop__txn_begin(&txn);
  if (rc != PYOP_OK) return rc;
  pyop__txn_set_serial_reason(txn, pyop__bridge_serial_reason(b, lanes));
  bool reset = false;
  rc = registrar_call(txn, b, paths, n_paths, &reset);
  if (rc != PYOP_OK) {
    pyop__txn_abort(txn);
    if (reset) b->api->reset();
    return rc;
  }
  rc = pyop__txn_commit(txn);
  /* Nothing of this load is registered: drop the plugins' state. */
  if (rc != PYOP_OK) b->api->reset();
  return rc;
}
