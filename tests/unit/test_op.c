/*
 * Op instances (src/op.c): attribute resolution, holders, infer_meta and
 * execute argument checks, output/workspace routing to the host's exec
 * context, failures of the bridge callbacks, fault injection on create.
 */
#include "bridge_loader.h"
#include "registry.h"
#include "testutil.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pyop_str S(const char *s) { return (pyop_str){s, strlen(s)}; }

/* ------------------------------------------------------ a fake bridge */

enum mode {
  M_OK,
  M_PROTO_CREATE_FAILS,
  M_IMPL_CREATE_FAILS,
  M_INFER_UNSET,
  M_INFER_NEG_DIM,
  M_INFER_FAILS,
  M_INFER_FAILS_NAMED, /* the bridge's message names the call and the op */
  M_INFER_FAILS_BRIDGE, /* a bridge message in words of its own (set_error) */
  M_INFER_FAILS_LOOKS_NAMED, /* not the bridge's, though it reads like a named one */
  M_EXEC_BAD_INDEX,
  M_EXEC_TWICE,
  M_EXEC_WORKSPACE,
  M_DECLARE_CATCH, /* declare_launch_args ignores a refused launch */
  M_DECLARE_OWN, /* it fails on its own after a refused launch */
  M_EXEC_BAD_STATUS,
  M_INFER_NAMED_OTHER_STATUS, /* set_error with one status, returns another */
  M_INFER_ODD,       /* infer_meta sets its output, then returns 7 (no status) */
  M_IMPL_CREATE_ODD, /* the implementation's create_holder returns 7, no holder */
  M_COMPILE_EMPTY,   /* compile ends with an empty artefact (NULL, 0) */
};
static enum mode mode;
static int holders_alive;

/* What the last create_holder saw. */
static struct {
  size_t n;
  char names[8][16];
  int32_t types[8];
  double alpha;
  char mode_s[16];
  size_t n_scale;
  double scale[4];
  size_t n_shift; /* the "Lists" op's second list[float] */
  double shift[4];
  bool flag;
} seen;

typedef struct holder {
  double alpha;
} holder;

static int create(void *ctx, const pyop_attr_view *a, size_t n, void **out) {
  assert_ptr_equal(ctx, (void *)0x5);
  if ((mode == M_PROTO_CREATE_FAILS && a && holders_alive == 0) ||
      (mode == M_IMPL_CREATE_FAILS && holders_alive == 1))
    return pyop__error(PYOP_EPYTHON, "ValueError: bad alpha (plugin.py:7)");
  if (mode == M_IMPL_CREATE_ODD && holders_alive == 1) return 7;
  memset(&seen, 0, sizeof seen);
  seen.n = n;
  holder *h = malloc(sizeof *h);
  for (size_t i = 0; i < n && i < 8; i++) {
    assert_int_equal(a[i].struct_size, sizeof(pyop_attr_view));
    snprintf(seen.names[i], sizeof seen.names[i], "%.*s", (int)a[i].name.len, a[i].name.data);
    seen.types[i] = a[i].default_value.type;
    assert_int_equal(a[i].type, a[i].default_value.type);
    const pyop_attr_value *v = &a[i].default_value;
    if (strcmp(seen.names[i], "alpha") == 0) seen.alpha = h->alpha = v->u.f;
    if (strcmp(seen.names[i], "mode") == 0)
      snprintf(seen.mode_s, sizeof seen.mode_s, "%.*s", (int)v->u.s.len, v->u.s.data);
    if (strcmp(seen.names[i], "scale") == 0) {
      seen.n_scale = v->u.floats.count;
      for (size_t k = 0; k < v->u.floats.count && k < 4; k++) seen.scale[k] = v->u.floats.items[k];
    }
    if (strcmp(seen.names[i], "flag") == 0) seen.flag = v->u.b;
    if (strcmp(seen.names[i], "shift") == 0) {
      seen.n_shift = v->u.floats.count;
      for (size_t k = 0; k < v->u.floats.count && k < 4; k++) seen.shift[k] = v->u.floats.items[k];
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

static int infer(void *hv, const pyop_infer_args *a) {
  (void)hv;
  assert_int_equal(a->struct_size, sizeof(pyop_infer_args));
  if (mode == M_INFER_FAILS) return pyop__error(PYOP_EPYTHON, "TypeError: no shape");
  if (mode == M_INFER_FAILS_NAMED) { /* as a bridge does: its set_error service */
    const char *m = "infer_meta of op 'Axpy' (defined at axpy.py:3) failed: TypeError: no shape";
    pyop__loader_services.set_error(PYOP_EPYTHON, (pyop_str){m, strlen(m)});
    return PYOP_EPYTHON;
  }
  if (mode == M_INFER_FAILS_BRIDGE) {
    const char *m = "op 'Axpy' (axpy.py:3): TypeError: no shape";
    pyop__loader_services.set_error(PYOP_EPYTHON, (pyop_str){m, strlen(m)});
    return PYOP_EPYTHON;
  }
  if (mode == M_INFER_NAMED_OTHER_STATUS) { /* the message said, then interrupted */
    const char *m = "infer_meta of op 'Axpy' (defined at axpy.py:3) failed: TypeError: no shape";
    pyop__loader_services.set_error(PYOP_EPYTHON, (pyop_str){m, strlen(m)});
    return PYOP_EINTR;
  }
  if (mode == M_INFER_FAILS_LOOKS_NAMED)
    return pyop__error(PYOP_EPYTHON, "infer_meta of op 'Axpy' is what this text begins with");
  if (mode == M_INFER_UNSET) return PYOP_OK;
  const pyop_tensor *x = &a->inputs[0].items[0];
  a->outputs[0] = *x;
  a->outputs[0].data = (void *)0x1; /* libpyop clears it */
  if (mode == M_INFER_NEG_DIM) a->outputs[0].shape[0] = -2;
  if (mode == M_INFER_ODD) return 7;
  return PYOP_OK;
}

/* z = x + alpha * y (float32), y optional. */
/* A copy of the services table of the last execute, kept past its return
 * (the table itself lives only during the call). */
static pyop_exec_services kept_svc;

static int execute(void *hv, const pyop_exec_args *a) {
  holder *h = hv;
  const pyop_exec_services *svc = a->services;
  kept_svc = *svc;
  if (mode == M_EXEC_BAD_STATUS) return 7;
  const pyop_tensor *x = &a->inputs[0].items[0];
  const pyop_tensor *y = a->inputs[1].count ? &a->inputs[1].items[0] : NULL;
  pyop_tensor z = *x;
  z.data = NULL;
  z.nbytes = 0;
  int rc = svc->alloc_output(svc->ctx, mode == M_EXEC_BAD_INDEX ? 5 : 0, &z);
  if (rc != PYOP_OK) return rc;
  if (mode == M_EXEC_TWICE) {
    pyop_tensor again = *x;
    rc = svc->alloc_output(svc->ctx, 0, &again);
    if (rc != PYOP_OK) return rc;
  }
  if (mode == M_EXEC_WORKSPACE) {
    void *ws;
    rc = svc->alloc_workspace(svc->ctx, 64, &ws);
    if (rc != PYOP_OK) return rc;
    memset(ws, 0, 64);
  }
  assert_int_equal(z.dtype, PYOP_DTYPE_FLOAT32);
  int64_t n = pyop_tensor_numel(&z);
  assert_true(z.nbytes >= (uint64_t)n * 4);
  float *out = z.data;
  const float *xv = x->data, *yv = y ? y->data : NULL;
  for (int64_t i = 0; i < n; i++) out[i] = xv[i] + (yv ? (float)h->alpha * yv[i] : 0.0f);
  return PYOP_OK;
}

static int compile_cb(void *hv, const pyop_compile_args *a) {
  (void)hv;
  assert_int_equal(a->n_outputs, 1);
  int rc = a->set_artifact(a->sink_ctx, "abc", 3);
  if (rc == PYOP_OK) rc = a->set_artifact(a->sink_ctx, "wxyz", 4); /* replaces */
  if (rc == PYOP_OK && mode == M_INFER_FAILS) rc = a->set_artifact(a->sink_ctx, NULL, 2);
  if (rc == PYOP_OK && mode == M_COMPILE_EMPTY) rc = a->set_artifact(a->sink_ctx, NULL, 0);
  return rc;
}

/* Declares a launch of a kernel library that does not exist. */
static int declare_cb(void *hv, const pyop_declare_args *a) {
  (void)hv;
  int rc = a->add_workspace(a->sink_ctx, 16);
  if (rc != PYOP_OK || mode == M_EXEC_WORKSPACE) return rc; /* no launch at all */
  pyop_launch_arg_view arg = {sizeof arg, PYOP_LAUNCH_ARG_INPUT, 0, 0, {0}};
  pyop_launch_view l = {sizeof l, S("/nonexistent/libkernel.so"), S("add"), &arg, 1};
  rc = a->add_launch(a->sink_ctx, &l);
  if (mode == M_DECLARE_OWN) return PYOP_EPYTHON;
  return mode == M_DECLARE_CATCH ? PYOP_OK : rc;
}

static const pyop_op_callbacks kernel_cbs = {sizeof(pyop_op_callbacks), create, destroy, NULL,
                                             NULL, compile_cb, declare_cb};

static const pyop_op_callbacks proto_cbs = {sizeof(pyop_op_callbacks), create, destroy, infer,
                                            NULL, NULL, NULL};
static const pyop_op_callbacks impl_cbs = {sizeof(pyop_op_callbacks), create, destroy, NULL,
                                           execute, NULL, NULL};

/* Axpy(x, y?, extra*) -> z; alpha: float = 1.0, mode: str, scale:
 * list[float] = [], flag: bool = False. */
static const pyop_op_callbacks *impl_callbacks = &impl_cbs;
static uint32_t impl_caps = PYOP_CAP_EXECUTE;

static void register_axpy(const char *op_type, bool with_impl, uint32_t proto_caps) {
  pyop_io_view in[3] = {{sizeof(pyop_io_view), S("x"), PYOP_IO_REQUIRED},
                        {sizeof(pyop_io_view), S("y"), PYOP_IO_OPTIONAL},
                        {sizeof(pyop_io_view), S("extra"), PYOP_IO_DYNAMIC}};
  pyop_io_view out[1] = {{sizeof(pyop_io_view), S("z"), PYOP_IO_REQUIRED}};
  pyop_attr_view at[4];
  memset(at, 0, sizeof at);
  at[0] = (pyop_attr_view){sizeof(pyop_attr_view), S("alpha"), PYOP_ATTR_FLOAT, 0,
                           {.type = PYOP_ATTR_FLOAT, .u.f = 1.0}};
  at[1] = (pyop_attr_view){sizeof(pyop_attr_view), S("mode"), PYOP_ATTR_STR, 1, {0}};
  at[2] = (pyop_attr_view){sizeof(pyop_attr_view), S("scale"), PYOP_ATTR_LIST_FLOAT, 0,
                           {.type = PYOP_ATTR_LIST_FLOAT}};
  at[3] = (pyop_attr_view){sizeof(pyop_attr_view), S("flag"), PYOP_ATTR_BOOL, 0,
                           {.type = PYOP_ATTR_BOOL, .u.b = false}};
  pyop_proto_view p = {sizeof p, S(op_type), S("pyop:axpy"), S("axpy.py"), 3, proto_caps,
                       in, 3, out, 1, at, 4, (void *)0x5, proto_caps ? &proto_cbs : NULL};
  pyop_impl_view i = {sizeof i, S(op_type), S("pyop:axpy.impl"), S("axpy.py"), 20,
                      impl_caps, (void *)0x5, impl_callbacks};
  pyop__txn *t;
  assert_int_equal(pyop__txn_begin(&t), PYOP_OK);
  assert_int_equal(pyop__txn_add_proto(t, &p), PYOP_OK);
  if (with_impl) assert_int_equal(pyop__txn_add_impl(t, &i), PYOP_OK);
  assert_int_equal(pyop__txn_commit(t), PYOP_OK);
}

static void assert_msg_has(const char *part) {
  if (!strstr(pyop_last_error(), part))
    fail_msg("message \"%s\" lacks \"%s\"", pyop_last_error(), part);
}

static pyop_attr attr_str(const char *name, const char *v) {
  pyop_attr a = {name, {.type = PYOP_ATTR_STR}};
  a.value.u.s = S(v);
  return a;
}

static pyop_attr attr_int(const char *name, int64_t v) {
  pyop_attr a = {name, {.type = PYOP_ATTR_INT}};
  a.value.u.i = v;
  return a;
}

static int setup(void **state) {
  (void)state;
  mode = M_OK;
  if (pyop__registry_clear() != PYOP_OK) return -1;
  register_axpy("Axpy", true, PYOP_CAP_INFER_META);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  pt_faults_remove();
  assert_int_equal(holders_alive, 0);
  assert_int_equal(pyop__registry_live_instances(), 0);
  return pyop__registry_clear() == PYOP_OK ? 0 : -1;
}

/* ------------------------------------------------------------- tests */

static void test_attr_resolution(void **state) {
  (void)state;
  int64_t ints[2] = {1, 2};
  pyop_attr attrs[3] = {attr_str("mode", "fast"), attr_int("alpha", 3), {"scale", {0}}};
  attrs[2].value.type = PYOP_ATTR_LIST_INT;
  attrs[2].value.u.ints.items = ints;
  attrs[2].value.u.ints.count = 2;
  pyop_op *op;
  assert_int_equal(pyop_op_create("Axpy", attrs, 3, &op), PYOP_OK);
  assert_int_equal(holders_alive, 2); /* prototype's and implementation's */
  assert_int_equal(seen.n, 4);
  assert_string_equal(seen.names[0], "alpha"); /* prototype order */
  assert_string_equal(seen.names[3], "flag");
  assert_int_equal(seen.types[0], PYOP_ATTR_FLOAT);
  assert_true(seen.alpha == 3.0); /* int accepted for float */
  assert_string_equal(seen.mode_s, "fast");
  assert_int_equal(seen.types[2], PYOP_ATTR_LIST_FLOAT);
  assert_int_equal(seen.n_scale, 2);
  assert_true(seen.scale[1] == 2.0); /* list[int] accepted for list[float] */
  assert_false(seen.flag);           /* default */
  assert_int_equal(pyop_op_capabilities(op), PYOP_CAP_INFER_META | PYOP_CAP_EXECUTE);
  assert_string_equal(pyop_op_get_info(op)->op_type, "Axpy");
  assert_int_equal(pyop__registry_live_instances(), 1);
  pyop_op_destroy(op);
  assert_int_equal(holders_alive, 0);
  pyop_op_destroy(NULL);
  assert_null(pyop_op_get_info(NULL));
  assert_int_equal(pyop_op_capabilities(NULL), 0);

  /* Only the required one: defaults for the rest. */
  attrs[0] = attr_str("mode", "");
  assert_int_equal(pyop_op_create("Axpy", attrs, 1, &op), PYOP_OK);
  assert_true(seen.alpha == 1.0);
  assert_int_equal(seen.n_scale, 0);
  pyop_op_destroy(op);
}

/* Two list[float] attributes both given as list[int]: each converted into
 * its own part of the conversion buffer. */
static void test_two_int_lists_converted(void **state) {
  (void)state;
  pyop_io_view in[1] = {{sizeof(pyop_io_view), S("x"), PYOP_IO_REQUIRED}};
  pyop_io_view out[1] = {{sizeof(pyop_io_view), S("z"), PYOP_IO_REQUIRED}};
  pyop_attr_view at[2];
  memset(at, 0, sizeof at);
  at[0] = (pyop_attr_view){sizeof(pyop_attr_view), S("scale"), PYOP_ATTR_LIST_FLOAT, 0,
                           {.type = PYOP_ATTR_LIST_FLOAT}};
  at[1] = (pyop_attr_view){sizeof(pyop_attr_view), S("shift"), PYOP_ATTR_LIST_FLOAT, 0,
                           {.type = PYOP_ATTR_LIST_FLOAT}};
  pyop_proto_view p = {sizeof p, S("Lists"), S("pyop:lists"), S("lists.py"), 3,
                       PYOP_CAP_INFER_META, in, 1, out, 1, at, 2, (void *)0x5, &proto_cbs};
  pyop__txn *t;
  assert_int_equal(pyop__txn_begin(&t), PYOP_OK);
  assert_int_equal(pyop__txn_add_proto(t, &p), PYOP_OK);
  assert_int_equal(pyop__txn_commit(t), PYOP_OK);
  static const int64_t a[2] = {1, 2}, b[3] = {3, 4, 5};
  pyop_attr attrs[2] = {{"shift", {.type = PYOP_ATTR_LIST_INT, .u.ints = {b, 3}}},
                        {"scale", {.type = PYOP_ATTR_LIST_INT, .u.ints = {a, 2}}}};
  pyop_op *op;
  assert_int_equal(pyop_op_create("Lists", attrs, 2, &op), PYOP_OK);
  assert_int_equal(seen.n_scale, 2);
  assert_true(seen.scale[0] == 1.0 && seen.scale[1] == 2.0);
  assert_int_equal(seen.n_shift, 3);
  assert_true(seen.shift[0] == 3.0 && seen.shift[1] == 4.0 && seen.shift[2] == 5.0);
  pyop_op_destroy(op);
}

/* The coercions go one way (both-sides pass, session 14): a list[float]
 * is no list[int] (as a list[int] is taken for a list[float],
 * test_two_int_lists_converted), nor a float an int. Nothing is made. */
static void test_no_float_for_int(void **state) {
  (void)state;
  pyop_io_view in[1] = {{sizeof(pyop_io_view), S("x"), PYOP_IO_REQUIRED}};
  pyop_io_view out[1] = {{sizeof(pyop_io_view), S("z"), PYOP_IO_REQUIRED}};
  pyop_attr_view at[2];
  memset(at, 0, sizeof at);
  at[0] = (pyop_attr_view){sizeof(pyop_attr_view), S("axes"), PYOP_ATTR_LIST_INT, 0,
                           {.type = PYOP_ATTR_LIST_INT}};
  at[1] = (pyop_attr_view){sizeof(pyop_attr_view), S("k"), PYOP_ATTR_INT, 0,
                           {.type = PYOP_ATTR_INT, .u.i = 1}};
  pyop_proto_view p = {sizeof p, S("IntLists"), S("pyop:intlists"), S("lists.py"), 3,
                       PYOP_CAP_INFER_META, in, 1, out, 1, at, 2, (void *)0x5, &proto_cbs};
  pyop__txn *t;
  assert_int_equal(pyop__txn_begin(&t), PYOP_OK);
  assert_int_equal(pyop__txn_add_proto(t, &p), PYOP_OK);
  assert_int_equal(pyop__txn_commit(t), PYOP_OK);
  static const double f[2] = {1.0, 2.5};
  pyop_attr a = {"axes", {.type = PYOP_ATTR_LIST_FLOAT, .u.floats = {f, 2}}};
  pyop_op *op = NULL;
  assert_int_equal(pyop_op_create("IntLists", &a, 1, &op), PYOP_EINVAL);
  assert_msg_has("attribute \"axes\": expected list[int], given list[float]");
  assert_null(op);
  pyop_attr k = {"k", {.type = PYOP_ATTR_FLOAT, .u.f = 2.0}};
  assert_int_equal(pyop_op_create("IntLists", &k, 1, &op), PYOP_EINVAL);
  assert_msg_has("attribute \"k\": expected int, given float");
  assert_null(op);
  assert_int_equal(holders_alive, 0);
  static const int64_t ints[2] = {1, 2};
  a.value = (pyop_attr_value){.type = PYOP_ATTR_LIST_INT, .u.ints = {ints, 2}};
  assert_int_equal(pyop_op_create("IntLists", &a, 1, &op), PYOP_OK);
  pyop_op_destroy(op);
}

static void test_attr_errors(void **state) {
  (void)state;
  pyop_op *op = (pyop_op *)0x1;
  pyop_attr a[3] = {attr_str("mode", "x"), attr_int("beta", 1)};
  assert_int_equal(pyop_op_create("Axpy", a, 2, &op), PYOP_EINVAL);
  assert_null(op);
  assert_msg_has("\"Axpy\"");
  assert_msg_has("unknown attribute \"beta\"");
  a[1] = attr_str("alpha", "1.0");
  assert_int_equal(pyop_op_create("Axpy", a, 2, &op), PYOP_EINVAL);
  assert_msg_has("attribute \"alpha\": expected float, given str");
  a[1] = attr_int("flag", 1);
  assert_int_equal(pyop_op_create("Axpy", a, 2, &op), PYOP_EINVAL);
  assert_msg_has("attribute \"flag\": expected bool, given int");
  /* Only list[int] stands in for list[float] (as int for float): not a
   * list[bool], and a list[int] is no float. */
  static const bool bools[2] = {true, false};
  a[1] = (pyop_attr){"scale", {.type = PYOP_ATTR_LIST_BOOL, .u.bools = {bools, 2}}};
  assert_int_equal(pyop_op_create("Axpy", a, 2, &op), PYOP_EINVAL);
  assert_msg_has("attribute \"scale\": expected list[float], given list[bool]");
  static const int64_t ints[1] = {2};
  a[1] = (pyop_attr){"alpha", {.type = PYOP_ATTR_LIST_INT, .u.ints = {ints, 1}}};
  assert_int_equal(pyop_op_create("Axpy", a, 2, &op), PYOP_EINVAL);
  assert_msg_has("attribute \"alpha\": expected float, given list[int]");
  a[1] = attr_int("alpha", 1);
  assert_int_equal(pyop_op_create("Axpy", a + 1, 1, &op), PYOP_EINVAL);
  assert_msg_has("required attribute \"mode\" (str) is missing");
  a[2] = attr_str("mode", "y");
  assert_int_equal(pyop_op_create("Axpy", a, 3, &op), PYOP_EINVAL);
  assert_msg_has("attribute \"mode\" given twice");
  a[0].value.u.s = (pyop_str){NULL, 3};
  assert_int_equal(pyop_op_create("Axpy", a, 1, &op), PYOP_EINVAL);
  assert_msg_has("attribute \"mode\": string: length > 0 with NULL data");
  a[0] = attr_str(NULL, "x");
  a[0].name = NULL;
  assert_int_equal(pyop_op_create("Axpy", a, 1, &op), PYOP_EINVAL);
  assert_msg_has("NULL name");
  assert_int_equal(pyop_op_create("Axpy", NULL, 1, &op), PYOP_EINVAL);
  assert_int_equal(pyop_op_create("Nope", NULL, 0, &op), PYOP_ENOENT);
  assert_msg_has("\"Nope\"");
  assert_int_equal(pyop_op_create("Axpy", NULL, 0, NULL), PYOP_EINVAL);
  /* Valid attributes, no out pointer: refused for that, no instance made. */
  pyop_attr ok_mode = attr_str("mode", "x");
  assert_int_equal(pyop_op_create("Axpy", &ok_mode, 1, NULL), PYOP_EINVAL);
  assert_string_equal(pyop_last_error(), "pyop_op_create: op_type or out is NULL");
  assert_int_equal(pyop__registry_live_instances(), 0);
  assert_int_equal(pyop_op_create(NULL, NULL, 0, &op), PYOP_EINVAL);
  assert_int_equal(holders_alive, 0);
  assert_int_equal(pyop__registry_live_instances(), 0);
}

static void test_create_failures(void **state) {
  (void)state;
  pyop_attr a[1] = {attr_str("mode", "x")};
  pyop_op *op;
  mode = M_PROTO_CREATE_FAILS;
  assert_int_equal(pyop_op_create("Axpy", a, 1, &op), PYOP_EPYTHON);
  assert_msg_has("create_holder (prototype) of \"Axpy\": ValueError: bad alpha (plugin.py:7)");
  mode = M_IMPL_CREATE_FAILS;
  assert_int_equal(pyop_op_create("Axpy", a, 1, &op), PYOP_EPYTHON);
  assert_msg_has("create_holder (implementation) of \"Axpy\"");
  assert_int_equal(holders_alive, 0); /* the prototype's holder was destroyed */
  /* A positive status is no success (outcome pass 2: src.out2.op.holder_positive_ok). */
  mode = M_IMPL_CREATE_ODD;
  op = NULL;
  assert_int_equal(pyop_op_create("Axpy", a, 1, &op), PYOP_EINTERNAL);
  assert_null(op);
  assert_msg_has("create_holder (implementation) of \"Axpy\" returned the invalid status 7");
  assert_int_equal(holders_alive, 0);
  assert_int_equal(pyop__registry_live_instances(), 0);
  assert_int_equal(pyop__registry_unload(), PYOP_OK);
}

static pyop_tensor f32(void *data, int ndim, const int64_t *shape) {
  pyop_tensor t;
  memset(&t, 0, sizeof t);
  t.data = data;
  t.dtype = PYOP_DTYPE_FLOAT32;
  t.ndim = ndim;
  uint64_t n = 4;
  for (int i = 0; i < ndim; i++) {
    t.shape[i] = shape[i];
    n *= (uint64_t)shape[i];
  }
  t.nbytes = data ? n : 0;
  return t;
}

static pyop_op *make_op(const char *op_type) {
  pyop_attr a[2] = {attr_str("mode", "x"), attr_int("alpha", 2)};
  pyop_op *op;
  assert_int_equal(pyop_op_create(op_type, a, 2, &op), PYOP_OK);
  return op;
}

static void test_infer_meta(void **state) {
  (void)state;
  pyop_op *op = make_op("Axpy");
  int64_t shape[2] = {2, 3};
  pyop_tensor x = f32(NULL, 2, shape), y = x;
  pyop_tensor_list in[3] = {{&x, 1}, {&y, 1}, {NULL, 0}};
  pyop_tensor out[1];
  assert_int_equal(pyop_op_infer_meta(op, in, 3, out, 1), PYOP_OK);
  assert_int_equal(out[0].dtype, PYOP_DTYPE_FLOAT32);
  assert_int_equal(out[0].ndim, 2);
  assert_int_equal(out[0].shape[1], 3);
  assert_null(out[0].data);
  assert_int_equal(out[0].nbytes, 24);
  /* The optional input may be absent; the dynamic one may hold several. */
  pyop_tensor many[3] = {x, x, x};
  in[1].count = 0;
  in[2] = (pyop_tensor_list){many, 3};
  assert_int_equal(pyop_op_infer_meta(op, in, 3, out, 1), PYOP_OK);
  in[1].count = 1;
  in[2].count = 0;

  assert_int_equal(pyop_op_infer_meta(op, in, 2, out, 1), PYOP_EINVAL);
  assert_msg_has("infer_meta of \"Axpy\": 2 input slots given, the op has 3");
  in[0].count = 0;
  assert_int_equal(pyop_op_infer_meta(op, in, 3, out, 1), PYOP_EINVAL);
  assert_msg_has("input 0 \"x\" is required (exactly 1): 0 tensors given");
  in[0].count = 1;
  pyop_tensor two[2] = {x, x};
  in[1] = (pyop_tensor_list){two, 2};
  assert_int_equal(pyop_op_infer_meta(op, in, 3, out, 1), PYOP_EINVAL);
  assert_msg_has("input 1 \"y\" is optional (0 or 1): 2 tensors given");
  in[1] = (pyop_tensor_list){&y, 1};
  y.ndim = 9;
  assert_int_equal(pyop_op_infer_meta(op, in, 3, out, 1), PYOP_EINVAL);
  assert_msg_has("input 1 \"y\" tensor 0");
  assert_msg_has("ndim");
  y.ndim = 2;
  y.dtype = PYOP_DTYPE_COUNT;
  assert_int_equal(pyop_op_infer_meta(op, in, 3, out, 1), PYOP_EINVAL);
  assert_msg_has("invalid data type");
  y.dtype = PYOP_DTYPE_FLOAT32;
  /* Empty before overflow: {2^62, 2^62, 0} and {0, 2^62, 2^62} are both
   * empty (0 bytes, accepted); {2^62, 2^62, 1} overflows wherever it is. */
  pyop_tensor e = y;
  const int64_t big = (int64_t)1 << 62;
  e.ndim = 3;
  e.data = NULL;
  e.nbytes = 0;
  in[1] = (pyop_tensor_list){&e, 1};
  const int64_t empties[][3] = {{big, big, 0}, {0, big, big}, {big, 0, big}};
  for (size_t k = 0; k < 3; k++) {
    memcpy(e.shape, empties[k], sizeof empties[k]);
    if (pyop_op_infer_meta(op, in, 3, out, 1) != PYOP_OK)
      fail_msg("empty {%lld, %lld, %lld}: %s", (long long)e.shape[0], (long long)e.shape[1],
               (long long)e.shape[2], pyop_last_error());
  }
  const int64_t overs[][3] = {{big, big, 1}, {1, big, big}};
  for (size_t k = 0; k < 2; k++) {
    memcpy(e.shape, overs[k], sizeof overs[k]);
    assert_int_equal(pyop_op_infer_meta(op, in, 3, out, 1), PYOP_EINVAL);
    assert_msg_has("size overflows");
  }
  in[1] = (pyop_tensor_list){&y, 1};
  assert_int_equal(pyop_op_infer_meta(op, in, 3, out, 2), PYOP_EINVAL);
  assert_msg_has("2 outputs given, the op has 1");
  assert_int_equal(pyop_op_infer_meta(op, in, 3, NULL, 1), PYOP_EINVAL);
  assert_int_equal(pyop_op_infer_meta(NULL, in, 3, out, 1), PYOP_EINVAL);

  /* What infer_meta produced is checked. */
  mode = M_INFER_UNSET;
  assert_int_equal(pyop_op_infer_meta(op, in, 3, out, 1), PYOP_EDESCRIPTOR);
  assert_msg_has("infer_meta of \"Axpy\" (axpy.py:3) produced an invalid output 0 \"z\"");
  assert_msg_has("not set");
  mode = M_INFER_NEG_DIM;
  assert_int_equal(pyop_op_infer_meta(op, in, 3, out, 1), PYOP_EDESCRIPTOR);
  assert_msg_has("negative dimension");
  mode = M_INFER_FAILS;
  assert_int_equal(pyop_op_infer_meta(op, in, 3, out, 1), PYOP_EPYTHON);
  assert_msg_has("infer_meta of \"Axpy\": TypeError: no shape");
  /* A positive status is no success, though the outputs were set (outcome
   * pass 2: src.out2.execute.infer_positive_ok). */
  mode = M_INFER_ODD;
  assert_int_equal(pyop_op_infer_meta(op, in, 3, out, 1), PYOP_EINTERNAL);
  assert_msg_has("infer_meta of \"Axpy\" returned the invalid status 7");
  /* One message, one prefix: a message naming the call is kept as is. */
  mode = M_INFER_FAILS_NAMED;
  assert_int_equal(pyop_op_infer_meta(op, in, 3, out, 1), PYOP_EPYTHON);
  assert_string_equal(pyop_last_error(), "infer_meta of op 'Axpy' (defined at axpy.py:3) "
                                         "failed: TypeError: no shape");
  assert_int_equal(pyop_last_status(), PYOP_EPYTHON);
  /* The message kept whole is the bridge's, the status the call's: what it
   * returned, also when the bridge recorded the message under another. */
  mode = M_INFER_NAMED_OTHER_STATUS;
  assert_int_equal(pyop_op_infer_meta(op, in, 3, out, 1), PYOP_EINTR);
  assert_int_equal(pyop_last_status(), PYOP_EINTR);
  assert_string_equal(pyop_last_error(), "infer_meta of op 'Axpy' (defined at axpy.py:3) "
                                         "failed: TypeError: no shape");
  /* Whether the call is put in front is decided by who recorded the
   * message, never by its words: the bridge's (set_error) is whole... */
  mode = M_INFER_FAILS_BRIDGE;
  assert_int_equal(pyop_op_infer_meta(op, in, 3, out, 1), PYOP_EPYTHON);
  assert_string_equal(pyop_last_error(), "op 'Axpy' (axpy.py:3): TypeError: no shape");
  /* ... and one recorded otherwise gets the call, whatever it reads like. */
  mode = M_INFER_FAILS_LOOKS_NAMED;
  assert_int_equal(pyop_op_infer_meta(op, in, 3, out, 1), PYOP_EPYTHON);
  assert_string_equal(pyop_last_error(), "infer_meta of \"Axpy\": infer_meta of op 'Axpy' is "
                                         "what this text begins with");
  pyop_op_destroy(op);
}

static void test_unsupported(void **state) {
  (void)state;
  /* An infer-only op cannot execute; an op without infer_meta cannot infer. */
  register_axpy("InferOnly", false, PYOP_CAP_INFER_META);
  register_axpy("ExecOnly", true, 0);
  pyop_op *a = make_op("InferOnly"), *b = make_op("ExecOnly");
  assert_int_equal(holders_alive, 2);
  assert_int_equal(pyop_op_capabilities(a), PYOP_CAP_INFER_META);
  assert_int_equal(pyop_op_capabilities(b), PYOP_CAP_EXECUTE);
  pyop_exec_ctx ctx = PYOP_EXEC_CTX_INIT;
  pyop_tensor out[1];
  assert_int_equal(pyop_op_execute(a, NULL, 0, out, 1, &ctx), PYOP_EUNSUPPORTED);
  assert_msg_has("\"InferOnly\" has no execute");
  assert_int_equal(pyop_op_infer_meta(b, NULL, 0, out, 1), PYOP_EUNSUPPORTED);
  assert_msg_has("\"ExecOnly\" has no infer_meta");
  pyop_op_destroy(a);
  pyop_op_destroy(b);
}

/* The host's allocator: records the calls. */
static struct {
  int outputs, workspaces, fail;
  size_t index;
  pyop_tensor req;
  void *bufs[4];
  int n_bufs;
} host;

static int host_alloc_output(void *user, size_t index, pyop_tensor *t) {
  assert_ptr_equal(user, &host);
  host.outputs++;
  host.index = index;
  host.req = *t;
  if (host.fail) return -1;
  t->data = host.bufs[host.n_bufs++] = calloc(1, t->nbytes ? t->nbytes : 1);
  return 0;
}

static int host_alloc_workspace(void *user, uint64_t nbytes, void **out) {
  (void)user;
  host.workspaces++;
  *out = host.bufs[host.n_bufs++] = malloc(nbytes);
  return 0;
}

static void host_reset(void) {
  for (int i = 0; i < host.n_bufs; i++) free(host.bufs[i]);
  memset(&host, 0, sizeof host);
}

static void test_execute_host_alloc(void **state) {
  (void)state;
  pyop_op *op = make_op("Axpy"); /* alpha 2 */
  int64_t shape[2] = {2, 3};
  float xv[6] = {1, 2, 3, 4, 5, 6}, yv[6] = {1, 1, 1, 1, 1, 1};
  pyop_tensor x = f32(xv, 2, shape), y = f32(yv, 2, shape);
  pyop_tensor_list in[3] = {{&x, 1}, {&y, 1}, {NULL, 0}};
  pyop_tensor out[1];
  memset(out, 0, sizeof out);
  pyop_exec_ctx ctx = PYOP_EXEC_CTX_INIT;
  ctx.user = &host;
  ctx.alloc_output = host_alloc_output;
  ctx.alloc_workspace = host_alloc_workspace;
  pt_faults_install();
  pt_faults_arm(-1);
  assert_int_equal(pyop_op_execute(op, in, 3, out, 1, &ctx), PYOP_OK);
  assert_int_equal(pt_faults_calls(), 0); /* the hot path allocates nothing */
  pt_faults_remove();
  assert_int_equal(host.outputs, 1);
  assert_int_equal(host.index, 0);
  assert_int_equal(host.req.nbytes, 24); /* computed by libpyop */
  assert_int_equal(host.req.ndim, 2);
  assert_non_null(out[0].data);
  assert_int_equal(out[0].nbytes, 24);
  assert_int_equal(out[0].shape[0], 2);
  const float *z = out[0].data;
  assert_true(z[0] == 3.0f && z[5] == 8.0f);
  host_reset();

  mode = M_EXEC_WORKSPACE;
  assert_int_equal(pyop_op_execute(op, in, 3, out, 1, &ctx), PYOP_OK);
  assert_int_equal(host.workspaces, 1);
  host_reset();
  ctx.alloc_workspace = NULL;
  assert_int_equal(pyop_op_execute(op, in, 3, out, 1, &ctx), PYOP_EUNSUPPORTED);
  assert_msg_has("no alloc_workspace");
  host_reset();
  ctx.alloc_workspace = host_alloc_workspace;

  mode = M_OK;
  host.fail = 1;
  ctx.user = &host;
  assert_int_equal(pyop_op_execute(op, in, 3, out, 1, &ctx), PYOP_EHOST);
  assert_msg_has("the host's alloc_output failed for output 0 \"z\" (float32[2,3], 24 bytes)");
  host_reset();

  mode = M_EXEC_BAD_INDEX;
  assert_int_equal(pyop_op_execute(op, in, 3, out, 1, &ctx), PYOP_EINVAL);
  assert_msg_has("output index 5 out of range (1 output)");
  mode = M_EXEC_TWICE;
  assert_int_equal(pyop_op_execute(op, in, 3, out, 1, &ctx), PYOP_EINVAL);
  assert_msg_has("output 0 \"z\" requested twice");
  host_reset();
  mode = M_EXEC_BAD_STATUS;
  assert_int_equal(pyop_op_execute(op, in, 3, out, 1, &ctx), PYOP_EINTERNAL);
  assert_msg_has("invalid status 7");
  mode = M_OK;

  /* Argument checks. */
  x.nbytes = 20;
  assert_int_equal(pyop_op_execute(op, in, 3, out, 1, &ctx), PYOP_EINVAL);
  assert_msg_has("execute of \"Axpy\": input 0 \"x\" tensor 0 (float32[2,3]): nbytes smaller");
  x.nbytes = 24;
  x.data = NULL;
  assert_int_equal(pyop_op_execute(op, in, 3, out, 1, &ctx), PYOP_EINVAL);
  assert_msg_has("NULL data");
  x.data = xv;
  assert_int_equal(pyop_op_execute(op, in, 3, out, 1, NULL), PYOP_EINVAL);
  assert_msg_has("PYOP_EXEC_CTX_INIT");
  pyop_exec_ctx small = ctx;
  small.struct_size = offsetof(pyop_exec_ctx, alloc_workspace);
  assert_int_equal(pyop_op_execute(op, in, 3, out, 1, &small), PYOP_EINVAL);
  assert_int_equal(pyop_op_execute(op, in, 3, out, 0, &ctx), PYOP_EINVAL);
  assert_int_equal(pyop_op_execute(op, in, 1, out, 1, &ctx), PYOP_EINVAL);
  assert_int_equal(pyop_op_execute(NULL, in, 3, out, 1, &ctx), PYOP_EINVAL);
  host_reset();
  pyop_op_destroy(op);
}

/* Lines the host's log hook received (the refused callback's). */
static char refused_log_buf[4096];
static void refused_log(void *user, int level, const char *line) {
  (void)user;
  (void)level;
  size_t len = strlen(refused_log_buf);
  snprintf(refused_log_buf + len, sizeof refused_log_buf - len, "%s\n", line);
}

/* A service of execute called after execute returned is refused
 * (PYOP_ESTATE), naming the service, the call and the object that called
 * it (dladdr's file name; "a bridge" when dladdr cannot tell or gives an
 * empty name); nothing is allocated. */
static int no_dladdr(const void *addr, Dl_info *info) {
  (void)addr;
  (void)info;
  return 0;
}
static int empty_dladdr(const void *addr, Dl_info *info) {
  (void)addr;
  memset(info, 0, sizeof *info);
  info->dli_fname = "";
  return 1;
}

static void test_service_after_return(void **state) {
  (void)state;
  pyop_op *op = make_op("Axpy");
  int64_t shape[1] = {2};
  float xv[2] = {1, 2}, zv[2];
  pyop_tensor x = f32(xv, 1, shape), z = f32(zv, 1, shape);
  pyop_tensor_list in[3] = {{&x, 1}, {NULL, 0}, {NULL, 0}};
  pyop_exec_ctx ctx = PYOP_EXEC_CTX_INIT;
  ctx.user = &host;
  ctx.alloc_output = host_alloc_output;
  assert_int_equal(pyop_op_execute(op, in, 3, &z, 1, &ctx), PYOP_OK);
  assert_int_equal(host.outputs, 1);
  pyop_tensor late = x;
  pyop_host_hooks lh = PYOP_HOST_HOOKS_INIT;
  lh.log = refused_log;
  assert_int_equal(pyop_set_host_hooks(&lh), PYOP_OK);
  refused_log_buf[0] = '\0';
  assert_int_equal(kept_svc.alloc_output(kept_svc.ctx, 0, &late), PYOP_ESTATE);
  assert_int_equal(pyop_set_host_hooks(NULL), PYOP_OK);
  /* Logged too (a bridge that ignores the status leaves a trace), naming
   * the service and the call. */
  if (!strstr(refused_log_buf, "libpyop: error: the bridge ") ||
      !strstr(refused_log_buf, " called alloc_output of execute after that call returned, or "
                               "from another thread; refused"))
    fail_msg("the refusal was not logged:\n%s", refused_log_buf);
  assert_msg_has("execute: alloc_output called after the call it was passed to returned, or "
                 "from another thread (the bridge ");
  assert_msg_has("); such a callback is valid only during that call, on its thread");
  assert_int_equal(host.outputs, 1); /* the host was not asked again */
  pyop__sys saved = pyop__sys_table;
  pyop__sys_table.dladdr = no_dladdr;
  assert_int_equal(kept_svc.alloc_output(kept_svc.ctx, 0, &late), PYOP_ESTATE);
  assert_msg_has("or from another thread (a bridge);");
  pyop__sys_table.dladdr = empty_dladdr;
  assert_int_equal(kept_svc.alloc_output(kept_svc.ctx, 0, &late), PYOP_ESTATE);
  assert_msg_has("or from another thread (a bridge);");
  pyop__sys_table = saved;
  host_reset();
  pyop_op_destroy(op);
}

/* Strict outputs compare execute with infer_meta: an op whose prototype
 * has no infer_meta runs as before (nothing to compare with). */
static void test_strict_without_infer_meta(void **state) {
  (void)state;
  register_axpy("ExecOnly", true, 0);
  assert_int_equal(setenv("PYOP_STRICT_OUTPUTS", "1", 1), 0);
  assert_int_equal(unsetenv("ASCEND_CUSTOM_OPP_PATH"), 0);
  assert_int_equal(pyop_load(), PYOP_OK); /* nothing to load; reads the variable */
  pyop_attr a = attr_str("mode", "x");
  pyop_op *op = NULL;
  int rc = pyop_op_create("ExecOnly", &a, 1, &op);
  assert_int_equal(unsetenv("PYOP_STRICT_OUTPUTS"), 0);
  assert_int_equal(rc, PYOP_OK);
  int64_t shape[1] = {2};
  float xv[2] = {1, 2};
  pyop_tensor x = f32(xv, 1, shape), z;
  memset(&z, 0, sizeof z);
  pyop_tensor_list in[3] = {{&x, 1}, {NULL, 0}, {NULL, 0}};
  pyop_exec_ctx ctx = PYOP_EXEC_CTX_INIT;
  ctx.user = &host;
  ctx.alloc_output = host_alloc_output;
  rc = pyop_op_execute(op, in, 3, &z, 1, &ctx);
  if (rc != PYOP_OK) fail_msg("strict execute without infer_meta: %s", pyop_last_error());
  assert_true(((float *)z.data)[1] == 2.0f);
  host_reset();
  pyop_op_destroy(op);
  assert_int_equal(pyop_load(), PYOP_OK); /* strict mode off again */
}

static void test_execute_preallocated(void **state) {
  (void)state;
  pyop_op *op = make_op("Axpy");
  int64_t shape[2] = {2, 3}, other[2] = {3, 2};
  float xv[6] = {1, 2, 3, 4, 5, 6}, zv[6] = {0};
  pyop_tensor x = f32(xv, 2, shape);
  pyop_tensor_list in[3] = {{&x, 1}, {NULL, 0}, {NULL, 0}};
  pyop_tensor out[1] = {f32(zv, 2, shape)};
  pyop_exec_ctx ctx = PYOP_EXEC_CTX_INIT; /* no alloc_output */
  assert_int_equal(pyop_op_execute(op, in, 3, out, 1, &ctx), PYOP_OK);
  assert_ptr_equal(out[0].data, zv);
  assert_true(zv[4] == 5.0f);
  out[0] = f32(zv, 2, other);
  assert_int_equal(pyop_op_execute(op, in, 3, out, 1, &ctx), PYOP_EINVAL);
  assert_msg_has("output 0 \"z\" requested as float32[2,3] but the host passed float32[3,2]");
  out[0] = f32(zv, 2, shape);
  out[0].dtype = PYOP_DTYPE_INT32;
  assert_int_equal(pyop_op_execute(op, in, 3, out, 1, &ctx), PYOP_EINVAL);
  assert_msg_has("but the host passed int32[2,3]");
  out[0] = f32(zv, 2, shape);
  out[0].nbytes = 8;
  assert_int_equal(pyop_op_execute(op, in, 3, out, 1, &ctx), PYOP_EINVAL);
  assert_msg_has("fewer bytes");
  out[0] = f32(NULL, 2, shape);
  assert_int_equal(pyop_op_execute(op, in, 3, out, 1, &ctx), PYOP_EINVAL);
  assert_msg_has("no buffer");
  pyop_op_destroy(op);
}

static void test_compile_declare_launch(void **state) {
  (void)state;
  impl_callbacks = &kernel_cbs;
  impl_caps = PYOP_CAP_COMPILE | PYOP_CAP_LAUNCH;
  register_axpy("Kern", true, PYOP_CAP_INFER_META);
  impl_callbacks = &impl_cbs;
  impl_caps = PYOP_CAP_EXECUTE;
  pyop_op *op = make_op("Kern");
  assert_int_equal(pyop_op_capabilities(op),
                   PYOP_CAP_INFER_META | PYOP_CAP_COMPILE | PYOP_CAP_LAUNCH);
  int64_t shape[1] = {4};
  float xv[4] = {0}, zv[4] = {0};
  pyop_tensor x = f32(xv, 1, shape), z = f32(zv, 1, shape);
  pyop_tensor_list in[3] = {{&x, 1}, {NULL, 0}, {NULL, 0}};
  void *art;
  size_t len;
  /* The artefact replaced by a later set_artifact is freed: once the last
   * one is freed too, nothing is left. */
  pt_faults_install();
  pt_faults_arm(-1);
  long live = pt_live_allocs();
  assert_int_equal(pyop_op_compile(op, in, 3, &z, 1, &art, &len), PYOP_OK);
  assert_int_equal(len, 4);
  assert_memory_equal(art, "wxyz", 4);
  pyop_free(art);
  assert_int_equal(pt_live_allocs(), live);
  pt_faults_remove();
  /* No out pointer for the length (or the artefact): refused, nothing run. */
  assert_int_equal(pyop_op_compile(op, in, 3, &z, 1, &art, NULL), PYOP_EINVAL);
  assert_msg_has("pyop_op_compile: op, artifact or len is NULL");
  assert_int_equal(pyop_op_compile(op, in, 3, &z, 1, NULL, &len), PYOP_EINVAL);
  mode = M_INFER_FAILS;
  assert_int_equal(pyop_op_compile(op, in, 3, &z, 1, &art, &len), PYOP_EINVAL);
  assert_msg_has("compile of \"Kern\": set_artifact: 2 bytes from NULL");
  assert_string_equal(pyop_last_error(), "compile of \"Kern\": set_artifact: 2 bytes from NULL\n"
                                         "(set_artifact failed)");
  assert_null(art);
  /* An empty artefact stored last replaces the earlier one too: no
   * artefact, and (NULL, 0) is no error (both-sides pass, session 14). */
  mode = M_COMPILE_EMPTY;
  art = (void *)1;
  len = 9;
  int crc = pyop_op_compile(op, in, 3, &z, 1, &art, &len);
  if (crc != PYOP_OK) fail_msg("an empty artefact last: %s", pyop_last_error());
  assert_null(art);
  assert_int_equal(len, 0);
  mode = M_OK;
  assert_int_equal(pyop_op_compile(op, in, 3, &z, 2, &art, &len), PYOP_EINVAL);

  /* A plan naming a missing library is refused at declare time. */
  assert_int_not_equal(pyop_op_declare_launch_args(op, in, 3, &z, 1), PYOP_OK);
  assert_msg_has("libkernel.so");
  /* libpyop's reason is the call's error, whatever the op made of it. */
  mode = M_DECLARE_CATCH;
  assert_int_equal(pyop_op_declare_launch_args(op, in, 3, &z, 1), PYOP_ELAUNCH);
  assert_msg_has("op \"Kern\": launch 0: cannot open kernel library: /nonexistent/libkernel.so");
  assert_msg_has("\n(add_launch failed; the op caught it and returned normally)");
  /* What finally failed is the op (its status), the refusal said after it. */
  mode = M_DECLARE_OWN;
  assert_int_equal(pyop_op_declare_launch_args(op, in, 3, &z, 1), PYOP_EPYTHON);
  assert_msg_has("declare_launch_args of \"Kern\" failed (PYOP_EPYTHON) and gave no detail\n"
                 "(earlier in this call, add_launch failed: op \"Kern\": launch 0: cannot open "
                 "kernel library: /nonexistent/libkernel.so");
  mode = M_EXEC_WORKSPACE; /* a plan without a launch */
  assert_int_equal(pyop_op_declare_launch_args(op, in, 3, &z, 1), PYOP_ELAUNCH);
  mode = M_OK;
  /* launch declares first, and fails the same way; nothing is kept. */
  pyop_exec_ctx ctx = PYOP_EXEC_CTX_INIT;
  assert_int_not_equal(pyop_op_launch(op, in, 3, &z, 1, &ctx), PYOP_OK);
  assert_msg_has("libkernel.so");
  pyop_tensor unallocated = f32(NULL, 1, shape);
  unallocated.nbytes = 16;
  assert_int_equal(pyop_op_launch(op, in, 3, &unallocated, 1, &ctx), PYOP_EINVAL);
  assert_msg_has("not allocated");
  assert_int_equal(pyop_op_launch(op, in, 3, &z, 1, NULL), PYOP_EINVAL);

  /* Ops without the capabilities. */
  pyop_op *plain = make_op("Axpy");
  assert_int_equal(pyop_op_compile(plain, in, 3, &z, 1, &art, &len), PYOP_EUNSUPPORTED);
  assert_msg_has("\"Axpy\" has no compile");
  assert_int_equal(pyop_op_declare_launch_args(plain, in, 3, &z, 1), PYOP_EUNSUPPORTED);
  assert_int_equal(pyop_op_launch(plain, in, 3, &z, 1, &ctx), PYOP_EUNSUPPORTED);
  assert_int_equal(pyop_op_compile(NULL, in, 3, &z, 1, &art, &len), PYOP_EINVAL);
  pyop_op_destroy(plain);
  pyop_op_destroy(op);
}

/*
 * One message, one prefix, also nested: an op whose infer_meta runs another
 * op's infer_meta (pyop_op_infer_meta from inside its callback) and returns
 * the status it got, saying nothing itself. The inner call's failure keeps
 * the bridge's message whole (it names the inner call); the outer call is
 * put in front of it, the message now being the inner call's result, not a
 * message naming the outer call (batch 11 survivor:
 * src.b11.error.keep_not_counted: a kept message not counted as a new one
 * was still "the bridge's" to the outer call, which then kept it as is).
 */
static pyop_op *nested_inner;
static int nested_calls;
static int outer_infer(void *hv, const pyop_infer_args *a) {
  (void)hv;
  nested_calls++;
  int64_t shape[1] = {2};
  pyop_tensor x = f32(NULL, 1, shape);
  pyop_tensor_list in[3] = {{&x, 1}, {NULL, 0}, {NULL, 0}};
  pyop_tensor out[1];
  int rc = pyop_op_infer_meta(nested_inner, in, 3, out, 1);
  if (rc == PYOP_OK) a->outputs[0] = out[0];
  return rc;
}
static const pyop_op_callbacks outer_cbs = {sizeof(pyop_op_callbacks), create, destroy,
                                            outer_infer, NULL, NULL, NULL};

static void test_nested_failure_prefixed_once(void **state) {
  (void)state;
  pyop_io_view in[1] = {{sizeof(pyop_io_view), S("x"), PYOP_IO_REQUIRED}};
  pyop_io_view out[1] = {{sizeof(pyop_io_view), S("z"), PYOP_IO_REQUIRED}};
  pyop_proto_view p = {sizeof p, S("Outer"), S("pyop:outer"), S("outer.py"), 9,
                       PYOP_CAP_INFER_META, in, 1, out, 1, NULL, 0, (void *)0x5, &outer_cbs};
  pyop__txn *t;
  assert_int_equal(pyop__txn_begin(&t), PYOP_OK);
  assert_int_equal(pyop__txn_add_proto(t, &p), PYOP_OK);
  assert_int_equal(pyop__txn_commit(t), PYOP_OK);
  nested_inner = make_op("Axpy");
  pyop_op *outer;
  assert_int_equal(pyop_op_create("Outer", NULL, 0, &outer), PYOP_OK);
  int64_t shape[1] = {2};
  pyop_tensor x = f32(NULL, 1, shape);
  pyop_tensor_list xl[1] = {{&x, 1}};
  pyop_tensor z[1];
  nested_calls = 0;
  assert_int_equal(pyop_op_infer_meta(outer, xl, 1, z, 1), PYOP_OK); /* both succeed */
  assert_int_equal(nested_calls, 1);
  /* The inner bridge's message names the inner call: kept whole there,
   * the outer call in front of it once. */
  mode = M_INFER_FAILS_NAMED;
  assert_int_equal(pyop_op_infer_meta(outer, xl, 1, z, 1), PYOP_EPYTHON);
  assert_string_equal(pyop_last_error(),
                      "infer_meta of \"Outer\": infer_meta of op 'Axpy' (defined at axpy.py:3) "
                      "failed: TypeError: no shape");
  assert_int_equal(pyop_last_status(), PYOP_EPYTHON);
  /* Likewise when the inner status differs from the bridge's message's. */
  mode = M_INFER_NAMED_OTHER_STATUS;
  assert_int_equal(pyop_op_infer_meta(outer, xl, 1, z, 1), PYOP_EINTR);
  assert_string_equal(pyop_last_error(),
                      "infer_meta of \"Outer\": infer_meta of op 'Axpy' (defined at axpy.py:3) "
                      "failed: TypeError: no shape");
  assert_int_equal(pyop_last_status(), PYOP_EINTR);
  /* An inner message libpyop prefixed: the outer call in front too. */
  mode = M_INFER_FAILS;
  assert_int_equal(pyop_op_infer_meta(outer, xl, 1, z, 1), PYOP_EPYTHON);
  assert_string_equal(pyop_last_error(),
                      "infer_meta of \"Outer\": infer_meta of \"Axpy\": TypeError: no shape");
  mode = M_OK;
  pyop_op_destroy(outer);
  pyop_op_destroy(nested_inner);
  nested_inner = NULL;
}

/* ---------------------------------------------------- fault injection */

typedef struct sweep {
  long allocs;
  pyop_op *op;
} sweep;

static int sweep_create(void *user) {
  sweep *s = user;
  int64_t ints[3] = {4, 5, 6};
  pyop_attr attrs[2] = {attr_str("mode", "m"), {"scale", {0}}};
  attrs[1].value.type = PYOP_ATTR_LIST_INT;
  attrs[1].value.u.ints.items = ints;
  attrs[1].value.u.ints.count = 3;
  return pyop_op_create("Axpy", attrs, 2, &s->op);
}

static void sweep_check(void *user, int rc) {
  sweep *s = user;
  assert_int_equal(rc, PYOP_ENOMEM);
  assert_null(s->op);
  assert_int_equal(pt_live_allocs(), s->allocs);
  assert_int_equal(holders_alive, 0);
  assert_int_equal(pyop__registry_live_instances(), 0);
}

static void test_fault_sweep_create(void **state) {
  (void)state;
  pt_faults_install();
  sweep s = {pt_live_allocs(), NULL};
  long points = pt_faults_sweep(sweep_create, sweep_check, &s, 100);
  assert_true(points >= 3); /* op, views, conversion buffer */
  assert_non_null(s.op);
  assert_int_equal(seen.n_scale, 3);
  assert_true(seen.scale[2] == 6.0);
  pyop_op_destroy(s.op);
  assert_int_equal(pt_live_allocs(), s.allocs);
}

/* An instance keeps its entry alive across a failed unload and a clear
 * that waits for it. */
static void test_instance_pins_entry(void **state) {
  (void)state;
  pyop_op *op = make_op("Axpy");
  assert_int_equal(pyop__registry_unload(), PYOP_EBUSY);
  assert_int_equal(pyop__registry_clear(), PYOP_EBUSY);
  assert_string_equal(pyop_op_get_info(op)->proto_source, "axpy.py:3");
  pyop_op_destroy(op);
  assert_int_equal(pyop__registry_unload(), PYOP_OK);
  assert_int_equal(pyop_op_create("Axpy", NULL, 0, &op), PYOP_ENOENT);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_attr_resolution, setup, teardown),
      cmocka_unit_test_setup_teardown(test_attr_errors, setup, teardown),
      cmocka_unit_test_setup_teardown(test_no_float_for_int, setup, teardown),
      cmocka_unit_test_setup_teardown(test_two_int_lists_converted, setup, teardown),
      cmocka_unit_test_setup_teardown(test_create_failures, setup, teardown),
      cmocka_unit_test_setup_teardown(test_infer_meta, setup, teardown),
      cmocka_unit_test_setup_teardown(test_unsupported, setup, teardown),
      cmocka_unit_test_setup_teardown(test_execute_host_alloc, setup, teardown),
      cmocka_unit_test_setup_teardown(test_execute_preallocated, setup, teardown),
      cmocka_unit_test_setup_teardown(test_service_after_return, setup, teardown),
      cmocka_unit_test_setup_teardown(test_strict_without_infer_meta, setup, teardown),
      cmocka_unit_test_setup_teardown(test_compile_declare_launch, setup, teardown),
      cmocka_unit_test_setup_teardown(test_nested_failure_prefixed_once, setup, teardown),
      cmocka_unit_test_setup_teardown(test_fault_sweep_create, setup, teardown),
      cmocka_unit_test_setup_teardown(test_instance_pins_entry, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
