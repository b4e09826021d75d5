/*
 * Data type constraints of a prototype (dtypes.c; pyop.h, pyop_dtype_set):
 * the allowed data types of each input and output (a GE REG_OP's
 * TensorType or DATATYPE sets) and the type symbols that make several of
 * them one data type per call. Validated and copied with the prototype
 * (descriptor.c), compared by the registry, checked by op.c before the op
 * runs (inputs) and when it asks for an output.
 */
#ifndef PYOP_DTYPES_H
#define PYOP_DTYPES_H

#include "core.h"
#include "pyop/bridge_abi.h"

/* Every mask bit that names a pyop_dtype. */
#define PYOP__DTYPE_KNOWN (PYOP_DTYPE_BIT(PYOP_DTYPE_COUNT) - 1)

/*
 * A prototype's constraints as copied (inside the prototype's one
 * allocation). When neither side is constrained everything is NULL/0.
 * inputs/outputs are what pyop_op_info.input_dtypes/output_dtypes show
 * (symbols NUL-terminated, NULL for none); in_sym/out_sym give each io's
 * symbol as an index 0..n_symbols-1, or -1.
 */
typedef struct pyop__dtypes {
  pyop_dtype_set *inputs;  /* n_inputs entries, or NULL: no input constrained */
  pyop_dtype_set *outputs; /* n_outputs entries, or NULL */
  /* With inputs: each input's mask, all bits for one that allows any (the
   * fast check of op.c: one test per tensor). */
  uint64_t *in_allow;
  int8_t *in_sym;          /* with inputs */
  int8_t *out_sym;         /* with outputs */
  uint32_t n_symbols;      /* at most PYOP_MAX_DTYPE_SYMBOLS */
  bool in_symbols;         /* some input has a symbol */
} pyop__dtypes;

/* The constraint arrays of a view (NULL when its struct_size does not
 * cover them: a view of bridge ABI 1.6 or older). */
const pyop_dtype_set_view *pyop__view_input_dtypes(const pyop_proto_view *v);
const pyop_dtype_set_view *pyop__view_output_dtypes(const pyop_proto_view *v);

/*
 * Checks the constraints of a view whose inputs and outputs are already
 * valid: every mask names only pyop_dtypes, every symbol is empty or an
 * identifier (at most PYOP__MAX_NAME_LEN bytes), one symbol has one mask
 * wherever it is used, at most PYOP_MAX_DTYPE_SYMBOLS symbols. True when
 * valid; else false with the reason (naming the io) appended to why.
 */
bool pyop__dtypes_check_view(const pyop_proto_view *v, pyop__sb *why);

/* Bytes pyop__dtypes_build needs for a validated view (0: no constraint). */
size_t pyop__dtypes_size(const pyop_proto_view *v);
/* Lays the constraints of a validated view out in mem (pyop__dtypes_size
 * bytes, aligned for pyop_dtype_set) and describes them in *out. */
void pyop__dtypes_build(const pyop_proto_view *v, void *mem, pyop__dtypes *out);

/*
 * True when a and b (of prototypes with the same inputs and outputs, ins
 * and outs) constrain alike: same masks and same symbols. Otherwise false
 * and the first difference appended to why.
 */
bool pyop__dtypes_same(const pyop__dtypes *a, const pyop__dtypes *b, const pyop_io_info *ins,
                       size_t n_inputs, const pyop_io_info *outs, size_t n_outputs,
                       pyop__sb *why);

struct pyop__proto; /* descriptor.h */

/*
 * The check of every call (op.c): PYOP_OK when each input tensor is within
 * its mask and no input has a symbol (or no input is constrained); else
 * the full check, pyop__dtypes_check_inputs. Inline: one shift and test per
 * tensor for an op whose inputs have sets of their own.
 */
static inline int pyop__dtypes_check_fast(const struct pyop__proto *p, const pyop__dtypes *d,
                                          const pyop_tensor_list *inputs, size_t n,
                                          const char *call);

/*
 * Checks valid input slots (each tensor a valid description) of an op of
 * prototype p, which has constraints, against them: PYOP_OK, or
 * PYOP_EINVAL naming call ("execute"), the op, the input (and the tensor of
 * a dynamic one), its data type and the allowed ones (or the input of the
 * same symbol it disagrees with). Cold: only ops with constraints call it.
 */
int pyop__dtypes_check_inputs(const struct pyop__proto *p, const pyop_tensor_list *inputs,
                              size_t n_inputs, const char *call);

/*
 * Checks that output index of p (which has constraints) may be dtype: the
 * op asks for it in execute (at impl_source). Within the output's set, and
 * the data type of its symbol's first input present in inputs. PYOP_OK or
 * PYOP_ECONTRACT naming the op, the output, what was asked and what is
 * allowed.
 */
int pyop__dtypes_check_output(const struct pyop__proto *p, const pyop_tensor_list *inputs,
                              size_t index, int32_t dtype, const char *impl_source);

static inline int pyop__dtypes_check_fast(const struct pyop__proto *p, const pyop__dtypes *d,
                                          const pyop_tensor_list *inputs, size_t n,
                                          const char *call) {
  if (!d->in_allow) return PYOP_OK;
  for (size_t i = 0; i < n; i++)
    for (size_t k = 0; k < inputs[i].count; k++)
      if (!((d->in_allow[i] >> inputs[i].items[k].dtype) & 1))
        return pyop__dtypes_check_inputs(p, inputs, n, call);
  return d->in_symbols ? pyop__dtypes_check_inputs(p, inputs, n, call) : PYOP_OK;
}

/* "float32, float16" of a mask into buf ("any" for 0). */
const char *pyop__dtype_mask_str(uint64_t mask, char *buf, size_t len);

#endif
