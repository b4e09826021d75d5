/*
 * Call tokens (call.c): the ctx of the callbacks libpyop hands the bridge
 * for one call.
 *
 * Callbacks that libpyop hands the bridge for one call (exec services, the
 * infer/compile/declare sinks) are valid only during that call and on its
 * thread (docs/bridge-abi.md, "Callbacks for one call"). Their ctx is not
 * the call's state but a token: a number unique in the process (never
 * reused), live on the calling thread while the call runs. A callback maps
 * its ctx back with pyop__call_state, which answers NULL for a token of a
 * call that returned (a kept table called later, even from the same stack
 * address) or of another thread, so such a call is refused without touching
 * the call's (perhaps dead) state. Calls nest: close restores the call open
 * before. The tokens live in the thread's block (error.h, pyop__call_live).
 */
#ifndef PYOP_CALL_H
#define PYOP_CALL_H

#include "core.h"

/*
 * The first failure of a service or sink of one call (the exec services,
 * infer_meta's add_output, compile's set_artifact, declare_launch_args'
 * add_launch and add_workspace), carried in that call's state: the bridge
 * turns a failure into a Python exception whose text replaces libpyop's
 * message, so the reason is kept here, and pyop__call_result (op.h) turns
 * it and what the callback returned into the call's result. pyop__call_open
 * sets status and mark; the rest is written by pyop__call_failed.
 */
typedef struct pyop__call_failure {
  int status;          /* PYOP_OK: nothing failed */
  /* pyop__error_mark() when the call opened, or after a failure when its
   * reason was recorded: the bridge's own message is what came after. */
  unsigned mark;
  bool stands;         /* the call fails even when the op catches it and returns */
  const char *service; /* the member that failed: "alloc_output", "add_launch"... */
  char reason[1024];   /* libpyop's message of the failure */
} pyop__call_failure;
/* Keeps the failure of service with rc, whose message (just recorded)
 * starts with the call, when it is the call's first (stands: see above);
 * marks that message as naming its call (pyop__error_names_call) either
 * way. Returns rc. */
int pyop__call_failed(pyop__call_failure *f, int rc, const char *service, bool stands)
    __attribute__((cold));
/* Refills next/end with a fresh block of tokens; returns next (cold). */
uintptr_t pyop__call_refill(pyop__call_tls *t) __attribute__((cold));
typedef struct pyop__call {
  pyop__call_tls *tls; /* this thread's (looked up once per call) */
  uintptr_t prev_token;
  void *prev_state;
} pyop__call;
/* Opens a call with this state on this thread; returns the ctx to hand
 * out. f, when not NULL, is the call's failure record (in state): nothing
 * failed, marked now. */
static inline void *pyop__call_open(pyop__call *c, void *state, pyop__call_failure *f) {
  pyop__call_tls *t = &pyop__call_live;
  /* Opaque to the compiler: it keeps t rather than look the thread's block
   * up again (a second __tls_get_addr) after the refill branch. */
  __asm__("" : "+r"(t));
  uintptr_t token = t->next;
  if (__builtin_expect(token == t->end, 0)) token = pyop__call_refill(t);
  t->next = token + 1;
  c->tls = t;
  if (f) {
    f->status = PYOP_OK;
    f->mark = t->error_seq;
  }
  c->prev_token = t->token;
  c->prev_state = t->state;
  t->token = token;
  t->state = state;
  return (void *)token;
}
static inline void pyop__call_close(const pyop__call *c) {
  c->tls->token = c->prev_token;
  c->tls->state = c->prev_state;
}
/* The state of the call whose ctx this is, when it is live on this thread;
 * else NULL. */
static inline void *pyop__call_state(const void *ctx) {
  const pyop__call_tls *t = &pyop__call_live;
  return ctx && (uintptr_t)ctx == t->token ? t->state : NULL;
}
/* Records and logs the refusal of callback `what` of `call` ("execute of
 * \"Op\"") made outside its call; pc is the caller's return address (its
 * object is named). Returns PYOP_ESTATE. */
int pyop__call_refused(const char *what, const char *call, const void *pc)
    __attribute__((cold));
/* "the bridge <file>" for the object holding code address pc, or "a
 * bridge" (for messages about a misbehaving caller). */
void pyop__caller_object(const void *pc, char *buf, size_t n);

#endif
