/*
 * Shared harness of the benchmarks (bench/README.md).
 *
 * Every figure a benchmark reports is a ratio of two things measured side by
 * side in one process: each is timed in `reps` repetitions, the repetitions
 * of all the variants of one row are interleaved (variant order rotates each
 * repetition, so drift and warm-up hit every variant alike), and the row
 * reports median(candidate) / median(baseline) with both medians kept.
 *
 * Output protocol (read by bench/run.sh, also readable by a person):
 *   "# ..."                                       free text, details
 *   "ROW|<id>|<what>|<value>|<unit>|<op>|<limit>|<raw>"
 * where op is "<=" or ">=" (a target: met when value op limit holds) or
 * "info" (no target). unit is "x" for a ratio or "ns" for a time.
 */
#ifndef PYOP_BENCH_UTIL_H
#define PYOP_BENCH_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Seconds on CLOCK_MONOTONIC. */
double bench_now(void);

/* True when PYOP_BENCH_QUICK is set to a non-empty value other than "0":
 * tiny iteration counts, just to prove the benchmark still runs. */
bool bench_quick(void);

/* True when PYOP_BENCH_ONLY is unset or lists group (comma-separated):
 * run only some groups of rows, e.g. to profile them. */
bool bench_want(const char *group);

/* Repetitions per row: PYOP_BENCH_REPS (odd, 3..101), default 7; 3 when quick. */
int bench_reps(void);

/* n scaled down for quick mode (at least 1). */
long bench_scale(long n);

/* Median of v[0..n) (v is sorted in place). */
double bench_median(double *v, size_t n);

/*
 * One thing to time. run(arg, n) does n iterations and returns the seconds
 * they took as it measured them (so a variant that hands work to another
 * thread times only the work). per_iter is the result of bench_interleave:
 * the median over the repetitions of seconds / n.
 */
typedef struct bench_variant {
  const char *name;
  double (*run)(void *arg, long n);
  void *arg;
  long n;          /* iterations per repetition; 0: calibrated (~30 ms a repetition) */
  double per_iter; /* out: median seconds per iteration */
  double *samples; /* out: per repetition seconds per iteration (reps items, owned) */
} bench_variant;

/*
 * Runs one untimed warm-up of every variant, then `reps` repetitions of all
 * of them, rotating the order each repetition. Fills per_iter and samples.
 */
void bench_interleave(bench_variant *v, size_t nv, int reps);

/* Frees what bench_interleave allocated. */
void bench_variants_free(bench_variant *v, size_t nv);

/* Prints "# <name>: median <x> ns/iter (min .. max) over <reps> reps". */
void bench_print_variant(const bench_variant *v, int reps);

/*
 * Prints one ROW line. value is compared with limit by op ("<=", ">=",
 * "info"); raw is free text (the medians the value came from).
 */
void bench_row(const char *id, const char *what, double value, const char *unit,
               const char *op, double limit, const char *raw);

/* Makes a fresh private temp directory (mkdtemp under $TMPDIR or /tmp) into
 * buf; exits on failure. */
void bench_mkdtemp(char *buf, size_t len, const char *tag);

/* rm -rf of a directory tree the benchmark made (no symlinks followed). */
void bench_rmtree(const char *path);

/* Prints a message to stderr and exits with status 1. */
void bench_die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

#endif
