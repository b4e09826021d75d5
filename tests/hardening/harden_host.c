/*
 * A C host without Python (it does not link libpython) that opts in to
 * pyop_options.start_python: libpyop loads the build's libpython and the
 * bridge starts an isolated interpreter. The environment is hostile:
 *   PYTHONPATH     -> fixtures/evil_path (a malicious pyop.py) and
 *                     fixtures/evil_site (sitecustomize.py, usercustomize.py)
 *   PYTHONSTARTUP  -> fixtures/startup.py
 *   cwd            -> fixtures/cwd_evil (evil.py, pyop.py)
 *   ASCEND_CUSTOM_OPP_PATH = ":<shadow>:<good>::rel_elem:."
 * and the plugin directory fixtures/shadow holds os.py, json.py,
 * sitecustomize.py, usercustomize.py and a .pth file.
 *
 *   harden_host --list | ARTIFACT_DIR FIXTURES CASE
 *
 * The cases are HARDEN_HOST_CASES at the end (one ctest each,
 * tests/cases.h): start_python (the checks above) and nopython.
 *
 * Each malicious file writes a marker into $HARDEN_MARKERS when it runs;
 * the directory must stay empty. Python-side facts (sys.flags, sys.path,
 * sys.modules) are checked by running a probe in the interpreter libpyop
 * started, through the C API found with dlsym (libpython is RTLD_GLOBAL).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <ftw.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pyop/pyop.h"
#include "../cases.h"

static int failures;
static char log_lines[65536];
static size_t log_len;

#define CHECK(cond, ...)                                                   \
  do {                                                                     \
    if (!(cond)) {                                                         \
      fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);      \
      fprintf(stderr, __VA_ARGS__);                                        \
      fputc('\n', stderr);                                                 \
      failures++;                                                          \
    }                                                                      \
  } while (0)

static void on_log(void *user, int level, const char *line) {
  (void)user;
  (void)level;
  size_t n = strlen(line);
  if (log_len + n + 2 < sizeof log_lines) {
    memcpy(log_lines + log_len, line, n);
    log_len += n;
    log_lines[log_len++] = '\n';
    log_lines[log_len] = '\0';
  }
}

/* The op types joined with ','. */
static void op_list(char *buf, size_t n) {
  char **types = NULL;
  size_t count = 0;
  buf[0] = '\0';
  if (pyop_op_list(&types, &count) != PYOP_OK) return;
  size_t used = 0;
  for (size_t i = 0; i < count; i++)
    used += (size_t)snprintf(buf + used, used < n ? n - used : 0, "%s%s", i ? "," : "",
                             types[i]);
  pyop_free(types);
}

static int count_markers(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return -1;
  int n = 0;
  struct dirent *de;
  while ((de = readdir(d)) != NULL)
    if (de->d_name[0] != '.') {
      fprintf(stderr, "marker: %s (a malicious file ran)\n", de->d_name);
      n++;
    }
  closedir(d);
  return n;
}

/* Runs Python source in __main__ of the interpreter libpyop started;
 * 0 when it raised nothing. */
static int py_run(const char *code) {
  int (*ensure)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "PyGILState_Ensure");
  void (*release)(int) = (void (*)(int))dlsym(RTLD_DEFAULT, "PyGILState_Release");
  int (*run)(const char *) = (int (*)(const char *))dlsym(RTLD_DEFAULT, "PyRun_SimpleString");
  if (!ensure || !release || !run) {
    fprintf(stderr, "no Python C API in the process\n");
    return -1;
  }
  int st = ensure();
  int rc = run(code);
  release(st);
  return rc;
}

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *ftw) {
  (void)st;
  (void)flag;
  (void)ftw;
  return remove(p);
}

static const char *g_artifact; /* ARTIFACT_DIR */
static char g_fixtures[4096];  /* FIXTURES, resolved */

/* Without the opt-in: the user reads PYOP_ENOPYTHON, nothing registered. */
static void case_nopython(void) {
  char ops[4096];
  int rc = pyop_load();
  CHECK(rc == PYOP_ENOPYTHON, "%s", pyop_status_name(rc));
  CHECK(strstr(pyop_last_error(), "no Python runtime in the process") != NULL, "%s",
        pyop_last_error());
  op_list(ops, sizeof ops);
  CHECK(strcmp(ops, "") == 0, "%s", ops);
}

/* pyop_options.start_python in the hostile environment of the file's
 * comment: the ops of shadow/ and good/ only, relative elements refused with
 * a warning, an isolated interpreter (flags, sys.path, the artifact's pyop)
 * whose sys.path a load, an unload and a second load leave as it was;
 * shutdown keeps it initialised without the plugins or the package. */
static void case_start_python(void) {
  const char *fixtures = g_fixtures, *artifact = g_artifact;
  char ops[4096];
  pyop_options o = PYOP_OPTIONS_INIT;
  o.start_python = true;
  CHECK(pyop_set_options(&o) == PYOP_OK, "%s", pyop_last_error());
  int rc = pyop_load();
  CHECK(rc == PYOP_OK, "%s: %s", pyop_status_name(rc), pyop_last_error());
  op_list(ops, sizeof ops);
  CHECK(strcmp(ops, "HardenAdd,ShadowJson,ShadowOs,SiteCustomizePlugin,"
                    "UserCustomizePlugin") == 0,
        "ops: %s", ops);
  CHECK(strstr(log_lines, "element 'rel_elem' skipped: relative path refused") != NULL,
        "log:\n%s", log_lines);
  CHECK(strstr(log_lines, "element '.' skipped: relative path refused") != NULL,
        "log:\n%s", log_lines);

  char probe[16384];
  snprintf(probe, sizeof probe,
           "import json, os, sys\n"
           "fx, art = %s%s%s, %s%s%s\n"
           "cwd = os.getcwd()\n"
           "assert sys.flags.isolated == 1 and sys.flags.ignore_environment == 1, sys.flags\n"
           "assert sys.flags.no_user_site == 1, sys.flags\n"
           "assert all(os.path.isabs(p) for p in sys.path), sys.path\n"
           "assert not any(p.startswith(fx) or p == cwd for p in sys.path), sys.path\n"
           "assert json.dumps({'a': [1]}) == '{\"a\": [1]}'\n"
           "assert not os.__file__.startswith(fx) and not json.__file__.startswith(fx)\n"
           "for m in ('sitecustomize', 'usercustomize', 'evil'):\n"
           "    f = getattr(sys.modules.get(m), '__file__', '') or ''\n"
           "    assert not f.startswith(fx), (m, f)\n"
           "pyop_file = os.path.realpath(sys.modules['pyop'].__file__)\n"
           "assert pyop_file == os.path.realpath(art + '/python/pyop/__init__.py'), pyop_file\n"
           "plug = [m for n, m in sys.modules.items() if n.endswith('_harden_ops')]\n"
           "assert len(plug) == 1 and plug[0].PYOP_FILE == sys.modules['pyop'].__file__\n"
           "harden_saved_path = list(sys.path)\n",
           "'", fixtures, "'", "'", artifact, "'");
  CHECK(py_run(probe) == 0, "the probe raised (traceback above)");

  CHECK(pyop_unload() == PYOP_OK, "%s", pyop_last_error());
  CHECK(py_run("import sys\n"
               "assert sys.path == harden_saved_path, sys.path\n"
               "left = [n for n in sys.modules if n.startswith('_pyop_plugin_')]\n"
               "assert not left, left\n") == 0,
        "after unload (traceback above)");
  CHECK(pyop_load() == PYOP_OK, "%s", pyop_last_error());
  char again[4096];
  op_list(again, sizeof again);
  CHECK(strcmp(ops, again) == 0, "%s vs %s", ops, again);
  CHECK(py_run("import sys\nassert sys.path == harden_saved_path, sys.path\n") == 0,
        "after the second load (traceback above)");
  CHECK(pyop_shutdown() == PYOP_OK, "%s", pyop_last_error());
  int (*is_init)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "Py_IsInitialized");
  /* libpyop never finalizes the Python it started (docs/host-guide.md):
   * it stays initialised, without the plugins' modules or the package. */
  CHECK(is_init && is_init() == 1, "the Python libpyop started was finalized at shutdown");
  CHECK(py_run("import sys\n"
               "left = [n for n in sys.modules if n.startswith('_pyop_plugin_') or "
               "n == 'pyop' or n.startswith('pyop.')]\n"
               "assert not left, left\n") == 0,
        "after shutdown (traceback above)");
}

/* The cases, one ctest hardening.c_host.<name> each: X(name, labels,
 * timeout, variants), tests/cases.h. */
#define HARDEN_HOST_CASES(X)                                                  \
  X(nopython, "hardening", 120, "")                                           \
  X(start_python, "hardening", 120, "")

int main(int argc, char **argv) {
  static const harness_case cases[] = {HARDEN_HOST_CASES(HARNESS_CASE)};
  int status;
  const harness_case *c = harness_pick(argc, argv, 3, "ARTIFACT_DIR FIXTURES CASE", cases,
                                       HARNESS_N(cases), &status);
  if (c == NULL)
    return status;
  if (argc != 4) {
    fprintf(stderr, "usage: harden_host --list | ARTIFACT_DIR FIXTURES CASE\n");
    return 2;
  }
  g_artifact = argv[1];
  if (!realpath(argv[2], g_fixtures)) {
    perror(argv[2]);
    return 2;
  }
  CHECK(dlsym(RTLD_DEFAULT, "Py_IsInitialized") == NULL,
        "this host must not link Python");

  char marks[] = "/tmp/pyop-harden-host-XXXXXX";
  if (!mkdtemp(marks)) {
    perror("mkdtemp");
    return 2;
  }
  setenv("HARDEN_MARKERS", marks, 1);
  char opp[2 * sizeof g_fixtures + 64];
  snprintf(opp, sizeof opp, ":%s/shadow:%s/good::rel_elem:.", g_fixtures, g_fixtures);
  setenv("ASCEND_CUSTOM_OPP_PATH", opp, 1);

  pyop_host_hooks hooks = PYOP_HOST_HOOKS_INIT;
  hooks.log = on_log;
  CHECK(pyop_set_host_hooks(&hooks) == PYOP_OK, "%s", pyop_last_error());

  c->run();
  CHECK(count_markers(marks) == 0, "malicious files ran");
  ShutdownPythonCustomOpsForProcess();
  nftw(marks, rm_one, 8, FTW_DEPTH | FTW_PHYS);
  if (failures) {
    fprintf(stderr, "%d check(s) failed; log:\n%s", failures, log_lines);
    return 1;
  }
  printf("ok: %s\n", c->name);
  return 0;
}
