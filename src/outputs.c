/*
 * The outputs of one execute call (outputs.h): the exec services an op asks
 * for its outputs and workspace through, and the contract its result is
 * held to.
 *
 * The op asks for output i through the services table. With
 * ctx->alloc_output the host allocates (libpyop computes nbytes from shape
 * x dtype with overflow checks and keeps the shape/dtype it asked for);
 * without it outputs[i] must already hold a buffer of that dtype and shape
 * (and enough bytes). Asking twice for a (non-dynamic) output is an error.
 * The contract (pyop.h): PYOP_OK only when every output was produced (a
 * dynamic output by zero or more requests, an aliasing output by binding
 * it to its input), and, when the host states expectations
 * (PYOP_EXEC_EXPECT_OUTPUTS or strict mode), only as expected; otherwise
 * PYOP_ECONTRACT.
 */
#include "outputs.h"

#include <stdio.h>
#include <string.h>

/* Same dtype, format and shape. */
static bool same_desc(const pyop_tensor *a, const pyop_tensor *b) {
  if (a->dtype != b->dtype || a->format != b->format || a->ndim != b->ndim) return false;
  for (int32_t i = 0; i < a->ndim && i < PYOP_MAX_DIMS; i++)
    if (a->shape[i] != b->shape[i]) return false;
  return true;
}

/* The failure rc of service `what`: kept for the call (cold). */
static __attribute__((cold, noinline)) int svc_failed(pyop__outputs *st, int rc,
                                                     const char *what) {
  return pyop__call_failed(&st->fail, rc, what, rc == PYOP_ECONTRACT);
}

static int alloc_output_checked(pyop__outputs *st, size_t index, pyop_tensor *t);
static int alias_output_checked(pyop__outputs *st, size_t index, size_t input, pyop_tensor *t);

int pyop__svc_alloc_output(void *vctx, size_t index, pyop_tensor *t) {
  pyop__outputs *st = pyop__call_state(vctx);
  if (!st) return pyop__call_refused("alloc_output", "execute", __builtin_return_address(0));
  int rc = alloc_output_checked(st, index, t);
  return rc == PYOP_OK ? rc : svc_failed(st, rc, "alloc_output");
}

int pyop__svc_alias_output(void *vctx, size_t index, size_t input, pyop_tensor *t) {
  pyop__outputs *st = pyop__call_state(vctx);
  if (!st) return pyop__call_refused("alias_output", "execute", __builtin_return_address(0));
  int rc = alias_output_checked(st, index, input, t);
  return rc == PYOP_OK ? rc : svc_failed(st, rc, "alias_output");
}

/* The expectation for tensor k of output index, or NULL when the host
 * states none; *extra is set when the list has fewer than k + 1. */
static const pyop_tensor *expected_of(const pyop__outputs *st, size_t index, size_t k,
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
static const char *expecter(const pyop__outputs *st, char *buf, size_t n) {
  const pyop_exec_ctx *c = st->ctx;
  if (PYOP__HAS(pyop_exec_ctx, c, flags) && (c->flags & PYOP_EXEC_EXPECT_OUTPUTS))
    return "the host";
  snprintf(buf, n, "infer_meta (%s)", st->op->proto->source);
  return buf;
}

/* ECONTRACT: the op asked for t where ex was expected. */
static int asked_other(const pyop__outputs *st, size_t index, size_t k, const pyop_tensor *t,
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
static int alloc_output_checked(pyop__outputs *st, size_t index, pyop_tensor *t) {
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
static int alias_output_checked(pyop__outputs *st, size_t index, size_t input, pyop_tensor *t) {
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

static int alloc_workspace_checked(pyop__outputs *st, uint64_t nbytes, void **out);

int pyop__svc_alloc_workspace(void *vctx, uint64_t nbytes, void **out) {
  pyop__outputs *st = pyop__call_state(vctx);
  if (!st) return pyop__call_refused("alloc_workspace", "execute", __builtin_return_address(0));
  int rc = alloc_workspace_checked(st, nbytes, out);
  return rc == PYOP_OK ? rc : svc_failed(st, rc, "alloc_workspace");
}

static int alloc_workspace_checked(pyop__outputs *st, uint64_t nbytes, void **out) {
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

int pyop__outputs_end(pyop__outputs *st, int rc) {
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
