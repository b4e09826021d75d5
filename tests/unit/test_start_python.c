/*
 * Which Python start_python starts (src/start_python.c): the key asked
 * for, the build's default, a bridge that runs the lanes asked for, in the
 * build's order; the notes and errors that say so. Fake artifact roots of
 * manifests only (nothing is opened), every allocation and OS call of the
 * choice failed in turn.
 */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../fake_bridge/fake_bridge_util.h"
#include "candidates.h"
#include "pyop/bridge_abi.h"
#include "start_python.h"

#define PYTHONS "/usr/bin/python3.11;/opt/py/bin/python3.13"

static char *root;

/* root/name with a manifest for tag+flags; lib "" records no libpython;
 * minor is the bridge ABI minor; hex the Python's sys.hexversion (0: none
 * recorded). */
static void artifact_hex(const char *name, const char *tag, const char *flags, const char *lib,
                         unsigned minor, unsigned long hex) {
  char *dir = fb_join(root, name);
  assert_int_equal(mkdir(dir, 0755), 0);
  char text[1024], version[64] = "";
  if (hex) snprintf(version, sizeof version, "python_version_hex=0x%lx\n", hex);
  snprintf(text, sizeof text,
           "format=1\npython_tag=%s\nabi_flags=%s\nplatform=x86_64\n"
           "bridge=libpyop_bridge.so\nbridge_abi_major=%u\nbridge_abi_minor=%u\n%s%s%s%s",
           tag, flags, PYOP_BRIDGE_ABI_MAJOR, minor, lib[0] ? "libpython=" : "", lib,
           lib[0] ? "\n" : "", version);
  char *mf = fb_join(dir, "manifest.txt");
  pt_write_file(mf, text);
  free(mf);
  free(dir);
}

static void artifact(const char *name, const char *tag, const char *flags, const char *lib,
                     unsigned minor) {
  artifact_hex(name, tag, flags, lib, minor, 0);
}

static int setup(void **state) {
  pt_seam_setup(state);
  root = pt_mkdtemp();
  pyop__artifacts_set_root(root);
  return 0;
}

static int teardown(void **state) {
  pt_rmtree(root);
  free(root);
  root = NULL;
  return pt_seam_teardown(state);
}

/* cp311 (the default), cp312 and cp313 that run lanes, cp313t, and cp314
 * whose bridge speaks ABI 1.5. */
static void five(void) {
  artifact("cp311-x86_64", "cp311", "", "/usr/lib/libpython3.11.so.1.0", 6);
  artifact("cp312-x86_64", "cp312", "", "/opt/py/lib/libpython3.12.so.1.0", 6);
  artifact("cp313-x86_64", "cp313", "", "/opt/py/lib/libpython3.13.so.1.0", 6);
  artifact("cp313t-x86_64", "cp313", "t", "/opt/py/lib/libpython3.13t.so.1.0", 6);
  artifact("cp314-x86_64", "cp314", "", "/opt/py/lib/libpython3.14.so.1.0", 5);
}

#define ORDER "cp311-x86_64;cp313-x86_64;cp312-x86_64"

static void choose_ok(const char *asked, uint32_t lanes, const char *order, const char *want,
                      pyop__start_choice *ch) {
  int rc = pyop__start_choose_with("cp311-x86_64", order, PYTHONS, asked, lanes, ch);
  if (rc != PYOP_OK) fail_msg("choose failed: %s", pyop_last_error());
  assert_string_equal(ch->key, want);
}

static void has(const char *text, const char *needle) {
  if (!text || !strstr(text, needle)) fail_msg("\"%s\" not in \"%s\"", needle, text);
}

/* Without lanes: the build's default; with "" asked, too. */
static void test_default(void **state) {
  (void)state;
  five();
  pyop__start_choice ch;
  choose_ok(NULL, 0, ORDER, "cp311-x86_64", &ch);
  assert_string_equal(ch.libpython, "/usr/lib/libpython3.11.so.1.0");
  assert_null(ch.note);
  pyop__start_choice_free(&ch);
  choose_ok("", 0, ORDER, "cp311-x86_64", &ch);
  assert_null(ch.note);
  pyop__start_choice_free(&ch);
}

/* Lanes asked for, the default cannot run them: the first of the build's
 * order that can (cp313 before cp312 here, not name order), said in an
 * info note naming the default and why. */
static void test_lanes_prefer_build_order(void **state) {
  (void)state;
  five();
  pyop__start_choice ch;
  choose_ok(NULL, 2, ORDER, "cp313-x86_64", &ch);
  assert_string_equal(ch.libpython, "/opt/py/lib/libpython3.13.so.1.0");
  assert_false(ch.note_warns);
  has(ch.note, "start_python: lanes asked for (2): starting cp313-x86_64 instead of the "
               "build's default cp311-x86_64 (Python 3.11 has no per-interpreter GIL)");
  pyop__start_choice_free(&ch);
  /* Not in the build's order: name order, after the build's. */
  choose_ok(NULL, 1, "cp311-x86_64", "cp312-x86_64", &ch);
  pyop__start_choice_free(&ch);
}

/* Asked for by key: that one, even when another would run the lanes; the
 * warning names the reason, the bridges and the key to set. */
static void test_asked_key(void **state) {
  (void)state;
  five();
  pyop__start_choice ch;
  choose_ok("cp312-x86_64", 0, ORDER, "cp312-x86_64", &ch);
  assert_null(ch.note);
  pyop__start_choice_free(&ch);
  choose_ok("cp313t-x86_64", 4, ORDER, "cp313t-x86_64", &ch);
  assert_true(ch.note_warns);
  has(ch.note, "lanes: 4 asked for, but start_python_key cp313t-x86_64 cannot run them "
               "(Python 3.13t is free-threaded: its threads run Python in parallel without "
               "lanes): the Python ops run in the main interpreter, those of different op "
               "instances in parallel; the bridges of this libpyop: cp311-x86_64 (Python 3.11 has no per-interpreter GIL), "
               "cp313-x86_64 (runs lanes), cp312-x86_64 (runs lanes), cp313t-x86_64 (Python "
               "3.13t is free-threaded");
  has(ch.note, "cp314-x86_64 (its bridge speaks ABI 1.5, lanes need 1.6)");
  has(ch.note, "; set pyop_options.start_python_key = \"cp313-x86_64\" to run lanes");
  pyop__start_choice_free(&ch);
}

/* The siblings of the lanes rules' other values (both-sides pass, session
 * 14): a free-threaded debug build ("td", not only "t") runs no lanes and
 * its warning says the ops still run in parallel; a bridge of another ABI
 * major runs none whatever its minor (2.7 >= 1.6). Neither is taken for
 * lanes: the default stays, and the fix is to build a bridge. */
static void test_lanes_td_and_other_major(void **state) {
  (void)state;
  artifact("cp311-x86_64", "cp311", "", "/usr/lib/libpython3.11.so.1.0", 6);
  artifact("cp313td-x86_64", "cp313", "td", "/opt/py/lib/libpython3.13td.so.1.0", 6);
  char *dir = fb_join(root, "cp314-x86_64");
  assert_int_equal(mkdir(dir, 0755), 0);
  char *mf = fb_join(dir, "manifest.txt");
  pt_write_file(mf, "format=1\npython_tag=cp314\nabi_flags=\nplatform=x86_64\n"
                    "bridge=libpyop_bridge.so\nbridge_abi_major=2\nbridge_abi_minor=7\n"
                    "libpython=/opt/py/lib/libpython3.14.so.1.0\n");
  free(mf);
  free(dir);
  const char *order = "cp311-x86_64;cp313td-x86_64;cp314-x86_64";
  pyop__start_choice ch;
  choose_ok(NULL, 2, order, "cp311-x86_64", &ch);
  assert_string_equal(ch.libpython, "/usr/lib/libpython3.11.so.1.0");
  assert_true(ch.note_warns);
  has(ch.note, "cp313td-x86_64 (Python 3.13t is free-threaded: its threads run Python in "
               "parallel without lanes)");
  has(ch.note, "cp314-x86_64 (its bridge speaks ABI 2.7, lanes need 1.6)");
  has(ch.note, "; to run lanes build a bridge for CPython 3.12 or later");
  if (strstr(ch.note, "runs lanes") || strstr(ch.note, "start_python_key = "))
    fail_msg("a bridge taken as running lanes: %s", ch.note);
  pyop__start_choice_free(&ch);
  choose_ok("cp313td-x86_64", 2, order, "cp313td-x86_64", &ch);
  assert_true(ch.note_warns);
  has(ch.note, "lanes: 2 asked for, but start_python_key cp313td-x86_64 cannot run them "
               "(Python 3.13t is free-threaded: its threads run Python in parallel without "
               "lanes): the Python ops run in the main interpreter, those of different op "
               "instances in parallel; the bridges");
  pyop__start_choice_free(&ch);
  choose_ok("cp314-x86_64", 2, order, "cp314-x86_64", &ch);
  assert_true(ch.note_warns);
  has(ch.note, "start_python_key cp314-x86_64 cannot run them (its bridge speaks ABI 2.7, "
               "lanes need 1.6): every Python op runs serially");
  pyop__start_choice_free(&ch);
}

/* A 3.12 whose manifest records a release that cannot end lanes safely
 * (3.12.1, src/lanes_floor.h) is passed over for one that can; 3.12.4 and an
 * unrecorded version are taken. On a free-threaded choice the warning says
 * that the ops still run in parallel. */
static void test_lanes_version_floor(void **state) {
  (void)state;
  artifact("cp311-x86_64", "cp311", "", "/usr/lib/libpython3.11.so.1.0", 6);
  artifact_hex("cp312-x86_64", "cp312", "", "/opt/py/lib/libpython3.12.so.1.0", 6, 0x30c01f0);
  artifact_hex("cp313-x86_64", "cp313", "", "/opt/py/lib/libpython3.13.so.1.0", 6, 0x30d00f0);
  pyop__start_choice ch;
  choose_ok(NULL, 2, "cp311-x86_64;cp312-x86_64;cp313-x86_64", "cp313-x86_64", &ch);
  pyop__start_choice_free(&ch);
  choose_ok("cp312-x86_64", 2, "cp311-x86_64;cp312-x86_64", "cp312-x86_64", &ch);
  assert_true(ch.note_warns);
  has(ch.note, "start_python_key cp312-x86_64 cannot run them (CPython 3.12.1 cannot end a "
               "sub-interpreter safely (CPython gh-119213): lanes need CPython 3.12.4 or "
               "later): every Python op runs serially in the main interpreter");
  has(ch.note, "set pyop_options.start_python_key = \"cp313-x86_64\" to run lanes");
  pyop__start_choice_free(&ch);
  pt_rmtree(root);
  assert_int_equal(mkdir(root, 0755), 0);
  artifact("cp311-x86_64", "cp311", "", "/usr/lib/libpython3.11.so.1.0", 6);
  artifact_hex("cp312-x86_64", "cp312", "", "/opt/py/lib/libpython3.12.so.1.0", 6, 0x30c04f0);
  artifact_hex("cp313t-x86_64", "cp313", "t", "/opt/py/lib/libpython3.13t.so.1.0", 6,
               0x30d00f0);
  choose_ok(NULL, 2, "cp311-x86_64;cp312-x86_64", "cp312-x86_64", &ch);
  pyop__start_choice_free(&ch);
  choose_ok("cp313t-x86_64", 2, "cp311-x86_64;cp312-x86_64", "cp313t-x86_64", &ch);
  has(ch.note, "(Python 3.13t is free-threaded: its threads run Python in parallel without "
               "lanes): the Python ops run in the main interpreter, those of different op "
               "instances in parallel; the bridges");
  pyop__start_choice_free(&ch);
}

/* No bridge runs lanes: the default, and a warning with the fix. */
static void test_no_bridge_runs_lanes(void **state) {
  (void)state;
  artifact("cp311-x86_64", "cp311", "", "/usr/lib/libpython3.11.so.1.0", 6);
  artifact("cp313t-x86_64", "cp313", "t", "/opt/py/lib/libpython3.13t.so.1.0", 6);
  artifact("cp312-x86_64", "cp312", "", "", 6); /* static: nothing to start */
  pyop__start_choice ch;
  choose_ok(NULL, 2, ORDER, "cp311-x86_64", &ch);
  assert_true(ch.note_warns);
  has(ch.note, "lanes: 2 asked for, but start_python starts cp311-x86_64, the build's "
               "default, which cannot run them (Python 3.11 has no per-interpreter GIL)");
  has(ch.note, "cp312-x86_64 (its Python has no shared libpython to start)");
  has(ch.note, "; to run lanes build a bridge for CPython 3.12 or later (not free-threaded): "
               "add it to -DPYOP_PYTHONS (this libpyop was built with -DPYOP_PYTHONS=\""
               PYTHONS "\"), e.g. -DPYOP_PYTHONS=\"" PYTHONS ";/path/to/python3.12\", "
               "rebuild and reinstall");
  pyop__start_choice_free(&ch);
  /* One lane is lanes asked for too: the same warning, and with a key
   * asked for, the same (batch 14: src.b14.start_python.one_lane_no_note,
   * no note below 2). */
  choose_ok(NULL, 1, ORDER, "cp311-x86_64", &ch);
  assert_true(ch.note_warns);
  has(ch.note, "lanes: 1 asked for, but start_python starts cp311-x86_64, the build's "
               "default, which cannot run them (Python 3.11 has no per-interpreter GIL): "
               "every Python op runs serially in the main interpreter");
  has(ch.note, "; to run lanes build a bridge for CPython 3.12 or later");
  pyop__start_choice_free(&ch);
  choose_ok("cp313t-x86_64", 1, ORDER, "cp313t-x86_64", &ch);
  assert_true(ch.note_warns);
  has(ch.note, "lanes: 1 asked for, but start_python_key cp313t-x86_64 cannot run them");
  pyop__start_choice_free(&ch);
}

/* The build's order names artifacts whole: one whose name only starts with
 * a listed name ("cp313-x86_64-alt" for "cp313-x86_64") is not listed, so
 * it comes after those that are. */
static void test_order_matches_whole_names(void **state) {
  (void)state;
  artifact("cp311-x86_64", "cp311", "", "/usr/lib/libpython3.11.so.1.0", 6);
  artifact("cp312-x86_64", "cp312", "", "/opt/py/lib/libpython3.12.so.1.0", 6);
  artifact("cp313-x86_64-alt", "cp313", "", "/opt/py/lib/libpython3.13.so.1.0", 6);
  pyop__start_choice ch;
  choose_ok(NULL, 2, "cp311-x86_64;cp313-x86_64;cp312-x86_64", "cp312-x86_64", &ch);
  pyop__start_choice_free(&ch);
  /* Listed, it is taken in its place. */
  choose_ok(NULL, 2, "cp311-x86_64;cp313-x86_64-alt;cp312-x86_64", "cp313-x86_64-alt", &ch);
  pyop__start_choice_free(&ch);
}

/* Tags that name no CPython able to run lanes, each with its reason in
 * the note: abi3 (no one version), a minor of three digits, Python 2, 3.11;
 * 3.12 with a bridge one ABI minor too old. The default is started. */
static void test_lanes_tag_reasons(void **state) {
  (void)state;
  artifact("cp311-x86_64", "cp311", "", "/usr/lib/libpython3.11.so.1.0", 6);
  char *dir = fb_join(root, "abi3-x86_64");
  assert_int_equal(mkdir(dir, 0755), 0);
  char *mf = fb_join(dir, "manifest.txt");
  char text[512];
  snprintf(text, sizeof text,
           "format=1\npython_tag=abi3\nmin_python=3.12\nplatform=x86_64\n"
           "bridge=libpyop_bridge.so\nbridge_abi_major=%u\nbridge_abi_minor=6\n"
           "libpython=/opt/py/lib/libpython3.so\n", PYOP_BRIDGE_ABI_MAJOR);
  pt_write_file(mf, text);
  free(mf);
  free(dir);
  artifact("cp3100-x86_64", "cp3100", "", "/opt/py/lib/libpython3.100.so", 6);
  artifact("cp27-x86_64", "cp27", "", "/opt/py/lib/libpython2.7.so", 6);
  artifact("cp312-x86_64", "cp312", "", "/opt/py/lib/libpython3.12.so.1.0", 5);
  pyop__start_choice ch;
  choose_ok(NULL, 2, "cp311-x86_64;abi3-x86_64;cp3100-x86_64;cp27-x86_64;cp312-x86_64",
            "cp311-x86_64", &ch);
  assert_true(ch.note_warns);
  has(ch.note, "abi3-x86_64 (built for abi3, no one CPython version)");
  has(ch.note, "cp3100-x86_64 (built for cp3100, no one CPython version)");
  has(ch.note, "cp27-x86_64 (Python 2.7 has no per-interpreter GIL)");
  has(ch.note, "cp312-x86_64 (its bridge speaks ABI");
  pyop__start_choice_free(&ch);
}

static void expect_refused(const char *dflt, const char *asked, const char *needle) {
  pyop__start_choice ch;
  memset(&ch, 0x5a, sizeof ch);
  assert_int_equal(pyop__start_choose_with(dflt, ORDER, PYTHONS, asked, 0, &ch),
                   PYOP_ENOPYTHON);
  assert_null(ch.key);
  assert_null(ch.note);
  has(pyop_last_error(), needle);
}

/* What cannot be started says why and lists the bridges there are. */
static void test_refusals(void **state) {
  (void)state;
  artifact("cp311-x86_64", "cp311", "", "/usr/lib/libpython3.11.so.1.0", 6);
  artifact("cp312-x86_64", "cp312", "", "", 6);
  char *broken = fb_join(root, "cp310-x86_64");
  assert_int_equal(mkdir(broken, 0755), 0);
  char *mf = fb_join(broken, "manifest.txt");
  pt_write_file(mf, "format=1\npython_tag=\n");
  expect_refused("cp311-x86_64", "cp399-x86_64",
                 "pyop_load: cannot start Python: start_python_key cp399-x86_64 is not among "
                 "this libpyop's bridges in ");
  has(pyop_last_error(), " (the bridges there: cp311-x86_64 (Python 3.11 has no "
                         "per-interpreter GIL), cp312-x86_64 (its Python has no shared "
                         "libpython to start))");
  expect_refused("cp311-x86_64", "cp312-x86_64",
                 "/cp312-x86_64/manifest.txt records no libpython (the bridge's Python has "
                 "no shared library)");
  expect_refused("cp310-x86_64", NULL, "pyop_load: cannot start Python: the build's default "
                                       "cp310-x86_64 in ");
  has(pyop_last_error(), " is not usable: ");
  expect_refused("cp309-x86_64", NULL, "the build's default cp309-x86_64 is not among");
  expect_refused("", NULL, "this libpyop was built without a default Python to start");
  free(mf);
  free(broken);
}

/*
 * A key names a bridge whole: a prefix of an artifact's name ("cp31",
 * "cp311"), asked for or the build's default, starts none of them but is
 * refused as not among the bridges; the whole name starts that one (batch
 * 11 survivor: src.b11.start_python.key_matched_by_prefix).
 */
static void test_key_is_a_whole_name(void **state) {
  (void)state;
  artifact("cp311-x86_64", "cp311", "", "/usr/lib/libpython3.11.so.1.0", 6);
  artifact("cp312-x86_64", "cp312", "", "/opt/py/lib/libpython3.12.so.1.0", 6);
  expect_refused("cp311-x86_64", "cp31",
                 "pyop_load: cannot start Python: start_python_key cp31 is not among this "
                 "libpyop's bridges in ");
  expect_refused("cp311-x86_64", "cp312",
                 "start_python_key cp312 is not among this libpyop's bridges in ");
  expect_refused("cp311", NULL, "the build's default cp311 is not among this libpyop's "
                                "bridges in ");
  pyop__start_choice ch;
  choose_ok("cp312-x86_64", 0, ORDER, "cp312-x86_64", &ch);
  pyop__start_choice_free(&ch);
}

/*
 * Two partitions the others leave: an artifacts root with no artifact:
 * refused, "none" listed (configuration pass,
 * src.cf.start_python.no_bridges_unnamed); lanes asked for with a key, or
 * a default, whose Python runs them: that one, and no note at all (nothing
 * passed over, nothing to warn of).
 */
static void test_asked_key_runs_lanes_and_empty_root(void **state) {
  (void)state;
  pyop__start_choice ch;
  expect_refused("cp311-x86_64", NULL,
                 "the build's default cp311-x86_64 is not among this libpyop's bridges in ");
  has(pyop_last_error(), " (the bridges there: none)");
  five();
  choose_ok("cp312-x86_64", 2, ORDER, "cp312-x86_64", &ch);
  assert_null(ch.note);
  assert_false(ch.note_warns);
  pyop__start_choice_free(&ch);
  /* The build's default running lanes: no note either. */
  int rc = pyop__start_choose_with("cp313-x86_64", ORDER, PYTHONS, NULL, 3, &ch);
  assert_int_equal(rc, PYOP_OK);
  assert_string_equal(ch.key, "cp313-x86_64");
  assert_null(ch.note);
  assert_false(ch.note_warns);
  pyop__start_choice_free(&ch);
}

static void test_key_syntax(void **state) {
  (void)state;
  static const char *const good[] = {"cp312-x86_64", "cp313t-aarch64", "abi3-x86_64", "a",
                                     "x.y_z-1"};
  static const char *const bad[] = {"", ".hidden", "../cp312", "cp312/x", "cp 312", "cp312\n",
                                    "\xc3\xa9", NULL};
  for (size_t i = 0; i < PYOP__ARRAY_LEN(good); i++) assert_true(pyop__start_key_valid(good[i]));
  for (size_t i = 0; i < PYOP__ARRAY_LEN(bad); i++) assert_false(pyop__start_key_valid(bad[i]));
  char long_key[65];
  memset(long_key, 'a', 64);
  long_key[64] = '\0';
  assert_false(pyop__start_key_valid(long_key));
  long_key[63] = '\0';
  assert_true(pyop__start_key_valid(long_key));
}

/* Every allocation and OS call of the choice fails in turn: an error (or
 * the same choice), nothing leaked. */
static int sweep_fn(void *user) {
  (void)user;
  pyop__start_choice ch;
  int rc = pyop__start_choose_with("cp311-x86_64", ORDER, PYTHONS, NULL, 2, &ch);
  if (rc == PYOP_OK) {
    /* A manifest the fault made unreadable is passed over. */
    assert_non_null(ch.key);
    assert_non_null(ch.libpython);
    pyop__start_choice_free(&ch);
  } else {
    assert_null(ch.key);
  }
  return rc;
}

static void sweep_check(void *user, int rc) {
  long *base = user;
  /* A failure to read one manifest leaves another choice or an error. */
  assert_true(rc == PYOP_OK || rc == PYOP_ENOMEM || rc == PYOP_ENOPYTHON);
  assert_int_equal(pt_live_allocs(), *base);
}

static void test_fault_sweep(void **state) {
  (void)state;
  five();
  long base = pt_live_allocs();
  long n = pt_faults_sweep(sweep_fn, sweep_check, &base, 400);
  assert_true(n > 10);
  assert_int_equal(pt_live_allocs(), base);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_default, setup, teardown),
      cmocka_unit_test_setup_teardown(test_lanes_prefer_build_order, setup, teardown),
      cmocka_unit_test_setup_teardown(test_asked_key, setup, teardown),
      cmocka_unit_test_setup_teardown(test_lanes_version_floor, setup, teardown),
      cmocka_unit_test_setup_teardown(test_lanes_td_and_other_major, setup, teardown),
      cmocka_unit_test_setup_teardown(test_no_bridge_runs_lanes, setup, teardown),
      cmocka_unit_test_setup_teardown(test_lanes_tag_reasons, setup, teardown),
      cmocka_unit_test_setup_teardown(test_order_matches_whole_names, setup, teardown),
      cmocka_unit_test_setup_teardown(test_refusals, setup, teardown),
      cmocka_unit_test_setup_teardown(test_key_is_a_whole_name, setup, teardown),
      cmocka_unit_test_setup_teardown(test_asked_key_runs_lanes_and_empty_root, setup, teardown),
      cmocka_unit_test_setup_teardown(test_key_syntax, setup, teardown),
      cmocka_unit_test_setup_teardown(test_fault_sweep, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
