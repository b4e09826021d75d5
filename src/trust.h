/*
 * The security policy for a shared object about to be dlopened (bridges,
 * kernel libraries, the libpython of start_python; docs/design.md
 * §Security). Every file is opened O_NONBLOCK|O_CLOEXEC and fstat'ed before
 * it is read or dlopened: a FIFO or a device in a file's place is refused,
 * never waited on.
 */
#ifndef PYOP_TRUST_H
#define PYOP_TRUST_H

#include "core.h"

/*
 * Resolves symlinks, opens the file, and checks the opened file (regular
 * file, owned by root or the effective uid, not writable by group/others)
 * and its directory (same ownership and not writable by group/others). On success *out_fd is an open
 * descriptor of the checked file and *out_resolved the resolved path
 * (caller frees/closes). On failure returns PYOP_ESECURITY (or PYOP_ENOENT /
 * PYOP_EIO, PYOP_ENOMEM) and writes to why which file and which check
 * failed: rc + why are the one carrier (the thread's last error is not
 * touched; the caller names what it was opening).
 */
int pyop__open_trusted(const char *path, int *out_fd, char **out_resolved,
                       struct stat *out_st, pyop__sb *why);

/*
 * dlopens a file vetted by pyop__open_trusted by its resolved path (its
 * $ORIGIN is then its real directory), then makes sure the object mapped is
 * the vetted file: the device+inode /proc/self/maps shows for the object
 * must be those of a page of fd (without /proc: the path is stat'ed again).
 * On a mismatch it dlcloses and fails with PYOP_ESECURITY. PYOP_OK and the
 * handle in *out; on failure *out is NULL and the status (PYOP_EIO: dlopen
 * failed; PYOP_ESECURITY: the mapped object is not the vetted file) comes
 * with the reason in why (dlerror text, or the mismatch), the thread's last
 * error untouched.
 */
int pyop__dlopen_trusted(int fd, const char *resolved, const struct stat *st, int flags,
                         void **out, pyop__sb *why);

/* "FIFO", "directory", "character device"... for a message. */
const char *pyop__file_kind(mode_t mode);

/*
 * The text of dlerror(), taken now, for a message about the file resolved:
 * a leading "<resolved>: " is dropped, NULL becomes a fixed text. Points into the loader's buffer or
 * static storage: copy it before the next dl call.
 */
const char *pyop__dlerror_detail(const char *resolved);

#endif
