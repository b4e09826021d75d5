/*
 * Op instances: one node of the host's graph bound to a registry entry.
 *
 * Everything is resolved at pyop_op_create (entry, callbacks, holders, input
 * kinds), so pyop_op_infer_meta, pyop_op_execute and pyop_op_launch take no
 * lock and look nothing up by name: they check the arguments, build the
 * call's structs on the stack and call the bridge (or run the declared
 * libffi plan, launch.h). They allocate only where the stack does not
 * suffice: the _list forms' copies of expectations, more than
 * PYOP__OUT_STACK outputs in strict mode, the first pyop_op_launch (which
 * declares the plan) and a launch with more pointers than fit the stack.
 *
 * Attribute coercions at create: an int is accepted for a float attribute
 * and a list[int] for a list[float] (converted to double); nothing else is
 * coerced (no int for bool, no float for int). A name given twice is an
 * error.
 *
 * Tensor attributes are copied at create (description and bytes, one
 * allocation each) and live until destroy: the host's buffer may go after
 * pyop_op_create returns; the bridge sees libpyop's copy.
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
#include "launch.h"
#include "lifecycle.h"
#include "registry.h"
#include "shape.h"

#include <assert.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

/* Pointer arrays of one launch: on the stack up to this many, else heap. */
#define PYOP__LAUNCH_STACK_PTRS 64

struct pyop_op {
  pyop__entry *entry; /* one reference, one live-instance count */
  const pyop__proto *proto;
  const pyop__impl *impl;
  const char *op_type;
  uint32_t caps;
  void *proto_holder; /* exists when infer_meta is set */
  void *impl_holder;  /* exists when impl is set */
  /* Resolved for the hot path (NULL when the capability is absent). */
  int (*infer_meta)(void *holder, const pyop_infer_args *args);
  int (*execute)(void *holder, const pyop_exec_args *args);
  int (*compile)(void *holder, const pyop_compile_args *args);
  int (*declare)(void *holder, const pyop_declare_args *args);
  /* The declared launch plan (immutable once finished) and the number of
   * flattened input tensors it was declared for. */
  pyop__plan *plan;
  size_t plan_inputs;
  size_t plan_workspaces;
  bool strict; /* run infer_meta before each execute and hold execute to it */
  bool dtypes; /* the prototype constrains data types (dtypes.h) */
  /* Copies of the Tensor attributes (n_tensor_attrs blocks, each a
   * pyop_tensor followed by its bytes), freed at destroy. */
  void **attr_tensors;
  size_t n_attr_tensors;
  uint32_t lane; /* 1..lanes: the interpreter lane of both holders; 0: main */
};

/* Round-robin placement of instances over the lanes (pyop_op_lane). */
static atomic_uint next_lane;

/* ----------------------------------------------------------- attributes */

static inline const char *tensor_problem(const pyop_tensor *t, uint64_t *nbytes);
static const char *tensor_str(const pyop_tensor *t, char *buf, size_t n);

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
                       op->op_type, name, tensor_str(t, ts, sizeof ts), why);
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
    char why[200];
    if (!pyop__attr_value_check(&a->value, why, sizeof why))
      return pyop__error(PYOP_EINVAL, "pyop_op_create(\"%s\"): attribute \"%s\": %s",
                         p->op_type, a->name, why);
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
static int callback_failed(int rc, const pyop_op *op, const char *what, unsigned mark) {
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
  if (rc != PYOP_OK) return callback_failed(rc, op, what, mark);
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
static const char *tensor_str(const pyop_tensor *t, char *buf, size_t n) {
  const char *d = pyop_dtype_name(t->dtype);
  int used = d ? snprintf(buf, n, "%s[", d) : snprintf(buf, n, "dtype(%d)[", (int)t->dtype);
  int nd = t->ndim < 0 ? 0 : t->ndim > PYOP_MAX_DIMS ? PYOP_MAX_DIMS : t->ndim;
  for (int i = 0; i < nd && used > 0 && (size_t)used < n; i++)
    used += snprintf(buf + used, n - (size_t)used, "%s%lld", i ? "," : "",
                     (long long)t->shape[i]);
  if (used > 0 && (size_t)used < n) snprintf(buf + used, n - (size_t)used, "]");
  return buf;
}

/* Bytes per element by dtype (pyop_dtype_size without the exported call:
 * tensor_problem runs for every tensor of every call). */
static const uint8_t elem_size[PYOP_DTYPE_COUNT] = {
#define PYOP__DTYPE_SIZE(name, value, str, size) [value] = size,
    PYOP_DTYPE_MAP(PYOP__DTYPE_SIZE)
#undef PYOP__DTYPE_SIZE
};

/* Bytes of t's shape x dtype (shape.h's rule: an empty tensor is 0 bytes,
 * whatever its other dims); the reason (static) when t is not a valid
 * description or a non-empty tensor's size overflows. */
static inline const char *tensor_problem(const pyop_tensor *t, uint64_t *nbytes) {
  if (t->dtype < 0 || t->dtype >= PYOP_DTYPE_COUNT) return "invalid data type";
  uint64_t es = elem_size[t->dtype];
  if (t->format < 0 || t->format >= PYOP_FORMAT_COUNT) return "invalid format";
  if (t->ndim < 0 || t->ndim > PYOP_MAX_DIMS) return "ndim out of 0..8";
  switch (pyop__shape_size(t->shape, t->ndim, es, UINT64_MAX, nbytes)) {
  case PYOP__SHAPE_OK: return NULL;
  case PYOP__SHAPE_NEGATIVE: return "negative dimension";
  default: return "size overflows";
  }
}

/* Why t is not usable: tensor_problem, and with data a buffer of at least
 * its size (no_data: the text for a NULL data); NULL when it is. */
static inline const char *tensor_data_problem(const pyop_tensor *t, bool data,
                                              const char *no_data) {
  uint64_t nb;
  const char *why = tensor_problem(t, &nb);
  if (!why && data && t->nbytes < nb) why = "nbytes smaller than shape x dtype";
  if (!why && data && nb && !t->data) why = no_data;
  return why;
}

/*
 * The one check of the input slots, for every call (the hot paths
 * included). Invariant: PYOP_OK exactly when the slot count is the
 * prototype's, each slot's tensor count fits its kind (required: 1,
 * optional: 0 or 1, dynamic: any) and every tensor is a valid description
 * that, with data, holds a buffer of at least its size, and of a data type
 * the prototype allows (dtypes.h: a second pass, only for an op that
 * constrains them); otherwise the first
 * violation is the error. When ptrs is not NULL it also receives the data
 * pointers of the first cap tensors in order (flattened) and *flat their
 * number, so a launch gathers its pointers in the same pass.
 */
static inline __attribute__((always_inline)) int
check_inputs(const pyop_op *op, const pyop_tensor_list *inputs, size_t n, bool data,
             const char *call, void **ptrs, size_t cap, size_t *flat) {
  const pyop__proto *p = op->proto;
  if (n != p->n_inputs)
    return pyop__error(PYOP_EINVAL, "%s of \"%s\": %zu input slots given, the op has %zu",
                       call, op->op_type, n, p->n_inputs);
  if (n && !inputs)
    return pyop__error(PYOP_EINVAL, "%s of \"%s\": inputs is NULL", call, op->op_type);
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    size_t c = inputs[i].count;
    /* One tensor fits every kind: only other counts need the kind. */
    int32_t kind = c == 1 ? PYOP_IO_DYNAMIC : p->inputs[i].kind;
    if ((kind == PYOP_IO_REQUIRED && c != 1) || (kind == PYOP_IO_OPTIONAL && c > 1))
      return pyop__error(PYOP_EINVAL, "%s of \"%s\": input %zu \"%s\" is %s: %zu tensors given",
                         call, op->op_type, i, p->inputs[i].name,
                         kind == PYOP_IO_REQUIRED ? "required (exactly 1)" : "optional (0 or 1)",
                         c);
    if (c && !inputs[i].items)
      return pyop__error(PYOP_EINVAL, "%s of \"%s\": input %zu \"%s\": %zu %s but items is NULL",
                         call, op->op_type, i, p->inputs[i].name, c,
                         PYOP__PLURAL(c, "tensor", "tensors"));
    for (size_t j = 0; j < c; j++, k++) {
      const pyop_tensor *t = &inputs[i].items[j];
      const char *why = tensor_data_problem(t, data, "NULL data");
      if (why) {
        char ts[128];
        return pyop__error(PYOP_EINVAL, "%s of \"%s\": input %zu \"%s\" tensor %zu (%s): %s",
                           call, op->op_type, i, p->inputs[i].name, j,
                           tensor_str(t, ts, sizeof ts), why);
      }
      if (ptrs && k < cap) ptrs[k] = t->data;
    }
  }
  if (flat) *flat = k;
  if (__builtin_expect(op->dtypes, 0))
    return pyop__dtypes_check_fast(p, &p->dtypes, inputs, n, call);
  return PYOP_OK;
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

static inline int check_outputs(const pyop_op *op, const pyop_tensor *outputs, size_t n,
                                const char *call) {
  if (n != op->proto->n_outputs)
    return pyop__error(PYOP_EINVAL, "%s of \"%s\": %zu %s given, the op has %zu", call,
                       op->op_type, n, PYOP__PLURAL(n, "output", "outputs"), op->proto->n_outputs);
  if (n && !outputs)
    return pyop__error(PYOP_EINVAL, "%s of \"%s\": outputs is NULL", call, op->op_type);
  if (op->proto->dynamic_outputs) return dynamic_refused(op, call);
  return PYOP_OK;
}

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

static __attribute__((noinline, cold)) int unsupported(const pyop_op *op, const char *what) {
  char hint[1024] = "";
  if (!op->impl) pyop__registry_near_pending(op->op_type, hint, sizeof hint);
  return pyop__error(PYOP_EUNSUPPORTED, "\"%s\" has no %s (prototype %s, %s)%s", op->op_type,
                     what, op->proto->source,
                     op->impl ? "implementation without it" : "no implementation", hint);
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
} infer_sink;

/* rc, the failure of a sink of one call whose message (just recorded)
 * starts with the call: the callback's caller keeps it whole. */
static int sink_failed(int rc) {
  pyop__error_names_call();
  return rc;
}

static int sink_add_output(void *vctx, size_t index, const pyop_tensor *desc) {
  infer_sink *s = pyop__call_state(vctx);
  if (!s) return pyop__call_refused("add_output", "infer_meta", __builtin_return_address(0));
  const pyop__proto *p = s->op->proto;
  if (!desc)
    return sink_failed(pyop__error(PYOP_EINVAL, "infer_meta of \"%s\": add_output: desc is "
                                   "NULL", s->op->op_type));
  if (index >= p->n_outputs || p->outputs[index].kind != PYOP_IO_DYNAMIC || !s->lists)
    return sink_failed(pyop__error(PYOP_EINVAL, "infer_meta of \"%s\": add_output: output "
                                   "%zu is not a dynamic output", s->op->op_type, index));
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
                       tensor_str(t, ts, sizeof ts), t->dtype == -1 ? "not set" : why);
  }
  t->data = NULL;
  t->nbytes = nb;
  return PYOP_OK;
}

/*
 * The call into the prototype's infer_meta shared by both forms: req (one
 * per output, where the bridge writes the required outputs) cleared to
 * dtype -1 first; lists (NULL for pyop_op_infer_meta) receive the dynamic
 * outputs through the sink. The bridge's failure is reported here.
 */
static inline int infer_call(pyop_op *op, const pyop_tensor_list *inputs, size_t n_inputs,
                             pyop_tensor *req, size_t n_outputs, pyop_output_list *lists) {
  for (size_t i = 0; i < n_outputs; i++) {
    memset(&req[i], 0, sizeof req[i]);
    req[i].dtype = -1;
  }
  infer_sink sink = {op, lists};
  pyop__call call;
  pyop_infer_args args = {sizeof args, inputs, n_inputs, req, n_outputs,
                          pyop__call_open(&call, &sink), sink_add_output};
  unsigned mark = call.mark;
  int rc = op->infer_meta(op->proto_holder, &args);
  pyop__call_close(&call);
  return rc == PYOP_OK ? PYOP_OK : callback_failed(rc, op, "infer_meta", mark);
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
  if (!op->infer_meta) return unsupported(op, "infer_meta");
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
  if (!op->infer_meta) return unsupported(op, "infer_meta");
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
  if (!op->infer_meta) return unsupported(op, "infer_meta");
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
  /* The first service failure of the call, kept because the bridge turns it
   * into a Python exception whose text replaces libpyop's message. */
  int svc_status;
  char svc_detail[1024];
} exec_state;

/* Remembers the first failure of a service call (a cold path). */
static int svc_failed(exec_state *st, int rc) {
  if (st->svc_status == PYOP_OK) {
    st->svc_status = rc;
    snprintf(st->svc_detail, sizeof st->svc_detail, "%s", pyop_last_error());
  }
  return rc;
}

static int alloc_output_checked(exec_state *st, size_t index, pyop_tensor *t);
static int alias_output_checked(exec_state *st, size_t index, size_t input, pyop_tensor *t);

static int svc_alloc_output(void *vctx, size_t index, pyop_tensor *t) {
  exec_state *st = pyop__call_state(vctx);
  if (!st) return pyop__call_refused("alloc_output", "execute", __builtin_return_address(0));
  int rc = alloc_output_checked(st, index, t);
  return rc == PYOP_OK ? rc : svc_failed(st, rc);
}

static int svc_alias_output(void *vctx, size_t index, size_t input, pyop_tensor *t) {
  exec_state *st = pyop__call_state(vctx);
  if (!st) return pyop__call_refused("alias_output", "execute", __builtin_return_address(0));
  int rc = alias_output_checked(st, index, input, t);
  return rc == PYOP_OK ? rc : svc_failed(st, rc);
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
                     tensor_str(ex, es, sizeof es),
                     ex->format ? " format " : "", ex->format ? pyop_format_name(ex->format) : "",
                     tensor_str(t, ts, sizeof ts), t->format ? " format " : "",
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
                       op->op_type, index, name, tensor_str(t, ts, sizeof ts), why);
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
                       op->op_type, index, name, k, tensor_str(t, ts, sizeof ts),
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
                         op->op_type, index, name, tensor_str(t, ts, sizeof ts),
                         (unsigned long long)nb, PYOP__PLURAL(nb, "byte", "bytes"), rc);
    if ((nb && !req.data) || req.nbytes < nb)
      return pyop__error(PYOP_EHOST, "execute of \"%s\": the host's alloc_output gave output "
                         "%zu \"%s\" (%s) %s",
                         op->op_type, index, name, tensor_str(t, ts, sizeof ts),
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
                         op->op_type, index, name, tensor_str(t, ts, sizeof ts),
                         tensor_str(o, hs, sizeof hs));
    if (o->nbytes < nb || (nb && !o->data))
      return pyop__error(PYOP_EINVAL, "execute of \"%s\": output %zu \"%s\" (%s) passed by the "
                         "host has %s",
                         op->op_type, index, name, tensor_str(t, ts, sizeof ts),
                         !o->data ? "no buffer" : "fewer bytes than its shape needs");
  }
  *t = *o;
  l->count++;
  st->done[index / 64] |= bit;
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
  return PYOP_OK;
}

static int alloc_workspace_checked(exec_state *st, uint64_t nbytes, void **out);

static int svc_alloc_workspace(void *vctx, uint64_t nbytes, void **out) {
  exec_state *st = pyop__call_state(vctx);
  if (!st) return pyop__call_refused("alloc_workspace", "execute", __builtin_return_address(0));
  int rc = alloc_workspace_checked(st, nbytes, out);
  return rc == PYOP_OK ? rc : svc_failed(st, rc);
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

/* The status of an execute whose op returned rc: the services' failure, the
 * op's, or (rc PYOP_OK) the contract: every output produced as expected. */
static __attribute__((noinline)) int exec_end(exec_state *st, int rc, unsigned mark) {
  const pyop_op *op = st->op;
  const pyop__proto *p = op->proto;
  if (rc != PYOP_OK) {
    /* The bridge returns the service's status when the call ended with that
     * failure; any other status is the op's own (it caught the refusal). */
    if (st->svc_status != PYOP_OK && rc == st->svc_status) {
      /* libpyop's reason first (it says what the host or the request got
       * wrong), then what the op saw of it in Python, where the reason,
       * repeated in the exception's text, is not said again. */
      pyop__sb seen = PYOP__SB_INIT;
      said_once(pyop_last_error(), st->svc_detail, &seen);
      const char *text = seen.oom ? "(out of memory)" : pyop__sb_str(&seen);
      /* An op that said nothing but the reason adds nothing to it. */
      int r = text[0] && strcmp(text, "see above") != 0
                  ? pyop__error(st->svc_status, "%s\n(in the op: %s)", st->svc_detail, text)
                  : pyop__error(st->svc_status, "%s", st->svc_detail);
      pyop__sb_free(&seen);
      return r;
    }
    int r = callback_failed(rc, op, "execute", mark);
    if (st->svc_status != PYOP_OK) {
      char own[2048];
      snprintf(own, sizeof own, "%s", pyop_last_error());
      r = pyop__error(r, "%s\n(earlier in this call, which the op caught: %s)", own,
                      st->svc_detail);
    }
    return r;
  }
  if (st->svc_status == PYOP_ECONTRACT)
    return pyop__error(PYOP_ECONTRACT, "%s\n(the op caught that error and returned normally)",
                       st->svc_detail);
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
               tensor_str(ex, ts, sizeof ts));
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

/* The flags of ctx: 0 when its struct_size does not hold them whole (a
 * caller of the version before flags). */
static inline uint32_t exec_flags(const pyop_exec_ctx *ctx) {
  return PYOP__HAS(pyop_exec_ctx, ctx, flags) ? ctx->flags : 0;
}

/* Checks an execution context for `what` ("execute", "launch"): present,
 * a struct_size that holds stream, no flag bit this libpyop does not know. */
static inline int exec_ctx_check(const pyop_op *op, const pyop_exec_ctx *ctx,
                                 const char *what) {
  if (!ctx || !PYOP__HAS(pyop_exec_ctx, ctx, stream))
    return pyop__error(PYOP_EINVAL, "%s of \"%s\": ctx is NULL or its struct_size is too "
                       "small (initialise it with PYOP_EXEC_CTX_INIT)", what, op->op_type);
  uint32_t unknown = exec_flags(ctx) & ~(uint32_t)PYOP_EXEC_KNOWN_FLAGS;
  if (unknown)
    return pyop__error(PYOP_EINVAL, "%s of \"%s\": ctx->flags has bits 0x%x that this "
                       "libpyop does not know (known: PYOP_EXEC_EXPECT_OUTPUTS = 0x%x)",
                       what, op->op_type, unknown, (unsigned)PYOP_EXEC_EXPECT_OUTPUTS);
  return PYOP_OK;
}

/* Checks the arguments common to both forms of execute. */
static inline int exec_args_check(pyop_op *op, const pyop_tensor_list *inputs,
                                  size_t n_inputs, const pyop_exec_ctx *ctx) {
  if (!op->execute) return unsupported(op, "execute");
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
  st.done[0] = 0;
  if (n_outputs > 64) memset(st.done + 1, 0, (n_outputs - 1) / 64 * sizeof st.done[0]);
  st.svc_status = PYOP_OK;
  pyop__call call;
  pyop_exec_services svc = {sizeof svc, pyop__call_open(&call, &st), svc_alloc_output,
                            svc_alloc_workspace, svc_alias_output};
  pyop_exec_args args = {sizeof args, inputs,           n_inputs,
                         n_outputs,   &svc,             ctx->stream,
                         op->proto->input_flags};
  unsigned mark = call.mark;
  int rc = op->execute(op->impl_holder, &args);
  pyop__call_close(&call);
  /* The common case: success, every (non-dynamic) output produced. */
  if (rc == PYOP_OK && st.svc_status == PYOP_OK && !op->proto->dynamic_outputs &&
      n_outputs <= 64 && st.done[0] == (n_outputs == 64 ? ~0ull : (1ull << n_outputs) - 1))
    return PYOP_OK;
  return exec_end(&st, rc, mark);
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

/* ------------------------------------------------- compile and launch */

/*
 * Output descriptions of compile/declare/launch, like check_inputs: the
 * count is the prototype's and each is a valid description that, with
 * data, holds a buffer of at least its size. ptrs (may be NULL) receives the
 * data pointers of the first cap outputs.
 */
static inline int check_output_descs(const pyop_op *op, const pyop_tensor *outputs, size_t n,
                                     bool data, const char *call, void **ptrs, size_t cap) {
  int rc = check_outputs(op, outputs, n, call);
  if (rc != PYOP_OK) return rc;
  for (size_t i = 0; i < n; i++) {
    const char *why = tensor_data_problem(&outputs[i], data, "NULL data (not allocated)");
    if (ptrs && i < cap) ptrs[i] = outputs[i].data;
    if (why) {
      char ts[128];
      return pyop__error(PYOP_EINVAL, "%s of \"%s\": output %zu \"%s\" (%s): %s", call,
                         op->op_type, i, op->proto->outputs[i].name,
                         tensor_str(&outputs[i], ts, sizeof ts), why);
    }
  }
  return PYOP_OK;
}

/* Where compile's set_artifact stores (a copy of) the artefact. */
typedef struct artifact_sink {
  const pyop_op *op;
  void *data;
  size_t len;
} artifact_sink;

static int sink_set_artifact(void *vctx, const void *data, size_t len) {
  artifact_sink *s = pyop__call_state(vctx);
  if (!s) return pyop__call_refused("set_artifact", "compile", __builtin_return_address(0));
  if (len && !data)
    return sink_failed(pyop__error(PYOP_EINVAL, "compile of \"%s\": set_artifact: %zu %s "
                                   "from NULL", s->op->op_type, len,
                                   PYOP__PLURAL(len, "byte", "bytes")));
  void *copy = NULL;
  if (len) {
    copy = pyop__malloc(len);
    if (!copy)
      return sink_failed(pyop__error(PYOP_ENOMEM, "compile of \"%s\": out of memory for a "
                                     "%zu-byte artefact", s->op->op_type, len));
    memcpy(copy, data, len);
  }
  pyop__free(s->data); /* a later call replaces an earlier artefact */
  s->data = copy;
  s->len = len;
  return PYOP_OK;
}

/*
 * Runs the implementation's compile. On success *artifact is what it stored
 * last with set_artifact (allocated, pyop_free; NULL when none or empty).
 */
int pyop_op_compile(pyop_op *op, const pyop_tensor_list *inputs, size_t n_inputs,
                    const pyop_tensor *outputs, size_t n_outputs, void **artifact,
                    size_t *len) {
  PYOP__FORK_GUARD();
  if (!op || !artifact || !len)
    return pyop__error(PYOP_EINVAL, "pyop_op_compile: op, artifact or len is NULL");
  *artifact = NULL;
  *len = 0;
  if (!op->compile) return unsupported(op, "compile");
  int rc = check_inputs(op, inputs, n_inputs, false, "compile", NULL, 0, NULL);
  if (rc == PYOP_OK)
    rc = check_output_descs(op, outputs, n_outputs, false, "compile", NULL, 0);
  if (rc != PYOP_OK) return rc;
  artifact_sink sink = {op, NULL, 0};
  pyop__call call;
  pyop_compile_args args = {sizeof args, inputs, n_inputs, outputs, n_outputs,
                            pyop__call_open(&call, &sink), sink_set_artifact};
  unsigned mark = call.mark;
  rc = op->compile(op->impl_holder, &args);
  pyop__call_close(&call);
  if (rc != PYOP_OK) {
    pyop__free(sink.data);
    return callback_failed(rc, op, "compile", mark);
  }
  *artifact = sink.data;
  *len = sink.len;
  return PYOP_OK;
}

/* The plan being declared and the first refusal of a sink call: its
 * reason is libpyop's (the plan checks), kept for the call's error, since
 * the bridge reports the refusal to Python in its own words. */
typedef struct declare_sink {
  pyop__plan *plan;
  int status;
  char detail[1024];
} declare_sink;

static int sink_refused(declare_sink *d, int rc) {
  if (d->status == PYOP_OK) {
    d->status = rc;
    snprintf(d->detail, sizeof d->detail, "%s", pyop_last_error());
  }
  return rc;
}

static int sink_add_launch(void *vctx, const pyop_launch_view *v) {
  declare_sink *d = pyop__call_state(vctx);
  if (!d)
    return pyop__call_refused("add_launch", "declare_launch_args", __builtin_return_address(0));
  int rc = pyop__plan_add_launch(d->plan, v);
  return rc == PYOP_OK ? rc : sink_refused(d, rc);
}

static int sink_add_workspace(void *vctx, uint64_t nbytes) {
  declare_sink *d = pyop__call_state(vctx);
  if (!d)
    return pyop__call_refused("add_workspace", "declare_launch_args",
                              __builtin_return_address(0));
  int rc = pyop__plan_add_workspace(d->plan, nbytes);
  return rc == PYOP_OK ? rc : sink_refused(d, rc);
}

/*
 * Runs declare_launch_args into a new plan, finishes it and keeps it in the
 * instance (replacing an earlier plan). On failure the earlier plan stays.
 */
int pyop_op_declare_launch_args(pyop_op *op, const pyop_tensor_list *inputs,
                                size_t n_inputs, const pyop_tensor *outputs,
                                size_t n_outputs) {
  PYOP__FORK_GUARD();
  if (!op) return pyop__error(PYOP_EINVAL, "pyop_op_declare_launch_args: op is NULL");
  if (!op->declare) return unsupported(op, "declare_launch_args");
  int rc = check_inputs(op, inputs, n_inputs, false, "declare_launch_args", NULL, 0, NULL);
  if (rc == PYOP_OK)
    rc = check_output_descs(op, outputs, n_outputs, false, "declare_launch_args", NULL, 0);
  if (rc != PYOP_OK) return rc;
  size_t flat = 0;
  for (size_t i = 0; i < n_inputs; i++) flat += inputs[i].count;
  pyop__plan *plan;
  rc = pyop__plan_new(op->op_type, flat, n_outputs, &plan);
  if (rc != PYOP_OK) return rc;
  declare_sink sink = {plan, PYOP_OK, ""};
  pyop__call call;
  pyop_declare_args args = {sizeof args, inputs, n_inputs, outputs, n_outputs,
                            pyop__call_open(&call, &sink), sink_add_launch, sink_add_workspace};
  unsigned mark = call.mark;
  rc = op->declare(op->impl_holder, &args);
  pyop__call_close(&call);
  if (rc != PYOP_OK || sink.status != PYOP_OK) {
    pyop__plan_free(plan);
    if (sink.status == PYOP_OK) return callback_failed(rc, op, "declare_launch_args", mark);
    /* libpyop's reason first (what is wrong with the plan), then what the
     * op saw of it; a plan missing a refused launch is never kept, even
     * when the op caught the refusal and returned normally. */
    char seen[2048];
    snprintf(seen, sizeof seen, "%s", rc != PYOP_OK ? pyop_last_error() : "");
    if (rc == PYOP_OK)
      return pyop__error(sink.status, "%s\n(the op caught that error and returned normally)",
                         sink.detail);
    return pyop__error(sink.status, "%s\n(in the op: %s)", sink.detail, seen);
  }
  rc = pyop__plan_finish(plan);
  if (rc != PYOP_OK) {
    pyop__plan_free(plan);
    return rc;
  }
  pyop__plan_free(op->plan);
  op->plan = plan;
  op->plan_inputs = flat;
  op->plan_workspaces = pyop__plan_workspace_count(plan);
  return PYOP_OK;
}

/*
 * The rest of a launch when the pointers do not all fit the caller's stack
 * arrays or the plan has workspaces: pointer arrays on the heap when
 * needed, workspaces from ctx->alloc_workspace, then the plan. The
 * arguments were checked; in/out hold the first PYOP__LAUNCH_STACK_PTRS
 * pointers, gathered again here when there are more.
 */
static __attribute__((noinline)) int launch_spill(pyop_op *op, const pyop_tensor_list *inputs,
                                                  size_t n_inputs, const pyop_tensor *outputs,
                                                  size_t n_outputs, const pyop_exec_ctx *ctx,
                                                  size_t flat, void **in_stack,
                                                  void **out_stack) {
  size_t n_ws = op->plan_workspaces;
  if (n_ws && !ctx->alloc_workspace)
    return pyop__error(PYOP_EUNSUPPORTED, "launch of \"%s\": the plan needs %zu %s but the "
                       "host's exec context has no alloc_workspace", op->op_type, n_ws,
                       PYOP__PLURAL(n_ws, "workspace", "workspaces"));
  void *ws_stack[PYOP__LAUNCH_STACK_PTRS];
  void **in = flat <= PYOP__LAUNCH_STACK_PTRS ? in_stack : pyop__calloc(flat, sizeof *in);
  void **out = n_outputs <= PYOP__LAUNCH_STACK_PTRS ? out_stack
                                                    : pyop__calloc(n_outputs, sizeof *out);
  void **ws = n_ws <= PYOP__LAUNCH_STACK_PTRS ? ws_stack : pyop__calloc(n_ws, sizeof *ws);
  int rc = PYOP_OK;
  if (!in || !out || !ws) {
    rc = pyop__error(PYOP_ENOMEM, "launch of \"%s\": out of memory", op->op_type);
    goto done;
  }
  if (in != in_stack) {
    size_t k = 0;
    for (size_t i = 0; i < n_inputs; i++)
      for (size_t j = 0; j < inputs[i].count; j++) in[k++] = inputs[i].items[j].data;
  }
  if (out != out_stack)
    for (size_t i = 0; i < n_outputs; i++) out[i] = outputs[i].data;
  for (size_t i = 0; i < n_ws; i++) {
    uint64_t nb = pyop__plan_workspace_size(op->plan, i);
    ws[i] = NULL;
    int hr = ctx->alloc_workspace(ctx->user, nb, &ws[i]);
    if (hr != 0 || (nb && !ws[i])) {
      rc = pyop__error(PYOP_EHOST, "launch of \"%s\": the host's alloc_workspace failed for "
                       "workspace %zu (%llu %s, %d)", op->op_type, i,
                       (unsigned long long)nb, PYOP__PLURAL(nb, "byte", "bytes"), hr);
      goto done;
    }
  }
  rc = pyop__plan_run(op->plan, in, out, ws, ctx->stream);
done:
  if (in != in_stack) pyop__free(in);
  if (out != out_stack) pyop__free(out);
  if (ws != ws_stack) pyop__free(ws);
  return rc;
}

/*
 * Runs the declared plan (declaring it first from these tensors when there
 * is none). Outputs must be allocated; workspaces come from
 * ctx->alloc_workspace. No Python once a plan is declared, and no
 * allocation unless an op has more than PYOP__LAUNCH_STACK_PTRS input,
 * output or workspace pointers. The arguments go through the same checks as
 * every call, which gather the data pointers on the way; the common launch
 * (no workspace, pointers that fit the stack) then runs the plan directly.
 */
int pyop_op_launch(pyop_op *op, const pyop_tensor_list *inputs, size_t n_inputs,
                   const pyop_tensor *outputs, size_t n_outputs, const pyop_exec_ctx *ctx) {
  PYOP__FORK_GUARD();
  if (!op) return pyop__error(PYOP_EINVAL, "pyop_op_launch: op is NULL");
  if (!op->declare) return unsupported(op, "declare_launch_args (needed to launch)");
  int rc = exec_ctx_check(op, ctx, "launch");
  if (rc != PYOP_OK) return rc;
  void *in[PYOP__LAUNCH_STACK_PTRS], *out[PYOP__LAUNCH_STACK_PTRS];
  size_t flat = 0;
  rc = check_inputs(op, inputs, n_inputs, true, "launch", in, PYOP__LAUNCH_STACK_PTRS, &flat);
  if (rc == PYOP_OK)
    rc = check_output_descs(op, outputs, n_outputs, true, "launch", out, PYOP__LAUNCH_STACK_PTRS);
  if (rc != PYOP_OK) return rc;
  if (!op->plan) {
    rc = pyop_op_declare_launch_args(op, inputs, n_inputs, outputs, n_outputs);
    if (rc != PYOP_OK) return rc;
  }
  if (flat != op->plan_inputs)
    return pyop__error(PYOP_EINVAL, "launch of \"%s\": %zu input tensors given, the plan was "
                       "declared for %zu (declare again)", op->op_type, flat, op->plan_inputs);
  if (op->plan_workspaces || flat > PYOP__LAUNCH_STACK_PTRS ||
      n_outputs > PYOP__LAUNCH_STACK_PTRS)
    return launch_spill(op, inputs, n_inputs, outputs, n_outputs, ctx, flat, in, out);
  return pyop__plan_run(op->plan, in, out, NULL, ctx->stream);
}
