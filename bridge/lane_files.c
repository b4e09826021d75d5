/*
 * What interpreter lanes need of the bridge's own file (lanes.c): an fd of
 * the very file mapped in this process, and each lane image's copy of it
 * in a sealed memfd. Every system call through the OS seam (os.h).
 */
#include "os.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sysmacros.h>
#include <unistd.h>

/* fopen("/proc/self/maps"), or NULL; the test seam "no-proc": as if /proc
 * were not mounted (ENOENT). */
static FILE *open_maps(void) {
  if (pb_lanes_test_seam("no-proc")) {
    errno = ENOENT;
    return NULL;
  }
  return PB_OS(fopen)("/proc/self/maps", "re");
}

/* See os.h. */
int pb_lane_own_file(const void *addr, char *why, size_t why_size) {
  Dl_info di;
  if (PB_OS(dladdr)(addr, &di) == 0 || di.dli_fname == NULL) {
    snprintf(why, why_size, "dladdr cannot name the bridge's file");
    return -1;
  }
  int fd = PB_OS(open)(di.dli_fname, O_RDONLY | O_CLOEXEC);
  struct stat st;
  if (fd < 0 || PB_OS(fstat)(fd, &st) != 0) {
    int e = errno;
    if (fd >= 0)
      PB_OS(close)(fd);
    snprintf(why, why_size, "cannot open the bridge's file %s: %s", di.dli_fname, strerror(e));
    return -1;
  }
  FILE *maps = open_maps();
  if (maps == NULL) {
    int e = errno;
    PB_OS(close)(fd);
    snprintf(why, why_size, "cannot read /proc/self/maps (%s): is /proc mounted? (lanes copy "
             "the bridge and open the copy through /proc/self/fd)", strerror(e));
    return -1;
  }
  bool same = false;
  char line[4096];
  while (!same && fgets(line, sizeof line, maps) != NULL) {
    unsigned long lo = 0, hi = 0, off = 0, ino = 0;
    unsigned maj = 0, mnr = 0;
    char perm[8];
    if (sscanf(line, "%lx-%lx %7s %lx %x:%x %lu", &lo, &hi, perm, &off, &maj, &mnr, &ino) == 7 &&
        lo == (unsigned long)(uintptr_t)di.dli_fbase)
      same = maj == major(st.st_dev) && mnr == minor(st.st_dev) &&
             ino == (unsigned long)st.st_ino;
  }
  fclose(maps);
  if (!same) {
    PB_OS(close)(fd);
    snprintf(why, why_size, "the bridge's file %s is not the one mapped in this process "
             "(replaced since it was loaded?)", di.dli_fname);
    return -1;
  }
  return fd;
}

/* memfd_create; the test seam "no-memfd": as if refused (EPERM, a seccomp
 * filter). */
static int open_memfd(const char *name) {
  if (pb_lanes_test_seam("no-memfd")) {
    errno = EPERM;
    return -1;
  }
  return PB_OS(memfd_create)(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
}

/* See os.h. */
int pb_lane_image_copy(int src, uint32_t index, char *why, size_t why_size) {
  char name[32];
  snprintf(name, sizeof name, "pyop-lane-%u", (unsigned)index);
  int fd = open_memfd(name);
  if (fd < 0) {
    snprintf(why, why_size, "memfd_create failed: %s", strerror(errno));
    return -1;
  }
  char buf[65536];
  off_t at = 0;
  for (;;) {
    ssize_t n = PB_OS(pread)(src, buf, sizeof buf, at);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      if (n < 0)
        goto fail;
      break;
    }
    for (ssize_t done = 0; done < n;) {
      ssize_t w = PB_OS(write)(fd, buf + done, (size_t)(n - done));
      if (w < 0 && errno == EINTR)
        continue;
      if (w <= 0)
        goto fail;
      done += w;
    }
    at += n;
  }
  if (PB_OS(fcntl)(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) != 0)
    goto fail;
  return fd;
fail:;
  int e = errno;
  PB_OS(close)(fd);
  snprintf(why, why_size, "cannot copy the bridge into a sealed memfd: %s", strerror(e));
  return -1;
}

