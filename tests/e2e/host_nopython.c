/*
 * A C host with no Python at all: it does not link libpython and never
 * loads it itself.
 *
 *   host_nopython --list | CASE
 *
 * The cases are HOST_NOPYTHON_CASES at the end (one ctest each,
 * tests/cases.h); the comment above each case_<name> says what it checks.
 *
 * Plugins: E2E_IT_PLUGINS/basic (ScaledAdd) and E2E_PLUGINS/probe (reports
 * the interpreter's configuration), copied into a temporary directory.
 */
#include "e2e_util.h"
#include "../cases.h"

#include <dlfcn.h>
#include <limits.h>

#ifndef E2E_PLUGINS
#error "E2E_PLUGINS must be defined"
#endif
#ifndef E2E_IT_PLUGINS
#error "E2E_IT_PLUGINS must be defined"
#endif

static char *g_tmp;

/* Also on exit() from a failed REQUIRE. */
static void remove_tmp(void) {
  if (g_tmp) remove_tree(g_tmp);
}

/* Py_IsInitialized() of whatever Python is in the process; -1 when none. */
static int python_initialized(void) {
  int (*is_init)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "Py_IsInitialized");
  return is_init ? is_init() : -1;
}

static void run_scaled_add(void) {
  pyop_op *op = NULL;
  pyop_attr a = attr_float("alpha", 3);
  REQUIRE_RC(pyop_op_create("ScaledAdd", &a, 1, &op), PYOP_OK);
  float x[3] = {1, 2, 3}, y[3] = {1, 1, 2};
  pyop_tensor tx = f32_1d(x, 3), ty = f32_1d(y, 3);
  pyop_tensor_list in[2] = {one(&tx), one(&ty)};
  pyop_tensor out[1];
  host_mem mem = {0};
  pyop_exec_ctx ctx = host_ctx(&mem);
  CHECK_RC(pyop_op_execute(op, in, 2, out, 1, &ctx), PYOP_OK);
  for (int i = 0; i < 3 && out[0].data; i++)
    CHECK(((float *)out[0].data)[i] == x[i] + 3 * y[i], "out[%d]", i);
  host_mem_reset(&mem);
  pyop_op_destroy(op);
}

/* The interpreter libpyop started is isolated: no environment, no cwd. */
static void run_probe(void) {
  pyop_op *op = NULL;
  REQUIRE_RC(pyop_op_create("Probe", NULL, 0, &op), PYOP_OK);
  float x[1] = {0};
  pyop_tensor tx = f32_1d(x, 1);
  pyop_tensor_list in[1] = {one(&tx)};
  pyop_tensor out[1];
  host_mem mem = {0};
  pyop_exec_ctx ctx = host_ctx(&mem);
  CHECK_RC(pyop_op_execute(op, in, 1, out, 1, &ctx), PYOP_OK);
  const int64_t *v = out[0].data;
  if (v) {
    fprintf(stderr, "[start] isolated=%lld ignore_environment=%lld cwd_on_path=%lld "
            "user_site=%lld pythonpath_used=%lld\n", (long long)v[0], (long long)v[1],
            (long long)v[2], (long long)v[3], (long long)v[4]);
    CHECK(v[0] == 1, "sys.flags.isolated is %lld", (long long)v[0]);
    CHECK(v[1] == 1, "sys.flags.ignore_environment is %lld", (long long)v[1]);
    CHECK(v[2] == 0, "the cwd is on sys.path");
    CHECK(v[3] == 0, "the user site is enabled");
    CHECK(v[4] == 0, "PYTHONPATH was honoured");
  }
  host_mem_reset(&mem);
  pyop_op_destroy(op);
}

/* (m) pyop_load fails with PYOP_ENOPYTHON saying what is missing and how to
 * fix it (pyop_options.start_python); nothing is registered; scanning, the
 * GE entry point and the doctor report still work and say so. */
static void case_enopython(void) {
  CHECK(python_initialized() == -1, "test bug: this host has Python symbols");
  bool need = false;
  CHECK_RC(pyop_check_need_load(&need), PYOP_OK);
  CHECK(need, "plugins present");
  char key[64];
  CHECK_RC(pyop_runtime_key(key, sizeof key), PYOP_ENOPYTHON);
  CHECK_RC(pyop_load(), PYOP_ENOPYTHON);
  show_error("pyop_load in a host without Python");
  CHECK_ERR_HAS("no Python runtime in the process");
  CHECK_ERR_HAS("Py_IsInitialized");
  CHECK_ERR_HAS("libpython");
  /* The documented fix is named in the message itself. */
  CHECK_ERR_HAS("pyop_options.start_python = true");
  CHECK(pyop_last_status() == PYOP_ENOPYTHON, "last status");
  CHECK_LIST("");
  /* The GE entry point says the same through its status. */
  CHECK(LoadPythonCustomOps() == PYOP_ENOPYTHON, "LoadPythonCustomOps");
  /* The doctor report explains it too. */
  char *doc = NULL;
  CHECK_RC(pyop_doctor(&doc), PYOP_OK);
  CHECK(doc && strstr(doc, "runtime key: none"), "doctor:\n%s", doc ? doc : "");
  pyop_free(doc);
  CHECK_RC(pyop_unload(), PYOP_OK);
  CHECK_RC(pyop_shutdown(), PYOP_OK);
  CHECK(python_initialized() == -1, "a failed load loaded Python anyway");
}

/* Lines the host's log hook received, with their levels. */
static char np_log[16384];
static void np_log_hook(void *user, int level, const char *line) {
  (void)user;
  size_t len = strlen(np_log);
  snprintf(np_log + len, sizeof np_log - len, "%d %s\n", level, line);
}

/* (m) pyop_options.start_python: libpyop starts the build's default Python,
 * isolated (no PYTHONPATH / PYTHONHOME, no cwd, no user site), and the ops
 * run; pyop_shutdown leaves it initialised (never finalized) and the next
 * load uses it. */
static void case_start_python(void) {
  CHECK(python_initialized() == -1, "test bug: this host has Python symbols");
  /* The isolated interpreter ignores these (checked by the Probe op). */
  setenv("PYTHONPATH", "/nonexistent/pyop-e2e-marker", 1);
  setenv("PYTHONHOME", "/nonexistent/pyop-e2e-marker-home", 1);
  pyop_options o = PYOP_OPTIONS_INIT;
  o.start_python = true;
  /* Lanes asked of the build's default (3.11: none run): the note says so
   * as a warning (dataflow pass, session 13: the warning logged at the info
   * level, unseen at the default level). */
  o.lanes = 2;
  pyop_host_hooks h = PYOP_HOST_HOOKS_INIT;
  h.log = np_log_hook;
  REQUIRE_RC(pyop_set_host_hooks(&h), PYOP_OK);
  np_log[0] = '\0';
  int level = pyop_get_log_level();
  CHECK_RC(pyop_set_log_level(PYOP_LOG_INFO), PYOP_OK);
  REQUIRE_RC(pyop_set_options(&o), PYOP_OK);
  REQUIRE_RC(pyop_load(), PYOP_OK);
  CHECK_RC(pyop_set_log_level(level), PYOP_OK);
  CHECK_RC(pyop_set_host_hooks(NULL), PYOP_OK);
  /* ... and which libpython it loaded for which bridge. */
  CHECK(strstr(np_log, "libpyop: info: loaded /") != NULL &&
            strstr(np_log, " to start Python cp311-x86_64 (start_python option)\n") != NULL,
        "no start line; the log:\n%s", np_log);
  {
    char want[200];
    snprintf(want, sizeof want, "%d libpyop: warn: lanes: 2 asked for, but start_python starts "
             "cp311-x86_64, the build's default, which cannot run them", PYOP_LOG_WARN);
    CHECK(strstr(np_log, want) != NULL, "no lanes warning; the log:\n%s", np_log);
  }
  CHECK(python_initialized() == 1, "Python not running after the load");
  CHECK_LIST("IoKinds,PkgDouble,Probe,ScaledAdd,ShadowJson");
  char key[64];
  CHECK_RC(pyop_runtime_key(key, sizeof key), PYOP_OK);
  CHECK(strcmp(key, "cp311-x86_64") == 0, "key %s", key);
  /* Options cannot change under a loaded bridge. */
  CHECK_RC(pyop_set_options(&o), PYOP_ESTATE);
  run_scaled_add();
  run_probe();
  /* Unload/load keeps the interpreter. */
  CHECK_RC(pyop_unload(), PYOP_OK);
  CHECK(python_initialized() == 1, "unload finalised Python");
  CHECK_RC(pyop_load(), PYOP_OK);
  run_scaled_add();
  /* Shutdown releases everything of libpyop's but never finalizes the
   * Python libpyop started: it stays initialised and the next load uses it. */
  CHECK_RC(pyop_shutdown(), PYOP_OK);
  CHECK(python_initialized() == 1, "Python finalized at pyop_shutdown "
        "(Py_IsInitialized() = %d)", python_initialized());
  CHECK_LIST("");
  REQUIRE_RC(pyop_load(), PYOP_OK);
  CHECK_LIST("IoKinds,PkgDouble,Probe,ScaledAdd,ShadowJson");
  run_scaled_add();
  run_probe();
  CHECK_RC(pyop_shutdown(), PYOP_OK);
  CHECK_LIST("");
}

/* (m) The build's Python home is pinned only where it exists: a bridge
 * whose recorded home (sys.base_prefix at build time) is gone (a relocated
 * or removed build prefix) still starts Python, which finds its standard
 * library by its own search (batch 19: pinning the missing home made the
 * start fail, and no test had a bridge with a missing home). The bridge
 * used is a copy of the build's default whose home string is rewritten to
 * a missing directory of the same length, named in PYOP_BRIDGE_DIR. */
static void case_start_python_home_missing(void) {
  CHECK(python_initialized() == -1, "test bug: this host has Python symbols");
  static const char home[] = E2E_PYTHON_HOME;
  size_t hl = strlen(home);
  REQUIRE(hl >= 2 && home[0] == '/', "the build's Python home \"%s\"", home);
  char *dir = path_join(g_tmp, E2E_DEFAULT_ARTIFACT);
  copy_tree(E2E_ARTIFACTS "/" E2E_DEFAULT_ARTIFACT, dir);
  char *so = path_join(dir, "libpyop_bridge.so");
  FILE *f = fopen(so, "r+b");
  REQUIRE(f != NULL, "open %s", so);
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  REQUIRE(size > 0, "size of %s", so);
  char *b = malloc((size_t)size);
  REQUIRE(b != NULL, "malloc");
  fseek(f, 0, SEEK_SET);
  REQUIRE(fread(b, 1, (size_t)size, f) == (size_t)size, "read %s", so);
  /* The home as a whole string: a NUL either side, exactly once. */
  long at = -1;
  int found = 0;
  for (long i = 1; i + (long)hl + 1 <= size; i++)
    if (b[i - 1] == '\0' && b[i + (long)hl] == '\0' && memcmp(b + i, home, hl) == 0) {
      at = i;
      found++;
    }
  REQUIRE(found == 1, "\"%s\" found %d times in %s", home, found, so);
  char gone[PATH_MAX];
  snprintf(gone, sizeof gone, "/%.*s", (int)(hl - 1), "pyop-e2e-no-such-python-home-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");
  REQUIRE(strlen(gone) == hl, "home \"%s\" too long for the test", home);
  struct stat st;
  REQUIRE(stat(gone, &st) != 0, "test bug: %s exists", gone);
  memcpy(b + at, gone, hl);
  fseek(f, 0, SEEK_SET);
  REQUIRE(fwrite(b, 1, (size_t)size, f) == (size_t)size, "write %s", so);
  fclose(f);
  free(b);
  setenv("PYOP_BRIDGE_DIR", dir, 1);
  pyop_options o = PYOP_OPTIONS_INIT;
  o.start_python = true;
  pyop_host_hooks h = PYOP_HOST_HOOKS_INIT;
  h.log = np_log_hook;
  REQUIRE_RC(pyop_set_host_hooks(&h), PYOP_OK);
  np_log[0] = '\0';
  int level = pyop_get_log_level();
  CHECK_RC(pyop_set_log_level(PYOP_LOG_INFO), PYOP_OK);
  REQUIRE_RC(pyop_set_options(&o), PYOP_OK);
  int rc = pyop_load();
  CHECK_RC(pyop_set_log_level(level), PYOP_OK);
  CHECK_RC(pyop_set_host_hooks(NULL), PYOP_OK);
  if (rc != PYOP_OK) show_error("pyop_load with the home missing");
  CHECK(rc == PYOP_OK, "pyop_load: %d; the log:\n%s", rc, np_log);
  CHECK(strstr(np_log, dir) != NULL, "the copy in %s was not the bridge used; the log:\n%s",
        dir, np_log);
  CHECK(python_initialized() == 1, "Python not running after the load");
  CHECK_LIST("IoKinds,PkgDouble,Probe,ScaledAdd,ShadowJson");
  run_scaled_add();
  CHECK_RC(pyop_shutdown(), PYOP_OK);
  unsetenv("PYOP_BRIDGE_DIR");
  free(so);
  free(dir);
}

/* The cases, one ctest e2e.nopython.<name> each: X(name, labels, timeout,
 * variants), tests/cases.h. */
#define HOST_NOPYTHON_CASES(X)                                                \
  X(enopython, "e2e", 60, "")                                                 \
  X(start_python, "e2e", 120, "")                                             \
  X(start_python_home_missing, "e2e", 120, "")

int main(int argc, char **argv) {
  static const harness_case cases[] = {HOST_NOPYTHON_CASES(HARNESS_CASE)};
  int status;
  const harness_case *c = harness_pick(argc, argv, 1, "CASE", cases, HARNESS_N(cases), &status);
  if (c == NULL)
    return status;
  e2e_case = c->name;
  g_tmp = make_temp_dir(e2e_case);
  atexit(remove_tmp);
  char *it = path_join(g_tmp, "basic"), *probe = path_join(g_tmp, "probe");
  char *src = path_join(E2E_IT_PLUGINS, "basic");
  copy_tree(src, it);
  free(src);
  src = path_join(E2E_PLUGINS, "probe");
  copy_tree(src, probe);
  free(src);
  char *opp = xasprintf("%s:%s", it, probe);
  set_opp_path(opp);
  c->run();
  remove_tree(g_tmp);
  free(opp);
  free(it);
  free(probe);
  free(g_tmp);
  g_tmp = NULL;
  return e2e_finish();
}
