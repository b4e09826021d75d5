/*
 * Bridge candidates: the artifacts root, the enumeration of its artifact
 * directories (and the PYOP_BRIDGE_DIR override), each manifest matched
 * against the runtime key before anything is opened, the ranking and the
 * report (docs/design.md §Candidates).
 */
#include "candidates.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pyop/bridge_abi.h"

#define PYOP__OVERRIDE_VAR "PYOP_BRIDGE_DIR"

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

/* Around fork() (fork.c): the child gets root_lock unlocked. */
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

/* candidates.h: from PYOP__CAND_STATUS_MAP. */
const char *pyop__cand_status_name(int status) {
  static const char *const names[] = {
#define PYOP__CAND_NAME(name, value, text) [value] = text,
      PYOP__CAND_STATUS_MAP(PYOP__CAND_NAME)
#undef PYOP__CAND_NAME
  };
  if (status < 0 || (size_t)status >= PYOP__ARRAY_LEN(names) || !names[status])
    return "unknown";
  return names[status];
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
 * failed stat): a directory, a readable valid manifest, matching the key
 * (any manifest when key is NULL: the listing of pyop__artifacts_list).
 * Leaves it UNTRIED with a rank, or rejected with a reason. PYOP_OK or
 * PYOP_ENOMEM.
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
  int rank = 1;
  if (key && !manifest_matches(key, &it->manifest, &rank, &why))
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
 * name order and evaluates each against key (NULL: none). An unreadable root becomes one
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
    char *path = pyop__path_join(root, names[i]);
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

/*
 * Every artifact directory of the root in name order (not the
 * PYOP_BRIDGE_DIR override), each manifest read but matched against no
 * key: a valid one is UNTRIED, the others rejected with their reason.
 * Returns PYOP_OK or PYOP_ENOMEM (out freed).
 */
int pyop__artifacts_list(pyop__candidates *out) {
  memset(out, 0, sizeof *out);
  size_t cap = 0;
  out->root = pyop__strdup(pyop__artifacts_root());
  if (out->root && scan_root(out->root, NULL, out, &cap) == PYOP_OK) return PYOP_OK;
  pyop__candidates_free(out);
  return pyop__error(PYOP_ENOMEM, "listing the bridge artifacts: out of memory");
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
