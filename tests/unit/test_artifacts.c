/*
 * Manifests (src/manifest.c), candidate enumeration and ranking
 * (src/candidates.c), and the file security policy (src/trust.c:
 * pyop__open_trusted / pyop__dlopen_trusted).
 */
#define PYOP__STR(x) #x
#define PYOP__XSTR(x) PYOP__STR(x)
#include "testutil.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "../fake_bridge/fake_bridge_util.h"
#include "candidates.h"
#include "manifest.h"
#include "trust.h"
#include "pyop/bridge_abi.h"

#define BASE                       \
  "format=1\n"                     \
  "python_tag=cp311\n"             \
  "platform=x86_64\n"              \
  "bridge=libpyop_bridge.so\n"     \
  "bridge_abi_major=1\n"           \
  "bridge_abi_minor=0\n"

/* Parses an exact-size copy (no NUL after it: an over-read is caught by
 * ASan/valgrind). */
static int parse(const char *text, size_t len, pyop__manifest *m, pyop__sb *why) {
  char *copy = malloc(len ? len : 1);
  assert_non_null(copy);
  if (len) memcpy(copy, text, len);
  int rc = pyop__manifest_parse(copy, len, m, why);
  free(copy);
  return rc;
}

static int count_setup(void **state) {
  (void)state;
  pt_faults_install();
  return 0;
}

static int count_teardown(void **state) {
  (void)state;
  assert_int_equal(pt_live_allocs(), 0);
  pt_faults_remove();
  unsetenv("PYOP_BRIDGE_DIR");
  pyop__artifacts_set_root(NULL);
  return 0;
}

/* ============================================================ manifest */

static void test_manifest_good(void **state) {
  (void)state;
  static const char text[] =
      "# written by bridge/CMakeLists.txt\r\n"
      "\r\n"
      "  format = 1 \r\n"
      "python_tag=cp311\r\n"
      "abi_flags=d\n"
      "platform=x86_64\n"
      "bridge=libpyop_bridge.so\n"
      "bridge_abi_major=1\n"
      "bridge_abi_minor=3\n"
      "libpython=/usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0\n"
      "python_dir=python/site\n"
      "build_info=gcc 12.2 # not a comment\n"
      "future_key=ignored\n"
      "\t# indented comment\n"
      "min_python=3.11"; /* no final newline */
  pyop__manifest m;
  pyop__sb why = PYOP__SB_INIT;
  assert_int_equal(parse(text, sizeof text - 1, &m, &why), PYOP_OK);
  assert_int_equal(m.format, 1);
  assert_string_equal(m.python_tag, "cp311");
  assert_string_equal(m.abi_flags, "d");
  assert_string_equal(m.platform, "x86_64");
  assert_string_equal(m.bridge, "libpyop_bridge.so");
  assert_int_equal(m.abi_major, 1);
  assert_int_equal(m.abi_minor, 3);
  assert_int_equal(m.min_python_minor, 11);
  assert_string_equal(m.libpython, "/usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0");
  assert_string_equal(m.python_dir, "python/site");
  assert_string_equal(m.build_info, "gcc 12.2 # not a comment");
  assert_int_equal(why.len, 0);
  pyop__manifest_free(&m);
  pyop__sb_free(&why);
}

static void test_manifest_minimal_and_abi3(void **state) {
  (void)state;
  pyop__manifest m;
  pyop__sb why = PYOP__SB_INIT;
  assert_int_equal(parse(BASE, strlen(BASE), &m, &why), PYOP_OK);
  assert_string_equal(m.abi_flags, ""); /* default, never NULL */
  assert_null(m.libpython);
  assert_null(m.python_dir);
  assert_null(m.build_info);
  pyop__manifest_free(&m);

  static const char abi3[] =
      "format=1\npython_tag=abi3\nmin_python=3.8\nplatform=aarch64\n"
      "bridge=b.so\nbridge_abi_major=1\nbridge_abi_minor=0\nlibpython=\n";
  assert_int_equal(parse(abi3, strlen(abi3), &m, &why), PYOP_OK);
  assert_string_equal(m.python_tag, "abi3");
  assert_int_equal(m.min_python_minor, 8);
  assert_null(m.libpython); /* empty value: not set */
  pyop__manifest_free(&m);
  pyop__sb_free(&why);
}

typedef struct bad_case {
  const char *text;
  const char *why;
} bad_case;

static const bad_case bad_cases[] = {
    {"", "missing required key format"},
    {"format=1\nnonsense\n", "line 2: expected key=value"},
    {"=1\n", "line 1: empty key"},
    {"fo o=1\n", "line 1: invalid character 0x20 in key"},
    {BASE "format=1\n", "line 7: duplicate key format (first on line 1)"},
    {"x-future=1\n" BASE "x-future=2\n", "line 8: duplicate key x-future"},
    {"format=2\npython_tag=whatever\n",
     "line 1: unsupported manifest format 2 (this libpyop reads format 1)"},
    {"format=one\n", "line 1: format: \"one\" is not a number"},
    {"format=1\npython_tag=cp311\nbridge=b.so\nbridge_abi_major=1\n"
     "bridge_abi_minor=0\n",
     "missing required key platform"},
    {"format=1\npython_tag=py3\nplatform=x86_64\nbridge=b.so\n"
     "bridge_abi_major=1\nbridge_abi_minor=0\n",
     "line 2: python_tag: \"py3\" is neither cpXY (e.g. cp311) nor abi3"},
    {BASE "abi_flags=x\n", "line 7: abi_flags: \"x\" is not one of \"\", t, d, td"},
    {"format=1\npython_tag=abi3\nmin_python=3.8\nabi_flags=t\nplatform=x86_64\n"
     "bridge=b.so\nbridge_abi_major=1\nbridge_abi_minor=0\n",
     "line 4: abi_flags: a stable-ABI (abi3) bridge has no ABI flags"},
    {"format=1\npython_tag=abi3\nplatform=x86_64\nbridge=b.so\n"
     "bridge_abi_major=1\nbridge_abi_minor=0\n",
     "line 2: python_tag=abi3 needs min_python (e.g. 3.11)"},
    {BASE "min_python=2.7\n", "line 7: min_python: \"2.7\" is not 3.N"},
    {"format=1\npython_tag=cp311\nplatform=x86-64\nbridge=b.so\n"
     "bridge_abi_major=1\nbridge_abi_minor=0\n",
     "line 3: platform: \"x86-64\" is not a machine name"},
    {"format=1\npython_tag=cp311\nplatform=x86_64\nbridge=../x.so\n"
     "bridge_abi_major=1\nbridge_abi_minor=0\n",
     "line 4: bridge: \"../x.so\" must be a file name inside the artifact "
     "directory (no '/', no leading '.')"},
    {"format=1\npython_tag=cp311\nplatform=x86_64\nbridge=sub/x.so\n"
     "bridge_abi_major=1\nbridge_abi_minor=0\n",
     "line 4: bridge: \"sub/x.so\" must be a file name inside the artifact "
     "directory (no '/', no leading '.')"},
    {"format=1\npython_tag=cp311\nplatform=x86_64\nbridge=/lib/x.so\n"
     "bridge_abi_major=1\nbridge_abi_minor=0\n",
     "line 4: bridge: \"/lib/x.so\" must be a file name inside the artifact "
     "directory (no '/', no leading '.')"},
    {"format=1\npython_tag=cp311\nplatform=x86_64\nbridge=.x.so\n"
     "bridge_abi_major=1\nbridge_abi_minor=0\n",
     "line 4: bridge: \".x.so\" must be a file name inside the artifact "
     "directory (no '/', no leading '.')"},
    {"format=1\npython_tag=cp311\nplatform=x86_64\nbridge=\n"
     "bridge_abi_major=1\nbridge_abi_minor=0\n",
     "line 4: bridge: \"\" must be a file name inside the artifact "
     "directory (no '/', no leading '.')"},
    {"format=1\npython_tag=cp311\nplatform=x86_64\nbridge=b.so\n"
     "bridge_abi_major=-1\nbridge_abi_minor=0\n",
     "line 5: bridge_abi_major: \"-1\" is not a number"},
    {"format=1\npython_tag=cp311\nplatform=x86_64\nbridge=b.so\n"
     "bridge_abi_major=1\nbridge_abi_minor=4294967296\n",
     "line 6: bridge_abi_minor: \"4294967296\" is not a number"},
    {BASE "libpython=lib/libpython3.11.so\n",
     "line 7: libpython: \"lib/libpython3.11.so\" is not an absolute path"},
    {BASE "python_dir=../up\n",
     "line 7: python_dir: \"../up\" must be a relative path inside the "
     "artifact directory"},
    {BASE "python_dir=/abs\n",
     "line 7: python_dir: \"/abs\" must be a relative path inside the "
     "artifact directory"},
    {BASE "python_dir=a/../../b\n",
     "line 7: python_dir: \"a/../../b\" must be a relative path inside the "
     "artifact directory"},
    {BASE "python_dir=a//b\n",
     "line 7: python_dir: \"a//b\" must be a relative path inside the "
     "artifact directory"},
    {BASE "python_dir=./a\n",
     "line 7: python_dir: \"./a\" must be a relative path inside the "
     "artifact directory"},
    {BASE "build_info=a\x01z\n", "line 7: build_info: control character 0x01 in value"},
};

static void check_bad(const char *text, size_t len, const char *want) {
  pyop__manifest m;
  pyop__sb why = PYOP__SB_INIT;
  (void)pyop__error(PYOP_EIO, "an earlier error");
  int rc = parse(text, len, &m, &why);
  if (rc != PYOP_EDESCRIPTOR || strcmp(pyop__sb_str(&why), want) != 0)
    fail_msg("manifest %.60s...\n  rc %d why \"%s\"\n  want \"%s\"", text, rc,
             pyop__sb_str(&why), want);
  /* Nothing is kept after a failure. */
  assert_null(m.python_tag);
  assert_null(m.abi_flags);
  assert_null(m.platform);
  assert_null(m.bridge);
  /* One carrier: the reason is in why only; the thread's last error is the
   * caller's (it knows which file it read). */
  assert_string_equal(pyop_last_error(), "an earlier error");
  assert_int_equal(pyop_last_status(), PYOP_EIO);
  pyop__sb_free(&why);
  assert_int_equal(pt_live_allocs(), 0);
}

static void test_manifest_bad(void **state) {
  (void)state;
  for (size_t i = 0; i < PYOP__ARRAY_LEN(bad_cases); i++)
    check_bad(bad_cases[i].text, strlen(bad_cases[i].text), bad_cases[i].why);
}

static void test_manifest_limits(void **state) {
  (void)state;
  /* A 1024-byte line is fine, 1025 is not. */
  char line[2048];
  char text[4096];
  memset(line, 'a', sizeof line);
  memcpy(line, "build_info=", 11);
  line[1024] = '\0';
  snprintf(text, sizeof text, BASE "%s\n", line);
  pyop__manifest m;
  pyop__sb why = PYOP__SB_INIT;
  assert_int_equal(parse(text, strlen(text), &m, &why), PYOP_OK);
  assert_int_equal(strlen(m.build_info), 1024 - 11);
  pyop__manifest_free(&m);
  line[1024] = 'a';
  line[1025] = '\0';
  snprintf(text, sizeof text, BASE "%s\n", line);
  check_bad(text, strlen(text), "line 7: longer than 1024 bytes");

  /* Embedded NUL, with the length given explicitly. */
  static const char nul[] = BASE "build_info=a\0b\n";
  check_bad(nul, sizeof nul - 1, "line 7: NUL byte");

  /* Larger than PYOP__MANIFEST_MAX. */
  size_t big = PYOP__MANIFEST_MAX + 1;
  char *huge = malloc(big);
  assert_non_null(huge);
  memset(huge, '\n', big);
  memcpy(huge, BASE, strlen(BASE));
  check_bad(huge, big, "8193 bytes, more than the 8192 allowed");
  /* Exactly the maximum is accepted. */
  assert_int_equal(parse(huge, big - 1, &m, &why), PYOP_OK);
  pyop__manifest_free(&m);
  free(huge);

  /* A length that cuts a line: only the bytes before it count. */
  assert_int_equal(parse(BASE "platform=x", strlen(BASE) + 9, &m, &why),
                   PYOP_EDESCRIPTOR);
  assert_string_equal(pyop__sb_str(&why),
                      "line 7: duplicate key platform (first on line 3)");
  pyop__sb_free(&why);
}

static int parse_good(void *user) {
  (void)user;
  pyop__manifest m;
  static const char text[] = BASE "build_info=x\nlibpython=/l.so\npython_dir=p\n";
  int rc = parse(text, sizeof text - 1, &m, NULL);
  pyop__manifest_free(&m);
  return rc;
}

static void check_parse_fault(void *user, int rc) {
  (void)user;
  assert_int_equal(rc, PYOP_ENOMEM);
  assert_int_equal(pt_live_allocs(), 0);
}

static void test_manifest_alloc_faults(void **state) {
  (void)state;
  assert_int_equal(parse_good(NULL), PYOP_OK);
  long n = pt_faults_sweep(parse_good, check_parse_fault, NULL, 64);
  print_message("%ld fault points swept\n", n);
  assert_true(n >= 7); /* every copied field */
}

static void test_manifest_read(void **state) {
  (void)state;
  char *dir = pt_mkdtemp();
  pyop__manifest m;
  pyop__sb why = PYOP__SB_INIT;

  assert_int_equal(pyop__manifest_read(dir, &m, &why), PYOP_ENOENT);
  assert_string_equal(pyop__sb_str(&why), "no manifest.txt: No such file or directory");
  pyop__sb_free(&why);

  assert_int_equal(pyop__manifest_read("relative/dir", &m, &why), PYOP_EINVAL);
  assert_non_null(strstr(pyop__sb_str(&why), "relative artifact directory"));
  pyop__sb_free(&why);

  char *mf = fb_join(dir, "manifest.txt");
  assert_int_equal(mkdir(mf, 0755), 0);
  assert_int_equal(pyop__manifest_read(dir, &m, &why), PYOP_EIO);
  assert_string_equal(pyop__sb_str(&why), "manifest.txt: not a regular file (directory)");
  pyop__sb_free(&why);
  assert_int_equal(rmdir(mf), 0);
  /* A FIFO: refused at once (no writer would ever come), the path named. */
  assert_int_equal(mkfifo(mf, 0644), 0);
  alarm(20); /* a blocked open is a failure, not a stuck CI job */
  assert_int_equal(pyop__manifest_read(dir, &m, &why), PYOP_EIO);
  alarm(0);
  assert_string_equal(pyop__sb_str(&why), "manifest.txt: not a regular file (FIFO)");
  assert_null(strstr(pyop_last_error(), mf)); /* why is the one carrier */
  pyop__sb_free(&why);
  assert_int_equal(unlink(mf), 0);

  pt_write_file(mf, "format=1\nbroken\n");
  assert_int_equal(pyop__manifest_read(dir, &m, &why), PYOP_EDESCRIPTOR);
  assert_string_equal(pyop__sb_str(&why), "manifest.txt: line 2: expected key=value");
  pyop__sb_free(&why);

  char *big = malloc(PYOP__MANIFEST_MAX + 2);
  memset(big, '#', PYOP__MANIFEST_MAX + 1);
  big[PYOP__MANIFEST_MAX + 1] = '\0';
  pt_write_file(mf, big);
  free(big);
  assert_int_equal(pyop__manifest_read(dir, &m, &why), PYOP_EDESCRIPTOR);
  assert_string_equal(pyop__sb_str(&why),
                      "manifest.txt: 8193 bytes, more than the 8192 allowed");
  pyop__sb_free(&why);

  pt_write_file(mf, BASE);
  assert_int_equal(pyop__manifest_read(dir, &m, &why), PYOP_OK);
  assert_string_equal(m.bridge, "libpyop_bridge.so");
  pyop__manifest_free(&m);

  /* Every OS call and allocation of the read fails cleanly. */
  for (long i = 0;; i++) {
    int fds = fb_count_fds();
    pt_faults_arm(i);
    int rc = pyop__manifest_read(dir, &m, &why);
    bool hit = pt_faults_fired();
    pt_faults_arm(-1);
    if (!hit) {
      assert_int_equal(rc, PYOP_OK);
      pyop__manifest_free(&m);
      break;
    }
    assert_int_not_equal(rc, PYOP_OK);
    assert_null(m.bridge);
    pyop__sb_free(&why);
    assert_int_equal(fb_count_fds(), fds);
    assert_int_equal(pt_live_allocs(), 0);
  }
  pyop__sb_free(&why);
  free(mf);
  fb_rmtree(dir);
  free(dir);
}

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

static void test_root_missing_and_default(void **state) {
  (void)state;
  pyop__artifacts_set_root("/nonexistent/pyop/artifacts");
  pyop__candidates c;
  assert_int_equal(pyop__candidates_find(&key, &c), PYOP_OK);
  assert_int_equal(c.n, 1);
  expect(&c, 0, "/nonexistent/pyop/artifacts", PYOP__CAND_INVALID_PATH, -1,
         "cannot open directory: No such file or directory");
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

/* ===================================================== security policy */

static char *so_of(const char *variant) {
  char *d = fb_variant(variant);
  char *p = fb_join(d, "libpyop_bridge.so");
  free(d);
  char *r = fb_real(p);
  free(p);
  return r;
}

/* open_trusted must fail with status and exactly this reason. */
static void expect_refused(const char *path, int status, const char *want) {
  int fd = 12345;
  char *resolved = (char *)"unchanged";
  struct stat st;
  pyop__sb why = PYOP__SB_INIT;
  int fds = fb_count_fds();
  (void)pyop__error(PYOP_EINVAL, "an earlier error");
  assert_int_equal(pyop__open_trusted(path, &fd, &resolved, &st, &why), status);
  assert_int_equal(fd, -1);
  assert_null(resolved);
  assert_string_equal(pyop__sb_str(&why), want);
  /* rc and why are the one carrier: the thread's last error is the caller's. */
  assert_string_equal(pyop_last_error(), "an earlier error");
  assert_int_equal(fb_count_fds(), fds);
  pyop__sb_free(&why);
}

static void test_trusted_good(void **state) {
  (void)state;
  char *real = so_of("GOOD");
  char *link_dir = pt_mkdtemp();
  char *link = fb_join(link_dir, "via-link.so");
  assert_int_equal(symlink(real, link), 0);
  int fd;
  char *resolved;
  struct stat st;
  pyop__sb why = PYOP__SB_INIT;
  assert_int_equal(pyop__open_trusted(link, &fd, &resolved, &st, &why), PYOP_OK);
  assert_true(fd >= 0);
  assert_string_equal(resolved, real); /* the symlink is resolved */
  assert_true(S_ISREG(st.st_mode));
  void *h = NULL;
  assert_int_equal(pyop__dlopen_trusted(fd, resolved, &st, RTLD_NOW | RTLD_LOCAL, &h, &why),
                   PYOP_OK);
  assert_non_null(h);
  assert_non_null(dlsym(h, "pyop_bridge_entry"));
  dlclose(h);
  close(fd);
  pyop__free(resolved);
  assert_int_equal(why.len, 0);
  pyop__sb_free(&why);
  fb_rmtree(link_dir);
  free(link_dir);
  free(link);
  free(real);
}

static void test_trusted_refusals(void **state) {
  (void)state;
  char want[1024];
  /* World-writable file (the world_writable variant: chmod o+w at build). */
  char *ww = so_of("WORLD_WRITABLE");
  snprintf(want, sizeof want, "%s: writable by others (mode 0757)", ww);
  expect_refused(ww, PYOP_ESECURITY, want);

  /* A symlink to it, from a safe directory: resolved and refused. */
  char *tmp = pt_mkdtemp();
  char *link = fb_join(tmp, "innocent.so");
  assert_int_equal(symlink(ww, link), 0);
  expect_refused(link, PYOP_ESECURITY, want);

  /* Group-writable file, then group-writable directory. */
  char *sub = fb_join(tmp, "sub");
  assert_int_equal(mkdir(sub, 0755), 0);
  assert_int_equal(chmod(sub, 0755), 0);
  char *so = fb_join(sub, "b.so");
  fb_copy(ww, so, 0775);
  snprintf(want, sizeof want, "%s: writable by group (mode 0775)", so);
  expect_refused(so, PYOP_ESECURITY, want);
  assert_int_equal(chmod(so, 0666), 0);
  snprintf(want, sizeof want, "%s: writable by group and others (mode 0666)", so);
  expect_refused(so, PYOP_ESECURITY, want);
  assert_int_equal(chmod(so, 0755), 0);
  assert_int_equal(chmod(sub, 0775), 0);
  snprintf(want, sizeof want, "%s: directory writable by group (mode 0775)", sub);
  expect_refused(so, PYOP_ESECURITY, want);
  assert_int_equal(chmod(sub, 01777), 0); /* sticky does not make it safe */
  snprintf(want, sizeof want,
           "%s: directory writable by group and others (mode 1777)", sub);
  expect_refused(so, PYOP_ESECURITY, want);
  assert_int_equal(chmod(sub, 0755), 0);

  /* Not a regular file; missing. */
  snprintf(want, sizeof want, "%s: not a regular file (directory)", sub);
  expect_refused(sub, PYOP_ESECURITY, want);
  char *missing = fb_join(tmp, "missing.so");
  snprintf(want, sizeof want, "%s: cannot resolve: No such file or directory", missing);
  expect_refused(missing, PYOP_ENOENT, want);

  free(missing);
  free(so);
  free(sub);
  free(link);
  fb_rmtree(tmp);
  free(tmp);
  free(ww);
}

static uid_t fake_euid(void) { return 4242; }

static void test_trusted_owner(void **state) {
  (void)state;
  char *tmp = pt_mkdtemp();
  char *sub = fb_join(tmp, "sub");
  assert_int_equal(mkdir(sub, 0755), 0);
  char *so = fb_join(sub, "b.so");
  char *good = so_of("GOOD");
  fb_copy(good, so, 0755);
  char want[1024];
  uid_t me = geteuid();
  if (me == 0) {
    /* As root: a file owned by another user is refused. */
    assert_int_equal(chown(so, 12345, 12345), 0);
    snprintf(want, sizeof want, "%s: owned by uid 12345 (must be root or uid 0)", so);
    expect_refused(so, PYOP_ESECURITY, want);
    assert_int_equal(chown(so, 0, 0), 0);
    assert_int_equal(chown(sub, 12345, 12345), 0);
    snprintf(want, sizeof want,
             "%s: directory owned by uid 12345 (must be root or uid 0)", sub);
    expect_refused(so, PYOP_ESECURITY, want);
    assert_int_equal(chown(sub, 0, 0), 0);
  } else {
    /* Not root: pretend to run as another uid. */
    pyop__sys saved = pyop__sys_table;
    pyop__sys_table.geteuid = fake_euid;
    snprintf(want, sizeof want, "%s: owned by uid %u (must be root or uid 4242)",
             so, (unsigned)me);
    expect_refused(so, PYOP_ESECURITY, want);
    pyop__sys_table = saved;
  }
  free(good);
  free(so);
  free(sub);
  fb_rmtree(tmp);
  free(tmp);
}

static int no_proc_open(const char *path, int flags) {
  if (strcmp(path, "/proc/self/maps") == 0) {
    errno = ENOENT;
    return -1;
  }
  return open(path, flags);
}
static int eio_proc_open(const char *path, int flags) {
  if (strcmp(path, "/proc/self/maps") == 0) {
    errno = EIO;
    return -1;
  }
  return open(path, flags);
}
static int swapped_stat(const char *path, struct stat *st) {
  int rc = stat(path, st);
  if (rc == 0) st->st_ino++;
  return rc;
}
static void *null_dlopen(const char *path, int flags) {
  (void)path;
  (void)flags;
  return NULL;
}

/* dlopen_trusted's status of the last open_and_load. */
static int load_status;

/* Opens path with open_trusted and returns dlopen_trusted's handle (its
 * status in load_status). The thread's last error is never touched: rc and
 * why are the one carrier. */
static void *open_and_load(const char *path, pyop__sb *why) {
  int fd;
  char *resolved;
  struct stat st;
  (void)pyop__error(PYOP_EINVAL, "an earlier error");
  assert_int_equal(pyop__open_trusted(path, &fd, &resolved, &st, why), PYOP_OK);
  void *h = (void *)1;
  load_status = pyop__dlopen_trusted(fd, resolved, &st, RTLD_NOW | RTLD_LOCAL, &h, why);
  assert_true((load_status == PYOP_OK) == (h != NULL));
  assert_string_equal(pyop_last_error(), "an earlier error");
  assert_int_equal(pyop_last_status(), PYOP_EINVAL);
  close(fd);
  pyop__free(resolved);
  return h;
}

static void test_dlopen_trusted_paths(void **state) {
  (void)state;
  char *good = so_of("GOOD");
  pyop__sb why = PYOP__SB_INIT;
  char want[1024];

  /* Without /proc: the path is stat'ed again and compared. */
  pyop__sys saved = pyop__sys_table;
  pyop__sys_table.open = no_proc_open;
  void *h = open_and_load(good, &why);
  assert_non_null(h);
  dlclose(h);
  pyop__sys_table.stat = swapped_stat;
  assert_null(open_and_load(good, &why));
  snprintf(want, sizeof want,
           "%s: file changed between the security check and dlopen", good);
  assert_string_equal(pyop__sb_str(&why), want);
  assert_int_equal(load_status, PYOP_ESECURITY);
  pyop__sb_free(&why);
  pyop__sys_table = saved;
  /* With /proc, stat plays no part: the mappings are compared. */
  pyop__sys_table.stat = swapped_stat;
  h = open_and_load(good, &why);
  assert_non_null(h);
  dlclose(h);
  pyop__sys_table = saved;
  /* /proc there but unreadable: refused, not trusted blindly. */
  pyop__sys_table.open = eio_proc_open;
  assert_null(open_and_load(good, &why));
  snprintf(want, sizeof want, "cannot read /proc/self/maps: Input/output error");
  assert_string_equal(pyop__sb_str(&why), want);
  assert_int_equal(load_status, PYOP_EIO);
  pyop__sb_free(&why);
  pyop__sys_table = saved;

  /* Not an ELF file: dlerror text, with our path, not /proc/self/fd/N. */
  char *tmp = pt_mkdtemp();
  char *bad = fb_join(tmp, "bad.so");
  pt_write_file(bad, "this is not a shared object, only text that is long "
                     "enough for the loader to read a whole ELF header\n");
  assert_null(open_and_load(bad, &why));
  snprintf(want, sizeof want, "%s: ", bad);
  assert_memory_equal(pyop__sb_str(&why), want, strlen(want));
  assert_non_null(strstr(pyop__sb_str(&why), "invalid ELF header"));
  assert_null(strstr(pyop__sb_str(&why), "/proc/self/fd"));
  pyop__sb_free(&why);

  /* A stale dlerror never stands in for ours. */
  assert_null(dlopen("/nonexistent/stale.so", RTLD_NOW));
  pyop__sys_table.dlopen = null_dlopen;
  assert_null(open_and_load(good, &why));
  snprintf(want, sizeof want, "%s: unknown dynamic loader error", good);
  assert_string_equal(pyop__sb_str(&why), want);
  pyop__sb_free(&why);
  pyop__sys_table = saved;

  fb_rmtree(tmp);
  free(tmp);
  free(bad);
  free(good);
}

/* Calls a bridge's entry and returns its build_info text. */
static const char *build_info_of(void *h) {
  pyop_bridge_entry_fn entry = (pyop_bridge_entry_fn)dlsym(h, "pyop_bridge_entry");
  assert_non_null(entry);
  pyop_bridge_request req = {sizeof req, PYOP_BRIDGE_ABI_MAJOR, PYOP_BRIDGE_ABI_MINOR, NULL};
  const pyop_bridge_api *api = NULL;
  assert_int_equal(entry(&req, &api), PYOP_OK);
  return api->build_info.data;
}

/* A library loaded through /proc/self/fd/N keeps that name after its
 * descriptor is closed; the next file opened as fd N must not be taken for
 * it. */
static void test_dlopen_trusted_name_reuse(void **state) {
  (void)state;
  char *good = so_of("GOOD"), *other = so_of("NEWER_MINOR");
  pyop__sb why = PYOP__SB_INIT;
  int fd1, fd2;
  char *r1, *r2;
  struct stat st1, st2;
  assert_int_equal(pyop__open_trusted(good, &fd1, &r1, &st1, &why), PYOP_OK);
  void *h1 = NULL, *h2 = NULL;
  assert_int_equal(pyop__dlopen_trusted(fd1, r1, &st1, RTLD_NOW | RTLD_LOCAL, &h1, &why),
                   PYOP_OK);
  assert_non_null(h1);
  close(fd1);
  assert_int_equal(pyop__open_trusted(other, &fd2, &r2, &st2, &why), PYOP_OK);
  assert_int_equal(fd2, fd1); /* the number is reused */
  assert_int_equal(pyop__dlopen_trusted(fd2, r2, &st2, RTLD_NOW | RTLD_LOCAL, &h2, &why),
                   PYOP_OK);
  assert_non_null(h2);
  close(fd2);
  assert_ptr_not_equal(h1, h2);
  assert_string_equal(build_info_of(h1), "fake bridge GOOD");
  assert_string_equal(build_info_of(h2), "fake bridge NEWER_MINOR");
  dlclose(h2);
  dlclose(h1);
  pyop__free(r1);
  pyop__free(r2);
  pyop__sb_free(&why);
  free(good);
  free(other);
}


/* A FIFO or a device where a shared object is expected (bridge, kernel
 * library, start-up libpython: all go through open_trusted) is refused at
 * once, naming the path and what it is. */
static void test_trusted_not_regular(void **state) {
  (void)state;
  char *tmp = pt_mkdtemp();
  char *fifo = fb_join(tmp, "libfifo.so");
  assert_int_equal(mkfifo(fifo, 0644), 0);
  int fd;
  char *resolved;
  struct stat st;
  pyop__sb why = PYOP__SB_INIT;
  char want[1024];
  alarm(20); /* a blocked open is a failure, not a stuck CI job */
  assert_int_equal(pyop__open_trusted(fifo, &fd, &resolved, &st, &why), PYOP_ESECURITY);
  alarm(0);
  snprintf(want, sizeof want, "%s: not a regular file (FIFO)", fifo);
  assert_string_equal(pyop__sb_str(&why), want);
  pyop__sb_free(&why);
  alarm(20);
  assert_int_equal(pyop__open_trusted("/dev/null", &fd, &resolved, &st, &why),
                   PYOP_ESECURITY);
  alarm(0);
  assert_string_equal(pyop__sb_str(&why), "/dev/null: not a regular file (character device)");
  pyop__sb_free(&why);
  fb_rmtree(tmp);
  free(tmp);
  free(fifo);
}

/* dlopen by path hands back an object already loaded under that name
 * without reading the file: when the file was replaced since, the object is
 * not the one checked, and it is refused. */
static void test_dlopen_trusted_replaced(void **state) {
  (void)state;
  char *good = so_of("GOOD"), *other = so_of("NEWER_MINOR");
  char *tmp = pt_mkdtemp();
  char *lib = fb_join(tmp, "libreplaced.so"), *next = fb_join(tmp, "next.so");
  fb_copy(good, lib, 0755);
  void *host = dlopen(lib, RTLD_NOW | RTLD_LOCAL); /* the host loaded it first */
  assert_non_null(host);
  fb_copy(other, next, 0755);
  assert_int_equal(rename(next, lib), 0);
  pyop__sb why = PYOP__SB_INIT;
  assert_null(open_and_load(lib, &why));
  assert_int_equal(load_status, PYOP_ESECURITY);
  if (!strstr(pyop__sb_str(&why), "is not the checked file"))
    fail_msg("%s", pyop__sb_str(&why));
  pyop__sb_free(&why);
  /* Once the old object is gone, the new file loads. */
  dlclose(host);
  void *h = open_and_load(lib, &why);
  assert_non_null(h);
  assert_string_equal(build_info_of(h), "fake bridge NEWER_MINOR");
  dlclose(h);
  pyop__sb_free(&why);
  fb_rmtree(tmp);
  free(tmp);
  free(lib);
  free(next);
  free(good);
  free(other);
}

static int run_trusted(void *user) {
  const char *path = user;
  int fd;
  char *resolved;
  struct stat st;
  pyop__sb why = PYOP__SB_INIT;
  int rc = pyop__open_trusted(path, &fd, &resolved, &st, &why);
  if (rc == PYOP_OK) {
    void *h;
    rc = pyop__dlopen_trusted(fd, resolved, &st, RTLD_NOW | RTLD_LOCAL, &h, &why);
    if (rc == PYOP_OK) dlclose(h);
    close(fd);
    pyop__free(resolved);
  }
  assert_true(rc == PYOP_OK || why.len > 0 || why.oom);
  pyop__sb_free(&why);
  return rc;
}

static void check_trusted(void *user, int rc) {
  (void)user;
  assert_int_not_equal(rc, PYOP_OK);
  assert_int_equal(pt_live_allocs(), 0);
  assert_int_equal(fb_count_fds(), fds_before);
}

static void test_trusted_faults(void **state) {
  (void)state;
  char *good = so_of("GOOD");
  fds_before = fb_count_fds();
  long n = pt_faults_sweep(run_trusted, check_trusted, good, 200);
  print_message("%ld fault points swept\n", n);
  assert_true(n >= 6);
  free(good);
}

static int group_setup(void **state) {
  (void)state;
  fb_key(&key);
  return 0;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_manifest_good, count_setup, count_teardown),
      cmocka_unit_test_setup_teardown(test_manifest_minimal_and_abi3, count_setup, count_teardown),
      cmocka_unit_test_setup_teardown(test_manifest_bad, count_setup, count_teardown),
      cmocka_unit_test_setup_teardown(test_manifest_limits, count_setup, count_teardown),
      cmocka_unit_test_setup_teardown(test_manifest_alloc_faults, count_setup, count_teardown),
      cmocka_unit_test_setup_teardown(test_manifest_read, count_setup, count_teardown),
      cmocka_unit_test_setup_teardown(test_candidates_order, count_setup, count_teardown),
      cmocka_unit_test_setup_teardown(test_override_rules, count_setup, count_teardown),
      cmocka_unit_test_setup_teardown(test_mismatch_reasons, count_setup, count_teardown),
      cmocka_unit_test_setup_teardown(test_root_missing_and_default, count_setup, count_teardown),
      cmocka_unit_test_setup_teardown(test_candidates_faults, count_setup, count_teardown),
      cmocka_unit_test_setup_teardown(test_trusted_good, count_setup, count_teardown),
      cmocka_unit_test_setup_teardown(test_trusted_refusals, count_setup, count_teardown),
      cmocka_unit_test_setup_teardown(test_trusted_owner, count_setup, count_teardown),
      cmocka_unit_test_setup_teardown(test_dlopen_trusted_paths, count_setup, count_teardown),
      cmocka_unit_test_setup_teardown(test_trusted_not_regular, count_setup, count_teardown),
      cmocka_unit_test_setup_teardown(test_dlopen_trusted_replaced, count_setup, count_teardown),
      cmocka_unit_test_setup_teardown(test_dlopen_trusted_name_reuse, count_setup, count_teardown),
      cmocka_unit_test_setup_teardown(test_trusted_faults, count_setup, count_teardown),
  };
  return cmocka_run_group_tests_name("artifacts", tests, group_setup, NULL);
}
