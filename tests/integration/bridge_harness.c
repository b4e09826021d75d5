/*
 * Drives the real bridge (libpyop_bridge.so) directly, as libpyop will: a
 * fake loader services table, a recording registrar, and op calls through
 * the descriptor callbacks on host buffers.
 *
 *   bridge_harness --list | <artifact_dir> <plugins_dir> CASE|all|bench
 *
 * The cases are BRIDGE_HARNESS_CASES at the end (one ctest each,
 * tests/cases.h); the comment above each case_<name> says what it checks.
 * "all" runs those marked "valgrind" in one process (the valgrind test),
 * "bench" is informational.
 *
 * The harness is a C host that links libpython (like an embedding engine)
 * and initialises Python itself, except in the cases marked
 * "no_host_python" (start: the bridge starts an isolated Python; notinit).
 * The cases marked "lanes" configure 2 interpreter lanes and end the
 * process without finalizing Python (lane_services).
 * It does not include Python.h: the few embedding calls it makes are
 * declared below.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "pyop/bridge_abi.h"
#include "../cases.h"

/* The embedding API this host uses (from libpython). */
void Py_InitializeEx(int initsigs);
int Py_IsInitialized(void);
int Py_FinalizeEx(void);
void *PyEval_SaveThread(void);
void PyEval_RestoreThread(void *tstate);
int PyGILState_Ensure(void);
void PyGILState_Release(int state);
int PyRun_SimpleString(const char *code);
const char *Py_GetVersion(void);

/* ------------------------------------------------------------ checks */

static const char *g_case = "";
static int g_checks;

#define CHECK(cond, ...)                                                      \
  do {                                                                        \
    g_checks++;                                                               \
    if (!(cond)) {                                                            \
      fprintf(stderr, "FAIL %s:%d [%s]: %s: ", __FILE__, __LINE__, g_case,    \
              #cond);                                                         \
      fprintf(stderr, __VA_ARGS__);                                           \
      fprintf(stderr, "\n  last error (%d): %s\n", g_err_status, g_err);      \
      exit(1);                                                                \
    }                                                                         \
  } while (0)

#define CHECK_OK(expr) CHECK((expr) == PYOP_OK, "%s", #expr)

/* --------------------------------------------------------- services */

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static char g_err[65536];
static int g_err_status;
static int g_set_error_calls;

static void svc_set_error(int status, pyop_str msg) {
  pthread_mutex_lock(&g_lock);
  size_t n = msg.len < sizeof g_err - 1 ? msg.len : sizeof g_err - 1;
  memcpy(g_err, msg.data, n);
  g_err[n] = '\0';
  g_err_status = status;
  g_set_error_calls++;
  pthread_mutex_unlock(&g_lock);
}

/* Times the bridge said it must stay mapped (a Tensor or context outlived
 * its package): expected only after the escape case. */
static int g_pin_warnings;
/* What interpreter_status answered when that warning was logged (the
 * bridge's Python still runs then: its shutdown removes the exit watch
 * disarmed). */
static int g_pin_interp_status;

static const pyop_bridge_api *api; /* the bridge's table (open_bridge) */

/* The host's main thread state, saved after Py_InitializeEx (main). */
static void *g_main_ts;

/* The last line logged and its level. */
static char g_log[512];
static int g_log_level = -1;

/* Every line logged since log_all_clear() (the loadstate and start cases). */
static char g_log_all[65536];
static size_t g_log_all_len;

static void log_all_clear(void) {
  g_log_all[0] = '\0';
  g_log_all_len = 0;
}

static void svc_log(int level, pyop_str msg) {
  fprintf(stderr, "bridge log %d: %.*s\n", level, (int)msg.len, msg.data);
  snprintf(g_log, sizeof g_log, "%.*s", (int)msg.len, msg.data);
  pthread_mutex_lock(&g_lock); /* the GIL watch logs from its own thread */
  if (g_log_all_len < sizeof g_log_all - 1) {
    int w = snprintf(g_log_all + g_log_all_len, sizeof g_log_all - g_log_all_len, "%.*s\n",
                     (int)msg.len, msg.data);
    if (w > 0)
      g_log_all_len += (size_t)w;
    if (g_log_all_len > sizeof g_log_all - 1)
      g_log_all_len = sizeof g_log_all - 1;
  }
  pthread_mutex_unlock(&g_lock);
  g_log_level = level;
  if (msg.data != NULL && memmem(msg.data, msg.len, "still referenced at shutdown", 28) != NULL) {
    g_pin_warnings++;
    g_pin_interp_status = api->interpreter_status();
  }
}

static const pyop_loader_services g_services = {sizeof(pyop_loader_services), svc_set_error,
                                                svc_log};

static void clear_error(void) {
  g_err[0] = '\0';
  g_err_status = 0;
}

static bool err_has(const char *needle) { return strstr(g_err, needle) != NULL; }

/* Whether the last error starts with parts[0] and holds every later part
 * after the one before it (NULL-terminated): a message says what failed
 * first, then the Python exception that made it fail. */
static bool err_in_order(const char *const *parts) {
  const char *at = g_err;
  for (size_t i = 0; parts[i] != NULL; i++) {
    const char *p = strstr(at, parts[i]);
    if (p == NULL || (i == 0 && p != g_err))
      return false;
    at = p + strlen(parts[i]);
  }
  return true;
}

/* -------------------------------------------------------- registrar */

typedef struct rec_op {
  bool is_impl;
  char *op_type, *key, *file;
  uint32_t line, caps;
  size_t n_inputs, n_outputs, n_attrs;
  char *inputs[16];
  int input_kinds[16];
  char *outputs[16];
  char *attrs[32]; /* "name:type:required:default" */
  void *ctx;
  const pyop_op_callbacks *cb;
  size_t view_size;        /* the view's struct_size */
  bool in_dtypes, out_dtypes; /* the ABI 1.7 arrays were given (non-NULL) */
  uint64_t in_masks[16], out_masks[16];
  char *digest; /* the view's source_digest (NULL: none given) */
  int output_kinds[16];
  bool has_flags, has_alias; /* input_flags / output_alias given (non-NULL) */
  uint32_t in_flags[16];
  int32_t alias[16];
  uint32_t lanes; /* the view's lanes (ABI 1.6) */
} rec_op;

typedef struct recorder {
  rec_op ops[64];
  size_t n;
  int fail_at;     /* fail the n-th add (0-based), -1 never */
  int fail_status; /* what that add returns: PYOP_ECONFLICT when 0 */
  int adds;
} recorder;

static char *sdup(pyop_str s) { return strndup(s.data ? s.data : "", s.len); }

static void render_value(char *buf, size_t cap, const pyop_attr_value *v) {
  size_t p = 0;
#define OUT(...) p += (size_t)snprintf(buf + p, p < cap ? cap - p : 0, __VA_ARGS__)
  switch (v->type) {
  case PYOP_ATTR_INT: OUT("%lld", (long long)v->u.i); break;
  case PYOP_ATTR_FLOAT: OUT("%g", v->u.f); break;
  case PYOP_ATTR_BOOL: OUT("%s", v->u.b ? "true" : "false"); break;
  case PYOP_ATTR_STR: OUT("'%.*s'", (int)v->u.s.len, v->u.s.data); break;
  case PYOP_ATTR_DTYPE: OUT("dt%d", (int)v->u.dtype); break;
  case PYOP_ATTR_LIST_INT:
    OUT("[");
    for (size_t i = 0; i < v->u.ints.count; i++) OUT(i ? ",%lld" : "%lld", (long long)v->u.ints.items[i]);
    OUT("]");
    break;
  case PYOP_ATTR_LIST_FLOAT:
    OUT("[");
    for (size_t i = 0; i < v->u.floats.count; i++) OUT(i ? ",%g" : "%g", v->u.floats.items[i]);
    OUT("]");
    break;
  case PYOP_ATTR_LIST_BOOL:
    OUT("[");
    for (size_t i = 0; i < v->u.bools.count; i++) OUT(i ? ",%d" : "%d", (int)v->u.bools.items[i]);
    OUT("]");
    break;
  case PYOP_ATTR_LIST_STR:
    OUT("[");
    for (size_t i = 0; i < v->u.strs.count; i++)
      OUT(i ? ",'%.*s'" : "'%.*s'", (int)v->u.strs.items[i].len, v->u.strs.items[i].data);
    OUT("]");
    break;
  case PYOP_ATTR_LIST_DTYPE:
    OUT("[");
    for (size_t i = 0; i < v->u.dtypes.count; i++) OUT(i ? ",dt%d" : "dt%d", (int)v->u.dtypes.items[i]);
    OUT("]");
    break;
  case PYOP_ATTR_LIST_LIST_INT:
    OUT("[");
    for (size_t i = 0; i < v->u.int_lists.count; i++) {
      OUT(i ? ",[" : "[");
      for (size_t j = 0; j < v->u.int_lists.items[i].count; j++)
        OUT(j ? ",%lld" : "%lld", (long long)v->u.int_lists.items[i].items[j]);
      OUT("]");
    }
    OUT("]");
    break;
  default: OUT("?"); break;
  }
#undef OUT
}

static int rec_add_proto(void *ctx, const pyop_proto_view *p) {
  recorder *r = ctx;
  if (r->fail_at >= 0 && r->adds++ == r->fail_at) {
    svc_set_error(PYOP_ECONFLICT, (pyop_str){"registrar says no", 17});
    return r->fail_status ? r->fail_status : PYOP_ECONFLICT;
  }
  rec_op *o = &r->ops[r->n++];
  memset(o, 0, sizeof *o);
  o->op_type = sdup(p->op_type);
  o->key = sdup(p->key);
  o->file = sdup(p->source_file);
  o->line = p->source_line;
  o->caps = p->caps;
  o->n_inputs = p->n_inputs;
  for (size_t i = 0; i < p->n_inputs; i++) {
    o->inputs[i] = sdup(p->inputs[i].name);
    o->input_kinds[i] = p->inputs[i].kind;
  }
  o->n_outputs = p->n_outputs;
  for (size_t i = 0; i < p->n_outputs; i++) {
    o->outputs[i] = sdup(p->outputs[i].name);
    o->output_kinds[i] = p->outputs[i].kind;
  }
  if (PYOP_STRUCT_HAS(pyop_proto_view, p, output_alias)) {
    o->has_flags = p->input_flags != NULL;
    o->has_alias = p->output_alias != NULL;
    for (size_t i = 0; o->has_flags && i < p->n_inputs && i < 16; i++)
      o->in_flags[i] = p->input_flags[i];
    for (size_t i = 0; o->has_alias && i < p->n_outputs && i < 16; i++)
      o->alias[i] = p->output_alias[i];
  }
  o->n_attrs = p->n_attrs;
  for (size_t i = 0; i < p->n_attrs; i++) {
    char val[512] = "";
    if (!p->attrs[i].required)
      render_value(val, sizeof val, &p->attrs[i].default_value);
    if (asprintf(&o->attrs[i], "%.*s:%d:%d:%s", (int)p->attrs[i].name.len, p->attrs[i].name.data,
                 p->attrs[i].type, p->attrs[i].required, val) < 0)
      abort();
  }
  o->ctx = p->ctx;
  o->cb = p->callbacks;
  o->view_size = p->struct_size;
  o->lanes = PYOP_STRUCT_HAS(pyop_proto_view, p, lanes) ? p->lanes : 0;
  if (PYOP_STRUCT_HAS(pyop_proto_view, p, source_digest) && p->source_digest.data != NULL)
    o->digest = sdup(p->source_digest);
  if (PYOP_STRUCT_HAS(pyop_proto_view, p, output_dtypes)) {
    o->in_dtypes = p->input_dtypes != NULL;
    o->out_dtypes = p->output_dtypes != NULL;
    for (size_t i = 0; o->in_dtypes && i < p->n_inputs && i < 16; i++)
      o->in_masks[i] = p->input_dtypes[i].mask;
    for (size_t i = 0; o->out_dtypes && i < p->n_outputs && i < 16; i++)
      o->out_masks[i] = p->output_dtypes[i].mask;
  }
  return PYOP_OK;
}

static int rec_add_impl(void *ctx, const pyop_impl_view *p) {
  recorder *r = ctx;
  if (r->fail_at >= 0 && r->adds++ == r->fail_at) {
    svc_set_error(PYOP_ECONFLICT, (pyop_str){"registrar says no", 17});
    return r->fail_status ? r->fail_status : PYOP_ECONFLICT;
  }
  rec_op *o = &r->ops[r->n++];
  memset(o, 0, sizeof *o);
  o->is_impl = true;
  o->view_size = p->struct_size;
  o->op_type = sdup(p->op_type);
  o->key = sdup(p->key);
  o->file = sdup(p->source_file);
  o->line = p->source_line;
  o->caps = p->caps;
  o->ctx = p->ctx;
  o->cb = p->callbacks;
  o->lanes = PYOP_STRUCT_HAS(pyop_impl_view, p, lanes) ? p->lanes : 0;
  if (PYOP_STRUCT_HAS(pyop_impl_view, p, source_digest) && p->source_digest.data != NULL)
    o->digest = sdup(p->source_digest);
  return PYOP_OK;
}

static void rec_clear(recorder *r) {
  for (size_t i = 0; i < r->n; i++) {
    rec_op *o = &r->ops[i];
    free(o->op_type);
    free(o->key);
    free(o->file);
    free(o->digest);
    for (size_t j = 0; j < o->n_inputs; j++) free(o->inputs[j]);
    for (size_t j = 0; j < o->n_outputs; j++) free(o->outputs[j]);
    for (size_t j = 0; j < o->n_attrs; j++) free(o->attrs[j]);
  }
  r->n = 0;
  r->adds = 0;
}

static const rec_op *find(const recorder *r, const char *op_type, bool impl) {
  for (size_t i = 0; i < r->n; i++)
    if (r->ops[i].is_impl == impl && strcmp(r->ops[i].op_type, op_type) == 0)
      return &r->ops[i];
  return NULL;
}

/* ------------------------------------------------------------ bridge */

static void *bridge_handle;
static char g_artifact[4096], g_plugins[4096];

static void open_bridge(void) {
  char path[4200];
  snprintf(path, sizeof path, "%s/libpyop_bridge.so", g_artifact);
  bridge_handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  CHECK(bridge_handle != NULL, "dlopen %s: %s", path, dlerror());
  pyop_bridge_entry_fn entry = (pyop_bridge_entry_fn)dlsym(bridge_handle, PYOP_BRIDGE_ENTRY_SYMBOL);
  CHECK(entry != NULL, "no entry symbol");
  pyop_bridge_request req = {sizeof req, PYOP_BRIDGE_ABI_MAJOR, PYOP_BRIDGE_ABI_MINOR, &g_services};
  CHECK_OK(entry(&req, &api));
  CHECK(api != NULL && api->struct_size >= sizeof *api, "api table");
  CHECK(api->abi_major == 1 && api->abi_minor == PYOP_BRIDGE_ABI_MINOR, "abi %u.%u",
        api->abi_major, api->abi_minor);
}

static int configure(uint32_t flags) {
  pyop_bridge_config cfg = {sizeof cfg, {g_artifact, strlen(g_artifact)}, {NULL, 0}, flags};
  return api->set_config(&cfg);
}

static int load(recorder *r, int n, ...) {
  pyop_str paths[16];
  char *bufs[16];
  va_list ap;
  va_start(ap, n);
  for (int i = 0; i < n; i++) {
    const char *rel = va_arg(ap, const char *);
    if (rel[0] == '/')
      bufs[i] = strdup(rel);
    else if (asprintf(&bufs[i], "%s/%s", g_plugins, rel) < 0)
      abort();
    paths[i] = (pyop_str){bufs[i], strlen(bufs[i])};
  }
  va_end(ap);
  pyop_registrar reg = {sizeof reg, r, rec_add_proto, rec_add_impl};
  clear_error();
  int rc = api->register_custom_ops(&reg, paths, (size_t)n);
  for (int i = 0; i < n; i++)
    free(bufs[i]);
  return rc;
}

/* Runs Python code in the process; true when it raised nothing. */
static bool py_ok(const char *code) {
  int st = PyGILState_Ensure();
  int rc = PyRun_SimpleString(code);
  PyGILState_Release(st);
  return rc == 0;
}

/* -------------------------------------------------------- op calls */

static pyop_tensor tensor_f32(float *data, int ndim, const int64_t *shape) {
  pyop_tensor t;
  memset(&t, 0, sizeof t);
  t.data = data;
  t.dtype = PYOP_DTYPE_FLOAT32;
  t.ndim = ndim;
  int64_t n = 1;
  for (int i = 0; i < ndim; i++) {
    t.shape[i] = shape[i];
    n *= shape[i];
  }
  t.nbytes = (uint64_t)n * 4;
  return t;
}

typedef struct outputs {
  void *mem[8];
  pyop_tensor t[8];
  void *ws[8];
  int n_ws;
} outputs;

static int alloc_output(void *ctx, size_t index, pyop_tensor *t) {
  outputs *o = ctx;
  if (index >= 8 || t->nbytes > (1u << 30))
    return PYOP_ENOMEM;
  free(o->mem[index]);
  o->mem[index] = calloc(1, t->nbytes ? t->nbytes : 1);
  if (o->mem[index] == NULL)
    return PYOP_ENOMEM;
  t->data = o->mem[index];
  o->t[index] = *t;
  return 0;
}

static int alloc_workspace(void *ctx, uint64_t nbytes, void **out) {
  outputs *o = ctx;
  if (o->n_ws >= 8)
    return PYOP_ENOMEM;
  *out = o->ws[o->n_ws++] = calloc(1, nbytes ? nbytes : 1);
  return *out ? 0 : PYOP_ENOMEM;
}

static void outputs_free(outputs *o) {
  for (int i = 0; i < 8; i++) free(o->mem[i]);
  for (int i = 0; i < o->n_ws; i++) free(o->ws[i]);
  memset(o, 0, sizeof *o);
}

static void *holder_of(const rec_op *op, const pyop_attr_view *attrs, size_t n) {
  void *h = NULL;
  CHECK(op != NULL, "op not registered");
  clear_error();
  int rc = op->cb->create_holder(op->ctx, attrs, n, &h);
  CHECK(rc == PYOP_OK && h != NULL, "create_holder %s: %d", op->op_type, rc);
  return h;
}

static pyop_attr_view attr_str(const char *name, const char *value) {
  pyop_attr_view a;
  memset(&a, 0, sizeof a);
  a.struct_size = sizeof a;
  a.name = (pyop_str){name, strlen(name)};
  a.type = PYOP_ATTR_STR;
  a.default_value.type = PYOP_ATTR_STR;
  a.default_value.u.s = (pyop_str){value, strlen(value)};
  return a;
}

static pyop_attr_view attr_float(const char *name, double v) {
  pyop_attr_view a;
  memset(&a, 0, sizeof a);
  a.struct_size = sizeof a;
  a.name = (pyop_str){name, strlen(name)};
  a.type = PYOP_ATTR_FLOAT;
  a.default_value.type = PYOP_ATTR_FLOAT;
  a.default_value.u.f = v;
  return a;
}

static pyop_attr_view attr_int(const char *name, int64_t v) {
  pyop_attr_view a;
  memset(&a, 0, sizeof a);
  a.struct_size = sizeof a;
  a.name = (pyop_str){name, strlen(name)};
  a.type = PYOP_ATTR_INT;
  a.default_value.type = PYOP_ATTR_INT;
  a.default_value.u.i = v;
  return a;
}

static int exec1(const rec_op *impl, void *h, pyop_tensor *ins, size_t n_slots,
                 const size_t *counts, size_t n_outputs, outputs *o) {
  pyop_tensor_list lists[8];
  size_t k = 0;
  for (size_t i = 0; i < n_slots; i++) {
    lists[i].items = counts[i] ? &ins[k] : NULL;
    lists[i].count = counts[i];
    k += counts[i];
  }
  pyop_exec_services svc = {sizeof svc, o, alloc_output, alloc_workspace};
  pyop_exec_args a = {sizeof a, lists, n_slots, n_outputs, &svc, (void *)0x1234};
  clear_error();
  return impl->cb->execute(h, &a);
}

static int infer1(const rec_op *proto, void *h, pyop_tensor *ins, size_t n_slots,
                  const size_t *counts, pyop_tensor *outs, size_t n_out) {
  pyop_tensor_list lists[8];
  size_t k = 0;
  for (size_t i = 0; i < n_slots; i++) {
    lists[i].items = counts[i] ? &ins[k] : NULL;
    lists[i].count = counts[i];
    k += counts[i];
  }
  pyop_infer_args a = {sizeof a, lists, n_slots, outs, n_out};
  clear_error();
  return proto->cb->infer_meta(h, &a);
}

/* Line of the first line of path containing needle (1-based), 0 if none. */
static unsigned line_of(const char *path, const char *needle) {
  FILE *f = fopen(path, "r");
  if (f == NULL)
    return 0;
  char buf[1024];
  unsigned n = 0, found = 0;
  while (fgets(buf, sizeof buf, f) != NULL) {
    n++;
    if (strstr(buf, needle) != NULL) {
      found = n;
      break;
    }
  }
  fclose(f);
  return found;
}

/* ------------------------------------------------------------ cases */

static const size_t ONE[8] = {1, 1, 1, 1, 1, 1, 1, 1};

static void run_scaled_add(const recorder *r, void *ph, void *ih, float alpha, int rounds) {
  const rec_op *proto = find(r, "ScaledAdd", false), *impl = find(r, "ScaledAdd", true);
  float x[6] = {1, 2, 3, 4, 5, 6}, y[6] = {10, 20, 30, 40, 50, 60};
  int64_t shape[2] = {2, 3};
  pyop_tensor ins[2] = {tensor_f32(x, 2, shape), tensor_f32(y, 2, shape)};
  pyop_tensor out;
  CHECK_OK(infer1(proto, ph, ins, 2, ONE, &out, 1));
  CHECK(out.ndim == 2 && out.shape[0] == 2 && out.shape[1] == 3 &&
            out.dtype == PYOP_DTYPE_FLOAT32 && out.data == NULL,
        "infer result");
  for (int round = 0; round < rounds; round++) {
    outputs o = {0};
    CHECK_OK(exec1(impl, ih, ins, 2, ONE, 1, &o));
    float *res = o.mem[0];
    CHECK(res != NULL && o.t[0].nbytes == 24, "output allocated");
    for (int i = 0; i < 6; i++)
      CHECK(res[i] == x[i] + alpha * y[i], "out[%d] = %g", i, res[i]);
    outputs_free(&o);
  }
}

/*
 * plugins/basic through the registrar: which files are plugins (sorted; '_'
 * and '.' names and non-packages skipped), each descriptor's key,
 * file:line, capabilities, inputs with their kinds, outputs and attributes;
 * infer_meta and execute of the ops on host buffers; sys.path and
 * sys.meta_path as they were.
 */
static void case_basic(void) {
  recorder r = {.fail_at = -1};
  CHECK(py_ok("import sys; _saved_path = list(sys.path); _saved_meta = len(sys.meta_path)"), "save");
  CHECK_OK(load(&r, 1, "basic"));
  /* Sorted: json.py, mypkg, ops_file.py; '_'/'.' names and non-packages skipped. */
  CHECK(r.n == 7, "registered %zu descriptors", r.n);
  const rec_op *sa = find(&r, "ScaledAdd", false);
  CHECK(sa != NULL && find(&r, "ScaledAdd", true) != NULL, "ScaledAdd");
  CHECK(strcmp(sa->key, "pyop:ops_file.scaled_add") == 0, "key %s", sa->key);
  char path[4200];
  snprintf(path, sizeof path, "%s/basic/ops_file.py", g_plugins);
  CHECK(strcmp(sa->file, path) == 0, "file %s", sa->file);
  CHECK(sa->line == line_of(path, "register_op(op_type=\"ScaledAdd\")"), "line %u", sa->line);
  CHECK(sa->caps == PYOP_CAP_INFER_META && find(&r, "ScaledAdd", true)->caps == PYOP_CAP_EXECUTE,
        "caps");
  CHECK(sa->n_inputs == 2 && strcmp(sa->inputs[0], "x") == 0 && strcmp(sa->inputs[1], "y") == 0,
        "inputs");
  CHECK(sa->n_outputs == 1 && strcmp(sa->outputs[0], "y") == 0, "outputs");
  CHECK(sa->n_attrs == 1 && strcmp(sa->attrs[0], "alpha:2:0:1") == 0, "attr %s", sa->attrs[0]);
  const rec_op *sai = find(&r, "ScaledAdd", true);
  CHECK(strcmp(sai->key, "pyop:ops_file.ScaledAddImpl") == 0, "impl key %s", sai->key);
  CHECK(sai->line == line_of(path, "register_op_impl(op_type=\"ScaledAdd\")") ||
            sai->line == line_of(path, "class ScaledAddImpl"),
        "impl line %u", sai->line);
  const rec_op *io = find(&r, "IoKinds", false);
  CHECK(io != NULL && io->n_inputs == 3 && io->input_kinds[0] == PYOP_IO_REQUIRED &&
            io->input_kinds[1] == PYOP_IO_OPTIONAL && io->input_kinds[2] == PYOP_IO_DYNAMIC,
        "IoKinds inputs");
  CHECK(io->n_outputs == 2 && strcmp(io->outputs[0], "first") == 0 &&
            strcmp(io->outputs[1], "info") == 0,
        "IoKinds outputs");
  const rec_op *pkg = find(&r, "PkgDouble", false);
  CHECK(pkg != NULL && strcmp(pkg->key, "pyop:mypkg.pkg_double") == 0, "package plugin %s",
        pkg ? pkg->key : "-");
  CHECK(find(&r, "ShadowJson", false) != NULL, "json.py plugin");

  /* ScaledAdd: infer + execute, many rounds (Tensor reuse). */
  pyop_attr_view alpha = attr_float("alpha", 2.0);
  void *ph = holder_of(sa, &alpha, 1), *ih = holder_of(sai, &alpha, 1);
  run_scaled_add(&r, ph, ih, 2.0f, 200);
  /* No Python object leaks per call (pymalloc's block count is stable). */
  CHECK(py_ok("import sys, gc; gc.collect(); _b0 = sys.getallocatedblocks()"), "blocks");
  run_scaled_add(&r, ph, ih, 2.0f, 500);
  CHECK(py_ok("import sys, gc; gc.collect(); _d = sys.getallocatedblocks() - _b0\n"
              "assert _d < 100, 'leaked %d blocks over 500 calls' % _d"),
        "no per-call leak");

  /* IoKinds: optional absent, dynamic with 3 tensors. */
  {
    const rec_op *ioi = find(&r, "IoKinds", true);
    void *h = holder_of(ioi, NULL, 0);
    float a[2] = {7, 8}, c0[1] = {1}, c1[2] = {1, 2}, c2[3] = {1, 2, 3};
    int64_t s2[1] = {2}, s1[1] = {1}, s3[1] = {3};
    pyop_tensor ins[4] = {tensor_f32(a, 1, s2), tensor_f32(c0, 1, s1), tensor_f32(c1, 1, s2),
                          tensor_f32(c2, 1, s3)};
    size_t counts[3] = {1, 0, 3};
    outputs o = {0};
    CHECK_OK(exec1(ioi, h, ins, 3, counts, 2, &o));
    float *first = o.mem[0];
    int64_t *info = o.mem[1];
    CHECK(first[0] == 7 && first[1] == 8, "first");
    CHECK(info[0] == 0 && info[1] == 3 && info[2] == 6, "info %lld %lld %lld", (long long)info[0],
          (long long)info[1], (long long)info[2]);
    outputs_free(&o);
    /* optional present, dynamic empty */
    size_t counts2[3] = {1, 1, 0};
    CHECK_OK(exec1(ioi, h, ins, 3, counts2, 2, &o));
    info = o.mem[1];
    CHECK(info[0] == 1 && info[1] == 0 && info[2] == 0, "info2");
    outputs_free(&o);
    /* infer with the prototype */
    void *hp = holder_of(io, NULL, 0);
    pyop_tensor outs[2];
    CHECK_OK(infer1(io, hp, ins, 3, counts, outs, 2));
    CHECK(outs[0].shape[0] == 2 && outs[1].dtype == PYOP_DTYPE_INT64 && outs[1].shape[0] == 3,
          "IoKinds infer");
    io->cb->destroy_holder(hp);
    ioi->cb->destroy_holder(h);
  }
  /* Package plugin with relative imports. */
  {
    const rec_op *pi = find(&r, "PkgDouble", true);
    void *h = holder_of(pi, NULL, 0);
    float x[3] = {1, 2, 3};
    int64_t s[1] = {3};
    pyop_tensor in = tensor_f32(x, 1, s);
    outputs o = {0};
    CHECK_OK(exec1(pi, h, &in, 1, ONE, 1, &o));
    float *res = o.mem[0];
    CHECK(res[0] == 2 && res[1] == 4 && res[2] == 6, "PkgDouble");
    outputs_free(&o);
    pi->cb->destroy_holder(h);
  }
  /* json.py: infer checks it does not shadow the stdlib. */
  {
    const rec_op *sj = find(&r, "ShadowJson", false);
    void *h = holder_of(sj, NULL, 0);
    float x[1] = {0};
    int64_t s[1] = {1};
    pyop_tensor in = tensor_f32(x, 1, s), out;
    CHECK_OK(infer1(sj, h, &in, 1, ONE, &out, 1));
    sj->cb->destroy_holder(h);
  }
  CHECK(py_ok("import sys, json\n"
              "assert sys.path == _saved_path, sys.path\n"
              "assert json.__file__.endswith('json/__init__.py'), json.__file__\n"
              "assert 'pyop' in sys.modules and sys.modules['pyop']._native is not None\n"
              "mods = [m for m in sys.modules if m.startswith('_pyop_plugin_')]\n"
              "assert len(mods) == 4, mods\n"),
        "process state after load");
  /* pyop.TensorDesc: the Python class on the bridge's C fields
   * (pyop._native.TensorDescBase), with the behaviour it has in pure Python. */
  CHECK(py_ok("def _td():  # locals only: nothing keeps a TensorDesc\n"
              "    import copy, pickle, weakref, pyop, pyop._native as native\n"
              "    D = pyop.TensorDesc\n"
              "    assert D.__mro__[1] is native.TensorDescBase, D.__mro__\n"
              "    d = D([2, 3], 'float32')\n"
              "    assert d.shape == (2, 3) and d.ndim == 2, d.shape\n"
              "    assert d.dtype is pyop.DataType.float32 and d.format is pyop.Format.ND\n"
              "    assert repr(d) == 'TensorDesc(shape=(2, 3), dtype=DataType.float32)', repr(d)\n"
              "    assert d == D((2, 3), 0) and hash(d) == hash(D((2, 3), 0)) and d != D((3,), 0)\n"
              "    for bad in ([1.5], [-2], [True], [1] * 9):\n"
              "        try:\n"
              "            D(bad, 0)\n"
              "        except ValueError as e:\n"
              "            assert str(e).startswith('TensorDesc: '), e\n"
              "        else:\n"
              "            raise AssertionError(bad)\n"
              "    for c in (copy.copy(d), copy.deepcopy(d), pickle.loads(pickle.dumps(d))):\n"
              "        assert c == d and type(c) is D and c is not d, c\n"
              "    for f in (lambda: setattr(d, 'other', 1), lambda: weakref.ref(d),\n"
              "              lambda: D.__new__(D).shape):\n"
              "        try:\n"
              "            f()\n"
              "        except (AttributeError, TypeError):\n"
              "            pass\n"
              "        else:\n"
              "            raise AssertionError('no __dict__, no weakref, unset fields raise')\n"
              "    d.shape = (4,)\n"
              "    assert d.ndim == 1 and d == D([4], 0)\n"
              "_td()\n"
              "del _td\n"),
        "pyop.TensorDesc on the bridge's fields");
  /* pyop's callback kinds are the bridge's (PB_KIND_MAP): outside a
   * callback, current_ctx(kind) names the kind it was asked for. */
  CHECK(py_ok("def _kinds():\n"
              "    import sys\n"
              "    pyop, n = sys.modules['pyop'], sys.modules['pyop._native']\n"
              "    for k, name in ((pyop._CTX_EXECUTE, 'execute'), (pyop._CTX_COMPILE, 'compile'),\n"
              "                    (pyop._CTX_LAUNCH, 'declare_launch_args')):\n"
              "        try:\n"
              "            n.current_ctx(k)\n"
              "        except RuntimeError as e:\n"
              "            assert 'no %s callback is running' % name in str(e), (k, str(e))\n"
              "        else:\n"
              "            raise AssertionError('current_ctx(%d) outside a callback' % k)\n"
              "    for k in (0, 4):\n"
              "        try:\n"
              "            n.current_ctx(k)\n"
              "        except ValueError as e:\n"
              "            assert str(e) == 'unknown callback kind %d' % k, str(e)\n"
              "        else:\n"
              "            raise AssertionError(k)\n"
              "_kinds()\n"
              "del _kinds\n"),
        "callback kinds of pyop and the bridge");
  sa->cb->destroy_holder(ph);
  sai->cb->destroy_holder(ih);
  api->reset();
  CHECK(py_ok("import sys\n"
              "assert not [m for m in sys.modules if m.startswith('_pyop_plugin_')]\n"
              "assert sys.path == _saved_path\n"),
        "plugin modules dropped by reset");
  rec_clear(&r);
  /* A second load after reset imports again. */
  CHECK_OK(load(&r, 1, "basic"));
  CHECK(r.n == 7, "second load");
  const rec_op *sa2 = find(&r, "ScaledAdd", false);
  void *ph2 = holder_of(sa2, &alpha, 1), *ih2 = holder_of(find(&r, "ScaledAdd", true), &alpha, 1);
  run_scaled_add(&r, ph2, ih2, 2.0f, 3);
  sa2->cb->destroy_holder(ph2);
  find(&r, "ScaledAdd", true)->cb->destroy_holder(ih2);
  api->reset();
  rec_clear(&r);
}

/*
 * Every attribute type (plugins/attrs): the descriptor's types and
 * defaults, and the values libpyop passes (every attribute, in prototype
 * order) as the op reads them.
 */
static void case_attrs(void) {
  recorder r = {.fail_at = -1};
  CHECK_OK(load(&r, 1, "attrs/attrs_all.py"));
  const rec_op *p = find(&r, "AllAttrs", false), *impl = find(&r, "AllAttrs", true);
  CHECK(p != NULL && impl != NULL && p->n_attrs == 22, "AllAttrs");
  static const char *const expect[22] = {
      "i:1:1:", "f:2:1:", "b:3:1:", "s:4:1:", "d:5:1:", "li:6:1:", "lf:7:1:", "lb:8:1:",
      "ls:9:1:", "ld:10:1:", "lli:11:1:", "oi:1:0:7", "of:2:0:0.5", "ob:3:0:true",
      "os_:4:0:'dflt'", "od:5:0:dt2", "oli:6:0:[1,2]", "olf:7:0:[1.5]", "olb:8:0:[0,1]",
      "ols:9:0:['a','b']", "old:10:0:[dt4]", "olli:11:0:[[1],[2,3]]"};
  for (size_t i = 0; i < 22; i++)
    CHECK(strcmp(p->attrs[i], expect[i]) == 0, "attr %zu: %s, expected %s", i, p->attrs[i],
          expect[i]);
  /* Values as libpyop passes them: every attribute, prototype order. */
  int64_t li[3] = {1, -2, 3};
  double lf[2] = {0.25, -1};
  bool lb[2] = {true, false};
  pyop_str ls[2] = {{"x", 1}, {"yz", 2}};
  int32_t ld[2] = {PYOP_DTYPE_FLOAT16, PYOP_DTYPE_UINT64};
  int64_t r0[2] = {1, 2}, r1[1] = {3};
  pyop_int_list lli[3] = {{r0, 2}, {NULL, 0}, {r1, 1}};
  pyop_attr_view a[22];
  memset(a, 0, sizeof a);
  for (size_t i = 0; i < 22; i++) {
    char *name = strndup(p->attrs[i], (size_t)(strchr(p->attrs[i], ':') - p->attrs[i]));
    a[i].struct_size = sizeof a[i];
    a[i].name = (pyop_str){name, strlen(name)};
    a[i].type = atoi(strchr(p->attrs[i], ':') + 1);
    a[i].default_value.type = a[i].type;
    a[i].required = 1;
  }
  a[0].default_value.u.i = -5;
  a[1].default_value.u.f = 2.5;
  a[2].default_value.u.b = true;
  a[3].default_value.u.s = (pyop_str){"héllo", strlen("héllo")};
  a[4].default_value.u.dtype = PYOP_DTYPE_INT32;
  a[5].default_value.u.ints.items = li, a[5].default_value.u.ints.count = 3;
  a[6].default_value.u.floats.items = lf, a[6].default_value.u.floats.count = 2;
  a[7].default_value.u.bools.items = lb, a[7].default_value.u.bools.count = 2;
  a[8].default_value.u.strs.items = ls, a[8].default_value.u.strs.count = 2;
  a[9].default_value.u.dtypes.items = ld, a[9].default_value.u.dtypes.count = 2;
  a[10].default_value.u.int_lists.items = lli, a[10].default_value.u.int_lists.count = 3;
  a[11].default_value.u.i = 7;
  a[12].default_value.u.f = 0.5;
  a[13].default_value.u.b = false;
  a[14].default_value.u.s = (pyop_str){"", 0};
  a[15].default_value.u.dtype = PYOP_DTYPE_BOOL;
  /* 16..21: empty lists */
  void *h = holder_of(impl, a, 22);
  float x[1] = {0};
  int64_t s[1] = {1};
  pyop_tensor in = tensor_f32(x, 1, s);
  outputs o = {0};
  const char *want = "-5|2.5|True|'héllo'|int32|[1,-2,3]|[0.25,-1.0]|[True,False]|['x','yz']|"
                     "[float16,uint64]|[[1,2],[],[3]]|7|0.5|False|''|bool|[]|[]|[]|[]|[]|[]";
  /* execute appends to every list it gets (and to inner lists): each call
   * still sees the host's values. */
  for (int call = 0; call < 3; call++) {
    CHECK_OK(exec1(impl, h, &in, 1, ONE, 1, &o));
    CHECK(o.t[0].nbytes == strlen(want) && memcmp(o.mem[0], want, strlen(want)) == 0,
          "call %d: attrs seen by Python: %.*s", call, (int)o.t[0].nbytes, (char *)o.mem[0]);
    outputs_free(&o);
  }
  impl->cb->destroy_holder(h);
  /* A wrong value type is refused at create_holder. */
  a[4].default_value.u.dtype = 99;
  void *bad = (void *)1;
  clear_error();
  CHECK(impl->cb->create_holder(impl->ctx, a, 22, &bad) == PYOP_EPYTHON && bad == NULL,
        "bad dtype refused");
  CHECK(err_has("attribute 'd'") && err_has("unknown data type value 99"), "bad dtype message");
  for (size_t i = 0; i < 22; i++)
    free((char *)a[i].name.data);
  api->reset();
  rec_clear(&r);
}

static void expect_call_error(int rc, int status, const char *const *needles) {
  CHECK(rc == status, "%s: status %d, expected %d", needles[0], rc, status);
  CHECK(g_err_status == status, "set_error status %d", g_err_status);
  for (size_t i = 0; needles[i] != NULL; i++)
    CHECK(err_has(needles[i]), "message lacks '%s'", needles[i]);
}

/*
 * Exceptions in the op callbacks (plugins/errors): status (PYOP_EPYTHON,
 * PYOP_EINTR for KeyboardInterrupt), the op and callback named, the
 * exception, Traceback, file and source line; a wrong return type.
 */
static void case_errors(void) {
  recorder r = {.fail_at = -1};
  CHECK_OK(load(&r, 1, "errors"));
  const rec_op *p = find(&r, "Raise", false), *impl = find(&r, "Raise", true);
  CHECK(p && impl && impl->caps == (PYOP_CAP_EXECUTE | PYOP_CAP_COMPILE | PYOP_CAP_LAUNCH),
        "Raise caps");
  char file[4200];
  snprintf(file, sizeof file, "%s/errors/raising.py", g_plugins);
  float x[2] = {1, 2};
  int64_t s[1] = {2};
  pyop_tensor in = tensor_f32(x, 1, s), out;
  static const char *const wheres[] = {"none", "infer", "keyboard", "infer_type", "ctx_in_infer"};
  for (size_t w = 0; w < 5; w++) {
    pyop_attr_view a = attr_str("where", wheres[w]);
    void *h = holder_of(p, &a, 1);
    int rc = infer1(p, h, &in, 1, ONE, &out, 1);
    if (w == 0 || w == 4) {
      CHECK(rc == PYOP_OK, "infer %s", wheres[w]);
    } else if (w == 1) {
      const char *n[] = {"infer_meta of op 'Raise'", "ValueError: boom-infer", "Traceback",
                         file, "raise ValueError(\"boom-infer\")", NULL};
      expect_call_error(rc, PYOP_EPYTHON, n);
    } else if (w == 2) {
      const char *n[] = {"KeyboardInterrupt: boom-keyboard", NULL};
      expect_call_error(rc, PYOP_EINTR, n);
    } else {
      const char *n[] = {"TypeError", "expected a TensorDesc, got int", NULL};
      expect_call_error(rc, PYOP_EPYTHON, n);
    }
    p->cb->destroy_holder(h);
  }
  static const char *const ex[] = {"none", "execute", "exit", "badindex", "hostfail"};
  for (size_t w = 0; w < 5; w++) {
    pyop_attr_view a = attr_str("where", ex[w]);
    void *h = holder_of(impl, &a, 1);
    outputs o = {0};
    int rc = exec1(impl, h, &in, 1, ONE, 1, &o);
    if (w == 0) {
      CHECK(rc == PYOP_OK, "execute none");
    } else if (w == 1) {
      const char *n[] = {"execute of op 'Raise'", "ValueError: boom-execute", file, "Traceback",
                         NULL};
      expect_call_error(rc, PYOP_EPYTHON, n);
    } else if (w == 2) {
      const char *n[] = {"SystemExit: 5", NULL};
      expect_call_error(rc, PYOP_EPYTHON, n);
    } else if (w == 3) {
      const char *n[] = {"IndexError", "output index 3 out of range", NULL};
      expect_call_error(rc, PYOP_EPYTHON, n);
    } else {
      /* The service's failure status wins, with the Python detail: the
       * status by name and, from a loader without last_error (this
       * harness's services), its message. */
      const char *n[] = {"RuntimeError: libpyop refused to allocate output 0 (PYOP_ENOMEM): "
                         "out of memory", NULL};
      expect_call_error(rc, PYOP_ENOMEM, n);
    }
    outputs_free(&o);
    /* The interpreter stays usable: the next call works. */
    pyop_attr_view ok = attr_str("where", "none");
    void *h2 = holder_of(impl, &ok, 1);
    CHECK_OK(exec1(impl, h2, &in, 1, ONE, 1, &o));
    outputs_free(&o);
    impl->cb->destroy_holder(h2);
    impl->cb->destroy_holder(h);
  }
  /* compile / declare_launch_args raising. */
  {
    pyop_tensor_list lists[1] = {{&in, 1}};
    pyop_attr_view a = attr_str("where", "compile");
    void *h = holder_of(impl, &a, 1);
    pyop_compile_args ca = {sizeof ca, lists, 1, &in, 1, NULL, NULL};
    clear_error();
    const char *n[] = {"compile of op 'Raise'", "ValueError: boom-compile", NULL};
    expect_call_error(impl->cb->compile(h, &ca), PYOP_EPYTHON, n);
    impl->cb->destroy_holder(h);
    a = attr_str("where", "declare");
    h = holder_of(impl, &a, 1);
    pyop_declare_args da = {sizeof da, lists, 1, &in, 1, NULL, NULL, NULL};
    clear_error();
    const char *n2[] = {"declare_launch_args of op 'Raise'", "ValueError: boom-declare", NULL};
    expect_call_error(impl->cb->declare_launch_args(h, &da), PYOP_EPYTHON, n2);
    impl->cb->destroy_holder(h);
  }
  /* A constructor that raises fails create_holder. */
  {
    const rec_op *ri = find(&r, "RaiseInit", true);
    void *h = (void *)1;
    clear_error();
    const char *n[] = {"creating the implementation", "RuntimeError: boom-init", file, NULL};
    expect_call_error(ri->cb->create_holder(ri->ctx, NULL, 0, &h), PYOP_EPYTHON, n);
    CHECK(h == NULL, "no holder");
  }
  CHECK(py_ok("import sys; assert sys.exc_info()[0] is None"), "no exception left");
  api->reset();
  rec_clear(&r);
}

/* One infer_meta of op with attribute a on a float32[2] input into
 * outs[0..n_out): its status, the error checked against needles when it
 * is not PYOP_OK. */
static int infer_with(const rec_op *op, pyop_attr_view a, pyop_tensor *outs, size_t n_out,
                      int status, const char *const *needles) {
  float x[2] = {1, 2};
  int64_t s[1] = {2};
  pyop_tensor in = tensor_f32(x, 1, s);
  void *h = holder_of(op, &a, 1);
  for (size_t i = 0; i < n_out; i++) memset(&outs[i], 0, sizeof outs[i]);
  int rc = infer1(op, h, &in, 1, ONE, n_out ? outs : NULL, n_out);
  if (status != PYOP_OK)
    expect_call_error(rc, status, needles);
  else
    CHECK(rc == PYOP_OK, "%s infer_meta: %d", op->op_type, rc);
  op->cb->destroy_holder(h);
  return rc;
}

/*
 * infer_meta results the bridge refuses (issue 31): a dtype or format one
 * past its enum's end (the last member is fine), more or fewer items than
 * the op has outputs, a value from an op without outputs, a shape of more
 * than PYOP_MAX_DIMS dimensions (never written past the shape array). Each
 * is PYOP_EPYTHON naming the output and what is wrong; the next call works.
 */
static void case_results(void) {
  recorder r = {.fail_at = -1};
  CHECK_OK(load(&r, 1, "results"));
  const rec_op *en = find(&r, "ResultEnum", false), *two = find(&r, "ResultTwo", false),
               *none = find(&r, "ResultNone", false), *dims = find(&r, "ResultDims", false);
  CHECK(en && two && none && dims, "results ops registered");
  CHECK(two->n_outputs == 2 && none->n_outputs == 0, "outputs %zu %zu", two->n_outputs,
        none->n_outputs);
  pyop_tensor out[3];
  /* The last member of each enum is a value; one past it is not. */
  infer_with(en, attr_int("dtype", PYOP_DTYPE_COUNT - 1), out, 1, PYOP_OK, NULL);
  CHECK(out[0].dtype == PYOP_DTYPE_COUNT - 1 && out[0].ndim == 1 && out[0].shape[0] == 2,
        "last dtype: %d", out[0].dtype);
  infer_with(en, attr_int("format", PYOP_FORMAT_COUNT - 1), out, 1, PYOP_OK, NULL);
  CHECK(out[0].format == PYOP_FORMAT_COUNT - 1, "last format: %d", out[0].format);
  {
    const char *n[] = {"infer_meta of op 'ResultEnum'", "ValueError", "infer_meta output 0 dtype",
                       "out of range", NULL};
    infer_with(en, attr_int("dtype", PYOP_DTYPE_COUNT), out, 1, PYOP_EPYTHON, n);
    infer_with(en, attr_int("dtype", -1), out, 1, PYOP_EPYTHON, n);
  }
  {
    const char *n[] = {"ValueError", "infer_meta output 0 format", "out of range", NULL};
    infer_with(en, attr_int("format", PYOP_FORMAT_COUNT), out, 1, PYOP_EPYTHON, n);
  }
  /* Two outputs: two items, not three, not one. */
  infer_with(two, attr_int("n", 2), out, 2, PYOP_OK, NULL);
  CHECK(out[0].ndim == 1 && out[1].ndim == 1 && out[1].shape[0] == 2, "two outputs");
  {
    const char *n[] = {"ValueError", "infer_meta returned 3 outputs, the op has 2", NULL};
    infer_with(two, attr_int("n", 3), out, 2, PYOP_EPYTHON, n);
  }
  {
    const char *n[] = {"ValueError", "infer_meta returned 1 output, the op has 2", NULL};
    infer_with(two, attr_int("n", 1), out, 2, PYOP_EPYTHON, n);
  }
  /* No outputs: None only. */
  infer_with(none, attr_str("give", "none"), out, 0, PYOP_OK, NULL);
  {
    const char *n[] = {"TypeError", "infer_meta of an op without outputs must return None, got "
                       "TensorDesc", NULL};
    infer_with(none, attr_str("give", "desc"), out, 0, PYOP_EPYTHON, n);
  }
  {
    const char *n[] = {"TypeError", "must return None, got tuple", NULL};
    infer_with(none, attr_str("give", "empty"), out, 0, PYOP_EPYTHON, n);
  }
  /* PYOP_MAX_DIMS dimensions are a shape; one more is refused before any
   * is stored (the array holds PYOP_MAX_DIMS). */
  infer_with(dims, attr_int("ndim", PYOP_MAX_DIMS), out, 1, PYOP_OK, NULL);
  CHECK(out[0].ndim == PYOP_MAX_DIMS && out[0].shape[PYOP_MAX_DIMS - 1] == PYOP_MAX_DIMS + 1,
        "%d dims", out[0].ndim);
  {
    char want[64];
    snprintf(want, sizeof want, "%d dimensions (at most %d)", PYOP_MAX_DIMS + 1, PYOP_MAX_DIMS);
    const char *n[] = {"ValueError", "infer_meta output 0", want, NULL};
    out[0].nbytes = 12345;
    infer_with(dims, attr_int("ndim", PYOP_MAX_DIMS + 1), out, 1, PYOP_EPYTHON, n);
  }
  /* One output declared as a tuple of one: a tuple or a list of one item. */
  const rec_op *one = find(&r, "ResultOneTuple", false);
  CHECK(one != NULL && one->n_outputs == 1, "ResultOneTuple");
  infer_with(one, attr_int("form", 0), out, 1, PYOP_OK, NULL);
  CHECK(out[0].ndim == 1 && out[0].shape[0] == 2 && out[0].dtype == PYOP_DTYPE_FLOAT32, "(d,)");
  infer_with(one, attr_int("form", 1), out, 1, PYOP_OK, NULL);
  CHECK(out[0].ndim == 1 && out[0].shape[0] == 2, "[d]");
  /* A host asking for another number of outputs than the prototype has
   * (libpyop never does; the bridge's own check): refused, nothing written. */
  {
    float x[2] = {1, 2};
    int64_t s[1] = {2};
    pyop_tensor in = tensor_f32(x, 1, s);
    pyop_attr_view a = attr_int("dtype", 0);
    void *h = holder_of(en, &a, 1);
    memset(out, 0, sizeof out);
    const char *n[] = {"bridge infer_meta of op 'ResultEnum': 2 outputs asked, the prototype "
                       "has 1", NULL};
    expect_call_error(infer1(en, h, &in, 1, ONE, out, 2), PYOP_EINVAL, n);
    CHECK(out[0].ndim == 0 && out[1].ndim == 0, "nothing written");
    en->cb->destroy_holder(h);
  }
  /* The interpreter is fine, and so is the op. */
  infer_with(en, attr_int("dtype", 0), out, 1, PYOP_OK, NULL);
  CHECK(py_ok("import sys; assert sys.exc_info()[0] is None"), "no exception left");
  api->reset();
  rec_clear(&r);
}

/* What a host's add_output received (dynamic outputs of infer_meta). */
typedef struct dyn_sink {
  size_t index[16];
  int64_t dim0[16];
  int n;
  int refuse_at; /* refuse the n-th tensor (0-based), -1 never */
} dyn_sink;

static int dyn_add(void *ctx, size_t index, const pyop_tensor *desc) {
  dyn_sink *s = ctx;
  if (s->n == s->refuse_at || s->n >= 16)
    return PYOP_EINVAL;
  s->index[s->n] = index;
  s->dim0[s->n++] = desc->shape[0];
  return PYOP_OK;
}

/* One infer_meta of op (attribute a) on a float32[2] input with an
 * add_output sink: its status. */
static int infer_sink(const rec_op *op, pyop_attr_view *a, size_t n_attrs, pyop_tensor *outs,
                      size_t n_out, dyn_sink *sink) {
  float x[2] = {1, 2};
  int64_t s[1] = {2};
  pyop_tensor in = tensor_f32(x, 1, s);
  pyop_tensor_list lists[1] = {{&in, 1}};
  void *h = holder_of(op, a, n_attrs);
  pyop_infer_args args = {sizeof args, lists, 1, outs, n_out, sink, dyn_add};
  clear_error();
  int rc = op->cb->infer_meta(h, &args);
  op->cb->destroy_holder(h);
  return rc;
}

/* One infer_meta of op on in (attribute a): its status. */
static int infer_on(const rec_op *op, pyop_attr_view a, pyop_tensor *in, pyop_tensor *out) {
  void *h = holder_of(op, &a, 1);
  memset(out, 0, sizeof *out);
  int rc = infer1(op, h, in, 1, ONE, out, 1);
  op->cb->destroy_holder(h);
  return rc;
}

/*
 * infer_meta results at the bridge's edges (plugins/edges): a shape given
 * as a list is read; a number is refused; dimensions are taken through
 * __index__ and at both ends of int64_t, one past either end refused with
 * the output and dimension named; a result without .format, a float dtype,
 * a single result for two outputs, a bad second item are refused naming
 * what; the package's DataType and Format members are their values.
 * Dynamic outputs: each tensor reaches add_output with its output's index
 * (a tuple is a list too), a refused one fails the call naming it, a host
 * without add_output and a single TensorDesc are refused. The input
 * descriptions the host passes are checked: PYOP_MAX_DIMS dimensions and
 * the last dtype and format pass, one more is refused. One holder's input
 * descriptions follow the host's tensors from call to call; one the plugin
 * kept is never rewritten.
 */
static void case_edges(void) {
  recorder r = {.fail_at = -1};
  CHECK_OK(load(&r, 1, "edges"));
  const rec_op *sh = find(&r, "EdgeShape", false), *pair = find(&r, "EdgePair", false),
               *dyn = find(&r, "EdgeDyn", false), *ht = find(&r, "EdgeHeadTail", false);
  CHECK(sh && pair && dyn && ht, "edges ops registered");
  pyop_tensor out[2];
  infer_with(sh, attr_str("form", "list"), out, 1, PYOP_OK, NULL);
  CHECK(out[0].ndim == 2 && out[0].shape[0] == 2 && out[0].shape[1] == 3, "list shape: ndim %d",
        out[0].ndim);
  infer_with(sh, attr_str("form", "index_dim"), out, 1, PYOP_OK, NULL);
  CHECK(out[0].ndim == 2 && out[0].shape[0] == 4 && out[0].shape[1] == 5, "__index__ dims");
  infer_with(sh, attr_str("form", "min_dim"), out, 1, PYOP_OK, NULL);
  CHECK(out[0].ndim == 1 && out[0].shape[0] == INT64_MIN, "INT64_MIN dim");
  infer_with(sh, attr_str("form", "max_dim"), out, 1, PYOP_OK, NULL);
  CHECK(out[0].ndim == 1 && out[0].shape[0] == INT64_MAX, "INT64_MAX dim");
  infer_with(sh, attr_str("form", "members"), out, 1, PYOP_OK, NULL);
  CHECK(out[0].dtype == PYOP_DTYPE_INT64 && out[0].format == PYOP_FORMAT_NCHW,
        "members: dtype %d format %d", out[0].dtype, out[0].format);
  {
    const char *n[] = {"infer_meta of op 'EdgeShape'", "TypeError", "shape must be a sequence",
                       NULL};
    infer_with(sh, attr_str("form", "number"), out, 1, PYOP_EPYTHON, n);
  }
  {
    const char *n[] = {"TypeError", "infer_meta output 0 dimension 1 must be an int, got str",
                       NULL};
    infer_with(sh, attr_str("form", "str_dim"), out, 1, PYOP_EPYTHON, n);
  }
  {
    const char *n[] = {"ValueError", "infer_meta output 0 dimension 0", "out of range", NULL};
    infer_with(sh, attr_str("form", "below_min"), out, 1, PYOP_EPYTHON, n);
  }
  {
    const char *n[] = {"ValueError", "infer_meta output 0 dimension 1", "out of range", NULL};
    infer_with(sh, attr_str("form", "above_max"), out, 1, PYOP_EPYTHON, n);
  }
  {
    const char *n[] = {"TypeError", "infer_meta output 0: expected a TensorDesc, got NoFormat",
                       NULL};
    infer_with(sh, attr_str("form", "no_format"), out, 1, PYOP_EPYTHON, n);
  }
  {
    const char *n[] = {"TypeError", "infer_meta output 0 dtype must be an int, got float", NULL};
    infer_with(sh, attr_str("form", "float_dtype"), out, 1, PYOP_EPYTHON, n);
  }
  infer_with(pair, attr_str("form", "ok"), out, 2, PYOP_OK, NULL);
  {
    const char *n[] = {"infer_meta of op 'EdgePair'", "TypeError",
                       "infer_meta must return a tuple of 2 outputs, got TensorDesc", NULL};
    infer_with(pair, attr_str("form", "single"), out, 2, PYOP_EPYTHON, n);
  }
  {
    const char *n[] = {"TypeError", "infer_meta output 1: expected a TensorDesc, got int", NULL};
    infer_with(pair, attr_str("form", "bad_second"), out, 2, PYOP_EPYTHON, n);
  }
  /* Dynamic outputs. */
  {
    const char *n[] = {"infer_meta of op 'EdgeDyn'", "RuntimeError", "infer_meta output 0 is a "
                       "list, but the host's libpyop does not take dynamic outputs", NULL};
    infer_with(dyn, attr_int("n", 2), out, 1, PYOP_EPYTHON, n);
  }
  static const char *const dyn_forms[] = {"list", "tuple"};
  for (int f = 0; f < 2; f++) {
    dyn_sink sk = {.refuse_at = -1};
    pyop_attr_view a[2] = {attr_int("n", 3), attr_str("form", dyn_forms[f])};
    CHECK_OK(infer_sink(dyn, a, 2, out, 1, &sk));
    CHECK(sk.n == 3 && sk.index[0] == 0 && sk.index[2] == 0 && sk.dim0[0] == 1 &&
              sk.dim0[1] == 2 && sk.dim0[2] == 3,
          "%s: %d tensors added", dyn_forms[f], sk.n);
  }
  {
    dyn_sink sk = {.refuse_at = 1};
    pyop_attr_view a[2] = {attr_int("n", 3), attr_str("form", "list")};
    int rc = infer_sink(dyn, a, 2, out, 1, &sk);
    const char *n[] = {"RuntimeError", "infer_meta output 0: the host refused tensor 1", NULL};
    expect_call_error(rc, PYOP_EPYTHON, n);
    CHECK(sk.n == 1, "no tensor added after the refused one: %d", sk.n);
  }
  {
    dyn_sink sk = {.refuse_at = -1};
    pyop_attr_view a[2] = {attr_int("n", 1), attr_str("form", "single")};
    int rc = infer_sink(dyn, a, 2, out, 1, &sk);
    const char *n[] = {"TypeError", "infer_meta output 0: a dynamic output must be a list of "
                       "TensorDesc, got TensorDesc", NULL};
    expect_call_error(rc, PYOP_EPYTHON, n);
    CHECK(sk.n == 0, "nothing added");
  }
  {
    /* A required output then a dynamic one: the tail's tensors name index 1. */
    dyn_sink sk = {.refuse_at = -1};
    pyop_attr_view a = attr_int("n", 2);
    memset(out, 0, sizeof out);
    CHECK_OK(infer_sink(ht, &a, 1, out, 2, &sk));
    CHECK(out[0].ndim == 1 && out[0].shape[0] == 1, "head");
    CHECK(sk.n == 2 && sk.index[0] == 1 && sk.index[1] == 1 && sk.dim0[0] == 7 &&
              sk.dim0[1] == 8,
          "tail: %d tensors, index %zu", sk.n, sk.index[0]);
  }
  /* Input descriptions from the host: at the limits and one past. */
  {
    float x[2] = {1, 2};
    int64_t s9[PYOP_MAX_DIMS + 1] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    pyop_attr_view a = attr_str("form", "members");
    pyop_tensor in = tensor_f32(x, PYOP_MAX_DIMS, s9);
    CHECK_OK(infer_on(sh, a, &in, out));
    in.dtype = PYOP_DTYPE_COUNT - 1;
    in.format = PYOP_FORMAT_COUNT - 1;
    CHECK_OK(infer_on(sh, a, &in, out));
    in.ndim = PYOP_MAX_DIMS + 1;
    char want[64];
    snprintf(want, sizeof want, "tensor description with %d dimensions", PYOP_MAX_DIMS + 1);
    const char *n[] = {"infer_meta of op 'EdgeShape'", "ValueError", want, NULL};
    expect_call_error(infer_on(sh, a, &in, out), PYOP_EPYTHON, n);
    in.ndim = -1;
    const char *neg[] = {"ValueError", "tensor description with -1 dimensions", NULL};
    expect_call_error(infer_on(sh, a, &in, out), PYOP_EPYTHON, neg);
    in.ndim = 1;
    in.dtype = PYOP_DTYPE_COUNT;
    snprintf(want, sizeof want, "unknown dtype %d or format %d", PYOP_DTYPE_COUNT,
             PYOP_FORMAT_COUNT - 1);
    const char *dt[] = {"ValueError", want, NULL};
    expect_call_error(infer_on(sh, a, &in, out), PYOP_EPYTHON, dt);
    in.dtype = 0;
    in.format = PYOP_FORMAT_COUNT;
    snprintf(want, sizeof want, "unknown dtype 0 or format %d", PYOP_FORMAT_COUNT);
    const char *fm[] = {"ValueError", want, NULL};
    expect_call_error(infer_on(sh, a, &in, out), PYOP_EPYTHON, fm);
    in.format = 0;
    CHECK_OK(infer_on(sh, a, &in, out));
  }
  /* One holder's input descriptions follow the host's tensors from call
   * to call (its cached TensorDesc rewritten where they differ: dtype,
   * format, a dimension's value, the rank, down or up with the same first
   * dimension); a TensorDesc the plugin kept is never rewritten. */
  const rec_op *echo = find(&r, "EdgeEcho", false);
  CHECK(echo != NULL, "EdgeEcho");
  for (int keep = 0; keep < 2; keep++) {
    pyop_attr_view a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.name = (pyop_str){"keep", 4};
    a.type = a.default_value.type = PYOP_ATTR_BOOL;
    a.default_value.u.b = keep;
    void *h = holder_of(echo, &a, 1);
    float x[8] = {0};
    static const struct {
      int32_t dtype, format, ndim;
      int64_t d0, d1;
    } calls[] = {{PYOP_DTYPE_FLOAT32, 0, 2, 2, 3}, {PYOP_DTYPE_FLOAT32, 0, 2, 2, 3},
                 {PYOP_DTYPE_INT64, 0, 2, 2, 3},   {PYOP_DTYPE_INT64, PYOP_FORMAT_NCHW, 2, 2, 3},
                 {PYOP_DTYPE_INT64, 0, 2, 2, 4},   {PYOP_DTYPE_INT64, 0, 2, 4, 2},
                 {PYOP_DTYPE_INT64, 0, 1, 4, 0},   {PYOP_DTYPE_INT64, 0, 2, 4, 2},
                 {PYOP_DTYPE_INT64, 0, 1, 5, 0},   {PYOP_DTYPE_FLOAT32, 0, 2, 2, 3}};
    for (size_t c = 0; c < sizeof calls / sizeof calls[0]; c++) {
      int64_t dims[2] = {calls[c].d0, calls[c].d1};
      pyop_tensor in = tensor_f32(x, calls[c].ndim, dims), got;
      in.dtype = calls[c].dtype;
      in.format = calls[c].format;
      memset(&got, 0, sizeof got);
      CHECK_OK(infer1(echo, h, &in, 1, ONE, &got, 1));
      CHECK(got.dtype == calls[c].dtype && got.format == calls[c].format &&
                got.ndim == calls[c].ndim && got.shape[0] == calls[c].d0 &&
                got.shape[1] == (calls[c].ndim > 1 ? calls[c].d1 : 0),
            "keep %d, call %zu: dtype %d format %d ndim %d shape %lld,%lld", keep, c, got.dtype,
            got.format, got.ndim, (long long)got.shape[0], (long long)got.shape[1]);
    }
    echo->cb->destroy_holder(h);
  }
  CHECK(py_ok("import sys; assert sys.exc_info()[0] is None"), "no exception left");
  api->reset();
  rec_clear(&r);
}

/* What EdgeProbe's execute saw of in (its report, NUL-terminated). */
static const char *probe(const rec_op *impl, pyop_tensor in) {
  static char report[257];
  void *h = holder_of(impl, NULL, 0);
  outputs o = {0};
  int rc = exec1(impl, h, &in, 1, ONE, 1, &o);
  CHECK(rc == PYOP_OK && o.mem[0] != NULL && o.t[0].nbytes == 256, "EdgeProbe: %d", rc);
  memcpy(report, o.mem[0], 256);
  report[256] = '\0';
  outputs_free(&o);
  impl->cb->destroy_holder(h);
  return report;
}

#define CHECK_PROBE(report, needle) \
  CHECK(strstr((report), (needle)) != NULL, "report lacks '%s': %s", (needle), (report))

/* One host call made with invalid arguments: PYOP_EINVAL (or status),
 * the message holding needle, nothing of the op ran. */
static void expect_refused(int rc, int status, const char *needle) {
  CHECK(rc == status && g_err_status == status, "%s: status %d (set_error %d), expected %d",
        needle, rc, g_err_status, status);
  CHECK(err_has(needle), "message lacks '%s'", needle);
}

/*
 * Tensors as an op sees them (plugins/edges, EdgeProbe): ndim, writable,
 * dtype, format, numel, repr of an input and an output, and its buffer,
 * also for tensors only a host bypassing libpyop passes: a dtype or format
 * one past its enum (the last is fine), negative or overflowing
 * dimensions, no data, an ndim past PYOP_MAX_DIMS or negative (clamped);
 * every attribute of a kept Tensor raises after its call. A dynamic input
 * of 20 tensors (more than a frame keeps inline): each is read, each is
 * released; a view of one of them kept past the call names it by its
 * number. The callbacks' argument checks: each invalid argument is
 * PYOP_EINVAL naming the callback, a callback the op lacks is
 * PYOP_EUNSUPPORTED, an input slot without items fails the call. pyop's
 * log() at its levels' ends.
 */
static void case_probe(void) {
  recorder r = {.fail_at = -1};
  CHECK_OK(load(&r, 2, "edges", "launch"));
  const rec_op *pi = find(&r, "EdgeProbe", true), *pp = find(&r, "EdgeProbe", false),
               *many = find(&r, "EdgeMany", true), *kept = find(&r, "EdgeKept", true),
               *lchy = find(&r, "Launchy", true);
  CHECK(pi && pp && many && kept && lchy, "ops registered");
  float x[6] = {1, 2, 3, 4, 5, 6};
  int64_t s23[2] = {2, 3}, s2[1] = {2};
  const char *rep = probe(pi, tensor_f32(x, 2, s23));
  CHECK_PROBE(rep, "ndim=2 writable=False out_writable=True dtype=float32 "
                   "format=ND numel=6 nbytes=24 ");
  CHECK_PROBE(rep, "repr=<pyop.Tensor shape=(2, 3) dtype=float32> "
                   "out=<pyop.Tensor shape=(256,) dtype=uint8 writable> buffer=24:f");
  rep = probe(pi, tensor_f32(x, 1, s2));
  CHECK_PROBE(rep, "ndim=1 ");
  CHECK_PROBE(rep, "repr=<pyop.Tensor shape=(2,) dtype=float32> ");
  /* dtype: the last one, one past it, far past it. */
  pyop_tensor t = tensor_f32(x, 1, s2);
  t.dtype = PYOP_DTYPE_COUNT - 1;
  t.nbytes = 2;
  rep = probe(pi, t);
  CHECK_PROBE(rep, "dtype=bool format");
  CHECK_PROBE(rep, "dtype=bool> ");
  CHECK_PROBE(rep, "buffer=2:?");
  char want[128];
  for (int32_t d = PYOP_DTYPE_COUNT; d <= 99; d += 99 - PYOP_DTYPE_COUNT) {
    t.dtype = d;
    rep = probe(pi, t);
    snprintf(want, sizeof want, "dtype=%d format=ND ", d);
    CHECK_PROBE(rep, want);
    CHECK_PROBE(rep, "dtype=?> ");
    snprintf(want, sizeof want, "buffer=BufferError: tensor has an unknown dtype %d", d);
    CHECK_PROBE(rep, want);
  }
  t = tensor_f32(x, 1, s2);
  t.format = PYOP_FORMAT_COUNT - 1;
  CHECK_PROBE(probe(pi, t), "format=FRACTAL_NZ ");
  t.format = PYOP_FORMAT_COUNT;
  snprintf(want, sizeof want, "format=%d numel=2", PYOP_FORMAT_COUNT);
  CHECK_PROBE(probe(pi, t), want);
  /* Shapes no libpyop passes. */
  int64_t neg[2] = {2, -1}, zero[1] = {0};
  t = tensor_f32(x, 2, neg);
  t.nbytes = 8;
  rep = probe(pi, t);
  CHECK_PROBE(rep, "numel=-1 ");
  CHECK_PROBE(rep, "buffer=BufferError: tensor shape has negative dimensions");
  t = tensor_f32(x, 2, s23); /* then 2**62 x 8 elements (tensor_f32 would overflow) */
  t.shape[0] = INT64_C(1) << 62;
  t.shape[1] = 8;
  t.nbytes = 8;
  CHECK_PROBE(probe(pi, t), "buffer=BufferError: tensor size overflows");
  t = tensor_f32(NULL, 1, s2);
  CHECK_PROBE(probe(pi, t), "buffer=BufferError: tensor has no data (it is a description)");
  t = tensor_f32(NULL, 1, zero);
  CHECK_PROBE(probe(pi, t), "numel=0 nbytes=0 ");
  CHECK_PROBE(probe(pi, t), "buffer=0:f");
  t = tensor_f32(x, 1, s2);
  t.ndim = PYOP_MAX_DIMS + 1;
  for (int i = 0; i < PYOP_MAX_DIMS; i++) t.shape[i] = 1;
  snprintf(want, sizeof want, "ndim=%d ", PYOP_MAX_DIMS);
  CHECK_PROBE(probe(pi, t), want);
  t.ndim = -1;
  rep = probe(pi, t);
  CHECK_PROBE(rep, "ndim=0 ");
  CHECK_PROBE(rep, "repr=<pyop.Tensor shape=() dtype=float32> ");
  /* 20 tensors in one dynamic input slot. */
  {
    enum { N = 20 };
    float vals[N];
    pyop_tensor ins[N];
    int64_t s1[1] = {1};
    for (int i = 0; i < N; i++) {
      vals[i] = (float)(i + 1);
      ins[i] = tensor_f32(&vals[i], 1, s1);
    }
    pyop_attr_view a = attr_int("keep", -1);
    void *h = holder_of(many, &a, 1);
    for (int round = 0; round < 3; round++) {
      size_t count[1] = {N};
      outputs o = {0};
      CHECK_OK(exec1(many, h, ins, 1, count, 1, &o));
      CHECK(o.mem[0] != NULL && *(float *)o.mem[0] == N * (N + 1) / 2.0f, "sum %g",
            o.mem[0] ? *(float *)o.mem[0] : -1.0f);
      outputs_free(&o);
    }
    /* A view of the slot's fourth tensor kept past the call is reported as
     * input 3 (the tensors are numbered across the slots); the next call
     * releases it. */
    a = attr_int("keep", 3);
    void *hk = holder_of(many, &a, 1);
    size_t count[1] = {N};
    outputs o = {0};
    const char *n[] = {"execute of op 'EdgeMany'", "a buffer of input 3 (a memoryview",
                       "still alive", NULL};
    expect_call_error(exec1(many, hk, ins, 1, count, 1, &o), PYOP_EPYTHON, n);
    outputs_free(&o);
    CHECK_OK(exec1(many, h, ins, 1, count, 1, &o));
    outputs_free(&o);
    many->cb->destroy_holder(hk);
    many->cb->destroy_holder(h);
  }
  /* What EdgeProbe and EdgeMany kept: every attribute raises now. */
  {
    void *h = holder_of(kept, NULL, 0);
    outputs o = {0};
    CHECK_OK(exec1(kept, h, &t, 1, ONE, 1, &o));
    outputs_free(&o);
    kept->cb->destroy_holder(h);
  }
  /* The callbacks' own checks of the host's arguments. */
  {
    t = tensor_f32(x, 1, s2);
    pyop_tensor_list lists[1] = {{&t, 1}}, nolist[1] = {{NULL, 2}}, noitem[1] = {{NULL, 1}};
    pyop_tensor out;
    outputs o = {0};
    pyop_exec_services svc = {sizeof svc, &o, alloc_output, alloc_workspace};
    void *ph = holder_of(pp, NULL, 0), *ih = holder_of(pi, NULL, 0);
    pyop_infer_args ia = {sizeof ia, lists, 1, &out, 1, NULL, NULL};
    clear_error();
    expect_refused(pp->cb->infer_meta(NULL, &ia), PYOP_EINVAL, "bridge infer_meta: invalid");
    clear_error();
    expect_refused(pp->cb->infer_meta(ph, NULL), PYOP_EINVAL, "bridge infer_meta: invalid");
    /* Shorter than a loader of ABI 1.0 sends them (a member cut). */
    ia.struct_size = PYOP_MEMBER_END(pyop_infer_args, n_outputs) - 1;
    clear_error();
    expect_refused(pp->cb->infer_meta(ph, &ia), PYOP_EINVAL, "bridge infer_meta: invalid");
    ia.struct_size = sizeof ia;
    ia.inputs = NULL;
    clear_error();
    expect_refused(pp->cb->infer_meta(ph, &ia), PYOP_EINVAL, "bridge infer_meta: invalid");
    ia.inputs = lists;
    ia.outputs = NULL;
    clear_error();
    expect_refused(pp->cb->infer_meta(ph, &ia), PYOP_EINVAL, "bridge infer_meta: invalid");
    ia.outputs = &out;
    /* Nothing to infer without inputs and outputs, but not refused as
     * invalid: the op's own count check says what is wrong. */
    pyop_infer_args none = {sizeof none, NULL, 0, NULL, 0, NULL, NULL};
    clear_error();
    expect_refused(pp->cb->infer_meta(ph, &none), PYOP_EINVAL,
                   "bridge infer_meta of op 'EdgeProbe': 0 outputs asked, the prototype has 1");
    clear_error();
    expect_refused(pp->cb->infer_meta(ih, &ia), PYOP_EINVAL,
                   "bridge infer_meta of op 'EdgeProbe': 1 output asked, the prototype has");
    CHECK_OK(pp->cb->infer_meta(ph, &ia));
    pyop_exec_args ea = {sizeof ea, lists, 1, 1, &svc, NULL, NULL};
    clear_error();
    expect_refused(pi->cb->execute(NULL, &ea), PYOP_EINVAL, "bridge execute: invalid");
    clear_error();
    expect_refused(pi->cb->execute(ih, NULL), PYOP_EINVAL, "bridge execute: invalid");
    ea.struct_size = PYOP_MEMBER_END(pyop_exec_args, stream) - 1;
    clear_error();
    expect_refused(pi->cb->execute(ih, &ea), PYOP_EINVAL, "bridge execute: invalid");
    ea.struct_size = sizeof ea;
    ea.inputs = NULL;
    clear_error();
    expect_refused(pi->cb->execute(ih, &ea), PYOP_EINVAL, "bridge execute: invalid");
    /* A slot claiming tensors without items: the call fails naming it. */
    ea.inputs = nolist;
    clear_error();
    expect_refused(pi->cb->execute(ih, &ea), PYOP_EPYTHON,
                   "ValueError: input slot 0 has 2 tensors and no items");
    ea.inputs = noitem;
    clear_error();
    expect_refused(pi->cb->execute(ih, &ea), PYOP_EPYTHON,
                   "ValueError: input slot 0 has 1 tensor and no items");
    CHECK(o.mem[0] == NULL, "no refused call ran the op");
    /* A callback the op does not have (the host called another op's
     * function on this holder). */
    clear_error();
    expect_refused(lchy->cb->compile(ih, &(pyop_compile_args){sizeof(pyop_compile_args), lists, 1,
                                                               &out, 1, NULL, NULL}),
                   PYOP_EUNSUPPORTED, "op 'EdgeProbe' has no compile");
    clear_error();
    expect_refused(pi->cb->execute(ph, &ea), PYOP_EUNSUPPORTED, "op 'EdgeProbe' has no execute");
    pyop_attr_view alpha = attr_float("alpha", 0.5);
    void *lh = holder_of(lchy, &alpha, 1);
    pyop_tensor_list two[2] = {{&t, 1}, {&t, 1}};
    pyop_compile_args ca = {sizeof ca, two, 2, &out, 1, NULL, NULL};
    clear_error();
    expect_refused(lchy->cb->compile(NULL, &ca), PYOP_EINVAL, "bridge compile: invalid");
    clear_error();
    expect_refused(lchy->cb->compile(lh, NULL), PYOP_EINVAL, "bridge compile: invalid");
    ca.struct_size = sizeof ca - 1;
    clear_error();
    expect_refused(lchy->cb->compile(lh, &ca), PYOP_EINVAL, "bridge compile: invalid");
    ca.struct_size = sizeof ca;
    ca.inputs = NULL;
    clear_error();
    expect_refused(lchy->cb->compile(lh, &ca), PYOP_EINVAL, "bridge compile: invalid");
    ca.inputs = two;
    ca.outputs = NULL;
    clear_error();
    expect_refused(lchy->cb->compile(lh, &ca), PYOP_EPYTHON,
                   "ValueError: output descriptions missing");
    pyop_declare_args da = {sizeof da, two, 2, &out, 1, NULL, NULL, NULL};
    clear_error();
    expect_refused(lchy->cb->declare_launch_args(NULL, &da), PYOP_EINVAL,
                   "bridge declare_launch_args: invalid");
    clear_error();
    expect_refused(lchy->cb->declare_launch_args(lh, NULL), PYOP_EINVAL,
                   "bridge declare_launch_args: invalid");
    da.struct_size = sizeof da - 1;
    clear_error();
    expect_refused(lchy->cb->declare_launch_args(lh, &da), PYOP_EINVAL,
                   "bridge declare_launch_args: invalid");
    da.struct_size = sizeof da;
    da.inputs = NULL;
    clear_error();
    expect_refused(lchy->cb->declare_launch_args(lh, &da), PYOP_EINVAL,
                   "bridge declare_launch_args: invalid");
    clear_error();
    expect_refused(lchy->cb->declare_launch_args(ih, &(pyop_declare_args){sizeof da, two, 1,
                                                                            &out, 1, NULL, NULL,
                                                                            NULL}),
                   PYOP_EUNSUPPORTED, "op 'EdgeProbe' has no declare_launch_args");
    lchy->cb->destroy_holder(lh);
    pi->cb->destroy_holder(ih);
    pp->cb->destroy_holder(ph);
    outputs_free(&o);
  }
  /* The arguments of infer_meta and execute as a loader of ABI 1.0 sends
   * them (shorter: without add_output, input_flags): taken, and what they
   * lack is not read, though the bytes past struct_size hold a sink and
   * flags: a dynamic output is refused naming ABI 1.0, an input the flags
   * mark mutated stays read-only (a real bug until the both-sides pass,
   * session 14: every such call was refused as invalid arguments). */
  {
    t = tensor_f32(x, 1, s2);
    pyop_tensor_list lists[1] = {{&t, 1}};
    pyop_tensor out;
    memset(&out, 0, sizeof out);
    dyn_sink sk = {.refuse_at = -1};
    void *ph = holder_of(pp, NULL, 0);
    pyop_infer_args ia = {PYOP_MEMBER_END(pyop_infer_args, n_outputs), lists, 1, &out, 1, &sk,
                          dyn_add};
    clear_error();
    CHECK(pp->cb->infer_meta(ph, &ia) == PYOP_OK && out.ndim == 1 && out.shape[0] == 1 &&
              out.dtype == PYOP_DTYPE_UINT8,
          "infer_meta with 1.0 arguments: %s", g_err);
    pp->cb->destroy_holder(ph);
    const rec_op *dyn = find(&r, "EdgeDyn", false);
    CHECK(dyn != NULL, "EdgeDyn registered");
    pyop_attr_view n2 = attr_int("n", 2);
    void *dh = holder_of(dyn, &n2, 1);
    clear_error();
    expect_refused(dyn->cb->infer_meta(dh, &ia), PYOP_EPYTHON,
                   "infer_meta output 0 is a list, but the host's libpyop does not take "
                   "dynamic outputs (bridge ABI 1.0)");
    CHECK(sk.n == 0, "add_output past struct_size called %d times", sk.n);
    dyn->cb->destroy_holder(dh);
    outputs o = {0};
    pyop_exec_services svc = {sizeof svc, &o, alloc_output, alloc_workspace};
    static const uint32_t mutated[1] = {PYOP_INPUT_MUTATED};
    pyop_exec_args ea = {PYOP_MEMBER_END(pyop_exec_args, stream), lists, 1, 1, &svc, NULL,
                         mutated};
    void *ih = holder_of(pi, NULL, 0);
    clear_error();
    CHECK(pi->cb->execute(ih, &ea) == PYOP_OK && o.mem[0] != NULL, "execute with 1.0 arguments: "
          "%s", g_err);
    char report[257] = "";
    if (o.mem[0] != NULL)
      memcpy(report, o.mem[0], 256);
    CHECK_PROBE(report, "writable=False out_writable=True");
    outputs_free(&o);
    pi->cb->destroy_holder(ih);
  }
  /* pyop's log(): levels error (0) to debug (3) reach the host's log as
   * they are; one past either end is refused. */
  for (int level = 0; level <= 3; level += 3) {
    char code[256];
    snprintf(code, sizeof code, "import sys; sys.modules['pyop._native'].log(%d, 'edge log %d')", level,
             level);
    g_log_level = -1;
    CHECK(py_ok(code), "log(%d)", level);
    snprintf(want, sizeof want, "edge log %d", level);
    CHECK(g_log_level == level && strcmp(g_log, want) == 0, "logged %d '%s'", g_log_level, g_log);
  }
  g_log_level = -1;
  CHECK(py_ok("def _levels():  # locals only: nothing keeps pyop._native\n"
              "    import sys\n"
              "    for lv in (-1, 4):\n"
              "        try:\n"
              "            sys.modules['pyop._native'].log(lv, 'never')\n"
              "        except ValueError as e:\n"
              "            assert str(e) == 'unknown log level %d' % lv, str(e)\n"
              "        else:\n"
              "            raise AssertionError(lv)\n"
              "_levels()\n"
              "del _levels\n"),
        "log levels past the ends refused");
  CHECK(g_log_level == -1, "a refused level logged nothing");
  CHECK(py_ok("import sys; assert sys.exc_info()[0] is None"), "no exception left");
  api->reset();
  rec_clear(&r);
}

/* One execute of Poke (what) on x, whose buffer may be smaller than its
 * shape (nbytes): its status, checked as infer_with does. */
static void poke(const rec_op *impl, const char *what, uint64_t nbytes, int status,
                 const char *const *needles) {
  float x[2] = {1, 2};
  int64_t s[1] = {2};
  pyop_tensor in = tensor_f32(x, 1, s);
  in.nbytes = nbytes;
  pyop_attr_view a = attr_str("what", what);
  void *h = holder_of(impl, &a, 1);
  outputs o = {0};
  int rc = exec1(impl, h, &in, 1, ONE, 1, &o);
  if (status != PYOP_OK)
    expect_call_error(rc, status, needles);
  else
    CHECK(rc == PYOP_OK, "Poke %s: %d", what, rc);
  CHECK(x[0] == 1.0f && x[1] == 2.0f, "Poke %s: the input is as it was", what);
  outputs_free(&o);
  impl->cb->destroy_holder(h);
}

/*
 * Views and contexts from the op's side: an input not declared in
 * mutates_args is read-only, an input buffer smaller than its shape is
 * never exported, a context method of another callback kind raises (the
 * mutation check: each check could be dropped unnoticed). Only a host that
 * bypasses libpyop's own checks reaches some of these: this harness.
 */
static void case_views(void) {
  recorder r = {.fail_at = -1};
  CHECK_OK(load(&r, 1, "views"));
  const rec_op *impl = find(&r, "Poke", true);
  CHECK(impl != NULL, "Poke registered");
  poke(impl, "read", 8, PYOP_OK, NULL);
  {
    /* struct.pack_into asks for a writable buffer (and words the refusal
     * its own way); what counts is that the input is unchanged. */
    const char *n[] = {"execute of op 'Poke'", "TypeError", "read-write", NULL};
    poke(impl, "write", 8, PYOP_EPYTHON, n);
  }
  {
    const char *n[] = {"BufferError", "tensor of 2 elements needs 8 bytes, buffer has 4", NULL};
    poke(impl, "read", 4, PYOP_EPYTHON, n);
  }
  {
    const char *n[] = {"RuntimeError", "set_artifact() is only available in compile (this is a "
                       "execute context)", NULL};
    poke(impl, "artifact", 8, PYOP_EPYTHON, n);
  }
  {
    const char *n[] = {"RuntimeError", "add_workspace() is only available in "
                       "declare_launch_args (this is a execute context)", NULL};
    poke(impl, "workspace", 8, PYOP_EPYTHON, n);
  }
  {
    float x[2] = {1, 2};
    int64_t s[1] = {2};
    pyop_tensor in = tensor_f32(x, 1, s);
    pyop_tensor_list lists[1] = {{&in, 1}};
    pyop_attr_view a = attr_str("what", "output");
    void *h = holder_of(impl, &a, 1);
    pyop_compile_args ca = {sizeof ca, lists, 1, &in, 1, NULL, NULL};
    clear_error();
    const char *n[] = {"RuntimeError", "malloc_output_tensor() is only available in execute "
                       "(this is a compile context)", NULL};
    expect_call_error(impl->cb->compile(h, &ca), PYOP_EPYTHON, n);
    impl->cb->destroy_holder(h);
  }
  /* Context numbers at their bounds: the last dtype and PYOP_MAX_DIMS
   * dimensions are taken, one more of each is refused before the host is
   * asked; an input index past the last is refused. */
  {
    char what[32];
    snprintf(what, sizeof what, "dtype %d", PYOP_DTYPE_COUNT - 1);
    poke(impl, what, 8, PYOP_OK, NULL);
    snprintf(what, sizeof what, "dtype %d", PYOP_DTYPE_COUNT);
    char want[64];
    snprintf(want, sizeof want, "data type value %d is out of range [0, %d]", PYOP_DTYPE_COUNT,
             PYOP_DTYPE_COUNT - 1);
    const char *n[] = {"ValueError", want, NULL};
    poke(impl, what, 8, PYOP_EPYTHON, n);
    snprintf(what, sizeof what, "dims %d", PYOP_MAX_DIMS);
    poke(impl, what, 8, PYOP_OK, NULL);
    snprintf(what, sizeof what, "dims %d", PYOP_MAX_DIMS + 1);
    snprintf(want, sizeof want, "shape has %d dimensions, at most %d are supported",
             PYOP_MAX_DIMS + 1, PYOP_MAX_DIMS);
    const char *d[] = {"ValueError", want, NULL};
    poke(impl, what, 8, PYOP_EPYTHON, d);
    const char *ref[] = {"IndexError", "input index 1 out of range (the op has 1 input)", NULL};
    poke(impl, "ref_past", 8, PYOP_EPYTHON, ref);
  }
  poke(impl, "read", 8, PYOP_OK, NULL);
  {
    /* A flat buffer request (hashlib's PyBUF_SIMPLE) of a 2-D tensor sees
     * its bytes as one dimension (both-sides pass, session 14: only a
     * writable flat request, struct.pack_into, was made, never looked at). */
    float x[6] = {1, 2, 3, 4, 5, 6};
    int64_t s[2] = {2, 3};
    pyop_tensor in = tensor_f32(x, 2, s);
    pyop_attr_view a = attr_str("what", "flat");
    void *h = holder_of(impl, &a, 1);
    outputs o = {0};
    clear_error();
    int rc = exec1(impl, h, &in, 1, ONE, 1, &o);
    CHECK(rc == PYOP_OK, "Poke flat: %d %s", rc, g_err);
    outputs_free(&o);
    impl->cb->destroy_holder(h);
  }
  CHECK(py_ok("import sys; assert sys.exc_info()[0] is None"), "no exception left");
  api->reset();
  rec_clear(&r);
}

static void expect_load_error(const char *what, int status, const char *const *needles, int n,
                              const char *p0, const char *p1) {
  recorder r = {.fail_at = -1};
  int rc = n == 1 ? load(&r, 1, p0) : load(&r, 2, p0, p1);
  CHECK(rc == status, "%s: status %d, expected %d", what, rc, status);
  CHECK(r.n == 0 || status == PYOP_ECONFLICT, "%s: nothing registered", what);
  for (size_t i = 0; needles[i] != NULL; i++)
    CHECK(err_has(needles[i]), "%s: message lacks '%s'", what, needles[i]);
  CHECK(py_ok("import sys\n"
              "assert not [m for m in sys.modules if m.startswith('_pyop_plugin_')], "
              "[m for m in sys.modules if m.startswith('_pyop_plugin_')]\n"
              "assert '/nonexistent/added-by-plugin' not in sys.path\n"),
        "%s: no plugin state left", what);
  rec_clear(&r);
}

/* Callbacks libpyop cannot call synchronously (issue 17, item 9): refused at
 * the decorator with op, method, why and file:line; made async after
 * decoration, each call fails (never PYOP_OK) and the coroutine or
 * generator is closed unrun (no "never awaited" warning). */
static void case_sync(void) {
  static const char why[] = "is a coroutine function (async def): libpyop calls it synchronously";
  static const char late[] = "instead of running: libpyop calls it synchronously, so its body "
                             "would never run";
  char file[4200], at[4300];
  snprintf(file, sizeof file, "%s/bad/async_execute.py", g_plugins);
  snprintf(at, sizeof at, "%s:%u", file, line_of(file, "async def execute"));
  {
    const char *n[] = {"TypeError", "op 'AsyncExecute'", "execute() of class AsyncExecuteImpl",
                       at, why, NULL};
    expect_load_error("async execute", PYOP_EPLUGIN, n, 1, "bad/async_execute.py", NULL);
  }
  snprintf(file, sizeof file, "%s/bad/ge_async_execute.py", g_plugins);
  snprintf(at, sizeof at, "%s:%u", file, line_of(file, "async def execute"));
  {
    const char *n[] = {"TypeError", "op 'GeAsyncExecute'", "execute() of class "
                       "GeAsyncExecuteImpl", at, why, NULL};
    expect_load_error("GE async execute", PYOP_EPLUGIN, n, 1, "bad/ge_async_execute.py", NULL);
  }

  CHECK(py_ok("import warnings\n"
              "_sync_catch = warnings.catch_warnings(record=True)\n"
              "_sync_seen = _sync_catch.__enter__()\n"
              "warnings.simplefilter('always')\n"),
        "record warnings");
  recorder r = {.fail_at = -1};
  CHECK_OK(load(&r, 1, "late"));
  const rec_op *inplace = find(&r, "LateInplace", true), *infer = find(&r, "LateInfer", false),
               *ge = find(&r, "GeLate", true);
  CHECK(inplace && infer && ge, "late ops registered");
  if (inplace && infer && ge) {
    float x[2] = {1, 2};
    int64_t s[1] = {2};
    pyop_tensor in = tensor_f32(x, 1, s), out;
    pyop_tensor_list lists[1] = {{&in, 1}};
    void *h = holder_of(inplace, NULL, 0);
    outputs o = {0};
    {
      const char *n[] = {"execute of op 'LateInplace'", "TypeError", "returned a coroutine", late,
                         NULL};
      expect_call_error(exec1(inplace, h, &in, 1, ONE, 0, &o), PYOP_EPYTHON, n);
    }
    outputs_free(&o);
    {
      pyop_compile_args ca = {sizeof ca, lists, 1, NULL, 0, NULL, NULL};
      clear_error();
      const char *n[] = {"compile of op 'LateInplace'", "returned a generator", late, NULL};
      expect_call_error(inplace->cb->compile(h, &ca), PYOP_EPYTHON, n);
    }
    {
      pyop_declare_args da = {sizeof da, lists, 1, NULL, 0, NULL, NULL, NULL};
      clear_error();
      const char *n[] = {"declare_launch_args of op 'LateInplace'", "returned an async_generator",
                         late, NULL};
      expect_call_error(inplace->cb->declare_launch_args(h, &da), PYOP_EPYTHON, n);
    }
    inplace->cb->destroy_holder(h);
    h = holder_of(infer, NULL, 0);
    {
      const char *n[] = {"infer_meta of op 'LateInfer'", "returned a coroutine", late, NULL};
      expect_call_error(infer1(infer, h, &in, 1, ONE, &out, 1), PYOP_EPYTHON, n);
    }
    infer->cb->destroy_holder(h);
    /* The GE layer binds an implementation's kernel when the class is
     * registered (GE's kernel_bindings): the execute assigned afterwards is
     * not what runs, so no coroutine is ever made; the registered one runs. */
    h = holder_of(ge, NULL, 0);
    CHECK_OK(exec1(ge, h, &in, 1, ONE, 1, &o));
    outputs_free(&o);
    ge->cb->destroy_holder(h);
  }
  api->reset();
  rec_clear(&r);
  CHECK(py_ok("import gc\n"
              "gc.collect()\n"
              "_sync_catch.__exit__(None, None, None)\n"
              "_bad = [str(w.message) for w in _sync_seen if 'never awaited' in str(w.message)]\n"
              "assert not _bad, _bad\n"
              "del _sync_catch, _sync_seen\n"),
        "every coroutine was closed unrun");
}

/*
 * Broken plugins (plugins/bad): each load fails PYOP_EPLUGIN naming the
 * exception type, the op, the parameter and file:line; two definitions of
 * one op type both reach the registrar (which decides); a good plugin after
 * a bad one leaves nothing; a registrar refusing a descriptor, or answering
 * with a positive status, leaves no plugin state; a plugin replacing a
 * submodule of the pyop package, or changing sys.path, is undone.
 */
static void case_bad(void) {
  {
    const char *n[] = {"TypeError", "op 'BadInput'", "execute()", "'z'", "impl_input_name.py:",
                       "must be input 'y'", NULL};
    expect_load_error("impl input", PYOP_EPLUGIN, n, 1, "bad/impl_input_name.py", NULL);
  }
  {
    const char *n[] = {"TypeError", "op 'BadAttrType'", "'table'", "attr_type.py:",
                       "unsupported attribute type", NULL};
    expect_load_error("attr type", PYOP_EPLUGIN, n, 1, "bad/attr_type.py", NULL);
  }
  {
    const char *n[] = {"TypeError", "op 'BadExtraAttr'", "'beta'", "impl_extra_attr.py:",
                       "not an attribute", NULL};
    expect_load_error("extra attr", PYOP_EPLUGIN, n, 1, "bad/impl_extra_attr.py", NULL);
  }
  {
    const char *n[] = {"TypeError", "'alpha'", "keyword-only", "attr_positional.py:", NULL};
    expect_load_error("positional attr", PYOP_EPLUGIN, n, 1, "bad/attr_positional.py", NULL);
  }
  {
    const char *n[] = {"TypeError", "missing return annotation", "no_return.py:", NULL};
    expect_load_error("no return", PYOP_EPLUGIN, n, 1, "bad/no_return.py", NULL);
  }
  {
    /* Two definitions of one op type both reach the registrar, which
     * decides (libpyop: a conflict naming both; see tests/e2e). */
    recorder r = {.fail_at = -1};
    CHECK_OK(load(&r, 2, "bad/dup_a.py", "bad/dup_b.py"));
    CHECK(r.n == 2, "duplicate: both prototypes handed over (%zu)", r.n);
    api->reset();
    rec_clear(&r);
  }
  {
    const char *n[] = {"SystemExit: 3", "sys_exit.py", NULL};
    expect_load_error("sys.exit", PYOP_EPLUGIN, n, 1, "bad/sys_exit.py", NULL);
    const char *order[] = {"loading Python plugins failed: ", "SystemExit: 3", "Traceback",
                           "sys_exit.py", NULL};
    CHECK(err_in_order(order), "sys.exit: not what failed, then the exception: %s", g_err);
  }
  {
    const char *n[] = {"KeyboardInterrupt", "plugin interrupted", NULL};
    expect_load_error("KeyboardInterrupt", PYOP_EINTR, n, 1, "bad/keyboard.py", NULL);
  }
  {
    const char *n[] = {"SyntaxError", "syntax_error.py", NULL};
    expect_load_error("syntax", PYOP_EPLUGIN, n, 1, "bad/syntax_error.py", NULL);
  }
  {
    const char *n[] = {"ModuleNotFoundError", "pyop_no_such_module_anywhere", "import_error.py",
                       NULL};
    expect_load_error("import", PYOP_EPLUGIN, n, 1, "bad/import_error.py", NULL);
  }
  {
    const char *n[] = {"FileNotFoundError", "missing.py", NULL};
    expect_load_error("missing", PYOP_EPLUGIN, n, 1, "bad/missing.py", NULL);
  }
  /* A good plugin after a bad one in the same load: nothing of it stays. */
  {
    const char *n[] = {"SystemExit", NULL};
    expect_load_error("good then bad", PYOP_EPLUGIN, n, 2, "launch", "bad/sys_exit.py");
  }
  /* The registrar refusing the 2nd descriptor: its status, no plugin state. */
  {
    recorder r = {.fail_at = 1};
    clear_error();
    int rc = load(&r, 1, "launch");
    CHECK(rc == PYOP_ECONFLICT && err_has("registrar says no"), "registrar failure %d", rc);
    CHECK(py_ok("import sys\nassert not [m for m in sys.modules if m.startswith('_pyop_plugin_')]"),
          "no modules after registrar failure");
    rec_clear(&r);
  }
  /* A registrar returning a positive status (outside the contract) at the
   * prototype or at the implementation: PYOP_EINTERNAL, nothing kept. */
  for (int at = 0; at < 2; at++) {
    recorder r = {.fail_at = at, .fail_status = 7};
    clear_error();
    int rc = load(&r, 1, "launch");
    CHECK(rc == PYOP_EINTERNAL, "registrar returning 7 at add %d: %d", at, rc);
    CHECK(r.n == (size_t)at, "%zu descriptors recorded", r.n);
    CHECK(py_ok("import sys\nassert not [m for m in sys.modules if m.startswith('_pyop_plugin_')]"),
          "no modules after a positive registrar status");
    rec_clear(&r);
  }
  /* A plugin that loads fine but replaced a submodule of the pyop package
   * and added a non-module under its name: both are put back (only the
   * package's entries are, after a successful load). */
  {
    recorder r = {.fail_at = -1};
    CHECK_OK(load(&r, 1, "guard"));
    CHECK(r.n == 1, "guard: %zu descriptors", r.n);
    CHECK(py_ok("import sys, types\n"
                "assert isinstance(sys.modules['pyop.launch'], types.ModuleType), "
                "sys.modules['pyop.launch']\n"
                "assert 'pyop._guard_added' not in sys.modules\n"),
          "the pyop package's sys.modules entries restored");
    api->reset();
    rec_clear(&r);
  }
  /* A plugin changing sys.path: the loader restores it. */
  {
    recorder r = {.fail_at = -1};
    CHECK(py_ok("import sys; _p = list(sys.path)"), "save");
    CHECK_OK(load(&r, 1, "bad/path_change.py"));
    CHECK(py_ok("import sys; assert sys.path == _p, sys.path"), "sys.path restored");
    api->reset();
    rec_clear(&r);
  }
  /* And a good load still works afterwards. */
  recorder r = {.fail_at = -1};
  CHECK_OK(load(&r, 1, "launch"));
  CHECK(r.n == 2, "good load after failures");
  api->reset();
  rec_clear(&r);
}

/*
 * A plugin keeping what its call lent it (plugins/escape): a kept Tensor or
 * context raises when used after the call; a memoryview of an input kept
 * past the call fails that call; a kept view of an output fails its call
 * and every later call of that instance, while other instances work (numpy
 * views too, when numpy is there); a Tensor kept with a view of it is not
 * held by the bridge once the view is released; a Tensor kept where shutdown cannot drop
 * it is the one "still referenced" warning main() expects (logged while
 * interpreter_status still says the bridge's Python runs).
 */
static void case_escape(void) {
  recorder r = {.fail_at = -1};
  CHECK_OK(load(&r, 1, "escape"));
  const rec_op *impl = find(&r, "Escape", true);
  float x[4] = {1, 2, 3, 4};
  int64_t s[2] = {2, 2};
  pyop_tensor in = tensor_f32(x, 2, s);
  outputs o = {0};
  pyop_attr_view a = attr_str("mode", "keep");
  void *keep = holder_of(impl, &a, 1);
  CHECK_OK(exec1(impl, keep, &in, 1, ONE, 1, &o));
  outputs_free(&o);
  /* Another call uses what the first one kept: everything raises. */
  a = attr_str("mode", "use_kept");
  void *use = NULL;
  use = holder_of(impl, &a, 1);
  CHECK_OK(exec1(impl, use, &in, 1, ONE, 1, &o));
  outputs_free(&o);
  /* A memoryview kept after the call fails that call. */
  a = attr_str("mode", "keep_view");
  void *kv = holder_of(impl, &a, 1);
  int rc = exec1(impl, kv, &in, 1, ONE, 1, &o);
  const char *n[] = {"execute of op 'Escape'", "a buffer of input 0", "still alive", NULL};
  expect_call_error(rc, PYOP_EPYTHON, n);
  outputs_free(&o);
  a = attr_str("mode", "drop");
  void *drop = holder_of(impl, &a, 1);
  CHECK_OK(exec1(impl, drop, &in, 1, ONE, 1, &o));
  outputs_free(&o);
  /* A kept view of an output fails its call, and every later call of that
   * instance is refused (its code would write through the view into the
   * output the host freed) until the view is released. */
  a = attr_str("mode", "keep_out_write");
  void *kw = holder_of(impl, &a, 1);
  const char *n_out[] = {"execute of op 'Escape'", "a buffer of output 0", "still alive",
                         "refused until that view is released", NULL};
  expect_call_error(exec1(impl, kw, &in, 1, ONE, 1, &o), PYOP_EPYTHON, n_out);
  outputs_free(&o); /* the host frees the output of the failed call */
  for (int i = 0; i < 2; i++) {
    const char *n_ref[] = {"execute of op 'Escape'", "refused", "a buffer of output 0",
                           "outlived an earlier call", "until it is released", NULL};
    expect_call_error(exec1(impl, kw, &in, 1, ONE, 1, &o), PYOP_ESTATE, n_ref);
    CHECK(o.mem[0] == NULL, "a refused call runs no plugin code");
    outputs_free(&o);
  }
  /* Other instances still work; "drop" releases the view: kw works again. */
  CHECK_OK(exec1(impl, drop, &in, 1, ONE, 1, &o));
  outputs_free(&o);
  CHECK_OK(exec1(impl, kw, &in, 1, ONE, 1, &o));
  outputs_free(&o);
  impl->cb->destroy_holder(kw);
  /* numpy, when available: zero-copy, read-only inputs, writable outputs. */
  if (py_ok("import numpy")) {
    a = attr_str("mode", "numpy");
    void *np = holder_of(impl, &a, 1);
    CHECK_OK(exec1(impl, np, &in, 1, ONE, 1, &o));
    float *res = o.mem[0];
    CHECK(res[0] == 3 && res[3] == 12, "numpy result");
    outputs_free(&o);
    a = attr_str("mode", "keep_numpy");
    void *kn = holder_of(impl, &a, 1);
    const char *n2[] = {"a buffer of output 0", "still alive", NULL};
    expect_call_error(exec1(impl, kn, &in, 1, ONE, 1, &o), PYOP_EPYTHON, n2);
    outputs_free(&o);
    CHECK_OK(exec1(impl, drop, &in, 1, ONE, 1, &o));
    outputs_free(&o);
    impl->cb->destroy_holder(kn);
    impl->cb->destroy_holder(np);
  } else {
    fprintf(stderr, "note: numpy not available, numpy checks skipped\n");
  }
  /* A Tensor kept with a memoryview of it: the call fails; once the view
   * is released, the bridge holds the Tensor no more than one kept without
   * a view (it is not put back for reuse while the plugin keeps it: batch
   * 15 survivor bridge.b15.tensor.cache_takes_kept_tensor). */
  a = attr_str("mode", "keep_both");
  void *kb = holder_of(impl, &a, 1);
  const char *n_both[] = {"execute of op 'Escape'", "a buffer of input 0", "still alive", NULL};
  expect_call_error(exec1(impl, kb, &in, 1, ONE, 1, &o), PYOP_EPYTHON, n_both);
  outputs_free(&o);
  a = attr_str("mode", "keep_plain");
  void *kp = holder_of(impl, &a, 1);
  CHECK_OK(exec1(impl, kp, &in, 1, ONE, 1, &o));
  outputs_free(&o);
  a = attr_str("mode", "release");
  void *rel = holder_of(impl, &a, 1);
  CHECK_OK(exec1(impl, rel, &in, 1, ONE, 1, &o));
  outputs_free(&o);
  CHECK_OK(exec1(impl, kb, &in, 1, ONE, 1, &o)); /* compares the two kept Tensors */
  outputs_free(&o);
  CHECK_OK(exec1(impl, drop, &in, 1, ONE, 1, &o));
  outputs_free(&o);
  impl->cb->destroy_holder(rel);
  impl->cb->destroy_holder(kp);
  impl->cb->destroy_holder(kb);
  /* A Tensor kept where reset/shutdown cannot drop it: the bridge must stay
   * mapped (main() then dlcloses it and finalises Python). */
  a = attr_str("mode", "stash_global");
  void *sg = holder_of(impl, &a, 1);
  CHECK_OK(exec1(impl, sg, &in, 1, ONE, 1, &o));
  outputs_free(&o);
  impl->cb->destroy_holder(sg);
  impl->cb->destroy_holder(drop);
  impl->cb->destroy_holder(kv);
  impl->cb->destroy_holder(use);
  impl->cb->destroy_holder(keep);
  api->reset();
  rec_clear(&r);
}

static pyop_attr_view attr_dtype(const char *name, int32_t dtype) {
  pyop_attr_view a;
  memset(&a, 0, sizeof a);
  a.struct_size = sizeof a;
  a.name = (pyop_str){name, strlen(name)};
  a.type = PYOP_ATTR_DTYPE;
  a.default_value.type = PYOP_ATTR_DTYPE;
  a.default_value.u.dtype = dtype;
  return a;
}

/*
 * An ordinary op (plugins/typed: typing subscriptions of Tensor, pyop names
 * as plugin globals, exceptions inside execute) run over two loads: nothing
 * of the bridge may stay referenced, so shutdown must free pyop._native and
 * its types without the "still referenced" warning (checked in main).
 */
static void case_clean(void) {
  for (int round = 0; round < 2; round++) {
    recorder r = {.fail_at = -1};
    CHECK_OK(load(&r, 1, "typed"));
    const rec_op *proto = find(&r, "Typed", false), *impl = find(&r, "Typed", true);
    CHECK(proto != NULL && impl != NULL, "Typed registered");
    CHECK(proto->n_inputs == 3 && proto->input_kinds[1] == PYOP_IO_OPTIONAL &&
              proto->input_kinds[2] == PYOP_IO_DYNAMIC,
          "Typed inputs");
    float x[4] = {1, 2, 3, 4}, b[4] = {0}, c[4] = {5, 6, 7, 8};
    int64_t s[1] = {4};
    pyop_tensor ins[4] = {tensor_f32(x, 1, s), tensor_f32(b, 1, s), tensor_f32(c, 1, s),
                          tensor_f32(c, 1, s)};
    pyop_attr_view attrs[2] = {attr_str("mode", "ok"), attr_dtype("out_dtype", PYOP_DTYPE_FLOAT32)};
    void *ph = holder_of(proto, attrs, 2), *ih = holder_of(impl, attrs, 2);
    size_t with_bias[3] = {1, 1, 2}, without[3] = {1, 0, 0};
    pyop_tensor desc;
    memset(&desc, 0, sizeof desc);
    CHECK_OK(infer1(proto, ph, ins, 3, with_bias, &desc, 1));
    CHECK(desc.ndim == 1 && desc.shape[0] == 4 && desc.dtype == PYOP_DTYPE_FLOAT32, "infer");
    for (int i = 0; i < 20; i++) {
      outputs o = {0};
      CHECK_OK(exec1(impl, ih, ins, 3, i % 2 ? with_bias : without, 1, &o));
      CHECK(((float *)o.mem[0])[3] == 4.0f, "Typed output");
      outputs_free(&o);
    }
    /* An exception escaping execute (its traceback holds the Tensors). */
    attrs[0] = attr_str("mode", "raise");
    void *rh = holder_of(impl, attrs, 2);
    outputs o = {0};
    const char *n[] = {"execute of op 'Typed'", "failing on purpose", NULL};
    expect_call_error(exec1(impl, rh, ins, 3, with_bias, 1, &o), PYOP_EPYTHON, n);
    outputs_free(&o);
    impl->cb->destroy_holder(rh);
    impl->cb->destroy_holder(ih);
    proto->cb->destroy_holder(ph);
    api->reset();
    rec_clear(&r);
  }
}

static void write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  CHECK(f != NULL, "open %s: %s", path, strerror(errno));
  fputs(text, f);
  fclose(f);
}

static const char reload_src[] =
    "import pyop\n"
    "from pyop import TensorDesc\n"
    "@pyop.register_op(op_type='Reload')\n"
    "def reload_op(x: TensorDesc) -> TensorDesc:\n"
    "    return x\n"
    "@pyop.register_op_impl(op_type='Reload')\n"
    "class ReloadImpl:\n"
    "    def execute(self, x):\n"
    "        out = pyop.get_execute_ctx().malloc_output_tensor(0, (1,), 'float32')\n"
    "        with memoryview(out) as m:\n"
    "            m.cast('B').cast('f')[0] = VALUE\n";

static float reload_value(recorder *r, const char *dir) {
  CHECK_OK(load(r, 1, dir));
  const rec_op *impl = find(r, "Reload", true);
  CHECK(impl != NULL, "Reload registered");
  void *h = holder_of(impl, NULL, 0);
  float x[1] = {0};
  int64_t s[1] = {1};
  pyop_tensor in = tensor_f32(x, 1, s);
  outputs o = {0};
  CHECK_OK(exec1(impl, h, &in, 1, ONE, 1, &o));
  float v = *(float *)o.mem[0];
  outputs_free(&o);
  impl->cb->destroy_holder(h);
  return v;
}

/*
 * A plugin edited between loads (same size, same second: only a source-
 * based load sees the change), three rounds; no bytecode cache is written
 * into the plugin directory.
 */
static void case_reload(void) {
  char dir[] = "/tmp/pyop_reload_XXXXXX";
  CHECK(mkdtemp(dir) != NULL, "mkdtemp");
  char file[256];
  snprintf(file, sizeof file, "%s/reloadable.py", dir);
  char *src = NULL;
  recorder r = {.fail_at = -1};
  for (int round = 1; round <= 3; round++) {
    /* Same size, same second: only a source-based load sees the change. */
    char val[8];
    snprintf(val, sizeof val, "%d.0", round);
    free(src);
    src = strdup(reload_src);
    char *p = strstr(src, "VALUE");
    char *full = NULL;
    if (asprintf(&full, "%.*s%s%s", (int)(p - src), src, val, p + 5) < 0)
      abort();
    write_file(file, full);
    free(full);
    float v = reload_value(&r, dir);
    CHECK(v == (float)round, "round %d saw %g", round, v);
    api->reset();
    rec_clear(&r);
  }
  free(src);
  char cache[300];
  snprintf(cache, sizeof cache, "%s/__pycache__", dir);
  struct stat st;
  CHECK(stat(cache, &st) != 0, "no bytecode cache written into the plugin directory");
  unlink(file);
  rmdir(dir);
}

typedef struct thread_arg {
  const recorder *r;
  void *ih, *ph;
  int rounds;
} thread_arg;

static void *thread_main(void *p) {
  thread_arg *a = p;
  run_scaled_add(a->r, a->ph, a->ih, 2.0f, a->rounds);
  return NULL;
}

/*
 * 6 threads execute ScaledAdd 300 times each, half on one shared instance,
 * half on their own, with results checked.
 */
static void case_threads(void) {
  recorder r = {.fail_at = -1};
  CHECK_OK(load(&r, 1, "basic/ops_file.py"));
  const rec_op *sa = find(&r, "ScaledAdd", false), *sai = find(&r, "ScaledAdd", true);
  pyop_attr_view alpha = attr_float("alpha", 2.0);
  void *shared_i = holder_of(sai, &alpha, 1), *shared_p = holder_of(sa, &alpha, 1);
  enum { N = 6 };
  pthread_t t[N];
  thread_arg args[N];
  for (int i = 0; i < N; i++) {
    args[i].r = &r;
    args[i].rounds = 300;
    /* half share one instance, half have their own */
    args[i].ih = i % 2 ? shared_i : holder_of(sai, &alpha, 1);
    args[i].ph = shared_p;
    CHECK(pthread_create(&t[i], NULL, thread_main, &args[i]) == 0, "pthread_create");
  }
  for (int i = 0; i < N; i++)
    pthread_join(t[i], NULL);
  for (int i = 0; i < N; i++)
    if (args[i].ih != shared_i)
      sai->cb->destroy_holder(args[i].ih);
  sai->cb->destroy_holder(shared_i);
  sa->cb->destroy_holder(shared_p);
  api->reset();
  rec_clear(&r);
}

static void case_launch(void);

typedef struct sink {
  char artifact[64];
  size_t artifact_len;
  uint64_t ws[4];
  int n_ws;
  char lib[4200], sym[64];
  pyop_launch_arg_view args[16];
  size_t n_args;
} sink;

static int sink_artifact(void *ctx, const void *data, size_t len) {
  sink *s = ctx;
  if (len > sizeof s->artifact)
    return PYOP_EINVAL;
  memcpy(s->artifact, data, len);
  s->artifact_len = len;
  return 0;
}

static int sink_ws(void *ctx, uint64_t nbytes) {
  sink *s = ctx;
  s->ws[s->n_ws++] = nbytes;
  return 0;
}

static int sink_launch(void *ctx, const pyop_launch_view *l) {
  sink *s = ctx;
  snprintf(s->lib, sizeof s->lib, "%.*s", (int)l->library.len, l->library.data);
  snprintf(s->sym, sizeof s->sym, "%.*s", (int)l->symbol.len, l->symbol.data);
  s->n_args = l->n_args;
  memcpy(s->args, l->args, l->n_args * sizeof *l->args);
  return 0;
}

/*
 * compile and declare_launch_args of an op without execute
 * (plugins/launch): the artifact, the workspace, the kernel library and
 * symbol, and every launch argument as the sinks receive them.
 */
static void case_launch(void) {
  recorder r = {.fail_at = -1};
  CHECK_OK(load(&r, 1, "launch"));
  const rec_op *impl = find(&r, "Launchy", true);
  CHECK(impl && impl->caps == (PYOP_CAP_COMPILE | PYOP_CAP_LAUNCH) && impl->cb->execute == NULL,
        "Launchy caps");
  pyop_attr_view alpha = attr_float("alpha", 0.5);
  void *h = holder_of(impl, &alpha, 1);
  float x[2] = {1, 2};
  int64_t s[2] = {1, 2};
  pyop_tensor in[2] = {tensor_f32(x, 2, s), tensor_f32(x, 2, s)}, out = tensor_f32(NULL, 2, s);
  pyop_tensor_list lists[2] = {{&in[0], 1}, {&in[1], 1}};
  sink sk;
  memset(&sk, 0, sizeof sk);
  pyop_compile_args ca = {sizeof ca, lists, 2, &out, 1, &sk, sink_artifact};
  CHECK_OK(impl->cb->compile(h, &ca));
  CHECK(sk.artifact_len == 18 && memcmp(sk.artifact, "artifact:2:float32", 18) == 0, "artifact");
  pyop_declare_args da = {sizeof da, lists, 2, &out, 1, &sk, sink_launch, sink_ws};
  CHECK_OK(impl->cb->declare_launch_args(h, &da));
  char lib[4200];
  snprintf(lib, sizeof lib, "%s/launch/libkern.so", g_plugins);
  CHECK(sk.n_ws == 1 && sk.ws[0] == 64, "workspace");
  CHECK(strcmp(sk.lib, lib) == 0 && strcmp(sk.sym, "kern") == 0, "launch %s %s", sk.lib, sk.sym);
  CHECK(sk.n_args == 7, "n_args %zu", sk.n_args);
  CHECK(sk.args[0].kind == PYOP_LAUNCH_ARG_INPUT && sk.args[0].index == 0, "arg0");
  CHECK(sk.args[1].kind == PYOP_LAUNCH_ARG_INPUT && sk.args[1].index == 1, "arg1");
  CHECK(sk.args[2].kind == PYOP_LAUNCH_ARG_OUTPUT && sk.args[2].index == 0, "arg2");
  CHECK(sk.args[3].kind == PYOP_LAUNCH_ARG_WORKSPACE && sk.args[3].index == 0, "arg3");
  CHECK(sk.args[4].kind == PYOP_LAUNCH_ARG_SCALAR && sk.args[4].scalar_type == PYOP_SCALAR_FLOAT &&
            sk.args[4].value.f == 0.5,
        "arg4");
  CHECK(sk.args[5].kind == PYOP_LAUNCH_ARG_SCALAR && sk.args[5].scalar_type == PYOP_SCALAR_INT64 &&
            sk.args[5].value.i == -3,
        "arg5");
  CHECK(sk.args[6].kind == PYOP_LAUNCH_ARG_STREAM, "arg6");
  impl->cb->destroy_holder(h);
  api->reset();
  rec_clear(&r);
}

/* Overwrites the stack below the caller (a Release build then crashes on
 * a frame read after its call returned; ASan reports it either way). */
static __attribute__((noinline)) void stomp_stack(void) {
  volatile unsigned char junk[16384];
  for (size_t i = 0; i < sizeof junk; i++)
    junk[i] = 0xA5;
}

/* Joins the hostile plugin's threads; true when what the thread of key
 * recorded contains needle. */
static bool hostile_result(const char *key, const char *needle) {
  char code[1024];
  snprintf(code, sizeof code,
           "import builtins, sys\n"
           "r = builtins._pyop_hostile\n"
           "for t in r['threads']: t.join()\n"
           "if %s not in r.get(%s, ''):\n"
           "    sys.stderr.write('thread result: %%r\\n' %% (r,))\n"
           "    raise AssertionError(%s)\n",
           needle, key, key);
  return py_ok(code);
}

/*
 * Plugin code that attacks what the bridge lends it (plugins/hostile): a
 * context handed to another thread, used there while (or after) its
 * callback returns; sequences emptied by the __index__ of their own items
 * while the bridge reads them; descriptor attribute lists doing the same.
 */
static void case_hostile(void) {
  recorder r = {.fail_at = -1};
  CHECK_OK(load(&r, 1, "hostile/hostile.py"));
  const rec_op *impl = find(&r, "Hostile", true);
  CHECK(impl != NULL && impl->cb->execute != NULL && impl->cb->declare_launch_args != NULL,
        "Hostile registered");
  float x[4] = {1, 2, 3, 4};
  int64_t s[1] = {4};
  pyop_tensor in = tensor_f32(x, 1, s);
  /* A context used from another thread: refused at once, never read. */
  static const char *const exec_modes[] = {"thread_output", "thread_stream"};
  for (size_t i = 0; i < 2; i++) {
    pyop_attr_view a = attr_str("mode", exec_modes[i]);
    void *h = holder_of(impl, &a, 1);
    outputs o = {0};
    CHECK_OK(exec1(impl, h, &in, 1, ONE, 1, &o));
    stomp_stack();
    char key[64], needle[128];
    snprintf(key, sizeof key, "'%s'", exec_modes[i]);
    snprintf(needle, sizeof needle, "'RuntimeError: '");
    CHECK(hostile_result(key, needle), "%s: RuntimeError in the thread", exec_modes[i]);
    CHECK(hostile_result(key, "'used from another thread'"), "%s: message", exec_modes[i]);
    CHECK(o.mem[0] == NULL, "%s: nothing allocated", exec_modes[i]);
    outputs_free(&o);
    impl->cb->destroy_holder(h);
  }
  float ox[4];
  pyop_tensor out = tensor_f32(ox, 1, s);
  pyop_tensor_list lists[1] = {{&in, 1}};
  static const char *const declare_modes[] = {"thread_launch", "thread_workspace"};
  for (size_t i = 0; i < 2; i++) {
    pyop_attr_view a = attr_str("mode", declare_modes[i]);
    void *h = holder_of(impl, &a, 1);
    sink sk;
    memset(&sk, 0, sizeof sk);
    pyop_declare_args da = {sizeof da, lists, 1, &out, 1, &sk, sink_launch, sink_ws};
    clear_error();
    CHECK_OK(impl->cb->declare_launch_args(h, &da));
    stomp_stack();
    char key[64];
    snprintf(key, sizeof key, "'%s'", declare_modes[i]);
    CHECK(hostile_result(key, "'RuntimeError: '"), "%s: RuntimeError", declare_modes[i]);
    CHECK(hostile_result(key, "'used from another thread'"), "%s: message", declare_modes[i]);
    CHECK(sk.n_args == 0 && sk.n_ws == 0, "%s: nothing reached the host", declare_modes[i]);
    impl->cb->destroy_holder(h);
  }
  {
    pyop_attr_view a = attr_str("mode", "thread_artifact");
    void *h = holder_of(impl, &a, 1);
    sink sk;
    memset(&sk, 0, sizeof sk);
    pyop_compile_args ca = {sizeof ca, lists, 1, &out, 1, &sk, sink_artifact};
    clear_error();
    CHECK_OK(impl->cb->compile(h, &ca));
    stomp_stack();
    CHECK(hostile_result("'thread_artifact'", "'RuntimeError: '"), "thread_artifact: RuntimeError");
    CHECK(hostile_result("'thread_artifact'", "'used from another thread'"),
          "thread_artifact: message");
    CHECK(sk.artifact_len == 0, "thread_artifact: nothing reached the host");
    impl->cb->destroy_holder(h);
  }
  /* A shape list emptied by its first item's __index__: the items it held
   * when the call began are used. */
  {
    pyop_attr_view a = attr_str("mode", "shape_cleared");
    void *h = holder_of(impl, &a, 1);
    outputs o = {0};
    CHECK_OK(exec1(impl, h, &in, 1, ONE, 1, &o));
    CHECK(o.t[0].ndim == 3 && o.t[0].shape[0] == 1 && o.t[0].shape[1] == 2 &&
              o.t[0].shape[2] == 3 && o.t[0].nbytes == 24,
          "shape snapshot: ndim %d", (int)o.t[0].ndim);
    outputs_free(&o);
    impl->cb->destroy_holder(h);
  }
  /* The same for add_launch's argument list. */
  {
    pyop_attr_view a = attr_str("mode", "args_cleared");
    void *h = holder_of(impl, &a, 1);
    sink sk;
    memset(&sk, 0, sizeof sk);
    pyop_declare_args da = {sizeof da, lists, 1, &out, 1, &sk, sink_launch, sink_ws};
    clear_error();
    CHECK_OK(impl->cb->declare_launch_args(h, &da));
    CHECK(sk.n_args == 3 && sk.args[0].kind == PYOP_LAUNCH_ARG_INPUT && sk.args[0].index == 0 &&
              sk.args[1].kind == PYOP_LAUNCH_ARG_OUTPUT &&
              sk.args[2].kind == PYOP_LAUNCH_ARG_STREAM,
          "launch args snapshot: %zu args", sk.n_args);
    impl->cb->destroy_holder(h);
  }
  CHECK(py_ok("import builtins; del builtins._pyop_hostile"), "cleanup");
  api->reset();
  rec_clear(&r);
  /* Descriptor attribute lists emptied while converted: the defaults are
   * the items the lists held, and the strings stay valid for the registrar. */
  CHECK_OK(load(&r, 1, "hostile/evil_descs.py"));
  const rec_op *p = find(&r, "EvilDefaults", false);
  CHECK(p != NULL && p->n_attrs == 2, "EvilDefaults");
  CHECK(strcmp(p->attrs[0], "ls:9:0:['xa','xb']") == 0, "ls default %s", p->attrs[0]);
  CHECK(strcmp(p->attrs[1], "li:6:0:[1,5]") == 0, "li default %s", p->attrs[1]);
  api->reset();
  rec_clear(&r);
}

/*
 * A plugin directory whose name is not UTF-8 (a Latin-1 byte): the load
 * works, the descriptor's file is the directory's bytes, a relative kernel
 * library resolves inside it, and an error message names the file.
 */
static void case_names(void) {
  char root[] = "/tmp/pyop_names_XXXXXX";
  CHECK(mkdtemp(root) != NULL, "mkdtemp");
  char dir[300], file[400];
  snprintf(dir, sizeof dir, "%s/ops_\xe9t\xe9", root);
  CHECK(mkdir(dir, 0755) == 0, "mkdir %s", dir);
  snprintf(file, sizeof file, "%s/names.py", dir);
  write_file(file, "import pyop\n"
                   "from pyop import TensorDesc, launch\n"
                   "@pyop.register_op(op_type='Named')\n"
                   "def named(x: TensorDesc, *, fail: bool = False) -> TensorDesc:\n"
                   "    if fail:\n"
                   "        raise ValueError('failing on purpose')\n"
                   "    return x\n"
                   "@pyop.register_op_impl(op_type='Named')\n"
                   "class NamedImpl:\n"
                   "    def declare_launch_args(self, x, y, *, fail):\n"
                   "        pyop.get_declare_launch_args_ctx().add_launch(\n"
                   "            'libk.so', 'k', [launch.input(0)])\n");
  recorder r = {.fail_at = -1};
  CHECK_OK(load(&r, 1, dir));
  const rec_op *p = find(&r, "Named", false), *impl = find(&r, "Named", true);
  CHECK(p != NULL && impl != NULL, "Named registered");
  CHECK(strcmp(p->file, file) == 0 && strcmp(impl->file, file) == 0, "file %s", p->file);
  float x[2] = {1, 2};
  int64_t s[1] = {2};
  pyop_tensor in = tensor_f32(x, 1, s), out;
  pyop_attr_view a;
  memset(&a, 0, sizeof a);
  a.struct_size = sizeof a;
  a.name = (pyop_str){"fail", 4};
  a.type = a.default_value.type = PYOP_ATTR_BOOL;
  a.default_value.u.b = true;
  void *h = holder_of(p, &a, 1);
  const char *n[] = {"infer_meta of op 'Named'", file, "ValueError: failing on purpose", NULL};
  expect_call_error(infer1(p, h, &in, 1, ONE, &out, 1), PYOP_EPYTHON, n);
  p->cb->destroy_holder(h);
  void *ih = holder_of(impl, &a, 1);
  sink sk;
  memset(&sk, 0, sizeof sk);
  pyop_tensor_list lists[1] = {{&in, 1}};
  pyop_declare_args da = {sizeof da, lists, 1, &in, 1, &sk, sink_launch, sink_ws};
  clear_error();
  CHECK_OK(impl->cb->declare_launch_args(ih, &da));
  char lib[400];
  snprintf(lib, sizeof lib, "%s/libk.so", dir);
  CHECK(strcmp(sk.lib, lib) == 0, "library %s", sk.lib);
  impl->cb->destroy_holder(ih);
  api->reset();
  rec_clear(&r);
  unlink(file);
  rmdir(dir);
  rmdir(root);
}

/* Negotiates minor with the bridge again (case_abi does too). */
static void negotiate(uint32_t minor) {
  pyop_bridge_entry_fn entry = (pyop_bridge_entry_fn)dlsym(bridge_handle, PYOP_BRIDGE_ENTRY_SYMBOL);
  pyop_bridge_request req = {sizeof req, PYOP_BRIDGE_ABI_MAJOR, minor, &g_services};
  const pyop_bridge_api *a = NULL;
  CHECK(entry(&req, &a) == PYOP_OK && a->abi_minor == minor, "minor %u", (unsigned)minor);
}

/*
 * register_op(dtypes=...) through the bridge (ABI 1.7): the proto view
 * carries one mask per input and output; with a loader of 1.6 the bridge
 * sends 1.6-sized views and refuses an op that declares data types rather
 * than dropping them.
 */
static void case_dtypes(void) {
  char dir[] = "/tmp/pyop_dtypes_XXXXXX";
  CHECK(mkdtemp(dir) != NULL, "mkdtemp");
  char typed[300], plain[300];
  snprintf(typed, sizeof typed, "%s/typed.py", dir);
  snprintf(plain, sizeof plain, "%s/plain", dir);
  CHECK(mkdir(plain, 0755) == 0, "mkdir %s", plain);
  write_file(typed, "import pyop\n"
                    "from pyop import TensorDesc\n"
                    "@pyop.register_op(op_type='Typed', outputs=('out',),\n"
                    "                  dtypes={'x': ['float32', 'int64'], 'out': 'float32'})\n"
                    "def typed(x: TensorDesc, y: TensorDesc) -> TensorDesc:\n"
                    "    return x\n");
  char plain_file[400];
  snprintf(plain_file, sizeof plain_file, "%s/plain.py", plain);
  write_file(plain_file, "import pyop\n"
                         "from pyop import TensorDesc\n"
                         "@pyop.register_op(op_type='Plain')\n"
                         "def plain(x: TensorDesc) -> TensorDesc:\n"
                         "    return x\n");
  recorder r = {.fail_at = -1};
  CHECK_OK(load(&r, 1, typed));
  const rec_op *t = find(&r, "Typed", false);
  CHECK(t != NULL && t->view_size == sizeof(pyop_proto_view), "a 1.7 view");
  CHECK(t->in_dtypes && t->in_masks[0] == (PYOP_DTYPE_BIT(PYOP_DTYPE_FLOAT32) |
                                           PYOP_DTYPE_BIT(PYOP_DTYPE_INT64)) &&
            t->in_masks[1] == 0, "input masks %llx %llx", (unsigned long long)t->in_masks[0],
        (unsigned long long)t->in_masks[1]);
  CHECK(t->out_dtypes && t->out_masks[0] == PYOP_DTYPE_BIT(PYOP_DTYPE_FLOAT32), "output mask");
  api->reset();
  rec_clear(&r);
  negotiate(6);
  CHECK(load(&r, 1, typed) != PYOP_OK, "an op with dtypes refused by a 1.6 loader");
  CHECK(err_has("op 'Typed'") && err_has("declares data types (dtypes=), which needs bridge "
                                         "ABI 1.7; the loaded libpyop speaks 1.6"),
        "message: %s", g_err);
  CHECK(r.n == 0, "nothing handed over");
  api->reset();
  rec_clear(&r);
  /* Constraints on the outputs alone are refused the same way: a 1.6
   * loader would drop them just as well. */
  char out_only[300];
  snprintf(out_only, sizeof out_only, "%s/out_only.py", dir);
  write_file(out_only, "import pyop\n"
                       "from pyop import TensorDesc\n"
                       "@pyop.register_op(op_type='OutTyped', dtypes={'y': 'float32'})\n"
                       "def out_typed(x: TensorDesc) -> TensorDesc:\n"
                       "    return x\n");
  CHECK(load(&r, 1, out_only) != PYOP_OK, "an op with output dtypes refused by a 1.6 loader");
  CHECK(err_has("op 'OutTyped'") && err_has("declares data types (dtypes=), which needs "
                                            "bridge ABI 1.7"),
        "message: %s", g_err);
  CHECK(r.n == 0, "nothing handed over");
  api->reset();
  rec_clear(&r);
  unlink(out_only);
  /* Every data type can be named to malloc_output_tensor, the last of the
   * map too: the output is allocated as that type. */
  char cast[300];
  snprintf(cast, sizeof cast, "%s/cast.py", dir);
  write_file(cast, "import pyop\n"
                   "from pyop import TensorDesc\n"
                   "@pyop.register_op(op_type='CastTo')\n"
                   "def cast_to(x: TensorDesc, *, to: str) -> TensorDesc:\n"
                   "    return x\n"
                   "@pyop.register_op_impl(op_type='CastTo')\n"
                   "class CastToImpl:\n"
                   "    def execute(self, x, *, to):\n"
                   "        pyop.get_execute_ctx().malloc_output_tensor(0, (2,), to)\n");
  CHECK_OK(load(&r, 1, cast));
  const rec_op *ci = find(&r, "CastTo", true);
#define DT_NAME_SIZE(name, value, str, size) {str, size},
  static const struct { const char *name; size_t size; } dts[] = {PYOP_DTYPE_MAP(DT_NAME_SIZE)};
#undef DT_NAME_SIZE
  CHECK(sizeof dts / sizeof dts[0] == PYOP_DTYPE_COUNT, "the dtype map");
  for (int d = 0; d < PYOP_DTYPE_COUNT; d++) {
    pyop_attr_view to = attr_str("to", dts[d].name);
    void *h = holder_of(ci, &to, 1);
    float x[2] = {0};
    int64_t s1[1] = {2};
    pyop_tensor in = tensor_f32(x, 1, s1);
    outputs o = {0};
    int rc = exec1(ci, h, &in, 1, ONE, 1, &o);
    CHECK(rc == PYOP_OK, "malloc_output_tensor(0, (2,), '%s'): %d %s", dts[d].name, rc, g_err);
    CHECK(o.t[0].dtype == d && o.t[0].nbytes == 2 * dts[d].size, "%s: dtype %d, %llu bytes",
          dts[d].name, (int)o.t[0].dtype, (unsigned long long)o.t[0].nbytes);
    outputs_free(&o);
    ci->cb->destroy_holder(h);
  }
  api->reset();
  rec_clear(&r);
  unlink(cast);
  CHECK_OK(load(&r, 1, plain));
  const rec_op *p = find(&r, "Plain", false);
  CHECK(p != NULL && p->view_size == offsetof(pyop_proto_view, input_dtypes), "a 1.6 view");
  api->reset();
  rec_clear(&r);
  negotiate(PYOP_BRIDGE_ABI_MINOR);
  unlink(plain_file);
  rmdir(plain);
  unlink(typed);
  rmdir(dir);
}

/*
 * The views as a loader of each ABI minor reads them (plugins/minors): a
 * proto view ends before input_flags for 1.0, before source_digest for
 * 1.1 and 1.2, before serial_reason for 1.3 to 1.5, before input_dtypes
 * for 1.6, whole for 1.7; an impl view before source_digest up to 1.2,
 * before serial_reason for 1.3 to 1.5, whole from 1.6. A loader of 1.0 is
 * refused (PYOP_EPYTHON, nothing registered), by name, each op that needs
 * 1.1: no outputs, a dynamic output, a mutated input, a Tensor attribute;
 * 1.1 takes them all.
 */
static void case_minors(void) {
  static const struct {
    uint32_t minor;
    size_t proto, impl;
  } sizes[] = {
      {0, offsetof(pyop_proto_view, input_flags), offsetof(pyop_impl_view, source_digest)},
      {1, offsetof(pyop_proto_view, source_digest), offsetof(pyop_impl_view, source_digest)},
      {2, offsetof(pyop_proto_view, source_digest), offsetof(pyop_impl_view, source_digest)},
      {3, offsetof(pyop_proto_view, serial_reason), offsetof(pyop_impl_view, serial_reason)},
      {5, offsetof(pyop_proto_view, serial_reason), offsetof(pyop_impl_view, serial_reason)},
      {6, offsetof(pyop_proto_view, input_dtypes), sizeof(pyop_impl_view)},
      {7, sizeof(pyop_proto_view), sizeof(pyop_impl_view)},
  };
  recorder r = {.fail_at = -1};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    negotiate(sizes[i].minor);
    CHECK_OK(load(&r, 1, "minors/plain.py"));
    const rec_op *p = find(&r, "Plain", false), *impl = find(&r, "Plain", true);
    CHECK(p != NULL && impl != NULL, "1.%u: Plain registered", (unsigned)sizes[i].minor);
    CHECK(p->view_size == sizes[i].proto && impl->view_size == sizes[i].impl,
          "1.%u: proto view %zu (expected %zu), impl view %zu (expected %zu)",
          (unsigned)sizes[i].minor, p->view_size, sizes[i].proto, impl->view_size,
          sizes[i].impl);
    api->reset();
    rec_clear(&r);
  }
  static const struct {
    const char *file, *op, *need;
  } needs[] = {
      {"minors/no_outputs.py", "NoOutputs", "has no outputs"},
      {"minors/dynamic_output.py", "DynOut", "has a dynamic (list) output"},
      {"minors/mutated.py", "Mutated", "has mutated inputs (mutates_args)"},
      {"minors/tensor_attr.py", "TensorAttr", "has a Tensor attribute"},
      {"minors/tensor_attr_late.py", "TensorAttrLate", "has a Tensor attribute"},
  };
  for (size_t i = 0; i < sizeof needs / sizeof needs[0]; i++) {
    negotiate(0);
    char op[64];
    snprintf(op, sizeof op, "op '%s'", needs[i].op);
    const char *n[] = {"converting plugin descriptors failed", "TypeError", op, needs[i].need,
                       "which needs bridge ABI 1.1; the loaded libpyop speaks 1.0", NULL};
    expect_load_error(needs[i].file, PYOP_EPYTHON, n, 1, needs[i].file, NULL);
    negotiate(1);
    CHECK_OK(load(&r, 1, needs[i].file));
    CHECK(r.n == 1 && find(&r, needs[i].op, false) != NULL, "1.1 takes %s", needs[i].op);
    api->reset();
    rec_clear(&r);
  }
  negotiate(PYOP_BRIDGE_ABI_MINOR);
}

/*
 * A host whose sys.modules already has another "pyop" (its own module of
 * that name): the bridge warns naming it, its own package is what plugins
 * get until shutdown, and shutdown puts the host's module back (and leaves
 * its pyop_utils, only a name starting with "pyop", alone). Its own
 * process: the package is imported once per bridge session. Also
 * register_custom_ops without a path array: no paths is a load of nothing,
 * paths missing for one path is PYOP_EINVAL. After that shutdown: a
 * request without services whole is PYOP_EABI, one with them is taken;
 * register_custom_ops before set_config is PYOP_ESTATE; a config without
 * flags whole is PYOP_EINVAL, one with them is taken; one naming a directory
 * without the pyop package fails the load naming the package, then the
 * exception; each failed import of the package (its code failing, its
 * module refused by the host's importlib) puts the host's pyop back and
 * leaves no pyop.* module (pyop._native); loads work again with the right
 * one.
 */
static void case_foreign(void) {
  CHECK(py_ok("import sys, types\n"
              "_m = types.ModuleType('pyop')\n"
              "_m.host_marker = 42\n"
              "sys.modules['pyop'] = _m\n"
              "sys.modules['pyop_utils'] = types.ModuleType('pyop_utils')\n"
              "sys.modules['pyop\\x00host'] = types.ModuleType('pyop_nul_host')\n"
              "del _m\n"),
        "the host's own pyop");
  recorder r = {.fail_at = -1};
  pyop_registrar reg = {sizeof reg, &r, rec_add_proto, rec_add_impl};
  clear_error();
  CHECK(api->register_custom_ops(&reg, NULL, 1) == PYOP_EINVAL && g_err_status == PYOP_EINVAL &&
            err_has("bridge register_custom_ops: paths is NULL"),
        "NULL paths for one path: %s", g_err);
  CHECK(r.n == 0, "nothing registered");
  g_log_level = -1;
  g_log[0] = '\0';
  CHECK_OK(load(&r, 1, "basic/ops_file.py"));
  CHECK(find(&r, "ScaledAdd", true) != NULL, "ScaledAdd registered");
  CHECK(g_log_level == PYOP_LOG_WARN && strstr(g_log, "sys.modules['pyop'] is another module") &&
            strstr(g_log, "/python/pyop replaces it until shutdown"),
        "warning (%d): %s", g_log_level, g_log);
  CHECK(py_ok("import sys\n"
              "assert not hasattr(sys.modules['pyop'], 'host_marker')\n"
              "assert hasattr(sys.modules['pyop'], 'register_op')\n"),
        "the bridge's package is sys.modules['pyop'] while it runs");
  CHECK_OK(api->register_custom_ops(&reg, NULL, 0));
  api->reset();
  rec_clear(&r);
  api->shutdown();
  CHECK(py_ok("import sys\n"
              "assert sys.modules['pyop'].host_marker == 42, sys.modules['pyop']\n"
              "assert not [m for m in sys.modules if m.startswith('pyop.')]\n"
              "assert sys.modules['pyop_utils'].__name__ == 'pyop_utils'\n"
              "assert sys.modules['pyop\\x00host'].__name__ == 'pyop_nul_host'\n"
              "del sys.modules['pyop'], sys.modules['pyop_utils'], sys.modules['pyop\\x00host']\n"),
        "the host's pyop put back at shutdown, its pyop_utils and 'pyop\\0host' left alone");
  /* After shutdown: entry again (its services), then register_custom_ops
   * before set_config is refused; set_config must hold flags whole. */
  pyop_bridge_entry_fn entry = (pyop_bridge_entry_fn)dlsym(bridge_handle, PYOP_BRIDGE_ENTRY_SYMBOL);
  const pyop_bridge_api *a = NULL;
  pyop_bridge_request req = {offsetof(pyop_bridge_request, services), PYOP_BRIDGE_ABI_MAJOR,
                             PYOP_BRIDGE_ABI_MINOR, &g_services};
  CHECK(entry(&req, &a) == PYOP_EABI && a == NULL, "a request without services refused");
  req.struct_size = PYOP_MEMBER_END(pyop_bridge_request, services);
  CHECK(entry(&req, &a) == PYOP_OK && a == api, "a request holding services whole");
  clear_error();
  CHECK(load(&r, 1, "basic/ops_file.py") == PYOP_ESTATE &&
            err_has("bridge register_custom_ops: set_config was not called"),
        "register before set_config: %s", g_err);
  CHECK(r.n == 0, "nothing registered");
  clear_error();
  CHECK(api->set_config(NULL) == PYOP_EINVAL &&
            err_has("bridge set_config: config is NULL or too small"),
        "NULL config: %s", g_err);
  pyop_bridge_config cfg = {offsetof(pyop_bridge_config, flags), {g_artifact, strlen(g_artifact)},
                            {NULL, 0}, 0};
  clear_error();
  CHECK(api->set_config(&cfg) == PYOP_EINVAL && err_has("config is NULL or too small"),
        "a config without flags: %s", g_err);
  cfg.struct_size = PYOP_MEMBER_END(pyop_bridge_config, flags);
  /* An artifact directory without the pyop package: the load fails naming
   * it, then the exception (its type and text: the package's formatter is
   * not there to describe it). */
  static const char nowhere[] = "/nonexistent/pyop-artifact";
  cfg.artifact_dir = (pyop_str){nowhere, strlen(nowhere)};
  CHECK_OK(api->set_config(&cfg));
  /* The host's own pyop again: each failed import below puts it back and
   * leaves no pyop.* module (batch 21 survivor, session 16). */
  CHECK(py_ok("import sys, types\n"
              "_m = types.ModuleType('pyop')\n"
              "_m.host_marker = 43\n"
              "sys.modules['pyop'] = _m\n"
              "del _m\n"),
        "the host's own pyop, before the failed imports");
  static const char host_pyop_back[] =
      "import sys\n"
      "assert getattr(sys.modules.get('pyop'), 'host_marker', None) == 43, (\n"
      "    'the host\\'s pyop after a failed import', sys.modules.get('pyop'))\n"
      "left = [m for m in sys.modules if m.startswith('pyop.')]\n"
      "assert not left, ('left after a failed import', left)\n"
      "del left\n";
  {
    const char *order[] = {"importing the pyop package from /nonexistent/pyop-artifact/python/"
                           "pyop failed: ",
                           "FileNotFoundError: ", "pyop-artifact/python/pyop/__init__.py", NULL};
    CHECK(load(&r, 1, "basic/ops_file.py") == PYOP_EPLUGIN && err_in_order(order),
          "no package: %s", g_err);
    CHECK(r.n == 0, "nothing registered");
    CHECK(py_ok(host_pyop_back), "the host's pyop, after the package's code failed");
  }
  /* The import failing before the package's module exists (the host's
   * importlib refuses to make it): pyop._native, made first, is not left
   * in sys.modules for the host's `import pyop._native` or the next load. */
  cfg.artifact_dir = (pyop_str){g_artifact, strlen(g_artifact)};
  CHECK_OK(api->set_config(&cfg));
  CHECK(py_ok("import importlib.util\n"
              "def _refuse(spec):\n"
              "    raise ImportError('the host refuses module_from_spec')\n"
              "importlib.util._pyop_saved = importlib.util.module_from_spec\n"
              "importlib.util.module_from_spec = _refuse\n"
              "del _refuse\n"),
        "module_from_spec refused");
  {
    const char *order[] = {"importing the pyop package from ", "ImportError: ",
                           "the host refuses module_from_spec", NULL};
    CHECK(load(&r, 1, "basic/ops_file.py") == PYOP_EPLUGIN && err_in_order(order),
          "no module made: %s", g_err);
    CHECK(r.n == 0, "nothing registered");
  }
  CHECK(py_ok("import importlib.util\n"
              "importlib.util.module_from_spec = importlib.util._pyop_saved\n"
              "del importlib.util._pyop_saved\n"),
        "module_from_spec again");
  CHECK(py_ok(host_pyop_back), "the host's pyop, after the package's module was refused");
  CHECK(py_ok("import sys; del sys.modules['pyop']"), "the host's pyop dropped");
  /* The view's length, not a NUL, ends the directory: the artifact's own
   * name followed by more bytes in the same buffer (dataflow pass,
   * session 13). */
  char *longer = NULL;
  CHECK(asprintf(&longer, "%s-not-this", g_artifact) > 0, "asprintf");
  cfg.artifact_dir = (pyop_str){longer, strlen(g_artifact)};
  CHECK_OK(api->set_config(&cfg));
  free(longer);
  CHECK_OK(load(&r, 1, "basic/ops_file.py"));
  CHECK(find(&r, "ScaledAdd", true) != NULL, "a load after the shutdown");
  api->reset();
  rec_clear(&r);
  CHECK(py_ok("import sys; assert 'pyop' in sys.modules"), "the package imported again");
}

/* Host services that misbehave on purpose (case services). */
static int g_svc_status;   /* what they return */
static bool g_svc_no_data; /* succeed without memory */

static int odd_alloc_output(void *ctx, size_t index, pyop_tensor *t) {
  if (g_svc_status != PYOP_OK || g_svc_no_data) {
    t->data = NULL; /* no memory, whatever the size */
    return g_svc_status;
  }
  return alloc_output(ctx, index, t);
}

static int odd_alloc_workspace(void *ctx, uint64_t nbytes, void **out) {
  if (g_svc_status != PYOP_OK || g_svc_no_data) {
    *out = NULL;
    return g_svc_status;
  }
  return alloc_workspace(ctx, nbytes, out);
}

static int odd_alias_output(void *ctx, size_t index, size_t input, pyop_tensor *t) {
  (void)ctx;
  (void)index;
  (void)input;
  (void)t;
  return g_svc_status != PYOP_OK ? g_svc_status : PYOP_EUNSUPPORTED;
}

/* One execute of EdgeCtx (what) with services svc (its ctx set here):
 * its status, the error checked against needles when not PYOP_OK. */
static void ctx_call(const rec_op *impl, const char *what, pyop_exec_services svc, int status,
                     const char *const *needles) {
  float x[2] = {1, 2};
  int64_t s[1] = {2};
  pyop_tensor in = tensor_f32(x, 1, s);
  pyop_tensor_list lists[1] = {{&in, 1}};
  pyop_attr_view a = attr_str("what", what);
  void *h = holder_of(impl, &a, 1);
  outputs o = {0};
  svc.ctx = &o;
  pyop_exec_args args = {sizeof args, lists, 1, 1, &svc, NULL, NULL};
  clear_error();
  int rc = impl->cb->execute(h, &args);
  if (status != PYOP_OK)
    expect_call_error(rc, status, needles);
  else
    CHECK(rc == PYOP_OK, "EdgeCtx %s: %d %s", what, rc, g_err);
  outputs_free(&o);
  impl->cb->destroy_holder(h);
}

/*
 * The execute context's checks and the host services' failures
 * (plugins/edges, EdgeCtx): a dtype name not in the map, a format one past
 * the last (the last is taken), a shape that is no sequence or holds a
 * negative dimension, a size past 2**64 bytes, an output
 * index one past the last or negative (malloc_output_tensor and
 * make_output_ref_input), an input index below 0; a host without
 * alloc_output, alloc_workspace or alias_output (a 1.0-sized services
 * struct), one that returns success without memory (PYOP_EHOST; for an
 * empty output none is needed: that call succeeds), one that
 * returns a status of its own (that status; a positive one is PYOP_EHOST),
 * each named in the message. Workspace sizes at their limits: INT64_MAX
 * bytes for malloc_workspace, UINT64_MAX for add_workspace reach the host,
 * one past (or -1) does not.
 */
static void case_services(void) {
  recorder r = {.fail_at = -1};
  CHECK_OK(load(&r, 1, "edges/edges.py"));
  const rec_op *impl = find(&r, "EdgeCtx", true);
  CHECK(impl != NULL, "EdgeCtx registered");
  pyop_exec_services ok = {sizeof ok, NULL, alloc_output, alloc_workspace, odd_alias_output};
  pyop_exec_services odd = {sizeof odd, NULL, odd_alloc_output, odd_alloc_workspace,
                            odd_alias_output};
  g_svc_status = PYOP_OK;
  g_svc_no_data = false;
  ctx_call(impl, "alloc", ok, PYOP_OK, NULL);
  ctx_call(impl, "alloc_last", ok, PYOP_OK, NULL);
  ctx_call(impl, "format_last", ok, PYOP_OK, NULL);
  {
    char want[64];
    snprintf(want, sizeof want, "format value %d is out of range [0, %d]", PYOP_FORMAT_COUNT,
             PYOP_FORMAT_COUNT - 1);
    const char *n[] = {"execute of op 'EdgeCtx'", "ValueError", want, NULL};
    ctx_call(impl, "format_past", ok, PYOP_EPYTHON, n);
  }
  ctx_call(impl, "ws", ok, PYOP_OK, NULL);
  ctx_call(impl, "ws_zero", ok, PYOP_OK, NULL);
  {
    const char *n[] = {"execute of op 'EdgeCtx'", "ValueError: unknown data type 'float33'", NULL};
    ctx_call(impl, "dtype_name", ok, PYOP_EPYTHON, n);
  }
  { /* a name is the whole name: "float" is none (not float32, not float16) */
    const char *n[] = {"execute of op 'EdgeCtx'", "ValueError: unknown data type 'float'", NULL};
    ctx_call(impl, "dtype_prefix", ok, PYOP_EPYTHON, n);
  }
  {
    const char *n[] = {"TypeError", "got int", NULL};
    ctx_call(impl, "shape_int", ok, PYOP_EPYTHON, n);
  }
  {
    const char *n[] = {"ValueError", "shape dimension 1 -1 is out of range [0, ", NULL};
    ctx_call(impl, "shape_neg", ok, PYOP_EPYTHON, n);
  }
  {
    const char *n[] = {"ValueError", "output 0: shape x dtype size overflows 2**64 bytes", NULL};
    ctx_call(impl, "overflow", ok, PYOP_EPYTHON, n);
  }
  {
    const char *n[] = {"IndexError", "output index 1 out of range (the op has 1 output)", NULL};
    ctx_call(impl, "out_past", ok, PYOP_EPYTHON, n);
    ctx_call(impl, "ref_out_past", ok, PYOP_EPYTHON, n);
  }
  {
    const char *n[] = {"IndexError", "output index -1 out of range (the op has 1 output)", NULL};
    ctx_call(impl, "out_neg", ok, PYOP_EPYTHON, n);
    ctx_call(impl, "ref_out_neg", ok, PYOP_EPYTHON, n);
  }
  {
    const char *n[] = {"IndexError", "input index -1 out of range (the op has 1 input)", NULL};
    ctx_call(impl, "ref_in_neg", ok, PYOP_EPYTHON, n);
  }
  /* A host of ABI 1.0's services: no alias_output. */
  {
    pyop_exec_services old = ok;
    old.struct_size = offsetof(pyop_exec_services, alias_output);
    const char *n[] = {"RuntimeError", "the host's libpyop cannot alias outputs", NULL};
    ctx_call(impl, "ref", old, PYOP_EPYTHON, n);
    old.struct_size = sizeof old;
    old.alias_output = NULL;
    ctx_call(impl, "ref", old, PYOP_EPYTHON, n);
  }
  /* No allocation services at all. */
  {
    pyop_exec_services none = ok;
    none.alloc_output = NULL;
    const char *n[] = {"RuntimeError", "the host provides no output allocation", NULL};
    ctx_call(impl, "alloc", none, PYOP_EPYTHON, n);
    none = ok;
    none.alloc_workspace = NULL;
    const char *w[] = {"RuntimeError", "the host provides no workspace allocation", NULL};
    ctx_call(impl, "ws", none, PYOP_EPYTHON, w);
  }
  /* Success without memory: PYOP_EHOST; none is needed for 0 bytes. */
  g_svc_no_data = true;
  {
    const char *n[] = {"RuntimeError", "the host returned no memory for output 0", NULL};
    ctx_call(impl, "alloc", odd, PYOP_EHOST, n);
    const char *w[] = {"RuntimeError", "the host returned no memory when asked to allocate a "
                       "workspace of 16 bytes", NULL};
    ctx_call(impl, "ws", odd, PYOP_EHOST, w);
    /* An empty output (0 bytes) without memory is no failure: the op gets
     * it (shape (0,), nbytes 0) and the call succeeds. */
    ctx_call(impl, "alloc_empty", odd, PYOP_OK, NULL);
  }
  g_svc_no_data = false;
  /* The host's own failure status is the call's; a positive one is EHOST. */
  g_svc_status = PYOP_ENOMEM;
  {
    const char *n[] = {"RuntimeError: libpyop refused to allocate a workspace of 16 bytes "
                       "(PYOP_ENOMEM)", NULL};
    ctx_call(impl, "ws", odd, PYOP_ENOMEM, n);
    const char *a[] = {"RuntimeError: libpyop refused to make output 0 input 0's buffer "
                       "(PYOP_ENOMEM)", NULL};
    ctx_call(impl, "ref", odd, PYOP_ENOMEM, a);
  }
  g_svc_status = PYOP_EHOST;
  {
    const char *n[] = {"RuntimeError: the host failed to allocate a workspace of 16 bytes "
                       "(PYOP_EHOST)", NULL};
    ctx_call(impl, "ws", odd, PYOP_EHOST, n);
  }
  g_svc_status = 7;
  {
    const char *n[] = {"RuntimeError: libpyop refused to allocate a workspace of 16 bytes "
                       "(status 7)", NULL};
    ctx_call(impl, "ws", odd, PYOP_EHOST, n);
  }
  /* malloc_workspace's limit (INT64_MAX bytes) reaches the host, one past
   * it does not. */
  g_svc_status = PYOP_ENOMEM;
  {
    const char *n[] = {"RuntimeError: libpyop refused to allocate a workspace of "
                       "9223372036854775807 bytes (PYOP_ENOMEM)", NULL};
    ctx_call(impl, "mws_max", odd, PYOP_ENOMEM, n);
  }
  g_svc_status = PYOP_OK;
  {
    const char *n[] = {"ValueError", "malloc_workspace nbytes 9223372036854775808 is out of "
                       "range [0, 9223372036854775807]", NULL};
    ctx_call(impl, "mws_past", ok, PYOP_EPYTHON, n);
  }
  ctx_call(impl, "alloc", odd, PYOP_OK, NULL);
  /* add_workspace takes any uint64_t: UINT64_MAX reaches the host, 2**64
   * and -1 are refused before it is asked. */
  {
    static const char *const whats[] = {"ws_max", "ws_past", "ws_neg"};
    for (int i = 0; i < 3; i++) {
      float x[2] = {1, 2};
      int64_t s2[1] = {2};
      pyop_tensor in = tensor_f32(x, 1, s2);
      pyop_tensor_list lists[1] = {{&in, 1}};
      pyop_attr_view a = attr_str("what", whats[i]);
      void *h = holder_of(impl, &a, 1);
      sink sk;
      memset(&sk, 0, sizeof sk);
      pyop_declare_args da = {sizeof da, lists, 1, &in, 1, &sk, sink_launch, sink_ws};
      clear_error();
      int rc = impl->cb->declare_launch_args(h, &da);
      if (i == 0) {
        CHECK(rc == PYOP_OK && sk.n_ws == 1 && sk.ws[0] == UINT64_MAX, "ws_max: %d, %d ws", rc,
              sk.n_ws);
      } else {
        const char *n[] = {"declare_launch_args of op 'EdgeCtx'", "ValueError",
                           i == 1 ? "add_workspace nbytes 18446744073709551616 is out of range "
                                    "[0, 18446744073709551615]"
                                  : "add_workspace nbytes -1 is out of range [0, "
                                    "18446744073709551615]",
                           NULL};
        expect_call_error(rc, PYOP_EPYTHON, n);
        CHECK(sk.n_ws == 0, "%s: the host was not asked", whats[i]);
      }
      impl->cb->destroy_holder(h);
    }
  }
  CHECK(py_ok("import sys; assert sys.exc_info()[0] is None"), "no exception left");
  api->reset();
  rec_clear(&r);
}

/*
 * A plugin that breaks the import system and then fails to load
 * (plugins/bad/clobber.py): PYOP_EPLUGIN with its exception; sys.meta_path
 * changed in place is the same list with the same finders again,
 * sys.path_hooks replaced by a list subclass is a list with the same hooks
 * again, sys.path_importer_cache replaced by a dict subclass is a dict with
 * the same keys again, builtins.__import__ is the original, a host's
 * sys.modules entry the plugin deleted is back, a package entry it added
 * that is no module is gone; one warning counts the three entries
 * restored. Then one that changes sys.path_importer_cache in place: the
 * same dict holds the host's entries again, and only them.
 */
static void case_clobber(void) {
  recorder r = {.fail_at = -1};
  CHECK_OK(load(&r, 1, "launch")); /* the pyop package imported (its finder added) */
  api->reset();
  rec_clear(&r);
  CHECK(py_ok("import builtins, sys, types\n"
              "sys.modules['_edge_host_module'] = types.ModuleType('_edge_host_module')\n"
              "_cl = (sys.meta_path, list(sys.meta_path), list(sys.path_hooks),\n"
              "       set(sys.path_importer_cache), builtins.__import__,\n"
              "       sys.modules['_edge_host_module'])\n"),
        "save");
  g_log_level = -1;
  const char *n[] = {"RuntimeError: clobbered the import system", "clobber.py", NULL};
  expect_load_error("clobber", PYOP_EPLUGIN, n, 1, "bad/clobber.py", NULL);
  CHECK(g_log_level == PYOP_LOG_WARN && strstr(g_log, "a plugin changed interpreter state") &&
            strstr(g_log, "; 3 entries restored"),
        "warning (%d): %s", g_log_level, g_log);
  CHECK(py_ok("import builtins, sys\n"
              "meta, meta_items, hooks, cache_keys, imp, mod = _cl\n"
              "del _cl\n"
              "assert sys.meta_path is meta and meta == meta_items, sys.meta_path\n"
              "assert type(sys.path_hooks) is list and sys.path_hooks == hooks, sys.path_hooks\n"
              "assert type(sys.path_importer_cache) is dict, type(sys.path_importer_cache)\n"
              "assert set(sys.path_importer_cache) == cache_keys\n"
              "assert builtins.__import__ is imp\n"
              "assert sys.modules['_edge_host_module'] is mod\n"
              "assert 'pyop._clobbered' not in sys.modules\n"
              "del sys.modules['_edge_host_module'], meta, meta_items, hooks, cache_keys, imp, "
              "mod\n"),
        "the import system as it was");
  /* The importer cache changed in place (bad/clobber_cache.py): the same
   * dict with the host's entries, the same finders (batch 23 survivor
   * bridge.b23.import_guard.importer_cache_aliased: the saved "copy" was
   * the live dict, and putting it back emptied it). */
  CHECK(py_ok("import sys\n"
              "_cc = (sys.path_importer_cache, dict(sys.path_importer_cache))\n"
              "assert _cc[1], 'no host entries to lose'\n"),
        "save the importer cache");
  const char *c[] = {"RuntimeError: clobbered the importer cache in place",
                     "clobber_cache.py", NULL};
  expect_load_error("clobber_cache", PYOP_EPLUGIN, c, 1, "bad/clobber_cache.py", NULL);
  CHECK(py_ok("import sys\n"
              "cache, items = _cc\n"
              "del _cc\n"
              "assert sys.path_importer_cache is cache, type(sys.path_importer_cache)\n"
              "assert set(cache) == set(items), set(cache) ^ set(items)\n"
              "assert all(cache[k] is items[k] for k in items)\n"
              "del cache, items\n"),
        "the importer cache as it was, in the same dict");
  /* And the next load works. */
  CHECK_OK(load(&r, 1, "launch"));
  CHECK(r.n == 2, "good load after the clobbering one");
  api->reset();
  rec_clear(&r);
}

/* create_holder of op with attrs[0..n): its status and *out. */
static int create_with(const rec_op *op, const pyop_attr_view *attrs, size_t n, void **out) {
  *out = (void *)1;
  clear_error();
  return op->cb->create_holder(op->ctx, attrs, n, out);
}

/*
 * create_holder's checks of what the host passes (plugins/edges, EdgeCtx,
 * EdgeLists; plugins/minors, TensorAttr): no op, no out pointer, attributes
 * counted without an array are PYOP_EINVAL; an attribute view too small or
 * without a name is PYOP_EINVAL naming its index and the op; a value whose
 * type is not the attribute's, a string or list with a length and no data,
 * a Tensor attribute without a tensor, an unknown type fail naming it; no
 * holder is made by any, and the op still works after them.
 */
static void case_holders(void) {
  recorder r = {.fail_at = -1};
  CHECK_OK(load(&r, 2, "edges/edges.py", "minors/tensor_attr.py"));
  const rec_op *ctx = find(&r, "EdgeCtx", true), *lists = find(&r, "EdgeLists", false),
               *tattr = find(&r, "TensorAttr", false);
  CHECK(ctx && lists && tattr, "ops registered");
  pyop_attr_view a = attr_str("what", "alloc");
  void *h = (void *)1;
  clear_error();
  expect_refused(ctx->cb->create_holder(NULL, &a, 1, &h), PYOP_EINVAL,
                 "bridge create_holder: invalid arguments");
  clear_error();
  expect_refused(ctx->cb->create_holder(ctx->ctx, &a, 1, NULL), PYOP_EINVAL,
                 "bridge create_holder: invalid arguments");
  expect_refused(create_with(ctx, NULL, 1, &h), PYOP_EINVAL,
                 "bridge create_holder: invalid arguments");
  a.struct_size = sizeof a - 1;
  expect_refused(create_with(ctx, &a, 1, &h), PYOP_EINVAL,
                 "bridge create_holder: attribute 0 of op 'EdgeCtx' is invalid");
  CHECK(h == NULL, "no holder");
  a = attr_str("what", "alloc");
  a.name.len = 0;
  expect_refused(create_with(ctx, &a, 1, &h), PYOP_EINVAL,
                 "bridge create_holder: attribute 0 of op 'EdgeCtx' is invalid");
  a = attr_str("what", "alloc");
  a.default_value.type = PYOP_ATTR_INT;
  expect_refused(create_with(ctx, &a, 1, &h), PYOP_EPYTHON,
                 "attribute value of type 1 given for type 4");
  CHECK(h == NULL, "no holder");
  a = attr_str("what", "alloc");
  a.default_value.u.s.data = NULL;
  expect_refused(create_with(ctx, &a, 1, &h), PYOP_EPYTHON, "string attribute with NULL data");
  a = attr_str("what", "alloc");
  a.type = a.default_value.type = 99;
  expect_refused(create_with(ctx, &a, 1, &h), PYOP_EPYTHON, "unknown attribute type 99");
  /* An empty string is a value (its data may be NULL). */
  a = attr_str("what", "alloc");
  a.default_value.u.s = (pyop_str){NULL, 0};
  CHECK(create_with(ctx, &a, 1, &h) == PYOP_OK && h != NULL && h != (void *)1, "empty str");
  ctx->cb->destroy_holder(h);
  /* Lists with a count and no items. */
  pyop_attr_view la[2];
  memset(la, 0, sizeof la);
  la[0].struct_size = la[1].struct_size = sizeof la[0];
  la[0].name = (pyop_str){"li", 2};
  la[0].type = la[0].default_value.type = PYOP_ATTR_LIST_INT;
  la[1].name = (pyop_str){"ls", 2};
  la[1].type = la[1].default_value.type = PYOP_ATTR_LIST_STR;
  CHECK(create_with(lists, la, 2, &h) == PYOP_OK && h != NULL, "empty lists: %s", g_err);
  lists->cb->destroy_holder(h);
  la[0].default_value.u.ints.count = 2;
  expect_refused(create_with(lists, la, 2, &h), PYOP_EPYTHON, "list attribute with NULL items");
  CHECK(h == NULL, "no holder");
  la[0].default_value.u.ints.count = 0;
  la[1].default_value.u.strs.count = 1;
  expect_refused(create_with(lists, la, 2, &h), PYOP_EPYTHON, "list attribute with NULL items");
  /* A Tensor attribute without its tensor. */
  pyop_attr_view ta;
  memset(&ta, 0, sizeof ta);
  ta.struct_size = sizeof ta;
  ta.name = (pyop_str){"table", 5};
  ta.type = ta.default_value.type = PYOP_ATTR_TENSOR;
  expect_refused(create_with(tattr, &ta, 1, &h), PYOP_EPYTHON, "Tensor attribute with no tensor");
  CHECK(h == NULL, "no holder");
  float tv[2] = {1, 2};
  int64_t ts[1] = {2};
  pyop_tensor table = tensor_f32(tv, 1, ts);
  ta.default_value.u.tensor = &table;
  CHECK(create_with(tattr, &ta, 1, &h) == PYOP_OK && h != NULL, "Tensor attribute: %s", g_err);
  tattr->cb->destroy_holder(h);
  /* The op works. */
  ctx_call(ctx, "alloc", (pyop_exec_services){sizeof(pyop_exec_services), NULL, alloc_output,
                                              alloc_workspace, NULL},
           PYOP_OK, NULL);
  CHECK(py_ok("import sys; assert sys.exc_info()[0] is None"), "no exception left");
  api->reset();
  rec_clear(&r);
}

/* The way plugins/descs rewrites its descriptor ("": none). */
static void desc_way(const char *how) {
  char code[160];
  snprintf(code, sizeof code, "import os; os.environ['PYOP_TEST_DESC'] = '%s'", how);
  CHECK(py_ok(code), "PYOP_TEST_DESC=%s", how);
}

/*
 * Descriptors a plugin rewrote after decoration (plugins/descs, the way
 * named by PYOP_TEST_DESC): a source line of 0, negative or past uint32_t
 * is given as 0, UINT32_MAX as it is; an op_type that is no str, an input
 * that is no (name, kind) pair or whose kind is no int, an attribute that
 * is no 4-tuple, outputs or attributes in a list (not a tuple), output
 * kinds of another count or past int32_t, a dtype entry that is no (mask,
 * symbol) pair or has a negative mask are each refused
 * (PYOP_EPYTHON, nothing registered) saying what is wrong; output kinds,
 * input flags and aliases of default values only reach the host as None
 * does (no input_flags, no output_alias).
 */
static void case_descs(void) {
  static const struct {
    const char *how;
    uint32_t line;
  } lines[] = {{"line_zero", 0}, {"line_max", UINT32_MAX}, {"line_past", 0}, {"line_neg", 0}};
  recorder r = {.fail_at = -1};
  for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++) {
    desc_way(lines[i].how);
    CHECK_OK(load(&r, 1, "descs"));
    const rec_op *p = find(&r, "Tampered", false);
    CHECK(p != NULL && p->line == lines[i].line, "%s: line %u", lines[i].how, p ? p->line : 0);
    api->reset();
    rec_clear(&r);
  }
  static const struct {
    const char *how, *needle;
  } bad[] = {
      {"op_type", "descriptor attribute op_type must be a str"},
      {"input_pair", "OpProto input must be (name, kind)"},
      {"input_kind", "OpProto input 0 kind must be an int, got str"},
      {"attr_shape", "OpProto attr must be (name, type, required, default)"},
      {"output_kinds", "OpProto.output_kinds must be a tuple of 1 ints"},
      {"output_kind_big", "OpProto.output_kinds[0] 2147483648 is out of range"},
      {"dtype_pair", "OpProto.input_dtypes[0] must be (mask, symbol)"},
      {"dtype_mask", "OpProto.input_dtypes[0] mask -1 is out of range [0, "},
      {"outputs_list", "OpProto inputs/outputs/attrs must be tuples"},
      {"attrs_list", "OpProto inputs/outputs/attrs must be tuples"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    desc_way(bad[i].how);
    const char *n[] = {"converting plugin descriptors failed", bad[i].needle, NULL};
    expect_load_error(bad[i].how, PYOP_EPYTHON, n, 1, "descs", NULL);
  }
  /* output_kinds, input_flags and output_alias of default values only:
   * the host gets no input_flags nor output_alias (as for None), one
   * required output (batch 15 survivor bridge.b15.views.int_tuple_all_default). */
  desc_way("all_default");
  CHECK_OK(load(&r, 1, "descs"));
  const rec_op *dp = find(&r, "Tampered", false);
  CHECK(dp != NULL && !dp->has_flags && !dp->has_alias && dp->n_outputs == 1 &&
            dp->output_kinds[0] == PYOP_IO_REQUIRED,
        "tuples of defaults: input_flags %d, output_alias %d", dp ? dp->has_flags : -1,
        dp ? dp->has_alias : -1);
  api->reset();
  rec_clear(&r);
  desc_way("");
  CHECK_OK(load(&r, 1, "descs"));
  CHECK(r.n == 1, "the untouched descriptor");
  api->reset();
  rec_clear(&r);
}

/* One declare_launch_args of EdgeLaunch with a scalar of type st and value
 * (its text): its status; the argument the host got in *got. */
static int launch_scalar(const rec_op *impl, int st, const char *value,
                         pyop_launch_arg_view *got) {
  float x[2] = {1, 2};
  int64_t s[1] = {2};
  pyop_tensor in = tensor_f32(x, 1, s);
  pyop_tensor_list lists[1] = {{&in, 1}};
  pyop_attr_view a[2] = {attr_int("st", st), attr_str("value", value)};
  void *h = holder_of(impl, a, 2);
  sink sk;
  memset(&sk, 0, sizeof sk);
  pyop_declare_args da = {sizeof da, lists, 1, &in, 1, &sk, sink_launch, sink_ws};
  clear_error();
  int rc = impl->cb->declare_launch_args(h, &da);
  impl->cb->destroy_holder(h);
  CHECK(rc != PYOP_OK || sk.n_args == 1, "scalar %d %s: %zu args", st, value, sk.n_args);
  CHECK(rc == PYOP_OK || sk.n_args == 0, "scalar %d %s refused: the host got no launch", st,
        value);
  if (rc == PYOP_OK)
    *got = sk.args[0];
  return rc;
}

/*
 * Scalar launch arguments at their types' ranges (plugins/edges,
 * EdgeLaunch: a LaunchArg made directly, so only the bridge checks): for
 * every integer type, bool and pointer, both ends of its range reach the
 * host with the value as given (signed in value.i, unsigned in value.u,
 * pointer in value.p), one past either end is refused naming the argument,
 * its type, the value and the range; a float or double takes any float and
 * refuses an int no C double holds; an argument that is no LaunchArg is
 * refused.
 */
static void case_scalars(void) {
  recorder r = {.fail_at = -1};
  CHECK_OK(load(&r, 1, "edges/edges.py"));
  const rec_op *impl = find(&r, "EdgeLaunch", true);
  CHECK(impl != NULL, "EdgeLaunch registered");
  static const struct {
    int st;
    const char *name, *lo, *hi, *below, *above;
    bool is_signed;
  } types[] = {
      {PYOP_SCALAR_INT8, "int8", "-128", "127", "-129", "128", true},
      {PYOP_SCALAR_INT16, "int16", "-32768", "32767", "-32769", "32768", true},
      {PYOP_SCALAR_INT32, "int32", "-2147483648", "2147483647", "-2147483649", "2147483648",
       true},
      {PYOP_SCALAR_INT64, "int64", "-9223372036854775808", "9223372036854775807",
       "-9223372036854775809", "9223372036854775808", true},
      {PYOP_SCALAR_UINT8, "uint8", "0", "255", "-1", "256", false},
      {PYOP_SCALAR_UINT16, "uint16", "0", "65535", "-1", "65536", false},
      {PYOP_SCALAR_UINT32, "uint32", "0", "4294967295", "-1", "4294967296", false},
      {PYOP_SCALAR_UINT64, "uint64", "0", "18446744073709551615", "-1", "18446744073709551616",
       false},
      {PYOP_SCALAR_BOOL, "bool", "0", "1", "-1", "2", false},
#if UINTPTR_MAX == UINT64_MAX
      {PYOP_SCALAR_POINTER, "pointer", "0", "18446744073709551615", "-1",
       "18446744073709551616", false},
#endif
  };
  for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
    const char *ends[2] = {types[t].lo, types[t].hi};
    for (int e = 0; e < 2; e++) {
      pyop_launch_arg_view got;
      int rc = launch_scalar(impl, types[t].st, ends[e], &got);
      CHECK(rc == PYOP_OK, "%s %s: %d %s", types[t].name, ends[e], rc, g_err);
      CHECK(got.kind == PYOP_LAUNCH_ARG_SCALAR && got.scalar_type == types[t].st, "%s kind",
            types[t].name);
      char as_text[32];
      if (types[t].is_signed)
        snprintf(as_text, sizeof as_text, "%lld", (long long)got.value.i);
      else if (types[t].st == PYOP_SCALAR_POINTER)
        snprintf(as_text, sizeof as_text, "%llu", (unsigned long long)got.value.p);
      else
        snprintf(as_text, sizeof as_text, "%llu", (unsigned long long)got.value.u);
      CHECK(strcmp(as_text, ends[e]) == 0, "%s: the host got %s for %s", types[t].name, as_text,
            ends[e]);
    }
    const char *past[2] = {types[t].below, types[t].above};
    for (int e = 0; e < 2; e++) {
      pyop_launch_arg_view got;
      char want[160];
      snprintf(want, sizeof want, "launch argument 0 (%s) value %s is out of range [%s, %s]",
               types[t].name, past[e], types[t].lo, types[t].hi);
      const char *n[] = {"declare_launch_args of op 'EdgeLaunch'", "ValueError", want, NULL};
      expect_call_error(launch_scalar(impl, types[t].st, past[e], &got), PYOP_EPYTHON, n);
    }
  }
  static const int floats[2] = {PYOP_SCALAR_FLOAT, PYOP_SCALAR_DOUBLE};
  for (int f = 0; f < 2; f++) {
    pyop_launch_arg_view got;
    CHECK_OK(launch_scalar(impl, floats[f], "-2.5", &got));
    CHECK(got.value.f == -2.5, "float %d: %g", floats[f], got.value.f);
    CHECK_OK(launch_scalar(impl, floats[f], "7", &got));
    CHECK(got.value.f == 7.0, "float %d from an int: %g", floats[f], got.value.f);
    char big[410] = "1";
    memset(big + 1, '0', 400);
    big[401] = '\0';
    const char *n[] = {"ValueError", "launch argument 0", "is not a C double", NULL};
    expect_call_error(launch_scalar(impl, floats[f], big, &got), PYOP_EPYTHON, n);
  }
  {
    pyop_launch_arg_view got;
    const char *n[] = {"TypeError", "launch arguments must come from pyop.launch", NULL};
    expect_call_error(launch_scalar(impl, -1, "0", &got), PYOP_EPYTHON, n);
  }
  CHECK(py_ok("import sys; assert sys.exc_info()[0] is None"), "no exception left");
  api->reset();
  rec_clear(&r);
}

/*
 * An artifact directory whose name is not UTF-8 (reached through a symlink
 * to the real one): the pyop package is imported from it and plugins load.
 * Its own process: the package is imported once per bridge session.
 */
static void case_artifact_name(void) {
  char root[] = "/tmp/pyop_artname_XXXXXX";
  CHECK(mkdtemp(root) != NULL, "mkdtemp");
  char link[300];
  snprintf(link, sizeof link, "%s/art_\xe9t\xe9", root);
  CHECK(symlink(g_artifact, link) == 0, "symlink %s", link);
  pyop_bridge_config cfg = {sizeof cfg, {link, strlen(link)}, {NULL, 0}, 0};
  CHECK_OK(api->set_config(&cfg));
  recorder r = {.fail_at = -1};
  CHECK_OK(load(&r, 1, "basic/ops_file.py"));
  CHECK(find(&r, "ScaledAdd", true) != NULL, "ScaledAdd registered");
  CHECK(py_ok("import sys, os\n"
              "f = os.fsencode(sys.modules['pyop'].__file__)\n"
              "assert b'/art_\\xe9t\\xe9/python/pyop/' in f, f\n"),
        "the package came from the non-UTF-8 directory");
  api->reset();
  rec_clear(&r);
  unlink(link);
  rmdir(root);
}

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* Dispatch cost of an execute that does nothing (informational). */
static void case_bench(void) {
  char dir[] = "/tmp/pyop_bench_XXXXXX";
  CHECK(mkdtemp(dir) != NULL, "mkdtemp");
  char file[256];
  snprintf(file, sizeof file, "%s/noop.py", dir);
  write_file(file, "import pyop\nfrom pyop import TensorDesc\n"
                   "@pyop.register_op(op_type='Noop')\n"
                   "def noop(x: TensorDesc, *, a: int = 1, b: float = 2.0) -> TensorDesc:\n"
                   "    return x\n"
                   "@pyop.register_op_impl(op_type='Noop')\n"
                   "class NoopImpl:\n"
                   "    def execute(self, x, *, a, b):\n"
                   "        pass\n");
  recorder r = {.fail_at = -1};
  CHECK_OK(load(&r, 1, dir));
  const rec_op *impl = find(&r, "Noop", true);
  pyop_attr_view a[2] = {attr_float("b", 2.0), attr_float("b", 2.0)};
  a[0].name = (pyop_str){"a", 1};
  a[0].type = a[0].default_value.type = PYOP_ATTR_INT;
  a[0].default_value.u.i = 1;
  void *h = holder_of(impl, a, 2);
  float x[4] = {0};
  int64_t s[1] = {4};
  pyop_tensor in = tensor_f32(x, 1, s);
  outputs o = {0};
  enum { N = 200000 };
  for (int i = 0; i < 1000; i++)
    exec1(impl, h, &in, 1, ONE, 1, &o);
  double t0 = now_ns();
  for (int i = 0; i < N; i++)
    exec1(impl, h, &in, 1, ONE, 1, &o);
  double t1 = now_ns();
  printf("execute dispatch (1 input, 2 attrs, no-op body): %.0f ns/call\n", (t1 - t0) / N);
  impl->cb->destroy_holder(h);
  api->reset();
  rec_clear(&r);
  unlink(file);
  rmdir(dir);
}

/*
 * Members of a loader table past its struct_size, set to traps: the bridge
 * must never call one (it normalises the loader's tables once, at its
 * entry, reading only what struct_size holds).
 */
static int g_trap_calls;
static int trap_find_proto(pyop_str op_type, const pyop_op_info **out) {
  (void)op_type;
  *out = NULL;
  g_trap_calls++;
  return PYOP_ENOENT;
}
static void trap_release_proto(const pyop_op_info *info) {
  (void)info;
  g_trap_calls++;
}
static pyop_str trap_last_error(void) {
  g_trap_calls++;
  return (pyop_str){"trap", 4};
}
static void trap_set_error(int status, pyop_str msg) {
  (void)status;
  (void)msg;
  g_trap_calls++;
}

/* Tables older (shorter) than the bridge's: services, config, registrar. */
static void case_abi_short_tables(pyop_bridge_entry_fn entry) {
  const pyop_bridge_api *a = NULL;
  const char *no_proto = "import sys\n"
                         "assert sys.modules['pyop._native'].registered_proto('Nope') is None\n";
  /* Services of ABI 1.0's size, the later members traps. */
  pyop_loader_services old = {sizeof old,      svc_set_error,      svc_log,
                              trap_find_proto, trap_release_proto, trap_last_error};
  old.struct_size = offsetof(pyop_loader_services, find_proto);
  pyop_bridge_request req = {sizeof req, PYOP_BRIDGE_ABI_MAJOR, PYOP_BRIDGE_ABI_MINOR, &old};
  g_trap_calls = 0;
  CHECK(entry(&req, &a) == PYOP_OK, "1.0-sized services");
  CHECK(py_ok(no_proto), "registered_proto without find_proto");
  /* A registrar too small to hold add_impl is refused (through set_error,
   * a 1.0 member). */
  recorder r = {.fail_at = -1};
  pyop_registrar reg = {offsetof(pyop_registrar, add_impl), &r, rec_add_proto, rec_add_impl};
  clear_error();
  CHECK(a->register_custom_ops(&reg, NULL, 0) == PYOP_EINVAL && err_has("invalid registrar"),
        "short registrar refused");
  /* A config of ABI 1.0's size: lanes past it is not read (out of range). */
  pyop_bridge_config cfg = {sizeof cfg, {g_artifact, strlen(g_artifact)}, {NULL, 0}, 0};
  cfg.lanes = 100000;
  cfg.struct_size = offsetof(pyop_bridge_config, lanes);
  CHECK(a->set_config(&cfg) == PYOP_OK, "lanes past struct_size not read");
  cfg.struct_size = sizeof cfg;
  clear_error();
  CHECK(a->set_config(&cfg) == PYOP_EINVAL && err_has("lanes 100000 is out of range"),
        "lanes within struct_size read");
  /* The limit itself is a number of lanes; one past it is refused (then 0
   * again: no lane starts here) (configuration pass, session 12). */
  cfg.lanes = PYOP_MAX_LANES + 1;
  clear_error();
  CHECK(a->set_config(&cfg) == PYOP_EINVAL && err_has("lanes 65 is out of range (0..64)"),
        "lanes one past the limit: %s", g_err);
  cfg.lanes = PYOP_MAX_LANES;
  clear_error();
  CHECK(a->set_config(&cfg) == PYOP_OK, "lanes at the limit refused: %s", g_err);
  cfg.lanes = 0;
  CHECK(a->set_config(&cfg) == PYOP_OK, "lanes 0: %s", g_err);
  /* The configuration a bridge gives the images of its lanes (the private
   * flag PB_CONFIG_LANE of bridge/lanes.h, 1 << 31) is refused unless the
   * lane's interpreter is attached AND no lanes are asked: a lane image
   * with lanes of its own would start lanes inside a lane. Both arms: the
   * harness's thread detached (lanes 0), then attached with lanes 2 (batch
   * 20 survivor, session 16). Neither makes this image a lane image (case
   * abi's loads after it work). */
  {
    const uint32_t lane_flag = 1u << 31;
    pyop_bridge_config lane = cfg;
    lane.flags = lane_flag;
    lane.lanes = 0;
    clear_error();
    CHECK(a->set_config(&lane) == PYOP_EINVAL &&
              err_has("a lane image needs its interpreter attached and no lanes of its own"),
          "a lane image's config without its interpreter attached: %s", g_err);
    lane.lanes = 2;
    clear_error();
    int st = PyGILState_Ensure();
    int rc = a->set_config(&lane);
    PyGILState_Release(st);
    CHECK(rc == PYOP_EINVAL &&
              err_has("a lane image needs its interpreter attached and no lanes of its own"),
          "a lane image's config asking for 2 lanes of its own: %d %s", rc, g_err);
    CHECK(a->set_config(&cfg) == PYOP_OK, "an ordinary config after them: %s", g_err);
  }
  CHECK(g_trap_calls == 0, "a member past struct_size called (%d)", g_trap_calls);
  /* Full-size services with a loader of 1.1: the 1.2/1.4 members unused. */
  old.struct_size = sizeof old;
  req.abi_minor = 1;
  CHECK(entry(&req, &a) == PYOP_OK && a->abi_minor == 1, "minor 1");
  CHECK(py_ok(no_proto), "registered_proto with a 1.1 loader");
  CHECK(g_trap_calls == 0, "a member of a later minor called (%d)", g_trap_calls);
  req.abi_minor = PYOP_BRIDGE_ABI_MINOR; /* the traps are offered now: used */
  CHECK(entry(&req, &a) == PYOP_OK, "full services");
  CHECK(py_ok(no_proto) && g_trap_calls == 1, "find_proto asked (%d)", g_trap_calls);
  /* Services too small to hold set_error: no error is sent at all. */
  pyop_loader_services tiny = {offsetof(pyop_loader_services, set_error), trap_set_error, NULL};
  req.services = &tiny;
  req.abi_major = PYOP_BRIDGE_ABI_MAJOR + 1;
  g_trap_calls = 0;
  CHECK(entry(&req, &a) == PYOP_EABI && g_trap_calls == 0, "set_error past struct_size");
  req.services = &g_services; /* back to what the other cases use */
  req.abi_major = PYOP_BRIDGE_ABI_MAJOR;
  CHECK(entry(&req, &a) == PYOP_OK, "services restored");
  /* Lanes asked of a Python without per-interpreter GILs (before 3.12):
   * set_config takes the config and says at warn level that none runs, for
   * one lane as for the limit; nothing for none (both-sides pass, session
   * 14). */
  unsigned major = 0, minor = 0;
  CHECK(sscanf(Py_GetVersion(), "%u.%u", &major, &minor) == 2, "version %s", Py_GetVersion());
  static const uint32_t asked[] = {1, PYOP_MAX_LANES};
  for (size_t i = 0; major == 3 && minor < 12 && i < sizeof asked / sizeof asked[0]; i++) {
    cfg.lanes = asked[i];
    log_all_clear();
    g_log_level = -1;
    CHECK(a->set_config(&cfg) == PYOP_OK, "lanes %u: %s", (unsigned)asked[i], g_err);
    char want[400];
    snprintf(want, sizeof want,
             "lanes: %u asked for, but Python %u.%u has no per-interpreter GIL (lanes need "
             "CPython 3.12.4 or later): every Python op runs serially in the main interpreter\n",
             (unsigned)asked[i], major, minor);
    CHECK(g_log_level == PYOP_LOG_WARN && strcmp(g_log_all, want) == 0,
          "lanes %u: logged (level %d):\n%s", (unsigned)asked[i], g_log_level, g_log_all);
  }
  cfg.lanes = 0;
  log_all_clear();
  CHECK(a->set_config(&cfg) == PYOP_OK && g_log_all[0] == '\0', "lanes 0 logged:\n%s",
        g_log_all);
  CHECK_OK(configure(0));
}

/*
 * The entry's version negotiation: majors 2 and 0 refused naming them, a newer minor
 * answered with the bridge's own, minor 0 with 1.0 (and what a 1.0 loader
 * cannot read refused, not handed over), build_info; NULL requests, bad
 * configurations and views with an embedded NUL refused; loader tables
 * shorter than the bridge's read only as far as struct_size says
 * (case_abi_short_tables).
 */
static void case_abi(void) {
  void *h = bridge_handle;
  pyop_bridge_entry_fn entry = (pyop_bridge_entry_fn)dlsym(h, PYOP_BRIDGE_ENTRY_SYMBOL);
  const pyop_bridge_api *a = NULL;
  pyop_bridge_request req = {sizeof req, 2, 0, &g_services};
  clear_error();
  CHECK(entry(&req, &a) == PYOP_EABI && a == NULL, "major 2 refused");
  CHECK(err_has("loader asked for 2.0"), "abi message");
  /* An older major is refused as a newer one is: its table has another
   * layout (batch 16 survivor, session 14). */
  req.abi_major = PYOP_BRIDGE_ABI_MAJOR - 1;
  req.abi_minor = 7;
  clear_error();
  CHECK(entry(&req, &a) == PYOP_EABI && a == NULL, "major 0 accepted");
  CHECK(err_has("bridge speaks ABI 1.") && err_has("loader asked for 0.7"), "major 0 message: %s",
        g_err);
  req.abi_major = 1;
  req.abi_minor = PYOP_BRIDGE_ABI_MINOR + 1; /* a newer loader: the bridge keeps to its own */
  CHECK(entry(&req, &a) == PYOP_OK && a->abi_major == 1 && a->abi_minor == PYOP_BRIDGE_ABI_MINOR,
        "newer minor -> ours");
  req.abi_minor = 0; /* an older loader: the bridge keeps to 1.0 */
  CHECK(entry(&req, &a) == PYOP_OK && a->abi_major == 1 && a->abi_minor == 0, "minor 0 -> 0");
  {
    /* What a 1.0 loader cannot read is refused, not handed over: an op
     * without outputs (plugins/results), a dynamic output. */
    recorder r = {.fail_at = -1};
    clear_error();
    CHECK(load(&r, 1, "results") == PYOP_EPYTHON, "ABI 1.0: ops without outputs refused");
    CHECK(err_has("op 'ResultNone'") && err_has("has no outputs, which needs bridge ABI 1.1; "
                                                "the loaded libpyop speaks 1.0"),
          "ABI 1.0 message");
    rec_clear(&r);
  }
  case_abi_short_tables(entry);
  req.abi_minor = PYOP_BRIDGE_ABI_MINOR; /* back to what the other cases use */
  CHECK(entry(&req, &a) == PYOP_OK && a->abi_minor == PYOP_BRIDGE_ABI_MINOR, "minor restored");
  /* A refused request leaves no table in *out_api, also when it held one
   * from an earlier entry (dataflow pass, session 13). */
  req.abi_major = 2;
  CHECK(entry(&req, &a) == PYOP_EABI && a == NULL, "a refused major left a table");
  req.abi_major = 1;
  CHECK_OK(entry(&req, &a));
  pyop_bridge_request small = {offsetof(pyop_bridge_request, services), 1,
                               PYOP_BRIDGE_ABI_MINOR, &g_services};
  CHECK(entry(&small, &a) == PYOP_EABI && a == NULL, "a request too small left a table");
  CHECK_OK(entry(&req, &a));
  CHECK(a->build_info.len > 0 && strstr(a->build_info.data, "Python headers 3.") != NULL,
        "build_info %.*s", (int)a->build_info.len, a->build_info.data);
  CHECK(entry(NULL, &a) == PYOP_EINVAL, "NULL request");
  pyop_bridge_config bad = {sizeof bad, {NULL, 3}, {NULL, 0}, 0};
  CHECK(a->set_config(&bad) == PYOP_EINVAL, "bad artifact_dir");
  pyop_registrar reg = {sizeof reg, NULL, NULL, NULL};
  CHECK(a->register_custom_ops(&reg, NULL, 0) == PYOP_EINVAL, "registrar without functions");
  /* Views with an embedded NUL are refused (a path cut at the NUL would
   * name another file). */
  recorder r = {.fail_at = -1};
  pyop_registrar good = {sizeof good, &r, rec_add_proto, rec_add_impl};
  char nul_path[4200];
  int len = snprintf(nul_path, sizeof nul_path, "%s/basic", g_plugins);
  nul_path[len - 6] = '\0'; /* "<plugins>\0basic" */
  pyop_str paths[1] = {{nul_path, (size_t)len}};
  clear_error();
  CHECK(a->register_custom_ops(&good, paths, 1) == PYOP_EINVAL, "a path with a NUL");
  CHECK(err_has("path 0 is empty or invalid") && r.n == 0, "NUL path message");
  pyop_bridge_config nul_dir = {sizeof nul_dir, {nul_path, (size_t)len}, {NULL, 0}, 0};
  CHECK(a->set_config(&nul_dir) == PYOP_EINVAL, "an artifact_dir with a NUL");
}

/* ------------------------------------------- loadstate pass (session 10) */

static void loadstate_usr1(int sig) { (void)sig; }
static void loadstate_usr1b(int sig) { (void)sig; }

/* The handler SIGUSR1... has now (sa_handler or sa_sigaction). */
static void *handler_now(int sig) {
  struct sigaction sa;
  CHECK(sigaction(sig, NULL, &sa) == 0, "sigaction %d", sig);
  return (sa.sa_flags & SA_SIGINFO) ? (void *)sa.sa_sigaction : (void *)sa.sa_handler;
}

/*
 * Signal dispositions across loads (plugins/loadstate/sig_usr1.py replaces
 * the host's SIGUSR1 handler at import): a failed load while that plugin
 * is loaded leaves its handler (a plugin is still loaded); a second load
 * does not take the plugin's handler for the host's; reset, with no plugin
 * left, puts the host's handler back and resets Python's own table
 * (signal.getsignal is SIG_DFL, no plugin function kept), and says so; a
 * handler the host set between two loads is the one the second reset
 * restores.
 */
static void loadstate_signals(void) {
  struct sigaction sa, old;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = loadstate_usr1;
  CHECK(sigaction(SIGUSR1, &sa, &old) == 0, "install the host's SIGUSR1 handler");
  recorder r = {.fail_at = -1};
  CHECK_OK(load(&r, 1, "loadstate/sig_usr1.py"));
  void *plugin_handler = handler_now(SIGUSR1);
  CHECK(plugin_handler != (void *)loadstate_usr1, "test bug: the plugin did not replace SIGUSR1");
  CHECK(load(&r, 1, "loadstate/fails.py") == PYOP_EPLUGIN && err_has("loadstate plugin fails"),
        "the failing plugin");
  CHECK(handler_now(SIGUSR1) == plugin_handler,
        "a failed load restored the host's SIGUSR1 while a plugin that replaced it is loaded");
  CHECK_OK(load(&r, 1, "loadstate/plain.py"));
  CHECK(find(&r, "OutSig", false) != NULL && find(&r, "OutPlain", false) != NULL, "both loads");
  log_all_clear();
  api->reset();
  CHECK(handler_now(SIGUSR1) == (void *)loadstate_usr1,
        "reset (no plugin left) did not restore the host's SIGUSR1 handler");
  CHECK(strstr(g_log_all, "restored the host's handler for SIGUSR1") != NULL,
        "no line says SIGUSR1 was restored:\n%s", g_log_all);
  CHECK(py_ok("import signal\n"
              "assert signal.getsignal(signal.SIGUSR1) == signal.SIG_DFL, "
              "signal.getsignal(signal.SIGUSR1)\n"),
        "Python's signal table still holds the plugin's SIGUSR1 function");
  rec_clear(&r);
  /* The host changes its handler between loads: the next unload restores
   * that one (saved afresh at the next load), not the first. */
  sa.sa_handler = loadstate_usr1b;
  CHECK(sigaction(SIGUSR1, &sa, NULL) == 0, "the host's second SIGUSR1 handler");
  CHECK_OK(load(&r, 1, "loadstate/sig_usr1.py"));
  CHECK(handler_now(SIGUSR1) != (void *)loadstate_usr1b, "test bug: SIGUSR1 not replaced");
  api->reset();
  CHECK(handler_now(SIGUSR1) == (void *)loadstate_usr1b,
        "reset restored a handler the host had before an earlier load");
  rec_clear(&r);
  sigaction(SIGUSR1, &old, NULL);
}

/*
 * The import guard after a successful load: a module of another package
 * whose name starts with "pyop" (pyop_utils), or holds a NUL after it
 * ("pyop\0utils"), replaced by a plugin, is the plugin's (only the pyop
 * package's entries are put back); a pyop.* entry
 * the host made before the load (None) stays; a clean load logs no repair.
 * After a failed load, an entry its plugin added to
 * sys.path_importer_cache in place is gone.
 */
static void loadstate_guard(void) {
  recorder r = {.fail_at = -1};
  CHECK_OK(load(&r, 1, "loadstate/plain.py")); /* the pyop package imported */
  api->reset();
  rec_clear(&r);
  CHECK(py_ok("import sys, types\n"
              "sys.modules['pyop_utils'] = types.ModuleType('pyop_utils')\n"
              "sys.modules['pyop_utils'].owner = 'host'\n"
              "sys.modules['pyop\\x00utils'] = types.ModuleType('pyop_nul_utils')\n"
              "sys.modules['pyop\\x00utils'].owner = 'host'\n"
              "sys.modules['pyop._loadstate_host_none'] = None\n"),
        "host entries");
  log_all_clear();
  CHECK_OK(load(&r, 1, "loadstate/utils.py"));
  CHECK(py_ok("import sys\n"
              "assert sys.modules['pyop_utils'].owner == 'plugin', sys.modules['pyop_utils']\n"
              "assert sys.modules['pyop\\x00utils'].owner == 'plugin'\n"
              "del sys.modules['pyop\\x00utils']\n"
              "assert 'pyop._loadstate_host_none' in sys.modules\n"
              "assert sys.modules['pyop._loadstate_host_none'] is None\n"
              "del sys.modules['pyop_utils'], sys.modules['pyop._loadstate_host_none']\n"),
        "the guard put back entries that are no part of the pyop package, or dropped the "
        "host's");
  CHECK(strstr(g_log_all, "a plugin changed interpreter state") == NULL,
        "a load that changed no pyop entry logged a repair:\n%s", g_log_all);
  api->reset();
  rec_clear(&r);
  /* A failed load whose plugin added to sys.path_importer_cache in place:
   * the entry is gone, the dict is the same one. */
  CHECK(py_ok("import sys; _oc_cache = sys.path_importer_cache"), "save");
  CHECK(load(&r, 1, "loadstate/fails_cache.py") == PYOP_EPLUGIN &&
            err_has("loadstate plugin fails after changing the importer cache"),
        "the failing plugin: %d %s", g_err_status, g_err);
  CHECK(py_ok("import sys\n"
              "assert sys.path_importer_cache is _oc_cache\n"
              "assert '/loadstate/not-a-path' not in sys.path_importer_cache\n"
              "del _oc_cache\n"),
        "the failed load's entry stayed in sys.path_importer_cache");
  rec_clear(&r);
  /* A failed load whose plugin deleted sys.path_hooks: it is a list again
   * with the hooks it held (process C pass, session 17:
   * bridge.ppr.import_guard.deleted_list_crash read the missing list). */
  CHECK(py_ok("import sys\n_oc_hooks = list(sys.path_hooks)\n"), "save");
  CHECK(load(&r, 1, "loadstate/fails_hooks.py") == PYOP_EPLUGIN &&
            err_has("loadstate plugin fails after deleting sys.path_hooks"),
        "the failing plugin: %d %s", g_err_status, g_err);
  CHECK(py_ok("import sys\n"
              "assert type(sys.path_hooks) is list, type(sys.path_hooks)\n"
              "assert sys.path_hooks == _oc_hooks, sys.path_hooks\n"
              "del _oc_hooks\n"),
        "the failed load left sys.path_hooks deleted");
  rec_clear(&r);
}

/* A host thread that loads once with the GIL free (the bridge keeps a
 * thread state for it, the thread's PyGILState one), then takes the GIL
 * with PyGILState_Ensure (that same state attached) and loads again while
 * running no Python: that load is warned about, naming the thread. */
static void *gil_kept_own_state_thread(void *arg) {
  (void)arg;
  recorder r = {.fail_at = -1};
  CHECK_OK(load(&r, 1, "loadstate/plain.py"));
  api->reset();
  rec_clear(&r);
  log_all_clear();
  int st = PyGILState_Ensure();
  int rc = load(&r, 1, "loadstate/plain.py");
  PyGILState_Release(st);
  CHECK(rc == PYOP_OK, "load holding the GIL through the thread's kept state: %d", rc);
  char want[160];
  snprintf(want, sizeof want,
           "the thread calling pyop_load (thread %ld) holds the GIL while running no Python",
           (long)syscall(SYS_gettid));
  CHECK(strstr(g_log_all, want) != NULL, "no warning \"%s\" for a load holding the GIL through the thread's kept "
        "state:\n%s", want, g_log_all);
  api->reset();
  rec_clear(&r);
  return NULL;
}

/*
 * A load from a thread that holds the GIL while running no Python (a host
 * that initialised Python and kept it: here PyGILState_Ensure) is named in
 * a warning with its thread id; a load with the GIL free is not. So is one
 * from a host thread whose GIL is held through the thread state the bridge
 * keeps for it (process C pass, session 17:
 * bridge.ppr.gil_watch.held_not_noted took that nested state for a free
 * GIL).
 */
static void loadstate_gil_kept(void) {
  pthread_t t;
  CHECK(pthread_create(&t, NULL, gil_kept_own_state_thread, NULL) == 0, "pthread_create");
  pthread_join(t, NULL);
  recorder r = {.fail_at = -1};
  log_all_clear();
  int st = PyGILState_Ensure();
  int rc = load(&r, 1, "loadstate/plain.py");
  PyGILState_Release(st);
  CHECK(rc == PYOP_OK, "load holding the GIL: %d", rc);
  char want[160];
  snprintf(want, sizeof want,
           "the thread calling pyop_load (thread %ld) holds the GIL while running no Python",
           (long)syscall(SYS_gettid));
  CHECK(strstr(g_log_all, want) != NULL, "no warning \"%s\":\n%s", want, g_log_all);
  api->reset();
  rec_clear(&r);
  log_all_clear();
  CHECK_OK(load(&r, 1, "loadstate/plain.py"));
  CHECK(strstr(g_log_all, "holds the GIL") == NULL, "a load with the GIL free warned:\n%s",
        g_log_all);
  api->reset();
  rec_clear(&r);
}

/*
 * What register_custom_ops and set_config refuse before anything is
 * loaded: a registrar without add_proto or add_impl (or none), a path
 * after the first that is empty, an empty artifact_dir (the one set before
 * stays in use).
 */
static void loadstate_requests(void) {
  recorder r = {.fail_at = -1};
  pyop_registrar no_proto = {sizeof no_proto, &r, NULL, rec_add_impl};
  clear_error();
  CHECK(api->register_custom_ops(&no_proto, NULL, 0) == PYOP_EINVAL &&
            err_has("invalid registrar"),
        "a registrar without add_proto accepted");
  /* add_impl is required too: a load would call it for each op (dataflow
   * pass, session 13). */
  char one[4200];
  snprintf(one, sizeof one, "%s/loadstate/plain.py", g_plugins);
  pyop_str one_path = {one, strlen(one)};
  pyop_registrar no_impl = {sizeof no_impl, &r, rec_add_proto, NULL};
  clear_error();
  CHECK(api->register_custom_ops(&no_impl, &one_path, 1) == PYOP_EINVAL &&
            err_has("invalid registrar") && r.n == 0,
        "a registrar without add_impl accepted: %d %s", g_err_status, g_err);
  clear_error();
  CHECK(api->register_custom_ops(NULL, NULL, 0) == PYOP_EINVAL && err_has("invalid registrar"),
        "no registrar accepted");
  char good[4200];
  snprintf(good, sizeof good, "%s/loadstate/plain.py", g_plugins);
  pyop_str paths[2] = {{good, strlen(good)}, {"", 0}};
  pyop_registrar reg = {sizeof reg, &r, rec_add_proto, rec_add_impl};
  clear_error();
  CHECK(api->register_custom_ops(&reg, paths, 2) == PYOP_EINVAL &&
            err_has("path 1 is empty or invalid"),
        "an empty second path: %d %s", g_err_status, g_err);
  CHECK(r.n == 0, "the first path was loaded (%zu ops)", r.n);
  pyop_bridge_config empty = {sizeof empty, {"", 0}, {NULL, 0}, 0};
  clear_error();
  CHECK(api->set_config(&empty) == PYOP_EINVAL && err_has("artifact_dir is empty or invalid"),
        "an empty artifact_dir accepted");
  CHECK_OK(load(&r, 1, "loadstate/plain.py"));
  CHECK(r.n == 1, "a load after the refused set_config");
  api->reset();
  rec_clear(&r);
}

/* declare_launch_args: an output's and a workspace's index past 0 reach
 * the host as the plugin wrote them (plugins/loadstate/launch2.py). */
static void loadstate_launch_index(void) {
  recorder r = {.fail_at = -1};
  CHECK_OK(load(&r, 1, "loadstate/launch2.py"));
  const rec_op *impl = find(&r, "OutLaunch", true);
  CHECK(impl != NULL, "OutLaunch registered");
  void *h = holder_of(impl, NULL, 0);
  float x[2] = {1, 2};
  int64_t s[1] = {2};
  pyop_tensor in = tensor_f32(x, 1, s), out = tensor_f32(NULL, 1, s);
  pyop_tensor_list lists[1] = {{&in, 1}};
  sink sk;
  memset(&sk, 0, sizeof sk);
  pyop_declare_args da = {sizeof da, lists, 1, &out, 1, &sk, sink_launch, sink_ws};
  clear_error();
  CHECK_OK(impl->cb->declare_launch_args(h, &da));
  CHECK(sk.n_ws == 2 && sk.ws[0] == 8 && sk.ws[1] == 16, "workspaces");
  CHECK(sk.n_args == 3, "n_args %zu", sk.n_args);
  CHECK(sk.args[0].kind == PYOP_LAUNCH_ARG_INPUT && sk.args[0].index == 2, "input index %u",
        sk.args[0].index);
  CHECK(sk.args[1].kind == PYOP_LAUNCH_ARG_OUTPUT && sk.args[1].index == 3, "output index %u",
        sk.args[1].index);
  CHECK(sk.args[2].kind == PYOP_LAUNCH_ARG_WORKSPACE && sk.args[2].index == 1,
        "workspace index %u", sk.args[2].index);
  impl->cb->destroy_holder(h);
  api->reset();
  rec_clear(&r);
}

/* After shutdown the package's finder is gone from sys.meta_path and the
 * bridge calls none of the loader's services (the loader may be gone): a
 * refused call records nothing. Negotiated again after, as the other cases
 * left it. */
static void loadstate_shutdown_services(void) {
  /* Something made sys.meta_path a tuple after the load (Python's import
   * system takes any iterable): the package's shutdown still takes its
   * finders off and removes the ge package (it stopped at the tuple, and
   * the finder left there kept the package's objects alive). */
  CHECK(py_ok("import sys\n"
              "assert 'ge' in sys.modules\n"
              "sys.meta_path = tuple(sys.meta_path)\n"),
        "sys.meta_path made a tuple");
  api->shutdown();
  /* The package's shutdown ran: the plugin finder left sys.meta_path. */
  CHECK(py_ok("import sys\n"
              "assert type(sys.meta_path) is list, type(sys.meta_path)\n"
              "left = [f for f in sys.meta_path\n"
              "        if getattr(f, '__module__', '').startswith(('pyop.', 'ge.'))]\n"
              "assert not left, left\n"
              "assert 'ge' not in sys.modules\n"),
        "the plugin finder stayed in sys.meta_path after shutdown");
  int before = g_set_error_calls;
  CHECK(api->set_config(NULL) == PYOP_EINVAL, "set_config(NULL) after shutdown");
  CHECK(g_set_error_calls == before, "set_error called after shutdown (%d calls)",
        g_set_error_calls - before);
  pyop_bridge_entry_fn entry =
      (pyop_bridge_entry_fn)dlsym(bridge_handle, PYOP_BRIDGE_ENTRY_SYMBOL);
  /* No services at all: the bridge works and reports nothing. */
  pyop_bridge_request none = {sizeof none, PYOP_BRIDGE_ABI_MAJOR, PYOP_BRIDGE_ABI_MINOR, NULL};
  CHECK_OK(entry(&none, &api));
  CHECK(api->set_config(NULL) == PYOP_EINVAL && g_set_error_calls == before,
        "set_config(NULL) without services");
  pyop_bridge_request req = {sizeof req, PYOP_BRIDGE_ABI_MAJOR, PYOP_BRIDGE_ABI_MINOR, &g_services};
  CHECK(entry(&req, NULL) == PYOP_EINVAL, "no out_api");
  CHECK_OK(entry(&req, &api));
  CHECK_OK(configure(0));
  recorder r = {.fail_at = -1};
  CHECK_OK(load(&r, 1, "loadstate/plain.py"));
  api->reset();
  rec_clear(&r);
}

/* A plugin's error whose text holds a file name that is not UTF-8 (its
 * directory's name has the byte 0xff): the message gives the name's bytes
 * back as they are, not an escape of them. */
static void loadstate_undecodable_name(void) {
  char dir[] = "/tmp/pyop_loadstate_XXXXXX";
  CHECK(mkdtemp(dir) != NULL, "mkdtemp");
  char sub[256], file[300];
  snprintf(sub, sizeof sub, "%s/bad\xff" "dir", dir);
  CHECK(mkdir(sub, 0700) == 0, "mkdir %s", sub);
  snprintf(file, sizeof file, "%s/boom.py", sub);
  write_file(file, "raise ValueError('boom in ' + __file__)\n");
  recorder r = {.fail_at = -1};
  CHECK(load(&r, 1, file) == PYOP_EPLUGIN, "the failing plugin: %d", g_err_status);
  char want[320];
  snprintf(want, sizeof want, "ValueError: boom in %s", file);
  CHECK(err_has(want), "the message does not hold the file's name as its bytes:\n%s", g_err);
  rec_clear(&r);
  unlink(file);
  rmdir(sub);
  rmdir(dir);
}

static int refuse_ws(void *ctx, uint64_t nbytes) {
  (void)ctx;
  (void)nbytes;
  return PYOP_EINVAL;
}

static int refuse_launch(void *ctx, const pyop_launch_view *l) {
  (void)ctx;
  (void)l;
  return PYOP_ENOMEM;
}

/*
 * compile and declare_launch_args (plugins/loadstate/sinks.py) whose host
 * sink is missing fail with PYOP_EUNSUPPORTED, and with the sink's own
 * status when it refuses: set_artifact, add_workspace, add_launch.
 */
static void loadstate_sinks(void) {
  recorder r = {.fail_at = -1};
  CHECK_OK(load(&r, 1, "loadstate/sinks.py"));
  const rec_op *impl = find(&r, "OutSinks", true);
  CHECK(impl != NULL, "OutSinks registered");
  float x[2] = {1, 2};
  int64_t s[1] = {2};
  pyop_tensor in = tensor_f32(x, 1, s), out = tensor_f32(NULL, 1, s);
  pyop_tensor_list lists[1] = {{&in, 1}};
  static const char *const whats[] = {"", "long", "workspace"};
  void *h[3];
  for (int i = 0; i < 3; i++) {
    pyop_attr_view a = attr_str("what", whats[i]);
    h[i] = holder_of(impl, &a, 1);
  }
  sink sk;
  memset(&sk, 0, sizeof sk);
  pyop_compile_args ca = {sizeof ca, lists, 1, &out, 1, &sk, NULL};
  clear_error();
  int rc = impl->cb->compile(h[0], &ca);
  CHECK(rc == PYOP_EUNSUPPORTED && err_has("the host rejected the artifact"),
        "compile without set_artifact: %d %s", rc, g_err);
  ca.set_artifact = sink_artifact;
  clear_error();
  rc = impl->cb->compile(h[1], &ca);
  CHECK(rc == PYOP_EINVAL && err_has("the host rejected the artifact (status -1)"),
        "an artifact the host refuses: %d %s", rc, g_err);
  CHECK_OK(impl->cb->compile(h[0], &ca));
  CHECK(sk.artifact_len == 4 && memcmp(sk.artifact, "zzzz", 4) == 0, "the artifact");
  pyop_declare_args da = {sizeof da, lists, 1, &out, 1, &sk, NULL, NULL};
  clear_error();
  rc = impl->cb->declare_launch_args(h[2], &da);
  CHECK(rc == PYOP_EUNSUPPORTED && err_has("the host rejected the workspace"),
        "add_workspace without the sink: %d %s", rc, g_err);
  da.add_workspace = refuse_ws;
  clear_error();
  rc = impl->cb->declare_launch_args(h[2], &da);
  CHECK(rc == PYOP_EINVAL && err_has("the host rejected the workspace (status -1)"),
        "a workspace the host refuses: %d %s", rc, g_err);
  clear_error();
  rc = impl->cb->declare_launch_args(h[0], &da);
  CHECK(rc == PYOP_EUNSUPPORTED && err_has("the host rejected the launch of k in /lib/libk.so"),
        "add_launch without the sink: %d %s", rc, g_err);
  da.add_launch = refuse_launch;
  clear_error();
  rc = impl->cb->declare_launch_args(h[0], &da);
  CHECK(rc == PYOP_ENOMEM && err_has("the host rejected the launch of k in /lib/libk.so (status -2)"),
        "a launch the host refuses: %d %s", rc, g_err);
  for (int i = 0; i < 3; i++)
    impl->cb->destroy_holder(h[i]);
  api->reset();
  rec_clear(&r);
}

static pyop_str g_reason;
static pyop_str reason_last_error(void) { return g_reason; }

/*
 * A host service that libpyop refused, with a loader of ABI 1.4 (its
 * last_error gives the reason): the reason ends the exception's text; an
 * empty reason, or one not NUL-terminated at its length, is not used (the
 * status's own message is). So from a loader of 1.4 exactly; one of 1.3
 * that offers the member has it not called.
 */
static void loadstate_refusal_reason(void) {
  pyop_bridge_entry_fn entry =
      (pyop_bridge_entry_fn)dlsym(bridge_handle, PYOP_BRIDGE_ENTRY_SYMBOL);
  pyop_loader_services svc = g_services;
  svc.last_error = reason_last_error;
  pyop_bridge_request req = {sizeof req, PYOP_BRIDGE_ABI_MAJOR, PYOP_BRIDGE_ABI_MINOR, &svc};
  CHECK_OK(entry(&req, &api));
  recorder r = {.fail_at = -1};
  CHECK_OK(load(&r, 1, "edges/edges.py"));
  const rec_op *impl = find(&r, "EdgeCtx", true);
  CHECK(impl != NULL, "EdgeCtx registered");
  pyop_exec_services odd = {sizeof odd, NULL, odd_alloc_output, odd_alloc_workspace,
                            odd_alias_output};
  g_svc_status = PYOP_ENOMEM;
  static const char reason[] = "the workspace limit is 8 bytes";
  g_reason = (pyop_str){reason, sizeof reason - 1};
  {
    const char *n[] = {"RuntimeError: libpyop refused to allocate a workspace of 16 bytes "
                       "(PYOP_ENOMEM): the workspace limit is 8 bytes\n", NULL};
    ctx_call(impl, "ws", odd, PYOP_ENOMEM, n);
  }
  g_reason = (pyop_str){"", 0};
  {
    const char *n[] = {"RuntimeError: libpyop refused to allocate a workspace of 16 bytes "
                       "(PYOP_ENOMEM): out of memory\n", NULL};
    ctx_call(impl, "ws", odd, PYOP_ENOMEM, n);
  }
  g_reason = (pyop_str){reason, 3}; /* "the" and no NUL after it */
  {
    const char *n[] = {"RuntimeError: libpyop refused to allocate a workspace of 16 bytes "
                       "(PYOP_ENOMEM): out of memory\n", NULL};
    ctx_call(impl, "ws", odd, PYOP_ENOMEM, n);
  }
  g_svc_status = PYOP_OK;
  api->reset();
  rec_clear(&r);
  /* A loader of ABI 1.4 (the minor that added last_error) has its reason
   * used; one of 1.3 offering the member has it not called (batch 14
   * survivor, session 13). */
  static const struct {
    uint32_t minor;
    const char *text;
  } by_minor[] = {
      {4, "RuntimeError: libpyop refused to allocate a workspace of 16 bytes "
          "(PYOP_ENOMEM): the workspace limit is 8 bytes\n"},
      {3, "RuntimeError: libpyop refused to allocate a workspace of 16 bytes "
          "(PYOP_ENOMEM): out of memory\n"},
  };
  for (size_t i = 0; i < sizeof by_minor / sizeof by_minor[0]; i++) {
    req.abi_minor = by_minor[i].minor;
    const pyop_bridge_api *a = NULL;
    CHECK(entry(&req, &a) == PYOP_OK && a->abi_minor == by_minor[i].minor, "minor %u",
          (unsigned)by_minor[i].minor);
    CHECK_OK(load(&r, 1, "edges/edges.py"));
    impl = find(&r, "EdgeCtx", true);
    CHECK(impl != NULL, "EdgeCtx registered (1.%u)", (unsigned)by_minor[i].minor);
    g_svc_status = PYOP_ENOMEM;
    g_reason = (pyop_str){reason, sizeof reason - 1};
    const char *n[] = {by_minor[i].text, NULL};
    ctx_call(impl, "ws", odd, PYOP_ENOMEM, n);
    g_svc_status = PYOP_OK;
    api->reset();
    rec_clear(&r);
  }
  req.abi_minor = PYOP_BRIDGE_ABI_MINOR;
  req.services = &g_services; /* back to what the other cases use */
  CHECK_OK(entry(&req, &api));
}

/* A load interrupted by a KeyboardInterrupt (plugins/loadstate/interrupt.py)
 * for a C host: PYOP_EINTR, and no interrupt is left pending for the next
 * Python code (with Python's SIGINT handler in its table, as a host that
 * installed Python's handlers has it). */
static void loadstate_interrupt(void) {
  CHECK(py_ok("import signal\n"
              "signal.signal(signal.SIGINT, signal.default_int_handler)\n"),
        "Python's SIGINT handler");
  recorder r = {.fail_at = -1};
  CHECK(load(&r, 1, "loadstate/interrupt.py") == PYOP_EINTR && err_has("KeyboardInterrupt"),
        "an interrupted load: %d %s", g_err_status, g_err);
  CHECK(py_ok("n = 0\n"
              "for i in range(1000):\n"
              "    n += len(str(i))\n"
              "del n\n"),
        "an interrupt was left pending for a C host's Python");
  CHECK(py_ok("import signal\n"
              "signal.signal(signal.SIGINT, signal.SIG_DFL)\n"),
        "SIGINT back to SIG_DFL");
  rec_clear(&r);
}

/* The prototype the loader's find_proto gives (loadstate_index_hint). */
static pyop_io_info g_info_outputs[2];
static pyop_op_info g_info;
static int g_finds, g_releases;

static int info_find_proto(pyop_str op_type, const pyop_op_info **out) {
  (void)op_type;
  g_finds++;
  *out = &g_info;
  return PYOP_OK;
}

static void info_release_proto(const pyop_op_info *info) {
  CHECK(info == &g_info, "release_proto of another info");
  g_releases++;
}

/*
 * malloc_output_tensor's index past the outputs, with a loader of ABI 1.2
 * (find_proto gives the outputs' kinds): the hint to repeat an index names
 * a dynamic output among the call's outputs only; a static output, an
 * output past the call's count and a negative index get none; every
 * prototype found is released.
 */
static void loadstate_index_hint(void) {
  pyop_bridge_entry_fn entry =
      (pyop_bridge_entry_fn)dlsym(bridge_handle, PYOP_BRIDGE_ENTRY_SYMBOL);
  pyop_loader_services svc = g_services;
  svc.find_proto = info_find_proto;
  svc.release_proto = info_release_proto;
  pyop_bridge_request req = {sizeof req, PYOP_BRIDGE_ABI_MAJOR, PYOP_BRIDGE_ABI_MINOR, &svc};
  CHECK_OK(entry(&req, &api));
  recorder r = {.fail_at = -1};
  CHECK_OK(load(&r, 1, "edges/edges.py"));
  const rec_op *impl = find(&r, "EdgeCtx", true);
  CHECK(impl != NULL, "EdgeCtx registered");
  pyop_exec_services ok = {sizeof ok, NULL, alloc_output, alloc_workspace, odd_alias_output};
  memset(&g_info, 0, sizeof g_info);
  g_info.struct_size = sizeof g_info;
  g_info.op_type = "EdgeCtx";
  g_info.outputs = g_info_outputs;
  g_info.n_outputs = 2;
  g_finds = g_releases = 0;
  /* Output 0 static, output 1 (past the call's one output) dynamic. */
  g_info_outputs[0] = (pyop_io_info){"fixed", PYOP_IO_REQUIRED};
  g_info_outputs[1] = (pyop_io_info){"pieces", PYOP_IO_DYNAMIC};
  {
    const char *n[] = {"IndexError: output index 1 out of range (the op has 1 output)\n", NULL};
    ctx_call(impl, "out_past", ok, PYOP_EPYTHON, n);
  }
  /* Output 0 dynamic: the hint names it. */
  g_info_outputs[0] = (pyop_io_info){"pieces", PYOP_IO_DYNAMIC};
  {
    const char *n[] = {"IndexError: output index 1 out of range (the op has 1 output); output 0 "
                       "'pieces' is dynamic: call malloc_output_tensor(0, ...) again for its "
                       "next tensor\n",
                       NULL};
    ctx_call(impl, "out_past", ok, PYOP_EPYTHON, n);
  }
  {
    const char *n[] = {"IndexError: output index -1 out of range (the op has 1 output)\n", NULL};
    ctx_call(impl, "out_neg", ok, PYOP_EPYTHON, n);
  }
  CHECK(g_finds >= 2 && g_releases == g_finds, "%d prototypes found, %d released", g_finds,
        g_releases);
  api->reset();
  rec_clear(&r);
  req.services = &g_services; /* back to what the other cases use */
  CHECK_OK(entry(&req, &api));
}

typedef struct local_call {
  const rec_op *impl;
  void *h;
  int rc;
} local_call;

static void *local_thread(void *p) {
  local_call *c = p;
  float x[2] = {1, 2};
  int64_t s[1] = {2};
  pyop_tensor in = tensor_f32(x, 1, s);
  outputs o = {0};
  c->rc = exec1(c->impl, c->h, &in, 1, ONE, 1, &o);
  outputs_free(&o);
  return NULL;
}

/*
 * A host thread without a Python thread state of its own calls execute
 * (plugins/loadstate/tlocal.py keeps an object in a threading.local): when
 * that thread exits, the thread state the bridge kept for it is deleted
 * and with it the object (its __del__ ran once per thread).
 */
static void loadstate_thread_exit(void) {
  recorder r = {.fail_at = -1};
  CHECK_OK(load(&r, 1, "loadstate/tlocal.py"));
  local_call c = {find(&r, "OutLocal", true), NULL, -1};
  CHECK(c.impl != NULL, "OutLocal registered");
  c.h = holder_of(c.impl, NULL, 0);
  for (int round = 1; round <= 2; round++) {
    pthread_t t;
    CHECK(pthread_create(&t, NULL, local_thread, &c) == 0, "pthread_create");
    pthread_join(t, NULL);
    CHECK(c.rc == PYOP_OK, "execute on a host thread: %d %s", c.rc, g_err);
    char code[128];
    snprintf(code, sizeof code,
             "import sys\nassert sys._loadstate_local_dels == %d, sys._loadstate_local_dels\n",
             round);
    CHECK(py_ok(code), "the thread state of an exited host thread was kept (round %d)", round);
  }
  c.impl->cb->destroy_holder(c.h);
  CHECK(py_ok("import sys; del sys._loadstate_local_dels"), "clean up");
  api->reset();
  rec_clear(&r);
}

/* Shutdown, then the entry and set_config again with artifact_dir dir. */
static void loadstate_restart(const char *dir) {
  api->shutdown();
  pyop_bridge_entry_fn entry =
      (pyop_bridge_entry_fn)dlsym(bridge_handle, PYOP_BRIDGE_ENTRY_SYMBOL);
  pyop_bridge_request req = {sizeof req, PYOP_BRIDGE_ABI_MAJOR, PYOP_BRIDGE_ABI_MINOR, &g_services};
  CHECK_OK(entry(&req, &api));
  pyop_bridge_config cfg = {sizeof cfg, {dir, strlen(dir)}, {NULL, 0}, 0};
  CHECK_OK(api->set_config(&cfg));
}

/*
 * An artifact whose pyop.TensorDesc adds a field (__slots__ = ('extra',):
 * a larger object than the bridge reads and writes) is refused when the
 * package is imported (PYOP_EPLUGIN); its copy without the change loads.
 */
static void loadstate_desc_layout(void) {
  char dir[] = "/tmp/pyop_loadstate_art_XXXXXX";
  CHECK(mkdtemp(dir) != NULL, "mkdtemp");
  char cmd[9000], init[4200];
  snprintf(cmd, sizeof cmd, "cp -R '%s/python' '%s/'", g_artifact, dir);
  CHECK(system(cmd) == 0, "%s", cmd);
  recorder r = {.fail_at = -1};
  loadstate_restart(dir);
  CHECK_OK(load(&r, 1, "loadstate/plain.py"));
  CHECK(r.n == 1, "a load with the copied package");
  rec_clear(&r);
  snprintf(init, sizeof init, "%s/python/pyop/__init__.py", dir);
  FILE *f = fopen(init, "a");
  CHECK(f != NULL, "open %s", init);
  fputs("\n\nclass TensorDesc(TensorDesc):\n    __slots__ = ('extra',)\n", f);
  fclose(f);
  loadstate_restart(dir);
  CHECK(load(&r, 1, "loadstate/plain.py") == PYOP_EPLUGIN &&
            err_has("importing the pyop package from") &&
            err_has("must subclass pyop._native.TensorDescBase with __slots__ = ()"),
        "a TensorDesc with a field of its own: %d %s", g_err_status, g_err);
  CHECK(r.n == 0, "nothing registered");
  loadstate_restart(g_artifact);
  CHECK_OK(load(&r, 1, "loadstate/plain.py"));
  api->reset();
  rec_clear(&r);
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  CHECK(system(cmd) == 0, "%s", cmd);
}

/* malloc_workspace(16) (plugins/loadstate/ws.py): a writable uint8 Tensor
 * of shape (16,) on the host's memory, which holds what the plugin wrote. */
static void loadstate_workspace(void) {
  recorder r = {.fail_at = -1};
  CHECK_OK(load(&r, 1, "loadstate/ws.py"));
  const rec_op *impl = find(&r, "OutWs", true);
  CHECK(impl != NULL, "OutWs registered");
  void *h = holder_of(impl, NULL, 0);
  float x[2] = {1, 2};
  int64_t s[1] = {2};
  pyop_tensor in = tensor_f32(x, 1, s);
  outputs o = {0};
  CHECK_OK(exec1(impl, h, &in, 1, ONE, 1, &o));
  CHECK(o.n_ws == 1, "%d workspaces", o.n_ws);
  const unsigned char *ws = o.ws[0];
  for (int i = 0; i < 16; i++)
    CHECK(ws[i] == i, "workspace byte %d is %d", i, ws[i]);
  outputs_free(&o);
  impl->cb->destroy_holder(h);
  api->reset();
  rec_clear(&r);
}

/* The loadstate pass's checks (session 10): each names the bug it catches
 * in tests/mutation/mutants.txt (bridge.out.*). */
static void case_loadstate(void) {
  loadstate_signals();
  loadstate_guard();
  loadstate_gil_kept();
  loadstate_requests();
  loadstate_launch_index();
  loadstate_thread_exit();
  loadstate_workspace();
  loadstate_undecodable_name();
  loadstate_sinks();
  loadstate_refusal_reason();
  loadstate_index_hint();
  loadstate_interrupt();
  loadstate_desc_layout();
  loadstate_shutdown_services();
}

/*
 * The host finalizes its Python after a second package import (a shutdown
 * between the two loads) and starts a new one: the bridge sees that its
 * interpreter is gone (interpreter_status is PYOP_ENOTINIT although
 * Python is initialised), as after the first import. The bridge is then
 * shut down and negotiated again, as main expects it.
 */
static void case_loadstate_exit(void) {
  recorder r = {.fail_at = -1};
  CHECK_OK(load(&r, 1, "loadstate/plain.py"));
  rec_clear(&r);
  loadstate_restart(g_artifact);
  CHECK_OK(load(&r, 1, "loadstate/plain.py"));
  rec_clear(&r);
  CHECK(api->interpreter_status() == PYOP_OK, "interpreter_status while it runs");
  PyEval_RestoreThread(g_main_ts);
  CHECK(Py_FinalizeEx() == 0, "finalize");
  Py_InitializeEx(0); /* Py_IsInitialized() again: only the watch can tell */
  g_main_ts = PyEval_SaveThread();
  CHECK(api->interpreter_status() == PYOP_ENOTINIT,
        "the bridge did not see the host finalize Python after its second package import");
  api->shutdown();
  pyop_bridge_entry_fn entry =
      (pyop_bridge_entry_fn)dlsym(bridge_handle, PYOP_BRIDGE_ENTRY_SYMBOL);
  pyop_bridge_request req = {sizeof req, PYOP_BRIDGE_ABI_MAJOR, PYOP_BRIDGE_ABI_MINOR, &g_services};
  CHECK_OK(entry(&req, &api));
  CHECK_OK(configure(0));
  CHECK_OK(load(&r, 1, "loadstate/plain.py"));
  CHECK(r.n == 1, "a load in the new Python");
  api->reset();
  rec_clear(&r);
}

/* ------------------------------------ state pass (session 11, st-bc-b) */

static void bcstate_host_handler(int sig) { (void)sig; }
static void bcstate_host_action(int sig, siginfo_t *si, void *uc) {
  (void)sig;
  (void)si;
  (void)uc;
}

/*
 * A plugin (plugins/bcstate/sig_many.py) replaces the handlers the host had
 * for SIGHUP (signal 1, the first), SIGUSR2 and SIGRTMAX (the last): reset
 * puts the host's disposition back for each of them, not only for the
 * signals between the ends (its SA_SIGINFO handler with its flags and
 * mask, not the handler alone), and resets Python's table for each.
 */
static void bcstate_signals_many(void) {
  const int sigs[3] = {SIGHUP, SIGUSR2, SIGRTMAX};
  struct sigaction sa, old[3];
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = bcstate_host_action;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  sigaddset(&sa.sa_mask, SIGUSR1);
  for (int i = 0; i < 3; i++)
    CHECK(sigaction(sigs[i], &sa, &old[i]) == 0, "the host's handler for signal %d", sigs[i]);
  recorder r = {.fail_at = -1};
  CHECK_OK(load(&r, 1, "bcstate/sig_many.py"));
  for (int i = 0; i < 3; i++)
    CHECK(handler_now(sigs[i]) != (void *)bcstate_host_action,
          "test bug: the plugin did not replace signal %d", sigs[i]);
  log_all_clear();
  api->reset();
  /* Each restored signal is named in a line, by its number too, a
   * real-time one without an abbreviation as "SIG?" (both-sides pass,
   * session 14: only SIGUSR1's line was looked at). */
  {
    char usr2[96], rt[96];
    snprintf(usr2, sizeof usr2, "restored the host's handler for SIGUSR2 (signal %d)", SIGUSR2);
    snprintf(rt, sizeof rt, "restored the host's handler for SIG? (signal %d), which a plugin "
             "had replaced", SIGRTMAX);
    CHECK(strstr(g_log_all, "restored the host's handler for SIGHUP (signal 1), which a "
                            "plugin had replaced") != NULL &&
              strstr(g_log_all, usr2) != NULL && strstr(g_log_all, rt) != NULL &&
              strstr(g_log_all, "(null)") == NULL,
          "the restored signals' lines:\n%s", g_log_all);
  }
  for (int i = 0; i < 3; i++) {
    struct sigaction now;
    CHECK(sigaction(sigs[i], NULL, &now) == 0, "sigaction %d", sigs[i]);
    CHECK(handler_now(sigs[i]) == (void *)bcstate_host_action,
          "reset did not give the host its handler for signal %d back", sigs[i]);
    CHECK((now.sa_flags & (SA_SIGINFO | SA_ONSTACK | SA_RESTART)) == (SA_SIGINFO | SA_ONSTACK) &&
              sigismember(&now.sa_mask, SIGUSR1) == 1,
          "signal %d: the host's handler is back without its flags (0x%x) or mask",
          sigs[i], (unsigned)now.sa_flags);
  }
  CHECK(py_ok("import signal\n"
              "for s in (signal.SIGHUP, signal.SIGUSR2, signal.SIGRTMAX):\n"
              "    assert signal.getsignal(s) == signal.SIG_DFL, (s, signal.getsignal(s))\n"),
        "Python's signal table still holds a plugin's function");
  rec_clear(&r);
  for (int i = 0; i < 3; i++)
    sigaction(sigs[i], &old[i], NULL);
}

/*
 * A reset drops every plugin: a load that fails after it, whose plugin
 * replaced the host's SIGUSR1 before failing (plugins/bcstate/fails_sig.py),
 * finds no plugin left and gives the host its handler back (the reset's
 * plugins are not taken for loaded ones).
 */
static void bcstate_failed_after_reset(void) {
  struct sigaction sa, old;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = bcstate_host_handler;
  CHECK(sigaction(SIGUSR1, &sa, &old) == 0, "the host's SIGUSR1 handler");
  recorder r = {.fail_at = -1};
  CHECK_OK(load(&r, 1, "loadstate/plain.py"));
  api->reset();
  rec_clear(&r);
  CHECK(load(&r, 1, "bcstate/fails_sig.py") == PYOP_EPLUGIN &&
            err_has("bcstate plugin fails after replacing SIGUSR1"),
        "the failing plugin: %d %s", g_err_status, g_err);
  CHECK(handler_now(SIGUSR1) == (void *)bcstate_host_handler,
        "a failed load after a reset (no plugin left) kept the plugin's SIGUSR1 handler");
  rec_clear(&r);
  sigaction(SIGUSR1, &old, NULL);
}

/* alloc_output that calls into the bridge (create and destroy a holder of
 * the op) before allocating: a host service nested in a call. */
typedef struct nested_ctx {
  outputs o;
  const rec_op *impl;
  int inner_rc;
} nested_ctx;

static int nested_alloc_output(void *ctx, size_t index, pyop_tensor *t) {
  nested_ctx *c = ctx;
  void *h = NULL;
  c->inner_rc = c->impl->cb->create_holder(c->impl->ctx, NULL, 0, &h);
  if (c->inner_rc == PYOP_OK)
    c->impl->cb->destroy_holder(h);
  return alloc_output(&c->o, index, t);
}

typedef struct nested_call {
  const rec_op *impl;
  void *h;
  int rc, inner_rc;
  bool same;
} nested_call;

static void *nested_thread(void *arg) {
  nested_call *n = arg;
  float x[2] = {5, 6};
  int64_t s[1] = {2};
  pyop_tensor in = tensor_f32(x, 1, s);
  pyop_tensor_list lists[1] = {{&in, 1}};
  for (int round = 0; round < 2; round++) { /* the first call keeps a thread state */
    nested_ctx c = {.impl = n->impl, .inner_rc = -100};
    pyop_exec_services svc = {sizeof svc, &c, nested_alloc_output, alloc_workspace};
    pyop_exec_args a = {sizeof a, lists, 1, 1, &svc, NULL, NULL};
    n->rc = n->impl->cb->execute(n->h, &a);
    n->inner_rc = c.inner_rc;
    n->same = n->rc == PYOP_OK && c.o.mem[0] != NULL && memcmp(c.o.mem[0], x, sizeof x) == 0;
    outputs_free(&c.o);
    if (n->rc != PYOP_OK || n->inner_rc != PYOP_OK || !n->same)
      break;
  }
  return NULL;
}

/*
 * A host thread without a Python state of its own (its state is the one
 * the bridge keeps) calls execute, and the host's alloc_output calls into
 * the bridge again (create_holder, destroy_holder) on that thread: the
 * nested call finds the GIL taken by this thread's state and neither takes
 * it again (a wait on itself) nor gives it back (the outer call still runs
 * Python); the outer call then ends as usual. Twice: the first call of the
 * thread makes its state. SIGALRM ends the process if the thread waits on
 * itself.
 */
static void bcstate_nested_call(void) {
  recorder r = {.fail_at = -1};
  CHECK_OK(load(&r, 1, "bcstate/exec.py"));
  nested_call n = {find(&r, "StExec", true), NULL, -1, -1, false};
  CHECK(n.impl != NULL, "StExec registered");
  n.h = holder_of(n.impl, NULL, 0);
  alarm(60);
  pthread_t t;
  CHECK(pthread_create(&t, NULL, nested_thread, &n) == 0, "pthread_create");
  pthread_join(t, NULL);
  alarm(0);
  CHECK(n.inner_rc == PYOP_OK, "create_holder inside alloc_output: %d", n.inner_rc);
  CHECK(n.rc == PYOP_OK && n.same, "execute around a nested call: %d %s", n.rc, g_err);
  n.impl->cb->destroy_holder(n.h);
  api->reset();
  rec_clear(&r);
}

/* The state pass's checks (session 11, st-bc-b): each names the bug it
 * catches in tests/mutation/mutants.txt (bridge.st.*). */
static void case_bcstate(void) {
  bcstate_signals_many();
  bcstate_failed_after_reset();
  bcstate_nested_call();
}

/* A host thread that lives across the Pythons of case bcstate_exit and
 * runs one execute of StExec each time it is asked. */
static struct {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  const rec_op *impl;
  void *h;
  int pending; /* 1: a call asked, -1: stop */
  int rc;
  bool same; /* the output holds the input's bytes */
} g_bw = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER};

static void *bcstate_worker(void *arg) {
  (void)arg;
  pthread_mutex_lock(&g_bw.mu);
  for (;;) {
    while (g_bw.pending == 0)
      pthread_cond_wait(&g_bw.cv, &g_bw.mu);
    if (g_bw.pending < 0)
      break;
    pthread_mutex_unlock(&g_bw.mu);
    float x[2] = {3, 4};
    int64_t s[1] = {2};
    pyop_tensor in = tensor_f32(x, 1, s);
    outputs o = {0};
    int rc = exec1(g_bw.impl, g_bw.h, &in, 1, ONE, 1, &o);
    bool same = rc == PYOP_OK && o.mem[0] != NULL && memcmp(o.mem[0], x, sizeof x) == 0;
    outputs_free(&o);
    pthread_mutex_lock(&g_bw.mu);
    g_bw.rc = rc;
    g_bw.same = same;
    g_bw.pending = 0;
    pthread_cond_broadcast(&g_bw.cv);
  }
  pthread_mutex_unlock(&g_bw.mu);
  return NULL;
}

/* Loads plugins/bcstate/exec.py and has the worker call StExec once. */
static void bcstate_worker_call(const char *when) {
  recorder r = {.fail_at = -1};
  CHECK_OK(load(&r, 1, "bcstate/exec.py"));
  const rec_op *impl = find(&r, "StExec", true);
  CHECK(impl != NULL, "StExec registered (%s)", when);
  void *h = holder_of(impl, NULL, 0);
  pthread_mutex_lock(&g_bw.mu);
  g_bw.impl = impl;
  g_bw.h = h;
  g_bw.pending = 1;
  pthread_cond_broadcast(&g_bw.cv);
  while (g_bw.pending != 0)
    pthread_cond_wait(&g_bw.cv, &g_bw.mu);
  int rc = g_bw.rc;
  bool same = g_bw.same;
  pthread_mutex_unlock(&g_bw.mu);
  CHECK(rc == PYOP_OK && same, "the host thread's execute %s: %d %s", when, rc, g_err);
  impl->cb->destroy_holder(h);
  rec_clear(&r);
}

/* The host finalizes its Python and initialises a new one. */
static void bcstate_host_restarts_python(void) {
  PyEval_RestoreThread(g_main_ts);
  CHECK(Py_FinalizeEx() == 0, "finalize");
  Py_InitializeEx(0);
  g_main_ts = PyEval_SaveThread();
}

/* Shutdown, the entry and set_config again. */
static void bcstate_renegotiate(void) {
  api->shutdown();
  pyop_bridge_entry_fn entry =
      (pyop_bridge_entry_fn)dlsym(bridge_handle, PYOP_BRIDGE_ENTRY_SYMBOL);
  pyop_bridge_request req = {sizeof req, PYOP_BRIDGE_ABI_MAJOR, PYOP_BRIDGE_ABI_MINOR, &g_services};
  CHECK_OK(entry(&req, &api));
  CHECK_OK(configure(0));
}

/*
 * One host thread (no Python state of its own) calls execute in four
 * Pythons the host starts one after the other: the thread state the bridge
 * kept for it in one is never used in the next, whether the bridge saw its
 * Python finalized (lost: shutdown then forgets it) or was shut down before
 * the host finalized it. The exit watch is armed again in the Python after
 * a lost one (the host finalizing that one too is seen). A foreign "pyop"
 * the host had in the first Python, which the bridge saved, is not put into
 * a later one at its shutdown. SIGALRM ends the process if a call hangs on
 * a dead thread state (a failure, not a ctest timeout).
 */
static void case_bcstate_exit(void) {
  alarm(120);
  pthread_t w;
  CHECK(pthread_create(&w, NULL, bcstate_worker, NULL) == 0, "pthread_create");
  CHECK(py_ok("import sys, types\n"
              "sys.modules['pyop'] = types.ModuleType('pyop')\n"
              "sys.modules['pyop'].host_marker = 1\n"),
        "the host's own pyop");
  /* Python 1: lost. */
  bcstate_worker_call("in the first Python");
  bcstate_host_restarts_python();
  CHECK(api->interpreter_status() == PYOP_ENOTINIT, "the first Python's end not seen");
  bcstate_renegotiate();
  /* Python 2: the watch is armed again; lost too. */
  bcstate_worker_call("in a Python after a lost one");
  bcstate_host_restarts_python();
  CHECK(api->interpreter_status() == PYOP_ENOTINIT,
        "the host finalized the Python after a lost one and the bridge did not see it");
  bcstate_renegotiate();
  /* Python 3: shut down cleanly, then finalized by the host. */
  bcstate_worker_call("in a third Python");
  api->shutdown();
  CHECK(py_ok("import sys\n"
              "assert 'pyop' not in sys.modules, sys.modules.get('pyop')\n"),
        "shutdown put a pyop of an earlier Python into sys.modules");
  bcstate_host_restarts_python();
  pyop_bridge_entry_fn entry =
      (pyop_bridge_entry_fn)dlsym(bridge_handle, PYOP_BRIDGE_ENTRY_SYMBOL);
  pyop_bridge_request req = {sizeof req, PYOP_BRIDGE_ABI_MAJOR, PYOP_BRIDGE_ABI_MINOR, &g_services};
  CHECK_OK(entry(&req, &api));
  CHECK_OK(configure(0));
  /* Python 4: after a clean shutdown and the host's finalize. */
  bcstate_worker_call("after a shutdown and the host's finalize");
  pthread_mutex_lock(&g_bw.mu);
  g_bw.pending = -1;
  pthread_cond_broadcast(&g_bw.cv);
  pthread_mutex_unlock(&g_bw.mu);
  pthread_join(w, NULL);
  api->reset();
  alarm(0);
}

/* A host thread that holds the GIL running no Python, never entered by
 * libpyop (case bcstate_watch): 1 once it holds it, 2 to let it go. */
static struct {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int state;
} g_gh = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER};

static void gh_set(int state) {
  pthread_mutex_lock(&g_gh.mu);
  g_gh.state = state;
  pthread_cond_broadcast(&g_gh.cv);
  pthread_mutex_unlock(&g_gh.mu);
}

static void gh_wait(int state) {
  pthread_mutex_lock(&g_gh.mu);
  while (g_gh.state != state)
    pthread_cond_wait(&g_gh.cv, &g_gh.mu);
  pthread_mutex_unlock(&g_gh.mu);
}

static void *gil_holding_thread(void *arg) {
  (void)arg;
  int st = PyGILState_Ensure();
  gh_set(1);
  gh_wait(2);
  PyGILState_Release(st);
  return NULL;
}

static void *one_exec_thread(void *arg) {
  local_call *c = arg;
  float x[2] = {7, 8};
  int64_t s[1] = {2};
  pyop_tensor in = tensor_f32(x, 1, s);
  outputs o = {0};
  c->rc = exec1(c->impl, c->h, &in, 1, ONE, 1, &o);
  outputs_free(&o);
  return NULL;
}

/*
 * One execute of StExec from a host thread (when first_call), then one
 * from a new host thread while another host thread (never inside libpyop)
 * holds the GIL: the watch's first line for that wait (what follows "has
 * waited", up to the end of its line) into line, or "" when none came
 * within 30 s. The GIL is kept 2.5 s past that line, then given back and
 * the call ends. Returns the number of wait lines logged meanwhile. With
 * on_worker the waiting execute is bcstate_worker's (of g_bw.impl, g_bw.h)
 * instead of a new thread's.
 */
static int bcstate_watched_wait(const rec_op *impl, void *h, bool first_call, char *line,
                                size_t cap, bool on_worker) {
  gh_set(0);
  pthread_t x, w;
  if (first_call) {
    /* A call from another host thread (its kept state), which ends: it
     * holds the GIL no more. */
    local_call first = {impl, h, -1};
    CHECK(pthread_create(&w, NULL, one_exec_thread, &first) == 0, "pthread_create");
    pthread_join(w, NULL);
    CHECK(first.rc == PYOP_OK, "the first execute: %d %s", first.rc, g_err);
  }
  CHECK(pthread_create(&x, NULL, gil_holding_thread, NULL) == 0, "pthread_create");
  gh_wait(1);
  pthread_mutex_lock(&g_lock);
  size_t mark = g_log_all_len;
  pthread_mutex_unlock(&g_lock);
  local_call c = {impl, h, -1};
  if (on_worker) {
    /* The waiting call: bcstate_worker's (g_bw.impl, g_bw.h set). */
    pthread_mutex_lock(&g_bw.mu);
    g_bw.pending = 1;
    pthread_cond_broadcast(&g_bw.cv);
    pthread_mutex_unlock(&g_bw.mu);
  } else {
    CHECK(pthread_create(&w, NULL, one_exec_thread, &c) == 0, "pthread_create");
  }
  line[0] = '\0';
  for (int i = 0; i < 600 && line[0] == '\0'; i++) {
    usleep(50 * 1000);
    pthread_mutex_lock(&g_lock);
    const char *p = strstr(g_log_all + mark, "has waited");
    if (p != NULL)
      snprintf(line, cap, "%.*s", (int)strcspn(p, "\n"), p);
    pthread_mutex_unlock(&g_lock);
  }
  /* The wait goes on 2.5 s past its line: lines for it after the first? */
  if (line[0] != '\0')
    usleep(2500 * 1000);
  int lines = 0;
  pthread_mutex_lock(&g_lock);
  for (const char *p = g_log_all + mark; (p = strstr(p, "has waited")) != NULL; p++)
    lines++;
  pthread_mutex_unlock(&g_lock);
  gh_set(2);
  pthread_join(x, NULL);
  if (on_worker) {
    pthread_mutex_lock(&g_bw.mu);
    while (g_bw.pending != 0)
      pthread_cond_wait(&g_bw.cv, &g_bw.mu);
    c.rc = g_bw.rc;
    pthread_mutex_unlock(&g_bw.mu);
  } else {
    pthread_join(w, NULL);
  }
  CHECK(c.rc == PYOP_OK, "the waiting execute: %d %s", c.rc, g_err);
  return lines;
}

/*
 * The GIL watch's state across loads, calls and sessions (each wait about
 * 3 s): a load that finds the GIL free forgets the thread an earlier load
 * found keeping it, and a call that ended (a load, create on this thread,
 * an execute on another) holds the GIL no more: the line for a later wait
 * names no such thread (a thread libpyop did not enter holds it); a wait
 * is logged once however long it lasts; after a shutdown and a new session
 * the watch runs again and logs a wait, once; so it does for a host thread
 * it watched in a Python the host then finalized, and for that thread again
 * after a plain shutdown (its thread state kept from the session before).
 */
static void case_bcstate_watch(void) {
  recorder r = {.fail_at = -1};
  log_all_clear();
  int st = PyGILState_Ensure();
  int rc = load(&r, 1, "bcstate/exec.py");
  PyGILState_Release(st);
  CHECK(rc == PYOP_OK, "load holding the GIL: %d", rc);
  CHECK(strstr(g_log_all, "holds the GIL while running no Python") != NULL,
        "test bug: the load did not find the GIL kept:\n%s", g_log_all);
  api->reset();
  rec_clear(&r);
  CHECK_OK(load(&r, 1, "bcstate/exec.py"));
  const rec_op *impl = find(&r, "StExec", true);
  CHECK(impl != NULL, "StExec registered");
  void *h = holder_of(impl, NULL, 0);
  char line[1024];
  /* The last call before the wait: an execute on another host thread. */
  int lines = bcstate_watched_wait(impl, h, true, line, sizeof line, false);
  CHECK(line[0] != '\0', "no watch line for an execute waiting for the GIL:\n%s", g_log_all);
  CHECK(lines == 1, "%d lines for one wait (once per wait):\n%s", lines, g_log_all);
  CHECK(strstr(line, "No host thread inside libpyop holds it: a thread libpyop did not enter "
                     "does") != NULL &&
            strstr(line, "when it called pyop_load") == NULL,
        "the line for a wait after a load that found the GIL free, and after an execute "
        "that ended, names a thread that holds the GIL no more: %s", line);
  impl->cb->destroy_holder(h);
  rec_clear(&r);
  bcstate_renegotiate();
  CHECK_OK(load(&r, 1, "bcstate/exec.py"));
  impl = find(&r, "StExec", true);
  CHECK(impl != NULL, "StExec registered (second session)");
  h = holder_of(impl, NULL, 0);
  /* The last call before the wait: create_holder on this thread. */
  lines = bcstate_watched_wait(impl, h, false, line, sizeof line, false);
  CHECK(line[0] != '\0', "no watch line for a wait in a session after a shutdown:\n%s",
        g_log_all);
  CHECK(strstr(line, "No host thread inside libpyop holds it") != NULL,
        "the line names a thread whose call (create_holder) ended: %s", line);
  CHECK(lines == 1, "%d lines for one wait in the second session:\n%s", lines, g_log_all);
  impl->cb->destroy_holder(h);
  api->reset();
  rec_clear(&r);
  /* A host thread that lives across Pythons (its kept state watched in the
   * one the host then finalizes; the shutdown took it off the watch): its
   * wait in the next Python, where it gets a kept state again, is watched
   * again and logged, once (batch 14 survivor, session 13). */
  pthread_t w;
  CHECK(pthread_create(&w, NULL, bcstate_worker, NULL) == 0, "pthread_create");
  bcstate_worker_call("before the host restarts Python");
  bcstate_host_restarts_python();
  bcstate_renegotiate();
  CHECK_OK(load(&r, 1, "bcstate/exec.py"));
  impl = find(&r, "StExec", true);
  CHECK(impl != NULL, "StExec registered (third session)");
  h = holder_of(impl, NULL, 0);
  g_bw.impl = impl;
  g_bw.h = h;
  lines = bcstate_watched_wait(impl, h, false, line, sizeof line, true);
  CHECK(line[0] != '\0',
        "no watch line for a wait of a host thread watched in the Python before:\n%s", g_log_all);
  CHECK(lines == 1, "%d lines for one wait of a thread watched in the Python before:\n%s", lines,
        g_log_all);
  impl->cb->destroy_holder(h);
  rec_clear(&r);
  /* The same host thread after a plain shutdown and a new session in the
   * same Python: the thread state the last session made for it is still its
   * PyGILState one; the bridge takes it again (its mark says it made it),
   * so the thread's wait is watched and logged, once. */
  bcstate_renegotiate();
  CHECK_OK(load(&r, 1, "bcstate/exec.py"));
  impl = find(&r, "StExec", true);
  CHECK(impl != NULL, "StExec registered (fourth session)");
  h = holder_of(impl, NULL, 0);
  g_bw.impl = impl;
  g_bw.h = h;
  lines = bcstate_watched_wait(impl, h, false, line, sizeof line, true);
  CHECK(line[0] != '\0',
        "no watch line for a wait of a host thread the session before watched, after a "
        "plain shutdown:\n%s",
        g_log_all);
  CHECK(lines == 1, "%d lines for one wait after a plain shutdown:\n%s", lines, g_log_all);
  pthread_mutex_lock(&g_bw.mu);
  g_bw.pending = -1;
  pthread_cond_broadcast(&g_bw.cv);
  pthread_mutex_unlock(&g_bw.mu);
  pthread_join(w, NULL);
  impl->cb->destroy_holder(h);
  api->reset();
  rec_clear(&r);
}

/* Case bcstate_watch_waits: a host thread never inside libpyop (sw_holder)
 * holds the GIL for SW_HOLD_MS at a time, lets one call through between
 * holds and, the GIL taken back, bumps epoch (mode 0); holds it until told
 * (mode 1); lets it go for good (2). sw_caller executes StExec once per
 * epoch, until stop: each call starts while the GIL is held and waits for
 * it about SW_HOLD_MS. */
#define SW_HOLD_MS 300
static void cf_wait_line(size_t mark, char *line, size_t cap);
static struct {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int mode;
  bool stop;
  long epoch, calls;
} g_sw = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, false, 0, 0};

static void *sw_holder(void *arg) {
  (void)arg;
  int st = PyGILState_Ensure();
  pthread_mutex_lock(&g_sw.mu);
  g_sw.epoch++;
  pthread_cond_broadcast(&g_sw.cv);
  while (g_sw.mode != 2) {
    if (g_sw.mode == 1) {
      pthread_cond_wait(&g_sw.cv, &g_sw.mu);
      continue;
    }
    pthread_mutex_unlock(&g_sw.mu);
    usleep(SW_HOLD_MS * 1000);
    /* The waiting call asked for the GIL long ago: it takes it here (the
     * GIL is handed over before this thread can take it back, which it
     * does as that call returns). */
    void *ts = PyEval_SaveThread();
    PyEval_RestoreThread(ts);
    pthread_mutex_lock(&g_sw.mu);
    g_sw.epoch++;
    pthread_cond_broadcast(&g_sw.cv);
  }
  pthread_mutex_unlock(&g_sw.mu);
  PyGILState_Release(st);
  return NULL;
}

static void *sw_caller(void *arg) {
  local_call *c = arg;
  long seen = 0;
  for (;;) {
    pthread_mutex_lock(&g_sw.mu);
    while (g_sw.epoch == seen && !g_sw.stop)
      pthread_cond_wait(&g_sw.cv, &g_sw.mu);
    seen = g_sw.epoch;
    bool stop = g_sw.stop;
    pthread_mutex_unlock(&g_sw.mu);
    if (stop)
      return NULL;
    float x[2] = {7, 8};
    int64_t s[1] = {2};
    pyop_tensor in = tensor_f32(x, 1, s);
    outputs o = {0};
    c->rc = exec1(c->impl, c->h, &in, 1, ONE, 1, &o);
    outputs_free(&o);
    pthread_mutex_lock(&g_sw.mu);
    g_sw.calls++;
    stop = g_sw.stop || c->rc != PYOP_OK;
    pthread_mutex_unlock(&g_sw.mu);
    if (stop)
      return NULL;
  }
}

static void sw_set_mode(int mode) {
  pthread_mutex_lock(&g_sw.mu);
  g_sw.mode = mode;
  pthread_cond_broadcast(&g_sw.cv);
  pthread_mutex_unlock(&g_sw.mu);
}

/*
 * The GIL watch counts the scans of one wait, not of a thread's separate
 * waits (batch 18 survivor, session 15): a host thread executes again and
 * again, each call starting while another host thread holds the GIL (300
 * ms at a time, one call let through between holds), so almost every scan
 * (one a second) finds it waiting, each time in another wait, none of them
 * near the 3 s a wait takes to be logged: in 7 s no line. Then the
 * GIL is kept: that thread's wait is logged once, naming it (the watch saw
 * it all along).
 */
static void case_bcstate_watch_waits(void) {
  recorder r = {.fail_at = -1};
  CHECK_OK(load(&r, 1, "bcstate/exec.py"));
  const rec_op *impl = find(&r, "StExec", true);
  CHECK(impl != NULL, "StExec registered");
  void *h = holder_of(impl, NULL, 0);
  pthread_mutex_lock(&g_lock);
  size_t mark = g_log_all_len;
  pthread_mutex_unlock(&g_lock);
  sw_set_mode(0);
  pthread_t x, w;
  CHECK(pthread_create(&x, NULL, sw_holder, NULL) == 0, "pthread_create");
  local_call c = {impl, h, -1};
  CHECK(pthread_create(&w, NULL, sw_caller, &c) == 0, "pthread_create");
  usleep(7 * 1000 * 1000);
  pthread_mutex_lock(&g_lock);
  bool logged = strstr(g_log_all + mark, "has waited") != NULL;
  size_t mark2 = g_log_all_len;
  pthread_mutex_unlock(&g_lock);
  pthread_mutex_lock(&g_sw.mu);
  long calls = g_sw.calls;
  pthread_mutex_unlock(&g_sw.mu);
  CHECK(!logged, "separate waits of %d ms each (%ld calls) were logged as a wait of 3 s:\n%s",
        SW_HOLD_MS, calls, g_log_all + mark);
  /* One call per hold: each call waited (it began while the GIL was held). */
  CHECK(calls >= 5 && calls <= 7000 / SW_HOLD_MS + 2,
        "%ld calls in 7 s, not about one per %d ms hold: test bug", calls, SW_HOLD_MS);
  /* The GIL kept: the caller's wait now lasts, and is logged, once. */
  sw_set_mode(1);
  char line[1024];
  cf_wait_line(mark2, line, sizeof line);
  pthread_mutex_lock(&g_sw.mu);
  g_sw.stop = true;
  pthread_mutex_unlock(&g_sw.mu);
  sw_set_mode(2);
  pthread_join(x, NULL);
  pthread_join(w, NULL);
  CHECK(c.rc == PYOP_OK, "the calls: %d %s", c.rc, g_err);
  CHECK(strncmp(line, "execute of op 'StExec' on thread ", 33) == 0,
        "no line for a wait of 3 s after the short ones: '%s'\n%s", line, g_log_all + mark);
  int lines = 0;
  pthread_mutex_lock(&g_lock);
  for (const char *p = g_log_all + mark; (p = strstr(p, "has waited")) != NULL; p++)
    lines++;
  pthread_mutex_unlock(&g_lock);
  CHECK(lines == 1, "%d wait lines:\n%s", lines, g_log_all + mark);
  impl->cb->destroy_holder(h);
  api->reset();
  rec_clear(&r);
}

/* Without a host Python: configure refuses (PYOP_ENOTINIT) naming the
 * cause and the fix (start_python). */
static void case_notinit(void) {
  CHECK(configure(0) == PYOP_ENOTINIT, "not initialised");
  CHECK(err_has("not initialised") && err_has("start_python"), "ENOTINIT message");
  api->shutdown();
}

/* PYOP_BRIDGE_START_PYTHON: the bridge starts an isolated Python (flags,
 * no cwd on sys.path), the threads, basic and clean cases run in it, and
 * shutdown leaves it initialised (never finalized: numpy and non-daemon
 * threads cannot survive that) with the pyop package released and nothing
 * of the bridge referenced. */
static void case_start(void) {
  CHECK(!Py_IsInitialized(), "no Python yet");
  void *pipe_before = handler_now(SIGPIPE);
  sigset_t mask_before, mask_after;
  CHECK(pthread_sigmask(SIG_SETMASK, NULL, &mask_before) == 0, "pthread_sigmask");
  /* A set_config refused for its own content (lanes past the limit, an
   * empty artifact directory) starts no Python: nothing is left half made
   * for the next one (both-sides pass, session 14). */
  pyop_bridge_config bad = {sizeof bad, {g_artifact, strlen(g_artifact)}, {NULL, 0},
                            PYOP_BRIDGE_START_PYTHON};
  bad.lanes = PYOP_MAX_LANES + 1;
  clear_error();
  CHECK(api->set_config(&bad) == PYOP_EINVAL && err_has("lanes 65 is out of range"),
        "lanes past the limit: %s", g_err);
  CHECK(!Py_IsInitialized(), "a set_config refused for its lanes started Python");
  bad.lanes = 0;
  bad.artifact_dir = (pyop_str){"", 0};
  clear_error();
  CHECK(api->set_config(&bad) == PYOP_EINVAL && err_has("artifact_dir is empty or invalid"),
        "an empty artifact_dir: %s", g_err);
  CHECK(!Py_IsInitialized(), "a set_config refused for its directory started Python");
  CHECK_OK(configure(PYOP_BRIDGE_START_PYTHON));
  CHECK(Py_IsInitialized(), "the bridge started Python");
  /* The host thread that asked keeps its own signal mask (the interpreter
   * thread was created with every signal blocked, then the mask went back),
   * and the interpreter thread (threading's main thread) blocks the host's
   * signals: they go to the host's threads (dataflow pass, session 13). */
  CHECK(pthread_sigmask(SIG_SETMASK, NULL, &mask_after) == 0, "pthread_sigmask");
  {
    static const int sigs[] = {SIGHUP, SIGINT, SIGQUIT, SIGUSR1, SIGUSR2, SIGPIPE,
                               SIGALRM, SIGTERM, SIGCHLD};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
      CHECK(sigismember(&mask_after, sigs[i]) == sigismember(&mask_before, sigs[i]),
            "starting Python changed the host thread's mask of signal %d", sigs[i]);
  }
  CHECK(py_ok("import signal, threading\n"
              "tid = threading.main_thread().native_id\n"
              "with open('/proc/self/task/%d/status' % tid) as f:\n"
              "    line = [l for l in f if l.startswith('SigBlk:')][0]\n"
              "blocked = int(line.split()[1], 16)\n"
              "for s in (signal.SIGHUP, signal.SIGINT, signal.SIGQUIT, signal.SIGUSR1,\n"
              "          signal.SIGUSR2, signal.SIGALRM, signal.SIGTERM, signal.SIGCHLD):\n"
              "    assert blocked >> (s - 1) & 1, (int(s), hex(blocked))\n"),
        "the interpreter thread does not block the host's signals");
  /* Python installs no signal handler (SIGPIPE would be SIG_IGN). */
  CHECK(handler_now(SIGPIPE) == pipe_before, "starting Python changed SIGPIPE");
  /* threading's main thread is the interpreter thread, not this host one. */
  CHECK(py_ok("import threading\n"
              "assert threading.main_thread().ident != threading.get_ident()\n"),
        "threading.main_thread() is a host thread");
  CHECK(py_ok("import sys\n"
              "assert sys.flags.isolated == 1 and sys.flags.ignore_environment == 1\n"
              "assert '' not in sys.path and '.' not in sys.path, sys.path\n"),
        "isolated configuration");
  case_threads();
  case_basic();
  case_clean();
  /* A plugin leaves a non-daemon and a daemon thread running: shutdown
   * names the first only (not the daemon, not Python's main thread). */
  recorder r = {.fail_at = -1};
  CHECK_OK(load(&r, 1, "loadstate/threads.py"));
  rec_clear(&r);
  log_all_clear();
  /* The plugin left partial lines in sys.stdout and sys.stderr: shutdown
   * flushes both (the Python stays, never finalized). Read through files
   * put in place of fds 1 and 2 for the shutdown only. */
  char out_path[] = "/tmp/pyop_loadstate_out_XXXXXX", err_path[] = "/tmp/pyop_loadstate_err_XXXXXX";
  int out_fd = mkstemp(out_path), err_fd = mkstemp(err_path);
  CHECK(out_fd >= 0 && err_fd >= 0, "mkstemp");
  fflush(stdout);
  fflush(stderr);
  int saved_out = dup(1), saved_err = dup(2);
  CHECK(saved_out >= 0 && saved_err >= 0 && dup2(out_fd, 1) == 1 && dup2(err_fd, 2) == 2, "dup2");
  api->shutdown();
  fflush(stderr);
  dup2(saved_out, 1);
  dup2(saved_err, 2);
  close(saved_out);
  close(saved_err);
  char got_out[4096] = "", got_err[65536] = "";
  ssize_t n_out = pread(out_fd, got_out, sizeof got_out - 1, 0);
  ssize_t n_err = pread(err_fd, got_err, sizeof got_err - 1, 0);
  got_out[n_out > 0 ? n_out : 0] = '\0';
  got_err[n_err > 0 ? n_err : 0] = '\0';
  fputs(got_err, stderr); /* the shutdown's log lines, for the test's output */
  close(out_fd);
  close(err_fd);
  unlink(out_path);
  unlink(err_path);
  CHECK(strstr(got_out, "loadstate-stdout") != NULL, "sys.stdout not flushed at shutdown: '%s'",
        got_out);
  CHECK(strstr(got_err, "loadstate-stderr") != NULL, "sys.stderr not flushed at shutdown");
  CHECK(strstr(g_log_all, "Python thread(s) 'loadstate-worker' (ident ") != NULL &&
            strstr(g_log_all, "started by a plugin are still running at pyop_shutdown") != NULL,
        "shutdown did not name the plugin's thread:\n%s", g_log_all);
  CHECK(strstr(g_log_all, "loadstate-daemon") == NULL && strstr(g_log_all, "MainThread") == NULL,
        "shutdown named a daemon or the main thread:\n%s", g_log_all);
  CHECK(py_ok("import sys, threading\n"
              "sys._loadstate_stop.set()\n"
              "for t in threading.enumerate():\n"
              "    if t.name.startswith('loadstate-'):\n"
              "        t.join()\n"
              "del sys._loadstate_stop\n"),
        "the plugin's threads end");
  /* The interpreter thread (threading's main thread) ended at shutdown:
   * no thread of the bridge is left in the process (dataflow pass,
   * session 13). */
  CHECK(py_ok("import os, threading\n"
              "tid = threading.main_thread().native_id\n"
              "assert not os.path.exists('/proc/self/task/%d' % tid), tid\n"),
        "the interpreter thread still runs after shutdown");
  CHECK(g_pin_warnings == 0, "the bridge's objects stayed referenced after an ordinary run");
  /* Never finalized (numpy and non-daemon threads cannot survive that):
   * it stays initialised and idle for the next load. */
  CHECK(Py_IsInitialized(), "the bridge finalized the Python it started");
  CHECK(py_ok("import sys\n"
              "left = [n for n in sys.modules if n == 'pyop' or n.startswith('pyop.')]\n"
              "assert not left, left\n"),
        "the pyop package is released at shutdown");
  dlclose(bridge_handle);
}

/*
 * The outcome of the bridge's branches as a host and an op author see them
 * (plugins/outcome, issue 31's outcome pass):
 * - _native.registered_proto: the whole dict of a host prototype (keys,
 *   sources, io kinds, a required attribute's None beside an optional one's
 *   default, input_flags and output_alias sized by their own counts, None
 *   when absent; each output's own alias: none for the first of two, input
 *   0 for the second), each found prototype released once;
 * - each op's callbacks are those of its capabilities only (declare without
 *   compile);
 * - an input is writable exactly when its own PYOP_INPUT_MUTATED bit is set,
 *   per call on one holder (a reused Tensor follows the flags);
 * - an execute that returns a value succeeds (only a view class's must
 *   return None);
 * - both views carry the sha256 source_digest of their file;
 * - views kept past a call are numbered across the slots (a dynamic slot of
 *   3 and an absent optional one before y: input 3), the first one kept is
 *   the one named (by the call and by the refusals that follow it), and
 *   after its release the refusal names the latest escape, not one of an
 *   earlier call; a call that fails after keeping one reports its own
 *   error, and the view refuses the next; compile is refused too while a
 *   view lives, and runs once it is released;
 * - a dynamic slot of one tensor is a list of one in infer_meta and execute,
 *   an empty one an empty list;
 * - a view class's fields (_dims, _nbytes, _data, _dtype, _format); its
 *   state (_x) starts afresh each call, and on a view kept past its call
 *   can be cleared but not set;
 * - a __pyop_input_view__ that is no ViewBase subclass (5, int,
 *   pyop.TensorDesc, a class as large as one): no instance is made;
 * - an infer_meta result sharing its input's shape tuple gives this call's
 *   dimensions, zero past the rank (after a call of a higher rank);
 * - a result read by getattr works for the last holder after another is
 *   destroyed; its dtype and format through __index__: 0 and the last pass,
 *   one past the last is refused, an __index__ that raises fails the call
 *   with its own exception;
 * - a Tensor attribute holds the host's bytes and stays valid between calls,
 *   until its instance is destroyed;
 * - __pyop_input_view__ = None: pyop.Tensor inputs;
 * - each dtype's buffer format (struct module codes); a negative dtype is
 *   unknown (repr "?", no buffer).
 */
static int g_outcome_finds, g_outcome_releases;
static const pyop_io_info g_out_ins[2] = {{"x", PYOP_IO_REQUIRED}, {"y", PYOP_IO_OPTIONAL}};
static const pyop_io_info g_out_outs[1] = {{"out", PYOP_IO_REQUIRED}};
static pyop_attr_info g_out_attrs[2];
static const uint32_t g_out_flags[2] = {PYOP_INPUT_MUTATED, 0};
static const int32_t g_out_alias[2] = {0, 7}; /* one output: the 7 is past it */
/* Two outputs: the first no alias, the second input 0's buffer. */
static const pyop_io_info g_out_outs2[2] = {{"sum", PYOP_IO_REQUIRED}, {"x", PYOP_IO_REQUIRED}};
static const int32_t g_out_alias2[2] = {-1, 0};
static pyop_op_info g_out_info[3];

static int outcome_find_proto(pyop_str op_type, const pyop_op_info **out) {
  *out = NULL;
  for (int i = 0; i < 3; i++)
    if (op_type.len == strlen(g_out_info[i].op_type) &&
        memcmp(op_type.data, g_out_info[i].op_type, op_type.len) == 0) {
      g_outcome_finds++;
      *out = &g_out_info[i];
      return PYOP_OK;
    }
  return PYOP_ENOENT;
}

static void outcome_release_proto(const pyop_op_info *info) {
  (void)info;
  g_outcome_releases++;
}

static pyop_str outcome_last_error(void) { return (pyop_str){"", 0}; }

static void outcome_registered_proto(void) {
  pyop_bridge_entry_fn entry = (pyop_bridge_entry_fn)dlsym(bridge_handle, PYOP_BRIDGE_ENTRY_SYMBOL);
  CHECK(entry != NULL, "no entry symbol");
  memset(g_out_attrs, 0, sizeof g_out_attrs);
  g_out_attrs[0].name = "n";
  g_out_attrs[0].type = PYOP_ATTR_INT;
  g_out_attrs[0].required = true;
  g_out_attrs[0].default_value.type = PYOP_ATTR_FLOAT; /* not read: required */
  g_out_attrs[1].name = "alpha";
  g_out_attrs[1].type = PYOP_ATTR_FLOAT;
  g_out_attrs[1].default_value.type = PYOP_ATTR_FLOAT;
  g_out_attrs[1].default_value.u.f = 0.5;
  memset(g_out_info, 0, sizeof g_out_info);
  g_out_info[0] = (pyop_op_info){sizeof g_out_info[0], "Crafted", "host:crafted", "<host>",
                                 NULL, NULL, g_out_ins, 2, g_out_outs, 1, g_out_attrs, 2,
                                 PYOP_CAP_INFER_META, g_out_flags, g_out_alias};
  g_out_info[1] = (pyop_op_info){sizeof g_out_info[1], "Bare", "host:bare", "bare.py:3",
                                 NULL, NULL, g_out_ins, 1, g_out_outs, 1, NULL, 0,
                                 PYOP_CAP_INFER_META, NULL, NULL};
  g_out_info[2] = (pyop_op_info){sizeof g_out_info[2], "Twin", "host:twin", "<host>",
                                 NULL, NULL, g_out_ins, 2, g_out_outs2, 2, NULL, 0,
                                 PYOP_CAP_INFER_META, g_out_flags, g_out_alias2};
  pyop_loader_services svc = {sizeof svc, svc_set_error, svc_log, outcome_find_proto,
                              outcome_release_proto, outcome_last_error};
  const pyop_bridge_api *a = NULL;
  pyop_bridge_request req = {sizeof req, PYOP_BRIDGE_ABI_MAJOR, PYOP_BRIDGE_ABI_MINOR, &svc};
  CHECK_OK(entry(&req, &a));
  g_outcome_finds = g_outcome_releases = 0;
  char code[2048];
  snprintf(code, sizeof code,
           "def _rp():\n"
           "    import sys\n"
           "    rp = sys.modules['pyop._native'].registered_proto\n"
           "    d = rp('Crafted')\n"
           "    want = {'op_type': 'Crafted', 'proto_key': 'host:crafted',\n"
           "            'proto_source': '<host>', 'inputs': [('x', %d), ('y', %d)],\n"
           "            'outputs': [('out', %d)],\n"
           "            'attrs': [('n', %d, True, None), ('alpha', %d, False, 0.5)],\n"
           "            'input_flags': (%u, 0), 'output_alias': (0,)}\n"
           "    assert d == want, d\n"
           "    d = rp('Bare')\n"
           "    assert d == {'op_type': 'Bare', 'proto_key': 'host:bare',\n"
           "                 'proto_source': 'bare.py:3', 'inputs': [('x', %d)],\n"
           "                 'outputs': [('out', %d)], 'attrs': [], 'input_flags': None,\n"
           "                 'output_alias': None}, d\n"
           "    d = rp('Twin')\n"
           "    assert d['outputs'] == [('sum', %d), ('x', %d)], d\n"
           "    assert d['input_flags'] == (%u, 0) and d['output_alias'] == (-1, 0), d\n"
           "    assert rp('Nope') is None and rp('Crafted2') is None and rp('Craft') is None\n"
           "_rp()\n"
           "del _rp\n",
           PYOP_IO_REQUIRED, PYOP_IO_OPTIONAL, PYOP_IO_REQUIRED, PYOP_ATTR_INT, PYOP_ATTR_FLOAT,
           PYOP_INPUT_MUTATED, PYOP_IO_REQUIRED, PYOP_IO_REQUIRED, PYOP_IO_REQUIRED,
           PYOP_IO_REQUIRED, PYOP_INPUT_MUTATED);
  CHECK(py_ok(code), "registered_proto's dicts");
  CHECK(g_outcome_finds == 3 && g_outcome_releases == 3,
        "found %d prototypes, released %d", g_outcome_finds, g_outcome_releases);
  req.services = &g_services; /* back to what the other cases use */
  CHECK_OK(entry(&req, &a));
}

static int exec_flags(const rec_op *impl, void *h, pyop_tensor_list *lists, size_t n_slots,
                      const uint32_t *flags) {
  outputs o = {0};
  pyop_exec_services svc = {sizeof svc, &o, alloc_output, alloc_workspace};
  pyop_exec_args a = {sizeof a, lists, n_slots, 1, &svc, NULL, flags};
  clear_error();
  int rc = impl->cb->execute(h, &a);
  outputs_free(&o);
  return rc;
}

static void case_outcome(void) {
  recorder r = {.fail_at = -1};
  CHECK_OK(load(&r, 2, "outcome", "edges"));
  outcome_registered_proto();
  const rec_op *wp = find(&r, "OutWrite", false), *wi = find(&r, "OutWrite", true),
               *ki = find(&r, "OutKeep", true), *ip = find(&r, "OutIndex", false),
               *tp = find(&r, "OutTable", false), *ti = find(&r, "OutTable", true),
               *di = find(&r, "OutDeclare", true), *pi = find(&r, "EdgeProbe", true);
  CHECK(wp && wi && ki && ip && tp && ti && di && pi, "ops registered");
  /* Both views carry the digest of the file's bytes (libpyop's identity of
   * a definition's source). */
  {
    char code[8192];
    snprintf(code, sizeof code,
             "import hashlib\n"
             "with open('%s/outcome/outcome.py', 'rb') as f:\n"
             "    want = 'sha256:' + hashlib.sha256(f.read()).hexdigest()\n"
             "assert '%s' == want == '%s', want\n"
             "del f, want\n",
             g_plugins, wp->digest ? wp->digest : "(none)", wi->digest ? wi->digest : "(none)");
    CHECK(py_ok(code), "source digests: %s %s", wp->digest ? wp->digest : "(none)",
          wi->digest ? wi->digest : "(none)");
  }
  float x[6] = {1, 2, 3, 4, 5, 6}, y[6] = {6, 5, 4, 3, 2, 1};
  int64_t s2[1] = {2}, s3[1] = {3};

  /* A getattr result for the last holder after another is gone; dtype and
   * format 0 through __index__ (no holder of any op lives beside these). */
  {
    void *h1 = holder_of(ip, NULL, 0), *h2 = holder_of(ip, NULL, 0);
    pyop_tensor in = tensor_f32(x, 1, s2), out;
    memset(&out, 0x5a, sizeof out);
    CHECK_OK(infer1(ip, h1, &in, 1, ONE, &out, 1));
    ip->cb->destroy_holder(h1);
    memset(&out, 0x5a, sizeof out);
    CHECK_OK(infer1(ip, h2, &in, 1, ONE, &out, 1));
    CHECK(out.ndim == 1 && out.shape[0] == 3 && out.dtype == 0 && out.format == 0,
          "OutIndex: ndim %d dtype %d format %d", out.ndim, out.dtype, out.format);
    /* The last dtype and format through __index__; one past either refused. */
    pyop_attr_view last[2] = {attr_int("dt", PYOP_DTYPE_COUNT - 1),
                              attr_int("fm", PYOP_FORMAT_COUNT - 1)};
    void *h3 = holder_of(ip, last, 2);
    CHECK(infer1(ip, h3, &in, 1, ONE, &out, 1) == PYOP_OK &&
              out.dtype == PYOP_DTYPE_COUNT - 1 && out.format == PYOP_FORMAT_COUNT - 1,
          "the last dtype and format through __index__: %s", g_err);
    ip->cb->destroy_holder(h3);
    for (int k = 0; k < 2; k++) {
      pyop_attr_view past[2] = {attr_int("dt", PYOP_DTYPE_COUNT - 1 + (k == 0)),
                                attr_int("fm", PYOP_FORMAT_COUNT - 1 + (k == 1))};
      void *h4 = holder_of(ip, past, 2);
      CHECK(infer1(ip, h4, &in, 1, ONE, &out, 1) == PYOP_EPYTHON &&
                err_has(k == 0 ? "infer_meta output 0 dtype" : "infer_meta output 0 format") &&
                err_has("out of range"),
            "one past the last %s through __index__: %s", k == 0 ? "dtype" : "format", g_err);
      ip->cb->destroy_holder(h4);
    }
    /* An __index__ that raises: the plugin's own error, not a TypeError. */
    pyop_attr_view failing[2] = {attr_int("dt", -2), attr_int("fm", 0)};
    void *h5 = holder_of(ip, failing, 2);
    CHECK(infer1(ip, h5, &in, 1, ONE, &out, 1) == PYOP_EPYTHON &&
              err_has("ValueError: index failed on purpose") && !err_has("must be an int"),
          "an __index__ that raises: %s", g_err);
    ip->cb->destroy_holder(h5);
    ip->cb->destroy_holder(h2);
  }

  /* Callbacks of the capabilities only. */
  CHECK(wp->cb->infer_meta != NULL && wp->cb->execute == NULL && wp->cb->compile == NULL &&
            wp->cb->declare_launch_args == NULL,
        "a prototype's callbacks");
  CHECK(wi->cb->execute != NULL && wi->cb->infer_meta == NULL && wi->cb->compile == NULL &&
            wi->cb->declare_launch_args == NULL,
        "an execute-only implementation's callbacks");
  CHECK(di->cb->declare_launch_args != NULL && di->cb->compile == NULL &&
            di->cb->execute == NULL && di->cb->infer_meta == NULL,
        "a declare-only implementation's callbacks");
  {
    void *h = holder_of(di, NULL, 0);
    pyop_tensor in = tensor_f32(x, 1, s2), out = tensor_f32(NULL, 1, s2);
    pyop_tensor_list lists[1] = {{&in, 1}};
    sink sk;
    memset(&sk, 0, sizeof sk);
    pyop_declare_args da = {sizeof da, lists, 1, &out, 1, &sk, sink_launch, sink_ws};
    clear_error();
    CHECK_OK(di->cb->declare_launch_args(h, &da));
    CHECK(sk.n_args == 2 && strcmp(sk.sym, "kern") == 0, "OutDeclare launch: %zu args",
          sk.n_args);
    di->cb->destroy_holder(h);
  }

  /* Writable inputs follow each call's flags, per input; execute's 42 is
   * ignored. */
  {
    void *h = holder_of(wi, NULL, 0);
    pyop_tensor ins[2] = {tensor_f32(x, 1, s2), tensor_f32(y, 1, s2)};
    pyop_tensor_list lists[2] = {{&ins[0], 1}, {&ins[1], 1}};
    const uint32_t second[2] = {0, PYOP_INPUT_MUTATED}, first[2] = {PYOP_INPUT_MUTATED, 0};
    const uint32_t *calls[] = {NULL, NULL, second, second, first, NULL};
    for (size_t c = 0; c < HARNESS_N(calls); c++)
      CHECK(exec_flags(wi, h, lists, 2, calls[c]) == PYOP_OK, "OutWrite call %zu: %s", c, g_err);
    CHECK(py_ok("import builtins\n"
                "w = builtins._pyop_outcome['writable']\n"
                "assert w == [(False, False), (False, False), (False, True), (False, True),\n"
                "             (True, False), (False, False)], w\n"),
          "writable per input and call");
    wi->cb->destroy_holder(h);
  }

  /* Views kept past a call: numbered across the slots, the first named; the
   * refusal names the latest escape. */
  {
    void *h = holder_of(ki, NULL, 0);
    pyop_tensor ins[4] = {tensor_f32(x, 1, s2), tensor_f32(x + 2, 1, s2),
                          tensor_f32(x + 4, 1, s2), tensor_f32(y, 1, s3)};
    pyop_tensor_list lists[3] = {{&ins[0], 3}, {NULL, 0}, {&ins[3], 1}};
    CHECK(py_ok("import builtins; builtins._pyop_outcome['keep'] = ('x0', 'y')"), "keep");
    CHECK(exec_flags(ki, h, lists, 3, NULL) == PYOP_EPYTHON, "two views kept: %s", g_err);
    CHECK(err_has("a buffer of input 0 (a memoryview") && !err_has("input 3"),
          "the first view kept is named: %s", g_err);
    CHECK(py_ok("import builtins; builtins._pyop_outcome['keep'] = ()"), "keep none");
    CHECK(exec_flags(ki, h, lists, 3, NULL) == PYOP_ESTATE &&
              err_has("refused: a buffer of input 0 (a memoryview or numpy array of it) "
                      "outlived an earlier call"),
          "the refusal names the first view kept: %s", g_err);
    CHECK(py_ok("import builtins; o = builtins._pyop_outcome\n"
                "o['views'].clear(); o['keep'] = ('y',)\n"),
          "release, keep y");
    CHECK(exec_flags(ki, h, lists, 3, NULL) == PYOP_EPYTHON, "y kept: %s", g_err);
    CHECK(err_has("a buffer of input 3 (a memoryview") && !err_has("input 0") &&
              !err_has("input 1 ") && !err_has("input 2"),
          "y is input 3: %s", g_err);
    CHECK(py_ok("import builtins; builtins._pyop_outcome['keep'] = ()"), "keep none");
    CHECK(exec_flags(ki, h, lists, 3, NULL) == PYOP_ESTATE, "refused: %s", g_err);
    CHECK(err_has("refused: a buffer of input 3 (a memoryview or numpy array of it) outlived "
                  "an earlier call"),
          "the refusal names the latest escape: %s", g_err);
    /* compile on that instance is refused too, and runs after the release. */
    pyop_tensor out = tensor_f32(NULL, 1, s3);
    sink sk;
    memset(&sk, 0, sizeof sk);
    pyop_compile_args ca = {sizeof ca, lists, 3, &out, 1, &sk, sink_artifact};
    clear_error();
    CHECK(ki->cb->compile(h, &ca) == PYOP_ESTATE && g_err_status == PYOP_ESTATE &&
              err_has("compile of op 'OutKeep'") && err_has("refused: a buffer of input 3"),
          "compile refused while a view is kept: %s", g_err);
    CHECK(py_ok("import builtins; assert builtins._pyop_outcome['compiled'] == 0"),
          "the refused compile did not run");
    CHECK(py_ok("import builtins; builtins._pyop_outcome['views'].clear()"), "release");
    CHECK(exec_flags(ki, h, lists, 3, NULL) == PYOP_OK, "released: %s", g_err);
    /* A call that fails after keeping a view reports its own error; the
     * view still refuses the next call. */
    CHECK(py_ok("import builtins; o = builtins._pyop_outcome\n"
                "o['keep'] = ('y',); o['raise'] = True\n"),
          "keep y and raise");
    CHECK(exec_flags(ki, h, lists, 3, NULL) == PYOP_EPYTHON &&
              err_has("execute of op 'OutKeep'") &&
              err_has("ValueError: failing after keeping views") && !err_has("still alive"),
          "the call's own error: %s", g_err);
    CHECK(py_ok("import builtins; o = builtins._pyop_outcome\n"
                "o['keep'] = (); o['raise'] = False\n"),
          "keep none");
    CHECK(exec_flags(ki, h, lists, 3, NULL) == PYOP_ESTATE &&
              err_has("refused: a buffer of input 3"),
          "refused after the failed call: %s", g_err);
    CHECK(py_ok("import builtins; builtins._pyop_outcome['views'].clear()"), "release");
    CHECK(exec_flags(ki, h, lists, 3, NULL) == PYOP_OK, "released again: %s", g_err);
    clear_error();
    CHECK(ki->cb->compile(h, &ca) == PYOP_OK, "compile after the release: %s", g_err);
    CHECK(py_ok("import builtins; assert builtins._pyop_outcome['compiled'] == 1"),
          "compile ran");
    ki->cb->destroy_holder(h);
    /* A dynamic slot of one tensor is a list of one, in infer_meta and in
     * execute (the kinds of both descriptors are kept). */
    const rec_op *kp = find(&r, "OutKeep", false);
    void *ph = holder_of(kp, NULL, 0), *ih = holder_of(ki, NULL, 0);
    pyop_tensor_list one[3] = {{&ins[0], 1}, {NULL, 0}, {&ins[3], 1}};
    pyop_tensor pout;
    pyop_infer_args ia = {sizeof ia, one, 3, &pout, 1, NULL, NULL};
    clear_error();
    CHECK(kp->cb->infer_meta(ph, &ia) == PYOP_OK && pout.ndim == 1 && pout.shape[0] == 3,
          "infer_meta with a dynamic slot of one: %s", g_err);
    for (int c = 0; c < 2; c++)
      CHECK(exec_flags(ki, ih, one, 3, NULL) == PYOP_OK, "execute with a dynamic slot of one: %s",
            g_err);
    /* ... and an empty one an empty list (an absent optional one is None). */
    pyop_tensor_list none[3] = {{NULL, 0}, {NULL, 0}, {&ins[3], 1}};
    ia.inputs = none;
    clear_error();
    CHECK(kp->cb->infer_meta(ph, &ia) == PYOP_OK, "infer_meta with an empty dynamic slot: %s",
          g_err);
    CHECK(exec_flags(ki, ih, none, 3, NULL) == PYOP_OK, "execute with an empty dynamic slot: %s",
          g_err);
    kp->cb->destroy_holder(ph);
    ki->cb->destroy_holder(ih);
  }

  /* A view class's state (_x) is the call's: none when the next call
   * begins, on the same view object or a new one. */
  {
    const rec_op *vi = find(&r, "OutView", true);
    CHECK(vi != NULL, "OutView");
    void *h = holder_of(vi, NULL, 0);
    pyop_tensor in = tensor_f32(x, 1, s2);
    for (int c = 0; c < 3; c++) {
      outputs o = {0};
      CHECK(exec1(vi, h, &in, 1, ONE, 1, &o) == PYOP_OK, "OutView call %d: %s", c, g_err);
      outputs_free(&o);
    }
    char code[1024];
    snprintf(code, sizeof code,
             "import builtins, pyop\n"
             "s = builtins._pyop_outcome['states']\n"
             "want = ('View', None, (2,), 8, %llu, pyop.DataType.float32, pyop.Format.ND)\n"
             "assert s == [want] * 3, s\n"
             "del s, want, pyop\n",
             (unsigned long long)(uintptr_t)x);
    CHECK(py_ok(code), "a view's fields, its state afresh each call");
    /* A view kept past its call: its state can be cleared, not set. */
    CHECK(py_ok("import builtins; builtins._pyop_outcome['keep_view'] = True"), "keep view");
    outputs o = {0};
    CHECK(exec1(vi, h, &in, 1, ONE, 1, &o) == PYOP_OK, "OutView kept: %s", g_err);
    outputs_free(&o);
    CHECK(py_ok("import builtins\n"
                "def _late(v):\n"
                "    assert v.valid is False and v._x is None\n"
                "    v._x = None\n"
                "    del v._x\n"
                "    try:\n"
                "        v._x = 1\n"
                "    except RuntimeError as e:\n"
                "        assert str(e) == 'tensor used outside its callback', e\n"
                "    else:\n"
                "        raise AssertionError('state set on a view after its call')\n"
                "    assert v._x is None\n"
                "o = builtins._pyop_outcome\n"
                "_late(o.pop('kept_view'))\n"
                "o['keep_view'] = False\n"
                "del _late, o\n"),
          "a kept view's state: cleared, not set");
    vi->cb->destroy_holder(h);
  }
  /* An infer_meta result sharing its input's shape tuple: the host sees the
   * dimensions of this call's input, zero past its rank (the input had a
   * higher rank on the call before). */
  {
    void *h = holder_of(wp, NULL, 0);
    int64_t s23[2] = {2, 3};
    pyop_tensor ins[2] = {tensor_f32(x, 2, s23), tensor_f32(y, 2, s23)}, out;
    CHECK_OK(infer1(wp, h, ins, 2, ONE, &out, 1));
    CHECK(out.ndim == 2 && out.shape[0] == 2 && out.shape[1] == 3, "rank 2: %d", out.ndim);
    ins[0] = tensor_f32(x, 1, s3);
    memset(&out, 0x5a, sizeof out);
    CHECK_OK(infer1(wp, h, ins, 2, ONE, &out, 1));
    bool zero = true;
    for (int i = 1; i < PYOP_MAX_DIMS; i++)
      zero = zero && out.shape[i] == 0;
    CHECK(out.ndim == 1 && out.shape[0] == 3 && zero,
          "rank 1 after rank 2: ndim %d shape %lld,%lld", out.ndim, (long long)out.shape[0],
          (long long)out.shape[1]);
    wp->cb->destroy_holder(h);
  }

  /* __pyop_input_view__ that is not a ViewBase class: no instance. */
  {
    const rec_op *bi = find(&r, "OutBadView", true);
    CHECK(bi != NULL, "OutBadView");
    static const char *const bad[] = {
        "5", "int", "pyop.TensorDesc",
        "type('Big', (), {'__slots__': tuple('s%d' % i for i in range(64))})"};
    for (size_t i = 0; i < HARNESS_N(bad); i++) {
      char code[1024];
      snprintf(code, sizeof code,
               "import sys, pyop\n"
               "[m for m in list(sys.modules.values())\n"
               " if hasattr(m, 'OutBadViewImpl')][0].OutBadViewImpl.__pyop_input_view__ = %s\n"
               "del pyop\n",
               bad[i]);
      CHECK(py_ok(code), "set the view class %s", bad[i]);
      void *h = (void *)1;
      clear_error();
      CHECK(bi->cb->create_holder(bi->ctx, NULL, 0, &h) == PYOP_EPYTHON && h == NULL &&
                err_has("__pyop_input_view__ must be a subclass of pyop._native.ViewBase"),
            "view class %s: %s", bad[i], g_err);
    }
  }
  /* A Tensor attribute: the host's bytes, valid between calls, not after
   * its instance. An implementation without a view class gets pyop.Tensor. */
  {
    float tv[2] = {1.5f, -2.0f};
    pyop_tensor table = tensor_f32(tv, 1, s2);
    pyop_attr_view ta;
    memset(&ta, 0, sizeof ta);
    ta.struct_size = sizeof ta;
    ta.name = (pyop_str){"table", 5};
    ta.type = ta.default_value.type = PYOP_ATTR_TENSOR;
    ta.default_value.u.tensor = &table;
    void *h = holder_of(tp, &ta, 1), *hi = holder_of(ti, &ta, 1);
    tv[0] = 99.0f; /* the bridge copied the bytes at create_holder */
    pyop_tensor in = tensor_f32(x, 1, s2), out;
    CHECK_OK(infer1(tp, h, &in, 1, ONE, &out, 1));
    CHECK(py_ok("import builtins\n"
                "t, vals = builtins._pyop_outcome['tattr'][0]\n"
                "assert vals == [1.5, -2.0], vals\n"
                "assert t.valid is True and t.shape == (2,), t\n"
                "del t, vals\n"),
          "Tensor attribute during its instance");
    outputs o = {0};
    CHECK_OK(exec1(ti, hi, &in, 1, ONE, 1, &o));
    outputs_free(&o);
    CHECK(py_ok("import builtins\n"
                "v = builtins._pyop_outcome['view_types']\n"
                "assert v == ['Tensor'], v\n"),
          "__pyop_input_view__ = None: pyop.Tensor");
    ti->cb->destroy_holder(hi);
    tp->cb->destroy_holder(h);
    CHECK(py_ok("import builtins\n"
                "t = builtins._pyop_outcome['tattr'][0][0]\n"
                "assert t.valid is False, t\n"
                "try:\n"
                "    t.shape\n"
                "except RuntimeError as e:\n"
                "    assert str(e) == 'tensor used outside its callback', e\n"
                "else:\n"
                "    raise AssertionError('a Tensor attribute read after its instance')\n"
                "del t\n"),
          "Tensor attribute after its instance");
  }

  /* Each dtype's buffer format. */
  {
    static const char *const fmt[PYOP_DTYPE_COUNT] = {
        [PYOP_DTYPE_FLOAT32] = "f", [PYOP_DTYPE_FLOAT16] = "e", [PYOP_DTYPE_BFLOAT16] = "H",
        [PYOP_DTYPE_FLOAT64] = "d", [PYOP_DTYPE_INT8] = "b",    [PYOP_DTYPE_INT16] = "h",
        [PYOP_DTYPE_INT32] = "i",   [PYOP_DTYPE_INT64] = "q",   [PYOP_DTYPE_UINT8] = "B",
        [PYOP_DTYPE_UINT16] = "H",  [PYOP_DTYPE_UINT32] = "I",  [PYOP_DTYPE_UINT64] = "Q",
        [PYOP_DTYPE_BOOL] = "?"};
    static const int size[PYOP_DTYPE_COUNT] = {4, 2, 2, 8, 1, 2, 4, 8, 1, 2, 4, 8, 1};
    uint64_t buf[4] = {0};
    for (int d = 0; d < PYOP_DTYPE_COUNT; d++) {
      pyop_tensor t = tensor_f32((float *)buf, 1, s2);
      t.dtype = d;
      t.nbytes = (uint64_t)(2 * size[d]);
      const char *rep = probe(pi, t);
      char want[64];
      snprintf(want, sizeof want, "buffer=%d:%s", 2 * size[d], fmt[d]);
      const char *at = strstr(rep, "buffer=");
      CHECK(at != NULL && strcmp(at, want) == 0, "dtype %d: %s, expected %s", d, rep, want);
    }
    /* A negative dtype (which no libpyop passes) is unknown as one past the
     * last is. */
    pyop_tensor t = tensor_f32((float *)buf, 1, s2);
    t.dtype = -1;
    const char *rep = probe(pi, t);
    CHECK_PROBE(rep, "dtype=-1 format=ND ");
    CHECK_PROBE(rep, "repr=<pyop.Tensor shape=(2,) dtype=?> ");
    CHECK_PROBE(rep, "buffer=BufferError: tensor has an unknown dtype -1");
  }
  /* What EdgeProbe kept (a Tensor) would outlive the package. */
  CHECK(py_ok("import builtins, sys\n"
              "builtins._pyop_outcome.clear()\n"
              "del builtins._pyop_outcome\n"
              "for m in list(sys.modules.values()):\n"
              "    if hasattr(m, 'EdgeProbeImpl'):\n"
              "        m.EdgeProbeImpl.kept = None\n"),
        "cleanup");
  CHECK(py_ok("import sys; assert sys.exc_info()[0] is None"), "no exception left");
  api->reset();
  rec_clear(&r);
  /* An op compiled from a string (plugins/digest/generated.py): its file
   * cannot be read, so neither view carries a source_digest (libpyop then
   * compares file:line alone), and the load succeeds (both-sides pass,
   * session 14: only digests of readable files were seen). */
  CHECK_OK(load(&r, 1, "digest/generated.py"));
  {
    const rec_op *gp = find(&r, "Generated", false), *gi = find(&r, "Generated", true);
    CHECK(gp != NULL && gi != NULL, "Generated registered");
    CHECK(gp->digest == NULL && gi->digest == NULL, "digests of an unreadable file: %s %s",
          gp->digest ? gp->digest : "(none)", gi->digest ? gi->digest : "(none)");
    /* Its kernel library, named relative to a file without a directory, is
     * relative to "." (never to "/"). */
    pyop_tensor in = tensor_f32(x, 1, s2);
    pyop_tensor_list lists[1] = {{&in, 1}};
    void *h = holder_of(gi, NULL, 0);
    sink sk;
    memset(&sk, 0, sizeof sk);
    pyop_declare_args da = {sizeof da, lists, 1, &in, 1, &sk, sink_launch, sink_ws};
    clear_error();
    CHECK_OK(gi->cb->declare_launch_args(h, &da));
    CHECK(strcmp(sk.lib, "./libgen.so") == 0 && strcmp(sk.sym, "gen_kernel") == 0,
          "library %s, symbol %s", sk.lib, sk.sym);
    gi->cb->destroy_holder(h);
  }
  api->reset();
  rec_clear(&r);
}

/* The cases, one ctest integration.bridge.<name> each: X(name, labels,
 * timeout, variants), tests/cases.h. "valgrind": run by "all" (in this
 * order), which integration.bridge.valgrind runs under valgrind;
 * "no_host_python": this host does not initialise Python first. */
/* alias_output of case state: output index becomes g_st_ins[input]. */
static pyop_tensor *g_st_ins;
static size_t g_st_alias[2];

static int st_alias_output(void *ctx, size_t index, size_t input, pyop_tensor *t) {
  (void)ctx;
  g_st_alias[0] = index;
  g_st_alias[1] = input;
  *t = g_st_ins[input];
  return PYOP_OK;
}

/* alloc_output of case state's StHost: refuses, with PYOP_ENOMEM and
 * PYOP_EINVAL in turn. */
static int g_st_refusals;

static int st_refusing_alloc(void *ctx, size_t index, pyop_tensor *t) {
  (void)ctx;
  (void)index;
  (void)t;
  return g_st_refusals++ % 2 == 0 ? PYOP_ENOMEM : PYOP_EINVAL;
}

/*
 * State carried from one call, input or output to the next (plugins/state,
 * issue 31's state pass):
 * - a call on reused inputs (the second call of a holder on the same
 *   tensors) numbers the view it keeps by its own input (y: input 1), and
 *   so does the refusal that follows;
 * - every view kept is watched: with two kept, releasing either one still
 *   refuses the next call, releasing both runs it;
 * - an infer_meta result in a new shape tuple gives zeros past its rank,
 *   whatever the host's output struct held before, and reserved 0;
 * - input_flags and output_alias reach the host when only the first entry
 *   is set (x mutated, output 0 is x); infer_meta of two outputs fills
 *   each with its own description;
 * - list attributes after other attributes: each call gets new lists of
 *   the holder's values, the other attributes as they are; ctx._attrs
 *   holds the very objects the call got;
 * - the Tensors of a call on reused inputs, kept past it, are invalid; a
 *   context kept past its call is invalid and its _x was dropped with it;
 * - a dynamic slot after a reused one numbers its tensors from 1 (a kept
 *   view of ys[1] is input 2); ctx._inputs holds the call's own x and ys;
 *   with the dynamic slot's PYOP_INPUT_MUTATED bit each of its tensors is
 *   writable, x not;
 * - an execute that is another object's bound method (set on the
 *   instance) is called with that object as self;
 * - a launch argument out of its range is named by its own number (2, not
 *   0), nothing is launched, and the next declare launches all three;
 * - an output made input 1's buffer (make_output_ref_input(0, 1)) is
 *   output 0 in the message about a view kept of it;
 * - view_call finds a view kernel the host called (depth 1) deeper than 0
 *   but not deeper than 1, and never an execute on pyop.Tensor inputs;
 * - a view kept of a workspace names it by its number among the call's
 *   workspaces (0, 1), not by the count of tensors the call made before;
 * - a host refusal the op caught, then a second one it let through: the
 *   call ends with the second one's status;
 * - compile gets each output's own description (the second's shape and
 *   dtype differ from the first's).
 */
static void case_state(void) {
  recorder r = {.fail_at = -1};
  CHECK_OK(load(&r, 1, "state"));
  const rec_op *ki = find(&r, "StKeep", true), *fp = find(&r, "StFresh", false),
               *fl = find(&r, "StFlags", false), *li = find(&r, "StLists", true);
  CHECK(ki && fp && fl && li, "ops registered");
  float x[2] = {1, 2}, y[2] = {3, 4};
  int64_t s2[1] = {2};
  pyop_tensor ins[2] = {tensor_f32(x, 1, s2), tensor_f32(y, 1, s2)};

  /* Reused inputs: the view kept is named by its own input. */
  {
    void *h = holder_of(ki, NULL, 0);
    outputs o = {0};
    for (int c = 0; c < 2; c++)
      CHECK(exec1(ki, h, ins, 2, ONE, 1, &o) == PYOP_OK, "call %d keeping nothing: %s", c, g_err);
    CHECK(py_ok("import builtins; builtins._pyop_state['keep'] = ('y',)"), "keep y");
    CHECK(exec1(ki, h, ins, 2, ONE, 1, &o) == PYOP_EPYTHON, "y kept: %s", g_err);
    CHECK(err_has("a buffer of input 1 (a memoryview") && !err_has("input 0"),
          "a reused y is input 1: %s", g_err);
    CHECK(py_ok("import builtins; builtins._pyop_state['keep'] = ()"), "keep none");
    CHECK(exec1(ki, h, ins, 2, ONE, 1, &o) == PYOP_ESTATE &&
              err_has("refused: a buffer of input 1 (a memoryview"),
          "the refusal names input 1: %s", g_err);
    CHECK(py_ok("import builtins; builtins._pyop_state['views'].clear()"), "release");
    CHECK(exec1(ki, h, ins, 2, ONE, 1, &o) == PYOP_OK, "released: %s", g_err);
    /* The Tensors of a call on reused inputs, kept: invalid after it. */
    CHECK(py_ok("import builtins; builtins._pyop_state['keep_tensors'] = True"), "keep Tensors");
    CHECK(exec1(ki, h, ins, 2, ONE, 1, &o) == PYOP_OK, "Tensors kept: %s", g_err);
    CHECK(py_ok("import builtins; s = builtins._pyop_state\n"
                "(x, y), = s['tensors']\n"
                "assert x.valid is False and y.valid is False, (x.valid, y.valid)\n"
                "s['tensors'].clear(); s['keep_tensors'] = False\n"
                "del s, x, y\n"),
          "kept Tensors of reused inputs are invalid after their call");
    /* A context kept past its call: invalid, its _x dropped with the call. */
    CHECK(py_ok("import builtins; builtins._pyop_state['keep_ctx'] = True"), "keep ctx");
    CHECK(exec1(ki, h, ins, 2, ONE, 1, &o) == PYOP_OK, "ctx kept: %s", g_err);
    CHECK(py_ok("import builtins; s = builtins._pyop_state\n"
                "ctx, marker = s.pop('ctx')\n"
                "assert ctx.valid is False and ctx._x is None and marker() is None, \\\n"
                "    (ctx.valid, ctx._x, marker())\n"
                "s['keep_ctx'] = False\n"
                "del s, ctx, marker\n"),
          "a kept context's _x is dropped when its call ends");

    /* Two views kept: the call fails naming the first; releasing x alone
     * still refuses (y is alive), releasing y too runs the call. */
    CHECK(py_ok("import builtins; builtins._pyop_state['keep'] = ('x', 'y')"), "keep x, y");
    CHECK(exec1(ki, h, ins, 2, ONE, 1, &o) == PYOP_EPYTHON &&
              err_has("a buffer of input 0 (a memoryview"),
          "x and y kept: %s", g_err);
    CHECK(py_ok("import builtins; s = builtins._pyop_state; s['keep'] = ()\n"
                "s['views'] = [v for v in s['views'] if v[0] != 'x']\n"
                "assert [k for k, v in s['views']] == ['y'], s['views']\n"
                "del s\n"),
          "release x");
    CHECK(py_ok("import builtins; builtins._pyop_state['seen'].clear()"), "seen cleared");
    CHECK(exec1(ki, h, ins, 2, ONE, 1, &o) == PYOP_ESTATE && err_has("refused"),
          "y still alive: refused: %s", g_err);
    CHECK(exec1(ki, h, ins, 2, ONE, 1, &o) == PYOP_ESTATE, "still refused: %s", g_err);
    CHECK(py_ok("import builtins; assert builtins._pyop_state['seen'] == [], "
                "builtins._pyop_state['seen']"),
          "the refused calls did not run");
    CHECK(py_ok("import builtins; builtins._pyop_state['views'].clear()"), "release y");
    CHECK(exec1(ki, h, ins, 2, ONE, 1, &o) == PYOP_OK, "both released: %s", g_err);
    CHECK(py_ok("import builtins; s = builtins._pyop_state['seen']\n"
                "assert s == [((1.0, 2.0), (3.0, 4.0))], s\n"),
          "the call ran once, on this call's inputs");
    /* The other order: releasing y alone leaves x watched. */
    CHECK(py_ok("import builtins; builtins._pyop_state['keep'] = ('x', 'y')"), "keep x, y");
    CHECK(exec1(ki, h, ins, 2, ONE, 1, &o) == PYOP_EPYTHON, "x and y kept again: %s", g_err);
    CHECK(py_ok("import builtins; s = builtins._pyop_state; s['keep'] = ()\n"
                "s['views'] = [v for v in s['views'] if v[0] != 'y']\n"
                "assert [k for k, v in s['views']] == ['x'], s['views']\n"
                "del s\n"),
          "release y");
    CHECK(exec1(ki, h, ins, 2, ONE, 1, &o) == PYOP_ESTATE && err_has("refused"),
          "x still alive: refused: %s", g_err);
    CHECK(py_ok("import builtins; s = builtins._pyop_state\n"
                "s['views'].clear(); s['seen'].clear(); del s\n"),
          "release x");
    CHECK(exec1(ki, h, ins, 2, ONE, 1, &o) == PYOP_OK, "both released again: %s", g_err);
    outputs_free(&o);
    ki->cb->destroy_holder(h);
  }

  /* A dynamic slot after a reused one: its tensors are inputs 1.. */
  {
    const rec_op *mi = find(&r, "StMix", true);
    CHECK(mi != NULL, "StMix");
    void *h = holder_of(mi, NULL, 0);
    outputs o = {0};
    pyop_tensor mix[3] = {tensor_f32(x, 1, s2), tensor_f32(y, 1, s2), tensor_f32(x, 1, s2)};
    const size_t counts[2] = {1, 2};
    for (int c = 0; c < 2; c++)
      CHECK(exec1(mi, h, mix, 2, counts, 1, &o) == PYOP_OK, "StMix call %d: %s", c, g_err);
    CHECK(py_ok("import builtins; i = builtins._pyop_state['ctx_inputs']\n"
                "assert i == (2, True, True), i\n"),
          "ctx._inputs: the call's own arguments");
    CHECK(py_ok("import builtins; builtins._pyop_state['keep'] = (1,)"), "keep ys[1]");
    CHECK(exec1(mi, h, mix, 2, counts, 1, &o) == PYOP_EPYTHON &&
              err_has("a buffer of input 2 (a memoryview") && !err_has("input 1 ") &&
              !err_has("input 0"),
          "ys[1] after a reused x is input 2: %s", g_err);
    CHECK(py_ok("import builtins; s = builtins._pyop_state; s['keep'] = ()\n"
                "s['views'].clear(); del s\n"),
          "release");
    CHECK(exec1(mi, h, mix, 2, counts, 1, &o) == PYOP_OK, "released: %s", g_err);
    CHECK(py_ok("import builtins; w = builtins._pyop_state['mix_writable']\n"
                "assert w == (False, [False, False]), w\n"),
          "no flags: nothing writable");
    /* Flags: the dynamic slot mutated, each of its tensors writable. */
    const uint32_t flags[2] = {0, PYOP_INPUT_MUTATED};
    pyop_tensor_list ml[2] = {{&mix[0], 1}, {&mix[1], 2}};
    CHECK(exec_flags(mi, h, ml, 2, flags) == PYOP_OK, "StMix with flags: %s", g_err);
    CHECK(py_ok("import builtins; w = builtins._pyop_state['mix_writable']\n"
                "assert w == (False, [True, True]), w\n"),
          "a mutated dynamic slot: every tensor of it writable");
    outputs_free(&o);
    mi->cb->destroy_holder(h);
  }

  /* A result in a new shape tuple: zero past its rank, after a call whose
   * output struct held garbage. */
  {
    void *h = holder_of(fp, NULL, 0);
    int64_t s23[2] = {2, 3};
    pyop_tensor in[2] = {tensor_f32(x, 2, s23), tensor_f32(x, 1, s2)};
    for (int c = 0; c < 2; c++) {
      pyop_tensor out;
      memset(&out, 0x5a, sizeof out);
      CHECK_OK(infer1(fp, h, &in[c], 1, ONE, &out, 1));
      bool zero = out.reserved == 0;
      for (int d = 1; d < PYOP_MAX_DIMS; d++)
        zero = zero && out.shape[d] == 0;
      CHECK(out.ndim == 1 && out.shape[0] == (c == 0 ? 3 : 2) && zero &&
                out.dtype == PYOP_DTYPE_FLOAT32 && out.format == 0,
            "call %d: ndim %d shape[0] %lld shape[1] %lld reserved %d", c, out.ndim,
            (long long)out.shape[0], (long long)out.shape[1], (int)out.reserved);
    }
    fp->cb->destroy_holder(h);
  }

  /* infer_meta of two outputs: each gets its own description (the
   * second's shape is input y's). */
  {
    void *h = holder_of(fl, NULL, 0);
    int64_t s3[1] = {3};
    float z[3] = {0, 0, 0};
    pyop_tensor two[2] = {tensor_f32(x, 1, s2), tensor_f32(z, 1, s3)}, outs[2];
    memset(outs, 0x5a, sizeof outs);
    CHECK_OK(infer1(fl, h, two, 2, ONE, outs, 2));
    CHECK(outs[0].ndim == 1 && outs[0].shape[0] == 2 && outs[1].ndim == 1 &&
              outs[1].shape[0] == 3 && outs[1].dtype == PYOP_DTYPE_FLOAT32,
          "StFlags outputs: (%lld,) (%lld,)", (long long)outs[0].shape[0],
          (long long)outs[1].shape[0]);
    fl->cb->destroy_holder(h);
  }

  /* Flags and alias given when only their first entry is set. */
  CHECK(fl->n_inputs == 2 && fl->n_outputs == 2 && fl->has_flags && fl->has_alias &&
            fl->in_flags[0] == PYOP_INPUT_MUTATED && fl->in_flags[1] == 0 &&
            fl->alias[0] == 0 && fl->alias[1] == -1,
        "StFlags: flags %d (%u, %u), alias %d (%d, %d)", fl->has_flags, fl->in_flags[0],
        fl->in_flags[1], fl->has_alias, fl->alias[0], fl->alias[1]);

  /* List attributes after other attributes: new lists each call. */
  {
    int64_t ai[2] = {4, 5};
    double bf[1] = {1.25};
    pyop_attr_view at[4] = {attr_int("n", 7), attr_int("a", 0), attr_str("s", "txt"),
                            attr_float("b", 0)};
    at[1].type = at[1].default_value.type = PYOP_ATTR_LIST_INT;
    at[1].default_value.u.ints.items = ai;
    at[1].default_value.u.ints.count = 2;
    at[3].type = at[3].default_value.type = PYOP_ATTR_LIST_FLOAT;
    at[3].default_value.u.floats.items = bf;
    at[3].default_value.u.floats.count = 1;
    void *h = holder_of(li, at, 4);
    outputs o = {0};
    CHECK(py_ok("import builtins; builtins._pyop_state['seen'].clear()"), "seen cleared");
    for (int c = 0; c < 2; c++)
      CHECK(exec1(li, h, ins, 1, ONE, 1, &o) == PYOP_OK, "StLists call %d: %s", c, g_err);
    CHECK(py_ok("import builtins; s = builtins._pyop_state['seen']\n"
                "one = ('int', 7, 'list', [4, 5], 'txt', 'list', [1.25])\n"
                "assert s == [one, one], s\n"
                "a = builtins._pyop_state['ctx_attrs']\n"
                "assert a == (True, True, 7, 'txt'), a\n"),
          "each call's attributes, the same in ctx._attrs");
    outputs_free(&o);
    li->cb->destroy_holder(h);
  }
  /* An execute bound to another object (set on the instance): that object
   * is its self, on every call. */
  {
    const rec_op *bi = find(&r, "StBound", true);
    CHECK(bi != NULL, "StBound");
    void *h = holder_of(bi, NULL, 0);
    outputs o = {0};
    for (int c = 0; c < 2; c++)
      CHECK(exec1(bi, h, ins, 2, ONE, 1, &o) == PYOP_OK, "StBound call %d: %s", c, g_err);
    CHECK(py_ok("import builtins; b = builtins._pyop_state['bound']\n"
                "assert b == ['Helper:helper'] * 2, b\n"),
          "the bound method's own self");
    outputs_free(&o);
    bi->cb->destroy_holder(h);
  }
  /* An error in launch argument 2 names argument 2; nothing is launched,
   * and the next declare (a value in range) launches all three. */
  {
    const rec_op *la = find(&r, "StLaunch", true);
    CHECK(la != NULL, "StLaunch");
    void *h = holder_of(la, NULL, 0);
    pyop_tensor out = tensor_f32(NULL, 1, s2);
    pyop_tensor_list lists[1] = {{&ins[0], 1}};
    for (int c = 0; c < 2; c++) {
      sink sk;
      memset(&sk, 0, sizeof sk);
      pyop_declare_args da = {sizeof da, lists, 1, &out, 1, &sk, sink_launch, sink_ws};
      CHECK(py_ok(c == 0 ? "import builtins; builtins._pyop_state['value'] = 300"
                         : "import builtins; builtins._pyop_state['value'] = 255"),
            "value");
      clear_error();
      int rc = la->cb->declare_launch_args(h, &da);
      if (c == 0)
        CHECK(rc == PYOP_EPYTHON && err_has("launch argument 2 (uint8) value 300 is out of range") &&
                  !err_has("launch argument 0") && sk.n_args == 0 && sk.sym[0] == 0,
              "argument 2 out of range: %d %s", rc, g_err);
      else
        CHECK(rc == PYOP_OK && sk.n_args == 3 && strcmp(sk.sym, "k") == 0 &&
                  sk.args[2].kind == PYOP_LAUNCH_ARG_SCALAR && sk.args[2].value.u == 255 &&
                  sk.args[0].kind == PYOP_LAUNCH_ARG_INPUT &&
                  sk.args[1].kind == PYOP_LAUNCH_ARG_OUTPUT,
              "the next declare: %d %zu args %s", rc, sk.n_args, g_err);
    }
    la->cb->destroy_holder(h);
  }
  /* Output 0 made input 1's buffer: a view kept of it is output 0's. */
  {
    const rec_op *ri = find(&r, "StRef", true);
    CHECK(ri != NULL, "StRef");
    void *h = holder_of(ri, NULL, 0);
    g_st_ins = ins;
    const uint32_t flags[2] = {0, PYOP_INPUT_MUTATED};
    pyop_tensor_list lists[2] = {{&ins[0], 1}, {&ins[1], 1}};
    pyop_exec_services svc = {sizeof svc, NULL, alloc_output, alloc_workspace, st_alias_output};
    pyop_exec_args a = {sizeof a, lists, 2, 1, &svc, NULL, flags};
    CHECK(py_ok("import builtins; builtins._pyop_state['keep_ref'] = True"), "keep ref");
    clear_error();
    CHECK(ri->cb->execute(h, &a) == PYOP_EPYTHON && g_st_alias[0] == 0 && g_st_alias[1] == 1 &&
              err_has("a buffer of output 0 (a memoryview") && !err_has("output 1"),
          "a kept view of output 0 (input 1's buffer): %s", g_err);
    CHECK(py_ok("import builtins; s = builtins._pyop_state\n"
                "assert s['ref'] == (3.0, 4.0), s['ref']\n"
                "s['keep_ref'] = False; s['views'].clear(); del s\n"),
          "output 0 showed input 1's data");
    clear_error();
    CHECK(ri->cb->execute(h, &a) == PYOP_OK, "released: %s", g_err);
    ri->cb->destroy_holder(h);
  }
  /* view_call: a view kernel called by the host (depth 1) is found deeper
   * than 0 only; an execute on pyop.Tensor inputs never. */
  {
    const rec_op *vi = find(&r, "StView", true);
    CHECK(vi != NULL, "StView");
    void *h = holder_of(vi, NULL, 0), *kh = holder_of(ki, NULL, 0);
    outputs o = {0};
    CHECK(exec1(vi, h, ins, 1, ONE, 1, &o) == PYOP_OK, "StView: %s", g_err);
    CHECK(py_ok("import builtins; v = builtins._pyop_state['view_call']\n"
                "assert v == (True, None, 1), v\n"),
          "view_call of a view kernel at depth 1");
    CHECK(exec1(ki, kh, ins, 2, ONE, 1, &o) == PYOP_OK, "StKeep: %s", g_err);
    CHECK(py_ok("import builtins; v = builtins._pyop_state['view_call']\n"
                "assert v == (None, 1), v\n"),
          "view_call of an execute on pyop.Tensor inputs");
    outputs_free(&o);
    ki->cb->destroy_holder(kh);
    vi->cb->destroy_holder(h);
  }
  /* Workspaces are numbered among the call's workspaces: a view kept of
   * the second one is workspace 1, of the first workspace 0 (whatever the
   * inputs before them). */
  {
    const rec_op *wi = find(&r, "StWs", true);
    CHECK(wi != NULL, "StWs");
    void *h = holder_of(wi, NULL, 0);
    for (int k = 0; k < 2; k++) {
      outputs o = {0};
      CHECK(py_ok(k == 1 ? "import builtins; builtins._pyop_state['keep_ws'] = (1,)"
                         : "import builtins; builtins._pyop_state['keep_ws'] = (0,)"),
            "keep_ws");
      int rc = exec1(wi, h, ins, 1, ONE, 1, &o);
      CHECK(rc == PYOP_EPYTHON && o.n_ws == 2 &&
                err_has(k == 1 ? "a buffer of workspace 1 (a memoryview"
                               : "a buffer of workspace 0 (a memoryview") &&
                !err_has(k == 1 ? "workspace 2" : "workspace 1"),
            "a kept view of workspace %d: %d %s", k, rc, g_err);
      CHECK(py_ok("import builtins; s = builtins._pyop_state; s['keep_ws'] = ()\n"
                  "assert s['ws'] == [8, 4], s['ws']\n"
                  "s['views'].clear(); del s\n"),
            "release");
      outputs_free(&o);
    }
    wi->cb->destroy_holder(h);
  }
  /* A host refusal the op caught (PYOP_ENOMEM), then a second one it let
   * through (PYOP_EINVAL): the call fails with the second one's status, on
   * every call. */
  {
    const rec_op *hi = find(&r, "StHost", true);
    CHECK(hi != NULL, "StHost");
    void *h = holder_of(hi, NULL, 0);
    pyop_tensor_list lists[1] = {{&ins[0], 1}};
    pyop_exec_services svc = {sizeof svc, NULL, st_refusing_alloc, alloc_workspace};
    pyop_exec_args a = {sizeof a, lists, 1, 1, &svc, NULL, NULL};
    for (int c = 0; c < 2; c++) {
      clear_error();
      int rc = hi->cb->execute(h, &a);
      CHECK(rc == PYOP_EINVAL && err_has("allocate output 0 (PYOP_EINVAL)") &&
                !err_has("PYOP_ENOMEM"),
            "call %d: the second refusal's status: %d %s", c, rc, g_err);
    }
    CHECK(py_ok("import builtins; assert builtins._pyop_state['caught'] == 2"), "caught twice");
    hi->cb->destroy_holder(h);
  }
  /* compile gets each output's own description. */
  {
    const rec_op *ti = find(&r, "StTwoOut", true);
    CHECK(ti != NULL, "StTwoOut");
    void *h = holder_of(ti, NULL, 0);
    int64_t s3[2] = {3, 2};
    int64_t s1[1] = {1};
    pyop_tensor outs[2] = {tensor_f32(NULL, 2, s3), tensor_f32(NULL, 1, s1)};
    outs[1].dtype = PYOP_DTYPE_INT64;
    pyop_tensor_list lists[1] = {{&ins[0], 1}};
    sink sk;
    memset(&sk, 0, sizeof sk);
    pyop_compile_args ca = {sizeof ca, lists, 1, outs, 2, &sk, sink_artifact};
    clear_error();
    CHECK(ti->cb->compile(h, &ca) == PYOP_OK && sk.artifact_len == 2, "StTwoOut compile: %s",
          g_err);
    CHECK(py_ok("import builtins; d = builtins._pyop_state['compile_descs']\n"
                "assert d == ((2,), (3, 2), (1,), 'int64'), d\n"),
          "each output's description");
    ti->cb->destroy_holder(h);
  }
  CHECK(py_ok("import builtins; del builtins._pyop_state"), "state dropped");
  rec_clear(&r);
}

/* ----------------------- state pass (session 11): the image kept mapped */

static void mapped_usr1_first(int sig) { (void)sig; }
static void mapped_usr1_second(int sig) { (void)sig; }

/*
 * The signal dispositions saved at a load are not carried into the next
 * session of the same image (this harness keeps its handle, as libpyop
 * keeps a bridge a plugin's Tensor pins) when the host finalized its Python
 * under a plugin that replaced SIGUSR1 and then shut the bridge down
 * (nothing restored then: that Python is gone): the next session's reset
 * restores the host's handler at that session's load, not the first's.
 */
static void case_mapped_signals(void) {
  struct sigaction sa, old;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = mapped_usr1_first;
  CHECK(sigaction(SIGUSR1, &sa, &old) == 0, "install the host's SIGUSR1 handler");
  recorder r = {.fail_at = -1};
  CHECK_OK(load(&r, 1, "loadstate/sig_usr1.py"));
  CHECK(handler_now(SIGUSR1) != (void *)mapped_usr1_first,
        "test bug: the plugin did not replace SIGUSR1");
  rec_clear(&r);
  bcstate_host_restarts_python();
  CHECK(api->interpreter_status() == PYOP_ENOTINIT, "the bridge did not see Python finalized");
  api->shutdown();
  /* The next session, in this same image: the host's handler is another. */
  sa.sa_handler = mapped_usr1_second;
  CHECK(sigaction(SIGUSR1, &sa, NULL) == 0, "the host's second SIGUSR1 handler");
  pyop_bridge_entry_fn entry =
      (pyop_bridge_entry_fn)dlsym(bridge_handle, PYOP_BRIDGE_ENTRY_SYMBOL);
  pyop_bridge_request req = {sizeof req, PYOP_BRIDGE_ABI_MAJOR, PYOP_BRIDGE_ABI_MINOR, &g_services};
  CHECK_OK(entry(&req, &api));
  CHECK_OK(configure(0));
  CHECK_OK(load(&r, 1, "loadstate/sig_usr1.py"));
  CHECK(handler_now(SIGUSR1) != (void *)mapped_usr1_second, "test bug: SIGUSR1 not replaced");
  api->reset();
  CHECK(handler_now(SIGUSR1) == (void *)mapped_usr1_second,
        "the second session's reset restored %p, not the host's handler at its load (%p; the "
        "first session's was %p)",
        handler_now(SIGUSR1), (void *)mapped_usr1_second, (void *)mapped_usr1_first);
  rec_clear(&r);
  sigaction(SIGUSR1, &old, NULL);
}

/* ------------------ configuration pass (session 12, cflife): entry/load path */

/* set_config with artifact_dir dir (the session's own, from the entry). */
static int cf_set_dir(const char *dir) {
  pyop_bridge_config cfg = {sizeof cfg, {dir, strlen(dir)}, {NULL, 0}, 0};
  clear_error();
  return api->set_config(&cfg);
}

/*
 * set_config twice in one session: the load imports the package of the
 * last artifact directory given, whichever of the two is the good one
 * (set_config only stores the directory: a missing one fails at the load,
 * naming it).
 */
static void cf_config_twice(void) {
  static const char missing[] = "/nonexistent/pyop_cf_artifact";
  recorder r = {.fail_at = -1};
  loadstate_restart(missing);
  CHECK_OK(cf_set_dir(g_artifact));
  CHECK_OK(load(&r, 1, "loadstate/plain.py"));
  CHECK(r.n == 1, "a load after a second set_config named the good directory");
  api->reset();
  rec_clear(&r);
  loadstate_restart(g_artifact);
  CHECK_OK(cf_set_dir(missing));
  CHECK(load(&r, 1, "loadstate/plain.py") == PYOP_EPLUGIN &&
            err_has("importing the pyop package from /nonexistent/pyop_cf_artifact/python/pyop"),
        "a load after a second set_config naming a missing directory: %d %s", g_err_status,
        g_err);
  CHECK(r.n == 0, "nothing registered");
  loadstate_restart(g_artifact);
  CHECK_OK(load(&r, 1, "loadstate/plain.py"));
  api->reset();
  rec_clear(&r);
}

/*
 * An artifact whose pyop/__init__.py ends with tail (a pyop.TensorDesc the
 * bridge cannot read and write as pb_desc, of the same size) is refused
 * when the package is imported, naming the rule.
 */
static void cf_desc_refused(const char *tail, const char *what) {
  char dir[] = "/tmp/pyop_cf_art_XXXXXX";
  CHECK(mkdtemp(dir) != NULL, "mkdtemp");
  char cmd[9000], init[4200];
  snprintf(cmd, sizeof cmd, "cp -R '%s/python' '%s/'", g_artifact, dir);
  CHECK(system(cmd) == 0, "%s", cmd);
  snprintf(init, sizeof init, "%s/python/pyop/__init__.py", dir);
  FILE *f = fopen(init, "a");
  CHECK(f != NULL, "open %s", init);
  fputs(tail, f);
  fclose(f);
  recorder r = {.fail_at = -1};
  loadstate_restart(dir);
  CHECK(load(&r, 1, "loadstate/plain.py") == PYOP_EPLUGIN &&
            err_has("importing the pyop package from") &&
            err_has("must subclass pyop._native.TensorDescBase with __slots__ = ()"),
        "%s: %d %s", what, g_err_status, g_err);
  CHECK(r.n == 0, "nothing registered (%s)", what);
  rec_clear(&r);
  loadstate_restart(g_artifact);
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  CHECK(system(cmd) == 0, "%s", cmd);
}

/* Each way a pyop.TensorDesc may keep pb_desc's size and still not be one:
 * a __dict__, a __weakref__, no TensorDescBase base at all. */
static void cf_desc_layouts(void) {
  cf_desc_refused("\n\nclass TensorDesc(TensorDesc):\n    __slots__ = ('__dict__',)\n",
                  "a TensorDesc with a __dict__");
  cf_desc_refused("\n\nclass TensorDesc(TensorDesc):\n    __slots__ = ('__weakref__',)\n",
                  "a TensorDesc with a __weakref__");
  cf_desc_refused("\n\nclass TensorDesc:\n    __slots__ = ('shape', 'dtype', 'format')\n",
                  "a TensorDesc that is no TensorDescBase (its slots at the same places)");
  recorder r = {.fail_at = -1};
  CHECK_OK(load(&r, 1, "loadstate/plain.py"));
  api->reset();
  rec_clear(&r);
}

/*
 * The import guard, each way: a load that succeeds after its plugin
 * replaced sys.modules["pyop"] and a host module's entry gets the package
 * back and keeps the host module as the plugin left it; a load that fails
 * after its plugin replaced (not deleted) a host module's entry puts the
 * host's module back.
 */
static void cf_guard(void) {
  recorder r = {.fail_at = -1};
  CHECK(py_ok("import sys, types\n"
              "sys.modules['_cf_host_module'] = _cf_host = types.ModuleType('_cf_host_module')\n"),
        "the host's module");
  CHECK_OK(load(&r, 1, "cfstate/guard_ok.py"));
  CHECK(find(&r, "CfGuard", false) != NULL, "CfGuard registered");
  CHECK(py_ok("import sys\n"
              "assert hasattr(sys.modules['pyop'], 'register_op'), sys.modules['pyop']\n"
              "m = sys.modules['_cf_host_module']\n"
              "assert m.__name__ == '_cf_host_module_by_plugin', m\n"
              "sys.modules['_cf_host_module'] = _cf_host\n"),
        "after a load whose plugin replaced sys.modules['pyop'] and a host module");
  api->reset();
  rec_clear(&r);
  CHECK(load(&r, 1, "cfstate/guard_fail.py") == PYOP_EPLUGIN &&
            err_has("cfstate guard plugin fails after replacing a host module"),
        "the failing plugin: %d %s", g_err_status, g_err);
  CHECK(py_ok("import sys\n"
              "assert sys.modules['_cf_host_module'] is _cf_host, sys.modules['_cf_host_module']\n"
              "del sys.modules['_cf_host_module'], _cf_host\n"),
        "a failed load left a host module its plugin replaced");
  rec_clear(&r);
}

/*
 * A dtype and a format below 0 given through __index__ (plugins/outcome,
 * OutIndex dt=-1, fm=-1: the checked path, not the exact int's) are refused
 * naming the value, not taken as -1.
 */
static void cf_index_below(void) {
  recorder r = {.fail_at = -1};
  CHECK_OK(load(&r, 1, "outcome"));
  const rec_op *ip = find(&r, "OutIndex", false);
  CHECK(ip != NULL, "OutIndex registered");
  float x[2] = {1, 2};
  int64_t s[1] = {2};
  pyop_tensor in = tensor_f32(x, 1, s), out;
  for (int k = 0; k < 2; k++) {
    pyop_attr_view below[2] = {attr_int("dt", k == 0 ? -1 : 0), attr_int("fm", k == 1 ? -1 : 0)};
    void *h = holder_of(ip, below, 2);
    memset(&out, 0, sizeof out);
    CHECK(infer1(ip, h, &in, 1, ONE, &out, 1) == PYOP_EPYTHON &&
              err_has(k == 0 ? "infer_meta output 0 dtype -1 is out of range [0, "
                             : "infer_meta output 0 format -1 is out of range [0, "),
          "a %s of -1 through __index__: %d dtype %d format %d %s", k == 0 ? "dtype" : "format",
          g_err_status, out.dtype, out.format, g_err);
    ip->cb->destroy_holder(h);
  }
  api->reset();
  rec_clear(&r);
}

/* Waits (up to 30 s) until thread tid of this process is blocked in a
 * read() of fd: a plugin's ctypes.PyDLL read, which holds the GIL from
 * before the call (its pipe write may release it: the byte it wrote says
 * it is near, this says it is there). */
static void cf_wait_blocked(long tid, int fd) {
  char path[64], buf[256], want[64];
  snprintf(path, sizeof path, "/proc/self/task/%ld/syscall", tid);
  snprintf(want, sizeof want, "%d 0x%x ", (int)SYS_read, fd);
  for (int i = 0; i < 3000; i++) {
    FILE *f = fopen(path, "r");
    size_t n = f != NULL ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f != NULL)
      fclose(f);
    buf[n] = '\0';
    if (strncmp(buf, want, strlen(want)) == 0)
      return;
    usleep(10 * 1000);
  }
  CHECK(false, "thread %ld is not blocked reading fd %d: %s", tid, fd, buf);
}

/* The line logged after mark that holds "has waited" (the whole line) into
 * line, polled for up to 30 s; "" when none came. */
static void cf_wait_line(size_t mark, char *line, size_t cap) {
  line[0] = '\0';
  for (int i = 0; i < 600 && line[0] == '\0'; i++) {
    usleep(50 * 1000);
    pthread_mutex_lock(&g_lock);
    const char *p = strstr(g_log_all + mark, "has waited");
    if (p != NULL) {
      while (p > g_log_all + mark && p[-1] != '\n')
        p--; /* from the start of its line */
      snprintf(line, cap, "%.*s", (int)strcspn(p, "\n"), p);
    }
    pthread_mutex_unlock(&g_lock);
  }
}

/* A host thread that loads holding the GIL (running no Python), makes a
 * holder of StExec, then keeps the GIL until told (g_gh: 1 once loaded and
 * holding, 2 to let go). */
static struct {
  recorder r;
  int rc;
  long tid;
  const rec_op *impl;
  void *h;
} g_cf_loader;

static void *cf_loading_holder(void *arg) {
  (void)arg;
  g_cf_loader.tid = (long)syscall(SYS_gettid);
  int st = PyGILState_Ensure();
  g_cf_loader.rc = load(&g_cf_loader.r, 1, "bcstate/exec.py");
  g_cf_loader.impl = find(&g_cf_loader.r, "StExec", true);
  if (g_cf_loader.rc == PYOP_OK && g_cf_loader.impl != NULL &&
      g_cf_loader.impl->cb->create_holder(g_cf_loader.impl->ctx, NULL, 0, &g_cf_loader.h) !=
          PYOP_OK)
    g_cf_loader.h = NULL;
  gh_set(1);
  gh_wait(2);
  PyGILState_Release(st);
  return NULL;
}

/*
 * The watch names the thread a load found keeping the GIL: a host thread
 * loads holding the GIL (running no Python) and keeps it; an execute from
 * another host thread waits, and its line says that thread held it when
 * it called pyop_load (once, naming that thread).
 */
static void cf_watch_kept_by_loader(void) {
  memset(&g_cf_loader, 0, sizeof g_cf_loader);
  g_cf_loader.r.fail_at = -1;
  gh_set(0);
  pthread_mutex_lock(&g_lock);
  size_t mark = g_log_all_len;
  pthread_mutex_unlock(&g_lock);
  pthread_t x, w;
  CHECK(pthread_create(&x, NULL, cf_loading_holder, NULL) == 0, "pthread_create");
  gh_wait(1);
  CHECK(g_cf_loader.rc == PYOP_OK && g_cf_loader.h != NULL,
        "the load and create_holder holding the GIL: %d %s", g_cf_loader.rc, g_err);
  local_call c = {g_cf_loader.impl, g_cf_loader.h, -1};
  CHECK(pthread_create(&w, NULL, one_exec_thread, &c) == 0, "pthread_create");
  char line[1024];
  cf_wait_line(mark, line, sizeof line);
  gh_set(2);
  pthread_join(x, NULL);
  pthread_join(w, NULL);
  CHECK(c.rc == PYOP_OK, "the waiting execute: %d %s", c.rc, g_err);
  char want[200];
  snprintf(want, sizeof want,
           "thread %ld held it while running no Python when it called pyop_load",
           g_cf_loader.tid);
  CHECK(strstr(line, want) != NULL, "the wait line does not say \"%s\": '%s'\n%s", want, line,
        g_log_all + mark);
  g_cf_loader.impl->cb->destroy_holder(g_cf_loader.h);
  api->reset();
  rec_clear(&g_cf_loader.r);
}

/* A host thread that calls StExec once (its kept state made), then CfHold,
 * which keeps the GIL inside the call until the host lets it go. */
typedef struct cf_holding {
  const rec_op *st, *hold, *hold_proto;
  void *sh, *hh;
  long tid;
  int rc_first, rc;
  bool infer;
} cf_holding;

static void *cf_holding_thread(void *arg) {
  cf_holding *c = arg;
  c->tid = (long)syscall(SYS_gettid);
  float x[2] = {7, 8};
  int64_t s[1] = {2};
  pyop_tensor in = tensor_f32(x, 1, s), out;
  outputs o = {0};
  if (c->st != NULL) {
    c->rc_first = exec1(c->st, c->sh, &in, 1, ONE, 1, &o);
    outputs_free(&o);
  }
  if (c->infer)
    c->rc = infer1(c->hold_proto, c->hh, &in, 1, ONE, &out, 1);
  else
    c->rc = exec1(c->hold, c->hh, &in, 1, ONE, 1, &o);
  outputs_free(&o);
  return NULL;
}

/* One infer_meta of StExec's prototype (local_call's impl) from a new host
 * thread. */
static void *cf_infer_thread(void *arg) {
  local_call *c = arg;
  float x[2] = {7, 8};
  int64_t s[1] = {2};
  pyop_tensor in = tensor_f32(x, 1, s), out;
  c->rc = infer1(c->impl, c->h, &in, 1, ONE, &out, 1);
  return NULL;
}

/*
 * A host thread inside a libpyop call keeps the GIL (plugins/cfstate,
 * CfHold): the line of an execute waiting on another host thread names
 * that thread and the kind of call it is in, and begins with the waiting
 * call. Three ways: its first call (its kept state made in the call), a
 * call after an earlier one (the kept state's path), an infer_meta (the
 * first kind) instead of an execute, both the holder's and the waiter's.
 */
static void cf_watch_holder_in_call(int way) {
  recorder r = {.fail_at = -1};
  CHECK_OK(load(&r, 2, "bcstate/exec.py", "cfstate/hold.py"));
  const rec_op *st = find(&r, "StExec", true);
  cf_holding c = {way == 1 ? st : NULL, find(&r, "CfHold", true), find(&r, "CfHold", false),
                  NULL, NULL, 0, -1, -1, way == 2};
  CHECK(st != NULL && c.hold != NULL && c.hold_proto != NULL, "StExec and CfHold registered");
  const rec_op *stp = find(&r, "StExec", false);
  CHECK(stp != NULL, "StExec's prototype registered");
  void *sh = holder_of(st, NULL, 0), *sph = holder_of(stp, NULL, 0);
  c.sh = sh;
  c.hh = holder_of(way == 2 ? c.hold_proto : c.hold, NULL, 0);
  int ready[2], release[2];
  CHECK(pipe(ready) == 0 && pipe(release) == 0, "pipe");
  char code[200];
  snprintf(code, sizeof code, "import sys; sys._cf_pipes = (%d, %d)", ready[1], release[0]);
  CHECK(py_ok(code), "the pipes");
  pthread_mutex_lock(&g_lock);
  size_t mark = g_log_all_len;
  pthread_mutex_unlock(&g_lock);
  pthread_t a, w;
  CHECK(pthread_create(&a, NULL, cf_holding_thread, &c) == 0, "pthread_create");
  char b;
  CHECK(read(ready[0], &b, 1) == 1, "CfHold's call did not start");
  cf_wait_blocked(c.tid, release[0]);
  local_call wc = {way == 2 ? stp : st, way == 2 ? sph : sh, -1};
  CHECK(pthread_create(&w, NULL, way == 2 ? cf_infer_thread : one_exec_thread, &wc) == 0,
        "pthread_create");
  char line[1024];
  cf_wait_line(mark, line, sizeof line);
  CHECK(write(release[1], "x", 1) == 1, "release CfHold");
  pthread_join(a, NULL);
  pthread_join(w, NULL);
  CHECK((way != 1 || c.rc_first == PYOP_OK) && c.rc == PYOP_OK && wc.rc == PYOP_OK,
        "the calls (way %d): %d %d %d %s", way, c.rc_first, c.rc, wc.rc, g_err);
  char want[200];
  snprintf(want, sizeof want, "Thread %ld holds it, inside a libpyop call (%s)", c.tid,
           way == 2 ? "infer_meta" : "execute");
  CHECK(strstr(line, want) != NULL, "way %d: the wait line does not say \"%s\": '%s'\n%s", way,
        want, line, g_log_all + mark);
  const char *waiter = way == 2 ? "infer_meta of op 'StExec' on thread "
                                : "execute of op 'StExec' on thread ";
  CHECK(strncmp(line, waiter, strlen(waiter)) == 0,
        "way %d: the wait line does not begin with \"%s\": '%s'", way, waiter, line);
  CHECK(py_ok("import sys; del sys._cf_pipes"), "clean up");
  for (int i = 0; i < 2; i++) {
    close(ready[i]);
    close(release[i]);
  }
  st->cb->destroy_holder(sh);
  stp->cb->destroy_holder(sph);
  (way == 2 ? c.hold_proto : c.hold)->cb->destroy_holder(c.hh);
  api->reset();
  rec_clear(&r);
}

/*
 * pyop.TensorDesc's fields are TensorDescBase's C members: copy.copy,
 * copy.deepcopy and a pickle round trip of a TensorDesc keep its shape,
 * dtype and format (they see the members as slots).
 */
static void cf_desc_copy(void) {
  recorder r = {.fail_at = -1};
  CHECK_OK(load(&r, 1, "loadstate/plain.py"));
  CHECK(py_ok("import copy, pickle, sys\n"
              "pyop = sys.modules['pyop']\n"
              "d = pyop.TensorDesc((2, 3), pyop.DataType.int8, pyop.Format(1))\n"
              "for c in (copy.copy(d), copy.deepcopy(d), pickle.loads(pickle.dumps(d))):\n"
              "    assert type(c) is pyop.TensorDesc and c is not d, c\n"
              "    assert (c.shape, c.dtype, c.format) == ((2, 3), pyop.DataType.int8,\n"
              "                                            pyop.Format(1)), c\n"
              "del d, c, pyop\n"),
        "a copy of a TensorDesc lost its fields");
  api->reset();
  rec_clear(&r);
}

/*
 * An artifact directory whose name is not UTF-8 (the byte 0xff): the
 * package is imported from it (its path decoded as the file system's
 * name), and a load works.
 */
static void cf_artifact_undecodable(void) {
  char dir[] = "/tmp/pyop_cf_\xff" "art_XXXXXX";
  CHECK(mkdtemp(dir) != NULL, "mkdtemp");
  char cmd[9000];
  snprintf(cmd, sizeof cmd, "cp -R '%s/python' '%s/'", g_artifact, dir);
  CHECK(system(cmd) == 0, "%s", cmd);
  recorder r = {.fail_at = -1};
  loadstate_restart(dir);
  CHECK(load(&r, 1, "loadstate/plain.py") == PYOP_OK && r.n == 1,
        "a load with an artifact directory whose name is not UTF-8: %d %s", g_err_status, g_err);
  api->reset();
  rec_clear(&r);
  loadstate_restart(g_artifact);
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  CHECK(system(cmd) == 0, "%s", cmd);
}

/*
 * A load and a reset whose plugins changed no signal disposition: the
 * reset restores nothing (no line says it did) and leaves Python's own
 * table as it was (the host's SIGINT and SIGTERM entries).
 */
static void cf_signals_untouched(void) {
  CHECK(py_ok("import signal\n"
              "_cf_sig = (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM))\n"
              "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"),
        "the host's SIGTERM");
  recorder r = {.fail_at = -1};
  CHECK_OK(load(&r, 1, "loadstate/plain.py"));
  log_all_clear();
  api->reset();
  CHECK(strstr(g_log_all, "restored the host's handler") == NULL,
        "a reset after plugins that changed no signal restored handlers:\n%s", g_log_all);
  CHECK(py_ok("import signal\n"
              "assert signal.getsignal(signal.SIGINT) is _cf_sig[0], signal.getsignal(signal.SIGINT)\n"
              "assert signal.getsignal(signal.SIGTERM) == signal.SIG_IGN\n"
              "signal.signal(signal.SIGTERM, _cf_sig[1])\n"
              "del _cf_sig\n"),
        "a reset changed Python's signal table though no plugin had");
  rec_clear(&r);
}

/* The host's helper while its main thread is inside CfHold (cf_helper):
 * once that thread blocks holding the GIL, an execute of StExec waits on
 * another thread; the watch's line for it is read, then CfHold released. */
typedef struct cf_helper {
  long holder_tid;
  int ready_r, release_r, release_w;
  const rec_op *st;
  void *sh;
  size_t mark;
  char line[1024];
  int rc;
} cf_helper;

static void *cf_helper_thread(void *arg) {
  cf_helper *h = arg;
  char b;
  if (read(h->ready_r, &b, 1) != 1)
    return NULL;
  cf_wait_blocked(h->holder_tid, h->release_r);
  local_call wc = {h->st, h->sh, -1};
  pthread_t w;
  if (pthread_create(&w, NULL, one_exec_thread, &wc) == 0) {
    cf_wait_line(h->mark, h->line, sizeof h->line);
    (void)!write(h->release_w, "x", 1);
    pthread_join(w, NULL);
    h->rc = wc.rc;
  } else {
    (void)!write(h->release_w, "x", 1);
  }
  return NULL;
}

/*
 * The holder is a host thread with a Python thread state of its own (the
 * main thread, which initialised Python: PyGILState's path, not a kept
 * state): the watch's line names it inside its call.
 */
static void cf_watch_holder_own_state(void) {
  recorder r = {.fail_at = -1};
  CHECK_OK(load(&r, 2, "bcstate/exec.py", "cfstate/hold.py"));
  const rec_op *st = find(&r, "StExec", true), *hold = find(&r, "CfHold", true);
  CHECK(st != NULL && hold != NULL, "StExec and CfHold registered");
  void *sh = holder_of(st, NULL, 0), *hh = holder_of(hold, NULL, 0);
  int ready[2], release[2];
  CHECK(pipe(ready) == 0 && pipe(release) == 0, "pipe");
  char code[200];
  snprintf(code, sizeof code, "import sys; sys._cf_pipes = (%d, %d)", ready[1], release[0]);
  CHECK(py_ok(code), "the pipes");
  cf_helper h = {(long)syscall(SYS_gettid), ready[0], release[0], release[1], st, sh, 0, "", -1};
  pthread_mutex_lock(&g_lock);
  h.mark = g_log_all_len;
  pthread_mutex_unlock(&g_lock);
  pthread_t ht;
  CHECK(pthread_create(&ht, NULL, cf_helper_thread, &h) == 0, "pthread_create");
  float x[2] = {7, 8};
  int64_t s[1] = {2};
  pyop_tensor in = tensor_f32(x, 1, s);
  outputs o = {0};
  int rc = exec1(hold, hh, &in, 1, ONE, 1, &o);
  outputs_free(&o);
  pthread_join(ht, NULL);
  CHECK(rc == PYOP_OK && h.rc == PYOP_OK, "the executes: %d %d %s", rc, h.rc, g_err);
  char want[200];
  snprintf(want, sizeof want, "Thread %ld holds it, inside a libpyop call (execute)",
           h.holder_tid);
  CHECK(strstr(h.line, want) != NULL, "the wait line does not say \"%s\": '%s'\n%s", want,
        h.line, g_log_all + h.mark);
  CHECK(py_ok("import sys; del sys._cf_pipes"), "clean up");
  for (int i = 0; i < 2; i++) {
    close(ready[i]);
    close(release[i]);
  }
  st->cb->destroy_holder(sh);
  hold->cb->destroy_holder(hh);
  api->reset();
  rec_clear(&r);
}

/*
 * The host finalizes its Python (and starts a new one) while a load of
 * the bridge is in place: interpreter_status says so, a load in that
 * session is refused (PYOP_ENOTINIT, saying the interpreter the ops were
 * loaded into is gone) without touching the new Python, reset forgets; a
 * shutdown and a new session load again.
 */
static void cf_load_after_finalize(void) {
  recorder r = {.fail_at = -1};
  CHECK_OK(load(&r, 1, "loadstate/plain.py"));
  rec_clear(&r);
  bcstate_host_restarts_python();
  CHECK(api->interpreter_status() == PYOP_ENOTINIT, "the host's finalize not seen");
  CHECK(load(&r, 1, "loadstate/plain.py") == PYOP_ENOTINIT &&
            err_has("loading Python plugins: the Python interpreter the ops were loaded into "
                    "has been finalized"),
        "a load after the host finalized the session's Python: %d %s", g_err_status, g_err);
  CHECK(r.n == 0, "registered %zu descriptors from a finalized session", r.n);
  CHECK(py_ok("import sys\nassert 'pyop' not in sys.modules, sys.modules['pyop']\n"),
        "the refused load imported the package into the new Python");
  api->reset();
  bcstate_renegotiate();
  CHECK_OK(load(&r, 1, "loadstate/plain.py"));
  CHECK(r.n == 1, "a load in a new session");
  api->reset();
  rec_clear(&r);
}

/* The configuration pass's checks (session 12, cflife): each names the bug
 * it catches in tests/mutation/mutants.txt (bridge.cf.*). */
/* The task ids of this process (at most n) into ids; how many. */
static size_t df_tasks(long *ids, size_t n) {
  DIR *d = opendir("/proc/self/task");
  CHECK(d != NULL, "opendir /proc/self/task");
  size_t k = 0;
  for (struct dirent *e; (e = readdir(d)) != NULL && k < n;)
    if (e->d_name[0] != '.')
      ids[k++] = atol(e->d_name);
  closedir(d);
  return k;
}

/* SigBlk of task tid (the signals it blocks, bit s-1 for signal s). */
static unsigned long long df_task_blocked(long tid) {
  char path[64], line[256];
  snprintf(path, sizeof path, "/proc/self/task/%ld/status", tid);
  FILE *f = fopen(path, "r");
  CHECK(f != NULL, "fopen %s", path);
  unsigned long long m = 0;
  while (fgets(line, sizeof line, f) != NULL)
    if (strncmp(line, "SigBlk:", 7) == 0)
      m = strtoull(line + 7, NULL, 16);
  fclose(f);
  return m;
}

typedef struct df_sig_load {
  int rc;
  sigset_t before, after; /* the loading thread's mask around its load */
} df_sig_load;

static void *df_sig_load_thread(void *arg) {
  df_sig_load *l = arg;
  recorder r = {.fail_at = -1};
  pthread_sigmask(SIG_SETMASK, NULL, &l->before);
  l->rc = load(&r, 1, "loadstate/plain.py");
  pthread_sigmask(SIG_SETMASK, NULL, &l->after);
  api->reset();
  rec_clear(&r);
  return NULL;
}

/*
 * The GIL watch thread, started by the first call of a host thread without
 * a Python state of its own, blocks the host's signals (they go to the
 * host's threads), and the host thread whose call started it keeps its own
 * mask (dataflow pass, session 13). The watch is the one task the load
 * added (it is this process's first kept thread state).
 */
static void df_watch_signals(void) {
  long before[64], after[64];
  size_t n_before = df_tasks(before, 64);
  df_sig_load l = {0};
  pthread_t t;
  CHECK(pthread_create(&t, NULL, df_sig_load_thread, &l) == 0, "pthread_create");
  pthread_join(t, NULL);
  CHECK(l.rc == PYOP_OK, "the load from a host thread: %d %s", l.rc, g_err);
  static const int sigs[] = {SIGHUP, SIGINT, SIGQUIT, SIGUSR1, SIGUSR2, SIGPIPE,
                             SIGALRM, SIGTERM, SIGCHLD};
  for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
    CHECK(sigismember(&l.after, sigs[i]) == sigismember(&l.before, sigs[i]),
          "the load changed its host thread's mask of signal %d", sigs[i]);
  size_t n_after = df_tasks(after, 64);
  size_t added = 0;
  for (size_t i = 0; i < n_after; i++) {
    bool old = false;
    for (size_t j = 0; j < n_before; j++)
      old = old || before[j] == after[i];
    if (old)
      continue;
    added++;
    unsigned long long m = df_task_blocked(after[i]);
    for (size_t k = 0; k < sizeof sigs / sizeof sigs[0]; k++)
      CHECK((m >> (sigs[k] - 1)) & 1, "the watch thread %ld takes signal %d (SigBlk %llx)",
            after[i], sigs[k], m);
  }
  CHECK(added == 1, "the load added %zu tasks (the GIL watch alone expected)", added);
}

static void case_cfstate(void) {
  df_watch_signals();
  cf_config_twice();
  cf_desc_layouts();
  cf_desc_copy();
  cf_artifact_undecodable();
  cf_signals_untouched();
  cf_guard();
  cf_index_below();
  cf_watch_kept_by_loader();
  for (int way = 0; way < 3; way++)
    cf_watch_holder_in_call(way);
  cf_watch_holder_own_state();
  cf_load_after_finalize();
}

/*
 * Two sessions of one bridge image in the Python it started
 * (PYOP_BRIDGE_START_PYTHON, no host Python): the first shutdown, whose
 * plugin left no thread, names none; the second set_config finds
 * that Python running and uses it (it does not own it: its shutdown waits
 * for no interpreter thread of the first), and it knows the Python as
 * libpyop's from the interpreter's state dict: the GIL watch's line for a
 * call waiting on a Python thread says libpyop started this Python, and
 * its shutdown names the thread a plugin of the second session left
 * running. SIGALRM ends the
 * process if a shutdown waits for an interpreter thread that is gone.
 */
static void case_cfstart(void) {
  alarm(120);
  CHECK(!Py_IsInitialized(), "no Python yet");
  CHECK_OK(configure(PYOP_BRIDGE_START_PYTHON));
  recorder r = {.fail_at = -1};
  CHECK_OK(load(&r, 1, "loadstate/plain.py"));
  rec_clear(&r);
  log_all_clear();
  api->shutdown();
  CHECK(Py_IsInitialized(), "the Python libpyop started stays");
  CHECK(strstr(g_log_all, "are still running at pyop_shutdown") == NULL &&
            strstr(g_log_all, "could not list the Python threads") == NULL,
        "a shutdown whose plugins left no thread running names threads:\n%s", g_log_all);
  pyop_bridge_entry_fn entry =
      (pyop_bridge_entry_fn)dlsym(bridge_handle, PYOP_BRIDGE_ENTRY_SYMBOL);
  pyop_bridge_request req = {sizeof req, PYOP_BRIDGE_ABI_MAJOR, PYOP_BRIDGE_ABI_MINOR, &g_services};
  CHECK_OK(entry(&req, &api));
  CHECK_OK(configure(PYOP_BRIDGE_START_PYTHON));
  CHECK_OK(load(&r, 2, "loadstate/threads.py", "bcstate/exec.py"));
  CHECK(find(&r, "OutThreads", false) != NULL, "OutThreads registered");
  /* A Python thread (no host thread) keeps the GIL running C: the line of
   * an execute waiting for it says libpyop started this Python. */
  const rec_op *st = find(&r, "StExec", true);
  CHECK(st != NULL, "StExec registered");
  void *sh = holder_of(st, NULL, 0);
  int ready[2], release[2];
  CHECK(pipe(ready) == 0 && pipe(release) == 0, "pipe");
  char code[1024];
  snprintf(code, sizeof code,
           "import ctypes, os, threading\n"
           "def _cf_hog():\n"
           "    os.read(%d, 1)\n"
           "    os.write(%d, b'%%8d' %% threading.get_native_id())\n"
           "    ctypes.PyDLL(None).read(%d, ctypes.create_string_buffer(1), 1)\n"
           "_cf_t = threading.Thread(target=_cf_hog, name='cf-hog', daemon=True)\n"
           "_cf_t.start()\n",
           release[0], ready[1], release[0]);
  CHECK(py_ok(code), "the Python thread");
  /* It keeps the GIL once told to, after this thread's Python code ended. */
  CHECK(write(release[1], "g", 1) == 1, "the Python thread's go");
  char tidtext[9] = "";
  CHECK(read(ready[0], tidtext, 8) == 8, "the Python thread did not start");
  cf_wait_blocked(atol(tidtext), release[0]);
  pthread_mutex_lock(&g_lock);
  size_t mark = g_log_all_len;
  pthread_mutex_unlock(&g_lock);
  local_call wc = {st, sh, -1};
  pthread_t w;
  CHECK(pthread_create(&w, NULL, one_exec_thread, &wc) == 0, "pthread_create");
  char line[1024];
  cf_wait_line(mark, line, sizeof line);
  CHECK(write(release[1], "x", 1) == 1, "release the Python thread");
  pthread_join(w, NULL);
  CHECK(wc.rc == PYOP_OK, "the waiting execute: %d %s", wc.rc, g_err);
  CHECK(strstr(line, "libpyop, which started this Python, released it after start-up") != NULL,
        "the second session's wait line does not take the Python for libpyop's: '%s'\n%s",
        line, g_log_all + mark);
  CHECK(py_ok("_cf_t.join(); del _cf_t, _cf_hog"), "the Python thread ends");
  for (int i = 0; i < 2; i++) {
    close(ready[i]);
    close(release[i]);
  }
  st->cb->destroy_holder(sh);
  rec_clear(&r);
  log_all_clear();
  api->shutdown();
  CHECK(strstr(g_log_all, "Python thread(s) 'loadstate-worker' (ident ") != NULL,
        "the second session's shutdown did not take the Python for libpyop's:\n%s", g_log_all);
  CHECK(py_ok("import sys, threading\n"
              "sys._loadstate_stop.set()\n"
              "for t in threading.enumerate():\n"
              "    if t.name.startswith('loadstate-'):\n"
              "        t.join()\n"
              "del sys._loadstate_stop\n"),
        "the plugin's threads end");
  alarm(0);
  dlclose(bridge_handle);
}

/*
 * The Python libpyop started (PYOP_BRIDGE_START_PYTHON, no host Python)
 * finalized by someone else (here the host, through the symbols the
 * process has): the bridge takes it for lost (interpreter_status
 * PYOP_ENOTINIT, a load refused), and its shutdown says so at warn level
 * and ends the interpreter thread it started (process C pass, session 17:
 * bridge.ppr.entry.lost_owned_unwarned dropped the line). SIGALRM ends the
 * process if the shutdown waits for that thread.
 */
static void case_start_lost(void) {
  alarm(120);
  CHECK(!Py_IsInitialized(), "no Python yet");
  CHECK_OK(configure(PYOP_BRIDGE_START_PYTHON));
  recorder r = {.fail_at = -1};
  CHECK_OK(load(&r, 1, "loadstate/plain.py"));
  rec_clear(&r);
  CHECK(api->interpreter_status() == PYOP_OK, "interpreter_status while it runs");
  /* The interpreter thread, by its native id (threading's main thread). */
  int tid_pipe[2];
  CHECK(pipe(tid_pipe) == 0, "pipe");
  char code[256];
  snprintf(code, sizeof code,
           "import os, threading\n"
           "os.write(%d, b'%%12d' %% threading.main_thread().native_id)\n",
           tid_pipe[1]);
  CHECK(py_ok(code), "the interpreter thread's id");
  char tidtext[13] = "";
  CHECK(read(tid_pipe[0], tidtext, 12) == 12, "the interpreter thread's id");
  close(tid_pipe[0]);
  close(tid_pipe[1]);
  long interp_tid = atol(tidtext);
  CHECK(interp_tid > 0, "the interpreter thread's id");
  char task[64];
  snprintf(task, sizeof task, "/proc/self/task/%ld", interp_tid);
  CHECK(access(task, F_OK) == 0, "test bug: no interpreter thread %ld", interp_tid);
  /* Someone else finalizes it, from this host thread: threading's
   * shutdown (which would wait for its main thread, the interpreter
   * thread, to end) is skipped. */
  CHECK(py_ok("import threading\nthreading._shutdown = lambda: None\n"), "threading");
  PyGILState_Ensure();
  CHECK(Py_FinalizeEx() == 0, "finalize the Python libpyop started");
  CHECK(api->interpreter_status() == PYOP_ENOTINIT,
        "interpreter_status after the Python libpyop started was finalized");
  clear_error();
  CHECK(load(&r, 1, "loadstate/plain.py") == PYOP_ENOTINIT && err_has("finalized"),
        "a load after the Python libpyop started was finalized: %s", g_err);
  log_all_clear();
  api->shutdown();
  CHECK(strstr(g_log_all, "the Python libpyop started was finalized by someone else") != NULL,
        "the shutdown does not say the Python libpyop started was finalized:\n%s", g_log_all);
  CHECK(access(task, F_OK) != 0, "the interpreter thread still runs after shutdown");
  alarm(0);
  dlclose(bridge_handle);
}

/*
 * Second configurations of the call path (plugins/configs, issue 31's
 * configuration pass):
 * - one instance's optional input given, then absent (count 0, the host's
 *   items pointer still at the tensor it gave before: the count says
 *   absent), then given again: y is its value, None, its value (the reused
 *   Tensor of the first call is not handed out for an absent input);
 * - an op of 33 arguments (10 inputs, 23 attributes: one more than the
 *   bridge's stack room) called twice on the same tensors with new values
 *   (the second call reuses all ten cached Tensors, two more than a
 *   frame's first room): each input's value and every attribute, in
 *   order, both times;
 * - views kept of two inputs: releasing the last one alone leaves the
 *   instance refused (the first still lives), releasing both lets it run;
 *   Tensors kept (not their buffers) are each invalid after the call, the
 *   output made last too, also when views of the inputs outlived it;
 * - _native.registered_proto of a host prototype without a proto_key or an
 *   op_type is None, each found prototype released once; with a host
 *   prototype whose last output is dynamic, an output index past the last
 *   names that output in its hint; a loader with find_proto but no
 *   release_proto is asked for none;
 * - an op without inputs: execute given no input list (NULL, 0) runs;
 * - infer_meta that assigns its input description's shape (dims and dtype
 *   unchanged): the next calls on the instance see the host's shape again;
 * - infer_meta's third result of three with a bad dtype: the call fails
 *   naming output 2;
 * - a mutated input that no output aliases: the proto view gives
 *   input_flags, and no output_alias (NULL, not -1 for each output);
 * - the execute context: format=None is the default format; a shape of
 *   PYOP_MAX_DIMS dimensions and one given as an iterator are taken; an
 *   input whose buffer is larger than its shape is viewed at its shape's
 *   size; the context used from another thread of the plugin is refused
 *   there; a refused make_output_ref_input(1, 0) names output 1 and
 *   input 0, with the host's status; an empty workspace from a host
 *   that gives it no memory is a valid empty Tensor; a launch of an empty library name reaches the host as it is
 *   (not made a path), an input index of 2**32 - 1 too; a subclass of
 *   KeyboardInterrupt the op raises is an interrupt (PYOP_EINTR).
 */
static int g_cf_finds, g_cf_releases;
static pyop_op_info g_cf_info[3];

static int cf_find_proto(pyop_str op_type, const pyop_op_info **out) {
  *out = NULL;
  static const char *const names[3] = {"Keyless", "Typeless", "CfCtx"};
  for (int i = 0; i < 3; i++)
    if (op_type.len == strlen(names[i]) && memcmp(op_type.data, names[i], op_type.len) == 0) {
      g_cf_finds++;
      *out = &g_cf_info[i];
      return PYOP_OK;
    }
  return PYOP_ENOENT;
}

static void cf_release_proto(const pyop_op_info *info) {
  (void)info;
  g_cf_releases++;
}

static void cf_ctx_call(const rec_op *impl, const char *what, int status);
static size_t g_cf_n_out = 1; /* the outputs cf_exec's calls have */

/* And an output index past the last of CfCtx's two (out, then the dynamic
 * parts: its host prototype) names the last one as dynamic. */
static void configs_registered_proto(const rec_op *ctx) {
  pyop_bridge_entry_fn entry =
      (pyop_bridge_entry_fn)dlsym(bridge_handle, PYOP_BRIDGE_ENTRY_SYMBOL);
  CHECK(entry != NULL, "no entry symbol");
  static const pyop_io_info ins[1] = {{"x", PYOP_IO_REQUIRED}}, outs[1] = {{"y", PYOP_IO_REQUIRED}};
  static const pyop_io_info outs2[2] = {{"out", PYOP_IO_REQUIRED}, {"parts", PYOP_IO_DYNAMIC}};
  memset(g_cf_info, 0, sizeof g_cf_info);
  g_cf_info[0] = (pyop_op_info){sizeof g_cf_info[0], "Keyless", NULL, "<host>", NULL, NULL,
                                ins, 1, outs, 1, NULL, 0, PYOP_CAP_INFER_META, NULL, NULL};
  g_cf_info[1] = (pyop_op_info){sizeof g_cf_info[1], NULL, "host:typeless", "<host>", NULL,
                                NULL, ins, 1, outs, 1, NULL, 0, PYOP_CAP_INFER_META, NULL,
                                NULL};
  g_cf_info[2] = (pyop_op_info){sizeof g_cf_info[2], "CfCtx", "host:cfctx", "<host>", NULL,
                                NULL, ins, 1, outs2, 2, NULL, 0,
                                PYOP_CAP_INFER_META | PYOP_CAP_EXECUTE, NULL, NULL};
  pyop_loader_services svc = {sizeof svc, svc_set_error, svc_log, cf_find_proto,
                              cf_release_proto, NULL};
  const pyop_bridge_api *a = NULL;
  pyop_bridge_request req = {sizeof req, PYOP_BRIDGE_ABI_MAJOR, PYOP_BRIDGE_ABI_MINOR, &svc};
  CHECK_OK(entry(&req, &a));
  g_cf_finds = g_cf_releases = 0;
  CHECK(py_ok("import sys\n"
              "rp = sys.modules['pyop._native'].registered_proto\n"
              "assert rp('Keyless') is None, rp('Keyless')\n"
              "assert rp('Typeless') is None, rp('Typeless')\n"
              "del rp\n"),
        "a host prototype without a key or an op type is no prototype");
  CHECK(g_cf_finds == 2 && g_cf_releases == 2, "found %d prototypes, released %d", g_cf_finds,
        g_cf_releases);
  g_cf_n_out = 2;
  cf_ctx_call(ctx, "out_past", PYOP_OK);
  g_cf_n_out = 1;
  CHECK(py_ok("import builtins\n"
              "R = builtins._pyop_configs\n"
              "want = ('output index 2 out of range (the op has 2 outputs); output 1 '\n"
              "        \"'parts' is dynamic: call malloc_output_tensor(1, ...) again for its \"\n"
              "        'next tensor')\n"
              "assert R['out_past'] == want, R['out_past']\n"
              "del R, want\n"),
        "the hint names the last output, dynamic");
  CHECK(g_cf_finds == 3 && g_cf_releases == 3, "found %d prototypes, released %d", g_cf_finds,
        g_cf_releases);
  /* A loader with find_proto but no release_proto: none is looked up (it
   * could not be released). */
  svc.release_proto = NULL;
  CHECK_OK(entry(&req, &a));
  CHECK(py_ok("import sys\n"
              "assert sys.modules['pyop._native'].registered_proto('CfCtx') is None\n"),
        "registered_proto without release_proto");
  CHECK(g_cf_finds == 3, "find_proto called without release_proto (%d)", g_cf_finds);
  req.services = &g_services; /* back to what the other cases use */
  CHECK_OK(entry(&req, &a));
}

/* A host whose workspaces have no memory (and succeed). */
static int cf_ws_null(void *ctx, uint64_t nbytes, void **out) {
  (void)ctx;
  (void)nbytes;
  *out = NULL;
  return PYOP_OK;
}

static bool g_cf_ws_null; /* cf_exec's host gives workspaces no memory */
static bool g_cf_alias;   /* cf_exec's host has alias_output (odd_alias_output) */

static int32_t g_cf_last_format; /* output 0's format at cf_exec's host */

static int cf_exec(const rec_op *impl, void *h, pyop_tensor_list *lists, size_t n) {
  outputs o = {0};
  pyop_exec_services svc = {sizeof svc, &o, alloc_output,
                            g_cf_ws_null ? cf_ws_null : alloc_workspace,
                            g_cf_alias ? odd_alias_output : NULL};
  pyop_exec_args a = {sizeof a, lists, n, g_cf_n_out, &svc, NULL, NULL};
  clear_error();
  int rc = impl->cb->execute(h, &a);
  g_cf_last_format = o.t[0].format;
  outputs_free(&o);
  return rc;
}

/* One execute of CfCtx (what) on a float32[2] input: its status must be
 * status. */
static uint64_t g_cf_extra_bytes; /* cf_ctx_call's input buffer has these more */

static void cf_ctx_call(const rec_op *impl, const char *what, int status) {
  float x[4] = {1, 2, 0, 0};
  int64_t s[1] = {2};
  pyop_tensor in = tensor_f32(x, 1, s);
  in.nbytes += g_cf_extra_bytes;
  pyop_tensor_list lists[1] = {{&in, 1}};
  pyop_attr_view a = attr_str("what", what);
  void *h = holder_of(impl, &a, 1);
  int rc = cf_exec(impl, h, lists, 1);
  CHECK(rc == status, "CfCtx %s: %d (want %d) %s", what, rc, status, g_err);
  impl->cb->destroy_holder(h);
}

static void case_configs(void) {
  recorder r = {.fail_at = -1};
  CHECK_OK(load(&r, 1, "configs"));
  const rec_op *opt = find(&r, "CfOpt", true), *wide = find(&r, "CfWide", true),
               *keep = find(&r, "CfKeep", true);
  CHECK(opt && wide && keep, "ops registered");
  int64_t s2[1] = {2};

  /* The last of three results with a bad dtype: the call fails naming it. */
  {
    const rec_op *trio = find(&r, "CfTrio", false);
    CHECK(trio != NULL, "CfTrio registered");
    void *h = holder_of(trio, NULL, 0);
    float x[2] = {1, 2};
    pyop_tensor in = tensor_f32(x, 1, s2), outs[3];
    memset(outs, 0, sizeof outs);
    int rc = infer1(trio, h, &in, 1, ONE, outs, 3);
    CHECK(rc == PYOP_EPYTHON && err_has("infer_meta output 2 dtype") &&
              !err_has("output 0") && !err_has("output 1"),
          "CfTrio: %d %s", rc, g_err);
    trio->cb->destroy_holder(h);
  }

  /* An op without inputs: execute takes no input list (NULL). */
  {
    const rec_op *none = find(&r, "CfNone", true);
    CHECK(none != NULL, "CfNone registered");
    pyop_attr_view n = attr_int("n", 3);
    void *h = holder_of(none, &n, 1);
    CHECK_OK(cf_exec(none, h, NULL, 0));
    none->cb->destroy_holder(h);
    CHECK(py_ok("import builtins; assert builtins._pyop_configs.pop('none') == 3"),
          "CfNone ran");
  }

  /* infer_meta assigning its input description's shape: the next call on
   * the instance (same input) still sees the host's. */
  {
    const rec_op *scr = find(&r, "CfScribble", false);
    CHECK(scr != NULL, "CfScribble registered");
    void *h = holder_of(scr, NULL, 0);
    float x[2] = {1, 2};
    pyop_tensor in = tensor_f32(x, 1, s2), out;
    for (int i = 0; i < 3; i++) {
      memset(&out, 0, sizeof out);
      CHECK_OK(infer1(scr, h, &in, 1, ONE, &out, 1));
      CHECK(out.ndim == 1 && out.shape[0] == 2 && out.dtype == PYOP_DTYPE_FLOAT32,
            "CfScribble call %d: ndim %d dim %lld dtype %d", i, out.ndim,
            (long long)out.shape[0], out.dtype);
    }
    scr->cb->destroy_holder(h);
    CHECK(py_ok("import builtins, pyop\n"
                "seen = builtins._pyop_configs.pop('seen')\n"
                "want = ((2,), pyop.DataType.float32, pyop.Format.ND)\n"
                "assert seen == [want] * 3, seen\n"
                "del seen, want, pyop\n"),
          "each call's input description is the host's");
  }

  /* A mutated input no output aliases: flags given, no alias array. */
  {
    const rec_op *mut = find(&r, "CfMut", false);
    CHECK(mut != NULL && mut->has_flags && mut->in_flags[0] == PYOP_INPUT_MUTATED &&
              !mut->has_alias,
          "CfMut: flags %d (%u), alias %d (%d)", mut ? mut->has_flags : -1,
          mut ? mut->in_flags[0] : 0, mut ? mut->has_alias : -1, mut ? mut->alias[0] : 0);
  }

  /* An optional input given, absent (its items pointer left), given. */
  {
    float x[2] = {1, 2}, y[2] = {7, 8};
    pyop_tensor t[2] = {tensor_f32(x, 1, s2), tensor_f32(y, 1, s2)};
    pyop_tensor_list lists[2] = {{&t[0], 1}, {&t[1], 1}};
    void *h = holder_of(opt, NULL, 0);
    CHECK_OK(cf_exec(opt, h, lists, 2));
    lists[1].count = 0; /* absent: the count says so, whatever items points at */
    CHECK_OK(cf_exec(opt, h, lists, 2));
    lists[1].count = 1;
    CHECK_OK(cf_exec(opt, h, lists, 2));
    opt->cb->destroy_holder(h);
    CHECK(py_ok("import builtins\n"
                "R = builtins._pyop_configs\n"
                "assert R['opt'] == [7.0, None, 7.0], R['opt']\n"
                "R['opt'].clear()\n"
                "del R\n"),
          "CfOpt's y per call");
  }

  /* 33 arguments, ten cached Tensors reused. */
  {
    char names[23][8];
    pyop_attr_view attrs[23];
    for (int i = 0; i < 23; i++) {
      snprintf(names[i], sizeof names[i], "a%d", i);
      attrs[i] = attr_int(names[i], 100 + i);
    }
    float x[10][2];
    pyop_tensor t[10];
    pyop_tensor_list lists[10];
    for (int i = 0; i < 10; i++) {
      x[i][0] = (float)(i + 1);
      x[i][1] = 0;
      t[i] = tensor_f32(x[i], 1, s2);
      lists[i] = (pyop_tensor_list){&t[i], 1};
    }
    void *h = holder_of(wide, attrs, 23);
    CHECK_OK(cf_exec(wide, h, lists, 10));
    for (int i = 0; i < 10; i++)
      x[i][0] = (float)(10 * (i + 1)); /* the same tensors, new values */
    CHECK_OK(cf_exec(wide, h, lists, 10));
    CHECK_OK(cf_exec(wide, h, lists, 10));
    wide->cb->destroy_holder(h);
    CHECK(py_ok("import builtins\n"
                "R = builtins._pyop_configs\n"
                "a = list(range(100, 123))\n"
                "first = [float(i) for i in range(1, 11)]\n"
                "then = [float(10 * i) for i in range(1, 11)]\n"
                "assert R['wide'] == [(first, a), (then, a), (then, a)], R['wide']\n"
                "R['wide'].clear()\n"
                "del R, a, first, then\n"),
          "CfWide's inputs and attributes per call");
  }

  /* Views kept of both inputs, released last first. */
  {
    float x[2] = {1, 2}, y[2] = {3, 4};
    pyop_tensor t[2] = {tensor_f32(x, 1, s2), tensor_f32(y, 1, s2)};
    pyop_tensor_list lists[2] = {{&t[0], 1}, {&t[1], 1}};
    void *h = holder_of(keep, NULL, 0);
    CHECK(py_ok("import builtins; builtins._pyop_configs['keep'] = True"), "keep");
    int rc = cf_exec(keep, h, lists, 2);
    CHECK(rc == PYOP_EPYTHON && err_has("input 0"), "kept views: %d %s", rc, g_err);
    CHECK(py_ok("import builtins\n"
                "R = builtins._pyop_configs\n"
                "R['keep'] = False\n"
                "assert len(R['views']) == 2, R['views']\n"
                "R['views'][1].release()\n"
                "del R\n"),
          "the last view released");
    rc = cf_exec(keep, h, lists, 2);
    CHECK(rc == PYOP_ESTATE && err_has("input 0"),
          "with the first view alive the instance is refused: %d %s", rc, g_err);
    CHECK(py_ok("import builtins\n"
                "builtins._pyop_configs['views'][0].release()\n"
                "builtins._pyop_configs['views'].clear()\n"),
          "the first view released");
    CHECK_OK(cf_exec(keep, h, lists, 2));
    /* Tensors (not their buffers) kept: every one is invalid after the
     * call, the last one made (the output) too. */
    CHECK(py_ok("import builtins; builtins._pyop_configs['keep_tensors'] = True"), "keep");
    CHECK_OK(cf_exec(keep, h, lists, 2));
    CHECK(py_ok("import builtins\n"
                "R = builtins._pyop_configs\n"
                "R['keep_tensors'] = False\n"
                "ts = R.pop('tensors')\n"
                "assert [t.valid for t in ts] == [False, False, False], ts\n"
                "for t in ts:\n"
                "    try:\n"
                "        t.shape\n"
                "    except RuntimeError:\n"
                "        pass\n"
                "    else:\n"
                "        raise AssertionError('%r read after its call' % (t,))\n"
                "del R, ts, t\n"),
          "kept Tensors are invalid after their call, the last one made too");
    /* The same with views of the inputs kept too (the call then fails):
     * the output made after them is invalid as well. */
    CHECK(py_ok("import builtins\n"
                "builtins._pyop_configs['keep'] = True\n"
                "builtins._pyop_configs['keep_tensors'] = True\n"),
          "keep both");
    rc = cf_exec(keep, h, lists, 2);
    CHECK(rc == PYOP_EPYTHON && err_has("input 0"), "kept views and Tensors: %d %s", rc, g_err);
    CHECK(py_ok("import builtins\n"
                "R = builtins._pyop_configs\n"
                "R['keep'] = R['keep_tensors'] = False\n"
                "ts = R.pop('tensors')\n"
                "assert [t.valid for t in ts] == [False, False, False], ts\n"
                "try:\n"
                "    ts[2].data_ptr\n"
                "except RuntimeError:\n"
                "    pass\n"
                "else:\n"
                "    raise AssertionError('the output read after its call')\n"
                "for v in R['views']:\n"
                "    v.release()\n"
                "R['views'].clear()\n"
                "del R, ts, v\n"),
          "kept Tensors beside kept views are invalid after their call");
    CHECK_OK(cf_exec(keep, h, lists, 2));
    keep->cb->destroy_holder(h);
  }

  /* The execute context's arguments in their other partitions. */
  {
    const rec_op *ctx = find(&r, "CfCtx", true);
    CHECK(ctx != NULL, "CfCtx registered");
    cf_ctx_call(ctx, "format_none", PYOP_OK);
    CHECK(py_ok("import builtins, pyop\n"
                "R = builtins._pyop_configs\n"
                "assert R['format_none'] == (pyop.Format.ND, (2,)), R['format_none']\n"
                "del R, pyop\n"),
          "format=None is the default format");
    /* A format asked for is the output's, in Python and at the host (batch
     * 12 survivor, session 12: bridge.b12.context.output_format_dropped). */
    g_cf_last_format = -1;
    cf_ctx_call(ctx, "format_nhwc", PYOP_OK);
    CHECK(g_cf_last_format == PYOP_FORMAT_NHWC, "the host was asked for format %d",
          (int)g_cf_last_format);
    CHECK(py_ok("import builtins, pyop\n"
                "R = builtins._pyop_configs\n"
                "assert R['format_nhwc'] == pyop.Format.NHWC, R['format_nhwc']\n"
                "del R, pyop\n"),
          "the format asked for is the output's");
    /* An exception's text with a lone surrogate (no surrogateescape byte)
     * reaches the host with it escaped, not as a failed str() (batch 12
     * survivor, session 12: bridge.b12.errors.surrogate_text_lost). */
    cf_ctx_call(ctx, "lone_surrogate", PYOP_EPYTHON);
    CHECK(err_has("ValueError: bad \\ud800 text") && !err_has("str() failed"),
          "a lone surrogate escaped: %s", g_err);
    g_cf_ws_null = true;
    cf_ctx_call(ctx, "ws_zero", PYOP_OK);
    g_cf_ws_null = false;
    CHECK(py_ok("import builtins\n"
                "R = builtins._pyop_configs\n"
                "assert R['ws_zero'] == (0, (0,), 0), R['ws_zero']\n"
                "del R\n"),
          "an empty workspace without memory");
    cf_ctx_call(ctx, "dims_max", PYOP_OK);
    cf_ctx_call(ctx, "shape_iter", PYOP_OK);
    g_cf_extra_bytes = 8;
    cf_ctx_call(ctx, "x_len", PYOP_OK);
    g_cf_extra_bytes = 0;
    CHECK(py_ok("import builtins\n"
                "R = builtins._pyop_configs\n"
                "assert R['dims_max'] == (1,) * 8, R['dims_max']\n"
                "assert R['shape_iter'] == (2, 3), R['shape_iter']\n"
                "assert R['x_len'] == (8, [1.0, 2.0], 16), R['x_len']\n"
                "del R\n"),
          "8 dimensions, an iterator shape, an input buffer larger than its shape");
    /* The context from another thread of the plugin: refused there. */
    cf_ctx_call(ctx, "other_thread", PYOP_OK);
    CHECK(py_ok("import builtins\n"
                "seen = builtins._pyop_configs['other_thread']\n"
                "assert len(seen) == 1 and 'context used from another thread' in seen[0], seen\n"
                "del seen\n"),
          "the context used from another thread");
    /* Output 1 as input 0's buffer, refused by the host: the message names
     * output 1 and input 0, the status is the host's. */
    g_cf_alias = true;
    g_cf_n_out = 2;
    g_svc_status = PYOP_ECONTRACT;
    cf_ctx_call(ctx, "ref_1_0", PYOP_ECONTRACT);
    CHECK(err_has("libpyop refused to make output 1 input 0's buffer (PYOP_ECONTRACT)"),
          "the refused alias: %s", g_err);
    g_svc_status = PYOP_OK;
    g_cf_n_out = 1;
    g_cf_alias = false;
    /* A KeyboardInterrupt subclass is an interrupt too. */
    cf_ctx_call(ctx, "interrupt_sub", PYOP_EINTR);
    CHECK(err_has("_Interrupt: interrupted by a subclass"), "the interrupt's text: %s", g_err);
  }

  /* A launch of an empty library name, an input index of 2**32 - 1. */
  {
    const rec_op *li = find(&r, "CfLaunch", true);
    CHECK(li != NULL, "CfLaunch registered");
    void *h = holder_of(li, NULL, 0);
    float x[2] = {1, 2};
    pyop_tensor in = tensor_f32(x, 1, s2), out = tensor_f32(NULL, 1, s2);
    pyop_tensor_list lists[1] = {{&in, 1}};
    sink sk;
    memset(&sk, 0, sizeof sk);
    strcpy(sk.lib, "(not called)");
    pyop_declare_args da = {sizeof da, lists, 1, &out, 1, &sk, sink_launch, sink_ws};
    clear_error();
    CHECK_OK(li->cb->declare_launch_args(h, &da));
    CHECK(strcmp(sk.lib, "") == 0 && strcmp(sk.sym, "kern") == 0, "launch of '%s' %s", sk.lib,
          sk.sym);
    CHECK(sk.n_args == 2 && sk.args[0].kind == PYOP_LAUNCH_ARG_INPUT &&
              sk.args[0].index == UINT32_MAX && sk.args[1].kind == PYOP_LAUNCH_ARG_OUTPUT &&
              sk.args[1].index == 0,
          "%zu args, the first of index %u", sk.n_args, (unsigned)sk.args[0].index);
    li->cb->destroy_holder(h);
  }

  configs_registered_proto(find(&r, "CfCtx", true));
  CHECK(py_ok("import builtins; del builtins._pyop_configs"), "record dropped");
  api->reset();
  rec_clear(&r);
}

/*
 * The host finalizes its Python under a live instance (plugins/configs),
 * then starts another and a new session in the same image:
 * - a call and a new instance are refused with PYOP_ENOTINIT, the message
 *   saying the interpreter the ops were loaded into was finalized by the
 *   host (and what to do: destroy, shutdown, pyop_load again);
 * - the instances destroyed without their Python, the next session's
 *   first instance reads a result by getattr (the TensorDesc field names
 *   are that Python's: whether the lost one's would be read by luck, a
 *   test cannot tell reliably, so no mutant claims it).
 */
static void case_configs_lost(void) {
  recorder r = {.fail_at = -1};
  CHECK_OK(load(&r, 1, "configs"));
  const rec_op *opt = find(&r, "CfOpt", true), *plain = find(&r, "CfPlain", false);
  CHECK(opt && plain, "ops registered");
  void *h = holder_of(opt, NULL, 0), *hp = holder_of(plain, NULL, 0);
  bcstate_host_restarts_python();
  float x[2] = {1, 2};
  int64_t s2[1] = {2};
  pyop_tensor in = tensor_f32(x, 1, s2);
  pyop_tensor_list lists[2] = {{&in, 1}, {NULL, 0}};
  int rc = cf_exec(opt, h, lists, 2);
  CHECK(rc == PYOP_ENOTINIT && err_has("execute of op 'CfOpt': the Python interpreter the ops "
                                       "were loaded into has been finalized (Py_FinalizeEx by "
                                       "the host)") && err_has("pyop_load again"),
        "a call after the host finalized: %d %s", rc, g_err);
  void *h2 = NULL;
  clear_error();
  rc = opt->cb->create_holder(opt->ctx, NULL, 0, &h2);
  CHECK(rc == PYOP_ENOTINIT && h2 == NULL &&
            err_has("creating an instance of op 'CfOpt': the Python interpreter the ops were "
                    "loaded into has been finalized"),
        "an instance after the host finalized: %d %s", rc, g_err);
  opt->cb->destroy_holder(h);
  plain->cb->destroy_holder(hp);
  rec_clear(&r);
  bcstate_renegotiate();
  CHECK_OK(load(&r, 1, "configs"));
  plain = find(&r, "CfPlain", false);
  CHECK(plain != NULL, "CfPlain registered again");
  hp = holder_of(plain, NULL, 0);
  pyop_tensor out;
  memset(&out, 0, sizeof out);
  CHECK_OK(infer1(plain, hp, &in, 1, ONE, &out, 1));
  CHECK(out.ndim == 2 && out.shape[0] == 2 && out.shape[1] == 5 && out.dtype == 0,
        "CfPlain: ndim %d shape %lld,%lld", out.ndim, (long long)out.shape[0],
        (long long)out.shape[1]);
  plain->cb->destroy_holder(hp);
  /* The descriptor names a result is read by are the new interpreter's:
   * the holders destroyed without Python gave theirs back (batch 12
   * survivor, session 12: bridge.b12.holders.names_kept_without_python). */
  const rec_op *named = find(&r, "CfNamed", false);
  CHECK(named != NULL, "CfNamed registered");
  void *hn = holder_of(named, NULL, 0);
  memset(&out, 0, sizeof out);
  CHECK_OK(infer1(named, hn, &in, 1, ONE, &out, 1));
  named->cb->destroy_holder(hn);
  CHECK(py_ok("import builtins\n"
              "seen = builtins.__dict__.pop('_pyop_names')\n"
              "assert seen == [True, True, True], seen\n"
              "del seen\n"),
        "a result read by names of the finalized interpreter");
  CHECK(py_ok("import builtins; del builtins._pyop_configs"), "record dropped");
  api->reset();
  rec_clear(&r);
}

/*
 * The dataflow pass of the call path (session 13; plugins/dfcall): each
 * value the host gives reaches the op whole, and each one the op gives
 * reaches the host whole:
 * - a str attribute holding a NUL reaches execute at its length, NUL
 *   included (not cut at it); one that is not UTF-8 refuses the instance; _native.registered_proto of a name holding
 *   a NUL asks the loader for the whole name (not the name before it);
 * - a Tensor attribute of 16 bytes reaches infer_meta with all of them
 *   (the bridge's own copy of the host's bytes is whole; e2e.host.contract
 *   sees it through libpyop too);
 * - compile's artifact and add_launch's symbol holding NULs reach the
 *   host at their length; a one-character relative library name is made
 *   a path beside the implementation like any other;
 * - a view kept of an op's output made after eight inputs (the ninth
 *   tensor of the call, past the frame's first room) fails the call
 *   naming output 0;
 * - an exception whose message holds a NUL, or 1024 in a row, reaches the
 *   host whole (each NUL written as \x00, the rest of the message and the
 *   traceback kept);
 * - with a host prototype whose outputs are an optional one then a
 *   dynamic one, an output index past the last names the dynamic output
 *   alone in its hint (an optional output is not one to repeat); with two
 *   dynamic outputs, it names both.
 */
static pyop_io_info g_df_outs[2];
static pyop_op_info g_df_info;
static int g_df_finds, g_df_releases;

static int df_find_proto(pyop_str op_type, const pyop_op_info **out) {
  *out = NULL;
  if (op_type.len != 6 || memcmp(op_type.data, "DfPast", 6) != 0)
    return PYOP_ENOENT;
  g_df_finds++;
  *out = &g_df_info;
  return PYOP_OK;
}

static void df_release_proto(const pyop_op_info *info) {
  CHECK(info == &g_df_info, "release_proto of another info");
  g_df_releases++;
}

/* What DfLaunch's compile and declare_launch_args handed the host, as
 * (pointer, length) copies: a NUL inside shows. */
typedef struct df_sink {
  char artifact[16], lib[4200], sym[32];
  size_t artifact_len, lib_len, sym_len, n_args;
} df_sink;

static int df_sink_artifact(void *ctx, const void *data, size_t len) {
  df_sink *s = ctx;
  s->artifact_len = len;
  memcpy(s->artifact, data, len < sizeof s->artifact ? len : sizeof s->artifact);
  return 0;
}

static int df_sink_launch(void *ctx, const pyop_launch_view *l) {
  df_sink *s = ctx;
  s->lib_len = l->library.len;
  memcpy(s->lib, l->library.data, l->library.len < sizeof s->lib ? l->library.len : sizeof s->lib);
  s->sym_len = l->symbol.len;
  memcpy(s->sym, l->symbol.data, l->symbol.len < sizeof s->sym ? l->symbol.len : sizeof s->sym);
  s->n_args = l->n_args;
  return 0;
}

static void case_dfcall(void) {
  recorder r = {.fail_at = -1};
  CHECK_OK(load(&r, 1, "dfcall"));
  float x[2] = {1, 2};
  int64_t s2[1] = {2};
  pyop_tensor in = tensor_f32(x, 1, s2);

  /* A str attribute with a NUL inside (the host may give one; pyop's own
   * defaults cannot hold one): its length, not strlen. */
  {
    const rec_op *impl = find(&r, "DfStr", true);
    CHECK(impl != NULL, "DfStr registered");
    pyop_attr_view a = attr_str("s", "ab");
    a.default_value.u.s = (pyop_str){"a\0bc", 4};
    void *h = holder_of(impl, &a, 1);
    outputs o = {0};
    CHECK_OK(exec1(impl, h, &in, 1, ONE, 1, &o));
    outputs_free(&o);
    impl->cb->destroy_holder(h);
    CHECK(py_ok("import builtins\n"
                "seen = builtins._pyop_dfcall.pop('s')\n"
                "assert seen == ['a\\x00bc'], seen\n"
                "del seen\n"),
          "a str attribute with a NUL reaches the op whole");
    /* One that is not UTF-8: the instance is refused (never made with
     * U+FFFD standing in for the host's bytes). */
    a.default_value.u.s = (pyop_str){"a\xff" "b", 3};
    h = (void *)1;
    clear_error();
    int rc = impl->cb->create_holder(impl->ctx, &a, 1, &h);
    CHECK(rc == PYOP_EPYTHON && h == NULL && err_has("attribute 's': cannot convert its value") &&
              err_has("UnicodeDecodeError"),
          "a str attribute that is not UTF-8: %d %s", rc, g_err);
  }

  /* A Tensor attribute of four floats: every byte copied. */
  {
    const rec_op *proto = find(&r, "DfTable", false);
    CHECK(proto != NULL, "DfTable registered");
    float tv[4] = {1.5f, -2.0f, 3.25f, 8.0f};
    int64_t s4[1] = {4};
    pyop_tensor table = tensor_f32(tv, 1, s4);
    pyop_attr_view ta;
    memset(&ta, 0, sizeof ta);
    ta.struct_size = sizeof ta;
    ta.name = (pyop_str){"table", 5};
    ta.type = ta.default_value.type = PYOP_ATTR_TENSOR;
    ta.default_value.u.tensor = &table;
    void *h = holder_of(proto, &ta, 1);
    memset(tv, 0, sizeof tv); /* the bridge's copy is what the op reads */
    pyop_tensor out;
    memset(&out, 0, sizeof out);
    CHECK_OK(infer1(proto, h, &in, 1, ONE, &out, 1));
    proto->cb->destroy_holder(h);
    CHECK(py_ok("import builtins\n"
                "seen = builtins._pyop_dfcall.pop('table')\n"
                "assert seen == [(16, [1.5, -2.0, 3.25, 8.0])], seen\n"
                "del seen\n"),
          "a Tensor attribute's 16 bytes reach the op");
  }

  /* Bytes and names holding a NUL reach the host at their length; a
   * one-character library name is made a path like any relative one. */
  {
    const rec_op *impl = find(&r, "DfLaunch", true);
    CHECK(impl != NULL, "DfLaunch registered");
    void *h = holder_of(impl, NULL, 0);
    pyop_tensor desc = tensor_f32(NULL, 1, s2);
    pyop_tensor_list lists[1] = {{&desc, 1}};
    df_sink sk;
    memset(&sk, 0, sizeof sk);
    pyop_compile_args ca = {sizeof ca, lists, 1, &desc, 1, &sk, df_sink_artifact};
    CHECK_OK(impl->cb->compile(h, &ca));
    CHECK(sk.artifact_len == 4 && memcmp(sk.artifact, "a\0b\0", 4) == 0,
          "the artifact's 4 bytes, NULs included (%zu)", sk.artifact_len);
    pyop_declare_args da = {sizeof da, lists, 1, &desc, 1, &sk, df_sink_launch, NULL};
    CHECK_OK(impl->cb->declare_launch_args(h, &da));
    char lib[4200];
    int n = snprintf(lib, sizeof lib, "%s/dfcall/k", g_plugins);
    CHECK(sk.lib_len == (size_t)n && memcmp(sk.lib, lib, (size_t)n) == 0,
          "library %.*s (want %s)", (int)sk.lib_len, sk.lib, lib);
    CHECK(sk.sym_len == 7 && memcmp(sk.sym, "kern\0v2", 7) == 0,
          "the symbol at its length, NUL included (%zu)", sk.sym_len);
    CHECK(sk.n_args == 1, "one launch argument (%zu)", sk.n_args);
    impl->cb->destroy_holder(h);
  }

  /* The ninth tensor of a call (past the frame's first room of eight),
   * an output, is numbered as output 0 in the refusal a kept view of it
   * causes (not by its place among the call's tensors). */
  {
    const rec_op *impl = find(&r, "DfEight", true);
    CHECK(impl != NULL, "DfEight registered");
    void *h = holder_of(impl, NULL, 0);
    pyop_tensor ins[8];
    for (int i = 0; i < 8; i++)
      ins[i] = in;
    outputs o = {0};
    int rc = exec1(impl, h, ins, 8, ONE, 1, &o);
    outputs_free(&o);
    CHECK(rc == PYOP_EPYTHON && err_has("a buffer of output 0 (") && !err_has("output 8"),
          "a view of the ninth tensor kept: %d %s", rc, g_err);
    CHECK(py_ok("import builtins; builtins._pyop_dfcall.pop('view').release()"),
          "the view released");
    impl->cb->destroy_holder(h);
  }

  /* An exception whose message holds a NUL: the host's error keeps what
   * follows it, the NUL written as \x00, and the traceback. Then 1024 NULs
   * in a row (a NUL-padded field): each written as its four bytes, none
   * past the text's buffer (batch 20 survivor, session 16: a buffer with
   * room for one byte per NUL, overrun by 2048 bytes of the text's end: a
   * heap overflow ASan names, and in a release build glibc's free() or
   * the next malloc() aborts on the chunk header it overwrote). */
  {
    const rec_op *impl = find(&r, "DfNul", true);
    CHECK(impl != NULL, "DfNul registered");
    static const int64_t nuls[] = {1, 1024};
    for (size_t k = 0; k < sizeof nuls / sizeof nuls[0]; k++) {
      pyop_attr_view na = attr_int("nuls", nuls[k]);
      void *h = holder_of(impl, &na, 1);
      outputs o = {0};
      int rc = exec1(impl, h, &in, 1, ONE, 1, &o);
      outputs_free(&o);
      char want[4 * 1024 + 64];
      size_t w = (size_t)snprintf(want, sizeof want, "ValueError: bad");
      for (int64_t i = 0; i < nuls[k]; i++, w += 4)
        memcpy(want + w, "\\x00", 4);
      snprintf(want + w, sizeof want - w, "tail of the message\n");
      CHECK(rc == PYOP_EPYTHON && err_has(want) && err_has("Traceback") &&
                err_has("in execute"),
            "an error message holding %lld NULs: %d %.300s", (long long)nuls[k], rc, g_err);
      impl->cb->destroy_holder(h);
    }
  }

  /* The index hint with an optional output before a dynamic one. */
  {
    pyop_bridge_entry_fn entry =
        (pyop_bridge_entry_fn)dlsym(bridge_handle, PYOP_BRIDGE_ENTRY_SYMBOL);
    CHECK(entry != NULL, "no entry symbol");
    pyop_loader_services svc = g_services;
    svc.find_proto = df_find_proto;
    svc.release_proto = df_release_proto;
    pyop_bridge_request req = {sizeof req, PYOP_BRIDGE_ABI_MAJOR, PYOP_BRIDGE_ABI_MINOR, &svc};
    CHECK_OK(entry(&req, &api));
    memset(&g_df_info, 0, sizeof g_df_info);
    g_df_info.struct_size = sizeof g_df_info;
    g_df_info.op_type = "DfPast";
    g_df_info.outputs = g_df_outs;
    g_df_info.n_outputs = 2;
    g_df_outs[0] = (pyop_io_info){"maybe", PYOP_IO_OPTIONAL};
    g_df_outs[1] = (pyop_io_info){"rest", PYOP_IO_DYNAMIC};
    g_df_info.proto_key = "host:dfpast";
    g_df_finds = g_df_releases = 0;
    /* registered_proto asks for the whole name: one holding a NUL is not
     * the name before it. */
    CHECK(py_ok("import sys\n"
                "rp = sys.modules['pyop._native'].registered_proto\n"
                "assert rp('DfPast')['op_type'] == 'DfPast', rp('DfPast')\n"
                "assert rp('DfPast\\x00v2') is None, rp('DfPast\\x00v2')\n"
                "del rp\n"),
          "registered_proto of a name holding a NUL");
    CHECK(g_df_finds == 1 && g_df_releases == 1, "found %d prototypes, released %d",
          g_df_finds, g_df_releases);
    g_df_finds = g_df_releases = 0;
    const rec_op *impl = find(&r, "DfPast", true);
    CHECK(impl != NULL, "DfPast registered");
    void *h = holder_of(impl, NULL, 0);
    outputs o = {0};
    CHECK_OK(exec1(impl, h, &in, 1, ONE, 2, &o));
    outputs_free(&o);
    impl->cb->destroy_holder(h);
    CHECK(g_df_finds == 1 && g_df_releases == 1, "found %d prototypes, released %d", g_df_finds,
          g_df_releases);
    CHECK(py_ok("import builtins\n"
                "seen = builtins._pyop_dfcall.pop('past')\n"
                "want = ('output index 2 out of range (the op has 2 outputs); output 1 '\n"
                "        \"'rest' is dynamic: call malloc_output_tensor(1, ...) again for its \"\n"
                "        'next tensor')\n"
                "assert seen == want, seen\n"
                "del seen, want\n"),
          "the hint names the dynamic output only");
    /* Both outputs dynamic: the hint names each, in order. */
    g_df_outs[0] = (pyop_io_info){"parts", PYOP_IO_DYNAMIC};
    h = holder_of(impl, NULL, 0);
    CHECK_OK(exec1(impl, h, &in, 1, ONE, 2, &o));
    outputs_free(&o);
    impl->cb->destroy_holder(h);
    CHECK(py_ok("import builtins\n"
                "seen = builtins._pyop_dfcall.pop('past')\n"
                "want = ('output index 2 out of range (the op has 2 outputs); output 0 '\n"
                "        \"'parts' is dynamic: call malloc_output_tensor(0, ...) again for its \"\n"
                "        'next tensor; output 1 '\n"
                "        \"'rest' is dynamic: call malloc_output_tensor(1, ...) again for its \"\n"
                "        'next tensor')\n"
                "assert seen == want, seen\n"
                "del seen, want\n"),
          "the hint names both dynamic outputs");
    req.services = &g_services;
    CHECK_OK(entry(&req, &api));
  }

  CHECK(py_ok("import builtins; del builtins._pyop_dfcall"), "record dropped");
  api->reset();
  rec_clear(&r);
}

/*
 * Lifetime pass (session 15): what the bridge lends a plugin (a Tensor, a
 * view, a context) refuses EVERY accessor and method once its call ended;
 * what a holder took (the instance, its bound methods, the view class, an
 * attribute value) is released by destroy_holder, and so are the output
 * Tensors of an implementation whose prototype is not its package's
 * (LpForeign), the exception of a failed create_holder is dropped, a view
 * the plugin holds from an earlier call is not the next call's, and a
 * reset frees the plugin's classes (plugins/lpobj: reference counts and
 * weak references, compared before and after).
 */
static void case_lpobj(void) {
  recorder r = {.fail_at = -1};
  CHECK_OK(load(&r, 1, "lpobj"));
  const rec_op *impl = find(&r, "LpKeep", true), *proto = find(&r, "LpKeep", false),
               *vimpl = find(&r, "LpViewed", true);
  CHECK(impl && proto && vimpl, "ops registered");
  float x[2] = {1, 2};
  int64_t s[1] = {2};
  pyop_tensor in = tensor_f32(x, 1, s);
  CHECK(py_ok("import builtins\n"
              "R = builtins._pyop_lpobj\n"
              "R['before'] = R['counts']()\n"
              "del R\n"),
        "counts before");
  /* One instance, one call: what it kept. */
  pyop_attr_view a = attr_str("lp_tag", "a lifetime tag");
  void *h = holder_of(impl, &a, 1);
  outputs o = {0};
  CHECK_OK(exec1(impl, h, &in, 1, ONE, 1, &o));
  outputs_free(&o);
  CHECK(py_ok("import builtins, sys\n"
              "R = builtins._pyop_lpobj\n"
              "assert R['same_ctx'] is True, 'get_execute_ctx() gave two contexts in one call'\n"
              "x, out, ctx = R['kept']\n"
              "def refused(fn, what, want):\n"
              "    try:\n"
              "        fn()\n"
              "    except RuntimeError as e:\n"
              "        assert want in str(e), (what, e)\n"
              "    else:\n"
              "        raise AssertionError('%s usable after its call' % what)\n"
              "for t, role in ((x, 'input'), (out, 'output')):\n"
              "    assert t.valid is False, role\n"
              "    for name in ('shape', 'dtype', 'format', 'ndim', 'nbytes', 'numel',\n"
              "                 'data_ptr', 'writable'):\n"
              "        refused(lambda: getattr(t, name), role + ' ' + name,\n"
              "                'tensor used outside its callback')\n"
              "    refused(lambda: memoryview(t), role + ' buffer', 'outside its callback')\n"
              "    assert repr(t).startswith('<pyop.Tensor (released'), repr(t)\n"
              "assert ctx.valid is False\n"
              "# every method, with good arguments and with bad ones (the expiry is\n"
              "# what it reports, not an argument)\n"
              "for what, fn in (\n"
              "        ('malloc_output_tensor', lambda: ctx.malloc_output_tensor(0, (1,), 'float32')),\n"
              "        ('malloc_output_tensor', lambda: ctx.malloc_output_tensor(0, (1,), 'float33')),\n"
              "        ('make_output_ref_input', lambda: ctx.make_output_ref_input(0, 0)),\n"
              "        ('make_output_ref_input', lambda: ctx.make_output_ref_input('a', 0)),\n"
              "        ('malloc_workspace', lambda: ctx.malloc_workspace(4)),\n"
              "        ('malloc_workspace', lambda: ctx.malloc_workspace(-1)),\n"
              "        ('set_artifact', lambda: ctx.set_artifact(b'a')),\n"
              "        ('set_artifact', lambda: ctx.set_artifact(5)),\n"
              "        ('add_workspace', lambda: ctx.add_workspace(4)),\n"
              "        ('add_workspace', lambda: ctx.add_workspace(-1)),\n"
              "        ('add_launch', lambda: ctx.add_launch('/l.so', 'k', [])),\n"
              "        ('add_launch', lambda: ctx.add_launch('/l.so', 'k', 5)),\n"
              "        ('stream', lambda: ctx.stream),\n"
              "        ('_inputs', lambda: ctx._inputs),\n"
              "        ('_attrs', lambda: ctx._attrs),\n"
              "        ('_view', lambda: ctx._view)):\n"
              "    refused(fn, 'context ' + what, what + '(): context used outside its callback')\n"
              "# its _x: refused even None (a view's _x may be cleared, a context's not)\n"
              "for v in (1, None):\n"
              "    refused(lambda: setattr(ctx, '_x', v), 'context _x = %r' % v,\n"
              "            '_x: context used outside its callback')\n"
              "refused(lambda: delattr(ctx, '_x'), 'del context _x',\n"
              "        '_x: context used outside its callback')\n"
              "assert ctx._x is None\n"
              "# the holder still has the tag: one reference more than its copy\n"
              "t, c = R['tag'][0], R['tag_copy'][0]\n"
              "assert sys.getrefcount(t) == sys.getrefcount(c) + 1, (sys.getrefcount(t),\n"
              "                                                      sys.getrefcount(c))\n"
              "del R, x, out, ctx, refused, t, c, fn, what, role, name, v\n"),
        "what LpKeep kept, after its call");
  /* Its compile and declare_launch_args: the buffer given to set_artifact,
   * the argument sequences given to add_launch. */
  {
    sink sk;
    memset(&sk, 0, sizeof sk);
    pyop_tensor desc = tensor_f32(NULL, 1, s);
    pyop_tensor_list lists[1] = {{&in, 1}};
    pyop_declare_args da = {sizeof da, lists, 1, &desc, 1, &sk, sink_launch, sink_ws};
    pyop_compile_args ca = {sizeof ca, lists, 1, &desc, 1, &sk, sink_artifact};
    CHECK_OK(impl->cb->compile(h, &ca));
    CHECK(sk.artifact_len == 2 && memcmp(sk.artifact, "lp", 2) == 0, "the artifact");
    CHECK_OK(impl->cb->declare_launch_args(h, &da));
    CHECK(sk.n_args == 1 && strcmp(sk.sym, "k") == 0, "the second launch: %zu %s", sk.n_args,
          sk.sym);
  }
  CHECK(py_ok("import builtins\n"
              "R = builtins._pyop_lpobj\n"
              "before, after = R.pop('shape_rc')\n"
              "assert before == after, ('malloc_output_tensor kept its shape', before, after)\n"
              "before, after = R.pop('artifact_rc')\n"
              "assert before == after, ('set_artifact kept its bytearray', before, after)\n"
              "before, after = R.pop('launch_rc')\n"
              "assert before == after, ('add_launch kept its arguments', before, after)\n"
              "del R, before, after\n"),
        "the sequences given to the context, not kept");
  impl->cb->destroy_holder(h);
  CHECK(py_ok("import builtins, gc, sys\n"
              "R = builtins._pyop_lpobj\n"
              "gc.collect()\n"
              "assert [w() for w in R['instances']] == [None], 'the instance outlived its holder'\n"
              "t, c = R['tag'][0], R['tag_copy'][0]\n"
              "assert sys.getrefcount(t) == sys.getrefcount(c), (\n"
              "    'the attribute value outlived its holder', sys.getrefcount(t),\n"
              "    sys.getrefcount(c))\n"
              "assert R['counts']() == R['before'], (R['counts'](), R['before'])\n"
              "R['instances'].clear()\n"
              "del R, t, c\n"),
        "what the holder of LpKeep took, released");
  /* A prototype's holder: its infer function and the TensorDescs of its
   * inputs are released too. */
  h = holder_of(proto, &a, 1);
  for (int i = 0; i < 2; i++) {
    pyop_tensor res;
    CHECK_OK(infer1(proto, h, &in, 1, ONE, &res, 1));
    CHECK(res.ndim == 1 && res.shape[0] == 2, "LpKeep infer_meta");
  }
  proto->cb->destroy_holder(h);
  /* Two refusals of the host caught in one call: the latest is held until
   * the call ends (for its status), the earlier one not at all. */
  CHECK(py_ok("import builtins; builtins._pyop_lpobj['twice'] = True"), "twice");
  h = holder_of(impl, &a, 1);
  CHECK_OK(exec1(impl, h, &in, 1, ONE, 1, &o));
  outputs_free(&o);
  impl->cb->destroy_holder(h);
  CHECK(py_ok("import builtins, sys\n"
              "R = builtins._pyop_lpobj\n"
              "R['twice'] = False\n"
              "e1, e2 = R.pop('host_errors')\n"
              "assert 'to allocate output 0 (PYOP_ENOMEM)' in str(e1), e1\n"
              "d1, d2 = R.pop('during')\n"
              "assert d2 == d1 + 1, ('during the call', d1, d2)\n"
              "assert sys.getrefcount(e1) == sys.getrefcount(e2), (\n"
              "    'after the call', sys.getrefcount(e1), sys.getrefcount(e2))\n"
              "del R, e1, e2, d1, d2\n"),
        "the host's refusals: the latest held during the call, neither after it");
  /* An implementation whose inputs are views: a view kept past its call
   * refuses each field; the view class is released with the holder. */
  h = holder_of(vimpl, NULL, 0);
  CHECK_OK(exec1(vimpl, h, &in, 1, ONE, 1, &o));
  outputs_free(&o);
  vimpl->cb->destroy_holder(h);
  CHECK(py_ok("import builtins\n"
              "R = builtins._pyop_lpobj\n"
              "v = R.pop('view')\n"
              "assert v.valid is False and v._x is None\n"
              "for name in ('_dims', '_dtype', '_format', '_data', '_nbytes'):\n"
              "    try:\n"
              "        getattr(v, name)\n"
              "    except RuntimeError as e:\n"
              "        assert str(e) == 'tensor used outside its callback', (name, e)\n"
              "    else:\n"
              "        raise AssertionError('view %s read after its call' % name)\n"
              "del v  # an instance holds its class\n"
              "import gc\n"
              "gc.collect()  # the host errors' tracebacks and the frame holding them\n"
              "assert R['counts']() == R['before'], (R['counts'](), R['before'])\n"
              "del R, name, gc\n"),
        "a kept view, and what the holders took, released");
  /* A view the plugin gets hold of again after its call (here through a
   * weak reference: a Python view class takes them) is not reused for the
   * next call: that call gets a view of its own, and the old one goes on
   * refusing its fields while the call runs (batch 21 survivor, session 16:
   * the cached view of input 0 reused whoever held it, so the plugin's old
   * view became valid again, showing the next call's tensor). */
  h = holder_of(vimpl, NULL, 0);
  CHECK(py_ok("import builtins; builtins._pyop_lpobj['weak'] = True"), "weak");
  CHECK_OK(exec1(vimpl, h, &in, 1, ONE, 1, &o));
  outputs_free(&o);
  CHECK(py_ok("import builtins\n"
              "R = builtins._pyop_lpobj\n"
              "R['weak'] = False\n"
              "v = R.pop('view_ref')()\n"
              "assert v is not None, 'no view of the first call left to take back'\n"
              "assert type(v).__name__ == 'LpView' and v.valid is False\n"
              "R['stale'] = v\n"
              "del R, v\n"),
        "the first call's view, taken back after it");
  CHECK_OK(exec1(vimpl, h, &in, 1, ONE, 1, &o));
  outputs_free(&o);
  vimpl->cb->destroy_holder(h);
  CHECK(py_ok("import builtins, gc\n"
              "R = builtins._pyop_lpobj\n"
              "same, valid, dims = R.pop('stale_seen')\n"
              "assert not same, 'the view held from the first call was the second one\\'s input'\n"
              "assert valid is False and dims == 'tensor used outside its callback', (\n"
              "    'the view held from the first call, during the second', valid, dims)\n"
              "del R['stale']\n"
              "gc.collect()\n"
              "assert R['counts']() == R['before'], (R['counts'](), R['before'])\n"
              "del R, same, valid, dims, gc\n"),
        "a view held from an earlier call, not the next call's");
  /* An instance refused for its view class leaves no reference to it
   * (counted with the others). */
  {
    const rec_op *bv = find(&r, "LpBadView", true);
    CHECK(bv != NULL, "LpBadView registered");
    void *no = (void *)1;
    clear_error();
    CHECK(bv->cb->create_holder(bv->ctx, NULL, 0, &no) == PYOP_EPYTHON && no == NULL &&
              err_has("__pyop_input_view__ must be a subclass of pyop._native.ViewBase"),
          "LpBadView refused: %s", g_err);
    CHECK(py_ok("import builtins\n"
                "R = builtins._pyop_lpobj\n"
                "assert R['counts']() == R['before'], (R['counts'](), R['before'])\n"
                "del R\n"),
          "the refused view class, released");
    /* A view class that cannot be read (its metaclass raises RuntimeError
     * for the attribute) refuses the instance with that error; only an
     * AttributeError means none (batch 24 survivor
     * bridge.b24.holders.input_view_error_swallowed: any error was). */
    const rec_op *vr = find(&r, "LpViewRaises", true);
    CHECK(vr != NULL, "LpViewRaises registered");
    no = (void *)1;
    clear_error();
    CHECK(vr->cb->create_holder(vr->ctx, NULL, 0, &no) == PYOP_EPYTHON && no == NULL &&
              err_has("RuntimeError: LpViewRaises: no view class today"),
          "LpViewRaises refused: %s", g_err);
  }
  /* A failed create_holder drops the exception (and what its traceback
   * holds); the next one works. */
  CHECK(py_ok("import builtins; builtins._pyop_lpobj['boom'] = True"), "boom");
  void *bad = (void *)1;
  clear_error();
  CHECK(impl->cb->create_holder(impl->ctx, &a, 1, &bad) == PYOP_EPYTHON && bad == NULL &&
            err_has("LpBoom: instance refused"),
        "create_holder refused: %s", g_err);
  CHECK(py_ok("import builtins, gc\n"
              "R = builtins._pyop_lpobj\n"
              "R['boom'] = False\n"
              "gc.collect()\n"
              "assert R.pop('boom_ref')() is None, 'the exception of a failed create_holder kept'\n"
              "del R\n"),
        "the failed create_holder's exception dropped");
  h = holder_of(impl, &a, 1);
  CHECK_OK(exec1(impl, h, &in, 1, ONE, 1, &o));
  outputs_free(&o);
  impl->cb->destroy_holder(h);
  /* An implementation whose prototype is not its package's (LpForeign,
   * two outputs by the host's prototype): its holder knows no number of
   * outputs, so it keeps none of the output Tensors it made; once its
   * instance is destroyed no Tensor made for it is left (batch 20
   * survivor, session 16: output 0, the one just past its empty cache,
   * kept in the cache's spare slot and never released). */
  {
    const rec_op *fi = find(&r, "LpForeign", true);
    CHECK(fi != NULL && find(&r, "LpForeign", false) == NULL,
          "LpForeign registered as an implementation alone");
    CHECK(py_ok("import builtins\n"
                "R = builtins._pyop_lpobj\n"
                "R['tensors_before'] = R['tensors']()\n"
                "del R\n"),
          "Tensors before LpForeign");
    void *fh = holder_of(fi, NULL, 0);
    for (int round = 0; round < 2; round++) {
      outputs fo = {0};
      CHECK_OK(exec1(fi, fh, &in, 1, ONE, 2, &fo));
      const float *y = fo.mem[1];
      CHECK(fo.mem[0] != NULL && y != NULL && y[0] == 1 && y[1] == 2,
            "LpForeign round %d: its two outputs", round);
      outputs_free(&fo);
    }
    fi->cb->destroy_holder(fh);
    CHECK(py_ok("import builtins\n"
                "R = builtins._pyop_lpobj\n"
                "before, now = R.pop('tensors_before'), R['tensors']()\n"
                "assert now == before, ('a Tensor of LpForeign outlived its instance', before,\n"
                "                       now)\n"
                "del R, before, now\n"),
          "the output Tensors of an implementation alone, released with its instance");
  }
  /* A reset frees the plugin's classes and functions. */
  CHECK(py_ok("import builtins\n"
              "R = builtins._pyop_lpobj\n"
              "for k in ('kept', 'counts', 'tensors', 'before', 'tag', 'tag_copy',\n"
              "          'same_ctx'):\n"
              "    R.pop(k, None)\n"
              "R['instances'].clear()\n"
              "del R, k\n"),
        "plugin objects dropped");
  api->reset();
  rec_clear(&r);
  CHECK(py_ok("import builtins, gc, sys\n"
              "gc.collect()\n"
              "R = builtins._pyop_lpobj\n"
              "left = [k for k, w in R['refs'].items() if w() is not None]\n"
              "assert not left, ('still alive after the reset', left)\n"
              "t, o = R['tags'], R['opt']\n"
              "now = (sys.getrefcount(t[0]), sys.getrefcount(t[1]), sys.getrefcount(o[0]))\n"
              "assert now == R['tag_rc0'], ('an op type or default kept', now, R['tag_rc0'])\n"
              "del builtins._pyop_lpobj, R, left, t, o, now\n"),
        "the plugin's classes, op type and defaults freed by the reset");
}

/* ------------------------------------------- lifetime pass (session 15) */

static void lifetime_usr1(int sig) { (void)sig; }
static void lifetime_usr2(int sig) { (void)sig; }

/* Every weak reference plugins/lpbc took (of a result's descriptions and
 * their format numbers, of plugin functions) is dead now, with a garbage
 * collection first when collect; what: the call, for the message. */
static void lifetime_released(const char *what, bool collect) {
  CHECK(py_ok(collect ? "import gc; gc.collect()" : "pass"), "gc.collect");
  CHECK(py_ok("import lpbc_probe\n"
              "alive = [r() for r in lpbc_probe.refs if r() is not None]\n"
              "assert lpbc_probe.refs and not alive, (len(lpbc_probe.refs), alive)\n"
              "lpbc_probe.refs.clear()\n"
              "del alive\n"),
        "%s: an object of the result outlived the call", what);
}

/* Loader services whose find_proto and release_proto are traps (counted). */
static pyop_loader_services lifetime_trap_services(void) {
  pyop_loader_services s = g_services;
  s.find_proto = trap_find_proto;
  s.release_proto = trap_release_proto;
  return s;
}

/*
 * The lifetime, one-of-many and other-form pass (session 15) over the
 * bridge's callbacks, load, package, signals and loader tables:
 * - a TensorDesc's fields (a plugin may assign any object) are released
 *   with it, and a cycle through any of them is collected;
 * - the result of infer_meta in each of its forms (two outputs as a tuple
 *   or a list, one output, a dynamic output as a list or a tuple, refused
 *   for a format below 0 given through __index__) and what compile returns:
 *   every object it held, down to a format number read through __index__,
 *   is released when the call returns (plugins/lpbc/results.py); a shape
 *   that is a range is read;
 * - a result sharing the SECOND input's shape has that input's dimensions;
 *   each input slot of execute is writable as the host marked it, the
 *   second one too;
 * - a load of three plugin files: reset removes every one's module and
 *   collects their functions; a plugin's non-module entries of the pyop
 *   package (None and another object) are removed after its load;
 * - a plugin that sets a signal to SIG_IGN or SIG_DFL (not a Python
 *   function): reset puts the host's handler back for both;
 * - the loader services by ABI minor at both sides of each member's
 *   minor: find_proto and release_proto used from a loader of 1.2 exactly
 *   (not of 1.1), log from one of 1.0;
 * - the host's own "pyop" module: its reference count is the same after
 *   shutdown as before the load, and a later session without one does not
 *   put it back; a host's None there is put back too;
 * - a dynamic input slot of two, one or no tensors is a list; a
 *   list[list[int]] attribute's inner values are lists of each call's own.
 */
static void case_lifetime(void) {
  CHECK(py_ok("import sys, types\n"
              "sys.modules['lpbc_probe'] = types.ModuleType('lpbc_probe')\n"
              "sys.modules['lpbc_probe'].refs = []\n"
              "sys.modules['lpbc_probe'].seen = []\n"
              "sys.modules['lpbc_probe'].names = []\n"),
        "lpbc_probe");
  recorder r = {.fail_at = -1};
  CHECK_OK(load(&r, 1, "lpbc/results.py"));
  const rec_op *pair = find(&r, "LpPair", false), *one = find(&r, "LpOne", false),
               *dyn = find(&r, "LpDyn", false), *share = find(&r, "LpShare", false),
               *mut = find(&r, "LpMut", true);
  CHECK(pair && one && dyn && share && mut, "lpbc ops registered");
  /* A TensorDesc's fields (shape, dtype, format: plain members a plugin
   * may assign anything to) are released with it, and one in a cycle
   * through any of them is collected. */
  CHECK(py_ok("import gc, weakref, pyop\n"
              "class _LpObj: pass\n"
              "for _f in ('shape', 'dtype', 'format'):\n"
              "    _d = pyop.TensorDesc((1,), 'float32'); _o = _LpObj()\n"
              "    setattr(_d, _f, _o); _w = weakref.ref(_o); del _d, _o\n"
              "    assert _w() is None, 'TensorDesc.%s kept after the desc went' % _f\n"
              "    _d = pyop.TensorDesc((1,), 'float32'); _o = _LpObj(); _o.d = _d\n"
              "    setattr(_d, _f, _o); _w = weakref.ref(_o); del _d, _o\n"
              "    gc.collect()\n"
              "    assert _w() is None, 'a cycle through TensorDesc.%s not collected' % _f\n"
              "del _LpObj, _f, _w, gc, weakref, pyop\n"),
        "a TensorDesc's fields outlived it");
  float x[12] = {0};
  int64_t s1[1] = {2}, s2[2] = {3, 4};
  pyop_tensor out[2];
  /* Two outputs, as a tuple, as a list (the bridge reads a copy) and as a
   * namedtuple (a tuple subclass). */
  static const char *const forms[] = {"tuple", "list", "named"};
  for (size_t i = 0; i < 3; i++) {
    memset(out, 0, sizeof out);
    infer_with(pair, attr_str("form", forms[i]), out, 2, PYOP_OK, NULL);
    CHECK(out[0].ndim == 1 && out[0].shape[0] == 2 && out[0].format == 0 && out[1].ndim == 2 &&
              out[1].shape[1] == 4 && out[1].format == 1,
          "LpPair (%s): %d %d", forms[i], out[0].ndim, out[1].ndim);
    lifetime_released(forms[i], true);
  }
  /* A format below 0 given through __index__ is refused (the call's
   * objects released all the same). */
  {
    const char *n[] = {"ValueError", "infer_meta output 1 format -1 is out of range [0, ",
                       NULL};
    infer_with(pair, attr_str("form", "negfmt"), out, 2, PYOP_EPYTHON, n);
    lifetime_released("a refused format", true);
  }
  {
    pyop_tensor in = tensor_f32(x, 1, s1);
    void *h = holder_of(one, NULL, 0);
    memset(out, 0, sizeof out);
    CHECK_OK(infer1(one, h, &in, 1, ONE, out, 1));
    CHECK(out[0].ndim == 1 && out[0].shape[0] == 5 && out[0].format == 2, "LpOne");
    one->cb->destroy_holder(h);
    lifetime_released("one output", true);
    /* A shape that is another sequence (a range): read as a list is. */
    const rec_op *range = find(&r, "LpRange", false);
    h = holder_of(range, NULL, 0);
    memset(out, 0, sizeof out);
    clear_error();
    CHECK(infer1(range, h, &in, 1, ONE, out, 1) == PYOP_OK && out[0].ndim == 3 &&
              out[0].shape[0] == 2 && out[0].shape[2] == 4,
          "LpRange: ndim %d: %s", out[0].ndim, g_err);
    range->cb->destroy_holder(h);
    lifetime_released("a range shape", true);
  }
  /* A dynamic output, as a list and as a tuple: each tensor reaches the
   * host (the later one with its own shape), and nothing stays. */
  for (size_t i = 0; i < 2; i++) {
    dyn_sink sk = {.refuse_at = -1};
    pyop_attr_view a = attr_str("form", forms[i]);
    CHECK(infer_sink(dyn, &a, 1, out, 1, &sk) == PYOP_OK && sk.n == 2 && sk.dim0[0] == 6 &&
              sk.dim0[1] == 7,
          "LpDyn (%s): %d tensors: %s", forms[i], sk.n, g_err);
    lifetime_released(forms[i], true);
  }
  /* The second input's shape (its slot's tuple) is that input's, not the
   * first's: rank 2 after rank 1; in a third call its LAST dimension
   * changes (the first stays): the new one is seen. */
  {
    pyop_tensor ins[2] = {tensor_f32(x, 1, s1), tensor_f32(x, 2, s2)};
    void *h = holder_of(share, NULL, 0);
    for (int round = 0; round < 3; round++) {
      int64_t last = round < 2 ? 4 : 2;
      ins[1].shape[1] = last;
      memset(out, 0, sizeof out);
      CHECK_OK(infer1(share, h, ins, 2, ONE, out, 1));
      CHECK(out[0].ndim == 2 && out[0].shape[0] == 3 && out[0].shape[1] == last,
            "LpShare (round %d): ndim %d shape (%lld, %lld)", round, out[0].ndim,
            (long long)out[0].shape[0], (long long)out[0].shape[1]);
    }
    share->cb->destroy_holder(h);
  }
  /* Each input slot writable as the host's flags mark it, the second one
   * too (twice each: a holder's second call takes its kept Tensors). */
  {
    static const uint32_t marks[2][2] = {{0, PYOP_INPUT_MUTATED}, {PYOP_INPUT_MUTATED, 0}};
    for (int m = 0; m < 2; m++) {
      pyop_tensor ins[2] = {tensor_f32(x, 1, s1), tensor_f32(x + 2, 1, s1)};
      pyop_tensor_list lists[2] = {{&ins[0], 1}, {&ins[1], 1}};
      void *h = holder_of(mut, NULL, 0);
      for (int round = 0; round < 2; round++) {
        outputs o = {0};
        pyop_exec_services svc = {sizeof svc, &o, alloc_output, alloc_workspace};
        pyop_exec_args ea = {sizeof ea, lists, 2, 1, &svc, NULL, marks[m]};
        clear_error();
        CHECK(mut->cb->execute(h, &ea) == PYOP_OK, "LpMut: %s", g_err);
        outputs_free(&o);
      }
      mut->cb->destroy_holder(h);
      char code[256];
      snprintf(code, sizeof code,
               "import lpbc_probe\n"
               "assert lpbc_probe.seen == [(%s, %s)] * 2, lpbc_probe.seen\n"
               "lpbc_probe.seen.clear()\n",
               m == 0 ? "False" : "True", m == 0 ? "True" : "False");
      CHECK(py_ok(code), "LpMut: the inputs' writability is not the host's flags (%d)", m);
    }
  }
  /* A dynamic input slot is a list whatever its count: of two, of one,
   * empty (not the tensor, not None). */
  {
    const rec_op *list = find(&r, "LpList", false);
    CHECK(list != NULL, "LpList registered");
    pyop_tensor ins[2] = {tensor_f32(x, 1, s1), tensor_f32(x, 2, s2)};
    static const size_t counts[3] = {2, 1, 0};
    for (int i = 0; i < 3; i++) {
      void *h = holder_of(list, NULL, 0);
      size_t c[1] = {counts[i]};
      memset(out, 0, sizeof out);
      CHECK(infer1(list, h, ins, 1, c, out, 1) == PYOP_OK, "LpList of %zu: %s", counts[i],
            g_err);
      list->cb->destroy_holder(h);
      char code[200];
      snprintf(code, sizeof code,
               "import lpbc_probe\n"
               "assert lpbc_probe.seen == [('list', %zu)], lpbc_probe.seen\n"
               "lpbc_probe.seen.clear()\n",
               counts[i]);
      CHECK(py_ok(code), "a dynamic slot of %zu tensors is not a list of them", counts[i]);
    }
  }
  /* A list[list[int]] attribute after another: each call gets lists of
   * its own, the inner ones too (what the previous call changed is gone). */
  {
    const rec_op *nested = find(&r, "LpNested", false);
    CHECK(nested != NULL, "LpNested registered");
    static const int64_t i0[2] = {1, 2}, i1[1] = {3};
    const pyop_int_list lists[2] = {{i0, 2}, {i1, 1}};
    pyop_attr_view a[2] = {attr_int("n", 1), attr_int("n", 1)};
    memset(&a[1], 0, sizeof a[1]);
    a[1].struct_size = sizeof a[1];
    a[1].name = (pyop_str){"lli", 3};
    a[1].type = PYOP_ATTR_LIST_LIST_INT;
    a[1].default_value.type = PYOP_ATTR_LIST_LIST_INT;
    a[1].default_value.u.int_lists.items = lists;
    a[1].default_value.u.int_lists.count = 2;
    void *h = holder_of(nested, a, 2);
    pyop_tensor in = tensor_f32(x, 1, s1);
    for (int round = 0; round < 2; round++) {
      memset(out, 0, sizeof out);
      CHECK(infer1(nested, h, &in, 1, ONE, out, 1) == PYOP_OK, "LpNested: %s", g_err);
    }
    nested->cb->destroy_holder(h);
    CHECK(py_ok("import lpbc_probe\n"
                "want = (['list', 'list'], [[1, 2], [3]])\n"
                "assert lpbc_probe.seen == [want, want], lpbc_probe.seen\n"
                "lpbc_probe.seen.clear()\n"
                "del want\n"),
          "a list[list[int]] attribute's inner lists are not the call's own");
  }
  /* What compile returns (ignored) is released. */
  {
    pyop_tensor ins[2] = {tensor_f32(x, 1, s1), tensor_f32(x, 2, s2)};
    pyop_tensor_list lists[2] = {{&ins[0], 1}, {&ins[1], 1}};
    pyop_tensor o1 = tensor_f32(x, 1, s1);
    void *h = holder_of(mut, NULL, 0);
    pyop_compile_args ca = {sizeof ca, lists, 2, &o1, 1, NULL, NULL};
    clear_error();
    CHECK(mut->cb->compile(h, &ca) == PYOP_OK, "LpMut compile: %s", g_err);
    mut->cb->destroy_holder(h);
    lifetime_released("compile", true);
  }
  api->reset();
  rec_clear(&r);

  /* Three plugin files in one load: reset removes each one's module, and
   * collects their functions (each in a cycle with its module's globals)
   * itself: no collection before the check. */
  CHECK_OK(load(&r, 3, "lpbc/mod_a.py", "lpbc/mod_b.py", "lpbc/mod_c.py"));
  CHECK(r.n == 3, "three plugin files: %zu ops", r.n);
  CHECK(py_ok("import sys, lpbc_probe\n"
              "assert len(lpbc_probe.names) == 3, lpbc_probe.names\n"
              "assert all(n in sys.modules for n in lpbc_probe.names), lpbc_probe.names\n"),
        "the three plugin modules are in sys.modules");
  api->reset();
  rec_clear(&r);
  CHECK(py_ok("import sys, lpbc_probe\n"
              "left = [n for n in lpbc_probe.names if n in sys.modules]\n"
              "assert not left, left\n"
              "lpbc_probe.names.clear()\n"
              "del left\n"),
        "reset left a plugin module of the load in sys.modules");
  lifetime_released("reset", false);

  /* Entries of the pyop package a plugin left that are not modules, None
   * and another object: the import guard removes both. */
  CHECK_OK(load(&r, 1, "lpbc/guard_forms.py"));
  CHECK(py_ok("import sys\n"
              "left = [n for n in ('pyop.lp_guard_none', 'pyop.lp_guard_object') "
              "if n in sys.modules]\n"
              "assert not left, left\n"
              "del left\n"),
        "a non-module entry of the pyop package a plugin added stayed in sys.modules");
  api->reset();
  rec_clear(&r);

  /* SIG_IGN and SIG_DFL set by a plugin: the host's handlers come back. */
  {
    struct sigaction sa, old1, old2;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = lifetime_usr1;
    CHECK(sigaction(SIGUSR1, &sa, &old1) == 0, "host SIGUSR1");
    sa.sa_handler = lifetime_usr2;
    CHECK(sigaction(SIGUSR2, &sa, &old2) == 0, "host SIGUSR2");
    CHECK_OK(load(&r, 1, "lpbc/sig_forms.py"));
    CHECK(handler_now(SIGUSR1) == (void *)SIG_IGN && handler_now(SIGUSR2) == (void *)SIG_DFL,
          "test bug: the plugin did not set SIG_IGN and SIG_DFL");
    api->reset();
    rec_clear(&r);
    CHECK(handler_now(SIGUSR1) == (void *)lifetime_usr1,
          "reset left SIGUSR1 at the SIG_IGN a plugin set");
    CHECK(handler_now(SIGUSR2) == (void *)lifetime_usr2,
          "reset left SIGUSR2 at the SIG_DFL a plugin set");
    sigaction(SIGUSR1, &old1, NULL);
    sigaction(SIGUSR2, &old2, NULL);
  }

  /* Loader services by ABI minor: find_proto and release_proto (1.2) are
   * used from a loader of 1.2, not of 1.1; log (1.0) from a loader of 1.0. */
  {
    pyop_bridge_entry_fn entry =
        (pyop_bridge_entry_fn)dlsym(bridge_handle, PYOP_BRIDGE_ENTRY_SYMBOL);
    pyop_loader_services svc = lifetime_trap_services();
    pyop_bridge_request req = {sizeof req, PYOP_BRIDGE_ABI_MAJOR, 2, &svc};
    const char *no_proto = "import sys\n"
                           "assert sys.modules['pyop._native'].registered_proto('Nope') is None\n";
    static const struct {
      uint32_t minor;
      int asked;
    } by_minor[] = {{1, 0}, {2, 1}};
    for (size_t i = 0; i < 2; i++) {
      req.abi_minor = by_minor[i].minor;
      const pyop_bridge_api *a = NULL;
      CHECK(entry(&req, &a) == PYOP_OK && a->abi_minor == by_minor[i].minor, "minor %u",
            (unsigned)by_minor[i].minor);
      g_trap_calls = 0;
      CHECK(py_ok(no_proto), "registered_proto (1.%u)", (unsigned)by_minor[i].minor);
      CHECK(g_trap_calls == by_minor[i].asked, "a loader of 1.%u: find_proto asked %d times",
            (unsigned)by_minor[i].minor, g_trap_calls);
    }
    negotiate(0);
    CHECK_OK(load(&r, 1, "minors/plain.py"));
    log_all_clear();
    CHECK(py_ok("import sys; sys.modules['pyop._native'].log(1, 'lifetime log 1.0')"), "log");
    CHECK(strstr(g_log_all, "lifetime log 1.0") != NULL, "a loader of 1.0 got no log line:\n%s",
          g_log_all);
    api->reset();
    rec_clear(&r);
    negotiate(PYOP_BRIDGE_ABI_MINOR);
  }

  /* The host's own "pyop": as referenced after shutdown as before the
   * load; a later session without one leaves sys.modules without "pyop". */
  api->shutdown(); /* the bridge's package leaves sys.modules */
  CHECK(py_ok("import sys, types, lpbc_probe\n"
              "assert 'pyop' not in sys.modules\n"
              "lpbc_probe.host = types.ModuleType('pyop')\n"
              "sys.modules['pyop'] = lpbc_probe.host\n"
              "lpbc_probe.count = sys.getrefcount(lpbc_probe.host)\n"),
        "the host's pyop");
  negotiate(PYOP_BRIDGE_ABI_MINOR);
  CHECK_OK(configure(0));
  CHECK_OK(load(&r, 1, "minors/plain.py"));
  api->reset();
  rec_clear(&r);
  api->shutdown();
  CHECK(py_ok("import sys, lpbc_probe\n"
              "assert sys.modules['pyop'] is lpbc_probe.host, sys.modules.get('pyop')\n"
              "n = sys.getrefcount(lpbc_probe.host)\n"
              "assert n == lpbc_probe.count, (n, lpbc_probe.count)\n"
              "del sys.modules['pyop'], n\n"),
        "the host's pyop after shutdown: not put back, or its reference kept");
  negotiate(PYOP_BRIDGE_ABI_MINOR);
  CHECK_OK(configure(0));
  CHECK_OK(load(&r, 1, "minors/plain.py"));
  api->reset();
  rec_clear(&r);
  api->shutdown();
  CHECK(py_ok("import sys\n"
              "assert 'pyop' not in sys.modules, sys.modules['pyop']\n"
              "del sys.modules['lpbc_probe']\n"),
        "a session without a host pyop put the earlier host's back at shutdown");
  /* The host's sys.modules['pyop'] = None (another form of a host's
   * entry): put back at shutdown as it was. */
  CHECK(py_ok("import sys; sys.modules['pyop'] = None"), "the host's None");
  negotiate(PYOP_BRIDGE_ABI_MINOR);
  CHECK_OK(configure(0));
  CHECK_OK(load(&r, 1, "minors/plain.py"));
  api->reset();
  rec_clear(&r);
  api->shutdown();
  CHECK(py_ok("import sys\n"
              "assert 'pyop' in sys.modules and sys.modules['pyop'] is None, "
              "sys.modules.get('pyop', 'missing')\n"
              "del sys.modules['pyop']\n"),
        "the host's sys.modules['pyop'] = None was not put back at shutdown");
  negotiate(PYOP_BRIDGE_ABI_MINOR);
  CHECK_OK(configure(0));
}

/*
 * Bounds pass (session 16): each buffer, index and number of the bridge at
 * its limit, one below and one above (plugins/bounds):
 * - the plugins' path given as a view shorter than the string it points
 *   into is that view (never read up to a NUL);
 * - an infer_meta result sharing its input's shape after a call of a
 *   higher rank has zeros past its rank;
 * - a Tensor's repr with eight int64-wide dimensions is whole;
 * - the hint of an output index past the last, with eight long-named
 *   dynamic outputs in the host's prototype, is cut at its buffer (511
 *   characters), never written past it; a negative index gets no hint;
 * - malloc_workspace takes 2**63 - 1 (the host is asked) but not 2**63
 *   (refused before the host); an output index past int64 either way is
 *   refused with its whole range in the message;
 * - a launch argument's index at 2**32 - 1 reaches the plan, at 2**32 is
 *   refused; int32, uint32 and bool scalars at their top and one above; a
 *   pointer at 2**64 - 1; a scalar type one past the last known one is
 *   passed on as it is (libpyop names it); the eleventh argument out of
 *   range is named "launch argument 10 (int32) value" whole;
 *   add_workspace at 2**64 - 1 and 2**64;
 * - list attributes of no element, one and two with NULL items (float,
 *   int): only the empty one is a value; one input slot or one output
 *   description at NULL is refused like several;
 * - an input slot past the op's inputs, in execute and in compile (twice:
 *   the second call reuses what the first made), is an argument of its
 *   own with no cache or description slot of the holder's;
 * - a str attribute with a NUL and a non-ASCII character reaches the plugin
 *   whole; a non-ASCII default is registered with its UTF-8 length;
 * - current_ctx of a kind one past the last is a ValueError.
 */
enum { BD_HINT_OUTS = 8 };
static char g_bd_names[BD_HINT_OUTS][80];
static pyop_io_info g_bd_outs[BD_HINT_OUTS];
static pyop_op_info g_bd_info;

static int bd_find_proto(pyop_str op_type, const pyop_op_info **out) {
  *out = NULL;
  if (op_type.len != 6 || memcmp(op_type.data, "BdPast", 6) != 0)
    return PYOP_ENOENT;
  *out = &g_bd_info;
  return PYOP_OK;
}

static void bd_release_proto(const pyop_op_info *info) {
  CHECK(info == &g_bd_info, "release_proto of another info");
}

/* Every launch argument and workspace declared, in order. */
typedef struct bd_sink {
  pyop_launch_arg_view args[32];
  size_t n_args;
  uint64_t ws[4];
  int n_ws;
} bd_sink;

static int bd_sink_launch(void *ctx, const pyop_launch_view *l) {
  bd_sink *s = ctx;
  for (size_t i = 0; i < l->n_args && s->n_args < 32; i++)
    s->args[s->n_args++] = l->args[i];
  return 0;
}

static int bd_sink_ws(void *ctx, uint64_t nbytes) {
  bd_sink *s = ctx;
  if (s->n_ws < 4)
    s->ws[s->n_ws] = nbytes;
  s->n_ws++;
  return 0;
}

/* A host that refuses a workspace over 1 GiB, counting every request. */
static int g_bd_ws_asked;
static uint64_t g_bd_ws_last;

static int bd_alloc_workspace(void *ctx, uint64_t nbytes, void **out) {
  g_bd_ws_asked++;
  g_bd_ws_last = nbytes;
  if (nbytes > (1u << 30))
    return PYOP_ENOMEM;
  return alloc_workspace(ctx, nbytes, out);
}

/* BdStr's attribute default as registered (bytes and length). */
static char g_bd_default[16];
static size_t g_bd_default_len;

static int bd_add_proto(void *ctx, const pyop_proto_view *p) {
  if (p->op_type.len == 5 && memcmp(p->op_type.data, "BdStr", 5) == 0 && p->n_attrs == 1) {
    pyop_str d = p->attrs[0].default_value.u.s;
    g_bd_default_len = d.len;
    memcpy(g_bd_default, d.data, d.len < sizeof g_bd_default ? d.len : sizeof g_bd_default);
  }
  return rec_add_proto(ctx, p);
}

static void case_bounds(void) {
  recorder r = {.fail_at = -1};
  /* The plugins' path as a view shorter than the string it points into
   * (what follows it names no plugin): the view is the path. */
  {
    char *buf = NULL;
    CHECK(asprintf(&buf, "%s/bounds/no_such_plugin.py", g_plugins) > 0, "path");
    pyop_str path = {buf, strlen(g_plugins) + strlen("/bounds")};
    pyop_registrar reg = {sizeof reg, &r, bd_add_proto, rec_add_impl};
    g_bd_default_len = 0;
    clear_error();
    CHECK_OK(api->register_custom_ops(&reg, &path, 1));
    free(buf);
  }
  float x[2] = {1, 2};
  int64_t s2[1] = {2};

  /* An infer_meta result that is its input's description, after a call of
   * a higher rank: zeros past its rank (the input slot's dimensions were
   * rank 3 before). */
  {
    const rec_op *proto = find(&r, "BdRepr", false);
    CHECK(proto != NULL, "BdRepr's prototype registered");
    int64_t s3[3] = {2, 3, 4}, s1[1] = {5};
    void *h = holder_of(proto, NULL, 0);
    pyop_tensor ins[2] = {tensor_f32(NULL, 3, s3), tensor_f32(NULL, 1, s1)};
    for (int round = 0; round < 2; round++) {
      pyop_tensor out;
      memset(&out, 0xff, sizeof out);
      CHECK_OK(infer1(proto, h, &ins[round], 1, ONE, &out, 1));
      bool zeros = true;
      for (int i = ins[round].ndim; i < PYOP_MAX_DIMS; i++)
        zeros = zeros && out.shape[i] == 0;
      CHECK(out.ndim == ins[round].ndim && out.shape[0] == ins[round].shape[0] && zeros,
            "round %d: ndim %d, shape (%lld, %lld, %lld)", round, (int)out.ndim,
            (long long)out.shape[0], (long long)out.shape[1], (long long)out.shape[2]);
    }
    proto->cb->destroy_holder(h);
  }

  /* A Tensor's repr with eight dimensions as wide as int64 gets (an empty
   * tensor: its first dimension is 0). */
  {
    const rec_op *impl = find(&r, "BdRepr", true);
    CHECK(impl != NULL, "BdRepr registered");
    pyop_tensor in;
    memset(&in, 0, sizeof in);
    in.data = x;
    in.dtype = PYOP_DTYPE_FLOAT32;
    in.ndim = PYOP_MAX_DIMS;
    in.shape[0] = 0;
    for (int i = 1; i < PYOP_MAX_DIMS; i++)
      in.shape[i] = INT64_MAX;
    void *h = holder_of(impl, NULL, 0);
    outputs o = {0};
    CHECK_OK(exec1(impl, h, &in, 1, ONE, 1, &o));
    outputs_free(&o);
    impl->cb->destroy_holder(h);
    CHECK(py_ok("import builtins\n"
                "seen = builtins._pyop_bounds.pop('repr')\n"
                "want = '<pyop.Tensor shape=(0%s) dtype=float32>' % (\n"
                "    ', 9223372036854775807' * 7)\n"
                "assert seen == [want], seen\n"
                "del seen, want\n"),
          "the repr of eight int64-wide dimensions");
  }

  /* The hint of an output index past the last: eight dynamic outputs with
   * long names make it longer than its buffer. */
  {
    pyop_bridge_entry_fn entry =
        (pyop_bridge_entry_fn)dlsym(bridge_handle, PYOP_BRIDGE_ENTRY_SYMBOL);
    CHECK(entry != NULL, "no entry symbol");
    pyop_loader_services svc = g_services;
    svc.find_proto = bd_find_proto;
    svc.release_proto = bd_release_proto;
    pyop_bridge_request req = {sizeof req, PYOP_BRIDGE_ABI_MAJOR, PYOP_BRIDGE_ABI_MINOR, &svc};
    CHECK_OK(entry(&req, &api));
    memset(&g_bd_info, 0, sizeof g_bd_info);
    g_bd_info.struct_size = sizeof g_bd_info;
    g_bd_info.op_type = "BdPast";
    g_bd_info.proto_key = "host:bdpast";
    for (int i = 0; i < BD_HINT_OUTS; i++) {
      snprintf(g_bd_names[i], sizeof g_bd_names[i], "dynamic_%d_%.60s", i,
               "nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn");
      g_bd_outs[i] = (pyop_io_info){g_bd_names[i], PYOP_IO_DYNAMIC};
    }
    g_bd_info.outputs = g_bd_outs;
    g_bd_info.n_outputs = BD_HINT_OUTS;
    const rec_op *impl = find(&r, "BdPast", true);
    CHECK(impl != NULL, "BdPast registered");
    CHECK(py_ok("import builtins; builtins._pyop_bounds['past_index'] = 8"), "index set");
    pyop_tensor in = tensor_f32(x, 1, s2);
    void *h = holder_of(impl, NULL, 0);
    outputs o = {0};
    CHECK_OK(exec1(impl, h, &in, 1, ONE, BD_HINT_OUTS, &o));
    outputs_free(&o);
    impl->cb->destroy_holder(h);
    CHECK(py_ok("import builtins\n"
                "R = builtins._pyop_bounds\n"
                "seen = R.pop('past')\n"
                "hint = ''.join(\"; output %d 'dynamic_%d_%s' is dynamic: call \"\n"
                "               'malloc_output_tensor(%d, ...) again for its next tensor'\n"
                "               % (i, i, 'n' * 60, i) for i in range(8))\n"
                "assert len(hint) > 511, len(hint)\n"
                "want = ('IndexError', 'output index 8 out of range (the op has 8 outputs)'\n"
                "        + hint[:511])\n"
                "assert seen == want, seen\n"
                "del R, seen, hint, want\n"),
          "the hint cut at its buffer");
    /* A negative index is out of range with no hint (no output to
     * repeat). */
    CHECK(py_ok("import builtins; builtins._pyop_bounds['past_index'] = -1"), "index set");
    h = holder_of(impl, NULL, 0);
    CHECK_OK(exec1(impl, h, &in, 1, ONE, BD_HINT_OUTS, &o));
    outputs_free(&o);
    impl->cb->destroy_holder(h);
    CHECK(py_ok("import builtins\n"
                "seen = builtins._pyop_bounds.pop('past')\n"
                "want = ('IndexError', 'output index -1 out of range (the op has 8 outputs)')\n"
                "assert seen == want, seen\n"
                "del seen, want\n"),
          "no hint for a negative index");
    req.services = &g_services;
    CHECK_OK(entry(&req, &api));
  }

  /* Numbers at the top of their C types, given to the contexts. */
  {
    const rec_op *impl = find(&r, "BdNumbers", true);
    CHECK(impl != NULL, "BdNumbers registered");
    pyop_tensor in = tensor_f32(x, 1, s2);
    pyop_tensor_list lists[1] = {{&in, 1}};
    outputs o = {0};
    pyop_exec_services es = {sizeof es, &o, alloc_output, bd_alloc_workspace};
    pyop_exec_args ea = {sizeof ea, lists, 1, 1, &es, NULL};
    void *h = holder_of(impl, NULL, 0);
    g_bd_ws_asked = 0;
    clear_error();
    CHECK_OK(impl->cb->execute(h, &ea));
    outputs_free(&o);
    CHECK(g_bd_ws_asked == 1 && g_bd_ws_last == (uint64_t)INT64_MAX,
          "the host asked for %d workspaces (the last of %llu bytes): only 2**63 - 1 is one",
          g_bd_ws_asked, (unsigned long long)g_bd_ws_last);
    CHECK(py_ok("import builtins\n"
                "seen = builtins._pyop_bounds.pop('numbers')\n"
                "M, I = 'malloc_workspace nbytes ', 'output index '\n"
                "L, H = '-9223372036854775808', '9223372036854775807'\n"
                "want = [\n"
                "    ('ValueError', M + '9223372036854775808 is out of range [0, %s]' % H),\n"
                "    ('ValueError', I + '9223372036854775808 is out of range [%s, %s]' % (L, H)),\n"
                "    ('ValueError', I + '-9223372036854775809 is out of range [%s, %s]' % (L, H)),\n"
                "]\n"
                "assert seen[:3] == want, seen\n"
                "assert seen[3][0] == 'RuntimeError', seen[3]\n"
                "assert 'a workspace of 9223372036854775807 bytes' in seen[3][1], seen[3]\n"
                "del seen, want, M, I, L, H\n"),
          "numbers at the top of int64");

    /* Launch arguments (kind, index, scalar_type, value) at their edges. */
    CHECK(py_ok("import builtins\n"
                "builtins._pyop_bounds['launch_args'] = [\n"
                "    (1, (1 << 32) - 1), (1, 1 << 32),\n"
                "    (4, 0, 3, (1 << 31) - 1), (4, 0, 3, 1 << 31), (4, 0, 3, -(1 << 31)),\n"
                "    (4, 0, 7, (1 << 32) - 1), (4, 0, 7, 1 << 32),\n"
                "    (4, 0, 11, 1), (4, 0, 11, 2),\n"
                "    (4, 0, 12, (1 << 64) - 1), (4, 0, 13, 5),\n"
                "]\n"),
          "launch arguments set");
    bd_sink sk;
    memset(&sk, 0, sizeof sk);
    pyop_tensor desc = tensor_f32(NULL, 1, s2);
    pyop_declare_args da = {sizeof da, lists, 1, &desc, 1, &sk, bd_sink_launch, bd_sink_ws};
    clear_error();
    CHECK_OK(impl->cb->declare_launch_args(h, &da));
    CHECK(py_ok("import builtins\n"
                "R = builtins._pyop_bounds\n"
                "seen, nbytes = R.pop('launch'), R.pop('nbytes')\n"
                "del R['launch_args']\n"
                "ok = ('ok', None)\n"
                "def bad(j, what, v, hi, lo='0'):\n"
                "    return ('ValueError', 'launch argument %d %s %d is out of range [%s, %s]'\n"
                "            % (j, what, v, lo, hi))\n"
                "want = [ok, bad(0, 'index', 1 << 32, '4294967295'),\n"
                "        ok, bad(0, '(int32) value', 1 << 31, '2147483647', '-2147483648'), ok,\n"
                "        ok, bad(0, '(uint32) value', 1 << 32, '4294967295'),\n"
                "        ok, bad(0, '(bool) value', 2, '1'),\n"
                "        ok, ok]\n"
                "assert seen == want, seen\n"
                "assert R.pop('wide') == bad(10, '(int32) value', 1 << 31, '2147483647',\n"
                "                            '-2147483648'), 'an eleventh argument'\n"
                "assert nbytes == [('ValueError', 'add_workspace nbytes 18446744073709551616 '\n"
                "                   'is out of range [0, 18446744073709551615]'), ok], nbytes\n"
                "del R, seen, nbytes, ok, bad, want\n"),
          "launch arguments at their edges");
    CHECK(sk.n_args == 7, "%zu launch arguments reached the plan", sk.n_args);
    if (sk.n_args == 7) {
      const pyop_launch_arg_view *a = sk.args;
      CHECK(a[0].kind == PYOP_LAUNCH_ARG_INPUT && a[0].index == UINT32_MAX, "index %u",
            (unsigned)a[0].index);
      CHECK(a[1].scalar_type == PYOP_SCALAR_INT32 && a[1].value.i == INT32_MAX, "int32 top");
      CHECK(a[2].scalar_type == PYOP_SCALAR_INT32 && a[2].value.i == INT32_MIN, "int32 bottom");
      CHECK(a[3].scalar_type == PYOP_SCALAR_UINT32 && a[3].value.u == UINT32_MAX, "uint32 top");
      CHECK(a[4].scalar_type == PYOP_SCALAR_BOOL && a[4].value.u == 1, "bool");
      CHECK(a[5].scalar_type == PYOP_SCALAR_POINTER && a[5].value.p == UINTPTR_MAX, "pointer");
      CHECK(a[6].kind == PYOP_LAUNCH_ARG_SCALAR && a[6].scalar_type == PYOP_SCALAR_POINTER + 1 &&
                a[6].value.u == 0,
            "a scalar type past the last: %d, value %llu", (int)a[6].scalar_type,
            (unsigned long long)a[6].value.u);
    }
    CHECK(sk.n_ws == 1 && sk.ws[0] == UINT64_MAX, "%d workspaces declared", sk.n_ws);
    impl->cb->destroy_holder(h);
  }

  /* A list attribute of no element, one and two with NULL items: only
   * the empty one is a value, the others are refused (never read through
   * NULL), each list type of its own. */
  {
    const rec_op *proto = find(&r, "BdRepr", false);
    static const int32_t types[2] = {PYOP_ATTR_LIST_FLOAT, PYOP_ATTR_LIST_INT};
    for (int k = 0; k < 2; k++) {
      for (size_t count = 0; count < 3; count++) {
        pyop_attr_view a;
        memset(&a, 0, sizeof a);
        a.struct_size = sizeof a;
        a.name = (pyop_str){"bd_list", 7};
        a.type = a.default_value.type = types[k];
        if (types[k] == PYOP_ATTR_LIST_FLOAT)
          a.default_value.u.floats.count = count;
        else
          a.default_value.u.ints.count = count;
        void *h = NULL;
        clear_error();
        int rc = proto->cb->create_holder(proto->ctx, &a, 1, &h);
        if (count == 0) {
          CHECK(rc == PYOP_OK && h != NULL, "type %d, no element: %d %s", (int)types[k], rc,
                g_err);
          proto->cb->destroy_holder(h);
        } else {
          CHECK(rc == PYOP_EPYTHON && h == NULL && err_has("list attribute with NULL items"),
                "type %d, %zu elements at NULL: %d %s", (int)types[k], count, rc, g_err);
        }
      }
    }
  }

  /* One input slot or one output description at NULL: refused like
   * several, never read through NULL. */
  {
    const rec_op *impl = find(&r, "BdNumbers", true);
    void *h = holder_of(impl, NULL, 0);
    outputs o = {0};
    pyop_exec_services es = {sizeof es, &o, alloc_output, alloc_workspace};
    pyop_exec_args ea = {sizeof ea, NULL, 1, 1, &es, NULL};
    clear_error();
    int rc = impl->cb->execute(h, &ea);
    CHECK(rc == PYOP_EINVAL && err_has("bridge execute: invalid arguments"),
          "execute of one slot at NULL: %d %s", rc, g_err);
    pyop_tensor in = tensor_f32(x, 1, s2);
    pyop_tensor_list lists[1] = {{&in, 1}};
    bd_sink sk;
    memset(&sk, 0, sizeof sk);
    pyop_compile_args ca = {sizeof ca, lists, 1, NULL, 1, &sk, NULL};
    clear_error();
    rc = impl->cb->compile(h, &ca);
    CHECK(rc == PYOP_EPYTHON && err_has("output descriptions missing"),
          "compile of one output at NULL: %d %s", rc, g_err);
    impl->cb->destroy_holder(h);
    CHECK(py_ok("import builtins\n"
                "assert 'compiled' not in builtins._pyop_bounds\n"),
          "compile never ran");
  }

  /* A slot past the op's inputs (its kind unknown to the bridge): a
   * tensor as its own argument, twice (the second call reuses the first
   * slot's Tensor), with no cache or description slot of its own. */
  {
    const rec_op *impl = find(&r, "BdExtra", true);
    CHECK(impl != NULL, "BdExtra registered");
    int64_t s1[1] = {1}, s3[1] = {3};
    pyop_tensor ins[2] = {tensor_f32(x, 1, s1), tensor_f32(x, 1, s3)};
    void *h = holder_of(impl, NULL, 0);
    for (int round = 0; round < 2; round++) {
      outputs o = {0};
      CHECK_OK(exec1(impl, h, ins, 2, ONE, 1, &o));
      outputs_free(&o);
    }
    impl->cb->destroy_holder(h);
    CHECK(py_ok("import builtins\n"
                "seen = builtins._pyop_bounds.pop('extra')\n"
                "assert seen == [[(1,), (3,)]] * 2, seen\n"
                "del seen\n"),
          "a slot past the op's inputs");
  }

  /* compile of BdExtra: a description slot past the op's inputs. */
  {
    const rec_op *impl = find(&r, "BdExtra", true);
    int64_t s1[1] = {1}, s3[1] = {3};
    pyop_tensor ins[2] = {tensor_f32(NULL, 1, s1), tensor_f32(NULL, 1, s3)};
    pyop_tensor_list lists[2] = {{&ins[0], 1}, {&ins[1], 1}};
    pyop_tensor desc = tensor_f32(NULL, 1, s2);
    bd_sink sk;
    memset(&sk, 0, sizeof sk);
    pyop_compile_args ca = {sizeof ca, lists, 2, &desc, 1, &sk, NULL};
    void *h = holder_of(impl, NULL, 0);
    for (int round = 0; round < 2; round++) {
      clear_error();
      CHECK_OK(impl->cb->compile(h, &ca));
    }
    impl->cb->destroy_holder(h);
    CHECK(py_ok("import builtins\n"
                "seen = builtins._pyop_bounds.pop('extra_descs')\n"
                "assert seen == [[(1,), (3,), (2,)]] * 2, seen\n"
                "del seen\n"),
          "a description slot past the op's inputs");
  }

  /* A str attribute holding a NUL and a non-ASCII character, as the host
   * gives it (a view: its length, not a terminator) and as the plugin
   * registered its default. */
  {
    const rec_op *impl = find(&r, "BdStr", true), *proto = find(&r, "BdStr", false);
    CHECK(impl != NULL && proto != NULL, "BdStr registered");
    CHECK(g_bd_default_len == 3 && memcmp(g_bd_default, "b\xc3\xa9", 3) == 0,
          "BdStr's default registered as %zu bytes", g_bd_default_len);
    static const char value[] = "x\0y\xc3\xa9z";
    pyop_attr_view a = attr_str("s", "");
    a.default_value.u.s = (pyop_str){value, sizeof value - 1};
    pyop_tensor in = tensor_f32(x, 1, s2);
    void *h = holder_of(impl, &a, 1);
    outputs o = {0};
    CHECK_OK(exec1(impl, h, &in, 1, ONE, 1, &o));
    outputs_free(&o);
    impl->cb->destroy_holder(h);
    CHECK(py_ok("import builtins\n"
                "seen = builtins._pyop_bounds.pop('str')\n"
                "assert seen == ['x\\0y\\u00e9z'], seen\n"
                "del seen\n"),
          "a str attribute with a NUL");
  }

  /* current_ctx of each kind's neighbours: the last kind runs none here,
   * one past it is no kind. */
  CHECK(py_ok("import sys\n"
              "n = sys.modules['pyop._native']\n"
              "for kind, want in ((3, 'no declare_launch_args callback is running'),\n"
              "                   (4, 'unknown callback kind 4'), (-1, 'unknown callback kind -1')):\n"
              "    try:\n"
              "        n.current_ctx(kind)\n"
              "    except (RuntimeError, ValueError) as e:\n"
              "        assert str(e).startswith(want), (kind, e)\n"
              "    else:\n"
              "        raise AssertionError('current_ctx(%d) gave a context' % kind)\n"
              "del n, kind, want\n"),
        "current_ctx past the last kind");

  CHECK(py_ok("import builtins; del builtins._pyop_bounds"), "record dropped");
  api->reset();
  rec_clear(&r);
}

/* A holder of op in lane (0: the main interpreter) with attribute a. */
static void *holder_in(const rec_op *op, pyop_attr_view a, uint32_t lane) {
  void *h = NULL;
  clear_error();
  int rc = lane == 0 ? op->cb->create_holder(op->ctx, &a, 1, &h)
                     : op->cb->create_holder_in(op->ctx, &a, 1, lane, &h);
  CHECK(rc == PYOP_OK && h != NULL, "create_holder of %s in lane %u: %d %s", op->op_type, lane,
        rc, g_err);
  return rc == PYOP_OK ? h : NULL;
}

/* An alias_output past a host's struct_size (ABI 1.1's services): never
 * read, never called. */
static int g_alias_past_calls;
static int alias_past_size(void *ctx, size_t index, size_t input, pyop_tensor *t) {
  (void)ctx, (void)index, (void)input, (void)t;
  g_alias_past_calls++;
  return PYOP_EINVAL;
}

/*
 * What a host does not offer is not offered to an op in a lane either
 * (lane_calls.c wraps the sinks and services given, member by member; the
 * lanes C pass, session 17): EdgeCtx's make_output_ref_input with no
 * alias_output, and with services of ABI 1.1's size whose bytes past it
 * hold a function; its declare_launch_args with no add_workspace; EdgeDyn's
 * dynamic output with no add_output. Each is the error it is in the main
 * interpreter (lane 0), in every lane, and nothing past struct_size is
 * called.
 */
static void lane_sinks_missing(recorder *r, uint32_t lanes) {
  const rec_op *impl = find(r, "EdgeCtx", true), *dyn = find(r, "EdgeDyn", false);
  CHECK(impl != NULL && dyn != NULL, "EdgeCtx and EdgeDyn registered");
  if (impl == NULL || dyn == NULL)
    return;
  CHECK(dyn->lanes == lanes, "EdgeDyn in %u lanes, EdgeCtx in %u", dyn->lanes, lanes);
  for (uint32_t lane = 0; lane <= lanes; lane++) {
    float x[2] = {1, 2};
    int64_t sh[1] = {2};
    pyop_tensor in = tensor_f32(x, 1, sh), out = tensor_f32(NULL, 1, sh);
    pyop_tensor_list lists[1] = {{&in, 1}};
    void *h = holder_in(impl, attr_str("what", "ref"), lane);
    if (h != NULL) {
      outputs o = {0};
      pyop_exec_services none = {sizeof none, &o, alloc_output, alloc_workspace, NULL};
      pyop_exec_args args = {sizeof args, lists, 1, 1, &none, NULL, NULL};
      clear_error();
      int rc = impl->cb->execute(h, &args);
      CHECK(rc == PYOP_EPYTHON && err_has("cannot alias outputs"),
            "lane %u, no alias_output: %d %s", lane, rc, g_err);
      pyop_exec_services old = {offsetof(pyop_exec_services, alias_output), &o, alloc_output,
                                alloc_workspace, alias_past_size};
      args.services = &old;
      g_alias_past_calls = 0;
      clear_error();
      rc = impl->cb->execute(h, &args);
      CHECK(rc == PYOP_EPYTHON && err_has("cannot alias outputs") && g_alias_past_calls == 0,
            "lane %u, services of ABI 1.1's size: %d %s (alias_output past it called %d "
            "times)", lane, rc, g_err, g_alias_past_calls);
      outputs_free(&o);
      impl->cb->destroy_holder(h);
    }
    if ((h = holder_in(impl, attr_str("what", "ws_max"), lane)) != NULL) {
      pyop_declare_args da = {sizeof da, lists, 1, &out, 1, NULL, NULL, NULL};
      clear_error();
      int rc = impl->cb->declare_launch_args(h, &da);
      CHECK(rc == PYOP_EUNSUPPORTED && err_has("the host rejected the workspace"),
            "lane %u, no add_workspace: %d %s", lane, rc, g_err);
      impl->cb->destroy_holder(h);
    }
    if ((h = holder_in(dyn, attr_int("n", 2), lane)) != NULL) {
      pyop_tensor outs[1];
      memset(outs, 0, sizeof outs);
      pyop_infer_args ia = {sizeof ia, lists, 1, outs, 1, NULL, NULL};
      clear_error();
      int rc = dyn->cb->infer_meta(h, &ia);
      CHECK(rc == PYOP_EPYTHON && err_has("does not take dynamic outputs"),
            "lane %u, no add_output: %d %s", lane, rc, g_err);
      dyn->cb->destroy_holder(h);
    }
  }
}

/*
 * Launchy (plugins/launch) in each lane and the main interpreter: compile
 * with no set_artifact, declare_launch_args with no add_launch (its
 * workspace, declared first, still reaches the host): the host's
 * "unsupported" as in the main interpreter (the lanes C pass, session 17).
 */
static void launch_sinks_missing(recorder *r, uint32_t lanes) {
  const rec_op *impl = find(r, "Launchy", true);
  CHECK(impl != NULL && impl->lanes == lanes, "Launchy in %u lanes, expected %u",
        impl != NULL ? impl->lanes : 0, lanes);
  if (impl == NULL)
    return;
  for (uint32_t lane = 0; lane <= impl->lanes; lane++) {
    void *h = holder_in(impl, attr_float("alpha", 0.5), lane);
    if (h == NULL)
      continue;
    float x[2] = {1, 2};
    int64_t s[2] = {1, 2};
    pyop_tensor in[2] = {tensor_f32(x, 2, s), tensor_f32(x, 2, s)}, out = tensor_f32(NULL, 2, s);
    pyop_tensor_list lists[2] = {{&in[0], 1}, {&in[1], 1}};
    sink sk;
    memset(&sk, 0, sizeof sk);
    pyop_compile_args ca = {sizeof ca, lists, 2, &out, 1, &sk, NULL};
    clear_error();
    int rc = impl->cb->compile(h, &ca);
    CHECK(rc == PYOP_EUNSUPPORTED && err_has("the host rejected the artifact"),
          "lane %u, no set_artifact: %d %s", lane, rc, g_err);
    pyop_declare_args da = {sizeof da, lists, 2, &out, 1, &sk, NULL, sink_ws};
    clear_error();
    rc = impl->cb->declare_launch_args(h, &da);
    CHECK(rc == PYOP_EUNSUPPORTED && err_has("the host rejected the launch of kern"),
          "lane %u, no add_launch: %d %s", lane, rc, g_err);
    CHECK(sk.n_ws == 1 && sk.ws[0] == 64, "lane %u: %d workspaces declared", lane, sk.n_ws);
    impl->cb->destroy_holder(h);
  }
}

/* A view of n bytes of src in a heap block of the host's (NULL for 0). */
static pyop_str heap_str(const char *src, size_t n) {
  char *d = n > 0 ? malloc(n) : NULL;
  CHECK(n == 0 || d != NULL, "out of memory");
  if (n > 0)
    memcpy(d, src, n);
  return (pyop_str){d, n};
}

/* Overwrites then frees what heap_str gave. */
static void heap_str_free(pyop_str s) {
  if (s.data != NULL)
    memset((char *)s.data, 'Q', s.len);
  free((char *)s.data);
}

/*
 * The attributes a lane's holder keeps for its twin in the main
 * interpreter are a copy of their own, every byte (lane_calls.c,
 * attrs_copy; the lanes C pass, session 18): FbAttrs
 * (plugins/lane_fallback) is made in each lane (and the main interpreter)
 * from views in the host's heap, which the host overwrites and frees right
 * after create_holder_in (a view is borrowed for the call,
 * docs/bridge-abi.md); its first call in a lane falls back to the main
 * interpreter, whose holder gets what the host gave: a str holding a NUL
 * and a non-ASCII character (the bridge takes a str by its length), a
 * list[str] with an empty item and one holding a NUL, a list[bool], a
 * list[list[int]] with an empty row, an empty list[int]; every name.
 */
static void lane_attrs_kept(recorder *r, uint32_t lanes) {
  const rec_op *impl = find(r, "FbAttrs", true);
  CHECK(impl != NULL && impl->lanes == lanes, "FbAttrs in %u lanes, expected %u",
        impl != NULL ? impl->lanes : 0, lanes);
  if (impl == NULL)
    return;
  static const char text[] = "x\0y\xc3\xa9z";
  static const char *const tag_items[3] = {"ab", "", "c\0d"};
  static const size_t tag_lens[3] = {2, 0, 3};
  static const bool flag_items[3] = {true, false, true};
  static const int64_t row0[2] = {-7, (int64_t)1 << 40}, row2[1] = {5};
  static const char *const names[5] = {"text", "tags", "flags", "rows", "none"};
  void *h[3] = {NULL, NULL, NULL};
  for (uint32_t lane = 0; lane <= lanes && lane < 3; lane++) {
    pyop_attr_view *at = calloc(5, sizeof *at);
    pyop_str *tags = malloc(3 * sizeof *tags);
    bool *flags = malloc(sizeof flag_items);
    int64_t *r0 = malloc(sizeof row0), *r2 = malloc(sizeof row2);
    pyop_int_list *rows = malloc(3 * sizeof *rows);
    CHECK(at != NULL && tags != NULL && flags != NULL && r0 != NULL && r2 != NULL &&
              rows != NULL,
          "out of memory");
    for (int i = 0; i < 3; i++)
      tags[i] = heap_str(tag_items[i], tag_lens[i]);
    memcpy(flags, flag_items, sizeof flag_items);
    memcpy(r0, row0, sizeof row0);
    memcpy(r2, row2, sizeof row2);
    rows[0] = (pyop_int_list){r0, 2};
    rows[1] = (pyop_int_list){NULL, 0};
    rows[2] = (pyop_int_list){r2, 1};
    static const int32_t types[5] = {PYOP_ATTR_STR, PYOP_ATTR_LIST_STR, PYOP_ATTR_LIST_BOOL,
                                     PYOP_ATTR_LIST_LIST_INT, PYOP_ATTR_LIST_INT};
    for (int i = 0; i < 5; i++) {
      at[i].struct_size = sizeof at[i];
      at[i].name = heap_str(names[i], strlen(names[i]));
      at[i].type = at[i].default_value.type = types[i];
    }
    at[0].default_value.u.s = heap_str(text, sizeof text - 1);
    at[1].default_value.u.strs.items = tags;
    at[1].default_value.u.strs.count = 3;
    at[2].default_value.u.bools.items = flags;
    at[2].default_value.u.bools.count = 3;
    at[3].default_value.u.int_lists.items = rows;
    at[3].default_value.u.int_lists.count = 3;
    clear_error();
    int rc = lane == 0 ? impl->cb->create_holder(impl->ctx, at, 5, &h[lane])
                       : impl->cb->create_holder_in(impl->ctx, at, 5, lane, &h[lane]);
    CHECK(rc == PYOP_OK && h[lane] != NULL, "create_holder of FbAttrs in lane %u: %d %s", lane,
          rc, g_err);
    /* The host's memory changes, then goes. */
    for (int i = 0; i < 3; i++)
      heap_str_free(tags[i]);
    for (int i = 0; i < 5; i++)
      heap_str_free(at[i].name);
    heap_str_free(at[0].default_value.u.s);
    memset(flags, 0, sizeof flag_items);
    memset(r0, 0xff, sizeof row0);
    memset(r2, 0xff, sizeof row2);
    memset(rows, 0xff, 3 * sizeof *rows);
    memset(tags, 0xff, 3 * sizeof *tags);
    memset(at, 0xff, 5 * sizeof *at);
    free(at), free(tags), free(flags), free(r0), free(r2), free(rows);
  }
  /* Python's repr of what the host gave, in UTF-8. */
  static const char want[] = "('x\\x00y\xc3\xa9z', ['ab', '', 'c\\x00d'], [True, False, True], "
                             "[[-7, 1099511627776], [], [5]], [])";
  for (uint32_t lane = 0; lane <= lanes && lane < 3; lane++) {
    if (h[lane] == NULL)
      continue;
    for (int round = 0; round < 2; round++) {
      float x[128];
      int64_t sh[1] = {128};
      memset(x, 0, sizeof x);
      pyop_tensor in = tensor_f32(x, 1, sh);
      outputs o = {0};
      int rc = exec1(impl, h[lane], &in, 1, ONE, 1, &o);
      CHECK(rc == PYOP_OK && o.mem[0] != NULL, "FbAttrs made in lane %u, call %d: %d %s", lane,
            round, rc, g_err);
      if (rc == PYOP_OK && o.mem[0] != NULL) {
        const float *y = o.mem[0];
        char got[129];
        size_t n = 0;
        while (n < 128 && y[n] >= 0.0f)
          got[n] = (char)(unsigned char)y[n], n++;
        got[n] = '\0';
        CHECK(n == sizeof want - 1 && memcmp(got, want, n) == 0,
              "FbAttrs made in lane %u, call %d: its holder in the main interpreter got %s, "
              "the host gave %s",
              lane, round, got, want);
      }
      outputs_free(&o);
    }
    impl->cb->destroy_holder(h[lane]);
  }
}

/* A find_proto offered without release_proto: counts its calls. */
static atomic_int g_find_half_calls;
static int find_proto_half(pyop_str op_type, const pyop_op_info **out) {
  (void)op_type;
  atomic_fetch_add(&g_find_half_calls, 1);
  *out = NULL;
  return PYOP_ENOENT;
}

/*
 * A loader offering find_proto without release_proto (what it finds could
 * never be given back) has neither called, in a lane as in the main
 * interpreter (lane 0; lane_start.c's lane services: the lanes C pass,
 * session 18): EdgeCtx's "out_past" (an output index past the op's, whose
 * message would name the prototype's dynamic outputs) fails alike, and
 * find_proto is never called.
 */
static void lane_protos_half(uint32_t lanes) {
  pyop_bridge_entry_fn entry =
      (pyop_bridge_entry_fn)dlsym(bridge_handle, PYOP_BRIDGE_ENTRY_SYMBOL);
  pyop_loader_services svc = g_services;
  svc.find_proto = find_proto_half;
  svc.release_proto = NULL;
  pyop_bridge_request req = {sizeof req, PYOP_BRIDGE_ABI_MAJOR, PYOP_BRIDGE_ABI_MINOR, &svc};
  CHECK_OK(entry(&req, &api));
  recorder r = {.fail_at = -1};
  CHECK_OK(load(&r, 1, "edges/edges.py"));
  const rec_op *impl = find(&r, "EdgeCtx", true);
  CHECK(impl != NULL && impl->lanes == lanes, "EdgeCtx in %u lanes, expected %u",
        impl != NULL ? impl->lanes : 0, lanes);
  for (uint32_t lane = 0; impl != NULL && lane <= impl->lanes; lane++) {
    void *h = holder_in(impl, attr_str("what", "out_past"), lane);
    if (h == NULL)
      continue;
    float x[2] = {1, 2};
    int64_t sh[1] = {2};
    pyop_tensor in = tensor_f32(x, 1, sh);
    outputs o = {0};
    atomic_store(&g_find_half_calls, 0);
    int rc = exec1(impl, h, &in, 1, ONE, 1, &o);
    CHECK(rc == PYOP_EPYTHON && err_has("output index 1"), "lane %u, out_past: %d %s", lane,
          rc, g_err);
    CHECK(atomic_load(&g_find_half_calls) == 0,
          "lane %u: find_proto called %d times without release_proto", lane,
          atomic_load(&g_find_half_calls));
    outputs_free(&o);
    impl->cb->destroy_holder(h);
  }
  api->reset();
  rec_clear(&r);
  req.services = &g_services; /* back to what the other cases use */
  CHECK_OK(entry(&req, &api));
}

/*
 * The execute services an op gets in a lane are the host's, member by
 * member (lane_calls.c; batch 21 survivor
 * bridge.b21.lane_calls.alloc_workspace_by_output: a lane's alloc_workspace
 * was offered when the host offered alloc_output). Configured with 2 lanes
 * (PYOP_TEST_LANES=force, as main() does for the cases marked "lanes"):
 * EdgeCtx's "ws" (malloc_workspace, then its output) with a host offering
 * alloc_workspace alone gets its workspace from the host once and then
 * "no output allocation"; offering alloc_output alone, "no workspace
 * allocation" before any output. In lanes 1 and 2, and in the main
 * interpreter (lane 0). Where this Python cannot run lanes (3.11: the
 * ctest integration.bridge.lane_services) the view says lanes 0 with the
 * reason and only lane 0 runs; tests/lanes/run.sh runs the case with each
 * CPython 3.12+ (with lanes). Then loads of launch (sinks missing),
 * lane_fallback (the attributes kept for the main interpreter) and edges
 * again with a loader offering find_proto without release_proto.
 */
static void case_lane_services(void) {
  recorder r = {.fail_at = -1};
  CHECK_OK(load(&r, 1, "edges/edges.py"));
  const rec_op *impl = find(&r, "EdgeCtx", true);
  CHECK(impl != NULL, "EdgeCtx registered");
  if (impl == NULL)
    return;
  int major = 0, minor = 0;
  sscanf(Py_GetVersion(), "%d.%d", &major, &minor);
  bool can = (major > 3 || (major == 3 && minor >= 12)) &&
             py_ok("import sysconfig\nassert not sysconfig.get_config_var('Py_GIL_DISABLED')");
  const uint32_t want = can ? 2 : 0;
  CHECK(impl->lanes == want, "EdgeCtx in %u lanes, expected %u", impl->lanes, want);
  pyop_exec_services ws_only = {sizeof ws_only, NULL, NULL, alloc_workspace, odd_alias_output};
  pyop_exec_services out_only = {sizeof out_only, NULL, alloc_output, NULL, odd_alias_output};
  for (uint32_t lane = 0; lane <= impl->lanes; lane++) {
    for (int which = 0; which < 2; which++) {
      float x[2] = {1, 2};
      int64_t sh[1] = {2};
      pyop_tensor in = tensor_f32(x, 1, sh);
      pyop_tensor_list lists[1] = {{&in, 1}};
      pyop_attr_view a = attr_str("what", "ws");
      void *h = NULL;
      clear_error();
      int rc = lane == 0 ? impl->cb->create_holder(impl->ctx, &a, 1, &h)
                         : impl->cb->create_holder_in(impl->ctx, &a, 1, lane, &h);
      CHECK(rc == PYOP_OK && h != NULL, "create_holder in lane %u: %d %s", lane, rc, g_err);
      if (h == NULL)
        continue;
      outputs o = {0};
      pyop_exec_services svc = which == 0 ? ws_only : out_only;
      svc.ctx = &o;
      pyop_exec_args args = {sizeof args, lists, 1, 1, &svc, NULL, NULL};
      clear_error();
      rc = impl->cb->execute(h, &args);
      const char *want_msg = which == 0 ? "the host provides no output allocation"
                                        : "the host provides no workspace allocation";
      CHECK(rc == PYOP_EPYTHON && err_has(want_msg), "lane %u, %s alone: %d %s", lane,
            which == 0 ? "alloc_workspace" : "alloc_output", rc, g_err);
      CHECK(o.n_ws == (which == 0 ? 1 : 0), "lane %u: the host allocated %d workspaces", lane,
            o.n_ws);
      outputs_free(&o);
      impl->cb->destroy_holder(h);
    }
  }
  lane_sinks_missing(&r, impl->lanes);
  rec_clear(&r);
  api->reset();
  /* A second load after the reset, in the same lanes: compile and
   * declare_launch_args of Launchy (plugins/launch) with sinks missing. */
  recorder r2 = {.fail_at = -1};
  CHECK_OK(load(&r2, 1, "launch"));
  launch_sinks_missing(&r2, want);
  rec_clear(&r2);
  api->reset();
  /* A third: attributes kept for the main interpreter. */
  recorder r3 = {.fail_at = -1};
  CHECK_OK(load(&r3, 1, "lane_fallback"));
  lane_attrs_kept(&r3, want);
  rec_clear(&r3);
  api->reset();
  lane_protos_half(want);
}

#define BRIDGE_HARNESS_CASES(X)                                               \
  X(basic, "integration bridge", 300, "valgrind")                             \
  X(attrs, "integration bridge", 300, "valgrind")                             \
  X(errors, "integration bridge", 300, "valgrind")                            \
  X(bad, "integration bridge", 300, "valgrind")                               \
  X(sync, "integration bridge", 300, "valgrind")                              \
  X(escape, "integration bridge", 300, "valgrind")                            \
  X(reload, "integration bridge", 300, "valgrind")                            \
  X(threads, "integration bridge", 300, "valgrind")                           \
  X(launch, "integration bridge", 300, "valgrind")                            \
  X(abi, "integration bridge", 300, "")                                       \
  X(start, "integration bridge", 300, "no_host_python")                       \
  X(notinit, "integration bridge", 300, "no_host_python")                     \
  X(clean, "integration bridge", 300, "valgrind")                             \
  X(hostile, "integration bridge", 300, "valgrind")                           \
  X(names, "integration bridge", 300, "valgrind")                             \
  X(artifact_name, "integration bridge", 300, "")                             \
  X(dtypes, "integration bridge", 300, "valgrind")                            \
  X(results, "integration bridge", 300, "valgrind")                           \
  X(views, "integration bridge", 300, "valgrind")                            \
  X(edges, "integration bridge", 300, "valgrind")                            \
  X(probe, "integration bridge", 300, "valgrind")                            \
  X(minors, "integration bridge", 300, "valgrind")                           \
  X(foreign, "integration bridge", 300, "")                                  \
  X(services, "integration bridge", 300, "valgrind")                         \
  X(clobber, "integration bridge", 300, "valgrind")                          \
  X(holders, "integration bridge", 300, "valgrind")                          \
  X(descs, "integration bridge", 300, "valgrind")                            \
  X(scalars, "integration bridge", 300, "valgrind")                          \
  X(outcome, "integration bridge", 300, "")                                  \
  X(loadstate, "integration bridge", 300, "")                                \
  X(loadstate_exit, "integration bridge", 300, "")                           \
  X(state, "integration bridge", 300, "valgrind")                           \
  X(bcstate, "integration bridge", 300, "")                                  \
  X(bcstate_exit, "integration bridge", 300, "")                             \
  X(bcstate_watch, "integration bridge", 300, "")                             \
  X(bcstate_watch_waits, "integration bridge", 300, "")                       \
  X(mapped_signals, "integration bridge", 300, "")                           \
  X(cfstate, "integration bridge", 300, "")                                  \
  X(cfstart, "integration bridge", 300, "no_host_python")                    \
  X(start_lost, "integration bridge", 300, "no_host_python")                 \
  X(configs, "integration bridge", 300, "")                                  \
  X(configs_lost, "integration bridge", 300, "")                             \
  X(dfcall, "integration bridge", 300, "")                                   \
  X(lpobj, "integration bridge", 300, "valgrind") \
  X(lifetime, "integration bridge", 300, "")                                 \
  X(bounds, "integration bridge", 300, "valgrind")                           \
  X(lane_services, "integration bridge", 300, "lanes")

static const harness_case g_cases[] = {BRIDGE_HARNESS_CASES(HARNESS_CASE)};

/* "all": every case marked "valgrind", in list order, in one process. */
static void run_all(void) {
  for (size_t i = 0; i < HARNESS_N(g_cases); i++)
    if (harness_has(&g_cases[i], "valgrind"))
      g_cases[i].run();
}

/* Runs beside the cases that are no ctest of their own. */
static const harness_case g_commands[] = {{"all", run_all, ""}, {"bench", case_bench, ""}};

int main(int argc, char **argv) {
  static const char usage[] = "<artifact_dir> <plugins_dir> CASE|all|bench";
  int status;
  const harness_case *c =
      harness_find(g_commands, HARNESS_N(g_commands), argc == 4 ? argv[3] : NULL);
  if (c == NULL && (c = harness_pick(argc, argv, 3, usage, g_cases, HARNESS_N(g_cases),
                                     &status)) == NULL)
    return status;
  if (argc != 4) {
    fprintf(stderr, "usage: %s --list | %s\n", argv[0], usage);
    return 2;
  }
  snprintf(g_artifact, sizeof g_artifact, "%s", argv[1]);
  snprintf(g_plugins, sizeof g_plugins, "%s", argv[2]);
  g_case = c->name;
  bool host_python = !harness_has(c, "no_host_python");
  if (host_python) {
    Py_InitializeEx(0);
    g_main_ts = PyEval_SaveThread();
  }
  open_bridge();
  if (!host_python) {
    c->run();
    printf("ok %s (%d checks)\n", g_case, g_checks);
    return 0;
  }
  if (harness_has(c, "lanes")) {
    /* 2 lanes, forced where CPython cannot end them safely (3.12.1): the
     * process then ends without finalizing Python (as the lanes tests'
     * hosts do). */
    setenv("PYOP_TEST_LANES", "force", 1);
    pyop_bridge_config cfg = {.struct_size = sizeof cfg,
                              .artifact_dir = {g_artifact, strlen(g_artifact)},
                              .lanes = 2};
    CHECK_OK(api->set_config(&cfg));
    c->run();
    api->shutdown();
    printf("ok %s (%d checks)\n", g_case, g_checks);
    fflush(stdout);
    _exit(0); /* a failed check has exited 1 */
  }
  CHECK_OK(configure(0));
  c->run();
  api->shutdown();
  /* Only a plugin that kept a Tensor (escape) may leave the bridge mapped;
   * after anything else every object of the bridge must have been freed. */
  bool escaped = strcmp(g_case, "escape") == 0 || strcmp(g_case, "all") == 0;
  CHECK(escaped ? g_pin_warnings == 1 : g_pin_warnings == 0,
        "%d \"still referenced at shutdown\" warnings after case %s", g_pin_warnings, g_case);
  CHECK(g_pin_interp_status == PYOP_OK,
        "interpreter_status %d while shutdown warned: the bridge took its running Python for "
        "lost", g_pin_interp_status);
  CHECK(Py_IsInitialized(), "the host's Python is left running");
  dlclose(bridge_handle);
  PyEval_RestoreThread(g_main_ts);
  CHECK(py_ok("import sys; assert 'pyop' not in sys.modules"), "package dropped at shutdown");
  CHECK(Py_FinalizeEx() == 0, "finalize");
  printf("ok %s (%d checks)\n", g_case, g_checks);
  return 0;
}
