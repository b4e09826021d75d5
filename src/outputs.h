/*
 * The outputs of one execute call (outputs.c), as execute.c builds and
 * ends the call: the state behind its services table, the three services,
 * and the contract the call's result is held to.
 */
#ifndef PYOP_OUTPUTS_H
#define PYOP_OUTPUTS_H

#include "call.h"
#include "op.h"

/*
 * The state behind the services table of one execute call, on the caller's
 * stack; execute.c fills every member before the call (done: the words
 * below n_outputs cleared; fail: by pyop__call_open).
 */
typedef struct pyop__outputs {
  const pyop_op *op;
  const pyop_exec_ctx *ctx;
  const pyop_tensor_list *inputs;
  /* One list per output, where its tensors go (pyop_op_execute: capacity 1
   * over the host's outputs[i]); counts start at 0. */
  pyop_output_list *lists;
  size_t n_outputs;
  /*
   * What is expected of output i (the host's, or infer_meta's in strict
   * mode): expect[i].items[0 .. count); NULL when nothing is stated. An
   * expectation may be the very slot its tensor is written to: each is
   * read before its slot is written and never after.
   */
  const pyop_tensor_list *expect;
  uint64_t done[(PYOP__MAX_IOS + 63) / 64]; /* outputs already handed out */
  size_t produced; /* how many of the non-dynamic outputs (each once) */
  /* The first service failure; one the op asked for against the contract
   * (PYOP_ECONTRACT) stands even when the op catches it. */
  pyop__call_failure fail;
} pyop__outputs;

/*
 * The exec services (pyop_exec_services), whose ctx is a call token over a
 * pyop__outputs (call.h): alloc_output checks the request (index, a first
 * request of a non-dynamic output, not an aliasing output, a valid
 * description, the prototype's data type constraints, room in the host's
 * list, the expectation) and gets the buffer (the host's alloc_output, or
 * the buffer the host passed); alias_output binds a declared alias to its
 * input's buffer; alloc_workspace asks the host. A failure is recorded as
 * the call's (pyop__call_failed) and returned.
 */
int pyop__svc_alloc_output(void *vctx, size_t index, pyop_tensor *t);
int pyop__svc_alias_output(void *vctx, size_t index, size_t input, pyop_tensor *t);
int pyop__svc_alloc_workspace(void *vctx, uint64_t nbytes, void **out);

/* pyop__outputs_result past its common case (cold): the call's failure,
 * or the contract broken (named). */
int pyop__outputs_end(pyop__outputs *st, int rc) __attribute__((noinline));

/*
 * The status of an execute whose op returned rc: the call's result
 * (pyop__call_result: a service's failure or the op's), then, for PYOP_OK,
 * the contract: every output produced as expected (PYOP_ECONTRACT naming
 * the first that was not).
 */
static inline __attribute__((always_inline)) int pyop__outputs_result(pyop__outputs *st,
                                                                     int rc) {
  /* The common case: success, every output produced (an op with a dynamic
   * output never counts all of them: pyop__outputs_end checks its counts). */
  if (rc == PYOP_OK && st->fail.status == PYOP_OK && st->produced == st->n_outputs)
    return PYOP_OK;
  return pyop__outputs_end(st, rc);
}

#endif
