/*
 * The bridge's OS seam (os.h): the table of its own system calls, filled
 * with the real ones, and the PYOP_TEST_LANES words.
 */
#include "os.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* open and fcntl are variadic: fixed-argument forms for the table. */
static int real_open(const char *path, int flags) { return open(path, flags); }
static int real_fcntl(int fd, int cmd, int arg) { return fcntl(fd, cmd, arg); }
static int real_memfd_create(const char *name, unsigned flags) {
  return memfd_create(name, flags);
}
/* dladdr's first parameter is not const in every libc's declaration. */
static int real_dladdr(const void *addr, Dl_info *info) { return dladdr(addr, info); }

#define PB_REAL_OS                                                                           \
  {                                                                                          \
    real_dladdr, dlopen, real_open, fstat, close, fopen, real_memfd_create, pread, write,    \
        real_fcntl,                                                                          \
  }

static const pb_os real_os = PB_REAL_OS;
pb_os pb_os_table = PB_REAL_OS;

void pb_os_reset(void) { pb_os_table = real_os; }

bool pb_lanes_test_seam(const char *word) {
  const char *v = secure_getenv("PYOP_TEST_LANES");
  size_t n = strlen(word);
  for (const char *p = v; p != NULL && *p != '\0'; p += strcspn(p, ","), p += *p == ',') {
    if (strncmp(p, word, n) == 0 && (p[n] == ',' || p[n] == '\0'))
      return true;
  }
  return false;
}
