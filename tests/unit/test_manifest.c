/*
 * The artifact manifest (src/manifest.c): the parser and reading
 * manifest.txt through the seam.
 */
#include "testutil.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <unistd.h>

#include "../fake_bridge/fake_bridge_util.h"
#include "manifest.h"
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
      "python_version_hex=0x30C01f0\n"
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
  assert_int_equal(m.python_version_hex, 0x30c01f0);
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
  assert_int_equal(m.python_version_hex, 0); /* absent: unknown */
  pyop__manifest_free(&m);

  static const char abi3[] =
      "format=1\npython_tag=abi3\nmin_python=3.8\nplatform=aarch64\n"
      "bridge=b.so\nbridge_abi_major=1\nbridge_abi_minor=0\nlibpython=\n";
  assert_int_equal(parse(abi3, strlen(abi3), &m, &why), PYOP_OK);
  assert_string_equal(m.python_tag, "abi3");
  assert_int_equal(m.min_python_minor, 8);
  assert_null(m.libpython); /* empty value: not set */
  pyop__manifest_free(&m);
  /* An empty python_dir is not set either: accepted, absent (configuration
   * pass, src.cf.manifest.empty_python_dir_*). */
  static const char empty_dir[] = BASE "python_dir=\n";
  assert_int_equal(parse(empty_dir, strlen(empty_dir), &m, &why), PYOP_OK);
  assert_null(m.python_dir);
  assert_string_equal(m.bridge, "libpyop_bridge.so");
  pyop__manifest_free(&m);
  pyop__sb_free(&why);
}

/* Each abi_flags value the rule names ("", t, d, td) is accepted and
 * kept as written; the reverse order "dt" is not one of them. */
static void test_manifest_abi_flags_values(void **state) {
  (void)state;
  static const char *const ok[] = {"", "t", "d", "td"};
  pyop__manifest m;
  pyop__sb why = PYOP__SB_INIT;
  char text[512];
  for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
    snprintf(text, sizeof text, BASE "abi_flags=%s\n", ok[i]);
    if (parse(text, strlen(text), &m, &why) != PYOP_OK)
      fail_msg("abi_flags=%s refused: %s", ok[i], pyop__sb_str(&why));
    assert_string_equal(m.abi_flags, ok[i]);
    pyop__manifest_free(&m);
  }
  snprintf(text, sizeof text, BASE "abi_flags=dt\n");
  assert_int_equal(parse(text, strlen(text), &m, &why), PYOP_EDESCRIPTOR);
  assert_non_null(strstr(pyop__sb_str(&why), "abi_flags: \"dt\" is not one of"));
  pyop__sb_free(&why);
}

/* Unknown keys are ignored, each once: one that is a prefix of an earlier
 * one (or the earlier one a prefix of it) is another key, no duplicate. */
static void test_manifest_unknown_key_prefixes(void **state) {
  (void)state;
  static const char text[] = "x-future-long=1\nx-future=2\n" BASE "x-future-longer=3\n";
  pyop__manifest m;
  pyop__sb why = PYOP__SB_INIT;
  if (parse(text, strlen(text), &m, &why) != PYOP_OK)
    fail_msg("refused: %s", pyop__sb_str(&why));
  assert_string_equal(m.python_tag, "cp311");
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
    /* A leading zero: no Python has that tag (a mismatch would hide the
     * broken build; issue 31). Too short, too long, not digits. */
    {"format=1\npython_tag=cp011\nplatform=x86_64\nbridge=b.so\n"
     "bridge_abi_major=1\nbridge_abi_minor=0\n",
     "line 2: python_tag: \"cp011\" is neither cpXY (e.g. cp311) nor abi3"},
    {"format=1\npython_tag=cp0311\nplatform=x86_64\nbridge=b.so\n"
     "bridge_abi_major=1\nbridge_abi_minor=0\n",
     "line 2: python_tag: \"cp0311\" is neither cpXY (e.g. cp311) nor abi3"},
    {"format=1\npython_tag=cp3\nplatform=x86_64\nbridge=b.so\n"
     "bridge_abi_major=1\nbridge_abi_minor=0\n",
     "line 2: python_tag: \"cp3\" is neither cpXY (e.g. cp311) nor abi3"},
    {"format=1\npython_tag=cp31111\nplatform=x86_64\nbridge=b.so\n"
     "bridge_abi_major=1\nbridge_abi_minor=0\n",
     "line 2: python_tag: \"cp31111\" is neither cpXY (e.g. cp311) nor abi3"},
    {"format=1\npython_tag=cp3x1\nplatform=x86_64\nbridge=b.so\n"
     "bridge_abi_major=1\nbridge_abi_minor=0\n",
     "line 2: python_tag: \"cp3x1\" is neither cpXY (e.g. cp311) nor abi3"},
    {BASE "abi_flags=x\n", "line 7: abi_flags: \"x\" is not one of \"\", t, d, td"},
    {"format=1\npython_tag=abi3\nmin_python=3.8\nabi_flags=t\nplatform=x86_64\n"
     "bridge=b.so\nbridge_abi_major=1\nbridge_abi_minor=0\n",
     "line 4: abi_flags: a stable-ABI (abi3) bridge has no ABI flags"},
    {"format=1\npython_tag=abi3\nplatform=x86_64\nbridge=b.so\n"
     "bridge_abi_major=1\nbridge_abi_minor=0\n",
     "line 2: python_tag=abi3 needs min_python (e.g. 3.11)"},
    {BASE "min_python=2.7\n", "line 7: min_python: \"2.7\" is not 3.N"},
    {BASE "python_version_hex=30c01f0\n",
     "line 7: python_version_hex: \"30c01f0\" is not 0x and 1 to 8 hex digits"},
    {BASE "python_version_hex=0x\n",
     "line 7: python_version_hex: \"0x\" is not 0x and 1 to 8 hex digits"},
    {BASE "python_version_hex=0x30c0g\n",
     "line 7: python_version_hex: \"0x30c0g\" is not 0x and 1 to 8 hex digits"},
    {BASE "python_version_hex=0x130c01f00\n",
     "line 7: python_version_hex: \"0x130c01f00\" is not 0x and 1 to 8 hex digits"},
    {BASE "python_version_hex=0x0\n",
     "line 7: python_version_hex: \"0x0\" is not 0x and 1 to 8 hex digits"},
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
    {BASE "build_info=a\x7fz\n", "line 7: build_info: control character 0x7f in value"},
    {BASE "build_info=a\x1fz\n", "line 7: build_info: control character 0x1f in value"},
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

/* Each required key missing in turn from an otherwise whole manifest (an
 * older build's manifest without its ABI keys, say) is named, the last of
 * the list as the first; the optional ones may be missing (both-sides pass,
 * session 14: only format and platform were tried). */
static void test_manifest_each_required_missing(void **state) {
  (void)state;
  static const char *const lines[] = {"format=1\n", "python_tag=cp311\n", "platform=x86_64\n",
                                      "bridge=libpyop_bridge.so\n", "bridge_abi_major=1\n",
                                      "bridge_abi_minor=0\n"};
  static const char *const keys[] = {"format", "python_tag", "platform", "bridge",
                                     "bridge_abi_major", "bridge_abi_minor"};
  for (size_t skip = 0; skip < PYOP__ARRAY_LEN(lines); skip++) {
    char text[512] = "";
    for (size_t i = 0; i < PYOP__ARRAY_LEN(lines); i++)
      if (i != skip) strcat(text, lines[i]);
    strcat(text, "build_info=an older build\n");
    char want[128];
    snprintf(want, sizeof want, "missing required key %s", keys[skip]);
    check_bad(text, strlen(text), want);
  }
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

/* Parses BASE plus one line and returns the manifest (the caller frees). */
static void parse_ok(const char *extra, pyop__manifest *m) {
  char text[2048];
  snprintf(text, sizeof text, BASE "%s\n", extra);
  pyop__sb why = PYOP__SB_INIT;
  if (parse(text, strlen(text), m, &why) != PYOP_OK)
    fail_msg("manifest line \"%s\" refused: %s", extra, pyop__sb_str(&why));
  pyop__sb_free(&why);
}

/* Each value's limit, at it (accepted) and one past (refused): platform 31
 * characters, numbers 10 digits, min_python's minor below 1000, a hex
 * version of 8 digits, a bridge name of NAME_MAX bytes; the characters a
 * key, a platform, a python tag and a hex version may hold. */
static void test_manifest_value_limits(void **state) {
  (void)state;
  pyop__manifest m;
  char line[1024], want[1024];
  /* Platform: 31 characters of every kind allowed, then 32. */
  char plat[40];
  memset(plat, 'a', sizeof plat);
  memcpy(plat, "Az09_", 5);
  plat[31] = '\0';
  snprintf(line, sizeof line,
           "format=1\npython_tag=cp311\nplatform=%s\nbridge=b.so\nbridge_abi_major=1\n"
           "bridge_abi_minor=0\n", plat);
  pyop__sb why = PYOP__SB_INIT;
  assert_int_equal(parse(line, strlen(line), &m, &why), PYOP_OK);
  assert_string_equal(m.platform, plat);
  pyop__manifest_free(&m);
  plat[31] = 'a';
  plat[32] = '\0';
  snprintf(line, sizeof line,
           "format=1\npython_tag=cp311\nplatform=%s\nbridge=b.so\nbridge_abi_major=1\n"
           "bridge_abi_minor=0\n", plat);
  snprintf(want, sizeof want, "line 3: platform: \"%s\" is not a machine name", plat);
  check_bad(line, strlen(line), want);
  /* Numbers: ten digits (UINT32_MAX) fit, eleven do not, even when small. */
  snprintf(line, sizeof line,
           "format=1\npython_tag=cp311\nplatform=x86_64\nbridge=b.so\nbridge_abi_major=1\n"
           "bridge_abi_minor=4294967295\n");
  assert_int_equal(parse(line, strlen(line), &m, &why), PYOP_OK);
  assert_int_equal(m.abi_minor, 4294967295u);
  pyop__manifest_free(&m);
  snprintf(line, sizeof line,
           "format=1\npython_tag=cp311\nplatform=x86_64\nbridge=b.so\nbridge_abi_major=1\n"
           "bridge_abi_minor=00000000001\n");
  check_bad(line, strlen(line), "line 6: bridge_abi_minor: \"00000000001\" is not a number");
  /* Python tags of 2 and 4 digits. */
  snprintf(line, sizeof line,
           "format=1\npython_tag=cp39\nplatform=x86_64\nbridge=b.so\nbridge_abi_major=1\n"
           "bridge_abi_minor=0\n");
  assert_int_equal(parse(line, strlen(line), &m, &why), PYOP_OK);
  assert_string_equal(m.python_tag, "cp39");
  pyop__manifest_free(&m);
  snprintf(line, sizeof line,
           "format=1\npython_tag=cp3999\nplatform=x86_64\nbridge=b.so\nbridge_abi_major=1\n"
           "bridge_abi_minor=0\n");
  assert_int_equal(parse(line, strlen(line), &m, &why), PYOP_OK);
  assert_string_equal(m.python_tag, "cp3999");
  pyop__manifest_free(&m);
  /* min_python: 3.999 is the last minor. */
  parse_ok("min_python=3.999", &m);
  assert_int_equal(m.min_python_minor, 999);
  pyop__manifest_free(&m);
  check_bad(BASE "min_python=3.1000\n", strlen(BASE "min_python=3.1000\n"),
            "line 7: min_python: \"3.1000\" is not 3.N");
  check_bad(BASE "min_python=3.\n", strlen(BASE "min_python=3.\n"),
            "line 7: min_python: \"3.\" is not 3.N");
  check_bad(BASE "min_python=4.1\n", strlen(BASE "min_python=4.1\n"),
            "line 7: min_python: \"4.1\" is not 3.N");
  /* The hex version: 8 digits, upper-case X and digits. */
  parse_ok("python_version_hex=0XFFFFFFFF", &m);
  assert_int_equal(m.python_version_hex, 0xffffffffUL);
  pyop__manifest_free(&m);
  parse_ok("python_version_hex=0x1", &m);
  assert_int_equal(m.python_version_hex, 1);
  pyop__manifest_free(&m);
  check_bad(BASE "python_version_hex=0x30c0G\n", strlen(BASE "python_version_hex=0x30c0G\n"),
            "line 7: python_version_hex: \"0x30c0G\" is not 0x and 1 to 8 hex digits");
  check_bad(BASE "python_version_hex=1x30\n", strlen(BASE "python_version_hex=1x30\n"),
            "line 7: python_version_hex: \"1x30\" is not 0x and 1 to 8 hex digits");
  /* python_dir: components that only start with dots are names. */
  parse_ok("python_dir=..a/.b/c..", &m);
  assert_string_equal(m.python_dir, "..a/.b/c..");
  pyop__manifest_free(&m);
  check_bad(BASE "python_dir=a/..\n", strlen(BASE "python_dir=a/..\n"),
            "line 7: python_dir: \"a/..\" must be a relative path inside the artifact "
            "directory");
  check_bad(BASE "python_dir=a/\n", strlen(BASE "python_dir=a/\n"),
            "line 7: python_dir: \"a/\" must be a relative path inside the artifact "
            "directory");
  /* Keys: letters, digits, '_', '-', '.'. */
  parse_ok("x-Fu.ture_2=1", &m);
  pyop__manifest_free(&m);
  check_bad(BASE "x/y=1\n", strlen(BASE "x/y=1\n"), "line 7: invalid character 0x2f in key");
  /* A bridge file name of NAME_MAX bytes is one; one more is not. */
  char name[NAME_MAX + 2];
  memset(name, 'b', sizeof name);
  name[NAME_MAX] = '\0';
  snprintf(line, sizeof line,
           "format=1\npython_tag=cp311\nplatform=x86_64\nbridge=%s\nbridge_abi_major=1\n"
           "bridge_abi_minor=0\n", name);
  assert_int_equal(parse(line, strlen(line), &m, &why), PYOP_OK);
  assert_int_equal(strlen(m.bridge), NAME_MAX);
  pyop__manifest_free(&m);
  name[NAME_MAX] = 'b';
  name[NAME_MAX + 1] = '\0';
  snprintf(line, sizeof line,
           "format=1\npython_tag=cp311\nplatform=x86_64\nbridge=%s\nbridge_abi_major=1\n"
           "bridge_abi_minor=0\n", name);
  /* The message shows the first 64 bytes of a value. */
  snprintf(want, sizeof want, "line 4: bridge: \"%.64s\" must be a file name inside the "
           "artifact directory (no '/', no leading '.')", name);
  check_bad(line, strlen(line), want);
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

/* A read of at most 7 bytes a call, the first interrupted by a signal
 * (EINTR): what a slow or network file system may give. */
static int reads;
static ssize_t trickle_read(int fd, void *buf, size_t n) {
  if (reads++ == 0) {
    errno = EINTR;
    return -1;
  }
  return read(fd, buf, n < 7 ? n : 7);
}

/*
 * pyop__manifest_read's other sides (both-sides pass, session 14): a read
 * interrupted by a signal is retried and short reads are gathered whole;
 * an artifact "directory" that is a regular file (open's ENOTDIR) has no
 * manifest (PYOP_ENOENT), as a missing one, not an I/O error.
 */
static void test_manifest_read_edges(void **state) {
  (void)state;
  char *dir = pt_mkdtemp();
  char *mf = fb_join(dir, "manifest.txt");
  pt_write_file(mf, BASE "build_info=read seven bytes at a time\n");
  pyop__manifest m;
  pyop__sb why = PYOP__SB_INIT;
  pyop__sys saved = pyop__sys_table;
  pyop__sys_table.read = trickle_read;
  reads = 0;
  int rc = pyop__manifest_read(dir, &m, &why);
  pyop__sys_table = saved;
  if (rc != PYOP_OK) fail_msg("rc %d: %s", rc, pyop__sb_str(&why));
  assert_true(reads > 10);
  assert_string_equal(m.bridge, "libpyop_bridge.so");
  assert_string_equal(m.build_info, "read seven bytes at a time");
  assert_int_equal(m.abi_minor, 0);
  pyop__manifest_free(&m);
  pyop__sb_free(&why);
  /* A file where the directory should be. */
  assert_int_equal(pyop__manifest_read(mf, &m, &why), PYOP_ENOENT);
  assert_string_equal(pyop__sb_str(&why), "no manifest.txt: Not a directory");
  assert_null(m.bridge);
  pyop__sb_free(&why);
  free(mf);
  pt_rmtree(dir);
  free(dir);
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

  /* A file of exactly the maximum is read whole (the fstat's size and the
   * read's count at the limit: configuration pass,
   * src.cf.manifest.file_at_max_refused, read_at_max_refused). */
  char *at_max = malloc(PYOP__MANIFEST_MAX + 1);
  assert_non_null(at_max);
  memset(at_max, '#', PYOP__MANIFEST_MAX);
  memcpy(at_max, BASE, strlen(BASE));
  at_max[PYOP__MANIFEST_MAX - 1] = '\n';
  at_max[PYOP__MANIFEST_MAX] = '\0';
  /* Comment lines of at most 1024 bytes each. */
  for (size_t i = strlen(BASE) + 1000; i < PYOP__MANIFEST_MAX - 1; i += 1000) at_max[i] = '\n';
  pt_write_file(mf, at_max);
  free(at_max);
  struct stat mst;
  assert_int_equal(stat(mf, &mst), 0);
  assert_int_equal(mst.st_size, PYOP__MANIFEST_MAX);
  assert_int_equal(pyop__manifest_read(dir, &m, &why), PYOP_OK);
  assert_string_equal(pyop__sb_str(&why), "");
  assert_string_equal(m.bridge, "libpyop_bridge.so");
  pyop__manifest_free(&m);

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

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_manifest_good, pt_seam_setup, pt_seam_teardown),
      cmocka_unit_test_setup_teardown(test_manifest_minimal_and_abi3, pt_seam_setup, pt_seam_teardown),
      cmocka_unit_test_setup_teardown(test_manifest_abi_flags_values, pt_seam_setup, pt_seam_teardown),
      cmocka_unit_test_setup_teardown(test_manifest_unknown_key_prefixes, pt_seam_setup, pt_seam_teardown),
      cmocka_unit_test_setup_teardown(test_manifest_bad, pt_seam_setup, pt_seam_teardown),
      cmocka_unit_test_setup_teardown(test_manifest_each_required_missing, pt_seam_setup,
                                      pt_seam_teardown),
      cmocka_unit_test_setup_teardown(test_manifest_value_limits, pt_seam_setup, pt_seam_teardown),
      cmocka_unit_test_setup_teardown(test_manifest_limits, pt_seam_setup, pt_seam_teardown),
      cmocka_unit_test_setup_teardown(test_manifest_alloc_faults, pt_seam_setup, pt_seam_teardown),
      cmocka_unit_test_setup_teardown(test_manifest_read, pt_seam_setup, pt_seam_teardown),
      cmocka_unit_test_setup_teardown(test_manifest_read_edges, pt_seam_setup, pt_seam_teardown),
  };
  return cmocka_run_group_tests_name("manifest", tests, NULL, NULL);
}
