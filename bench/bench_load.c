/*
 * Load benchmarks (targets 7 and 7b of bench/README.md), each interleaved
 * in one process:
 * - 7: pyop_load of 200 plugin files of one op each vs importing the same
 *   200 files with importlib alone (spec_from_file_location +
 *   module_from_spec + sys.modules + exec_module, fresh module names each
 *   time);
 * - 7b: pyop_load of ONE file holding 1,000 ops vs pyop_load of the same
 *   1,000 ops split into 1,000 files: loading is linear in the number of
 *   ops whatever the layout (a per-class cost that grows with the file, as
 *   a re-parse of the module per class did, shows as a ratio far above 1).
 *
 * The files are written at run time into temp directories from
 * bench/plugins/load_op.py.in (7b's one file is the template repeated). Python runs with write_bytecode off, so
 * neither side can use a .pyc (libpyop's loader always compiles from
 * source). Untimed between repetitions: pyop_unload on one side; dropping
 * the modules and clearing linecache (what pyop_unload also does) on the
 * other.
 */
#include "bench_python.h"
#include "bench_util.h"

#include <pyop/pyop.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NPLUGINS 200
#define NLAYOUT 1000 /* 7b: ops in the one file, files in the split layout */

static char dir[4096], dir_one[4096], dir_split[4096];
static PyObject *fn_import_all, *fn_drop, *file_list;

static void check(int rc, const char *what) {
  if (rc != PYOP_OK)
    bench_die("%s: %s: %s", what, pyop_status_name(rc), pyop_last_error());
}

static char *read_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) bench_die("cannot open %s", path);
  fseek(f, 0, SEEK_END);
  long len = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *s = malloc((size_t)len + 1);
  if (!s || fread(s, 1, (size_t)len, f) != (size_t)len) bench_die("cannot read %s", path);
  s[len] = '\0';
  fclose(f);
  return s;
}

/* Writes to f the template with every "@N@" replaced by num. */
static void write_template(FILE *f, const char *tpl, const char *num) {
  for (const char *p = tpl; *p;) {
    const char *at = strstr(p, "@N@");
    size_t n = at ? (size_t)(at - p) : strlen(p);
    fwrite(p, 1, n, f);
    if (!at) break;
    fputs(num, f);
    p = at + 3;
  }
}

static FILE *create(const char *path) {
  FILE *f = fopen(path, "w");
  if (!f) bench_die("cannot create %s", path);
  return f;
}

/* Writes into d n plugin files plugin_000.py ... of one op each (one_file
 * false), or one file ops.py with the template n times (one_file true);
 * "@N@" is replaced by the op's index, 000 ... (at least 3 digits). */
static void write_plugins(const char *template_path, const char *d, int n, bool one_file) {
  char *tpl = read_file(template_path);
  char path[4200], num[16];
  FILE *f = NULL;
  if (one_file) {
    snprintf(path, sizeof path, "%s/ops.py", d);
    f = create(path);
  }
  for (int i = 0; i < n; i++) {
    snprintf(num, sizeof num, "%03d", i);
    if (!one_file) {
      snprintf(path, sizeof path, "%s/plugin_%s.py", d, num);
      f = create(path);
    }
    write_template(f, tpl, num);
    if (!one_file) fclose(f);
    else fputs("\n\n", f);
  }
  if (one_file) fclose(f);
  free(tpl);
}

static const char baseline_src[] =
    "import importlib.util, linecache, sys\n"
    "_count = [0]\n"
    "def import_all(files):\n"
    "    names = []\n"
    "    for f in files:\n"
    "        _count[0] += 1\n"
    "        name = '_bench_importlib_%d' % _count[0]\n"
    "        spec = importlib.util.spec_from_file_location(name, f)\n"
    "        module = importlib.util.module_from_spec(spec)\n"
    "        sys.modules[name] = module\n"
    "        spec.loader.exec_module(module)\n"
    "        names.append(name)\n"
    "    return names\n"
    "def drop(names):\n"
    "    for n in names:\n"
    "        sys.modules.pop(n, None)\n"
    "    linecache.clearcache()\n";

static void setup_baseline(void) {
  PyGILState_STATE st = PyGILState_Ensure();
  PyObject *g = PyDict_New();
  if (!g || PyDict_SetItemString(g, "__builtins__", PyEval_GetBuiltins()) < 0)
    bench_python_die("globals");
  PyObject *r = PyRun_String(baseline_src, Py_file_input, g, g);
  if (!r) bench_python_die("the importlib baseline");
  Py_DECREF(r);
  fn_import_all = Py_NewRef(PyDict_GetItemString(g, "import_all"));
  fn_drop = Py_NewRef(PyDict_GetItemString(g, "drop"));
  Py_DECREF(g);
  file_list = PyList_New(NPLUGINS);
  if (!file_list) bench_python_die("file list");
  for (int i = 0; i < NPLUGINS; i++) {
    char path[4200];
    snprintf(path, sizeof path, "%s/plugin_%03d.py", dir, i);
    PyList_SET_ITEM(file_list, i, PyUnicode_DecodeFSDefault(path));
  }
  PyGILState_Release(st);
}

static double run_importlib(void *arg, long n) {
  (void)arg;
  double total = 0.0;
  for (long i = 0; i < n; i++) {
    double t0 = bench_begin();
    PyGILState_STATE st = PyGILState_Ensure();
    PyObject *names = PyObject_CallOneArg(fn_import_all, file_list);
    if (!names) bench_python_die("importlib baseline");
    PyGILState_Release(st);
    total += bench_end(t0);
    st = PyGILState_Ensure();
    PyObject *r = PyObject_CallOneArg(fn_drop, names);
    if (!r) bench_python_die("dropping the baseline's modules");
    Py_DECREF(r);
    Py_DECREF(names);
    PyGILState_Release(st);
  }
  return total;
}

/* What one pyop_load variant loads: ASCEND_CUSTOM_OPP_PATH and the op
 * type of its last op (looked up after each load, untimed). */
typedef struct load_arg {
  const char *path;
  char last_op[32];
} load_arg;

static double run_pyop_load(void *arg, long n) {
  const load_arg *la = arg;
  double total = 0.0;
  for (long i = 0; i < n; i++) {
    setenv("ASCEND_CUSTOM_OPP_PATH", la->path, 1); /* untimed: the row's layout */
    double t0 = bench_begin();
    check(pyop_load(), "pyop_load");
    total += bench_end(t0);
    const pyop_op_info *info;
    check(pyop_op_get(la->last_op, &info), la->last_op);
    pyop_op_info_release(info);
    check(pyop_unload(), "pyop_unload");
  }
  return total;
}

int main(void) {
  bench_init();
  const char *plugins = getenv("PYOP_BENCH_PLUGINS");
  if (!plugins || !plugins[0]) plugins = PYOP_BENCH_PLUGINS_DIR;
  char tpl[4200];
  snprintf(tpl, sizeof tpl, "%s/load_op.py.in", plugins);
  int nlayout = bench_quick() ? 20 : NLAYOUT;
  bench_mkdtemp(dir, sizeof dir, "load");
  bench_mkdtemp(dir_one, sizeof dir_one, "load_one");
  bench_mkdtemp(dir_split, sizeof dir_split, "load_split");
  write_plugins(tpl, dir, NPLUGINS, false);
  write_plugins(tpl, dir_one, nlayout, true);
  write_plugins(tpl, dir_split, nlayout, false);
  setenv("ASCEND_CUSTOM_OPP_PATH", dir, 1);

  int reps = bench_reps_long(); /* ~150 ms a repetition (7b: ~1 s) */
  printf("# bench_load: %d repetitions, medians; %d plugins in %s; 7b: %d ops in %s "
         "and in %s\n", reps, NPLUGINS, dir, nlayout, dir_one, dir_split);
  bench_python_start();
  /* Opens the bridge and imports the pyop package (the plugins import it). */
  check(pyop_load(), "pyop_load");
  check(pyop_unload(), "pyop_unload");
  setup_baseline();

  load_arg l200 = {dir, ""}, lone = {dir_one, ""}, lsplit = {dir_split, ""};
  snprintf(l200.last_op, sizeof l200.last_op, "BenchLoad%03d", NPLUGINS - 1);
  snprintf(lone.last_op, sizeof lone.last_op, "BenchLoad%03d", nlayout - 1);
  snprintf(lsplit.last_op, sizeof lsplit.last_op, "BenchLoad%03d", nlayout - 1);
  bench_variant v[] = {
      {"pyop_load of 200 plugins", run_pyop_load, &l200, 1, 0, NULL, 1},
      {"importlib of the same 200 files", run_importlib, NULL, 1, 0, NULL, 1},
  };
  bench_interleave(v, 2, reps);
  for (int i = 0; i < 2; i++) bench_print_variant(&v[i], reps);
  bench_row_ratio("7", "load 200 plugins: pyop_load / importlib", &v[0], &v[1], "<=", 1.25);
  bench_variants_free(v, 2);

  /* 7b: not counted (a count run would instrument two loads of 1,000 ops,
   * ~10 billion instructions, for a figure a linear loader keeps far from
   * its limit). */
  bench_variant w[] = {
      {"pyop_load of one file of 1,000 ops", run_pyop_load, &lone, 1, 0, NULL, -1},
      {"pyop_load of 1,000 files of one op", run_pyop_load, &lsplit, 1, 0, NULL, -1},
  };
  bench_interleave(w, 2, reps);
  for (int i = 0; i < 2; i++) bench_print_variant(&w[i], reps);
  bench_row_ratio("7b", "load 1,000 ops: one file / 1,000 files", &w[0], &w[1], "<=", 2.0);
  bench_variants_free(w, 2);

  PyGILState_STATE st = PyGILState_Ensure();
  Py_CLEAR(fn_import_all);
  Py_CLEAR(fn_drop);
  Py_CLEAR(file_list);
  PyGILState_Release(st);
  check(pyop_shutdown(), "pyop_shutdown");
  bench_python_stop();
  bench_rmtree(dir);
  bench_rmtree(dir_one);
  bench_rmtree(dir_split);
  return 0;
}
