/*
 * Unit tests of the ASCEND_CUSTOM_OPP_PATH scan (src/scan.c, docs/design.md §Scan).
 * Every test builds its own tree under a fresh temporary directory.
 */
#include "testutil.h"

#include "scan.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ------------------------------------------------------------ helpers */

/* Warnings captured through the host log hook. */
static char log_buf[65536];
static size_t log_len;
static int log_warnings;

static void capture_log(void *user, int level, const char *line) {
  (void)user;
  if (level <= PYOP_LOG_WARN) log_warnings++;
  size_t n = strlen(line);
  if (log_len + n + 2 < sizeof log_buf) {
    memcpy(log_buf + log_len, line, n);
    log_len += n;
    log_buf[log_len++] = '\n';
    log_buf[log_len] = '\0';
  }
}

static void log_reset(void) {
  log_len = 0;
  log_buf[0] = '\0';
  log_warnings = 0;
}

static int setup(void **state) {
  (void)state;
  pyop__sys_reset();
  pyop_host_hooks h = PYOP_HOST_HOOKS_INIT;
  h.log = capture_log;
  assert_int_equal(pyop_set_host_hooks(&h), PYOP_OK);
  log_reset();
  return 0;
}

static int teardown(void **state) {
  (void)state;
  pyop__sys_reset();
  pyop_set_host_hooks(NULL);
  return 0;
}

/* "<base>/<rel>" in a static ring of buffers (enough for one expression). */
static const char *P(const char *base, const char *rel) {
  static char ring[8][PATH_MAX];
  static int next;
  char *b = ring[next++ % 8];
  int n = snprintf(b, PATH_MAX, "%s/%s", base, rel);
  assert_true(n > 0 && n < PATH_MAX);
  return b;
}

static void mkdir_p(const char *base, const char *rel) {
  char path[PATH_MAX];
  int n = snprintf(path, sizeof path, "%s/%s", base, rel);
  assert_true(n > 0 && n < (int)sizeof path);
  for (char *s = path + strlen(base) + 1; *s; s++) {
    if (*s == '/') {
      *s = '\0';
      mkdir(path, 0755);
      *s = '/';
    }
  }
  assert_true(mkdir(path, 0755) == 0 || errno == EEXIST);
}

/* Creates base/rel (and its parent directories) with some content. */
static void touch(const char *base, const char *rel) {
  char parent[PATH_MAX];
  snprintf(parent, sizeof parent, "%s", rel);
  char *slash = strrchr(parent, '/');
  if (slash) {
    *slash = '\0';
    mkdir_p(base, parent);
  }
  pt_write_file(P(base, rel), "# test\n");
}

static char *join2(const char *a, const char *b) {
  size_t n = strlen(a) + strlen(b) + 2;
  char *s = malloc(n);
  assert_non_null(s);
  snprintf(s, n, "%s:%s", a, b);
  return s;
}

static void assert_verdict(const pyop__scan_result *r, size_t i, int verdict) {
  assert_true(i < r->n);
  if (r->entries[i].verdict != verdict)
    fail_msg("entry %zu '%s': verdict %s, expected %s (detail: %s)", i,
             r->entries[i].path,
             pyop__path_verdict_name(r->entries[i].verdict),
             pyop__path_verdict_name(verdict),
             r->entries[i].detail ? r->entries[i].detail : "(null)");
}

/* --------------------------------------- counting seam (no faults) */

static pyop__sys real_sys;
static long n_stat, n_fstatat, n_opendir, n_readdir, n_open;
static const char *eacces_path; /* opendir/open of this path fail with EACCES */
static const char *eio_readdir_path; /* readdir in this dir fails with EIO */
static DIR *eio_readdir_dir;
static bool force_dt_unknown;

static int c_stat(const char *p, struct stat *st) {
  n_stat++;
  return real_sys.stat(p, st);
}
static int c_fstatat(int d, const char *p, struct stat *st, int f) {
  n_fstatat++;
  return real_sys.fstatat(d, p, st, f);
}
static DIR *c_opendir(const char *p) {
  n_opendir++;
  if (eacces_path && strcmp(p, eacces_path) == 0) {
    errno = EACCES;
    return NULL;
  }
  DIR *d = real_sys.opendir(p);
  if (d && eio_readdir_path && strcmp(p, eio_readdir_path) == 0)
    eio_readdir_dir = d;
  return d;
}
static struct dirent *c_readdir(DIR *d) {
  n_readdir++;
  if (d == eio_readdir_dir) {
    errno = EIO;
    return NULL;
  }
  struct dirent *de = real_sys.readdir(d);
  /* Pretend the file system does not fill d_type. */
  if (de && force_dt_unknown) de->d_type = DT_UNKNOWN;
  return de;
}
static int c_open(const char *p, int f) {
  n_open++;
  if (eacces_path && strcmp(p, eacces_path) == 0) {
    errno = EACCES;
    return -1;
  }
  return real_sys.open(p, f);
}
static int c_openat(int d, const char *p, int f) {
  n_open++;
  return real_sys.openat(d, p, f);
}

static void counting_install(void) {
  pyop__sys_reset();
  real_sys = pyop__sys_table;
  n_stat = n_fstatat = n_opendir = n_readdir = n_open = 0;
  eacces_path = NULL;
  eio_readdir_path = NULL;
  eio_readdir_dir = NULL;
  force_dt_unknown = false;
  pyop__sys_table.stat = c_stat;
  pyop__sys_table.fstatat = c_fstatat;
  pyop__sys_table.opendir = c_opendir;
  pyop__sys_table.readdir = c_readdir;
  pyop__sys_table.open = c_open;
  pyop__sys_table.openat = c_openat;
}

/* ------------------------------------------------------------- tests */

static void test_null_and_empty_value(void **state) {
  (void)state;
  pyop__scan_result r;
  const char *values[] = {NULL, "", ":", ":::"};
  for (size_t i = 0; i < PYOP__ARRAY_LEN(values); i++) {
    assert_int_equal(pyop__scan(values[i], false, &r), PYOP_OK);
    assert_int_equal(r.n, 0);
    assert_false(r.has_python);
    pyop__scan_result_free(&r);
  }
  assert_int_equal(pyop__scan("/x", false, NULL), PYOP_EINVAL);
  pyop__scan_result_free(NULL); /* harmless */
  assert_int_equal(log_warnings, 0);
}

static void test_py_file_element(void **state) {
  (void)state;
  char *t = pt_mkdtemp();
  touch(t, "ops/scaled_add.py");
  pyop__scan_result r;
  assert_int_equal(pyop__scan(P(t, "ops/scaled_add.py"), false, &r), PYOP_OK);
  assert_int_equal(r.n, 1);
  assert_true(r.has_python);
  assert_string_equal(r.entries[0].path, P(t, "ops/scaled_add.py"));
  assert_verdict(&r, 0, PYOP__PATH_PYTHON_FILE);
  assert_int_equal(log_warnings, 0);
  pyop__scan_result_free(&r);
  assert_null(r.entries);
  assert_int_equal(r.n, 0);

  /* An explicitly listed file is taken as written, even "_private.py". */
  touch(t, "ops/_private.py");
  assert_int_equal(pyop__scan(P(t, "ops/_private.py"), false, &r), PYOP_OK);
  assert_verdict(&r, 0, PYOP__PATH_PYTHON_FILE);
  pyop__scan_result_free(&r);

  /* A symlink to a .py file is a .py file. */
  assert_int_equal(symlink(P(t, "ops/scaled_add.py"), P(t, "link.py")), 0);
  assert_int_equal(pyop__scan(P(t, "link.py"), false, &r), PYOP_OK);
  assert_verdict(&r, 0, PYOP__PATH_PYTHON_FILE);
  pyop__scan_result_free(&r);
  pt_rmtree(t);
  free(t);
}

/* The open that checks a listed .py file is readable is closed again:
 * scanning the same value again and again (every load, need-load check and
 * doctor run does) leaves no descriptor open (batch 17 survivor: the scan
 * kept one descriptor per listed .py file). */
static void test_py_file_not_kept_open(void **state) {
  (void)state;
  char *t = pt_mkdtemp();
  touch(t, "a.py");
  touch(t, "ops/b.py");
  touch(t, "pkg/c.py");
  char *ab = join2(P(t, "a.py"), P(t, "ops/b.py"));
  char *value = join2(ab, P(t, "pkg"));
  pyop__scan_result r;
  int fds = pt_count_fds();
  for (int i = 0; i < 16; i++) {
    assert_int_equal(pyop__scan(value, false, &r), PYOP_OK);
    assert_int_equal(r.n, 3);
    assert_verdict(&r, 0, PYOP__PATH_PYTHON_FILE);
    assert_verdict(&r, 1, PYOP__PATH_PYTHON_FILE);
    assert_verdict(&r, 2, PYOP__PATH_PYTHON_DIR);
    pyop__scan_result_free(&r);
  }
  int after = pt_count_fds();
  if (after != fds) fail_msg("16 scans of 2 .py files: %d descriptors open before, %d after", fds, after);
  assert_int_equal(log_warnings, 0);
  free(value);
  free(ab);
  pt_rmtree(t);
  free(t);
}

static void test_dir_with_py_file(void **state) {
  (void)state;
  char *t = pt_mkdtemp();
  touch(t, "README.md");
  touch(t, "add_custom.py");
  pyop__scan_result r;
  assert_int_equal(pyop__scan(t, false, &r), PYOP_OK);
  assert_int_equal(r.n, 1);
  assert_true(r.has_python);
  assert_verdict(&r, 0, PYOP__PATH_PYTHON_DIR);
  assert_non_null(strstr(r.entries[0].detail, "add_custom.py"));
  assert_int_equal(log_warnings, 0);
  pyop__scan_result_free(&r);

  /* A trailing slash is the same directory. */
  char with_slash[PATH_MAX];
  snprintf(with_slash, sizeof with_slash, "%s/", t);
  assert_int_equal(pyop__scan(with_slash, false, &r), PYOP_OK);
  assert_verdict(&r, 0, PYOP__PATH_PYTHON_DIR);
  assert_string_equal(r.entries[0].path, with_slash);
  pyop__scan_result_free(&r);
  pt_rmtree(t);
  free(t);
}

static void test_dir_with_package(void **state) {
  (void)state;
  char *t = pt_mkdtemp();
  touch(t, "my_ops/__init__.py");
  touch(t, "my_ops/kernels.py");
  touch(t, "op_info.json");
  pyop__scan_result r;
  assert_int_equal(pyop__scan(t, false, &r), PYOP_OK);
  assert_true(r.has_python);
  assert_verdict(&r, 0, PYOP__PATH_PYTHON_DIR);
  assert_non_null(strstr(r.entries[0].detail, "package 'my_ops/'"));
  pyop__scan_result_free(&r);
  pt_rmtree(t);
  free(t);
}

/* A package's __init__.py that cannot be checked (EACCES on its fstatat):
 * not a package, and a warning names the directory, the file and why
 * (dataflow pass, session 13: the failure taken as "no package" without a
 * word). */
static int eacces_init_fstatat(int d, const char *p, struct stat *st, int f) {
  size_t n = strlen(p);
  if (n >= 12 && strcmp(p + n - 12, "/__init__.py") == 0) {
    errno = EACCES;
    return -1;
  }
  return real_sys.fstatat(d, p, st, f);
}

static void test_package_check_failed_warned(void **state) {
  (void)state;
  char *t = pt_mkdtemp();
  touch(t, "my_ops/__init__.py");
  counting_install();
  pyop__sys_table.fstatat = eacces_init_fstatat;
  pyop__scan_result r;
  assert_int_equal(pyop__scan(t, false, &r), PYOP_OK);
  pyop__sys_reset();
  assert_false(r.has_python);
  pyop__scan_result_free(&r);
  char want[PATH_MAX + 128];
  snprintf(want, sizeof want, "cannot check for '%s/my_ops/__init__.py': ", t);
  if (!strstr(log_buf, want)) fail_msg("log lacks %s:\n%s", want, log_buf);
  assert_non_null(strstr(log_buf, "; not treated as a package"));
  pt_rmtree(t);
  free(t);
}

static void test_only_skipped_names(void **state) {
  (void)state;
  char *t = pt_mkdtemp();
  touch(t, "_x.py");
  touch(t, ".hidden.py");
  touch(t, "__pycache__/__init__.py");
  touch(t, "__pycache__/x.cpython-311.pyc");
  touch(t, "_pkg/__init__.py");
  touch(t, ".pkg/__init__.py");
  touch(t, "x.pyc");
  touch(t, "x.py.txt");
  touch(t, "notes.txt");
  /* Deeper than one level does not count: plain dir holding a .py. */
  touch(t, "sub/deep.py");
  /* A directory with __init__.py as a directory is not a package. */
  mkdir_p(t, "odd/__init__.py");
  pyop__scan_result r;
  assert_int_equal(pyop__scan(t, false, &r), PYOP_OK);
  assert_false(r.has_python);
  assert_verdict(&r, 0, PYOP__PATH_NO_PYTHON);
  assert_int_equal(log_warnings, 0);
  pyop__scan_result_free(&r);
  pt_rmtree(t);
  free(t);
}

static void test_missing_py_file(void **state) {
  (void)state;
  char *t = pt_mkdtemp();
  touch(t, "good/op.py");
  char *value = join2(P(t, "gone.py"), P(t, "good"));
  pyop__scan_result r;
  assert_int_equal(pyop__scan(value, false, &r), PYOP_ENOENT);
  assert_int_equal(pyop_last_status(), PYOP_ENOENT);
  const char *msg = pyop_last_error();
  assert_non_null(strstr(msg, "ASCEND_CUSTOM_OPP_PATH"));
  assert_non_null(strstr(msg, P(t, "gone.py")));
  assert_non_null(strstr(msg, "does not exist"));
  /* *out is still filled: every element has its verdict. */
  assert_int_equal(r.n, 2);
  assert_verdict(&r, 0, PYOP__PATH_MISSING_FILE);
  assert_verdict(&r, 1, PYOP__PATH_PYTHON_DIR);
  assert_true(r.has_python);
  pyop__scan_result_free(&r);
  free(value);

  /* Under a parent that is a file, or a missing parent: still missing. */
  touch(t, "plain");
  value = join2(P(t, "plain/x.py"), P(t, "nodir/y.py"));
  assert_int_equal(pyop__scan(value, false, &r), PYOP_ENOENT);
  assert_verdict(&r, 0, PYOP__PATH_MISSING_FILE);
  assert_verdict(&r, 1, PYOP__PATH_MISSING_FILE);
  msg = pyop_last_error();
  assert_non_null(strstr(msg, P(t, "plain/x.py")));
  assert_non_null(strstr(msg, "not a directory"));
  assert_non_null(strstr(msg, "(and 1 more missing .py file)")); /* one: no "files" */
  pyop__scan_result_free(&r);
  free(value);
  /* Three missing: the first named, "2 more" files. */
  char *three = malloc(3 * PATH_MAX);
  assert_non_null(three);
  snprintf(three, 3 * PATH_MAX, "%s:%s:%s", P(t, "a.py"), P(t, "b.py"), P(t, "c.py"));
  assert_int_equal(pyop__scan(three, false, &r), PYOP_ENOENT);
  assert_non_null(strstr(pyop_last_error(), P(t, "a.py")));
  assert_non_null(strstr(pyop_last_error(), "(and 2 more missing .py files)"));
  assert_int_equal(r.n, 3);
  pyop__scan_result_free(&r);
  free(three);
  pt_rmtree(t);
  free(t);
}

static void test_missing_dir(void **state) {
  (void)state;
  char *t = pt_mkdtemp();
  touch(t, "good/op.py");
  char *value = join2(P(t, "no_such_dir"), P(t, "good"));
  pyop__scan_result r;
  assert_int_equal(pyop__scan(value, false, &r), PYOP_OK);
  assert_int_equal(r.n, 2);
  assert_verdict(&r, 0, PYOP__PATH_MISSING_DIR);
  assert_verdict(&r, 1, PYOP__PATH_PYTHON_DIR);
  assert_true(r.has_python);
  assert_int_equal(log_warnings, 1);
  assert_non_null(strstr(log_buf, "warn"));
  assert_non_null(strstr(log_buf, P(t, "no_such_dir")));
  assert_non_null(strstr(log_buf, "skipped"));
  assert_non_null(strstr(log_buf, "no such file or directory"));
  pyop__scan_result_free(&r);
  free(value);

  /* Alone: still not an error, nothing to load. */
  log_reset();
  assert_int_equal(pyop__scan(P(t, "no_such_dir"), false, &r), PYOP_OK);
  assert_false(r.has_python);
  assert_verdict(&r, 0, PYOP__PATH_MISSING_DIR);
  assert_int_equal(log_warnings, 1);
  pyop__scan_result_free(&r);
  pt_rmtree(t);
  free(t);
}

static void test_empty_elements_never_cwd(void **state) {
  (void)state;
  char *t = pt_mkdtemp();
  /* The cwd is full of Python; a and b have none. */
  touch(t, "cwd/op.py");
  touch(t, "cwd/pkg/__init__.py");
  touch(t, "a/lib.so");
  touch(t, "b/op_info.json");
  char old_cwd[PATH_MAX];
  assert_non_null(getcwd(old_cwd, sizeof old_cwd));
  assert_int_equal(chdir(P(t, "cwd")), 0);

  char a[PATH_MAX], b[PATH_MAX];
  snprintf(a, sizeof a, "%s", P(t, "a"));
  snprintf(b, sizeof b, "%s", P(t, "b"));
  char v[4][3 * PATH_MAX];
  snprintf(v[0], sizeof v[0], ":%s", a);
  snprintf(v[1], sizeof v[1], "%s::%s", a, b);
  snprintf(v[2], sizeof v[2], "%s:", a);
  snprintf(v[3], sizeof v[3], "::%s:::%s::", a, b);
  const size_t expect_n[4] = {1, 2, 1, 2};
  for (int i = 0; i < 4; i++) {
    pyop__scan_result r;
    assert_int_equal(pyop__scan(v[i], false, &r), PYOP_OK);
    assert_false(r.has_python);
    assert_int_equal(r.n, expect_n[i]);
    for (size_t k = 0; k < r.n; k++) {
      assert_true(r.entries[k].path[0] == '/');
      assert_verdict(&r, k, PYOP__PATH_NO_PYTHON);
    }
    pyop__scan_result_free(&r);
  }
  assert_int_equal(log_warnings, 0);
  assert_int_equal(chdir(old_cwd), 0);
  pt_rmtree(t);
  free(t);
}

/* The whitespace GE strips around an element (space and \t \n \v \f \r,
 * before and after) is dropped, and the info log says how the element was
 * read (not in quiet mode); the characters just outside that range
 * (\x08, \x0e) stay part of the element. An element of whitespace only is
 * empty. */
static void test_whitespace_around_elements(void **state) {
  (void)state;
  char *t = pt_mkdtemp();
  touch(t, "a.py");
  touch(t, "b.py");
  char value[3 * PATH_MAX];
  snprintf(value, sizeof value, " \t%s\n:\v\f%s\r : \t\n\v\f\r :%s\x0e", P(t, "a.py"),
           P(t, "b.py"), P(t, "a.py"));
  int level = pyop_get_log_level();
  assert_int_equal(pyop_set_log_level(PYOP_LOG_INFO), PYOP_OK);
  pyop__scan_result r;
  int rc = pyop__scan(value, false, &r);
  assert_int_equal(pyop_set_log_level(level), PYOP_OK);
  assert_int_equal(rc, PYOP_OK);
  assert_int_equal(r.n, 3);
  assert_string_equal(r.entries[0].path, P(t, "a.py"));
  assert_verdict(&r, 0, PYOP__PATH_PYTHON_FILE);
  assert_string_equal(r.entries[1].path, P(t, "b.py"));
  assert_verdict(&r, 1, PYOP__PATH_PYTHON_FILE);
  char kept[PATH_MAX];
  snprintf(kept, sizeof kept, "%s\x0e", P(t, "a.py"));
  assert_string_equal(r.entries[2].path, kept);
  assert_verdict(&r, 2, PYOP__PATH_MISSING_DIR); /* no longer a .py name */
  char line[2 * PATH_MAX];
  snprintf(line, sizeof line, "read as '%s' (the whitespace around an element is dropped",
           P(t, "b.py"));
  assert_non_null(strstr(log_buf, line));
  pyop__scan_result_free(&r);
  /* Quiet: the same reading, no info line. */
  log_reset();
  assert_int_equal(pyop_set_log_level(PYOP_LOG_INFO), PYOP_OK);
  rc = pyop__scan_opts(value, false, true, &r);
  assert_int_equal(pyop_set_log_level(level), PYOP_OK);
  assert_int_equal(rc, PYOP_OK);
  assert_int_equal(r.n, 3);
  assert_string_equal(r.entries[1].path, P(t, "b.py"));
  assert_null(strstr(log_buf, "read as"));
  pyop__scan_result_free(&r);
  /* \x08 before an absolute path keeps it relative. */
  snprintf(value, sizeof value, "\x08%s", P(t, "a.py"));
  assert_int_equal(pyop__scan(value, false, &r), PYOP_OK);
  assert_int_equal(r.n, 1);
  assert_verdict(&r, 0, PYOP__PATH_RELATIVE);
  pyop__scan_result_free(&r);
  pt_rmtree(t);
  free(t);
}

/* A .py element whose stat fails other than ENOENT/ENOTDIR (EACCES) is
 * unreadable and skipped with a warning, not missing. With the debug log,
 * an element found to hold Python says so, file and directory alike. */
static int eacces_stat(const char *p, struct stat *st) {
  (void)p;
  (void)st;
  errno = EACCES;
  return -1;
}

static void test_py_element_stat_and_debug(void **state) {
  (void)state;
  char *t = pt_mkdtemp();
  touch(t, "ops/a.py");
  pyop__scan_result r;
  pyop__sys saved = pyop__sys_table;
  pyop__sys_table.stat = eacces_stat;
  log_reset();
  int rc = pyop__scan(P(t, "ops/a.py"), false, &r);
  pyop__sys_table = saved;
  assert_int_equal(rc, PYOP_OK);
  assert_verdict(&r, 0, PYOP__PATH_UNREADABLE);
  assert_true(r.entries[0].skipped);
  assert_false(r.has_python);
  assert_non_null(strstr(r.entries[0].detail, "cannot stat: "));
  assert_int_equal(log_warnings, 1);
  assert_non_null(strstr(log_buf, "skipped: cannot stat: "));
  pyop__scan_result_free(&r);
  /* The debug lines. */
  int level = pyop_get_log_level();
  assert_int_equal(pyop_set_log_level(PYOP_LOG_DEBUG), PYOP_OK);
  log_reset();
  char *both = join2(P(t, "ops/a.py"), P(t, "ops"));
  rc = pyop__scan(both, false, &r);
  assert_int_equal(pyop_set_log_level(level), PYOP_OK);
  assert_int_equal(rc, PYOP_OK);
  assert_verdict(&r, 0, PYOP__PATH_PYTHON_FILE);
  assert_verdict(&r, 1, PYOP__PATH_PYTHON_DIR);
  char line[2 * PATH_MAX];
  snprintf(line, sizeof line, "element '%s': a regular .py file", P(t, "ops/a.py"));
  assert_non_null(strstr(log_buf, line));
  snprintf(line, sizeof line, "element '%s': %s", P(t, "ops"), r.entries[1].detail);
  assert_non_null(strstr(log_buf, line));
  assert_int_equal(log_warnings, 0);
  pyop__scan_result_free(&r);
  free(both);
  pt_rmtree(t);
  free(t);
}

static void test_relative_element_refused(void **state) {
  (void)state;
  char *t = pt_mkdtemp();
  touch(t, "cwd/ops/op.py");
  touch(t, "cwd/op.py");
  char old_cwd[PATH_MAX];
  assert_non_null(getcwd(old_cwd, sizeof old_cwd));
  assert_int_equal(chdir(P(t, "cwd")), 0);

  const char *rel[] = {"ops", "./ops", "op.py", ".", "../cwd/ops", "missing.py"};
  for (size_t i = 0; i < PYOP__ARRAY_LEN(rel); i++) {
    log_reset();
    pyop__scan_result r;
    /* Refused, not an error, and nothing is looked at. */
    counting_install();
    assert_int_equal(pyop__scan(rel[i], true, &r), PYOP_OK);
    assert_int_equal(n_stat + n_fstatat + n_opendir, 0);
    pyop__sys_reset();
    assert_false(r.has_python);
    assert_int_equal(r.n, 1);
    assert_string_equal(r.entries[0].path, rel[i]);
    assert_verdict(&r, 0, PYOP__PATH_RELATIVE);
    assert_int_equal(log_warnings, 1);
    char quoted[64];
    snprintf(quoted, sizeof quoted, "'%s'", rel[i]);
    assert_non_null(strstr(log_buf, quoted));
    assert_non_null(strstr(log_buf, "relative path refused"));
    /* The line names what happened and the element, no C function. */
    char line[128];
    snprintf(line, sizeof line,
             "libpyop: warn: ASCEND_CUSTOM_OPP_PATH element '%s' skipped: relative path refused",
             rel[i]);
    assert_ptr_equal(strstr(log_buf, line), log_buf);
    pyop__scan_result_free(&r);
  }

  /* A relative element does not stop the scan of the next one. */
  touch(t, "abs/op.py");
  char *value = join2("ops", P(t, "abs"));
  pyop__scan_result r;
  assert_int_equal(pyop__scan(value, true, &r), PYOP_OK);
  assert_true(r.has_python);
  assert_verdict(&r, 0, PYOP__PATH_RELATIVE);
  assert_verdict(&r, 1, PYOP__PATH_PYTHON_DIR);
  pyop__scan_result_free(&r);
  free(value);
  assert_int_equal(chdir(old_cwd), 0);
  pt_rmtree(t);
  free(t);
}

static bool fs_fills_d_type(const char *dir) {
  DIR *d = opendir(dir);
  assert_non_null(d);
  bool known = true;
  struct dirent *de;
  while ((de = readdir(d)) != NULL)
    if (de->d_type == DT_UNKNOWN) known = false;
  closedir(d);
  return known;
}

static void test_many_non_python_files_one_readdir(void **state) {
  (void)state;
  char *t = pt_mkdtemp();
  const char *ext[] = {"so", "json", "txt", "pyc", "o"};
  for (int i = 0; i < 10000; i++) {
    char name[64];
    snprintf(name, sizeof name, "f%05d.%s", i, ext[i % 5]);
    int fd = open(P(t, name), O_CREAT | O_WRONLY, 0644);
    assert_true(fd >= 0);
    close(fd);
  }
  if (!fs_fills_d_type(t)) {
    pt_rmtree(t);
    free(t);
    skip(); /* this file system leaves d_type unknown: stat is needed */
  }
  counting_install();
  pyop__scan_result r;
  assert_int_equal(pyop__scan(t, false, &r), PYOP_OK);
  pyop__sys_reset();
  assert_false(r.has_python);
  assert_verdict(&r, 0, PYOP__PATH_NO_PYTHON);
  /* One opendir, one readdir pass (10000 + "." + ".." + the end), no stat. */
  assert_int_equal(n_opendir, 1);
  assert_int_equal(n_readdir, 10000 + 2 + 1);
  assert_int_equal(n_stat, 0);
  assert_int_equal(n_fstatat, 0);
  assert_int_equal(n_open, 0);
  assert_int_equal(log_warnings, 0);
  pyop__scan_result_free(&r);
  pt_rmtree(t);
  free(t);
}

static void on_alarm(int sig) {
  (void)sig;
  static const char msg[] = "test_scan: scan blocked (opened a FIFO?)\n";
  ssize_t w = write(2, msg, sizeof msg - 1);
  (void)w;
  _exit(2);
}

static void test_fifo_and_dir_named_py(void **state) {
  (void)state;
  char *t = pt_mkdtemp();
  mkdir_p(t, "d");
  assert_int_equal(mkfifo(P(t, "d/x.py"), 0644), 0);
  mkdir_p(t, "d/y.py");           /* a directory entry named y.py */
  touch(t, "d/y.py/inner.py");    /* ...is not a package either */
  assert_int_equal(mkfifo(P(t, "lone.py"), 0644), 0);
  touch(t, "dirpy.py/op.py");     /* an element named *.py that is a dir */
  mkdir_p(t, "empty.py");

  signal(SIGALRM, on_alarm);
  alarm(20); /* a blocked open() of a FIFO fails the test, not hangs it */
  counting_install();
  pyop__scan_result r;
  assert_int_equal(pyop__scan(P(t, "d"), false, &r), PYOP_OK);
  assert_false(r.has_python);
  assert_verdict(&r, 0, PYOP__PATH_NO_PYTHON);
  pyop__scan_result_free(&r);
  assert_int_equal(log_warnings, 0);

  /* A FIFO listed as an element: not Python, warned, never opened. */
  assert_int_equal(pyop__scan(P(t, "lone.py"), false, &r), PYOP_OK);
  assert_false(r.has_python);
  assert_verdict(&r, 0, PYOP__PATH_NOT_PYTHON);
  assert_int_equal(log_warnings, 1);
  assert_non_null(strstr(log_buf, P(t, "lone.py")));
  assert_non_null(strstr(log_buf, "not a regular file"));
  pyop__scan_result_free(&r);

  /* An element named *.py that is a directory is scanned as one. */
  char *value = join2(P(t, "empty.py"), P(t, "dirpy.py"));
  assert_int_equal(pyop__scan(value, false, &r), PYOP_OK);
  assert_verdict(&r, 0, PYOP__PATH_NO_PYTHON);
  assert_verdict(&r, 1, PYOP__PATH_PYTHON_DIR);
  assert_true(r.has_python);
  pyop__scan_result_free(&r);
  free(value);
  assert_int_equal(n_open, 0);
  pyop__sys_reset();
  alarm(0);
  signal(SIGALRM, SIG_DFL);
  pt_rmtree(t);
  free(t);
}

/* An unreadable .py element is treated like an unreadable directory and a
 * relative element: a verdict, one warning, skipped; the load goes on. */
static void test_unreadable_file(void **state) {
  (void)state;
  char *t = pt_mkdtemp();
  touch(t, "locked.py");
  touch(t, "open/op.py");
  char locked[PATH_MAX];
  snprintf(locked, sizeof locked, "%s", P(t, "locked.py"));
  counting_install();
  eacces_path = locked; /* root reads anything: fake EACCES */
  char *value = join2(locked, P(t, "open"));
  pyop__scan_result r;
  assert_int_equal(pyop__scan(value, false, &r), PYOP_OK);
  pyop__sys_reset();
  assert_verdict(&r, 0, PYOP__PATH_UNREADABLE);
  assert_verdict(&r, 1, PYOP__PATH_PYTHON_DIR);
  assert_true(r.has_python);
  assert_int_equal(log_warnings, 1);
  char want[PATH_MAX + 128];
  snprintf(want, sizeof want,
           "libpyop: warn: ASCEND_CUSTOM_OPP_PATH element '%s' skipped: cannot "
           "open for reading: Permission denied\n", locked);
  assert_string_equal(log_buf, want);
  pyop__scan_result_free(&r);
  /* Alone: nothing to load, not an error. */
  counting_install();
  eacces_path = locked;
  assert_int_equal(pyop__scan(locked, false, &r), PYOP_OK);
  pyop__sys_reset();
  assert_false(r.has_python);
  assert_verdict(&r, 0, PYOP__PATH_UNREADABLE);
  pyop__scan_result_free(&r);
  /* Readable: a Python file, opened once and closed. */
  counting_install();
  assert_int_equal(pyop__scan(locked, false, &r), PYOP_OK);
  pyop__sys_reset();
  assert_verdict(&r, 0, PYOP__PATH_PYTHON_FILE);
  assert_int_equal(n_open, 1);
  pyop__scan_result_free(&r);
  free(value);
  pt_rmtree(t);
  free(t);
}

static void test_unreadable_dir(void **state) {
  (void)state;
  char *t = pt_mkdtemp();
  touch(t, "locked/op.py");
  touch(t, "open/op.py");
  char locked[PATH_MAX];
  snprintf(locked, sizeof locked, "%s", P(t, "locked"));
  /* Tests run as root, so chmod 000 would not stop opendir: fake EACCES. */
  counting_install();
  eacces_path = locked;
  char *value = join2(locked, P(t, "open"));
  pyop__scan_result r;
  assert_int_equal(pyop__scan(value, false, &r), PYOP_OK);
  pyop__sys_reset();
  assert_verdict(&r, 0, PYOP__PATH_UNREADABLE);
  assert_verdict(&r, 1, PYOP__PATH_PYTHON_DIR);
  assert_true(r.has_python);
  assert_non_null(strstr(r.entries[0].detail, "Permission denied"));
  assert_int_equal(log_warnings, 1);
  assert_non_null(strstr(log_buf, locked));
  assert_non_null(strstr(log_buf, "cannot open directory: Permission denied"));
  pyop__scan_result_free(&r);
  free(value);

  /* A read error part-way: unreadable too, never "no Python". */
  log_reset();
  counting_install();
  eio_readdir_path = locked;
  assert_int_equal(pyop__scan(locked, false, &r), PYOP_OK);
  pyop__sys_reset();
  assert_false(r.has_python);
  assert_verdict(&r, 0, PYOP__PATH_UNREADABLE);
  assert_int_equal(log_warnings, 1);
  assert_non_null(strstr(log_buf, locked));
  assert_non_null(strstr(log_buf, "cannot read directory: Input/output error"));
  pyop__scan_result_free(&r);
  pt_rmtree(t);
  free(t);
}

/*
 * pyop__scan_explain (what a lookup in an empty registry says of the
 * variable) when its Python entry is not the first element, and when the
 * same directory is listed twice: the Python entries are said to be there
 * and each element is named in order (configuration pass,
 * src.cf.scan.explain_first_only).
 */
static void test_explain_python_not_first(void **state) {
  (void)state;
  char *t = pt_mkdtemp();
  touch(t, "cpp/libcust_op.so");
  touch(t, "py/a.py");
  char value[3 * PATH_MAX + 4];
  snprintf(value, sizeof value, "%s:%s:%s", P(t, "cpp"), P(t, "py"), P(t, "py"));
  pyop__sb sb = PYOP__SB_INIT;
  pyop__scan_explain(value, &sb);
  char want[4 * PATH_MAX];
  snprintf(want, sizeof want,
           "ASCEND_CUSTOM_OPP_PATH has Python entries ('%s': no-python, '%s': python-dir, "
           "'%s': python-dir): has pyop_load run, and do they register operators?",
           P(t, "cpp"), P(t, "py"), P(t, "py"));
  assert_string_equal(pyop__sb_str(&sb), want);
  pyop__sb_free(&sb);
  assert_int_equal(log_warnings, 0); /* quiet */
  pt_rmtree(t);
  free(t);
}

/*
 * A value whose elements are all blank (" ", ": \t :") lists nothing, as
 * "" and "::" do (the scan drops the whitespace around an element, as GE
 * does): pyop__scan_explain says it is empty, not "has no Python entry
 * ()" (both-sides pass, session 14: emptiness judged by the colons alone).
 */
static void test_explain_blank_value_is_empty(void **state) {
  (void)state;
  static const char *const blank[] = {"", "::", " ", ": \t :", "\n"};
  for (size_t i = 0; i < sizeof blank / sizeof *blank; i++) {
    pyop__scan_result r;
    assert_int_equal(pyop__scan(blank[i], false, &r), PYOP_OK);
    assert_int_equal(r.n, 0);
    assert_false(r.has_python);
    pyop__scan_result_free(&r);
    pyop__sb sb = PYOP__SB_INIT;
    pyop__scan_explain(blank[i], &sb);
    if (strcmp(pyop__sb_str(&sb), "ASCEND_CUSTOM_OPP_PATH is empty, so no Python operator "
                                  "was loaded") != 0)
      fail_msg("\"%s\": %s", blank[i], pyop__sb_str(&sb));
    pyop__sb_free(&sb);
  }
  /* One element among the blanks is named. */
  pyop__sb sb = PYOP__SB_INIT;
  pyop__scan_explain(" : relative : ", &sb);
  assert_string_equal(pyop__sb_str(&sb), "ASCEND_CUSTOM_OPP_PATH has no Python entry "
                                         "('relative': relative), so no Python operator "
                                         "was loaded");
  pyop__sb_free(&sb);
}

static void test_stop_at_first(void **state) {
  (void)state;
  char *t = pt_mkdtemp();
  touch(t, "cpp/libcust_op.so");
  touch(t, "py1/a.py");
  touch(t, "py2/b.py");
  char value[6 * PATH_MAX];
  snprintf(value, sizeof value, "%s:%s:%s:%s:relative:%s",
           P(t, "cpp"), P(t, "py1"), P(t, "py2"), P(t, "gone.py"),
           P(t, "no_such_dir"));
  counting_install();
  pyop__scan_result r;
  assert_int_equal(pyop__scan(value, true, &r), PYOP_OK);
  pyop__sys_reset();
  assert_true(r.has_python);
  assert_int_equal(r.n, 6);
  assert_verdict(&r, 0, PYOP__PATH_NO_PYTHON);
  assert_verdict(&r, 1, PYOP__PATH_PYTHON_DIR);
  for (size_t i = 2; i < 6; i++) {
    assert_verdict(&r, i, PYOP__PATH_NOT_SCANNED);
    assert_null(r.entries[i].detail);
  }
  assert_string_equal(r.entries[4].path, "relative");
  /* Nothing after the first Python entry was touched or warned about. */
  assert_int_equal(n_opendir, 2);
  assert_int_equal(n_stat, 0);
  assert_int_equal(log_warnings, 0);
  pyop__scan_result_free(&r);

  /* The full scan sees everything, and the missing .py is an error. */
  log_reset();
  assert_int_equal(pyop__scan(value, false, &r), PYOP_ENOENT);
  assert_non_null(strstr(pyop_last_error(), P(t, "gone.py")));
  assert_int_equal(r.n, 6);
  assert_verdict(&r, 0, PYOP__PATH_NO_PYTHON);
  assert_verdict(&r, 1, PYOP__PATH_PYTHON_DIR);
  assert_verdict(&r, 2, PYOP__PATH_PYTHON_DIR);
  assert_verdict(&r, 3, PYOP__PATH_MISSING_FILE);
  assert_verdict(&r, 4, PYOP__PATH_RELATIVE);
  assert_verdict(&r, 5, PYOP__PATH_MISSING_DIR);
  assert_int_equal(log_warnings, 2); /* relative + missing dir */
  pyop__scan_result_free(&r);
  pt_rmtree(t);
  free(t);
}

static void test_verdict_names(void **state) {
  (void)state;
  static const struct { int v; const char *name; } names[] = {
      {PYOP__PATH_PYTHON_FILE, "python-file"},
      {PYOP__PATH_PYTHON_DIR, "python-dir"},
      {PYOP__PATH_NO_PYTHON, "no-python"},
      {PYOP__PATH_MISSING_DIR, "missing-dir"},
      {PYOP__PATH_MISSING_FILE, "missing-file"},
      {PYOP__PATH_RELATIVE, "relative"},
      {PYOP__PATH_UNREADABLE, "unreadable"},
      {PYOP__PATH_NOT_PYTHON, "not-python"},
      {PYOP__PATH_NOT_SCANNED, "not-scanned"},
  };
  for (size_t i = 0; i < PYOP__ARRAY_LEN(names); i++)
    assert_string_equal(pyop__path_verdict_name(names[i].v), names[i].name);
  assert_string_equal(pyop__path_verdict_name(0), "unknown");
  assert_string_equal(pyop__path_verdict_name(-1), "unknown");
  assert_string_equal(pyop__path_verdict_name(PYOP__PATH_NOT_SCANNED + 1), "unknown");
}

/* A C++-only OPP vendor directory, laid out like a real one. */
static void make_cpp_opp(const char *base, const char *rel) {
  char p[PATH_MAX];
#define MK(x) (snprintf(p, sizeof p, "%s/%s", rel, x), touch(base, p))
  MK("op_impl/ai_core/tbe/impl/add_custom.py"); /* deep: not our business */
  MK("op_impl/ai_core/tbe/config/ascend910/aic-ascend910-ops-info.json");
  MK("op_proto/lib/linux/x86_64/libcust_opsproto_rt2.0.so");
  MK("op_api/include/aclnn_add_custom.h");
  MK("framework/tensorflow/npu_supported_ops.json");
  MK("libcust_op.so");
  MK("op_info.json");
  MK("version.info");
#undef MK
}

static void test_cpp_opp_dir_mixed(void **state) {
  (void)state;
  char *t = pt_mkdtemp();
  make_cpp_opp(t, "vendors/customize");
  make_cpp_opp(t, "vendors/other");
  touch(t, "py/ops.py");
  char value[4 * PATH_MAX];

  /* Alone: no Python, no warning, nothing but readdir and the package
   * checks of its top-level directories. */
  counting_install();
  pyop__scan_result r;
  assert_int_equal(pyop__scan(P(t, "vendors/customize"), false, &r), PYOP_OK);
  pyop__sys_reset();
  assert_false(r.has_python);
  assert_verdict(&r, 0, PYOP__PATH_NO_PYTHON);
  assert_int_equal(n_stat, 0);
  assert_int_equal(n_open, 0);
  assert_int_equal(log_warnings, 0);
  pyop__scan_result_free(&r);

  /* Mixed in: the Python element is found, the C++ ones are untouched. */
  snprintf(value, sizeof value, "%s:%s:%s", P(t, "vendors/customize"),
           P(t, "py"), P(t, "vendors/other"));
  assert_int_equal(pyop__scan(value, false, &r), PYOP_OK);
  assert_true(r.has_python);
  assert_verdict(&r, 0, PYOP__PATH_NO_PYTHON);
  assert_verdict(&r, 1, PYOP__PATH_PYTHON_DIR);
  assert_verdict(&r, 2, PYOP__PATH_NO_PYTHON);
  assert_int_equal(log_warnings, 0);
  pyop__scan_result_free(&r);

  /* A C++ library listed directly is a non-Python file: warned, skipped. */
  snprintf(value, sizeof value, "%s", P(t, "vendors/customize/libcust_op.so"));
  assert_int_equal(pyop__scan(value, false, &r), PYOP_OK);
  assert_verdict(&r, 0, PYOP__PATH_NOT_PYTHON);
  assert_non_null(strstr(log_buf, value));
  pyop__scan_result_free(&r);
  pt_rmtree(t);
  free(t);
}

static void test_symlinks(void **state) {
  (void)state;
  char *t = pt_mkdtemp();
  touch(t, "real/op.py");
  touch(t, "real/pkg/__init__.py");
  mkdir_p(t, "d1");
  assert_int_equal(symlink(P(t, "real/op.py"), P(t, "d1/linked.py")), 0);
  mkdir_p(t, "d2");
  assert_int_equal(symlink(P(t, "real/pkg"), P(t, "d2/linked_pkg")), 0);
  mkdir_p(t, "d3");
  assert_int_equal(symlink(P(t, "nowhere.py"), P(t, "d3/dangling.py")), 0);
  assert_int_equal(symlink(P(t, "real/op.py"), P(t, "d3/_hidden.py")), 0);
  assert_int_equal(symlink(P(t, "real"), P(t, "linkdir")), 0);

  char value[5 * PATH_MAX];
  snprintf(value, sizeof value, "%s:%s:%s:%s", P(t, "d1"), P(t, "d2"),
           P(t, "d3"), P(t, "linkdir"));
  counting_install();
  pyop__scan_result r;
  assert_int_equal(pyop__scan(value, false, &r), PYOP_OK);
  pyop__sys_reset();
  assert_verdict(&r, 0, PYOP__PATH_PYTHON_DIR);
  assert_verdict(&r, 1, PYOP__PATH_PYTHON_DIR);
  assert_non_null(strstr(r.entries[1].detail, "linked_pkg"));
  assert_verdict(&r, 2, PYOP__PATH_NO_PYTHON);
  assert_verdict(&r, 3, PYOP__PATH_PYTHON_DIR);
  /* The "_" link is skipped by name, before any stat. */
  assert_true(n_fstatat >= 3);
  assert_int_equal(log_warnings, 0);
  pyop__scan_result_free(&r);
  pt_rmtree(t);
  free(t);
}

static void test_dt_unknown_uses_fstatat(void **state) {
  (void)state;
  char *t = pt_mkdtemp();
  touch(t, "a/lib.so");
  touch(t, "a/op_info.json");
  assert_int_equal(mkfifo(P(t, "a/fifo.py"), 0644), 0);
  mkdir_p(t, "a/dir.py");
  touch(t, "b/notes.txt");
  touch(t, "b/pkg/__init__.py");
  touch(t, "c/op.py");
  char value[4 * PATH_MAX];
  snprintf(value, sizeof value, "%s:%s:%s", P(t, "a"), P(t, "b"), P(t, "c"));
  counting_install();
  force_dt_unknown = true;
  pyop__scan_result r;
  assert_int_equal(pyop__scan(value, false, &r), PYOP_OK);
  pyop__sys_reset();
  assert_verdict(&r, 0, PYOP__PATH_NO_PYTHON);
  assert_verdict(&r, 1, PYOP__PATH_PYTHON_DIR);
  assert_verdict(&r, 2, PYOP__PATH_PYTHON_DIR);
  assert_true(n_fstatat >= 5);
  assert_int_equal(n_open, 0);
  pyop__scan_result_free(&r);
  pt_rmtree(t);
  free(t);
}

/* --------------------------------------------------- fault injection */

typedef struct sweep_ctx {
  char value[6 * PATH_MAX];
  bool stop_at_first;
  pyop__scan_result r;
  int rc;
  long baseline;
} sweep_ctx;

static int sweep_fn(void *user) {
  sweep_ctx *c = user;
  c->rc = pyop__scan(c->value, c->stop_at_first, &c->r);
  return c->rc;
}

/* After a fault: an error with an empty result, or a consistent result
 * where the failed call made an element unreadable or hid an entry. */
static void sweep_check(void *user, int rc) {
  sweep_ctx *c = user;
  if (rc == PYOP_ENOMEM) {
    assert_int_equal(c->r.n, 0);
    assert_null(c->r.entries);
    assert_false(c->r.has_python);
    assert_non_null(strstr(pyop_last_error(), "out of memory"));
    assert_non_null(strstr(pyop_last_error(), "ASCEND_CUSTOM_OPP_PATH"));
  } else {
    assert_int_equal(rc, PYOP_OK);
    assert_int_equal(c->r.n, 4);
    bool any = false;
    for (size_t i = 0; i < c->r.n; i++) {
      const pyop__scan_entry *e = &c->r.entries[i];
      assert_non_null(e->path);
      assert_true(e->verdict >= PYOP__PATH_PYTHON_FILE &&
                  e->verdict <= PYOP__PATH_NOT_SCANNED);
      if (e->verdict != PYOP__PATH_NOT_SCANNED) assert_non_null(e->detail);
      if (e->verdict == PYOP__PATH_PYTHON_FILE ||
          e->verdict == PYOP__PATH_PYTHON_DIR)
        any = true;
    }
    assert_int_equal(c->r.has_python, any);
    /* The C++ dir never turns into Python, a fault can only hide some. */
    assert_true(c->r.entries[2].verdict == PYOP__PATH_NO_PYTHON ||
                c->r.entries[2].verdict == PYOP__PATH_UNREADABLE ||
                c->r.entries[2].verdict == PYOP__PATH_NOT_SCANNED);
  }
  pyop__scan_result_free(&c->r);
  assert_int_equal(pt_live_allocs(), c->baseline);
}

static void run_sweep(const char *t, bool stop_at_first) {
  sweep_ctx *c = calloc(1, sizeof *c);
  assert_non_null(c);
  snprintf(c->value, sizeof c->value, "%s:%s:%s:%s", P(t, "d1"),
           P(t, "file.py"), P(t, "cpp"), P(t, "d2"));
  c->stop_at_first = stop_at_first;
  pt_faults_install();
  c->baseline = pt_live_allocs();
  long points = pt_faults_sweep(sweep_fn, sweep_check, c, 1000);
  /* The last run completed without a fault: the full, right answer. */
  assert_int_equal(c->rc, PYOP_OK);
  assert_true(c->r.has_python);
  assert_int_equal(c->r.n, 4);
  if (stop_at_first) {
    assert_verdict(&c->r, 0, PYOP__PATH_NO_PYTHON);
    assert_verdict(&c->r, 1, PYOP__PATH_PYTHON_FILE);
    assert_verdict(&c->r, 2, PYOP__PATH_NOT_SCANNED);
    assert_verdict(&c->r, 3, PYOP__PATH_NOT_SCANNED);
  } else {
    assert_verdict(&c->r, 0, PYOP__PATH_NO_PYTHON);
    assert_verdict(&c->r, 1, PYOP__PATH_PYTHON_FILE);
    assert_verdict(&c->r, 2, PYOP__PATH_NO_PYTHON);
    assert_verdict(&c->r, 3, PYOP__PATH_PYTHON_DIR);
  }
  pyop__scan_result_free(&c->r);
  assert_int_equal(pt_live_allocs(), c->baseline);
  pt_faults_remove();
  assert_true(points >= 10); /* allocations, stat, opendir, readdir, fstatat */
  free(c);
}

static void test_fault_sweep(void **state) {
  (void)state;
  char *t = pt_mkdtemp();
  /* d1: only non-Python (a symlink and a plain dir to force fstatat). */
  touch(t, "d1/notes.txt");
  touch(t, "d1/sub/x.txt");
  assert_int_equal(symlink(P(t, "d1/notes.txt"), P(t, "d1/link")), 0);
  touch(t, "file.py");
  make_cpp_opp(t, "cpp");
  touch(t, "d2/pkg/__init__.py");
  touch(t, "d2/readme.txt");
  run_sweep(t, false);
  run_sweep(t, true);
  pt_rmtree(t);
  free(t);
}

/* An element that is a regular file but no .py file is not Python, and
 * its verdict says what it is (a regular file), not "not a directory, a
 * .py file or a link". */
static void test_regular_file_element(void **state) {
  (void)state;
  char *t = pt_mkdtemp();
  touch(t, "notes.txt");
  pyop__scan_result r;
  assert_int_equal(pyop__scan(P(t, "notes.txt"), false, &r), PYOP_OK);
  assert_int_equal(r.n, 1);
  assert_verdict(&r, 0, PYOP__PATH_NOT_PYTHON);
  assert_false(r.has_python);
  assert_string_equal(r.entries[0].detail, "a regular file, neither a directory nor a .py file");
  pyop__scan_result_free(&r);
  pt_rmtree(t);
  free(t);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void) {
  const struct CMUnitTest tests[] = {
      T(test_null_and_empty_value),
      T(test_py_file_element),
      T(test_py_file_not_kept_open),
      T(test_dir_with_py_file),
      T(test_dir_with_package),
      T(test_package_check_failed_warned),
      T(test_only_skipped_names),
      T(test_missing_py_file),
      T(test_missing_dir),
      T(test_regular_file_element),
      T(test_empty_elements_never_cwd),
      T(test_whitespace_around_elements),
      T(test_py_element_stat_and_debug),
      T(test_relative_element_refused),
      T(test_many_non_python_files_one_readdir),
      T(test_fifo_and_dir_named_py),
      T(test_unreadable_file),
      T(test_unreadable_dir),
      T(test_stop_at_first),
      T(test_explain_python_not_first),
      T(test_explain_blank_value_is_empty),
      T(test_verdict_names),
      T(test_cpp_opp_dir_mixed),
      T(test_symlinks),
      T(test_dt_unknown_uses_fstatat),
      T(test_fault_sweep),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
