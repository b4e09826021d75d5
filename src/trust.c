/*
 * The security policy for every shared object libpyop dlopens (bridges,
 * kernel libraries, the libpython of start_python): the file is opened
 * O_NONBLOCK|O_CLOEXEC and checked as an open file, then dlopened by its
 * resolved path and the mapped object compared with the checked file
 * (docs/design.md §Security).
 */
#include "trust.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* Writes "<path>: <what>failed check" into why; PYOP_ESECURITY or PYOP_OK. */
static int check_owner_mode(const char *path, const char *what,
                            const struct stat *st, pyop__sb *why) {
  uid_t euid = PYOP_SYS(geteuid)();
  if (st->st_uid != 0 && st->st_uid != euid) {
    pyop__sb_printf(why, "%s: %sowned by uid %u (must be root or uid %u)", path,
                    what, (unsigned)st->st_uid, (unsigned)euid);
    return PYOP_ESECURITY;
  }
  bool g = (st->st_mode & S_IWGRP) != 0, o = (st->st_mode & S_IWOTH) != 0;
  if (!g && !o) return PYOP_OK;
  pyop__sb_printf(why, "%s: %swritable by %s (mode %04o)", path, what,
                  g && o ? "group and others" : g ? "group" : "others",
                  (unsigned)(st->st_mode & 07777));
  return PYOP_ESECURITY;
}

const char *pyop__file_kind(mode_t mode) {
  if (S_ISREG(mode)) return "regular file";
  if (S_ISDIR(mode)) return "directory";
  if (S_ISFIFO(mode)) return "FIFO";
  if (S_ISCHR(mode)) return "character device";
  if (S_ISBLK(mode)) return "block device";
  if (S_ISSOCK(mode)) return "socket";
  if (S_ISLNK(mode)) return "symbolic link";
  return "unknown file type";
}

static int errno_status(int e) {
  if (e == ENOMEM) return PYOP_ENOMEM;
  if (e == ENOENT || e == ENOTDIR) return PYOP_ENOENT;
  return PYOP_EIO;
}

/*
 * Resolves path, opens the containing directory and then the file inside
 * it (O_NOFOLLOW: the resolved name cannot be swapped for a symlink), and
 * checks both opened descriptors: the file regular, both owned by root or
 * the effective uid, neither writable by group or others. Only the direct
 * parent directory is checked. See header for the outputs.
 */
int pyop__open_trusted(const char *path, int *out_fd, char **out_resolved,
                       struct stat *out_st, pyop__sb *why) {
  *out_fd = -1;
  *out_resolved = NULL;
  int rc = PYOP_OK;
  int fd = -1, dfd = -1;
  char resolved[PATH_MAX];
  if (!PYOP_SYS(realpath)(path, resolved)) {
    int e = errno;
    pyop__sb_printf(why, "%s: cannot resolve: %s", path, strerror(e));
    rc = errno_status(e);
    goto fail;
  }
  char dir[PATH_MAX];
  const char *slash = strrchr(resolved, '/');
  const char *base = slash ? slash + 1 : resolved;
  if (!slash || !*base) {
    pyop__sb_printf(why, "%s: not a file path", resolved);
    rc = PYOP_ENOENT;
    goto fail;
  }
  size_t dl = slash == resolved ? 1 : (size_t)(slash - resolved);
  memcpy(dir, resolved, dl);
  dir[dl] = '\0';

  /* O_NONBLOCK on both: nothing here may wait for a FIFO's writer or a
   * device; the fstat below refuses what is not a directory / regular file. */
  dfd = PYOP_SYS(open)(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NONBLOCK);
  if (dfd < 0) {
    int e = errno;
    pyop__sb_printf(why, "%s: cannot open directory: %s", dir, strerror(e));
    rc = errno_status(e);
    goto fail;
  }
  fd = PYOP_SYS(openat)(dfd, base,
                        O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK);
  if (fd < 0) {
    int e = errno;
    if (e == ELOOP) {
      pyop__sb_printf(why, "%s: replaced by a symbolic link while being checked",
                      resolved);
      rc = PYOP_ESECURITY;
    } else {
      pyop__sb_printf(why, "%s: cannot open: %s", resolved, strerror(e));
      rc = errno_status(e);
    }
    goto fail;
  }
  struct stat st, dst;
  if (PYOP_SYS(fstat)(fd, &st) != 0 || PYOP_SYS(fstat)(dfd, &dst) != 0) {
    int e = errno;
    pyop__sb_printf(why, "%s: fstat: %s", resolved, strerror(e));
    rc = errno_status(e);
    goto fail;
  }
  if (!S_ISREG(st.st_mode)) {
    pyop__sb_printf(why, "%s: not a regular file (%s)", resolved,
                    pyop__file_kind(st.st_mode));
    rc = PYOP_ESECURITY;
    goto fail;
  }

  rc = check_owner_mode(resolved, "", &st, why);
  if (rc == PYOP_OK) rc = check_owner_mode(dir, "directory ", &dst, why);
  if (rc != PYOP_OK) goto fail;
  *out_resolved = pyop__strdup(resolved);
  if (!*out_resolved) {
    pyop__sb_puts(why, "out of memory");
    rc = PYOP_ENOMEM;
    goto fail;
  }
  PYOP_SYS(close)(dfd);
  *out_fd = fd;
  if (out_st) *out_st = st;
  return PYOP_OK;

fail:
  if (fd >= 0) PYOP_SYS(close)(fd);
  if (dfd >= 0) PYOP_SYS(close)(dfd);
  return rc;
}

/*
 * dlerror() taken now (a fixed text when it is NULL), without the leading
 * "<resolved>: " the dynamic loader puts before it: the caller names the
 * file.
 */
const char *pyop__dlerror_detail(const char *resolved) {
  const char *msg = PYOP_SYS(dlerror)();
  if (!msg) return "unknown dynamic loader error";
  size_t rl = resolved ? strlen(resolved) : 0;
  const char *rest = rl && strncmp(msg, resolved, rl) == 0 ? msg + rl : NULL;
  return rest && rest[0] == ':' && rest[1] == ' ' ? rest + 2 : msg;
}

/* A mapping's identity as /proc/self/maps shows it. */
typedef struct map_id {
  bool found;
  unsigned major, minor;
  unsigned long long ino;
} map_id;

/*
 * Parses one /proc/self/maps line head ("start-end perms off maj:min ino")
 * and records its identity in ids[k] when it contains addrs[k].
 */
static void maps_line(const char *line, const uintptr_t *addrs, map_id *ids, size_t n) {
  unsigned long long start, end, ino;
  unsigned maj, min;
  if (sscanf(line, "%llx-%llx %*s %*s %x:%x %llu", &start, &end, &maj, &min, &ino) != 5)
    return;
  for (size_t k = 0; k < n; k++) {
    if (!ids[k].found && addrs[k] >= start && addrs[k] < end) {
      ids[k].found = true;
      ids[k].major = maj;
      ids[k].minor = min;
      ids[k].ino = ino;
    }
  }
}

/*
 * Finds the mappings holding addrs[0..n) in /proc/self/maps (read through
 * the seam, O_NONBLOCK). PYOP_OK (ids[k].found says which were found);
 * PYOP_ENOENT when /proc is not there (ENOENT, EACCES); PYOP_EIO with the
 * reason in why otherwise. Only the head of each line is kept: the
 * identity is in its first fields.
 */
static int maps_lookup(const uintptr_t *addrs, map_id *ids, size_t n, pyop__sb *why) {
  memset(ids, 0, n * sizeof *ids);
  int fd = PYOP_SYS(open)("/proc/self/maps", O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    int e = errno;
    if (e == ENOENT || e == EACCES || e == ENOTDIR) return PYOP_ENOENT;
    pyop__sb_printf(why, "cannot read /proc/self/maps: %s", strerror(e));
    return PYOP_EIO;
  }
  char buf[4096], head[256];
  size_t hl = 0;
  for (;;) {
    ssize_t r = PYOP_SYS(read)(fd, buf, sizeof buf);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {
      int e = errno;
      PYOP_SYS(close)(fd);
      pyop__sb_printf(why, "cannot read /proc/self/maps: %s", strerror(e));
      return PYOP_EIO;
    }
    if (r == 0) break;
    for (ssize_t i = 0; i < r; i++) {
      if (buf[i] == '\n') {
        head[hl] = '\0';
        maps_line(head, addrs, ids, n);
        hl = 0;
      } else if (hl < sizeof head - 1) {
        head[hl++] = buf[i];
      }
    }
  }
  PYOP_SYS(close)(fd);
  return PYOP_OK;
}

/*
 * After dlopen(resolved): true when the object behind h is the file the
 * descriptor fd (checked, st) refers to; else false with the reason in why
 * and the status in *status. Identity as the kernel reports it: the device
 * and inode /proc/self/maps shows for a page of fd that we map ourselves
 * must be those it shows for the object's dynamic section. (Comparing
 * mapping with mapping, not with fstat, stays right on file systems such as
 * overlayfs whose maps show the underlying file.) Without /proc, the
 * resolved path is stat'ed again and compared with st.
 */
static bool loaded_is_checked(void *h, int fd, const char *resolved, const struct stat *st,
                              pyop__sb *why, int *status) {
  *status = PYOP_ESECURITY;
  struct link_map *lm = NULL;
  if (PYOP_SYS(dlinfo)(h, RTLD_DI_LINKMAP, &lm) != 0 || !lm || !lm->l_ld) {
    pyop__sb_printf(why, "%s: cannot locate the loaded object (dlinfo: %s)", resolved,
                    pyop__dlerror_detail(resolved));
    *status = PYOP_EIO;
    return false;
  }
  size_t page = 4096;
  void *ref = PYOP_SYS(mmap)(NULL, page, PROT_READ, MAP_PRIVATE, fd, 0);
  if (ref == MAP_FAILED) {
    int e = errno;
    pyop__sb_printf(why, "%s: cannot map the checked file: %s", resolved, strerror(e));
    *status = PYOP_EIO;
    return false;
  }
  uintptr_t addrs[2] = {(uintptr_t)ref, (uintptr_t)lm->l_ld};
  map_id ids[2];
  int rc = maps_lookup(addrs, ids, 2, why);
  PYOP_SYS(munmap)(ref, page);
  if (rc == PYOP_ENOENT) {
    struct stat now;
    if (PYOP_SYS(stat)(resolved, &now) == 0 && now.st_dev == st->st_dev &&
        now.st_ino == st->st_ino)
      return true;
    pyop__sb_printf(why, "%s: file changed between the security check and dlopen",
                    resolved);
    return false;
  }
  if (rc != PYOP_OK) {
    *status = PYOP_EIO;
    return false;
  }
  if (!ids[0].found || !ids[1].found) {
    pyop__sb_printf(why, "%s: the %s is not in /proc/self/maps", resolved,
                    !ids[0].found ? "checked file's mapping" : "loaded object");
    *status = PYOP_EIO;
    return false;
  }
  if (ids[0].major == ids[1].major && ids[0].minor == ids[1].minor &&
      ids[0].ino == ids[1].ino)
    return true;
  pyop__sb_printf(why,
                  "%s: the object the dynamic loader mapped (device %x:%x inode %llu) "
                  "is not the checked file (device %x:%x inode %llu): an object of "
                  "that name was loaded before and the file was replaced since, or it "
                  "changed between the security check and dlopen",
                  resolved, ids[1].major, ids[1].minor, ids[1].ino, ids[0].major,
                  ids[0].minor, ids[0].ino);
  return false;
}

/*
 * dlopens the file behind fd (vetted by pyop__open_trusted) by its resolved
 * path, so that its $ORIGIN is its real directory and its own dependencies
 * are found whatever the descriptor numbers; then checks that the object
 * the dynamic loader mapped is that file (loaded_is_checked) and refuses it
 * (dlclose) when not. See the header for the statuses.
 */
int pyop__dlopen_trusted(int fd, const char *resolved, const struct stat *st, int flags,
                         void **out, pyop__sb *why) {
  *out = NULL;
  (void)PYOP_SYS(dlerror)(); /* a stale message must not be taken for ours */
  void *h = PYOP_SYS(dlopen)(resolved, flags);
  if (!h) {
    pyop__sb_printf(why, "%s: %s", resolved, pyop__dlerror_detail(resolved));
    return PYOP_EIO;
  }
  int status;
  if (!loaded_is_checked(h, fd, resolved, st, why, &status)) {
    PYOP_SYS(dlclose)(h);
    assert(status != PYOP_OK);
    return status;
  }
  *out = h;
  return PYOP_OK;
}
