/*
 * Descriptor validation and deep copy (src/descriptor.c): every malformed
 * view is rejected with PYOP_EDESCRIPTOR and a message naming the op type,
 * the field and the reason; valid views are copied deeply.
 */
#include "conflict.h"
#include "descriptor.h"
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pyop_str S(const char *s) { return (pyop_str){s, strlen(s)}; }

static int cb_create(void *ctx, const pyop_attr_view *a, size_t n, void **out) {
  (void)ctx; (void)a; (void)n;
  *out = NULL;
  return PYOP_OK;
}
static void cb_destroy(void *h) { (void)h; }
static int cb_infer(void *h, const pyop_infer_args *a) { (void)h; (void)a; return PYOP_OK; }
static int cb_exec(void *h, const pyop_exec_args *a) { (void)h; (void)a; return PYOP_OK; }
static int cb_compile(void *h, const pyop_compile_args *a) { (void)h; (void)a; return PYOP_OK; }
static int cb_declare(void *h, const pyop_declare_args *a) { (void)h; (void)a; return PYOP_OK; }

static const pyop_op_callbacks proto_cbs = {sizeof(pyop_op_callbacks), cb_create, cb_destroy,
                                            cb_infer, NULL, NULL, NULL};
static const pyop_op_callbacks impl_cbs = {sizeof(pyop_op_callbacks), cb_create, cb_destroy,
                                           NULL, cb_exec, NULL, NULL};

/* A valid "ScaledAdd"(x, y?) -> z with alpha: float = 1.5, mode: str. */
typedef struct fx {
  pyop_io_view in[2], out[1];
  pyop_attr_view at[2];
  pyop_proto_view p;
  pyop_impl_view i;
} fx;

static void fx_init(fx *f) {
  memset(f, 0, sizeof *f);
  f->in[0] = (pyop_io_view){sizeof(pyop_io_view), S("x"), PYOP_IO_REQUIRED};
  f->in[1] = (pyop_io_view){sizeof(pyop_io_view), S("y"), PYOP_IO_OPTIONAL};
  f->out[0] = (pyop_io_view){sizeof(pyop_io_view), S("z"), PYOP_IO_REQUIRED};
  f->at[0].struct_size = sizeof(pyop_attr_view);
  f->at[0].name = S("alpha");
  f->at[0].type = PYOP_ATTR_FLOAT;
  f->at[0].default_value.type = PYOP_ATTR_FLOAT;
  f->at[0].default_value.u.f = 1.5;
  f->at[1].struct_size = sizeof(pyop_attr_view);
  f->at[1].name = S("mode");
  f->at[1].type = PYOP_ATTR_STR;
  f->at[1].required = 1;
  f->p = (pyop_proto_view){sizeof(pyop_proto_view), S("ScaledAdd"), S("pyop:plugin_a.scaled_add"),
                           S("plugin_a.py"), 12, PYOP_CAP_INFER_META, f->in, 2, f->out, 1,
                           f->at, 2, NULL, &proto_cbs};
  f->i = (pyop_impl_view){sizeof(pyop_impl_view), S("ScaledAdd"), S("pyop:plugin_a.ScaledAddImpl"),
                          S("plugin_a.py"), 30, PYOP_CAP_EXECUTE, NULL, &impl_cbs};
}

/* Asserts the proto view is rejected with a message holding every part. */
#define REJECT_PROTO(f, ...) \
  expect_reject(__LINE__, pyop__validate_proto_view(&(f)->p), __VA_ARGS__, NULL)
#define REJECT_IMPL(f, ...) \
  expect_reject(__LINE__, pyop__validate_impl_view(&(f)->i), __VA_ARGS__, NULL)

static void expect_reject(int line, int rc, ...) {
  if (rc != PYOP_EDESCRIPTOR) fail_msg("line %d: status %d, not PYOP_EDESCRIPTOR", line, rc);
  assert_int_equal(pyop_last_status(), PYOP_EDESCRIPTOR);
  va_list ap;
  va_start(ap, rc);
  for (const char *part; (part = va_arg(ap, const char *));) {
    if (!strstr(pyop_last_error(), part))
      fail_msg("line %d: message \"%s\" lacks \"%s\"", line, pyop_last_error(), part);
  }
  va_end(ap);
}

static void test_valid_views(void **state) {
  (void)state;
  fx f;
  fx_init(&f);
  assert_int_equal(pyop__validate_proto_view(&f.p), PYOP_OK);
  assert_int_equal(pyop__validate_impl_view(&f.i), PYOP_OK);
  /* A newer minor's bigger view is fine: only known members are read. */
  struct { pyop_proto_view v; char extra[32]; } big;
  memset(&big, 0xAB, sizeof big);
  big.v = f.p;
  big.v.struct_size = sizeof big;
  assert_int_equal(pyop__validate_proto_view(&big.v), PYOP_OK);
  /* An infer-only prototype without callbacks. */
  f.p.caps = 0;
  f.p.callbacks = NULL;
  assert_int_equal(pyop__validate_proto_view(&f.p), PYOP_OK);
  /* Op types may have dots, colons and dashes after the first character. */
  f.p.op_type = S("ns.sub:Op-2");
  assert_int_equal(pyop__validate_proto_view(&f.p), PYOP_OK);
  /* Empty source file is allowed. */
  f.p.source_file = S("");
  assert_int_equal(pyop__validate_proto_view(&f.p), PYOP_OK);
}

static void test_null_and_struct_size(void **state) {
  (void)state;
  expect_reject(__LINE__, pyop__validate_proto_view(NULL), "prototype", "NULL", NULL);
  expect_reject(__LINE__, pyop__validate_impl_view(NULL), "implementation", "NULL", NULL);
  fx f;
  fx_init(&f);
  f.p.struct_size = offsetof(pyop_proto_view, callbacks);
  REJECT_PROTO(&f, "struct_size");
  fx_init(&f);
  f.i.struct_size = 8;
  REJECT_IMPL(&f, "struct_size 8");
  fx_init(&f);
  f.in[1].struct_size = 4;
  REJECT_PROTO(&f, "prototype \"ScaledAdd\" (plugin_a.py:12)", "input 1", "struct_size 4");
  fx_init(&f);
  f.at[0].struct_size = offsetof(pyop_attr_view, default_value);
  REJECT_PROTO(&f, "attr 0", "struct_size");
  fx_init(&f);
  pyop_op_callbacks small = impl_cbs;
  small.struct_size = offsetof(pyop_op_callbacks, compile);
  f.i.callbacks = &small;
  REJECT_IMPL(&f, "implementation \"ScaledAdd\" (plugin_a.py:30)", "callbacks", "struct_size");
}

static void test_string_views(void **state) {
  (void)state;
  fx f;
  fx_init(&f);
  f.p.op_type = (pyop_str){NULL, 3};
  REJECT_PROTO(&f, "op_type", "NULL data");
  fx_init(&f);
  f.p.op_type = (pyop_str){"Sc\0aledAdd", 10};
  REJECT_PROTO(&f, "op_type", "embedded NUL");
  fx_init(&f);
  f.p.op_type = S("");
  REJECT_PROTO(&f, "op_type", "empty");
  fx_init(&f);
  f.p.op_type = S("1Bad");
  REJECT_PROTO(&f, "op_type", "not a valid op type");
  fx_init(&f);
  f.p.op_type = S("Bad Op");
  REJECT_PROTO(&f, "op_type");
  fx_init(&f);
  f.p.key = S("");
  REJECT_PROTO(&f, "\"ScaledAdd\"", "key", "empty");
  fx_init(&f);
  f.p.key = (pyop_str){NULL, 1};
  REJECT_PROTO(&f, "key", "NULL data");
  fx_init(&f);
  f.p.key = S("a\nb");
  REJECT_PROTO(&f, "key", "control character");
  /* DEL is a control character too, in every string checked for them. */
  fx_init(&f);
  f.p.key = S("a\x7f" "b");
  REJECT_PROTO(&f, "key", "control character");
  fx_init(&f);
  f.p.source_file = S("a\x7f.py");
  REJECT_PROTO(&f, "source_file", "control character");
  fx_init(&f);
  f.i.key = S("k\x7f");
  REJECT_IMPL(&f, "key", "control character");
  fx_init(&f);
  f.p.source_file = (pyop_str){"a.py\0x", 6};
  REJECT_PROTO(&f, "source_file", "embedded NUL");
  fx_init(&f);
  f.in[0].name = (pyop_str){NULL, 1};
  REJECT_PROTO(&f, "input 0 name", "NULL data");
  fx_init(&f);
  f.in[0].name = S("");
  REJECT_PROTO(&f, "input 0 name", "empty");
  fx_init(&f);
  f.out[0].name = S("z-1");
  REJECT_PROTO(&f, "output 0 name", "not an identifier");
  fx_init(&f);
  f.at[1].name = (pyop_str){"mo\0e", 4};
  REJECT_PROTO(&f, "attr 1 name", "embedded NUL");
  fx_init(&f);
  char longname[300];
  memset(longname, 'a', sizeof longname - 1);
  longname[sizeof longname - 1] = '\0';
  f.at[0].name = S(longname);
  REJECT_PROTO(&f, "attr 0 name", "too long");
  fx_init(&f);
  f.i.op_type = (pyop_str){NULL, 2};
  REJECT_IMPL(&f, "implementation", "op_type");
}

static void test_duplicate_names(void **state) {
  (void)state;
  fx f;
  fx_init(&f);
  f.in[1].name = S("x");
  REJECT_PROTO(&f, "prototype \"ScaledAdd\" (plugin_a.py:12): input 1 name: duplicate name \"x\"");
  /* Outputs have their own namespace: an output "y" beside an input "y". */
  fx_init(&f);
  f.out[0].name = S("y");
  assert_int_equal(pyop__validate_proto_view(&f.p), PYOP_OK);
  fx_init(&f);
  f.at[1].name = S("alpha");
  REJECT_PROTO(&f, "attr 1 name", "duplicate name \"alpha\"");
  /* Many names go through the hash set path. */
  enum { N = 600 };
  static pyop_io_view ins[N];
  static char names[N][16];
  for (int i = 0; i < N; i++) {
    snprintf(names[i], sizeof names[i], "in%d", i);
    ins[i] = (pyop_io_view){sizeof(pyop_io_view), S(names[i]), PYOP_IO_DYNAMIC};
  }
  fx_init(&f);
  f.p.inputs = ins;
  f.p.n_inputs = N;
  assert_int_equal(pyop__validate_proto_view(&f.p), PYOP_OK);
  ins[N - 1].name = S("in17");
  REJECT_PROTO(&f, "input 599 name: duplicate name \"in17\" (also input 17)");
  f.p.inputs = ins;
  ins[N - 1].name = S(names[N - 1]);
  f.out[0].name = S("in3");
  assert_int_equal(pyop__validate_proto_view(&f.p), PYOP_OK);
  /* ... but two outputs of one name clash, on the hash path too. */
  static pyop_io_view outs[2];
  outs[0] = (pyop_io_view){sizeof(pyop_io_view), S("z"), PYOP_IO_REQUIRED};
  outs[1] = (pyop_io_view){sizeof(pyop_io_view), S("z"), PYOP_IO_REQUIRED};
  f.p.outputs = outs;
  f.p.n_outputs = 2;
  REJECT_PROTO(&f, "output 1 name: duplicate name \"z\" (also output 0)");
}

static void test_kinds_counts(void **state) {
  (void)state;
  fx f;
  fx_init(&f);
  f.in[0].kind = 3;
  REJECT_PROTO(&f, "input 0", "unknown kind 3");
  fx_init(&f);
  f.out[0].kind = -1;
  REJECT_PROTO(&f, "output 0", "unknown kind -1");
  fx_init(&f);
  f.p.n_outputs = 0; /* allowed from bridge ABI 1.1 on (test_contract.c) */
  f.p.struct_size = offsetof(pyop_proto_view, input_flags);
  REJECT_PROTO(&f, "outputs", "at least one");
  /* A 1.0 view has no input_flags nor output_alias: whatever lies there
   * (flags no libpyop knows, an alias of a read-only input) is neither
   * checked nor copied (both-sides pass, session 14). */
  {
    static const uint32_t stray_flags[2] = {0x8, 0x8};
    static const int32_t stray_alias[1] = {1};
    fx_init(&f);
    f.p.struct_size = offsetof(pyop_proto_view, input_flags);
    f.p.input_flags = stray_flags;
    f.p.output_alias = stray_alias;
    int vrc = pyop__validate_proto_view(&f.p);
    if (vrc != PYOP_OK) fail_msg("a 1.0 view's stray members: %s", pyop_last_error());
    pyop__proto *old10;
    assert_int_equal(pyop__proto_copy(&f.p, false, &old10), PYOP_OK);
    assert_null(old10->input_flags);
    assert_null(old10->output_alias);
    pyop__proto_free(old10);
  }
  fx_init(&f);
  f.p.n_inputs = 1025;
  REJECT_PROTO(&f, "inputs", "1025");
  fx_init(&f);
  f.p.inputs = NULL;
  REJECT_PROTO(&f, "inputs", "NULL");
  fx_init(&f);
  f.p.attrs = NULL;
  REJECT_PROTO(&f, "attrs", "NULL");
  fx_init(&f);
  f.p.n_attrs = (size_t)-1;
  REJECT_PROTO(&f, "attrs");
  /* no inputs at all is fine */
  fx_init(&f);
  f.p.inputs = NULL;
  f.p.n_inputs = 0;
  assert_int_equal(pyop__validate_proto_view(&f.p), PYOP_OK);
}

static void test_attr_types_defaults(void **state) {
  (void)state;
  fx f;
  fx_init(&f);
  f.at[0].type = 0;
  REJECT_PROTO(&f, "attr 0 \"alpha\"", "unknown type 0");
  fx_init(&f);
  f.at[0].type = 13;
  REJECT_PROTO(&f, "unknown type 13");
  fx_init(&f);
  f.at[0].required = 2;
  REJECT_PROTO(&f, "required is 2");
  fx_init(&f);
  f.at[0].default_value.type = PYOP_ATTR_INT;
  REJECT_PROTO(&f, "attr 0 \"alpha\"", "default value has type int, declared float");
  fx_init(&f);
  f.at[0].type = PYOP_ATTR_DTYPE;
  f.at[0].default_value.type = PYOP_ATTR_DTYPE;
  f.at[0].default_value.u.dtype = PYOP_DTYPE_COUNT;
  REJECT_PROTO(&f, "default value", "out of range");
  fx_init(&f);
  f.at[0].type = PYOP_ATTR_STR;
  f.at[0].default_value.type = PYOP_ATTR_STR;
  f.at[0].default_value.u.s = (pyop_str){NULL, 2};
  REJECT_PROTO(&f, "default value", "NULL data");
  f.at[0].default_value.u.s = (pyop_str){"a\0b", 3};
  REJECT_PROTO(&f, "default value", "embedded NUL");
  f.at[0].default_value.u.s = S(""); /* an empty string value is fine */
  assert_int_equal(pyop__validate_proto_view(&f.p), PYOP_OK);
  fx_init(&f);
  f.at[0].type = PYOP_ATTR_LIST_INT;
  f.at[0].default_value.type = PYOP_ATTR_LIST_INT;
  f.at[0].default_value.u.ints.items = NULL;
  f.at[0].default_value.u.ints.count = 3;
  REJECT_PROTO(&f, "default value", "NULL items");
  f.at[0].default_value.u.ints.count = 0; /* empty list with NULL items is fine */
  assert_int_equal(pyop__validate_proto_view(&f.p), PYOP_OK);
  fx_init(&f);
  pyop_str strs[2] = {S("a"), {NULL, 1}};
  f.at[0].type = PYOP_ATTR_LIST_STR;
  f.at[0].default_value.type = PYOP_ATTR_LIST_STR;
  f.at[0].default_value.u.strs.items = strs;
  f.at[0].default_value.u.strs.count = 2;
  REJECT_PROTO(&f, "default value", "item 1");
  fx_init(&f);
  int32_t dts[2] = {PYOP_DTYPE_INT8, 99};
  f.at[0].type = PYOP_ATTR_LIST_DTYPE;
  f.at[0].default_value.type = PYOP_ATTR_LIST_DTYPE;
  f.at[0].default_value.u.dtypes.items = dts;
  f.at[0].default_value.u.dtypes.count = 2;
  REJECT_PROTO(&f, "item 1", "99");
  fx_init(&f);
  int64_t row[2] = {1, 2};
  pyop_int_list rows[2] = {{row, 2}, {NULL, 5}};
  f.at[0].type = PYOP_ATTR_LIST_LIST_INT;
  f.at[0].default_value.type = PYOP_ATTR_LIST_LIST_INT;
  f.at[0].default_value.u.int_lists.items = rows;
  f.at[0].default_value.u.int_lists.count = 2;
  REJECT_PROTO(&f, "item 1", "NULL items");
  rows[1].items = row;
  rows[1].count = 1;
  assert_int_equal(pyop__validate_proto_view(&f.p), PYOP_OK);
  /* A required attribute's default is never read. */
  fx_init(&f);
  f.at[1].default_value.type = 77;
  assert_int_equal(pyop__validate_proto_view(&f.p), PYOP_OK);
}

/* Attribute values at their limits and one past: a list of
 * PYOP__MAX_LIST_LEN items (also one row of a list[list[int]]), the first
 * and last data type and one on either side, a NULL tensor value; an
 * output aliasing a negative index other than -1, or a dynamic output
 * aliasing. */
static void test_value_limits(void **state) {
  (void)state;
  fx f;
  static const int64_t some[1] = {7};
  fx_init(&f);
  f.at[0].type = PYOP_ATTR_LIST_INT;
  f.at[0].default_value.type = PYOP_ATTR_LIST_INT;
  f.at[0].default_value.u.ints.items = some; /* a length check: items are not read */
  f.at[0].default_value.u.ints.count = PYOP__MAX_LIST_LEN;
  assert_int_equal(pyop__validate_proto_view(&f.p), PYOP_OK);
  f.at[0].default_value.u.ints.count = PYOP__MAX_LIST_LEN + 1;
  REJECT_PROTO(&f, "attr 0 \"alpha\"", "list of 1048577 items (at most 1048576)");
  fx_init(&f);
  pyop_int_list rows[2] = {{some, 1}, {some, PYOP__MAX_LIST_LEN}};
  f.at[0].type = PYOP_ATTR_LIST_LIST_INT;
  f.at[0].default_value.type = PYOP_ATTR_LIST_LIST_INT;
  f.at[0].default_value.u.int_lists.items = rows;
  f.at[0].default_value.u.int_lists.count = 2;
  assert_int_equal(pyop__validate_proto_view(&f.p), PYOP_OK);
  rows[1].count = PYOP__MAX_LIST_LEN + 1;
  REJECT_PROTO(&f, "item 1: list of 1048577 items (at most 1048576)");
  /* An empty row may come without items, first or last (both-sides pass,
   * session 14); a row of one item may not. */
  rows[0] = (pyop_int_list){NULL, 0};
  rows[1] = (pyop_int_list){NULL, 0};
  assert_int_equal(pyop__validate_proto_view(&f.p), PYOP_OK);
  rows[1] = (pyop_int_list){NULL, 1};
  REJECT_PROTO(&f, "item 1: list of 1 item with NULL items");
  /* Data types: 0 and COUNT - 1 are, -1 and COUNT are not. */
  fx_init(&f);
  f.at[0].type = PYOP_ATTR_DTYPE;
  f.at[0].default_value.type = PYOP_ATTR_DTYPE;
  f.at[0].default_value.u.dtype = 0;
  assert_int_equal(pyop__validate_proto_view(&f.p), PYOP_OK);
  f.at[0].default_value.u.dtype = PYOP_DTYPE_COUNT - 1;
  assert_int_equal(pyop__validate_proto_view(&f.p), PYOP_OK);
  f.at[0].default_value.u.dtype = -1;
  REJECT_PROTO(&f, "default value", "data type -1 out of range");
  /* One past the last pyop_dtype too (both-sides pass, session 14). */
  f.at[0].default_value.u.dtype = PYOP_DTYPE_COUNT;
  REJECT_PROTO(&f, "default value", "data type 13 out of range");
  fx_init(&f);
  int32_t dts[2] = {PYOP_DTYPE_COUNT - 1, 0};
  f.at[0].type = PYOP_ATTR_LIST_DTYPE;
  f.at[0].default_value.type = PYOP_ATTR_LIST_DTYPE;
  f.at[0].default_value.u.dtypes.items = dts;
  f.at[0].default_value.u.dtypes.count = 2;
  assert_int_equal(pyop__validate_proto_view(&f.p), PYOP_OK);
  dts[1] = -1;
  REJECT_PROTO(&f, "item 1: data type -1 out of range");
  dts[1] = PYOP_DTYPE_COUNT;
  REJECT_PROTO(&f, "item 1: data type 13 out of range");
  /* A tensor value must point at a tensor. */
  pyop_attr_value tv = {.type = PYOP_ATTR_TENSOR, .u.tensor = NULL};
  pyop__sb why = PYOP__SB_INIT;
  assert_false(pyop__attr_value_check(&tv, &why));
  assert_string_equal(pyop__sb_str(&why), "tensor value is NULL");
  pyop__sb_free(&why);
  pyop_tensor t = {0};
  tv.u.tensor = &t;
  assert_true(pyop__attr_value_check(&tv, &why));
  assert_int_equal(why.len, 0);
  /* Aliases: -1 is "none", -2 is out of range; a dynamic output cannot
   * alias (a required, mutated input). */
  static const uint32_t mut[2] = {PYOP_INPUT_MUTATED, 0};
  int32_t alias[1] = {-1};
  fx_init(&f);
  f.p.input_flags = mut;
  f.p.output_alias = alias;
  assert_int_equal(pyop__validate_proto_view(&f.p), PYOP_OK);
  alias[0] = -2;
  REJECT_PROTO(&f, "output 0 \"z\": aliases input -2, the op has 2 inputs");
  alias[0] = 0;
  assert_int_equal(pyop__validate_proto_view(&f.p), PYOP_OK);
  f.out[0].kind = PYOP_IO_DYNAMIC;
  REJECT_PROTO(&f, "output 0 \"z\": only a required output can alias a required input "
                   "(input \"x\" is required, the output dynamic)");
}

static void test_caps_callbacks(void **state) {
  (void)state;
  fx f;
  pyop_op_callbacks cb;
  fx_init(&f);
  f.p.caps = PYOP_CAP_EXECUTE;
  REJECT_PROTO(&f, "caps", "not a subset of infer_meta");
  /* Bits no capability has are shown alone, after the known ones. */
  fx_init(&f);
  f.p.caps = PYOP_CAP_INFER_META | 0x30;
  REJECT_PROTO(&f, "caps: infer_meta|0x30 is not a subset of infer_meta");
  fx_init(&f);
  f.p.caps = 0x20;
  REJECT_PROTO(&f, "caps: 0x20 is not a subset of infer_meta");
  fx_init(&f);
  f.p.callbacks = NULL;
  REJECT_PROTO(&f, "callbacks: NULL");
  fx_init(&f);
  cb = proto_cbs;
  cb.infer_meta = NULL;
  f.p.callbacks = &cb;
  REJECT_PROTO(&f, "infer_meta is NULL but caps has INFER_META");
  fx_init(&f);
  cb = proto_cbs;
  cb.execute = cb_exec;
  f.p.callbacks = &cb;
  REJECT_PROTO(&f, "execute is set but caps lacks EXECUTE");
  fx_init(&f);
  f.p.caps = 0; /* callbacks given with infer_meta but no cap */
  REJECT_PROTO(&f, "infer_meta is set but caps lacks INFER_META");
  fx_init(&f);
  cb = proto_cbs;
  cb.create_holder = NULL;
  f.p.callbacks = &cb;
  REJECT_PROTO(&f, "create_holder is NULL");
  fx_init(&f);
  cb = proto_cbs;
  cb.destroy_holder = NULL;
  f.p.callbacks = &cb;
  REJECT_PROTO(&f, "destroy_holder is NULL");

  fx_init(&f);
  f.i.caps = 0;
  REJECT_IMPL(&f, "caps: empty");
  fx_init(&f);
  f.i.caps = PYOP_CAP_INFER_META | PYOP_CAP_EXECUTE;
  REJECT_IMPL(&f, "not a subset of execute|compile|launch");
  fx_init(&f);
  f.i.caps = 0x40;
  REJECT_IMPL(&f, "caps");
  fx_init(&f);
  f.i.callbacks = NULL;
  REJECT_IMPL(&f, "callbacks: NULL but caps is execute");
  /* Every capability is named, launch (the last) too (batch 14:
   * src.b14.descriptor.caps_text_without_launch read "none"). */
  f.i.caps = PYOP_CAP_LAUNCH;
  REJECT_IMPL(&f, "callbacks: NULL but caps is launch");
  f.i.caps = PYOP_CAP_COMPILE | PYOP_CAP_LAUNCH;
  REJECT_IMPL(&f, "callbacks: NULL but caps is compile|launch");
  fx_init(&f);
  f.p.caps = PYOP_CAP_INFER_META | PYOP_CAP_LAUNCH;
  REJECT_PROTO(&f, "caps: infer_meta|launch is not a subset of infer_meta");
  fx_init(&f);
  f.i.caps = PYOP_CAP_EXECUTE | PYOP_CAP_LAUNCH;
  REJECT_IMPL(&f, "declare_launch_args is NULL but caps has LAUNCH");
  cb = impl_cbs;
  cb.declare_launch_args = cb_declare;
  f.i.callbacks = &cb;
  assert_int_equal(pyop__validate_impl_view(&f.i), PYOP_OK);
  f.i.caps = PYOP_CAP_COMPILE;
  cb = impl_cbs;
  cb.execute = NULL;
  cb.compile = cb_compile;
  assert_int_equal(pyop__validate_impl_view(&f.i), PYOP_OK);
  cb.infer_meta = cb_infer;
  REJECT_IMPL(&f, "infer_meta is set");
}

static int cb_create_in(void *c, const pyop_attr_view *a, size_t n, uint32_t lane, void **o) {
  (void)lane;
  return cb_create(c, a, n, o);
}

/* ABI 1.6 lanes members: range, reason rules, create_holder_in needed;
 * kept by the copy; an older view runs serially with no reason. */
static void test_lanes_members(void **state) {
  (void)state;
  fx f;
  pyop_op_callbacks cb = proto_cbs;
  cb.create_holder_in = cb_create_in;
  fx_init(&f);
  f.p.lanes = 2;
  REJECT_PROTO(&f, "prototype", "lanes: 2 but callbacks have no create_holder_in");
  f.p.callbacks = &cb;
  assert_int_equal(pyop__validate_proto_view(&f.p), PYOP_OK);
  f.p.lanes = PYOP_MAX_LANES + 1;
  REJECT_PROTO(&f, "lanes: 65 is out of range (0..64)");
  f.p.lanes = PYOP_MAX_LANES; /* the limit itself is a number of lanes */
  assert_int_equal(pyop__validate_proto_view(&f.p), PYOP_OK);
  /* A callbacks struct that ends before create_holder_in has none, whatever
   * lies in memory after it. */
  cb.struct_size = offsetof(pyop_op_callbacks, create_holder_in);
  REJECT_PROTO(&f, "lanes: 64 but callbacks have no create_holder_in");
  cb.struct_size = sizeof cb;
  f.p.lanes = 2;
  f.p.serial_reason = S("lane 1: ImportError");
  REJECT_PROTO(&f, "lanes: 2 with a serial_reason");
  f.p.lanes = 0;
  f.p.serial_reason = S("line\nbreak");
  REJECT_PROTO(&f, "serial_reason: control character");
  f.p.serial_reason = (pyop_str){NULL, 3};
  REJECT_PROTO(&f, "serial_reason");
  f.p.serial_reason = S("lane 1: ImportError");
  pyop__proto *p;
  assert_int_equal(pyop__proto_copy(&f.p, false, &p), PYOP_OK);
  assert_string_equal(p->serial_reason, "lane 1: ImportError");
  assert_int_equal(p->lanes, 0);
  pyop__proto_free(p);
  f.p.serial_reason = (pyop_str){NULL, 0};
  f.p.lanes = 3;
  assert_int_equal(pyop__proto_copy(&f.p, false, &p), PYOP_OK);
  assert_string_equal(p->serial_reason, "");
  assert_int_equal(p->lanes, 3);
  pyop__proto_free(p);
  /* A 1.5 view: the members are not read. */
  f.p.struct_size = offsetof(pyop_proto_view, serial_reason);
  f.p.lanes = 99;
  assert_int_equal(pyop__proto_copy(&f.p, false, &p), PYOP_OK);
  assert_int_equal(p->lanes, 0);
  assert_string_equal(p->serial_reason, "");
  pyop__proto_free(p);

  /* A prototype without infer_meta (caps 0, no callbacks) makes no holder:
   * lanes need no create_holder_in there (both-sides pass, session 14). */
  fx_init(&f);
  f.p.caps = 0;
  f.p.callbacks = NULL;
  f.p.lanes = 2;
  assert_int_equal(pyop__validate_proto_view(&f.p), PYOP_OK);
  assert_int_equal(pyop__proto_copy(&f.p, false, &p), PYOP_OK);
  assert_int_equal(p->lanes, 2);
  pyop__proto_free(p);

  fx_init(&f);
  f.i.lanes = 1;
  REJECT_IMPL(&f, "implementation", "lanes: 1 but callbacks have no create_holder_in");
  pyop_op_callbacks icb = impl_cbs;
  icb.create_holder_in = cb_create_in;
  f.i.callbacks = &icb;
  pyop__impl *im;
  assert_int_equal(pyop__impl_copy(&f.i, &im), PYOP_OK);
  assert_int_equal(im->lanes, 1);
  pyop__impl_free(im);
  f.i.lanes = 0;
  f.i.serial_reason = S("x\001");
  REJECT_IMPL(&f, "serial_reason: control character");
  /* A 1.5 implementation view: the members are not read either (outcome
   * pass 2: src.out2.descriptor.impl_lanes_old_view, impl_reason_old_view). */
  f.i.struct_size = offsetof(pyop_impl_view, serial_reason);
  f.i.serial_reason = S("stray");
  f.i.lanes = 99;
  assert_int_equal(pyop__validate_impl_view(&f.i), PYOP_OK);
  assert_int_equal(pyop__impl_copy(&f.i, &im), PYOP_OK);
  assert_int_equal(im->lanes, 0);
  assert_string_equal(im->serial_reason, "");
  pyop__impl_free(im);
}

static void test_deep_copy(void **state) {
  (void)state;
  fx f;
  fx_init(&f);
  int64_t ints[3] = {1, 2, 3};
  pyop_str strs[2] = {S("p"), S("qq")};
  f.at[1].required = 0;
  f.at[1].type = PYOP_ATTR_LIST_STR;
  f.at[1].default_value.type = PYOP_ATTR_LIST_STR;
  f.at[1].default_value.u.strs.items = strs;
  f.at[1].default_value.u.strs.count = 2;
  pyop_attr_view at3[3] = {f.at[0], f.at[1], f.at[0]};
  at3[2].name = S("shape");
  at3[2].type = PYOP_ATTR_LIST_INT;
  at3[2].default_value.type = PYOP_ATTR_LIST_INT;
  at3[2].default_value.u.ints.items = ints;
  at3[2].default_value.u.ints.count = 3;
  f.p.attrs = at3;
  f.p.n_attrs = 3;
  /* Non-terminated source bytes: the copy must terminate them. */
  char buf[] = "ScaledAddXXX";
  f.p.op_type = (pyop_str){buf, 9};
  pt_faults_install();
  long base = pt_live_allocs();
  pyop__proto *p;
  assert_int_equal(pyop__proto_copy(&f.p, false, &p), PYOP_OK);
  assert_int_equal(pt_live_allocs(), base + 1); /* one block */
  memset(buf, 'Q', sizeof buf - 1);
  ints[0] = 99;
  strs[0] = S("zz");
  assert_string_equal(p->op_type, "ScaledAdd");
  assert_string_equal(p->key, "pyop:plugin_a.scaled_add");
  assert_string_equal(p->source, "plugin_a.py:12");
  assert_int_equal(p->n_inputs, 2);
  assert_string_equal(p->inputs[1].name, "y");
  assert_int_equal(p->inputs[1].kind, PYOP_IO_OPTIONAL);
  assert_string_equal(p->outputs[0].name, "z");
  assert_int_equal(p->n_attrs, 3);
  assert_true(p->attrs[0].default_value.u.f == 1.5);
  assert_int_equal(p->attrs[1].default_value.u.strs.count, 2);
  assert_string_equal(p->attrs[1].default_value.u.strs.items[0].data, "p");
  /* Each string of a list[str] keeps its own length, not the first's
   * (batch 12 survivor: src.b12.descriptor.list_str_first_len). */
  assert_int_equal(p->attrs[1].default_value.u.strs.items[0].len, 1);
  assert_int_equal(p->attrs[1].default_value.u.strs.items[1].len, 2);
  assert_string_equal(p->attrs[1].default_value.u.strs.items[1].data, "qq");
  assert_int_equal(p->attrs[2].default_value.u.ints.items[0], 1);
  assert_int_equal(pyop__proto_attr_find(p, "shape"), 2);
  assert_int_equal(pyop__proto_attr_find(p, "alpha"), 0);
  assert_int_equal(pyop__proto_attr_find(p, "nope"), -1);
  assert_ptr_equal(p->callbacks, &proto_cbs);

  /* Equality ignores key/source/callbacks, not content. */
  fx g;
  fx_init(&g);
  g.at[1] = f.at[1];
  strs[0] = S("p");
  ints[0] = 1;
  pyop_attr_view at3b[3] = {at3[0], at3[1], at3[2]};
  g.p.attrs = at3b;
  g.p.n_attrs = 3;
  g.p.key = S("other");
  g.p.source_file = S("b.py");
  pyop__proto *q;
  assert_int_equal(pyop__proto_copy(&g.p, false, &q), PYOP_OK);
  pyop__sb why = PYOP__SB_INIT;
  assert_true(pyop__proto_same(p, q, &why));
  assert_string_equal(pyop__sb_str(&why), ""); /* nothing differs: nothing said */
  pyop__proto_free(q);
  int64_t ints2[3] = {1, 2, 4};
  at3b[2].default_value.u.ints.items = ints2;
  assert_int_equal(pyop__proto_copy(&g.p, false, &q), PYOP_OK);
  assert_false(pyop__proto_same(p, q, &why));
  assert_string_equal(pyop__sb_str(&why), "attr 2 \"shape\": different default values");
  pyop__sb_free(&why);
  pyop__proto_free(q);
  g.in[0].kind = PYOP_IO_DYNAMIC;
  assert_int_equal(pyop__proto_copy(&g.p, false, &q), PYOP_OK);
  assert_false(pyop__proto_same(p, q, &why));
  assert_string_equal(pyop__sb_str(&why), "input 0 \"x\": kind required vs dynamic");
  pyop__sb_free(&why);
  pyop__proto_free(q);
  pyop__proto_free(p);

  /* Host copies say "<host>"; an impl copy. */
  assert_int_equal(pyop__proto_copy(&g.p, true, &q), PYOP_OK);
  assert_string_equal(q->source, "<host>");
  pyop__proto_free(q);
  pyop__impl *im;
  assert_int_equal(pyop__impl_copy(&f.i, &im), PYOP_OK);
  assert_string_equal(im->source, "plugin_a.py:30");
  assert_string_equal(im->key, "pyop:plugin_a.ScaledAddImpl");
  pyop__impl_free(im);
  assert_int_equal(pt_live_allocs(), base);

  /* A failed copy allocation leaks nothing. */
  pt_faults_arm(0);
  assert_int_equal(pyop__proto_copy(&f.p, false, &p), PYOP_ENOMEM);
  assert_null(p);
  pt_faults_arm(-1);
  assert_int_equal(pt_live_allocs(), base);
  pt_faults_remove();
}

/* ------------------------------------------- conflicts, part by part */

/* Copies v (a plugin's view) and compares it with the copy of w. */
static bool views_same(const pyop_proto_view *v, const pyop_proto_view *w, char *why_out,
                       size_t cap) {
  pyop__proto *a, *b;
  assert_int_equal(pyop__proto_copy(v, false, &a), PYOP_OK);
  assert_int_equal(pyop__proto_copy(w, false, &b), PYOP_OK);
  pyop__sb why = PYOP__SB_INIT;
  bool same = pyop__proto_same(a, b, &why);
  snprintf(why_out, cap, "%s", pyop__sb_str(&why));
  pyop__sb_free(&why);
  pyop__proto_free(a);
  pyop__proto_free(b);
  return same;
}

/*
 * Two prototypes differ in any part, also the LAST input, the only output,
 * the last input's flags, the output's alias, a list default's second item
 * and a name that only extends the other: each is a difference (outcome
 * pass 2: the comparisons' loops and names, src.out2.conflict.*).
 */
static void test_proto_same_every_part(void **state) {
  (void)state;
  char why[512];
  fx f, g;
  fx_init(&f);
  fx_init(&g);
  assert_true(views_same(&f.p, &g.p, why, sizeof why));
  /* The last input's name; a name extending the other one. */
  g.in[1].name = S("y2");
  assert_false(views_same(&f.p, &g.p, why, sizeof why));
  assert_string_equal(why, "input 1: name \"y\" vs \"y2\"");
  fx_init(&g);
  g.out[0].name = S("zz");
  assert_false(views_same(&f.p, &g.p, why, sizeof why));
  assert_string_equal(why, "output 0: name \"z\" vs \"zz\"");
  /* An attribute name extending the other one. */
  fx_init(&g);
  g.at[0].name = S("alphas");
  assert_false(views_same(&f.p, &g.p, why, sizeof why));
  assert_string_equal(why, "attr 0: name \"alpha\" vs \"alphas\"");
  /* The last input's flags. */
  uint32_t fl_a[2] = {PYOP_INPUT_MUTATED, 0}, fl_b[2] = {PYOP_INPUT_MUTATED,
                                                         PYOP_INPUT_MUTATED};
  fx_init(&f);
  fx_init(&g);
  f.p.input_flags = fl_a;
  g.p.input_flags = fl_b;
  assert_false(views_same(&f.p, &g.p, why, sizeof why));
  assert_string_equal(why, "input 1 \"y\": read-only vs mutated");
  /* The only output's alias (of the mutated input x) against none. */
  int32_t alias[1] = {0}, none[1] = {-1};
  g.p.input_flags = fl_a;
  f.p.output_alias = alias;
  g.p.output_alias = none;
  assert_false(views_same(&f.p, &g.p, why, sizeof why));
  assert_string_equal(why, "output 0 \"z\": aliases input 0 vs -1");
  g.p.output_alias = alias;
  assert_true(views_same(&f.p, &g.p, why, sizeof why));
  /* Defaults: list[bool] and list[str] differing in their second item only. */
  fx_init(&f);
  fx_init(&g);
  bool ba[2] = {true, false}, bb[2] = {true, true};
  f.at[0].type = g.at[0].type = PYOP_ATTR_LIST_BOOL;
  f.at[0].default_value.type = g.at[0].default_value.type = PYOP_ATTR_LIST_BOOL;
  f.at[0].default_value.u.bools.items = ba;
  f.at[0].default_value.u.bools.count = 2;
  g.at[0].default_value.u.bools.items = bb;
  g.at[0].default_value.u.bools.count = 2;
  assert_false(views_same(&f.p, &g.p, why, sizeof why));
  assert_string_equal(why, "attr 0 \"alpha\": different default values");
  g.at[0].default_value.u.bools.items = ba;
  g.at[0].default_value.u.bools.count = 2;
  assert_true(views_same(&f.p, &g.p, why, sizeof why));
  pyop_str sa[2] = {S("p"), S("q")}, sb[2] = {S("p"), S("r")};
  f.at[0].type = g.at[0].type = PYOP_ATTR_LIST_STR;
  f.at[0].default_value.type = g.at[0].default_value.type = PYOP_ATTR_LIST_STR;
  f.at[0].default_value.u.strs.items = sa;
  f.at[0].default_value.u.strs.count = 2;
  g.at[0].default_value.u.strs.items = sb;
  g.at[0].default_value.u.strs.count = 2;
  assert_false(views_same(&f.p, &g.p, why, sizeof why));
  g.at[0].default_value.u.strs.items = sa;
  g.at[0].default_value.u.strs.count = 2;
  assert_true(views_same(&f.p, &g.p, why, sizeof why));
  /* Float defaults by their bits: 0.0 and -0.0 differ, a NaN is itself. */
  fx_init(&f);
  fx_init(&g);
  f.at[0].default_value.u.f = 0.0;
  g.at[0].default_value.u.f = -0.0;
  assert_false(views_same(&f.p, &g.p, why, sizeof why));
  assert_string_equal(why, "attr 0 \"alpha\": different default values");
  f.at[0].default_value.u.f = g.at[0].default_value.u.f = NAN;
  assert_true(views_same(&f.p, &g.p, why, sizeof why));
}

/*
 * Two int defaults that differ only past 2^32 (1 and 1 + 2^32: the same low
 * 32 bits) are two prototypes; the same value is one (configuration pass,
 * src.cf.conflict.int_default_low_bits).
 */
static void test_proto_same_int_default_past_2_32(void **state) {
  (void)state;
  char why[512];
  fx f, g;
  fx_init(&f);
  fx_init(&g);
  f.at[0].type = g.at[0].type = PYOP_ATTR_INT;
  f.at[0].default_value.type = g.at[0].default_value.type = PYOP_ATTR_INT;
  f.at[0].default_value.u.i = 1;
  g.at[0].default_value.u.i = INT64_C(1) + (INT64_C(1) << 32);
  assert_false(views_same(&f.p, &g.p, why, sizeof why));
  assert_string_equal(why, "attr 0 \"alpha\": different default values");
  g.at[0].default_value.u.i = 1;
  assert_true(views_same(&f.p, &g.p, why, sizeof why));
}

/*
 * Two implementations of one op type whose capabilities differ (one adds
 * launch) are two contents: with the same key and source it is a conflict
 * ("same descriptor key, different content"), not the same definition.
 */
static void test_impl_same_caps(void **state) {
  (void)state;
  fx f, g;
  fx_init(&f);
  fx_init(&g);
  pyop__impl *a, *b;
  assert_int_equal(pyop__impl_copy(&f.i, &a), PYOP_OK);
  assert_int_equal(pyop__impl_copy(&g.i, &b), PYOP_OK);
  b->caps = PYOP_CAP_EXECUTE | PYOP_CAP_COMPILE; /* as a copy of a view with compile */
  pyop__sb why = PYOP__SB_INIT;
  assert_false(pyop__impl_same(a, b, &why));
  pyop__sb_free(&why);
  assert_int_equal(pyop__check_impls(b, a, "registered"), PYOP_ECONFLICT);
  assert_non_null(strstr(pyop_last_error(), "same descriptor key, different content"));
  assert_int_equal(pyop__check_impls(a, a, "registered"), PYOP_OK);
  pyop__impl_free(a);
  pyop__impl_free(b);
}

/* pyop__check_protos of a new prototype n against the held o (same content). */
static int check_views(const pyop_proto_view *n, const pyop_proto_view *o) {
  pyop__proto *a, *b;
  assert_int_equal(pyop__proto_copy(n, false, &a), PYOP_OK);
  assert_int_equal(pyop__proto_copy(o, false, &b), PYOP_OK);
  int rc = pyop__check_protos(a, b, "registered");
  pyop__proto_free(a);
  pyop__proto_free(b);
  return rc;
}

/*
 * The same content under a key that only extends the held one's, or at a
 * source line whose text extends the held one's ("p.py:1" and "p.py:12",
 * no digest), is another definition: PYOP_ECONFLICT; the same key and
 * source is one definition (src.out2.conflict.key_prefix, source_prefix).
 */
static void test_conflict_names_whole(void **state) {
  (void)state;
  fx n, o;
  fx_init(&n);
  fx_init(&o);
  assert_int_equal(check_views(&n.p, &o.p), PYOP_OK);
  o.p.key = S("pyop:plugin_a.scaled_add2");
  assert_int_equal(check_views(&n.p, &o.p), PYOP_ECONFLICT);
  assert_non_null(strstr(pyop_last_error(), "different descriptor key"));
  fx_init(&o);
  n.p.source_line = 1;
  o.p.source_line = 12;
  assert_int_equal(check_views(&n.p, &o.p), PYOP_ECONFLICT);
  assert_non_null(strstr(pyop_last_error(), "two different definitions"));
  n.p.source_line = 12;
  assert_int_equal(check_views(&n.p, &o.p), PYOP_OK);
  /* Digests compared whole: one that extends the other is other code
   * (src.out2.conflict.digest_prefix). */
  n.p.source_digest = S("sha256:0123");
  o.p.source_digest = S("sha256:01234");
  assert_int_equal(check_views(&n.p, &o.p), PYOP_ECONFLICT);
  assert_non_null(strstr(pyop_last_error(), "the source files differ"));
  o.p.source_digest = S("sha256:0123");
  assert_int_equal(check_views(&n.p, &o.p), PYOP_OK);
}

/*
 * A prototype with fewer inputs (or outputs) than the other, the ones it
 * has the same, is another content in either order: registered after the
 * held one under its key and source, a conflict, not the same definition
 * (batch 18 survivor, session 15: src.b18.conflict.io_count_prefix, only
 * more ios than the held one's compared as a difference).
 */
static void test_proto_same_io_count_prefix(void **state) {
  (void)state;
  char why[512];
  fx n, o;
  fx_init(&n);
  fx_init(&o);
  n.p.n_inputs = 1; /* x; the held one has x, y */
  assert_false(views_same(&n.p, &o.p, why, sizeof why));
  assert_string_equal(why, "1 inputs vs 2");
  assert_false(views_same(&o.p, &n.p, why, sizeof why));
  assert_string_equal(why, "2 inputs vs 1");
  assert_int_equal(check_views(&n.p, &o.p), PYOP_ECONFLICT);
  assert_string_equal(pyop_last_error(),
                      "op type \"ScaledAdd\": prototype \"pyop:plugin_a.scaled_add\" "
                      "(plugin_a.py:12) conflicts with prototype \"pyop:plugin_a.scaled_add\" "
                      "(plugin_a.py:12) registered: same descriptor key, different content "
                      "(1 inputs vs 2)");
  /* Outputs: z against the held z, w. */
  fx_init(&n);
  pyop_io_view outs[2] = {o.out[0], o.out[0]};
  outs[1].name = S("w");
  o.p.outputs = outs;
  o.p.n_outputs = 2;
  assert_false(views_same(&n.p, &o.p, why, sizeof why));
  assert_string_equal(why, "1 outputs vs 2");
  assert_false(views_same(&o.p, &n.p, why, sizeof why));
  assert_string_equal(why, "2 outputs vs 1");
  assert_int_equal(check_views(&n.p, &o.p), PYOP_ECONFLICT);
  assert_non_null(strstr(pyop_last_error(), "same descriptor key, different content "
                                            "(1 outputs vs 2)"));
  /* The same counts: one definition. */
  n.p.outputs = outs;
  n.p.n_outputs = 2;
  assert_int_equal(check_views(&n.p, &o.p), PYOP_OK);
}

/*
 * The three ways two prototypes of an op type conflict, each message whole
 * (configuration pass: a second descriptor that differs in key, content or
 * both, src.cf.conflict.key_reason_swapped, key_only_detail):
 * another key with the same content says nothing of the content; another
 * key and content gives the first difference; the same key, another
 * content, too.
 */
static void test_conflict_reasons_whole(void **state) {
  (void)state;
  fx n, o;
  fx_init(&n);
  fx_init(&o);
  o.p.key = S("pyop:plugin_b.scaled_add");
  o.p.source_file = S("plugin_b.py");
  assert_int_equal(check_views(&n.p, &o.p), PYOP_ECONFLICT);
  assert_int_equal(pyop_last_status(), PYOP_ECONFLICT);
  assert_string_equal(pyop_last_error(),
                      "op type \"ScaledAdd\": prototype \"pyop:plugin_a.scaled_add\" "
                      "(plugin_a.py:12) conflicts with prototype \"pyop:plugin_b.scaled_add\" "
                      "(plugin_b.py:12) registered: different descriptor key");
  n.out[0].name = S("w");
  assert_int_equal(check_views(&n.p, &o.p), PYOP_ECONFLICT);
  assert_string_equal(pyop_last_error(),
                      "op type \"ScaledAdd\": prototype \"pyop:plugin_a.scaled_add\" "
                      "(plugin_a.py:12) conflicts with prototype \"pyop:plugin_b.scaled_add\" "
                      "(plugin_b.py:12) registered: different descriptor key and content "
                      "(output 0: name \"w\" vs \"z\")");
  fx_init(&o);
  assert_int_equal(check_views(&n.p, &o.p), PYOP_ECONFLICT);
  assert_string_equal(pyop_last_error(),
                      "op type \"ScaledAdd\": prototype \"pyop:plugin_a.scaled_add\" "
                      "(plugin_a.py:12) conflicts with prototype \"pyop:plugin_a.scaled_add\" "
                      "(plugin_a.py:12) registered: same descriptor key, different content "
                      "(output 0: name \"w\" vs \"z\")");
}

static void test_types_helpers(void **state) {
  (void)state;
  assert_string_equal(pyop_dtype_name(PYOP_DTYPE_BFLOAT16), "bfloat16");
  assert_null(pyop_dtype_name(PYOP_DTYPE_COUNT));
  assert_int_equal(pyop_dtype_size(PYOP_DTYPE_FLOAT64), 8);
  assert_int_equal(pyop_dtype_size(-1), 0);
  int d = -5;
  assert_int_equal(pyop_dtype_from_name("uint16", &d), PYOP_OK);
  assert_int_equal(d, PYOP_DTYPE_UINT16);
  assert_int_equal(pyop_dtype_from_name("float", &d), PYOP_EINVAL);
  assert_non_null(strstr(pyop_last_error(), "float32"));
  assert_int_equal(d, PYOP_DTYPE_UINT16);
  /* A known name with more after it is no name (outcome pass 2:
   * src.out2.types.dtype_name_trailing). */
  static const char *const longer[] = {"float32x", "bool ", "int8_t", "bfloat16s"};
  for (size_t i = 0; i < 4; i++) {
    if (pyop_dtype_from_name(longer[i], &d) != PYOP_EINVAL)
      fail_msg("\"%s\" read as data type %d", longer[i], d);
    assert_int_equal(d, PYOP_DTYPE_UINT16);
  }
  assert_string_equal(pyop_format_name(PYOP_FORMAT_FRACTAL_NZ), "FRACTAL_NZ");
  assert_null(pyop_format_name(17));
  assert_string_equal(pyop_attr_type_name(PYOP_ATTR_LIST_LIST_INT), "list[list[int]]");
  assert_null(pyop_attr_type_name(0));
  pyop_tensor t = {0};
  assert_int_equal(pyop_tensor_numel(&t), 1);
  t.ndim = 3;
  t.shape[0] = 2; t.shape[1] = 3; t.shape[2] = 4;
  assert_int_equal(pyop_tensor_numel(&t), 24);
  t.shape[1] = -1;
  assert_int_equal(pyop_tensor_numel(&t), -1);
  t.shape[0] = INT64_MAX; t.shape[1] = 2;
  assert_int_equal(pyop_tensor_numel(&t), -1);
  t.shape[2] = 0;
  assert_int_equal(pyop_tensor_numel(&t), 0);
  t.ndim = 9;
  assert_int_equal(pyop_tensor_numel(&t), -1);
  assert_int_equal(pyop_tensor_numel(NULL), -1);
  /* A negative dim is a bad shape wherever it is, also after a zero one. */
  pyop_tensor z = {0};
  z.ndim = 2;
  z.shape[0] = -5; z.shape[1] = 0;
  assert_int_equal(pyop_tensor_numel(&z), -1);
  z.shape[0] = 0; z.shape[1] = -5;
  assert_int_equal(pyop_tensor_numel(&z), -1);
  z.shape[0] = 0; z.shape[1] = 5;
  assert_int_equal(pyop_tensor_numel(&z), 0);
}

/* ------------------------------------------------ the names table */

/* One row of tests/names.txt (the format is described there). */
typedef struct name_row {
  int line;
  bool op_type; /* KIND op_type, else name */
  bool ok;      /* VERDICT */
  char name[4096];
  size_t len;
} name_row;

static int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* Decodes NAME (\xHH, trailing *N, "(empty)") into r; false when malformed. */
static bool name_decode(const char *text, name_row *r) {
  size_t n = strlen(text), reps = 1;
  const char *star = strrchr(text, '*');
  if (star && star[1]) {
    char *end;
    unsigned long v = strtoul(star + 1, &end, 10);
    if (*end == '\0' && v > 0) {
      reps = v;
      n = (size_t)(star - text);
    }
  }
  char one[512];
  size_t k = 0;
  if (!(n == 7 && strncmp(text, "(empty)", 7) == 0)) {
    for (size_t i = 0; i < n; i++) {
      if (k == sizeof one) return false;
      if (text[i] == '\\' && i + 3 < n && text[i + 1] == 'x' && hex_digit(text[i + 2]) >= 0 &&
          hex_digit(text[i + 3]) >= 0) {
        one[k++] = (char)(hex_digit(text[i + 2]) * 16 + hex_digit(text[i + 3]));
        i += 3;
      } else {
        one[k++] = text[i];
      }
    }
  }
  if (k * reps > sizeof r->name) return false;
  r->len = 0;
  for (size_t j = 0; j < reps; j++) {
    memcpy(r->name + r->len, one, k);
    r->len += k;
  }
  return true;
}

/* Reads every row of tests/names.txt into rows (at most cap); the count. */
static size_t names_read(name_row *rows, size_t cap) {
  FILE *f = fopen(PYOP_TEST_NAMES_FILE, "r");
  if (!f) fail_msg("cannot open %s", PYOP_TEST_NAMES_FILE);
  char line[1024];
  size_t n = 0;
  for (int ln = 1; fgets(line, sizeof line, f); ln++) {
    line[strcspn(line, "\n")] = '\0';
    if (!line[0] || line[0] == '#') continue;
    char kind[16], verdict[8];
    int used = 0;
    if (sscanf(line, "%15s %7s %n", kind, verdict, &used) != 2 || !used || n == cap)
      fail_msg("%s:%d: malformed row \"%s\"", PYOP_TEST_NAMES_FILE, ln, line);
    name_row *r = &rows[n++];
    r->line = ln;
    r->op_type = strcmp(kind, "op_type") == 0;
    r->ok = strcmp(verdict, "ok") == 0;
    if ((!r->op_type && strcmp(kind, "name") != 0) || (!r->ok && strcmp(verdict, "bad") != 0) ||
        !name_decode(line + used, r))
      fail_msg("%s:%d: malformed row \"%s\"", PYOP_TEST_NAMES_FILE, ln, line);
  }
  fclose(f);
  return n;
}

/* Every row of tests/names.txt, through the validation that is the rule's
 * authority: an op type as the prototype's and the implementation's op_type,
 * a name as an input's, an output's and an attribute's. A bad one is
 * PYOP_EDESCRIPTOR with a message naming the field. */
static void test_names_table(void **state) {
  (void)state;
  static name_row rows[256];
  size_t n = names_read(rows, PYOP__ARRAY_LEN(rows));
  assert_true(n > 20);
  size_t good = 0, bad = 0;
  for (size_t i = 0; i < n; i++) {
    const name_row *r = &rows[i];
    pyop_str s = {r->len ? r->name : NULL, r->len};
    r->ok ? good++ : bad++;
    for (int where = 0; where < (r->op_type ? 2 : 3); where++) {
      fx f;
      fx_init(&f);
      /* Names no row uses, so that a valid one never collides. */
      f.in[0].name = S("q_in0");
      f.in[1].name = S("q_in1");
      f.out[0].name = S("q_out0");
      f.at[0].name = S("q_at0");
      f.at[1].name = S("q_at1");
      const char *field;
      int rc;
      if (r->op_type) {
        field = "op_type";
        if (where == 0) f.p.op_type = s;
        else f.i.op_type = s;
        rc = where == 0 ? pyop__validate_proto_view(&f.p) : pyop__validate_impl_view(&f.i);
      } else {
        static const char *const fields[] = {"input 0 name", "output 0 name", "attr 0 name"};
        field = fields[where];
        if (where == 0) f.in[0].name = s;
        else if (where == 1) f.out[0].name = s;
        else f.at[0].name = s;
        rc = pyop__validate_proto_view(&f.p);
      }
      if (r->ok && rc != PYOP_OK)
        fail_msg("names.txt:%d: valid %s refused: %s", r->line, field, pyop_last_error());
      if (!r->ok && rc != PYOP_EDESCRIPTOR)
        fail_msg("names.txt:%d: invalid %s accepted (status %d)", r->line, field, rc);
      if (!r->ok && !strstr(pyop_last_error(), field))
        fail_msg("names.txt:%d: message \"%s\" does not name %s", r->line, pyop_last_error(),
                 field);
    }
  }
  assert_true(good > 5 && bad > 10);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_valid_views),
      cmocka_unit_test(test_null_and_struct_size),
      cmocka_unit_test(test_string_views),
      cmocka_unit_test(test_duplicate_names),
      cmocka_unit_test(test_kinds_counts),
      cmocka_unit_test(test_attr_types_defaults),
      cmocka_unit_test(test_value_limits),
      cmocka_unit_test(test_caps_callbacks),
      cmocka_unit_test(test_lanes_members),
      cmocka_unit_test(test_deep_copy),
      cmocka_unit_test(test_proto_same_every_part),
      cmocka_unit_test(test_proto_same_int_default_past_2_32),
      cmocka_unit_test(test_impl_same_caps),
      cmocka_unit_test(test_conflict_names_whole),
      cmocka_unit_test(test_proto_same_io_count_prefix),
      cmocka_unit_test(test_conflict_reasons_whole),
      cmocka_unit_test(test_types_helpers),
      cmocka_unit_test(test_names_table),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
