/*
 * Kernel launch plans (docs/design.md §Launch). declare_launch_args (Python) describes one
 * or more launches — a kernel symbol in a C shared library plus an ordered
 * argument list — through pyop_launch_view; libpyop validates and copies each
 * into a plan at declare time (so a wrong plan is an error then, never a
 * crash at launch), prepares one ffi_cif per launch, opens each kernel
 * library once per process (checked like a bridge: pyop__open_trusted) and
 * runs the plan with ffi_call, without Python on the hot path.
 *
 * Kernel calling convention: every kernel returns void and is called with
 * the default C ABI of the platform (FFI_DEFAULT_ABI). Arguments map to C
 * types as follows (the pyop_launch_arg_view member read is in brackets):
 *   INPUT, OUTPUT, WORKSPACE, STREAM   void *
 *   SCALAR INT8/16/32/64   [value.i]   int8_t .. int64_t   (range-checked)
 *   SCALAR UINT8/16/32/64  [value.u]   uint8_t .. uint64_t (range-checked)
 *   SCALAR FLOAT           [value.f]   float (converted; a finite value
 *                                      beyond FLT_MAX is refused)
 *   SCALAR DOUBLE          [value.f]   double
 *   SCALAR BOOL            [value.u]   bool, must be 0 or 1; passed as a
 *                                      1-byte unsigned integer, which is how
 *                                      C's bool travels in the x86-64 SysV
 *                                      and AAPCS64 ABIs
 *   SCALAR POINTER         [value.p]   void *
 * index is read for INPUT, OUTPUT and WORKSPACE only, scalar_type for SCALAR
 * only. Arrays of views are C arrays of the structs of bridge_abi.h (the
 * reader's stride); each element's struct_size is checked.
 *
 * The kernel libraries a plan calls into are kernel_libs.h's table; each
 * plan holds a reference on the libraries it uses.
 */
#ifndef PYOP_LAUNCH_H
#define PYOP_LAUNCH_H

#include "core.h"
#include "pyop/bridge_abi.h"

#define PYOP__LAUNCH_MAX_ARGS 64
/* Sanity limits of one plan (PYOP_ELAUNCH beyond them). */
#define PYOP__LAUNCH_MAX_LAUNCHES 1024
#define PYOP__LAUNCH_MAX_WORKSPACES 1024
#define PYOP__LAUNCH_MAX_SYMBOL_LEN 1024

typedef struct pyop__plan pyop__plan;

/*
 * A new empty plan for an op with n_inputs flattened input tensors and
 * n_outputs outputs (indices of INPUT/OUTPUT args are checked against them).
 * op_type is copied (it names the op in every error). PYOP_EINVAL,
 * PYOP_ENOMEM.
 */
int pyop__plan_new(const char *op_type, size_t n_inputs, size_t n_outputs,
                   pyop__plan **out);
/* Frees the plan and drops its library references; NULL is ignored. */
void pyop__plan_free(pyop__plan *p);

/*
 * Validates and appends one launch: the library path must be absolute and
 * pass the file policy, the symbol must be a function defined in that
 * library (not a data object, not a dependency's function that dlsym finds
 * through it: pyop__dlsym_not_function), every arg kind and
 * scalar type must be known and every scalar value fit its type,
 * input/output indices in range (workspace indices are checked by
 * pyop__plan_finish), at most PYOP__LAUNCH_MAX_ARGS args. The launch's
 * ffi_cif is prepared here, once. Kernels return void.
 * Errors (PYOP_ELAUNCH, PYOP_ESECURITY, PYOP_ENOMEM; PYOP_ESTATE after
 * finish) name the op, the launch number, the argument and the reason; on
 * any error the plan is unchanged.
 */
int pyop__plan_add_launch(pyop__plan *p, const pyop_launch_view *v);
/* Declares workspace number k (the next index) of nbytes (0 is allowed).
 * PYOP_ELAUNCH beyond PYOP__LAUNCH_MAX_WORKSPACES, PYOP_ENOMEM, PYOP_ESTATE
 * after finish. */
int pyop__plan_add_workspace(pyop__plan *p, uint64_t nbytes);
/*
 * Final checks (workspace indices in range, at least one launch). After it
 * the plan is immutable and may be run from any number of threads at once.
 * PYOP_ELAUNCH, PYOP_ESTATE when already finished.
 */
int pyop__plan_finish(pyop__plan *p);

/* Number of workspaces and their sizes (for allocation by the caller). */
size_t pyop__plan_workspace_count(const pyop__plan *p);
uint64_t pyop__plan_workspace_size(const pyop__plan *p, size_t k);
/* Number of launches appended so far. */
size_t pyop__plan_launch_count(const pyop__plan *p);

/*
 * Runs every launch in order: inputs[i] is the data pointer of flattened
 * input i, outputs[i] of output i, workspaces[k] of workspace k, stream the
 * context's stream. An array may be NULL when no argument refers to it.
 * No allocation, no lock. PYOP_ESTATE before finish, PYOP_EINVAL for a NULL
 * array that an argument needs.
 */
int pyop__plan_run(const pyop__plan *p, void *const *inputs,
                   void *const *outputs, void *const *workspaces, void *stream);

#endif
