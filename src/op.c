/*
 * Op instances: one node of the host's graph bound to a registry entry.
 *
 * Everything is resolved at pyop_op_create (entry, callbacks, holders, input
 * kinds), so the calls (execute.c, launch.c) take no lock and look
 * nothing up by name. This file also holds the argument checks every call
 * makes (op.h).
 *
 * Attribute coercions at create: an int is accepted for a float attribute
 * and a list[int] for a list[float] (converted to double); nothing else is
 * coerced (no int for bool, no float for int). A name given twice is an
 * error.
 *
 * Tensor attributes are copied at create (description and bytes, one
 * allocation each) and live until destroy: the host's buffer may go after
 * pyop_op_create returns; the bridge sees libpyop's copy.
 */
#include "op.h"

#include <assert.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

/* Round-robin placement of instances over the lanes (pyop_op_lane). */
static atomic_uint next_lane;

/* ----------------------------------------------------------- attributes */

/*
 * Copies a Tensor attribute's description and bytes into one allocation
 * kept in op (freed at destroy); *out points to the copy. The host's
 * tensor must be a valid description with data of at least its size.
 */
static int copy_tensor_attr(pyop_op *op, const char *name, const pyop_tensor *t,
                            const pyop_tensor **out) {
  uint64_t nb = 0;
  const char *why = tensor_problem(t, &nb);
  if (!why && t->nbytes < nb) why = "nbytes smaller than shape x dtype";
  if (!why && nb && !t->data) why = "NULL data";
  if (!why && nb > SIZE_MAX - 128) why = "too large";
  if (why) {
    char ts[128];
    return pyop__error(PYOP_EINVAL, "pyop_op_create(\"%s\"): Tensor attribute \"%s\" (%s): %s",
                       op->op_type, name, pyop__tensor_str(t, ts, sizeof ts), why);
  }
  /* The bytes start 128 bytes in, after the description: aligned for any
   * element type. */
  char *block = pyop__malloc(128 + (size_t)nb);
  if (!block)
    return pyop__error(PYOP_ENOMEM, "pyop_op_create(\"%s\"): out of memory copying Tensor "
                       "attribute \"%s\" (%llu %s)", op->op_type, name,
                       (unsigned long long)nb, PYOP__PLURAL(nb, "byte", "bytes"));
  _Static_assert(sizeof(pyop_tensor) <= 128, "a tensor description fits before the bytes");
  pyop_tensor *copy = (pyop_tensor *)(void *)block;
  *copy = *t;
  copy->data = nb ? block + 128 : NULL;
  copy->nbytes = nb;
  copy->reserved = 0;
  if (nb) memcpy(copy->data, t->data, (size_t)nb);
  op->attr_tensors[op->n_attr_tensors++] = block;
  *out = copy;
  return PYOP_OK;
}

static const char *type_name(int32_t t) {
  const char *n = pyop_attr_type_name(t);
  return n ? n : "unknown";
}

/* Resolves the host's attrs against p into views[0..p->n_attrs) (every
 * prototype attribute in prototype order, defaults applied). *conv receives
 * the buffer of list[int] -> list[float] conversions (free it after use). */
static int resolve_attrs(pyop_op *op, const pyop__proto *p, const pyop_attr *attrs, size_t n,
                         pyop_attr_view *views, long *src, double **conv) {
  *conv = NULL;
  if (n && !attrs)
    return pyop__error(PYOP_EINVAL, "pyop_op_create(\"%s\"): %zu %s but attrs is NULL",
                       p->op_type, n, PYOP__PLURAL(n, "attribute", "attributes"));
  for (size_t i = 0; i < p->n_attrs; i++) src[i] = -1;
  size_t n_conv = 0;
  for (size_t k = 0; k < n; k++) {
    const pyop_attr *a = &attrs[k];
    if (!a->name)
      return pyop__error(PYOP_EINVAL, "pyop_op_create(\"%s\"): attribute %zu has a NULL name",
                         p->op_type, k);
    long i = pyop__proto_attr_find(p, a->name);
    if (i < 0)
      return pyop__error(PYOP_EINVAL, "pyop_op_create(\"%s\"): unknown attribute \"%.256s\"",
                         p->op_type, a->name);
    if (src[i] >= 0)
      return pyop__error(PYOP_EINVAL, "pyop_op_create(\"%s\"): attribute \"%s\" given twice",
                         p->op_type, a->name);
    int32_t want = p->attrs[i].type, got = a->value.type;
    bool ok = want == got || (want == PYOP_ATTR_FLOAT && got == PYOP_ATTR_INT) ||
              (want == PYOP_ATTR_LIST_FLOAT && got == PYOP_ATTR_LIST_INT);
    if (!ok)
      return pyop__error(PYOP_EINVAL,
                         "pyop_op_create(\"%s\"): attribute \"%s\": expected %s, given %s",
                         p->op_type, a->name, type_name(want), type_name(got));
    pyop__sb why = PYOP__SB_INIT;
    if (!pyop__attr_value_check(&a->value, &why)) {
      int rc = pyop__error(PYOP_EINVAL, "pyop_op_create(\"%s\"): attribute \"%s\": %s",
                           p->op_type, a->name, why.oom ? "(out of memory)" : pyop__sb_str(&why));
      pyop__sb_free(&why);
      return rc;
    }
    if (want != got && want == PYOP_ATTR_LIST_FLOAT) n_conv += a->value.u.ints.count;
    src[i] = (long)k;
  }
  if (n_conv) {
    *conv = pyop__malloc(n_conv * sizeof **conv);
    if (!*conv)
      return pyop__error(PYOP_ENOMEM, "pyop_op_create(\"%s\"): out of memory", p->op_type);
  }
  double *next = *conv;
  for (size_t i = 0; i < p->n_attrs; i++) {
    const pyop_attr_info *info = &p->attrs[i];
    pyop_attr_view *v = &views[i];
    memset(v, 0, sizeof *v);
    v->struct_size = sizeof *v;
    v->name.data = info->name;
    v->name.len = strlen(info->name);
    v->type = info->type;
    v->required = info->required ? 1 : 0;
    if (src[i] < 0) {
      if (info->required)
        return pyop__error(PYOP_EINVAL,
                           "pyop_op_create(\"%s\"): required attribute \"%s\" (%s) is missing",
                           p->op_type, info->name, type_name(info->type));
      v->default_value = info->default_value;
      continue;
    }
    const pyop_attr_value *given = &attrs[src[i]].value;
    v->default_value = *given;
    if (info->type == PYOP_ATTR_TENSOR) {
      int rc = copy_tensor_attr(op, info->name, given->u.tensor, &v->default_value.u.tensor);
      if (rc != PYOP_OK) return rc;
      continue;
    }
    if (given->type == info->type) continue;
    v->default_value.type = info->type;
    if (info->type == PYOP_ATTR_FLOAT) {
      v->default_value.u.f = (double)given->u.i;
    } else { /* list[int] -> list[float] */
      for (size_t j = 0; j < given->u.ints.count; j++) next[j] = (double)given->u.ints.items[j];
      v->default_value.u.floats.items = next;
      v->default_value.u.floats.count = given->u.ints.count;
      next += given->u.ints.count;
    }
  }
  return PYOP_OK;
}

/*
 * Normalises a failed bridge call's status (pyop__bridge_failed, the one
 * reading of a bridge failure) and its message: one that names the call
 * (the bridge's, or a service's of this call: pyop__error_names_call) is
 * kept whole, any other gets the call and the op in front (one message, one
 * prefix); when none was recorded since mark (pyop__error_mark taken before
 * the call) libpyop writes one, so the last error never shows an earlier
 * failure of the thread. A status outside PYOP_STATUS_MAP becomes
 * PYOP_EINTERNAL, and the message says what the bridge returned.
 */
int pyop__callback_failed(int rc, const pyop_op *op, const char *what, unsigned mark) {
  pyop__bridge_failure f = pyop__bridge_failed(rc, mark);
  if (f.odd)
    return pyop__error(f.status, "%s of \"%s\" returned the invalid status %d (not a libpyop "
                       "status; reported as %s)", what, op->op_type, rc,
                       pyop_status_name(f.status));
  if (!f.said)
    return pyop__error(rc, "%s of \"%s\" failed (%s) and gave no detail", what, op->op_type,
                       pyop_status_name(rc));
  if (f.names_call) return pyop__error_keep(rc);
  return pyop__error_prefix(rc, "%s of \"%s\"", what, op->op_type);
}

/* text into out with every occurrence of reason (libpyop's message, which
 * the op's exception repeats) replaced by "see above". */
static void said_once(const char *text, const char *reason, pyop__sb *out) {
  size_t n = strlen(reason);
  const char *at;
  while (n && (at = strstr(text, reason)) != NULL) {
    pyop__sb_append(out, text, (size_t)(at - text));
    pyop__sb_puts(out, "see above");
    text = at + n;
  }
  pyop__sb_puts(out, text);
}

int pyop__call_result(int rc, const pyop__call_failure *f, const pyop_op *op, const char *what) {
  if (f->status == PYOP_OK)
    return rc == PYOP_OK ? PYOP_OK : pyop__callback_failed(rc, op, what, f->mark);
  if (rc == PYOP_OK)
    return f->stands ? pyop__error(f->status, "%s\n(%s failed; the op caught it and returned "
                                   "normally)", f->reason, f->service)
                     : PYOP_OK;
  pyop__sb seen = PYOP__SB_INIT;
  int r;
  if (rc == f->status) {
    /* The op let the failure through: what it said of it, when it said
     * anything since, without the reason it repeats. */
    if (pyop__bridge_failed(rc, f->mark).said) said_once(pyop_last_error(), f->reason, &seen);
    const char *text = seen.oom ? "(out of memory)" : pyop__sb_str(&seen);
    r = text[0] && strcmp(text, "see above") != 0
            ? pyop__error(rc, "%s\n(%s failed; in the op: %s)", f->reason, f->service, text)
            : pyop__error(rc, "%s\n(%s failed)", f->reason, f->service);
  } else {
    r = pyop__callback_failed(rc, op, what, f->mark);
    pyop__sb_puts(&seen, pyop_last_error());
    r = pyop__error(r, "%s\n(earlier in this call, %s failed: %s)",
                    seen.oom ? "(out of memory)" : pyop__sb_str(&seen), f->service, f->reason);
  }
  pyop__sb_free(&seen);
  return r;
}

/* Calls cb->create_holder (create_holder_in for an instance placed in a
 * lane: the descriptor then has one, descriptor.c) with the resolved
 * attributes. */
static int make_holder(pyop_op *op, const pyop_op_callbacks *cb, void *ctx,
                       const pyop_attr_view *views, size_t n, const char *what,
                       void **out) {
  *out = NULL;
  unsigned mark = pyop__error_mark();
  int rc = op->lane ? cb->create_holder_in(ctx, n ? views : NULL, n, op->lane, out)
                    : cb->create_holder(ctx, n ? views : NULL, n, out);
  if (rc != PYOP_OK) return pyop__callback_failed(rc, op, what, mark);
  return PYOP_OK;
}

static void free_attr_tensors(pyop_op *op) {
  for (size_t i = 0; i < op->n_attr_tensors; i++) pyop__free(op->attr_tensors[i]);
  pyop__free(op->attr_tensors);
}

/*
 * Creates an instance: takes an entry reference and a live-instance count
 * (atomically with the lookup), resolves the attributes and creates the
 * holders (prototype's when it infers, implementation's when there is one)
 * with no lock held. On failure nothing is left behind.
 */
int pyop_op_create(const char *op_type, const pyop_attr *attrs, size_t n_attrs,
                   pyop_op **out) {
  if (out) *out = NULL;
  PYOP__FORK_GUARD();
  if (!op_type || !out)
    return pyop__error(PYOP_EINVAL, "pyop_op_create: op_type or out is NULL");
  pyop__entry *e;
  int rc = pyop__registry_acquire_instance(op_type, &e);
  if (rc != PYOP_OK) return rc;
  const pyop__proto *p = e->proto;
  pyop_op *op = pyop__calloc(1, sizeof *op);
  pyop_attr_view *views = NULL;
  long *src = NULL;
  double *conv = NULL;
  if (!op) {
    rc = pyop__error(PYOP_ENOMEM, "pyop_op_create(\"%s\"): out of memory", op_type);
    goto fail;
  }
  op->entry = e;
  op->proto = p;
  op->impl = e->impl;
  op->op_type = e->info.op_type;
  op->caps = e->info.capabilities;
  op->strict = pyop__strict_outputs() && (p->caps & PYOP_CAP_INFER_META);
  op->dtypes = p->dtypes.inputs || p->dtypes.outputs;
  if (e->info.lanes)
    op->lane = 1 + atomic_fetch_add_explicit(&next_lane, 1, memory_order_relaxed) %
                       e->info.lanes;
  if (p->n_tensor_attrs) {
    op->attr_tensors = pyop__calloc(p->n_tensor_attrs, sizeof *op->attr_tensors);
    if (!op->attr_tensors) {
      rc = pyop__error(PYOP_ENOMEM, "pyop_op_create(\"%s\"): out of memory", op_type);
      goto fail;
    }
  }
  if (p->n_attrs) {
    /* One block: the views, then the source index of each. */
    views = pyop__malloc(p->n_attrs * (sizeof *views + sizeof *src));
    if (!views) {
      rc = pyop__error(PYOP_ENOMEM, "pyop_op_create(\"%s\"): out of memory", op_type);
      goto fail;
    }
    src = (long *)(void *)(views + p->n_attrs);
  }
  rc = resolve_attrs(op, p, attrs, n_attrs, views, src, &conv);
  if (rc != PYOP_OK) goto fail;
  if (p->caps & PYOP_CAP_INFER_META) {
    rc = make_holder(op, p->callbacks, p->ctx, views, p->n_attrs, "create_holder (prototype)",
                     &op->proto_holder);
    if (rc != PYOP_OK) goto fail;
    op->infer_meta = p->callbacks->infer_meta;
  }
  if (op->impl) {
    rc = make_holder(op, op->impl->callbacks, op->impl->ctx, views, p->n_attrs,
                     "create_holder (implementation)", &op->impl_holder);
    if (rc != PYOP_OK) goto fail;
    op->execute = op->impl->callbacks->execute;
    op->compile = op->impl->callbacks->compile;
    op->declare = op->impl->callbacks->declare_launch_args;
  }
  pyop__free(views);
  pyop__free(conv);
  *out = op;
  return PYOP_OK;
fail:
  /* The implementation's holder is made last: only the prototype's can exist. */
  if (op && op->infer_meta) p->callbacks->destroy_holder(op->proto_holder);
  pyop__free(views);
  pyop__free(conv);
  if (op) free_attr_tensors(op);
  pyop__free(op);
  pyop__registry_release_instance(e);
  return rc;
}

/* Destroys the holders (implementation's first), then gives the entry back. */
void pyop_op_destroy(pyop_op *op) {
  if (!op) return;
  if (pyop__forked()) {
    /* The holders are the bridge's and the entry is counted under the
     * registry lock: neither is usable in a forked child. Only libpyop's own
     * memory of the instance is freed. */
    pyop__plan_free(op->plan);
    free_attr_tensors(op);
    pyop__free(op);
    return;
  }
  if (op->impl) op->impl->callbacks->destroy_holder(op->impl_holder);
  if (op->infer_meta) op->proto->callbacks->destroy_holder(op->proto_holder);
  pyop__plan_free(op->plan);
  free_attr_tensors(op); /* after the holders: they see these bytes until then */
  pyop__entry *e = op->entry;
  pyop__free(op);
  pyop__registry_release_instance(e);
}

const pyop_op_info *pyop_op_get_info(const pyop_op *op) {
  return op ? &op->entry->info : NULL;
}

uint32_t pyop_op_capabilities(const pyop_op *op) { return op ? op->caps : 0; }

uint32_t pyop_op_lane(const pyop_op *op) { return op ? op->lane : 0; }

/* ------------------------------------------------------------ arguments */

/* "float32[2,3]" into buf. */
const char *pyop__tensor_str(const pyop_tensor *t, char *buf, size_t n) {
  const char *d = pyop_dtype_name(t->dtype);
  int used = d ? snprintf(buf, n, "%s[", d) : snprintf(buf, n, "dtype(%d)[", (int)t->dtype);
  int nd = t->ndim < 0 ? 0 : t->ndim > PYOP_MAX_DIMS ? PYOP_MAX_DIMS : t->ndim;
  for (int i = 0; i < nd && used > 0 && (size_t)used < n; i++)
    used += snprintf(buf + used, n - (size_t)used, "%s%lld", i ? "," : "",
                     (long long)t->shape[i]);
  if (used > 0 && (size_t)used < n) snprintf(buf + used, n - (size_t)used, "]");
  return buf;
}

/* check_inputs' message when the slot count is not the prototype's or
 * inputs is NULL. */
int pyop__inputs_refused(const pyop_op *op, const pyop_tensor_list *inputs, size_t n,
                         const char *call) {
  if (n != op->proto->n_inputs)
    return pyop__error(PYOP_EINVAL, "%s of \"%s\": %zu input slots given, the op has %zu",
                       call, op->op_type, n, op->proto->n_inputs);
  assert(n && !inputs);
  (void)inputs;
  return pyop__error(PYOP_EINVAL, "%s of \"%s\": inputs is NULL", call, op->op_type);
}

/* check_inputs' message when slot i's tensor count does not fit its kind
 * or its items are NULL. */
int pyop__slot_refused(const pyop_op *op, const pyop_tensor_list *inputs, size_t i,
                       const char *call) {
  const pyop__proto *p = op->proto;
  size_t c = inputs[i].count;
  int32_t kind = p->inputs[i].kind;
  if ((kind == PYOP_IO_REQUIRED && c != 1) || (kind == PYOP_IO_OPTIONAL && c > 1))
    return pyop__error(PYOP_EINVAL, "%s of \"%s\": input %zu \"%s\" is %s: %zu tensors given",
                       call, op->op_type, i, p->inputs[i].name,
                       kind == PYOP_IO_REQUIRED ? "required (exactly 1)" : "optional (0 or 1)",
                       c);
  assert(c && !inputs[i].items);
  return pyop__error(PYOP_EINVAL, "%s of \"%s\": input %zu \"%s\": %zu %s but items is NULL",
                     call, op->op_type, i, p->inputs[i].name, c,
                     PYOP__PLURAL(c, "tensor", "tensors"));
}

/* check_inputs' message for tensor j of slot i, not usable for why. */
int pyop__tensor_refused(const pyop_op *op, const pyop_tensor *t, size_t i, size_t j,
                         const char *why, const char *call) {
  char ts[128];
  return pyop__error(PYOP_EINVAL, "%s of \"%s\": input %zu \"%s\" tensor %zu (%s): %s", call,
                     op->op_type, i, op->proto->inputs[i].name, j,
                     pyop__tensor_str(t, ts, sizeof ts), why);
}

/* The message for an op with a dynamic output where call cannot take one. */
static int dynamic_refused(const pyop_op *op, const char *call) {
  const pyop__proto *p = op->proto;
  size_t i = 0;
  while (i < p->n_outputs && p->outputs[i].kind != PYOP_IO_DYNAMIC) i++;
  const char *hint = strcmp(call, "infer_meta") == 0 ? "use pyop_op_infer_meta_list"
                     : strcmp(call, "execute") == 0  ? "use pyop_op_execute_list"
                                                     : "dynamic outputs cannot be compiled or "
                                                       "launched yet";
  return pyop__error(PYOP_EINVAL, "%s of \"%s\": output %zu \"%s\" is dynamic (a list of "
                     "tensors): %s", call, op->op_type, i,
                     i < p->n_outputs ? p->outputs[i].name : "?", hint);
}

/* check_outputs' message: the first of its three refusals. */
int pyop__outputs_refused(const pyop_op *op, const pyop_tensor *outputs, size_t n,
                          const char *call) {
  if (n != op->proto->n_outputs)
    return pyop__error(PYOP_EINVAL, "%s of \"%s\": %zu %s given, the op has %zu", call,
                       op->op_type, n, PYOP__PLURAL(n, "output", "outputs"), op->proto->n_outputs);
  if (n && !outputs)
    return pyop__error(PYOP_EINVAL, "%s of \"%s\": outputs is NULL", call, op->op_type);
  assert(op->proto->dynamic_outputs);
  return dynamic_refused(op, call);
}

/* PYOP_EUNSUPPORTED: op has no `what`; the hint of a near pending
 * registration when it has no implementation. */
int pyop__unsupported(const pyop_op *op, const char *what) {
  char hint[1024] = "";
  if (!op->impl) pyop__registry_near_pending(op->op_type, hint, sizeof hint);
  return pyop__error(PYOP_EUNSUPPORTED, "\"%s\" has no %s (prototype %s, %s)%s", op->op_type,
                     what, op->proto->source,
                     op->impl ? "implementation without it" : "no implementation", hint);
}
