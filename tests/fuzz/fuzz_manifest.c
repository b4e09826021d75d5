/*
 * libFuzzer target for pyop__manifest_parse: any input either parses into a
 * manifest that keeps every documented rule (and survives a write/re-parse
 * round trip unchanged), or fails with a reason and leaves nothing behind.
 * The input is copied into a buffer of exactly its size: a read past len is
 * an AddressSanitizer report.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "manifest.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c)                                                         \
  do {                                                                   \
    if (!(c)) {                                                          \
      fprintf(stderr, "fuzz_manifest: check failed: %s (line %d)\n", #c, \
              __LINE__);                                                 \
      abort();                                                           \
    }                                                                    \
  } while (0)

static bool is_cp_tag(const char *t) {
  if (strncmp(t, "cp", 2) != 0 || strlen(t) < 4) return false;
  for (const char *p = t + 2; *p; p++)
    if (*p < '0' || *p > '9') return false;
  return true;
}

/* The rules a parsed manifest must keep. */
static void check_rules(const pyop__manifest *m) {
  CHECK(m->format == 1);
  CHECK(m->python_tag && (strcmp(m->python_tag, "abi3") == 0 || is_cp_tag(m->python_tag)));
  CHECK(m->abi_flags);
  CHECK(!strcmp(m->abi_flags, "") || !strcmp(m->abi_flags, "t") ||
        !strcmp(m->abi_flags, "d") || !strcmp(m->abi_flags, "td"));
  CHECK(m->platform && m->platform[0]);
  CHECK(m->bridge && m->bridge[0] && m->bridge[0] != '.' && !strchr(m->bridge, '/'));
  CHECK(!m->libpython || m->libpython[0] == '/');
  if (m->python_dir) {
    const char *p = m->python_dir;
    CHECK(p[0] && p[0] != '/');
    CHECK(!strstr(p, "//"));
    size_t n = strlen(p);
    CHECK(p[n - 1] != '/');
    /* No "." or ".." component. */
    const char *c = p;
    while (c) {
      const char *e = strchr(c, '/');
      size_t len = e ? (size_t)(e - c) : strlen(c);
      CHECK(!(len == 1 && c[0] == '.'));
      CHECK(!(len == 2 && c[0] == '.' && c[1] == '.'));
      c = e ? e + 1 : NULL;
    }
  }
}

/* Writes m back as manifest text (malloc). */
static char *write_back(const pyop__manifest *m, size_t *len) {
  size_t cap = 4096 + strlen(m->python_tag) + strlen(m->platform) + strlen(m->bridge) +
               (m->libpython ? strlen(m->libpython) : 0) +
               (m->python_dir ? strlen(m->python_dir) : 0) +
               (m->build_info ? strlen(m->build_info) : 0);
  char *t = malloc(cap);
  CHECK(t);
  int n = snprintf(t, cap,
                   "format=%u\npython_tag=%s\nabi_flags=%s\nplatform=%s\nbridge=%s\n"
                   "bridge_abi_major=%u\nbridge_abi_minor=%u\nmin_python=3.%u\n"
                   "%s%s%s%s%s%s%s%s%s",
                   m->format, m->python_tag, m->abi_flags, m->platform, m->bridge,
                   m->abi_major, m->abi_minor, m->min_python_minor,
                   m->libpython ? "libpython=" : "", m->libpython ? m->libpython : "",
                   m->libpython ? "\n" : "", m->python_dir ? "python_dir=" : "",
                   m->python_dir ? m->python_dir : "", m->python_dir ? "\n" : "",
                   m->build_info ? "build_info=" : "", m->build_info ? m->build_info : "",
                   m->build_info ? "\n" : "");
  CHECK(n > 0 && (size_t)n < cap);
  *len = (size_t)n;
  return t;
}

static bool same_str(const char *a, const char *b) {
  return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *buf = malloc(size ? size : 1);
  CHECK(buf);
  if (size) memcpy(buf, data, size);
  pyop__manifest m;
  pyop__sb why = PYOP__SB_INIT;
  int rc = pyop__manifest_parse(buf, size, &m, &why);
  if (rc == PYOP_OK) {
    check_rules(&m);
    size_t len;
    char *again = write_back(&m, &len);
    pyop__manifest m2;
    pyop__sb why2 = PYOP__SB_INIT;
    int rc2 = pyop__manifest_parse(again, len, &m2, &why2);
    /* Every value came from one line at least as long as its write-back. */
    CHECK(rc2 == PYOP_OK);
    CHECK(m2.format == m.format && m2.abi_major == m.abi_major &&
          m2.abi_minor == m.abi_minor && m2.min_python_minor == m.min_python_minor);
    CHECK(same_str(m2.python_tag, m.python_tag) && same_str(m2.abi_flags, m.abi_flags) &&
          same_str(m2.platform, m.platform) && same_str(m2.bridge, m.bridge) &&
          same_str(m2.libpython, m.libpython) && same_str(m2.python_dir, m.python_dir) &&
          same_str(m2.build_info, m.build_info));
    pyop__manifest_free(&m2);
    pyop__sb_free(&why2);
    free(again);
    pyop__manifest_free(&m);
    CHECK(why.len == 0);
  } else {
    CHECK(rc == PYOP_EDESCRIPTOR || rc == PYOP_ENOMEM);
    CHECK(!m.python_tag && !m.abi_flags && !m.platform && !m.bridge && !m.libpython &&
          !m.python_dir && !m.build_info);
    CHECK(why.len > 0);
  }
  pyop__sb_free(&why);
  free(buf);
  return 0;
}
