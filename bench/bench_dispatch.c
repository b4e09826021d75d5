/*
 * Dispatch benchmarks (targets 1-4 of bench/README.md), one process:
 *
 *   1a  pyop_op_execute of BenchNoop (body `pass`, two input tensors, one
 *       float attribute, no outputs) vs the floor: PyGILState_Ensure +
 *       PyObject_VectorcallMethod("execute") with prebuilt arguments and
 *       kwnames on an instance of the same implementation class + Release,
 *       on the same host thread (which keeps its Python thread state).
 *   1b  the naive C-API bridge (naive_bridge.c) vs pyop_op_execute.
 *   2   pyop_op_execute from 4 fresh host threads in turn vs 1a's figure.
 *   3   pyop_op_infer_meta of BenchInfer (two TensorDesc inputs, one output)
 *       vs its floor (Ensure +
 *       PyObject_Vectorcall of the same infer function with two prebuilt
 *       TensorDesc objects and kwnames + Release).
 *   8   pyop_op_execute of BenchGelu (numpy GELU, float32[1,000,000], zero-copy
 *       in and out) vs the same Python function called directly on numpy
 *       arrays; skipped with a message when numpy is missing.
 *   4   pyop_op_launch of BenchEmpty4 (one launch of pyop_example_empty4) vs
 *       ffi_call of that function with a prepared cif.
 *   9   pyop_op_execute of BenchGeNoop (a GE-style no-op: execute(self, x:
 *       Tensor) -> None, one float32[4] input, no outputs, run by libpyop's
 *       ge package) vs the same no-op written to pyop (BenchNoop1).
 *
 * The host links libpython, initialises it, releases the GIL and calls
 * libpyop from host threads (bench_python.h). Plugins: bench/plugins.
 */
#include "bench_python.h"
#include "bench_util.h"
#include "naive_bridge.h"

#include <dlfcn.h>
#include <ffi.h>
#include <pyop/pyop.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NELEM 16
#define ALPHA 0.5

static struct {
  /* libpyop side */
  pyop_op *noop, *infer, *empty4, *ge_noop, *noop1;
  pyop_tensor in4[1];
  pyop_tensor_list slots4[1];
  float buf_4[4];
  pyop_tensor in[2], out[1];
  pyop_tensor_list slots[2];
  pyop_exec_ctx ctx;
  float buf_x[NELEM], buf_y[NELEM], buf_z[NELEM];
  /* the floors' Python objects (prebuilt once) */
  PyObject *impl;         /* an instance of BenchNoopImpl */
  PyObject *infer_fn;     /* bench_noop */
  PyObject *str_execute;  /* "execute", interned */
  PyObject *kwnames;      /* ("alpha",) */
  PyObject *exec_argv[5]; /* [slot, impl, x, y, alpha] */
  PyObject *infer_argv[4]; /* [slot, desc_x, desc_y, alpha] */
  PyObject *x, *y, *alpha, *desc_x, *desc_y;
  /* the bare libffi call */
  ffi_cif cif;
  ffi_type *arg_types[4];
  void (*kernel)(void *, void *, void *, int64_t);
  void *ffi_a, *ffi_b, *ffi_c;
  int64_t ffi_n;
  void *ffi_values[4];
} B;

static void check(int rc, const char *what) {
  if (rc != PYOP_OK)
    bench_die("%s: %s: %s", what, pyop_status_name(rc), pyop_last_error());
}

/* --------------------------------------------------------------- jobs */

static double job_pyop_execute(void *arg, long n) {
  (void)arg;
  double t0 = bench_begin();
  for (long i = 0; i < n; i++)
    check(pyop_op_execute(B.noop, B.slots, 2, NULL, 0, &B.ctx), "pyop_op_execute");
  return bench_end(t0);
}

/* Row 9: the GE-style no-op and its pyop-native twin, one float32[4] input. */
static double job_ge_noop(void *arg, long n) {
  (void)arg;
  double t0 = bench_begin();
  for (long i = 0; i < n; i++)
    check(pyop_op_execute(B.ge_noop, B.slots4, 1, NULL, 0, &B.ctx), "pyop_op_execute GE");
  return bench_end(t0);
}

static double job_noop1(void *arg, long n) {
  (void)arg;
  double t0 = bench_begin();
  for (long i = 0; i < n; i++)
    check(pyop_op_execute(B.noop1, B.slots4, 1, NULL, 0, &B.ctx), "pyop_op_execute pyop");
  return bench_end(t0);
}

static double job_floor_execute(void *arg, long n) {
  (void)arg;
  PyObject **argv = B.exec_argv + 1;
  double t0 = bench_begin();
  for (long i = 0; i < n; i++) {
    PyGILState_STATE st = PyGILState_Ensure();
    PyObject *r = PyObject_VectorcallMethod(B.str_execute, argv,
                                            3 | PY_VECTORCALL_ARGUMENTS_OFFSET, B.kwnames);
    if (!r) bench_python_die("floor execute");
    Py_DECREF(r);
    PyGILState_Release(st);
  }
  return bench_end(t0);
}

static double job_naive_execute(void *arg, long n) {
  (void)arg;
  double t0 = bench_begin();
  for (long i = 0; i < n; i++)
    if (naive_execute(B.impl, B.x, B.y, ALPHA) != 0) bench_die("naive execute failed");
  return bench_end(t0);
}

static double job_pyop_infer(void *arg, long n) {
  (void)arg;
  pyop_tensor outs[1];
  double t0 = bench_begin();
  for (long i = 0; i < n; i++)
    check(pyop_op_infer_meta(B.infer, B.slots, 2, outs, 1), "pyop_op_infer_meta");
  return bench_end(t0);
}

static double job_floor_infer(void *arg, long n) {
  (void)arg;
  PyObject **argv = B.infer_argv + 1;
  double t0 = bench_begin();
  for (long i = 0; i < n; i++) {
    PyGILState_STATE st = PyGILState_Ensure();
    PyObject *r = PyObject_Vectorcall(B.infer_fn, argv, 2 | PY_VECTORCALL_ARGUMENTS_OFFSET,
                                      B.kwnames);
    if (!r) bench_python_die("floor infer_meta");
    Py_DECREF(r);
    PyGILState_Release(st);
  }
  return bench_end(t0);
}

static double job_pyop_launch(void *arg, long n) {
  (void)arg;
  double t0 = bench_begin();
  for (long i = 0; i < n; i++)
    check(pyop_op_launch(B.empty4, B.slots, 2, B.out, 1, &B.ctx), "pyop_op_launch");
  return bench_end(t0);
}

static double job_ffi_call(void *arg, long n) {
  (void)arg;
  double t0 = bench_begin();
  for (long i = 0; i < n; i++) ffi_call(&B.cif, (void (*)(void))B.kernel, NULL, B.ffi_values);
  return bench_end(t0);
}

/* ---------------------------------------------- row 8: numpy GELU (1M) */

#define GELU_N 1000000

static PyObject *plugin_module(void);

static struct {
  pyop_op *op;              /* BenchGelu, NULL without numpy */
  pyop_tensor in, out;
  pyop_tensor_list slot;
  pyop_exec_ctx ctx;
  float *x, *y;             /* host buffers */
  PyObject *fn, *x_np, *y_np; /* bench_ops.gelu and the floor's arrays */
} G;

/* The host's output buffer, the same every call (as a planned engine's). */
static int gelu_alloc(void *user, size_t index, pyop_tensor *t) {
  (void)user;
  (void)index;
  if (t->nbytes > (uint64_t)GELU_N * sizeof(float)) return -1;
  t->data = G.y;
  return 0;
}

static double job_pyop_gelu(void *arg, long n) {
  (void)arg;
  double t0 = bench_begin();
  for (long i = 0; i < n; i++)
    check(pyop_op_execute(G.op, &G.slot, 1, &G.out, 1, &G.ctx), "pyop_op_execute BenchGelu");
  return bench_end(t0);
}

static double job_direct_gelu(void *arg, long n) {
  (void)arg;
  double t0 = bench_begin();
  for (long i = 0; i < n; i++) {
    PyGILState_STATE st = PyGILState_Ensure();
    PyObject *argv[2] = {G.x_np, G.y_np};
    PyObject *r = PyObject_Vectorcall(G.fn, argv, 2, NULL);
    if (!r) bench_python_die("direct gelu");
    Py_DECREF(r);
    PyGILState_Release(st);
  }
  return bench_end(t0);
}

/* BenchGelu and the floor's objects; false (row skipped) without numpy. */
static bool setup_gelu(void) {
  const pyop_op_info *info;
  if (pyop_op_get("BenchGelu", &info) != PYOP_OK) return false; /* no numpy */
  pyop_op_info_release(info);
  G.x = malloc(GELU_N * sizeof(float));
  G.y = malloc(GELU_N * sizeof(float));
  if (!G.x || !G.y) bench_die("out of memory");
  for (long i = 0; i < GELU_N; i++) G.x[i] = -4.0f + 8.0f * (float)i / (GELU_N - 1);
  memset(&G.in, 0, sizeof G.in);
  G.in.data = G.x;
  G.in.dtype = PYOP_DTYPE_FLOAT32;
  G.in.ndim = 1;
  G.in.shape[0] = GELU_N;
  G.in.nbytes = GELU_N * sizeof(float);
  G.slot = (pyop_tensor_list){&G.in, 1};
  G.ctx = (pyop_exec_ctx)PYOP_EXEC_CTX_INIT;
  G.ctx.alloc_output = gelu_alloc;
  check(pyop_op_create("BenchGelu", NULL, 0, &G.op), "pyop_op_create BenchGelu");
  PyGILState_STATE st = PyGILState_Ensure();
  PyObject *mod = plugin_module();
  G.fn = PyObject_GetAttrString(mod, "gelu");
  PyObject *mk = PyObject_GetAttrString(mod, "gelu_direct_args");
  PyObject *pair = mk ? PyObject_CallFunction(mk, "l", (long)GELU_N) : NULL;
  Py_XDECREF(mk);
  if (!G.fn || !pair || !PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2)
    bench_python_die("gelu setup");
  G.x_np = Py_NewRef(PyTuple_GET_ITEM(pair, 0));
  G.y_np = Py_NewRef(PyTuple_GET_ITEM(pair, 1));
  Py_DECREF(pair);
  PyGILState_Release(st);
  return true;
}

static void drop_gelu(void) {
  if (!G.op) return;
  PyGILState_STATE st = PyGILState_Ensure();
  Py_CLEAR(G.fn);
  Py_CLEAR(G.x_np);
  Py_CLEAR(G.y_np);
  PyGILState_Release(st);
  pyop_op_destroy(G.op);
  free(G.x);
  free(G.y);
}

/* ------------------------------------------------------------ variants */

static bench_worker w0; /* the host thread of targets 1, 3 and 4 */

typedef struct on_w0 {
  double (*job)(void *, long);
} on_w0;

static double run_on_w0(void *arg, long n) {
  return bench_worker_run(&w0, ((on_w0 *)arg)->job, NULL, n);
}

/* Target 2: n calls split over 4 brand-new host threads, one after another
 * (each ends before the next starts); the sum of their times. */
static double run_four_threads(void *arg, long n) {
  on_w0 *j = arg;
  double total = 0.0;
  for (int k = 0; k < 4; k++) {
    long part = n / 4 + (k == 3 ? n % 4 : 0);
    if (part > 0) total += bench_fresh_thread_run(j->job, NULL, part);
  }
  return total;
}

/* The naive bridge on a fresh thread that never called libpyop: it has no
 * Python thread state, so each PyGILState_Ensure makes one and each
 * Release deletes it (the thread-state trap). */
static double run_fresh_thread(void *arg, long n) {
  return bench_fresh_thread_run(((on_w0 *)arg)->job, NULL, n);
}

/* --------------------------------------------------------------- setup */

static void setup_tensors(void) {
  for (int i = 0; i < NELEM; i++) {
    B.buf_x[i] = (float)i;
    B.buf_y[i] = 1.0f;
  }
  float *bufs[3] = {B.buf_x, B.buf_y, B.buf_z};
  for (int i = 0; i < 3; i++) {
    pyop_tensor *t = i < 2 ? &B.in[i] : &B.out[0];
    memset(t, 0, sizeof *t);
    t->data = bufs[i];
    t->dtype = PYOP_DTYPE_FLOAT32;
    t->format = PYOP_FORMAT_ND;
    t->ndim = 1;
    t->shape[0] = NELEM;
    t->nbytes = sizeof B.buf_x;
  }
  B.slots[0] = (pyop_tensor_list){&B.in[0], 1};
  B.slots[1] = (pyop_tensor_list){&B.in[1], 1};
  B.in4[0] = B.in[0];
  B.in4[0].data = B.buf_4;
  B.in4[0].nbytes = sizeof B.buf_4;
  B.in4[0].shape[0] = 4;
  B.slots4[0] = (pyop_tensor_list){&B.in4[0], 1};
  B.ctx = (pyop_exec_ctx)PYOP_EXEC_CTX_INIT;
}

/* The plugin module the load imported (unique name "_pyop_plugin_<n>_bench_ops"). */
static PyObject *plugin_module(void) {
  PyObject *mods = PySys_GetObject("modules"); /* borrowed */
  PyObject *key, *value;
  Py_ssize_t pos = 0;
  while (mods && PyDict_Next(mods, &pos, &key, &value)) {
    const char *k = PyUnicode_AsUTF8(key);
    size_t len = k ? strlen(k) : 0;
    if (k && strncmp(k, "_pyop_plugin_", 13) == 0 && len > 10 &&
        strcmp(k + len - 10, "_bench_ops") == 0)
      return value;
  }
  bench_die("the bench_ops plugin module is not in sys.modules");
}

static void setup_python_objects(void) {
  PyGILState_STATE st = PyGILState_Ensure();
  PyObject *mod = plugin_module();
  PyObject *cls = PyObject_GetAttrString(mod, "BenchNoopImpl");
  B.infer_fn = PyObject_GetAttrString(mod, "bench_infer");
  B.impl = cls ? PyObject_CallNoArgs(cls) : NULL;
  Py_XDECREF(cls);
  B.str_execute = PyUnicode_InternFromString("execute");
  /* Interned, as a real bridge's would be: keyword matching against the
   * function's parameter names is then a pointer comparison. */
  PyObject *kw = PyUnicode_InternFromString("alpha");
  B.kwnames = kw ? PyTuple_Pack(1, kw) : NULL;
  Py_XDECREF(kw);
  B.x = PyMemoryView_FromMemory((char *)B.buf_x, sizeof B.buf_x, PyBUF_READ);
  B.y = PyMemoryView_FromMemory((char *)B.buf_y, sizeof B.buf_y, PyBUF_READ);
  B.alpha = PyFloat_FromDouble(ALPHA);
  PyObject *pyop = PyImport_ImportModule("pyop");
  PyObject *desc = pyop ? PyObject_GetAttrString(pyop, "TensorDesc") : NULL;
  B.desc_x = desc ? PyObject_CallFunction(desc, "((i)s)", NELEM, "float32") : NULL;
  B.desc_y = desc ? PyObject_CallFunction(desc, "((i)s)", NELEM, "float32") : NULL;
  Py_XDECREF(desc);
  Py_XDECREF(pyop);
  if (!B.impl || !B.infer_fn || !B.str_execute || !B.kwnames || !B.x || !B.y || !B.alpha ||
      !B.desc_x || !B.desc_y)
    bench_python_die("preparing the floors' objects");
  PyObject *ev[5] = {NULL, B.impl, B.x, B.y, B.alpha};
  memcpy(B.exec_argv, ev, sizeof ev);
  PyObject *iv[4] = {NULL, B.desc_x, B.desc_y, B.alpha};
  memcpy(B.infer_argv, iv, sizeof iv);
  PyGILState_Release(st);
}

static void drop_python_objects(void) {
  PyGILState_STATE st = PyGILState_Ensure();
  PyObject *objs[] = {B.impl, B.infer_fn, B.str_execute, B.kwnames, B.x,
                      B.y,    B.alpha,    B.desc_x,      B.desc_y};
  for (size_t i = 0; i < sizeof objs / sizeof objs[0]; i++) Py_XDECREF(objs[i]);
  PyGILState_Release(st);
}

static void setup_ffi(const char *kernels) {
  void *h = dlopen(kernels, RTLD_NOW | RTLD_LOCAL);
  if (!h) bench_die("dlopen %s: %s", kernels, dlerror());
  *(void **)&B.kernel = dlsym(h, "pyop_example_empty4");
  if (!B.kernel) bench_die("dlsym pyop_example_empty4: %s", dlerror());
  B.arg_types[0] = B.arg_types[1] = B.arg_types[2] = &ffi_type_pointer;
  B.arg_types[3] = &ffi_type_sint64;
  if (ffi_prep_cif(&B.cif, FFI_DEFAULT_ABI, 4, &ffi_type_void, B.arg_types) != FFI_OK)
    bench_die("ffi_prep_cif failed");
  B.ffi_a = B.buf_x;
  B.ffi_b = B.buf_y;
  B.ffi_c = B.buf_z;
  B.ffi_n = NELEM;
  B.ffi_values[0] = &B.ffi_a;
  B.ffi_values[1] = &B.ffi_b;
  B.ffi_values[2] = &B.ffi_c;
  B.ffi_values[3] = &B.ffi_n;
}

int main(void) {
  bench_init();
  const char *plugins = getenv("PYOP_BENCH_PLUGINS");
  if (!plugins || !plugins[0]) plugins = PYOP_BENCH_PLUGINS_DIR;
  const char *kernels = getenv("PYOP_BENCH_KERNELS");
  if (!kernels || !kernels[0]) kernels = PYOP_BENCH_KERNELS_PATH;
  char opp[4096];
  snprintf(opp, sizeof opp, "%s/bench_ops.py:%s/bench_ge_ops.py", plugins, plugins);
  /* Before Python starts: os.environ is read once, at start-up. */
  setenv("ASCEND_CUSTOM_OPP_PATH", opp, 1);
  setenv("PYOP_BENCH_KERNELS", kernels, 1);

  int reps = bench_reps();
  printf("# bench_dispatch: %d repetitions per row, medians; plugins %s\n", reps, opp);
  setup_tensors();
  bench_python_start();
  check(pyop_load(), "pyop_load");
  pyop_attr alpha = {"alpha", {.type = PYOP_ATTR_FLOAT, .u.f = ALPHA}};
  check(pyop_op_create("BenchNoop", &alpha, 1, &B.noop), "pyop_op_create BenchNoop");
  check(pyop_op_create("BenchInfer", &alpha, 1, &B.infer), "pyop_op_create BenchInfer");
  check(pyop_op_create("BenchEmpty4", NULL, 0, &B.empty4), "pyop_op_create BenchEmpty4");
  check(pyop_op_create("BenchGeNoop", NULL, 0, &B.ge_noop), "pyop_op_create BenchGeNoop");
  check(pyop_op_create("BenchNoop1", NULL, 0, &B.noop1), "pyop_op_create BenchNoop1");
  check(pyop_op_declare_launch_args(B.empty4, B.slots, 2, B.out, 1), "declare BenchEmpty4");
  setup_python_objects();
  setup_ffi(kernels);
  bench_worker_start(&w0);

  /* ---- targets 1 and 2: execute */
  if (bench_want("execute")) {
    on_w0 j_pyop = {job_pyop_execute}, j_floor = {job_floor_execute},
          j_naive = {job_naive_execute};
    bench_variant ex[] = {
        {"pyop_op_execute", run_on_w0, &j_pyop, 0, 0, NULL},
        {"floor (Ensure+VectorcallMethod)", run_on_w0, &j_floor, 0, 0, NULL},
        {"naive C-API bridge", run_on_w0, &j_naive, 0, 0, NULL},
        /* multi-threaded: timed only (count_n -1). A fixed n: what row 2
         * measures -- a thread state made once per thread -- is spread over
         * n / 4 calls, so n must not follow the calibration. */
        {"pyop_op_execute, 4 fresh threads in turn", run_four_threads, &j_pyop,
         bench_scale(100000), 0, NULL, -1},
        {"naive bridge, thread without thread state", run_fresh_thread, &j_naive, 0, 0, NULL, -1},
    };
    size_t nex = sizeof ex / sizeof ex[0];
    bench_interleave(ex, nex, reps);
    for (size_t i = 0; i < nex; i++) bench_print_variant(&ex[i], reps);
    bench_row_ratio("1a", "execute: pyop_op_execute / floor", &ex[0], &ex[1], "<=", 2.0);
    bench_row_ratio("1b", "execute: naive bridge / pyop_op_execute", &ex[2], &ex[0], ">=", 3.0);
    bench_row_ratio("2", "execute: 4 host threads in turn / one thread", &ex[3], &ex[0], "<=",
                    1.2);
    bench_row_ratio("2i", "naive bridge on a thread without tstate / pyop_op_execute", &ex[4],
                    &ex[0], "info", 0);
    bench_variants_free(ex, nex);
  }

  /* ---- row 9: a GE-style op costs what a pyop op costs */
  if (bench_want("ge")) {
    on_w0 j_ge = {job_ge_noop}, j_p1 = {job_noop1};
    bench_variant gv[] = {
        {"pyop_op_execute BenchGeNoop (GE API)", run_on_w0, &j_ge, 0, 0, NULL},
        {"pyop_op_execute BenchNoop1 (pyop)", run_on_w0, &j_p1, 0, 0, NULL},
    };
    bench_interleave(gv, 2, reps);
    for (size_t i = 0; i < 2; i++) bench_print_variant(&gv[i], reps);
    bench_row_ratio("9", "execute: GE-style no-op / the same pyop no-op", &gv[0], &gv[1], "<=",
                    1.5);
    bench_variants_free(gv, 2);
  }

  /* ---- target 3: infer_meta */
  if (bench_want("infer")) {
    on_w0 j_pinf = {job_pyop_infer}, j_finf = {job_floor_infer};
    bench_variant inf[] = {
        {"pyop_op_infer_meta", run_on_w0, &j_pinf, 0, 0, NULL},
        {"floor (Ensure+Vectorcall)", run_on_w0, &j_finf, 0, 0, NULL},
    };
    bench_interleave(inf, 2, reps);
    for (size_t i = 0; i < 2; i++) bench_print_variant(&inf[i], reps);
    bench_row_ratio("3", "infer_meta: pyop_op_infer_meta / floor", &inf[0], &inf[1], "<=", 2.5);
    bench_variants_free(inf, 2);
  }

  /* ---- target 4: launch */
  if (bench_want("launch")) {
    on_w0 j_launch = {job_pyop_launch}, j_ffi = {job_ffi_call};
    bench_variant la[] = {
        {"pyop_op_launch", run_on_w0, &j_launch, 0, 0, NULL},
        {"bare ffi_call", run_on_w0, &j_ffi, 0, 0, NULL},
    };
    bench_interleave(la, 2, reps);
    for (size_t i = 0; i < 2; i++) bench_print_variant(&la[i], reps);
    bench_row_ratio("4", "launch: pyop_op_launch / bare ffi_call", &la[0], &la[1], "<=", 1.5);
    bench_variants_free(la, 2);
  }

  /* ---- row 8: a numpy op through libpyop vs the same function called directly */
  /* Not under callgrind (the instruction count run): a million-element
   * numpy op there takes minutes, and its count is numpy's, not libpyop's. */
  if (bench_want("numpy") && !bench_counting()) {
    if (!setup_gelu()) {
      printf("# 8: numpy GELU row skipped: numpy is not installed for this Python\n");
    } else {
      on_w0 j_pg = {job_pyop_gelu}, j_dg = {job_direct_gelu};
      bench_variant ge[] = {
          {"pyop_op_execute BenchGelu float32[1M]", run_on_w0, &j_pg, 0, 0, NULL},
          {"gelu() called directly on numpy arrays", run_on_w0, &j_dg, 0, 0, NULL},
      };
      bench_interleave(ge, 2, reps);
      for (size_t i = 0; i < 2; i++) bench_print_variant(&ge[i], reps);
      bench_row_ratio("8", "numpy GELU float32[1M]: pyop_op_execute / direct call", &ge[0],
                      &ge[1], "<=", 1.05);
      bench_variants_free(ge, 2);
    }
  }

  bench_worker_stop(&w0);
  drop_gelu();
  drop_python_objects();
  pyop_op_destroy(B.noop);
  pyop_op_destroy(B.infer);
  pyop_op_destroy(B.empty4);
  pyop_op_destroy(B.ge_noop);
  pyop_op_destroy(B.noop1);
  check(pyop_shutdown(), "pyop_shutdown");
  bench_python_stop();
  return 0;
}
