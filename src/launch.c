/*
 * Kernel launch plans with libffi (docs/design.md §Launch); the contract is in launch.h.
 *
 * A plan is built at declare time (new, add_launch..., add_workspace...,
 * finish) and then only read. Each launch is one allocation holding the
 * prepared ffi_cif, its argument types, the scalar values in their exact C
 * types and, per argument, where its avalue is (arg_ref: the launch's own
 * scalar value, or an element of the caller's inputs, outputs or
 * workspaces array, or the stream); pyop__plan_run fills a stack array of
 * avalues from that in one loop and calls ffi_call. Nothing on the run path allocates or locks.
 *
 * Beside the plan, the calls of an op instance (op.h) that build and run
 * it: compile, declare_launch_args and launch, with the artefact and plan
 * sinks they hand the bridge. A launch allocates only for its first call
 * (which declares the plan) and when an op has more pointers than fit the
 * stack.
 */
#include "launch.h"

#include "call.h"
#include "kernel_libs.h"
#include "op.h"
#include "str_view.h"
#include "trust.h"

#include <assert.h>
#include <ffi.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

/* ------------------------------------------------------------- the plan */

/* Where a pointer-valued argument comes from at run time. */
enum { SRC_INPUT = 0, SRC_OUTPUT, SRC_WORKSPACE, SRC_STREAM, SRC_COUNT };

/* A scalar in its exact C type (what the kernel's parameter is). */
typedef union scalar_value {
  int8_t i8;
  int16_t i16;
  int32_t i32;
  int64_t i64;
  uint8_t u8;
  uint16_t u16;
  uint32_t u32;
  uint64_t u64;
  float f32;
  double f64;
  uint8_t b; /* C bool, see launch.h */
  void *ptr;
} scalar_value;

/* What pyop__plan_finish checks (kind, index) and a scalar's value. */
typedef struct launch_arg {
  int32_t kind;
  uint32_t index;
  scalar_value value;
} launch_arg;

/*
 * Where the avalue of an argument is at run time. Invariant: a scalar has
 * value set — the address of its converted value in the launch's args[],
 * fixed because a launch never moves once built — and a pointer argument
 * has value NULL and is element index of the run's array src (the caller's
 * inputs, outputs or workspaces, or the one-element array holding the
 * stream, index 0).
 */
typedef struct arg_ref {
  const void *value;
  uint32_t src;
  uint32_t index;
} arg_ref;

/*
 * One launch, in one allocation: the struct, then args[n_args], refs and
 * types (pointing into the tail), then the symbol name. Never moved after
 * creation, so cif.arg_types and the scalars' avalues stay valid.
 */
typedef struct launch {
  void (*fn)(void);
  ffi_cif cif;
  pyop__kernel_lib *lib;
  uint32_t n_args;
  ffi_type **types;
  arg_ref *refs;
  const char *symbol;
  launch_arg args[];
} launch;

struct pyop__plan {
  char *op_type;
  size_t n_inputs;
  size_t n_outputs;
  launch **launches;
  size_t n_launches, cap_launches;
  uint64_t *ws;
  size_t n_ws, cap_ws;
  size_t need[SRC_COUNT - 1]; /* max index + 1 referenced, per array */
  bool finished;
};

static const char *kind_name(int32_t kind) {
  switch (kind) {
  case PYOP_LAUNCH_ARG_INPUT: return "input";
  case PYOP_LAUNCH_ARG_OUTPUT: return "output";
  case PYOP_LAUNCH_ARG_WORKSPACE: return "workspace";
  case PYOP_LAUNCH_ARG_SCALAR: return "scalar";
  case PYOP_LAUNCH_ARG_STREAM: return "stream";
  }
  return NULL;
}

/* Names as in Python's pyop.launch.scalar(). */
static const char *scalar_name(int32_t t) {
  switch (t) {
  case PYOP_SCALAR_INT8: return "int8";
  case PYOP_SCALAR_INT16: return "int16";
  case PYOP_SCALAR_INT32: return "int32";
  case PYOP_SCALAR_INT64: return "int64";
  case PYOP_SCALAR_UINT8: return "uint8";
  case PYOP_SCALAR_UINT16: return "uint16";
  case PYOP_SCALAR_UINT32: return "uint32";
  case PYOP_SCALAR_UINT64: return "uint64";
  case PYOP_SCALAR_FLOAT: return "float32";
  case PYOP_SCALAR_DOUBLE: return "float64";
  case PYOP_SCALAR_BOOL: return "bool";
  case PYOP_SCALAR_POINTER: return "pointer";
  }
  return NULL;
}

static ffi_type *scalar_ffi_type(int32_t t) {
  switch (t) {
  case PYOP_SCALAR_INT8: return &ffi_type_sint8;
  case PYOP_SCALAR_INT16: return &ffi_type_sint16;
  case PYOP_SCALAR_INT32: return &ffi_type_sint32;
  case PYOP_SCALAR_INT64: return &ffi_type_sint64;
  case PYOP_SCALAR_UINT8: return &ffi_type_uint8;
  case PYOP_SCALAR_UINT16: return &ffi_type_uint16;
  case PYOP_SCALAR_UINT32: return &ffi_type_uint32;
  case PYOP_SCALAR_UINT64: return &ffi_type_uint64;
  case PYOP_SCALAR_FLOAT: return &ffi_type_float;
  case PYOP_SCALAR_DOUBLE: return &ffi_type_double;
  case PYOP_SCALAR_BOOL: return &ffi_type_uint8; /* C bool: 1 byte, 0 or 1 */
  case PYOP_SCALAR_POINTER: return &ffi_type_pointer;
  }
  return NULL;
}

/* Converts a scalar view to its C type: true, or false and the reason
 * appended to why. */
static bool scalar_convert(const pyop_launch_arg_view *a, scalar_value *out, pyop__sb *why) {
  const char *name = scalar_name(a->scalar_type);
  int64_t lo = 0, hi = 0;
  uint64_t umax = 0;
  switch (a->scalar_type) {
  case PYOP_SCALAR_INT8: lo = INT8_MIN; hi = INT8_MAX; break;
  case PYOP_SCALAR_INT16: lo = INT16_MIN; hi = INT16_MAX; break;
  case PYOP_SCALAR_INT32: lo = INT32_MIN; hi = INT32_MAX; break;
  case PYOP_SCALAR_INT64: lo = INT64_MIN; hi = INT64_MAX; break;
  case PYOP_SCALAR_UINT8: umax = UINT8_MAX; break;
  case PYOP_SCALAR_UINT16: umax = UINT16_MAX; break;
  case PYOP_SCALAR_UINT32: umax = UINT32_MAX; break;
  case PYOP_SCALAR_UINT64: umax = UINT64_MAX; break;
  case PYOP_SCALAR_BOOL: umax = 1; break;
  case PYOP_SCALAR_FLOAT: {
    double d = a->value.f;
    /* Converting a finite double beyond float's range is undefined. */
    if (!isnan(d) && !isinf(d) && (d > FLT_MAX || d < -FLT_MAX)) {
      pyop__sb_printf(why, "float32 value %g out of range", d);
      return false;
    }
    out->f32 = (float)d;
    return true;
  }
  case PYOP_SCALAR_DOUBLE: out->f64 = a->value.f; return true;
  case PYOP_SCALAR_POINTER: out->ptr = (void *)a->value.p; return true;
  default:
    pyop__sb_printf(why, "unknown scalar type %d", (int)a->scalar_type);
    return false;
  }
  if (umax) {
    if (a->value.u > umax) {
      if (a->scalar_type == PYOP_SCALAR_BOOL)
        pyop__sb_printf(why, "bool value %llu must be 0 or 1", (unsigned long long)a->value.u);
      else
        pyop__sb_printf(why, "%s value %llu out of range (at most %llu)", name,
                        (unsigned long long)a->value.u, (unsigned long long)umax);
      return false;
    }
    switch (a->scalar_type) {
    case PYOP_SCALAR_UINT8: out->u8 = (uint8_t)a->value.u; break;
    case PYOP_SCALAR_UINT16: out->u16 = (uint16_t)a->value.u; break;
    case PYOP_SCALAR_UINT32: out->u32 = (uint32_t)a->value.u; break;
    case PYOP_SCALAR_BOOL: out->b = (uint8_t)a->value.u; break;
    default: out->u64 = a->value.u; break;
    }
    return true;
  }
  if (a->value.i < lo || a->value.i > hi) {
    pyop__sb_printf(why, "%s value %lld out of range [%lld, %lld]", name,
                    (long long)a->value.i, (long long)lo, (long long)hi);
    return false;
  }
  switch (a->scalar_type) {
  case PYOP_SCALAR_INT8: out->i8 = (int8_t)a->value.i; break;
  case PYOP_SCALAR_INT16: out->i16 = (int16_t)a->value.i; break;
  case PYOP_SCALAR_INT32: out->i32 = (int32_t)a->value.i; break;
  default: out->i64 = a->value.i; break;
  }
  return true;
}

/* Records `op "T": launch L[ argument A]: <message>`; returns status.
 * arg < 0 leaves the argument out. */
static int plan_fail(int status, const pyop__plan *p, size_t launch_no, long arg,
                     const char *fmt, ...) PYOP__PRINTF(5, 6);
static int plan_fail(int status, const pyop__plan *p, size_t launch_no, long arg,
                     const char *fmt, ...) {
  char msg[8192];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (arg < 0)
    return pyop__error(status, "op \"%s\": launch %zu: %s", p->op_type, launch_no, msg);
  return pyop__error(status, "op \"%s\": launch %zu argument %ld: %s", p->op_type,
                     launch_no, arg, msg);
}

/* See launch.h. */
int pyop__plan_new(const char *op_type, size_t n_inputs, size_t n_outputs,
                   pyop__plan **out) {
  if (!out) return pyop__error(PYOP_EINVAL, "launch plan: NULL output pointer");
  *out = NULL;
  if (!op_type) return pyop__error(PYOP_EINVAL, "launch plan: NULL op type");
  pyop__plan *p = pyop__calloc(1, sizeof *p);
  if (!p) return pyop__error(PYOP_ENOMEM, "op \"%s\": launch plan: out of memory", op_type);
  p->op_type = pyop__strdup(op_type);
  if (!p->op_type) {
    pyop__free(p);
    return pyop__error(PYOP_ENOMEM, "op \"%s\": launch plan: out of memory", op_type);
  }
  p->n_inputs = n_inputs;
  p->n_outputs = n_outputs;
  *out = p;
  return PYOP_OK;
}

/* See launch.h. */
void pyop__plan_free(pyop__plan *p) {
  if (!p) return;
  for (size_t i = 0; i < p->n_launches; i++) {
    pyop__kernel_lib_release(p->launches[i]->lib);
    pyop__free(p->launches[i]);
  }
  pyop__free(p->launches);
  pyop__free(p->ws);
  pyop__free(p->op_type);
  pyop__free(p);
}

/* Checks the args of v (no side effect). Fills need[] with max index + 1
 * per source array. */
static int check_args(const pyop__plan *p, size_t no, const pyop_launch_view *v,
                      size_t need[SRC_COUNT - 1]) {
  memset(need, 0, sizeof(size_t) * (SRC_COUNT - 1));
  if (v->n_args > PYOP__LAUNCH_MAX_ARGS)
    return plan_fail(PYOP_ELAUNCH, p, no, -1, "too many arguments (%zu > %d)",
                     v->n_args, PYOP__LAUNCH_MAX_ARGS);
  if (v->n_args > 0 && !v->args)
    return plan_fail(PYOP_ELAUNCH, p, no, -1, "%zu %s but the array is NULL",
                     v->n_args, PYOP__PLURAL(v->n_args, "argument", "arguments"));
  for (size_t j = 0; j < v->n_args; j++) {
    const pyop_launch_arg_view *a = &v->args[j];
    long aj = (long)j;
    size_t min = PYOP__MEMBER_END(pyop_launch_arg_view, value);
    if (a->struct_size < min)
      return plan_fail(PYOP_ELAUNCH, p, no, aj, "struct_size %zu is smaller than %zu",
                       a->struct_size, min);
    const char *kn = kind_name(a->kind);
    if (!kn)
      return plan_fail(PYOP_ELAUNCH, p, no, aj, "unknown kind %d", (int)a->kind);
    size_t limit = 0;
    int src = -1;
    switch (a->kind) {
    case PYOP_LAUNCH_ARG_INPUT: src = SRC_INPUT; limit = p->n_inputs; break;
    case PYOP_LAUNCH_ARG_OUTPUT: src = SRC_OUTPUT; limit = p->n_outputs; break;
    case PYOP_LAUNCH_ARG_WORKSPACE: src = SRC_WORKSPACE; limit = SIZE_MAX; break;
    case PYOP_LAUNCH_ARG_STREAM: continue;
    default: break; /* SCALAR */
    }
    if (src >= 0) {
      if (a->index >= limit)
        return plan_fail(PYOP_ELAUNCH, p, no, aj,
                         "%s index %u out of range (op has %zu %s%s)", kn,
                         (unsigned)a->index, limit, kn, limit == 1 ? "" : "s");
      if ((size_t)a->index + 1 > need[src]) need[src] = (size_t)a->index + 1;
      continue;
    }
    pyop__sb why = PYOP__SB_INIT;
    scalar_value tmp;
    if (!scalar_convert(a, &tmp, &why)) {
      int rc = plan_fail(PYOP_ELAUNCH, p, no, aj, "%s",
                         why.oom ? "(out of memory)" : pyop__sb_str(&why));
      pyop__sb_free(&why);
      return rc;
    }
  }
  return PYOP_OK;
}

/* Allocates and fills a launch from a checked view (cif prepared). */
static int build_launch(const pyop__plan *p, size_t no, const pyop_launch_view *v,
                        const char *symbol, launch **out) {
  size_t n = v->n_args;
  size_t sym_len = strlen(symbol);
  size_t size = offsetof(launch, args) + n * sizeof(launch_arg) +
                n * sizeof(ffi_type *) + n * sizeof(arg_ref) + sym_len + 1;
  launch *L = pyop__malloc(size);
  if (!L) return plan_fail(PYOP_ENOMEM, p, no, -1, "out of memory");
  /* refs right after args[] (whose alignment, that of a 64-bit scalar,
   * suits them), then the types (pointers). */
  char *tail = (char *)L + offsetof(launch, args) + n * sizeof(launch_arg);
  L->refs = (arg_ref *)(void *)tail;
  tail += n * sizeof(arg_ref);
  L->types = (ffi_type **)(void *)tail;
  tail += n * sizeof(ffi_type *);
  memcpy(tail, symbol, sym_len + 1);
  L->symbol = tail;
  L->fn = NULL;
  L->lib = NULL;
  L->n_args = (uint32_t)n;

  for (size_t j = 0; j < n; j++) {
    const pyop_launch_arg_view *a = &v->args[j];
    launch_arg *d = &L->args[j];
    memset(d, 0, sizeof *d);
    d->kind = a->kind;
    if (a->kind == PYOP_LAUNCH_ARG_SCALAR) {
      pyop__sb unused = PYOP__SB_INIT; /* checked before: no reason to write */
      (void)scalar_convert(a, &d->value, &unused);
      pyop__sb_free(&unused);
      L->types[j] = scalar_ffi_type(a->scalar_type);
      L->refs[j] = (arg_ref){&d->value, 0, 0};
      continue;
    }
    uint32_t src = SRC_STREAM;
    if (a->kind == PYOP_LAUNCH_ARG_INPUT) src = SRC_INPUT;
    else if (a->kind == PYOP_LAUNCH_ARG_OUTPUT) src = SRC_OUTPUT;
    else if (a->kind == PYOP_LAUNCH_ARG_WORKSPACE) src = SRC_WORKSPACE;
    d->index = src == SRC_STREAM ? 0 : a->index;
    L->types[j] = &ffi_type_pointer;
    L->refs[j] = (arg_ref){NULL, src, d->index};
  }
  ffi_status fs = ffi_prep_cif(&L->cif, FFI_DEFAULT_ABI, (unsigned)n, &ffi_type_void,
                               n ? L->types : NULL);
  if (fs != FFI_OK) {
    pyop__free(L);
    return plan_fail(PYOP_ELAUNCH, p, no, -1,
                     "kernel \"%s\": ffi_prep_cif failed (ffi_status %d)", symbol,
                     (int)fs);
  }
  *out = L;
  return PYOP_OK;
}

/* See launch.h. Order: view checks (no side effects), library, symbol,
 * allocation; each failure undoes what came before. */
/*
 * The kernel of launch no: its library at path opened (kernel_libs.h, one
 * reference taken) and symbol found in it, a function defined there.
 * PYOP_OK with both in *out_lib and *out_sym; else the plan's error
 * recorded and no reference kept.
 */
static int find_kernel(const pyop__plan *p, size_t no, const char *path, const char *symbol,
                       pyop__kernel_lib **out_lib, void **out_sym) {
  pyop__sb lwhy = PYOP__SB_INIT;
  pyop__kernel_lib *lib = NULL;
  *out_lib = NULL;
  *out_sym = NULL;
  int rc = pyop__kernel_lib_acquire(path, &lib, &lwhy);
  if (rc != PYOP_OK) {
    /* ENOENT/EIO of the file check are reported as ELAUNCH: the plan names
     * a library that cannot be used. */
    const char *text = pyop__sb_str(&lwhy);
    if (rc == PYOP_ESECURITY)
      rc = plan_fail(rc, p, no, -1,
                     "kernel library refused by the file security policy: %s", text);
    else if (rc == PYOP_ENOMEM)
      rc = plan_fail(rc, p, no, -1, "kernel library %s: out of memory", path);
    else if (rc == PYOP_ELAUNCH)
      rc = plan_fail(rc, p, no, -1, "cannot load kernel library: %s", text);
    else
      rc = plan_fail(PYOP_ELAUNCH, p, no, -1, "cannot open kernel library: %s", text);
    pyop__sb_free(&lwhy);
    return rc;
  }
  pyop__sb_free(&lwhy);

  (void)PYOP_SYS(dlerror)(); /* a stale message must not be taken for ours */
  void *sym = PYOP_SYS(dlsym)(lib->handle, symbol);
  if (!sym) {
    rc = plan_fail(PYOP_ELAUNCH, p, no, -1, "kernel symbol \"%s\" not found in %s (%s)",
                   symbol, lib->path, pyop__dlerror_detail(lib->path));
    pyop__kernel_lib_release(lib);
    return rc;
  }
  /* Called through ffi, a data object would be jumped into and a
   * dependency's function (libc's exit) run as if it were a kernel. */
  char sym_why[PATH_MAX * 2 + 128];
  if (pyop__dlsym_not_function(lib->handle, sym, lib->path, sym_why, sizeof sym_why)) {
    rc = plan_fail(PYOP_ELAUNCH, p, no, -1,
                   "kernel symbol \"%s\" %s (a kernel must be a function defined in the "
                   "kernel library itself)",
                   symbol, sym_why);
    pyop__kernel_lib_release(lib);
    return rc;
  }
  *out_lib = lib;
  *out_sym = sym;
  return PYOP_OK;
}

int pyop__plan_add_launch(pyop__plan *p, const pyop_launch_view *v) {
  if (!p) return pyop__error(PYOP_EINVAL, "launch plan: NULL plan");
  size_t no = p->n_launches;
  if (p->finished)
    return plan_fail(PYOP_ESTATE, p, no, -1, "the plan is already finished");
  if (!v) return plan_fail(PYOP_ELAUNCH, p, no, -1, "NULL launch view");
  size_t min = PYOP__MEMBER_END(pyop_launch_view, n_args);
  if (v->struct_size < min)
    return plan_fail(PYOP_ELAUNCH, p, no, -1, "struct_size %zu is smaller than %zu",
                     v->struct_size, min);
  if (no >= PYOP__LAUNCH_MAX_LAUNCHES)
    return plan_fail(PYOP_ELAUNCH, p, no, -1, "too many launches (at most %d)",
                     PYOP__LAUNCH_MAX_LAUNCHES);

  const char *why = pyop__str_view_problem(v->library, true, PATH_MAX - 1);
  if (why) return plan_fail(PYOP_ELAUNCH, p, no, -1, "library path: %s", why);
  why = pyop__str_view_problem(v->symbol, true, PYOP__LAUNCH_MAX_SYMBOL_LEN);
  if (why) return plan_fail(PYOP_ELAUNCH, p, no, -1, "kernel symbol: %s", why);
  char path[PATH_MAX];
  memcpy(path, v->library.data, v->library.len);
  path[v->library.len] = '\0';
  char symbol[PYOP__LAUNCH_MAX_SYMBOL_LEN + 1];
  memcpy(symbol, v->symbol.data, v->symbol.len);
  symbol[v->symbol.len] = '\0';
  if (path[0] != '/')
    return plan_fail(PYOP_ELAUNCH, p, no, -1, "library path must be absolute: %s", path);

  size_t need[SRC_COUNT - 1];
  int rc = check_args(p, no, v, need);
  if (rc != PYOP_OK) return rc;

  pyop__kernel_lib *lib;
  void *sym;
  rc = find_kernel(p, no, path, symbol, &lib, &sym);
  if (rc != PYOP_OK) return rc;

  if (p->n_launches == p->cap_launches) {
    size_t cap = p->cap_launches ? p->cap_launches * 2 : 4;
    launch **arr = pyop__realloc(p->launches, cap * sizeof *arr);
    if (!arr) {
      pyop__kernel_lib_release(lib);
      return plan_fail(PYOP_ENOMEM, p, no, -1, "out of memory");
    }
    p->launches = arr;
    p->cap_launches = cap;
  }
  launch *L = NULL;
  rc = build_launch(p, no, v, symbol, &L);
  if (rc != PYOP_OK) {
    pyop__kernel_lib_release(lib);
    return rc;
  }
  L->lib = lib;
  L->fn = (void (*)(void))sym;
  p->launches[p->n_launches++] = L;
  for (int s = 0; s < SRC_COUNT - 1; s++)
    if (need[s] > p->need[s]) p->need[s] = need[s];
  return PYOP_OK;
}

/* See launch.h. */
int pyop__plan_add_workspace(pyop__plan *p, uint64_t nbytes) {
  if (!p) return pyop__error(PYOP_EINVAL, "launch plan: NULL plan");
  if (p->finished)
    return pyop__error(PYOP_ESTATE, "op \"%s\": workspace %zu: the plan is already finished",
                       p->op_type, p->n_ws);
  if (p->n_ws >= PYOP__LAUNCH_MAX_WORKSPACES)
    return pyop__error(PYOP_ELAUNCH, "op \"%s\": workspace %zu: too many workspaces (at most %d)",
                       p->op_type, p->n_ws, PYOP__LAUNCH_MAX_WORKSPACES);
  if (p->n_ws == p->cap_ws) {
    size_t cap = p->cap_ws ? p->cap_ws * 2 : 4;
    uint64_t *ws = pyop__realloc(p->ws, cap * sizeof *ws);
    if (!ws)
      return pyop__error(PYOP_ENOMEM, "op \"%s\": workspace %zu: out of memory",
                         p->op_type, p->n_ws);
    p->ws = ws;
    p->cap_ws = cap;
  }
  p->ws[p->n_ws++] = nbytes;
  return PYOP_OK;
}

/* See launch.h. */
int pyop__plan_finish(pyop__plan *p) {
  if (!p) return pyop__error(PYOP_EINVAL, "launch plan: NULL plan");
  if (p->finished)
    return pyop__error(PYOP_ESTATE, "op \"%s\": the launch plan is already finished",
                       p->op_type);
  if (p->n_launches == 0)
    return pyop__error(PYOP_ELAUNCH, "op \"%s\": the launch plan has no launch",
                       p->op_type);
  for (size_t l = 0; l < p->n_launches; l++) {
    const launch *L = p->launches[l];
    for (uint32_t j = 0; j < L->n_args; j++) {
      const launch_arg *a = &L->args[j];
      if (a->kind == PYOP_LAUNCH_ARG_WORKSPACE && a->index >= p->n_ws)
        return plan_fail(PYOP_ELAUNCH, p, l, (long)j,
                         "workspace index %u out of range (%zu workspace%s declared)",
                         (unsigned)a->index, p->n_ws, p->n_ws == 1 ? "" : "s");
    }
  }
  p->finished = true;
  return PYOP_OK;
}

size_t pyop__plan_workspace_count(const pyop__plan *p) { return p ? p->n_ws : 0; }

/* 0 for an index out of range. */
uint64_t pyop__plan_workspace_size(const pyop__plan *p, size_t k) {
  return p && k < p->n_ws ? p->ws[k] : 0;
}

size_t pyop__plan_launch_count(const pyop__plan *p) { return p ? p->n_launches : 0; }

/* See launch.h. The cif is only read by ffi_call; the cast drops the const
 * of the (finished, immutable) plan. A pointer-valued argument's avalue
 * points straight at the caller's array element (ffi_call only reads it). */
int pyop__plan_run(const pyop__plan *p, void *const *inputs, void *const *outputs,
                   void *const *workspaces, void *stream) {
  if (!p) return pyop__error(PYOP_EINVAL, "launch plan: NULL plan");
  if (!p->finished)
    return pyop__error(PYOP_ESTATE, "op \"%s\": the launch plan is not finished",
                       p->op_type);
  if ((p->need[SRC_INPUT] && !inputs) || (p->need[SRC_OUTPUT] && !outputs) ||
      (p->need[SRC_WORKSPACE] && !workspaces)) {
    static const char *const src_name[] = {"inputs", "outputs", "workspaces"};
    void *const *src[SRC_COUNT - 1] = {inputs, outputs, workspaces};
    for (int s = 0; s < SRC_COUNT - 1; s++)
      if (p->need[s] && !src[s])
        return pyop__error(PYOP_EINVAL, "op \"%s\": launch plan run: %s array is NULL "
                                        "but %zu are used",
                           p->op_type, src_name[s], p->need[s]);
  }

  void *const stream_slot[1] = {stream};
  void *const *const arrays[SRC_COUNT] = {inputs, outputs, workspaces, stream_slot};
  void *avalues[PYOP__LAUNCH_MAX_ARGS];
  for (size_t l = 0; l < p->n_launches; l++) {
    const launch *L = p->launches[l];
    const arg_ref *refs = L->refs;
    uint32_t n = L->n_args;
    for (uint32_t j = 0; j < n; j++) {
      const arg_ref *r = &refs[j];
      avalues[j] = r->value ? (void *)(uintptr_t)r->value
                            : (void *)(uintptr_t)&arrays[r->src][r->index];
    }
    ffi_call((ffi_cif *)&L->cif, L->fn, NULL, avalues);
  }
  return PYOP_OK;
}

/* ----------------------------------------- compile, declare and launch */

/* Pointer arrays of one launch: on the stack up to this many, else heap. */
#define PYOP__LAUNCH_STACK_PTRS 64

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
                         pyop__tensor_str(&outputs[i], ts, sizeof ts), why);
    }
  }
  return PYOP_OK;
}

/* Where compile's set_artifact stores (a copy of) the artefact. */
typedef struct artifact_sink {
  const pyop_op *op;
  void *data;
  size_t len;
  pyop__call_failure fail; /* an artefact refused and caught leaves the last one */
} artifact_sink;

static int sink_set_artifact(void *vctx, const void *data, size_t len) {
  artifact_sink *s = pyop__call_state(vctx);
  if (!s) return pyop__call_refused("set_artifact", "compile", __builtin_return_address(0));
  if (len && !data)
    return pyop__call_failed(&s->fail,
                             pyop__error(PYOP_EINVAL, "compile of \"%s\": set_artifact: %zu %s "
                                         "from NULL", s->op->op_type, len,
                                         PYOP__PLURAL(len, "byte", "bytes")),
                             "set_artifact", false);
  void *copy = NULL;
  if (len) {
    copy = pyop__malloc(len);
    if (!copy)
      return pyop__call_failed(&s->fail,
                               pyop__error(PYOP_ENOMEM, "compile of \"%s\": out of memory "
                                           "for a %zu-byte artefact", s->op->op_type, len),
                               "set_artifact", false);
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
  if (!op->compile) return pyop__unsupported(op, "compile");
  int rc = check_inputs(op, inputs, n_inputs, false, "compile", NULL, 0, NULL);
  if (rc == PYOP_OK)
    rc = check_output_descs(op, outputs, n_outputs, false, "compile", NULL, 0);
  if (rc != PYOP_OK) return rc;
  artifact_sink sink;
  sink.op = op;
  sink.data = NULL;
  sink.len = 0;
  pyop__call call;
  pyop_compile_args args = {sizeof args, inputs, n_inputs, outputs, n_outputs,
                            pyop__call_open(&call, &sink, &sink.fail), sink_set_artifact};
  rc = op->compile(op->impl_holder, &args);
  pyop__call_close(&call);
  rc = pyop__call_result(rc, &sink.fail, op, "compile");
  if (rc != PYOP_OK) {
    pyop__free(sink.data);
    return rc;
  }
  *artifact = sink.data;
  *len = sink.len;
  return PYOP_OK;
}

/* The plan being declared and the first refusal of a sink call, which
 * stands: a plan missing a refused launch is never kept, even when the op
 * caught the refusal and returned normally. */
typedef struct declare_sink {
  pyop__plan *plan;
  pyop__call_failure fail;
} declare_sink;

static int sink_add_launch(void *vctx, const pyop_launch_view *v) {
  declare_sink *d = pyop__call_state(vctx);
  if (!d)
    return pyop__call_refused("add_launch", "declare_launch_args", __builtin_return_address(0));
  int rc = pyop__plan_add_launch(d->plan, v);
  return rc == PYOP_OK ? rc : pyop__call_failed(&d->fail, rc, "add_launch", true);
}

static int sink_add_workspace(void *vctx, uint64_t nbytes) {
  declare_sink *d = pyop__call_state(vctx);
  if (!d)
    return pyop__call_refused("add_workspace", "declare_launch_args",
                              __builtin_return_address(0));
  int rc = pyop__plan_add_workspace(d->plan, nbytes);
  return rc == PYOP_OK ? rc : pyop__call_failed(&d->fail, rc, "add_workspace", true);
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
  if (!op->declare) return pyop__unsupported(op, "declare_launch_args");
  int rc = check_inputs(op, inputs, n_inputs, false, "declare_launch_args", NULL, 0, NULL);
  if (rc == PYOP_OK)
    rc = check_output_descs(op, outputs, n_outputs, false, "declare_launch_args", NULL, 0);
  if (rc != PYOP_OK) return rc;
  size_t flat = 0;
  for (size_t i = 0; i < n_inputs; i++) flat += inputs[i].count;
  pyop__plan *plan;
  rc = pyop__plan_new(op->op_type, flat, n_outputs, &plan);
  if (rc != PYOP_OK) return rc;
  declare_sink sink;
  sink.plan = plan;
  pyop__call call;
  pyop_declare_args args = {sizeof args, inputs, n_inputs, outputs, n_outputs,
                            pyop__call_open(&call, &sink, &sink.fail), sink_add_launch,
                            sink_add_workspace};
  rc = op->declare(op->impl_holder, &args);
  pyop__call_close(&call);
  rc = pyop__call_result(rc, &sink.fail, op, "declare_launch_args");
  if (rc == PYOP_OK) rc = pyop__plan_finish(plan);
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
  if (!op->declare) return pyop__unsupported(op, "declare_launch_args (needed to launch)");
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
