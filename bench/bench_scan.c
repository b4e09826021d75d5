/*
 * Scan benchmark (target 5 of bench/README.md): pyop_check_need_load with
 * ASCEND_CUSTOM_OPP_PATH = one directory of 10,000 non-Python files (a
 * C++-only OPP directory) vs opendir + readdir of every entry + closedir of
 * the same directory, interleaved in one process. No Python is needed: the
 * check never loads anything when there is no Python entry.
 */
#include "bench_util.h"

#include <dirent.h>
#include <fcntl.h>
#include <pyop/pyop.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NFILES 10000

static char dir[4096];
/* Where the readdir loop writes each d_type, so it cannot be optimised out. */
static volatile size_t readdir_sink;

static double run_readdir(void *arg, long n) {
  (void)arg;
  double t0 = bench_begin();
  for (long i = 0; i < n; i++) {
    DIR *d = opendir(dir);
    if (!d) bench_die("opendir %s", dir);
    struct dirent *de;
    while ((de = readdir(d)) != NULL) readdir_sink += de->d_type;
    closedir(d);
  }
  return bench_end(t0);
}

static double run_check(void *arg, long n) {
  (void)arg;
  double t0 = bench_begin();
  for (long i = 0; i < n; i++) {
    bool need = true;
    int rc = pyop_check_need_load(&need);
    if (rc != PYOP_OK) bench_die("pyop_check_need_load: %s", pyop_last_error());
    if (need) bench_die("pyop_check_need_load found Python in %s", dir);
  }
  return bench_end(t0);
}

/* 10,000 files an OPP directory of C++ ops could hold: none is Python. */
static void make_files(void) {
  static const char *const suffixes[] = {".so", ".json", ".o", ".ini", ".pyc", ".cpp", ".h",
                                         ".txt"};
  char path[4200];
  for (int i = 0; i < NFILES; i++) {
    snprintf(path, sizeof path, "%s/op_kernel_%05d%s", dir, i, suffixes[i % 8]);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) bench_die("create %s", path);
    close(fd);
  }
}

int main(void) {
  bench_init();
  int reps = bench_reps();
  bench_mkdtemp(dir, sizeof dir, "scan");
  make_files();
  setenv("ASCEND_CUSTOM_OPP_PATH", dir, 1);
  printf("# bench_scan: %d repetitions, medians; %d files in %s\n", reps, NFILES, dir);
  bench_variant v[] = {
      /* 3 counted iterations: each reads 10,000 entries */
      {"pyop_check_need_load", run_check, NULL, 0, 0, NULL, 3},
      {"opendir+readdir+closedir", run_readdir, NULL, 0, 0, NULL, 3},
  };
  bench_interleave(v, 2, reps);
  for (int i = 0; i < 2; i++) bench_print_variant(&v[i], reps);
  bench_row_ratio("5", "scan 10,000 non-Python files: check_need_load / readdir", &v[0], &v[1],
                  "<=", 1.5);
  bench_variants_free(v, 2);
  bench_rmtree(dir);
  return 0;
}
