/*
 * The bridge's own system calls, through one table tests replace (as
 * libpyop's pyop__sys, src/core.h): what interpreter lanes check and make
 * of the bridge's file (dladdr, open, fstat, /proc/self/maps), the sealed
 * memfd copy (memfd_create, pread, write, fcntl) and its dlopen through
 * /proc/self/fd; plus the PYOP_TEST_LANES words and the lane file
 * functions built on the table (lane_files.c).
 *
 * Plain C without Python.h: tests/unit/test_bridge_os.c builds os.c and
 * lane_files.c into a unit test and faults the table ("no /proc", "memfd
 * refused") without a mount namespace or LD_PRELOAD. No GIL needed
 * anywhere here.
 */
#ifndef PYOP_BRIDGE_OS_H
#define PYOP_BRIDGE_OS_H

#include <dlfcn.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/types.h>

typedef struct pb_os {
  int (*dladdr)(const void *addr, Dl_info *info);
  void *(*dlopen)(const char *path, int flags);
  int (*open)(const char *path, int flags);
  int (*fstat)(int fd, struct stat *st);
  int (*close)(int fd);
  FILE *(*fopen)(const char *path, const char *mode);
  int (*memfd_create)(const char *name, unsigned flags);
  ssize_t (*pread)(int fd, void *buf, size_t n, off_t at);
  ssize_t (*write)(int fd, const void *buf, size_t n);
  int (*fcntl)(int fd, int cmd, int arg);
} pb_os;

/* The table every call above goes through (os.c); tests replace members. */
extern pb_os pb_os_table;
#define PB_OS(fn) (pb_os_table.fn)
/* Test-only: the real implementations back after a test replaced some. */
void pb_os_reset(void);

/* Whether the test seam PYOP_TEST_LANES lists word (docs/design.md §Lanes;
 * ignored under secure execution). Any thread; in every bridge (set_config
 * reads "force", signals.c "sigint-at-start"). */
bool pb_lanes_test_seam(const char *word);

/*
 * An fd of the file the object holding addr was loaded from (the bridge:
 * an address of its own), checked by /proc/self/maps to be the very file
 * mapped (device and inode at the object's base), or -1 with the reason in
 * why[why_size] (no /proc, the file replaced since it was loaded...).
 * Nothing is left open on failure.
 */
int pb_lane_own_file(const void *addr, char *why, size_t why_size);
/* A sealed memfd holding a copy of src, named for lane index, or -1 with
 * the reason in why[why_size] (memfd_create refused, a failed copy);
 * nothing is left open on failure. Any thread. */
int pb_lane_image_copy(int src, uint32_t index, char *why, size_t why_size);

#endif /* PYOP_BRIDGE_OS_H */
