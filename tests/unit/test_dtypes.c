/*
 * Data type constraints (src/dtypes.c; pyop.h, pyop_dtype_set): a host
 * prototype's REG_OP TensorType/DATATYPE sets registered, copied, shown by
 * pyop_op_get and compared; callers of older pyop_op_info and proto view
 * sizes; sets naming unknown types and symbols that disagree refused; the
 * refusal before the op runs (infer_meta, execute, declare_launch_args) and
 * when the op asks for an output outside them.
 */
#include "op.h"
#include "registry.h"
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pyop_str S(const char *s) { return (pyop_str){s, strlen(s)}; }

#define BIT(d) PYOP_DTYPE_BIT(PYOP_DTYPE_##d)

/* ------------------------------------------------------ fake callbacks */

static int executed, inferred, declared;
static int32_t out_dtype = -1; /* what execute asks output 0 for; -1: input 0's */

static int cb_create(void *ctx, const pyop_attr_view *a, size_t n, void **out) {
  (void)ctx, (void)a, (void)n;
  *out = NULL;
  return PYOP_OK;
}
static void cb_destroy(void *h) { (void)h; }
static int cb_infer(void *h, const pyop_infer_args *a) {
  (void)h;
  inferred++;
  a->outputs[0] = a->inputs[0].items[0];
  return PYOP_OK;
}
static int cb_exec(void *h, const pyop_exec_args *a) {
  (void)h;
  executed++;
  /* Input 0's description, or input 1's when input 0 is an absent optional one. */
  pyop_tensor y = a->inputs[0].count ? a->inputs[0].items[0] : a->inputs[1].items[0];
  y.data = NULL;
  if (out_dtype >= 0) y.dtype = out_dtype;
  return a->services->alloc_output(a->services->ctx, 0, &y);
}
static int cb_declare(void *h, const pyop_declare_args *a) {
  (void)h, (void)a;
  declared++;
  return PYOP_OK;
}

static const pyop_op_callbacks proto_cbs = {sizeof(pyop_op_callbacks), cb_create, cb_destroy,
                                            cb_infer, NULL, NULL, NULL};
static const pyop_op_callbacks impl_cbs = {sizeof(pyop_op_callbacks), cb_create, cb_destroy,
                                           NULL, cb_exec, NULL, cb_declare};

static void assert_msg_has(const char *part) {
  if (!strstr(pyop_last_error(), part))
    fail_msg("message \"%s\" lacks \"%s\"", pyop_last_error(), part);
}

static int setup(void **state) {
  (void)state;
  executed = inferred = declared = 0;
  out_dtype = -1;
  return pyop__registry_clear() == PYOP_OK ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  return pyop__registry_clear() == PYOP_OK ? 0 : -1;
}

/* A Python implementation (execute, declare_launch_args) of op_type,
 * committed: it binds to the host prototype registered before. */
static void add_impl(const char *op_type) {
  pyop_impl_view iv = {sizeof iv, S(op_type), S("pyop:p.Impl"), S("impl.py"), 9,
                       PYOP_CAP_EXECUTE | PYOP_CAP_LAUNCH, NULL, &impl_cbs};
  pyop__txn *t;
  assert_int_equal(pyop__txn_begin(&t), PYOP_OK);
  assert_int_equal(pyop__txn_add_impl(t, &iv), PYOP_OK);
  assert_int_equal(pyop__txn_commit(t), PYOP_OK);
}

/*
 * REG_OP(Add) .INPUT(x, "T") .INPUT(y, "T") .OUTPUT(z, "T")
 *   .DATATYPE(T, TensorType({DT_FLOAT, DT_FLOAT16}))   (symbol T)
 * or, with sym NULL, x and y each TensorType({DT_FLOAT, DT_FLOAT16}) and z
 * TensorType({DT_FLOAT}).
 */
typedef struct host_op {
  pyop_io_info ins[2], outs[1];
  pyop_dtype_set in_sets[2], out_sets[1];
  pyop_op_info info;
} host_op;

static void host_op_init(host_op *h, const char *op_type, const char *sym) {
  memset(h, 0, sizeof *h);
  h->ins[0] = (pyop_io_info){"x", PYOP_IO_REQUIRED};
  h->ins[1] = (pyop_io_info){"y", PYOP_IO_REQUIRED};
  h->outs[0] = (pyop_io_info){"z", PYOP_IO_REQUIRED};
  uint64_t two = BIT(FLOAT32) | BIT(FLOAT16);
  h->in_sets[0] = (pyop_dtype_set){two, sym};
  h->in_sets[1] = (pyop_dtype_set){two, sym};
  h->out_sets[0] = (pyop_dtype_set){sym ? two : BIT(FLOAT32), sym};
  h->info.struct_size = sizeof h->info;
  h->info.op_type = op_type;
  h->info.inputs = h->ins;
  h->info.n_inputs = 2;
  h->info.outputs = h->outs;
  h->info.n_outputs = 1;
  h->info.input_dtypes = h->in_sets;
  h->info.output_dtypes = h->out_sets;
}

/* ------------------------------------------------------------------ tests */

/* Registered, copied (the host's strings may go), shown, idempotent, and
 * other constraints conflict. */
static void test_host_constraints_registered(void **state) {
  (void)state;
  host_op h;
  char sym[8] = "T";
  host_op_init(&h, "Add", sym);
  assert_int_equal(pyop_register_host_prototype(&h.info), PYOP_OK);
  sym[0] = 'U'; /* the copy does not follow the host's buffer */
  const pyop_op_info *info;
  assert_int_equal(pyop_op_get("Add", &info), PYOP_OK);
  assert_true(PYOP_OP_INFO_HAS(info, output_dtypes));
  assert_non_null(info->input_dtypes);
  assert_non_null(info->output_dtypes);
  assert_int_equal(info->input_dtypes[0].mask, BIT(FLOAT32) | BIT(FLOAT16));
  assert_string_equal(info->input_dtypes[1].symbol, "T");
  assert_ptr_equal(info->input_dtypes[0].symbol, info->output_dtypes[0].symbol); /* one copy */
  assert_int_equal(info->output_dtypes[0].mask, BIT(FLOAT32) | BIT(FLOAT16));
  pyop_op_info_release(info);
  sym[0] = 'T';
  assert_int_equal(pyop_register_host_prototype(&h.info), PYOP_OK); /* the same: idempotent */
  h.in_sets[1].mask = BIT(FLOAT32);
  h.in_sets[0].mask = BIT(FLOAT32);
  h.out_sets[0].mask = BIT(FLOAT32);
  assert_int_equal(pyop_register_host_prototype(&h.info), PYOP_ECONFLICT);
  assert_msg_has("input 0 \"x\": data types float32 as T vs float32, float16 as T");
  /* Without constraints: none shown at all. */
  host_op plain;
  host_op_init(&plain, "Plain", NULL);
  plain.info.input_dtypes = NULL;
  plain.in_sets[0].mask = 0;
  plain.out_sets[0] = (pyop_dtype_set){0, ""};
  assert_int_equal(pyop_register_host_prototype(&plain.info), PYOP_OK);
  assert_int_equal(pyop_op_get("Plain", &info), PYOP_OK);
  assert_null(info->input_dtypes);
  assert_null(info->output_dtypes); /* all-zero sets and "" symbols: unconstrained */
  pyop_op_info_release(info);
}

/* A host of the pyop_op_info before the constraints, or one whose
 * struct_size holds input_dtypes but not output_dtypes: what it does not
 * cover is never read (garbage pointers there are not touched). */
static void test_older_info_sizes(void **state) {
  (void)state;
  host_op h;
  host_op_init(&h, "Old", "T");
  h.info.input_dtypes = (const pyop_dtype_set *)(uintptr_t)0x10; /* would crash if read */
  h.info.output_dtypes = (const pyop_dtype_set *)(uintptr_t)0x10;
  h.info.struct_size = offsetof(pyop_op_info, input_dtypes);
  assert_int_equal(pyop_register_host_prototype(&h.info), PYOP_OK);
  const pyop_op_info *info;
  assert_int_equal(pyop_op_get("Old", &info), PYOP_OK);
  assert_null(info->input_dtypes);
  assert_null(info->output_dtypes);
  pyop_op_info_release(info);
  host_op_init(&h, "Half", NULL);
  h.info.output_dtypes = (const pyop_dtype_set *)(uintptr_t)0x10;
  h.info.struct_size = PYOP_MEMBER_END(pyop_op_info, input_dtypes);
  assert_int_equal(pyop_register_host_prototype(&h.info), PYOP_OK);
  assert_int_equal(pyop_op_get("Half", &info), PYOP_OK);
  assert_non_null(info->input_dtypes);
  assert_null(info->output_dtypes);
  pyop_op_info_release(info);
  /* An even older host (before input_flags) still registers. */
  host_op_init(&h, "Older", NULL);
  h.info.struct_size = offsetof(pyop_op_info, input_flags);
  assert_int_equal(pyop_register_host_prototype(&h.info), PYOP_OK);
}

/* Sets naming a type that is no pyop_dtype, symbols that are not names or
 * disagree, too many symbols: refused, nothing registered. */
static void test_bad_constraints_refused(void **state) {
  (void)state;
  host_op h;
  host_op_init(&h, "Bad", NULL);
  h.in_sets[1].mask |= PYOP_DTYPE_BIT(PYOP_DTYPE_COUNT);
  assert_int_equal(pyop_register_host_prototype(&h.info), PYOP_EDESCRIPTOR);
  assert_msg_has("prototype \"Bad\"");
  assert_msg_has("input 1 \"y\": data type set 0x2003 names data type 13, which is not a "
                 "pyop_dtype (0..12)");
  host_op_init(&h, "Bad", NULL);
  h.out_sets[0].mask = 1ull << 63;
  assert_int_equal(pyop_register_host_prototype(&h.info), PYOP_EDESCRIPTOR);
  assert_msg_has("output 0 \"z\": data type set 0x8000000000000000 names data type 63");
  host_op_init(&h, "Bad", "1T");
  assert_int_equal(pyop_register_host_prototype(&h.info), PYOP_EDESCRIPTOR);
  assert_msg_has("input 0 \"x\": data type symbol: not an identifier");
  host_op_init(&h, "Bad", "T");
  h.out_sets[0].mask = BIT(FLOAT32);
  assert_int_equal(pyop_register_host_prototype(&h.info), PYOP_EDESCRIPTOR);
  assert_msg_has("output 0 \"z\": data type symbol \"T\" allows float32 here but float32, "
                 "float16 at input 0 \"x\" (one symbol has one set)");
  /* 65 inputs of 65 symbols. */
  enum { N = PYOP_MAX_DTYPE_SYMBOLS + 1 };
  static pyop_io_info ins[N];
  static pyop_dtype_set sets[N];
  static char names[N][8], syms[N][8];
  for (int i = 0; i < N; i++) {
    snprintf(names[i], sizeof names[i], "x%d", i);
    snprintf(syms[i], sizeof syms[i], "T%d", i);
    ins[i] = (pyop_io_info){names[i], PYOP_IO_REQUIRED};
    sets[i] = (pyop_dtype_set){0, syms[i]};
  }
  host_op_init(&h, "Many", NULL);
  h.info.inputs = ins;
  h.info.n_inputs = N;
  h.info.input_dtypes = sets;
  assert_int_equal(pyop_register_host_prototype(&h.info), PYOP_EDESCRIPTOR);
  assert_msg_has("more than 64 data type symbols");
  h.info.n_inputs = N - 1; /* 64 is the limit */
  assert_int_equal(pyop_register_host_prototype(&h.info), PYOP_OK);
  const pyop_op_info *info;
  assert_int_equal(pyop_op_get("Bad", &info), PYOP_ENOENT);
}

/* Runs execute of op on x (dtype dx) and y (dtype dy), 4 elements each. */
static int run_exec(pyop_op *op, int32_t dx, int32_t dy, pyop_tensor *z) {
  static double buf[3][4];
  int64_t shape[1] = {4};
  pyop_tensor t[2] = {pyop_tensor_of(buf[0], dx, 1, shape), pyop_tensor_of(buf[1], dy, 1, shape)};
  pyop_tensor_list in[2] = {pyop_tensor_list_of(&t[0], 1), pyop_tensor_list_of(&t[1], 1)};
  *z = pyop_tensor_of(buf[2], dx, 1, shape);
  if (out_dtype >= 0) *z = pyop_tensor_of(buf[2], out_dtype, 1, shape);
  pyop_exec_ctx ctx = PYOP_EXEC_CTX_INIT; /* outputs pre-allocated */
  return pyop_op_execute(op, in, 2, z, 1, &ctx);
}

/* Inputs outside their set, or disagreeing with their symbol, are refused
 * before the op runs, naming the input, the given and the allowed types. */
static void test_execute_refuses_inputs(void **state) {
  (void)state;
  host_op h;
  host_op_init(&h, "AddT", "T");
  assert_int_equal(pyop_register_host_prototype(&h.info), PYOP_OK);
  add_impl("AddT");
  pyop_op *op;
  assert_int_equal(pyop_op_create("AddT", NULL, 0, &op), PYOP_OK);
  pyop_tensor z;
  assert_int_equal(run_exec(op, PYOP_DTYPE_FLOAT32, PYOP_DTYPE_FLOAT32, &z), PYOP_OK);
  assert_int_equal(run_exec(op, PYOP_DTYPE_FLOAT16, PYOP_DTYPE_FLOAT16, &z), PYOP_OK);
  assert_int_equal(executed, 2);
  assert_int_equal(run_exec(op, PYOP_DTYPE_INT32, PYOP_DTYPE_INT32, &z), PYOP_EINVAL);
  assert_string_equal(pyop_last_error(), "execute of \"AddT\": input 0 \"x\" is int32; its "
                      "prototype (<host>) allows float32, float16 (type T)");
  assert_int_equal(run_exec(op, PYOP_DTYPE_FLOAT32, PYOP_DTYPE_FLOAT16, &z), PYOP_EINVAL);
  assert_string_equal(pyop_last_error(), "execute of \"AddT\": input 1 \"y\" is float16, but "
                      "input 0 \"x\" is float32: both are of type T, which is one data type "
                      "per call (prototype <host>)");
  assert_int_equal(executed, 2); /* neither refused call reached the op */
  /* Sets of their own (no symbol): each input on its own, the fast path. */
  host_op_init(&h, "AddOwn", NULL);
  assert_int_equal(pyop_register_host_prototype(&h.info), PYOP_OK);
  add_impl("AddOwn");
  pyop_op *own;
  assert_int_equal(pyop_op_create("AddOwn", NULL, 0, &own), PYOP_OK);
  out_dtype = PYOP_DTYPE_FLOAT32;
  assert_int_equal(run_exec(own, PYOP_DTYPE_FLOAT16, PYOP_DTYPE_FLOAT32, &z), PYOP_OK);
  assert_int_equal(run_exec(own, PYOP_DTYPE_FLOAT32, PYOP_DTYPE_INT8, &z), PYOP_EINVAL);
  assert_string_equal(pyop_last_error(), "execute of \"AddOwn\": input 1 \"y\" is int8; its "
                      "prototype (<host>) allows float32, float16");
  assert_int_equal(executed, 3);
  out_dtype = -1;
  pyop_op_destroy(own);
  /* declare_launch_args (and launch) take the same inputs: the same refusal. */
  int64_t shape[1] = {4};
  pyop_tensor d[2] = {pyop_tensor_of(NULL, PYOP_DTYPE_INT8, 1, shape),
                      pyop_tensor_of(NULL, PYOP_DTYPE_INT8, 1, shape)};
  pyop_tensor_list dl[2] = {pyop_tensor_list_of(&d[0], 1), pyop_tensor_list_of(&d[1], 1)};
  pyop_tensor zd = pyop_tensor_of(NULL, PYOP_DTYPE_INT8, 1, shape);
  assert_int_equal(pyop_op_declare_launch_args(op, dl, 2, &zd, 1), PYOP_EINVAL);
  assert_msg_has("declare_launch_args of \"AddT\": input 0 \"x\" is int8");
  assert_int_equal(declared, 0);
  pyop_op_destroy(op);
}

/*
 * An input without a set (any type) beside one with a set: every type
 * passes it, and the per-call fast test admits every type for it, so such
 * a call never needs the full check. The allow mask is what the fast test
 * reads (op.h, pyop__dtypes_check_fast): 0 there would send every call to
 * pyop__dtypes_check_inputs, the same answer at the full check's cost
 * (batch 13 survivor src.b13.dtypes.unconstrained_allows_none).
 */
static void test_unconstrained_input_fast(void **state) {
  (void)state;
  host_op h;
  host_op_init(&h, "AddAny", NULL);
  h.in_sets[1] = (pyop_dtype_set){0, NULL}; /* y: any type */
  assert_int_equal(pyop_register_host_prototype(&h.info), PYOP_OK);
  add_impl("AddAny");
  pyop_op *op;
  assert_int_equal(pyop_op_create("AddAny", NULL, 0, &op), PYOP_OK);
  const pyop__dtypes *d = &op->proto->dtypes;
  assert_non_null(d->in_allow);
  assert_int_equal(d->in_allow[0], BIT(FLOAT32) | BIT(FLOAT16));
  assert_true(d->in_allow[1] == ~0ull);
  assert_false(d->in_symbols);
  out_dtype = PYOP_DTYPE_FLOAT32;
  pyop_tensor z;
  assert_int_equal(run_exec(op, PYOP_DTYPE_FLOAT16, PYOP_DTYPE_INT8, &z), PYOP_OK);
  assert_int_equal(run_exec(op, PYOP_DTYPE_FLOAT32, PYOP_DTYPE_INT64, &z), PYOP_OK);
  assert_int_equal(executed, 2);
  assert_int_equal(run_exec(op, PYOP_DTYPE_INT8, PYOP_DTYPE_INT8, &z), PYOP_EINVAL);
  assert_string_equal(pyop_last_error(), "execute of \"AddAny\": input 0 \"x\" is int8; its "
                      "prototype (<host>) allows float32, float16");
  assert_int_equal(executed, 2);
  out_dtype = -1;
  pyop_op_destroy(op);
}

/* An output the op asks for outside its set, or other than its symbol's
 * inputs make it, breaks the contract. */
static void test_execute_refuses_outputs(void **state) {
  (void)state;
  host_op h;
  host_op_init(&h, "AddT", "T");
  assert_int_equal(pyop_register_host_prototype(&h.info), PYOP_OK);
  host_op_init(&h, "AddOwn", NULL); /* x, y: float32 or float16 each; z: float32 */
  assert_int_equal(pyop_register_host_prototype(&h.info), PYOP_OK);
  add_impl("AddT");
  add_impl("AddOwn");
  pyop_op *t, *own;
  assert_int_equal(pyop_op_create("AddT", NULL, 0, &t), PYOP_OK);
  assert_int_equal(pyop_op_create("AddOwn", NULL, 0, &own), PYOP_OK);
  pyop_tensor z;
  out_dtype = PYOP_DTYPE_FLOAT16;
  assert_int_equal(run_exec(t, PYOP_DTYPE_FLOAT32, PYOP_DTYPE_FLOAT32, &z), PYOP_ECONTRACT);
  assert_msg_has("execute of \"AddT\" (impl.py:9): output 0 \"z\" asked for as float16, but "
                 "it is of type T, which input 0 \"x\" makes float32 (prototype <host>)");
  assert_int_equal(run_exec(own, PYOP_DTYPE_FLOAT16, PYOP_DTYPE_FLOAT32, &z), PYOP_ECONTRACT);
  assert_msg_has("execute of \"AddOwn\" (impl.py:9): output 0 \"z\" asked for as float16; its "
                 "prototype (<host>) allows float32");
  out_dtype = PYOP_DTYPE_FLOAT32; /* own sets: x float16 and y float32 is fine */
  assert_int_equal(run_exec(own, PYOP_DTYPE_FLOAT16, PYOP_DTYPE_FLOAT32, &z), PYOP_OK);
  assert_int_equal(z.dtype, PYOP_DTYPE_FLOAT32);
  pyop_op_destroy(t);
  pyop_op_destroy(own);
}

/* Two symbols: an output of symbol U is held to U's input (y), never to
 * the input of another symbol (x, of T), whatever their order. */
static void test_output_follows_its_own_symbol(void **state) {
  (void)state;
  host_op h;
  host_op_init(&h, "Mix", "T");
  h.in_sets[0] = (pyop_dtype_set){0, "T"}; /* x: any, as T */
  h.in_sets[1] = (pyop_dtype_set){0, "U"}; /* y: any, as U */
  h.out_sets[0] = (pyop_dtype_set){0, "U"}; /* z: y's type */
  assert_int_equal(pyop_register_host_prototype(&h.info), PYOP_OK);
  add_impl("Mix");
  pyop_op *op;
  assert_int_equal(pyop_op_create("Mix", NULL, 0, &op), PYOP_OK);
  pyop_tensor z;
  out_dtype = PYOP_DTYPE_INT32; /* y's type: what U makes z */
  assert_int_equal(run_exec(op, PYOP_DTYPE_FLOAT32, PYOP_DTYPE_INT32, &z), PYOP_OK);
  assert_int_equal(z.dtype, PYOP_DTYPE_INT32);
  out_dtype = PYOP_DTYPE_FLOAT32; /* x's type: not U's */
  assert_int_equal(run_exec(op, PYOP_DTYPE_FLOAT32, PYOP_DTYPE_INT32, &z), PYOP_ECONTRACT);
  assert_msg_has("which input 1 \"y\" makes int32");
  pyop_op_destroy(op);
}

/* Two outputs of two symbols: output 1 "w" is held to its own symbol's
 * input (y, of U), not to output 0's (x, of T) (dataflow pass, session 13:
 * every output checked with output 0's symbol). Execute asks for z as x's
 * type and w as y's. */
static int cb_exec_two(void *h, const pyop_exec_args *a) {
  (void)h;
  executed++;
  pyop_tensor z = a->inputs[0].items[0], w = a->inputs[1].items[0];
  z.data = w.data = NULL;
  int rc = a->services->alloc_output(a->services->ctx, 0, &z);
  return rc == PYOP_OK ? a->services->alloc_output(a->services->ctx, 1, &w) : rc;
}
static const pyop_op_callbacks two_cbs = {sizeof(pyop_op_callbacks), cb_create, cb_destroy,
                                          NULL, cb_exec_two, NULL, NULL};
static int two_alloc(void *user, size_t index, pyop_tensor *t) {
  static double bufs[2][4];
  (void)user;
  t->data = bufs[index];
  return 0;
}

static void test_second_output_own_symbol(void **state) {
  (void)state;
  pyop_io_info ins[2] = {{"x", PYOP_IO_REQUIRED}, {"y", PYOP_IO_REQUIRED}};
  pyop_io_info outs[2] = {{"z", PYOP_IO_REQUIRED}, {"w", PYOP_IO_REQUIRED}};
  pyop_dtype_set in_sets[2] = {{0, "T"}, {0, "U"}};
  pyop_dtype_set out_sets[2] = {{0, "T"}, {0, "U"}};
  pyop_op_info info;
  memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  info.op_type = "TwoSyms";
  info.inputs = ins;
  info.n_inputs = 2;
  info.outputs = outs;
  info.n_outputs = 2;
  info.input_dtypes = in_sets;
  info.output_dtypes = out_sets;
  assert_int_equal(pyop_register_host_prototype(&info), PYOP_OK);
  pyop_impl_view iv = {sizeof iv, S("TwoSyms"), S("pyop:p.Two"), S("two.py"), 3,
                       PYOP_CAP_EXECUTE, NULL, &two_cbs};
  pyop__txn *t;
  assert_int_equal(pyop__txn_begin(&t), PYOP_OK);
  assert_int_equal(pyop__txn_add_impl(t, &iv), PYOP_OK);
  assert_int_equal(pyop__txn_commit(t), PYOP_OK);
  pyop_op *op;
  assert_int_equal(pyop_op_create("TwoSyms", NULL, 0, &op), PYOP_OK);
  static double buf[2][4];
  int64_t shape[1] = {4};
  pyop_tensor x = pyop_tensor_of(buf[0], PYOP_DTYPE_FLOAT32, 1, shape);
  pyop_tensor y = pyop_tensor_of(buf[1], PYOP_DTYPE_INT32, 1, shape);
  pyop_tensor_list in[2] = {pyop_tensor_list_of(&x, 1), pyop_tensor_list_of(&y, 1)};
  pyop_tensor out[2];
  memset(out, 0, sizeof out);
  pyop_exec_ctx ctx = PYOP_EXEC_CTX_INIT;
  ctx.alloc_output = two_alloc;
  int rc = pyop_op_execute(op, in, 2, out, 2, &ctx);
  if (rc != PYOP_OK) fail_msg("%s", pyop_last_error());
  assert_int_equal(out[0].dtype, PYOP_DTYPE_FLOAT32);
  assert_int_equal(out[1].dtype, PYOP_DTYPE_INT32);
  assert_int_equal(executed, 1);
  pyop_op_destroy(op);
}

/* Each output of a host prototype keeps its own set: z float32, w int32
 * (dataflow pass, session 13: the second output's mask taken from the
 * first's). */
static void test_host_output_sets_each_own(void **state) {
  (void)state;
  pyop_io_info ins[1] = {{"x", PYOP_IO_REQUIRED}};
  pyop_io_info outs[2] = {{"z", PYOP_IO_REQUIRED}, {"w", PYOP_IO_REQUIRED}};
  pyop_dtype_set out_sets[2] = {{BIT(FLOAT32), NULL}, {BIT(INT32), NULL}};
  pyop_op_info hi;
  memset(&hi, 0, sizeof hi);
  hi.struct_size = sizeof hi;
  hi.op_type = "TwoSets";
  hi.inputs = ins;
  hi.n_inputs = 1;
  hi.outputs = outs;
  hi.n_outputs = 2;
  hi.output_dtypes = out_sets;
  assert_int_equal(pyop_register_host_prototype(&hi), PYOP_OK);
  const pyop_op_info *info;
  assert_int_equal(pyop_op_get("TwoSets", &info), PYOP_OK);
  assert_non_null(info->output_dtypes);
  assert_int_equal(info->output_dtypes[0].mask, BIT(FLOAT32));
  assert_int_equal(info->output_dtypes[1].mask, BIT(INT32));
  assert_null(info->input_dtypes);
  pyop_op_info_release(info);
}

/* An output whose symbol's only input is an absent optional one is free:
 * nothing makes its type (the absent input is not read); present, it does. */
static void test_output_symbol_of_absent_input(void **state) {
  (void)state;
  host_op h;
  host_op_init(&h, "Opt", "T");
  h.ins[1].kind = PYOP_IO_OPTIONAL;
  h.in_sets[0] = (pyop_dtype_set){0, "T"}; /* x: any, as T */
  h.in_sets[1] = (pyop_dtype_set){0, "U"}; /* y (optional): any, as U */
  h.out_sets[0] = (pyop_dtype_set){0, "U"}; /* z: y's type */
  assert_int_equal(pyop_register_host_prototype(&h.info), PYOP_OK);
  add_impl("Opt");
  pyop_op *op;
  assert_int_equal(pyop_op_create("Opt", NULL, 0, &op), PYOP_OK);
  static float xb[4], zb[4];
  int64_t shape[1] = {4};
  pyop_tensor x = pyop_tensor_of(xb, PYOP_DTYPE_FLOAT32, 1, shape);
  pyop_tensor_list in[2] = {pyop_tensor_list_of(&x, 1), {NULL, 0}};
  pyop_tensor z = pyop_tensor_of(zb, PYOP_DTYPE_FLOAT32, 1, shape);
  pyop_exec_ctx ctx = PYOP_EXEC_CTX_INIT;
  int rc = pyop_op_execute(op, in, 2, &z, 1, &ctx);
  if (rc != PYOP_OK) fail_msg("y absent: %s", pyop_last_error());
  assert_int_equal(executed, 1);
  out_dtype = PYOP_DTYPE_FLOAT32; /* y present as int32: z must be int32 */
  assert_int_equal(run_exec(op, PYOP_DTYPE_FLOAT32, PYOP_DTYPE_INT32, &z), PYOP_ECONTRACT);
  assert_msg_has("which input 1 \"y\" makes int32");
  pyop_op_destroy(op);
}

/* The first input of an output's symbol absent (optional), a later input
 * of the symbol present: that later input makes the output's type (the
 * walk over the symbol's inputs goes past the absent one; both-sides pass,
 * session 14). */
static void test_output_symbol_after_absent_input(void **state) {
  (void)state;
  host_op h;
  host_op_init(&h, "OptFirst", "T");
  h.ins[0].kind = PYOP_IO_OPTIONAL;
  h.in_sets[0] = (pyop_dtype_set){0, "T"}; /* x (optional): any, as T */
  h.in_sets[1] = (pyop_dtype_set){0, "T"}; /* y: as T */
  h.out_sets[0] = (pyop_dtype_set){0, "T"}; /* z: T */
  assert_int_equal(pyop_register_host_prototype(&h.info), PYOP_OK);
  add_impl("OptFirst");
  pyop_op *op;
  assert_int_equal(pyop_op_create("OptFirst", NULL, 0, &op), PYOP_OK);
  static int32_t yb[4], zb[4];
  int64_t shape[1] = {4};
  pyop_tensor y = pyop_tensor_of(yb, PYOP_DTYPE_INT32, 1, shape);
  pyop_tensor_list in[2] = {{NULL, 0}, pyop_tensor_list_of(&y, 1)};
  pyop_tensor z = pyop_tensor_of(zb, PYOP_DTYPE_FLOAT32, 1, shape);
  pyop_exec_ctx ctx = PYOP_EXEC_CTX_INIT;
  out_dtype = PYOP_DTYPE_FLOAT32; /* the op asks z as float32, y makes T int32 */
  assert_int_equal(pyop_op_execute(op, in, 2, &z, 1, &ctx), PYOP_ECONTRACT);
  assert_msg_has("output 0 \"z\" asked for as float32, but it is of type T, which input 1 "
                 "\"y\" makes int32");
  out_dtype = PYOP_DTYPE_INT32;
  z = pyop_tensor_of(zb, PYOP_DTYPE_INT32, 1, shape);
  int rc = pyop_op_execute(op, in, 2, &z, 1, &ctx);
  if (rc != PYOP_OK) fail_msg("z as int32: %s", pyop_last_error());
  assert_int_equal(executed, 2);
  out_dtype = -1;
  pyop_op_destroy(op);
}

/* The last pyop_dtype (bool) is a data type a set may name: registered,
 * admitted, and named in the refusal of another type (a table's last
 * entry; both-sides pass, session 14). */
static void test_last_dtype_in_a_set(void **state) {
  (void)state;
  host_op h;
  host_op_init(&h, "Flags", NULL);
  h.in_sets[0] = (pyop_dtype_set){BIT(BOOL), NULL};
  h.in_sets[1] = (pyop_dtype_set){BIT(BOOL) | BIT(UINT64), NULL};
  h.out_sets[0] = (pyop_dtype_set){BIT(BOOL), NULL};
  int rc = pyop_register_host_prototype(&h.info);
  if (rc != PYOP_OK) fail_msg("a set of bool: %s", pyop_last_error());
  const pyop_op_info *info;
  assert_int_equal(pyop_op_get("Flags", &info), PYOP_OK);
  assert_int_equal(info->input_dtypes[0].mask, BIT(BOOL));
  pyop_op_info_release(info);
  add_impl("Flags");
  pyop_op *op;
  assert_int_equal(pyop_op_create("Flags", NULL, 0, &op), PYOP_OK);
  pyop_tensor z;
  assert_int_equal(run_exec(op, PYOP_DTYPE_BOOL, PYOP_DTYPE_BOOL, &z), PYOP_OK);
  assert_int_equal(executed, 1);
  assert_int_equal(run_exec(op, PYOP_DTYPE_BOOL, PYOP_DTYPE_FLOAT32, &z), PYOP_EINVAL);
  assert_string_equal(pyop_last_error(), "execute of \"Flags\": input 1 \"y\" is float32; its "
                      "prototype (<host>) allows uint64, bool");
  assert_int_equal(executed, 1);
  char buf[64];
  assert_string_equal(pyop__dtype_mask_str(BIT(BOOL), buf, sizeof buf), "bool");
  pyop_op_destroy(op);
}

/* A symbol is held to the length of a name (256 bytes): 256 taken, 257
 * refused (both-sides pass, session 14). */
static void test_symbol_length_both_ends(void **state) {
  (void)state;
  static char sym[PYOP__MAX_NAME_LEN + 2];
  memset(sym, 'T', PYOP__MAX_NAME_LEN + 1);
  sym[PYOP__MAX_NAME_LEN + 1] = '\0';
  host_op h;
  host_op_init(&h, "LongSym", sym);
  assert_int_equal(pyop_register_host_prototype(&h.info), PYOP_EDESCRIPTOR);
  assert_msg_has("input 0 \"x\": data type symbol: ");
  assert_msg_has("too long");
  const pyop_op_info *info;
  assert_int_equal(pyop_op_get("LongSym", &info), PYOP_ENOENT);
  sym[PYOP__MAX_NAME_LEN] = '\0';
  host_op_init(&h, "LongSym", sym);
  int rc = pyop_register_host_prototype(&h.info);
  if (rc != PYOP_OK) fail_msg("a symbol of 256 bytes: %s", pyop_last_error());
  assert_int_equal(pyop_op_get("LongSym", &info), PYOP_OK);
  assert_int_equal(strlen(info->input_dtypes[0].symbol), PYOP__MAX_NAME_LEN);
  pyop_op_info_release(info);
}

/* Constraints on the outputs alone (the inputs unconstrained) still hold
 * the op to them: an output asked for outside its set breaks the contract. */
static void test_output_only_constraints(void **state) {
  (void)state;
  host_op h;
  host_op_init(&h, "OutOnly", NULL); /* z: float32 */
  h.info.input_dtypes = NULL;
  assert_int_equal(pyop_register_host_prototype(&h.info), PYOP_OK);
  const pyop_op_info *info;
  assert_int_equal(pyop_op_get("OutOnly", &info), PYOP_OK);
  assert_null(info->input_dtypes);
  assert_int_equal(info->output_dtypes[0].mask, BIT(FLOAT32));
  pyop_op_info_release(info);
  add_impl("OutOnly");
  pyop_op *op;
  assert_int_equal(pyop_op_create("OutOnly", NULL, 0, &op), PYOP_OK);
  pyop_tensor z;
  out_dtype = PYOP_DTYPE_FLOAT16;
  assert_int_equal(run_exec(op, PYOP_DTYPE_INT8, PYOP_DTYPE_INT8, &z), PYOP_ECONTRACT);
  assert_msg_has("output 0 \"z\" asked for as float16; its prototype (<host>) allows float32");
  out_dtype = PYOP_DTYPE_FLOAT32;
  assert_int_equal(run_exec(op, PYOP_DTYPE_INT8, PYOP_DTYPE_INT8, &z), PYOP_OK);
  pyop_op_destroy(op);
}

/*
 * An output of a symbol no input has (V) is still held to its set: asked
 * for outside it, the op breaks the contract, naming the set; inside it,
 * any type of the set is fine (batch 18 survivor, session 15:
 * src.b18.dtypes.output_set_with_symbol, the set skipped when the output
 * has a symbol).
 */
static void test_output_symbol_no_input_keeps_set(void **state) {
  (void)state;
  host_op h;
  host_op_init(&h, "OwnSym", "T"); /* x, y: float32 or float16, as T */
  h.out_sets[0] = (pyop_dtype_set){BIT(INT32) | BIT(INT64), "V"}; /* z: int32 or int64, as V */
  int rc = pyop_register_host_prototype(&h.info);
  if (rc != PYOP_OK) fail_msg("an output-only symbol: %s", pyop_last_error());
  add_impl("OwnSym");
  pyop_op *op;
  assert_int_equal(pyop_op_create("OwnSym", NULL, 0, &op), PYOP_OK);
  pyop_tensor z;
  out_dtype = PYOP_DTYPE_FLOAT32; /* the inputs' type, outside z's set */
  assert_int_equal(run_exec(op, PYOP_DTYPE_FLOAT32, PYOP_DTYPE_FLOAT32, &z), PYOP_ECONTRACT);
  assert_msg_has("execute of \"OwnSym\" (impl.py:9): output 0 \"z\" asked for as float32; "
                 "its prototype (<host>) allows int32, int64\n(alloc_output failed)");
  assert_int_equal(executed, 1);
  out_dtype = PYOP_DTYPE_INT64;
  rc = run_exec(op, PYOP_DTYPE_FLOAT32, PYOP_DTYPE_FLOAT32, &z);
  if (rc != PYOP_OK) fail_msg("z as int64: %s", pyop_last_error());
  assert_int_equal(z.dtype, PYOP_DTYPE_INT64);
  out_dtype = PYOP_DTYPE_INT32;
  rc = run_exec(op, PYOP_DTYPE_FLOAT16, PYOP_DTYPE_FLOAT16, &z);
  if (rc != PYOP_OK) fail_msg("z as int32: %s", pyop_last_error());
  assert_int_equal(executed, 3);
  out_dtype = -1;
  pyop_op_destroy(op);
}

/*
 * Symbols one of which extends the other ("T1" and "T") are two symbols:
 * x of T1 and y of T may differ, z follows y; and a prototype under "T"
 * conflicts with one under "T1", in either order (outcome pass 2:
 * src.out2.dtypes.symbol_prefix_merged, same_symbol_prefix).
 */
static void test_symbol_names_whole(void **state) {
  (void)state;
  host_op h;
  host_op_init(&h, "Mix2", "T");
  h.in_sets[0] = (pyop_dtype_set){0, "T1"}; /* x: any, as T1 */
  h.in_sets[1] = (pyop_dtype_set){0, "T"};  /* y: any, as T */
  h.out_sets[0] = (pyop_dtype_set){0, "T"}; /* z: y's type */
  assert_int_equal(pyop_register_host_prototype(&h.info), PYOP_OK);
  add_impl("Mix2");
  pyop_op *op;
  assert_int_equal(pyop_op_create("Mix2", NULL, 0, &op), PYOP_OK);
  pyop_tensor z;
  out_dtype = PYOP_DTYPE_INT32;
  assert_int_equal(run_exec(op, PYOP_DTYPE_FLOAT32, PYOP_DTYPE_INT32, &z), PYOP_OK);
  assert_int_equal(z.dtype, PYOP_DTYPE_INT32);
  out_dtype = PYOP_DTYPE_FLOAT32; /* x's type: not T's */
  assert_int_equal(run_exec(op, PYOP_DTYPE_FLOAT32, PYOP_DTYPE_INT32, &z), PYOP_ECONTRACT);
  pyop_op_destroy(op);
  const pyop_op_info *info;
  assert_int_equal(pyop_op_get("Mix2", &info), PYOP_OK);
  assert_string_equal(info->input_dtypes[0].symbol, "T1");
  assert_string_equal(info->input_dtypes[1].symbol, "T");
  pyop_op_info_release(info);

  /* Sets that differ on the output only (src.out2.dtypes.outputs_unchecked). */
  host_op o1, o2;
  host_op_init(&o1, "OutSets", NULL);
  host_op_init(&o2, "OutSets", NULL);
  o2.out_sets[0].mask = BIT(FLOAT16);
  assert_int_equal(pyop_register_host_prototype(&o1.info), PYOP_OK);
  assert_int_equal(pyop_register_host_prototype(&o2.info), PYOP_ECONFLICT);
  assert_msg_has("output 0 \"z\": data types float16 vs float32");

  static const char *const order[2][2] = {{"T", "T1"}, {"T1", "T"}};
  static const char *const types[2] = {"SymA", "SymB"};
  for (int i = 0; i < 2; i++) {
    host_op a, b;
    host_op_init(&a, types[i], order[i][0]);
    host_op_init(&b, types[i], order[i][1]);
    assert_int_equal(pyop_register_host_prototype(&a.info), PYOP_OK);
    if (pyop_register_host_prototype(&b.info) != PYOP_ECONFLICT)
      fail_msg("%s under \"%s\" after \"%s\": not a conflict", types[i], order[i][1],
               order[i][0]);
  }
}

/* Registering again with the same sets under another symbol (or none) is
 * another prototype: the symbol ties types together, so it conflicts. */
static void test_symbol_is_part_of_the_prototype(void **state) {
  (void)state;
  host_op h;
  host_op_init(&h, "Sym", "T");
  assert_int_equal(pyop_register_host_prototype(&h.info), PYOP_OK);
  host_op u;
  host_op_init(&u, "Sym", "U");
  assert_int_equal(pyop_register_host_prototype(&u.info), PYOP_ECONFLICT);
  assert_msg_has("input 0 \"x\": data types float32, float16 as U vs float32, float16 as T");
  host_op none;
  host_op_init(&none, "Sym", NULL);
  none.out_sets[0].mask = BIT(FLOAT32) | BIT(FLOAT16); /* the same masks, no symbol */
  assert_int_equal(pyop_register_host_prototype(&none.info), PYOP_ECONFLICT);
  const pyop_op_info *info;
  assert_int_equal(pyop_op_get("Sym", &info), PYOP_OK);
  assert_string_equal(info->input_dtypes[0].symbol, "T"); /* the first one stays */
  pyop_op_info_release(info);
}

/* A bridge's prototype view of ABI 1.7 constrains infer_meta too (and a
 * dynamic input's tensors share their symbol); a 1.6 view's struct_size
 * keeps its (garbage) constraint members unread. */
static void test_view_constraints(void **state) {
  (void)state;
  pyop_io_view in[1] = {{sizeof(pyop_io_view), S("xs"), PYOP_IO_DYNAMIC}};
  pyop_io_view out[1] = {{sizeof(pyop_io_view), S("y"), PYOP_IO_REQUIRED}};
  pyop_dtype_set_view ins[1] = {{BIT(INT32) | BIT(INT64), S("T")}};
  pyop_proto_view v = {sizeof v, S("Cat"), S("pyop:cat"), S("cat.py"), 3, PYOP_CAP_INFER_META,
                       in, 1, out, 1, NULL, 0, NULL, &proto_cbs};
  v.input_dtypes = ins;
  pyop__txn *t;
  assert_int_equal(pyop__txn_begin(&t), PYOP_OK);
  assert_int_equal(pyop__txn_add_proto(t, &v), PYOP_OK);
  assert_int_equal(pyop__txn_commit(t), PYOP_OK);
  pyop_op *op;
  assert_int_equal(pyop_op_create("Cat", NULL, 0, &op), PYOP_OK);
  int64_t shape[1] = {2};
  pyop_tensor xs[3] = {pyop_tensor_of(NULL, PYOP_DTYPE_INT64, 1, shape),
                       pyop_tensor_of(NULL, PYOP_DTYPE_INT64, 1, shape),
                       pyop_tensor_of(NULL, PYOP_DTYPE_INT32, 1, shape)};
  pyop_tensor_list l = pyop_tensor_list_of(xs, 2);
  pyop_tensor y;
  assert_int_equal(pyop_op_infer_meta(op, &l, 1, &y, 1), PYOP_OK);
  assert_int_equal(inferred, 1);
  l.count = 3;
  assert_int_equal(pyop_op_infer_meta(op, &l, 1, &y, 1), PYOP_EINVAL);
  assert_string_equal(pyop_last_error(), "infer_meta of \"Cat\": input 0 \"xs\" tensor 2 is "
                      "int32, but input 0 \"xs\" tensor 0 is int64: both are of type T, which "
                      "is one data type per call (prototype cat.py:3)");
  xs[0].dtype = PYOP_DTYPE_FLOAT32;
  assert_int_equal(pyop_op_infer_meta(op, &l, 1, &y, 1), PYOP_EINVAL);
  assert_msg_has("input 0 \"xs\" tensor 0 is float32; its prototype (cat.py:3) allows "
                 "int32, int64 (type T)");
  assert_int_equal(inferred, 1);
  pyop_op_destroy(op);
  /* A 1.6 view: struct_size ends before input_dtypes. */
  v.op_type = S("Cat16");
  v.input_dtypes = (const pyop_dtype_set_view *)(uintptr_t)0x10;
  v.output_dtypes = (const pyop_dtype_set_view *)(uintptr_t)0x10;
  v.struct_size = offsetof(pyop_proto_view, input_dtypes);
  assert_int_equal(pyop__txn_begin(&t), PYOP_OK);
  assert_int_equal(pyop__txn_add_proto(t, &v), PYOP_OK);
  assert_int_equal(pyop__txn_commit(t), PYOP_OK);
  const pyop_op_info *info;
  assert_int_equal(pyop_op_get("Cat16", &info), PYOP_OK);
  assert_null(info->input_dtypes);
  pyop_op_info_release(info);
  /* A view whose symbol view is broken is refused like any string. */
  pyop_dtype_set_view bad[1] = {{0, {NULL, 3}}};
  v.op_type = S("Cat17");
  v.struct_size = sizeof v;
  v.input_dtypes = bad;
  v.output_dtypes = NULL;
  assert_int_equal(pyop__txn_begin(&t), PYOP_OK);
  assert_int_equal(pyop__txn_add_proto(t, &v), PYOP_EDESCRIPTOR);
  pyop__txn_abort(t);
  assert_msg_has("input 0 \"xs\": data type symbol: length > 0 with NULL data");
}

/* Every allocation of a registration with constraints may fail: nothing
 * leaks and nothing is registered. */
static host_op sweep_op;
static int sweep_register(void *user) {
  (void)user;
  return pyop_register_host_prototype(&sweep_op.info);
}
static void sweep_check(void *user, int rc) {
  long *allocs = user;
  assert_int_equal(rc, PYOP_ENOMEM);
  assert_int_equal(pt_live_allocs(), *allocs);
  assert_int_equal(pyop__registry_count(), 0);
}

/* A mask as the messages show it: 0 is "any", the names in dtype order,
 * a bit with no name as dtype(N), and a small buffer is cut, never
 * overrun. */
static void test_mask_text(void **state) {
  (void)state;
  char buf[128];
  assert_string_equal(pyop__dtype_mask_str(0, buf, sizeof buf), "any");
  assert_string_equal(
      pyop__dtype_mask_str(PYOP_DTYPE_BIT(PYOP_DTYPE_INT8) | PYOP_DTYPE_BIT(PYOP_DTYPE_FLOAT32),
                           buf, sizeof buf),
      "float32, int8");
  assert_string_equal(pyop__dtype_mask_str(PYOP_DTYPE_BIT(PYOP_DTYPE_FLOAT16), buf, sizeof buf),
                      "float16");
  assert_string_equal(pyop__dtype_mask_str(PYOP_DTYPE_BIT(63) | PYOP_DTYPE_BIT(PYOP_DTYPE_FLOAT32),
                                           buf, sizeof buf),
                      "float32, dtype(63)");
  assert_string_equal(pyop__dtype_mask_str(PYOP_DTYPE_BIT(63), buf, sizeof buf), "dtype(63)");
  char small[8];
  memset(small, 'z', sizeof small);
  pyop__dtype_mask_str(PYOP_DTYPE_BIT(PYOP_DTYPE_FLOAT32) | PYOP_DTYPE_BIT(PYOP_DTYPE_INT8) |
                           PYOP_DTYPE_BIT(PYOP_DTYPE_INT64),
                       small, sizeof small);
  assert_int_equal(strlen(small), sizeof small - 1);
  assert_string_equal(small, "float32");
}

static void test_fault_sweep(void **state) {
  (void)state;
  host_op_init(&sweep_op, "Swept", "T");
  pt_faults_install();
  long allocs = pt_live_allocs();
  assert_true(pt_faults_sweep(sweep_register, sweep_check, &allocs, 100) >= 3);
  assert_int_equal(pyop__registry_count(), 1);
  pt_faults_remove();
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_host_constraints_registered, setup, teardown),
      cmocka_unit_test_setup_teardown(test_older_info_sizes, setup, teardown),
      cmocka_unit_test_setup_teardown(test_bad_constraints_refused, setup, teardown),
      cmocka_unit_test_setup_teardown(test_execute_refuses_inputs, setup, teardown),
      cmocka_unit_test_setup_teardown(test_unconstrained_input_fast, setup, teardown),
      cmocka_unit_test_setup_teardown(test_execute_refuses_outputs, setup, teardown),
      cmocka_unit_test_setup_teardown(test_output_follows_its_own_symbol, setup, teardown),
      cmocka_unit_test_setup_teardown(test_second_output_own_symbol, setup, teardown),
      cmocka_unit_test_setup_teardown(test_host_output_sets_each_own, setup, teardown),
      cmocka_unit_test_setup_teardown(test_symbol_names_whole, setup, teardown),
      cmocka_unit_test_setup_teardown(test_output_only_constraints, setup, teardown),
      cmocka_unit_test_setup_teardown(test_output_symbol_no_input_keeps_set, setup, teardown),
      cmocka_unit_test_setup_teardown(test_output_symbol_of_absent_input, setup, teardown),
      cmocka_unit_test_setup_teardown(test_symbol_is_part_of_the_prototype, setup, teardown),
      cmocka_unit_test_setup_teardown(test_view_constraints, setup, teardown),
      cmocka_unit_test_setup_teardown(test_mask_text, setup, teardown),
      cmocka_unit_test_setup_teardown(test_output_symbol_after_absent_input, setup, teardown),
      cmocka_unit_test_setup_teardown(test_last_dtype_in_a_set, setup, teardown),
      cmocka_unit_test_setup_teardown(test_symbol_length_both_ends, setup, teardown),
      cmocka_unit_test_setup_teardown(test_fault_sweep, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
