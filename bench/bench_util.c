/* Shared harness of the benchmarks; see bench_util.h. */
#include "bench_util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#if PYOP_BENCH_HAVE_CALLGRIND
#include <valgrind/callgrind.h>
#endif

/* ------------------------------------------------------------ count run */

/* True in the count run (set once by bench_init, before any thread). */
static bool counting;
#if PYOP_BENCH_HAVE_CALLGRIND
/* True while the counted repetition of a variant runs: its sections are
 * instrumented. Set and cleared by the main thread around a run() call that
 * hands work to another thread through a mutex, which orders the accesses. */
static volatile bool count_armed;
/* callgrind's output file; dump k is "<count_out>.<k>". */
static const char *count_out;
/* Dumps made so far, and the instructions and sections of the counted run
 * in progress (written by whichever thread runs the section; read by the
 * main thread after run() returned, which orders them as count_armed). */
static int count_dumps;
static double count_acc;
static long count_sections;
#endif

bool bench_counting(void) { return counting; }

static bool env_set(const char *name) {
  const char *v = getenv(name);
  return v && v[0] && strcmp(v, "0") != 0;
}

/* The count run cannot happen: says why on the ICOUNT protocol and exits. */
static void __attribute__((noreturn)) no_count(const char *why) {
  printf("# instruction counts: not available: %s\n", why);
  printf("ICOUNT|*|-|-|-|%s\n", why);
  fflush(stdout);
  exit(env_set("PYOP_BENCH_COUNT_CHECK") ? 77 : 0);
}

#if PYOP_BENCH_HAVE_CALLGRIND
/* Prints the last lines of the valgrind log to stderr. */
static void print_log_tail(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) return;
  char *lines[40] = {0};
  char buf[1024];
  size_t k = 0;
  while (fgets(buf, sizeof buf, f)) {
    free(lines[k % 40]);
    lines[k % 40] = strdup(buf);
    k++;
  }
  fclose(f);
  for (size_t i = k > 40 ? k - 40 : 0; i < k; i++) {
    if (lines[i % 40]) fputs(lines[i % 40], stderr);
  }
  for (size_t i = 0; i < 40; i++) free(lines[i]);
}

/* Not yet under valgrind: runs this program again under callgrind. */
static void __attribute__((noreturn)) reexec_under_callgrind(void) {
  char self[PATH_MAX];
  ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
  if (len <= 0) bench_die("readlink /proc/self/exe: %s", strerror(errno));
  self[len] = '\0';
  const char *vg = getenv("PYOP_BENCH_VALGRIND");
  if (!vg || !vg[0]) vg = "valgrind";

  char dir[4096], out[4200], log[4200], out_opt[4300], log_opt[4300];
  bench_mkdtemp(dir, sizeof dir, "count");
  snprintf(out, sizeof out, "%s/callgrind.out", dir);
  snprintf(log, sizeof log, "%s/valgrind.log", dir);
  snprintf(out_opt, sizeof out_opt, "--callgrind-out-file=%s", out);
  snprintf(log_opt, sizeof log_opt, "--log-file=%s", log);
  setenv("PYOP_BENCH_COUNT_OUT", out, 1);
  char *argv[] = {(char *)vg, "--tool=callgrind", "--instr-atstart=no", "--dump-line=no",
                  out_opt, log_opt, self, NULL};

  /* The child reports a failed exec through a close-on-exec pipe; its
   * output comes back through another, so this process can tell whether
   * anything was counted. */
  int efd[2], ofd[2];
  if (pipe2(efd, O_CLOEXEC) != 0 || pipe2(ofd, O_CLOEXEC) != 0)
    bench_die("pipe: %s", strerror(errno));
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid < 0) bench_die("fork: %s", strerror(errno));
  if (pid == 0) {
    if (dup2(ofd[1], STDOUT_FILENO) < 0) _exit(127);
    execvp(vg, argv);
    int e = errno;
    if (write(efd[1], &e, sizeof e) < 0) _exit(127);
    _exit(127);
  }
  close(efd[1]);
  close(ofd[1]);
  int exec_errno = 0;
  ssize_t got;
  do got = read(efd[0], &exec_errno, sizeof exec_errno);
  while (got < 0 && errno == EINTR);
  close(efd[0]);
  /* Copy the count run's output; count the rows that got numbers. */
  FILE *child_out = fdopen(ofd[0], "r");
  if (!child_out) bench_die("fdopen: %s", strerror(errno));
  char line[4096];
  int counted = 0;
  while (fgets(line, sizeof line, child_out)) {
    fputs(line, stdout);
    if (strncmp(line, "ICOUNT|", 7) == 0) {
      const char *cand = strchr(line + 7, '|');
      if (cand && strtod(cand + 1, NULL) > 0) counted++;
    }
  }
  fclose(child_out);
  fflush(stdout);
  int wst = 0;
  while (waitpid(pid, &wst, 0) < 0 && errno == EINTR) {
  }
  if (got == (ssize_t)sizeof exec_errno) {
    bench_rmtree(dir);
    char why[512];
    snprintf(why, sizeof why, "cannot run %s (set PYOP_BENCH_VALGRIND or PATH): %s", vg,
             strerror(exec_errno));
    no_count(why);
  }
  int status = WIFEXITED(wst) ? WEXITSTATUS(wst) : 1;
  if (status != 0) {
    fprintf(stderr, "bench: the count run under %s failed (status %d); its log:\n", vg,
            status);
    print_log_tail(log);
  } else if (counted == 0 && env_set("PYOP_BENCH_COUNT_CHECK")) {
    fprintf(stderr, "bench: the count run reported no instruction count\n");
    status = 1;
  }
  bench_rmtree(dir);
  exit(status);
}

/* Instructions (Ir) of callgrind's dump number k, made by the client request
 * tagged tag. The figure is the dump's "totals:" line (the sum of the cost
 * lines it holds): callgrind 3.19's "summary:" line goes wrong once
 * instrumentation was switched off and on again. */
static double read_dump(int k, const char *tag) {
  char path[4300];
  snprintf(path, sizeof path, "%s.%d", count_out, k);
  FILE *f = fopen(path, "r");
  if (!f) bench_die("callgrind dump %s: %s", path, strerror(errno));
  char line[4096], want[256];
  snprintf(want, sizeof want, "desc: Trigger: Client Request: %s\n", tag);
  bool tagged = false;
  double ir = -1;
  while (fgets(line, sizeof line, f)) {
    if (strcmp(line, want) == 0) tagged = true;
    else if (strncmp(line, "totals:", 7) == 0) ir = strtod(line + 7, NULL);
  }
  fclose(f);
  unlink(path);
  if (!tagged || ir < 0) bench_die("callgrind dump %s: not the dump of %s", path, tag);
  return ir;
}

/*
 * Instructions of one run of v with n iterations, its sections only. Each
 * section switches instrumentation on at its start; at its end the thread
 * that ran it dumps the costs (callgrind 3.19 loses a thread's costs from a
 * dump another thread requests after instrumentation was switched off) and
 * switches instrumentation off again, so everything outside the sections
 * runs uninstrumented, uncounted and several times faster.
 */
static double count_once(bench_variant *v, long n) {
  count_acc = 0;
  count_sections = 0;
  count_armed = true;
  v->run(v->arg, n);
  count_armed = false;
  if (count_sections == 0)
    bench_die("%s: no measured section ran (bench_begin/bench_end)", v->name);
  return count_acc;
}

static void count_section_end(void) {
  char tag[64];
  snprintf(tag, sizeof tag, "pyop-bench-%d", count_dumps + 1);
  CALLGRIND_DUMP_STATS_AT(tag);
  CALLGRIND_STOP_INSTRUMENTATION;
  count_dumps++;
  count_acc += read_dump(count_dumps, tag);
  count_sections++;
}
#endif

void bench_init(void) {
  if (!env_set("PYOP_BENCH_COUNT")) return;
#if PYOP_BENCH_HAVE_CALLGRIND
  if (!RUNNING_ON_VALGRIND) reexec_under_callgrind();
  count_out = getenv("PYOP_BENCH_COUNT_OUT");
  if (!count_out || !count_out[0])
    bench_die("PYOP_BENCH_COUNT under valgrind needs PYOP_BENCH_COUNT_OUT (set by bench_init)");
  counting = true;
  printf("# count run: instructions per iteration under callgrind (measured sections only)\n");
#else
  no_count("built without valgrind/callgrind.h");
#endif
}

double bench_begin(void) {
#if PYOP_BENCH_HAVE_CALLGRIND
  if (count_armed) {
    CALLGRIND_ZERO_STATS;
    CALLGRIND_START_INSTRUMENTATION;
  }
#endif
  return bench_now();
}

double bench_end(double t0) {
  double t = bench_now() - t0;
#if PYOP_BENCH_HAVE_CALLGRIND
  if (count_armed) count_section_end();
#endif
  return t;
}

/* The variant of the timed repetition in progress (NULL during warm-up),
 * ordered like count_armed. */
static bench_variant *volatile chunk_variant;

double bench_end_chunk(double t0, long n) {
  double t = bench_end(t0);
  bench_variant *v = chunk_variant;
  if (v && n > 0 && (v->chunk_min < 0 || t / (double)n < v->chunk_min))
    v->chunk_min = t / (double)n;
  return t;
}

static long count_iters(const bench_variant *v) {
  long n = v->count_n > 0 ? v->count_n : BENCH_COUNT_N;
  if (bench_quick()) n = n / 10 > 0 ? n / 10 : 1;
  return n;
}

/* The count run's bench_interleave. */
static void count_variants(bench_variant *v, size_t nv) {
  for (size_t i = 0; i < nv; i++) {
    v[i].per_iter = v[i].min_iter = 0;
    v[i].instr = -1;
    if (v[i].count_n < 0) continue;
#if PYOP_BENCH_HAVE_CALLGRIND
    long n = count_iters(&v[i]);
    double t0 = bench_now();
    v[i].run(v[i].arg, n); /* warm-up: not instrumented */
    double t1 = bench_now();
    double ir = count_once(&v[i], n);
    v[i].instr = ir / (double)n;
    printf("# counted %s: warm-up %.1f s, count %.1f s under callgrind\n", v[i].name, t1 - t0,
           bench_now() - t1);
    if (env_set("PYOP_BENCH_COUNT_CHECK")) {
      /* n more iterations must cost n times the instructions of one: a fixed
       * offset means the section counted something besides the loop. */
      double ir2 = count_once(&v[i], 2 * n);
      double offset = 2 * ir - ir2;
      bool ok = ir > 0 && v[i].instr >= 10 && v[i].instr < 1e10 &&
                (offset < 0 ? -offset : offset) <= 0.02 * ir2;
      printf("# check %s: %.0f instructions for %ld iterations, %.0f for %ld: %s\n",
             v[i].name, ir, n, ir2, 2 * n, ok ? "linear" : "NOT linear");
      if (!ok) bench_die("instruction count of %s is not plausible", v[i].name);
    }
#endif
  }
}

/* ---------------------------------------------------------------- timing */

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

static int reps_or(int dflt) {
  if (bench_quick()) return 3;
  const char *r = getenv("PYOP_BENCH_REPS");
  int n = r && r[0] ? atoi(r) : dflt;
  if (n < 3) n = 3;
  if (n > 101) n = 101;
  if (n % 2 == 0) n++;
  return n;
}

int bench_reps(void) { return reps_or(31); }

int bench_reps_long(void) { return reps_or(11); }

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

/* Picks n so that one repetition takes about 3 ms (PYOP_BENCH_REP_MS; 1 ms
 * when quick): short enough that some repetitions run between two of a busy
 * neighbour's time slices, which is what the minimum needs. The runs it takes
 * to find out are the variant's warm-up. */
static void calibrate(bench_variant *v) {
  const char *ms = getenv("PYOP_BENCH_REP_MS");
  double target = bench_quick() ? 0.001 : ms && atof(ms) > 0 ? atof(ms) / 1e3 : 0.003;
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
  }
  if (counting) {
    count_variants(v, nv);
    return;
  }
  for (size_t i = 0; i < nv; i++) {
    v[i].instr = -1;
    v[i].chunk_min = -1;
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
      chunk_variant = x;
      double secs = x->run(x->arg, x->n);
      chunk_variant = NULL;
      x->samples[r] = secs / (double)x->n;
    }
  }
  double *tmp = calloc((size_t)reps, sizeof *tmp);
  if (!tmp) bench_die("out of memory");
  for (size_t i = 0; i < nv; i++) {
    memcpy(tmp, v[i].samples, (size_t)reps * sizeof *tmp);
    v[i].per_iter = bench_median(tmp, (size_t)reps);
    v[i].min_iter = v[i].chunk_min >= 0 ? v[i].chunk_min : tmp[0]; /* tmp: sorted */
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
  if (counting) {
    if (v->instr < 0) printf("# %-44s not counted\n", v->name);
    else printf("# %-44s %12.1f instructions/iter over %ld iterations\n", v->name, v->instr,
                count_iters(v));
    return;
  }
  double hi = v->samples[0];
  for (int r = 1; r < reps; r++)
    if (v->samples[r] > hi) hi = v->samples[r];
  double scale = v->per_iter >= 1e-3 ? 1e3 : 1e9;
  const char *unit = v->per_iter >= 1e-3 ? "ms" : "ns";
  printf("# %-44s median %10.1f %s/iter (min %.1f, max %.1f) %d reps x %ld%s\n", v->name,
         v->per_iter * scale, unit, v->min_iter * scale, hi * scale, reps, v->n,
         v->chunk_min >= 0 ? " (min of chunks)" : "");
}

void bench_row(const char *id, const char *what, double value, const char *unit,
               const char *op, double limit, const char *raw) {
  if (counting) return;
  printf("ROW|%s|%s|%.3f|%s|%s|%.3f|%s|\n", id, what, value, unit, op, limit, raw);
  fflush(stdout);
}

/* A time per iteration with a unit that suits it. */
static void fmt_time(char *buf, size_t len, double secs) {
  if (secs >= 1e-3) snprintf(buf, len, "%.1f ms", secs * 1e3);
  else if (secs >= 1e-6) snprintf(buf, len, "%.1f us", secs * 1e6);
  else snprintf(buf, len, "%.1f ns", secs * 1e9);
}

void bench_row_ratio(const char *id, const char *what, const bench_variant *cand,
                     const bench_variant *base, const char *op, double limit) {
  if (counting) {
    if (cand->instr < 0 || base->instr < 0)
      printf("ICOUNT|%s|-|-|-|not counted\n", id);
    else
      printf("ICOUNT|%s|%.1f|%.1f|%.4f|\n", id, cand->instr, base->instr,
             base->instr > 0 ? cand->instr / base->instr : 0.0);
    fflush(stdout);
    return;
  }
  char cm[32], cn[32], bm[32], bn[32];
  fmt_time(cm, sizeof cm, cand->per_iter);
  fmt_time(cn, sizeof cn, cand->min_iter);
  fmt_time(bm, sizeof bm, base->per_iter);
  fmt_time(bn, sizeof bn, base->min_iter);
  printf("ROW|%s|%s|%.3f|x|%s|%.3f|%s %s (min %s), %s %s (min %s)|%.3f\n", id, what,
         cand->per_iter / base->per_iter, op, limit, cand->name, cm, cn, base->name, bm, bn,
         cand->min_iter / base->min_iter);
  fflush(stdout);
}

void bench_row_ns(const char *id, const char *what, const bench_variant *v, const char *op,
                  double limit) {
  if (counting) {
    if (v->instr < 0) printf("ICOUNT|%s|-|-|-|not counted\n", id);
    else printf("ICOUNT|%s|%.1f|-|-|\n", id, v->instr);
    fflush(stdout);
    return;
  }
  char m[32], n[32];
  fmt_time(m, sizeof m, v->per_iter);
  fmt_time(n, sizeof n, v->min_iter);
  printf("ROW|%s|%s|%.3f|ns|%s|%.3f|%s %s (min %s)|%.3f\n", id, what, v->per_iter * 1e9, op,
         limit, v->name, m, n, v->min_iter * 1e9);
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
