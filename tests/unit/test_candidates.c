/*
 * Bridge candidates (src/candidates.c): enumeration, the override, matching
 * against the runtime key, ranking, the report, the artifacts root.
 */
#define PYOP__STR(x) #x
#define PYOP__XSTR(x) PYOP__STR(x)
#include "testutil.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "../fake_bridge/fake_bridge_util.h"
#include "candidates.h"
#include "pyop/bridge_abi.h"

/* ========================================================= candidates */

static pyop__runtime_key key; /* what the fake bridges were built for */

/* Writes a manifest for tag/flags/platform/major into root/name. */
static char *make_dir(const char *root, const char *name, const char *tag,
                      const char *flags, const char *platform, unsigned major,
                      const char *extra) {
  char *dir = fb_join(root, name);
  assert_int_equal(mkdir(dir, 0755), 0);
  char text[1024];
  snprintf(text, sizeof text,
           "format=1\npython_tag=%s\nabi_flags=%s\nplatform=%s\n"
           "bridge=libpyop_bridge.so\nbridge_abi_major=%u\nbridge_abi_minor=0\n%s",
           tag, flags, platform, major, extra ? extra : "");
  char *mf = fb_join(dir, "manifest.txt");
  pt_write_file(mf, text);
  free(mf);
  return dir;
}

static const pyop__candidate *find_dir(const pyop__candidates *c, const char *dir) {
  for (size_t i = 0; i < c->n; i++)
    if (strcmp(c->items[i].dir, dir) == 0) return &c->items[i];
  fail_msg("no candidate %s", dir);
  return NULL;
}

static void expect(const pyop__candidates *c, size_t i, const char *dir,
                   int status, int rank, const char *reason) {
  assert_true(i < c->n);
  const pyop__candidate *it = &c->items[i];
  if (strcmp(it->dir, dir) != 0) fail_msg("candidate %zu is %s, want %s", i, it->dir, dir);
  assert_int_equal(it->status, status);
  if (status == PYOP__CAND_UNTRIED) assert_int_equal(it->rank, rank);
  if (reason) {
    assert_non_null(it->reason);
    assert_string_equal(it->reason, reason);
  } else {
    assert_null(it->reason);
  }
}

typedef struct order_fixture {
  char *root, *override;
} order_fixture;

/*
 * root/
 *   aaa-abi3 (abi3 >= 3.8)   abi3-<m> (abi3 >= 3.10)   <tag>-<m> (exact)
 *   zz-dup -> <tag>-<m>      broken (bad manifest)      <other>-<m> (mismatch)
 *   empty (no manifest)      README (file: skipped)    .hidden (skipped)
 * override/ (exact)
 */
static void make_order_fixture(order_fixture *f) {
  char exact[64], other[64], abi3[64];
  snprintf(exact, sizeof exact, "%s-%s", key.tag, key.machine);
  snprintf(other, sizeof other, "cp3%u-%s", key.minor + 1, key.machine);
  snprintf(abi3, sizeof abi3, "abi3-%s", key.machine);
  char othertag[16];
  snprintf(othertag, sizeof othertag, "cp3%u", key.minor + 1);
  f->root = pt_mkdtemp();
  free(make_dir(f->root, "aaa-abi3", "abi3", "", key.machine, 1, "min_python=3.8\n"));
  free(make_dir(f->root, abi3, "abi3", "", key.machine, 1, "min_python=3.10\n"));
  free(make_dir(f->root, exact, key.tag, "", key.machine, 1, NULL));
  free(make_dir(f->root, other, othertag, "", key.machine, 1, NULL));
  free(make_dir(f->root, ".hidden", key.tag, "", key.machine, 1, NULL));
  char *broken = make_dir(f->root, "broken", key.tag, "", key.machine, 1, NULL);
  char *mf = fb_join(broken, "manifest.txt");
  pt_write_file(mf, "format=1\npython_tag\n");
  free(mf);
  free(broken);
  char *empty = fb_join(f->root, "empty");
  assert_int_equal(mkdir(empty, 0755), 0);
  free(empty);
  char *readme = fb_join(f->root, "README");
  pt_write_file(readme, "not an artifact\n");
  free(readme);
  char *dup = fb_join(f->root, "zz-dup");
  assert_int_equal(symlink(exact, dup), 0);
  free(dup);
  char *ovroot = pt_mkdtemp();
  f->override = make_dir(ovroot, "mine", key.tag, "", key.machine, 1, NULL);
  free(ovroot);
}

static void free_order_fixture(order_fixture *f) {
  fb_rmtree(f->root);
  char *ovroot = strdup(f->override);
  *strrchr(ovroot, '/') = '\0';
  fb_rmtree(ovroot);
  free(ovroot);
  free(f->root);
  free(f->override);
}

static void test_candidates_order(void **state) {
  (void)state;
  order_fixture f;
  make_order_fixture(&f);
  pyop__artifacts_set_root(f.root);
  setenv("PYOP_BRIDGE_DIR", f.override, 1);

  pyop__candidates c;
  assert_int_equal(pyop__candidates_find(&key, &c), PYOP_OK);
  assert_string_equal(c.key_text, key.text);
  assert_string_equal(c.root, f.root);
  char p[9][512], mismatch[128];
  snprintf(p[0], sizeof p[0], "%s", f.override);
  snprintf(p[1], sizeof p[1], "%s/%s-%s", f.root, key.tag, key.machine);
  snprintf(p[2], sizeof p[2], "%s/zz-dup", f.root);
  snprintf(p[3], sizeof p[3], "%s/aaa-abi3", f.root);
  snprintf(p[4], sizeof p[4], "%s/abi3-%s", f.root, key.machine);
  snprintf(p[5], sizeof p[5], "%s/broken", f.root);
  snprintf(p[6], sizeof p[6], "%s/cp3%u-%s", f.root, key.minor + 1, key.machine);
  snprintf(p[7], sizeof p[7], "%s/empty", f.root);
  snprintf(mismatch, sizeof mismatch, "built for cp3%u-%s, running %s",
           key.minor + 1, key.machine, key.text);
  assert_int_equal(c.n, 8);
  expect(&c, 0, p[0], PYOP__CAND_UNTRIED, 0, NULL); /* override first */
  expect(&c, 1, p[1], PYOP__CAND_UNTRIED, 1, NULL); /* exact, by name */
  expect(&c, 2, p[2], PYOP__CAND_UNTRIED, 1, NULL);
  expect(&c, 3, p[3], PYOP__CAND_UNTRIED, 2, NULL); /* abi3 after exact */
  expect(&c, 4, p[4], PYOP__CAND_UNTRIED, 2, NULL);
  expect(&c, 5, p[5], PYOP__CAND_MANIFEST_INVALID, -1,
         "manifest.txt: line 2: expected key=value");
  expect(&c, 6, p[6], PYOP__CAND_MANIFEST_MISMATCH, -1, mismatch);
  expect(&c, 7, p[7], PYOP__CAND_INVALID_PATH, -1,
         "no manifest.txt: No such file or directory");
  /* Nothing was opened: no bridge path is known yet. */
  for (size_t i = 0; i < c.n; i++) assert_null(c.items[i].bridge_path);

  pyop__sb sb = PYOP__SB_INIT;
  pyop__candidates_report(&c, &sb);
  char want[8192];
  snprintf(want, sizeof want,
           "  %s: untried: manifest matches (override directory)\n"
           "  %s: untried: manifest matches (exact tag)\n"
           "  %s: untried: manifest matches (exact tag)\n"
           "  %s: untried: manifest matches (stable ABI)\n"
           "  %s: untried: manifest matches (stable ABI)\n"
           "  %s: manifest invalid: manifest.txt: line 2: expected key=value\n"
           "  %s: manifest mismatch: %s\n"
           "  %s: invalid path: no manifest.txt: No such file or directory\n",
           p[0], p[1], p[2], p[3], p[4], p[5], p[6], mismatch, p[7]);
  assert_string_equal(pyop__sb_str(&sb), want);
  pyop__sb_free(&sb);
  pyop__candidates_free(&c);

  /* Deterministic: the same again. */
  assert_int_equal(pyop__candidates_find(&key, &c), PYOP_OK);
  assert_int_equal(c.n, 8);
  expect(&c, 2, p[2], PYOP__CAND_UNTRIED, 1, NULL);
  pyop__candidates_free(&c);
  free_order_fixture(&f);
}

static unsigned long secure_getauxval(unsigned long type) {
  return type == AT_SECURE ? 1 : getauxval(type);
}
static char *fake_secure_getenv(const char *name) {
  (void)name;
  return NULL; /* what secure_getenv answers under AT_SECURE */
}

/*
 * An entry of the root that cannot be stat'ed (a link to nothing) is not
 * skipped as "not a directory": it is a candidate, refused as a path with
 * the reason, and the good one is still first (configuration pass,
 * src.cf.candidates.dangling_skipped).
 */
static void test_dangling_entry_listed(void **state) {
  (void)state;
  unsetenv("PYOP_BRIDGE_DIR");
  char *root = pt_mkdtemp();
  char exact[64];
  snprintf(exact, sizeof exact, "%s-%s", key.tag, key.machine);
  char *good = make_dir(root, exact, key.tag, "", key.machine, 1, NULL);
  char *gone = fb_join(root, "gone-link");
  char *target = fb_join(root, "no-such-artifact");
  assert_int_equal(symlink(target, gone), 0);
  pyop__artifacts_set_root(root);
  pyop__candidates c;
  assert_int_equal(pyop__candidates_find(&key, &c), PYOP_OK);
  assert_int_equal(c.n, 2);
  expect(&c, 0, good, PYOP__CAND_UNTRIED, 1, NULL);
  expect(&c, 1, gone, PYOP__CAND_INVALID_PATH, -1, "cannot stat: No such file or directory");
  pyop__candidates_free(&c);
  pyop__artifacts_set_root(NULL);
  fb_rmtree(root);
  free(target);
  free(gone);
  free(good);
  free(root);
}

static void test_override_rules(void **state) {
  (void)state;
  order_fixture f;
  make_order_fixture(&f);
  pyop__artifacts_set_root(f.root);
  pyop__candidates c;

  /* Relative: refused, never resolved against the cwd. */
  setenv("PYOP_BRIDGE_DIR", "relative/dir", 1);
  assert_int_equal(pyop__candidates_find(&key, &c), PYOP_OK);
  expect(&c, c.n - 4, "relative/dir", PYOP__CAND_INVALID_PATH, -1,
         "PYOP_BRIDGE_DIR is a relative path: refused (libpyop never "
         "resolves paths against the current directory)");
  pyop__candidates_free(&c);

  /* Missing directory. */
  setenv("PYOP_BRIDGE_DIR", "/nonexistent/pyop", 1);
  assert_int_equal(pyop__candidates_find(&key, &c), PYOP_OK);
  assert_int_equal(find_dir(&c, "/nonexistent/pyop")->status, PYOP__CAND_INVALID_PATH);
  assert_string_equal(find_dir(&c, "/nonexistent/pyop")->reason,
                      "cannot stat: No such file or directory");
  pyop__candidates_free(&c);

  /* A file, not a directory: refused as a path, the other candidates
   * still listed. */
  char *file = fb_join(f.root, "plain-file");
  pt_write_file(file, "x");
  setenv("PYOP_BRIDGE_DIR", file, 1);
  assert_int_equal(pyop__candidates_find(&key, &c), PYOP_OK);
  assert_int_equal(find_dir(&c, file)->status, PYOP__CAND_INVALID_PATH);
  assert_string_equal(find_dir(&c, file)->reason, "not a directory");
  assert_int_equal(find_dir(&c, file)->rank, -1);
  pyop__candidates_free(&c);
  unlink(file);
  free(file);

  /* Built for another Python: refused as a mismatch, with the reason,
   * like a directory of the root, and never ranked first: the root's
   * exact directory is (batch 13 survivor src.b13.candidates.override_unmatched). */
  char *ovroot = pt_mkdtemp();
  char othertag[16], exact[512], mismatch[128];
  snprintf(othertag, sizeof othertag, "cp3%u", key.minor + 1);
  char *theirs = make_dir(ovroot, "theirs", othertag, "", key.machine, 1, NULL);
  setenv("PYOP_BRIDGE_DIR", theirs, 1);
  assert_int_equal(pyop__candidates_find(&key, &c), PYOP_OK);
  snprintf(mismatch, sizeof mismatch, "built for cp3%u-%s, running %s", key.minor + 1,
           key.machine, key.text);
  assert_int_equal(find_dir(&c, theirs)->status, PYOP__CAND_MANIFEST_MISMATCH);
  assert_string_equal(find_dir(&c, theirs)->reason, mismatch);
  assert_int_equal(find_dir(&c, theirs)->rank, -1);
  snprintf(exact, sizeof exact, "%s/%s-%s", f.root, key.tag, key.machine);
  expect(&c, 0, exact, PYOP__CAND_UNTRIED, 1, NULL);
  pyop__candidates_free(&c);
  fb_rmtree(ovroot);
  free(theirs);
  free(ovroot);

  /* Set but empty: no override at all, as when unset (not a relative
   * path refused: configuration pass, src.cf.candidates.empty_override). */
  unsetenv("PYOP_BRIDGE_DIR");
  assert_int_equal(pyop__candidates_find(&key, &c), PYOP_OK);
  size_t n_unset = c.n;
  pyop__candidates_free(&c);
  setenv("PYOP_BRIDGE_DIR", "", 1);
  assert_int_equal(pyop__candidates_find(&key, &c), PYOP_OK);
  assert_int_equal(c.n, n_unset);
  for (size_t i = 0; i < c.n; i++) {
    assert_string_not_equal(c.items[i].dir, "");
    if (c.items[i].reason) assert_null(strstr(c.items[i].reason, "PYOP_BRIDGE_DIR"));
  }
  pyop__candidates_free(&c);

  /* Secure execution: the variable is not even read. */
  setenv("PYOP_BRIDGE_DIR", f.override, 1);
  pyop__sys saved = pyop__sys_table;
  pyop__sys_table.getauxval = secure_getauxval;
  pyop__sys_table.secure_getenv = fake_secure_getenv;
  assert_int_equal(pyop__candidates_find(&key, &c), PYOP_OK);
  assert_int_equal(c.n, 7);
  for (size_t i = 0; i < c.n; i++) assert_string_not_equal(c.items[i].dir, f.override);
  pyop__candidates_free(&c);
  pyop__sys_table = saved;
  free_order_fixture(&f);
}

static void test_mismatch_reasons(void **state) {
  (void)state;
  char *root = pt_mkdtemp();
  pyop__artifacts_set_root(root);
  free(make_dir(root, "a", key.tag, "d", key.machine, 1, NULL));
  free(make_dir(root, "b", "abi3", "", key.machine, 1, "min_python=3.99\n"));
  free(make_dir(root, "c", key.tag, "", key.machine, 2, NULL));
  free(make_dir(root, "d", key.tag, "", "otherarch", 1, NULL));
  free(make_dir(root, "e", "abi3", "", key.machine, 1, "min_python=3.2\n"));
  pyop__candidates c;
  assert_int_equal(pyop__candidates_find(&key, &c), PYOP_OK);
  assert_int_equal(c.n, 5);
  char want[256], dir[512];
  snprintf(dir, sizeof dir, "%s/e", root);
  expect(&c, 0, dir, PYOP__CAND_UNTRIED, 2, NULL);
  snprintf(dir, sizeof dir, "%s/a", root);
  snprintf(want, sizeof want, "built for %sd-%s, running %s", key.tag,
           key.machine, key.text);
  expect(&c, 1, dir, PYOP__CAND_MANIFEST_MISMATCH, -1, want);
  snprintf(dir, sizeof dir, "%s/b", root);
  snprintf(want, sizeof want, "built for abi3-%s (Python >= 3.99), running %s",
           key.machine, key.text);
  expect(&c, 2, dir, PYOP__CAND_MANIFEST_MISMATCH, -1, want);
  snprintf(dir, sizeof dir, "%s/c", root);
  expect(&c, 3, dir, PYOP__CAND_MANIFEST_MISMATCH, -1,
         "built for bridge ABI 2.0, this libpyop speaks 1." PYOP__XSTR(PYOP_BRIDGE_ABI_MINOR) " (same major required)");
  snprintf(dir, sizeof dir, "%s/d", root);
  snprintf(want, sizeof want, "built for %s-otherarch, running %s", key.tag, key.text);
  expect(&c, 4, dir, PYOP__CAND_MANIFEST_MISMATCH, -1, want);
  pyop__candidates_free(&c);

  /* A free-threaded Python takes no abi3 bridge; a debug one does. */
  pyop__runtime_key ft = key;
  ft.free_threaded = true;
  snprintf(ft.abi_flags, sizeof ft.abi_flags, "t");
  snprintf(ft.text, sizeof ft.text, "%st-%s", key.tag, key.machine);
  assert_int_equal(pyop__candidates_find(&ft, &c), PYOP_OK);
  snprintf(dir, sizeof dir, "%s/e", root);
  snprintf(want, sizeof want,
           "built for abi3-%s, running %s: the stable ABI does not cover "
           "free-threaded Python",
           key.machine, ft.text);
  assert_string_equal(find_dir(&c, dir)->reason, want);
  pyop__candidates_free(&c);
  pyop__runtime_key dbg = key;
  dbg.debug = true;
  snprintf(dbg.abi_flags, sizeof dbg.abi_flags, "d");
  assert_int_equal(pyop__candidates_find(&dbg, &c), PYOP_OK);
  snprintf(dir, sizeof dir, "%s/a", root); /* the cp3XYd build: exact */
  expect(&c, 0, dir, PYOP__CAND_UNTRIED, 1, NULL);
  snprintf(dir, sizeof dir, "%s/e", root);
  expect(&c, 1, dir, PYOP__CAND_UNTRIED, 2, NULL);
  pyop__candidates_free(&c);
  fb_rmtree(root);
  free(root);
}

/*
 * abi3 bridges at the running minor's boundary: min_python = 3.<running>
 * serves it (rank 2), 3.<running + 1> does not (issue 31: the tests used
 * 3.2, 3.8, 3.10 and 3.99, never the running minor). And a python tag
 * with a leading zero (cp011, cp0311) is an invalid manifest, not a
 * mismatch: no Python has that tag, so it can only be a broken build.
 */
static void test_abi3_min_python_boundary(void **state) {
  (void)state;
  char *root = pt_mkdtemp();
  pyop__artifacts_set_root(root);
  char at[64], above[64], below[64];
  snprintf(at, sizeof at, "min_python=3.%u\n", key.minor);
  snprintf(above, sizeof above, "min_python=3.%u\n", key.minor + 1);
  snprintf(below, sizeof below, "min_python=3.%u\n", key.minor - 1);
  free(make_dir(root, "at", "abi3", "", key.machine, 1, at));
  free(make_dir(root, "above", "abi3", "", key.machine, 1, above));
  free(make_dir(root, "below", "abi3", "", key.machine, 1, below));
  free(make_dir(root, "zero", "cp011", "", key.machine, 1, NULL));
  free(make_dir(root, "zero4", "cp0311", "", key.machine, 1, NULL));
  pyop__candidates c;
  assert_int_equal(pyop__candidates_find(&key, &c), PYOP_OK);
  assert_int_equal(c.n, 5);
  char dir[512], want[256];
  snprintf(dir, sizeof dir, "%s/at", root);
  assert_int_equal(find_dir(&c, dir)->status, PYOP__CAND_UNTRIED);
  assert_int_equal(find_dir(&c, dir)->rank, 2);
  assert_null(find_dir(&c, dir)->reason);
  snprintf(dir, sizeof dir, "%s/below", root);
  assert_int_equal(find_dir(&c, dir)->status, PYOP__CAND_UNTRIED);
  assert_int_equal(find_dir(&c, dir)->rank, 2);
  snprintf(dir, sizeof dir, "%s/above", root);
  snprintf(want, sizeof want, "built for abi3-%s (Python >= 3.%u), running %s", key.machine,
           key.minor + 1, key.text);
  assert_int_equal(find_dir(&c, dir)->status, PYOP__CAND_MANIFEST_MISMATCH);
  assert_string_equal(find_dir(&c, dir)->reason, want);
  static const char *const zeros[] = {"zero", "cp011", "zero4", "cp0311"};
  for (size_t i = 0; i < 4; i += 2) {
    snprintf(dir, sizeof dir, "%s/%s", root, zeros[i]);
    snprintf(want, sizeof want, "manifest.txt: line 2: python_tag: \"%s\" is neither cpXY "
             "(e.g. cp311) nor abi3", zeros[i + 1]);
    assert_int_equal(find_dir(&c, dir)->status, PYOP__CAND_MANIFEST_INVALID);
    assert_string_equal(find_dir(&c, dir)->reason, want);
  }
  pyop__candidates_free(&c);
  fb_rmtree(root);
  free(root);
}

/* A bridge of another ABI major, older or newer, is a mismatch (the tests
 * had only a newer one: the mutation check). */
static void test_abi_major_both_ways(void **state) {
  (void)state;
  char *root = pt_mkdtemp();
  pyop__artifacts_set_root(root);
  unsigned majors[2] = {PYOP_BRIDGE_ABI_MAJOR - 1, PYOP_BRIDGE_ABI_MAJOR + 1};
  for (int i = 0; i < 2; i++) {
    char name[16];
    snprintf(name, sizeof name, "m%u", majors[i]);
    free(make_dir(root, name, key.tag, "", key.machine, majors[i], NULL));
  }
  pyop__candidates c;
  assert_int_equal(pyop__candidates_find(&key, &c), PYOP_OK);
  assert_int_equal(c.n, 2);
  for (int i = 0; i < 2; i++) {
    char dir[512], want[256];
    snprintf(dir, sizeof dir, "%s/m%u", root, majors[i]);
    snprintf(want, sizeof want, "built for bridge ABI %u.0, this libpyop speaks %u.%u (same "
             "major required)", majors[i], PYOP_BRIDGE_ABI_MAJOR, PYOP_BRIDGE_ABI_MINOR);
    assert_int_equal(find_dir(&c, dir)->status, PYOP__CAND_MANIFEST_MISMATCH);
    assert_string_equal(find_dir(&c, dir)->reason, want);
  }
  pyop__candidates_free(&c);
  fb_rmtree(root);
  free(root);
}

static void test_root_missing_and_default(void **state) {
  (void)state;
  pyop__artifacts_set_root("/nonexistent/pyop/artifacts");
  pyop__candidates c;
  assert_int_equal(pyop__candidates_find(&key, &c), PYOP_OK);
  assert_int_equal(c.n, 1);
  expect(&c, 0, "/nonexistent/pyop/artifacts", PYOP__CAND_INVALID_PATH, -1,
         "cannot open directory: No such file or directory");
  pyop__candidates_free(&c);

  /* A root that is not absolute is never listed (nor resolved against the
   * current directory): one entry says why. */
  pyop__artifacts_set_root("relative/artifacts");
  assert_int_equal(pyop__candidates_find(&key, &c), PYOP_OK);
  assert_int_equal(c.n, 1);
  expect(&c, 0, "relative/artifacts", PYOP__CAND_INVALID_PATH, -1,
         "artifacts root unknown (libpyop cannot locate its own file)");
  pyop__candidates_free(&c);

  /* The default: next to the file that holds libpyop's code (here the
   * test executable). */
  pyop__artifacts_set_root(NULL);
  const char *root = pyop__artifacts_root();
  assert_true(root[0] == '/');
  size_t n = strlen(root);
  assert_true(n > 15);
  assert_string_equal(root + n - 15, "/pyop/artifacts");
  char *exe = realpath("/proc/self/exe", NULL);
  assert_non_null(exe);
  *strrchr(exe, '/') = '\0';
  assert_memory_equal(root, exe, strlen(exe));
  free(exe);
}

typedef struct find_ctx {
  order_fixture f;
} find_ctx;

static int run_find(void *user) {
  (void)user;
  pyop__candidates c;
  int rc = pyop__candidates_find(&key, &c);
  pyop__candidates_free(&c);
  return rc;
}

static int fds_before;

static void check_find(void *user, int rc) {
  (void)user;
  assert_true(rc == PYOP_OK || rc == PYOP_ENOMEM);
  assert_int_equal(pt_live_allocs(), 0);
  assert_int_equal(fb_count_fds(), fds_before);
}

static void test_candidates_faults(void **state) {
  (void)state;
  find_ctx ctx;
  make_order_fixture(&ctx.f);
  pyop__artifacts_set_root(ctx.f.root);
  setenv("PYOP_BRIDGE_DIR", ctx.f.override, 1);
  fds_before = fb_count_fds();
  long n = pt_faults_sweep(run_find, check_find, &ctx, 2000);
  print_message("%ld fault points swept\n", n);
  assert_true(n > 50);
  free_order_fixture(&ctx.f);
}

/* Each status of candidates.h's list is named by its text, distinct; a
 * value outside it is "unknown". */
static void test_status_names(void **state) {
  (void)state;
  int n = 0;
#define NAMED(name, value, text)                                              \
  assert_int_equal(PYOP__CAND_##name, value);                                 \
  assert_string_equal(pyop__cand_status_name(value), text);                   \
  n++;
  PYOP__CAND_STATUS_MAP(NAMED)
#undef NAMED
  assert_int_equal(n, 11);
  for (int v = 0; v < n; v++)
    for (int w = v + 1; w < n; w++)
      assert_string_not_equal(pyop__cand_status_name(v), pyop__cand_status_name(w));
  static const int outside[] = {11, -1, INT_MIN, INT_MAX};
  for (size_t i = 0; i < sizeof outside / sizeof outside[0]; i++) {
    const char *name = pyop__cand_status_name(outside[i]);
    assert_non_null(name);
    assert_string_equal(name, "unknown");
  }
}

/* A readdir giving a directory's entries in descending name order (as a
 * file system may), whatever the real order. */
static struct dirent *(*real_readdir)(DIR *);
static struct dirent desc_ents[8];
static size_t desc_n, desc_at;
static DIR *desc_dir;
static int desc_cmp(const void *a, const void *b) {
  return -strcmp(((const struct dirent *)a)->d_name, ((const struct dirent *)b)->d_name);
}
static struct dirent *desc_readdir(DIR *d) {
  if (d != desc_dir) {
    desc_dir = d;
    desc_n = desc_at = 0;
    struct dirent *de;
    while ((de = real_readdir(d)) != NULL) {
      assert_true(desc_n < 8);
      desc_ents[desc_n++] = *de;
    }
    qsort(desc_ents, desc_n, sizeof *desc_ents, desc_cmp);
  }
  return desc_at < desc_n ? &desc_ents[desc_at++] : NULL;
}

/* The directories of the root are taken in name order whatever order the
 * file system lists them in, two of them too: two rejected candidates are
 * reported in that order. */
static void test_two_dirs_sorted(void **state) {
  (void)state;
  char *root = pt_mkdtemp();
  const char *names[] = {"a-first", "b-second"};
  for (int i = 0; i < 2; i++) {
    char *d = fb_join(root, names[i]);
    assert_int_equal(mkdir(d, 0755), 0); /* no manifest: rejected */
    free(d);
  }
  pyop__artifacts_set_root(root);
  real_readdir = pyop__sys_table.readdir;
  pyop__sys_table.readdir = desc_readdir;
  desc_dir = NULL;
  pyop__candidates c;
  int rc = pyop__candidates_find(&key, &c);
  pyop__sys_table.readdir = real_readdir;
  assert_int_equal(rc, PYOP_OK);
  assert_int_equal(c.n, 2);
  for (int i = 0; i < 2; i++) {
    char want[512];
    snprintf(want, sizeof want, "%s/%s", root, names[i]);
    expect(&c, (size_t)i, want, PYOP__CAND_INVALID_PATH, -1,
           "no manifest.txt: No such file or directory");
  }
  pyop__candidates_free(&c);
  fb_rmtree(root);
  free(root);
}

/* A readdir that gives the first artifact directory of a listing, then
 * fails with EIO. */
static DIR *failing_dir;
static bool failing_gave;
static struct dirent *failing_readdir(DIR *d) {
  if (d != failing_dir) {
    failing_dir = d;
    failing_gave = false;
  }
  struct dirent *de;
  while (!failing_gave && (de = real_readdir(d)) != NULL) {
    if (de->d_name[0] == '.') continue;
    failing_gave = true;
    return de;
  }
  errno = EIO;
  return NULL;
}

/*
 * A root whose listing fails halfway is one INVALID_PATH entry naming the
 * error, and none of the directories read before the failure is a
 * candidate (a partial listing would make the choice depend on where it
 * failed); the PYOP_BRIDGE_DIR override is still tried, and
 * pyop__artifacts_list says the same (both-sides pass, session 14: the
 * listing's failing side).
 */
static void test_root_listing_fails_halfway(void **state) {
  (void)state;
  char *root = pt_mkdtemp();
  free(make_dir(root, "a-first", "abi3", "", key.machine, 1, "min_python=3.8\n"));
  free(make_dir(root, "b-second", "abi3", "", key.machine, 1, "min_python=3.8\n"));
  char *ov = pt_mkdtemp();
  free(make_dir(ov, "o", "abi3", "", key.machine, 1, "min_python=3.8\n"));
  char *ov_dir = fb_join(ov, "o");
  pyop__artifacts_set_root(root);
  real_readdir = pyop__sys_table.readdir;
  pyop__sys_table.readdir = failing_readdir;
  failing_dir = NULL;
  pyop__candidates c;
  int rc = pyop__candidates_find(&key, &c);
  assert_int_equal(rc, PYOP_OK);
  assert_int_equal(c.n, 1);
  expect(&c, 0, root, PYOP__CAND_INVALID_PATH, -1, "cannot read directory: Input/output error");
  pyop__candidates_free(&c);
  setenv("PYOP_BRIDGE_DIR", ov_dir, 1);
  failing_dir = NULL;
  rc = pyop__candidates_find(&key, &c);
  unsetenv("PYOP_BRIDGE_DIR");
  assert_int_equal(rc, PYOP_OK);
  assert_int_equal(c.n, 2);
  expect(&c, 0, ov_dir, PYOP__CAND_UNTRIED, 0, NULL);
  expect(&c, 1, root, PYOP__CAND_INVALID_PATH, -1, "cannot read directory: Input/output error");
  pyop__candidates_free(&c);
  failing_dir = NULL;
  rc = pyop__artifacts_list(&c);
  pyop__sys_table.readdir = real_readdir;
  assert_int_equal(rc, PYOP_OK);
  assert_int_equal(c.n, 1);
  expect(&c, 0, root, PYOP__CAND_INVALID_PATH, -1, "cannot read directory: Input/output error");
  pyop__candidates_free(&c);
  /* Read whole, both are there. */
  assert_int_equal(pyop__candidates_find(&key, &c), PYOP_OK);
  assert_int_equal(c.n, 2);
  pyop__candidates_free(&c);
  free(ov_dir);
  fb_rmtree(ov);
  free(ov);
  fb_rmtree(root);
  free(root);
}

/*
 * A manifest matches by whole values: a platform that only begins the
 * machine's ("x86_6" on x86_64), a tag that only begins the running one's
 * ("cp31" on 3.12), and a plain build's empty abi_flags on a free-threaded
 * (t) or debug (d) Python are mismatches (outcome pass 2:
 * src.out2.candidates.platform_prefix, tag_prefix, flags_prefix).
 */
static void test_manifest_values_whole(void **state) {
  (void)state;
  char *root = pt_mkdtemp();
  pyop__artifacts_set_root(root);
  char plain[16], short_tag[16], short_machine[32];
  snprintf(plain, sizeof plain, "cp%u%u", key.major, key.minor);
  snprintf(short_tag, sizeof short_tag, "%s", plain);
  short_tag[strlen(short_tag) - 1] = '\0'; /* cp312 -> cp31, cp39 -> cp3 (invalid) */
  snprintf(short_machine, sizeof short_machine, "%s", key.machine);
  short_machine[strlen(short_machine) - 1] = '\0';
  free(make_dir(root, "a-plain", plain, "", key.machine, 1, NULL));
  free(make_dir(root, "b-short-platform", plain, "", short_machine, 1, NULL));
  bool tag_ok = key.minor >= 10; /* cp3 is no valid tag: an invalid manifest */
  if (tag_ok) free(make_dir(root, "c-short-tag", short_tag, "", key.machine, 1, NULL));
  pyop__candidates c;
  assert_int_equal(pyop__candidates_find(&key, &c), PYOP_OK);
  assert_int_equal(c.n, tag_ok ? 3 : 2);
  char dir[512], want[256];
  snprintf(dir, sizeof dir, "%s/a-plain", root);
  expect(&c, 0, dir, PYOP__CAND_UNTRIED, 1, NULL);
  snprintf(dir, sizeof dir, "%s/b-short-platform", root);
  snprintf(want, sizeof want, "built for %s-%s, running %s", plain, short_machine, key.text);
  expect(&c, 1, dir, PYOP__CAND_MANIFEST_MISMATCH, -1, want);
  if (tag_ok) {
    snprintf(dir, sizeof dir, "%s/c-short-tag", root);
    snprintf(want, sizeof want, "built for %s-%s, running %s", short_tag, key.machine,
             key.text);
    expect(&c, 2, dir, PYOP__CAND_MANIFEST_MISMATCH, -1, want);
  }
  pyop__candidates_free(&c);

  /* The plain build on a free-threaded or a debug Python of the same version. */
  static const char *const flags[] = {"t", "d", "td"};
  for (size_t i = 0; i < 3; i++) {
    pyop__runtime_key k = key;
    k.free_threaded = strchr(flags[i], 't') != NULL;
    k.debug = strchr(flags[i], 'd') != NULL;
    snprintf(k.abi_flags, sizeof k.abi_flags, "%s", flags[i]);
    snprintf(k.text, sizeof k.text, "%s%s-%s", plain, flags[i], key.machine);
    assert_int_equal(pyop__candidates_find(&k, &c), PYOP_OK);
    snprintf(dir, sizeof dir, "%s/a-plain", root);
    const pyop__candidate *it = find_dir(&c, dir);
    if (it->status != PYOP__CAND_MANIFEST_MISMATCH)
      fail_msg("a plain %s build taken on %s: %s", plain, k.text,
               pyop__cand_status_name(it->status));
    snprintf(want, sizeof want, "built for %s-%s, running %s", plain, key.machine, k.text);
    assert_string_equal(it->reason, want);
    pyop__candidates_free(&c);
  }
  fb_rmtree(root);
  free(root);
}

/* Paths of candidates and manifests are joined with one '/' whatever the
 * root's trailing slashes, "/" itself included. */
static void test_path_join(void **state) {
  (void)state;
  static const char *const cases[][3] = {
      {"/a", "b", "/a/b"}, {"/a/", "b", "/a/b"}, {"/a///", "b", "/a/b"},
      {"/", "b", "/b"},    {"///", "b", "/b"},   {"a", "b", "a/b"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char *p = pyop__path_join(cases[i][0], cases[i][1]);
    assert_non_null(p);
    if (strcmp(p, cases[i][2]) != 0)
      fail_msg("join(\"%s\", \"%s\") gave \"%s\", not \"%s\"", cases[i][0], cases[i][1], p,
               cases[i][2]);
    pyop__free(p);
  }
}

static int group_setup(void **state) {
  (void)state;
  fb_key(&key);
  return 0;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_candidates_order, pt_seam_setup, pt_seam_teardown),
      cmocka_unit_test(test_status_names),
      cmocka_unit_test_setup_teardown(test_override_rules, pt_seam_setup, pt_seam_teardown),
      cmocka_unit_test_setup_teardown(test_dangling_entry_listed, pt_seam_setup, pt_seam_teardown),
      cmocka_unit_test_setup_teardown(test_mismatch_reasons, pt_seam_setup, pt_seam_teardown),
      cmocka_unit_test_setup_teardown(test_abi3_min_python_boundary, pt_seam_setup,
                                      pt_seam_teardown),
      cmocka_unit_test_setup_teardown(test_abi_major_both_ways, pt_seam_setup, pt_seam_teardown),
      cmocka_unit_test_setup_teardown(test_root_missing_and_default, pt_seam_setup, pt_seam_teardown),
      cmocka_unit_test_setup_teardown(test_candidates_faults, pt_seam_setup, pt_seam_teardown),
      cmocka_unit_test_setup_teardown(test_two_dirs_sorted, pt_seam_setup, pt_seam_teardown),
      cmocka_unit_test_setup_teardown(test_root_listing_fails_halfway, pt_seam_setup,
                                      pt_seam_teardown),
      cmocka_unit_test_setup_teardown(test_manifest_values_whole, pt_seam_setup, pt_seam_teardown),
      cmocka_unit_test(test_path_join),
  };
  return cmocka_run_group_tests_name("candidates", tests, group_setup, NULL);
}
