/*
 * Registry benchmarks (target 6 of bench/README.md), one process, with the
 * fake bridge MANY_OPS (tests/fake_bridge: registers $PYOP_FAKE_NOPS ops
 * FakeMany00000... from C, no Python code), so what is timed is libpyop's
 * registry and load path, not plugin imports.
 *
 *   6a  ns per lookup (pyop_op_get + pyop_op_info_release) with 100,000 ops
 *       registered (target < 100 ns);
 *   6b  the same with 100,000 vs with 1,000 ops registered (flat: O(1));
 *   6c  pyop_load of 100,000 ops vs of 10,000 ops (at most 12x).
 *
 * Lookups cycle over 1,000 op types spread evenly over the registered ones,
 * in a shuffled order, so both table sizes are probed with as many distinct
 * keys; row 6i repeats 6a over all 100,000 op types (memory-bound).
 * Each repetition loads the registry it needs (untimed) and unloads it
 * after, so the table sizes interleave like every other variant.
 *
 * libpyop needs an initialised Python in the process to accept a bridge
 * (runtime key), so this host starts one too; ASCEND_CUSTOM_OPP_PATH points
 * at an empty .py file (the fake bridge ignores the paths).
 */
#include "bench_python.h"
#include "bench_util.h"

#include <fcntl.h>
#include <pyop/pyop.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define NKEYS 1000
#define LOOKUP_CHUNK 100000

static void check(int rc, const char *what) {
  if (rc != PYOP_OK)
    bench_die("%s: %s: %s", what, pyop_status_name(rc), pyop_last_error());
}

/* Loads n fake ops (untimed unless t is given: then *t gets the seconds). */
static void load_ops(long nops, double *t) {
  char v[32];
  snprintf(v, sizeof v, "%ld", nops);
  setenv("PYOP_FAKE_NOPS", v, 1);
  if (!t) {
    check(pyop_load(), "pyop_load");
    return;
  }
  double t0 = bench_begin();
  check(pyop_load(), "pyop_load");
  *t = bench_end(t0);
}

static void unload_ops(void) { check(pyop_unload(), "pyop_unload"); }

/* ------------------------------------------------------------ lookups */

typedef struct lookup_set {
  long nops;     /* ops registered while looking up */
  char **keys;   /* op types looked up, in this order */
  size_t nkeys;
} lookup_set;

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint64_t next_rand(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

/* nkeys op types evenly spread over FakeMany00000..nops-1, shuffled. */
static void make_keys(lookup_set *s, long nops, size_t nkeys) {
  s->nops = nops;
  s->nkeys = nkeys;
  s->keys = calloc(nkeys, sizeof *s->keys);
  if (!s->keys) bench_die("out of memory");
  for (size_t k = 0; k < nkeys; k++) {
    long i = (long)((double)k * (double)nops / (double)nkeys);
    s->keys[k] = malloc(32);
    if (!s->keys[k]) bench_die("out of memory");
    snprintf(s->keys[k], 32, "FakeMany%05ld", i);
  }
  for (size_t k = nkeys - 1; k > 0; k--) {
    size_t j = (size_t)(next_rand() % (k + 1));
    char *tmp = s->keys[k];
    s->keys[k] = s->keys[j];
    s->keys[j] = tmp;
  }
}

static void free_keys(lookup_set *s) {
  for (size_t k = 0; k < s->nkeys; k++) free(s->keys[k]);
  free(s->keys);
}

static double run_lookups(void *arg, long n) {
  lookup_set *s = arg;
  load_ops(s->nops, NULL);
  size_t k = 0;
  double t = 0.0;
  /* In chunks of LOOKUP_CHUNK (~6 ms): one repetition must be long, as it
   * loads its table first; the minimum comes from the quietest chunk. */
  for (long done = 0; done < n;) {
    long c = n - done < LOOKUP_CHUNK ? n - done : LOOKUP_CHUNK;
    double t0 = bench_begin();
    for (long i = 0; i < c; i++) {
      const pyop_op_info *info;
      if (pyop_op_get(s->keys[k], &info) != PYOP_OK) bench_die("lookup %s", s->keys[k]);
      pyop_op_info_release(info);
      if (++k == s->nkeys) k = 0;
    }
    t += bench_end_chunk(t0, c);
    done += c;
  }
  unload_ops();
  return t;
}

/* --------------------------------------------------------- registration */

static double run_loads(void *arg, long n) {
  long nops = *(long *)arg;
  double total = 0.0;
  for (long i = 0; i < n; i++) {
    double t;
    load_ops(nops, &t);
    total += t;
    unload_ops();
  }
  return total;
}

int main(void) {
  bench_init();
  const char *bridge = getenv("PYOP_BENCH_MANY_OPS_DIR");
  if (!bridge || !bridge[0]) bridge = PYOP_BENCH_MANY_OPS_DIR;
  struct stat st;
  if (stat(bridge, &st) != 0) {
    printf("# bench_registry: fake bridge %s not built (configure with BUILD_TESTING=ON "
           "and build pyop_fake_bridge_MANY_OPS); skipped\n", bridge);
    return 0;
  }
  char dir[4096], dummy[4200];
  bench_mkdtemp(dir, sizeof dir, "registry");
  snprintf(dummy, sizeof dummy, "%s/dummy.py", dir);
  int fd = open(dummy, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) bench_die("create %s", dummy);
  close(fd);
  setenv("ASCEND_CUSTOM_OPP_PATH", dummy, 1);
  setenv("PYOP_BRIDGE_DIR", bridge, 1);

  int reps = bench_reps_long(); /* each repetition loads a table */
  long big = bench_quick() ? 2000 : 100000, mid = big / 10, small = big / 100;
  printf("# bench_registry: %d repetitions, medians; fake bridge %s\n", reps, bridge);
  bench_python_start();
  load_ops(small, NULL); /* opens the bridge once */
  unload_ops();

  /* ---- 6a, 6b, 6i: lookups */
  if (bench_want("lookup")) {
    lookup_set s_big, s_small, s_all;
    make_keys(&s_big, big, NKEYS);
    make_keys(&s_small, small, NKEYS);
    make_keys(&s_all, big, (size_t)big);
    long nl = bench_scale(1000000);
    bench_variant lk[] = {
        {"lookup, 100,000 ops registered", run_lookups, &s_big, nl, 0, NULL, 20000},
        {"lookup, 1,000 ops registered", run_lookups, &s_small, nl, 0, NULL, 20000},
        /* info only, and its instructions are 6a's: not counted */
        {"lookup, 100,000 ops, all keys", run_lookups, &s_all, nl, 0, NULL, -1},
    };
    bench_interleave(lk, 3, reps);
    for (int i = 0; i < 3; i++) bench_print_variant(&lk[i], reps);
    bench_row_ns("6a", "lookup (get+release), 100,000 ops: ns/lookup", &lk[0], "<", 100.0);
    bench_row_ratio("6b", "lookup: 100,000 ops / 1,000 ops (flat)", &lk[0], &lk[1], "<=", 1.5);
    bench_row_ns("6i", "lookup over all 100,000 op types (cache misses): ns/lookup", &lk[2],
                 "info", 0);
    bench_variants_free(lk, 3);
    free_keys(&s_big);
    free_keys(&s_small);
    free_keys(&s_all);
  }

  /* ---- 6c: registration */
  if (bench_want("register")) {
    bench_variant ld[] = {
        {"pyop_load of 100,000 ops", run_loads, &big, 1, 0, NULL, 1},
        {"pyop_load of 10,000 ops", run_loads, &mid, 5, 0, NULL, 1},
    };
    bench_interleave(ld, 2, reps);
    for (int i = 0; i < 2; i++) bench_print_variant(&ld[i], reps);
    bench_row_ratio("6c", "register: pyop_load 100,000 ops / 10,000 ops", &ld[0], &ld[1], "<=",
                    12.0);
    bench_variants_free(ld, 2);
  }

  check(pyop_shutdown(), "pyop_shutdown");
  bench_python_stop();
  bench_rmtree(dir);
  return 0;
}
