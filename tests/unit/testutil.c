#include "testutil.h"

#include "candidates.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

static pyop__sys real;
static atomic_long calls;
static atomic_long fail_at = -1;
static atomic_bool fired;
static atomic_long live_allocs;
static bool installed;

static bool should_fail(void) {
  long n = atomic_fetch_add(&calls, 1);
  if (n == atomic_load(&fail_at)) {
    atomic_store(&fired, true);
    return true;
  }
  return false;
}

static void *w_malloc(size_t n) {
  if (should_fail()) { errno = ENOMEM; return NULL; }
  void *p = real.malloc(n);
  if (p) atomic_fetch_add(&live_allocs, 1);
  return p;
}
static void *w_calloc(size_t n, size_t s) {
  if (should_fail()) { errno = ENOMEM; return NULL; }
  void *p = real.calloc(n, s);
  if (p) atomic_fetch_add(&live_allocs, 1);
  return p;
}
static void *w_realloc(void *p, size_t n) {
  if (should_fail()) { errno = ENOMEM; return NULL; }
  void *q = real.realloc(p, n);
  if (q && !p) atomic_fetch_add(&live_allocs, 1);
  return q;
}
static void w_free(void *p) {
  if (p) atomic_fetch_sub(&live_allocs, 1);
  real.free(p);
}
static void *w_dlopen(const char *path, int flags) {
  if (should_fail()) return NULL; /* dlerror() then reports nothing: NULL */
  return real.dlopen(path, flags);
}
static void *w_dlsym(void *h, const char *name) {
  if (should_fail()) return NULL;
  return real.dlsym(h, name);
}
static int w_dladdr(const void *a, Dl_info *i) {
  if (should_fail()) return 0;
  return real.dladdr(a, i);
}
static int w_dladdr1(const void *a, Dl_info *i, void **extra, int flags) {
  if (should_fail()) return 0;
  return real.dladdr1(a, i, extra, flags);
}
static int w_open(const char *p, int f) {
  if (should_fail()) { errno = EIO; return -1; }
  return real.open(p, f);
}
static int w_openat(int d, const char *p, int f) {
  if (should_fail()) { errno = EIO; return -1; }
  return real.openat(d, p, f);
}
static ssize_t w_read(int fd, void *b, size_t n) {
  if (should_fail()) { errno = EIO; return -1; }
  return real.read(fd, b, n);
}
static int w_fstat(int fd, struct stat *st) {
  if (should_fail()) { errno = EIO; return -1; }
  return real.fstat(fd, st);
}
static int w_stat(const char *p, struct stat *st) {
  if (should_fail()) { errno = EIO; return -1; }
  return real.stat(p, st);
}
static int w_fstatat(int d, const char *p, struct stat *st, int f) {
  if (should_fail()) { errno = EIO; return -1; }
  return real.fstatat(d, p, st, f);
}
static char *w_realpath(const char *p, char *r) {
  if (should_fail()) { errno = ENOMEM; return NULL; }
  char *out = real.realpath(p, r);
  /* realpath(p, NULL) allocates with libc malloc: account it so that
   * pyop__free (which decrements) stays balanced. */
  if (out && !r) atomic_fetch_add(&live_allocs, 1);
  return out;
}
static char *w_getcwd(char *b, size_t n) {
  if (should_fail()) { errno = ENOMEM; return NULL; }
  return real.getcwd(b, n);
}
static DIR *w_opendir(const char *p) {
  if (should_fail()) { errno = EIO; return NULL; }
  return real.opendir(p);
}
static struct dirent *w_readdir(DIR *d) {
  if (should_fail()) { errno = EIO; return NULL; }
  return real.readdir(d);
}

void pt_faults_install(void) {
  if (installed) return;
  pyop__sys_reset();
  real = pyop__sys_table;
  pyop__sys_table.malloc = w_malloc;
  pyop__sys_table.calloc = w_calloc;
  pyop__sys_table.realloc = w_realloc;
  pyop__sys_table.free = w_free;
  pyop__sys_table.dlopen = w_dlopen;
  pyop__sys_table.dlsym = w_dlsym;
  pyop__sys_table.dladdr = w_dladdr;
  pyop__sys_table.dladdr1 = w_dladdr1;
  pyop__sys_table.open = w_open;
  pyop__sys_table.openat = w_openat;
  pyop__sys_table.read = w_read;
  pyop__sys_table.fstat = w_fstat;
  pyop__sys_table.stat = w_stat;
  pyop__sys_table.fstatat = w_fstatat;
  pyop__sys_table.realpath = w_realpath;
  pyop__sys_table.getcwd = w_getcwd;
  pyop__sys_table.opendir = w_opendir;
  pyop__sys_table.readdir = w_readdir;
  atomic_store(&live_allocs, 0);
  atomic_store(&fail_at, -1);
  installed = true;
}

void pt_faults_remove(void) {
  if (!installed) return;
  pyop__sys_reset();
  installed = false;
}

void pt_faults_arm(long n) {
  atomic_store(&fired, false);
  atomic_store(&calls, 0);
  atomic_store(&fail_at, n);
}

long pt_faults_calls(void) { return atomic_load(&calls); }
bool pt_faults_fired(void) { return atomic_load(&fired); }
long pt_live_allocs(void) { return atomic_load(&live_allocs); }

long pt_faults_sweep(int (*fn)(void *), void (*check)(void *, int), void *user,
                     long max_n) {
  long n;
  for (n = 0; n < max_n; n++) {
    pt_faults_arm(n);
    int rc = fn(user);
    bool hit = pt_faults_fired();
    pt_faults_arm(-1);
    if (!hit) return n; /* ran to completion: every fault point was tried */
    check(user, rc);
  }
  fail_msg("fault sweep did not finish within %ld fault points", max_n);
  return n;
}

char *pt_mkdtemp(void) {
  char tmpl[] = "/tmp/pyop-test-XXXXXX";
  char *d = mkdtemp(tmpl);
  assert_non_null(d);
  return strdup(d);
}

void pt_write_file(const char *path, const char *content) {
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(content, f);
  fclose(f);
}

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *ftw) {
  (void)st; (void)ftw;
  /* An unreadable test dir must still be removable; never chmod through a
   * symlink (it would change the file it points to). */
  if (flag != FTW_SL && flag != FTW_SLN) chmod(p, 0700);
  return remove(p);
}

void pt_rmtree(const char *path) {
  chmod(path, 0700);
  nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

int pt_count_fds(void) {
  struct rlimit rl;
  long limit = 65536;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
      rl.rlim_cur < (rlim_t)limit)
    limit = (long)rl.rlim_cur;
  int n = 0;
  for (long fd = 0; fd < limit; fd++)
    if (fcntl((int)fd, F_GETFD) != -1) n++;
  return n;
}

int pt_seam_setup(void **state) {
  (void)state;
  pt_faults_install();
  unsetenv("PYOP_BRIDGE_DIR");
  return 0;
}

int pt_seam_teardown(void **state) {
  (void)state;
  assert_int_equal(pt_live_allocs(), 0);
  pt_faults_remove();
  unsetenv("PYOP_BRIDGE_DIR");
  pyop__artifacts_set_root(NULL);
  return 0;
}
