/*
 * Op instances (op.c) as the files of their calls see them (execute.c:
 * infer_meta and execute; launch.c: compile, declare_launch_args and
 * launch): the instance, resolved once at pyop_op_create, and the argument
 * checks every call makes. The public contracts are pyop.h's.
 */
#ifndef PYOP_OP_H
#define PYOP_OP_H

#include "call.h"
#include "launch.h"
#include "registry.h"
#include "shape.h"

#include <string.h>

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

/* "float32[2,3]" into buf. */
const char *pyop__tensor_str(const pyop_tensor *t, char *buf, size_t n);

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

/* The messages of check_inputs and check_outputs (op.c; cold): the slot
 * count or a NULL inputs; slot i's tensor count or NULL items; tensor j of
 * slot i and why (tensor_data_problem's reason); the output count, a NULL
 * outputs or a dynamic output call cannot take. */
int pyop__inputs_refused(const pyop_op *op, const pyop_tensor_list *inputs, size_t n,
                         const char *call) __attribute__((noinline, cold));
int pyop__slot_refused(const pyop_op *op, const pyop_tensor_list *inputs, size_t i,
                       const char *call) __attribute__((noinline, cold));
int pyop__tensor_refused(const pyop_op *op, const pyop_tensor *t, size_t i, size_t j,
                         const char *why, const char *call) __attribute__((noinline, cold));
int pyop__outputs_refused(const pyop_op *op, const pyop_tensor *outputs, size_t n,
                          const char *call) __attribute__((noinline, cold));

/*
 * The one check of the input slots, for every call (the hot paths
 * included). Invariant: PYOP_OK exactly when the slot count is the
 * prototype's, each slot's tensor count fits its kind (required: 1,
 * optional: 0 or 1, dynamic: any) and every tensor is a valid description
 * that, with data, holds a buffer of at least its size, and of a data type
 * the prototype allows (dtypes.h: a second pass, only for an op that
 * constrains them); otherwise the first violation is the error. When ptrs
 * is not NULL it also receives the data pointers of the first cap tensors
 * in order (flattened) and *flat their number, so a launch gathers its
 * pointers in the same pass.
 */
static inline __attribute__((always_inline)) int
check_inputs(const pyop_op *op, const pyop_tensor_list *inputs, size_t n, bool data,
             const char *call, void **ptrs, size_t cap, size_t *flat) {
  const pyop__proto *p = op->proto;
  if (n != p->n_inputs || (n && !inputs)) return pyop__inputs_refused(op, inputs, n, call);
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    size_t c = inputs[i].count;
    /* One tensor fits every kind: only other counts need the kind. */
    int32_t kind = c == 1 ? PYOP_IO_DYNAMIC : p->inputs[i].kind;
    if ((kind == PYOP_IO_REQUIRED && c != 1) || (kind == PYOP_IO_OPTIONAL && c > 1) ||
        (c && !inputs[i].items))
      return pyop__slot_refused(op, inputs, i, call);
    for (size_t j = 0; j < c; j++, k++) {
      const pyop_tensor *t = &inputs[i].items[j];
      const char *why = tensor_data_problem(t, data, "NULL data");
      if (why) return pyop__tensor_refused(op, t, i, j, why, call);
      if (ptrs && k < cap) ptrs[k] = t->data;
    }
  }
  if (flat) *flat = k;
  if (__builtin_expect(op->dtypes, 0))
    return pyop__dtypes_check_fast(p, &p->dtypes, inputs, n, call);
  return PYOP_OK;
}

/* The prototype's output count, outputs not NULL, no dynamic output. */
static inline int check_outputs(const pyop_op *op, const pyop_tensor *outputs, size_t n,
                                const char *call) {
  if (n != op->proto->n_outputs || (n && !outputs) || op->proto->dynamic_outputs)
    return pyop__outputs_refused(op, outputs, n, call);
  return PYOP_OK;
}

/* PYOP_EUNSUPPORTED: op has no `what` (op.c; cold). */
int pyop__unsupported(const pyop_op *op, const char *what) __attribute__((noinline, cold));
/* The status and message of a failed bridge call of op (op.c). */
int pyop__callback_failed(int rc, const pyop_op *op, const char *what, unsigned mark);
/*
 * The result of the bridge call `what` ("execute", "infer_meta", "compile",
 * "declare_launch_args") of op that returned rc, given its failure record
 * f (call.h: opened with the call, holding the first failure of its
 * services); the one policy of every call (op.c). Nothing failed: rc, its
 * message made by pyop__callback_failed. A service failed and
 * - the call ended with that failure (rc is its status): that status, and
 *   libpyop's reason first, then what the op said of it: "<reason>\n(<service>
 *   failed; in the op: <its message, the reason replaced by 'see above'>)";
 * - the op failed on its own after it: the op's status and message, then
 *   "\n(earlier in this call, <service> failed: <reason>)";
 * - the op returned normally: PYOP_OK, unless the failure stands: then its
 *   status, "<reason>\n(<service> failed; the op caught it and returned
 *   normally)".
 */
int pyop__call_result(int rc, const pyop__call_failure *f, const pyop_op *op, const char *what)
    __attribute__((noinline));

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

#endif
