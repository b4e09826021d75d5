/*
 * Shared harness of the benchmarks (bench/README.md).
 *
 * Every figure a benchmark reports is a ratio of two things measured side by
 * side in one process: each is timed in `reps` repetitions, the repetitions
 * of all the variants of one row are interleaved (variant order rotates each
 * repetition, so drift and warm-up hit every variant alike), and the row
 * reports min(candidate) / min(baseline) -- the figure a target is judged on
 * -- beside median(candidate) / median(baseline).
 *
 * A second run of the same program, the *count run* (PYOP_BENCH_COUNT=1),
 * counts instead of timing: the program re-executes itself under valgrind's
 * callgrind, runs each single-threaded variant once untimed (warm-up) and
 * once counted, and reports instructions per iteration. Only the code
 * between bench_begin() and bench_end() -- the measured loop -- is
 * instrumented, so start-up, warm-up and untimed set-up are never counted.
 *
 * Output protocol (read by bench/run.sh, also readable by a person):
 *   "# ..."                                       free text, details
 *   "ROW|<id>|<what>|<value>|<unit>|<op>|<limit>|<raw>|<min value>"
 *       (timed run) value: the ratio of medians (or the median in ns);
 *       min value: the ratio of minimums (or the minimum in ns), empty when
 *       the row was printed with bench_row (no minimum known);
 *   "ICOUNT|<id>|<cand>|<base>|<ratio>|<note>"
 *       (count run) instructions per iteration of candidate and baseline and
 *       their ratio ("-" when not counted, <base> and <ratio> "-" for an ns
 *       row); note says why a row was not counted; id "*" applies to every
 *       row of the program (e.g. "valgrind not found").
 * where op is "<=", "<", ">=" (a target: met when value op limit holds) or
 * "info" (no target). unit is "x" for a ratio or "ns" for a time.
 */
#ifndef PYOP_BENCH_UTIL_H
#define PYOP_BENCH_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Seconds on CLOCK_MONOTONIC. */
double bench_now(void);

/*
 * Every measured section (the loop a variant times) is bracketed by these:
 *     double t0 = bench_begin();  ...loop...  return bench_end(t0);
 * bench_end returns the seconds since t0. In a count run, the sections of the
 * counted repetition are the only code callgrind instruments and counts. A
 * variant may time several sections per call (their times add up, and so do
 * their instructions); sections never nest.
 */
double bench_begin(void);
double bench_end(double t0);

/*
 * bench_end for a section of n iterations that is also one sample of the
 * variant's minimum. A variant whose repetition must be long (an expensive
 * untimed set-up each call, e.g. loading 100,000 ops) times its loop in
 * chunks this way, so that the minimum can come from a chunk no neighbour
 * disturbed; its median still comes from whole repetitions.
 */
double bench_end_chunk(double t0, long n);

/*
 * Call first thing in main(). When PYOP_BENCH_COUNT is set (not "0") and the
 * program is not yet under valgrind, re-executes it under callgrind (valgrind
 * from PYOP_BENCH_VALGRIND or PATH), waits and exits with its status; when
 * valgrind or valgrind/callgrind.h is missing, prints one
 * "ICOUNT|*|-|-|-|<why>" line and exits 0 (or 77 with PYOP_BENCH_COUNT_CHECK,
 * the ctest "skipped" code). Returns when the program should run: timed, or
 * as the count run itself.
 */
void bench_init(void);

/* True in the count run (under callgrind, PYOP_BENCH_COUNT set). */
bool bench_counting(void);

/* True when PYOP_BENCH_QUICK is set to a non-empty value other than "0":
 * tiny iteration counts, just to prove the benchmark still runs. */
bool bench_quick(void);

/* True when PYOP_BENCH_ONLY is unset or lists group (comma-separated):
 * run only some groups of rows, e.g. to profile them. */
bool bench_want(const char *group);

/* Repetitions per row: PYOP_BENCH_REPS (odd, 3..101), default 31; 3 when quick.
 * For calibrated variants (one repetition ~3 ms, see bench_interleave). */
int bench_reps(void);

/* Repetitions of rows whose one repetition is long (loads, ~100 ms):
 * PYOP_BENCH_REPS likewise, default 11; 3 when quick. */
int bench_reps_long(void);

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
  long n;          /* iterations per repetition; 0: calibrated (~3 ms a repetition,
                      PYOP_BENCH_REP_MS) */
  double per_iter; /* out: median seconds per iteration */
  double *samples; /* out: per repetition seconds per iteration (reps items, owned) */
  /* Fields below were added later: older positional initializers stay valid. */
  long count_n;    /* iterations of the count run; 0: BENCH_COUNT_N (fast loops);
                      < 0: not counted (multi-threaded variants) */
  double min_iter; /* out: minimum seconds per iteration over the repetitions */
  double instr;    /* out (count run): instructions per iteration; < 0: not counted */
  double chunk_min; /* internal: minimum seconds per iteration of bench_end_chunk */
} bench_variant;

/* Default iterations of a counted variant (fast loops; a heavy variant sets
 * count_n). Quick mode divides by 10. */
#define BENCH_COUNT_N 2000

/*
 * Timed run: runs one untimed warm-up of every variant, then `reps`
 * repetitions of all of them, rotating the order each repetition. Fills
 * per_iter (median of the repetitions), min_iter (minimum of the
 * repetitions, or of the chunks when the variant times chunks) and samples.
 * Count run: for each variant with count_n >= 0, one uninstrumented warm-up
 * and one counted run of count_n iterations; fills instr (and sets
 * per_iter/min_iter to 0). With PYOP_BENCH_COUNT_CHECK set, also counts
 * 2 x count_n iterations and exits 1 unless the count is positive and grows
 * linearly (a section that took in set-up or start-up shows as a fixed
 * offset).
 */
void bench_interleave(bench_variant *v, size_t nv, int reps);

/* Frees what bench_interleave allocated. */
void bench_variants_free(bench_variant *v, size_t nv);

/* Prints "# <name>: median <x> ns/iter (min .. max) over <reps> reps", or in
 * the count run "# <name>: <x> instructions/iter over <n> iterations". */
void bench_print_variant(const bench_variant *v, int reps);

/*
 * Prints one ROW line without a minimum (older rows; run.sh then judges the
 * value itself). value is compared with limit by op ("<=", "<", ">=",
 * "info"); raw is free text (the medians the value came from). Prints
 * nothing in a count run (its value would mean nothing there).
 */
void bench_row(const char *id, const char *what, double value, const char *unit,
               const char *op, double limit, const char *raw);

/*
 * The row cand / base (unit "x"). Timed run: a ROW line with the ratio of
 * medians, the ratio of minimums and both variants' figures. Count run: an
 * ICOUNT line with both instruction counts per iteration and their ratio.
 */
void bench_row_ratio(const char *id, const char *what, const bench_variant *cand,
                     const bench_variant *base, const char *op, double limit);

/* The row "ns per iteration of v" (unit "ns"), same two forms. */
void bench_row_ns(const char *id, const char *what, const bench_variant *v, const char *op,
                  double limit);

/* Makes a fresh private temp directory (mkdtemp under $TMPDIR or /tmp) into
 * buf; exits on failure. */
void bench_mkdtemp(char *buf, size_t len, const char *tag);

/* rm -rf of a directory tree the benchmark made (no symlinks followed). */
void bench_rmtree(const char *path);

/* Prints a message to stderr and exits with status 1. */
void bench_die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

#endif
