/*
 * The file security policy (src/trust.c): pyop__open_trusted and
 * pyop__dlopen_trusted.
 */
#include "testutil.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../fake_bridge/fake_bridge_util.h"
#include "trust.h"
#include "pyop/bridge_abi.h"

/* ===================================================== security policy */

static char *so_of(const char *variant) {
  char *d = fb_variant(variant);
  char *p = fb_join(d, "libpyop_bridge.so");
  free(d);
  char *r = fb_real(p);
  free(p);
  return r;
}

/* open_trusted must fail with status and exactly this reason. */
static void expect_refused(const char *path, int status, const char *want) {
  int fd = 12345;
  char *resolved = (char *)"unchanged";
  struct stat st;
  pyop__sb why = PYOP__SB_INIT;
  int fds = fb_count_fds();
  (void)pyop__error(PYOP_EINVAL, "an earlier error");
  assert_int_equal(pyop__open_trusted(path, &fd, &resolved, &st, &why), status);
  assert_int_equal(fd, -1);
  assert_null(resolved);
  assert_string_equal(pyop__sb_str(&why), want);
  /* rc and why are the one carrier: the thread's last error is the caller's. */
  assert_string_equal(pyop_last_error(), "an earlier error");
  assert_int_equal(fb_count_fds(), fds);
  pyop__sb_free(&why);
}

static void test_trusted_good(void **state) {
  (void)state;
  char *real = so_of("GOOD");
  char *link_dir = pt_mkdtemp();
  char *link = fb_join(link_dir, "via-link.so");
  assert_int_equal(symlink(real, link), 0);
  int fd;
  char *resolved;
  struct stat st;
  pyop__sb why = PYOP__SB_INIT;
  assert_int_equal(pyop__open_trusted(link, &fd, &resolved, &st, &why), PYOP_OK);
  assert_true(fd >= 0);
  assert_string_equal(resolved, real); /* the symlink is resolved */
  assert_true(S_ISREG(st.st_mode));
  void *h = NULL;
  assert_int_equal(pyop__dlopen_trusted(fd, resolved, &st, RTLD_NOW | RTLD_LOCAL, &h, &why),
                   PYOP_OK);
  assert_non_null(h);
  assert_non_null(dlsym(h, "pyop_bridge_entry"));
  dlclose(h);
  close(fd);
  pyop__free(resolved);
  assert_int_equal(why.len, 0);
  pyop__sb_free(&why);
  fb_rmtree(link_dir);
  free(link_dir);
  free(link);
  free(real);
}

static void test_trusted_refusals(void **state) {
  (void)state;
  char want[1024];
  /* World-writable file (the world_writable variant: chmod o+w at build). */
  char *ww = so_of("WORLD_WRITABLE");
  snprintf(want, sizeof want, "%s: writable by others (mode 0757)", ww);
  expect_refused(ww, PYOP_ESECURITY, want);

  /* A symlink to it, from a safe directory: resolved and refused. */
  char *tmp = pt_mkdtemp();
  char *link = fb_join(tmp, "innocent.so");
  assert_int_equal(symlink(ww, link), 0);
  expect_refused(link, PYOP_ESECURITY, want);

  /* Group-writable file, then group-writable directory. */
  char *sub = fb_join(tmp, "sub");
  assert_int_equal(mkdir(sub, 0755), 0);
  assert_int_equal(chmod(sub, 0755), 0);
  char *so = fb_join(sub, "b.so");
  fb_copy(ww, so, 0775);
  snprintf(want, sizeof want, "%s: writable by group (mode 0775)", so);
  expect_refused(so, PYOP_ESECURITY, want);
  assert_int_equal(chmod(so, 0666), 0);
  snprintf(want, sizeof want, "%s: writable by group and others (mode 0666)", so);
  expect_refused(so, PYOP_ESECURITY, want);
  assert_int_equal(chmod(so, 0755), 0);
  assert_int_equal(chmod(sub, 0775), 0);
  snprintf(want, sizeof want, "%s: directory writable by group (mode 0775)", sub);
  expect_refused(so, PYOP_ESECURITY, want);
  assert_int_equal(chmod(sub, 01777), 0); /* sticky does not make it safe */
  snprintf(want, sizeof want,
           "%s: directory writable by group and others (mode 1777)", sub);
  expect_refused(so, PYOP_ESECURITY, want);
  assert_int_equal(chmod(sub, 0755), 0);

  /* Not a regular file; missing. */
  snprintf(want, sizeof want, "%s: not a regular file (directory)", sub);
  expect_refused(sub, PYOP_ESECURITY, want);
  char *missing = fb_join(tmp, "missing.so");
  snprintf(want, sizeof want, "%s: cannot resolve: No such file or directory", missing);
  expect_refused(missing, PYOP_ENOENT, want);

  free(missing);
  free(so);
  free(sub);
  free(link);
  fb_rmtree(tmp);
  free(tmp);
  free(ww);
}

static uid_t fake_euid(void) { return 4242; }

static void test_trusted_owner(void **state) {
  (void)state;
  char *tmp = pt_mkdtemp();
  char *sub = fb_join(tmp, "sub");
  assert_int_equal(mkdir(sub, 0755), 0);
  char *so = fb_join(sub, "b.so");
  char *good = so_of("GOOD");
  fb_copy(good, so, 0755);
  char want[1024];
  uid_t me = geteuid();
  if (me == 0) {
    /* As root: a file owned by another user is refused. */
    assert_int_equal(chown(so, 12345, 12345), 0);
    snprintf(want, sizeof want, "%s: owned by uid 12345 (must be root or uid 0)", so);
    expect_refused(so, PYOP_ESECURITY, want);
    assert_int_equal(chown(so, 0, 0), 0);
    assert_int_equal(chown(sub, 12345, 12345), 0);
    snprintf(want, sizeof want,
             "%s: directory owned by uid 12345 (must be root or uid 0)", sub);
    expect_refused(so, PYOP_ESECURITY, want);
    assert_int_equal(chown(sub, 0, 0), 0);
  } else {
    /* Not root: pretend to run as another uid. */
    pyop__sys saved = pyop__sys_table;
    pyop__sys_table.geteuid = fake_euid;
    snprintf(want, sizeof want, "%s: owned by uid %u (must be root or uid 4242)",
             so, (unsigned)me);
    expect_refused(so, PYOP_ESECURITY, want);
    pyop__sys_table = saved;
  }
  /* Root's files are trusted whoever runs: libc's own file (root-owned on
   * any system that installs it), with an effective uid that is not root. */
  Dl_info li;
  assert_true(dladdr((void *)&strlen, &li) != 0 && li.dli_fname && li.dli_fname[0] == '/');
  struct stat lst;
  assert_int_equal(stat(li.dli_fname, &lst), 0);
  if (lst.st_uid == 0 && !(lst.st_mode & (S_IWGRP | S_IWOTH))) {
    pyop__sys saved = pyop__sys_table;
    pyop__sys_table.geteuid = fake_euid;
    int fd;
    char *resolved;
    struct stat st;
    pyop__sb why = PYOP__SB_INIT;
    int rc = pyop__open_trusted(li.dli_fname, &fd, &resolved, &st, &why);
    pyop__sys_table = saved;
    if (rc != PYOP_OK) fail_msg("%s refused: %s", li.dli_fname, pyop__sb_str(&why));
    close(fd);
    pyop__free(resolved);
    pyop__sb_free(&why);
  }
  free(good);
  free(so);
  free(sub);
  fb_rmtree(tmp);
  free(tmp);
}

static int no_proc_open(const char *path, int flags) {
  if (strcmp(path, "/proc/self/maps") == 0) {
    errno = ENOENT;
    return -1;
  }
  return open(path, flags);
}
static int eio_proc_open(const char *path, int flags) {
  if (strcmp(path, "/proc/self/maps") == 0) {
    errno = EIO;
    return -1;
  }
  return open(path, flags);
}
static int swapped_stat(const char *path, struct stat *st) {
  int rc = stat(path, st);
  if (rc == 0) st->st_ino++;
  return rc;
}
static void *null_dlopen(const char *path, int flags) {
  (void)path;
  (void)flags;
  return NULL;
}

/* dlopen_trusted's status of the last open_and_load. */
static int load_status;

/* Opens path with open_trusted and returns dlopen_trusted's handle (its
 * status in load_status). The thread's last error is never touched: rc and
 * why are the one carrier. */
static void *open_and_load(const char *path, pyop__sb *why) {
  int fd;
  char *resolved;
  struct stat st;
  (void)pyop__error(PYOP_EINVAL, "an earlier error");
  assert_int_equal(pyop__open_trusted(path, &fd, &resolved, &st, why), PYOP_OK);
  void *h = (void *)1;
  load_status = pyop__dlopen_trusted(fd, resolved, &st, RTLD_NOW | RTLD_LOCAL, &h, why);
  assert_true((load_status == PYOP_OK) == (h != NULL));
  assert_string_equal(pyop_last_error(), "an earlier error");
  assert_int_equal(pyop_last_status(), PYOP_EINVAL);
  close(fd);
  pyop__free(resolved);
  return h;
}

static void test_dlopen_trusted_paths(void **state) {
  (void)state;
  char *good = so_of("GOOD");
  pyop__sb why = PYOP__SB_INIT;
  char want[1024];

  /* Without /proc: the path is stat'ed again and compared. */
  pyop__sys saved = pyop__sys_table;
  pyop__sys_table.open = no_proc_open;
  void *h = open_and_load(good, &why);
  assert_non_null(h);
  dlclose(h);
  pyop__sys_table.stat = swapped_stat;
  assert_null(open_and_load(good, &why));
  snprintf(want, sizeof want,
           "%s: file changed between the security check and dlopen", good);
  assert_string_equal(pyop__sb_str(&why), want);
  assert_int_equal(load_status, PYOP_ESECURITY);
  pyop__sb_free(&why);
  pyop__sys_table = saved;
  /* With /proc, stat plays no part: the mappings are compared. */
  pyop__sys_table.stat = swapped_stat;
  h = open_and_load(good, &why);
  assert_non_null(h);
  dlclose(h);
  pyop__sys_table = saved;
  /* /proc there but unreadable: refused, not trusted blindly. */
  pyop__sys_table.open = eio_proc_open;
  assert_null(open_and_load(good, &why));
  snprintf(want, sizeof want, "cannot read /proc/self/maps: Input/output error");
  assert_string_equal(pyop__sb_str(&why), want);
  assert_int_equal(load_status, PYOP_EIO);
  pyop__sb_free(&why);
  pyop__sys_table = saved;

  /* Not an ELF file: dlerror text, with our path, not /proc/self/fd/N. */
  char *tmp = pt_mkdtemp();
  char *bad = fb_join(tmp, "bad.so");
  pt_write_file(bad, "this is not a shared object, only text that is long "
                     "enough for the loader to read a whole ELF header\n");
  assert_null(open_and_load(bad, &why));
  snprintf(want, sizeof want, "%s: ", bad);
  assert_memory_equal(pyop__sb_str(&why), want, strlen(want));
  assert_non_null(strstr(pyop__sb_str(&why), "invalid ELF header"));
  assert_null(strstr(pyop__sb_str(&why), "/proc/self/fd"));
  pyop__sb_free(&why);

  /* A stale dlerror never stands in for ours. */
  assert_null(dlopen("/nonexistent/stale.so", RTLD_NOW));
  pyop__sys_table.dlopen = null_dlopen;
  assert_null(open_and_load(good, &why));
  snprintf(want, sizeof want, "%s: unknown dynamic loader error", good);
  assert_string_equal(pyop__sb_str(&why), want);
  pyop__sb_free(&why);
  pyop__sys_table = saved;

  fb_rmtree(tmp);
  free(tmp);
  free(bad);
  free(good);
}

/* /proc/self/maps that cannot be opened for a reason that means "no /proc
 * for us" (EACCES: a hardened /proc; ENOTDIR: /proc not a procfs) is
 * treated as absent: the path is stat'ed again, as without /proc; only
 * another error refuses (both-sides pass, session 14: the siblings of
 * ENOENT). */
static int maps_errno;
static int errno_proc_open(const char *path, int flags) {
  if (strcmp(path, "/proc/self/maps") == 0) {
    errno = maps_errno;
    return -1;
  }
  return open(path, flags);
}

/* The address dlopen_trusted mapped the checked file at, and a
 * /proc/self/maps whose first line is a mapping that ends exactly there
 * (another file's, adjacent below it), then the real lines. */
static uintptr_t mapped_at;
static void *recording_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off) {
  void *p = mmap(addr, len, prot, flags, fd, off);
  if (p != MAP_FAILED) mapped_at = (uintptr_t)p;
  return p;
}
static int adjacent_maps_open(const char *path, int flags) {
  if (strcmp(path, "/proc/self/maps") != 0) return open(path, flags);
  FILE *f = tmpfile();
  if (!f) return -1;
  fprintf(f, "%lx-%lx r--p 00000000 00:00 4242 /fake/adjacent\n",
          (unsigned long)(mapped_at - 4096), (unsigned long)mapped_at);
  FILE *real = fopen("/proc/self/maps", "r");
  if (real) {
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, real)) > 0) fwrite(buf, 1, n, f);
    fclose(real);
  }
  fflush(f);
  int fd = dup(fileno(f));
  fclose(f);
  if (fd >= 0) lseek(fd, 0, SEEK_SET);
  return fd;
}

static void test_dlopen_trusted_maps_edges(void **state) {
  (void)state;
  char *good = so_of("GOOD");
  pyop__sb why = PYOP__SB_INIT;
  char want[1024];
  pyop__sys saved = pyop__sys_table;
  static const int absent[] = {ENOENT, EACCES, ENOTDIR};
  for (size_t i = 0; i < sizeof absent / sizeof *absent; i++) {
    maps_errno = absent[i];
    pyop__sys_table.open = errno_proc_open;
    void *h = open_and_load(good, &why);
    if (!h) fail_msg("/proc/self/maps %s: refused: %s", strerror(absent[i]), pyop__sb_str(&why));
    dlclose(h);
    /* The fallback, not blind trust: a file swapped since is refused. */
    pyop__sys_table.stat = swapped_stat;
    assert_null(open_and_load(good, &why));
    snprintf(want, sizeof want, "%s: file changed between the security check and dlopen", good);
    assert_string_equal(pyop__sb_str(&why), want);
    assert_int_equal(load_status, PYOP_ESECURITY);
    pyop__sb_free(&why);
    pyop__sys_table = saved;
  }
  maps_errno = EPERM; /* another error: refused */
  pyop__sys_table.open = errno_proc_open;
  assert_null(open_and_load(good, &why));
  assert_int_equal(load_status, PYOP_EIO);
  assert_non_null(strstr(pyop__sb_str(&why), "cannot read /proc/self/maps: "));
  pyop__sb_free(&why);
  pyop__sys_table = saved;

  /* A mapping's end is exclusive: one ending where the checked file's
   * mapping starts is another object's, not the checked file's. */
  pyop__sys_table.mmap = recording_mmap;
  pyop__sys_table.open = adjacent_maps_open;
  void *h = open_and_load(good, &why);
  if (!h) fail_msg("refused by an adjacent mapping: %s", pyop__sb_str(&why));
  dlclose(h);
  pyop__sb_free(&why);
  pyop__sys_table = saved;
  free(good);
}

/* Calls a bridge's entry and returns its build_info text. */
static const char *build_info_of(void *h) {
  pyop_bridge_entry_fn entry = (pyop_bridge_entry_fn)dlsym(h, "pyop_bridge_entry");
  assert_non_null(entry);
  pyop_bridge_request req = {sizeof req, PYOP_BRIDGE_ABI_MAJOR, PYOP_BRIDGE_ABI_MINOR, NULL};
  const pyop_bridge_api *api = NULL;
  assert_int_equal(entry(&req, &api), PYOP_OK);
  return api->build_info.data;
}

/* A library loaded through /proc/self/fd/N keeps that name after its
 * descriptor is closed; the next file opened as fd N must not be taken for
 * it. */
static void test_dlopen_trusted_name_reuse(void **state) {
  (void)state;
  char *good = so_of("GOOD"), *other = so_of("NEWER_MINOR");
  pyop__sb why = PYOP__SB_INIT;
  int fd1, fd2;
  char *r1, *r2;
  struct stat st1, st2;
  assert_int_equal(pyop__open_trusted(good, &fd1, &r1, &st1, &why), PYOP_OK);
  void *h1 = NULL, *h2 = NULL;
  assert_int_equal(pyop__dlopen_trusted(fd1, r1, &st1, RTLD_NOW | RTLD_LOCAL, &h1, &why),
                   PYOP_OK);
  assert_non_null(h1);
  close(fd1);
  assert_int_equal(pyop__open_trusted(other, &fd2, &r2, &st2, &why), PYOP_OK);
  assert_int_equal(fd2, fd1); /* the number is reused */
  assert_int_equal(pyop__dlopen_trusted(fd2, r2, &st2, RTLD_NOW | RTLD_LOCAL, &h2, &why),
                   PYOP_OK);
  assert_non_null(h2);
  close(fd2);
  assert_ptr_not_equal(h1, h2);
  assert_string_equal(build_info_of(h1), "fake bridge GOOD");
  assert_string_equal(build_info_of(h2), "fake bridge NEWER_MINOR");
  dlclose(h2);
  dlclose(h1);
  pyop__free(r1);
  pyop__free(r2);
  pyop__sb_free(&why);
  free(good);
  free(other);
}


/* A FIFO or a device where a shared object is expected (bridge, kernel
 * library, start-up libpython: all go through open_trusted) is refused at
 * once, naming the path and what it is. */
static void test_trusted_not_regular(void **state) {
  (void)state;
  char *tmp = pt_mkdtemp();
  char *fifo = fb_join(tmp, "libfifo.so");
  assert_int_equal(mkfifo(fifo, 0644), 0);
  int fd;
  char *resolved;
  struct stat st;
  pyop__sb why = PYOP__SB_INIT;
  char want[1024];
  alarm(20); /* a blocked open is a failure, not a stuck CI job */
  assert_int_equal(pyop__open_trusted(fifo, &fd, &resolved, &st, &why), PYOP_ESECURITY);
  alarm(0);
  snprintf(want, sizeof want, "%s: not a regular file (FIFO)", fifo);
  assert_string_equal(pyop__sb_str(&why), want);
  pyop__sb_free(&why);
  alarm(20);
  assert_int_equal(pyop__open_trusted("/dev/null", &fd, &resolved, &st, &why),
                   PYOP_ESECURITY);
  alarm(0);
  assert_string_equal(pyop__sb_str(&why), "/dev/null: not a regular file (character device)");
  pyop__sb_free(&why);
  fb_rmtree(tmp);
  free(tmp);
  free(fifo);
}

/* dlopen by path hands back an object already loaded under that name
 * without reading the file: when the file was replaced since, the object is
 * not the one checked, and it is refused. */
static void test_dlopen_trusted_replaced(void **state) {
  (void)state;
  char *good = so_of("GOOD"), *other = so_of("NEWER_MINOR");
  char *tmp = pt_mkdtemp();
  char *lib = fb_join(tmp, "libreplaced.so"), *next = fb_join(tmp, "next.so");
  fb_copy(good, lib, 0755);
  void *host = dlopen(lib, RTLD_NOW | RTLD_LOCAL); /* the host loaded it first */
  assert_non_null(host);
  fb_copy(other, next, 0755);
  assert_int_equal(rename(next, lib), 0);
  pyop__sb why = PYOP__SB_INIT;
  assert_null(open_and_load(lib, &why));
  assert_int_equal(load_status, PYOP_ESECURITY);
  if (!strstr(pyop__sb_str(&why), "is not the checked file"))
    fail_msg("%s", pyop__sb_str(&why));
  pyop__sb_free(&why);
  /* Once the old object is gone, the new file loads. */
  dlclose(host);
  void *h = open_and_load(lib, &why);
  assert_non_null(h);
  assert_string_equal(build_info_of(h), "fake bridge NEWER_MINOR");
  dlclose(h);
  pyop__sb_free(&why);
  fb_rmtree(tmp);
  free(tmp);
  free(lib);
  free(next);
  free(good);
  free(other);
}

/* "/" (no file name in it), a name the kernel answers with ELOOP while
 * opening (swapped for a symbolic link after realpath) or with another
 * error: each refused with its own status and reason, nothing left open.
 * (A socket cannot be opened at all: open's ENXIO, before any fstat.) */
static int openat_errno;
static int failing_openat(int dirfd, const char *path, int flags) {
  (void)dirfd;
  (void)path;
  (void)flags;
  errno = openat_errno;
  return -1;
}

static void test_trusted_odd_paths(void **state) {
  (void)state;
  char want[1024];
  expect_refused("/", PYOP_ENOENT, "/: not a file path");
  char *good = so_of("GOOD");
  pyop__sys saved = pyop__sys_table;
  pyop__sys_table.openat = failing_openat;
  openat_errno = ELOOP;
  snprintf(want, sizeof want, "%s: replaced by a symbolic link while being checked", good);
  expect_refused(good, PYOP_ESECURITY, want);
  openat_errno = EACCES;
  snprintf(want, sizeof want, "%s: cannot open: %s", good, strerror(EACCES));
  expect_refused(good, PYOP_EIO, want);
  openat_errno = ENOTDIR;
  snprintf(want, sizeof want, "%s: cannot open: %s", good, strerror(ENOTDIR));
  expect_refused(good, PYOP_ENOENT, want);
  pyop__sys_table = saved;
  /* The kinds no test file is: named too. */
  assert_string_equal(pyop__file_kind(S_IFBLK | 0600), "block device");
  assert_string_equal(pyop__file_kind(S_IFLNK | 0777), "symbolic link");
  assert_string_equal(pyop__file_kind(S_IFSOCK | 0755), "socket");
  assert_string_equal(pyop__file_kind(S_IFREG | 0644), "regular file");
  assert_string_equal(pyop__file_kind(S_IFDIR | 0755), "directory");
  assert_string_equal(pyop__file_kind(0), "unknown file type");
  free(good);
}

/*
 * A file directly in the root directory ("/libk.so": a container's kernel
 * library): its directory is "/" itself, opened and checked as any other
 * (configuration pass, src.cf.trust.root_dir_empty). The seam stands the
 * GOOD bridge in for /pyop-cf-root.so: realpath names it so, openat opens
 * the real file by that base name.
 */
static const char *root_file_real;
static char *root_realpath(const char *path, char *resolved) {
  (void)path;
  snprintf(resolved, PATH_MAX, "/pyop-cf-root.so");
  return resolved;
}
static int root_openat(int dirfd, const char *path, int flags) {
  (void)dirfd;
  if (strcmp(path, "pyop-cf-root.so") != 0) {
    errno = ENOENT;
    return -1;
  }
  return open(root_file_real, flags);
}
static char root_dir_opened[PATH_MAX];
static int root_open(const char *path, int flags) {
  snprintf(root_dir_opened, sizeof root_dir_opened, "%s", path);
  return open(path, flags);
}

static void test_trusted_in_root_dir(void **state) {
  (void)state;
  struct stat rst;
  assert_int_equal(stat("/", &rst), 0);
  if ((rst.st_uid != 0 && rst.st_uid != geteuid()) || (rst.st_mode & (S_IWGRP | S_IWOTH))) {
    print_message("/ is not a directory the checks accept here: skipped\n");
    skip();
  }
  char *good = so_of("GOOD");
  root_file_real = good;
  pyop__sys saved = pyop__sys_table;
  pyop__sys_table.realpath = root_realpath;
  pyop__sys_table.openat = root_openat;
  pyop__sys_table.open = root_open;
  int fd = -1;
  char *resolved = NULL;
  struct stat st;
  pyop__sb why = PYOP__SB_INIT;
  int rc = pyop__open_trusted("/anything/libk.so", &fd, &resolved, &st, &why);
  pyop__sys_table = saved;
  if (rc != PYOP_OK) fail_msg("a file in /: %s: %s", pyop_status_name(rc), pyop__sb_str(&why));
  assert_string_equal(root_dir_opened, "/");
  assert_string_equal(resolved, "/pyop-cf-root.so");
  assert_true(fd >= 0);
  struct stat want;
  assert_int_equal(stat(good, &want), 0);
  assert_true(st.st_ino == want.st_ino && st.st_dev == want.st_dev);
  close(fd);
  pyop__free(resolved);
  pyop__sb_free(&why);
  free(good);
}

static int run_trusted(void *user) {
  const char *path = user;
  int fd;
  char *resolved;
  struct stat st;
  pyop__sb why = PYOP__SB_INIT;
  int rc = pyop__open_trusted(path, &fd, &resolved, &st, &why);
  if (rc == PYOP_OK) {
    void *h;
    rc = pyop__dlopen_trusted(fd, resolved, &st, RTLD_NOW | RTLD_LOCAL, &h, &why);
    if (rc == PYOP_OK) dlclose(h);
    close(fd);
    pyop__free(resolved);
  }
  assert_true(rc == PYOP_OK || why.len > 0 || why.oom);
  pyop__sb_free(&why);
  return rc;
}

/* Descriptors open before the sweep: a failed check leaves none more. */
static int fds_before;

static void check_trusted(void *user, int rc) {
  (void)user;
  assert_int_not_equal(rc, PYOP_OK);
  assert_int_equal(pt_live_allocs(), 0);
  assert_int_equal(fb_count_fds(), fds_before);
}

static void test_trusted_faults(void **state) {
  (void)state;
  char *good = so_of("GOOD");
  fds_before = fb_count_fds();
  long n = pt_faults_sweep(run_trusted, check_trusted, good, 200);
  print_message("%ld fault points swept\n", n);
  assert_true(n >= 6);
  free(good);
}

/* The dynamic loader's text without the "<path>: " it starts with; a
 * text about another file whose path only starts with ours, or one not
 * starting with the path at all, is kept whole. */
static const char *dl_text;
static char *fake_dlerror(void) { return (char *)dl_text; }

static void test_dlerror_detail(void **state) {
  (void)state;
  char *(*real)(void) = pyop__sys_table.dlerror;
  pyop__sys_table.dlerror = fake_dlerror;
  dl_text = "/a/lib.so: invalid ELF header";
  assert_string_equal(pyop__dlerror_detail("/a/lib.so"), "invalid ELF header");
  dl_text = "/a/lib.so.1: cannot open shared object file";
  assert_string_equal(pyop__dlerror_detail("/a/lib.so"), dl_text);
  dl_text = "/a/lib.so:x";
  assert_string_equal(pyop__dlerror_detail("/a/lib.so"), dl_text);
  dl_text = "libc.so.6: version not found";
  assert_string_equal(pyop__dlerror_detail("/a/lib.so"), dl_text);
  dl_text = NULL;
  assert_string_equal(pyop__dlerror_detail("/a/lib.so"), "unknown dynamic loader error");
  pyop__sys_table.dlerror = real;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_trusted_good, pt_seam_setup, pt_seam_teardown),
      cmocka_unit_test_setup_teardown(test_trusted_refusals, pt_seam_setup, pt_seam_teardown),
      cmocka_unit_test_setup_teardown(test_trusted_owner, pt_seam_setup, pt_seam_teardown),
      cmocka_unit_test_setup_teardown(test_dlopen_trusted_paths, pt_seam_setup, pt_seam_teardown),
      cmocka_unit_test_setup_teardown(test_dlopen_trusted_maps_edges, pt_seam_setup,
                                      pt_seam_teardown),
      cmocka_unit_test_setup_teardown(test_trusted_not_regular, pt_seam_setup, pt_seam_teardown),
      cmocka_unit_test_setup_teardown(test_trusted_odd_paths, pt_seam_setup, pt_seam_teardown),
      cmocka_unit_test_setup_teardown(test_trusted_in_root_dir, pt_seam_setup, pt_seam_teardown),
      cmocka_unit_test_setup_teardown(test_dlopen_trusted_replaced, pt_seam_setup, pt_seam_teardown),
      cmocka_unit_test_setup_teardown(test_dlopen_trusted_name_reuse, pt_seam_setup, pt_seam_teardown),
      cmocka_unit_test_setup_teardown(test_trusted_faults, pt_seam_setup, pt_seam_teardown),
      cmocka_unit_test_setup_teardown(test_dlerror_detail, pt_seam_setup, pt_seam_teardown),
  };
  return cmocka_run_group_tests_name("trust", tests, NULL, NULL);
}
