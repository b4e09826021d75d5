/*
 * The bridge's OS seam (bridge/os.c) and what lanes do with the bridge's
 * own file through it (bridge/lane_files.c): "no /proc", "memfd refused",
 * a replaced file, failed copies, each faulted through pb_os_table (no
 * mount namespace, no LD_PRELOAD), with the exact reason a user reads in
 * the lanes warning and nothing left open.
 */
#include "testutil.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "../fake_bridge/fake_bridge_util.h"
#include "../../bridge/os.h"

static int os_setup(void **state) {
  (void)state;
  pb_os_reset();
  unsetenv("PYOP_TEST_LANES");
  return 0;
}

static int os_teardown(void **state) {
  (void)state;
  pb_os_reset();
  unsetenv("PYOP_TEST_LANES");
  return 0;
}

/* An address inside libc and the file it was loaded from: what the bridge
 * does with an address of its own. */
static const void *libc_addr(const char **file) {
  const void *addr = dlsym(RTLD_DEFAULT, "fopen");
  Dl_info di;
  assert_non_null(addr);
  assert_true(dladdr(addr, &di) != 0 && di.dli_fname != NULL);
  *file = di.dli_fname;
  return addr;
}

/* pb_lane_own_file must fail with exactly want ("%s": the file) and leave
 * no descriptor open. */
static void expect_own_file_refused(const char *want_fmt) {
  const char *file = NULL;
  const void *addr = libc_addr(&file);
  char want[1024], why[384] = "unchanged";
  snprintf(want, sizeof want, want_fmt, file);
  int fds = fb_count_fds();
  assert_int_equal(pb_lane_own_file(addr, why, sizeof why), -1);
  assert_string_equal(why, want);
  assert_int_equal(fb_count_fds(), fds);
}

static void test_own_file(void **state) {
  (void)state;
  const char *file = NULL;
  const void *addr = libc_addr(&file);
  char why[384] = "";
  int fd = pb_lane_own_file(addr, why, sizeof why);
  assert_true(fd >= 0);
  struct stat a, b;
  assert_int_equal(fstat(fd, &a), 0);
  assert_int_equal(stat(file, &b), 0);
  assert_true(a.st_dev == b.st_dev && a.st_ino == b.st_ino);
  assert_true((fcntl(fd, F_GETFD) & FD_CLOEXEC) != 0);
  close(fd);
}

/* fopen as if /proc were not mounted; every other path is real. */
static FILE *fopen_no_proc(const char *path, const char *mode) {
  if (strncmp(path, "/proc/", 6) == 0) {
    errno = ENOENT;
    return NULL;
  }
  return fopen(path, mode);
}

#define NO_PROC                                                                              \
  "cannot read /proc/self/maps (No such file or directory): is /proc mounted? (lanes copy "  \
  "the bridge and open the copy through /proc/self/fd)"

static void test_no_proc(void **state) {
  (void)state;
  pb_os_table.fopen = fopen_no_proc;
  expect_own_file_refused(NO_PROC);
}

/* The PYOP_TEST_LANES word stands for the same fault (tests/lanes). */
static void test_no_proc_word(void **state) {
  (void)state;
  setenv("PYOP_TEST_LANES", "force,no-proc", 1);
  expect_own_file_refused(NO_PROC);
}

/* A PYOP_TEST_LANES word is taken whole, wherever it is in the list: a
 * longer word that starts with it (no-procs) or a list without it fault
 * nothing, and pb_lane_own_file works (state pass, session 11). */
static void test_seam_words_whole(void **state) {
  (void)state;
  setenv("PYOP_TEST_LANES", "no-procs,force", 1);
  assert_false(pb_lanes_test_seam("no-proc"));
  assert_true(pb_lanes_test_seam("force"));
  const char *file = NULL;
  const void *addr = libc_addr(&file);
  char why[384] = "";
  int fd = pb_lane_own_file(addr, why, sizeof why);
  assert_true(fd >= 0);
  close(fd);
  setenv("PYOP_TEST_LANES", "force,no-proc", 1);
  assert_true(pb_lanes_test_seam("no-proc"));
  assert_true(pb_lanes_test_seam("force")); /* ends at its comma */
  assert_false(pb_lanes_test_seam("no"));
  assert_false(pb_lanes_test_seam("forc"));
  /* An empty word (a doubled or a leading comma) ends nothing: the words
   * after it count (both-sides pass, session 14). */
  setenv("PYOP_TEST_LANES", "force,,no-proc", 1);
  assert_true(pb_lanes_test_seam("no-proc"));
  setenv("PYOP_TEST_LANES", ",no-proc", 1);
  assert_true(pb_lanes_test_seam("no-proc"));
  assert_false(pb_lanes_test_seam("force"));
  /* Case counts (dataflow pass, session 13). */
  setenv("PYOP_TEST_LANES", "FORCE,No-Proc", 1);
  assert_false(pb_lanes_test_seam("force"));
  assert_false(pb_lanes_test_seam("no-proc"));
}

static int fstat_other_inode(int fd, struct stat *st) {
  int rc = fstat(fd, st);
  st->st_ino += 1;
  return rc;
}

static void test_replaced_file(void **state) {
  (void)state;
  pb_os_table.fstat = fstat_other_inode;
  expect_own_file_refused("the bridge's file %s is not the one mapped in this process "
                          "(replaced since it was loaded?)");
}

/* The bridge's file on another device with the same inode number (another
 * mount, an overlay layer): not the file mapped, whichever part of the
 * device number differs (configuration pass, session 12). */
static int fstat_other_minor(int fd, struct stat *st) {
  int rc = fstat(fd, st);
  st->st_dev = makedev(major(st->st_dev), minor(st->st_dev) + 1);
  return rc;
}

static int fstat_other_major(int fd, struct stat *st) {
  int rc = fstat(fd, st);
  st->st_dev = makedev(major(st->st_dev) + 1, minor(st->st_dev));
  return rc;
}

static void test_other_device(void **state) {
  (void)state;
  pb_os_table.fstat = fstat_other_minor;
  expect_own_file_refused("the bridge's file %s is not the one mapped in this process "
                          "(replaced since it was loaded?)");
  pb_os_table.fstat = fstat_other_major;
  expect_own_file_refused("the bridge's file %s is not the one mapped in this process "
                          "(replaced since it was loaded?)");
}

/* fstat failing on the opened file (EIO): the reason names it, and the
 * descriptor opened is closed (configuration pass, session 12). */
static int fstat_fails(int fd, struct stat *st) {
  (void)fd;
  memset(st, 0, sizeof *st);
  errno = EIO;
  return -1;
}

static void test_own_file_fstat_fails(void **state) {
  (void)state;
  pb_os_table.fstat = fstat_fails;
  expect_own_file_refused("cannot open the bridge's file %s: Input/output error");
}

static int open_refused(const char *path, int flags) {
  (void)path;
  (void)flags;
  errno = EACCES;
  return -1;
}

static int dladdr_unknown(const void *addr, Dl_info *info) {
  (void)addr;
  (void)info;
  return 0;
}

/* dladdr finding the address (non-zero) but giving no file name (an
 * address of the main program on some libcs): refused as unnamed, never
 * an open of a NULL path (both-sides pass, session 14). */
static int dladdr_no_name(const void *addr, Dl_info *info) {
  int rc = dladdr(addr, info);
  info->dli_fname = NULL;
  return rc;
}

static void test_own_file_other_faults(void **state) {
  (void)state;
  pb_os_table.open = open_refused;
  expect_own_file_refused("cannot open the bridge's file %s: Permission denied");
  pb_os_reset();
  pb_os_table.dladdr = dladdr_unknown;
  expect_own_file_refused("dladdr cannot name the bridge's file");
  pb_os_reset();
  pb_os_table.dladdr = dladdr_no_name;
  expect_own_file_refused("dladdr cannot name the bridge's file");
}

/* dladdr naming another file than the one mapped at the address's base:
 * this test program, mapped in the process too, but elsewhere (the file at
 * the bridge's path replaced by another library this process loaded): the
 * mapping at the base is what is compared, not any mapping of that file
 * (lifetime pass, session 15). */
static char exe_path[4096];

static int dladdr_other_mapped(const void *addr, Dl_info *info) {
  int rc = dladdr(addr, info);
  info->dli_fname = exe_path;
  return rc;
}

static void test_own_file_mapped_elsewhere(void **state) {
  (void)state;
  ssize_t len = readlink("/proc/self/exe", exe_path, sizeof exe_path - 1);
  assert_true(len > 0);
  exe_path[len] = '\0';
  const char *file = NULL;
  const void *addr = libc_addr(&file);
  pb_os_table.dladdr = dladdr_other_mapped;
  char want[8192], why[384] = "unchanged";
  snprintf(want, sizeof want, "the bridge's file %s is not the one mapped in this process "
           "(replaced since it was loaded?)", exe_path);
  int fds = fb_count_fds();
  assert_int_equal(pb_lane_own_file(addr, why, sizeof why), -1);
  assert_string_equal(why, want);
  assert_int_equal(fb_count_fds(), fds);
}

/* A copy of the file behind fd src must fail with exactly want and leave
 * no descriptor open. */
static void expect_copy_refused(int src, const char *want) {
  char why[256] = "unchanged";
  int fds = fb_count_fds();
  assert_int_equal(pb_lane_image_copy(src, 3, why, sizeof why), -1);
  assert_string_equal(why, want);
  assert_int_equal(fb_count_fds(), fds);
}

static int libc_fd(void) {
  const char *file = NULL;
  (void)libc_addr(&file);
  int fd = open(file, O_RDONLY | O_CLOEXEC);
  assert_true(fd >= 0);
  return fd;
}

static int memfd_refused(const char *name, unsigned flags) {
  (void)name;
  (void)flags;
  errno = EPERM; /* a seccomp filter */
  return -1;
}

static void test_memfd_refused(void **state) {
  (void)state;
  int src = libc_fd();
  pb_os_table.memfd_create = memfd_refused;
  expect_copy_refused(src, "memfd_create failed: Operation not permitted");
  pb_os_reset();
  setenv("PYOP_TEST_LANES", "no-memfd", 1);
  expect_copy_refused(src, "memfd_create failed: Operation not permitted");
  close(src);
}

static void test_copy(void **state) {
  (void)state;
  int src = libc_fd();
  char why[256] = "";
  int fd = pb_lane_image_copy(src, 2, why, sizeof why);
  assert_true(fd >= 0);
  struct stat a, b;
  assert_int_equal(fstat(src, &a), 0);
  assert_int_equal(fstat(fd, &b), 0);
  assert_int_equal(a.st_size, b.st_size);
  char x[4096], y[4096];
  assert_int_equal(pread(src, x, sizeof x, 0), (ssize_t)sizeof x);
  assert_int_equal(pread(fd, y, sizeof y, 0), (ssize_t)sizeof y);
  assert_memory_equal(x, y, sizeof x);
  int seals = fcntl(fd, F_GET_SEALS);
  assert_int_equal(seals & (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL),
                   F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL);
  assert_int_equal(write(fd, "x", 1), -1); /* sealed */
  /* Not inherited by a program the host (or a plugin) executes: the lane's
   * copy of the bridge stays this process's (configuration pass, session 12). */
  assert_true((fcntl(fd, F_GETFD) & FD_CLOEXEC) != 0);
  /* Named by its lane (index 2): what /proc/<pid>/maps and a debugger show
   * for that lane's image (dataflow pass, session 13). */
  char link[64], target[256];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  ssize_t len = readlink(link, target, sizeof target - 1);
  assert_true(len > 0);
  target[len] = '\0';
  assert_string_equal(target, "/memfd:pyop-lane-2 (deleted)");
  close(fd);
  close(src);
}

static ssize_t write_fails(int fd, const void *buf, size_t n) {
  (void)fd;
  (void)buf;
  (void)n;
  errno = EIO;
  return -1;
}

/* A write that makes no progress (returns 0; ENOSPC set for the message)
 * on its first call, then writes: the copy fails rather than retrying a
 * write that wrote nothing (a full device would loop forever). */
static unsigned zero_writes;

static ssize_t write_zero_first(int fd, const void *buf, size_t n) {
  if (zero_writes++ == 0) {
    errno = ENOSPC;
    return 0;
  }
  return write(fd, buf, n);
}

static int seal_refused(int fd, int cmd, int arg) {
  if (cmd == F_ADD_SEALS) {
    errno = EINVAL;
    return -1;
  }
  return fcntl(fd, cmd, arg);
}

static void test_copy_faults(void **state) {
  (void)state;
  int src = libc_fd();
  pb_os_table.write = write_fails;
  expect_copy_refused(src, "cannot copy the bridge into a sealed memfd: Input/output error");
  pb_os_reset();
  pb_os_table.fcntl = seal_refused;
  expect_copy_refused(src, "cannot copy the bridge into a sealed memfd: Invalid argument");
  pb_os_reset();
  zero_writes = 0;
  pb_os_table.write = write_zero_first;
  expect_copy_refused(src, "cannot copy the bridge into a sealed memfd: No space left on device");
  assert_int_equal(zero_writes, 1); /* not tried again */
  close(src);
}

/* A pread that reads the first chunk, then fails (EIO: a bad disk block):
 * the copy fails, never a truncated image (configuration pass, session 12). */
static unsigned read_calls;

static ssize_t pread_fails_second(int fd, void *buf, size_t n, off_t at) {
  if (++read_calls >= 2) {
    errno = EIO;
    return -1;
  }
  return pread(fd, buf, n, at);
}

static void test_copy_read_fails(void **state) {
  (void)state;
  int src = libc_fd();
  read_calls = 0;
  pb_os_table.pread = pread_fails_second;
  expect_copy_refused(src, "cannot copy the bridge into a sealed memfd: Input/output error");
  assert_true(read_calls >= 2);
  close(src);
}

/* A pread that returns at most 5000 bytes and EINTR every third call, and
 * a write that takes at most 777 bytes and says EINTR every fifth call:
 * what a copy must go on through (a signal, a pipe-like short count). */
static unsigned short_calls;

static ssize_t pread_short(int fd, void *buf, size_t n, off_t at) {
  if (++short_calls % 3 == 0) {
    errno = EINTR;
    return -1;
  }
  return pread(fd, buf, n < 5000 ? n : 5000, at);
}

static ssize_t write_short(int fd, const void *buf, size_t n) {
  if (++short_calls % 5 == 0) {
    errno = EINTR;
    return -1;
  }
  return write(fd, buf, n < 777 ? n : 777);
}

/* The copy made through short reads, short writes and EINTR is the whole
 * file, byte for byte (every chunk written from where the last one
 * stopped, each read from where the copy is), and sealed. */
static void test_copy_short_counts(void **state) {
  (void)state;
  int src = libc_fd();
  short_calls = 0;
  pb_os_table.pread = pread_short;
  pb_os_table.write = write_short;
  char why[256] = "";
  int fd = pb_lane_image_copy(src, 4, why, sizeof why);
  pb_os_reset();
  assert_true(fd >= 0);
  assert_string_equal(why, "");
  struct stat a, b;
  assert_int_equal(fstat(src, &a), 0);
  assert_int_equal(fstat(fd, &b), 0);
  assert_int_equal(a.st_size, b.st_size);
  char *x = malloc((size_t)a.st_size), *y = malloc((size_t)a.st_size);
  assert_non_null(x);
  assert_non_null(y);
  assert_int_equal(pread(src, x, (size_t)a.st_size, 0), (ssize_t)a.st_size);
  assert_int_equal(pread(fd, y, (size_t)a.st_size, 0), (ssize_t)a.st_size);
  assert_memory_equal(x, y, (size_t)a.st_size);
  assert_true(short_calls > 100); /* many short calls, many EINTR */
  assert_int_equal(fcntl(fd, F_GET_SEALS) & F_SEAL_WRITE, F_SEAL_WRITE);
  free(x);
  free(y);
  close(fd);
  close(src);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_own_file, os_setup, os_teardown),
      cmocka_unit_test_setup_teardown(test_no_proc, os_setup, os_teardown),
      cmocka_unit_test_setup_teardown(test_no_proc_word, os_setup, os_teardown),
      cmocka_unit_test_setup_teardown(test_seam_words_whole, os_setup, os_teardown),
      cmocka_unit_test_setup_teardown(test_replaced_file, os_setup, os_teardown),
      cmocka_unit_test_setup_teardown(test_own_file_other_faults, os_setup, os_teardown),
      cmocka_unit_test_setup_teardown(test_memfd_refused, os_setup, os_teardown),
      cmocka_unit_test_setup_teardown(test_copy, os_setup, os_teardown),
      cmocka_unit_test_setup_teardown(test_copy_faults, os_setup, os_teardown),
      cmocka_unit_test_setup_teardown(test_copy_short_counts, os_setup, os_teardown),
      cmocka_unit_test_setup_teardown(test_other_device, os_setup, os_teardown),
      cmocka_unit_test_setup_teardown(test_own_file_mapped_elsewhere, os_setup, os_teardown),
      cmocka_unit_test_setup_teardown(test_own_file_fstat_fails, os_setup, os_teardown),
      cmocka_unit_test_setup_teardown(test_copy_read_fails, os_setup, os_teardown),
  };
  return cmocka_run_group_tests_name("bridge_os", tests, NULL, NULL);
}
