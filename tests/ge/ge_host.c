/*
 * GE-style plugins (tests/ge/plugins) through libpyop's C API, the way a
 * GE-style engine embedding libpyop sees them: op infos with GE's names,
 * execute of both forms with GE's float32 attributes, dynamic and optional
 * inputs, the context's lifetime across calls of one instance, the NPU
 * boundary (a launch fails naming the element, the op and the NPU; the
 * plugin's other ops keep working; an op with both runs execute), in-place
 * ops with ref outputs, no outputs, dynamic outputs and Tensor attributes
 * (libpyop's op contract), and
 * load/unload/shutdown cycles without the bridge's "still referenced"
 * warning and without state carried between loads.
 *
 *   ge_host --list | CASE
 *
 * The cases are GE_HOST_CASES at the end (one ctest each, tests/cases.h);
 * the comment above each case_<name> says what it checks.
 */
#include <Python.h>

#include "e2e_util.h"
#include "../cases.h"

static PyThreadState *g_main_ts;
#define GE_N_OPS 19 /* the ops of tests/ge/plugins */
static char g_warn[16384];

static void capture_log(void *user, int level, const char *line) {
  (void)user;
  if (level <= PYOP_LOG_WARN) {
    size_t n = strlen(g_warn);
    snprintf(g_warn + n, sizeof g_warn - n, "%s\n", line);
  }
}

static void set_opp(const char *rel) {
  char *p = xasprintf("%s/%s", GE_PLUGINS, rel);
  setenv("ASCEND_CUSTOM_OPP_PATH", p, 1);
  free(p);
}

static const pyop_op_info *info_of(const char *op_type) {
  const pyop_op_info *info = NULL;
  CHECK_RC(pyop_op_get(op_type, &info), PYOP_OK);
  return info;
}

static void check_infos(void) {
  const pyop_op_info *i = info_of("GeIoKinds");
  if (i != NULL) {
    CHECK(i->n_inputs == 3 && i->inputs[0].kind == PYOP_IO_REQUIRED &&
              i->inputs[1].kind == PYOP_IO_OPTIONAL && i->inputs[2].kind == PYOP_IO_DYNAMIC,
          "GeIoKinds input kinds");
    CHECK(i->n_outputs == 2 && !strcmp(i->outputs[0].name, "output0") &&
              !strcmp(i->outputs[1].name, "output1"),
          "GeIoKinds outputs named output0, output1");
    pyop_op_info_release(i);
  }
  i = info_of("GeOutputNames");
  if (i != NULL) {
    CHECK(i->n_outputs == 2 && !strcmp(i->outputs[0].name, "output0_1"),
          "an input called output0 renames the first output: %s", i->outputs[0].name);
    pyop_op_info_release(i);
  }
  i = info_of("GeHostAndNpu");
  if (i != NULL) {
    CHECK(i->capabilities == (PYOP_CAP_INFER_META | PYOP_CAP_EXECUTE | PYOP_CAP_LAUNCH),
          "GeHostAndNpu capabilities %u", i->capabilities);
    CHECK(strstr(i->impl_key, "HostAndNpu") != NULL, "impl key %s", i->impl_key);
    pyop_op_info_release(i);
  }
}

/* GeScaledAdd: alpha arrives float32-rounded, as in GE. */
static void run_scaled_add(void) {
  pyop_op *op = NULL;
  pyop_attr a = attr_float("alpha", 0.1);
  REQUIRE_RC(pyop_op_create("GeScaledAdd", &a, 1, &op), PYOP_OK);
  float x[4] = {1, 2, 3, 4}, y[4] = {10, 20, 30, 40};
  pyop_tensor tx = f32_1d(x, 4), ty = f32_1d(y, 4);
  pyop_tensor_list in[2] = {one(&tx), one(&ty)};
  pyop_tensor desc[1];
  CHECK_RC(pyop_op_infer_meta(op, in, 2, desc, 1), PYOP_OK);
  CHECK(desc[0].dtype == PYOP_DTYPE_FLOAT32 && desc[0].ndim == 1 && desc[0].shape[0] == 4,
        "infer_meta through GE's TensorDesc");
  host_mem mem = {0};
  pyop_exec_ctx ctx = host_ctx(&mem);
  pyop_tensor out[1];
  memset(out, 0, sizeof out);
  CHECK_RC(pyop_op_execute(op, in, 2, out, 1, &ctx), PYOP_OK);
  for (int k = 0; k < 4 && out[0].data; k++) {
    float want = (float)((double)x[k] + (double)0.1f * (double)y[k]);
    CHECK(((float *)out[0].data)[k] == want, "out[%d] = %.9g, want %.9g", k,
          ((float *)out[0].data)[k], want);
  }
  host_mem_reset(&mem);
  pyop_op_destroy(op);
}

/* GeIoKinds: one optional absent, two dynamic instances. */
static void run_io_kinds(void) {
  pyop_op *op = NULL;
  REQUIRE_RC(pyop_op_create("GeIoKinds", NULL, 0, &op), PYOP_OK);
  float x[2] = {1, 2}, d0[2] = {10, 20}, d1[2] = {100, 200};
  pyop_tensor tx = f32_1d(x, 2), td[2] = {f32_1d(d0, 2), f32_1d(d1, 2)};
  pyop_tensor_list in[3] = {one(&tx), none_given(), {td, 2}};
  host_mem mem = {0};
  pyop_exec_ctx ctx = host_ctx(&mem);
  pyop_tensor out[2];
  memset(out, 0, sizeof out);
  CHECK_RC(pyop_op_execute(op, in, 3, out, 2, &ctx), PYOP_OK);
  if (out[0].data && out[1].data) {
    CHECK(((float *)out[0].data)[0] == 111 && ((float *)out[0].data)[1] == 222, "sum");
    const int32_t *c = out[1].data;
    CHECK(c[0] == 2 && c[1] == 0 && c[2] == 3 && c[3] == 2, "counts %d %d %d %d", c[0], c[1],
          c[2], c[3]);
  }
  host_mem_reset(&mem);
  pyop_op_destroy(op);
}

/* GeCtxProbe twice on one instance: what the first call kept is dead in the
 * second, the instance (cls()) is the same, the workspace is host memory. */
static void run_ctx_probe(void) {
  pyop_op *op = NULL;
  REQUIRE_RC(pyop_op_create("GeCtxProbe", NULL, 0, &op), PYOP_OK);
  float x[3] = {1, 2, 3};
  pyop_tensor tx = f32_1d(x, 3);
  pyop_tensor_list in[1] = {one(&tx)};
  host_mem mem = {0};
  pyop_exec_ctx ctx = host_ctx(&mem);
  for (int call = 1; call <= 2; call++) {
    pyop_tensor out[1];
    memset(out, 0, sizeof out);
    CHECK_RC(pyop_op_execute(op, in, 1, out, 1, &ctx), PYOP_OK);
    const int64_t *r = out[0].data;
    if (r != NULL)
      CHECK(r[0] == (call == 1 ? 0 : 7) && r[1] == call && r[2] == 3 && r[3] == 9 &&
                r[4] == 0x5A && r[5] == 1,
            "call %d: expired %lld, calls %lld, size %lld, dtype %lld, ws %lld", call,
            (long long)r[0], (long long)r[1], (long long)r[2], (long long)r[3],
            (long long)r[4]);
    host_mem_reset(&mem);
  }
  pyop_op_destroy(op);
}

/* GeDirectProbe twice on one instance (issue 21 item 6): the kernel runs
 * with no GE Python frame above it, the context's input is the argument
 * itself, and a description the first call changed is the host's again in
 * the second. */
static void run_direct_probe(void) {
  pyop_op *op = NULL;
  REQUIRE_RC(pyop_op_create("GeDirectProbe", NULL, 0, &op), PYOP_OK);
  float x[3] = {1, 2, 3};
  pyop_tensor tx = f32_1d(x, 3);
  pyop_tensor_list in[1] = {one(&tx)};
  host_mem mem = {0};
  pyop_exec_ctx ctx = host_ctx(&mem);
  for (int call = 1; call <= 2; call++) {
    pyop_tensor out[1];
    memset(out, 0, sizeof out);
    CHECK_RC(pyop_op_execute(op, in, 1, out, 1, &ctx), PYOP_OK);
    const int64_t *r = out[0].data;
    if (r != NULL)
      CHECK(r[0] == 0 && r[1] == 1 && r[2] == 1003 && r[3] == 1,
            "call %d: GE frames above the kernel %lld, same input view %lld, dims %lld, "
            "format ND %lld", call, (long long)r[0], (long long)r[1], (long long)r[2],
            (long long)r[3]);
    host_mem_reset(&mem);
  }
  pyop_op_destroy(op);
}

static void run_npu_boundary(void) {
  float x[2] = {1, 2}, y[2] = {3, 4}, z[2] = {0, 0};
  pyop_tensor tx = f32_1d(x, 2), ty = f32_1d(y, 2), tz = f32_1d(z, 2);
  pyop_tensor_list in[2] = {one(&tx), one(&ty)};
  pyop_op *op = NULL;
  REQUIRE_RC(pyop_op_create("GeNpuOnly", NULL, 0, &op), PYOP_OK);
  CHECK(pyop_op_capabilities(op) == (PYOP_CAP_INFER_META | PYOP_CAP_LAUNCH), "caps");
  host_mem mem = {0};
  pyop_exec_ctx ctx = host_ctx(&mem);
  int rc = pyop_op_launch(op, in, 2, &tz, 1, &ctx);
  CHECK(rc != PYOP_OK, "an NPU launch cannot succeed on a host");
  CHECK_ERR_HAS("NotImplementedError");
  CHECK_ERR_HAS("AnnotatedArgsContext.add_launch");
  CHECK_ERR_HAS("add_custom_kernel");
  CHECK_ERR_HAS("'GeNpuOnly'");
  CHECK_ERR_HAS("needs an NPU");
  CHECK(pyop_op_declare_launch_args(op, in, 2, &tz, 1) != PYOP_OK, "declare fails too");
  pyop_op_destroy(op);

  /* Both: execute runs. */
  REQUIRE_RC(pyop_op_create("GeHostAndNpu", NULL, 0, &op), PYOP_OK);
  pyop_tensor out[1];
  memset(out, 0, sizeof out);
  CHECK_RC(pyop_op_execute(op, in, 2, out, 1, &ctx), PYOP_OK);
  CHECK(out[0].data && ((float *)out[0].data)[0] == 3 && ((float *)out[0].data)[1] == 8,
        "GeHostAndNpu execute");
  host_mem_reset(&mem);
  pyop_op_destroy(op);

  /* pyACL: fails where it is imported, naming it and the op. */
  REQUIRE_RC(pyop_op_create("GeAcl", NULL, 0, &op), PYOP_OK);
  pyop_tensor_list in1[1] = {one(&tx)};
  memset(out, 0, sizeof out);
  CHECK_RC(pyop_op_execute(op, in1, 1, out, 1, &ctx), PYOP_EPYTHON);
  CHECK_ERR_HAS("'acl'");
  CHECK_ERR_HAS("op 'GeAcl'");
  CHECK_ERR_HAS("needs an NPU");
  host_mem_reset(&mem);
  pyop_op_destroy(op);

  /* The plugin's other ops still work. */
  run_scaled_add();
}

/* In place, no outputs, dynamic outputs, a Tensor attribute (op contract). */
static void run_contract(void) {
  host_mem mem = {0};
  pyop_exec_ctx ctx = host_ctx(&mem);
  pyop_op *op = NULL;
  float x[3] = {1, 2, 3}, y[3] = {10, 20, 30};
  pyop_tensor tx = f32_1d(x, 3), ty = f32_1d(y, 3);
  pyop_tensor_list in[2] = {one(&tx), one(&ty)};
  REQUIRE_RC(pyop_op_create("GeAddInto", NULL, 0, &op), PYOP_OK);
  const pyop_op_info *info = pyop_op_get_info(op);
  CHECK(info->n_outputs == 1 && !strcmp(info->outputs[0].name, "x"), "ref output named x");
  CHECK(PYOP_OP_INFO_HAS(info, output_alias) && info->output_alias &&
            info->output_alias[0] == 0 && info->input_flags &&
            (info->input_flags[0] & PYOP_INPUT_MUTATED) && !info->input_flags[1],
        "GeAddInto: x mutated, output 0 aliases input 0");
  pyop_tensor out[1];
  memset(out, 0, sizeof out);
  CHECK_RC(pyop_op_execute(op, in, 2, out, 1, &ctx), PYOP_OK);
  CHECK(out[0].data == (void *)x, "the ref output is x's buffer");
  CHECK(x[0] == 11 && x[1] == 22 && x[2] == 33, "x += y in place: %g %g %g", x[0], x[1], x[2]);
  host_mem_reset(&mem);
  pyop_op_destroy(op);

  REQUIRE_RC(pyop_op_create("GeNoOutputs", NULL, 0, &op), PYOP_OK);
  CHECK(pyop_op_get_info(op)->n_outputs == 0, "no outputs");
  CHECK_RC(pyop_op_execute(op, in, 1, NULL, 0, &ctx), PYOP_OK);
  pyop_op_destroy(op);

  /* A dynamic output before a required one: GE's flattened indices. */
  float v[6] = {1, 2, 3, 4, 5, 6};
  pyop_tensor tv = f32_1d(v, 6);
  pyop_tensor_list vin[1] = {one(&tv)};
  pyop_attr n3 = attr_int("n", 3);
  REQUIRE_RC(pyop_op_create("GeSplitSum", &n3, 1, &op), PYOP_OK);
  pyop_tensor parts[4], total[1];
  pyop_output_list outs[2] = {{parts, 4, 0}, {total, 1, 0}};
  memset(parts, 0, sizeof parts);
  memset(total, 0, sizeof total);
  CHECK_RC(pyop_op_execute_list(op, vin, 1, outs, 2, &ctx), PYOP_OK);
  CHECK(outs[0].count == 3 && outs[1].count == 1, "counts %zu %zu", outs[0].count,
        outs[1].count);
  for (size_t k = 0; k < outs[0].count && k < 3; k++)
    CHECK(parts[k].data && ((float *)parts[k].data)[1] == v[2 * k + 1], "part %zu", k);
  CHECK(total[0].data && ((float *)total[0].data)[0] == 21, "total");
  host_mem_reset(&mem);
  /* A host whose graph fixes the instance count (pyop_op_infer_meta_expect):
   * infer_meta returning another is GE's "instance count mismatch". */
  pyop_output_list want[2] = {{parts, 4, 2}, {total, 1, 7}}; /* 7: not read */
  CHECK_RC(pyop_op_infer_meta_expect(op, vin, 1, want, 2), PYOP_ECONTRACT);
  CHECK_ERR_HAS("instance count mismatch: expected 2, got 3");
  CHECK_ERR_HAS("dynamic output 0 \"output0\": instance count mismatch: the host states 2");
  want[0].count = 3;
  CHECK_RC(pyop_op_infer_meta_expect(op, vin, 1, want, 2), PYOP_OK);
  CHECK(want[0].count == 3 && want[1].count == 1 && parts[2].shape[0] == 2,
        "stated and returned: %zu %zu", want[0].count, want[1].count);
  want[0].count = 5; /* more than its room */
  CHECK_RC(pyop_op_infer_meta_expect(op, vin, 1, want, 2), PYOP_EINVAL);
  CHECK_ERR_HAS("5 tensors stated, room was given for 4");
  want[0].capacity = want[0].count = 2; /* infer_meta's 3 do not fit either */
  CHECK_RC(pyop_op_infer_meta_expect(op, vin, 1, want, 2), PYOP_ECONTRACT);
  CHECK_ERR_HAS("expected 2, got 3");
  pyop_op_destroy(op);

  /* A Tensor attribute. */
  float table[2] = {10, 20};
  pyop_tensor tt = f32_1d(table, 2);
  pyop_attr ta;
  memset(&ta, 0, sizeof ta);
  ta.name = "table";
  ta.value.type = PYOP_ATTR_TENSOR;
  ta.value.u.tensor = &tt;
  REQUIRE_RC(pyop_op_create("GeAddTable", &ta, 1, &op), PYOP_OK);
  table[0] = -1; /* copied at create */
  memset(out, 0, sizeof out);
  pyop_tensor_list xin[1] = {one(&ty)};
  CHECK_RC(pyop_op_execute(op, xin, 1, out, 1, &ctx), PYOP_OK);
  CHECK(out[0].data && ((float *)out[0].data)[0] == 20 && ((float *)out[0].data)[1] == 40,
        "table added");
  host_mem_reset(&mem);
  pyop_op_destroy(op);
}

static void check_no_ge_modules(const char *when) {
  PyGILState_STATE g = PyGILState_Ensure();
  int rc = PyRun_SimpleString(
      "import sys\n"
      "left = [m for m in sys.modules if m == 'ge' or m.startswith('ge.')]\n"
      "assert not left, left\n"
      "assert not [f for f in sys.meta_path if type(f).__name__ == 'AclFinder' or\n"
      "            getattr(f, '__name__', '') == 'AclFinder'], sys.meta_path\n");
  PyGILState_Release(g);
  CHECK(rc == 0, "ge modules left %s", when);
}

/*
 * Everything the first paragraph of this file lists, over three loads (an unload, a
 * shutdown, an unload): each load registers the same GE ops again (no state
 * kept), and no "still referenced" warning; also under valgrind
 * (ge.valgrind.run).
 */
static void case_run(void) {
  pyop_host_hooks h = PYOP_HOST_HOOKS_INIT;
  h.log = capture_log;
  REQUIRE_RC(pyop_set_host_hooks(&h), PYOP_OK);
  set_opp("");
  for (int round = 0; round < 3; round++) {
    /* Each load registers the same GE ops again: no state is kept. */
    REQUIRE_RC(pyop_load(), PYOP_OK);
    size_t n = 0;
    char *list = op_list_str(&n);
    CHECK(n == GE_N_OPS, "round %d: %zu ops: %s", round, n, list);
    free(list);
    check_infos();
    run_scaled_add();
    run_io_kinds();
    run_ctx_probe();
    run_direct_probe();
    run_npu_boundary();
    run_contract();
    if (round == 1) {
      CHECK_RC(pyop_shutdown(), PYOP_OK);
      check_no_ge_modules("after pyop_shutdown");
    } else {
      CHECK_RC(pyop_unload(), PYOP_OK);
    }
  }
  CHECK_RC(pyop_shutdown(), PYOP_OK);
  check_no_ge_modules("after the last pyop_shutdown");
  CHECK(strstr(g_warn, "still referenced") == NULL, "warnings: %s", g_warn);
  CHECK_RC(pyop_set_host_hooks(NULL), PYOP_OK);
}

/*
 * A real `ge` (a module from /opt/cann) imported before the load is kept:
 * the plugin registers through it (libpyop registers nothing), a warning
 * says it was already imported and not replaced, and it is still the host's
 * after pyop_shutdown.
 */
static void case_foreign(void) {
  PyGILState_STATE g = PyGILState_Ensure();
  int rc = PyRun_SimpleString(
      "import sys, types\n"
      "ge = types.ModuleType('ge')\n"
      "ge.__file__ = '/opt/cann/python/ge/__init__.py'\n"
      "co = types.ModuleType('ge.custom_op')\n"
      "co.seen = []\n"
      "def register_op(*, op_type, mutates_args=()):\n"
      "    co.seen.append(op_type)\n"
      "    return lambda f: f\n"
      "co.register_op = register_op\n"
      "ge.custom_op = co\n"
      "sys.modules['ge'] = ge\n"
      "sys.modules['ge.custom_op'] = co\n");
  PyGILState_Release(g);
  REQUIRE(rc == 0, "fake ge");
  pyop_host_hooks h = PYOP_HOST_HOOKS_INIT;
  h.log = capture_log;
  REQUIRE_RC(pyop_set_host_hooks(&h), PYOP_OK);
  char *dir = make_temp_dir("ge_foreign");
  char *plugin = path_join(dir, "real_ge.py");
  write_file(plugin, "from ge.custom_op import register_op\n"
                     "@register_op(op_type='RealGe')\n"
                     "def f(x):\n"
                     "    return x\n");
  setenv("ASCEND_CUSTOM_OPP_PATH", plugin, 1);
  CHECK_RC(pyop_load(), PYOP_OK);
  size_t n = 0;
  char *list = op_list_str(&n);
  CHECK(n == 0, "libpyop registered %s", list);
  free(list);
  CHECK(strstr(g_warn, "already imported (/opt/cann/python/ge/__init__.py)") != NULL &&
            strstr(g_warn, "not replaced") != NULL,
        "log: %s", g_warn);
  CHECK_RC(pyop_shutdown(), PYOP_OK);
  g = PyGILState_Ensure();
  rc = PyRun_SimpleString("import sys\n"
                          "assert sys.modules['ge'].__file__.startswith('/opt/cann')\n"
                          "assert sys.modules['ge.custom_op'].seen == ['RealGe']\n");
  PyGILState_Release(g);
  CHECK(rc == 0, "the real ge was replaced or not used");
  CHECK_RC(pyop_set_host_hooks(NULL), PYOP_OK);
  remove_tree(dir);
  free(plugin);
  free(dir);
}

typedef struct thread_arg {
  pyop_op *shared;
  int id;
  int iterations;
} thread_arg;

static void *exec_thread(void *p) {
  thread_arg *a = p;
  pyop_op *own = NULL;
  CHECK_RC(pyop_op_create("GeIoKinds", NULL, 0, &own), PYOP_OK);
  float x[2] = {(float)a->id, 1}, d0[2] = {10, 20}, y[2] = {1, 2};
  pyop_tensor tx = f32_1d(x, 2), td = f32_1d(d0, 2), ty = f32_1d(y, 2);
  pyop_tensor_list io_in[3] = {one(&tx), none_given(), {&td, 1}};
  pyop_tensor_list sa_in[2] = {one(&tx), one(&ty)};
  host_mem mem = {0};
  pyop_exec_ctx ctx = host_ctx(&mem);
  for (int k = 0; k < a->iterations; k++) {
    pyop_tensor out[2];
    memset(out, 0, sizeof out);
    int rc = pyop_op_execute(a->shared, sa_in, 2, out, 1, &ctx);
    CHECK(rc == PYOP_OK && out[0].data && ((float *)out[0].data)[0] == (float)a->id + 2.0f,
          "thread %d: shared GeScaledAdd (%s)", a->id, pyop_status_name(rc));
    host_mem_reset(&mem);
    memset(out, 0, sizeof out);
    rc = own ? pyop_op_execute(own, io_in, 3, out, 2, &ctx) : PYOP_EINVAL;
    CHECK(rc == PYOP_OK && out[0].data && ((float *)out[0].data)[0] == (float)a->id + 10.0f &&
              ((int32_t *)out[1].data)[0] == 1,
          "thread %d: own GeIoKinds (%s)", a->id, pyop_status_name(rc));
    host_mem_reset(&mem);
  }
  if (own)
    pyop_op_destroy(own);
  return NULL;
}

/*
 * 4 host threads execute GE ops at once, on one shared instance and on
 * their own: each call sees its own context (get_execute_ctx is per
 * thread).
 */
static void case_threads(void) {
  set_opp("ge_ops.py");
  REQUIRE_RC(pyop_load(), PYOP_OK);
  pyop_op *shared = NULL;
  pyop_attr alpha = attr_float("alpha", 2.0);
  REQUIRE_RC(pyop_op_create("GeScaledAdd", &alpha, 1, &shared), PYOP_OK);
  pthread_t th[4];
  thread_arg args[4];
  for (int i = 0; i < 4; i++) {
    args[i] = (thread_arg){shared, i, 200};
    REQUIRE(pthread_create(&th[i], NULL, exec_thread, &args[i]) == 0, "pthread_create");
  }
  for (int i = 0; i < 4; i++)
    pthread_join(th[i], NULL);
  pyop_op_destroy(shared);
  CHECK_RC(pyop_unload(), PYOP_OK);
}

/* ------------------------------------------------ GE's newest API (next) */

static void set_next(const char *rel) {
  char *p = xasprintf("%s/%s", GE_NEXT, rel);
  setenv("ASCEND_CUSTOM_OPP_PATH", p, 1);
  free(p);
}

/* Executes op_type on float32[4] inputs x (and y when n_in == 2) with one
 * output; returns the status, out[0] in *res. */
static int exec4(pyop_op *op, const float *x, const float *y, size_t n_in, float *res) {
  pyop_tensor tx = f32_1d((float *)x, 4), ty = f32_1d((float *)y, 4);
  pyop_tensor_list in[2] = {one(&tx), one(&ty)};
  host_mem mem = {0};
  pyop_exec_ctx ctx = host_ctx(&mem);
  pyop_tensor out[1];
  memset(out, 0, sizeof out);
  int rc = pyop_op_execute(op, in, n_in, out, 1, &ctx);
  if (rc == PYOP_OK && out[0].data)
    memcpy(res, out[0].data, 4 * sizeof(float));
  host_mem_reset(&mem);
  return rc;
}

static void run_next_kernels(void) {
  const float x[4] = {1, 2, 3, 4}, y[4] = {10, 20, 30, 40};
  float r[4] = {0};
  pyop_op *op = NULL;
  REQUIRE_RC(pyop_op_create("GeNextBoth", NULL, 0, &op), PYOP_OK);
  CHECK_RC(exec4(op, x, y, 2, r), PYOP_OK);
  CHECK(r[0] == 11 && r[3] == 44, "the HOST kernel runs when there are both: %g %g", r[0],
        r[3]);
  pyop_op_destroy(op);
  pyop_attr k = attr_int("k", 3);
  REQUIRE_RC(pyop_op_create("GeNextDeviceOnly", &k, 1, &op), PYOP_OK);
  CHECK_RC(exec4(op, x, NULL, 1, r), PYOP_OK);
  CHECK(r[0] == 3 && r[3] == 12, "the DEVICE kernel runs on the host: %g %g", r[0], r[3]);
  pyop_op_destroy(op);
  REQUIRE_RC(pyop_op_create("GeNextLegacy", NULL, 0, &op), PYOP_OK);
  CHECK_RC(exec4(op, x, NULL, 1, r), PYOP_OK);
  CHECK(r[0] == 1.5f && r[3] == 4.5f, "legacy execute(ctx): %g %g", r[0], r[3]);
  pyop_op_destroy(op);
  REQUIRE_RC(pyop_op_create("GeNextNoAlloc", NULL, 0, &op), PYOP_OK);
  CHECK_RC(exec4(op, x, y, 2, r), PYOP_ECONTRACT);
  CHECK_ERR_HAS("GeNextNoAlloc");
  pyop_op_destroy(op);
  pyop_tensor tx = f32_1d((float *)x, 4);
  pyop_tensor_list in[1] = {one(&tx)};
  host_mem mem = {0};
  pyop_exec_ctx ctx = host_ctx(&mem);
  float buf[4] = {1, 2, 3, 4};
  pyop_tensor tb = f32_1d(buf, 4);
  pyop_tensor_list rin[1] = {one(&tb)};
  pyop_tensor rout[1];
  memset(rout, 0, sizeof rout);
  REQUIRE_RC(pyop_op_create("GeNextHostRef", NULL, 0, &op), PYOP_OK);
  CHECK_RC(pyop_op_execute(op, rin, 1, rout, 1, &ctx), PYOP_OK);
  CHECK(rout[0].data == buf && buf[0] == 10 && buf[3] == 40,
        "HOST kernel, ref output = the input's buffer: %g %g", buf[0], buf[3]);
  host_mem_reset(&mem);
  pyop_op_destroy(op);
  REQUIRE_RC(pyop_op_create("GeNextHostTwice", NULL, 0, &op), PYOP_OK);
  CHECK_RC(exec4(op, x, y, 2, r), PYOP_OK);
  CHECK(r[0] == 2 && r[3] == 5, "HOST kernel, output 0 asked for twice: %g %g", r[0], r[3]);
  pyop_op_destroy(op);
  REQUIRE_RC(pyop_op_create("GeNextReturns", NULL, 0, &op), PYOP_OK);
  CHECK_RC(pyop_op_execute(op, in, 1, NULL, 0, &ctx), PYOP_EPYTHON);
  CHECK_ERR_HAS("execute must return None");
  host_mem_reset(&mem);
  pyop_op_destroy(op);
}

/* compile on one op instance leaves its kernel on the op type's one
 * implementation object; execute on another instance reads it. */
static void run_next_compile(void) {
  const float x[4] = {1, 2, 3, 4};
  float r[4] = {0};
  pyop_op *a = NULL, *b = NULL;
  REQUIRE_RC(pyop_op_create("GeNextCompiled", NULL, 0, &a), PYOP_OK);
  REQUIRE_RC(pyop_op_create("GeNextCompiled", NULL, 0, &b), PYOP_OK);
  pyop_tensor d = f32_1d(NULL, 4), od = f32_1d(NULL, 4);
  pyop_tensor_list in[1] = {one(&d)};
  void *art = NULL;
  size_t len = 0;
  CHECK_RC(pyop_op_compile(a, in, 1, &od, 1, &art, &len), PYOP_OK);
  pyop_free(art);
  CHECK_RC(exec4(b, x, NULL, 1, r), PYOP_OK);
  CHECK(r[0] == 1, "execute on another instance sees compile's kernel: %g", r[0]);
  pyop_op_destroy(a);
  pyop_op_destroy(b);
}

/* ------------------------------------ implementation-only plugins (§D) */

static char *dir_of(const char *rel) { return xasprintf("%s/../%s", GE_PLUGINS, rel); }

/* The host's REG_OPs of tests/ge/impl_only/ge_add_custom.py: which = 'a'
 * (GeAddCustom), 'm' (GeMulCustom), 'l' (GeLegacyHost). */
static void register_reg_op(char which) {
  pyop_io_info ins[2] = {{"x1", PYOP_IO_REQUIRED}, {"x2", PYOP_IO_REQUIRED}};
  pyop_io_info outs[1] = {{"y", PYOP_IO_REQUIRED}};
  pyop_attr_info alpha[1] = {{"alpha", PYOP_ATTR_FLOAT, false,
                              {.type = PYOP_ATTR_FLOAT, .u.f = 1.0}}};
  pyop_attr_info k[1] = {{"k", PYOP_ATTR_INT, true, {.type = PYOP_ATTR_INT}}};
  pyop_op_info info = {sizeof info, "GeAddCustom", NULL, NULL, NULL, NULL, ins, 2,
                       outs, 1, alpha, 1, 0};
  if (which == 'm') {
    info.op_type = "GeMulCustom";
    info.attrs = NULL;
    info.n_attrs = 0;
  } else if (which == 'l') {
    info.op_type = "GeLegacyHost";
    info.n_inputs = 1;
    info.attrs = k;
  }
  REQUIRE_RC(pyop_register_host_prototype(&info), PYOP_OK);
}

static void run_add(void) {
  const float x[4] = {1, 2, 3, 4}, y[4] = {10, 20, 30, 40};
  float r[4] = {0};
  pyop_op *op = NULL;
  pyop_attr a = attr_float("alpha", 0.5);
  REQUIRE_RC(pyop_op_create("GeAddCustom", &a, 1, &op), PYOP_OK);
  CHECK_RC(exec4(op, x, y, 2, r), PYOP_OK);
  CHECK(r[0] == 6 && r[3] == 24, "x1 + alpha * x2: %g %g", r[0], r[3]);
  pyop_op_destroy(op);
  REQUIRE_RC(pyop_op_create("GeAddCustom", NULL, 0, &op), PYOP_OK); /* REG_OP's default */
  CHECK_RC(exec4(op, x, y, 2, r), PYOP_OK);
  CHECK(r[0] == 11, "alpha defaults to 1: %g", r[0]);
  pyop_op_destroy(op);
}

static void run_mul_and_legacy(void) {
  const float x[4] = {1, 2, 3, 4}, y[4] = {10, 20, 30, 40};
  float r[4] = {0};
  pyop_op *op = NULL;
  REQUIRE_RC(pyop_op_create("GeMulCustom", NULL, 0, &op), PYOP_OK);
  CHECK_RC(exec4(op, x, y, 2, r), PYOP_OK);
  CHECK(r[0] == 10 && r[3] == 160, "x1 * x2: %g %g", r[0], r[3]);
  pyop_op_destroy(op);
  pyop_attr k = attr_int("k", 3);
  REQUIRE_RC(pyop_op_create("GeLegacyHost", &k, 1, &op), PYOP_OK);
  CHECK_RC(exec4(op, x, NULL, 1, r), PYOP_OK);
  CHECK(r[0] == 3 && r[3] == 12, "legacy execute(ctx) with the host's attribute: %g %g", r[0],
        r[3]);
  pyop_op_destroy(op);
}

/*
 * An implementation-only plugin (tests/ge/impl_only) bound to prototypes
 * the host registers (GE's REG_OP), before and after pyop_load; a legacy
 * execute(ctx) waiting for its prototype; a mismatch refused at the load
 * (before) or at pyop_op_create (after), naming op and file:line
 * (docs/ge-plugins.md, "Implementation-only plugins and the host's REG_OPs");
 * also under valgrind (ge.valgrind.impl_only).
 */
static void case_impl_only(void) {
  char *good = dir_of("impl_only"), *bad = dir_of("impl_only_bad");
  pyop_op *op = NULL;
  /* 1. A mismatch with a prototype the host registers after the load:
   * refused at pyop_op_create, naming the op, the mismatch, file:line. */
  setenv("ASCEND_CUSTOM_OPP_PATH", bad, 1);
  REQUIRE_RC(pyop_load(), PYOP_OK);
  register_reg_op('a');
  CHECK_RC(pyop_op_create("GeAddCustom", NULL, 0, &op), PYOP_EDESCRIPTOR);
  CHECK_ERR_HAS("GeAddCustom");
  CHECK_ERR_HAS("actual attr name 'beta'");
  CHECK_ERR_HAS("ge_add_mismatch.py:");
  show_error("a mismatch with a host prototype, at pyop_op_create");
  CHECK_RC(pyop_unload(), PYOP_OK);
  /* 2. ... and with one registered before the load: the load fails, as in GE. */
  CHECK_RC(pyop_load(), PYOP_EPLUGIN);
  CHECK_ERR_HAS("invalid execute signature for op type GeAddCustom");
  CHECK_ERR_HAS("expected attr name 'alpha'");
  CHECK_ERR_HAS("actual attr name 'beta'");
  CHECK_ERR_HAS("ge_add_mismatch.py:");
  show_error("a mismatch with a host prototype, at the load");
  /* 3. The impl-only plugin: GeAddCustom's prototype came before the load,
   * GeMulCustom's and GeLegacyHost's come after (until then they wait, and
   * creating one says what is missing). */
  setenv("ASCEND_CUSTOM_OPP_PATH", good, 1);
  REQUIRE_RC(pyop_load(), PYOP_OK);
  run_add();
  CHECK_RC(pyop_op_create("GeMulCustom", NULL, 0, &op), PYOP_ENOENT);
  CHECK_ERR_HAS("op \"GeMulCustom\": its implementation (");
  CHECK_ERR_HAS("ge_add_custom.py:");
  CHECK_ERR_HAS("has no prototype: register one with pyop_register_host_prototype");
  CHECK_ERR_HAS("fails there with \"canonical IR not found\""); /* GE's words too */
  show_error("an implementation without a prototype");
  CHECK_RC(pyop_op_create("GeLegacyHost", NULL, 0, &op), PYOP_ENOENT);
  CHECK_ERR_HAS("op \"GeLegacyHost\": its implementation (");
  register_reg_op('m');
  register_reg_op('l');
  run_mul_and_legacy();
  CHECK_RC(pyop_unload(), PYOP_OK);
  /* 4. Host prototypes are kept: a new load binds to all of them. */
  CHECK_RC(pyop_shutdown(), PYOP_OK);
  REQUIRE_RC(pyop_load(), PYOP_OK);
  run_add();
  run_mul_and_legacy();
  CHECK_RC(pyop_unload(), PYOP_OK);
  free(good);
  free(bad);
}

/*
 * GE's newest API (tests/ge/next;
 * docs/ge-plugins.md, "What runs on a host, what is accepted, what needs an NPU"),
 * over two loads: the HOST kernel preferred, a DEVICE-only kernel run on the host, compile (read-only
 * views, options, the platform refused) leaving its kernel on the one
 * instance of the op type, the legacy execute(ctx), unallocated outputs
 * refused (PYOP_ECONTRACT), execute returning a value.
 */
static void case_next(void) {
  set_next("ge_next_ops.py");
  for (int round = 0; round < 2; round++) {
    REQUIRE_RC(pyop_load(), PYOP_OK);
    run_next_kernels();
    run_next_compile();
    CHECK_RC(pyop_unload(), PYOP_OK);
  }
}

/* The cases, one ctest ge.host.<name> each: X(name, labels, timeout,
 * variants), tests/cases.h; "valgrind": also ge.valgrind.<name>
 * (tests/ge/CMakeLists.txt). */
#define GE_HOST_CASES(X)                                                      \
  X(run, "ge e2e", 300, "valgrind")                                           \
  X(foreign, "ge e2e", 300, "")                                               \
  X(next, "ge e2e", 300, "")                                                  \
  X(impl_only, "ge e2e", 300, "valgrind")                                     \
  X(threads, "ge e2e threads", 300, "")

int main(int argc, char **argv) {
  static const harness_case cases[] = {GE_HOST_CASES(HARNESS_CASE)};
  int status;
  const harness_case *c = harness_pick(argc, argv, 1, "CASE", cases, HARNESS_N(cases), &status);
  if (c == NULL)
    return status;
  e2e_case = c->name;
  Py_InitializeEx(0);
  g_main_ts = PyEval_SaveThread();
  c->run();
  int rc = pyop_shutdown();
  CHECK(rc == PYOP_OK, "final pyop_shutdown: %s", pyop_status_name(rc));
  PyEval_RestoreThread(g_main_ts);
  CHECK(Py_FinalizeEx() == 0, "Py_FinalizeEx failed");
  return e2e_finish();
}
