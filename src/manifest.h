/*
 * The artifact manifest (docs/design.md §Candidates): <dir>/manifest.txt,
 * read through the OS seam and parsed before anything of the directory is
 * opened. Its format is written above the parser (manifest.c) and in
 * docs/bridge-abi.md.
 */
#ifndef PYOP_MANIFEST_H
#define PYOP_MANIFEST_H

#include "core.h"

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
  unsigned long python_version_hex; /* optional: the build Python's
                                       PY_VERSION_HEX; 0 when absent */
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

#endif
