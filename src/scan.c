/*
 * Scanning ASCEND_CUSTOM_OPP_PATH (docs/design.md §Scan). See scan.h for the rules and
 * the decisions taken where the design left a choice.
 *
 * Cost model: a directory element costs opendir + one readdir pass +
 * closedir, and the pass ends early at the first Python entry. fstatat is
 * called only for an entry whose d_type is DT_UNKNOWN or DT_LNK, and for an
 * entry that is a directory with an acceptable name (to look for its
 * __init__.py). stat is called only for an element ending in ".py" and for
 * an element opendir refused with ENOTDIR. Nothing is opened for reading
 * except an element that is a regular .py file (opened O_NONBLOCK and
 * closed, to tell an unreadable one), so a FIFO can never block the scan.
 */
#include "scan.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>

#define PYOP__PKG_INIT "__init__.py"

/* What one directory entry is, as far as the scan cares. */
typedef enum entry_kind {
  ENTRY_OTHER = 0,   /* not a Python entry */
  ENTRY_PY_FILE,     /* a regular file (or link to one) named *.py */
  ENTRY_PACKAGE      /* a directory (or link to one) with __init__.py */
} entry_kind;

/* True when name ends in ".py" and has something before it. */
static bool has_py_suffix(const char *name) {
  size_t len = strlen(name);
  return len > 3 && memcmp(name + len - 3, ".py", 3) == 0;
}

/* True for names the scan skips inside a directory: "_x", ".x", ".", "..". */
static bool is_skipped_name(const char *name) {
  return name[0] == '_' || name[0] == '.';
}

/* Thread-safe text of an errno value; points into buf or static storage. */
static const char *err_text(int err, char *buf, size_t len) {
  return strerror_r(err, buf, len);
}

/* Why a path that stat/opendir reported as absent does not exist. */
static const char *missing_why(int err) {
  return err == ENOTDIR ? "a component of the path is not a directory"
                        : "no such file or directory";
}

/*
 * Sets e->verdict and replaces e->detail with the formatted text (owned by
 * the entry). Returns PYOP_OK, or PYOP_ENOMEM with e->detail left NULL.
 */
static int set_verdict(pyop__scan_entry *e, int verdict, const char *fmt, ...)
    PYOP__PRINTF(3, 4);
static int set_verdict(pyop__scan_entry *e, int verdict, const char *fmt, ...) {
  pyop__sb sb = PYOP__SB_INIT;
  va_list ap;
  va_start(ap, fmt);
  pyop__sb_vprintf(&sb, fmt, ap);
  va_end(ap);
  pyop__free(e->detail);
  e->verdict = verdict;
  e->detail = pyop__sb_take(&sb); /* NULL (and nothing left) on oom */
  return e->detail ? PYOP_OK : PYOP_ENOMEM;
}

/* Logs the standard "skipped" warning for an entry whose detail is set. */
static void warn_skipped(const pyop__scan_entry *e) {
  PYOP_LOG_W(PYOP__OPP_VAR " element '%s' skipped: %s", e->path,
             e->detail ? e->detail : pyop__path_verdict_name(e->verdict));
}

/* Marks e skipped with a warning: logged by pyop__scan_opts, or later by
 * pyop__scan_warn for a quiet scan. */
static void mark_skipped(pyop__scan_entry *e) { e->skipped = true; }

void pyop__scan_warn(const pyop__scan_result *r) {
  for (size_t i = 0; i < r->n; i++)
    if (r->entries[i].skipped) warn_skipped(&r->entries[i]);
}

/*
 * True when the directory `name` inside the directory open as dfd holds a
 * regular file (or a link to one) named __init__.py. Never opens anything;
 * one fstatat. A failure other than "does not exist" is logged and counts
 * as "not a package".
 */
static bool is_package(int dfd, const char *dir_path, const char *name) {
  char rel[NAME_MAX + sizeof("/" PYOP__PKG_INIT)];
  size_t n = strlen(name);
  if (n > NAME_MAX) return false;
  memcpy(rel, name, n);
  memcpy(rel + n, "/" PYOP__PKG_INIT, sizeof("/" PYOP__PKG_INIT));
  struct stat st;
  if (PYOP_SYS(fstatat)(dfd, rel, &st, 0) != 0) {
    int err = errno;
    if (err != ENOENT && err != ENOTDIR) {
      char eb[128];
      PYOP_LOG_W("cannot check for '%s/%s': %s; not treated as a package",
                 dir_path, rel, err_text(err, eb, sizeof eb));
    }
    return false;
  }
  return S_ISREG(st.st_mode);
}

/*
 * Classifies one directory entry of the directory open as dfd (path
 * dir_path, for messages). Uses d_type; fstatat (following links) only when
 * d_type is DT_UNKNOWN or DT_LNK, plus the __init__.py check for a
 * directory with an acceptable name.
 */
static entry_kind classify_entry(int dfd, const char *dir_path,
                                 const struct dirent *de) {
  const char *name = de->d_name;
  if (is_skipped_name(name)) return ENTRY_OTHER;
  unsigned char type = DT_UNKNOWN;
#ifdef _DIRENT_HAVE_D_TYPE
  type = de->d_type;
#endif
  if (type == DT_UNKNOWN || type == DT_LNK) {
    struct stat st;
    if (PYOP_SYS(fstatat)(dfd, name, &st, 0) != 0) {
      int err = errno;
      char eb[128];
      /* A dangling link or a racing delete: not an entry. */
      PYOP_LOG_D("ignoring '%s/%s': %s", dir_path, name,
                 err_text(err, eb, sizeof eb));
      return ENTRY_OTHER;
    }
    if (S_ISREG(st.st_mode)) type = DT_REG;
    else if (S_ISDIR(st.st_mode)) type = DT_DIR;
    else return ENTRY_OTHER; /* FIFO, socket, device: never Python */
  }
  if (type == DT_REG)
    return has_py_suffix(name) ? ENTRY_PY_FILE : ENTRY_OTHER;
  if (type == DT_DIR)
    return is_package(dfd, dir_path, name) ? ENTRY_PACKAGE : ENTRY_OTHER;
  return ENTRY_OTHER;
}

/*
 * An element opendir refused with ENOTDIR: either it is not a directory, or
 * one of its components is not. One stat tells which. Sets the verdict.
 */
static int classify_not_dir(pyop__scan_entry *e) {
  struct stat st;
  char eb[128];
  int rc;
  if (PYOP_SYS(stat)(e->path, &st) != 0) {
    int err = errno;
    if (err == ENOENT || err == ENOTDIR) {
      rc = set_verdict(e, PYOP__PATH_MISSING_DIR, "%s", missing_why(err));
    } else {
      rc = set_verdict(e, PYOP__PATH_UNREADABLE, "cannot stat: %s",
                       err_text(err, eb, sizeof eb));
    }
  } else if (S_ISREG(st.st_mode)) {
    rc = set_verdict(e, PYOP__PATH_NOT_PYTHON,
                     "a regular file, neither a directory nor a .py file");
  } else {
    rc = set_verdict(e, PYOP__PATH_NOT_PYTHON,
                     "not a directory, a .py file or a link to one");
  }
  if (rc == PYOP_OK) mark_skipped(e);
  return rc;
}

/*
 * Scans the directory element e->path: one readdir pass that ends at the
 * first Python entry. Sets the verdict (PYTHON_DIR, NO_PYTHON, MISSING_DIR,
 * UNREADABLE or NOT_PYTHON). Returns PYOP_OK or PYOP_ENOMEM.
 */
static int scan_dir(pyop__scan_entry *e) {
  char eb[128];
  int rc;
  DIR *d = PYOP_SYS(opendir)(e->path);
  if (!d) {
    int err = errno;
    if (err == ENOTDIR) return classify_not_dir(e);
    if (err == ENOENT)
      rc = set_verdict(e, PYOP__PATH_MISSING_DIR, "%s", missing_why(err));
    else
      rc = set_verdict(e, PYOP__PATH_UNREADABLE, "cannot open directory: %s",
                       err_text(err, eb, sizeof eb));
    if (rc == PYOP_OK) mark_skipped(e);
    return rc;
  }
  int dfd = dirfd(d);
  if (dfd < 0) {
    /* Never resolve entry names against the cwd (AT_FDCWD). */
    int err = errno;
    PYOP_SYS(closedir)(d);
    rc = set_verdict(e, PYOP__PATH_UNREADABLE, "cannot use directory: %s",
                     err_text(err, eb, sizeof eb));
    if (rc == PYOP_OK) mark_skipped(e);
    return rc;
  }
  entry_kind found = ENTRY_OTHER;
  char found_name[NAME_MAX + 1];
  int read_err = 0;
  for (;;) {
    errno = 0;
    struct dirent *de = PYOP_SYS(readdir)(d);
    if (!de) {
      read_err = errno;
      break;
    }
    found = classify_entry(dfd, e->path, de);
    if (found != ENTRY_OTHER) {
      size_t n = strnlen(de->d_name, NAME_MAX);
      memcpy(found_name, de->d_name, n);
      found_name[n] = '\0';
      break;
    }
  }
  PYOP_SYS(closedir)(d);
  if (found == ENTRY_PY_FILE) {
    rc = set_verdict(e, PYOP__PATH_PYTHON_DIR, "Python file '%s'", found_name);
  } else if (found == ENTRY_PACKAGE) {
    rc = set_verdict(e, PYOP__PATH_PYTHON_DIR, "Python package '%s/'",
                     found_name);
  } else if (read_err != 0) {
    rc = set_verdict(e, PYOP__PATH_UNREADABLE, "cannot read directory: %s",
                     err_text(read_err, eb, sizeof eb));
    if (rc == PYOP_OK) mark_skipped(e);
  } else {
    rc = set_verdict(e, PYOP__PATH_NO_PYTHON,
                     "no .py file or package directory at its top level");
  }
  if (rc == PYOP_OK && e->verdict == PYOP__PATH_PYTHON_DIR)
    PYOP_LOG_D(PYOP__OPP_VAR " element '%s': %s", e->path, e->detail);
  return rc;
}

/*
 * Classifies one non-empty element (e->path set). Sets e->verdict and
 * e->detail. Returns PYOP_OK or PYOP_ENOMEM; a missing .py file is a
 * verdict here (MISSING_FILE), turned into the error by pyop__scan.
 */
static int scan_element(pyop__scan_entry *e) {
  char eb[128];
  int rc;
  if (e->path[0] != '/') {
    rc = set_verdict(e, PYOP__PATH_RELATIVE,
                     "relative path refused (libpyop never resolves paths "
                     "against the current directory; use an absolute path; GE "
                     "resolves it against the cwd, libpyop departs from that on "
                     "purpose: docs/security.md)");
    if (rc == PYOP_OK) mark_skipped(e);
    return rc;
  }
  if (has_py_suffix(e->path)) {
    struct stat st;
    if (PYOP_SYS(stat)(e->path, &st) != 0) {
      int err = errno;
      if (err == ENOENT || err == ENOTDIR)
        return set_verdict(e, PYOP__PATH_MISSING_FILE, "%s", missing_why(err));
      rc = set_verdict(e, PYOP__PATH_UNREADABLE, "cannot stat: %s",
                       err_text(err, eb, sizeof eb));
      if (rc == PYOP_OK) mark_skipped(e);
      return rc;
    }
    if (S_ISREG(st.st_mode)) {
      /* Unreadable like an unreadable directory: skipped with a warning,
       * rather than failing the load later at import. O_NONBLOCK: a FIFO
       * swapped in since the stat cannot block the open. */
      int fd = PYOP_SYS(open)(e->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
      if (fd < 0) {
        int err = errno;
        rc = set_verdict(e, PYOP__PATH_UNREADABLE, "cannot open for reading: %s",
                         err_text(err, eb, sizeof eb));
        if (rc == PYOP_OK) mark_skipped(e);
        return rc;
      }
      PYOP_SYS(close)(fd);
      rc = set_verdict(e, PYOP__PATH_PYTHON_FILE, "a regular .py file");
      if (rc == PYOP_OK)
        PYOP_LOG_D(PYOP__OPP_VAR " element '%s': %s", e->path, e->detail);
      return rc;
    }
    if (!S_ISDIR(st.st_mode)) {
      rc = set_verdict(e, PYOP__PATH_NOT_PYTHON,
                       "named .py but not a regular file (FIFO, socket or "
                       "device); never opened");
      if (rc == PYOP_OK) mark_skipped(e);
      return rc;
    }
    /* A directory named *.py is scanned as a directory. */
  }
  return scan_dir(e);
}

/* Whitespace GE strips around an element (ASCII: " \t\n\v\f\r"). */
static bool is_space(char c) {
  return c == ' ' || (c >= '\t' && c <= '\r');
}

/* Narrows [*elem, *elem + *len) to the element without the whitespace
 * around it, as GE reads the variable. */
static void trim_element(const char **elem, size_t *len) {
  while (*len > 0 && is_space(**elem)) {
    (*elem)++;
    (*len)--;
  }
  while (*len > 0 && is_space((*elem)[*len - 1])) (*len)--;
}

/* Number of non-empty colon-separated elements of value (an upper bound of
 * the elements left once trimmed). */
static size_t count_elements(const char *value) {
  size_t n = 0;
  const char *p = value;
  while (*p) {
    size_t len = strcspn(p, ":");
    if (len > 0) n++;
    p += len;
    if (*p == ':') p++;
  }
  return n;
}

int pyop__scan(const char *value, bool stop_at_first, pyop__scan_result *out) {
  return pyop__scan_opts(value, stop_at_first, false, out);
}

int pyop__scan_opts(const char *value, bool stop_at_first, bool quiet,
                    pyop__scan_result *out) {
  if (!out) return pyop__error(PYOP_EINVAL, "pyop__scan: out is NULL");
  memset(out, 0, sizeof *out);
  if (!value || !*value) return PYOP_OK;
  size_t cap = count_elements(value);
  if (cap == 0) return PYOP_OK;
  out->entries = pyop__calloc(cap, sizeof *out->entries);
  if (!out->entries) goto oom;

  bool stopped = false;
  size_t n_missing = 0;
  const char *first_missing = NULL;
  const char *first_missing_why = NULL;
  const char *p = value;
  while (*p) {
    size_t len = strcspn(p, ":"), raw_len = len;
    const char *elem = p, *raw = p;
    p += len;
    if (*p == ':') p++;
    trim_element(&elem, &len);
    if (len == 0) continue; /* ":a", "a::b", "a:", ": :" never mean the cwd */
    if (len != raw_len && !quiet)
      PYOP_LOG_I(PYOP__OPP_VAR " element '%.*s' read as '%.*s' (the whitespace around an "
                 "element is dropped, as GE does)", (int)(raw_len < 4096 ? raw_len : 4096), raw,
                 (int)(len < 4096 ? len : 4096), elem);

    pyop__scan_entry *e = &out->entries[out->n++];
    e->path = pyop__strndup(elem, len);
    if (!e->path) goto oom;
    if (stopped) {
      e->verdict = PYOP__PATH_NOT_SCANNED;
      continue;
    }
    if (scan_element(e) != PYOP_OK) goto oom;
    if (e->skipped && !quiet) warn_skipped(e);
    if (pyop__path_verdict_is_python(e->verdict)) {
      out->has_python = true;
      if (stop_at_first) stopped = true;
    } else if (e->verdict == PYOP__PATH_MISSING_FILE) {
      if (n_missing++ == 0) {
        first_missing = e->path;
        first_missing_why = e->detail;
      }
    }
  }
  if (n_missing == 1)
    return pyop__error(PYOP_ENOENT,
                       PYOP__OPP_VAR " lists the Python file '%s', which does "
                       "not exist: %s",
                       first_missing, first_missing_why);
  if (n_missing > 1)
    return pyop__error(PYOP_ENOENT,
                       PYOP__OPP_VAR " lists the Python file '%s', which does "
                       "not exist: %s (and %zu more missing .py file%s)",
                       first_missing, first_missing_why, n_missing - 1,
                       n_missing - 1 == 1 ? "" : "s");
  return PYOP_OK;

oom:
  pyop__scan_result_free(out);
  return pyop__error(PYOP_ENOMEM, "out of memory while scanning " PYOP__OPP_VAR);
}

void pyop__scan_result_free(pyop__scan_result *r) {
  if (!r) return;
  for (size_t i = 0; i < r->n; i++) {
    pyop__free(r->entries[i].path);
    pyop__free(r->entries[i].detail);
  }
  pyop__free(r->entries);
  memset(r, 0, sizeof *r);
}

void pyop__scan_explain(const char *value, pyop__sb *sb) {
  if (!value) {
    pyop__sb_puts(sb, PYOP__OPP_VAR " is not set, so no Python operator was loaded");
    return;
  }
  pyop__scan_result r;
  if (pyop__scan_opts(value, false, true, &r) == PYOP_ENOMEM) {
    pyop__sb_printf(sb, PYOP__OPP_VAR "=%s (not scanned: out of memory)", value);
    return;
  }
  /* No element once the colons and the whitespace around each are dropped
   * ("", "::", " : "): empty, as the scan reads it. */
  if (r.n == 0) {
    pyop__sb_puts(sb, PYOP__OPP_VAR " is empty, so no Python operator was loaded");
    pyop__scan_result_free(&r);
    return;
  }
  pyop__sb_puts(sb, r.has_python ? PYOP__OPP_VAR " has Python entries ("
                                 : PYOP__OPP_VAR " has no Python entry (");
  for (size_t i = 0; i < r.n; i++)
    pyop__sb_printf(sb, "%s'%s': %s", i ? ", " : "", r.entries[i].path,
                    pyop__path_verdict_name(r.entries[i].verdict));
  pyop__sb_puts(sb, r.has_python ? "): has pyop_load run, and do they register operators?"
                                 : "), so no Python operator was loaded");
  pyop__scan_result_free(&r);
}

/* The name of a verdict (scan.h's list), "unknown" for another value. */
const char *pyop__path_verdict_name(int verdict) {
  static const char *const names[] = {
#define PYOP__PATH_NAME(name, value, text) [value] = text,
      PYOP__PATH_VERDICT_MAP(PYOP__PATH_NAME)
#undef PYOP__PATH_NAME
  };
  if (verdict < 0 || (size_t)verdict >= PYOP__ARRAY_LEN(names) || !names[verdict])
    return "unknown";
  return names[verdict];
}

/* Lists the Python entries of r as views (scan.h). */
int pyop__scan_python_paths(const pyop__scan_result *r, pyop_str **out_paths,
                            size_t *out_n) {
  size_t n = 0;
  for (size_t i = 0; i < r->n; i++)
    if (pyop__path_verdict_is_python(r->entries[i].verdict)) n++;
  pyop_str *paths = pyop__calloc(n, sizeof *paths);
  if (!paths)
    return pyop__error(PYOP_ENOMEM, "pyop_load: out of memory listing paths");
  size_t k = 0;
  for (size_t i = 0; i < r->n; i++) {
    const pyop__scan_entry *e = &r->entries[i];
    if (pyop__path_verdict_is_python(e->verdict)) {
      paths[k].data = e->path;
      paths[k].len = strlen(e->path);
      k++;
    }
  }
  *out_paths = paths;
  *out_n = n;
  return PYOP_OK;
}
