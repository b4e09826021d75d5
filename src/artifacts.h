/*
 * Bridge artifacts: manifests, candidates, ranking, and the file security
 * policy shared by bridges and kernel libraries (docs/design.md §Candidates, §Security).
 * Every file is opened O_NONBLOCK|O_CLOEXEC and fstat'ed before it is read
 * or dlopened: a FIFO or a device in a file's place is refused, never
 * waited on.
 *
 * Layout: <libdir>/pyop/artifacts/<tag>-<platform>/{manifest.txt, bridge .so,
 * python/...}, where <libdir> is the directory of the libpyop.so in use.
 * PYOP_BRIDGE_DIR (read with secure_getenv; ignored under secure execution)
 * names one extra artifact directory tried first of all.
 */
#ifndef PYOP_ARTIFACTS_H
#define PYOP_ARTIFACTS_H

#include "core.h"
#include "runtime_key.h"

#define PYOP__MANIFEST_NAME "manifest.txt"
#define PYOP__MANIFEST_MAX 8192

/* manifest.txt: "key=value" lines, '#' comments; see docs/bridge-abi.md. */
typedef struct pyop__manifest {
  unsigned format;    /* format=1 */
  char *python_tag;   /* "cp311" or "abi3" */
  char *abi_flags;    /* "" / "t" / "d" / "td" */
  char *platform;     /* "x86_64" */
  char *bridge;       /* bridge file name, relative, stays inside the dir */
  unsigned abi_major; /* bridge ABI it was built with */
  unsigned abi_minor;
  unsigned min_python_minor; /* for abi3: lowest 3.x it supports */
  char *libpython;    /* optional: libpython path recorded at build time */
  char *python_dir;   /* optional: relative dir of the pyop package */
  char *build_info;   /* optional free text */
} pyop__manifest;

/*
 * Parses text[0..len) (not NUL-terminated). On failure returns
 * PYOP_EDESCRIPTOR (or PYOP_ENOMEM) and writes the reason ("line 3: ...")
 * to why (NULL: not wanted). why is the manifest layer's one carrier: the
 * thread's last error is left to the caller, who knows which file it read.
 * Never reads past len; *out is zeroed on entry and freed on failure.
 */
int pyop__manifest_parse(const char *text, size_t len, pyop__manifest *out,
                         pyop__sb *why);
void pyop__manifest_free(pyop__manifest *m);
/*
 * Reads and parses <dir>/manifest.txt through the seam (open, fstat, read,
 * close; nothing is dlopened). dir must be absolute. Returns PYOP_OK,
 * PYOP_ENOENT (no manifest), PYOP_EIO (unreadable), PYOP_EDESCRIPTOR
 * (malformed, "manifest.txt line 3: ...") or PYOP_ENOMEM, with the reason in
 * why (required; the thread's last error is not touched). *out is zeroed on
 * entry and freed on failure.
 */
int pyop__manifest_read(const char *dir, pyop__manifest *out, pyop__sb *why);

typedef enum pyop__cand_status {
  PYOP__CAND_UNTRIED = 0,      /* not tried: an earlier candidate loaded */
  PYOP__CAND_INVALID_PATH,     /* not a directory, no manifest, bad bridge path */
  PYOP__CAND_UNSAFE,           /* ownership/permission check failed */
  PYOP__CAND_MANIFEST_INVALID, /* manifest unreadable or malformed */
  PYOP__CAND_MANIFEST_MISMATCH,/* built for another Python/platform/ABI */
  PYOP__CAND_DUPLICATE,        /* same device+inode as an earlier candidate */
  PYOP__CAND_OPEN_FAILED,      /* dlopen failed (reason has dlerror) */
  PYOP__CAND_MISSING_SYMBOL,   /* no pyop_bridge_entry */
  PYOP__CAND_ABI_REJECTED,     /* negotiation or table validation failed */
  PYOP__CAND_CONFIG_REJECTED,  /* set_config failed */
  PYOP__CAND_LOADED
} pyop__cand_status;

const char *pyop__cand_status_name(int status);

typedef struct pyop__candidate {
  char *dir;         /* artifact directory (absolute) */
  char *bridge_path; /* resolved bridge file, NULL until known */
  int rank;          /* 0 override, 1 exact tag, 2 stable ABI */
  int status;        /* pyop__cand_status */
  char *reason;      /* human-readable reason, NULL for LOADED/UNTRIED */
  pyop__manifest manifest;
  dev_t dev;
  ino_t ino;
} pyop__candidate;

typedef struct pyop__candidates {
  pyop__candidate *items;
  size_t n;
  char key_text[64]; /* runtime key matched against ("cp311-x86_64") */
  char *root;        /* artifacts root that was enumerated */
} pyop__candidates;

/*
 * Enumerates every artifact directory (override first, then the artifacts
 * root sorted by name), reads and matches each manifest against key before
 * anything is opened, and orders the list: matching candidates by rank then
 * name, then the rejected ones (kept for the report). Returns PYOP_OK (even
 * when nothing matches), PYOP_ENOMEM.
 */
int pyop__candidates_find(const pyop__runtime_key *key, pyop__candidates *out);
void pyop__candidates_free(pyop__candidates *c);
/* Appends "  <dir>: <status>: <reason>\n" for every candidate. */
void pyop__candidates_report(const pyop__candidates *c, pyop__sb *sb);

/* The artifacts root in use (<libdir>/pyop/artifacts). */
const char *pyop__artifacts_root(void);
/* Take / release the artifacts root's lock around fork() (lifecycle.c only). */
void pyop__artifacts_fork_lock(void);
void pyop__artifacts_fork_unlock(void);
/* Test-only: points the root elsewhere (NULL restores the default). */
void pyop__artifacts_set_root(const char *root);

/*
 * Security policy for a shared object about to be dlopened: resolves symlinks,
 * opens the file, and checks the opened file (regular file, owned by root or
 * the effective uid, not writable by group/others) and its directory (same
 * ownership and not writable by group/others). On success *out_fd is an open
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
