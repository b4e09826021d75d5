/*
 * The artifact manifest: its parser and the reading of <dir>/manifest.txt
 * through the OS seam (docs/design.md §Candidates).
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
 *   python_version_hex=0x30c01f0  optional: sys.hexversion of the Python the
 *                          bridge was built with (the one start_python
 *                          starts), "0x" and 1 to 8 hex digits
 * Unknown keys are ignored (forward compatible), any key given twice is
 * refused, as are lines longer than 1024 bytes, files larger than
 * PYOP__MANIFEST_MAX, NUL bytes and control characters.
 *
 * The bridge path is checked again after symlinks are resolved (see
 * bridge_loader.c): the resolved file must still be inside the resolved
 * artifact directory.
 */
#include "manifest.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <unistd.h>

#include "trust.h"

#define PYOP__MANIFEST_LINE_MAX 1024

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
  MK_PYTHON_VERSION_HEX,
  MK_COUNT
};

static const char *const mkey_names[MK_COUNT] = {
    "format",           "python_tag",       "abi_flags",  "platform",
    "bridge",           "bridge_abi_major", "bridge_abi_minor",
    "min_python",       "libpython",        "python_dir", "build_info",
    "python_version_hex"};

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

/* "0x" and 1 to 8 hex digits (a PY_VERSION_HEX value), nonzero. */
static bool parse_hexversion(mview v, unsigned long *out) {
  if (v.n < 3 || v.n > 10 || v.p[0] != '0' || (v.p[1] != 'x' && v.p[1] != 'X')) return false;
  unsigned long n = 0;
  for (size_t i = 2; i < v.n; i++) {
    char c = v.p[i];
    unsigned d = c >= '0' && c <= '9'   ? (unsigned)(c - '0')
                 : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10)
                 : c >= 'A' && c <= 'F' ? (unsigned)(c - 'A' + 10)
                                        : 16u;
    if (d == 16u) return false;
    n = n * 16 + d;
  }
  if (n == 0) return false;
  *out = n;
  return true;
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

/* The known keys of one manifest as found: vals[k] the trimmed value of
 * key k, at[k] its line (0: absent). */
typedef struct mf_keys {
  mview vals[MK_COUNT];
  unsigned at[MK_COUNT];
} mf_keys;

/* Stage 1: the text as a whole: no NULL text, at most PYOP__MANIFEST_MAX
 * bytes, no NUL byte. */
static int mf_check_text(const char *text, size_t len, pyop__sb *why) {
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
  return PYOP_OK;
}

/* Stage 2: every line: its length, key=value form, key characters, no
 * control character in a value, no key twice; the known keys go to *k. */
static int mf_collect(const char *text, size_t len, mf_keys *k, pyop__sb *why) {
  memset(k->at, 0, sizeof k->at);
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
    for (int m = 0; m < MK_COUNT; m++)
      if (view_eq(key, mkey_names[m])) id = m;
    if (id >= 0) {
      if (k->at[id])
        return mf_fail(why, "line %u: duplicate key %s (first on line %u)",
                       lineno, mkey_names[id], k->at[id]);
      k->at[id] = lineno;
      k->vals[id] = value;
    } else if (key_seen_before(text, start, key)) {
      return mf_fail(why, "line %u: duplicate key %.*s", lineno, VIEW_FMT(key));
    }
  }
  return PYOP_OK;
}

/* The abi_flags value: "" when the key is absent. */
static mview mf_abi_flags(const mf_keys *k) {
  mview none = {"", 0};
  return k->at[MK_ABI_FLAGS] ? k->vals[MK_ABI_FLAGS] : none;
}

/* Stage 3: the format first (another format may mean other keys), the
 * required keys, then each value; the numbers go to out. */
static int mf_check_values(const mf_keys *k, pyop__manifest *out, pyop__sb *why) {
  const mview *vals = k->vals;
  const unsigned *at = k->at;
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
  if (at[MK_ABI_FLAGS]) {
    mview flags = mf_abi_flags(k);
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
  if (at[MK_LIBPYTHON] && vals[MK_LIBPYTHON].n &&
      (vals[MK_LIBPYTHON].p[0] != '/' || vals[MK_LIBPYTHON].n >= PATH_MAX))
    return mf_fail(why, "line %u: libpython: \"%.*s\" is not an absolute path",
                   at[MK_LIBPYTHON], VIEW_FMT(vals[MK_LIBPYTHON]));
  if (at[MK_PYTHON_VERSION_HEX] &&
      !parse_hexversion(vals[MK_PYTHON_VERSION_HEX], &out->python_version_hex))
    return mf_fail(why, "line %u: python_version_hex: \"%.*s\" is not 0x and 1 to 8 hex digits",
                   at[MK_PYTHON_VERSION_HEX], VIEW_FMT(vals[MK_PYTHON_VERSION_HEX]));
  if (at[MK_PYTHON_DIR] && vals[MK_PYTHON_DIR].n &&
      !valid_inside_path(vals[MK_PYTHON_DIR]))
    return mf_fail(why,
                   "line %u: python_dir: \"%.*s\" must be a relative path "
                   "inside the artifact directory",
                   at[MK_PYTHON_DIR], VIEW_FMT(vals[MK_PYTHON_DIR]));
  return PYOP_OK;
}

/* Stage 4: the strings of a checked manifest into out (an empty libpython
 * or python_dir is absent). PYOP_OK, or PYOP_ENOMEM with out freed. */
static int mf_copy(const mf_keys *k, pyop__manifest *out, pyop__sb *why) {
  const mview *vals = k->vals;
  const unsigned *at = k->at;
  bool has_libpython = at[MK_LIBPYTHON] && vals[MK_LIBPYTHON].n;
  bool has_python_dir = at[MK_PYTHON_DIR] && vals[MK_PYTHON_DIR].n;
  if (!copy_view(&out->python_tag, vals[MK_PYTHON_TAG]) ||
      !copy_view(&out->abi_flags, mf_abi_flags(k)) ||
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

/*
 * Parses text[0..len) into *out (zeroed first), in four stages: the text,
 * its lines, the values, the copy. PYOP_OK; PYOP_EDESCRIPTOR with "line N:
 * ..." or "missing required key ..." in why; PYOP_ENOMEM. Reads only
 * text[0..len); *out holds nothing after a failure.
 */
int pyop__manifest_parse(const char *text, size_t len, pyop__manifest *out,
                         pyop__sb *why) {
  memset(out, 0, sizeof *out);
  mf_keys k;
  int rc = mf_check_text(text, len, why);
  if (rc == PYOP_OK) rc = mf_collect(text, len, &k, why);
  if (rc == PYOP_OK) rc = mf_check_values(&k, out, why);
  if (rc == PYOP_OK) rc = mf_copy(&k, out, why);
  return rc;
}

/*
 * Stage 1 of reading: opens <dir>/manifest.txt (O_NONBLOCK: a FIFO or a
 * device in its place must not block the open, and with it every lifecycle
 * call) and checks the opened file: regular, at most PYOP__MANIFEST_MAX
 * bytes. PYOP_OK with *fd open; else the status with the reason in why.
 */
static int mf_open(const char *path, int *fd, pyop__sb *why) {
  *fd = PYOP_SYS(open)(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (*fd < 0) {
    int e = errno;
    bool missing = e == ENOENT || e == ENOTDIR;
    pyop__sb_printf(why, "%s " PYOP__MANIFEST_NAME ": %s", missing ? "no" : "cannot open",
                    strerror(e));
    return missing ? PYOP_ENOENT : PYOP_EIO;
  }
  struct stat st;
  if (PYOP_SYS(fstat)(*fd, &st) != 0) {
    int e = errno;
    pyop__sb_printf(why, PYOP__MANIFEST_NAME ": fstat: %s", strerror(e));
    return PYOP_EIO;
  }
  if (!S_ISREG(st.st_mode)) {
    pyop__sb_printf(why, PYOP__MANIFEST_NAME ": not a regular file (%s)",
                    pyop__file_kind(st.st_mode));
    return PYOP_EIO;
  }
  if (st.st_size > PYOP__MANIFEST_MAX) {
    pyop__sb_printf(why, PYOP__MANIFEST_NAME ": %lld bytes, more than the %d allowed",
                    (long long)st.st_size, PYOP__MANIFEST_MAX);
    return PYOP_EDESCRIPTOR;
  }
  return PYOP_OK;
}

/*
 * Stage 2: reads fd whole into buf (PYOP__MANIFEST_MAX + 1 bytes), one byte
 * more than allowed to notice a file that grew since the fstat. PYOP_OK
 * with the length in *total; else the status with the reason in why.
 */
static int mf_read_all(int fd, char *buf, size_t *total, pyop__sb *why) {
  *total = 0;
  while (*total <= PYOP__MANIFEST_MAX) {
    ssize_t n = PYOP_SYS(read)(fd, buf + *total, PYOP__MANIFEST_MAX + 1 - *total);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int e = errno;
      pyop__sb_printf(why, PYOP__MANIFEST_NAME ": read: %s", strerror(e));
      return PYOP_EIO;
    }
    if (n == 0) break;
    *total += (size_t)n;
  }
  if (*total > PYOP__MANIFEST_MAX) {
    pyop__sb_printf(why, PYOP__MANIFEST_NAME ": more than the %d bytes allowed",
                    PYOP__MANIFEST_MAX);
    return PYOP_EDESCRIPTOR;
  }
  return PYOP_OK;
}

/*
 * Reads <dir>/manifest.txt through the seam and parses it (see header):
 * open and check, read, parse.
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
  char *path = pyop__path_join(dir, PYOP__MANIFEST_NAME);
  if (!path) {
    pyop__sb_puts(why, "out of memory");
    return PYOP_ENOMEM;
  }
  int fd = -1;
  char *buf = NULL;
  size_t total = 0;
  int rc = mf_open(path, &fd, why);
  if (rc == PYOP_OK) {
    buf = pyop__malloc(PYOP__MANIFEST_MAX + 1);
    if (!buf) {
      pyop__sb_puts(why, "out of memory");
      rc = PYOP_ENOMEM;
    }
  }
  if (rc == PYOP_OK) rc = mf_read_all(fd, buf, &total, why);
  if (rc == PYOP_OK) {
    pyop__sb inner = PYOP__SB_INIT;
    rc = pyop__manifest_parse(buf, total, out, &inner);
    if (rc != PYOP_OK) pyop__sb_printf(why, PYOP__MANIFEST_NAME ": %s", pyop__sb_str(&inner));
    pyop__sb_free(&inner);
  }
  if (fd >= 0) PYOP_SYS(close)(fd);
  pyop__free(buf);
  pyop__free(path);
  return rc;
}
