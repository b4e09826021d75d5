/*
 * Helpers shared by the end-to-end hosts (host_e2e, host_nopython, stress):
 * checks that report the user-visible message, temporary plugin trees,
 * a host allocator for op outputs, float tensors and RSS.
 *
 * Header-only on purpose: each host is one translation unit plus this file.
 */
#ifndef PYOP_E2E_UTIL_H
#define PYOP_E2E_UTIL_H

/* Before any system header (Python.h, included first where used, sets it
 * to 1 as well). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "pyop/pyop.h"

#define E2E_UNUSED __attribute__((unused))

/* ---------------------------------------------------------------- checks */

static const char *e2e_case = "";
static atomic_int e2e_failures;
static atomic_long e2e_checks;

/* A failed check prints where, what, and libpyop's last error on this
 * thread (what a user would read), and counts; the case goes on. */
#define CHECK(cond, ...)                                                      \
  do {                                                                        \
    atomic_fetch_add(&e2e_checks, 1);                                         \
    if (!(cond)) {                                                            \
      fprintf(stderr, "FAIL %s:%d [%s]: %s: ", __FILE__, __LINE__, e2e_case,  \
              #cond);                                                         \
      fprintf(stderr, __VA_ARGS__);                                           \
      fprintf(stderr, "\n  last error (%s): %s\n",                            \
              pyop_status_name(pyop_last_status()), pyop_last_error());       \
      atomic_fetch_add(&e2e_failures, 1);                                     \
    }                                                                         \
  } while (0)

/* Like CHECK, but the case cannot go on: exit at once. cond is evaluated
 * once (it may be a call with side effects). */
#define REQUIRE(cond, ...)                                                    \
  do {                                                                        \
    bool ok_ = (cond);                                                        \
    CHECK(ok_, __VA_ARGS__);                                                  \
    if (!ok_) {                                                               \
      fprintf(stderr, "  (required: %s; stopping case %s)\n", #cond,          \
              e2e_case);                                                      \
      exit(1);                                                                \
    }                                                                         \
  } while (0)

/* rc of expr must be want. */
#define CHECK_RC(expr, want)                                                  \
  do {                                                                        \
    int rc_ = (expr);                                                         \
    CHECK(rc_ == (want), "%s returned %s, expected %s", #expr,                \
          pyop_status_name(rc_), pyop_status_name(want));                     \
  } while (0)

#define REQUIRE_RC(expr, want)                                                \
  do {                                                                        \
    int rc_ = (expr);                                                         \
    REQUIRE(rc_ == (want), "%s returned %s, expected %s", #expr,              \
            pyop_status_name(rc_), pyop_status_name(want));                   \
  } while (0)

/* The last error on this thread contains s. */
E2E_UNUSED static bool err_has(const char *s) {
  return strstr(pyop_last_error(), s) != NULL;
}

#define CHECK_ERR_HAS(s) CHECK(err_has(s), "last error lacks \"%s\"", (s))

/* Prints a message a user would read, so the test log shows it. */
E2E_UNUSED static void show_error(const char *what) {
  fprintf(stderr, "[%s] %s -> %s:\n  %s\n", e2e_case, what,
          pyop_status_name(pyop_last_status()), pyop_last_error());
}

E2E_UNUSED static int e2e_finish(void) {
  int f = atomic_load(&e2e_failures);
  fprintf(stderr, "[%s] %ld checks, %d failed\n", e2e_case,
          (long)atomic_load(&e2e_checks), f);
  return f ? 1 : 0;
}

E2E_UNUSED static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ------------------------------------------------------------------ files */

/* "a/b" joined into a malloc'd string. */
E2E_UNUSED static char *path_join(const char *a, const char *b) {
  size_t n = strlen(a) + strlen(b) + 2;
  char *s = malloc(n);
  if (!s) abort();
  snprintf(s, n, "%s/%s", a, b);
  return s;
}

E2E_UNUSED static char *xstrdup(const char *s) {
  char *d = strdup(s);
  if (!d) abort();
  return d;
}

E2E_UNUSED static char *xasprintf(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *s = NULL;
  if (vasprintf(&s, fmt, ap) < 0) abort();
  va_end(ap);
  return s;
}

/* Writes text to path (created 0644, truncated). */
E2E_UNUSED static void write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  if (!f) {
    fprintf(stderr, "cannot write %s: %s\n", path, strerror(errno));
    exit(2);
  }
  fputs(text, f);
  fclose(f);
}

E2E_UNUSED static void make_dir(const char *path) {
  if (mkdir(path, 0755) != 0 && errno != EEXIST) {
    fprintf(stderr, "cannot mkdir %s: %s\n", path, strerror(errno));
    exit(2);
  }
}

/* Copies a regular file byte for byte (mode 0644). */
E2E_UNUSED static void copy_file(const char *from, const char *to) {
  int in = open(from, O_RDONLY | O_CLOEXEC);
  int out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (in < 0 || out < 0) {
    fprintf(stderr, "cannot copy %s to %s: %s\n", from, to, strerror(errno));
    exit(2);
  }
  char buf[8192];
  ssize_t n;
  while ((n = read(in, buf, sizeof buf)) > 0)
    if (write(out, buf, (size_t)n) != n) {
      fprintf(stderr, "short write to %s\n", to);
      exit(2);
    }
  close(in);
  close(out);
}

/* Copies the tree at from into to (created), skipping __pycache__. */
E2E_UNUSED static void copy_tree(const char *from, const char *to) {
  make_dir(to);
  DIR *d = opendir(from);
  if (!d) {
    fprintf(stderr, "cannot open %s: %s\n", from, strerror(errno));
    exit(2);
  }
  struct dirent *de;
  while ((de = readdir(d))) {
    if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
        !strcmp(de->d_name, "__pycache__"))
      continue;
    char *s = path_join(from, de->d_name), *t = path_join(to, de->d_name);
    struct stat st;
    if (lstat(s, &st) == 0) {
      if (S_ISDIR(st.st_mode)) copy_tree(s, t);
      else if (S_ISREG(st.st_mode)) copy_file(s, t);
    }
    free(s);
    free(t);
  }
  closedir(d);
}

/* rm -rf that never follows symbolic links. */
E2E_UNUSED static void remove_tree(const char *path) {
  struct stat st;
  if (lstat(path, &st) != 0) return;
  if (S_ISDIR(st.st_mode)) {
    DIR *d = opendir(path);
    if (d) {
      struct dirent *de;
      while ((de = readdir(d))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
        char *c = path_join(path, de->d_name);
        remove_tree(c);
        free(c);
      }
      closedir(d);
    }
    rmdir(path);
  } else {
    unlink(path);
  }
}

/* A fresh private directory under $TMPDIR (or /tmp); malloc'd. */
E2E_UNUSED static char *make_temp_dir(const char *tag) {
  const char *base = getenv("TMPDIR");
  if (!base || base[0] != '/') base = "/tmp";
  char *tmpl = xasprintf("%s/pyop-e2e-%s-XXXXXX", base, tag);
  if (!mkdtemp(tmpl)) {
    fprintf(stderr, "mkdtemp %s: %s\n", tmpl, strerror(errno));
    exit(2);
  }
  return tmpl;
}

/* 1-based number of the first line of file containing needle; 0 if none. */
E2E_UNUSED static int find_line(const char *file, const char *needle) {
  FILE *f = fopen(file, "r");
  if (!f) return 0;
  char line[4096];
  int n = 0, found = 0;
  while (fgets(line, sizeof line, f)) {
    n++;
    if (strstr(line, needle)) {
      found = n;
      break;
    }
  }
  fclose(f);
  return found;
}

E2E_UNUSED static void set_opp_path(const char *value) {
  if (value)
    setenv("ASCEND_CUSTOM_OPP_PATH", value, 1);
  else
    unsetenv("ASCEND_CUSTOM_OPP_PATH");
}

/* ----------------------------------------------------------------- memory */

/* Resident set size in bytes, from /proc/self/statm. */
E2E_UNUSED static long rss_bytes(void) {
  FILE *f = fopen("/proc/self/statm", "r");
  if (!f) return -1;
  long size = 0, resident = 0;
  if (fscanf(f, "%ld %ld", &size, &resident) != 2) resident = -1;
  fclose(f);
  return resident < 0 ? -1 : resident * sysconf(_SC_PAGESIZE);
}

/* -------------------------------------------------------- host allocator */

/*
 * The host's memory for op outputs: every alloc_output call is recorded
 * (index, shape) and its buffer freed by host_mem_reset. fail_at makes the
 * n-th call (1-based) fail with -7.
 */
#define HOST_MEM_MAX 64
typedef struct host_mem {
  void *blocks[HOST_MEM_MAX];
  size_t n;
  size_t calls;
  size_t last_index;
  size_t fail_at;
} host_mem;

E2E_UNUSED static int host_alloc_output(void *user, size_t index, pyop_tensor *t) {
  host_mem *m = user;
  m->calls++;
  m->last_index = index;
  if (m->fail_at && m->calls == m->fail_at) return -7;
  if (m->n >= HOST_MEM_MAX) return -1;
  if (t->nbytes > ((uint64_t)1 << 30)) return -2; /* a host's limit */
  /* Poison, so a test sees whether the op wrote every byte. */
  void *p = malloc(t->nbytes ? t->nbytes : 1);
  if (!p) return -1;
  memset(p, 0xA5, t->nbytes ? t->nbytes : 1);
  m->blocks[m->n++] = p;
  t->data = p;
  return 0;
}

E2E_UNUSED static int host_alloc_workspace(void *user, uint64_t nbytes, void **out) {
  host_mem *m = user;
  if (m->n >= HOST_MEM_MAX) return -1;
  void *p = calloc(1, nbytes ? nbytes : 1);
  if (!p) return -1;
  m->blocks[m->n++] = p;
  *out = p;
  return 0;
}

E2E_UNUSED static void host_mem_reset(host_mem *m) {
  for (size_t i = 0; i < m->n; i++) free(m->blocks[i]);
  memset(m, 0, sizeof *m);
}

E2E_UNUSED static pyop_exec_ctx host_ctx(host_mem *m) {
  pyop_exec_ctx c = PYOP_EXEC_CTX_INIT;
  c.user = m;
  c.alloc_output = host_alloc_output;
  c.alloc_workspace = host_alloc_workspace;
  return c;
}

/* ---------------------------------------------------------------- tensors */

/* A 1-D float32 tensor over data[0..n). */
E2E_UNUSED static pyop_tensor f32_1d(float *data, int64_t n) {
  pyop_tensor t;
  memset(&t, 0, sizeof t);
  t.data = data;
  t.dtype = PYOP_DTYPE_FLOAT32;
  t.format = PYOP_FORMAT_ND;
  t.ndim = 1;
  t.shape[0] = n;
  t.nbytes = (uint64_t)n * sizeof(float);
  return t;
}

/* A float32 tensor of the given shape over data. */
E2E_UNUSED static pyop_tensor f32_nd(float *data, int ndim, const int64_t *shape) {
  pyop_tensor t;
  memset(&t, 0, sizeof t);
  t.data = data;
  t.dtype = PYOP_DTYPE_FLOAT32;
  t.ndim = ndim;
  uint64_t n = 1;
  for (int i = 0; i < ndim; i++) {
    t.shape[i] = shape[i];
    n *= (uint64_t)shape[i];
  }
  t.nbytes = n * sizeof(float);
  return t;
}

E2E_UNUSED static pyop_tensor_list one(const pyop_tensor *t) {
  pyop_tensor_list l = {t, 1};
  return l;
}

E2E_UNUSED static pyop_tensor_list none_given(void) {
  pyop_tensor_list l = {NULL, 0};
  return l;
}

E2E_UNUSED static pyop_attr attr_float(const char *name, double v) {
  pyop_attr a;
  memset(&a, 0, sizeof a);
  a.name = name;
  a.value.type = PYOP_ATTR_FLOAT;
  a.value.u.f = v;
  return a;
}

E2E_UNUSED static pyop_attr attr_int(const char *name, int64_t v) {
  pyop_attr a;
  memset(&a, 0, sizeof a);
  a.name = name;
  a.value.type = PYOP_ATTR_INT;
  a.value.u.i = v;
  return a;
}

E2E_UNUSED static pyop_attr attr_str(const char *name, const char *v) {
  pyop_attr a;
  memset(&a, 0, sizeof a);
  a.name = name;
  a.value.type = PYOP_ATTR_STR;
  a.value.u.s.data = v;
  a.value.u.s.len = strlen(v);
  return a;
}

/* ------------------------------------------------------------- registry */

/* The registered op types as one comma-separated string (malloc'd). */
E2E_UNUSED static char *op_list_str(size_t *count) {
  char **types = NULL;
  size_t n = 0;
  int rc = pyop_op_list(&types, &n);
  if (count) *count = rc == PYOP_OK ? n : (size_t)-1;
  if (rc != PYOP_OK) return xasprintf("<pyop_op_list failed: %s>", pyop_status_name(rc));
  size_t len = 1;
  for (size_t i = 0; i < n; i++) len += strlen(types[i]) + 1;
  char *s = calloc(1, len);
  if (!s) abort();
  for (size_t i = 0; i < n; i++) {
    if (i) strcat(s, ",");
    strcat(s, types[i]);
  }
  pyop_free(types);
  return s;
}

/* The list equals want ("A,B,C" sorted; "" for empty). */
#define CHECK_LIST(want)                                                      \
  do {                                                                        \
    char *got_ = op_list_str(NULL);                                           \
    CHECK(strcmp(got_, (want)) == 0, "registry is [%s], expected [%s]", got_, \
          (want));                                                            \
    free(got_);                                                               \
  } while (0)

#endif /* PYOP_E2E_UTIL_H */
