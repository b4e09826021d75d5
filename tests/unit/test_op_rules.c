/*
 * What src/op.c refuses of a host and of an op, at the boundaries the
 * mutation check found untested (tests/mutation, issue 31): input slot and
 * output counts either way, PYOP_MAX_DIMS dimensions and one more, a host
 * buffer one byte short, a host workspace of no memory, add_output on a
 * required output, and which of two service failures a call reports. Fake
 * in-process callbacks; the op "Rules" is x -> y, attribute mode: int.
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

/* What the callbacks do, by the attribute "mode". */
enum {
  M_COPY = 0,        /* infer: y is x; execute: allocates y */
  M_ADD_REQUIRED,    /* infer: add_output on the required output 0 */
  M_TWO_REFUSALS,    /* execute: output 7 (refused, ignored), then output 0 */
  M_WORKSPACE,       /* execute: a 64-byte workspace, then output 0 */
  M_WORKSPACE0,      /* execute: a 0-byte workspace, then output 0 */
};

typedef struct holder {
  int64_t mode;
} holder;

static int create(void *ctx, const pyop_attr_view *a, size_t n, void **out) {
  (void)ctx;
  holder *h = calloc(1, sizeof *h);
  assert_non_null(h);
  for (size_t i = 0; i < n; i++)
    if (a[i].name.len == 4 && memcmp(a[i].name.data, "mode", 4) == 0)
      h->mode = a[i].default_value.u.i;
  *out = h;
  return PYOP_OK;
}

static void destroy(void *h) { free(h); }

static int infer(void *hv, const pyop_infer_args *a) {
  holder *h = hv;
  pyop_tensor t = a->inputs[0].items[0];
  if (h->mode == M_ADD_REQUIRED) return a->add_output(a->sink_ctx, 0, &t);
  if (a->n_outputs > 0) a->outputs[0] = t;
  return PYOP_OK;
}

static int execute(void *hv, const pyop_exec_args *a) {
  holder *h = hv;
  const pyop_exec_services *svc = a->services;
  pyop_tensor t = a->inputs[0].items[0];
  t.data = NULL;
  if (h->mode == M_TWO_REFUSALS) {
    pyop_tensor bad = t;
    (void)svc->alloc_output(svc->ctx, 7, &bad); /* refused; the op goes on */
  }
  if (h->mode == M_WORKSPACE || h->mode == M_WORKSPACE0) {
    void *ws = (void *)1;
    int rc = svc->alloc_workspace(svc->ctx, h->mode == M_WORKSPACE ? 64 : 0, &ws);
    if (rc != PYOP_OK) return rc;
  }
  return svc->alloc_output(svc->ctx, 0, &t);
}

static const pyop_op_callbacks proto_cbs = {sizeof(pyop_op_callbacks), create, destroy, infer,
                                            NULL, NULL, NULL};
static const pyop_op_callbacks impl_cbs = {sizeof(pyop_op_callbacks), create, destroy, NULL,
                                           execute, NULL, NULL};

static int register_rules(void) {
  pyop_io_view in[1] = {{sizeof(pyop_io_view), S("x"), PYOP_IO_REQUIRED}};
  pyop_io_view out[1] = {{sizeof(pyop_io_view), S("y"), PYOP_IO_REQUIRED}};
  pyop_attr_view at[1] = {{sizeof(pyop_attr_view), S("mode"), PYOP_ATTR_INT, 0,
                           {.type = PYOP_ATTR_INT, .u.i = 0}}};
  pyop_proto_view p;
  memset(&p, 0, sizeof p);
  p = (pyop_proto_view){sizeof p, S("Rules"), S("test:rules"), S("rules.py"), 3,
                        PYOP_CAP_INFER_META, in, 1, out, 1, at, 1, NULL, &proto_cbs, NULL, NULL};
  pyop_impl_view i = {sizeof i, S("Rules"), S("test:rules.impl"), S("rules.py"), 9,
                      PYOP_CAP_EXECUTE, NULL, &impl_cbs};
  pyop__txn *t;
  assert_int_equal(pyop__txn_begin(&t), PYOP_OK);
  assert_int_equal(pyop__txn_add_proto(t, &p), PYOP_OK);
  assert_int_equal(pyop__txn_add_impl(t, &i), PYOP_OK);
  return pyop__txn_commit(t);
}

static pyop_op *make(int64_t mode) {
  pyop_attr a = {"mode", {PYOP_ATTR_INT, 0, {.i = mode}}};
  pyop_op *op = NULL;
  assert_int_equal(pyop_op_create("Rules", &a, 1, &op), PYOP_OK);
  return op;
}

/* The host's allocator: a zeroed buffer of nbytes - short (kept until the
 * next call). */
static uint64_t host_short;
static bool host_workspace_null, host_fails, host_empty_null;
static void *host_mem;
/* What the allocators return having given memory: non-zero is a failure,
 * whatever its sign (pyop.h). */
static int host_status, host_ws_status;
static double host_ws_mem[8];

static int host_alloc(void *user, size_t index, pyop_tensor *t) {
  (void)user;
  (void)index;
  if (host_fails) return 5;
  if (host_empty_null && t->nbytes == 0) { /* nothing to hold: no buffer */
    t->data = NULL;
    return 0;
  }
  free(host_mem);
  host_mem = calloc(1, t->nbytes + 16);
  t->data = host_mem;
  t->nbytes -= host_short;
  return host_status;
}

static int host_workspace(void *user, uint64_t nbytes, void **out) {
  (void)user;
  (void)nbytes;
  *out = NULL; /* "success" without memory when host_workspace_null */
  if (host_ws_status) {
    *out = host_ws_mem;
    return host_ws_status;
  }
  return host_workspace_null ? 0 : PYOP_ENOMEM;
}

static pyop_exec_ctx exec_ctx(void) {
  pyop_exec_ctx ctx = PYOP_EXEC_CTX_INIT;
  ctx.alloc_output = host_alloc;
  ctx.alloc_workspace = host_workspace;
  return ctx;
}

static int setup(void **state) {
  (void)state;
  host_short = 0;
  host_workspace_null = host_fails = host_empty_null = false;
  host_status = host_ws_status = 0;
  if (pyop__registry_clear() != PYOP_OK || register_rules() != PYOP_OK) return -1;
  return 0;
}

static int teardown(void **state) {
  (void)state;
  free(host_mem);
  host_mem = NULL;
  return pyop__registry_clear() == PYOP_OK ? 0 : -1;
}

static float xv[4] = {1, 2, 3, 4};

static pyop_tensor input(int32_t ndim) {
  pyop_tensor t;
  memset(&t, 0, sizeof t);
  t.data = xv;
  t.dtype = PYOP_DTYPE_FLOAT32;
  t.ndim = ndim;
  for (int32_t i = 0; i < ndim && i < PYOP_MAX_DIMS; i++) t.shape[i] = 1;
  t.nbytes = sizeof xv;
  return t;
}

/* ----------------------------------------------------------------- tests */

static void test_counts_either_way(void **state) {
  (void)state;
  pyop_op *op = make(M_COPY);
  pyop_tensor x = input(1), y;
  pyop_tensor_list two[2] = {{&x, 1}, {&x, 1}};
  pyop_exec_ctx ctx = exec_ctx();
  /* More input slots than the op has, and fewer. */
  assert_int_equal(pyop_op_infer_meta(op, two, 2, &y, 1), PYOP_EINVAL);
  assert_msg_has("infer_meta of \"Rules\": 2 input slots given, the op has 1");
  assert_int_equal(pyop_op_execute(op, two, 2, &y, 1, &ctx), PYOP_EINVAL);
  assert_msg_has("execute of \"Rules\": 2 input slots given, the op has 1");
  assert_int_equal(pyop_op_infer_meta(op, NULL, 0, &y, 1), PYOP_EINVAL);
  assert_msg_has("0 input slots given, the op has 1");
  /* Fewer outputs than the op has, and more. */
  assert_int_equal(pyop_op_infer_meta(op, two, 1, NULL, 0), PYOP_EINVAL);
  assert_msg_has("infer_meta of \"Rules\": 0 outputs given, the op has 1");
  assert_int_equal(pyop_op_execute(op, two, 1, NULL, 0, &ctx), PYOP_EINVAL);
  assert_msg_has("execute of \"Rules\": 0 outputs given, the op has 1");
  pyop_tensor ys[2];
  assert_int_equal(pyop_op_infer_meta(op, two, 1, ys, 2), PYOP_EINVAL);
  assert_msg_has("2 outputs given, the op has 1");
  /* And the right counts work. */
  assert_int_equal(pyop_op_infer_meta(op, two, 1, &y, 1), PYOP_OK);
  assert_int_equal(pyop_op_execute(op, two, 1, &y, 1, &ctx), PYOP_OK);
  pyop_op_destroy(op);
}

static void test_max_dims(void **state) {
  (void)state;
  pyop_op *op = make(M_COPY);
  pyop_exec_ctx ctx = exec_ctx();
  pyop_tensor x = input(PYOP_MAX_DIMS), y;
  pyop_tensor_list in = {&x, 1};
  assert_int_equal(pyop_op_infer_meta(op, &in, 1, &y, 1), PYOP_OK);
  assert_int_equal(y.ndim, PYOP_MAX_DIMS);
  assert_int_equal(pyop_op_execute(op, &in, 1, &y, 1, &ctx), PYOP_OK);
  assert_int_equal(y.ndim, PYOP_MAX_DIMS);
  x = input(PYOP_MAX_DIMS + 1);
  assert_int_equal(pyop_op_infer_meta(op, &in, 1, &y, 1), PYOP_EINVAL);
  assert_msg_has("ndim out of 0..8");
  assert_int_equal(pyop_op_execute(op, &in, 1, &y, 1, &ctx), PYOP_EINVAL);
  assert_msg_has("ndim out of 0..8");
  pyop_op_destroy(op);
}

/* The host's output buffer one byte short of the shape is its failure. */
static void test_host_buffer_short(void **state) {
  (void)state;
  pyop_op *op = make(M_COPY);
  pyop_exec_ctx ctx = exec_ctx();
  pyop_tensor x = input(1), y;
  x.shape[0] = 4;
  pyop_tensor_list in = {&x, 1};
  host_short = 1;
  assert_int_equal(pyop_op_execute(op, &in, 1, &y, 1, &ctx), PYOP_EHOST);
  assert_msg_has("the host's alloc_output gave output 0 \"y\" (float32[4]) fewer bytes than "
                 "needed");
  host_short = 0;
  assert_int_equal(pyop_op_execute(op, &in, 1, &y, 1, &ctx), PYOP_OK);
  assert_int_equal(y.nbytes, 16);
  pyop_op_destroy(op);
}

/* alloc_workspace answering success without memory is the host's failure. */
static void test_host_workspace_null(void **state) {
  (void)state;
  pyop_op *op = make(M_WORKSPACE);
  pyop_exec_ctx ctx = exec_ctx();
  pyop_tensor x = input(1), y;
  pyop_tensor_list in = {&x, 1};
  host_workspace_null = true;
  assert_int_equal(pyop_op_execute(op, &in, 1, &y, 1, &ctx), PYOP_EHOST);
  assert_msg_has("the host's alloc_workspace failed for 64 bytes (0)");
  host_workspace_null = false; /* now it says PYOP_ENOMEM */
  assert_int_equal(pyop_op_execute(op, &in, 1, &y, 1, &ctx), PYOP_EHOST);
  assert_msg_has("the host's alloc_workspace failed for 64 bytes (-");
  pyop_op_destroy(op);
}

/* The empty side of the host's answers (both-sides pass, session 14): a
 * 0-byte workspace answered with success and no memory is no failure, nor
 * is an empty output (0 elements) the host passed pre-allocated with NULL
 * data or its alloc_output answered with none; 64 bytes answered so are
 * (test_host_workspace_null), and one element without a buffer. */
static void test_host_empty_without_memory(void **state) {
  (void)state;
  pyop_op *op = make(M_WORKSPACE0);
  pyop_exec_ctx ctx = exec_ctx();
  pyop_tensor x = input(1), y;
  pyop_tensor_list in = {&x, 1};
  host_workspace_null = true;
  int rc = pyop_op_execute(op, &in, 1, &y, 1, &ctx);
  if (rc != PYOP_OK) fail_msg("a 0-byte workspace without memory: %s", pyop_last_error());
  assert_int_equal(y.nbytes, 4);
  pyop_op_destroy(op);
  op = make(M_COPY);
  x.shape[0] = 0;
  pyop_exec_ctx pre = PYOP_EXEC_CTX_INIT; /* outputs pre-allocated */
  memset(&y, 0, sizeof y);
  y.dtype = PYOP_DTYPE_FLOAT32;
  y.ndim = 1;
  y.shape[0] = 0; /* empty: no bytes, no buffer */
  rc = pyop_op_execute(op, &in, 1, &y, 1, &pre);
  if (rc != PYOP_OK) fail_msg("an empty pre-allocated output without data: %s",
                              pyop_last_error());
  assert_null(y.data);
  assert_int_equal(y.nbytes, 0);
  /* The host's alloc_output answering an empty output with no buffer. */
  host_empty_null = true;
  rc = pyop_op_execute(op, &in, 1, &y, 1, &ctx);
  if (rc != PYOP_OK) fail_msg("an empty output allocated without data: %s", pyop_last_error());
  assert_null(y.data);
  assert_int_equal(y.nbytes, 0);
  host_empty_null = false;
  /* One element with no buffer is refused. */
  x.shape[0] = 1;
  y.shape[0] = 1;
  y.nbytes = 4;
  assert_int_equal(pyop_op_execute(op, &in, 1, &y, 1, &pre), PYOP_EINVAL);
  assert_msg_has("passed by the host has no buffer");
  pyop_op_destroy(op);
}

/* A host allocator that gave the memory but returned a positive status
 * failed all the same: PYOP_EHOST with its status (outcome pass 2:
 * src.out2.outputs.alloc_workspace_positive_ok). */
static void test_host_positive_status(void **state) {
  (void)state;
  pyop_op *op = make(M_COPY);
  pyop_exec_ctx ctx = exec_ctx();
  pyop_tensor x = input(1), y;
  pyop_tensor_list in = {&x, 1};
  host_status = 7;
  assert_int_equal(pyop_op_execute(op, &in, 1, &y, 1, &ctx), PYOP_EHOST);
  assert_msg_has("the host's alloc_output failed for output 0 \"y\"");
  assert_msg_has(" with 7");
  host_status = 0;
  assert_int_equal(pyop_op_execute(op, &in, 1, &y, 1, &ctx), PYOP_OK);
  pyop_op_destroy(op);
  op = make(M_WORKSPACE);
  host_ws_status = 3;
  assert_int_equal(pyop_op_execute(op, &in, 1, &y, 1, &ctx), PYOP_EHOST);
  assert_msg_has("the host's alloc_workspace failed for 64 bytes (3)");
  host_ws_status = 0;
  pyop_op_destroy(op);
}

/* add_output is for dynamic outputs only. */
static void test_add_output_on_a_required_output(void **state) {
  (void)state;
  pyop_op *op = make(M_ADD_REQUIRED);
  pyop_tensor x = input(1), y;
  pyop_tensor_list in = {&x, 1};
  assert_int_equal(pyop_op_infer_meta(op, &in, 1, &y, 1), PYOP_EINVAL);
  assert_msg_has("infer_meta of \"Rules\": add_output: output 0 is not a dynamic output");
  /* The list form has room for dynamic tensors, still not for this one. */
  pyop_tensor items[4];
  pyop_output_list l = {items, 4, 0};
  assert_int_equal(pyop_op_infer_meta_list(op, &in, 1, &l, 1), PYOP_EINVAL);
  assert_msg_has("infer_meta of \"Rules\": add_output: output 0 is not a dynamic output");
  pyop_op_destroy(op);
}

/* Two service failures in one call, the first caught by the op: the call
 * fails with the second, and the first is named as what the op caught. */
static void test_first_service_failure_is_kept(void **state) {
  (void)state;
  pyop_op *op = make(M_TWO_REFUSALS);
  pyop_exec_ctx ctx = exec_ctx();
  pyop_tensor x = input(1), y;
  pyop_tensor_list in = {&x, 1};
  host_fails = true; /* the second: the host's allocator fails (PYOP_EHOST) */
  assert_int_equal(pyop_op_execute(op, &in, 1, &y, 1, &ctx), PYOP_EHOST);
  assert_msg_has("the host's alloc_output failed for output 0 \"y\" (float32[1], 4 bytes) "
                 "with 5");
  assert_msg_has("(earlier in this call, alloc_output failed: execute of \"Rules\": output "
                 "index 7 out of range (1 output))");
  /* The second failure's message, a service's, names the call already:
   * it is not prefixed again. */
  const char *head = "execute of \"Rules\": the host's alloc_output failed";
  assert_int_equal(strncmp(pyop_last_error(), head, strlen(head)), 0);
  host_fails = false;
  assert_int_equal(pyop_op_execute(op, &in, 1, &y, 1, &ctx), PYOP_OK);
  pyop_op_destroy(op);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_counts_either_way, setup, teardown),
      cmocka_unit_test_setup_teardown(test_max_dims, setup, teardown),
      cmocka_unit_test_setup_teardown(test_host_buffer_short, setup, teardown),
      cmocka_unit_test_setup_teardown(test_host_workspace_null, setup, teardown),
      cmocka_unit_test_setup_teardown(test_host_empty_without_memory, setup, teardown),
      cmocka_unit_test_setup_teardown(test_host_positive_status, setup, teardown),
      cmocka_unit_test_setup_teardown(test_add_output_on_a_required_output, setup, teardown),
      cmocka_unit_test_setup_teardown(test_first_service_failure_is_kept, setup, teardown),
  };
  return cmocka_run_group_tests_name("op rules", tests, NULL, NULL);
}
