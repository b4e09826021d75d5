/*
 * The op contract (src/op.c, src/descriptor.c; issue 10) with in-process
 * fake callbacks: outputs must be produced (PYOP_ECONTRACT otherwise), host
 * expectations and strict mode, ops without outputs, dynamic outputs
 * (pyop_op_infer_meta_list / pyop_op_execute_list), in-place ops with
 * aliasing outputs, Tensor attributes, and the ABI 1.0 / 1.1 rules of
 * prototype views.
 */
#include "registry.h"
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pyop_str S(const char *s) { return (pyop_str){s, strlen(s)}; }

static void assert_msg_has(const char *part) {
  if (!strstr(pyop_last_error(), part))
    fail_msg("message \"%s\" lacks \"%s\"", pyop_last_error(), part);
}

/* ------------------------------------------------------ fake callbacks */

/* What execute does, chosen by the attribute "mode" of the op. */
enum { X_OK = 0, X_NOTHING = 1, X_WRONG = 2, X_ALLOC_ALIAS = 3, X_CATCH = 4, X_NO_LAST = 5,
       X_ALIAS_TWICE = 6, X_ALIAS_INDEX = 7, X_ALIAS_UNDECLARED = 8, X_BAD_RANK = 9,
       X_RANK_8 = 10, X_LAST_SHORT = 11, X_LAST_UNSET = 12, X_LAST_NEG = 13 };

typedef struct holder {
  int64_t mode, n;
  const pyop_tensor *w; /* Tensor attribute "w" when the op has one */
  const pyop_tensor *v; /* and "v" (Const2: two Tensor attributes) */
} holder;

static int holders_alive;
static const uint32_t *seen_flags; /* input_flags of the last execute */
static void *seen_stream;          /* stream of the last execute */

static int create(void *ctx, const pyop_attr_view *a, size_t n, void **out) {
  (void)ctx;
  holder *h = calloc(1, sizeof *h);
  assert_non_null(h);
  h->n = 2;
  for (size_t i = 0; i < n; i++) {
    if (a[i].name.len == 4 && memcmp(a[i].name.data, "mode", 4) == 0) h->mode = a[i].default_value.u.i;
    if (a[i].name.len == 1 && a[i].name.data[0] == 'n') h->n = a[i].default_value.u.i;
    if (a[i].name.len == 1 && a[i].name.data[0] == 'w') {
      assert_int_equal(a[i].default_value.type, PYOP_ATTR_TENSOR);
      h->w = a[i].default_value.u.tensor;
    }
    if (a[i].name.len == 1 && a[i].name.data[0] == 'v') {
      assert_int_equal(a[i].default_value.type, PYOP_ATTR_TENSOR);
      h->v = a[i].default_value.u.tensor;
    }
  }
  holders_alive++;
  *out = h;
  return PYOP_OK;
}

static void destroy(void *h) {
  holders_alive--;
  free(h);
}

/* Output 0 (or each tensor of a dynamic output 0) is input 0's description. */
static int infer(void *hv, const pyop_infer_args *a) {
  holder *h = hv;
  assert_int_equal(a->struct_size, sizeof(pyop_infer_args));
  if (a->n_outputs == 0) return PYOP_OK;
  pyop_tensor t = a->inputs[0].items[0];
  if (a->n_outputs == 2 || h->n < 0) { /* Split: a dynamic output 0 */
    for (int64_t k = 0; k < (h->n < 0 ? -h->n : h->n); k++) {
      int rc = a->add_output(a->sink_ctx, 0, &t);
      if (rc != PYOP_OK) return rc;
    }
    if (a->n_outputs == 2 && h->mode != X_LAST_UNSET) a->outputs[1] = t;
    if (a->n_outputs == 2 && h->mode == X_LAST_SHORT) a->outputs[1].shape[0] = 1;
    if (a->n_outputs == 2 && h->mode == X_LAST_NEG) a->outputs[1].shape[0] = -2;
    return PYOP_OK;
  }
  a->outputs[0] = t;
  return PYOP_OK;
}

static int execute(void *hv, const pyop_exec_args *a) {
  holder *h = hv;
  const pyop_exec_services *svc = a->services;
  assert_true(a->struct_size >= offsetof(pyop_exec_args, input_flags) + sizeof(void *));
  assert_true(svc->struct_size >= offsetof(pyop_exec_services, alias_output) + sizeof(void *));
  seen_flags = a->input_flags;
  seen_stream = a->stream;
  if (a->n_outputs == 0 || h->mode == X_NOTHING) return PYOP_OK;
  const pyop_tensor *x = &a->inputs[0].items[0];
  pyop_tensor t = *x;
  t.data = NULL;
  if (a->n_outputs == 2 || h->n < 0) { /* Split: n tensors of output 0 filled with k */
    for (int64_t k = 0; k < (h->n < 0 ? -h->n : h->n); k++) {
      pyop_tensor o = t;
      int rc = svc->alloc_output(svc->ctx, 0, &o);
      if (rc != PYOP_OK) return rc;
      for (int64_t i = 0; i < pyop_tensor_numel(&o); i++) ((float *)o.data)[i] = (float)k;
    }
    if (a->n_outputs == 2 && h->mode != X_NO_LAST) {
      pyop_tensor o = t;
      if (h->mode == X_LAST_SHORT) o.shape[0] = 1;
      return svc->alloc_output(svc->ctx, 1, &o);
    }
    return PYOP_OK;
  }
  if (a->input_flags && (a->input_flags[0] & PYOP_INPUT_MUTATED)) { /* Inplace */
    float *xv = x->data;
    for (int64_t i = 0; i < pyop_tensor_numel(x); i++) xv[i] += 1.0f;
    if (h->mode == X_ALLOC_ALIAS) return svc->alloc_output(svc->ctx, 0, &t);
    pyop_tensor o;
    if (h->mode == X_ALIAS_INDEX) return svc->alias_output(svc->ctx, 1, 0, &o);
    int rc = svc->alias_output(svc->ctx, 0, 0, &o);
    if (rc == PYOP_OK && h->mode == X_ALIAS_TWICE) rc = svc->alias_output(svc->ctx, 0, 0, &o);
    return rc;
  }
  if (h->mode == X_ALIAS_UNDECLARED) {
    pyop_tensor o;
    return svc->alias_output(svc->ctx, 0, 0, &o);
  }
  if (h->mode == X_BAD_RANK || h->mode == X_RANK_8) { /* [1]*9 or [1]*7+[3] */
    t.ndim = h->mode == X_BAD_RANK ? PYOP_MAX_DIMS + 1 : PYOP_MAX_DIMS;
    for (int i = 0; i < PYOP_MAX_DIMS; i++) t.shape[i] = 1;
    t.shape[PYOP_MAX_DIMS - 1] = 3;
  }
  if (h->mode == X_WRONG) {
    t.dtype = PYOP_DTYPE_FLOAT16;
    t.ndim = 1;
    t.shape[0] = 6;
  }
  int rc = svc->alloc_output(svc->ctx, 0, &t);
  if (h->mode == X_CATCH) return PYOP_OK; /* swallows the failure */
  if (rc != PYOP_OK) return rc;
  if (h->w) { /* Const: y = x + w; Const2: y = x + w + v */
    const float *w = h->w->data, *xv = x->data;
    const float *v = h->v ? h->v->data : NULL;
    for (int64_t i = 0; i < pyop_tensor_numel(x); i++)
      ((float *)t.data)[i] = xv[i] + w[i] + (v ? v[i] : 0.0f);
  }
  return PYOP_OK;
}

static const pyop_op_callbacks proto_cbs = {sizeof(pyop_op_callbacks), create, destroy, infer,
                                            NULL, NULL, NULL};
static const pyop_op_callbacks impl_cbs = {sizeof(pyop_op_callbacks), create, destroy, NULL,
                                           execute, NULL, NULL};

#define IOV(n, k) {sizeof(pyop_io_view), {n, sizeof(n) - 1}, k}

typedef struct opdef {
  const char *op_type;
  size_t n_in, n_out;
  pyop_io_view in[2], out[2];
  const uint32_t *flags;
  const int32_t *alias;
  bool tensor_attr;
} opdef;

/* Registers def (prototype with attrs mode: int = 0, n: int = 2 [, w:
 * Tensor], plus an implementation). Returns the txn status. */
static int reg(const opdef *d, size_t struct_size) {
  pyop_attr_view at[3];
  memset(at, 0, sizeof at);
  at[0] = (pyop_attr_view){sizeof(pyop_attr_view), S("mode"), PYOP_ATTR_INT, 0,
                           {.type = PYOP_ATTR_INT, .u.i = 0}};
  at[1] = (pyop_attr_view){sizeof(pyop_attr_view), S("n"), PYOP_ATTR_INT, 0,
                           {.type = PYOP_ATTR_INT, .u.i = 2}};
  at[2] = (pyop_attr_view){sizeof(pyop_attr_view), S("w"), PYOP_ATTR_TENSOR, 1,
                           {.type = PYOP_ATTR_TENSOR}};
  pyop_proto_view p;
  memset(&p, 0, sizeof p);
  p = (pyop_proto_view){struct_size, S(d->op_type), S("test:contract"), S("contract.py"), 3,
                        PYOP_CAP_INFER_META, d->in, d->n_in, d->out, d->n_out, at,
                        d->tensor_attr ? 3 : 2, NULL, &proto_cbs, d->flags, d->alias};
  pyop_impl_view i = {sizeof i, S(d->op_type), S("test:contract.impl"), S("contract.py"), 9,
                      PYOP_CAP_EXECUTE, NULL, &impl_cbs};
  pyop__txn *t;
  assert_int_equal(pyop__txn_begin(&t), PYOP_OK);
  int rc = pyop__txn_add_proto(t, &p);
  if (rc == PYOP_OK) rc = pyop__txn_add_impl(t, &i);
  if (rc != PYOP_OK) {
    pyop__txn_abort(t);
    return rc;
  }
  return pyop__txn_commit(t);
}

static const uint32_t mutated_x[1] = {PYOP_INPUT_MUTATED};
static const int32_t alias_x[1] = {0};

static const opdef op_plain = {"Plain", 1, 1, {IOV("x", PYOP_IO_REQUIRED)},
                               {IOV("y", PYOP_IO_REQUIRED)}, NULL, NULL, false};
static const opdef op_none = {"NoOut", 1, 0, {IOV("x", PYOP_IO_REQUIRED)}, {{0}}, NULL, NULL,
                              false};
static const opdef op_split = {"Split", 1, 2, {IOV("x", PYOP_IO_REQUIRED)},
                               {IOV("ys", PYOP_IO_DYNAMIC), IOV("last", PYOP_IO_REQUIRED)},
                               NULL, NULL, false};
static const opdef op_inplace = {"Inplace", 1, 1, {IOV("x", PYOP_IO_REQUIRED)},
                                 {IOV("x", PYOP_IO_REQUIRED)}, mutated_x, alias_x, false};
static const opdef op_const = {"Const", 1, 1, {IOV("x", PYOP_IO_REQUIRED)},
                               {IOV("y", PYOP_IO_REQUIRED)}, NULL, NULL, true};

/* ---------------------------------------------------------- host side */

static float xbuf[3] = {1, 2, 3};
static pyop_tensor xt;
static pyop_tensor_list xin;

static void *allocs[16];
static size_t n_allocs;

static int host_alloc(void *user, size_t index, pyop_tensor *t) {
  (void)user;
  (void)index;
  assert_true(n_allocs < 16);
  t->data = allocs[n_allocs++] = calloc(1, t->nbytes ? t->nbytes : 1);
  return 0;
}

/* host_alloc giving 64 bytes more than asked; asked_nbytes is what it was
 * asked for. */
static uint64_t asked_nbytes;
static int roomy_alloc(void *user, size_t index, pyop_tensor *t) {
  (void)user;
  (void)index;
  assert_true(n_allocs < 16);
  asked_nbytes = t->nbytes;
  t->nbytes += 64;
  t->data = allocs[n_allocs++] = calloc(1, (size_t)t->nbytes);
  return 0;
}

static void free_allocs(void) {
  for (size_t i = 0; i < n_allocs; i++) free(allocs[i]);
  n_allocs = 0;
}

static pyop_op *make(const char *op_type, int64_t mode, int64_t n) {
  pyop_attr at[2] = {{"mode", {.type = PYOP_ATTR_INT, .u.i = mode}},
                     {"n", {.type = PYOP_ATTR_INT, .u.i = n}}};
  pyop_op *op = NULL;
  assert_int_equal(pyop_op_create(op_type, at, 2, &op), PYOP_OK);
  return op;
}

static int setup(void **state) {
  (void)state;
  if (pyop__registry_clear() != PYOP_OK) return -1;
  xt = (pyop_tensor){xbuf, PYOP_DTYPE_FLOAT32, 0, 1, 0, {3}, sizeof xbuf};
  xin = (pyop_tensor_list){&xt, 1};
  xbuf[0] = 1, xbuf[1] = 2, xbuf[2] = 3;
  const opdef *all[] = {&op_plain, &op_none, &op_split, &op_inplace, &op_const};
  for (size_t i = 0; i < 5; i++)
    if (reg(all[i], sizeof(pyop_proto_view)) != PYOP_OK) return -1;
  return 0;
}

static int teardown(void **state) {
  (void)state;
  free_allocs();
  assert_int_equal(holders_alive, 0);
  assert_int_equal(pyop__registry_live_instances(), 0);
  return pyop__registry_clear() == PYOP_OK ? 0 : -1;
}

/* ------------------------------------------------------------- tests */

static void test_unproduced_output(void **state) {
  (void)state;
  pyop_op *op = make("Plain", X_NOTHING, 2);
  pyop_exec_ctx ctx = PYOP_EXEC_CTX_INIT;
  ctx.alloc_output = host_alloc;
  pyop_tensor y;
  memset(&y, 0, sizeof y);
  assert_int_equal(pyop_op_execute(op, &xin, 1, &y, 1, &ctx), PYOP_ECONTRACT);
  assert_msg_has("execute of \"Plain\" (contract.py:9) returned without producing output 0 \"y\"");
  assert_string_equal(pyop_status_name(PYOP_ECONTRACT), "PYOP_ECONTRACT");
  assert_string_equal(pyop_strerror(PYOP_ECONTRACT), "the operator broke its contract");
  /* Host-allocated outputs: the same rule. */
  float ybuf[3];
  pyop_tensor pre = {ybuf, PYOP_DTYPE_FLOAT32, 0, 1, 0, {3}, sizeof ybuf};
  pyop_exec_ctx noalloc = PYOP_EXEC_CTX_INIT;
  assert_int_equal(pyop_op_execute(op, &xin, 1, &pre, 1, &noalloc), PYOP_ECONTRACT);
  pyop_op_destroy(op);
  /* A correct op with a host that states nothing: PYOP_OK as before. */
  op = make("Plain", X_OK, 2);
  assert_int_equal(pyop_op_execute(op, &xin, 1, &y, 1, &ctx), PYOP_OK);
  assert_non_null(y.data);
  pyop_op_destroy(op);
  /* An op that swallows a failed request and returns normally. */
  op = make("Plain", X_CATCH, 2);
  ctx.flags = PYOP_EXEC_EXPECT_OUTPUTS;
  y = (pyop_tensor){NULL, PYOP_DTYPE_FLOAT64, 0, 1, 0, {3}, 0};
  assert_int_equal(pyop_op_execute(op, &xin, 1, &y, 1, &ctx), PYOP_ECONTRACT);
  assert_msg_has("\n(alloc_output failed; the op caught it and returned normally)");
  assert_null(y.data); /* the refused request allocated nothing */
  pyop_op_destroy(op);
}

/* The host's stream reaches the op's execute, on every path (plain, the
 * host's expectations, strict mode, more outputs than the stack holds)
 * (dataflow pass, session 13: the stream dropped on the way). */
static void test_stream_passed(void **state) {
  (void)state;
  int s1, s2;
  pyop_op *op = make("Plain", X_OK, 2);
  pyop_exec_ctx ctx = PYOP_EXEC_CTX_INIT;
  ctx.alloc_output = host_alloc;
  ctx.stream = &s1;
  pyop_tensor y;
  memset(&y, 0, sizeof y);
  seen_stream = NULL;
  assert_int_equal(pyop_op_execute(op, &xin, 1, &y, 1, &ctx), PYOP_OK);
  assert_ptr_equal(seen_stream, &s1);
  ctx.stream = &s2;
  ctx.flags = PYOP_EXEC_EXPECT_OUTPUTS;
  y = (pyop_tensor){NULL, PYOP_DTYPE_FLOAT32, 0, 1, 0, {3}, 0};
  assert_int_equal(pyop_op_execute(op, &xin, 1, &y, 1, &ctx), PYOP_OK);
  assert_ptr_equal(seen_stream, &s2);
  /* No stream: NULL, not the last one. */
  ctx.stream = NULL;
  ctx.flags = 0;
  assert_int_equal(pyop_op_execute(op, &xin, 1, &y, 1, &ctx), PYOP_OK);
  assert_null(seen_stream);
  pyop_op_destroy(op);
}

/* A host buffer larger than needed: the output (what the host gets back)
 * is the host's buffer, its nbytes the host's, with the shape and dtype
 * the op asked for (dataflow pass, session 13: nbytes replaced by what the
 * shape needs). */
static void test_host_buffer_kept(void **state) {
  (void)state;
  pyop_op *op = make("Plain", X_OK, 2);
  pyop_exec_ctx ctx = PYOP_EXEC_CTX_INIT;
  ctx.alloc_output = roomy_alloc;
  pyop_tensor y;
  memset(&y, 0, sizeof y);
  asked_nbytes = 0;
  assert_int_equal(pyop_op_execute(op, &xin, 1, &y, 1, &ctx), PYOP_OK);
  assert_int_equal(asked_nbytes, 12); /* float32[3] */
  assert_ptr_equal(y.data, allocs[n_allocs - 1]);
  assert_int_equal(y.nbytes, 12 + 64);
  assert_int_equal(y.dtype, PYOP_DTYPE_FLOAT32);
  assert_int_equal(y.ndim, 1);
  assert_int_equal(y.shape[0], 3);
  pyop_op_destroy(op);
}

static void test_expectations(void **state) {
  (void)state;
  pyop_op *op = make("Plain", X_WRONG, 2);
  pyop_exec_ctx ctx = PYOP_EXEC_CTX_INIT;
  ctx.alloc_output = host_alloc;
  pyop_tensor y;
  /* Nothing stated: the op's freedom for shapes stays. */
  assert_int_equal(pyop_op_execute(op, &xin, 1, &y, 1, &ctx), PYOP_OK);
  assert_int_equal(y.dtype, PYOP_DTYPE_FLOAT16);
  /* Stated (infer_meta's description): the same request fails. */
  assert_int_equal(pyop_op_infer_meta(op, &xin, 1, &y, 1), PYOP_OK);
  ctx.flags = PYOP_EXEC_EXPECT_OUTPUTS;
  size_t before = n_allocs;
  assert_int_equal(pyop_op_execute(op, &xin, 1, &y, 1, &ctx), PYOP_ECONTRACT);
  assert_msg_has("execute of \"Plain\" (contract.py:9): output 0 \"y\": the host expected "
                 "float32[3], the op asked for float16[6]");
  assert_int_equal(n_allocs, before); /* nothing allocated for a wrong request */
  pyop_op_destroy(op);
  /* A correct op meets them. */
  op = make("Plain", X_OK, 2);
  assert_int_equal(pyop_op_infer_meta(op, &xin, 1, &y, 1), PYOP_OK);
  assert_int_equal(pyop_op_execute(op, &xin, 1, &y, 1, &ctx), PYOP_OK);
  assert_int_equal(y.dtype, PYOP_DTYPE_FLOAT32);
  assert_non_null(y.data);
  /* The format is part of what is stated: the same dtype and shape in
   * another format than the host expects is another output. */
  y.format = PYOP_FORMAT_NCHW;
  y.data = NULL;
  before = n_allocs;
  assert_int_equal(pyop_op_execute(op, &xin, 1, &y, 1, &ctx), PYOP_ECONTRACT);
  assert_int_equal(n_allocs, before);
  y.format = PYOP_FORMAT_ND;
  assert_int_equal(pyop_op_execute(op, &xin, 1, &y, 1, &ctx), PYOP_OK);
  /* An old host's smaller exec ctx has no flags: nothing expected. */
  pyop_exec_ctx old = ctx;
  old.struct_size = offsetof(pyop_exec_ctx, flags);
  y.dtype = PYOP_DTYPE_INT8;
  assert_int_equal(pyop_op_execute(op, &xin, 1, &y, 1, &old), PYOP_OK);
  pyop_op_destroy(op);
}

/* A stated output is compared dimension by dimension: a host expecting
 * float32[2,3] gets the op's float32[2,3], and one expecting float32[2,2]
 * refuses it, nothing allocated (batch 19 survivor, session 15: every
 * dimension compared with the first). */
static void test_expectations_every_dim(void **state) {
  (void)state;
  float buf6[6] = {1, 2, 3, 4, 5, 6};
  pyop_tensor x2 = {buf6, PYOP_DTYPE_FLOAT32, 0, 2, 0, {2, 3}, sizeof buf6};
  pyop_tensor_list in2 = {&x2, 1};
  pyop_op *op = make("Plain", X_OK, 2);
  pyop_exec_ctx ctx = PYOP_EXEC_CTX_INIT;
  ctx.alloc_output = host_alloc;
  ctx.flags = PYOP_EXEC_EXPECT_OUTPUTS;
  pyop_tensor y = {NULL, PYOP_DTYPE_FLOAT32, 0, 2, 0, {2, 3}, 0};
  if (pyop_op_execute(op, &in2, 1, &y, 1, &ctx) != PYOP_OK) fail_msg("%s", pyop_last_error());
  assert_non_null(y.data);
  assert_int_equal(y.ndim, 2);
  assert_int_equal(y.shape[0], 2);
  assert_int_equal(y.shape[1], 3);
  y = (pyop_tensor){NULL, PYOP_DTYPE_FLOAT32, 0, 2, 0, {2, 2}, 0};
  size_t before = n_allocs;
  assert_int_equal(pyop_op_execute(op, &in2, 1, &y, 1, &ctx), PYOP_ECONTRACT);
  assert_msg_has("output 0 \"y\": the host expected float32[2,2], the op asked for "
                 "float32[2,3]");
  assert_int_equal(n_allocs, before);
  assert_null(y.data);
  pyop_op_destroy(op);
}

/* An older host's exec context ends before flags: in strict mode the
 * expectation is infer_meta's, and the message says so whatever lies where
 * flags would be (both-sides pass, session 14). */
static void test_strict_mode_old_ctx(void **state) {
  (void)state;
  assert_int_equal(setenv("PYOP_STRICT_OUTPUTS", "1", 1), 0);
  assert_int_equal(unsetenv("ASCEND_CUSTOM_OPP_PATH"), 0);
  assert_int_equal(pyop_load(), PYOP_OK); /* nothing to load; reads the variable */
  pyop_op *op = make("Plain", X_WRONG, 2);
  pyop_exec_ctx ctx = PYOP_EXEC_CTX_INIT;
  ctx.alloc_output = host_alloc;
  ctx.struct_size = offsetof(pyop_exec_ctx, flags);
  ctx.flags = PYOP_EXEC_EXPECT_OUTPUTS; /* past struct_size: not the host's */
  pyop_tensor y;
  assert_int_equal(pyop_op_execute(op, &xin, 1, &y, 1, &ctx), PYOP_ECONTRACT);
  assert_msg_has("output 0 \"y\": infer_meta (contract.py:3) expected float32[3], the op "
                 "asked for float16[6]");
  pyop_op_destroy(op);
  assert_int_equal(unsetenv("PYOP_STRICT_OUTPUTS"), 0);
  assert_int_equal(pyop_load(), PYOP_OK);
}

static void test_strict_mode(void **state) {
  (void)state;
  assert_int_equal(setenv("PYOP_STRICT_OUTPUTS", "1", 1), 0);
  assert_int_equal(unsetenv("ASCEND_CUSTOM_OPP_PATH"), 0);
  assert_int_equal(pyop_load(), PYOP_OK); /* nothing to load; reads the variable */
  pyop_op *op = make("Plain", X_WRONG, 2);
  pyop_exec_ctx ctx = PYOP_EXEC_CTX_INIT;
  ctx.alloc_output = host_alloc;
  pyop_tensor y;
  assert_int_equal(pyop_op_execute(op, &xin, 1, &y, 1, &ctx), PYOP_ECONTRACT);
  /* Strict mode's expectation is infer_meta's, and the message says whose. */
  assert_msg_has("output 0 \"y\": infer_meta (contract.py:3) expected float32[3], the op "
                 "asked for float16[6]");
  pyop_op_destroy(op);
  pyop_output_list l = {&y, 1, 0};
  op = make("Plain", X_WRONG, 2);
  assert_int_equal(pyop_op_execute_list(op, &xin, 1, &l, 1, &ctx), PYOP_ECONTRACT);
  /* Strict mode describes the outputs first, in room for every capacity:
   * capacities whose room would not fit memory are refused, never wrapped
   * into a small allocation. */
  pyop_output_list huge = {&y, SIZE_MAX / 2, 0};
  assert_int_equal(pyop_op_execute_list(op, &xin, 1, &huge, 1, &ctx), PYOP_EINVAL);
  assert_msg_has("execute of \"Plain\": the output lists' capacities add up to more than "
                 "memory can hold");
  pyop_op_destroy(op);
  assert_int_equal(unsetenv("PYOP_STRICT_OUTPUTS"), 0);
  assert_int_equal(pyop_load(), PYOP_OK);
  op = make("Plain", X_WRONG, 2);
  assert_int_equal(pyop_op_execute(op, &xin, 1, &y, 1, &ctx), PYOP_OK);
  pyop_op_destroy(op);
  /* The option does the same. */
  pyop_options o = PYOP_OPTIONS_INIT;
  o.strict_outputs = true;
  assert_int_equal(pyop_set_options(&o), PYOP_OK);
  assert_int_equal(pyop_load(), PYOP_OK);
  op = make("Plain", X_WRONG, 2);
  assert_int_equal(pyop_op_execute(op, &xin, 1, &y, 1, &ctx), PYOP_ECONTRACT);
  pyop_op_destroy(op);
  o.strict_outputs = false;
  assert_int_equal(pyop_set_options(&o), PYOP_OK);
  assert_int_equal(pyop_load(), PYOP_OK);
}

/*
 * Strict mode with a dynamic output (the list form): the expectation is the
 * count infer_meta returned, not the room the host gave (room for four,
 * three made: fine); with less room than infer_meta's count the execute is
 * refused before the op runs (configuration pass, src.cf.execute.*).
 */
static void test_strict_mode_dynamic(void **state) {
  (void)state;
  assert_int_equal(unsetenv("PYOP_STRICT_OUTPUTS"), 0);
  assert_int_equal(unsetenv("ASCEND_CUSTOM_OPP_PATH"), 0);
  pyop_options o = PYOP_OPTIONS_INIT;
  o.strict_outputs = true;
  assert_int_equal(pyop_set_options(&o), PYOP_OK);
  assert_int_equal(pyop_load(), PYOP_OK);
  pyop_op *op = make("Split", X_OK, 3);
  pyop_exec_ctx ctx = PYOP_EXEC_CTX_INIT;
  ctx.alloc_output = host_alloc;
  pyop_tensor ys[4], last;
  pyop_output_list l[2] = {{ys, 4, 0}, {&last, 1, 0}};
  if (pyop_op_execute_list(op, &xin, 1, l, 2, &ctx) != PYOP_OK)
    fail_msg("strict, room for 4, 3 made: %s", pyop_last_error());
  assert_int_equal(l[0].count, 3);
  assert_int_equal(l[1].count, 1);
  assert_true(((float *)ys[2].data)[0] == 2.0f);
  assert_non_null(last.data);
  free_allocs();
  pyop_op_destroy(op);
  /* Each output's expectations are its own: "last" of shape [1] beside
   * three "ys" of shape [3] (dataflow pass, session 13: the lists laid
   * over one another, the last output's description read as ys[0]'s). */
  op = make("Split", X_LAST_SHORT, 3);
  if (pyop_op_execute_list(op, &xin, 1, l, 2, &ctx) != PYOP_OK)
    fail_msg("strict, last of shape [1]: %s", pyop_last_error());
  assert_int_equal(l[0].count, 3);
  assert_int_equal(ys[0].shape[0], 3);
  assert_int_equal(last.shape[0], 1);
  free_allocs();
  /* Room for two of infer_meta's three: refused, the op not run. */
  l[0].capacity = 2;
  assert_int_equal(pyop_op_execute_list(op, &xin, 1, l, 2, &ctx), PYOP_EINVAL);
  assert_msg_has("execute of \"Split\" (strict outputs: infer_meta first): infer_meta of "
                 "\"Split\": output 0 \"ys\" has 3 tensors, room was given for 2");
  assert_int_equal(n_allocs, 0);
  pyop_op_destroy(op);
  o.strict_outputs = false;
  assert_int_equal(pyop_set_options(&o), PYOP_OK);
  assert_int_equal(pyop_load(), PYOP_OK);
}

/* pyop_op_execute_list under a canary: pad, below the callers' frames and
 * above libpyop's, filled with 0xA5; returns the execute's status and sets
 * *clobbered to the number of pad bytes it changed. */
static __attribute__((noinline)) int execute_under_canary(pyop_op *op, pyop_output_list *l,
                                                          size_t n, pyop_exec_ctx *ctx,
                                                          size_t *clobbered) {
  unsigned char pad[1u << 18];
  memset(pad, 0xA5, sizeof pad);
  __asm__ volatile("" : : "r"(pad) : "memory");
  int rc = pyop_op_execute_list(op, &xin, 1, l, n, ctx);
  __asm__ volatile("" : : "r"(pad) : "memory");
  *clobbered = 0;
  for (size_t i = 0; i < sizeof pad; i++) *clobbered += pad[i] != 0xA5;
  return rc;
}

/*
 * Strict mode, two outputs whose room adds up to more than the 16
 * descriptions kept on the stack (600 + 1): infer_meta's descriptions go
 * in a block of their own (blind batch 20: the stack's array given, the
 * last output's description written 600 places past its end, into the
 * callers' frames); the execute succeeds, each output as infer_meta said,
 * and nothing outside libpyop's own memory is written.
 */
static void test_strict_mode_room_past_stack(void **state) {
  (void)state;
  assert_int_equal(unsetenv("PYOP_STRICT_OUTPUTS"), 0);
  assert_int_equal(unsetenv("ASCEND_CUSTOM_OPP_PATH"), 0);
  pyop_options o = PYOP_OPTIONS_INIT;
  o.strict_outputs = true;
  assert_int_equal(pyop_set_options(&o), PYOP_OK);
  assert_int_equal(pyop_load(), PYOP_OK);
  pyop_op *op = make("Split", X_LAST_SHORT, 3);
  pyop_exec_ctx ctx = PYOP_EXEC_CTX_INIT;
  ctx.alloc_output = host_alloc;
  enum { ROOM = 600 };
  pyop_tensor *ys = calloc(ROOM, sizeof *ys);
  assert_non_null(ys);
  pyop_tensor last;
  memset(&last, 0, sizeof last);
  pyop_output_list l[2] = {{ys, ROOM, 0}, {&last, 1, 0}};
  size_t clobbered = 0;
  if (execute_under_canary(op, l, 2, &ctx, &clobbered) != PYOP_OK)
    fail_msg("strict, room for %d and 1: %s", ROOM, pyop_last_error());
  if (clobbered)
    fail_msg("strict, room for %d and 1: %zu bytes of the callers' stack written", ROOM,
             clobbered);
  assert_int_equal(l[0].count, 3);
  assert_int_equal(l[1].count, 1);
  assert_int_equal(ys[0].shape[0], 3);
  assert_int_equal(last.shape[0], 1);
  assert_non_null(last.data);
  free_allocs();
  free(ys);
  pyop_op_destroy(op);
  o.strict_outputs = false;
  assert_int_equal(pyop_set_options(&o), PYOP_OK);
  assert_int_equal(pyop_load(), PYOP_OK);
}

/* PYOP_STRICT_OUTPUTS set to "0" or to "" leaves strict mode off; any other
 * value turns it on (read by pyop_load). */
static void test_strict_env_values(void **state) {
  (void)state;
  assert_int_equal(unsetenv("ASCEND_CUSTOM_OPP_PATH"), 0);
  pyop_exec_ctx ctx = PYOP_EXEC_CTX_INIT;
  ctx.alloc_output = host_alloc;
  pyop_tensor y;
  const char *values[] = {"0", "", "yes"};
  const int want[] = {PYOP_OK, PYOP_OK, PYOP_ECONTRACT};
  for (int i = 0; i < 3; i++) {
    assert_int_equal(setenv("PYOP_STRICT_OUTPUTS", values[i], 1), 0);
    assert_int_equal(pyop_load(), PYOP_OK);
    pyop_op *op = make("Plain", X_WRONG, 2);
    int rc = pyop_op_execute(op, &xin, 1, &y, 1, &ctx);
    if (rc != want[i])
      fail_msg("PYOP_STRICT_OUTPUTS=\"%s\": %s, expected %s", values[i], pyop_status_name(rc),
               pyop_status_name(want[i]));
    pyop_op_destroy(op);
  }
  assert_int_equal(unsetenv("PYOP_STRICT_OUTPUTS"), 0);
  assert_int_equal(pyop_load(), PYOP_OK);
}

static void test_no_outputs(void **state) {
  (void)state;
  const pyop_op_info *info;
  assert_int_equal(pyop_op_get("NoOut", &info), PYOP_OK);
  assert_int_equal(info->n_outputs, 0);
  pyop_op_info_release(info);
  pyop_op *op = make("NoOut", X_OK, 2);
  assert_int_equal(pyop_op_infer_meta(op, &xin, 1, NULL, 0), PYOP_OK);
  pyop_exec_ctx ctx = PYOP_EXEC_CTX_INIT;
  assert_int_equal(pyop_op_execute(op, &xin, 1, NULL, 0, &ctx), PYOP_OK);
  assert_int_equal(pyop_op_execute_list(op, &xin, 1, NULL, 0, &ctx), PYOP_OK);
  pyop_tensor y;
  assert_int_equal(pyop_op_execute(op, &xin, 1, &y, 1, &ctx), PYOP_EINVAL);
  assert_msg_has("1 output given, the op has 0"); /* one, not "1 outputs" (issue 26.9) */
  pyop_op_destroy(op);
}

static void test_dynamic_outputs(void **state) {
  (void)state;
  const pyop_op_info *info;
  assert_int_equal(pyop_op_get("Split", &info), PYOP_OK);
  assert_int_equal(info->outputs[0].kind, PYOP_IO_DYNAMIC);
  pyop_op_info_release(info);
  pyop_op *op = make("Split", X_OK, 3);
  pyop_tensor t2[2];
  assert_int_equal(pyop_op_infer_meta(op, &xin, 1, t2, 2), PYOP_EINVAL);
  assert_msg_has("output 0 \"ys\" is dynamic (a list of tensors): use pyop_op_infer_meta_list");
  pyop_exec_ctx ctx = PYOP_EXEC_CTX_INIT;
  ctx.alloc_output = host_alloc;
  assert_int_equal(pyop_op_execute(op, &xin, 1, t2, 2, &ctx), PYOP_EINVAL);
  assert_msg_has("use pyop_op_execute_list");
  /* Counts: too little room reports what is needed. */
  pyop_tensor ys[4], last;
  pyop_output_list l[2] = {{ys, 1, 0}, {&last, 1, 0}};
  assert_int_equal(pyop_op_infer_meta_list(op, &xin, 1, l, 2), PYOP_EINVAL);
  assert_msg_has("output 0 \"ys\" has 3 tensors, room was given for 1");
  assert_int_equal(l[0].count, 3);
  assert_int_equal(l[1].count, 1);
  /* Both outputs short of room: the error names the first of them, and
   * every count is set. */
  pyop_output_list none[2] = {{ys, 1, 0}, {NULL, 0, 0}};
  assert_int_equal(pyop_op_infer_meta_list(op, &xin, 1, none, 2), PYOP_EINVAL);
  assert_msg_has("output 0 \"ys\" has 3 tensors, room was given for 1");
  assert_int_equal(none[0].count, 3);
  assert_int_equal(none[1].count, 1);
  l[0].capacity = 4;
  assert_int_equal(pyop_op_infer_meta_list(op, &xin, 1, l, 2), PYOP_OK);
  assert_int_equal(l[0].count, 3);
  assert_int_equal(ys[2].dtype, PYOP_DTYPE_FLOAT32);
  assert_null(ys[2].data);
  assert_int_equal(ys[2].nbytes, 12);
  /* Execute into the lists, holding it to what infer_meta said. */
  ctx.flags = PYOP_EXEC_EXPECT_OUTPUTS;
  assert_int_equal(pyop_op_execute_list(op, &xin, 1, l, 2, &ctx), PYOP_OK);
  assert_int_equal(l[0].count, 3);
  assert_int_equal(l[1].count, 1);
  assert_true(((float *)ys[2].data)[1] == 2.0f);
  assert_non_null(last.data);
  /* Expecting two: the third tensor breaks the contract. */
  l[0].count = 2;
  assert_int_equal(pyop_op_execute_list(op, &xin, 1, l, 2, &ctx), PYOP_ECONTRACT);
  assert_msg_has("dynamic output 0 \"ys\": the op asked for tensor 2 (float32[3]), 2 were expected");
  /* Expecting four: returning with three breaks it too. */
  l[0].count = 4;
  l[1].count = 1;
  for (int k = 0; k < 4; k++) ys[k] = xt;
  last = xt;
  assert_int_equal(pyop_op_execute_list(op, &xin, 1, l, 2, &ctx), PYOP_ECONTRACT);
  assert_msg_has("returned with 3 tensors in dynamic output 0 \"ys\", 4 were expected");
  /* No room for the third without expectations: the host's limit. */
  ctx.flags = 0;
  l[0].capacity = 2;
  assert_int_equal(pyop_op_execute_list(op, &xin, 1, l, 2, &ctx), PYOP_EINVAL);
  assert_msg_has("tensor 2 requested, the host gave room for 2");
  pyop_op_destroy(op);
  /* As many dynamic tensors as the op has outputs, the required one never
   * produced: the contract still holds it to that one. */
  op = make("Split", X_NO_LAST, 2);
  l[0].capacity = 2;
  assert_int_equal(pyop_op_execute_list(op, &xin, 1, l, 2, &ctx), PYOP_ECONTRACT);
  assert_msg_has("returned without producing output 1 \"last\"");
  assert_int_equal(l[0].count, 2);
  assert_int_equal(l[1].count, 0); /* nothing written to the host's output */
  pyop_op_destroy(op);
  /* Zero tensors is a valid dynamic output. */
  op = make("Split", X_OK, 0);
  l[0].capacity = 0;
  assert_int_equal(pyop_op_execute_list(op, &xin, 1, l, 2, &ctx), PYOP_OK);
  assert_int_equal(l[0].count, 0);
  pyop_op_destroy(op);
}

/*
 * infer_meta_list checks the LAST output's description too, a required one
 * after a dynamic one: left unset or with a negative dim, the call fails
 * naming it; valid, its data is cleared (the input's pointer infer_meta
 * copied) and its nbytes computed (batch 18 survivor, session 15:
 * src.b18.execute.list_last_output_unchecked).
 */
static void test_infer_list_last_output_checked(void **state) {
  (void)state;
  pyop_tensor ys[2], last;
  pyop_output_list l[2] = {{ys, 2, 0}, {&last, 1, 0}};
  pyop_op *op = make("Split", X_LAST_UNSET, 2);
  assert_int_equal(pyop_op_infer_meta_list(op, &xin, 1, l, 2), PYOP_EDESCRIPTOR);
  assert_msg_has("infer_meta of \"Split\" (contract.py:3) produced an invalid output 1 "
                 "\"last\" (");
  assert_msg_has("): not set");
  assert_null(strstr(pyop_last_error(), "tensor 0")); /* a required output: no index */
  pyop_op_destroy(op);
  op = make("Split", X_LAST_NEG, 2);
  assert_int_equal(pyop_op_infer_meta_list(op, &xin, 1, l, 2), PYOP_EDESCRIPTOR);
  assert_msg_has("produced an invalid output 1 \"last\" (");
  pyop_op_destroy(op);
  op = make("Split", X_OK, 2);
  last.nbytes = 7;
  assert_int_equal(pyop_op_infer_meta_list(op, &xin, 1, l, 2), PYOP_OK);
  assert_int_equal(l[1].count, 1);
  assert_int_equal(last.dtype, PYOP_DTYPE_FLOAT32);
  assert_int_equal(last.shape[0], 3);
  assert_null(last.data); /* infer_meta gave x's buffer: cleared */
  assert_int_equal(last.nbytes, 12);
  pyop_op_destroy(op);
}

/* The list calls' argument checks, each for infer_meta_list, execute_list
 * and infer_meta_expect: the output count the op has (one fewer and one
 * more refused), outputs NULL, a capacity without items; an input slot
 * array NULL or a slot's items NULL. Nothing is written to the host's
 * lists when refused. */
static void test_list_args_refused(void **state) {
  (void)state;
  pyop_op *op = make("Split", X_OK, 2);
  pyop_exec_ctx ctx = PYOP_EXEC_CTX_INIT;
  ctx.alloc_output = host_alloc;
  pyop_tensor ys[2], last;
  pyop_output_list l[3] = {{ys, 2, 7}, {&last, 1, 7}, {&last, 1, 7}};
  for (size_t n = 1; n <= 3; n += 2) {
    char want[64];
    snprintf(want, sizeof want, "%zu output%s given, the op has 2", n, n == 1 ? "" : "s");
    assert_int_equal(pyop_op_infer_meta_list(op, &xin, 1, l, n), PYOP_EINVAL);
    assert_msg_has(want);
    assert_int_equal(pyop_op_execute_list(op, &xin, 1, l, n, &ctx), PYOP_EINVAL);
    assert_msg_has(want);
    assert_int_equal(pyop_op_infer_meta_expect(op, &xin, 1, l, n), PYOP_EINVAL);
    assert_msg_has(want);
  }
  assert_int_equal(pyop_op_infer_meta_list(op, &xin, 1, NULL, 2), PYOP_EINVAL);
  assert_msg_has("infer_meta of \"Split\": outputs is NULL");
  assert_int_equal(pyop_op_execute_list(op, &xin, 1, NULL, 2, &ctx), PYOP_EINVAL);
  assert_msg_has("execute of \"Split\": outputs is NULL");
  assert_int_equal(pyop_op_infer_meta_expect(op, &xin, 1, NULL, 2), PYOP_EINVAL);
  assert_msg_has("outputs is NULL");
  /* The second list has room but no items: the index names it. */
  l[1].items = NULL;
  assert_int_equal(pyop_op_infer_meta_list(op, &xin, 1, l, 2), PYOP_EINVAL);
  assert_msg_has("output 1 \"last\": capacity 1 but items is NULL");
  assert_int_equal(pyop_op_execute_list(op, &xin, 1, l, 2, &ctx), PYOP_EINVAL);
  assert_msg_has("output 1 \"last\": capacity 1 but items is NULL");
  assert_int_equal(l[0].count, 7); /* untouched */
  assert_int_equal(l[1].count, 7);
  assert_int_equal(n_allocs, 0);
  /* No room and no items is a valid empty list for the dynamic output. */
  l[1].items = &last;
  l[0] = (pyop_output_list){NULL, 0, 0};
  op = (pyop_op_destroy(op), make("Split", X_OK, 0));
  assert_int_equal(pyop_op_infer_meta_list(op, &xin, 1, l, 2), PYOP_OK);
  assert_int_equal(l[0].count, 0);
  assert_int_equal(l[1].count, 1);
  /* Inputs: the slot array NULL, a slot's items NULL. */
  assert_int_equal(pyop_op_infer_meta_list(op, NULL, 1, l, 2), PYOP_EINVAL);
  assert_msg_has("infer_meta of \"Split\": inputs is NULL");
  pyop_tensor_list noitems = {NULL, 1};
  assert_int_equal(pyop_op_execute_list(op, &noitems, 1, l, 2, &ctx), PYOP_EINVAL);
  assert_msg_has("input 0 \"x\": 1 tensor but items is NULL");
  assert_int_equal(n_allocs, 0);
  pyop_op_destroy(op);
}

/* infer_meta_expect: the host's stated instance count of a dynamic output
 * is held against what infer_meta returns; more stated than room is the
 * host's error (one more than the room; the room itself is fine), and a
 * count that also overflowed the room is still a count mismatch. */
static void test_infer_meta_expect_counts(void **state) {
  (void)state;
  pyop_op *op = make("Split", X_OK, 3);
  pyop_tensor ys[4], last;
  pyop_output_list l[2] = {{ys, 4, 3}, {&last, 1, 0}};
  assert_int_equal(pyop_op_infer_meta_expect(op, &xin, 1, l, 2), PYOP_OK);
  assert_int_equal(l[0].count, 3);
  assert_int_equal(l[1].count, 1);
  l[0].count = 2;
  assert_int_equal(pyop_op_infer_meta_expect(op, &xin, 1, l, 2), PYOP_ECONTRACT);
  assert_msg_has("dynamic output 0 \"ys\": instance count mismatch: the host states 2 "
                 "tensors, infer_meta returned 3");
  l[0].count = 5;
  assert_int_equal(pyop_op_infer_meta_expect(op, &xin, 1, l, 2), PYOP_EINVAL);
  assert_msg_has("infer_meta of \"Split\": dynamic output 0 \"ys\": 5 tensors stated, room "
                 "was given for 4");
  l[0].count = 4;
  assert_int_equal(pyop_op_infer_meta_expect(op, &xin, 1, l, 2), PYOP_ECONTRACT);
  assert_msg_has("the host states 4 tensors, infer_meta returned 3");
  /* Room for 2, 2 stated, 3 returned: a mismatch, not the room's EINVAL. */
  l[0] = (pyop_output_list){ys, 2, 2};
  assert_int_equal(pyop_op_infer_meta_expect(op, &xin, 1, l, 2), PYOP_ECONTRACT);
  assert_msg_has("the host states 2 tensors, infer_meta returned 3");
  pyop_op_destroy(op);
}

/* infer_meta_expect reads the count on entry of a dynamic output only: a
 * required output's count is the call's to set (1), whatever the host left
 * in it, above its room included (both-sides pass, session 14). */
static void test_infer_meta_expect_required_count_ignored(void **state) {
  (void)state;
  pyop_op *op = make("Split", X_OK, 3);
  pyop_tensor ys[4], last;
  pyop_output_list l[2] = {{ys, 4, 3}, {&last, 1, 7}};
  int rc = pyop_op_infer_meta_expect(op, &xin, 1, l, 2);
  if (rc != PYOP_OK) fail_msg("a required output's count 7 on entry: %s", pyop_last_error());
  assert_int_equal(l[0].count, 3);
  assert_int_equal(l[1].count, 1);
  assert_int_equal(last.shape[0], 3);
  pyop_op_destroy(op);
}

/* Execute with the host's expectations: a stated count above the room is
 * read as the room (the tensors the host can hold). */
static void test_expect_count_clamped_to_room(void **state) {
  (void)state;
  pyop_op *op = make("Split", X_OK, 2);
  pyop_tensor ys[2], last;
  pyop_output_list l[2] = {{ys, 2, 0}, {&last, 1, 0}};
  assert_int_equal(pyop_op_infer_meta_list(op, &xin, 1, l, 2), PYOP_OK);
  assert_int_equal(l[0].count, 2);
  pyop_exec_ctx ctx = PYOP_EXEC_CTX_INIT;
  ctx.alloc_output = host_alloc;
  ctx.flags = PYOP_EXEC_EXPECT_OUTPUTS;
  l[0].count = 3; /* more than its room of 2 */
  int rc = pyop_op_execute_list(op, &xin, 1, l, 2, &ctx);
  if (rc != PYOP_OK) fail_msg("expected 3 with room for 2: %s", pyop_last_error());
  assert_int_equal(l[0].count, 2);
  pyop_op_destroy(op);
}

static void test_inplace_alias(void **state) {
  (void)state;
  const pyop_op_info *info;
  assert_int_equal(pyop_op_get("Inplace", &info), PYOP_OK);
  assert_true(PYOP_OP_INFO_HAS(info, output_alias));
  assert_non_null(info->input_flags);
  assert_int_equal(info->input_flags[0], PYOP_INPUT_MUTATED);
  assert_int_equal(info->output_alias[0], 0);
  pyop_op_info_release(info);
  assert_int_equal(pyop_op_get("Plain", &info), PYOP_OK);
  assert_null(info->input_flags);
  assert_null(info->output_alias);
  pyop_op_info_release(info);

  pyop_op *op = make("Inplace", X_OK, 2);
  pyop_exec_ctx ctx = PYOP_EXEC_CTX_INIT;
  ctx.alloc_output = host_alloc;
  pyop_tensor y;
  memset(&y, 0, sizeof y);
  assert_int_equal(pyop_op_execute(op, &xin, 1, &y, 1, &ctx), PYOP_OK);
  assert_non_null(seen_flags);
  assert_ptr_equal(y.data, xbuf);
  assert_true(xbuf[2] == 4.0f);
  assert_int_equal(n_allocs, 0);
  /* With expectations, the alias must match them too. */
  assert_int_equal(pyop_op_infer_meta(op, &xin, 1, &y, 1), PYOP_OK);
  ctx.flags = PYOP_EXEC_EXPECT_OUTPUTS;
  assert_int_equal(pyop_op_execute(op, &xin, 1, &y, 1, &ctx), PYOP_OK);
  y.shape[0] = 2;
  assert_int_equal(pyop_op_execute(op, &xin, 1, &y, 1, &ctx), PYOP_ECONTRACT);
  assert_msg_has("expected float32[2], the op asked for float32[3]");
  pyop_op_destroy(op);
  ctx.flags = 0;
  /* Allocating a declared alias breaks the contract. */
  op = make("Inplace", X_ALLOC_ALIAS, 2);
  assert_int_equal(pyop_op_execute(op, &xin, 1, &y, 1, &ctx), PYOP_ECONTRACT);
  assert_msg_has("output 0 \"x\" is declared as the buffer of input 0 \"x\"");
  pyop_op_destroy(op);
  /* Binding one output twice is the op's request made twice: refused, the
   * input bound once. */
  op = make("Inplace", X_ALIAS_TWICE, 2);
  xbuf[0] = 1;
  assert_int_equal(pyop_op_execute(op, &xin, 1, &y, 1, &ctx), PYOP_EINVAL);
  assert_msg_has("output 0 \"x\" requested twice");
  pyop_op_destroy(op);
  /* So does not binding it. */
  op = make("Plain", X_OK, 2); /* its execute never mutates: flags NULL */
  assert_int_equal(pyop_op_execute(op, &xin, 1, &y, 1, &ctx), PYOP_OK);
  assert_null(seen_flags);
  pyop_op_destroy(op);
}

/* alias_output refused: an output index one past the last, an output the
 * prototype declares no alias for, a list without room; the call fails
 * with that status and the host's output is not written. */
static void test_alias_output_refused(void **state) {
  (void)state;
  pyop_exec_ctx ctx = PYOP_EXEC_CTX_INIT;
  ctx.alloc_output = host_alloc;
  pyop_op *op = make("Inplace", X_ALIAS_INDEX, 2);
  pyop_tensor y = {0};
  assert_int_equal(pyop_op_execute(op, &xin, 1, &y, 1, &ctx), PYOP_EINVAL);
  assert_msg_has("execute of \"Inplace\": output index 1 out of range (1 output)");
  assert_null(y.data);
  pyop_op_destroy(op);
  op = make("Plain", X_ALIAS_UNDECLARED, 2);
  assert_int_equal(pyop_op_execute(op, &xin, 1, &y, 1, &ctx), PYOP_ECONTRACT);
  assert_msg_has("execute of \"Plain\": output 0 \"y\" was bound to input 0, but the "
                 "prototype declares no alias for it");
  assert_null(y.data);
  pyop_op_destroy(op);
  op = make("Inplace", X_OK, 2);
  pyop_output_list none = {&y, 0, 0};
  assert_int_equal(pyop_op_execute_list(op, &xin, 1, &none, 1, &ctx), PYOP_EINVAL);
  assert_msg_has("output 0 \"x\": the host gave no room for it");
  assert_int_equal(none.count, 0);
  pyop_output_list one = {&y, 1, 0};
  assert_int_equal(pyop_op_execute_list(op, &xin, 1, &one, 1, &ctx), PYOP_OK);
  assert_int_equal(one.count, 1);
  assert_ptr_equal(y.data, xbuf); /* the input's own buffer */
  assert_int_equal(n_allocs, 0);
  pyop_op_destroy(op);
}

/* An output requested with a rank one past PYOP_MAX_DIMS is refused before
 * the host is asked; at the limit it is allocated. A host alloc_output that
 * returns success without a buffer is the host's failure (PYOP_EHOST). */
static int alloc_nothing(void *user, size_t index, pyop_tensor *t) {
  (void)user;
  (void)index;
  t->data = NULL;
  return 0;
}

static void test_requested_output_checked(void **state) {
  (void)state;
  pyop_exec_ctx ctx = PYOP_EXEC_CTX_INIT;
  ctx.alloc_output = host_alloc;
  pyop_tensor y = {0};
  pyop_op *op = make("Plain", X_BAD_RANK, 2);
  assert_int_equal(pyop_op_execute(op, &xin, 1, &y, 1, &ctx), PYOP_EINVAL);
  /* Its description shows the 8 dims a tensor can have (9 are not read). */
  assert_msg_has("execute of \"Plain\": output 0 \"y\" requested as "
                 "float32[1,1,1,1,1,1,1,3]: ndim out of 0..8");
  assert_int_equal(n_allocs, 0);
  pyop_op_destroy(op);
  op = make("Plain", X_RANK_8, 2);
  assert_int_equal(pyop_op_execute(op, &xin, 1, &y, 1, &ctx), PYOP_OK);
  assert_int_equal(y.ndim, PYOP_MAX_DIMS);
  assert_int_equal(y.nbytes, 3 * sizeof(float));
  assert_int_equal(n_allocs, 1);
  ctx.alloc_output = alloc_nothing;
  memset(&y, 0, sizeof y);
  assert_int_equal(pyop_op_execute(op, &xin, 1, &y, 1, &ctx), PYOP_EHOST);
  assert_msg_has("the host's alloc_output gave output 0 \"y\" (float32[1,1,1,1,1,1,1,3]) no "
                 "buffer");
  assert_null(y.data);
  pyop_op_destroy(op);
}

static void test_alias_not_bound(void **state) {
  (void)state;
  /* Inplace whose execute returns before binding (mode NOTHING). */
  pyop_op *op = make("Inplace", X_NOTHING, 2);
  pyop_exec_ctx ctx = PYOP_EXEC_CTX_INIT;
  ctx.alloc_output = host_alloc;
  pyop_tensor y;
  assert_int_equal(pyop_op_execute(op, &xin, 1, &y, 1, &ctx), PYOP_ECONTRACT);
  assert_msg_has("returned without binding output 0 \"x\" to input 0 \"x\"");
  assert_msg_has("make_output_ref_input(0, 0)");
  pyop_op_destroy(op);
}

static void test_tensor_attr(void **state) {
  (void)state;
  const pyop_op_info *info;
  assert_int_equal(pyop_op_get("Const", &info), PYOP_OK);
  assert_int_equal(info->attrs[2].type, PYOP_ATTR_TENSOR);
  assert_true(info->attrs[2].required);
  assert_string_equal(pyop_attr_type_name(PYOP_ATTR_TENSOR), "Tensor");
  pyop_op_info_release(info);
  pyop_op *op = NULL;
  assert_int_equal(pyop_op_create("Const", NULL, 0, &op), PYOP_EINVAL);
  assert_msg_has("required attribute \"w\" (Tensor) is missing");
  float *w = malloc(3 * sizeof *w);
  w[0] = 10, w[1] = 20, w[2] = 30;
  pyop_tensor wt = {w, PYOP_DTYPE_FLOAT32, 0, 1, 0, {3}, 3 * sizeof *w};
  pyop_attr a = {"w", {.type = PYOP_ATTR_TENSOR, .u.tensor = &wt}};
  wt.nbytes = 8;
  assert_int_equal(pyop_op_create("Const", &a, 1, &op), PYOP_EINVAL);
  assert_msg_has("Tensor attribute \"w\" (float32[3]): nbytes smaller than shape x dtype");
  /* One byte short of its 12 is short too (nothing copied from past it). */
  wt.nbytes = 11;
  assert_int_equal(pyop_op_create("Const", &a, 1, &op), PYOP_EINVAL);
  assert_msg_has("Tensor attribute \"w\" (float32[3]): nbytes smaller than shape x dtype");
  assert_null(op);
  wt.nbytes = 12;
  /* No bytes behind a non-empty shape: refused, nothing read from NULL. */
  wt.data = NULL;
  assert_int_equal(pyop_op_create("Const", &a, 1, &op), PYOP_EINVAL);
  assert_msg_has("Tensor attribute \"w\" (float32[3]): NULL data");
  assert_null(op);
  wt.data = w;
  a.value.u.tensor = NULL;
  assert_int_equal(pyop_op_create("Const", &a, 1, &op), PYOP_EINVAL);
  assert_msg_has("tensor value is NULL");
  a.value.u.tensor = &wt;
  assert_int_equal(pyop_op_create("Const", &a, 1, &op), PYOP_OK);
  /* Copied at create: the host's buffer may go. */
  free(w);
  pyop_exec_ctx ctx = PYOP_EXEC_CTX_INIT;
  ctx.alloc_output = host_alloc;
  pyop_tensor y;
  assert_int_equal(pyop_op_execute(op, &xin, 1, &y, 1, &ctx), PYOP_OK);
  const float *yv = y.data;
  assert_true(yv[0] == 11.0f && yv[1] == 22.0f && yv[2] == 33.0f);
  pyop_op_destroy(op);
}

/* Two Tensor attributes, an int between them: each instance keeps its own
 * copy of both (one slot each: the prototype counts them), the host's
 * buffers may go after create, and execute sees both. */
static void test_two_tensor_attrs(void **state) {
  (void)state;
  pyop_attr_view at[3] = {
      {sizeof(pyop_attr_view), S("w"), PYOP_ATTR_TENSOR, 1, {.type = PYOP_ATTR_TENSOR}},
      {sizeof(pyop_attr_view), S("mode"), PYOP_ATTR_INT, 0, {.type = PYOP_ATTR_INT, .u.i = 0}},
      {sizeof(pyop_attr_view), S("v"), PYOP_ATTR_TENSOR, 1, {.type = PYOP_ATTR_TENSOR}}};
  const opdef *d = &op_const;
  pyop_proto_view p = {sizeof p, S("Const2"), S("test:const2"), S("contract.py"), 3,
                       PYOP_CAP_INFER_META, d->in, d->n_in, d->out, d->n_out, at, 3, NULL,
                       &proto_cbs, NULL, NULL};
  pyop_impl_view i = {sizeof i, S("Const2"), S("test:const2.impl"), S("contract.py"), 9,
                      PYOP_CAP_EXECUTE, NULL, &impl_cbs};
  pyop__txn *t;
  assert_int_equal(pyop__txn_begin(&t), PYOP_OK);
  assert_int_equal(pyop__txn_add_proto(t, &p), PYOP_OK);
  assert_int_equal(pyop__txn_add_impl(t, &i), PYOP_OK);
  assert_int_equal(pyop__txn_commit(t), PYOP_OK);
  float *w = malloc(3 * sizeof *w), *v = malloc(3 * sizeof *v);
  w[0] = 10, w[1] = 20, w[2] = 30;
  v[0] = 100, v[1] = 200, v[2] = 300;
  pyop_tensor wt = {w, PYOP_DTYPE_FLOAT32, 0, 1, 0, {3}, 3 * sizeof *w};
  pyop_tensor vt = {v, PYOP_DTYPE_FLOAT32, 0, 1, 0, {3}, 3 * sizeof *v};
  pyop_attr a[2] = {{"v", {.type = PYOP_ATTR_TENSOR, .u.tensor = &vt}},
                    {"w", {.type = PYOP_ATTR_TENSOR, .u.tensor = &wt}}};
  pyop_op *op1 = NULL, *op2 = NULL;
  assert_int_equal(pyop_op_create("Const2", a, 2, &op1), PYOP_OK);
  v[0] = 1000; /* a second instance copies what the host has now */
  assert_int_equal(pyop_op_create("Const2", a, 2, &op2), PYOP_OK);
  free(w);
  free(v);
  pyop_exec_ctx ctx = PYOP_EXEC_CTX_INIT;
  ctx.alloc_output = host_alloc;
  pyop_tensor y1, y2;
  assert_int_equal(pyop_op_execute(op1, &xin, 1, &y1, 1, &ctx), PYOP_OK);
  assert_int_equal(pyop_op_execute(op2, &xin, 1, &y2, 1, &ctx), PYOP_OK);
  const float *y1v = y1.data, *y2v = y2.data;
  assert_true(y1v[0] == 111.0f && y1v[1] == 222.0f && y1v[2] == 333.0f);
  assert_true(y2v[0] == 1011.0f && y2v[1] == 222.0f && y2v[2] == 333.0f);
  pyop_op_destroy(op1);
  pyop_op_destroy(op2);
}

static void test_descriptor_rules(void **state) {
  (void)state;
  size_t v10 = offsetof(pyop_proto_view, input_flags);
  /* ABI 1.0 views: at least one output, all required, no Tensor attr. */
  opdef d = op_none;
  d.op_type = "Old0";
  assert_int_equal(reg(&d, v10), PYOP_EDESCRIPTOR);
  assert_msg_has("outputs: none (bridge ABI 1.0 needs at least one");
  d = op_split;
  d.op_type = "OldDyn";
  assert_int_equal(reg(&d, v10), PYOP_EDESCRIPTOR);
  assert_msg_has("output 0 \"ys\": kind dynamic needs bridge ABI 1.1");
  d = op_const;
  d.op_type = "OldConst";
  assert_int_equal(reg(&d, v10), PYOP_EDESCRIPTOR);
  assert_msg_has("a Tensor attribute needs bridge ABI 1.1");
  d = op_plain;
  d.op_type = "OldPlain";
  assert_int_equal(reg(&d, v10), PYOP_OK); /* a 1.0 view of a plain op stays valid */
  /* Optional outputs are not a thing. */
  d = op_plain;
  d.op_type = "OptOut";
  d.out[0].kind = PYOP_IO_OPTIONAL;
  assert_int_equal(reg(&d, sizeof(pyop_proto_view)), PYOP_EDESCRIPTOR);
  assert_msg_has("kind optional is not supported for outputs");
  /* Aliases: only of a mutated input, each input once, in range. */
  d = op_inplace;
  d.op_type = "AliasNoMut";
  d.flags = NULL;
  assert_int_equal(reg(&d, sizeof(pyop_proto_view)), PYOP_EDESCRIPTOR);
  assert_msg_has("aliases input \"x\", which is not mutated");
  static const int32_t bad[1] = {4};
  d = op_inplace;
  d.op_type = "AliasRange";
  d.alias = bad;
  assert_int_equal(reg(&d, sizeof(pyop_proto_view)), PYOP_EDESCRIPTOR);
  assert_msg_has("aliases input 4, the op has 1 input");
  /* One past the last input; an input with flags that do not mutate it
   * (the mutation check: only 4 and no flags at all were tried). */
  static const int32_t past[1] = {1};
  d = op_inplace;
  d.op_type = "AliasPast";
  d.alias = past;
  assert_int_equal(reg(&d, sizeof(pyop_proto_view)), PYOP_EDESCRIPTOR);
  assert_msg_has("aliases input 1, the op has 1 input");
  static const uint32_t y_mutated[2] = {0, PYOP_INPUT_MUTATED};
  d = op_inplace;
  d.op_type = "AliasUnmutated";
  d.n_in = 2;
  d.in[1] = (pyop_io_view)IOV("y", PYOP_IO_REQUIRED);
  d.flags = y_mutated;
  assert_int_equal(reg(&d, sizeof(pyop_proto_view)), PYOP_EDESCRIPTOR);
  assert_msg_has("aliases input \"x\", which is not mutated");
  assert_int_equal(pyop_op_get("AliasUnmutated", &(const pyop_op_info *){NULL}), PYOP_ENOENT);
  /* Only a required input can be aliased: an optional one may be absent. */
  static const int32_t alias_y[1] = {1};
  d = op_inplace;
  d.op_type = "AliasOptional";
  d.n_in = 2;
  d.in[1] = (pyop_io_view)IOV("y", PYOP_IO_OPTIONAL);
  d.flags = y_mutated;
  d.alias = alias_y;
  assert_int_equal(reg(&d, sizeof(pyop_proto_view)), PYOP_EDESCRIPTOR);
  assert_msg_has("only a required output can alias a required input (input \"y\" is optional");
  static const uint32_t unknown[1] = {0x10};
  d = op_plain;
  d.op_type = "BadFlags";
  d.flags = unknown;
  assert_int_equal(reg(&d, sizeof(pyop_proto_view)), PYOP_EDESCRIPTOR);
  assert_msg_has("unknown flags 0x10");
  static const int32_t twice[2] = {0, 0};
  d = op_split;
  d.op_type = "AliasTwice";
  d.out[0].kind = PYOP_IO_REQUIRED;
  d.flags = mutated_x;
  d.alias = twice;
  assert_int_equal(reg(&d, sizeof(pyop_proto_view)), PYOP_EDESCRIPTOR);
  assert_msg_has("input \"x\" is already aliased by output 0");
  /* A Tensor attribute cannot have a default (checked on the view). */
  pyop_attr_view at = {sizeof at, S("w"), PYOP_ATTR_TENSOR, 0, {.type = PYOP_ATTR_TENSOR}};
  pyop_io_view in[1] = {IOV("x", PYOP_IO_REQUIRED)};
  pyop_proto_view p = {sizeof p, S("TDefault"), S("k"), S("f.py"), 1, 0, in, 1, NULL, 0,
                       &at, 1, NULL, NULL, NULL, NULL};
  assert_int_equal(pyop__validate_proto_view(&p), PYOP_EDESCRIPTOR);
  assert_msg_has("a Tensor attribute cannot have a default");
  /* Same content includes mutation and aliasing. */
  d = op_inplace;
  d.alias = NULL;
  assert_int_equal(reg(&d, sizeof(pyop_proto_view)), PYOP_ECONFLICT);
  assert_msg_has("output 0 \"x\": aliases input -1 vs 0");
}

/* A dynamic output after a required one makes the op's outputs lists as
 * much as a first one does: the single-tensor calls refuse it, naming it. */
static void test_dynamic_output_not_first(void **state) {
  (void)state;
  opdef d = op_split;
  d.op_type = "SplitLast";
  d.out[0] = (pyop_io_view)IOV("last", PYOP_IO_REQUIRED);
  d.out[1] = (pyop_io_view)IOV("ys", PYOP_IO_DYNAMIC);
  assert_int_equal(reg(&d, sizeof(pyop_proto_view)), PYOP_OK);
  pyop_op *op = make("SplitLast", X_OK, 2);
  pyop_tensor t2[2];
  memset(t2, 0, sizeof t2);
  assert_int_equal(pyop_op_infer_meta(op, &xin, 1, t2, 2), PYOP_EINVAL);
  assert_msg_has("infer_meta of \"SplitLast\": output 1 \"ys\" is dynamic (a list of tensors): "
                 "use pyop_op_infer_meta_list");
  pyop_exec_ctx ctx = PYOP_EXEC_CTX_INIT;
  ctx.alloc_output = host_alloc;
  assert_int_equal(pyop_op_execute(op, &xin, 1, t2, 2, &ctx), PYOP_EINVAL);
  assert_msg_has("output 1 \"ys\" is dynamic (a list of tensors): use pyop_op_execute_list");
  assert_int_equal(n_allocs, 0);
  pyop_op_destroy(op);
}

/* Mutation and aliasing declared on the second input and output only are
 * kept: the op's info and the input_flags execute sees say so. */
static void test_second_input_mutated(void **state) {
  (void)state;
  static const uint32_t b_mutated[2] = {0, PYOP_INPUT_MUTATED};
  static const int32_t alias_b[2] = {-1, 1};
  opdef d = op_split;
  d.op_type = "InplaceB";
  d.n_in = 2;
  d.in[0] = (pyop_io_view)IOV("a", PYOP_IO_REQUIRED);
  d.in[1] = (pyop_io_view)IOV("b", PYOP_IO_REQUIRED);
  d.out[0] = (pyop_io_view)IOV("y", PYOP_IO_REQUIRED);
  d.out[1] = (pyop_io_view)IOV("b", PYOP_IO_REQUIRED);
  d.flags = b_mutated;
  d.alias = alias_b;
  assert_int_equal(reg(&d, sizeof(pyop_proto_view)), PYOP_OK);
  const pyop_op_info *info;
  assert_int_equal(pyop_op_get("InplaceB", &info), PYOP_OK);
  assert_true(PYOP_OP_INFO_HAS(info, output_alias));
  assert_non_null(info->input_flags);
  assert_int_equal(info->input_flags[0], 0);
  assert_int_equal(info->input_flags[1], PYOP_INPUT_MUTATED);
  assert_non_null(info->output_alias);
  assert_int_equal(info->output_alias[0], -1);
  assert_int_equal(info->output_alias[1], 1);
  pyop_op_info_release(info);
}

/* ------------------------------------- more outputs than the stack's 16 */

/* "Many"(x) -> y0 .. y69: execute fills output k with k (every element);
 * attribute n picks the output the faulty modes get wrong: X_NO_LAST
 * skips it, X_ALIAS_TWICE asks for it twice, X_WRONG asks for it as
 * float16[6]. infer_meta describes every output as x. */
#define MANY 70
static int many_infer(void *hv, const pyop_infer_args *a) {
  (void)hv;
  for (size_t k = 0; k < a->n_outputs; k++) a->outputs[k] = a->inputs[0].items[0];
  return PYOP_OK;
}
static int many_execute(void *hv, const pyop_exec_args *a) {
  holder *h = hv;
  const pyop_exec_services *svc = a->services;
  for (size_t k = 0; k < a->n_outputs; k++) {
    if (h->mode == X_NO_LAST && (int64_t)k == h->n) continue;
    pyop_tensor o = a->inputs[0].items[0];
    o.data = NULL;
    if (h->mode == X_WRONG && (int64_t)k == h->n) {
      o.dtype = PYOP_DTYPE_FLOAT16;
      o.shape[0] = 6;
    }
    int rc = svc->alloc_output(svc->ctx, k, &o);
    if (rc == PYOP_OK && h->mode == X_ALIAS_TWICE && (int64_t)k == h->n)
      rc = svc->alloc_output(svc->ctx, k, &o);
    if (rc != PYOP_OK) return rc;
    for (int64_t i = 0; i < pyop_tensor_numel(&o); i++) ((float *)o.data)[i] = (float)k;
  }
  return PYOP_OK;
}
static const pyop_op_callbacks many_proto_cbs = {sizeof(pyop_op_callbacks), create, destroy,
                                                 many_infer, NULL, NULL, NULL};
static const pyop_op_callbacks many_impl_cbs = {sizeof(pyop_op_callbacks), create, destroy,
                                                NULL, many_execute, NULL, NULL};

static void reg_many(void) {
  static char names[MANY][8];
  pyop_io_view out[MANY];
  for (int k = 0; k < MANY; k++) {
    snprintf(names[k], sizeof names[k], "y%d", k);
    out[k] = (pyop_io_view){sizeof(pyop_io_view), S(names[k]), PYOP_IO_REQUIRED};
  }
  pyop_io_view in[1] = {IOV("x", PYOP_IO_REQUIRED)};
  pyop_attr_view at[2];
  memset(at, 0, sizeof at);
  at[0] = (pyop_attr_view){sizeof(pyop_attr_view), S("mode"), PYOP_ATTR_INT, 0,
                           {.type = PYOP_ATTR_INT, .u.i = 0}};
  at[1] = (pyop_attr_view){sizeof(pyop_attr_view), S("n"), PYOP_ATTR_INT, 0,
                           {.type = PYOP_ATTR_INT, .u.i = 2}};
  pyop_proto_view p = {sizeof p, S("Many"), S("test:many"), S("many.py"), 3,
                       PYOP_CAP_INFER_META, in, 1, out, MANY, at, 2, NULL, &many_proto_cbs,
                       NULL, NULL};
  pyop_impl_view i = {sizeof i, S("Many"), S("test:many.impl"), S("many.py"), 9,
                      PYOP_CAP_EXECUTE, NULL, &many_impl_cbs};
  pyop__txn *t;
  assert_int_equal(pyop__txn_begin(&t), PYOP_OK);
  assert_int_equal(pyop__txn_add_proto(t, &p), PYOP_OK);
  assert_int_equal(pyop__txn_add_impl(t, &i), PYOP_OK);
  assert_int_equal(pyop__txn_commit(t), PYOP_OK);
}

/* The host's buffers of Many's outputs, and an allocator handing them out
 * by index (recording which outputs were asked for). */
static float many_buf[MANY][3];
static int many_asked[MANY];
static int many_alloc(void *user, size_t index, pyop_tensor *t) {
  (void)user;
  assert_true(index < MANY);
  many_asked[index]++;
  t->data = many_buf[index];
  return 0;
}

/* Fresh outputs: each described as float32[3] over its own buffer, which
 * holds -1. */
static void many_reset(pyop_tensor *y) {
  for (int k = 0; k < MANY; k++) {
    y[k] = (pyop_tensor){many_buf[k], PYOP_DTYPE_FLOAT32, 0, 1, 0, {3}, sizeof many_buf[k]};
    for (int i = 0; i < 3; i++) many_buf[k][i] = -1;
    many_asked[k] = 0;
  }
}

/* Every output k holds k: each went to its own buffer. */
static void many_all_written(const pyop_tensor *y) {
  for (int k = 0; k < MANY; k++) {
    if (y[k].data != many_buf[k]) fail_msg("output %d: data is not its buffer", k);
    for (int i = 0; i < 3; i++)
      if (many_buf[k][i] != (float)k)
        fail_msg("output %d [%d]: %g, expected %d", k, i, many_buf[k][i], k);
  }
}

/* pyop_op_execute of an op with 70 outputs (more than the 16 of the hot
 * path's frame, and more than one 64-bit word of produced outputs): each
 * output is produced into its own buffer, preallocated or from the host,
 * and the contract still holds for each of them, those past the 64th
 * included. */
static void test_execute_many_outputs(void **state) {
  (void)state;
  reg_many();
  pyop_tensor y[MANY];
  pyop_exec_ctx pre = PYOP_EXEC_CTX_INIT;
  pyop_exec_ctx alloc = PYOP_EXEC_CTX_INIT;
  alloc.alloc_output = many_alloc;
  /* infer_meta describes all 70. */
  pyop_op *op = make("Many", X_OK, 2);
  pyop_tensor d[MANY];
  assert_int_equal(pyop_op_infer_meta(op, &xin, 1, d, MANY), PYOP_OK);
  assert_int_equal(d[MANY - 1].dtype, PYOP_DTYPE_FLOAT32);
  assert_int_equal(d[MANY - 1].nbytes, 12);
  pyop_output_list dl[MANY];
  for (int k = 0; k < MANY; k++) dl[k] = (pyop_output_list){&d[k], 1, 0};
  assert_int_equal(pyop_op_infer_meta_list(op, &xin, 1, dl, MANY), PYOP_OK);
  assert_int_equal(dl[MANY - 1].count, 1);
  assert_int_equal(d[MANY - 1].shape[0], 3);
  /* Preallocated: every output written in place. */
  many_reset(y);
  assert_int_equal(pyop_op_execute(op, &xin, 1, y, MANY, &pre), PYOP_OK);
  many_all_written(y);
  /* From the host: each output asked for once, by its own index. */
  many_reset(y);
  for (int k = 0; k < MANY; k++) y[k].data = NULL;
  assert_int_equal(pyop_op_execute(op, &xin, 1, y, MANY, &alloc), PYOP_OK);
  many_all_written(y);
  for (int k = 0; k < MANY; k++) assert_int_equal(many_asked[k], 1);
  /* The host's expectations, stated for each output: met. */
  alloc.flags = PYOP_EXEC_EXPECT_OUTPUTS;
  many_reset(y);
  assert_int_equal(pyop_op_execute(op, &xin, 1, y, MANY, &alloc), PYOP_OK);
  many_all_written(y);
  /* ... and one past the 64th stated otherwise: not met, and not allocated. */
  many_reset(y);
  y[66].dtype = PYOP_DTYPE_INT32;
  assert_int_equal(pyop_op_execute(op, &xin, 1, y, MANY, &alloc), PYOP_ECONTRACT);
  assert_msg_has("execute of \"Many\" (many.py:9): output 66 \"y66\": the host expected "
                 "int32[3], the op asked for float32[3]");
  assert_int_equal(many_asked[66], 0);
  assert_int_equal(many_asked[65], 1);
  alloc.flags = 0;
  pyop_op_destroy(op);
  /* An output left unproduced is named, wherever it is: the first, the
   * 64th and 65th (either side of a word of the produced set), the last. */
  const int64_t skipped[] = {0, 63, 64, MANY - 1};
  for (size_t s = 0; s < sizeof skipped / sizeof *skipped; s++) {
    char want[64];
    snprintf(want, sizeof want, "returned without producing output %d \"y%d\"",
             (int)skipped[s], (int)skipped[s]);
    op = make("Many", X_NO_LAST, skipped[s]);
    many_reset(y);
    assert_int_equal(pyop_op_execute(op, &xin, 1, y, MANY, &pre), PYOP_ECONTRACT);
    assert_msg_has(want);
    assert_true(many_buf[skipped[s]][0] == -1);
    pyop_op_destroy(op);
  }
  /* An output asked for twice is refused, past the 64th too (its request
   * is not taken for output 0's). */
  const int64_t twice[] = {1, 64, 65};
  for (size_t s = 0; s < sizeof twice / sizeof *twice; s++) {
    char want[64];
    snprintf(want, sizeof want, "output %d \"y%d\" requested twice", (int)twice[s],
             (int)twice[s]);
    op = make("Many", X_ALIAS_TWICE, twice[s]);
    many_reset(y);
    assert_int_equal(pyop_op_execute(op, &xin, 1, y, MANY, &alloc), PYOP_EINVAL);
    assert_msg_has(want);
    assert_int_equal(many_asked[twice[s]], 1);
    assert_int_equal(many_asked[twice[s] + 1], 0); /* the op stopped there */
    pyop_op_destroy(op);
  }
}

/* Strict mode with 70 outputs: infer_meta's descriptions of all of them
 * (more than the 16 kept on the stack) are the expectations; an op that
 * meets them writes every output, one that asks output 67 otherwise is
 * refused naming it. */
static void test_execute_many_strict(void **state) {
  (void)state;
  reg_many();
  pyop_options o = PYOP_OPTIONS_INIT;
  o.strict_outputs = true;
  assert_int_equal(unsetenv("PYOP_STRICT_OUTPUTS"), 0);
  assert_int_equal(unsetenv("ASCEND_CUSTOM_OPP_PATH"), 0);
  assert_int_equal(pyop_set_options(&o), PYOP_OK);
  assert_int_equal(pyop_load(), PYOP_OK);
  pyop_tensor y[MANY];
  pyop_exec_ctx alloc = PYOP_EXEC_CTX_INIT;
  alloc.alloc_output = many_alloc;
  pyop_op *op = make("Many", X_OK, 2);
  many_reset(y);
  for (int k = 0; k < MANY; k++) y[k].dtype = PYOP_DTYPE_INT8; /* not stated: no flag */
  assert_int_equal(pyop_op_execute(op, &xin, 1, y, MANY, &alloc), PYOP_OK);
  many_all_written(y);
  assert_int_equal(y[MANY - 1].dtype, PYOP_DTYPE_FLOAT32);
  pyop_op_destroy(op);
  op = make("Many", X_WRONG, 67);
  many_reset(y);
  assert_int_equal(pyop_op_execute(op, &xin, 1, y, MANY, &alloc), PYOP_ECONTRACT);
  assert_msg_has("output 67 \"y67\": infer_meta (many.py:3) expected float32[3], the op "
                 "asked for float16[6]");
  assert_int_equal(many_asked[66], 1);
  assert_int_equal(many_asked[67], 0);
  pyop_op_destroy(op);
  o.strict_outputs = false;
  assert_int_equal(pyop_set_options(&o), PYOP_OK);
  assert_int_equal(pyop_load(), PYOP_OK);
}

/* declare_launch_args and launch (the calls that take one tensor per
 * output, beside infer_meta and execute) refuse an op with a dynamic
 * output too, with their own hint: no list form exists for them (both-sides
 * pass, session 14). The op's declare_launch_args is never called. */
static int declares;
static int declare_counted(void *h, const pyop_declare_args *a) {
  (void)h, (void)a;
  declares++;
  return PYOP_OK;
}
static const pyop_op_callbacks impl_launch_cbs = {sizeof(pyop_op_callbacks), create, destroy,
                                                  NULL, execute, NULL, declare_counted};

static void test_dynamic_output_launch_refused(void **state) {
  (void)state;
  pyop_io_view in[1] = {IOV("x", PYOP_IO_REQUIRED)};
  pyop_io_view out[2] = {IOV("ys", PYOP_IO_DYNAMIC), IOV("last", PYOP_IO_REQUIRED)};
  pyop_proto_view p;
  memset(&p, 0, sizeof p);
  p = (pyop_proto_view){sizeof p, S("SplitL"), S("test:splitl"), S("contract.py"), 3,
                        PYOP_CAP_INFER_META, in, 1, out, 2, NULL, 0, NULL, &proto_cbs, NULL,
                        NULL};
  pyop_impl_view iv = {sizeof iv, S("SplitL"), S("test:splitl.impl"), S("contract.py"), 9,
                       PYOP_CAP_EXECUTE | PYOP_CAP_LAUNCH, NULL, &impl_launch_cbs};
  pyop__txn *t;
  assert_int_equal(pyop__txn_begin(&t), PYOP_OK);
  assert_int_equal(pyop__txn_add_proto(t, &p), PYOP_OK);
  assert_int_equal(pyop__txn_add_impl(t, &iv), PYOP_OK);
  assert_int_equal(pyop__txn_commit(t), PYOP_OK);
  pyop_op *op = NULL;
  assert_int_equal(pyop_op_create("SplitL", NULL, 0, &op), PYOP_OK);
  declares = 0;
  pyop_tensor t2[2];
  memset(t2, 0, sizeof t2);
  assert_int_equal(pyop_op_declare_launch_args(op, &xin, 1, t2, 2), PYOP_EINVAL);
  assert_string_equal(pyop_last_error(), "declare_launch_args of \"SplitL\": output 0 \"ys\" "
                      "is dynamic (a list of tensors): dynamic outputs cannot be compiled or "
                      "launched yet");
  pyop_exec_ctx ctx = PYOP_EXEC_CTX_INIT;
  assert_int_equal(pyop_op_launch(op, &xin, 1, t2, 2, &ctx), PYOP_EINVAL);
  assert_msg_has("launch of \"SplitL\": output 0 \"ys\" is dynamic (a list of tensors): "
                 "dynamic outputs cannot be compiled or launched yet");
  assert_int_equal(declares, 0);
  pyop_op_destroy(op);
}

/* A float is no int (both-sides pass, session 14): int takes no float
 * value, as float takes an int (test_op: test_attr_resolution) but bool no
 * int (test_attr_errors); nothing is made. An empty Tensor attribute may
 * come without data (no bytes to copy); one element may not. */
static void test_attr_other_sides(void **state) {
  (void)state;
  pyop_op *op = NULL;
  pyop_attr f = {"mode", {.type = PYOP_ATTR_FLOAT, .u.f = 1.0}};
  assert_int_equal(pyop_op_create("Plain", &f, 1, &op), PYOP_EINVAL);
  assert_msg_has("pyop_op_create(\"Plain\"): attribute \"mode\": expected int, given float");
  assert_null(op);
  pyop_attr b = {"n", {.type = PYOP_ATTR_BOOL, .u.b = true}};
  assert_int_equal(pyop_op_create("Plain", &b, 1, &op), PYOP_EINVAL);
  assert_msg_has("attribute \"n\": expected int, given bool");
  assert_int_equal(holders_alive, 0);
  assert_int_equal(pyop__registry_live_instances(), 0);
  pyop_tensor wt = {NULL, PYOP_DTYPE_FLOAT32, 0, 1, 0, {0}, 0};
  pyop_attr a = {"w", {.type = PYOP_ATTR_TENSOR, .u.tensor = &wt}};
  int rc = pyop_op_create("Const", &a, 1, &op);
  if (rc != PYOP_OK) fail_msg("an empty Tensor attribute without data: %s", pyop_last_error());
  assert_non_null(op);
  pyop_op_destroy(op);
  op = NULL;
  wt.shape[0] = 1;
  wt.nbytes = 4;
  assert_int_equal(pyop_op_create("Const", &a, 1, &op), PYOP_EINVAL);
  assert_msg_has("Tensor attribute \"w\" (float32[1]): NULL data");
  assert_null(op);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_strict_mode_old_ctx, setup, teardown),
      cmocka_unit_test_setup_teardown(test_dynamic_output_launch_refused, setup, teardown),
      cmocka_unit_test_setup_teardown(test_attr_other_sides, setup, teardown),
      cmocka_unit_test_setup_teardown(test_infer_meta_expect_required_count_ignored, setup, teardown),
      cmocka_unit_test_setup_teardown(test_unproduced_output, setup, teardown),
      cmocka_unit_test_setup_teardown(test_expectations, setup, teardown),
      cmocka_unit_test_setup_teardown(test_expectations_every_dim, setup, teardown),
      cmocka_unit_test_setup_teardown(test_stream_passed, setup, teardown),
      cmocka_unit_test_setup_teardown(test_host_buffer_kept, setup, teardown),
      cmocka_unit_test_setup_teardown(test_strict_mode, setup, teardown),
      cmocka_unit_test_setup_teardown(test_strict_mode_dynamic, setup, teardown),
      cmocka_unit_test_setup_teardown(test_strict_mode_room_past_stack, setup, teardown),
      cmocka_unit_test_setup_teardown(test_strict_env_values, setup, teardown),
      cmocka_unit_test_setup_teardown(test_no_outputs, setup, teardown),
      cmocka_unit_test_setup_teardown(test_dynamic_outputs, setup, teardown),
      cmocka_unit_test_setup_teardown(test_infer_list_last_output_checked, setup, teardown),
      cmocka_unit_test_setup_teardown(test_list_args_refused, setup, teardown),
      cmocka_unit_test_setup_teardown(test_infer_meta_expect_counts, setup, teardown),
      cmocka_unit_test_setup_teardown(test_expect_count_clamped_to_room, setup, teardown),
      cmocka_unit_test_setup_teardown(test_inplace_alias, setup, teardown),
      cmocka_unit_test_setup_teardown(test_alias_output_refused, setup, teardown),
      cmocka_unit_test_setup_teardown(test_requested_output_checked, setup, teardown),
      cmocka_unit_test_setup_teardown(test_alias_not_bound, setup, teardown),
      cmocka_unit_test_setup_teardown(test_tensor_attr, setup, teardown),
      cmocka_unit_test_setup_teardown(test_two_tensor_attrs, setup, teardown),
      cmocka_unit_test_setup_teardown(test_descriptor_rules, setup, teardown),
      cmocka_unit_test_setup_teardown(test_execute_many_outputs, setup, teardown),
      cmocka_unit_test_setup_teardown(test_dynamic_output_not_first, setup, teardown),
      cmocka_unit_test_setup_teardown(test_second_input_mutated, setup, teardown),
      cmocka_unit_test_setup_teardown(test_execute_many_strict, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
