/* Shared harness of the benchmarks; see bench_util.h. */
#include "bench_util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

double bench_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

bool bench_quick(void) {
  const char *q = getenv("PYOP_BENCH_QUICK");
  return q && q[0] && strcmp(q, "0") != 0;
}

bool bench_want(const char *group) {
  const char *only = getenv("PYOP_BENCH_ONLY");
  if (!only || !only[0]) return true;
  size_t n = strlen(group);
  for (const char *p = only; (p = strstr(p, group)) != NULL; p += n)
    if ((p == only || p[-1] == ',') && (p[n] == '\0' || p[n] == ','))
      return true;
  return false;
}

int bench_reps(void) {
  if (bench_quick()) return 3;
  const char *r = getenv("PYOP_BENCH_REPS");
  int n = r && r[0] ? atoi(r) : 7;
  if (n < 3) n = 3;
  if (n > 101) n = 101;
  if (n % 2 == 0) n++;
  return n;
}

long bench_scale(long n) {
  if (!bench_quick()) return n;
  long q = n / 1000;
  return q < 1 ? 1 : q;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

double bench_median(double *v, size_t n) {
  if (n == 0) return 0.0;
  qsort(v, n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Picks n so that one repetition takes about 30 ms (1 ms when quick); the
 * runs it takes to find out are the variant's warm-up. */
static void calibrate(bench_variant *v) {
  double target = bench_quick() ? 0.001 : 0.03;
  long n = 8;
  double t = v->run(v->arg, n);
  while (t < target / 8 && n < (1L << 40)) {
    n *= 4;
    t = v->run(v->arg, n);
  }
  double want = t > 0 ? (double)n * target / t : (double)n;
  v->n = want < 1 ? 1 : (long)want;
}

void bench_interleave(bench_variant *v, size_t nv, int reps) {
  for (size_t i = 0; i < nv; i++) {
    v[i].samples = calloc((size_t)reps, sizeof *v[i].samples);
    if (!v[i].samples) bench_die("out of memory");
    if (v[i].n < 1) {
      calibrate(&v[i]);
    } else {
      /* Warm-up: caches, lazily created state (thread states, plans...). */
      long w = v[i].n / 10 > 0 ? v[i].n / 10 : 1;
      v[i].run(v[i].arg, w);
    }
  }
  for (int r = 0; r < reps; r++) {
    for (size_t k = 0; k < nv; k++) {
      bench_variant *x = &v[(k + (size_t)r) % nv];
      double secs = x->run(x->arg, x->n);
      x->samples[r] = secs / (double)x->n;
    }
  }
  double *tmp = calloc((size_t)reps, sizeof *tmp);
  if (!tmp) bench_die("out of memory");
  for (size_t i = 0; i < nv; i++) {
    memcpy(tmp, v[i].samples, (size_t)reps * sizeof *tmp);
    v[i].per_iter = bench_median(tmp, (size_t)reps);
  }
  free(tmp);
}

void bench_variants_free(bench_variant *v, size_t nv) {
  for (size_t i = 0; i < nv; i++) {
    free(v[i].samples);
    v[i].samples = NULL;
  }
}

void bench_print_variant(const bench_variant *v, int reps) {
  double lo = v->samples[0], hi = v->samples[0];
  for (int r = 1; r < reps; r++) {
    if (v->samples[r] < lo) lo = v->samples[r];
    if (v->samples[r] > hi) hi = v->samples[r];
  }
  double scale = v->per_iter >= 1e-3 ? 1e3 : 1e9;
  const char *unit = v->per_iter >= 1e-3 ? "ms" : "ns";
  printf("# %-44s median %10.1f %s/iter (min %.1f, max %.1f) %d reps x %ld\n", v->name,
         v->per_iter * scale, unit, lo * scale, hi * scale, reps, v->n);
}

void bench_row(const char *id, const char *what, double value, const char *unit,
               const char *op, double limit, const char *raw) {
  printf("ROW|%s|%s|%.3f|%s|%s|%.3f|%s\n", id, what, value, unit, op, limit, raw);
  fflush(stdout);
}

void bench_mkdtemp(char *buf, size_t len, const char *tag) {
  const char *tmp = getenv("TMPDIR");
  if (!tmp || tmp[0] != '/') tmp = "/tmp";
  int n = snprintf(buf, len, "%s/pyop-bench-%s-XXXXXX", tmp, tag);
  if (n < 0 || (size_t)n >= len) bench_die("temp path too long");
  if (!mkdtemp(buf)) bench_die("mkdtemp %s: %s", buf, strerror(errno));
}

static void rmtree_at(int dfd, const char *name) {
  int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    unlinkat(dfd, name, 0);
    return;
  }
  DIR *d = fdopendir(fd);
  if (!d) {
    close(fd);
    return;
  }
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0) continue;
    if (de->d_type == DT_DIR) rmtree_at(dirfd(d), de->d_name);
    else unlinkat(dirfd(d), de->d_name, 0);
  }
  closedir(d);
  unlinkat(dfd, name, AT_REMOVEDIR);
}

void bench_rmtree(const char *path) {
  if (!path || path[0] != '/') return;
  rmtree_at(AT_FDCWD, path);
}

void bench_die(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("bench: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  exit(1);
}
