/*
 * One source per test case (tests/README.md, "Adding a case"): a harness
 * lists its cases once, as an X-macro at the end of its file,
 *
 *   #define HOST_E2E_CASES(X)                   \
 *     X(list, "e2e", 120, "")                   \
 *     X(threads, "e2e threads", 120, "")
 *
 * X(name, labels, timeout, variants): the case is `static void
 * case_<name>(void)`, with its contract in the comment above it; labels
 * (space-separated) and timeout (seconds) are its ctest's; variants are
 * words its CMakeLists.txt or the harness acts on ("valgrind": also run
 * under valgrind), "" for none. tests/cases.cmake reads the same list at
 * configure time and adds one ctest per case; `HARNESS --list` prints the
 * names. Header-only: each harness is one translation unit plus this file.
 */
#ifndef PYOP_TEST_CASES_H
#define PYOP_TEST_CASES_H

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

typedef struct harness_case {
  const char *name;
  void (*run)(void);
  const char *variants; /* space-separated words, "" for none */
} harness_case;

/* The table entry of one X(name, labels, timeout, variants). */
#define HARNESS_CASE(name, labels, timeout, variants) {#name, case_##name, variants},

#define HARNESS_N(cases) (sizeof(cases) / sizeof((cases)[0]))

/* The case of cases[0..n) named name, or NULL. */
__attribute__((unused)) static const harness_case *harness_find(const harness_case *cases,
                                                                size_t n, const char *name) {
  for (size_t i = 0; name != NULL && i < n; i++)
    if (strcmp(cases[i].name, name) == 0)
      return &cases[i];
  return NULL;
}

/* Whether the variants of c hold the word w. */
__attribute__((unused)) static bool harness_has(const harness_case *c, const char *w) {
  size_t n = strlen(w);
  for (const char *p = c->variants; (p = strstr(p, w)) != NULL; p += n)
    if ((p == c->variants || p[-1] == ' ') && (p[n] == '\0' || p[n] == ' '))
      return true;
  return false;
}

/*
 * The case argv[at] names. `PROG --list` prints every name, one a line, and
 * returns NULL with *status 0; a missing or unknown name prints the usage
 * (`PROG --list | <usage>`, usage naming where CASE goes) and the names to
 * stderr and returns NULL with *status 2.
 */
__attribute__((unused)) static const harness_case *
harness_pick(int argc, char **argv, int at, const char *usage, const harness_case *cases,
             size_t n, int *status) {
  if (argc == 2 && strcmp(argv[1], "--list") == 0) {
    for (size_t i = 0; i < n; i++)
      printf("%s\n", cases[i].name);
    *status = 0;
    return NULL;
  }
  const harness_case *c = argc > at ? harness_find(cases, n, argv[at]) : NULL;
  if (c != NULL)
    return c;
  if (argc > at)
    fprintf(stderr, "%s: unknown case '%s'\n", argv[0], argv[at]);
  fprintf(stderr, "usage: %s --list | %s\n  cases:", argv[0], usage);
  for (size_t i = 0; i < n; i++)
    fprintf(stderr, " %s", cases[i].name);
  fprintf(stderr, "\n");
  *status = 2;
  return NULL;
}

#endif
