/*
 * infer_meta and execute of an op instance (op.h), the services and sinks
 * they hand the bridge, and execute's contract.
 *
 * The calls take no lock and look nothing up by name: they check the
 * arguments, build the call's structs on the stack and call the bridge.
 * They allocate only where the stack does not suffice: the _list forms'
 * copies of expectations and more than PYOP__OUT_STACK outputs in strict
 * mode.
 *
 * Outputs of execute: the op asks for output i through the services table.
 * With ctx->alloc_output the host allocates (libpyop computes nbytes from
 * shape x dtype with overflow checks and keeps the shape/dtype it asked
 * for); without it outputs[i] must already hold a buffer of that dtype and
 * shape (and enough bytes). Asking twice for a (non-dynamic) output is an
 * error. The contract (pyop.h): PYOP_OK only when every output was produced
 * (a dynamic output by zero or more requests, an aliasing output by binding
 * it to its input), and, when the host states expectations
 * (PYOP_EXEC_EXPECT_OUTPUTS or strict mode), only as expected; otherwise
 * PYOP_ECONTRACT.
 */
#include "call.h"
#include "op.h"

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

/* Same dtype, format and shape. */
static bool same_desc(const pyop_tensor *a, const pyop_tensor *b) {
  if (a->dtype != b->dtype || a->format != b->format || a->ndim != b->ndim) return false;
  for (int32_t i = 0; i < a->ndim && i < PYOP_MAX_DIMS; i++)
    if (a->shape[i] != b->shape[i]) return false;
  return true;
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

/* The state behind the services table of one execute call (on the stack). */
typedef struct exec_state {
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
} exec_state;

/* The failure rc of service `what`: kept for the call (cold). */
static __attribute__((cold, noinline)) int svc_failed(exec_state *st, int rc,
                                                     const char *what) {
  return pyop__call_failed(&st->fail, rc, what, rc == PYOP_ECONTRACT);
}

static int alloc_output_checked(exec_state *st, size_t index, pyop_tensor *t);
static int alias_output_checked(exec_state *st, size_t index, size_t input, pyop_tensor *t);

static int svc_alloc_output(void *vctx, size_t index, pyop_tensor *t) {
  exec_state *st = pyop__call_state(vctx);
  if (!st) return pyop__call_refused("alloc_output", "execute", __builtin_return_address(0));
  int rc = alloc_output_checked(st, index, t);
  return rc == PYOP_OK ? rc : svc_failed(st, rc, "alloc_output");
}

static int svc_alias_output(void *vctx, size_t index, size_t input, pyop_tensor *t) {
  exec_state *st = pyop__call_state(vctx);
  if (!st) return pyop__call_refused("alias_output", "execute", __builtin_return_address(0));
  int rc = alias_output_checked(st, index, input, t);
  return rc == PYOP_OK ? rc : svc_failed(st, rc, "alias_output");
}

/* The expectation for tensor k of output index, or NULL when the host
 * states none; *extra is set when the list has fewer than k + 1. */
static const pyop_tensor *expected_of(const exec_state *st, size_t index, size_t k,
                                      bool *extra) {
  *extra = false;
  if (!st->expect) return NULL;
  const pyop_tensor_list *e = &st->expect[index];
  if (k >= e->count) {
    /* A required output the host gave no description for: nothing stated. */
    *extra = st->op->proto->outputs[index].kind == PYOP_IO_DYNAMIC;
    return NULL;
  }
  return &e->items[k];
}

/* Room for expecter's text: "infer_meta (" + a source + ")". */
#define WHO_MAX (PYOP__MAX_SOURCE_LEN + 64)

/* Who stated the expectations of st, for messages: "the host" (its
 * PYOP_EXEC_EXPECT_OUTPUTS) or, in strict mode, "infer_meta (file:line)". */
static const char *expecter(const exec_state *st, char *buf, size_t n) {
  const pyop_exec_ctx *c = st->ctx;
  if (PYOP__HAS(pyop_exec_ctx, c, flags) && (c->flags & PYOP_EXEC_EXPECT_OUTPUTS))
    return "the host";
  snprintf(buf, n, "infer_meta (%s)", st->op->proto->source);
  return buf;
}

/* ECONTRACT: the op asked for t where ex was expected. */
static int asked_other(const exec_state *st, size_t index, size_t k, const pyop_tensor *t,
                       const pyop_tensor *ex) {
  const pyop_op *op = st->op;
  char ts[128], es[128], who[WHO_MAX], item[40] = "";
  if (op->proto->outputs[index].kind == PYOP_IO_DYNAMIC)
    snprintf(item, sizeof item, " tensor %zu", k);
  return pyop__error(PYOP_ECONTRACT, "execute of \"%s\" (%s): output %zu \"%s\"%s: %s "
                     "expected %s%s%s, the op asked for %s%s%s",
                     op->op_type, op->impl ? op->impl->source : op->proto->source, index,
                     op->proto->outputs[index].name, item, expecter(st, who, sizeof who),
                     pyop__tensor_str(ex, es, sizeof es),
                     ex->format ? " format " : "", ex->format ? pyop_format_name(ex->format) : "",
                     pyop__tensor_str(t, ts, sizeof ts), t->format ? " format " : "",
                     t->format ? pyop_format_name(t->format) : "");
}

/* Checks an output request and gets its buffer from the host (or the
 * pre-allocated outputs). */
static int alloc_output_checked(exec_state *st, size_t index, pyop_tensor *t) {
  const pyop_op *op = st->op;
  if (!t) return pyop__error(PYOP_EINVAL, "execute of \"%s\": alloc_output: t is NULL", op->op_type);
  if (index >= st->n_outputs)
    return pyop__error(PYOP_EINVAL, "execute of \"%s\": output index %zu out of range (%zu %s)",
                       op->op_type, index, st->n_outputs,
                       PYOP__PLURAL(st->n_outputs, "output", "outputs"));
  const pyop__proto *p = op->proto;
  const char *name = p->outputs[index].name;
  bool dynamic = p->outputs[index].kind == PYOP_IO_DYNAMIC;
  uint64_t bit = 1ull << (index % 64);
  if (!dynamic && (st->done[index / 64] & bit))
    return pyop__error(PYOP_EINVAL, "execute of \"%s\": output %zu \"%s\" requested twice",
                       op->op_type, index, name);
  if (p->output_alias && p->output_alias[index] >= 0) {
    int32_t a = p->output_alias[index];
    return pyop__error(PYOP_ECONTRACT, "execute of \"%s\": output %zu \"%s\" is declared as "
                       "the buffer of input %d \"%s\": bind it to that input "
                       "(make_output_ref_input) instead of allocating it",
                       op->op_type, index, name, (int)a, p->inputs[a].name);
  }
  uint64_t nb;
  char ts[128], hs[128];
  const char *why = tensor_problem(t, &nb);
  if (why)
    return pyop__error(PYOP_EINVAL, "execute of \"%s\": output %zu \"%s\" requested as %s: %s",
                       op->op_type, index, name, pyop__tensor_str(t, ts, sizeof ts), why);
  if (op->dtypes) {
    int rc = pyop__dtypes_check_output(p, st->inputs, index, t->dtype,
                                       op->impl ? op->impl->source : p->source);
    if (rc != PYOP_OK) return rc;
  }
  pyop_output_list *l = &st->lists[index];
  size_t k = l->count;
  if (k >= l->capacity)
    return pyop__error(PYOP_EINVAL, "execute of \"%s\": output %zu \"%s\": tensor %zu "
                       "requested, the host gave room for %zu", op->op_type, index, name, k,
                       l->capacity);
  pyop_tensor *o = &l->items[k];
  bool extra;
  const pyop_tensor *ex = expected_of(st, index, k, &extra);
  if (extra)
    return pyop__error(PYOP_ECONTRACT, "execute of \"%s\": dynamic output %zu \"%s\": the op "
                       "asked for tensor %zu (%s), %zu %s expected",
                       op->op_type, index, name, k, pyop__tensor_str(t, ts, sizeof ts),
                       st->expect[index].count,
                       PYOP__PLURAL(st->expect[index].count, "was", "were"));
  if (ex && !same_desc(ex, t)) return asked_other(st, index, k, t, ex);
  if (st->ctx->alloc_output) {
    pyop_tensor req = *t;
    req.data = NULL;
    req.nbytes = nb;
    int rc = st->ctx->alloc_output(st->ctx->user, index, &req);
    if (rc != 0)
      return pyop__error(PYOP_EHOST, "execute of \"%s\": the host's alloc_output failed for "
                         "output %zu \"%s\" (%s, %llu %s) with %d",
                         op->op_type, index, name, pyop__tensor_str(t, ts, sizeof ts),
                         (unsigned long long)nb, PYOP__PLURAL(nb, "byte", "bytes"), rc);
    if ((nb && !req.data) || req.nbytes < nb)
      return pyop__error(PYOP_EHOST, "execute of \"%s\": the host's alloc_output gave output "
                         "%zu \"%s\" (%s) %s",
                         op->op_type, index, name, pyop__tensor_str(t, ts, sizeof ts),
                         !req.data ? "no buffer" : "fewer bytes than needed");
    /* The shape and type are what the op asked for; the buffer the host's. */
    pyop_tensor got = *t;
    got.data = req.data;
    got.nbytes = req.nbytes;
    *o = got;
  } else {
    bool same = o->dtype == t->dtype && o->ndim == t->ndim;
    for (int32_t i = 0; same && i < t->ndim; i++) same = o->shape[i] == t->shape[i];
    if (!same)
      return pyop__error(PYOP_EINVAL, "execute of \"%s\": output %zu \"%s\" requested as %s "
                         "but the host passed %s (no alloc_output in the exec context)",
                         op->op_type, index, name, pyop__tensor_str(t, ts, sizeof ts),
                         pyop__tensor_str(o, hs, sizeof hs));
    if (o->nbytes < nb || (nb && !o->data))
      return pyop__error(PYOP_EINVAL, "execute of \"%s\": output %zu \"%s\" (%s) passed by the "
                         "host has %s",
                         op->op_type, index, name, pyop__tensor_str(t, ts, sizeof ts),
                         !o->data ? "no buffer" : "fewer bytes than its shape needs");
  }
  *t = *o;
  l->count++;
  st->done[index / 64] |= bit;
  st->produced += !dynamic;
  return PYOP_OK;
}

/* Binds output index to the buffer of input slot `input` (a declared alias). */
static int alias_output_checked(exec_state *st, size_t index, size_t input, pyop_tensor *t) {
  const pyop_op *op = st->op;
  const pyop__proto *p = op->proto;
  if (!t) return pyop__error(PYOP_EINVAL, "execute of \"%s\": alias_output: t is NULL", op->op_type);
  if (index >= st->n_outputs)
    return pyop__error(PYOP_EINVAL, "execute of \"%s\": output index %zu out of range (%zu %s)",
                       op->op_type, index, st->n_outputs,
                       PYOP__PLURAL(st->n_outputs, "output", "outputs"));
  const char *name = p->outputs[index].name;
  int32_t declared = p->output_alias ? p->output_alias[index] : -1;
  if (declared < 0 || (size_t)declared != input) {
    if (declared < 0)
      return pyop__error(PYOP_ECONTRACT, "execute of \"%s\": output %zu \"%s\" was bound to "
                         "input %zu, but the prototype declares no alias for it",
                         op->op_type, index, name, input);
    return pyop__error(PYOP_ECONTRACT, "execute of \"%s\": output %zu \"%s\" was bound to "
                       "input %zu, the prototype declares it aliases input %d \"%s\"",
                       op->op_type, index, name, input, (int)declared,
                       p->inputs[declared].name);
  }
  uint64_t bit = 1ull << (index % 64);
  if (st->done[index / 64] & bit)
    return pyop__error(PYOP_EINVAL, "execute of \"%s\": output %zu \"%s\" requested twice",
                       op->op_type, index, name);
  const pyop_tensor *in = &st->inputs[input].items[0]; /* a required input: one tensor */
  bool extra;
  const pyop_tensor *ex = expected_of(st, index, 0, &extra);
  if (ex && !same_desc(ex, in)) return asked_other(st, index, 0, in, ex);
  pyop_output_list *l = &st->lists[index];
  if (!l->capacity)
    return pyop__error(PYOP_EINVAL, "execute of \"%s\": output %zu \"%s\": the host gave "
                       "no room for it", op->op_type, index, name);
  l->items[0] = *in;
  l->count = 1;
  *t = *in;
  st->done[index / 64] |= bit;
  st->produced++;
  return PYOP_OK;
}

static int alloc_workspace_checked(exec_state *st, uint64_t nbytes, void **out);

static int svc_alloc_workspace(void *vctx, uint64_t nbytes, void **out) {
  exec_state *st = pyop__call_state(vctx);
  if (!st) return pyop__call_refused("alloc_workspace", "execute", __builtin_return_address(0));
  int rc = alloc_workspace_checked(st, nbytes, out);
  return rc == PYOP_OK ? rc : svc_failed(st, rc, "alloc_workspace");
}

static int alloc_workspace_checked(exec_state *st, uint64_t nbytes, void **out) {
  if (!out)
    return pyop__error(PYOP_EINVAL, "execute of \"%s\": alloc_workspace: out is NULL",
                       st->op->op_type);
  *out = NULL;
  if (!st->ctx->alloc_workspace)
    return pyop__error(PYOP_EUNSUPPORTED, "execute of \"%s\": the host's exec context has "
                       "no alloc_workspace", st->op->op_type);
  int rc = st->ctx->alloc_workspace(st->ctx->user, nbytes, out);
  if (rc != 0 || (nbytes && !*out))
    return pyop__error(PYOP_EHOST, "execute of \"%s\": the host's alloc_workspace failed for "
                       "%llu %s (%d)", st->op->op_type, (unsigned long long)nbytes,
                       PYOP__PLURAL(nbytes, "byte", "bytes"), rc);
  return PYOP_OK;
}

/* The status of an execute whose op returned rc: the call's result
 * (pyop__call_result: the services' failure or the op's), then, for
 * PYOP_OK, the contract: every output produced as expected. */
static __attribute__((noinline)) int exec_end(exec_state *st, int rc) {
  const pyop_op *op = st->op;
  const pyop__proto *p = op->proto;
  rc = pyop__call_result(rc, &st->fail, op, "execute");
  if (rc != PYOP_OK) return rc;
  const char *src = op->impl ? op->impl->source : p->source;
  for (size_t i = 0; i < st->n_outputs; i++) {
    bool dynamic = p->outputs[i].kind == PYOP_IO_DYNAMIC;
    if (dynamic) {
      if (st->expect && st->lists[i].count != st->expect[i].count)
        return pyop__error(PYOP_ECONTRACT, "execute of \"%s\" (%s) returned with %zu %s "
                           "in dynamic output %zu \"%s\", %zu %s expected", op->op_type,
                           src, st->lists[i].count,
                           PYOP__PLURAL(st->lists[i].count, "tensor", "tensors"), i,
                           p->outputs[i].name, st->expect[i].count,
                           PYOP__PLURAL(st->expect[i].count, "was", "were"));
      continue;
    }
    if (st->done[i / 64] & (1ull << (i % 64))) continue;
    char es[WHO_MAX + 176] = "";
    bool extra;
    const pyop_tensor *ex = expected_of(st, i, 0, &extra);
    if (ex) {
      char ts[128], who[WHO_MAX];
      snprintf(es, sizeof es, " (%s expected %s)", expecter(st, who, sizeof who),
               pyop__tensor_str(ex, ts, sizeof ts));
    }
    int32_t a = p->output_alias ? p->output_alias[i] : -1;
    if (a >= 0)
      return pyop__error(PYOP_ECONTRACT, "execute of \"%s\" (%s) returned without binding "
                         "output %zu \"%s\" to input %d \"%s\" (it is declared as that "
                         "input's buffer: call make_output_ref_input(%zu, %d))",
                         op->op_type, src, i, p->outputs[i].name, (int)a, p->inputs[a].name,
                         i, (int)a);
    return pyop__error(PYOP_ECONTRACT, "execute of \"%s\" (%s) returned without producing "
                       "output %zu \"%s\"%s", op->op_type, src, i, p->outputs[i].name, es);
  }
  return PYOP_OK;
}

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
 * per output, or NULL (see exec_state).
 */
static inline __attribute__((always_inline)) int
exec_call(pyop_op *op, const pyop_tensor_list *inputs, size_t n_inputs,
          pyop_output_list *lists, size_t n_outputs, const pyop_exec_ctx *ctx,
          const pyop_tensor_list *expect) {
  for (size_t i = 0; i < n_outputs; i++) lists[i].count = 0;
  exec_state st;
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
  pyop_exec_services svc = {sizeof svc, pyop__call_open(&call, &st, &st.fail), svc_alloc_output,
                            svc_alloc_workspace, svc_alias_output};
  pyop_exec_args args = {sizeof args, inputs,           n_inputs,
                         n_outputs,   &svc,             ctx->stream,
                         op->proto->input_flags};
  int rc = op->execute(op->impl_holder, &args);
  pyop__call_close(&call);
  /* The common case: success, every output produced (an op with a dynamic
   * output never counts all of them: exec_end checks its counts). */
  if (rc == PYOP_OK && st.fail.status == PYOP_OK && st.produced == n_outputs) return PYOP_OK;
  return exec_end(&st, rc);
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
