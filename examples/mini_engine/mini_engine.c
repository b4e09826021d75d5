/*
 * pyop-mini-engine: a small graph engine that runs custom ops written in
 * Python through libpyop, using nothing but include/pyop/pyop.h.
 *
 *   ASCEND_CUSTOM_OPP_PATH=/path/to/examples/ops pyop-mini-engine [-v] GRAPH
 *
 * What an engine does with libpyop, in order:
 * 1. load: pyop_check_need_load, then pyop_load imports every plugin of
 *    ASCEND_CUSTOM_OPP_PATH and registers its ops;
 * 2. plan, node by node: pyop_op_get (prototype: inputs, attribute types,
 *    outputs, capabilities), pyop_op_create with typed attributes,
 *    pyop_op_infer_meta for the output shapes, allocation of every output
 *    in host memory, and for ops that launch a C kernel
 *    pyop_op_declare_launch_args (the launch plan, declared once);
 * 3. run, node by node: pyop_op_execute when the op can execute (outputs
 *    already allocated, so the exec context has no alloc_output), else
 *    pyop_op_launch (libffi calls, no Python); an infer-only op yields
 *    shape-only outputs;
 * 4. print each graph output as `z: float32[2,3] = [..]`, destroy the
 *    instances and pyop_shutdown.
 * On any failure: `mini-engine: <what>: <PYOP_STATUS>: <pyop_last_error()>`
 * on stderr and exit status 1 (2 for bad usage).
 *
 * Python: this engine does not link libpython. It asks libpyop to start the
 * build's default Python (pyop_options.start_python: isolated configuration,
 * left initialised by pyop_shutdown). Built with -DMINI_ENGINE_EMBED_PYTHON (the
 * build tree's mini_engine_embedded) it links libpython instead and starts
 * Python itself, like an engine that already runs Python: Py_InitializeEx(0),
 * release the GIL, and libpyop uses that interpreter.
 */
#ifdef MINI_ENGINE_EMBED_PYTHON
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#endif

#include "graph.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <pyop/pyop.h>

static bool verbose;

/* Prints "mini-engine: <what>: <status>: <detail>" and exits 1. */
static void die_pyop(int rc, const char *fmt, ...) {
  va_list ap;
  fputs("mini-engine: ", stderr);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  const char *detail = pyop_last_error();
  fprintf(stderr, ": %s: %s\n", pyop_status_name(rc),
          detail != NULL && *detail ? detail : pyop_strerror(rc));
  exit(1);
}

static void die(const char *fmt, ...) {
  va_list ap;
  fputs("mini-engine: ", stderr);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  exit(1);
}

static void *xcalloc(size_t n, size_t size) {
  void *p = calloc(n ? n : 1, size ? size : 1);
  if (p == NULL)
    die("out of memory");
  return p;
}

/* Memory a node's attribute values point to, freed with the node. */
typedef struct pool {
  void **ptrs;
  size_t n, cap;
} pool;

static void *pool_alloc(pool *p, size_t n, size_t size) {
  if (p->n == p->cap) {
    p->cap = p->cap ? p->cap * 2 : 16;
    p->ptrs = realloc(p->ptrs, p->cap * sizeof *p->ptrs);
    if (p->ptrs == NULL)
      die("out of memory");
  }
  return p->ptrs[p->n++] = xcalloc(n, size);
}

static void pool_free(pool *p) {
  for (size_t i = 0; i < p->n; i++)
    free(p->ptrs[i]);
  free(p->ptrs);
  memset(p, 0, sizeof *p);
}

/* ---------------------------------------------------------- attributes */

/* The items of "[a,b,c]" (brackets required), split at top-level commas in
 * place; returns the count. */
static size_t list_items(char *text, char ***items, pool *mem, const char *what) {
  size_t len = strlen(text);
  if (len < 2 || text[0] != '[' || text[len - 1] != ']')
    die("%s: a list value is written [a,b,...], got \"%s\"", what, text);
  text[len - 1] = '\0';
  text++;
  size_t cap = 1;
  for (const char *p = text; *p; p++)
    cap += *p == ',';
  char **out = pool_alloc(mem, cap, sizeof *out);
  size_t n = 0;
  int depth = 0;
  char *start = text;
  if (*text == '\0') {
    *items = out;
    return 0;
  }
  for (char *p = text;; p++) {
    depth += *p == '[' ? 1 : *p == ']' ? -1 : 0;
    if ((*p == ',' && depth == 0) || *p == '\0') {
      bool end = *p == '\0';
      *p = '\0';
      out[n++] = start;
      if (end)
        break;
      start = p + 1;
    }
  }
  *items = out;
  return n;
}

static int64_t parse_int(const char *s, const char *what) {
  char *end = NULL;
  errno = 0;
  long long v = strtoll(s, &end, 0);
  if (end == s || *end != '\0' || errno == ERANGE)
    die("%s: \"%s\" is not an int", what, s);
  return v;
}

static double parse_float(const char *s, const char *what) {
  char *end = NULL;
  double v = strtod(s, &end);
  if (end == s || *end != '\0')
    die("%s: \"%s\" is not a float", what, s);
  return v;
}

static bool parse_bool(const char *s, const char *what) {
  if (strcmp(s, "true") == 0 || strcmp(s, "1") == 0)
    return true;
  if (strcmp(s, "false") == 0 || strcmp(s, "0") == 0)
    return false;
  die("%s: \"%s\" is not a bool (true or false)", what, s);
  return false;
}

static int32_t parse_dtype(const char *s, const char *what) {
  int d;
  if (pyop_dtype_from_name(s, &d) != PYOP_OK)
    die("%s: \"%s\" is not a data type (float32, int64, ...)", what, s);
  return d;
}

/* Fills v from text for an attribute of the given type (the type comes from
 * the op's prototype). Values point into text or into mem. */
static void parse_attr_value(char *text, int32_t type, pyop_attr_value *v, pool *mem,
                             const char *what) {
  memset(v, 0, sizeof *v);
  v->type = type;
  char **items = NULL;
  size_t n = 0;
  if (type >= PYOP_ATTR_LIST_INT && type <= PYOP_ATTR_LIST_LIST_INT)
    n = list_items(text, &items, mem, what);
  switch (type) {
  case PYOP_ATTR_INT: v->u.i = parse_int(text, what); break;
  case PYOP_ATTR_FLOAT: v->u.f = parse_float(text, what); break;
  case PYOP_ATTR_BOOL: v->u.b = parse_bool(text, what); break;
  case PYOP_ATTR_STR: v->u.s.data = text; v->u.s.len = strlen(text); break;
  case PYOP_ATTR_DTYPE: v->u.dtype = parse_dtype(text, what); break;
  case PYOP_ATTR_LIST_INT: {
    int64_t *a = pool_alloc(mem, n, sizeof *a);
    for (size_t i = 0; i < n; i++) a[i] = parse_int(items[i], what);
    v->u.ints.items = a;
    v->u.ints.count = n;
    break;
  }
  case PYOP_ATTR_LIST_FLOAT: {
    double *a = pool_alloc(mem, n, sizeof *a);
    for (size_t i = 0; i < n; i++) a[i] = parse_float(items[i], what);
    v->u.floats.items = a;
    v->u.floats.count = n;
    break;
  }
  case PYOP_ATTR_LIST_BOOL: {
    bool *a = pool_alloc(mem, n, sizeof *a);
    for (size_t i = 0; i < n; i++) a[i] = parse_bool(items[i], what);
    v->u.bools.items = a;
    v->u.bools.count = n;
    break;
  }
  case PYOP_ATTR_LIST_STR: {
    pyop_str *a = pool_alloc(mem, n, sizeof *a);
    for (size_t i = 0; i < n; i++) {
      a[i].data = items[i];
      a[i].len = strlen(items[i]);
    }
    v->u.strs.items = a;
    v->u.strs.count = n;
    break;
  }
  case PYOP_ATTR_LIST_DTYPE: {
    int32_t *a = pool_alloc(mem, n, sizeof *a);
    for (size_t i = 0; i < n; i++) a[i] = parse_dtype(items[i], what);
    v->u.dtypes.items = a;
    v->u.dtypes.count = n;
    break;
  }
  case PYOP_ATTR_LIST_LIST_INT: {
    pyop_int_list *a = pool_alloc(mem, n, sizeof *a);
    for (size_t i = 0; i < n; i++) {
      char **inner = NULL;
      size_t m = list_items(items[i], &inner, mem, what);
      int64_t *row = pool_alloc(mem, m, sizeof *row);
      for (size_t j = 0; j < m; j++) row[j] = parse_int(inner[j], what);
      a[i].items = row;
      a[i].count = m;
    }
    v->u.int_lists.items = a;
    v->u.int_lists.count = n;
    break;
  }
  default:
    die("%s: attribute type %d is not supported by the mini engine", what, (int)type);
  }
}

/* -------------------------------------------------------------- nodes */

/* A node as planned: its op instance and the arrays passed to every call. */
typedef struct planned {
  mg_node *node;
  pyop_op *op;
  uint32_t caps;
  bool launch; /* runs through pyop_op_launch (no execute) */
  pyop_tensor_list *inputs;
  size_t n_inputs;
  pyop_tensor *outputs;
  size_t n_outputs;
  pool mem;
} planned;

static const char *kind_name(int32_t kind) {
  return kind == PYOP_IO_OPTIONAL ? "optional" : kind == PYOP_IO_DYNAMIC ? "dynamic" : "required";
}

/* Creates the node's op with its attributes typed by the prototype. */
static void create_op(const mg_graph *g, planned *pl, const pyop_op_info *info) {
  mg_node *nd = pl->node;
  pyop_attr *attrs = pool_alloc(&pl->mem, nd->n_attrs, sizeof *attrs);
  for (size_t k = 0; k < nd->n_attrs; k++) {
    const pyop_attr_info *ai = NULL;
    for (size_t j = 0; j < info->n_attrs; j++)
      if (strcmp(info->attrs[j].name, nd->attrs[k].name) == 0)
        ai = &info->attrs[j];
    if (ai == NULL)
      die("%s:%d: node %s: %s has no attribute \"%s\"", g->file, nd->line, nd->name,
          nd->op_type, nd->attrs[k].name);
    char what[256];
    snprintf(what, sizeof what, "%s:%d: node %s: attribute %s (%s)", g->file, nd->line, nd->name,
             ai->name, pyop_attr_type_name(ai->type));
    attrs[k].name = nd->attrs[k].name;
    parse_attr_value(nd->attrs[k].value, ai->type, &attrs[k].value, &pl->mem, what);
  }
  int rc = pyop_op_create(nd->op_type, attrs, nd->n_attrs, &pl->op);
  if (rc != PYOP_OK)
    die_pyop(rc, "%s:%d: node %s: creating %s", g->file, nd->line, nd->name, nd->op_type);
  pl->caps = pyop_op_capabilities(pl->op);
}

/* Builds the input slots from the graph's tensors (checked against the
 * prototype's input kinds). */
static void bind_inputs(const mg_graph *g, planned *pl, const pyop_op_info *info) {
  mg_node *nd = pl->node;
  if (nd->n_slots > info->n_inputs)
    die("%s:%d: node %s: %zu input slots given, %s has %zu inputs", g->file, nd->line, nd->name,
        nd->n_slots, nd->op_type, info->n_inputs);
  pl->n_inputs = info->n_inputs;
  pl->inputs = pool_alloc(&pl->mem, info->n_inputs, sizeof *pl->inputs);
  for (size_t s = 0; s < info->n_inputs; s++) {
    const mg_slot *slot = s < nd->n_slots ? &nd->slots[s] : NULL;
    size_t count = slot ? slot->count : 0;
    int32_t kind = info->inputs[s].kind;
    if ((kind == PYOP_IO_REQUIRED && count != 1) || (kind == PYOP_IO_OPTIONAL && count > 1))
      die("%s:%d: node %s: input %s of %s is %s: %zu tensors given", g->file, nd->line, nd->name,
          info->inputs[s].name, nd->op_type, kind_name(kind), count);
    pyop_tensor *items = pool_alloc(&pl->mem, count, sizeof *items);
    for (size_t i = 0; i < count; i++) {
      const mg_tensor *mt = &g->tensors[slot->items[i]];
      if (mt->shape_only_op != NULL)
        die("%s:%d: node %s: input %s has no data (%s is infer-only)", g->file, nd->line,
            nd->name, mt->name, mt->shape_only_op);
      items[i] = mt->t;
    }
    pl->inputs[s].items = items;
    pl->inputs[s].count = count;
  }
}

static void print_node(const mg_graph *g, const planned *pl, const char *how) {
  if (!verbose)
    return;
  fprintf(stderr, "mini-engine: node %s: %s -> ", pl->node->name, pl->node->op_type);
  for (size_t k = 0; k < pl->n_outputs; k++) {
    fprintf(stderr, "%s%s: ", k ? ", " : "", g->tensors[pl->node->outputs[k]].name);
    mg_print_desc(stderr, &pl->outputs[k]);
  }
  fprintf(stderr, " (%s)\n", how);
}

/* Plans one node: create, infer_meta, allocate outputs, declare launches. */
static void plan_node(mg_graph *g, planned *pl) {
  mg_node *nd = pl->node;
  const pyop_op_info *info = NULL;
  int rc = pyop_op_get(nd->op_type, &info);
  if (rc != PYOP_OK)
    die_pyop(rc, "%s:%d: node %s: op %s", g->file, nd->line, nd->name, nd->op_type);
  if (nd->n_outputs != info->n_outputs)
    die("%s:%d: node %s: %zu outputs named, %s has %zu", g->file, nd->line, nd->name,
        nd->n_outputs, nd->op_type, info->n_outputs);
  create_op(g, pl, info);
  bind_inputs(g, pl, info);
  pyop_op_info_release(info);

  if (!(pl->caps & PYOP_CAP_INFER_META))
    die("%s:%d: node %s: %s has no infer_meta; this engine plans every shape before it runs",
        g->file, nd->line, nd->name, nd->op_type);
  pl->n_outputs = nd->n_outputs;
  pl->outputs = pool_alloc(&pl->mem, pl->n_outputs, sizeof *pl->outputs);
  rc = pyop_op_infer_meta(pl->op, pl->inputs, pl->n_inputs, pl->outputs, pl->n_outputs);
  if (rc != PYOP_OK)
    die_pyop(rc, "%s:%d: node %s: infer_meta of %s", g->file, nd->line, nd->name, nd->op_type);

  bool runs = (pl->caps & (PYOP_CAP_EXECUTE | PYOP_CAP_LAUNCH)) != 0;
  for (size_t k = 0; k < pl->n_outputs; k++) {
    mg_tensor *mt = &g->tensors[nd->outputs[k]];
    pyop_tensor *t = &pl->outputs[k];
    int64_t n = pyop_tensor_numel(t);
    if (runs && n < 0)
      die("%s:%d: node %s: output %s has an unknown or too large shape", g->file, nd->line,
          nd->name, mt->name);
    t->data = NULL;
    if (runs) {
      t->nbytes = (uint64_t)n * pyop_dtype_size(t->dtype);
      mt->owned = xcalloc((size_t)t->nbytes, 1);
      t->data = mt->owned;
    } else {
      mt->shape_only_op = nd->op_type;
    }
    mt->t = *t;
  }

  if (!(pl->caps & PYOP_CAP_EXECUTE) && (pl->caps & PYOP_CAP_LAUNCH)) {
    pl->launch = true;
    rc = pyop_op_declare_launch_args(pl->op, pl->inputs, pl->n_inputs, pl->outputs,
                                     pl->n_outputs);
    if (rc != PYOP_OK)
      die_pyop(rc, "%s:%d: node %s: declare_launch_args of %s", g->file, nd->line, nd->name,
               nd->op_type);
  }
  print_node(g, pl, pl->launch ? "kernel launch" : runs ? "execute" : "infer-only: shape only");
}

/* Workspaces of one call: allocated on request, freed after the call. */
typedef struct workspaces {
  void **ptrs;
  size_t n, cap;
} workspaces;

static int alloc_workspace(void *user, uint64_t nbytes, void **out) {
  workspaces *ws = user;
  if (ws->n == ws->cap) {
    size_t cap = ws->cap ? ws->cap * 2 : 4;
    void **p = realloc(ws->ptrs, cap * sizeof *p);
    if (p == NULL)
      return -1;
    ws->ptrs = p;
    ws->cap = cap;
  }
  void *mem = calloc(1, nbytes ? (size_t)nbytes : 1);
  if (mem == NULL)
    return -1;
  ws->ptrs[ws->n++] = mem;
  *out = mem;
  return 0;
}

/* Runs one planned node on host buffers. */
static void run_node(const mg_graph *g, planned *pl) {
  if (!(pl->caps & (PYOP_CAP_EXECUTE | PYOP_CAP_LAUNCH)))
    return; /* infer-only: its outputs are descriptions */
  workspaces ws = {0};
  pyop_exec_ctx ctx = PYOP_EXEC_CTX_INIT;
  ctx.user = &ws;
  ctx.alloc_workspace = alloc_workspace;
  /* ctx.alloc_output stays NULL: the outputs were allocated when planning,
   * and an op asking for output i gets outputs[i] if the shape and dtype
   * match what infer_meta promised. */
  int rc = pl->launch
               ? pyop_op_launch(pl->op, pl->inputs, pl->n_inputs, pl->outputs, pl->n_outputs, &ctx)
               : pyop_op_execute(pl->op, pl->inputs, pl->n_inputs, pl->outputs, pl->n_outputs,
                                 &ctx);
  for (size_t i = 0; i < ws.n; i++)
    free(ws.ptrs[i]);
  free(ws.ptrs);
  if (rc != PYOP_OK)
    die_pyop(rc, "%s:%d: node %s: %s of %s", g->file, pl->node->line, pl->node->name,
             pl->launch ? "launch" : "execute", pl->node->op_type);
}

/* ---------------------------------------------------------------- main */

static void usage(FILE *f) {
  fprintf(f, "usage: pyop-mini-engine [-v|--verbose] GRAPH\n"
             "Runs the graph file GRAPH with the Python ops found in ASCEND_CUSTOM_OPP_PATH\n"
             "and prints each graph output. -v traces loading and each node on stderr.\n");
}

int main(int argc, char **argv) {
  const char *path = NULL;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "-v") == 0 || strcmp(argv[i], "--verbose") == 0) {
      verbose = true;
    } else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
      usage(stdout);
      return 0;
    } else if (argv[i][0] == '-' || path != NULL) {
      usage(stderr);
      return 2;
    } else {
      path = argv[i];
    }
  }
  if (path == NULL) {
    usage(stderr);
    return 2;
  }

  mg_graph g;
  char err[512];
  if (mg_graph_parse(path, &g, err, sizeof err) < 0) {
    fprintf(stderr, "mini-engine: %s\n", err);
    mg_graph_free(&g);
    return 1;
  }

#ifdef MINI_ENGINE_EMBED_PYTHON
  /* An engine that already runs Python: libpyop uses this interpreter. The
   * GIL is released so that libpyop (and any thread) can take it. */
  Py_InitializeEx(0);
  PyThreadState *main_ts = PyEval_SaveThread();
  const char *python = "embedded";
#else
  /* No Python in this process: libpyop starts the build's default Python. */
  pyop_options opts = PYOP_OPTIONS_INIT;
  opts.start_python = true;
  int rc0 = pyop_set_options(&opts);
  if (rc0 != PYOP_OK)
    die_pyop(rc0, "pyop_set_options");
  const char *python = "started by libpyop";
#endif

  bool need = false;
  int rc = pyop_check_need_load(&need);
  if (rc != PYOP_OK)
    die_pyop(rc, "pyop_check_need_load");
  if (!need) {
    const char *opp = getenv("ASCEND_CUSTOM_OPP_PATH");
    die("no Python ops to load: ASCEND_CUSTOM_OPP_PATH=\"%s\" has no .py file or package",
        opp ? opp : "");
  }
  rc = pyop_load();
  if (rc != PYOP_OK)
    die_pyop(rc, "pyop_load");
  if (verbose) {
    char key[64] = "?";
    pyop_runtime_key(key, sizeof key);
    char **types = NULL;
    size_t n = 0;
    if (pyop_op_list(&types, &n) == PYOP_OK) {
      fprintf(stderr, "mini-engine: Python %s (%s), %zu ops:", key, python, n);
      for (size_t i = 0; i < n; i++) fprintf(stderr, " %s", types[i]);
      fputc('\n', stderr);
      pyop_free(types);
    }
  }

  planned *plan = xcalloc(g.n_nodes, sizeof *plan);
  for (size_t i = 0; i < g.n_nodes; i++) {
    plan[i].node = &g.nodes[i];
    plan_node(&g, &plan[i]);
  }
  for (size_t i = 0; i < g.n_nodes; i++) run_node(&g, &plan[i]);

  for (size_t i = 0; i < g.n_outputs; i++) {
    const mg_tensor *mt = &g.tensors[g.outputs[i]];
    printf("%s: ", mt->name);
    mg_print_desc(stdout, &mt->t);
    if (mt->shape_only_op != NULL) {
      printf(" (shape only: %s is infer-only)\n", mt->shape_only_op);
    } else {
      fputs(" = ", stdout);
      mg_print_values(stdout, &mt->t);
      putchar('\n');
    }
  }

  for (size_t i = 0; i < g.n_nodes; i++) {
    pyop_op_destroy(plan[i].op);
    pool_free(&plan[i].mem);
  }
  free(plan);
  rc = pyop_shutdown();
  if (rc != PYOP_OK)
    die_pyop(rc, "pyop_shutdown");
#ifdef MINI_ENGINE_EMBED_PYTHON
  PyEval_RestoreThread(main_ts);
  if (Py_FinalizeEx() < 0)
    die("Py_FinalizeEx failed");
#endif
  mg_graph_free(&g);
  return fflush(stdout) == 0 ? 0 : 1;
}
