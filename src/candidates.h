/*
 * Bridge candidates (docs/design.md §Candidates): the artifact directories
 * that may serve the running Python, each with its manifest, rank and
 * status, in the order they are tried.
 *
 * Layout: <libdir>/pyop/artifacts/<tag>-<platform>/{manifest.txt, bridge .so,
 * python/...}, where <libdir> is the directory of the libpyop.so in use.
 * PYOP_BRIDGE_DIR (read with secure_getenv; ignored under secure execution)
 * names one extra artifact directory tried first of all.
 */
#ifndef PYOP_CANDIDATES_H
#define PYOP_CANDIDATES_H

#include "core.h"
#include "manifest.h"
#include "runtime_key.h"

/*
 * The statuses of a candidate, one X(NAME, value, "name") each: the enum
 * (PYOP__CAND_<NAME>) and pyop__cand_status_name are generated from this
 * list, and tests/e2e/test_tables.py holds `pyop doctor`'s copy to it.
 *   UNTRIED            not tried: an earlier candidate loaded
 *   INVALID_PATH       not a directory, no manifest, bad bridge path
 *   UNSAFE             ownership/permission check failed
 *   MANIFEST_INVALID   manifest unreadable or malformed
 *   MANIFEST_MISMATCH  built for another Python/platform/ABI
 *   DUPLICATE          same device+inode as an earlier candidate
 *   OPEN_FAILED        dlopen failed (reason has dlerror)
 *   MISSING_SYMBOL     no pyop_bridge_entry
 *   ABI_REJECTED       negotiation or table validation failed
 *   CONFIG_REJECTED    set_config failed
 *   LOADED             the bridge in use
 */
#define PYOP__CAND_STATUS_MAP(X)                                              \
  X(UNTRIED, 0, "untried")                                                    \
  X(INVALID_PATH, 1, "invalid path")                                          \
  X(UNSAFE, 2, "unsafe")                                                      \
  X(MANIFEST_INVALID, 3, "manifest invalid")                                  \
  X(MANIFEST_MISMATCH, 4, "manifest mismatch")                                \
  X(DUPLICATE, 5, "duplicate")                                                \
  X(OPEN_FAILED, 6, "open failed")                                            \
  X(MISSING_SYMBOL, 7, "missing symbol")                                      \
  X(ABI_REJECTED, 8, "ABI rejected")                                          \
  X(CONFIG_REJECTED, 9, "config rejected")                                    \
  X(LOADED, 10, "loaded")

typedef enum pyop__cand_status {
#define PYOP__CAND_ENUM(name, value, text) PYOP__CAND_##name = value,
  PYOP__CAND_STATUS_MAP(PYOP__CAND_ENUM)
#undef PYOP__CAND_ENUM
} pyop__cand_status;

/* The name of a status (the list above), "unknown" for another value. */

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
/*
 * Every artifact directory of the artifacts root (no override), in name
 * order, each manifest read and matched against nothing: valid ones
 * UNTRIED, the others rejected with the reason (what start_python chooses
 * from). PYOP_OK or PYOP_ENOMEM.
 */
int pyop__artifacts_list(pyop__candidates *out);
void pyop__candidates_free(pyop__candidates *c);
/* Appends "  <dir>: <status>: <reason>\n" for every candidate. */
void pyop__candidates_report(const pyop__candidates *c, pyop__sb *sb);

/* The artifacts root in use (<libdir>/pyop/artifacts). */
const char *pyop__artifacts_root(void);
/* Take / release the artifacts root's lock around fork() (fork.c only). */
void pyop__artifacts_fork_lock(void);
void pyop__artifacts_fork_unlock(void);
/* Test-only: points the root elsewhere (NULL restores the default). */
void pyop__artifacts_set_root(const char *root);

#endif
