/*
 * Kernel libraries (docs/design.md §Launch): a process-wide table of the C
 * libraries launch plans call, keyed by device+inode of the resolved file
 * (two paths to one file are one library), guarded by a mutex that is never
 * held while foreign code runs (dlopen/dlclose of a kernel library run its
 * constructors and destructors; kernels themselves run with no lock). Each
 * plan's launch holds a reference on its library; pyop__kernel_libs_close()
 * closes only those no live plan references.
 */
#ifndef PYOP_KERNEL_LIBS_H
#define PYOP_KERNEL_LIBS_H

#include "core.h"

/* One opened kernel library. handle and path are the user's to read;
 * the rest is the table's. */
typedef struct pyop__kernel_lib {
  void *handle;
  dev_t dev;
  ino_t ino;
  size_t refs; /* live plans' launches using it; guarded by the table's lock */
  struct pyop__kernel_lib *next_closed; /* pyop__kernel_libs_close's list */
  char path[]; /* resolved path, for messages */
} pyop__kernel_lib;

/*
 * Finds or opens the kernel library at path (absolute) and takes a reference
 * on it. The file is checked with pyop__open_trusted every time and dlopened with
 * no lock held; a file already in the table (same device+inode) is not opened
 * again. Returns PYOP_OK; PYOP_ESECURITY (policy refused, or the file
 * changed before dlopen), PYOP_ELAUNCH (dlopen failed), PYOP_ENOMEM, or the
 * file check's PYOP_ENOENT/PYOP_EIO, with the reason in why.
 */
int pyop__kernel_lib_acquire(const char *path, pyop__kernel_lib **out, pyop__sb *why);
/* Drops one reference; the library stays open until pyop__kernel_libs_close. */
void pyop__kernel_lib_release(pyop__kernel_lib *lib);

/*
 * Closes every kernel library that no live plan references (at
 * pyop_shutdown); those still referenced stay open and a warning is logged.
 * A later pyop__plan_add_launch opens libraries again.
 */
void pyop__kernel_libs_close(void);

/* Take / release the table's lock around fork() (fork.c only). */
void pyop__kernel_libs_fork_lock(void);
void pyop__kernel_libs_fork_unlock(void);

#endif
