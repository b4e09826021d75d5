/*
 * Load benchmark (target 7 of bench/README.md): pyop_load of 200 plugin
 * files of one op each vs importing the same 200 files with importlib alone
 * (spec_from_file_location + module_from_spec + sys.modules + exec_module,
 * fresh module names each time), in one process, interleaved.
 *
 * The files are written at run time into a temp directory from
 * bench/plugins/load_op.py.in. Python runs with write_bytecode off, so
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

static char dir[4096];
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

/* Writes plugin_000.py ... from the template, "@N@" replaced by the index. */
static void write_plugins(const char *template_path) {
  char *tpl = read_file(template_path);
  for (int i = 0; i < NPLUGINS; i++) {
    char path[4200], num[8];
    snprintf(path, sizeof path, "%s/plugin_%03d.py", dir, i);
    snprintf(num, sizeof num, "%03d", i);
    FILE *f = fopen(path, "w");
    if (!f) bench_die("cannot create %s", path);
    for (const char *p = tpl; *p;) {
      const char *at = strstr(p, "@N@");
      size_t n = at ? (size_t)(at - p) : strlen(p);
      fwrite(p, 1, n, f);
      if (!at) break;
      fputs(num, f);
      p = at + 3;
    }
    fclose(f);
  }
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

static double run_pyop_load(void *arg, long n) {
  (void)arg;
  double total = 0.0;
  for (long i = 0; i < n; i++) {
    double t0 = bench_begin();
    check(pyop_load(), "pyop_load");
    total += bench_end(t0);
    const pyop_op_info *info;
    check(pyop_op_get("BenchLoad199", &info), "pyop_op_get BenchLoad199");
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
  bench_mkdtemp(dir, sizeof dir, "load");
  write_plugins(tpl);
  setenv("ASCEND_CUSTOM_OPP_PATH", dir, 1);

  int reps = bench_reps_long(); /* ~150 ms a repetition */
  printf("# bench_load: %d repetitions, medians; %d plugins in %s\n", reps, NPLUGINS, dir);
  bench_python_start();
  /* Opens the bridge and imports the pyop package (the plugins import it). */
  check(pyop_load(), "pyop_load");
  check(pyop_unload(), "pyop_unload");
  setup_baseline();

  bench_variant v[] = {
      {"pyop_load of 200 plugins", run_pyop_load, NULL, 1, 0, NULL, 1},
      {"importlib of the same 200 files", run_importlib, NULL, 1, 0, NULL, 1},
  };
  bench_interleave(v, 2, reps);
  for (int i = 0; i < 2; i++) bench_print_variant(&v[i], reps);
  bench_row_ratio("7", "load 200 plugins: pyop_load / importlib", &v[0], &v[1], "<=", 1.25);
  bench_variants_free(v, 2);

  PyGILState_STATE st = PyGILState_Ensure();
  Py_CLEAR(fn_import_all);
  Py_CLEAR(fn_drop);
  Py_CLEAR(file_list);
  PyGILState_Release(st);
  check(pyop_shutdown(), "pyop_shutdown");
  bench_python_stop();
  bench_rmtree(dir);
  return 0;
}
