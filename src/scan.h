/*
 * Scanning ASCEND_CUSTOM_OPP_PATH (docs/design.md §Scan).
 *
 * The value is colon-separated. The whitespace around an element is dropped
 * (" /opt/ops " is /opt/ops, as GE reads it); empty elements are ignored
 * (never the cwd).
 * Relative elements are refused (skipped with a warning): libpyop never
 * resolves anything against the cwd. An element is a Python entry when it is
 * a .py file, or a directory holding, one level deep, a .py file or a package
 * directory (a directory with __init__.py). Names starting with '_' or '.'
 * are skipped. A listed .py file that does not exist is an error; a missing
 * directory is skipped with a warning. Directory entries are classified by
 * d_type; stat (fstatat) is used only when d_type is DT_UNKNOWN or DT_LNK.
 *
 * The Python loader (bridge/python/pyop/_loader.py, discover) applies the
 * same rule to choose what it imports; tests/integration/test_loader_cli.py
 * (test_scan_and_loader_agree) checks, layout by layout, that this scan
 * calls a directory Python exactly when the loader finds a plugin in it.
 * What a load then refuses (foo.py beside a package foo/, a link to another
 * entry) is the loader's alone: the scan only decides whether to load.
 */
/*
 * Decisions (where the scan rules leave a choice):
 * - Relative elements ("ops", "./ops", "op.py") get the verdict RELATIVE,
 *   are warned about and skipped; they are not an error (pyop__scan still
 *   returns PYOP_OK) and are never resolved against the cwd.
 * - The "_"/"." rule applies to the entries found inside a scanned
 *   directory. An element is taken as the user wrote it: an explicitly
 *   listed "/opt/ops/_private.py" is a Python file.
 * - An element whose name ends in ".py" is stat'ed: a regular file (or a
 *   link to one) is PYTHON_FILE; a directory is scanned as a directory; a
 *   FIFO, socket or device is NOT_PYTHON (warned) and is never opened. It
 *   is MISSING_FILE only when it does not exist (ENOENT, ENOTDIR); another
 *   stat failure (EACCES, ELOOP, EIO...) is UNREADABLE, warned, skipped. A
 *   regular file that cannot be opened for reading is UNREADABLE too: a
 *   relative element, an unreadable directory and an unreadable file all
 *   get a verdict, one warning, and are skipped (the load goes on).
 * - Any other element is opened with opendir directly (no stat): ENOENT is
 *   MISSING_DIR (warned), ENOTDIR leads to one stat to tell a non-directory
 *   file (NOT_PYTHON, warned) from a missing one (MISSING_DIR), any other
 *   failure is UNREADABLE (warned). A read error part-way through the
 *   directory is UNREADABLE too.
 * - Inside a directory: a Python file is a regular file (or a link to one)
 *   named *.py; a package is a directory (or a link to one) that holds a
 *   regular file (or a link to one) named __init__.py. An entry named *.py
 *   that is a directory, a FIFO, a socket or a device is not a Python file.
 *   A dangling link is ignored. Reading a directory stops at its first
 *   Python entry (readdir order), named in the detail.
 * - Every missing listed .py file is a MISSING_FILE verdict; the scan goes
 *   on so every element gets a verdict, then returns PYOP_ENOENT whose
 *   message names the first missing file (and how many more there are).
 *   With stop_at_first, elements after the first Python entry are
 *   NOT_SCANNED (detail NULL), so a missing .py file there is not reported.
 * - On PYOP_ENOMEM *out is left empty (n == 0, has_python false).
 * - Every warning reads "ASCEND_CUSTOM_OPP_PATH element '<path>' skipped:
 *   <detail>". Verdict names (pyop__path_verdict_name) are stable, lower
 *   case: python-file, python-dir, no-python, missing-dir, missing-file,
 *   relative, unreadable, not-python, not-scanned ("unknown" otherwise).
 */
#ifndef PYOP_SCAN_H
#define PYOP_SCAN_H

#include "core.h"

/*
 * The verdicts, one X(NAME, value, "name") each: the enum
 * (PYOP__PATH_<NAME>) and pyop__path_verdict_name are generated from this
 * list, and tests/e2e/test_tables.py holds `pyop doctor`'s copy to it.
 *   PYTHON_FILE   element is a .py file
 *   PYTHON_DIR    directory with at least one Python entry
 *   NO_PYTHON     directory without Python entries (C++ OPP)
 *   MISSING_DIR   does not exist: skipped, warned
 *   MISSING_FILE  a listed .py file that does not exist: error
 *   RELATIVE      refused: relative element
 *   UNREADABLE    cannot be opened/read: skipped, warned
 *   NOT_PYTHON    a non-.py file or other non-directory: skipped
 *   NOT_SCANNED   after the first Python entry in stop-first mode
 */
#define PYOP__PATH_VERDICT_MAP(X)                                             \
  X(PYTHON_FILE, 1, "python-file")                                            \
  X(PYTHON_DIR, 2, "python-dir")                                              \
  X(NO_PYTHON, 3, "no-python")                                                \
  X(MISSING_DIR, 4, "missing-dir")                                            \
  X(MISSING_FILE, 5, "missing-file")                                          \
  X(RELATIVE, 6, "relative")                                                  \
  X(UNREADABLE, 7, "unreadable")                                              \
  X(NOT_PYTHON, 8, "not-python")                                              \
  X(NOT_SCANNED, 9, "not-scanned")

typedef enum pyop__path_verdict {
#define PYOP__PATH_ENUM(name, value, text) PYOP__PATH_##name = value,
  PYOP__PATH_VERDICT_MAP(PYOP__PATH_ENUM)
#undef PYOP__PATH_ENUM
} pyop__path_verdict;

typedef struct pyop__scan_entry {
  char *path;   /* the element as written (not NUL-containing) */
  int verdict;  /* pyop__path_verdict */
  char *detail; /* why (errno text, first Python entry found...), may be NULL */
  bool skipped; /* skipped with a warning (the verdicts "warned" above) */
} pyop__scan_entry;

typedef struct pyop__scan_result {
  pyop__scan_entry *entries;
  size_t n;
  bool has_python;
} pyop__scan_result;

/*
 * Scans `value` (NULL or "" means nothing to scan). With stop_at_first the
 * scan ends at the first Python entry (later elements are NOT_SCANNED).
 * Returns PYOP_OK, PYOP_ENOENT for a missing listed .py file (the message
 * names it; *out is still filled), or PYOP_ENOMEM. Free with
 * pyop__scan_result_free (also after an error).
 */
int pyop__scan(const char *value, bool stop_at_first, pyop__scan_result *out);
/*
 * pyop__scan, and with quiet the skipped elements' warnings are not logged
 * (each entry says skipped): pyop__scan_warn logs them when the caller
 * decides they are its to say (pyop_check_need_load, whose pyop_load scans
 * again, logs only when nothing is to be loaded; pyop_doctor's report holds
 * the verdicts). One warning per skipped element per load, never two.
 */
int pyop__scan_opts(const char *value, bool stop_at_first, bool quiet,
                    pyop__scan_result *out);
void pyop__scan_warn(const pyop__scan_result *r);
void pyop__scan_result_free(pyop__scan_result *r);
const char *pyop__path_verdict_name(int verdict);

/* The variable the scan reads (docs/design.md §Scan). */
#define PYOP__OPP_VAR "ASCEND_CUSTOM_OPP_PATH"

/*
 * Appends to sb why `value` (the variable's value, NULL when unset) loads
 * no Python operator: it is unset, it is empty, or no element is a Python
 * entry (each element with its verdict); when some are, it names them
 * instead. Scans anew: for error messages only (it logs what a scan logs).
 */
void pyop__scan_explain(const char *value, pyop__sb *sb);
/*
 * The Python entries of a full scan r as string views into *out_paths, in
 * scan order (the views point into r: free r after the array; the caller
 * frees the array with pyop__free). PYOP_OK, or PYOP_ENOMEM recorded.
 */
int pyop__scan_python_paths(const pyop__scan_result *r, pyop_str **out_paths, size_t *out_n);
/* True for the verdicts of a Python entry (PYTHON_FILE, PYTHON_DIR). */
static inline bool pyop__path_verdict_is_python(int verdict) {
  return verdict == PYOP__PATH_PYTHON_FILE || verdict == PYOP__PATH_PYTHON_DIR;
}

#endif
