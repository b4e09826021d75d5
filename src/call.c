/*
 * Call tokens (call.h): handing them out in blocks, the refusal of a
 * callback called outside its call, and a service's failure kept for its
 * call.
 */
#include "call.h"

#include <assert.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

/* Tokens are handed out in blocks, so a call costs no atomic operation. */
#define PYOP__CALL_BLOCK ((uintptr_t)1 << 16)
static atomic_uintptr_t call_blocks = 1; /* block 0 would hold token 0 */

uintptr_t pyop__call_refill(pyop__call_tls *t) {
  uintptr_t b = atomic_fetch_add(&call_blocks, 1);
  t->next = b * PYOP__CALL_BLOCK;
  t->end = t->next + PYOP__CALL_BLOCK;
  return t->next;
}

void pyop__caller_object(const void *pc, char *buf, size_t n) {
  Dl_info info;
  memset(&info, 0, sizeof info);
  if (PYOP_SYS(dladdr)(pc, &info) && info.dli_fname && info.dli_fname[0])
    snprintf(buf, n, "the bridge %s", info.dli_fname);
  else
    snprintf(buf, n, "a bridge");
}

int pyop__call_refused(const char *what, const char *call, const void *pc) {
  char who[600];
  pyop__caller_object(pc, who, sizeof who);
  PYOP_LOG_E("%s called %s of %s after that call returned, or from another thread; "
             "refused",
             who, what, call);
  return pyop__error(PYOP_ESTATE,
                     "%s: %s called after the call it was passed to returned, or from "
                     "another thread (%s); such a callback is valid only during that "
                     "call, on its thread",
                     call, what, who);
}

int pyop__call_failed(pyop__call_failure *f, int rc, const char *service, bool stands) {
  assert(rc != PYOP_OK);
  pyop__error_names_call(); /* the message starts with the call */
  if (f->status == PYOP_OK) {
    f->status = rc;
    f->stands = stands;
    f->service = service;
    f->mark = pyop__error_mark();
    snprintf(f->reason, sizeof f->reason, "%s", pyop_last_error());
  }
  return rc;
}
