/*
 * Rows 10l, 10s, 10u, 10t and 10m (bench/README.md), built and run by
 * bench/lanes.sh against a libpyop whose default Python is CPython 3.12+.
 * Each mode is a process of its own (argv[1]; argv[2] the plugins,
 * tests/lanes/plugins/pure):
 *
 *   lanes     pyop_op_execute of a pure-Python elementwise float32[4096] op
 *             (Scale) from 2 host threads, one instance each, in lanes 1
 *             and 2 (pyop_options.lanes = 2), throughput over 1 thread
 *   serial    the same with both instances in lane 1 (created 1st and 3rd:
 *             placement is round-robin), i.e. an op forced serial: the
 *             case the 10l gate must call NOT MET
 *   shared    the same without lanes (one GIL)
 *   single    1 thread (this one), its time per call and its CPU time per
 *             call ("ns_per_call BEST MEDIAN cpu_ns_per_call BEST MEDIAN");
 *             argv[3] "lanes": in a lane
 *   load N    one pyop_load with N lanes (start_python, plugins): "load
 *             SECONDS RSS_GROWTH_BYTES" (a process per load: a second load
 *             in one process would take up the lanes the first kept)
 *   control   the C control alone: "control RATIO" (c_loop on 2 threads
 *             over 1), beside each pair of loads
 *   probe     whether lanes run here: "lanes on", or "lanes off: REASON"
 *             (this CPython cannot have them, or libpyop keeps them off on
 *             it: the op's serial_reason)
 *
 * A mode that needs lanes where they are off exits 3, the reason on stderr.
 *
 * Every mode first calls claim_cores (below): its workers keep to two
 * cores of their own, and where lanes.sh asks for it (the default) the
 * process runs at a higher priority in a session of its own.
 *
 * lanes / serial / shared time pairs of repetitions. A pair is the op's
 * run on 1 thread and on 2, and the C control's (interpreter-like C work,
 * c_loop, calibrated to last about as long as the op's run) on 1 and 2,
 * back to back (op 1, op 2, C 2, C 1, the order reversed every other pair).
 * Each thread of a run reads its own clocks over its run: wall time, CPU
 * time, and the kernel's run-queue delay (schedstat: how long it was
 * runnable but had no core). A run's active time is the longest of its
 * threads' wall time less that delay, plus the CPU time the process's
 * other threads used meanwhile (none of ours should: a thread of the
 * bridge taking a core counts against the op).
 *
 * Why (issue 28.12): the kernel shares this machine's 2 cores between
 * sessions (autogroup), not between threads. While another session
 * computes, the op's two threads get about one core between them and wait
 * in the run queue (measured: 50-90% of their wall time under 4 other busy
 * sessions), which made the op's pairs read 1.1-1.3x while the C control,
 * measured a moment apart, read 2.0x; nothing of the op blocked (its
 * threads' blocked share 0-2%, the same as the control's; 219 futex calls
 * in a whole run). The op's own threads' delay witnesses what disturbed
 * the op's run, where a control beside it only might. Time blocked
 * (neither running nor runnable: a lock, the GIL) stays in the active
 * time, and so does spinning (CPU time).
 *
 * Per pair: r = 2 x active time on 1 thread / on 2 (the op), c the same
 * for the control. The pair counts when
 *   - every thread of the op's two runs waited for a core at most
 *     WAITED_MAX of its wall time: the op had two cores, which is what 10l
 *     asks. Subtracting the delay is exact for independent threads; for an
 *     op whose threads never progress at once (serialized), the active
 *     time of the less-delayed thread still spans both threads' work less
 *     its own delay, so r gains at most 1 / (1 - WAITED_MAX) = 1.25x;
 *   - c >= PAIR_FLOOR: the control, whose threads are independent (its
 *     subtraction exact), witnesses what a delay does not show (a
 *     neighbour's cache or memory traffic, a vCPU the host took);
 *   - neither ratio exceeds 2.1 (impossible on 2 threads).
 * Pairs run until PAIRS counted or PAIRS_MAX ran. Printed: "priority ..."
 * (what claim_cores got), "pair K r c wall R C waited W1 W2 blocked B other
 * O ms counts|no" per pair (R and C the wall-time ratios, W1 and W2 the
 * largest delay share in the op's 1- and 2-thread run, B the largest
 * blocked share in the 2-thread one), "ratio BEST MEDIAN control BEST
 * MEDIAN" (wall times, for the record: the best of each side, the median
 * of the pairs' ratios), and "judged MEDIAN COUNTED RUN WITNESS" (the
 * median r of the pairs that counted, how many did and ran, "schedstat",
 * or "none" where the kernel does not give the delay: lanes.sh then judges
 * nothing). Numbers, not pass/fail.
 */
#include "../tests/e2e/e2e_util.h"

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <time.h>

#define N 4096
#define PAIRS 9      /* pairs that count, wanted */
#define PAIRS_MAX 27 /* pairs run at most */
#define PAIR_FLOOR 1.8
#define WAITED_MAX 0.2
#define REPS 9 /* single: repetitions */

static pyop_op *ops[2];
static int calls = 200;
static long c_iters = 4000;

static void op_loop(pyop_op *op) {
  float x[N], y[N];
  for (int i = 0; i < N; i++)
    x[i] = (float)i;
  pyop_tensor tx = f32_1d(x, N), ty = f32_1d(y, N);
  pyop_tensor_list in[1] = {one(&tx)};
  for (int i = 0; i < calls; i++) {
    pyop_exec_ctx ctx = PYOP_EXEC_CTX_INIT;
    if (pyop_op_execute(op, in, 1, &ty, 1, &ctx) != PYOP_OK) {
      fprintf(stderr, "execute: %s\n", pyop_last_error());
      exit(1);
    }
  }
}

/*
 * The C control: interpreter-like work (a table-driven dispatch that loads
 * and stores all over a 64 KB buffer of its own, as CPython's eval loop
 * does over its objects), c_iters passes. A plain arithmetic loop would
 * hardly use the core: it reads 2x on 2 threads even where two
 * interpreters share a core's resources (two vCPUs on one physical core's
 * threads, a neighbour's cache traffic), which it then cannot witness.
 */
static void c_loop(void) {
  enum { W = 16384 };
  uint32_t *buf = malloc(W * sizeof *buf);
  if (buf == NULL)
    exit(1);
  uint32_t h = 2166136261u;
  for (uint32_t i = 0; i < W; i++)
    buf[i] = i * 2654435761u;
  for (long r = 0; r < c_iters; r++)
    for (uint32_t i = 0; i < W; i += 4) {
      uint32_t v = buf[(h ^ i) & (W - 1)];
      switch (v & 3) {
      case 0: h = (h ^ v) * 16777619u; break;
      case 1: h += v >> 3; break;
      case 2: h ^= v << 5; break;
      default: h -= v;
      }
      buf[i] = h;
    }
  volatile uint32_t sink = h;
  (void)sink;
  free(buf);
}

/* This thread's CPU time in seconds. */
static double cpu_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* The process's CPU time in seconds (its threads', the ended ones too). */
static double process_cpu_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Whether the kernel tells a thread's run-queue delay (false: no
 * /proc/thread-self/schedstat; then nothing is subtracted). */
static bool have_waited = true;

/* Seconds this thread has spent runnable without a core (the run-queue
 * delay, schedstat's second field: up to date while it runs, as it grows
 * only when the thread gets a core). Its first field, the time on a core,
 * is not read there: the kernel updates it only at a tick or a switch. */
static double waited_s(void) {
  FILE *f = fopen("/proc/thread-self/schedstat", "r");
  unsigned long long on = 0, delay = 0;
  int n = f != NULL ? fscanf(f, "%llu %llu", &on, &delay) : 0;
  if (f != NULL)
    fclose(f);
  if (n != 2)
    have_waited = false;
  return (double)delay / 1e9;
}

/* One thread of a timed run: what it runs and what its clocks said. */
typedef struct worker {
  pyop_op *op; /* NULL: the C control */
  int core;    /* the core it keeps to, or -1 */
  double wall, cpu, waited;
} worker;

/* The cores the workers keep to (claim_cores), or -1. */
static int cores[2] = {-1, -1};

static void *work(void *p) {
  worker *w = p;
  if (w->core >= 0) {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(w->core, &one);
    pthread_setaffinity_np(pthread_self(), sizeof one, &one);
  }
  double q0 = waited_s(), c0 = cpu_s(), t0 = now_s();
  if (w->op != NULL)
    op_loop(w->op);
  else
    c_loop();
  w->wall = now_s() - t0;
  w->cpu = cpu_s() - c0;
  w->waited = waited_s() - q0;
  return NULL;
}

/* A timed run of 1 or 2 threads (see the top of the file). */
typedef struct run {
  double wall;    /* seconds, the first thread's start to the last join */
  double active;  /* the longest of its threads' wall minus waited, plus other */
  double other;   /* CPU seconds of the process's other threads meanwhile */
  double waited;  /* the largest share of a thread's wall it waited for a core */
  double blocked; /* the largest share it neither ran nor waited for a core */
} run;

static run timed(int nt, bool control) {
  pthread_t t[2];
  worker w[2];
  double p0 = process_cpu_s(), m0 = cpu_s(), t0 = now_s();
  for (int i = 0; i < nt; i++) {
    w[i] = (worker){control ? NULL : ops[i], cores[i], 0, 0, 0};
    if (pthread_create(&t[i], NULL, work, &w[i]) != 0)
      exit(1);
  }
  for (int i = 0; i < nt; i++)
    pthread_join(t[i], NULL);
  run r = {now_s() - t0, 0, 0, 0, 0};
  r.other = process_cpu_s() - p0 - (cpu_s() - m0);
  for (int i = 0; i < nt; i++) {
    double active = w[i].wall - w[i].waited, blocked = w[i].wall - w[i].cpu - w[i].waited;
    r.other -= w[i].cpu;
    r.active = active > r.active ? active : r.active;
    r.waited = w[i].waited / w[i].wall > r.waited ? w[i].waited / w[i].wall : r.waited;
    r.blocked = blocked / w[i].wall > r.blocked ? blocked / w[i].wall : r.blocked;
  }
  r.other = r.other > 0 ? r.other : 0;
  r.active += r.other;
  return r;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof v[0], cmp);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static int load(uint32_t lanes, const char *plugins) {
  setenv("ASCEND_CUSTOM_OPP_PATH", plugins, 1);
  pyop_options o = PYOP_OPTIONS_INIT;
  o.start_python = true;
  o.lanes = lanes;
  if (pyop_set_options(&o) != PYOP_OK || pyop_load() != PYOP_OK) {
    fprintf(stderr, "%s\n", pyop_last_error());
    return 1;
  }
  return 0;
}

/* Why Scale does not run in lanes after a load that asked for them, or
 * NULL when it does (the caller has loaded with lanes). */
static const char *lanes_off(void) {
  static char why[1024];
  const pyop_op_info *info = NULL;
  if (pyop_op_get("Scale", &info) != PYOP_OK)
    return "Scale is not registered";
  bool off = info->lanes == 0;
  snprintf(why, sizeof why, "%s", info->serial_reason != NULL && info->serial_reason[0]
                                       ? info->serial_reason
                                       : "Scale does not run in lanes");
  pyop_op_info_release(info);
  return off ? why : NULL;
}

/* "load N": the time of one pyop_load with n lanes, and the RSS it added. */
static int mode_load(const char *count, const char *plugins) {
  char *end = NULL;
  unsigned long n = strtoul(count, &end, 10);
  if (end == count || *end != '\0' || n > PYOP_MAX_LANES) {
    fprintf(stderr, "load: lanes '%s' is not 0..%u\n", count, PYOP_MAX_LANES);
    return 2;
  }
  long rss0 = rss_bytes();
  double t0 = now_s();
  if (load((uint32_t)n, plugins) != 0)
    return 1;
  double t = now_s() - t0;
  const char *off = n > 0 ? lanes_off() : NULL;
  if (off != NULL) {
    fprintf(stderr, "lanes off: %s\n", off);
    return 3;
  }
  printf("load %.4f %ld\n", t, rss_bytes() - rss0);
  pyop_shutdown();
  return 0;
}

/* The instances: in lanes 1 and 2 (lanes), both in lane 1 (serial), or in
 * the main interpreter (shared, single without lanes). */
static int make_instances(const char *mode, bool lanes) {
  pyop_op *spare = NULL;
  for (int i = 0; i < 2; i++) {
    if (pyop_op_create("Scale", NULL, 0, &ops[i]) != PYOP_OK) {
      fprintf(stderr, "pyop_op_create Scale: %s\n", pyop_last_error());
      return 1;
    }
    if (i == 0 && !strcmp(mode, "serial") &&
        pyop_op_create("Scale", NULL, 0, &spare) != PYOP_OK) /* takes lane 2 */
      return 1;
  }
  if (spare != NULL)
    pyop_op_destroy(spare);
  /* Say so when the op stayed serial or the instances are not where the
   * mode wants them, rather than print a ratio of 1. */
  uint32_t l0 = pyop_op_lane(ops[0]), l1 = pyop_op_lane(ops[1]);
  bool want_two = !strcmp(mode, "lanes"), want_one = !strcmp(mode, "serial");
  const char *off = lanes ? lanes_off() : NULL;
  if (off != NULL) {
    fprintf(stderr, "lanes off: %s\n", off);
    return 3;
  }
  if (lanes && (l0 == 0 || l1 == 0 || (want_two && l0 == l1) || (want_one && l0 != l1))) {
    const pyop_op_info *info = NULL;
    const char *why = pyop_op_get("Scale", &info) == PYOP_OK && info->serial_reason != NULL &&
                              info->serial_reason[0] != '\0'
                          ? info->serial_reason
                          : "the instances are not in the lanes the mode needs";
    fprintf(stderr, "Scale: lanes %u and %u (mode %s): %s\n", (unsigned)l0, (unsigned)l1,
            mode, why);
    return 1;
  }
  return 0;
}

/* The C loop's length, so that one run lasts about as long as the op's on
 * one thread (equal exposure to whatever disturbs the machine). */
static void calibrate(void) {
  double op = timed(1, false).active;
  long probe = c_iters = 400;
  double c = timed(1, true).active;
  if (c > 0 && op > 0)
    c_iters = (long)((double)probe * op / c);
  if (c_iters < probe)
    c_iters = probe;
}

/* lanes / serial / shared: the pairs (see the top of the file). */
static void pairs(void) {
  double wall_r[PAIRS_MAX], wall_c[PAIRS_MAX], fig[PAIRS_MAX];
  double best[4] = {1e300, 1e300, 1e300, 1e300};
  int counted = 0, k = 0;
  for (; k < PAIRS_MAX && counted < PAIRS; k++) {
    run t[4]; /* op 1, op 2, C 1, C 2 */
    static const int order[2][4] = {{0, 1, 3, 2}, {2, 3, 1, 0}};
    for (int i = 0; i < 4; i++) {
      int w = order[k % 2][i];
      t[w] = timed(w % 2 ? 2 : 1, w >= 2);
    }
    for (int i = 0; i < 4; i++)
      best[i] = t[i].wall < best[i] ? t[i].wall : best[i];
    double r = 2 * t[0].active / t[1].active, c = 2 * t[2].active / t[3].active;
    wall_r[k] = 2 * t[0].wall / t[1].wall;
    wall_c[k] = 2 * t[2].wall / t[3].wall;
    bool counts = t[0].waited <= WAITED_MAX && t[1].waited <= WAITED_MAX && c >= PAIR_FLOOR &&
                  c <= 2.1 && r <= 2.1;
    printf("pair %d %.3f %.3f wall %.3f %.3f waited %.0f%% %.0f%% blocked %.0f%% other %.1f ms "
           "%s\n",
           k, r, c, wall_r[k], wall_c[k], 100 * t[0].waited, 100 * t[1].waited,
           100 * t[1].blocked, 1e3 * (t[0].other + t[1].other), counts ? "counts" : "no");
    if (counts)
      fig[counted++] = r;
  }
  printf("ratio %.2f %.2f control %.2f %.2f\n", 2 * best[0] / best[1], median(wall_r, k),
         2 * best[2] / best[3], median(wall_c, k));
  printf("judged %.2f %d %d %s\n", counted ? median(fig, counted) : 0.0, counted, k,
         have_waited ? "schedstat" : "none");
}

/*
 * The cores a timed run's workers keep to: worker i to the i-th core this
 * process may use (two threads left to the scheduler were seen sharing one
 * core for a whole run while the other core ran a neighbour). Then
 * PYOP_BENCH_LANES_NICE=N (negative; lanes.sh passes -10 unless told
 * otherwise, 0 or unset leaves the priority alone): the process asks for
 * niceness N in a session of its own, so in an autogroup of its own (the
 * kernel shares the cores between sessions first: a niceness weighs only
 * against the threads of the same session), and for its own threads.
 * Where that is refused (no CAP_SYS_NICE, already a session leader) it
 * runs as it is, and the witness finds fewer pairs with two cores. Out of
 * its parent's session a ^C there would not reach it: it dies with its
 * parent. Returns what it got, for the record.
 */
static const char *claim_cores(void) {
  static char got[96];
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) >= 2)
    for (int c = 0, i = 0; c < CPU_SETSIZE && i < 2; c++)
      if (CPU_ISSET(c, &set))
        cores[i++] = c;
  const char *v = getenv("PYOP_BENCH_LANES_NICE");
  int n = v != NULL ? atoi(v) : 0;
  if (n >= 0 || n < -20)
    return "nice 0";
  bool session = false;
  if (prctl(PR_SET_PDEATHSIG, SIGTERM) == 0 && getppid() != 1 && setsid() != -1) {
    FILE *f = fopen("/proc/self/autogroup", "w");
    if (f != NULL) {
      session = fprintf(f, "%d", n) > 0;
      session = fclose(f) == 0 && session;
    }
  }
  bool threads = setpriority(PRIO_PROCESS, 0, n) == 0;
  snprintf(got, sizeof got, "nice %d session %s threads %s", n, session ? "yes" : "no",
           threads ? "yes" : "no");
  return got;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s lanes|serial|shared|single|load N|control|probe PLUGINS [lanes]\n",
            argv[0]);
    return 2;
  }
  const char *mode = argv[1];
  const char *priority = claim_cores();
  if (!strcmp(mode, "control")) {
    double c1 = timed(1, true).wall, c2 = timed(2, true).wall;
    printf("control %.3f\n", 2 * c1 / c2);
    return 0;
  }
  if (!strcmp(mode, "load"))
    return argc < 4 ? 2 : mode_load(argv[2], argv[3]);
  if (!strcmp(mode, "probe")) {
    if (load(2, argv[2]) != 0)
      return 1;
    const char *off = lanes_off();
    printf(off != NULL ? "lanes off: %s\n" : "lanes on\n", off);
    pyop_shutdown();
    return 0;
  }
  bool lanes = !strcmp(mode, "lanes") || !strcmp(mode, "serial") ||
               (argc > 3 && !strcmp(argv[3], "lanes"));
  if (load(lanes ? 2 : 0, argv[2]) != 0)
    return 1;
  int rc = make_instances(mode, lanes);
  if (rc != 0)
    return rc;
  timed(1, false); /* warm-up: thread states, caches */
  if (!strcmp(mode, "single")) {
    /* On this thread (one kept thread state, as a host's executor): wall
     * time and this thread's CPU time per call, which a busy neighbour
     * taking the core does not inflate. */
    double ns[REPS], cpu[REPS];
    for (int k = 0; k < REPS; k++) {
      double c0 = cpu_s(), t0 = now_s();
      op_loop(ops[0]);
      ns[k] = (now_s() - t0) / calls * 1e9;
      cpu[k] = (cpu_s() - c0) / calls * 1e9;
    }
    double med = median(ns, REPS), cmed = median(cpu, REPS);
    /* sorted by median(): [0] is the best */
    printf("ns_per_call %.0f %.0f cpu_ns_per_call %.0f %.0f\n", ns[0], med, cpu[0], cmed);
  } else {
    printf("priority %s\n", priority);
    calibrate();
    pairs();
  }
  for (int i = 0; i < 2; i++)
    pyop_op_destroy(ops[i]);
  pyop_shutdown();
  return 0;
}
