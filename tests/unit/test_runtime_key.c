/*
 * Runtime key resolution from fake symbols: PYOP_SYS(dlsym) is replaced by a
 * table of test-local stand-ins for Py_Version, Py_IsInitialized, ...
 * so no libpython is needed. One test also loads the real libpython3.x.so
 * when the machine has one.
 */
#include "testutil.h"

#include <dlfcn.h>
#include <link.h>
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
  /* A major alone is no version; a part of five digits is read, six are
   * not. */
  fake_version_text = "3 (no minor)";
  assert_int_equal(pyop__runtime_key_resolve(&k), PYOP_ENOPYTHON);
  assert_non_null(strstr(pyop_last_error(), "unreadable version \"3 (no minor)\""));
  fake_version_text = "3.12.99999";
  assert_int_equal(pyop__runtime_key_resolve(&k), PYOP_OK);
  assert_int_equal(k.minor, 12);
  assert_int_equal(k.micro, 99999);
  fake_version_text = "3.12.100000";
  assert_int_equal(pyop__runtime_key_resolve(&k), PYOP_ENOPYTHON);
  assert_false(k.present);
  /* The parts are separated by dots only: "3-12" names no minor. */
  fake_version_text = "3-12 (a dash)";
  assert_int_equal(pyop__runtime_key_resolve(&k), PYOP_ENOPYTHON);
  assert_false(k.present);
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

/*
 * A process may export data under a name of Python's C API: the symbol is
 * checked (its ELF type, through the seam's dladdr1) before it is called or
 * read. The stand-ins are local symbols, which dladdr1 finds no entry for:
 * this dladdr1 describes them as a host would export them.
 */
static struct {
  const void *addr;
  unsigned char type; /* STT_* of the symbol at addr */
  size_t size;
  bool nothing; /* no loaded object holds any address */
  const char *fname; /* the object's name dladdr1 gives (NULL: the default) */
} fake_sym;

static int fake_dladdr1(const void *a, Dl_info *info, void **extra, int flags) {
  assert_int_equal(flags, RTLD_DL_SYMENT);
  static ElfW(Sym) es;
  if (fake_sym.nothing) return 0;
  memset(info, 0, sizeof *info);
  info->dli_fname = fake_sym.fname ? fake_sym.fname : "/opt/host/bin/engine";
  *extra = NULL;
  if (a == fake_sym.addr) {
    memset(&es, 0, sizeof es);
    es.st_info = ELF64_ST_INFO(STB_GLOBAL, fake_sym.type);
    es.st_size = fake_sym.size;
    *extra = &es;
  }
  return 1;
}

static void expect_refused(const char *want) {
  pyop__runtime_key k;
  assert_int_equal(pyop__runtime_key_resolve(&k), PYOP_ENOPYTHON);
  assert_false(k.present);
  if (!strstr(pyop_last_error(), want))
    fail_msg("last error lacks \"%s\":\n%s", want, pyop_last_error());
}

static void test_symbol_kinds_checked(void **state) {
  (void)state;
  pyop__sys_table.dladdr1 = fake_dladdr1;
  memset(&fake_sym, 0, sizeof fake_sym);
  pyop__runtime_key k;
  assert_int_equal(pyop__runtime_key_resolve(&k), PYOP_OK); /* no entry: as given */

  /* Py_IsInitialized exported as data (the host's own variable). */
  fake_sym.addr = (const void *)fake_Py_IsInitialized;
  fake_sym.type = STT_OBJECT;
  fake_sym.size = 4;
  expect_refused("no Python runtime in the process: symbol Py_IsInitialized is a data "
                 "object in /opt/host/bin/engine, not a function (the process exports a "
                 "name of Python's C API that is not Python's)");
  fake_sym.type = STT_TLS;
  expect_refused("symbol Py_IsInitialized is not a function in /opt/host/bin/engine");
  fake_sym.type = STT_FUNC;
  assert_int_equal(pyop__runtime_key_resolve(&k), PYOP_OK);

  /* Before 3.11: Py_GetVersion is called. */
  have.version = false;
  have.get_version = true;
  fake_version_text = "3.10.12";
  fake_sym.addr = (const void *)fake_Py_GetVersion;
  fake_sym.type = STT_OBJECT;
  expect_refused("symbol Py_GetVersion is a data object in /opt/host/bin/engine, not a "
                 "function");
  fake_sym.type = STT_GNU_IFUNC;
  assert_int_equal(pyop__runtime_key_resolve(&k), PYOP_OK);
  assert_int_equal(k.minor, 10);

  /* Py_Version is read: a function there, or data too small, is refused. */
  have.version = true;
  fake_sym.addr = &fake_Py_Version;
  fake_sym.type = STT_FUNC;
  expect_refused("symbol Py_Version is a function in /opt/host/bin/engine, not a data "
                 "object");
  fake_sym.type = STT_OBJECT;
  fake_sym.size = 2;
  expect_refused("symbol Py_Version in /opt/host/bin/engine is 2 bytes, not an "
                 "unsigned long");
  fake_sym.size = sizeof fake_Py_Version;
  assert_int_equal(pyop__runtime_key_resolve(&k), PYOP_OK);
  assert_int_equal(k.minor, 11);
  /* A size of 0 says nothing (not "0 bytes"), and a common symbol is data
   * too: both read (configuration pass, src.cf.runtime_key.size_zero_refused,
   * common_refused). */
  fake_sym.size = 0;
  assert_int_equal(pyop__runtime_key_resolve(&k), PYOP_OK);
  assert_int_equal(k.minor, 11);
  fake_sym.type = STT_COMMON;
  fake_sym.size = sizeof fake_Py_Version;
  assert_int_equal(pyop__runtime_key_resolve(&k), PYOP_OK);
  assert_int_equal(k.minor, 11);
  fake_sym.type = STT_OBJECT;

  /* An address no loaded object holds cannot be checked: refused. */
  fake_sym.nothing = true;
  expect_refused("symbol Py_IsInitialized cannot be checked: no loaded object holds its "
                 "address");
}

/* A symbol of the main executable, which dladdr names "" (glibc's name of
 * the main program): the refusal says "the process", not an empty name
 * (both-sides pass, session 14: the empty name beside a path). */
static void test_symbol_in_main_program(void **state) {
  (void)state;
  pyop__sys_table.dladdr1 = fake_dladdr1;
  memset(&fake_sym, 0, sizeof fake_sym);
  fake_sym.addr = (const void *)fake_Py_IsInitialized;
  fake_sym.type = STT_OBJECT;
  fake_sym.size = 4;
  fake_sym.fname = "";
  expect_refused("symbol Py_IsInitialized is a data object in the process, not a function");
  fake_sym.type = STT_FUNC;
  pyop__runtime_key k;
  assert_int_equal(pyop__runtime_key_resolve(&k), PYOP_OK);
  have.version = true;
  fake_sym.addr = &fake_Py_Version;
  fake_sym.type = STT_OBJECT;
  fake_sym.size = 2;
  expect_refused("symbol Py_Version in the process is 2 bytes, not an unsigned long");
  memset(&fake_sym, 0, sizeof fake_sym);
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
      cmocka_unit_test_setup_teardown(test_symbol_kinds_checked, setup, teardown),
      cmocka_unit_test_setup_teardown(test_symbol_in_main_program, setup, teardown),
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
