/*
 * The kernel library table (docs/design.md §Launch): every C library a
 * launch plan calls into, opened once per process after the file checks of
 * trust.h, keyed by the device+inode of the checked file, refcounted by the
 * plans' launches; the contract is in kernel_libs.h.
 */
#include "kernel_libs.h"

#include "trust.h"

#include <assert.h>
#include <pthread.h>
#include <string.h>

static struct {
  pthread_mutex_t lock;
  pyop__kernel_lib **items;
  size_t n, cap;
} libs = {PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0};

/* Whether this thread holds libs.lock (for the asserts of `_locked`). */
static _Thread_local bool libs_held;

static void libs_lock(void) {
  pthread_mutex_lock(&libs.lock);
  libs_held = true;
}

static void libs_unlock(void) {
  assert(libs_held);
  libs_held = false;
  pthread_mutex_unlock(&libs.lock);
}

/* The library of the table with this device+inode, with a new reference;
 * NULL when none. The caller holds libs.lock (asserted). */
static pyop__kernel_lib *kernel_lib_find_locked(const struct stat *st) {
  assert(libs_held);
  for (size_t i = 0; i < libs.n; i++) {
    if (libs.items[i]->dev == st->st_dev && libs.items[i]->ino == st->st_ino) {
      libs.items[i]->refs++;
      return libs.items[i];
    }
  }
  return NULL;
}

/* See kernel_libs.h. dlopen runs with no lock held; another thread may
 * open the same file meanwhile, and the loser drops its extra handle. */
int pyop__kernel_lib_acquire(const char *path, pyop__kernel_lib **out, pyop__sb *why) {
  int fd = -1;
  char *resolved = NULL;
  struct stat st;
  *out = NULL;
  int rc = pyop__open_trusted(path, &fd, &resolved, &st, why);
  if (rc != PYOP_OK) return rc;

  libs_lock();
  pyop__kernel_lib *lib = kernel_lib_find_locked(&st);
  libs_unlock();
  if (lib) goto out;

  /* dlopen with no lock held: it runs the library's constructors and may
   * log (through the host's hook). Another thread may open the same file
   * meanwhile; the loser drops its extra handle below. */
  void *handle;
  rc = pyop__dlopen_trusted(fd, resolved, &st, RTLD_NOW | RTLD_LOCAL, &handle, why);
  if (rc != PYOP_OK) {
    /* PYOP_ESECURITY when the file changed under us; a failed dlopen
     * (PYOP_EIO, dlerror text in why) is this library's PYOP_ELAUNCH. */
    if (rc != PYOP_ESECURITY) rc = PYOP_ELAUNCH;
    goto out;
  }
  libs_lock();
  lib = kernel_lib_find_locked(&st);
  if (!lib && libs.n == libs.cap) {
    size_t cap = libs.cap ? libs.cap * 2 : 8;
    pyop__kernel_lib **items = pyop__realloc(libs.items, cap * sizeof *items);
    if (items) {
      libs.items = items;
      libs.cap = cap;
    } else {
      rc = PYOP_ENOMEM;
    }
  }
  if (!lib && rc == PYOP_OK) {
    size_t plen = strlen(resolved);
    lib = pyop__malloc(sizeof *lib + plen + 1);
    if (lib) {
      memcpy(lib->path, resolved, plen + 1);
      lib->dev = st.st_dev;
      lib->ino = st.st_ino;
      lib->refs = 1;
      lib->handle = handle;
      handle = NULL; /* the table owns it */
      libs.items[libs.n++] = lib;
    } else {
      rc = PYOP_ENOMEM;
    }
  }
  libs_unlock();
  if (handle) PYOP_SYS(dlclose)(handle); /* lost the race, or out of memory */
out:
  PYOP_SYS(close)(fd);
  pyop__free(resolved);
  *out = lib;
  return rc;
}

/* Around fork() (fork.c): the child gets the table unlocked. libs.lock
 * is never held across dlopen/dlclose, so this never waits long. */
void pyop__kernel_libs_fork_lock(void) { libs_lock(); }
void pyop__kernel_libs_fork_unlock(void) { libs_unlock(); }

/* See kernel_libs.h. */
void pyop__kernel_lib_release(pyop__kernel_lib *lib) {
  libs_lock();
  lib->refs--;
  libs_unlock();
}

/* See kernel_libs.h. Unused libraries leave the table under the lock and are
 * dlclosed after it (their destructors are foreign code); the warning is
 * logged after unlocking too. */
void pyop__kernel_libs_close(void) {
  size_t kept = 0;
  pyop__kernel_lib *closed = NULL;
  libs_lock();
  for (size_t i = 0; i < libs.n; i++) {
    pyop__kernel_lib *lib = libs.items[i];
    if (lib->refs > 0) {
      libs.items[kept++] = lib;
      continue;
    }
    lib->next_closed = closed;
    closed = lib;
  }
  libs.n = kept;
  if (kept == 0) {
    pyop__free(libs.items);
    libs.items = NULL;
    libs.cap = 0;
  }
  libs_unlock();
  while (closed) {
    pyop__kernel_lib *next = closed->next_closed;
    PYOP_SYS(dlclose)(closed->handle);
    pyop__free(closed);
    closed = next;
  }
  if (kept)
    PYOP_LOG_W("%zu kernel librar%s still used by live launch plans: left open",
               kept, kept == 1 ? "y" : "ies");
}
