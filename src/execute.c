/*
 * infer_meta and execute of an op instance (op.h): the checks, the sink
 * infer_meta adds dynamic outputs through, the expectations of an execute
 * (the host's or, in strict mode, infer_meta's), and the call into the
 * bridge. What the op asks of its outputs during execute, and the
 * contract the result is held to, are outputs.c's.
 *
 * The calls take no lock and look nothing up by name: they check the
 * arguments, build the call's structs on the stack and call the bridge.
 * They allocate only where the stack does not suffice: the _list forms'
 * copies of expectations and more than PYOP__OUT_STACK outputs in strict
 * mode.
 */
#include "outputs.h"

#include <assert.h>
#include <stdio.h>
#include <string.h>

static int check_output_lists(const pyop_op *op, const pyop_output_list *outputs, size_t n,
                              const char *call) {
  if (n != op->proto->n_outputs)
    return pyop__error(PYOP_EINVAL, "%s of \"%s\": %zu %s given, the op has %zu", call,
                       op->op_type, n, PYOP__PLURAL(n, "output", "outputs"), op->proto->n_outputs);
  if (n && !outputs)
    return pyop__error(PYOP_EINVAL, "%s of \"%s\": outputs is NULL", call, op->op_type);
  for (size_t i = 0; i < n; i++)
    if (outputs[i].capacity && !outputs[i].items)
      return pyop__error(PYOP_EINVAL, "%s of \"%s\": output %zu \"%s\": capacity %zu but "
                         "items is NULL", call, op->op_type, i, op->proto->outputs[i].name,
                         outputs[i].capacity);
  return PYOP_OK;
}

/* ----------------------------------------------------------- infer_meta */

/* Where infer_meta's add_output appends the tensors of dynamic outputs. */
typedef struct infer_sink {
  const pyop_op *op;
  pyop_output_list *lists; /* NULL for pyop_op_infer_meta (no dynamic output) */
  pyop__call_failure fail;
} infer_sink;

static int sink_add_output(void *vctx, size_t index, const pyop_tensor *desc) {
  infer_sink *s = pyop__call_state(vctx);
  if (!s) return pyop__call_refused("add_output", "infer_meta", __builtin_return_address(0));
  const pyop__proto *p = s->op->proto;
  if (!desc)
    return pyop__call_failed(&s->fail,
                             pyop__error(PYOP_EINVAL, "infer_meta of \"%s\": add_output: desc "
                                         "is NULL", s->op->op_type),
                             "add_output", false);
  if (index >= p->n_outputs || p->outputs[index].kind != PYOP_IO_DYNAMIC || !s->lists)
    return pyop__call_failed(&s->fail,
                             pyop__error(PYOP_EINVAL, "infer_meta of \"%s\": add_output: "
                                         "output %zu is not a dynamic output",
                                         s->op->op_type, index),
                             "add_output", false);
  pyop_output_list *l = &s->lists[index];
  if (l->count < l->capacity) l->items[l->count] = *desc;
  l->count++; /* counted past capacity too: the caller reports what is needed */
  return PYOP_OK;
}

/* Checks one description infer_meta produced; sets data NULL and nbytes. */
static int infer_result_ok(const pyop_op *op, pyop_tensor *t, size_t i, size_t k, bool list) {
  uint64_t nb;
  const char *why = tensor_problem(t, &nb);
  if (why) {
    char ts[128], item[40] = "";
    if (list) snprintf(item, sizeof item, " tensor %zu", k);
    return pyop__error(PYOP_EDESCRIPTOR,
                       "infer_meta of \"%s\" (%s) produced an invalid output %zu \"%s\"%s "
                       "(%s): %s",
                       op->op_type, op->proto->source, i, op->proto->outputs[i].name, item,
                       pyop__tensor_str(t, ts, sizeof ts), t->dtype == -1 ? "not set" : why);
  }
  t->data = NULL;
  t->nbytes = nb;
  return PYOP_OK;
}

/*
 * The call into the prototype's infer_meta shared by both forms: req (one
 * per output, where the bridge writes the required outputs) cleared to
 * dtype -1 first; lists (NULL for pyop_op_infer_meta) receive the dynamic
 * outputs through the sink. The call's failure is reported here
 * (pyop__call_result).
 */
static inline __attribute__((always_inline)) int
infer_call(pyop_op *op, const pyop_tensor_list *inputs, size_t n_inputs,
           pyop_tensor *req, size_t n_outputs, pyop_output_list *lists) {
  for (size_t i = 0; i < n_outputs; i++) {
    memset(&req[i], 0, sizeof req[i]);
    req[i].dtype = -1;
  }
  infer_sink sink;
  sink.op = op;
  sink.lists = lists;
  pyop__call call;
  pyop_infer_args args = {sizeof args, inputs, n_inputs, req, n_outputs,
                          pyop__call_open(&call, &sink, &sink.fail), sink_add_output};
  int rc = op->infer_meta(op->proto_holder, &args);
  pyop__call_close(&call);
  /* add_output's failures do not stand: PYOP_OK is the result of PYOP_OK. */
  if (__builtin_expect(rc == PYOP_OK, 1)) return PYOP_OK;
  return pyop__call_result(rc, &sink.fail, op, "infer_meta");
}

/*
 * Runs the prototype's infer_meta. Outputs are cleared (dtype -1) before the
 * call and checked after it: a valid dtype, format, ndim and non-negative
 * dims; data is set to NULL and nbytes to shape x dtype.
 */
int pyop_op_infer_meta(pyop_op *op, const pyop_tensor_list *inputs, size_t n_inputs,
                       pyop_tensor *outputs, size_t n_outputs) {
  PYOP__FORK_GUARD();
  if (!op) return pyop__error(PYOP_EINVAL, "pyop_op_infer_meta: op is NULL");
  if (!op->infer_meta) return pyop__unsupported(op, "infer_meta");
  int rc = check_inputs(op, inputs, n_inputs, false, "infer_meta", NULL, 0, NULL);
  if (rc == PYOP_OK) rc = check_outputs(op, outputs, n_outputs, "infer_meta");
  if (rc != PYOP_OK) return rc;
  rc = infer_call(op, inputs, n_inputs, outputs, n_outputs, NULL);
  if (rc != PYOP_OK) return rc;
  for (size_t i = 0; i < n_outputs; i++) {
    rc = infer_result_ok(op, &outputs[i], i, 0, false);
    if (rc != PYOP_OK) return rc;
  }
  return PYOP_OK;
}

/* Tensors of a call kept on the stack up to this many, else on the heap. */
#define PYOP__OUT_STACK 16

int pyop_op_infer_meta_list(pyop_op *op, const pyop_tensor_list *inputs, size_t n_inputs,
                            pyop_output_list *outputs, size_t n_outputs) {
  PYOP__FORK_GUARD();
  if (!op) return pyop__error(PYOP_EINVAL, "pyop_op_infer_meta_list: op is NULL");
  if (!op->infer_meta) return pyop__unsupported(op, "infer_meta");
  int rc = check_inputs(op, inputs, n_inputs, false, "infer_meta", NULL, 0, NULL);
  if (rc == PYOP_OK) rc = check_output_lists(op, outputs, n_outputs, "infer_meta");
  if (rc != PYOP_OK) return rc;
  const pyop__proto *p = op->proto;
  /* The bridge writes the required outputs here, one per output. */
  pyop_tensor stack[PYOP__OUT_STACK];
  pyop_tensor *req = n_outputs <= PYOP__OUT_STACK ? stack
                                                   : pyop__malloc(n_outputs * sizeof *req);
  if (!req)
    return pyop__error(PYOP_ENOMEM, "infer_meta of \"%s\": out of memory", op->op_type);
  for (size_t i = 0; i < n_outputs; i++) outputs[i].count = 0;
  rc = infer_call(op, inputs, n_inputs, req, n_outputs, outputs);
  if (rc != PYOP_OK) goto out;
  size_t short_of = SIZE_MAX;
  for (size_t i = 0; i < n_outputs; i++) {
    pyop_output_list *l = &outputs[i];
    if (p->outputs[i].kind != PYOP_IO_DYNAMIC) {
      l->count = 1;
      if (l->capacity) l->items[0] = req[i];
    }
    if (l->count > l->capacity && short_of == SIZE_MAX) short_of = i;
  }
  if (short_of != SIZE_MAX) {
    rc = pyop__error(PYOP_EINVAL, "infer_meta of \"%s\": output %zu \"%s\" has %zu %s, "
                     "room was given for %zu (every count is set: call again with room for "
                     "them)", op->op_type, short_of, p->outputs[short_of].name,
                     outputs[short_of].count,
                     PYOP__PLURAL(outputs[short_of].count, "tensor", "tensors"),
                     outputs[short_of].capacity);
    goto out;
  }
  for (size_t i = 0; i < n_outputs && rc == PYOP_OK; i++)
    for (size_t k = 0; k < outputs[i].count && rc == PYOP_OK; k++)
      rc = infer_result_ok(op, &outputs[i].items[k], i, k,
                           p->outputs[i].kind == PYOP_IO_DYNAMIC);
out:
  if (req != stack) pyop__free(req);
  return rc;
}

/*
 * pyop_op_infer_meta_list with the host's instance count of each dynamic
 * output (outputs[i].count on entry): a count infer_meta does not return
 * is PYOP_ECONTRACT in GE's words (its InferMeta's TypeError).
 */
int pyop_op_infer_meta_expect(pyop_op *op, const pyop_tensor_list *inputs, size_t n_inputs,
                              pyop_output_list *outputs, size_t n_outputs) {
  PYOP__FORK_GUARD();
  if (!op) return pyop__error(PYOP_EINVAL, "pyop_op_infer_meta_expect: op is NULL");
  if (!op->infer_meta) return pyop__unsupported(op, "infer_meta");
  int rc = check_output_lists(op, outputs, n_outputs, "infer_meta");
  if (rc != PYOP_OK) return rc;
  const pyop__proto *p = op->proto;
  size_t stated[PYOP__MAX_IOS];
  assert(n_outputs <= PYOP__MAX_IOS); /* checked: the prototype's count */
  for (size_t i = 0; i < n_outputs; i++) {
    stated[i] = outputs[i].count;
    if (p->outputs[i].kind == PYOP_IO_DYNAMIC && stated[i] > outputs[i].capacity)
      return pyop__error(PYOP_EINVAL, "infer_meta of \"%s\": dynamic output %zu \"%s\": %zu "
                         "tensors stated, room was given for %zu", op->op_type, i,
                         p->outputs[i].name, stated[i], outputs[i].capacity);
  }
  rc = pyop_op_infer_meta_list(op, inputs, n_inputs, outputs, n_outputs);
  if (rc != PYOP_OK && rc != PYOP_EINVAL) return rc;
  for (size_t i = 0; i < n_outputs; i++)
    if (p->outputs[i].kind == PYOP_IO_DYNAMIC && outputs[i].count != stated[i])
      return pyop__error(PYOP_ECONTRACT, "infer_meta of \"%s\" (%s): dynamic output %zu "
                         "\"%s\": instance count mismatch: the host states %zu %s, "
                         "infer_meta returned %zu (GE: infer_meta dynamic output[%zu] instance "
                         "count mismatch: expected %zu, got %zu)", op->op_type, p->source, i,
                         p->outputs[i].name, stated[i], PYOP__PLURAL(stated[i], "tensor", "tensors"), outputs[i].count, i, stated[i],
                         outputs[i].count);
  return rc;
}

/* -------------------------------------------------------------- execute */


/* Checks the arguments common to both forms of execute. */
static inline int exec_args_check(pyop_op *op, const pyop_tensor_list *inputs,
                                  size_t n_inputs, const pyop_exec_ctx *ctx) {
  if (!op->execute) return pyop__unsupported(op, "execute");
  int rc = exec_ctx_check(op, ctx, "execute");
  if (rc != PYOP_OK) return rc;
  return check_inputs(op, inputs, n_inputs, true, "execute", NULL, 0, NULL);
}

/*
 * One call into the bridge with a stack-built services table routing to
 * ctx, then the contract checks: the one body of every execute. Output i's
 * tensors go to lists[i] (its count reset to 0 first); expect is one list
 * per output, or NULL (see pyop__outputs).
 */
static inline __attribute__((always_inline)) int
exec_call(pyop_op *op, const pyop_tensor_list *inputs, size_t n_inputs,
          pyop_output_list *lists, size_t n_outputs, const pyop_exec_ctx *ctx,
          const pyop_tensor_list *expect) {
  for (size_t i = 0; i < n_outputs; i++) lists[i].count = 0;
  pyop__outputs st;
  st.op = op;
  st.ctx = ctx;
  st.inputs = inputs;
  st.lists = lists;
  st.n_outputs = n_outputs;
  st.expect = expect;
  /* Only the words alloc_output can reach (index < n_outputs). */
  for (size_t w = 0; w * 64 < n_outputs; w++) st.done[w] = 0;
  st.produced = 0;
  pyop__call call;
  pyop_exec_services svc = {sizeof svc, pyop__call_open(&call, &st, &st.fail),
                            pyop__svc_alloc_output, pyop__svc_alloc_workspace,
                            pyop__svc_alias_output};
  pyop_exec_args args = {sizeof args, inputs,           n_inputs,
                         n_outputs,   &svc,             ctx->stream,
                         op->proto->input_flags};
  int rc = op->execute(op->impl_holder, &args);
  pyop__call_close(&call);
  return pyop__outputs_result(&st, rc);
}

/*
 * exec_call with what is expected of each output: the host's (with
 * PYOP_EXEC_EXPECT_OUTPUTS: the tensors it passed, lists[i].items[0 ..
 * count), read before the counts are reset) or, in strict mode,
 * infer_meta's. On this frame's stack: the expectation lists always (one
 * per output, at most PYOP__MAX_IOS), strict mode's descriptions for up to
 * PYOP__OUT_STACK outputs and tensors, else in a block whose size is
 * computed with overflow checks (the capacities are the host's numbers).
 */
static __attribute__((noinline)) int
exec_expected(pyop_op *op, const pyop_tensor_list *inputs, size_t n_inputs,
              pyop_output_list *lists, size_t n_outputs, const pyop_exec_ctx *ctx,
              bool host_expects) {
  pyop_tensor_list expect[PYOP__MAX_IOS];
  pyop_output_list stack_want[PYOP__OUT_STACK];
  pyop_tensor stack_descs[PYOP__OUT_STACK];
  assert(n_outputs <= PYOP__MAX_IOS); /* checked: the prototype's count */
  size_t total = 0;
  bool over = false;
  if (!host_expects)
    for (size_t i = 0; i < n_outputs; i++)
      over |= __builtin_add_overflow(total, lists[i].capacity, &total);
  bool small = host_expects || (n_outputs <= PYOP__OUT_STACK && total <= PYOP__OUT_STACK);
  size_t bytes = 0, descs_bytes = 0;
  over |= __builtin_mul_overflow(n_outputs, sizeof(pyop_output_list), &bytes);
  over |= __builtin_mul_overflow(total, sizeof(pyop_tensor), &descs_bytes);
  over |= __builtin_add_overflow(bytes, descs_bytes, &bytes);
  if (over)
    return pyop__error(PYOP_EINVAL, "execute of \"%s\": the output lists' capacities add up "
                       "to more than memory can hold", op->op_type);
  void *block = small ? NULL : pyop__malloc(bytes ? bytes : 1);
  if (!small && !block)
    return pyop__error(PYOP_ENOMEM, "execute of \"%s\": out of memory", op->op_type);
  pyop_output_list *want = small ? stack_want : block;
  pyop_tensor *descs = small ? stack_descs : (pyop_tensor *)(void *)(want + n_outputs);
  int rc = PYOP_OK;
  if (host_expects) {
    for (size_t i = 0; i < n_outputs; i++) {
      size_t c = lists[i].count <= lists[i].capacity ? lists[i].count : lists[i].capacity;
      expect[i] = (pyop_tensor_list){lists[i].items, c};
    }
  } else {
    for (size_t i = 0, at = 0; i < n_outputs; at += lists[i].capacity, i++)
      want[i] = (pyop_output_list){descs + at, lists[i].capacity, 0};
    rc = pyop_op_infer_meta_list(op, inputs, n_inputs, want, n_outputs);
    if (rc != PYOP_OK)
      rc = pyop__error_prefix(rc, "execute of \"%s\" (strict outputs: infer_meta first)",
                              op->op_type);
    for (size_t i = 0; i < n_outputs; i++)
      expect[i] = (pyop_tensor_list){want[i].items, want[i].count};
  }
  if (rc == PYOP_OK) rc = exec_call(op, inputs, n_inputs, lists, n_outputs, ctx, expect);
  pyop__free(block);
  return rc;
}

/* exec_call, with expectations when the host states them or the op is strict. */
static inline __attribute__((always_inline)) int
exec_lists(pyop_op *op, const pyop_tensor_list *inputs, size_t n_inputs,
           pyop_output_list *lists, size_t n_outputs, const pyop_exec_ctx *ctx) {
  bool host_expects = exec_flags(ctx) & PYOP_EXEC_EXPECT_OUTPUTS;
  if (host_expects || op->strict)
    return exec_expected(op, inputs, n_inputs, lists, n_outputs, ctx, host_expects);
  return exec_call(op, inputs, n_inputs, lists, n_outputs, ctx, NULL);
}

/* pyop_op_execute of an op with more outputs than PYOP__OUT_STACK: the
 * capacity-1 lists in a frame of their own (the hot path's stays small). */
static __attribute__((noinline)) int execute_many(pyop_op *op, const pyop_tensor_list *inputs,
                                                  size_t n_inputs, pyop_tensor *outputs,
                                                  size_t n_outputs, const pyop_exec_ctx *ctx) {
  pyop_output_list lists[PYOP__MAX_IOS];
  assert(n_outputs <= PYOP__MAX_IOS); /* check_outputs: the prototype's count */
  for (size_t i = 0; i < n_outputs; i++) lists[i] = (pyop_output_list){&outputs[i], 1, 1};
  return exec_lists(op, inputs, n_inputs, lists, n_outputs, ctx);
}

/*
 * The hot path: argument checks, each output as a list of capacity 1 over
 * the host's outputs[i] (count 1: with PYOP_EXEC_EXPECT_OUTPUTS the tensor
 * passed is the expectation), then exec_lists. No lock, no allocation
 * (strict mode with more than PYOP__OUT_STACK outputs aside).
 */
int pyop_op_execute(pyop_op *op, const pyop_tensor_list *inputs, size_t n_inputs,
                    pyop_tensor *outputs, size_t n_outputs, const pyop_exec_ctx *ctx) {
  PYOP__FORK_GUARD();
  if (!op) return pyop__error(PYOP_EINVAL, "pyop_op_execute: op is NULL");
  int rc = exec_args_check(op, inputs, n_inputs, ctx);
  if (rc == PYOP_OK) rc = check_outputs(op, outputs, n_outputs, "execute");
  if (rc != PYOP_OK) return rc;
  if (n_outputs > PYOP__OUT_STACK)
    return execute_many(op, inputs, n_inputs, outputs, n_outputs, ctx);
  pyop_output_list lists[PYOP__OUT_STACK];
  for (size_t i = 0; i < n_outputs; i++) lists[i] = (pyop_output_list){&outputs[i], 1, 1};
  return exec_lists(op, inputs, n_inputs, lists, n_outputs, ctx);
}

/*
 * pyop_op_execute for any op: the host's lists are the lists (their counts
 * read as expectations with PYOP_EXEC_EXPECT_OUTPUTS, then reset).
 */
int pyop_op_execute_list(pyop_op *op, const pyop_tensor_list *inputs, size_t n_inputs,
                         pyop_output_list *outputs, size_t n_outputs,
                         const pyop_exec_ctx *ctx) {
  PYOP__FORK_GUARD();
  if (!op) return pyop__error(PYOP_EINVAL, "pyop_op_execute_list: op is NULL");
  int rc = exec_args_check(op, inputs, n_inputs, ctx);
  if (rc == PYOP_OK) rc = check_output_lists(op, outputs, n_outputs, "execute");
  if (rc != PYOP_OK) return rc;
  return exec_lists(op, inputs, n_inputs, outputs, n_outputs, ctx);
}
