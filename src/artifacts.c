/*
 * Bridge artifacts: the manifest parser, candidate enumeration and ranking,
 * and the file security policy for everything libpyop dlopens.
 *
 * manifest.txt (format 1), one "key=value" a line; blank lines and lines
 * whose first non-blank character is '#' are skipped; spaces and tabs around
 * keys and values are trimmed; a trailing '\r' is dropped. Keys:
 *   format=1               required; another number is refused
 *   python_tag=cp311|abi3  required
 *   abi_flags=|t|d|td      optional, default ""; must be "" for abi3
 *   platform=x86_64        required ([A-Za-z0-9_]+)
 *   bridge=libpyop_bridge.so  required: a plain file name of the artifact
 *                          directory (no '/', not starting with '.')
 *   bridge_abi_major=1, bridge_abi_minor=0   required unsigned integers
 *   min_python=3.11        required for abi3: lowest 3.x it supports
 *   libpython=/abs/path    optional: the interpreter library recorded at
 *                          build time. The one path allowed outside the
 *                          artifact directory (it is the system's Python);
 *                          whoever dlopens it vets it with
 *                          pyop__open_trusted first.
 *   python_dir=python      optional: relative, no "", "." or ".." component
 *   build_info=...         optional free text
 * Unknown keys are ignored (forward compatible), any key given twice is
 * refused, as are lines longer than 1024 bytes, files larger than
 * PYOP__MANIFEST_MAX, NUL bytes and control characters.
 *
 * The bridge path is checked again after symlinks are resolved (see
 * bridge_loader.c): the resolved file must still be inside the resolved
 * artifact directory.
 */
#include "artifacts.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "pyop/bridge_abi.h"

#define PYOP__MANIFEST_LINE_MAX 1024
#define PYOP__OVERRIDE_VAR "PYOP_BRIDGE_DIR"

/* ================================================================ manifest */

typedef struct mview {
  const char *p;
  size_t n;
} mview;

enum {
  MK_FORMAT,
  MK_PYTHON_TAG,
  MK_ABI_FLAGS,
  MK_PLATFORM,
  MK_BRIDGE,
  MK_ABI_MAJOR,
  MK_ABI_MINOR,
  MK_MIN_PYTHON,
  MK_LIBPYTHON,
  MK_PYTHON_DIR,
  MK_BUILD_INFO,
  MK_COUNT
};

static const char *const mkey_names[MK_COUNT] = {
    "format",           "python_tag",       "abi_flags",  "platform",
    "bridge",           "bridge_abi_major", "bridge_abi_minor",
    "min_python",       "libpython",        "python_dir", "build_info"};

/* Shortest prefix of a value that is printed in a message. */
#define VIEW_FMT(v) (int)((v).n > 64 ? 64 : (v).n), (v).p

/* Writes a parse failure to why when given (the manifest layer's one
 * carrier: the thread's last error is its callers'). Returns
 * PYOP_EDESCRIPTOR. */
static int mf_fail(pyop__sb *why, const char *fmt, ...) PYOP__PRINTF(2, 3);
static int mf_fail(pyop__sb *why, const char *fmt, ...) {
  if (!why) return PYOP_EDESCRIPTOR;
  va_list ap;
  va_start(ap, fmt);
  pyop__sb_vprintf(why, fmt, ap);
  va_end(ap);
  return PYOP_EDESCRIPTOR;
}

static bool is_blank(char c) { return c == ' ' || c == '\t'; }

static mview trim(mview v) {
  while (v.n && is_blank(v.p[0])) {
    v.p++;
    v.n--;
  }
  while (v.n && is_blank(v.p[v.n - 1])) v.n--;
  return v;
}

static bool view_eq(mview v, const char *s) {
  size_t n = strlen(s);
  return v.n == n && memcmp(v.p, s, n) == 0;
}

/*
 * Takes the next line of text[*pos..len): *line without its '\n' (and a
 * trailing '\r'), *raw_len its length before that. False at the end.
 */
static bool next_line(const char *text, size_t len, size_t *pos, mview *line,
                      size_t *raw_len) {
  if (*pos >= len) return false;
  const char *s = text + *pos;
  const char *nl = memchr(s, '\n', len - *pos);
  size_t n = nl ? (size_t)(nl - s) : len - *pos;
  *pos += n + (nl ? 1 : 0);
  *raw_len = n;
  if (n && s[n - 1] == '\r') n--;
  line->p = s;
  line->n = n;
  return true;
}

/* 0: blank or comment; 1: key=value (trimmed); -1: no '='. */
static int split_pair(mview line, mview *key, mview *value) {
  line = trim(line);
  if (line.n == 0 || line.p[0] == '#') return 0;
  const char *eq = memchr(line.p, '=', line.n);
  if (!eq) return -1;
  key->p = line.p;
  key->n = (size_t)(eq - line.p);
  value->p = eq + 1;
  value->n = line.n - key->n - 1;
  *key = trim(*key);
  *value = trim(*value);
  return 1;
}

/* True when a line of text[0..upto) (already validated) has key k. */
static bool key_seen_before(const char *text, size_t upto, mview k) {
  size_t pos = 0, raw;
  mview line, key, value;
  while (next_line(text, upto, &pos, &line, &raw))
    if (split_pair(line, &key, &value) == 1 && key.n == k.n &&
        memcmp(key.p, k.p, k.n) == 0)
      return true;
  return false;
}

static bool key_char_ok(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.';
}

/* Decimal, 1..10 digits, at most UINT32_MAX. */
static bool parse_uint(mview v, unsigned *out) {
  if (v.n == 0 || v.n > 10) return false;
  unsigned long long n = 0;
  for (size_t i = 0; i < v.n; i++) {
    if (v.p[i] < '0' || v.p[i] > '9') return false;
    n = n * 10 + (unsigned)(v.p[i] - '0');
  }
  if (n > UINT32_MAX) return false;
  *out = (unsigned)n;
  return true;
}

/* "abi3" or "cp" + 2..4 digits not starting with 0 ("cp39", "cp311"). */
static bool valid_python_tag(mview v) {
  if (view_eq(v, "abi3")) return true;
  if (v.n < 4 || v.n > 6 || v.p[0] != 'c' || v.p[1] != 'p' || v.p[2] == '0')
    return false;
  for (size_t i = 2; i < v.n; i++)
    if (v.p[i] < '0' || v.p[i] > '9') return false;
  return true;
}

static bool valid_platform(mview v) {
  if (v.n == 0 || v.n > 31) return false;
  for (size_t i = 0; i < v.n; i++) {
    char c = v.p[i];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
          (c >= '0' && c <= '9') || c == '_'))
      return false;
  }
  return true;
}

/* A file name of the artifact directory itself: no '/', no leading '.'. */
static bool valid_plain_name(mview v) {
  return v.n > 0 && v.n <= NAME_MAX && v.p[0] != '.' &&
         memchr(v.p, '/', v.n) == NULL;
}

/* A relative path that stays inside: components non-empty, not "." or "..". */
static bool valid_inside_path(mview v) {
  if (v.n == 0 || v.n >= PATH_MAX || v.p[0] == '/' || v.p[v.n - 1] == '/')
    return false;
  size_t i = 0;
  while (i < v.n) {
    size_t j = i;
    while (j < v.n && v.p[j] != '/') j++;
    size_t c = j - i;
    if (c == 0 || (c == 1 && v.p[i] == '.') ||
        (c == 2 && v.p[i] == '.' && v.p[i + 1] == '.'))
      return false;
    i = j + 1;
  }
  return true;
}

/* "3.N" → N. */
static bool parse_min_python(mview v, unsigned *minor) {
  if (v.n < 3 || v.p[0] != '3' || v.p[1] != '.') return false;
  mview m = {v.p + 2, v.n - 2};
  return parse_uint(m, minor) && *minor < 1000;
}

void pyop__manifest_free(pyop__manifest *m) {
  if (!m) return;
  pyop__free(m->python_tag);
  pyop__free(m->abi_flags);
  pyop__free(m->platform);
  pyop__free(m->bridge);
  pyop__free(m->libpython);
  pyop__free(m->python_dir);
  pyop__free(m->build_info);
  memset(m, 0, sizeof *m);
}

/* Copies v into *dst; false on allocation failure. */
static bool copy_view(char **dst, mview v) {
  *dst = pyop__strndup(v.p ? v.p : "", v.n);
  return *dst != NULL;
}

/*
 * Parses text[0..len) into *out (zeroed first). PYOP_OK; PYOP_EDESCRIPTOR
 * with "line N: ..." or "missing required key ..." in why; PYOP_ENOMEM.
 * Reads only text[0..len); *out holds nothing after a failure.
 */
int pyop__manifest_parse(const char *text, size_t len, pyop__manifest *out,
                         pyop__sb *why) {
  memset(out, 0, sizeof *out);
  if (!text && len) return mf_fail(why, "no text");
  if (len > PYOP__MANIFEST_MAX)
    return mf_fail(why, "%zu bytes, more than the %d allowed", len,
                   PYOP__MANIFEST_MAX);
  const char *nul = len ? memchr(text, '\0', len) : NULL;
  if (nul) {
    unsigned lineno = 1;
    for (const char *p = text; p < nul; p++) lineno += *p == '\n';
    return mf_fail(why, "line %u: NUL byte", lineno);
  }

  mview vals[MK_COUNT];
  unsigned at[MK_COUNT] = {0}; /* line of each key; 0: absent */
  size_t pos = 0, raw;
  unsigned lineno = 0;
  mview line;
  for (;;) {
    size_t start = pos;
    if (!next_line(text, len, &pos, &line, &raw)) break;
    lineno++;
    if (raw > PYOP__MANIFEST_LINE_MAX)
      return mf_fail(why, "line %u: longer than %d bytes", lineno,
                     PYOP__MANIFEST_LINE_MAX);
    mview key, value;
    int kind = split_pair(line, &key, &value);
    if (kind == 0) continue;
    if (kind < 0)
      return mf_fail(why, "line %u: expected key=value", lineno);
    if (key.n == 0) return mf_fail(why, "line %u: empty key", lineno);
    for (size_t i = 0; i < key.n; i++)
      if (!key_char_ok(key.p[i]))
        return mf_fail(why, "line %u: invalid character 0x%02x in key",
                       lineno, (unsigned char)key.p[i]);
    for (size_t i = 0; i < value.n; i++) {
      unsigned char c = (unsigned char)value.p[i];
      if ((c < 0x20 && c != '\t') || c == 0x7f)
        return mf_fail(why, "line %u: %.*s: control character 0x%02x in value",
                       lineno, VIEW_FMT(key), c);
    }
    int id = -1;
    for (int k = 0; k < MK_COUNT; k++)
      if (view_eq(key, mkey_names[k])) id = k;
    if (id >= 0) {
      if (at[id])
        return mf_fail(why, "line %u: duplicate key %s (first on line %u)",
                       lineno, mkey_names[id], at[id]);
      at[id] = lineno;
      vals[id] = value;
    } else if (key_seen_before(text, start, key)) {
      return mf_fail(why, "line %u: duplicate key %.*s", lineno, VIEW_FMT(key));
    }
  }

  /* The format first: another format may mean other keys. */
  if (at[MK_FORMAT]) {
    unsigned f;
    if (!parse_uint(vals[MK_FORMAT], &f))
      return mf_fail(why, "line %u: format: \"%.*s\" is not a number",
                     at[MK_FORMAT], VIEW_FMT(vals[MK_FORMAT]));
    if (f != 1)
      return mf_fail(why,
                     "line %u: unsupported manifest format %u (this libpyop "
                     "reads format 1)",
                     at[MK_FORMAT], f);
    out->format = f;
  }
  static const int required[] = {MK_FORMAT, MK_PYTHON_TAG, MK_PLATFORM,
                                 MK_BRIDGE, MK_ABI_MAJOR,  MK_ABI_MINOR};
  for (size_t i = 0; i < PYOP__ARRAY_LEN(required); i++)
    if (!at[required[i]])
      return mf_fail(why, "missing required key %s", mkey_names[required[i]]);

  mview tag = vals[MK_PYTHON_TAG];
  if (!valid_python_tag(tag))
    return mf_fail(why,
                   "line %u: python_tag: \"%.*s\" is neither cpXY (e.g. "
                   "cp311) nor abi3",
                   at[MK_PYTHON_TAG], VIEW_FMT(tag));
  bool abi3 = view_eq(tag, "abi3");
  mview flags = {"", 0};
  if (at[MK_ABI_FLAGS]) {
    flags = vals[MK_ABI_FLAGS];
    if (!(flags.n == 0 || view_eq(flags, "t") || view_eq(flags, "d") ||
          view_eq(flags, "td")))
      return mf_fail(why,
                     "line %u: abi_flags: \"%.*s\" is not one of \"\", t, d, td",
                     at[MK_ABI_FLAGS], VIEW_FMT(flags));
    if (abi3 && flags.n)
      return mf_fail(why,
                     "line %u: abi_flags: a stable-ABI (abi3) bridge has no ABI "
                     "flags",
                     at[MK_ABI_FLAGS]);
  }
  if (!valid_platform(vals[MK_PLATFORM]))
    return mf_fail(why, "line %u: platform: \"%.*s\" is not a machine name",
                   at[MK_PLATFORM], VIEW_FMT(vals[MK_PLATFORM]));
  if (!valid_plain_name(vals[MK_BRIDGE]))
    return mf_fail(why,
                   "line %u: bridge: \"%.*s\" must be a file name inside the "
                   "artifact directory (no '/', no leading '.')",
                   at[MK_BRIDGE], VIEW_FMT(vals[MK_BRIDGE]));
  if (!parse_uint(vals[MK_ABI_MAJOR], &out->abi_major))
    return mf_fail(why, "line %u: bridge_abi_major: \"%.*s\" is not a number",
                   at[MK_ABI_MAJOR], VIEW_FMT(vals[MK_ABI_MAJOR]));
  if (!parse_uint(vals[MK_ABI_MINOR], &out->abi_minor))
    return mf_fail(why, "line %u: bridge_abi_minor: \"%.*s\" is not a number",
                   at[MK_ABI_MINOR], VIEW_FMT(vals[MK_ABI_MINOR]));
  if (at[MK_MIN_PYTHON] &&
      !parse_min_python(vals[MK_MIN_PYTHON], &out->min_python_minor))
    return mf_fail(why, "line %u: min_python: \"%.*s\" is not 3.N",
                   at[MK_MIN_PYTHON], VIEW_FMT(vals[MK_MIN_PYTHON]));
  if (abi3 && !at[MK_MIN_PYTHON])
    return mf_fail(why, "line %u: python_tag=abi3 needs min_python (e.g. 3.11)",
                   at[MK_PYTHON_TAG]);
  bool has_libpython = at[MK_LIBPYTHON] && vals[MK_LIBPYTHON].n;
  if (has_libpython &&
      (vals[MK_LIBPYTHON].p[0] != '/' || vals[MK_LIBPYTHON].n >= PATH_MAX))
    return mf_fail(why, "line %u: libpython: \"%.*s\" is not an absolute path",
                   at[MK_LIBPYTHON], VIEW_FMT(vals[MK_LIBPYTHON]));
  bool has_python_dir = at[MK_PYTHON_DIR] && vals[MK_PYTHON_DIR].n;
  if (has_python_dir && !valid_inside_path(vals[MK_PYTHON_DIR]))
    return mf_fail(why,
                   "line %u: python_dir: \"%.*s\" must be a relative path "
                   "inside the artifact directory",
                   at[MK_PYTHON_DIR], VIEW_FMT(vals[MK_PYTHON_DIR]));

  if (!copy_view(&out->python_tag, tag) || !copy_view(&out->abi_flags, flags) ||
      !copy_view(&out->platform, vals[MK_PLATFORM]) ||
      !copy_view(&out->bridge, vals[MK_BRIDGE]) ||
      (has_libpython && !copy_view(&out->libpython, vals[MK_LIBPYTHON])) ||
      (has_python_dir && !copy_view(&out->python_dir, vals[MK_PYTHON_DIR])) ||
      (at[MK_BUILD_INFO] && !copy_view(&out->build_info, vals[MK_BUILD_INFO]))) {
    pyop__manifest_free(out);
    if (why) pyop__sb_puts(why, "out of memory");
    return PYOP_ENOMEM;
  }
  return PYOP_OK;
}

/* Joins dir and name with one '/'; NULL on allocation failure. */
static char *path_join(const char *dir, const char *name) {
  size_t dl = strlen(dir), nl = strlen(name);
  while (dl > 1 && dir[dl - 1] == '/') dl--;
  char *p = pyop__malloc(dl + 1 + nl + 1);
  if (!p) return NULL;
  memcpy(p, dir, dl);
  p[dl] = '/';
  memcpy(p + dl + 1, name, nl + 1);
  return p;
}

/*
 * Reads <dir>/manifest.txt through the seam and parses it (see header).
 */
int pyop__manifest_read(const char *dir, pyop__manifest *out, pyop__sb *why) {
  assert(why != NULL);
  memset(out, 0, sizeof *out);
  if (!dir || dir[0] != '/') {
    pyop__sb_printf(why,
                    "relative artifact directory \"%s\" refused (libpyop "
                    "never resolves paths against the current directory)",
                    dir ? dir : "");
    return PYOP_EINVAL;
  }
  char *path = path_join(dir, PYOP__MANIFEST_NAME);
  if (!path) {
    pyop__sb_puts(why, "out of memory");
    return PYOP_ENOMEM;
  }
  int rc = PYOP_OK;
  char *buf = NULL;
  size_t total = 0;
  /* O_NONBLOCK: a FIFO or a device in the manifest's place must not block
   * the open (and with it every lifecycle call); fstat then refuses it. */
  int fd = PYOP_SYS(open)(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd < 0) {
    int e = errno;
    bool missing = e == ENOENT || e == ENOTDIR;
    pyop__sb_printf(why, "%s " PYOP__MANIFEST_NAME ": %s", missing ? "no" : "cannot open",
                    strerror(e));
    rc = missing ? PYOP_ENOENT : PYOP_EIO;
    goto out;
  }
  struct stat st;
  if (PYOP_SYS(fstat)(fd, &st) != 0) {
    int e = errno;
    pyop__sb_printf(why, PYOP__MANIFEST_NAME ": fstat: %s", strerror(e));
    rc = PYOP_EIO;
    goto out;
  }
  if (!S_ISREG(st.st_mode)) {
    pyop__sb_printf(why, PYOP__MANIFEST_NAME ": not a regular file (%s)",
                    pyop__file_kind(st.st_mode));
    rc = PYOP_EIO;
    goto out;
  }
  if (st.st_size > PYOP__MANIFEST_MAX) {
    pyop__sb_printf(why, PYOP__MANIFEST_NAME ": %lld bytes, more than the %d allowed",
                    (long long)st.st_size, PYOP__MANIFEST_MAX);
    rc = PYOP_EDESCRIPTOR;
    goto out;
  }
  buf = pyop__malloc(PYOP__MANIFEST_MAX + 1);
  if (!buf) {
    pyop__sb_puts(why, "out of memory");
    rc = PYOP_ENOMEM;
    goto out;
  }
  /* Read one byte more than allowed to notice a file that grew. */
  while (total <= PYOP__MANIFEST_MAX) {
    ssize_t n = PYOP_SYS(read)(fd, buf + total, PYOP__MANIFEST_MAX + 1 - total);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int e = errno;
      pyop__sb_printf(why, PYOP__MANIFEST_NAME ": read: %s", strerror(e));
      rc = PYOP_EIO;
      goto out;
    }
    if (n == 0) break;
    total += (size_t)n;
  }
  if (total > PYOP__MANIFEST_MAX) {
    pyop__sb_printf(why, PYOP__MANIFEST_NAME ": more than the %d bytes allowed",
                    PYOP__MANIFEST_MAX);
    rc = PYOP_EDESCRIPTOR;
    goto out;
  }
  pyop__sb inner = PYOP__SB_INIT;
  rc = pyop__manifest_parse(buf, total, out, &inner);
  if (rc != PYOP_OK) pyop__sb_printf(why, PYOP__MANIFEST_NAME ": %s", pyop__sb_str(&inner));
  pyop__sb_free(&inner);
out:
  if (fd >= 0) PYOP_SYS(close)(fd);
  pyop__free(buf);
  pyop__free(path);
  return rc;
}

/* ============================================================ the root */

#define PYOP__ROOT_UNKNOWN "<libpyop directory unknown>/pyop/artifacts"

static pthread_mutex_t root_lock = PTHREAD_MUTEX_INITIALIZER;
static char root_override[PATH_MAX];
static bool root_overridden;
static char root_default[PATH_MAX];
static bool root_default_known;

/*
 * <directory of the libpyop in use>/pyop/artifacts, found with dladdr on one
 * of our own functions (cached once known), or the root set by
 * pyop__artifacts_set_root. Never NULL: when the library cannot locate
 * itself it returns a relative marker string that candidate enumeration and
 * manifest reading refuse. The pointer stays valid until the next
 * pyop__artifacts_set_root.
 *
 * root_lock guards the flags and buffers only: dladdr and realpath (slow,
 * and realpath may wait on a file system) run without it, so the lock is
 * never held long and fork() can take it (pyop__artifacts_fork_lock). Two
 * threads resolving at once compute the same path; the first publishes it.
 */
const char *pyop__artifacts_root(void) {
  const char *r = PYOP__ROOT_UNKNOWN;
  pthread_mutex_lock(&root_lock);
  bool known = root_overridden || root_default_known;
  if (root_overridden) r = root_override;
  else if (root_default_known) r = root_default;
  pthread_mutex_unlock(&root_lock);
  if (known) return r;

  char found[PATH_MAX];
  bool have = false;
  Dl_info info;
  memset(&info, 0, sizeof info);
  char real[PATH_MAX];
  if (PYOP_SYS(dladdr)((const void *)pyop__artifacts_root, &info) && info.dli_fname &&
      info.dli_fname[0] && PYOP_SYS(realpath)(info.dli_fname, real)) {
    char *slash = strrchr(real, '/');
    if (slash) {
      *slash = '\0';
      int n = snprintf(found, sizeof found, "%s/pyop/artifacts", real);
      have = n > 0 && (size_t)n < sizeof found;
    }
  }
  pthread_mutex_lock(&root_lock);
  if (root_overridden) {
    r = root_override;
  } else {
    if (!root_default_known && have) {
      memcpy(root_default, found, strlen(found) + 1);
      root_default_known = true;
    }
    if (root_default_known) r = root_default;
  }
  bool unknown = !root_overridden && !root_default_known;
  pthread_mutex_unlock(&root_lock);
  /* Logged after unlocking: the host's log hook may be called. */
  if (unknown)
    PYOP_LOG_W("cannot locate libpyop itself (dladdr/realpath failed); no "
               "artifacts root");
  return r;
}

/* Around fork() (lifecycle.c): the child gets root_lock unlocked. */
void pyop__artifacts_fork_lock(void) { pthread_mutex_lock(&root_lock); }
void pyop__artifacts_fork_unlock(void) { pthread_mutex_unlock(&root_lock); }

/* Overrides the artifacts root (tests); NULL restores the default. */
void pyop__artifacts_set_root(const char *root) {
  pthread_mutex_lock(&root_lock);
  if (root) {
    snprintf(root_override, sizeof root_override, "%s", root);
    root_overridden = true;
  } else {
    root_overridden = false;
  }
  pthread_mutex_unlock(&root_lock);
}

/* ========================================================== candidates */

const char *pyop__cand_status_name(int status) {
  switch (status) {
    case PYOP__CAND_UNTRIED: return "untried";
    case PYOP__CAND_INVALID_PATH: return "invalid path";
    case PYOP__CAND_UNSAFE: return "unsafe";
    case PYOP__CAND_MANIFEST_INVALID: return "manifest invalid";
    case PYOP__CAND_MANIFEST_MISMATCH: return "manifest mismatch";
    case PYOP__CAND_DUPLICATE: return "duplicate";
    case PYOP__CAND_OPEN_FAILED: return "open failed";
    case PYOP__CAND_MISSING_SYMBOL: return "missing symbol";
    case PYOP__CAND_ABI_REJECTED: return "ABI rejected";
    case PYOP__CAND_CONFIG_REJECTED: return "config rejected";
    case PYOP__CAND_LOADED: return "loaded";
  }
  return "unknown";
}

void pyop__candidates_free(pyop__candidates *c) {
  if (!c) return;
  for (size_t i = 0; i < c->n; i++) {
    pyop__free(c->items[i].dir);
    pyop__free(c->items[i].bridge_path);
    pyop__free(c->items[i].reason);
    pyop__manifest_free(&c->items[i].manifest);
  }
  pyop__free(c->items);
  pyop__free(c->root);
  memset(c, 0, sizeof *c);
}

/* Appends a candidate for dir (taking ownership of dir); NULL when out of
 * memory (dir is freed then). */
static pyop__candidate *cand_push(pyop__candidates *c, size_t *cap, char *dir) {
  if (c->n == *cap) {
    size_t ncap = *cap ? *cap * 2 : 8;
    pyop__candidate *items = pyop__realloc(c->items, ncap * sizeof *items);
    if (!items) {
      pyop__free(dir);
      return NULL;
    }
    c->items = items;
    *cap = ncap;
  }
  pyop__candidate *it = &c->items[c->n++];
  memset(it, 0, sizeof *it);
  it->dir = dir;
  it->rank = -1;
  it->status = PYOP__CAND_UNTRIED;
  return it;
}

/* Marks a candidate rejected with the text of why (consumed). PYOP_OK or
 * PYOP_ENOMEM. */
static int cand_reject(pyop__candidate *it, int status, pyop__sb *why) {
  it->status = status;
  it->rank = -1;
  pyop__free(it->reason);
  it->reason = pyop__sb_take(why);
  if (!it->reason) return PYOP_ENOMEM;
  PYOP_LOG_D("bridge candidate %s: %s: %s", it->dir,
             pyop__cand_status_name(status), it->reason);
  return PYOP_OK;
}

/*
 * Whether manifest m serves the running key. Sets *rank (1 exact tag,
 * 2 stable ABI) or writes "built for ..., running ..." to why.
 */
static bool manifest_matches(const pyop__runtime_key *key,
                             const pyop__manifest *m, int *rank,
                             pyop__sb *why) {
  char plain[16];
  snprintf(plain, sizeof plain, "cp%u%u", key->major, key->minor);
  bool abi3 = strcmp(m->python_tag, "abi3") == 0;
  if (strcmp(m->platform, key->machine) != 0 ||
      (!abi3 && (strcmp(m->python_tag, plain) != 0 ||
                 strcmp(m->abi_flags, key->abi_flags) != 0))) {
    pyop__sb_printf(why, "built for %s%s-%s, running %s", m->python_tag,
                    m->abi_flags, m->platform, key->text);
    return false;
  }
  if (abi3 && (key->major != 3 || key->minor < m->min_python_minor)) {
    pyop__sb_printf(why, "built for abi3-%s (Python >= 3.%u), running %s",
                    m->platform, m->min_python_minor, key->text);
    return false;
  }
  if (abi3 && key->free_threaded) {
    pyop__sb_printf(why,
                    "built for abi3-%s, running %s: the stable ABI does not "
                    "cover free-threaded Python",
                    m->platform, key->text);
    return false;
  }
  if (m->abi_major != PYOP_BRIDGE_ABI_MAJOR) {
    pyop__sb_printf(why,
                    "built for bridge ABI %u.%u, this libpyop speaks %u.%u "
                    "(same major required)",
                    m->abi_major, m->abi_minor, PYOP_BRIDGE_ABI_MAJOR,
                    PYOP_BRIDGE_ABI_MINOR);
    return false;
  }
  *rank = abi3 ? 2 : 1;
  return true;
}

/*
 * Checks one artifact directory (st: its stat, or stat_err the errno of a
 * failed stat): a directory, a readable valid manifest, matching the key. Leaves it UNTRIED with a rank, or rejected with a
 * reason. PYOP_OK or PYOP_ENOMEM.
 */
static int cand_evaluate(pyop__candidate *it, const pyop__runtime_key *key,
                         bool override, const struct stat *st, int stat_err) {
  pyop__sb why = PYOP__SB_INIT;
  if (stat_err) {
    pyop__sb_printf(&why, "cannot stat: %s", strerror(stat_err));
    return cand_reject(it, PYOP__CAND_INVALID_PATH, &why);
  }
  if (!S_ISDIR(st->st_mode)) {
    pyop__sb_puts(&why, "not a directory");
    return cand_reject(it, PYOP__CAND_INVALID_PATH, &why);
  }
  int rc = pyop__manifest_read(it->dir, &it->manifest, &why);
  if (rc == PYOP_ENOMEM) {
    pyop__sb_free(&why);
    return PYOP_ENOMEM;
  }
  if (rc != PYOP_OK)
    return cand_reject(it,
                       rc == PYOP_ENOENT || rc == PYOP_EINVAL
                           ? PYOP__CAND_INVALID_PATH
                           : PYOP__CAND_MANIFEST_INVALID,
                       &why);
  int rank;
  if (!manifest_matches(key, &it->manifest, &rank, &why))
    return cand_reject(it, PYOP__CAND_MANIFEST_MISMATCH, &why);
  pyop__sb_free(&why);
  it->rank = override ? 0 : rank;
  return PYOP_OK;
}

/* Adds a pseudo-candidate naming a directory that could not be listed. */
static int add_unlisted(pyop__candidates *c, size_t *cap, const char *dir,
                        const char *what, int err) {
  char *d = pyop__strdup(dir);
  if (!d) return PYOP_ENOMEM;
  pyop__candidate *it = cand_push(c, cap, d);
  if (!it) return PYOP_ENOMEM;
  pyop__sb why = PYOP__SB_INIT;
  if (err)
    pyop__sb_printf(&why, "%s: %s", what, strerror(err));
  else
    pyop__sb_puts(&why, what);
  return cand_reject(it, PYOP__CAND_INVALID_PATH, &why);
}

static int cmp_names(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * Lists every subdirectory of root (names starting with '.' skipped) in
 * name order and evaluates each. An unreadable root becomes one
 * INVALID_PATH entry; a listing that fails halfway is dropped whole (a
 * partial listing would make the choice depend on the failure).
 */
static int scan_root(const char *root, const pyop__runtime_key *key,
                     pyop__candidates *c, size_t *cap) {
  if (root[0] != '/')
    return add_unlisted(c, cap, root,
                        "artifacts root unknown (libpyop cannot locate its "
                        "own file)",
                        0);
  DIR *d = PYOP_SYS(opendir)(root);
  if (!d) return add_unlisted(c, cap, root, "cannot open directory", errno);
  char **names = NULL;
  size_t n = 0, ncap = 0;
  int rc = PYOP_OK, read_err = 0;
  for (;;) {
    errno = 0;
    struct dirent *de = PYOP_SYS(readdir)(d);
    if (!de) {
      read_err = errno;
      break;
    }
    if (de->d_name[0] == '.') continue;
    if (n == ncap) {
      size_t nc = ncap ? ncap * 2 : 16;
      char **nn = pyop__realloc(names, nc * sizeof *nn);
      if (!nn) {
        rc = PYOP_ENOMEM;
        break;
      }
      names = nn;
      ncap = nc;
    }
    names[n] = pyop__strdup(de->d_name);
    if (!names[n]) {
      rc = PYOP_ENOMEM;
      break;
    }
    n++;
  }
  PYOP_SYS(closedir)(d);
  if (rc == PYOP_OK && read_err)
    rc = add_unlisted(c, cap, root, "cannot read directory", read_err);
  else if (rc == PYOP_OK && n > 1)
    qsort(names, n, sizeof *names, cmp_names);
  for (size_t i = 0; rc == PYOP_OK && !read_err && i < n; i++) {
    char *path = path_join(root, names[i]);
    if (!path) {
      rc = PYOP_ENOMEM;
      break;
    }
    struct stat st;
    int err = PYOP_SYS(stat)(path, &st) == 0 ? 0 : errno;
    if (!err && !S_ISDIR(st.st_mode)) {
      PYOP_LOG_D("%s: not a directory, skipped", path);
      pyop__free(path);
      continue;
    }
    pyop__candidate *it = cand_push(c, cap, path);
    if (!it) {
      rc = PYOP_ENOMEM;
      break;
    }
    rc = cand_evaluate(it, key, false, &st, err);
  }
  for (size_t i = 0; i < n; i++) pyop__free(names[i]);
  pyop__free(names);
  return rc;
}

/* Order: matching (UNTRIED) by rank then directory, then the rejected ones
 * in enumeration order. */
static bool cand_before(const pyop__candidate *a, const pyop__candidate *b) {
  bool am = a->status == PYOP__CAND_UNTRIED, bm = b->status == PYOP__CAND_UNTRIED;
  if (am != bm) return am;
  if (!am) return false;
  if (a->rank != b->rank) return a->rank < b->rank;
  return strcmp(a->dir, b->dir) < 0;
}

/* Stable insertion sort: candidate lists are short. */
static void cand_sort(pyop__candidates *c) {
  for (size_t i = 1; i < c->n; i++) {
    pyop__candidate tmp = c->items[i];
    size_t j = i;
    while (j > 0 && cand_before(&tmp, &c->items[j - 1])) {
      c->items[j] = c->items[j - 1];
      j--;
    }
    c->items[j] = tmp;
  }
}

/*
 * Enumerates, evaluates and orders the candidates (see header). Only the
 * manifests are read; no bridge is opened here.
 */
int pyop__candidates_find(const pyop__runtime_key *key, pyop__candidates *out) {
  memset(out, 0, sizeof *out);
  size_t cap = 0;
  int rc;
  snprintf(out->key_text, sizeof out->key_text, "%s", key->text);
  const char *root = pyop__artifacts_root();
  out->root = pyop__strdup(root);
  if (!out->root) goto nomem;

  const char *ov = pyop__getenv(PYOP__OVERRIDE_VAR);
  if (ov && ov[0]) {
    char *d = pyop__strdup(ov);
    if (!d) goto nomem;
    pyop__candidate *it = cand_push(out, &cap, d);
    if (!it) goto nomem;
    if (ov[0] != '/') {
      pyop__sb why = PYOP__SB_INIT;
      pyop__sb_puts(&why, PYOP__OVERRIDE_VAR " is a relative path: refused "
                          "(libpyop never resolves paths against the current "
                          "directory)");
      if (cand_reject(it, PYOP__CAND_INVALID_PATH, &why) != PYOP_OK) goto nomem;
    } else {
      struct stat st;
      int err = PYOP_SYS(stat)(ov, &st) == 0 ? 0 : errno;
      if (cand_evaluate(it, key, true, &st, err) != PYOP_OK) goto nomem;
    }
  }
  rc = scan_root(out->root, key, out, &cap);
  if (rc != PYOP_OK) goto nomem;
  cand_sort(out);
  return PYOP_OK;

nomem:
  pyop__candidates_free(out);
  return pyop__error(PYOP_ENOMEM, "finding bridge candidates: out of memory");
}

/* "  <dir>: <status>[: <reason>]\n" for every candidate. */
void pyop__candidates_report(const pyop__candidates *c, pyop__sb *sb) {
  for (size_t i = 0; i < c->n; i++) {
    const pyop__candidate *it = &c->items[i];
    static const char *const rank_names[] = {"override directory", "exact tag",
                                             "stable ABI"};
    /* A matching candidate not tried yet says why it would be tried. */
    if (it->status == PYOP__CAND_UNTRIED && !it->reason && it->rank >= 0 &&
        it->rank <= 2) {
      pyop__sb_printf(sb, "  %s: untried: manifest matches (%s)\n", it->dir,
                      rank_names[it->rank]);
      continue;
    }
    pyop__sb_printf(sb, "  %s: %s%s%s\n", it->dir,
                    pyop__cand_status_name(it->status), it->reason ? ": " : "",
                    it->reason ? it->reason : "");
  }
}

/* ===================================================== security policy */

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
