/*
 * Shared helpers for the cmocka unit tests: fault injection through the
 * pyop__sys seam and allocation accounting.
 */
#ifndef PYOP_TESTUTIL_H
#define PYOP_TESTUTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "core.h"

/*
 * Replaces the fallible members of pyop__sys_table with counting wrappers
 * (malloc, calloc, realloc, dlopen, dlsym, dladdr, open, openat, read, fstat,
 * stat, fstatat, realpath, getcwd, opendir, readdir). Cleanup calls (free,
 * close, closedir, dlclose, dlerror) and environment reads are passed
 * through uncounted. pt_faults_remove() restores the real table.
 */
void pt_faults_install(void);
void pt_faults_remove(void);
/* The fail_at-th counted call (0-based) from now on fails; -1: none fails. */
void pt_faults_arm(long fail_at);
/* Counted calls since the last arm. */
long pt_faults_calls(void);
/* True when the armed fault was hit. */
bool pt_faults_fired(void);
/* Allocations through the seam minus frees, since pt_faults_install. */
long pt_live_allocs(void);

/*
 * cmocka fixtures of the tests that find and load bridges (manifest,
 * candidates, trust, bridge loader): setup counts the seam
 * (pt_faults_install) with PYOP_BRIDGE_DIR unset; teardown checks that no
 * allocation through the seam is left, restores the seam, unsets
 * PYOP_BRIDGE_DIR and puts the artifacts root back to its default.
 */
int pt_seam_setup(void **state);
int pt_seam_teardown(void **state);

/*
 * Runs fn() with the Nth counted call failing, for N = 0, 1, 2, ... until a
 * run completes without hitting the fault (at most max_n runs). After each
 * failing run it calls check(user, rc) (which asserts the state is as before
 * and nothing leaked). Returns how many fault points were exercised.
 */
long pt_faults_sweep(int (*fn)(void *user), void (*check)(void *user, int rc),
                     void *user, long max_n);

/* Makes a fresh empty temporary directory; returns its path (static buffer
 * per call is NOT used: caller frees with free()). */
char *pt_mkdtemp(void);
/* Writes a file (creating parent dirs must be done by the caller). */
void pt_write_file(const char *path, const char *content);
/* rm -rf of a test directory. */
void pt_rmtree(const char *path);

/*
 * How many file descriptors this process has open below 65536 (or the
 * soft RLIMIT_NOFILE when lower), each number probed with fcntl(F_GETFD):
 * no /proc needed, and the count opens no descriptor of its own. Compare
 * two counts around repeated operations: a leaked descriptor takes the
 * lowest free number, so every leak is counted.
 */
int pt_count_fds(void);

#endif
