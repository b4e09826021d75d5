/*
 * Runtime key resolution from fake symbols: PYOP_SYS(dlsym) is replaced by a
 * table of test-local stand-ins for Py_Version, Py_IsInitialized, ...
 * so no libpython is needed. One test also loads the real libpython3.x.so
 * when the machine has one.
 */
#include "testutil.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime_key.h"

/* ------------------------------------------------------- fake symbols */

static unsigned long fake_Py_Version;
static int fake_initialized;
static const char *fake_version_text;
static int fake_marker; /* address handed out for flag symbols */

static struct {
  bool is_initialized, version, get_version, merge_zero, decref_shared,
      ref_total, global_ref_total;
} have;

static int fake_Py_IsInitialized(void) { return fake_initialized; }
static const char *fake_Py_GetVersion(void) { return fake_version_text; }

static void *fake_dlsym(void *handle, const char *name) {
  assert_true(handle == RTLD_DEFAULT);
  if (strcmp(name, "Py_IsInitialized") == 0)
    return have.is_initialized ? (void *)fake_Py_IsInitialized : NULL;
  if (strcmp(name, "Py_Version") == 0) return have.version ? &fake_Py_Version : NULL;
  if (strcmp(name, "Py_GetVersion") == 0)
    return have.get_version ? (void *)fake_Py_GetVersion : NULL;
  if (strcmp(name, "_Py_MergeZeroLocalRefcount") == 0)
    return have.merge_zero ? &fake_marker : NULL;
  if (strcmp(name, "_Py_DecRefShared") == 0)
    return have.decref_shared ? &fake_marker : NULL;
  if (strcmp(name, "_Py_RefTotal") == 0) return have.ref_total ? &fake_marker : NULL;
  if (strcmp(name, "_Py_GetGlobalRefTotal") == 0)
    return have.global_ref_total ? &fake_marker : NULL;
  return NULL;
}

static int setup(void **state) {
  (void)state;
  pyop__sys_reset();
  pyop__sys_table.dlsym = fake_dlsym;
  memset(&have, 0, sizeof have);
  have.is_initialized = true;
  have.version = true;
  fake_initialized = 1;
  fake_Py_Version = 0x030b04f0; /* 3.11.4 final */
  fake_version_text = NULL;
  return 0;
}

static int teardown(void **state) {
  (void)state;
  pyop__sys_reset();
  return 0;
}

/* "cp311-<machine>" with the machine of this build. */
static void expect_text(const pyop__runtime_key *k, const char *tag) {
  char want[64];
  snprintf(want, sizeof want, "%s-%s", tag, k->machine);
  assert_string_equal(k->tag, tag);
  assert_string_equal(k->text, want);
}

/* ---------------------------------------------------------------- tests */

static void test_cp311(void **state) {
  (void)state;
  pyop__runtime_key k;
  assert_int_equal(pyop__runtime_key_resolve(&k), PYOP_OK);
  assert_true(k.present);
  assert_true(k.initialized);
  assert_int_equal(k.major, 3);
  assert_int_equal(k.minor, 11);
  assert_int_equal(k.micro, 4);
  assert_false(k.free_threaded);
  assert_false(k.debug);
  assert_string_equal(k.abi_flags, "");
  expect_text(&k, "cp311");
#if defined(__x86_64__)
  assert_string_equal(k.text, "cp311-x86_64");
#elif defined(__aarch64__)
  assert_string_equal(k.text, "cp311-aarch64");
#endif
}

static void test_free_threaded_313t(void **state) {
  (void)state;
  fake_Py_Version = 0x030d01f0;
  have.decref_shared = true;
  pyop__runtime_key k;
  assert_int_equal(pyop__runtime_key_resolve(&k), PYOP_OK);
  assert_true(k.free_threaded);
  assert_string_equal(k.abi_flags, "t");
  expect_text(&k, "cp313t");

  have.decref_shared = false; /* either symbol is enough */
  have.merge_zero = true;
  assert_int_equal(pyop__runtime_key_resolve(&k), PYOP_OK);
  expect_text(&k, "cp313t");
}

static void test_debug_builds(void **state) {
  (void)state;
  pyop__runtime_key k;
  have.ref_total = true; /* <= 3.11 */
  assert_int_equal(pyop__runtime_key_resolve(&k), PYOP_OK);
  assert_true(k.debug);
  expect_text(&k, "cp311d");

  have.ref_total = false;
  have.global_ref_total = true; /* 3.12+ */
  fake_Py_Version = 0x030c00f0;
  assert_int_equal(pyop__runtime_key_resolve(&k), PYOP_OK);
  expect_text(&k, "cp312d");

  fake_Py_Version = 0x030d00f0;
  have.merge_zero = true;
  assert_int_equal(pyop__runtime_key_resolve(&k), PYOP_OK);
  assert_string_equal(k.abi_flags, "td");
  expect_text(&k, "cp313td");
}

static void test_pre_311_uses_py_get_version(void **state) {
  (void)state;
  have.version = false;
  have.get_version = true;
  fake_version_text = "3.10.12 (main, Nov 20 2023, 15:14:05) [GCC 11.4.0]";
  pyop__runtime_key k;
  assert_int_equal(pyop__runtime_key_resolve(&k), PYOP_OK);
  assert_int_equal(k.minor, 10);
  assert_int_equal(k.micro, 12);
  expect_text(&k, "cp310");

  fake_version_text = "3.9 (no micro)";
  assert_int_equal(pyop__runtime_key_resolve(&k), PYOP_OK);
  expect_text(&k, "cp39");
}

static void test_unreadable_version_text(void **state) {
  (void)state;
  have.version = false;
  have.get_version = true;
  fake_version_text = "banana";
  pyop__runtime_key k;
  assert_int_equal(pyop__runtime_key_resolve(&k), PYOP_ENOPYTHON);
  assert_false(k.present);
  assert_string_equal(pyop_last_error(),
                      "Python runtime in the process reports an unreadable "
                      "version \"banana\" (Py_GetVersion)");
}

static void test_missing_is_initialized(void **state) {
  (void)state;
  have.is_initialized = false;
  pyop__runtime_key k;
  assert_int_equal(pyop__runtime_key_resolve(&k), PYOP_ENOPYTHON);
  assert_false(k.present);
  assert_string_equal(pyop_last_error(),
                      "no Python runtime in the process (symbol "
                      "Py_IsInitialized not found): set "
                      "pyop_options.start_python = true with pyop_set_options() "
                      "before loading to let libpyop start the build's Python, "
                      "or link libpython into the host (or dlopen it "
                      "RTLD_GLOBAL) and initialise it");
}

static void test_missing_version_symbols(void **state) {
  (void)state;
  have.version = false;
  pyop__runtime_key k;
  assert_int_equal(pyop__runtime_key_resolve(&k), PYOP_ENOPYTHON);
  assert_false(k.present);
  assert_non_null(strstr(pyop_last_error(), "neither symbol Py_Version"));
  assert_non_null(strstr(pyop_last_error(), "nor Py_GetVersion"));
}

static void test_not_initialised(void **state) {
  (void)state;
  fake_initialized = 0;
  pyop__runtime_key k;
  assert_int_equal(pyop__runtime_key_resolve(&k), PYOP_OK);
  assert_true(k.present);
  assert_false(k.initialized);
  expect_text(&k, "cp311");
}

static void test_python2_refused(void **state) {
  (void)state;
  fake_Py_Version = 0x020712f0;
  pyop__runtime_key k;
  assert_int_equal(pyop__runtime_key_resolve(&k), PYOP_ENOPYTHON);
  assert_non_null(strstr(pyop_last_error(), "version 2.7"));
}

/* With the real dlsym: a process without libpython has no key; after
 * loading the real libpython RTLD_GLOBAL (not initialised) it has one. */
static void test_real_libpython(void **state) {
  (void)state;
  pyop__sys_reset();
  pyop__runtime_key k;
  bool had = dlsym(RTLD_DEFAULT, "Py_IsInitialized") != NULL;
  int rc = pyop__runtime_key_resolve(&k);
  assert_int_equal(rc, had ? PYOP_OK : PYOP_ENOPYTHON);

  static const char *const names[] = {"libpython3.11.so.1.0", "libpython3.11.so",
                                      "libpython3.12.so.1.0", "libpython3.13.so.1.0"};
  void *h = NULL;
  for (size_t i = 0; !h && i < PYOP__ARRAY_LEN(names); i++)
    h = dlopen(names[i], RTLD_NOW | RTLD_GLOBAL);
  if (!h) {
    skip();
    return;
  }
  assert_int_equal(pyop__runtime_key_resolve(&k), PYOP_OK);
  assert_true(k.present);
  assert_int_equal(k.major, 3);
  assert_true(k.minor >= 11);
  assert_false(k.initialized);
  assert_false(k.free_threaded);
  char want[16];
  snprintf(want, sizeof want, "cp3%u", k.minor);
  assert_string_equal(k.tag, want);
  /* Stays loaded: unloading an interpreter library is not supported. */
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_cp311, setup, teardown),
      cmocka_unit_test_setup_teardown(test_free_threaded_313t, setup, teardown),
      cmocka_unit_test_setup_teardown(test_debug_builds, setup, teardown),
      cmocka_unit_test_setup_teardown(test_pre_311_uses_py_get_version, setup, teardown),
      cmocka_unit_test_setup_teardown(test_unreadable_version_text, setup, teardown),
      cmocka_unit_test_setup_teardown(test_missing_is_initialized, setup, teardown),
      cmocka_unit_test_setup_teardown(test_missing_version_symbols, setup, teardown),
      cmocka_unit_test_setup_teardown(test_not_initialised, setup, teardown),
      cmocka_unit_test_setup_teardown(test_python2_refused, setup, teardown),
      cmocka_unit_test_setup_teardown(test_real_libpython, setup, teardown),
  };
  return cmocka_run_group_tests_name("runtime_key", tests, NULL, NULL);
}
