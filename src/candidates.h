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
