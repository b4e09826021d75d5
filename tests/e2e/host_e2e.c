/*
 * End-to-end tests of libpyop through its public API only, with the real
 * bridge and a real Python: this is a C host that links Debian's libpython
 * (like an embedding engine), initialises Python itself and releases the GIL,
 * points ASCEND_CUSTOM_OPP_PATH at a private copy of the plugins and calls
 * pyop_* from its own threads.
 *
 *   host_e2e --list | CASE [ARGS...]
 *
 * The cases are HOST_E2E_CASES at the end (one ctest each, tests/cases.h);
 * the comment above each case_<name> says what it checks.
 *
 * Plugins come from tests/integration/plugins (E2E_IT_PLUGINS) and
 * tests/e2e/plugins (E2E_PLUGINS), copied into a temporary directory first.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "e2e_util.h"
#include "../cases.h"

#ifndef E2E_PLUGINS
#error "E2E_PLUGINS (tests/e2e/plugins) must be defined"
#endif
#ifndef E2E_IT_PLUGINS
#error "E2E_IT_PLUGINS (tests/integration/plugins) must be defined"
#endif

static char *g_tmp;     /* the private temporary tree */
static char *g_it;      /* copy of tests/integration/plugins */
static char *g_e2e;     /* copy of tests/e2e/plugins */

static char *it_path(const char *rel) { return path_join(g_it, rel); }
static char *e2e_path(const char *rel) { return path_join(g_e2e, rel); }

/* OPP path "A:B" from two relative paths in the integration copy. */
static void opp_it(const char *a, const char *b) {
  char *pa = it_path(a);
  char *pb = b ? it_path(b) : NULL;
  char *v = pb ? xasprintf("%s:%s", pa, pb) : xstrdup(pa);
  set_opp_path(v);
  free(v);
  free(pa);
  free(pb);
}

/*
 * source is "<file>:<line>" where line is the line of the first occurrence
 * of needle in file (the decorator) or the next one (the def/class line):
 * where the user would look for the definition.
 */
static void check_source(const char *source, const char *file, const char *needle) {
  int line = find_line(file, needle);
  REQUIRE(line > 0, "test bug: \"%s\" not found in %s", needle, file);
  char *a = xasprintf("%s:%d", file, line), *b = xasprintf("%s:%d", file, line + 1);
  CHECK(source && (strcmp(source, a) == 0 || strcmp(source, b) == 0),
        "source is \"%s\", expected \"%s\" (or line %d)", source ? source : "(null)", a,
        line + 1);
  free(a);
  free(b);
}

/* last error names file and a line of it that holds needle ("file:line"
 * or, in a traceback, `File "file", line N`). */
static void check_err_names_line(const char *file, const char *needle) {
  int line = find_line(file, needle);
  REQUIRE(line > 0, "test bug: \"%s\" not found in %s", needle, file);
  char *a = xasprintf("%s:%d", file, line), *b = xasprintf("%s:%d", file, line + 1);
  char *c = xasprintf("\"%s\", line %d", file, line);
  CHECK(err_has(a) || err_has(b) || err_has(c),
        "last error does not name %s line %d (\"%s\")", file, line, needle);
  free(a);
  free(b);
  free(c);
}

/* ================================================================ (a) list */

static const char *kind_name(int k) {
  return k == PYOP_IO_REQUIRED ? "required" : k == PYOP_IO_OPTIONAL ? "optional"
         : k == PYOP_IO_DYNAMIC ? "dynamic" : "?";
}

static void check_ios(const char *op, const pyop_io_info *ios, size_t n, const char *what,
                      const char *const *names, const int *kinds, size_t want) {
  CHECK(n == want, "%s: %zu %s, expected %zu", op, n, what, want);
  for (size_t i = 0; i < n && i < want; i++) {
    CHECK(ios[i].name && strcmp(ios[i].name, names[i]) == 0, "%s: %s %zu is \"%s\", expected \"%s\"",
          op, what, i, ios[i].name ? ios[i].name : "(null)", names[i]);
    CHECK(ios[i].kind == kinds[i], "%s: %s %zu \"%s\" is %s, expected %s", op, what, i,
          names[i], kind_name(ios[i].kind), kind_name(kinds[i]));
  }
}

static const pyop_attr_info *find_attr(const pyop_op_info *info, const char *name) {
  for (size_t i = 0; i < info->n_attrs; i++)
    if (strcmp(info->attrs[i].name, name) == 0) return &info->attrs[i];
  return NULL;
}

/* Required attribute name of type t. */
static void check_attr_req(const pyop_op_info *info, const char *name, int t) {
  const pyop_attr_info *a = find_attr(info, name);
  CHECK(a != NULL, "%s: no attribute %s", info->op_type, name);
  if (!a) return;
  CHECK(a->type == t, "%s.%s: type %s, expected %s", info->op_type, name,
        pyop_attr_type_name(a->type), pyop_attr_type_name(t));
  CHECK(a->required, "%s.%s should be required", info->op_type, name);
}

/* Optional attribute: type t, returns its default for the caller to check. */
static const pyop_attr_value *attr_default(const pyop_op_info *info, const char *name, int t) {
  const pyop_attr_info *a = find_attr(info, name);
  CHECK(a != NULL, "%s: no attribute %s", info->op_type, name);
  if (!a) return NULL;
  CHECK(a->type == t, "%s.%s: type %s, expected %s", info->op_type, name,
        pyop_attr_type_name(a->type), pyop_attr_type_name(t));
  CHECK(!a->required, "%s.%s should be optional", info->op_type, name);
  CHECK(a->default_value.type == t, "%s.%s: default of type %s", info->op_type, name,
        pyop_attr_type_name(a->default_value.type));
  return a->default_value.type == t ? &a->default_value : NULL;
}

static bool str_is(pyop_str s, const char *want) {
  return s.len == strlen(want) && memcmp(s.data, want, s.len) == 0;
}

/*
 * (a) A file plugin and a package plugin load; pyop_op_list and pyop_op_get
 * give inputs and their kinds, outputs, every attribute type with its
 * default, capabilities, descriptor keys and the source file:line; ENOENT
 * names the op; doctor; a description outlives pyop_unload; the GE entry
 * points.
 */
static void case_list(void) {
  opp_it("basic", "attrs");
  bool need = false;
  CHECK_RC(pyop_check_need_load(&need), PYOP_OK);
  CHECK(need, "a directory with Python plugins needs a load");
  need = false;
  CHECK(CheckNeedLoadPythonCustomOps(&need) == 0 && need, "GE entry: need_load");

  char key[64];
  CHECK_RC(pyop_runtime_key(key, sizeof key), PYOP_OK);
  CHECK(strcmp(key, "cp311-x86_64") == 0, "runtime key %s", key);

  REQUIRE_RC(pyop_load(), PYOP_OK);
  CHECK_LIST("AllAttrs,IoKinds,PkgDouble,ScaledAdd,ShadowJson");
  CHECK_RC(pyop_load(), PYOP_OK); /* idempotent */
  CHECK_LIST("AllAttrs,IoKinds,PkgDouble,ScaledAdd,ShadowJson");

  char *ops_file = it_path("basic/ops_file.py");
  char *pkg_init = it_path("basic/mypkg/__init__.py");
  char *json_py = it_path("basic/json.py");
  char *attrs_py = it_path("attrs/attrs_all.py");

  /* ScaledAdd(x, y, *, alpha: float = 1.0) -> y, with an execute impl. */
  const pyop_op_info *sa = NULL;
  REQUIRE_RC(pyop_op_get("ScaledAdd", &sa), PYOP_OK);
  CHECK(sa->struct_size >= sizeof(pyop_op_info), "struct_size %zu", sa->struct_size);
  CHECK(strcmp(sa->op_type, "ScaledAdd") == 0, "op_type %s", sa->op_type);
  CHECK(sa->proto_key && strcmp(sa->proto_key, "pyop:ops_file.scaled_add") == 0,
        "proto_key %s", sa->proto_key ? sa->proto_key : "(null)");
  CHECK(sa->impl_key && strcmp(sa->impl_key, "pyop:ops_file.ScaledAddImpl") == 0,
        "impl_key %s", sa->impl_key ? sa->impl_key : "(null)");
  check_source(sa->proto_source, ops_file, "register_op(op_type=\"ScaledAdd\")");
  check_source(sa->impl_source, ops_file, "register_op_impl(op_type=\"ScaledAdd\")");
  {
    const char *in[] = {"x", "y"}, *out[] = {"y"};
    const int ik[] = {PYOP_IO_REQUIRED, PYOP_IO_REQUIRED}, ok[] = {PYOP_IO_REQUIRED};
    check_ios("ScaledAdd", sa->inputs, sa->n_inputs, "inputs", in, ik, 2);
    check_ios("ScaledAdd", sa->outputs, sa->n_outputs, "outputs", out, ok, 1);
  }
  CHECK(sa->n_attrs == 1, "ScaledAdd has %zu attrs", sa->n_attrs);
  const pyop_attr_value *dv = attr_default(sa, "alpha", PYOP_ATTR_FLOAT);
  CHECK(dv && dv->u.f == 1.0, "alpha default %g", dv ? dv->u.f : -1);
  CHECK(sa->capabilities == (PYOP_CAP_INFER_META | PYOP_CAP_EXECUTE), "caps 0x%x",
        sa->capabilities);

  /* IoKinds(a, b: Optional, c: list) -> (first, info). */
  const pyop_op_info *io = NULL;
  REQUIRE_RC(pyop_op_get("IoKinds", &io), PYOP_OK);
  {
    const char *in[] = {"a", "b", "c"}, *out[] = {"first", "info"};
    const int ik[] = {PYOP_IO_REQUIRED, PYOP_IO_OPTIONAL, PYOP_IO_DYNAMIC};
    const int ok[] = {PYOP_IO_REQUIRED, PYOP_IO_REQUIRED};
    check_ios("IoKinds", io->inputs, io->n_inputs, "inputs", in, ik, 3);
    check_ios("IoKinds", io->outputs, io->n_outputs, "outputs", out, ok, 2);
  }
  CHECK(io->n_attrs == 0, "IoKinds has %zu attrs", io->n_attrs);
  check_source(io->proto_source, ops_file, "register_op(op_type=\"IoKinds\"");
  pyop_op_info_release(io);

  /* The package plugin. */
  const pyop_op_info *pd = NULL;
  REQUIRE_RC(pyop_op_get("PkgDouble", &pd), PYOP_OK);
  check_source(pd->proto_source, pkg_init, "register_op(op_type=\"PkgDouble\")");
  check_source(pd->impl_source, pkg_init, "register_op_impl(op_type=\"PkgDouble\")");
  CHECK(pd->proto_key && strcmp(pd->proto_key, "pyop:mypkg.pkg_double") == 0, "key %s",
        pd->proto_key ? pd->proto_key : "(null)");
  CHECK(pd->capabilities == (PYOP_CAP_INFER_META | PYOP_CAP_EXECUTE), "caps 0x%x",
        pd->capabilities);
  pyop_op_info_release(pd);

  /* An infer-only op (no implementation). */
  const pyop_op_info *sj = NULL;
  REQUIRE_RC(pyop_op_get("ShadowJson", &sj), PYOP_OK);
  CHECK(sj->impl_key == NULL && sj->impl_source == NULL, "infer-only op has an impl");
  CHECK(sj->capabilities == PYOP_CAP_INFER_META, "caps 0x%x", sj->capabilities);
  check_source(sj->proto_source, json_py, "register_op(op_type=\"ShadowJson\")");
  pyop_op_info_release(sj);

  /* Every attribute type, required and with defaults. */
  const pyop_op_info *aa = NULL;
  REQUIRE_RC(pyop_op_get("AllAttrs", &aa), PYOP_OK);
  check_source(aa->proto_source, attrs_py, "register_op(op_type=\"AllAttrs\")");
  CHECK(aa->n_attrs == 22, "AllAttrs has %zu attrs", aa->n_attrs);
  static const char *const order[] = {"i", "f", "b", "s", "d", "li", "lf", "lb", "ls", "ld",
                                      "lli", "oi", "of", "ob", "os_", "od", "oli", "olf",
                                      "olb", "ols", "old", "olli"};
  for (size_t i = 0; i < aa->n_attrs && i < 22; i++)
    CHECK(strcmp(aa->attrs[i].name, order[i]) == 0, "attr %zu is %s, expected %s (order of "
          "the signature)", i, aa->attrs[i].name, order[i]);
  check_attr_req(aa, "i", PYOP_ATTR_INT);
  check_attr_req(aa, "f", PYOP_ATTR_FLOAT);
  check_attr_req(aa, "b", PYOP_ATTR_BOOL);
  check_attr_req(aa, "s", PYOP_ATTR_STR);
  check_attr_req(aa, "d", PYOP_ATTR_DTYPE);
  check_attr_req(aa, "li", PYOP_ATTR_LIST_INT);
  check_attr_req(aa, "lf", PYOP_ATTR_LIST_FLOAT);
  check_attr_req(aa, "lb", PYOP_ATTR_LIST_BOOL);
  check_attr_req(aa, "ls", PYOP_ATTR_LIST_STR);
  check_attr_req(aa, "ld", PYOP_ATTR_LIST_DTYPE);
  check_attr_req(aa, "lli", PYOP_ATTR_LIST_LIST_INT);
  const pyop_attr_value *v;
  v = attr_default(aa, "oi", PYOP_ATTR_INT);
  CHECK(v && v->u.i == 7, "oi default");
  v = attr_default(aa, "of", PYOP_ATTR_FLOAT);
  CHECK(v && v->u.f == 0.5, "of default");
  v = attr_default(aa, "ob", PYOP_ATTR_BOOL);
  CHECK(v && v->u.b == true, "ob default");
  v = attr_default(aa, "os_", PYOP_ATTR_STR);
  CHECK(v && str_is(v->u.s, "dflt"), "os_ default");
  v = attr_default(aa, "od", PYOP_ATTR_DTYPE);
  CHECK(v && v->u.dtype == PYOP_DTYPE_BFLOAT16, "od default %d", v ? v->u.dtype : -1);
  v = attr_default(aa, "oli", PYOP_ATTR_LIST_INT);
  CHECK(v && v->u.ints.count == 2 && v->u.ints.items[0] == 1 && v->u.ints.items[1] == 2,
        "oli default");
  v = attr_default(aa, "olf", PYOP_ATTR_LIST_FLOAT);
  CHECK(v && v->u.floats.count == 1 && v->u.floats.items[0] == 1.5, "olf default");
  v = attr_default(aa, "olb", PYOP_ATTR_LIST_BOOL);
  CHECK(v && v->u.bools.count == 2 && !v->u.bools.items[0] && v->u.bools.items[1],
        "olb default");
  v = attr_default(aa, "ols", PYOP_ATTR_LIST_STR);
  CHECK(v && v->u.strs.count == 2 && str_is(v->u.strs.items[0], "a") &&
            str_is(v->u.strs.items[1], "b"),
        "ols default");
  v = attr_default(aa, "old", PYOP_ATTR_LIST_DTYPE);
  CHECK(v && v->u.dtypes.count == 1 && v->u.dtypes.items[0] == PYOP_DTYPE_INT8, "old default");
  v = attr_default(aa, "olli", PYOP_ATTR_LIST_LIST_INT);
  CHECK(v && v->u.int_lists.count == 2 && v->u.int_lists.items[0].count == 1 &&
            v->u.int_lists.items[0].items[0] == 1 && v->u.int_lists.items[1].count == 2 &&
            v->u.int_lists.items[1].items[0] == 2 && v->u.int_lists.items[1].items[1] == 3,
        "olli default");
  pyop_op_info_release(aa);

  /* Unknown op: ENOENT naming it. */
  const pyop_op_info *none = (const pyop_op_info *)&none;
  CHECK_RC(pyop_op_get("NoSuchOp", &none), PYOP_ENOENT);
  CHECK(none == NULL, "out not cleared on failure");
  CHECK_ERR_HAS("\"NoSuchOp\"");

  /* The doctor report sees the same state. */
  char *doc = NULL;
  CHECK_RC(pyop_doctor(&doc), PYOP_OK);
  CHECK(doc && strstr(doc, "runtime key: cp311-x86_64"), "doctor: %s", doc ? doc : "");
  CHECK(doc && strstr(doc, "bridge: loaded"), "doctor: %s", doc ? doc : "");
  CHECK(doc && strstr(doc, "ops registered: 5"), "doctor: %s", doc ? doc : "");
  pyop_free(doc);

  /* A description taken before an unload stays valid and unchanged. */
  CHECK_RC(pyop_unload(), PYOP_OK);
  CHECK_LIST("");
  CHECK(strcmp(sa->op_type, "ScaledAdd") == 0 && sa->n_inputs == 2 &&
            strcmp(sa->inputs[1].name, "y") == 0,
        "info changed after unload");
  check_source(sa->proto_source, ops_file, "register_op(op_type=\"ScaledAdd\")");
  pyop_op_info_release(sa);
  CHECK_RC(pyop_op_get("ScaledAdd", &sa), PYOP_ENOENT);

  /* The GE-style entry points. */
  CHECK(LoadPythonCustomOps() == 0, "LoadPythonCustomOps");
  CHECK_LIST("AllAttrs,IoKinds,PkgDouble,ScaledAdd,ShadowJson");
  UnloadPythonCustomOps();
  CHECK_LIST("");
  CHECK(LoadPythonCustomOps() == 0, "LoadPythonCustomOps after unload");
  ShutdownPythonCustomOpsForProcess();
  CHECK_LIST("");
  free(ops_file);
  free(pkg_init);
  free(json_py);
  free(attrs_py);
}

/* ================================================================ (b) exec */

static void exec_scaled_add(void) {
  pyop_op *op = NULL;
  pyop_attr a = attr_float("alpha", 2.5);
  REQUIRE_RC(pyop_op_create("ScaledAdd", &a, 1, &op), PYOP_OK);
  CHECK(pyop_op_capabilities(op) == (PYOP_CAP_INFER_META | PYOP_CAP_EXECUTE), "caps");
  CHECK(strcmp(pyop_op_get_info(op)->op_type, "ScaledAdd") == 0, "instance info");
  float x[8], y[8], pre[8];
  for (int i = 0; i < 8; i++) {
    x[i] = (float)i;
    y[i] = (float)(10 + i);
  }
  const int64_t shape[] = {2, 4};
  pyop_tensor tx = f32_nd(x, 2, shape), ty = f32_nd(y, 2, shape);
  pyop_tensor_list in[2] = {one(&tx), one(&ty)};

  /* infer_meta: description only. */
  pyop_tensor desc[1];
  CHECK_RC(pyop_op_infer_meta(op, in, 2, desc, 1), PYOP_OK);
  CHECK(desc[0].dtype == PYOP_DTYPE_FLOAT32 && desc[0].ndim == 2 && desc[0].shape[0] == 2 &&
            desc[0].shape[1] == 4 && desc[0].data == NULL && desc[0].nbytes == 32,
        "infer_meta gave dtype %d ndim %d nbytes %llu", desc[0].dtype, desc[0].ndim,
        (unsigned long long)desc[0].nbytes);

  /* execute, output allocated by the host. */
  host_mem mem = {0};
  pyop_exec_ctx ctx = host_ctx(&mem);
  pyop_tensor out[1];
  memset(out, 0, sizeof out);
  CHECK_RC(pyop_op_execute(op, in, 2, out, 1, &ctx), PYOP_OK);
  CHECK(mem.calls == 1 && mem.last_index == 0, "alloc_output called %zu times", mem.calls);
  CHECK(mem.n == 1 && out[0].data == mem.blocks[0], "output 0 is not the host's buffer");
  CHECK(out[0].dtype == PYOP_DTYPE_FLOAT32 && out[0].ndim == 2 && out[0].shape[1] == 4 &&
            out[0].nbytes >= 32,
        "output description");
  for (int i = 0; i < 8 && out[0].data; i++)
    CHECK(((float *)out[0].data)[i] == x[i] + 2.5f * y[i], "out[%d] = %g, expected %g", i,
          ((float *)out[0].data)[i], x[i] + 2.5f * y[i]);
  host_mem_reset(&mem);

  /* Pre-allocated outputs: alloc_output NULL, the op writes into outputs[0]. */
  pyop_exec_ctx pctx = PYOP_EXEC_CTX_INIT;
  memset(pre, 0, sizeof pre);
  out[0] = f32_nd(pre, 2, shape);
  CHECK_RC(pyop_op_execute(op, in, 2, out, 1, &pctx), PYOP_OK);
  CHECK(out[0].data == pre, "pre-allocated output buffer replaced");
  for (int i = 0; i < 8; i++)
    CHECK(pre[i] == x[i] + 2.5f * y[i], "pre[%d] = %g", i, pre[i]);

  /* Pre-allocated with the wrong shape: refused (the status of libpyop's
   * check; its detailed text is case alloc_detail). */
  out[0] = f32_1d(pre, 8);
  int rc = pyop_op_execute(op, in, 2, out, 1, &pctx);
  CHECK(rc == PYOP_EINVAL, "wrong pre-allocated shape: %s", pyop_status_name(rc));
  CHECK_ERR_HAS("ScaledAdd");
  CHECK_ERR_HAS("output 0");

  /* The host's allocator fails: PYOP_EHOST. */
  mem.fail_at = 1;
  memset(out, 0, sizeof out);
  rc = pyop_op_execute(op, in, 2, out, 1, &ctx);
  CHECK(rc == PYOP_EHOST, "failing alloc_output gave %s", pyop_status_name(rc));
  CHECK_ERR_HAS("ScaledAdd");
  CHECK_ERR_HAS("output 0");
  host_mem_reset(&mem);
  /* ...and the instance still works. */
  CHECK_RC(pyop_op_execute(op, in, 2, out, 1, &ctx), PYOP_OK);
  host_mem_reset(&mem);

  /* Wrong number of tensors for a required input: EINVAL naming it. */
  pyop_tensor_list bad[2] = {one(&tx), none_given()};
  CHECK_RC(pyop_op_execute(op, bad, 2, out, 1, &ctx), PYOP_EINVAL);
  CHECK_ERR_HAS("\"y\"");
  pyop_op_destroy(op);

  /* An int for a float attribute; no attribute at all (default 1.0). */
  pyop_attr ai = attr_int("alpha", 2);
  REQUIRE_RC(pyop_op_create("ScaledAdd", &ai, 1, &op), PYOP_OK);
  CHECK_RC(pyop_op_execute(op, in, 2, out, 1, &ctx), PYOP_OK);
  for (int i = 0; i < 8 && out[0].data; i++)
    CHECK(((float *)out[0].data)[i] == x[i] + 2.0f * y[i], "int alpha: out[%d]", i);
  host_mem_reset(&mem);
  pyop_op_destroy(op);
  REQUIRE_RC(pyop_op_create("ScaledAdd", NULL, 0, &op), PYOP_OK);
  CHECK_RC(pyop_op_execute(op, in, 2, out, 1, &ctx), PYOP_OK);
  for (int i = 0; i < 8 && out[0].data; i++)
    CHECK(((float *)out[0].data)[i] == x[i] + y[i], "default alpha: out[%d]", i);
  host_mem_reset(&mem);
  pyop_op_destroy(op);

  /* Attribute errors at create. */
  pyop_attr as = attr_str("alpha", "two");
  CHECK_RC(pyop_op_create("ScaledAdd", &as, 1, &op), PYOP_EINVAL);
  CHECK_ERR_HAS("alpha");
  CHECK_ERR_HAS("float");
  pyop_attr au = attr_float("beta", 1);
  CHECK_RC(pyop_op_create("ScaledAdd", &au, 1, &op), PYOP_EINVAL);
  CHECK_ERR_HAS("unknown attribute \"beta\"");
  CHECK_RC(pyop_op_create("NoSuchOp", NULL, 0, &op), PYOP_ENOENT);
  CHECK_ERR_HAS("\"NoSuchOp\"");
}

static void exec_io_kinds(void) {
  pyop_op *op = NULL;
  REQUIRE_RC(pyop_op_create("IoKinds", NULL, 0, &op), PYOP_OK);
  int32_t a[3] = {7, -8, 9};
  pyop_tensor ta;
  memset(&ta, 0, sizeof ta);
  ta.data = a;
  ta.dtype = PYOP_DTYPE_INT32;
  ta.ndim = 1;
  ta.shape[0] = 3;
  ta.nbytes = sizeof a;
  float b[2] = {1, 2}, c0[2], c1[3], c2[4];
  pyop_tensor tb = f32_1d(b, 2);
  pyop_tensor tc[3] = {f32_1d(c0, 2), f32_1d(c1, 3), f32_1d(c2, 4)};
  memset(c0, 0, sizeof c0);
  memset(c1, 0, sizeof c1);
  memset(c2, 0, sizeof c2);
  host_mem mem = {0};
  pyop_exec_ctx ctx = host_ctx(&mem);

  struct {
    const char *what;
    bool with_b;
    size_t n_c;
    int64_t want[3];
  } runs[] = {
      {"optional absent, 3 dynamic", false, 3, {0, 3, 9}},
      {"optional present, 3 dynamic", true, 3, {1, 3, 9}},
      {"optional present, 0 dynamic", true, 0, {1, 0, 0}},
      {"optional absent, 1 dynamic", false, 1, {0, 1, 2}},
  };
  for (size_t r = 0; r < sizeof runs / sizeof runs[0]; r++) {
    pyop_tensor_list in[3] = {one(&ta), runs[r].with_b ? one(&tb) : none_given(),
                              {tc, runs[r].n_c}};
    pyop_tensor desc[2];
    CHECK_RC(pyop_op_infer_meta(op, in, 3, desc, 2), PYOP_OK);
    CHECK(desc[0].dtype == PYOP_DTYPE_INT32 && desc[0].ndim == 1 && desc[0].shape[0] == 3,
          "%s: infer first", runs[r].what);
    CHECK(desc[1].dtype == PYOP_DTYPE_INT64 && desc[1].ndim == 1 && desc[1].shape[0] == 3,
          "%s: infer info", runs[r].what);
    pyop_tensor out[2];
    memset(out, 0, sizeof out);
    CHECK_RC(pyop_op_execute(op, in, 3, out, 2, &ctx), PYOP_OK);
    CHECK(mem.calls == 2, "%s: %zu allocations", runs[r].what, mem.calls);
    if (out[0].data) CHECK(memcmp(out[0].data, a, sizeof a) == 0, "%s: first", runs[r].what);
    const int64_t *info = out[1].data;
    CHECK(info && out[1].dtype == PYOP_DTYPE_INT64, "%s: info output", runs[r].what);
    if (info)
      CHECK(info[0] == runs[r].want[0] && info[1] == runs[r].want[1] &&
                info[2] == runs[r].want[2],
            "%s: info [%lld,%lld,%lld], expected [%lld,%lld,%lld]", runs[r].what,
            (long long)info[0], (long long)info[1], (long long)info[2],
            (long long)runs[r].want[0], (long long)runs[r].want[1],
            (long long)runs[r].want[2]);
    host_mem_reset(&mem);
  }
  /* Pre-allocated, two outputs. */
  {
    int32_t first[3] = {0};
    int64_t info[3] = {-1, -1, -1};
    pyop_tensor out[2];
    memset(out, 0, sizeof out);
    out[0] = ta;
    out[0].data = first;
    out[1].data = info;
    out[1].dtype = PYOP_DTYPE_INT64;
    out[1].ndim = 1;
    out[1].shape[0] = 3;
    out[1].nbytes = sizeof info;
    pyop_tensor_list in[3] = {one(&ta), one(&tb), {tc, 3}};
    pyop_exec_ctx pctx = PYOP_EXEC_CTX_INIT;
    CHECK_RC(pyop_op_execute(op, in, 3, out, 2, &pctx), PYOP_OK);
    CHECK(memcmp(first, a, sizeof a) == 0, "pre-allocated first");
    CHECK(info[0] == 1 && info[1] == 3 && info[2] == 9, "pre-allocated info");
  }
  /* An optional input given twice: EINVAL naming it. */
  {
    pyop_tensor two[2] = {tb, tb};
    pyop_tensor_list in[3] = {one(&ta), {two, 2}, {tc, 3}};
    pyop_tensor out[2];
    CHECK_RC(pyop_op_execute(op, in, 3, out, 2, &ctx), PYOP_EINVAL);
    CHECK_ERR_HAS("\"b\"");
    CHECK_ERR_HAS("optional");
  }
  pyop_op_destroy(op);
}

static void exec_pkg_double(void) {
  pyop_op *op = NULL;
  REQUIRE_RC(pyop_op_create("PkgDouble", NULL, 0, &op), PYOP_OK);
  float x[5] = {1, -2, 3.5f, 0, 100};
  pyop_tensor tx = f32_1d(x, 5);
  pyop_tensor_list in[1] = {one(&tx)};
  host_mem mem = {0};
  pyop_exec_ctx ctx = host_ctx(&mem);
  pyop_tensor out[1];
  CHECK_RC(pyop_op_execute(op, in, 1, out, 1, &ctx), PYOP_OK);
  for (int i = 0; i < 5 && out[0].data; i++)
    CHECK(((float *)out[0].data)[i] == 2 * x[i], "PkgDouble out[%d]", i);
  host_mem_reset(&mem);
  pyop_op_destroy(op);

  /* Infer-only op: execute is unsupported, infer works. */
  REQUIRE_RC(pyop_op_create("ShadowJson", NULL, 0, &op), PYOP_OK);
  CHECK(pyop_op_capabilities(op) == PYOP_CAP_INFER_META, "caps");
  pyop_tensor desc[1];
  CHECK_RC(pyop_op_infer_meta(op, in, 1, desc, 1), PYOP_OK);
  CHECK_RC(pyop_op_execute(op, in, 1, out, 1, &ctx), PYOP_EUNSUPPORTED);
  CHECK_ERR_HAS("ShadowJson");
  pyop_op_destroy(op);
}

/* The text AllAttrs renders for the values given. */
static void exec_all_attrs(void) {
  static const int64_t li[] = {1, -2, 3};
  static const double lf[] = {0.5, 2.0};
  static const bool lb[] = {true, false};
  static const pyop_str ls[] = {{"x", 1}, {"yz", 2}};
  static const int32_t ld[] = {PYOP_DTYPE_INT32, PYOP_DTYPE_BOOL};
  static const int64_t l0[] = {1, 2}, l2[] = {3};
  static const pyop_int_list lli[] = {{l0, 2}, {NULL, 0}, {l2, 1}};
  static const int64_t oli[] = {-1};
  pyop_attr at[13];
  memset(at, 0, sizeof at);
  at[0] = attr_int("i", -5);
  at[1] = attr_float("f", 0.25);
  at[2].name = "b";
  at[2].value.type = PYOP_ATTR_BOOL;
  at[2].value.u.b = true;
  at[3] = attr_str("s", "hi");
  at[4].name = "d";
  at[4].value.type = PYOP_ATTR_DTYPE;
  at[4].value.u.dtype = PYOP_DTYPE_FLOAT16;
  at[5].name = "li";
  at[5].value.type = PYOP_ATTR_LIST_INT;
  at[5].value.u.ints.items = li;
  at[5].value.u.ints.count = 3;
  at[6].name = "lf";
  at[6].value.type = PYOP_ATTR_LIST_FLOAT;
  at[6].value.u.floats.items = lf;
  at[6].value.u.floats.count = 2;
  at[7].name = "lb";
  at[7].value.type = PYOP_ATTR_LIST_BOOL;
  at[7].value.u.bools.items = lb;
  at[7].value.u.bools.count = 2;
  at[8].name = "ls";
  at[8].value.type = PYOP_ATTR_LIST_STR;
  at[8].value.u.strs.items = ls;
  at[8].value.u.strs.count = 2;
  at[9].name = "ld";
  at[9].value.type = PYOP_ATTR_LIST_DTYPE;
  at[9].value.u.dtypes.items = ld;
  at[9].value.u.dtypes.count = 2;
  at[10].name = "lli";
  at[10].value.type = PYOP_ATTR_LIST_LIST_INT;
  at[10].value.u.int_lists.items = lli;
  at[10].value.u.int_lists.count = 3;
  /* Two optional ones overridden: an int and a list[int] (for list[int]). */
  at[11] = attr_int("oi", 9);
  at[12].name = "oli";
  at[12].value.type = PYOP_ATTR_LIST_INT;
  at[12].value.u.ints.items = oli;
  at[12].value.u.ints.count = 1;

  const char *want_given =
      "-5|0.25|True|'hi'|float16|[1,-2,3]|[0.5,2.0]|[True,False]|['x','yz']|[int32,bool]|"
      "[[1,2],[],[3]]|";
  for (int round = 0; round < 2; round++) {
    size_t n = round == 0 ? 11 : 13;
    pyop_op *op = NULL;
    REQUIRE_RC(pyop_op_create("AllAttrs", at, n, &op), PYOP_OK);
    uint8_t xb[1] = {0};
    pyop_tensor tx;
    memset(&tx, 0, sizeof tx);
    tx.data = xb;
    tx.dtype = PYOP_DTYPE_UINT8;
    tx.ndim = 1;
    tx.shape[0] = 1;
    tx.nbytes = 1;
    pyop_tensor_list in[1] = {one(&tx)};
    host_mem mem = {0};
    pyop_exec_ctx ctx = host_ctx(&mem);
    pyop_tensor out[1];
    CHECK_RC(pyop_op_execute(op, in, 1, out, 1, &ctx), PYOP_OK);
    char text[1024] = "";
    if (out[0].data && out[0].nbytes < sizeof text) memcpy(text, out[0].data, out[0].nbytes);
    /* Prototype order: i f b s d li lf lb ls ld lli, then oi of ob os_ od oli olf ... */
    char *want = round == 0
               ? xasprintf("%s7|0.5|True|'dflt'|bfloat16|[1,2]|[1.5]|[False,True]|['a','b']|"
                           "[int8]|[[1],[2,3]]",
                           want_given)
               : xasprintf("%s9|0.5|True|'dflt'|bfloat16|[-1]|[1.5]|[False,True]|['a','b']|"
                           "[int8]|[[1],[2,3]]",
                           want_given);
    CHECK(strcmp(text, want) == 0, "AllAttrs rendered\n    %s\n  expected\n    %s", text, want);
    free(want);
    host_mem_reset(&mem);
    pyop_op_destroy(op);
  }
  /* A required attribute missing: EINVAL naming it and its type. */
  pyop_op *op = NULL;
  CHECK_RC(pyop_op_create("AllAttrs", at, 10, &op), PYOP_EINVAL);
  CHECK_ERR_HAS("\"lli\"");
  CHECK_ERR_HAS("list[list[int]]");
}

/*
 * (b) create / infer_meta / execute with checked numbers: required inputs,
 * optional ones absent and present, dynamic ones with 0, 1 and 3 tensors;
 * every attribute type given and defaulted; an int for a float; outputs
 * through alloc_output and pre-allocated (alloc_output NULL); a failing
 * host allocator is PYOP_EHOST; argument errors name the input or
 * attribute.
 */
static void case_exec(void) {
  opp_it("basic", "attrs");
  REQUIRE_RC(pyop_load(), PYOP_OK);
  exec_scaled_add();
  exec_io_kinds();
  exec_pkg_double();
  exec_all_attrs();
  CHECK_RC(pyop_unload(), PYOP_OK); /* every instance was destroyed */
}

/*
 * When libpyop refuses an output the op asks for (pre-allocated output of
 * another shape, or the host's alloc_output failing), the user reads
 * libpyop's reason (both shapes; the host's return code), not only the
 * RuntimeError the op saw (regression test: the bridge's message used to
 * replace it).
 */
static void case_alloc_detail(void) {
  opp_it("basic", NULL);
  REQUIRE_RC(pyop_load(), PYOP_OK);
  pyop_op *op = NULL;
  REQUIRE_RC(pyop_op_create("ScaledAdd", NULL, 0, &op), PYOP_OK);
  float x[8] = {0}, y[8] = {0}, pre[8];
  const int64_t shape[] = {2, 4};
  pyop_tensor tx = f32_nd(x, 2, shape), ty = f32_nd(y, 2, shape);
  pyop_tensor_list in[2] = {one(&tx), one(&ty)};
  pyop_tensor out[1] = {f32_1d(pre, 8)};
  pyop_exec_ctx pctx = PYOP_EXEC_CTX_INIT;
  CHECK_RC(pyop_op_execute(op, in, 2, out, 1, &pctx), PYOP_EINVAL);
  show_error("pre-allocated output of the wrong shape");
  /* What libpyop's own check says (op.c svc_alloc_output). */
  CHECK_ERR_HAS("requested as float32[2,4]");
  CHECK_ERR_HAS("the host passed float32[8]");

  host_mem mem = {0};
  mem.fail_at = 1;
  pyop_exec_ctx ctx = host_ctx(&mem);
  memset(out, 0, sizeof out);
  CHECK_RC(pyop_op_execute(op, in, 2, out, 1, &ctx), PYOP_EHOST);
  show_error("the host's alloc_output returns -7");
  CHECK_ERR_HAS("the host's alloc_output failed");
  CHECK_ERR_HAS("with -7");
  host_mem_reset(&mem);
  pyop_op_destroy(op);
}

/*
 * What the op reads when libpyop refuses what it asks of the execution
 * context (issue 19, first hour): the exception says libpyop refused (or
 * the host failed), names the status, and gives libpyop's reason, not "the
 * host failed ... (status -20)". An index past the last output of an op
 * with a dynamic output says which index to repeat.
 */
static void case_refusals(void) {
  char *dir = e2e_path("refusals");
  set_opp_path(dir);
  free(dir);
  REQUIRE_RC(pyop_load(), PYOP_OK);
  host_mem mem = {0};
  pyop_exec_ctx ctx = host_ctx(&mem);
  float x[2] = {1, 2}, y[2] = {3, 4};
  pyop_tensor tx = f32_1d(x, 2), ty = f32_1d(y, 2);

  /* A dynamic output filled with GE's flattened index. */
  pyop_attr flat = attr_str("mode", "flat");
  pyop_op *op = NULL;
  REQUIRE_RC(pyop_op_create("Pieces", &flat, 1, &op), PYOP_OK);
  pyop_tensor_list in1[1] = {one(&tx)};
  pyop_tensor pieces[3];
  memset(pieces, 0, sizeof pieces);
  pyop_output_list lists[1] = {{pieces, 3, 0}};
  CHECK_RC(pyop_op_execute_list(op, in1, 1, lists, 1, &ctx), PYOP_EPYTHON);
  show_error("dynamic output, flattened index");
  CHECK_ERR_HAS("IndexError: output index 1 out of range (the op has 1 output); output 0 "
                "'pieces' is dynamic: call malloc_output_tensor(0, ...) again for its next "
                "tensor");
  host_mem_reset(&mem);
  pyop_op_destroy(op);
  /* The right way (index 0 for each tensor) works. */
  REQUIRE_RC(pyop_op_create("Pieces", NULL, 0, &op), PYOP_OK);
  lists[0].count = 0;
  CHECK_RC(pyop_op_execute_list(op, in1, 1, lists, 1, &ctx), PYOP_OK);
  CHECK(lists[0].count == 3, "Pieces made %zu tensors", lists[0].count);
  host_mem_reset(&mem);
  pyop_op_destroy(op);

  /* A contract violation: the host expects float32[8] of ScaledAdd's
   * output, the op asks for float32[2]. */
  char *basic = it_path("basic");
  char *both = xasprintf("%s:%s", basic, getenv("ASCEND_CUSTOM_OPP_PATH"));
  CHECK_RC(pyop_unload(), PYOP_OK);
  set_opp_path(both);
  free(both);
  free(basic);
  REQUIRE_RC(pyop_load(), PYOP_OK);
  REQUIRE_RC(pyop_op_create("ScaledAdd", NULL, 0, &op), PYOP_OK);
  float pre[8];
  pyop_tensor_list in2[2] = {one(&tx), one(&ty)};
  pyop_tensor out[1] = {f32_1d(pre, 8)};
  ctx.flags = PYOP_EXEC_EXPECT_OUTPUTS;
  CHECK_RC(pyop_op_execute(op, in2, 2, out, 1, &ctx), PYOP_ECONTRACT);
  show_error("contract violation");
  /* The reason once, first; the op's exception refers to it (issue 26.6). */
  CHECK_ERR_HAS("output 0 \"y\": the host expected float32[8], the op asked for float32[2]\n");
  CHECK_ERR_HAS("RuntimeError: libpyop refused to allocate output 0 (PYOP_ECONTRACT): see above");
  {
    const char *e = pyop_last_error(), *first = strstr(e, "the op asked for float32[2]");
    CHECK(first && !strstr(first + 1, "the op asked for float32[2]"),
          "the reason is said more than once: %s", e);
  }
  CHECK(!err_has("(status "), "a raw status number");
  CHECK(!err_has("the host failed"), "the host is blamed for libpyop's refusal");
  ctx.flags = 0;
  host_mem_reset(&mem);
  /* The host's allocator fails: the host is named, the status by name. */
  mem.fail_at = 1;
  memset(out, 0, sizeof out);
  CHECK_RC(pyop_op_execute(op, in2, 2, out, 1, &ctx), PYOP_EHOST);
  CHECK_ERR_HAS("execute of \"ScaledAdd\": the host's alloc_output failed for output 0 \"y\"");
  CHECK_ERR_HAS("RuntimeError: the host failed to allocate output 0 (PYOP_EHOST): see above");
  host_mem_reset(&mem);
  pyop_op_destroy(op);

  /* An alias bound to the wrong input. */
  REQUIRE_RC(pyop_op_create("WrongAlias", NULL, 0, &op), PYOP_OK);
  memset(out, 0, sizeof out);
  CHECK_RC(pyop_op_execute(op, in2, 2, out, 1, &ctx), PYOP_ECONTRACT);
  show_error("alias of the wrong input");
  CHECK_ERR_HAS("execute of \"WrongAlias\": output 0 \"x\" was bound to input 1, the prototype "
                "declares it aliases input 0 \"x\"\n(alias_output failed; in the op: ");
  CHECK(out[0].data == NULL, "the refused alias was written to the host's output");
  CHECK_ERR_HAS("RuntimeError: libpyop refused to make output 0 input 1's buffer "
                "(PYOP_ECONTRACT): see above");
  host_mem_reset(&mem);
  pyop_op_destroy(op);
  CHECK_RC(pyop_unload(), PYOP_OK);
}

/* ==================================================== escapes and cycles */

/* Executes op on {1, 2, 3}; checks the doubled output when it succeeds. */
static int exec_double(pyop_op *op) {
  float x[3] = {1, 2, 3};
  pyop_tensor tx = f32_1d(x, 3);
  pyop_tensor_list in[1] = {one(&tx)};
  pyop_tensor out[1];
  memset(out, 0, sizeof out);
  host_mem mem = {0};
  pyop_exec_ctx ctx = host_ctx(&mem);
  int rc = pyop_op_execute(op, in, 1, out, 1, &ctx);
  if (rc == PYOP_OK)
    for (int i = 0; i < 3; i++)
      CHECK(out[0].data && ((float *)out[0].data)[i] == 2 * x[i], "out[%d]", i);
  host_mem_reset(&mem);
  return rc;
}

static pyop_op *create_mode(const char *type, const char *mode) {
  pyop_attr a = attr_str("mode", mode);
  pyop_op *op = NULL;
  int rc = pyop_op_create(type, &a, 1, &op);
  REQUIRE(rc == PYOP_OK, "create %s(mode=%s): %s", type, mode, pyop_status_name(rc));
  return op;
}

/*
 * Issue 17, item 14: a view held only by a garbage cycle when execute
 * returns (a recursive inner function closing over it; sys.exc_info() kept
 * in a local) is no escape; a real one (a global) still is, and the
 * instance works again once the plugin drops it, also when what it drops
 * leaves the view in a cycle only a collection frees.
 */
static void case_escape_cycles(void) {
  char *dir = e2e_path("escape_cycles");
  set_opp_path(dir);
  free(dir);
  REQUIRE_RC(pyop_load(), PYOP_OK);
  static const char *const cycles[] = {"closure", "exc_info"};
  for (int i = 0; i < 2; i++) {
    pyop_op *op = create_mode("CycleView", cycles[i]);
    for (int k = 0; k < 3; k++) {
      int rc = exec_double(op);
      CHECK(rc == PYOP_OK, "%s, call %d: %s: %s", cycles[i], k, pyop_status_name(rc),
            pyop_last_error());
    }
    pyop_op_destroy(op);
  }
  pyop_op *drop = NULL;
  REQUIRE_RC(pyop_op_create("DropKept", NULL, 0, &drop), PYOP_OK);
  static const char *const escapes[] = {"global", "global_cycle"};
  for (int i = 0; i < 2; i++) {
    pyop_op *op = create_mode("CycleView", escapes[i]);
    CHECK_RC(exec_double(op), PYOP_EPYTHON);
    show_error(escapes[i]);
    CHECK_ERR_HAS("a buffer of input 0");
    CHECK_ERR_HAS("still alive");
    CHECK_RC(exec_double(op), PYOP_ESTATE);
    CHECK_ERR_HAS("refused");
    CHECK_ERR_HAS("outlived an earlier call");
    /* Another op of the plugin drops what it kept: the instance recovers. */
    float x[1] = {0};
    pyop_tensor tx = f32_1d(x, 1);
    pyop_tensor_list in[1] = {one(&tx)};
    host_mem mem = {0};
    pyop_exec_ctx ctx = host_ctx(&mem);
    CHECK_RC(pyop_op_execute(drop, in, 1, NULL, 0, &ctx), PYOP_OK);
    host_mem_reset(&mem);
    /* Its next call keeps a view again (the same mode): EPYTHON, not a
     * refusal; a refusal would mean the dropped view was still seen. */
    CHECK_RC(exec_double(op), PYOP_EPYTHON);
    CHECK_ERR_HAS("still alive");
    CHECK_RC(pyop_op_execute(drop, in, 1, NULL, 0, &ctx), PYOP_OK);
    host_mem_reset(&mem);
    pyop_op_destroy(op);
  }
  pyop_op_destroy(drop);
  CHECK_RC(pyop_unload(), PYOP_OK);
}

/* ============================================================= messages */

static int refuse_workspace(void *user, uint64_t nbytes, void **out) {
  (void)user;
  (void)nbytes;
  *out = NULL;
  return -9;
}

/* Executes Msg(mode) with ctx; the status. */
static int exec_msg(const char *mode, pyop_exec_ctx *ctx) {
  pyop_op *op = create_mode("Msg", mode);
  float x[2] = {1, 2};
  pyop_tensor tx = f32_1d(x, 2);
  pyop_tensor_list in[1] = {one(&tx)};
  pyop_tensor out[1];
  memset(out, 0, sizeof out);
  int rc = pyop_op_execute(op, in, 1, out, 1, ctx);
  show_error(mode);
  pyop_op_destroy(op);
  return rc;
}

/*
 * Issue 17, item 15: the message names the op, file:line and the real
 * cause: an exception whose __str__ raises keeps its type and traceback;
 * the status of an op that recovered from a refused workspace or output
 * comes from what finally failed (an op that catches the refusal and then
 * raises is PYOP_EPYTHON with its own error and the refusal as context;
 * uncaught, the refusal is PYOP_EHOST).
 */
static void case_messages(void) {
  char *dir = e2e_path("messages");
  set_opp_path(dir);
  REQUIRE_RC(pyop_load(), PYOP_OK);
  host_mem mem = {0};
  pyop_exec_ctx ctx = host_ctx(&mem);

  CHECK_RC(exec_msg("badstr", &ctx), PYOP_EPYTHON);
  CHECK_ERR_HAS("execute of op 'Msg'");
  CHECK_ERR_HAS("BadStr: <exception str() failed: RuntimeError: str is broken>");
  CHECK_ERR_HAS("Traceback");
  CHECK_ERR_HAS("raise BadStr(\"payload\")");
  CHECK_ERR_HAS("msgs.py\", line");
  host_mem_reset(&mem);

  pyop_exec_ctx wctx = host_ctx(&mem);
  wctx.alloc_workspace = refuse_workspace;
  CHECK_RC(exec_msg("workspace_then_own", &wctx), PYOP_EPYTHON);
  CHECK_ERR_HAS("ValueError: the op's own failure after the refusal");
  CHECK_ERR_HAS("earlier in this call");
  CHECK_ERR_HAS("workspace");
  CHECK(!err_has("the host's alloc_workspace failed") ||
            strstr(pyop_last_error(), "ValueError") < strstr(pyop_last_error(),
                                                             "the host's alloc_workspace"),
        "the host's refusal is given as the cause");
  host_mem_reset(&mem);
  CHECK_RC(exec_msg("workspace_chained", &wctx), PYOP_EPYTHON);
  CHECK_ERR_HAS("ValueError: no workspace, so no result");
  host_mem_reset(&mem);
  /* Not caught: the host's refusal is the cause, as before. */
  CHECK_RC(exec_msg("workspace_uncaught", &wctx), PYOP_EHOST);
  CHECK_ERR_HAS("workspace");
  CHECK_ERR_HAS("RuntimeError: the host failed to allocate a workspace of ");
  CHECK_ERR_HAS("execute of \"Msg\": the host's alloc_workspace failed for ");
  CHECK_ERR_HAS("(PYOP_EHOST): see above");
  host_mem_reset(&mem);

  mem.fail_at = 1;
  ctx = host_ctx(&mem);
  CHECK_RC(exec_msg("output_then_own", &ctx), PYOP_EPYTHON);
  CHECK_ERR_HAS("ValueError: the op's own failure after the refused output");
  CHECK_ERR_HAS("earlier in this call");
  host_mem_reset(&mem);
  mem.fail_at = 1;
  ctx = host_ctx(&mem);
  CHECK_RC(exec_msg("output_recovered", &ctx), PYOP_OK);
  host_mem_reset(&mem);
  CHECK_RC(pyop_unload(), PYOP_OK);
  free(dir);
}

/* ========================================================= the op contract */

/*
 * Issue 10 through the public API with the real bridge (plugins
 * tests/e2e/plugins/contract): in-place ops (writable mutated input, an
 * output that is the input's buffer, pyop_op_info's flags and aliases), an
 * op without outputs, dynamic outputs (list forms), a Tensor attribute
 * copied at create, and ops that break the contract (PYOP_ECONTRACT).
 */
static void case_contract(void) {
  char *dir = e2e_path("contract");
  set_opp_path(dir);
  free(dir);
  REQUIRE_RC(pyop_load(), PYOP_OK);
  host_mem mem = {0};
  pyop_exec_ctx ctx = host_ctx(&mem);

  /* In place: x += y, output 0 is x's buffer. */
  const pyop_op_info *info = NULL;
  REQUIRE_RC(pyop_op_get("AddInto", &info), PYOP_OK);
  CHECK(PYOP_OP_INFO_HAS(info, output_alias) && info->input_flags &&
            info->input_flags[0] == PYOP_INPUT_MUTATED && info->input_flags[1] == 0,
        "AddInto input flags");
  CHECK(info->output_alias && info->output_alias[0] == 0, "AddInto alias");
  pyop_op_info_release(info);
  pyop_op *op = NULL;
  REQUIRE_RC(pyop_op_create("AddInto", NULL, 0, &op), PYOP_OK);
  float x[3] = {1, 2, 3}, y[3] = {10, 20, 30};
  pyop_tensor tx = f32_1d(x, 3), ty = f32_1d(y, 3);
  pyop_tensor_list in2[2] = {one(&tx), one(&ty)};
  pyop_tensor out[1];
  memset(out, 0, sizeof out);
  CHECK_RC(pyop_op_execute(op, in2, 2, out, 1, &ctx), PYOP_OK);
  CHECK(x[0] == 11 && x[2] == 33 && y[0] == 10, "AddInto wrote x %g %g", x[0], x[2]);
  CHECK(out[0].data == x && mem.calls == 0, "AddInto output is x's buffer");
  pyop_op_destroy(op);

  /* No outputs, in place. */
  REQUIRE_RC(pyop_op_create("Zero", NULL, 0, &op), PYOP_OK);
  pyop_tensor_list in1[1] = {one(&tx)};
  CHECK_RC(pyop_op_infer_meta(op, in1, 1, NULL, 0), PYOP_OK);
  CHECK_RC(pyop_op_execute(op, in1, 1, NULL, 0, &ctx), PYOP_OK);
  CHECK(x[0] == 0 && x[1] == 0 && x[2] == 0, "Zero cleared x");
  pyop_op_destroy(op);

  /* A dynamic output: counts from infer_meta, tensors from execute. */
  pyop_attr n3 = {"n", {.type = PYOP_ATTR_INT, .u.i = 3}};
  REQUIRE_RC(pyop_op_create("Split", &n3, 1, &op), PYOP_OK);
  float d[6] = {0, 1, 2, 3, 4, 5};
  pyop_tensor td = f32_1d(d, 6);
  pyop_tensor_list ind[1] = {one(&td)};
  CHECK_RC(pyop_op_infer_meta(op, ind, 1, out, 1), PYOP_EINVAL);
  CHECK_ERR_HAS("use pyop_op_infer_meta_list");
  pyop_tensor pieces[4];
  pyop_output_list lists[1] = {{pieces, 2, 0}};
  CHECK_RC(pyop_op_infer_meta_list(op, ind, 1, lists, 1), PYOP_EINVAL);
  CHECK(lists[0].count == 3, "count needed: %zu", lists[0].count);
  lists[0].capacity = 4;
  CHECK_RC(pyop_op_infer_meta_list(op, ind, 1, lists, 1), PYOP_OK);
  CHECK(lists[0].count == 3 && pieces[2].shape[0] == 2, "Split described");
  ctx.flags = PYOP_EXEC_EXPECT_OUTPUTS;
  CHECK_RC(pyop_op_execute_list(op, ind, 1, lists, 1, &ctx), PYOP_OK);
  CHECK(lists[0].count == 3 && pieces[2].data && ((float *)pieces[2].data)[1] == 5,
        "Split executed");
  lists[0].count = 2; /* expecting two: the third breaks the contract */
  CHECK_RC(pyop_op_execute_list(op, ind, 1, lists, 1, &ctx), PYOP_ECONTRACT);
  CHECK_ERR_HAS("2 were expected");
  ctx.flags = 0;
  pyop_op_destroy(op);
  host_mem_reset(&mem);

  /* A Tensor attribute, copied at create: the host's buffer may go. */
  float *w = malloc(3 * sizeof *w);
  REQUIRE(w != NULL, "malloc");
  w[0] = 2, w[1] = 3, w[2] = 4;
  pyop_tensor tw = f32_1d(w, 3);
  pyop_attr aw = {"w", {.type = PYOP_ATTR_TENSOR, .u.tensor = &tw}};
  REQUIRE_RC(pyop_op_create("Scale", &aw, 1, &op), PYOP_OK);
  free(w);
  float s[3] = {1, 1, 2};
  pyop_tensor ts = f32_1d(s, 3);
  pyop_tensor_list ins[1] = {one(&ts)};
  CHECK_RC(pyop_op_infer_meta(op, ins, 1, out, 1), PYOP_OK);
  ctx.flags = PYOP_EXEC_EXPECT_OUTPUTS;
  CHECK_RC(pyop_op_execute(op, ins, 1, out, 1, &ctx), PYOP_OK);
  CHECK(out[0].data && ((float *)out[0].data)[2] == 8, "Scale used its copy of w");
  ctx.flags = 0;
  pyop_op_destroy(op);
  host_mem_reset(&mem);

  /* Views of a Tensor attribute kept by the op past the call and past the
   * instance stay readable (the bridge owns a copy the views keep alive):
   * the second instance's execute sums through both views, one of them of
   * an instance already destroyed (ASan: no use after free). */
  float w1[3] = {2, 3, 4}, w2[3] = {10, 20, 30};
  pyop_tensor tw1 = f32_1d(w1, 3), tw2 = f32_1d(w2, 3);
  pyop_attr akw1 = {"w", {.type = PYOP_ATTR_TENSOR, .u.tensor = &tw1}};
  pyop_attr akw2 = {"w", {.type = PYOP_ATTR_TENSOR, .u.tensor = &tw2}};
  REQUIRE_RC(pyop_op_create("KeepW", &akw1, 1, &op), PYOP_OK);
  CHECK_RC(pyop_op_execute(op, ins, 1, out, 1, &ctx), PYOP_OK);
  CHECK(out[0].data && ((float *)out[0].data)[2] == 4, "KeepW: first call");
  CHECK_RC(pyop_op_execute(op, ins, 1, out, 1, &ctx), PYOP_OK); /* a view from the last call */
  CHECK(out[0].data && ((float *)out[0].data)[2] == 8, "KeepW: second call");
  pyop_op_destroy(op);
  REQUIRE_RC(pyop_op_create("KeepW", &akw2, 1, &op), PYOP_OK);
  CHECK_RC(pyop_op_execute(op, ins, 1, out, 1, &ctx), PYOP_OK);
  CHECK(out[0].data && ((float *)out[0].data)[0] == 2 + 2 + 10 &&
            ((float *)out[0].data)[2] == 4 + 4 + 30,
        "KeepW: views of a destroyed instance's attribute read %g %g",
        out[0].data ? ((float *)out[0].data)[0] : -1, out[0].data ? ((float *)out[0].data)[2] : -1);
  pyop_op_destroy(op);
  host_mem_reset(&mem);

  /* Broken contracts: never PYOP_OK. */
  float v[3] = {1, 2, 3};
  pyop_tensor tv = f32_1d(v, 3);
  pyop_tensor_list inv[1] = {one(&tv)};
  REQUIRE_RC(pyop_op_create("Lazy", NULL, 0, &op), PYOP_OK);
  CHECK_RC(pyop_op_execute(op, inv, 1, out, 1, &ctx), PYOP_ECONTRACT);
  show_error("an execute that produced nothing");
  CHECK_ERR_HAS("returned without producing output 0 \"y\"");
  pyop_op_destroy(op);
  REQUIRE_RC(pyop_op_create("Wrong", NULL, 0, &op), PYOP_OK);
  CHECK_RC(pyop_op_infer_meta(op, inv, 1, out, 1), PYOP_OK);
  ctx.flags = PYOP_EXEC_EXPECT_OUTPUTS;
  CHECK_RC(pyop_op_execute(op, inv, 1, out, 1, &ctx), PYOP_ECONTRACT);
  show_error("an execute that asked for another output");
  CHECK_ERR_HAS("expected float32[3], the op asked for float16[6]");
  ctx.flags = 0;
  pyop_op_destroy(op);
  REQUIRE_RC(pyop_op_create("Sneaky", NULL, 0, &op), PYOP_OK);
  CHECK_RC(pyop_op_execute(op, inv, 1, out, 1, &ctx), PYOP_EPYTHON);
  CHECK_ERR_HAS("read-only");
  CHECK(v[0] == 1, "Sneaky could not write its input");
  pyop_op_destroy(op);
  host_mem_reset(&mem);
  CHECK_RC(pyop_unload(), PYOP_OK);
}

/* ============================================================== (c) badsig */

/* A host prototype "HostKeep(x) -> y" that stays across loads. */
static void register_host_keep(void) {
  static const pyop_io_info in[] = {{"x", PYOP_IO_REQUIRED}};
  static const pyop_io_info out[] = {{"y", PYOP_IO_REQUIRED}};
  pyop_op_info info;
  memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  info.op_type = "HostKeep";
  info.inputs = in;
  info.n_inputs = 1;
  info.outputs = out;
  info.n_outputs = 1;
  REQUIRE_RC(pyop_register_host_prototype(&info), PYOP_OK);
}

/*
 * (c) Wrong signatures and broken plugins (tests/integration/plugins/bad):
 * PYOP_EPLUGIN with a message naming the op, the parameter, the exception
 * type and file:line; the registry stays as it was (a host prototype only).
 */
static void case_badsig(void) {
  register_host_keep();
  CHECK_LIST("HostKeep");
  struct {
    const char *file;   /* in the integration copy */
    const char *op;     /* named in the message (NULL: no op) */
    const char *param;  /* named in the message */
    const char *needle; /* the line the message points at */
    const char *exc;    /* exception type */
  } bad[] = {
      {"bad/attr_positional.py", "BadPositional", "alpha", "register_op(op_type=\"BadPositional\")", "TypeError"},
      {"bad/attr_type.py", "BadAttrType", "table", "register_op(op_type=\"BadAttrType\")", "TypeError"},
      {"bad/impl_extra_attr.py", "BadExtraAttr", "beta", "    def execute", "TypeError"},
      {"bad/impl_input_name.py", "BadInput", "'z'", "    def execute", "TypeError"},
      {"bad/no_return.py", "NoReturn", "return annotation", "register_op(op_type=\"NoReturn\")", "TypeError"},
      {"bad/syntax_error.py", NULL, "syntax_error.py", "def broken(:", "SyntaxError"},
      {"bad/import_error.py", NULL, "pyop_no_such_module_anywhere", "import pyop_no_such",
       "ModuleNotFoundError"},
      {"bad/keyboard.py", NULL, "plugin interrupted", "raise KeyboardInterrupt",
       "KeyboardInterrupt"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    /* A good directory first: all-or-nothing means none of it stays. */
    opp_it("basic", bad[i].file);
    int rc = pyop_load();
    /* An interrupt is an interrupt (issue 17.7), whatever it interrupted. */
    int want = strcmp(bad[i].exc, "KeyboardInterrupt") == 0 ? PYOP_EINTR : PYOP_EPLUGIN;
    CHECK(rc == PYOP_EPLUGIN || rc == PYOP_EPYTHON || rc == PYOP_EINTR,
          "%s: load returned %s", bad[i].file, pyop_status_name(rc));
    CHECK(rc == want, "%s: a plugin that fails to import or validate should be "
          "%s (got %s)", bad[i].file, pyop_status_name(want), pyop_status_name(rc));
    show_error(bad[i].file);
    if (bad[i].op) CHECK_ERR_HAS(bad[i].op);
    CHECK_ERR_HAS(bad[i].param);
    CHECK_ERR_HAS(bad[i].exc);
    char *path = it_path(bad[i].file);
    check_err_names_line(path, bad[i].needle);
    free(path);
    CHECK_LIST("HostKeep"); /* registry exactly as before */
  }
  /* The interpreter and libpyop are fine: a good load works. */
  opp_it("basic", NULL);
  CHECK_RC(pyop_load(), PYOP_OK);
  CHECK_LIST("HostKeep,IoKinds,PkgDouble,ScaledAdd,ShadowJson");
  CHECK_RC(pyop_unload(), PYOP_OK);
  CHECK_LIST("HostKeep");
}

/* =============================================================== (d) pyerr */

static pyop_op *create_raise(const char *where) {
  pyop_attr a = attr_str("where", where);
  pyop_op *op = NULL;
  int rc = pyop_op_create("Raise", &a, 1, &op);
  REQUIRE(rc == PYOP_OK, "create Raise(where=%s): %s", where, pyop_status_name(rc));
  return op;
}

/*
 * (d) Exceptions in infer_meta, execute and the implementation's
 * constructor, a wrong return type, KeyboardInterrupt: status, type,
 * message, file:line and traceback; the next call works; nothing is left
 * alive.
 */
static void case_pyerr(void) {
  opp_it("errors", NULL);
  REQUIRE_RC(pyop_load(), PYOP_OK);
  char *raising = it_path("errors/raising.py");
  float x[4] = {1, 2, 3, 4};
  pyop_tensor tx = f32_1d(x, 4);
  pyop_tensor_list in[1] = {one(&tx)};
  pyop_tensor out[1];
  host_mem mem = {0};
  pyop_exec_ctx ctx = host_ctx(&mem);

  /* infer_meta raises. */
  pyop_op *op = create_raise("infer");
  CHECK_RC(pyop_op_infer_meta(op, in, 1, out, 1), PYOP_EPYTHON);
  show_error("infer_meta raises");
  CHECK_ERR_HAS("Raise");
  CHECK_ERR_HAS("infer_meta");
  CHECK_ERR_HAS("ValueError: boom-infer");
  CHECK_ERR_HAS("Traceback (most recent call last)");
  check_err_names_line(raising, "raise ValueError(\"boom-infer\")");
  check_err_names_line(raising, "register_op(op_type=\"Raise\")");
  pyop_op_destroy(op);

  /* The next call works. */
  op = create_raise("none");
  CHECK_RC(pyop_op_infer_meta(op, in, 1, out, 1), PYOP_OK);
  CHECK_RC(pyop_op_execute(op, in, 1, out, 1, &ctx), PYOP_OK);
  host_mem_reset(&mem);
  pyop_op_destroy(op);

  /* execute raises. */
  op = create_raise("execute");
  CHECK_RC(pyop_op_infer_meta(op, in, 1, out, 1), PYOP_OK);
  CHECK_RC(pyop_op_execute(op, in, 1, out, 1, &ctx), PYOP_EPYTHON);
  show_error("execute raises");
  CHECK_ERR_HAS("execute");
  CHECK_ERR_HAS("Raise");
  CHECK_ERR_HAS("ValueError: boom-execute");
  CHECK_ERR_HAS("Traceback (most recent call last)");
  check_err_names_line(raising, "raise ValueError(\"boom-execute\")");
  host_mem_reset(&mem);
  /* Same instance again: same error, nothing stale. */
  CHECK_RC(pyop_op_execute(op, in, 1, out, 1, &ctx), PYOP_EPYTHON);
  CHECK_ERR_HAS("ValueError: boom-execute");
  host_mem_reset(&mem);
  pyop_op_destroy(op);

  /* infer_meta returns a wrong type. */
  op = create_raise("infer_type");
  CHECK(pyop_op_infer_meta(op, in, 1, out, 1) != PYOP_OK, "infer_meta returning 42");
  show_error("infer_meta returns 42");
  CHECK_ERR_HAS("TensorDesc");
  CHECK_ERR_HAS("int");
  pyop_op_destroy(op);

  /* KeyboardInterrupt in infer_meta: an interrupt (PYOP_EINTR), the host
   * lives on. */
  op = create_raise("keyboard");
  CHECK_RC(pyop_op_infer_meta(op, in, 1, out, 1), PYOP_EINTR);
  CHECK_ERR_HAS("KeyboardInterrupt: boom-keyboard");
  pyop_op_destroy(op);

  /* execute asks for an output index that does not exist. */
  op = create_raise("badindex");
  CHECK(pyop_op_execute(op, in, 1, out, 1, &ctx) != PYOP_OK, "output index 3 accepted");
  show_error("malloc_output_tensor(3, ...)");
  CHECK_ERR_HAS("out of range");
  host_mem_reset(&mem);
  pyop_op_destroy(op);

  /* execute asks for an output the host refuses to allocate: EHOST. */
  op = create_raise("hostfail");
  CHECK_RC(pyop_op_execute(op, in, 1, out, 1, &ctx), PYOP_EHOST);
  show_error("host refuses the allocation");
  CHECK_ERR_HAS("alloc_output");
  host_mem_reset(&mem);
  pyop_op_destroy(op);

  /* The constructor of the implementation class raises: create fails. */
  op = (pyop_op *)&op;
  CHECK_RC(pyop_op_create("RaiseInit", NULL, 0, &op), PYOP_EPYTHON);
  CHECK(op == NULL, "out not cleared after a failed create");
  show_error("implementation __init__ raises");
  CHECK_ERR_HAS("RaiseInit");
  CHECK_ERR_HAS("RuntimeError: boom-init");
  CHECK_ERR_HAS("Traceback (most recent call last)");
  check_err_names_line(raising, "raise RuntimeError(\"boom-init\")");

  /* After all that: a working call, and no instance left behind. */
  op = create_raise("none");
  CHECK_RC(pyop_op_execute(op, in, 1, out, 1, &ctx), PYOP_OK);
  CHECK(mem.calls == 1 && out[0].data == mem.blocks[0], "output allocated");
  host_mem_reset(&mem);
  pyop_op_destroy(op);
  CHECK_RC(pyop_unload(), PYOP_OK);
  free(raising);
}

/* ============================================================= (e) sysexit */

/*
 * (e) sys.exit() at import and in execute: an error, and the host lives on.
 */
static void case_sysexit(void) {
  /* sys.exit(3) while the plugin is imported. */
  opp_it("bad/sys_exit.py", NULL);
  int rc = pyop_load();
  CHECK(rc == PYOP_EPLUGIN, "sys.exit at import: %s", pyop_status_name(rc));
  show_error("sys.exit(3) at import");
  CHECK_ERR_HAS("SystemExit");
  CHECK_ERR_HAS("3");
  char *f = it_path("bad/sys_exit.py");
  check_err_names_line(f, "sys.exit(3)");
  free(f);
  CHECK_LIST("");

  /* sys.exit(5) inside execute. */
  opp_it("errors", NULL);
  REQUIRE_RC(pyop_load(), PYOP_OK);
  float x[2] = {1, 2};
  pyop_tensor tx = f32_1d(x, 2);
  pyop_tensor_list in[1] = {one(&tx)};
  pyop_tensor out[1];
  host_mem mem = {0};
  pyop_exec_ctx ctx = host_ctx(&mem);
  pyop_op *op = create_raise("exit");
  CHECK_RC(pyop_op_execute(op, in, 1, out, 1, &ctx), PYOP_EPYTHON);
  show_error("sys.exit(5) in execute");
  CHECK_ERR_HAS("SystemExit");
  CHECK_ERR_HAS("5");
  host_mem_reset(&mem);
  pyop_op_destroy(op);
  op = create_raise("none");
  CHECK_RC(pyop_op_execute(op, in, 1, out, 1, &ctx), PYOP_OK);
  host_mem_reset(&mem);
  pyop_op_destroy(op);
  CHECK_RC(pyop_unload(), PYOP_OK);
  fprintf(stderr, "[sysexit] host still alive after two sys.exit() calls\n");
}

/* ============================================================== (f) reload */

static void write_reload_plugin(const char *file, int round) {
  char *src;
  if (round < 2) {
    src = xasprintf(
        "import pyop\nfrom pyop import TensorDesc\n\n\n"
        "@pyop.register_op(op_type=\"Reload\")\n"
        "def reload_op(x: TensorDesc) -> TensorDesc:\n"
        "    return TensorDesc(x.shape, x.dtype)\n\n\n"
        "@pyop.register_op_impl(op_type=\"Reload\")\n"
        "class ReloadImpl:\n"
        "    def execute(self, x):\n"
        "        out = pyop.get_execute_ctx().malloc_output_tensor(0, x.shape, x.dtype)\n"
        "        with memoryview(x) as s, memoryview(out) as d:\n"
        "            fs, fd = s.cast('B').cast('f'), d.cast('B').cast('f')\n"
        "            for i in range(len(fd)):\n"
        "                fd[i] = %d * fs[i]\n"
        "            fs.release(); fd.release()\n",
        round == 0 ? 2 : 3);
  } else {
    /* The prototype changes too: an attribute k, and a line moved. */
    src = xasprintf(
        "import pyop\nfrom pyop import TensorDesc\n\n# moved down\n\n"
        "@pyop.register_op(op_type=\"Reload\")\n"
        "def reload_op(x: TensorDesc, *, k: int = 4) -> TensorDesc:\n"
        "    return TensorDesc(x.shape, x.dtype)\n\n\n"
        "@pyop.register_op_impl(op_type=\"Reload\")\n"
        "class ReloadImpl:\n"
        "    def execute(self, x, *, k):\n"
        "        out = pyop.get_execute_ctx().malloc_output_tensor(0, x.shape, x.dtype)\n"
        "        with memoryview(x) as s, memoryview(out) as d:\n"
        "            fs, fd = s.cast('B').cast('f'), d.cast('B').cast('f')\n"
        "            for i in range(len(fd)):\n"
        "                fd[i] = k * fs[i]\n"
        "            fs.release(); fd.release()\n");
  }
  write_file(file, src);
  free(src);
}

/* Executes Reload on [1, 2, 3] and returns out[2] (0 on failure). */
static float run_reload(void) {
  pyop_op *op = NULL;
  if (pyop_op_create("Reload", NULL, 0, &op) != PYOP_OK) return 0;
  float x[3] = {1, 2, 3}, r = 0;
  pyop_tensor tx = f32_1d(x, 3);
  pyop_tensor_list in[1] = {one(&tx)};
  pyop_tensor out[1];
  host_mem mem = {0};
  pyop_exec_ctx ctx = host_ctx(&mem);
  if (pyop_op_execute(op, in, 1, out, 1, &ctx) == PYOP_OK) r = ((float *)out[0].data)[2];
  host_mem_reset(&mem);
  pyop_op_destroy(op);
  return r;
}

/*
 * (f) A plugin edited between unload and load (its body, then its
 * prototype), then removed; a load after a shutdown.
 */
static void case_reload(void) {
  char *dir = path_join(g_tmp, "reload");
  make_dir(dir);
  char *file = path_join(dir, "rel.py");
  set_opp_path(dir);
  for (int round = 0; round < 3; round++) {
    write_reload_plugin(file, round);
    REQUIRE_RC(pyop_load(), PYOP_OK);
    float want = round == 0 ? 6 : round == 1 ? 9 : 12;
    float got = run_reload();
    CHECK(got == want, "round %d: Reload(3) = %g, expected %g (the edited body)", round, got,
          want);
    const pyop_op_info *info = NULL;
    CHECK_RC(pyop_op_get("Reload", &info), PYOP_OK);
    if (info) {
      CHECK(info->n_attrs == (round == 2 ? 1u : 0u), "round %d: %zu attrs", round,
            info->n_attrs);
      check_source(info->proto_source, file, "register_op(op_type=\"Reload\")");
      pyop_op_info_release(info);
    }
    CHECK_RC(pyop_unload(), PYOP_OK);
    CHECK_LIST("");
  }
  /* The plugin removed: nothing to load, nothing registered. */
  unlink(file);
  CHECK_RC(pyop_load(), PYOP_OK);
  CHECK_LIST("");
  CHECK_RC(pyop_unload(), PYOP_OK);
  /* And back, after a shutdown (the bridge is reopened). */
  write_reload_plugin(file, 1);
  CHECK_RC(pyop_shutdown(), PYOP_OK);
  REQUIRE_RC(pyop_load(), PYOP_OK);
  CHECK(run_reload() == 9, "after shutdown + load");
  CHECK_RC(pyop_shutdown(), PYOP_OK);
  free(file);
  free(dir);
}

/* ================================================================ (g) busy */

static char g_log[8192];
static int g_log_errors;

static void capture_log(void *user, int level, const char *line) {
  (void)user;
  if (level == PYOP_LOG_ERROR) {
    g_log_errors++;
    snprintf(g_log, sizeof g_log, "%s", line);
  }
}

/*
 * (g) pyop_unload / pyop_shutdown with live instances: PYOP_EBUSY naming
 * the ops and their counts; UnloadPythonCustomOps logs it; after the
 * destroys both work.
 */
static void case_busy(void) {
  opp_it("basic", NULL);
  REQUIRE_RC(pyop_load(), PYOP_OK);
  pyop_op *sa = NULL, *pd = NULL;
  REQUIRE_RC(pyop_op_create("ScaledAdd", NULL, 0, &sa), PYOP_OK);

  CHECK_RC(pyop_unload(), PYOP_EBUSY);
  show_error("unload with a live ScaledAdd");
  CHECK_ERR_HAS("\"ScaledAdd\"");
  CHECK_ERR_HAS("1 op instance is alive");
  CHECK_ERR_HAS("destroy");
  CHECK_LIST("IoKinds,PkgDouble,ScaledAdd,ShadowJson");

  REQUIRE_RC(pyop_op_create("PkgDouble", NULL, 0, &pd), PYOP_OK);
  CHECK_RC(pyop_shutdown(), PYOP_EBUSY);
  show_error("shutdown with two live instances");
  CHECK_ERR_HAS("\"ScaledAdd\"");
  CHECK_ERR_HAS("\"PkgDouble\"");
  CHECK_ERR_HAS("2 op instances are alive");

  /* The void GE entry point reports it through the log hook. */
  pyop_host_hooks h = PYOP_HOST_HOOKS_INIT;
  h.log = capture_log;
  CHECK_RC(pyop_set_host_hooks(&h), PYOP_OK);
  UnloadPythonCustomOps();
  CHECK(g_log_errors == 1 && strstr(g_log, "ScaledAdd") && strstr(g_log, "PkgDouble"),
        "UnloadPythonCustomOps logged %d errors: %s", g_log_errors, g_log);
  CHECK_RC(pyop_set_host_hooks(NULL), PYOP_OK);

  /* Still loaded and working. */
  float x[3] = {1, 2, 3}, y[3] = {1, 1, 1};
  pyop_tensor tx = f32_1d(x, 3), ty = f32_1d(y, 3);
  pyop_tensor_list in[2] = {one(&tx), one(&ty)};
  pyop_tensor out[1];
  host_mem mem = {0};
  pyop_exec_ctx ctx = host_ctx(&mem);
  CHECK_RC(pyop_op_execute(sa, in, 2, out, 1, &ctx), PYOP_OK);
  CHECK(out[0].data && ((float *)out[0].data)[2] == 4, "execute after a refused unload");
  host_mem_reset(&mem);

  pyop_op_destroy(pd);
  CHECK_RC(pyop_unload(), PYOP_EBUSY);
  CHECK_ERR_HAS("1 op instance is alive");
  CHECK(!err_has("PkgDouble"), "destroyed instance still named: %s", pyop_last_error());
  pyop_op_destroy(sa);
  CHECK_RC(pyop_unload(), PYOP_OK);
  CHECK_LIST("");
  CHECK_RC(pyop_shutdown(), PYOP_OK);
}

/* ===================================================== (h) conflicts, hooks */

/*
 * Loads OPP directories dir_a:dir_b (below the e2e plugins), each of which
 * defines op_type in file_a / file_b, and expects PYOP_ECONFLICT naming
 * both file:line and containing also (may be NULL); the registry keeps only
 * the host prototype registered before.
 */
static void expect_two_dir_conflict(const char *what, const char *dir_a, const char *file_a,
                                    const char *dir_b, const char *file_b, const char *op_type,
                                    const char *also) {
  char *a = e2e_path(dir_a), *b = e2e_path(dir_b);
  char *opp = xasprintf("%s:%s", a, b);
  set_opp_path(opp);
  register_host_keep();
  int rc = pyop_load();
  show_error(what);
  CHECK(rc == PYOP_ECONFLICT, "%s: load returned %s, expected PYOP_ECONFLICT (the registry "
        "decides about a second definition; it must not merge two silently)", what,
        pyop_status_name(rc));
  char *fa = path_join(a, file_a), *fb = path_join(b, file_b);
  char *decorator = xasprintf("register_op(op_type=\"%s\")", op_type);
  check_err_names_line(fa, decorator);
  check_err_names_line(fb, decorator);
  CHECK_ERR_HAS(op_type);
  if (also) CHECK_ERR_HAS(also);
  CHECK_LIST("HostKeep");
  free(decorator);
  free(fa);
  free(fb);
  free(opp);
  free(a);
  free(b);
}

/*
 * (h) Two OPP directories define Twin differently: PYOP_ECONFLICT naming
 * both file:line, the registry unchanged (regression: a second definition
 * in one load used to be refused by the Python loader instead of reaching
 * libpyop's registry).
 */
static void case_conflict_dirs(void) {
  /* Two OPP directories define op type Twin differently. docs/design.md §Registry: a
   * conflict error (PYOP_ECONFLICT) naming both sources (descriptor keys and
   * file:line); registry unchanged. */
  expect_two_dir_conflict("Twin defined differently in two directories", "conflict_a",
                          "twin_a.py", "conflict_b", "twin_b.py", "Twin", NULL);
}

/*
 * (h) Two OPP directories define Twice with the same signature and
 * descriptor keys but different code: a conflict naming both file:line, for
 * the prototype and the implementation alike; the registry unchanged.
 */
static void case_twice_dirs(void) {
  /* twice_1/ops.py and twice_2/ops.py define op Twice with the same
   * signature and descriptor keys but different execute code. Not one
   * definition (the files differ): a conflict naming both file:line, for the
   * prototype and the implementation alike; registry unchanged. */
  expect_two_dir_conflict("Twice defined with different code in two directories", "twice_1",
                          "ops.py", "twice_2", "ops.py", "Twice",
                          "two different definitions (the source files differ)");
}

/*
 * (h) The same plugin file in two OPP directories (same key, same content):
 * an idempotent success, the first directory's definition kept
 * (docs/design.md, Registry; regression: it used to be refused).
 */
static void case_identical_dirs(void) {
  /*
   * The same plugin file in two OPP directories: same op type, same
   * descriptor key ("pyop:common_ops.twin"), same content. docs/design.md §Registry: an
   * idempotent success; the first directory's definition is the one kept.
   */
  char *a = e2e_path("same_a"), *b = e2e_path("same_b");
  char *opp = xasprintf("%s:%s", a, b);
  set_opp_path(opp);
  int rc = pyop_load();
  if (rc != PYOP_OK) show_error("identical Twin in two directories");
  CHECK(rc == PYOP_OK, "load returned %s, expected PYOP_OK (same key, same content: "
        "idempotent, docs/design.md §Registry)",
        pyop_status_name(rc));
  CHECK_LIST("Twin");
  const pyop_op_info *info = NULL;
  if (pyop_op_get("Twin", &info) == PYOP_OK) {
    char *fa = path_join(a, "common_ops.py");
    check_source(info->proto_source, fa, "register_op(op_type=\"Twin\")");
    free(fa);
    pyop_op_info_release(info);
    pyop_op *op = NULL;
    pyop_attr k = attr_int("k", 5);
    if (pyop_op_create("Twin", &k, 1, &op) == PYOP_OK) {
      float x[2] = {1, 2};
      pyop_tensor tx = f32_1d(x, 2);
      pyop_tensor_list in[1] = {one(&tx)};
      pyop_tensor out[1];
      host_mem mem = {0};
      pyop_exec_ctx ctx = host_ctx(&mem);
      CHECK_RC(pyop_op_execute(op, in, 1, out, 1, &ctx), PYOP_OK);
      CHECK(out[0].data && ((float *)out[0].data)[1] == 10, "Twin k=5");
      host_mem_reset(&mem);
      pyop_op_destroy(op);
    }
  }
  CHECK_RC(pyop_unload(), PYOP_OK);
  CHECK_LIST("");
  free(opp);
  free(a);
  free(b);
}

typedef struct hook_rec {
  int owns_calls;
  const char *veto; /* op type the host owns */
  char reg[16][64];
  int reg_count[16];
  int n_reg;
  char unreg[16][64];
  int unreg_count[16];
  int n_unreg;
  int bad_info;
} hook_rec;

static int hook_owns(void *user, const char *op_type) {
  hook_rec *r = user;
  r->owns_calls++;
  return r->veto && strcmp(op_type, r->veto) == 0;
}

static void count_name(char (*names)[64], int *counts, int *n, const char *op_type) {
  for (int i = 0; i < *n; i++)
    if (strcmp(names[i], op_type) == 0) {
      counts[i]++;
      return;
    }
  if (*n < 16) {
    snprintf(names[*n], 64, "%s", op_type);
    counts[(*n)++] = 1;
  }
}

static void hook_register(void *user, const pyop_op_info *info) {
  hook_rec *r = user;
  if (!info || !info->op_type || !info->proto_source || info->struct_size < sizeof *info)
    r->bad_info++;
  else
    count_name(r->reg, r->reg_count, &r->n_reg, info->op_type);
}

static void hook_unregister(void *user, const char *op_type) {
  hook_rec *r = user;
  count_name(r->unreg, r->unreg_count, &r->n_unreg, op_type);
}

static int count_of(char (*names)[64], const int *counts, int n, const char *op_type) {
  for (int i = 0; i < n; i++)
    if (strcmp(names[i], op_type) == 0) return counts[i];
  return 0;
}

/*
 * (h) The host's owns_op veto: PYOP_ECONFLICT "owned by the host" with
 * file:line; nothing registered, no on_register.
 */
static void case_veto(void) {
  hook_rec r;
  memset(&r, 0, sizeof r);
  r.veto = "ScaledAdd";
  pyop_host_hooks h = PYOP_HOST_HOOKS_INIT;
  h.user = &r;
  h.owns_op = hook_owns;
  h.on_register = hook_register;
  CHECK_RC(pyop_set_host_hooks(&h), PYOP_OK);
  opp_it("basic", NULL);
  CHECK_RC(pyop_load(), PYOP_ECONFLICT);
  show_error("the host owns ScaledAdd");
  CHECK_ERR_HAS("\"ScaledAdd\"");
  CHECK_ERR_HAS("owned by the host");
  char *f = it_path("basic/ops_file.py");
  check_err_names_line(f, "register_op(op_type=\"ScaledAdd\")");
  free(f);
  CHECK(r.owns_calls >= 1, "owns_op never asked");
  CHECK(r.n_reg == 0, "on_register called for a failed load");
  CHECK_LIST("");
  /* The host no longer owns it: the same load works. */
  r.veto = NULL;
  CHECK_RC(pyop_load(), PYOP_OK);
  CHECK_LIST("IoKinds,PkgDouble,ScaledAdd,ShadowJson");
  CHECK(r.owns_calls >= 4, "owns_op asked %d times for 4 op types", r.owns_calls);
  CHECK_RC(pyop_unload(), PYOP_OK);
  CHECK_RC(pyop_set_host_hooks(NULL), PYOP_OK);
}

/*
 * (h) on_register / on_unregister once per op per load / unload: an
 * idempotent load and an empty unload call nothing, a failed load calls
 * nothing, shutdown unregisters.
 */
static void case_hooks(void) {
  hook_rec r;
  memset(&r, 0, sizeof r);
  pyop_host_hooks h = PYOP_HOST_HOOKS_INIT;
  h.user = &r;
  h.owns_op = hook_owns;
  h.on_register = hook_register;
  h.on_unregister = hook_unregister;
  CHECK_RC(pyop_set_host_hooks(&h), PYOP_OK);
  opp_it("basic", NULL);
  static const char *const ops[] = {"IoKinds", "PkgDouble", "ScaledAdd", "ShadowJson"};
  for (int round = 1; round <= 2; round++) {
    CHECK_RC(pyop_load(), PYOP_OK);
    CHECK_RC(pyop_load(), PYOP_OK); /* idempotent: no second on_register */
    CHECK(r.n_reg == 4, "on_register saw %d op types", r.n_reg);
    for (int i = 0; i < 4; i++)
      CHECK(count_of(r.reg, r.reg_count, r.n_reg, ops[i]) == round,
            "round %d: on_register(%s) called %d times", round, ops[i],
            count_of(r.reg, r.reg_count, r.n_reg, ops[i]));
    CHECK(r.n_unreg == (round == 1 ? 0 : 4), "on_unregister before unload");
    CHECK_RC(pyop_unload(), PYOP_OK);
    CHECK_RC(pyop_unload(), PYOP_OK); /* nothing loaded: no second call */
    for (int i = 0; i < 4; i++)
      CHECK(count_of(r.unreg, r.unreg_count, r.n_unreg, ops[i]) == round,
            "round %d: on_unregister(%s) called %d times", round, ops[i],
            count_of(r.unreg, r.unreg_count, r.n_unreg, ops[i]));
  }
  CHECK(r.bad_info == 0, "on_register got %d unusable descriptions", r.bad_info);
  /* A failed load calls neither. */
  opp_it("basic", "bad/attr_type.py");
  CHECK_RC(pyop_load(), PYOP_EPLUGIN);
  CHECK(count_of(r.reg, r.reg_count, r.n_reg, "ScaledAdd") == 2, "on_register after a "
        "failed load");
  /* Shutdown unregisters too. */
  opp_it("basic", NULL);
  CHECK_RC(pyop_load(), PYOP_OK);
  CHECK_RC(pyop_shutdown(), PYOP_OK);
  CHECK(count_of(r.unreg, r.unreg_count, r.n_unreg, "ScaledAdd") == 3,
        "on_unregister at shutdown: %d",
        count_of(r.unreg, r.unreg_count, r.n_unreg, "ScaledAdd"));
  CHECK_RC(pyop_set_host_hooks(NULL), PYOP_OK);
}

/* =========================================================== (i) hostproto */

/* Host prototypes HostScale(x) -> y, attr factor: float = 2.0, and
 * HostNeg(x) -> y without attributes. */
static void register_host_protos(void) {
  static const pyop_io_info in[] = {{"x", PYOP_IO_REQUIRED}};
  static const pyop_io_info out[] = {{"y", PYOP_IO_REQUIRED}};
  pyop_attr_info at[1];
  memset(at, 0, sizeof at);
  at[0].name = "factor";
  at[0].type = PYOP_ATTR_FLOAT;
  at[0].required = false;
  at[0].default_value.type = PYOP_ATTR_FLOAT;
  at[0].default_value.u.f = 2.0;
  pyop_op_info info;
  memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  info.op_type = "HostScale";
  info.inputs = in;
  info.n_inputs = 1;
  info.outputs = out;
  info.n_outputs = 1;
  info.attrs = at;
  info.n_attrs = 1;
  REQUIRE_RC(pyop_register_host_prototype(&info), PYOP_OK);
  info.op_type = "HostNeg";
  info.attrs = NULL;
  info.n_attrs = 0;
  REQUIRE_RC(pyop_register_host_prototype(&info), PYOP_OK);
}

/* op_type on x = [1, 2, 3] with attrs; returns out[2] (0 on failure). */
static float run_host_op(const char *op_type, const pyop_attr *attrs, size_t n_attrs,
                         int *rc_out) {
  pyop_op *op = NULL;
  int rc = pyop_op_create(op_type, attrs, n_attrs, &op);
  float r = 0;
  if (rc == PYOP_OK) {
    float x[3] = {1, 2, 3};
    pyop_tensor tx = f32_1d(x, 3);
    pyop_tensor_list in[1] = {one(&tx)};
    pyop_tensor out[1];
    host_mem mem = {0};
    pyop_exec_ctx ctx = host_ctx(&mem);
    rc = pyop_op_execute(op, in, 1, out, 1, &ctx);
    if (rc == PYOP_OK) r = ((float *)out[0].data)[2];
    host_mem_reset(&mem);
    pyop_op_destroy(op);
  }
  if (rc != PYOP_OK) show_error(op_type);
  *rc_out = rc;
  return r;
}

/*
 * An unknown op type (issue 19, first hour): when nothing is registered the
 * error says why (ASCEND_CUSTOM_OPP_PATH unset, empty, or without a Python
 * entry, each element with its verdict); a near name is suggested, also an
 * implementation waiting under a mistyped op type, and the op the author
 * meant says which implementation that is when it exists without one.
 */
static void case_unknown(void) {
  pyop_op *op = NULL;
  const pyop_op_info *info = NULL;
  set_opp_path(NULL);
  REQUIRE_RC(pyop_load(), PYOP_OK);
  CHECK_RC(pyop_op_create("ScaledAdd", NULL, 0, &op), PYOP_ENOENT);
  show_error("unset");
  CHECK_ERR_HAS("no operator \"ScaledAdd\" is registered (none is: "
                "ASCEND_CUSTOM_OPP_PATH is not set, so no Python operator was loaded)");
  set_opp_path("::");
  REQUIRE_RC(pyop_load(), PYOP_OK);
  CHECK_RC(pyop_op_get("ScaledAdd", &info), PYOP_ENOENT);
  CHECK_ERR_HAS("(none is: ASCEND_CUSTOM_OPP_PATH is empty, so no Python operator was loaded)");
  /* A C++-only OPP directory and a missing one. */
  char *cxx = path_join(g_tmp, "cxx_opp"), *gone = path_join(g_tmp, "gone");
  REQUIRE(mkdir(cxx, 0755) == 0, "mkdir %s", cxx);
  char *so = path_join(cxx, "libcustom_ops.so");
  FILE *f = fopen(so, "w");
  REQUIRE(f != NULL, "create %s", so);
  fclose(f);
  char *v = xasprintf("%s:%s", cxx, gone);
  set_opp_path(v);
  REQUIRE_RC(pyop_load(), PYOP_OK);
  CHECK_RC(pyop_op_create("ScaledAdd", NULL, 0, &op), PYOP_ENOENT);
  show_error("no Python entry");
  char *want = xasprintf("ASCEND_CUSTOM_OPP_PATH has no Python entry ('%s': no-python, '%s': "
                         "missing-dir), so no Python operator was loaded)", cxx, gone);
  CHECK_ERR_HAS(want);
  free(want);
  free(v);
  free(so);
  free(gone);
  free(cxx);

  /* Near names of registered ops. */
  opp_it("basic", NULL);
  REQUIRE_RC(pyop_load(), PYOP_OK);
  CHECK_RC(pyop_op_create("ScaledAd", NULL, 0, &op), PYOP_ENOENT);
  CHECK_ERR_HAS("no operator \"ScaledAd\" is registered; did you mean \"ScaledAdd\"?");
  CHECK(!err_has("(none is"), "ops are registered");
  CHECK_RC(pyop_op_get("scaledadd", &info), PYOP_ENOENT);
  CHECK_ERR_HAS("did you mean \"ScaledAdd\"?");
  CHECK_RC(pyop_op_get("Conv2D", &info), PYOP_ENOENT);
  CHECK(!err_has("did you mean"), "nothing is near Conv2D: %s", pyop_last_error());
  CHECK_RC(pyop_unload(), PYOP_OK);

  /* An implementation under a mistyped op type waits; the op meant names it. */
  char *dir = e2e_path("typo"), *file = path_join(dir, "typo_impl.py");
  set_opp_path(dir);
  REQUIRE_RC(pyop_load(), PYOP_OK);
  CHECK_RC(pyop_op_create("HostScale", NULL, 0, &op), PYOP_ENOENT);
  show_error("typo, no host prototype");
  CHECK_ERR_HAS("no operator \"HostScale\" is registered (no prototype and implementation pair "
                "has that name); did you mean \"HostScal\", an implementation (");
  CHECK_ERR_HAS(file);
  CHECK_ERR_HAS(") waiting for a prototype of that name: a typo in its register_op_impl op type?");
  register_host_protos();
  REQUIRE_RC(pyop_op_create("HostScale", NULL, 0, &op), PYOP_OK); /* infer-only */
  float x[3] = {1, 2, 3};
  pyop_tensor tx = f32_1d(x, 3), out[1];
  pyop_tensor_list in[1] = {one(&tx)};
  host_mem mem = {0};
  pyop_exec_ctx ctx = host_ctx(&mem);
  CHECK_RC(pyop_op_execute(op, in, 1, out, 1, &ctx), PYOP_EUNSUPPORTED);
  show_error("typo, host prototype");
  CHECK_ERR_HAS("\"HostScale\" has no execute (prototype <host>, no implementation); the "
                "implementation of \"HostScal\" (");
  CHECK_ERR_HAS("waits for a prototype of that name: a typo in its register_op_impl op type?");
  host_mem_reset(&mem);
  pyop_op_destroy(op);
  free(file);
  free(dir);
  CHECK_RC(pyop_shutdown(), PYOP_OK);
}

/*
 * (i) Python implementations bound to prototypes the host registered (with
 * and without attributes; check_attrs receives the attribute names as one
 * tuple, a regression); unload keeps the host prototype; conflicts both ways.
 */
static void case_hostproto(void) {
  register_host_protos();
  CHECK_LIST("HostNeg,HostScale");
  const pyop_op_info *info = NULL;
  REQUIRE_RC(pyop_op_get("HostScale", &info), PYOP_OK);
  CHECK(strcmp(info->proto_source, "<host>") == 0, "host source %s", info->proto_source);
  CHECK(strcmp(info->proto_key, "host:HostScale") == 0, "host key %s", info->proto_key);
  CHECK(info->impl_key == NULL, "host prototype has an impl");
  pyop_op_info_release(info);

  char *dir = e2e_path("hostimpl");
  char *file = path_join(dir, "host_impl.py");
  set_opp_path(dir);
  REQUIRE_RC(pyop_load(), PYOP_OK);
  CHECK_LIST("HostNeg,HostScale");
  REQUIRE_RC(pyop_op_get("HostScale", &info), PYOP_OK);
  CHECK(strcmp(info->proto_source, "<host>") == 0, "proto source %s", info->proto_source);
  check_source(info->impl_source, file, "register_op_impl(op_type=\"HostScale\")");
  CHECK(info->impl_key && strcmp(info->impl_key, "pyop:host_impl.HostScaleImpl") == 0,
        "impl key %s", info->impl_key ? info->impl_key : "(null)");
  CHECK(info->capabilities & PYOP_CAP_EXECUTE, "caps 0x%x", info->capabilities);
  CHECK(info->n_attrs == 1 && strcmp(info->attrs[0].name, "factor") == 0, "attrs");
  pyop_op_info_release(info);

  int rc;
  pyop_attr f3 = attr_float("factor", 3);
  float r = run_host_op("HostScale", &f3, 1, &rc);
  CHECK(rc == PYOP_OK && r == 9, "HostScale factor 3: %s, %g", pyop_status_name(rc),
        r);
  r = run_host_op("HostScale", NULL, 0, &rc);
  CHECK(rc == PYOP_OK && r == 6, "HostScale default factor: %s, %g",
        pyop_status_name(rc), r);
  r = run_host_op("HostNeg", NULL, 0, &rc);
  CHECK(rc == PYOP_OK && r == -3, "HostNeg: %s, %g", pyop_status_name(rc), r);

  /* Unload: the host prototypes stay, without their implementations. */
  CHECK_RC(pyop_unload(), PYOP_OK);
  CHECK_LIST("HostNeg,HostScale");
  REQUIRE_RC(pyop_op_get("HostScale", &info), PYOP_OK);
  CHECK(info->impl_key == NULL && !(info->capabilities & PYOP_CAP_EXECUTE),
        "implementation survived the unload");
  pyop_op_info_release(info);
  run_host_op("HostScale", &f3, 1, &rc);
  CHECK(rc == PYOP_EUNSUPPORTED, "execute without impl: %s", pyop_status_name(rc));

  /* Load again: bound again. */
  CHECK_RC(pyop_load(), PYOP_OK);
  pyop_attr fh = attr_float("factor", 0.5);
  r = run_host_op("HostScale", &fh, 1, &rc);
  CHECK(rc == PYOP_OK && r == 1.5f, "after reload: %s, %g", pyop_status_name(rc), r);

  /* The host registers a prototype that exists with other content. */
  static const pyop_io_info in1[] = {{"x", PYOP_IO_REQUIRED}};
  static const pyop_io_info out1[] = {{"z", PYOP_IO_REQUIRED}};
  pyop_op_info other;
  memset(&other, 0, sizeof other);
  other.struct_size = sizeof other;
  other.op_type = "HostScale";
  other.inputs = in1;
  other.n_inputs = 1;
  other.outputs = out1;
  other.n_outputs = 1;
  CHECK_RC(pyop_register_host_prototype(&other), PYOP_ECONFLICT);
  show_error("host prototype vs an existing host prototype");
  CHECK_ERR_HAS("\"HostScale\"");
  CHECK_ERR_HAS("output 0");
  CHECK_RC(pyop_unload(), PYOP_OK);

  /* A host prototype that disagrees with a Python one: ECONFLICT at load,
   * naming the host's key and the Python file:line. */
  other.op_type = "ScaledAdd";
  CHECK_RC(pyop_register_host_prototype(&other), PYOP_OK);
  opp_it("basic", NULL);
  CHECK_RC(pyop_load(), PYOP_ECONFLICT);
  show_error("Python ScaledAdd vs the host's");
  CHECK_ERR_HAS("\"ScaledAdd\"");
  CHECK_ERR_HAS("host:ScaledAdd");
  CHECK_ERR_HAS("<host>");
  CHECK_ERR_HAS("registered by the host");
  char *ops_file = it_path("basic/ops_file.py");
  check_err_names_line(ops_file, "register_op(op_type=\"ScaledAdd\")");
  CHECK_LIST("HostNeg,HostScale,ScaledAdd");
  free(ops_file);
  free(file);
  free(dir);
}

/* ============================================================= (j) threads */

typedef struct thr_arg {
  pyop_op *shared; /* NULL: the thread makes its own instance */
  int index;
  double seconds;
  long calls;
  long failures;
  char first_error[512];
} thr_arg;

static atomic_int g_go;

static void *exec_thread(void *p) {
  thr_arg *a = p;
  while (!atomic_load(&g_go)) sched_yield();
  pyop_op *op = a->shared;
  double alpha = a->shared ? 1.5 : (double)(a->index + 1);
  if (!op) {
    pyop_attr at = attr_float("alpha", alpha);
    if (pyop_op_create("ScaledAdd", &at, 1, &op) != PYOP_OK) {
      a->failures++;
      snprintf(a->first_error, sizeof a->first_error, "create: %s", pyop_last_error());
      return NULL;
    }
  }
  float x[16], y[16];
  host_mem mem = {0};
  pyop_exec_ctx ctx = host_ctx(&mem);
  double end = now_s() + a->seconds;
  for (long it = 0; now_s() < end; it++) {
    for (int i = 0; i < 16; i++) {
      x[i] = (float)(a->index * 100 + i);
      y[i] = (float)(it % 7 + i);
    }
    pyop_tensor tx = f32_1d(x, 16), ty = f32_1d(y, 16);
    pyop_tensor_list in[2] = {one(&tx), one(&ty)};
    pyop_tensor out[1];
    int rc = (it % 5 == 4) ? pyop_op_infer_meta(op, in, 2, out, 1)
                           : pyop_op_execute(op, in, 2, out, 1, &ctx);
    bool ok = rc == PYOP_OK;
    if (ok && it % 5 != 4) {
      for (int i = 0; i < 16; i++)
        if (((float *)out[0].data)[i] != x[i] + (float)alpha * y[i]) ok = false;
    } else if (ok) {
      ok = out[0].ndim == 1 && out[0].shape[0] == 16 && out[0].data == NULL;
    }
    if (!ok) {
      if (!a->failures)
        snprintf(a->first_error, sizeof a->first_error, "call %ld: %s: %s", it,
                 pyop_status_name(rc), rc ? pyop_last_error() : "wrong result");
      a->failures++;
    }
    host_mem_reset(&mem);
    a->calls++;
  }
  if (!a->shared) pyop_op_destroy(op);
  return NULL;
}

static void run_threads(const char *what, pyop_op *shared, double seconds) {
  enum { N = 8 };
  pthread_t th[N];
  thr_arg args[N];
  atomic_store(&g_go, 0);
  for (int i = 0; i < N; i++) {
    memset(&args[i], 0, sizeof args[i]);
    args[i].shared = shared;
    args[i].index = i;
    args[i].seconds = seconds;
    REQUIRE(pthread_create(&th[i], NULL, exec_thread, &args[i]) == 0, "pthread_create");
  }
  atomic_store(&g_go, 1);
  long total = 0;
  for (int i = 0; i < N; i++) {
    pthread_join(th[i], NULL);
    total += args[i].calls;
    CHECK(args[i].failures == 0, "%s: thread %d: %ld of %ld calls failed; first: %s", what, i,
          args[i].failures, args[i].calls, args[i].first_error);
    CHECK(args[i].calls > 0, "%s: thread %d made no call", what, i);
  }
  fprintf(stderr, "[threads] %s: %ld calls from %d threads in %.1f s\n", what, total, N,
          seconds);
}

/* Warnings of the bridge pinning itself at shutdown (case_threads). */
static int g_pin_warnings;

static void count_pin_warnings(void *user, int level, const char *line) {
  (void)user;
  if (level == PYOP_LOG_WARN && strstr(line, "still referenced at shutdown") != NULL)
    g_pin_warnings++;
}

/*
 * (j) 8 host threads execute (and infer) at once for E2E_THREAD_SECONDS
 * (default 1, 3 in ctest), one instance each and one shared instance,
 * results checked; fresh threads after a reload.
 */
static void case_threads(void) {
  /* No plugin keeps a Tensor: the shutdown below must not say one does (a
   * free-threaded Python makes the module and its types immortal once
   * these threads exist; that is not a plugin keeping an object). */
  pyop_host_hooks hooks = PYOP_HOST_HOOKS_INIT;
  hooks.log = count_pin_warnings;
  REQUIRE_RC(pyop_set_host_hooks(&hooks), PYOP_OK);
  opp_it("basic", NULL);
  REQUIRE_RC(pyop_load(), PYOP_OK);
  double secs = getenv("E2E_THREAD_SECONDS") ? atof(getenv("E2E_THREAD_SECONDS")) : 1.0;
  run_threads("one instance per thread", NULL, secs);
  pyop_op *shared = NULL;
  pyop_attr at = attr_float("alpha", 1.5);
  REQUIRE_RC(pyop_op_create("ScaledAdd", &at, 1, &shared), PYOP_OK);
  run_threads("one shared instance", shared, secs);
  pyop_op_destroy(shared);
  CHECK_RC(pyop_unload(), PYOP_OK);
  /* New threads after the first ones exited (their thread states are gone). */
  CHECK_RC(pyop_load(), PYOP_OK);
  run_threads("fresh threads after a reload", NULL, 0.2);
  CHECK_RC(pyop_shutdown(), PYOP_OK);
  CHECK(g_pin_warnings == 0, "%d \"still referenced at shutdown\" warnings with no object kept",
        g_pin_warnings);
  CHECK_RC(pyop_set_host_hooks(NULL), PYOP_OK);
}

/*
 * The op contract from 4 host threads at once, on instances shared by all of
 * them: an in-place op (each thread its own buffers), a dynamic output
 * through execute_list with expectations, a Tensor attribute read by every
 * thread, and ops that break the contract (ECONTRACT with this thread's
 * message, never another's). Results are checked on every call; the case
 * runs under ThreadSanitizer (label threads).
 */
typedef struct contract_arg {
  pyop_op *add_into, *split, *scale, *lazy, *wrong;
  int index;
  double seconds;
  long calls, failures;
  char first_error[512];
} contract_arg;

static void contract_fail(contract_arg *a, long it, const char *what, int rc) {
  if (!a->failures)
    snprintf(a->first_error, sizeof a->first_error, "call %ld: %s: %s: %s", it, what,
             pyop_status_name(rc), rc ? pyop_last_error() : "wrong result");
  a->failures++;
}

static void *contract_thread(void *p) {
  contract_arg *a = p;
  while (!atomic_load(&g_go)) sched_yield();
  host_mem mem = {0};
  pyop_exec_ctx ctx = host_ctx(&mem);
  double end = now_s() + a->seconds;
  for (long it = 0; now_s() < end; it++) {
    float base = (float)(a->index * 1000 + it % 100);
    int rc;
    /* In place: x += y; output 0 is x's own buffer. */
    float x[4] = {base, base + 1, base + 2, base + 3}, y[4] = {1, 2, 3, 4};
    pyop_tensor tx = f32_1d(x, 4), ty = f32_1d(y, 4);
    pyop_tensor_list in2[2] = {one(&tx), one(&ty)};
    pyop_tensor out[1];
    memset(out, 0, sizeof out);
    rc = pyop_op_execute(a->add_into, in2, 2, out, 1, &ctx);
    if (rc != PYOP_OK || out[0].data != x || x[0] != base + 1 || x[3] != base + 7 || y[3] != 4)
      contract_fail(a, it, "AddInto", rc);
    /* A dynamic output (n = 3) with the counts infer_meta gave. */
    float d[6] = {base, 1, 2, 3, 4, base + 5};
    pyop_tensor td = f32_1d(d, 6), pieces[3];
    pyop_tensor_list ind[1] = {one(&td)};
    pyop_output_list lists[1] = {{pieces, 3, 0}};
    rc = pyop_op_infer_meta_list(a->split, ind, 1, lists, 1);
    if (rc == PYOP_OK) {
      ctx.flags = PYOP_EXEC_EXPECT_OUTPUTS;
      rc = pyop_op_execute_list(a->split, ind, 1, lists, 1, &ctx);
      ctx.flags = 0;
    }
    if (rc != PYOP_OK || lists[0].count != 3 || !pieces[0].data || !pieces[2].data ||
        ((float *)pieces[0].data)[0] != base || ((float *)pieces[2].data)[1] != base + 5)
      contract_fail(a, it, "Split", rc);
    /* The shared Tensor attribute w = {2, 3, 4}. */
    float s[3] = {base, 1, 1};
    pyop_tensor ts = f32_1d(s, 3);
    pyop_tensor_list ins[1] = {one(&ts)};
    memset(out, 0, sizeof out);
    rc = pyop_op_execute(a->scale, ins, 1, out, 1, &ctx);
    if (rc != PYOP_OK || !out[0].data || ((float *)out[0].data)[0] != 2 * base ||
        ((float *)out[0].data)[2] != 4)
      contract_fail(a, it, "Scale", rc);
    /* Broken contracts: ECONTRACT, and the message is this call's. */
    memset(out, 0, sizeof out);
    if (it % 2) {
      rc = pyop_op_execute(a->lazy, ins, 1, out, 1, &ctx);
    } else if ((rc = pyop_op_infer_meta(a->wrong, ins, 1, out, 1)) == PYOP_OK) {
      ctx.flags = PYOP_EXEC_EXPECT_OUTPUTS; /* float32[3], the op asks for float16[6] */
      rc = pyop_op_execute(a->wrong, ins, 1, out, 1, &ctx);
      ctx.flags = 0;
    }
    const char *want = it % 2 ? "returned without producing output 0"
                              : "expected float32[3], the op asked for float16[6]";
    if (rc != PYOP_ECONTRACT || !strstr(pyop_last_error(), want))
      contract_fail(a, it, it % 2 ? "Lazy" : "Wrong", rc == PYOP_OK ? -1000 : rc);
    host_mem_reset(&mem);
    ctx = host_ctx(&mem);
    a->calls++;
  }
  host_mem_reset(&mem);
  return NULL;
}

/*
 * The op contract from 4 host threads at once for E2E_THREAD_SECONDS
 * (default 1, 3 in ctest), on shared instances: in-place AddInto, a dynamic
 * output (Split), a Tensor attribute copied at create (Scale), and broken
 * contracts (Lazy, Wrong) whose PYOP_ECONTRACT message is each call's own.
 */
static void case_contract_threads(void) {
  char *dir = e2e_path("contract");
  set_opp_path(dir);
  free(dir);
  REQUIRE_RC(pyop_load(), PYOP_OK);
  enum { N = 4 };
  contract_arg shared = {0};
  pyop_attr n3 = {"n", {.type = PYOP_ATTR_INT, .u.i = 3}};
  float w[3] = {2, 3, 4};
  pyop_tensor tw = f32_1d(w, 3);
  pyop_attr aw = {"w", {.type = PYOP_ATTR_TENSOR, .u.tensor = &tw}};
  REQUIRE_RC(pyop_op_create("AddInto", NULL, 0, &shared.add_into), PYOP_OK);
  REQUIRE_RC(pyop_op_create("Split", &n3, 1, &shared.split), PYOP_OK);
  REQUIRE_RC(pyop_op_create("Scale", &aw, 1, &shared.scale), PYOP_OK);
  REQUIRE_RC(pyop_op_create("Lazy", NULL, 0, &shared.lazy), PYOP_OK);
  REQUIRE_RC(pyop_op_create("Wrong", NULL, 0, &shared.wrong), PYOP_OK);
  w[0] = -1; /* copied at create: the instances never see this */
  double secs = getenv("E2E_THREAD_SECONDS") ? atof(getenv("E2E_THREAD_SECONDS")) : 1.0;
  pthread_t th[N];
  contract_arg args[N];
  atomic_store(&g_go, 0);
  for (int i = 0; i < N; i++) {
    args[i] = shared;
    args[i].index = i;
    args[i].seconds = secs;
    REQUIRE(pthread_create(&th[i], NULL, contract_thread, &args[i]) == 0, "pthread_create");
  }
  atomic_store(&g_go, 1);
  long total = 0;
  for (int i = 0; i < N; i++) {
    pthread_join(th[i], NULL);
    total += args[i].calls;
    CHECK(args[i].failures == 0, "contract threads: thread %d: %ld of %ld rounds failed; "
          "first: %s", i, args[i].failures, args[i].calls, args[i].first_error);
    CHECK(args[i].calls > 0, "contract threads: thread %d made no call", i);
  }
  fprintf(stderr, "[contract threads] %ld rounds of 5 calls from %d threads in %.1f s\n", total,
          N, secs);
  pyop_op_destroy(shared.add_into);
  pyop_op_destroy(shared.split);
  pyop_op_destroy(shared.scale);
  pyop_op_destroy(shared.lazy);
  pyop_op_destroy(shared.wrong);
  CHECK_RC(pyop_unload(), PYOP_OK);
}

/* ============================================================ (k) needload */

/*
 * (k) pyop_check_need_load with C++-only directories, missing and relative
 * elements, empty elements, the variable unset or empty, a .py file and a
 * missing one; a C++-only load opens no bridge.
 */
static void case_needload(void) {
  /* C++-only OPP directories (what an Ascend toolkit installs). */
  char *cpp1 = path_join(g_tmp, "cpp1"), *cpp2 = path_join(g_tmp, "cpp2");
  make_dir(cpp1);
  make_dir(cpp2);
  char *p;
  write_file(p = path_join(cpp1, "libcust_opapi.so"), "\x7f" "ELF not really"), free(p);
  write_file(p = path_join(cpp1, "op_info.json"), "{}"), free(p);
  write_file(p = path_join(cpp1, "_private.py"), "raise SystemExit(9)\n"), free(p);
  write_file(p = path_join(cpp1, ".hidden.py"), "raise SystemExit(9)\n"), free(p);
  make_dir(p = path_join(cpp1, "op_impl")), free(p);
  write_file(p = path_join(cpp1, "op_impl/not_a_package.py"), "raise SystemExit(9)\n"), free(p);
  make_dir(p = path_join(cpp1, "_hidden_pkg")), free(p);
  write_file(p = path_join(cpp1, "_hidden_pkg/__init__.py"), "raise SystemExit(9)\n"), free(p);
  make_dir(p = path_join(cpp2, "vendors")), free(p);
  make_dir(p = path_join(cpp2, "vendors/customize")), free(p);
  char *missing = path_join(g_tmp, "does-not-exist");
  char *pydir = it_path("basic");

  struct {
    const char *what;
    char *value; /* NULL: unset */
    bool need;
  } cases[] = {
      {"unset", NULL, false},
      {"empty", xstrdup(""), false},
      {"only colons", xstrdup("::"), false},
      {"C++ only", xasprintf("%s:%s", cpp1, cpp2), false},
      {"C++ only, a missing dir, empty elements", xasprintf(":%s::%s:%s:", cpp1, missing, cpp2),
       false},
      {"relative element (refused)", xasprintf("tests/integration/plugins/basic:%s", cpp1),
       false},
      {"C++ then Python", xasprintf("%s:%s:%s", cpp1, cpp2, pydir), true},
      {"Python first", xasprintf("%s:%s", pydir, cpp1), true},
      {"a .py file", it_path("basic/ops_file.py"), true},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    set_opp_path(cases[i].value);
    bool need = !cases[i].need;
    CHECK_RC(pyop_check_need_load(&need), PYOP_OK);
    CHECK(need == cases[i].need, "%s (%s): need_load %d", cases[i].what,
          cases[i].value ? cases[i].value : "unset", need);
  }
  /* A listed .py file that does not exist is an error naming it. */
  char *gone = path_join(g_tmp, "gone.py");
  char *v = xasprintf("%s:%s", cpp1, gone);
  set_opp_path(v);
  bool need = false;
  int rc = pyop_check_need_load(&need);
  show_error("a listed .py file is missing");
  CHECK(rc != PYOP_OK, "missing .py file accepted by check_need_load");
  CHECK_ERR_HAS(gone);

  /* Loading C++-only directories: OK, nothing registered, no bridge opened. */
  char *cpp = xasprintf("%s:%s", cpp1, cpp2);
  set_opp_path(cpp);
  CHECK_RC(pyop_load(), PYOP_OK);
  CHECK_LIST("");
  char *doc = NULL;
  CHECK_RC(pyop_doctor(&doc), PYOP_OK);
  CHECK(doc && strstr(doc, "bridge: not loaded"), "doctor after a C++-only load:\n%s",
        doc ? doc : "");
  pyop_free(doc);
  CHECK_RC(pyop_unload(), PYOP_OK);

  /* Python after the C++ dirs: loaded, and the skipped files were not run. */
  set_opp_path(cases[6].value);
  CHECK_RC(pyop_load(), PYOP_OK);
  CHECK_LIST("IoKinds,PkgDouble,ScaledAdd,ShadowJson");
  CHECK_RC(pyop_shutdown(), PYOP_OK);
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) free(cases[i].value);
  free(cpp);
  free(v);
  free(gone);
  free(missing);
  free(pydir);
  free(cpp1);
  free(cpp2);
}

/* ============================================================== (l) cycles */

/* Creates, executes (checked) and destroys the op of the bridge in use. */
static void cycle_exec(const char *op_type, int cycle) {
  pyop_op *op = NULL;
  pyop_attr a = attr_float("alpha", 0.5);
  int rc = pyop_op_create(op_type, &a, 1, &op);
  REQUIRE(rc == PYOP_OK, "cycle %d: create %s: %s", cycle, op_type, pyop_status_name(rc));
  float x[4] = {1, 2, 3, 4}, y[4] = {2, 2, 2, 2};
  pyop_tensor tx = f32_1d(x, 4), ty = f32_1d(y, 4);
  pyop_tensor_list in[2] = {one(&tx), one(&ty)};
  pyop_tensor out[1];
  host_mem mem = {0};
  pyop_exec_ctx ctx = host_ctx(&mem);
  rc = pyop_op_execute(op, in, 2, out, 1, &ctx);
  CHECK(rc == PYOP_OK && ((float *)out[0].data)[3] == 5.0f, "cycle %d: execute %s: %s", cycle,
        op_type, pyop_status_name(rc));
  host_mem_reset(&mem);
  pyop_op_destroy(op);
}

static const char *detect_op(void) {
  const pyop_op_info *info = NULL;
  if (pyop_op_get("ScaledAdd", &info) == PYOP_OK) {
    pyop_op_info_release(info);
    return "ScaledAdd";
  }
  if (pyop_op_get("FakeAdd", &info) == PYOP_OK) {
    pyop_op_info_release(info);
    return "FakeAdd";
  }
  return NULL;
}

static void rss_check(const char *what, long base, long end, long bound) {
  fprintf(stderr, "[cycles] %s: RSS %ld KiB after warm-up, %ld KiB at the end (%+ld KiB, "
          "bound %ld KiB)\n", what, base / 1024, end / 1024, (end - base) / 1024, bound / 1024);
  if (getenv("E2E_NO_RSS")) return;
  CHECK(end - base <= bound, "%s: RSS grew by %ld KiB (bound %ld KiB)", what,
        (end - base) / 1024, bound / 1024);
}

static void run_cycles(int n_unload, int n_shutdown) {
  opp_it("basic", NULL);
  const int warm = 5;
  const char *op_type = NULL;
  long base = 0;
  double t0 = now_s();
  for (int i = 0; i < n_unload; i++) {
    int rc = pyop_load();
    REQUIRE(rc == PYOP_OK, "load %d: %s", i, pyop_status_name(rc));
    if (!op_type) {
      op_type = detect_op();
      REQUIRE(op_type != NULL, "neither ScaledAdd nor FakeAdd registered");
    }
    cycle_exec(op_type, i);
    rc = pyop_unload();
    REQUIRE(rc == PYOP_OK, "unload %d: %s", i, pyop_status_name(rc));
    if (i + 1 == warm) base = rss_bytes();
  }
  if (n_unload > warm)
    rss_check("load/unload", base, rss_bytes(), 2L << 20);
  fprintf(stderr, "[cycles] %d load/unload cycles (%s) in %.1f s\n", n_unload,
          op_type ? op_type : "?", now_s() - t0);
  t0 = now_s();
  for (int i = 0; i < n_shutdown; i++) {
    int rc = pyop_load();
    REQUIRE(rc == PYOP_OK, "load %d (shutdown cycle): %s", i, pyop_status_name(rc));
    if (!op_type) op_type = detect_op();
    REQUIRE(op_type != NULL, "no op registered");
    cycle_exec(op_type, i);
    rc = pyop_shutdown();
    REQUIRE(rc == PYOP_OK, "shutdown %d: %s", i, pyop_status_name(rc));
    if (i + 1 == warm) base = rss_bytes();
  }
  if (n_shutdown > warm)
    /* Each shutdown dlcloses the bridge and drops the pyop package; CPython
     * keeps some of that memory (it levels off at ~3 MiB after ~100 cycles). */
    rss_check("load/shutdown", base, rss_bytes(), 4L << 20);
  fprintf(stderr, "[cycles] %d load/shutdown cycles in %.1f s\n", n_shutdown, now_s() - t0);
}

/* ================================================================== main */

static void *g_main_ts;

/* Also on exit() from a failed REQUIRE: no temporary tree is left behind. */
static void remove_tmp(void) {
  if (g_tmp) remove_tree(g_tmp);
}

static void setup(void) {
  g_tmp = make_temp_dir(e2e_case);
  atexit(remove_tmp);
  g_it = path_join(g_tmp, "it");
  g_e2e = path_join(g_tmp, "e2e");
  copy_tree(E2E_IT_PLUGINS, g_it);
  copy_tree(E2E_PLUGINS, g_e2e);
  /* The host initialises Python (no signal handlers) and releases the GIL:
   * libpyop and the bridge take it as they need it. */
  Py_InitializeEx(0);
  g_main_ts = PyEval_SaveThread();
}

static void teardown(void) {
  int rc = pyop_shutdown();
  CHECK(rc == PYOP_OK, "final pyop_shutdown: %s", pyop_status_name(rc));
  PyEval_RestoreThread(g_main_ts);
  CHECK(Py_FinalizeEx() == 0, "Py_FinalizeEx failed");
  remove_tree(g_tmp);
  free(g_it);
  free(g_e2e);
  free(g_tmp);
  g_tmp = NULL;
}


/* ============================================================ the limits */

/* An op of type with string attributes a=av (and b=bv when b is set). */
static pyop_op *limits_op(const char *type, const char *a, const char *av, const char *b,
                          const char *bv) {
  pyop_attr attrs[2] = {attr_str(a, av), b ? attr_str(b, bv) : attr_str(a, av)};
  pyop_op *op = NULL;
  int rc = pyop_op_create(type, attrs, b ? 2 : 1, &op);
  CHECK(rc == PYOP_OK, "create %s(%s=%s): %s", type, a, av, pyop_last_error());
  return rc == PYOP_OK ? op : NULL;
}

/* PlanSym(symbol): declares (and at want OK launches) one kernel call. */
static void limits_plan_sym(const char *symbol, int want, const char *text) {
  pyop_op *op = limits_op("PlanSym", "symbol", symbol, NULL, NULL);
  if (!op) return;
  float x[1] = {0};
  int32_t got[1] = {0};
  pyop_tensor tx = f32_1d(x, 1);
  pyop_tensor_list in[1] = {one(&tx)};
  pyop_tensor out = f32_1d((float *)(void *)got, 1);
  out.dtype = PYOP_DTYPE_INT32;
  int rc = pyop_op_declare_launch_args(op, in, 1, &out, 1);
  CHECK(rc == want, "PlanSym(%s): %s, expected %s: %s", symbol, pyop_status_name(rc),
        pyop_status_name(want), pyop_last_error());
  if (text) {
    CHECK_ERR_HAS(text);
    show_error(symbol);
  }
  /* Launching declares first when no plan is there: the same refusal. */
  pyop_exec_ctx ctx = PYOP_EXEC_CTX_INIT;
  rc = pyop_op_launch(op, in, 1, &out, 1, &ctx);
  CHECK(rc == want, "launch PlanSym(%s): %s: %s", symbol, pyop_status_name(rc),
        pyop_last_error());
  if (want == PYOP_OK) CHECK(got[0] == 42, "PlanSym(%s) stored %d", symbol, (int)got[0]);
  pyop_op_destroy(op);
}

/* PlanNumber(field, value): the declare is refused with want and text. */
static void limits_plan_number(const char *field, const char *value, int want,
                               const char *text) {
  pyop_op *op = limits_op("PlanNumber", "field", field, "value", value);
  if (!op) return;
  float x[1] = {0}, y[1] = {0}, z[1] = {0};
  pyop_tensor tx = f32_1d(x, 1), ty = f32_1d(y, 1), out = f32_1d(z, 1);
  out.dtype = PYOP_DTYPE_INT32;
  pyop_tensor_list in[2] = {one(&tx), one(&ty)};
  int rc = pyop_op_declare_launch_args(op, in, 2, &out, 1);
  CHECK(rc == want, "PlanNumber(%s=%s): %s, expected %s: %s", field, value,
        pyop_status_name(rc), pyop_status_name(want), pyop_last_error());
  CHECK(err_has(text), "PlanNumber(%s=%s): last error lacks \"%s\": %s", field, value, text,
        pyop_last_error());
  if (!strcmp(field, "index")) show_error(value);
  pyop_op_destroy(op);
}

/* Numbers(field, value): execute passes value to a context method. */
static void limits_numbers(const char *field, const char *value, const char *text) {
  pyop_op *op = limits_op("Numbers", "field", field, "value", value);
  if (!op) return;
  float x[1] = {0};
  pyop_tensor tx = f32_1d(x, 1);
  pyop_tensor_list in[1] = {one(&tx)};
  pyop_tensor out[1];
  memset(out, 0, sizeof out);
  host_mem mem = {0};
  pyop_exec_ctx ctx = host_ctx(&mem);
  int rc = pyop_op_execute(op, in, 1, out, 1, &ctx);
  CHECK(rc == PYOP_EPYTHON, "Numbers(%s=%s): %s: %s", field, value, pyop_status_name(rc),
        pyop_last_error());
  CHECK(err_has(text), "Numbers(%s=%s): last error lacks \"%s\": %s", field, value, text,
        pyop_last_error());
  host_mem_reset(&mem);
  pyop_op_destroy(op);
}

/* Empty(dims): infer_meta describes 0 bytes, execute's plugin sees sane
 * strides (it asserts them); both orders of a huge shape with a 0. */
static void limits_empty(const int64_t *dims, size_t n) {
  pyop_attr a;
  memset(&a, 0, sizeof a);
  a.name = "dims";
  a.value.type = PYOP_ATTR_LIST_INT;
  a.value.u.ints.items = dims;
  a.value.u.ints.count = n;
  pyop_op *op = NULL;
  REQUIRE_RC(pyop_op_create("Empty", &a, 1, &op), PYOP_OK);
  float x[1] = {0};
  pyop_tensor tx = f32_1d(x, 1);
  pyop_tensor_list in[1] = {one(&tx)};
  pyop_tensor out[1];
  int rc = pyop_op_infer_meta(op, in, 1, out, 1);
  CHECK(rc == PYOP_OK, "infer_meta Empty(%lld, %lld, %lld): %s", (long long)dims[0],
        (long long)dims[1], (long long)dims[2], pyop_last_error());
  CHECK(rc != PYOP_OK || out[0].nbytes == 0, "Empty: %llu bytes",
        (unsigned long long)out[0].nbytes);
  host_mem mem = {0};
  pyop_exec_ctx ctx = host_ctx(&mem);
  memset(out, 0, sizeof out);
  rc = pyop_op_execute(op, in, 1, out, 1, &ctx);
  CHECK(rc == PYOP_OK, "execute Empty(%lld, %lld, %lld): %s", (long long)dims[0],
        (long long)dims[1], (long long)dims[2], pyop_last_error());
  CHECK(rc != PYOP_OK || (out[0].nbytes == 0 && out[0].shape[1] == dims[1]),
        "Empty: output %llu bytes", (unsigned long long)out[0].nbytes);
  host_mem_reset(&mem);
  pyop_op_destroy(op);
}

/*
 * Plugins at the limits (plugins/limits; issue 17 items 1, 6 and 11; ctest
 * sets E2E_NOT_KERNELS to tests/unit's kernel library with data exports): a
 * kernel plan naming a data object or libc's exit is PYOP_ELAUNCH with
 * libpyop's reason (at declare and at launch, no crash); launch-argument
 * numbers past their C type (2**32+1, 2**63, -1, 2**64 as index, kind,
 * scalar type, each scalar type's value, workspace size) and the numbers of
 * context methods (output index, dims, dtype and format values, workspace
 * sizes) are ValueErrors naming the argument and the range; empty outputs
 * with huge dimensions ((0, 3**20, 3**20), (2**62, 2**62, 0), ...) are 0
 * bytes in every order and the plugin sees sane strides.
 */
static void case_limits(void) {
  char *dir = e2e_path("limits");
  set_opp_path(dir);
  free(dir);
  REQUIRE_RC(pyop_load(), PYOP_OK);

  /* Item 1: only a function of the kernel library itself is a kernel. */
  limits_plan_sym("not_kernels_store", PYOP_OK, NULL);
  limits_plan_sym("not_kernels_table", PYOP_ELAUNCH,
                  "kernel symbol \"not_kernels_table\" is a data object in /");
  limits_plan_sym("not_kernels_counter", PYOP_ELAUNCH, "is a data object in /");
  limits_plan_sym("exit", PYOP_ELAUNCH, "kernel symbol \"exit\" is defined in /");
  CHECK_ERR_HAS("libpyop_test_not_kernels.so (a kernel must be a function");

  /* Item 11: launch numbers beyond their C type are refused, named. */
  static const struct {
    const char *field, *value, *text;
  } plans[] = {
      {"index", "4294967297", "launch argument 0 index 4294967297 is out of range [0, 4294967295]"},
      {"index", "9223372036854775808", "launch argument 0 index 9223372036854775808 is out of range"},
      {"index", "-1", "launch argument 0 index -1 is out of range [0, 4294967295]"},
      {"index", "18446744073709551616", "index 18446744073709551616 is out of range"},
      {"kind", "4294967297",
       "launch argument 0 kind 4294967297 is out of range [-2147483648, 2147483647]"},
      {"scalar_type", "4294967299", "launch argument 0 scalar_type 4294967299 is out of range"},
      {"int8", "128", "launch argument 0 (int8) value 128 is out of range [-128, 127]"},
      {"int64", "9223372036854775808", "(int64) value 9223372036854775808 is out of range"},
      {"uint8", "-1", "launch argument 0 (uint8) value -1 is out of range [0, 255]"},
      {"uint32", "4294967296", "(uint32) value 4294967296 is out of range [0, 4294967295]"},
      {"uint64", "18446744073709551616",
       "(uint64) value 18446744073709551616 is out of range [0, 18446744073709551615]"},
      {"uint64", "-1", "(uint64) value -1 is out of range [0, 18446744073709551615]"},
      {"bool", "2", "(bool) value 2 is out of range [0, 1]"},
      {"pointer", "-1", "(pointer) value -1 is out of range [0, 18446744073709551615]"},
      {"add_workspace", "-1", "add_workspace nbytes -1 is out of range [0, 18446744073709551615]"},
      {"add_workspace", "18446744073709551616", "add_workspace nbytes 18446744073709551616 is out"},
  };
  for (size_t i = 0; i < sizeof plans / sizeof plans[0]; i++)
    limits_plan_number(plans[i].field, plans[i].value, PYOP_EPYTHON, plans[i].text);

  /* ... and so are the numbers execute hands to its context. */
  limits_numbers("malloc_output_tensor index", "18446744073709551616",
                 "output index 18446744073709551616 is out of range");
  limits_numbers("malloc_output_tensor index", "4294967296",
                 "output index 4294967296 out of range (the op has 1 output)");
  limits_numbers("shape dimension", "9223372036854775808",
                 "shape dimension 1 9223372036854775808 is out of range [0, 9223372036854775807]");
  limits_numbers("shape dimension", "-1", "shape dimension 1 -1 is out of range");
  limits_numbers("format value", "4294967296", "format value 4294967296 is out of range [0, ");
  limits_numbers("data type value", "18446744073709551619",
                 "data type value 18446744073709551619 is out of range [0, ");
  limits_numbers("malloc_workspace nbytes", "-1",
                 "malloc_workspace nbytes -1 is out of range [0, 9223372036854775807]");
  limits_numbers("malloc_workspace nbytes", "18446744073709551616",
                 "malloc_workspace nbytes 18446744073709551616 is out of range");
  limits_numbers("make_output_ref_input", "9223372036854775808",
                 "input index 9223372036854775808 is out of range");

  /* Item 6: empty outputs with huge dimensions, in every order. */
  const int64_t p20 = 3486784401LL, big = (int64_t)1 << 62;
  const int64_t shapes[][3] = {{0, p20, p20}, {p20, p20, 0}, {0, big, big}, {big, big, 0}};
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) limits_empty(shapes[i], 3);
  CHECK_RC(pyop_unload(), PYOP_OK);
}

/* The command line (host_e2e CASE [ARGS...]), for the case that takes ARGS. */
static int g_argc;
static char **g_argv;

/*
 * (l) host_e2e cycles [N_UNLOAD [N_SHUTDOWN]] (default 100 and 20; ctest
 * 1,000 and 100, in sanitizer builds 100 and 20): N_UNLOAD load / unload
 * and N_SHUTDOWN load / shutdown cycles with the real bridge, each executing
 * an op (ScaledAdd, or FakeAdd when PYOP_BRIDGE_DIR points at the fake
 * bridge); the RSS grows by at most 2 MiB (unload) and 4 MiB (shutdown)
 * after the first cycles, unless E2E_NO_RSS=1 (valgrind, sanitizers).
 */
static void case_cycles(void) {
  run_cycles(g_argc > 2 ? atoi(g_argv[2]) : 100, g_argc > 3 ? atoi(g_argv[3]) : 20);
}

/* The cases, one ctest e2e.host.<name> each: X(name, labels, timeout,
 * variants), tests/cases.h. */
#define HOST_E2E_CASES(X)                                                     \
  X(list, "e2e", 120, "")                                                     \
  X(exec, "e2e", 120, "")                                                     \
  X(badsig, "e2e", 120, "")                                                   \
  X(pyerr, "e2e", 120, "")                                                    \
  X(sysexit, "e2e", 120, "")                                                  \
  X(reload, "e2e", 120, "")                                                   \
  X(busy, "e2e", 120, "")                                                     \
  X(conflict_dirs, "e2e", 120, "")                                            \
  X(identical_dirs, "e2e", 120, "")                                           \
  X(twice_dirs, "e2e", 120, "")                                               \
  X(veto, "e2e", 120, "")                                                     \
  X(hooks, "e2e", 120, "")                                                    \
  X(hostproto, "e2e", 120, "")                                                \
  X(needload, "e2e", 120, "")                                                 \
  X(alloc_detail, "e2e", 120, "")                                             \
  X(refusals, "e2e", 120, "")                                                 \
  X(unknown, "e2e", 120, "")                                                  \
  X(contract, "e2e", 120, "")                                                 \
  X(escape_cycles, "e2e", 120, "")                                            \
  X(messages, "e2e", 120, "")                                                 \
  X(limits, "e2e", 120, "")                                                   \
  X(threads, "e2e threads", 120, "")                                          \
  X(contract_threads, "e2e threads", 120, "")                                 \
  X(cycles, "e2e threads", 300, "")

int main(int argc, char **argv) {
  static const harness_case cases[] = {HOST_E2E_CASES(HARNESS_CASE)};
  int status;
  const harness_case *c =
      harness_pick(argc, argv, 1, "CASE [ARGS...]", cases, HARNESS_N(cases), &status);
  if (c == NULL)
    return status;
  g_argc = argc;
  g_argv = argv;
  e2e_case = c->name;
  setup();
  c->run();
  teardown();
  return e2e_finish();
}
