/*
 * Which Python start_python starts: the choice among this libpyop's
 * bridges, from their manifests (the rule: start_python.h), and the
 * runtime a load uses, started first when asked.
 */
#include "start_python.h"

#include <stdlib.h>
#include <string.h>

#include "trust.h"

#include "build_facts.h"
#include "candidates.h"
#include "lanes_floor.h"
#include "pyop/bridge_abi.h"

#ifndef PYOP_DEFAULT_ARTIFACT
#define PYOP_DEFAULT_ARTIFACT ""
#endif

/* The lowest bridge ABI minor whose bridges run lanes (bridge_abi.h 1.6). */
#define LANES_ABI_MINOR 6u

bool pyop__start_key_valid(const char *key) {
  size_t n = key ? strlen(key) : 0;
  if (n == 0 || n > 63 || key[0] == '.') return false;
  for (size_t i = 0; i < n; i++) {
    char c = key[i];
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '.' || c == '-';
    if (!ok) return false;
  }
  return true;
}

void pyop__start_choice_free(pyop__start_choice *c) {
  if (!c) return;
  pyop__free(c->key);
  pyop__free(c->libpython);
  pyop__free(c->note);
  memset(c, 0, sizeof *c);
}

/* The CPython version of manifest m's tag ("cp312": 3.12); false for a
 * tag that names none ("abi3"). */
static bool tag_version(const pyop__manifest *m, unsigned *major, unsigned *minor) {
  const char *t = m->python_tag;
  if (strncmp(t, "cp", 2) != 0 || t[2] < '1' || t[2] > '9' || t[3] < '0' || t[3] > '9')
    return false;
  char *end = NULL;
  unsigned long v = strtoul(t + 3, &end, 10);
  if (*end != '\0' || v > 99) return false;
  *major = (unsigned)(t[2] - '0');
  *minor = (unsigned)v;
  return true;
}

/* Whether the Python of the artifact with manifest m can run lanes; when
 * it cannot, the reason is appended to why. */
static bool lanes_fit(const pyop__manifest *m, pyop__sb *why) {
  unsigned major = 0, minor = 0;
  if (!tag_version(m, &major, &minor)) {
    pyop__sb_printf(why, "built for %s, no one CPython version", m->python_tag);
    return false;
  }
  if (major < 3 || (major == 3 && minor < 12)) {
    pyop__sb_printf(why, "Python %u.%u has no per-interpreter GIL", major, minor);
    return false;
  }
  unsigned long v = m->python_version_hex;
  if (pyop__lanes_unsafe_end(v)) {
    pyop__sb_printf(why, "CPython %lu.%lu.%lu cannot end a sub-interpreter safely (CPython "
                         "gh-119213): lanes need CPython 3.12.4 or later",
                    (v >> 24) & 0xff, (v >> 16) & 0xff, (v >> 8) & 0xff);
    return false;
  }
  if (strchr(m->abi_flags, 't')) {
    pyop__sb_printf(why, "Python %u.%ut is free-threaded: its threads run Python in "
                         "parallel without lanes", major, minor);
    return false;
  }
  if (!m->libpython || !m->libpython[0]) {
    pyop__sb_puts(why, "its Python has no shared libpython to start");
    return false;
  }
  if (m->abi_major != PYOP_BRIDGE_ABI_MAJOR || m->abi_minor < LANES_ABI_MINOR) {
    pyop__sb_printf(why, "its bridge speaks ABI %u.%u, lanes need %u.%u", m->abi_major,
                    m->abi_minor, PYOP_BRIDGE_ABI_MAJOR, LANES_ABI_MINOR);
    return false;
  }
  return true;
}

/* A candidate's artifact name: the last component of its directory. */
static const char *art_name(const pyop__candidate *it) {
  const char *slash = strrchr(it->dir, '/');
  return slash ? slash + 1 : it->dir;
}

/* The position of name in the ';'-list order, or SIZE_MAX when absent. */
static size_t order_rank(const char *order, const char *name) {
  size_t len = strlen(name), k = 0;
  for (const char *p = order; *p; k++) {
    const char *end = strchr(p, ';');
    size_t n = end ? (size_t)(end - p) : strlen(p);
    if (n == len && strncmp(p, name, n) == 0) return k;
    if (!end) break;
    p = end + 1;
  }
  return SIZE_MAX;
}

/* The valid artifacts of list, in the build's order then by name (a new
 * array the caller frees; NULL when out of memory or none). */
static const pyop__candidate **sorted_valid(const pyop__candidates *list, const char *order,
                                            size_t *n_out) {
  *n_out = 0;
  const pyop__candidate **v = pyop__calloc(list->n ? list->n : 1, sizeof *v);
  if (!v) return NULL;
  size_t n = 0;
  for (size_t i = 0; i < list->n; i++) {
    if (list->items[i].status != PYOP__CAND_UNTRIED) continue;
    const pyop__candidate *it = &list->items[i];
    size_t j = n++;
    size_t r = order_rank(order, art_name(it));
    while (j > 0) {
      size_t rp = order_rank(order, art_name(v[j - 1]));
      if (rp < r || (rp == r && strcmp(art_name(v[j - 1]), art_name(it)) <= 0)) break;
      v[j] = v[j - 1];
      j--;
    }
    v[j] = it;
  }
  *n_out = n;
  return v;
}

static const pyop__candidate *find_named(const pyop__candidate **v, size_t n,
                                         const char *name) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(art_name(v[i]), name) == 0) return v[i];
  return NULL;
}

/* "cp311-x86_64 (Python 3.11 has no per-interpreter GIL), cp312-x86_64
 * (runs lanes)", or "none". */
static void describe_bridges(const pyop__candidate **v, size_t n, pyop__sb *sb) {
  if (n == 0) pyop__sb_puts(sb, "none");
  for (size_t i = 0; i < n; i++) {
    pyop__sb_printf(sb, "%s%s (", i ? ", " : "", art_name(v[i]));
    if (lanes_fit(&v[i]->manifest, sb)) pyop__sb_puts(sb, "runs lanes");
    pyop__sb_puts(sb, ")");
  }
}

/* Appends the fix when no bridge of this libpyop can run lanes. */
static void lanes_fix(const char *pythons, pyop__sb *sb) {
  pyop__sb_puts(sb, "; to run lanes build a bridge for CPython 3.12 or later (not "
                    "free-threaded): add it to -DPYOP_PYTHONS");
  if (pythons[0])
    pyop__sb_printf(sb, " (this libpyop was built with -DPYOP_PYTHONS=\"%s\"), e.g. "
                        "-DPYOP_PYTHONS=\"%s;/path/to/python3.12\"",
                    pythons, pythons);
  pyop__sb_puts(sb, ", rebuild and reinstall (docs/host-guide.md, \"Python ops in "
                    "parallel\")");
}

/* The first artifact of v whose Python runs lanes, or NULL. */
static const pyop__candidate *first_fit(const pyop__candidate **v, size_t n) {
  pyop__sb scratch = PYOP__SB_INIT;
  const pyop__candidate *fit = NULL;
  for (size_t i = 0; i < n && !fit; i++)
    if (lanes_fit(&v[i]->manifest, &scratch)) fit = v[i];
  pyop__sb_free(&scratch);
  return fit;
}

/*
 * The note when lanes are asked for: an info line when the default was
 * passed over for it, a warning when the chosen one cannot run them.
 */
static void lanes_note(const pyop__candidate **v, size_t n, const pyop__candidate *it,
                       const pyop__candidate *passed, const char *asked, uint32_t lanes,
                       const char *pythons, pyop__start_choice *out) {
  pyop__sb note = PYOP__SB_INIT, why = PYOP__SB_INIT;
  if (passed) {
    (void)lanes_fit(&passed->manifest, &why);
    pyop__sb_printf(&note, "start_python: lanes asked for (%u): starting %s instead of the "
                           "build's default %s (%s)",
                    lanes, art_name(it), art_name(passed), pyop__sb_str(&why));
  } else if (!lanes_fit(&it->manifest, &why)) {
    out->note_warns = true;
    if (asked)
      pyop__sb_printf(&note, "lanes: %u asked for, but start_python_key %s cannot run them",
                      lanes, asked);
    else
      pyop__sb_printf(&note, "lanes: %u asked for, but start_python starts %s, the build's "
                             "default, which cannot run them", lanes, art_name(it));
    pyop__sb_printf(&note, " (%s): %s; the bridges of this libpyop: ", pyop__sb_str(&why),
                    strchr(it->manifest.abi_flags, 't')
                        ? "the Python ops run in the main interpreter, those of different "
                          "op instances in parallel"
                        : "every Python op runs serially in the main interpreter");
    describe_bridges(v, n, &note);
    const pyop__candidate *fit = first_fit(v, n);
    if (fit)
      pyop__sb_printf(&note, "; set pyop_options.start_python_key = \"%s\" to run lanes",
                      art_name(fit));
    else
      lanes_fix(pythons, &note);
  }
  pyop__sb_free(&why);
  if (note.len) out->note = pyop__sb_take(&note); /* NULL when out of memory: no note */
  pyop__sb_free(&note);
}

/* The ENOPYTHON error naming what start_python cannot start and the
 * bridges there are. */
static int nothing_to_start(const pyop__candidates *list, const pyop__candidate **v, size_t n,
                            const char *what, const char *name) {
  pyop__sb sb = PYOP__SB_INIT;
  pyop__sb_printf(&sb, "pyop_load: cannot start Python: %s %s ", what, name);
  const pyop__candidate *bad = NULL;
  for (size_t i = 0; i < list->n && !bad; i++)
    if (strcmp(art_name(&list->items[i]), name) == 0) bad = &list->items[i];
  if (bad)
    pyop__sb_printf(&sb, "in %s is not usable: %s", list->root,
                    bad->reason ? bad->reason : pyop__cand_status_name(bad->status));
  else
    pyop__sb_printf(&sb, "is not among this libpyop's bridges in %s", list->root);
  pyop__sb_puts(&sb, " (the bridges there: ");
  describe_bridges(v, n, &sb);
  pyop__sb_puts(&sb, ")");
  int rc = sb.oom ? pyop__error(PYOP_ENOMEM, "pyop_load: out of memory")
                  : pyop__error(PYOP_ENOPYTHON, "%s", pyop__sb_str(&sb));
  pyop__sb_free(&sb);
  return rc;
}

int pyop__start_choose_with(const char *default_key, const char *order, const char *pythons,
                            const char *asked, uint32_t lanes, pyop__start_choice *out) {
  memset(out, 0, sizeof *out);
  if (asked && !asked[0]) asked = NULL;
  if (!asked && !default_key[0])
    return pyop__error(PYOP_ENOPYTHON, "pyop_load: no Python in the process and this libpyop "
                                       "was built without a default Python to start");
  pyop__candidates list;
  int rc = pyop__artifacts_list(&list);
  if (rc != PYOP_OK) return rc;
  size_t n = 0;
  const pyop__candidate **v = sorted_valid(&list, order, &n);
  if (!v) {
    pyop__candidates_free(&list);
    return pyop__error(PYOP_ENOMEM, "pyop_load: out of memory");
  }
  pyop__sb scratch = PYOP__SB_INIT;
  const char *want = asked ? asked : default_key;
  const pyop__candidate *it = find_named(v, n, want), *passed = NULL;
  if (!it) {
    rc = nothing_to_start(&list, v, n, asked ? "start_python_key" : "the build's default",
                          want);
    goto out;
  }
  if (!asked && lanes > 0 && !lanes_fit(&it->manifest, &scratch)) {
    const pyop__candidate *fit = first_fit(v, n);
    if (fit) {
      passed = it;
      it = fit;
    }
  }
  if (!it->manifest.libpython || !it->manifest.libpython[0]) {
    rc = pyop__error(PYOP_ENOPYTHON,
                     "pyop_load: cannot start Python: %s/" PYOP__MANIFEST_NAME
                     " records no libpython (the bridge's Python has no shared library)",
                     it->dir);
    goto out;
  }
  out->key = pyop__strdup(art_name(it));
  out->libpython = pyop__strdup(it->manifest.libpython);
  if (!out->key || !out->libpython) {
    rc = pyop__error(PYOP_ENOMEM, "pyop_load: out of memory");
    goto out;
  }
  if (lanes > 0) lanes_note(v, n, it, passed, asked, lanes, pythons, out);
out:
  pyop__sb_free(&scratch);
  if (rc != PYOP_OK) pyop__start_choice_free(out);
  pyop__free(v);
  pyop__candidates_free(&list);
  return rc;
}

bool pyop__build_has_artifact(const char *key) {
  return order_rank(PYOP_BUILD_ARTIFACTS, key) != SIZE_MAX;
}

int pyop__start_choose(const char *asked, uint32_t lanes, pyop__start_choice *out) {
  return pyop__start_choose_with(PYOP_DEFAULT_ARTIFACT, PYOP_BUILD_ARTIFACTS,
                                 PYOP_BUILD_PYTHONS, asked, lanes, out);
}

/* ------------------------------------------------- the load's runtime */

/* The libpython dlopened for start_python; kept open for the life of the
 * process (an interpreter cannot be unloaded safely). */
static void *started_libpython;

/*
 * Opt-in start-up for hosts without Python: chooses which of this
 * libpyop's bridges' Pythons to start (start_python.h: the key asked for,
 * the build's default, or one that runs the lanes asked for), logs what the
 * choice says, then dlopens, RTLD_GLOBAL, the libpython its manifest
 * records, after the same file checks as a bridge. The library stays loaded
 * for the life of the process (an interpreter cannot be unloaded safely).
 */
static int load_start_libpython(const pyop_options *opt) {
  if (started_libpython) return PYOP_OK;
  pyop__start_choice ch;
  int rc = pyop__start_choose(opt->start_python_key, opt->lanes, &ch);
  if (rc != PYOP_OK) return rc;
  if (ch.note && ch.note_warns)
    PYOP_LOG_W("%s", ch.note);
  else if (ch.note)
    PYOP_LOG_I("%s", ch.note);
  pyop__sb why = PYOP__SB_INIT;
  int fd = -1;
  char *resolved = NULL;
  struct stat st;
  rc = pyop__open_trusted(ch.libpython, &fd, &resolved, &st, &why);
  if (rc == PYOP_OK) {
    /* A libpython that cannot be opened, or was swapped, cannot start Python. */
    if (pyop__dlopen_trusted(fd, resolved, &st, RTLD_NOW | RTLD_GLOBAL, &started_libpython,
                             &why) != PYOP_OK)
      rc = PYOP_ENOPYTHON;
    PYOP_SYS(close)(fd);
    pyop__free(resolved);
  }
  if (rc != PYOP_OK)
    rc = pyop__error(rc == PYOP_ESECURITY ? rc : PYOP_ENOPYTHON,
                     "pyop_load: cannot start Python from %s (bridge %s): %s", ch.libpython,
                     ch.key, pyop__sb_str(&why));
  else
    PYOP_LOG_I("loaded %s to start Python %s (start_python option)", ch.libpython, ch.key);
  pyop__start_choice_free(&ch);
  pyop__sb_free(&why);
  return rc;
}

int pyop__start_runtime(const pyop_options *opt, pyop__runtime_key *key) {
  /* With start_python a missing Python is expected, not a failure: probed
   * first so its message never replaces the thread's last error. */
  bool present = opt->start_python && pyop__runtime_python_present();
  if (opt->start_python && !present) {
    int rc = load_start_libpython(opt);
    if (rc != PYOP_OK) return rc;
  }
  int rc = pyop__runtime_key_resolve(key);
  if (rc != PYOP_OK) return pyop__error_prefix(rc, "pyop_load");
  if (opt->start_python && present && opt->start_python_key &&
      strcmp(opt->start_python_key, key->text) != 0)
    PYOP_LOG_W("start_python_key %s not used: Python %s is already in the process (%s), so "
               "start_python starts no other",
               opt->start_python_key, key->text,
               key->initialized ? "running" : "linked, not initialised");
  if (!key->initialized && !opt->start_python)
    return pyop__error(PYOP_ENOTINIT,
                       "pyop_load: Python %u.%u (%s) is in the process but not "
                       "initialised; initialise it before loading, or set "
                       "pyop_options.start_python to let libpyop start it",
                       key->major, key->minor, key->text);
  return PYOP_OK;
}
