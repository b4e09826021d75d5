/*
 * What interpreter lanes load (issue 28 items 4, 7, 8, 9), with the real
 * bridge: a C host without Python (start_python), like lanes_host.c, built
 * and run by tests/lanes/run.sh (the list is LANES_LOAD_CASES at the end;
 * `lanes_load --list` prints it).
 *
 *   twice      one plugin through two path elements (a:a, a hard link in b,
 *              an identical copy in c with a trailing slash) loads once per
 *              file as without lanes and runs in lanes
 *   trailing_slash  "pure/:refused/": Refused serial with the lane's
 *              reason (its failed import, one line), Scale in lanes
 *   replaced   a plugin module, and a package's submodule, replaced (cp +
 *              mv) while the load imports them: serial, every instance runs
 *              one version; the next load runs them in lanes (the
 *              replaced plugin is the path's second element: its reason
 *              names that element, the first's ops run in lanes)
 *   unavailable  no /proc, then memfd_create refused (the test seam
 *              PYOP_TEST_LANES=no-proc / no-memfd): the load works, every op
 *              serial naming the cause; after shutdown lanes start again
 *   refusal_reset  lanes refused by no-proc without force in a bridge
 *              image a kept Tensor keeps mapped after shutdown, then a load
 *              without the seam (directly, and after one with 0 lanes):
 *              the refusal is not carried over, the ops get the lanes (or
 *              the reason) a first load gets on this Python
 *   mapped_lanes  loads with 2, 1, then 2 lanes in a bridge image a kept
 *              Tensor keeps mapped after shutdown: each starts or takes
 *              up its lanes as in a new image (the earlier ones kept by
 *              the shutdown before it) and runs Scale in them; then
 *              ext_gate_lazy's calls there (the main interpreter's
 *              extension modules behind the gate again)
 *   optional_ext  a plugin that catches the ImportError of an extension a
 *              lane refuses: serial naming the module, every instance on
 *              the main interpreter's accelerated path
 *   lazy_import  ops that import such a module (or asyncio on 3.12) inside
 *              execute or their constructor: from the first failure on they
 *              run in the main interpreter, said once; the failed call runs
 *              again there unless the lane had called out. Ops that catch
 *              that ImportError there and go on without the module: the
 *              call's result stands, then the same; a workspace taken is a
 *              call out too (LazyWs); the main interpreter's instance of a
 *              fallen-back one is deleted with it (LazyDel); an output
 *              bound to its input from a lane (LaneInto) is a call out too
 *              (LazyInto); so is a compile's artifact (LaneCompile,
 *              LazyCompile), and a declared launch or workspace
 *              (LaneDeclare, LazyDeclare, LazyDeclareWs)
 *   lazy_attrs  three instances with other attributes (a float, a list of
 *              ints, a list of strings; one the float only; an op with
 *              one attribute) of an op that falls back at its
 *              first call: each runs in the main interpreter with its own
 *              attributes, every element, and one Python object per
 *              instance there, kept across its calls; an op with a list
 *              of floats (LazyFloats), every element; one with a list
 *              of lists of ints (LazyRows), every element of every row
 *   optional_many  a plugin that goes on without four refused modules (a
 *              built-in one, then three extension modules): its reason
 *              names the first two, in import order, and "and 2 more";
 *              one without three: "and 1 more"
 *   desc_refused  converting a descriptor fails in the lanes alone, after
 *              the plugin caught a refused import (an attribute default's
 *              __index__): the load fails with PYOP_EPYTHON naming the
 *              lane and the conversion, nothing registered; the main
 *              interpreter's own load of it works
 *   del_import  an import a lane refuses outside any call or load (an
 *              implementation's __del__, when the host destroys its
 *              instances, catching the ImportError) is not the next load's:
 *              after pyop_unload, pyop_load runs the op in the lanes again
 *   ext_gate   a single-phase extension whose init takes 300 ms, imported
 *              by 2 lanes at once: the lanes refuse it after its init,
 *              one init at a time (the extension gate, bridge/lanes.h;
 *              without it the inits overlap, as _ctypes's did, which
 *              corrupted its static types); the main interpreter's import
 *              says none overlapped, the op runs there
 *   ext_gate_nested  the same with an init that imports another
 *              extension module first (the gate entered again inside it):
 *              still one init at a time
 *   ext_gate_lazy  the same extension imported inside execute by two
 *              instances at once, in lanes 1 and 2: each lane refuses it
 *              after its init, the op goes on in the main interpreter,
 *              whose import overlapped lane 2's init unless the main
 *              interpreter's extension modules are behind the gate too
 *   same_twice  a prototype registered twice in one plugin (the same
 *              descriptor): each of the main interpreter's two pairs with
 *              one of every lane's two, and the op runs in lanes
 *   lane_log   a plugin that logs at import (INFO and DEBUG) and in
 *              execute (INFO): every lane's lines and the main
 *              interpreter's reach the host's log hook, each at its own
 *              level
 */
#include "lanes_util.h"

#include <pthread.h>

/* Lanes forced where CPython cannot end them safely, as lanes_host.c's
 * (libpyop never finalizes the Python it starts). */
static void load_with_lanes(uint32_t n, const char *opp) {
  setenv("PYOP_TEST_LANES", "force", 1);
  set_lanes(n, opp, true);
}

/* ---------------------------------------------- one plugin, two paths */

/* Each instance of op_type (n, over the lanes) runs and computes 2x. */
static void run_in_lanes(const char *op_type, int n) {
  for (int i = 0; i < n; i++) {
    pyop_op *op = NULL;
    REQUIRE_RC(pyop_op_create(op_type, NULL, 0, &op), PYOP_OK);
    CHECK(pyop_op_lane(op) != 0, "%s instance %d in lane %u", op_type, i,
          (unsigned)pyop_op_lane(op));
    float x[2] = {1, 2}, y[2] = {0, 0};
    CHECK_RC(run(op, x, y, 2), PYOP_OK);
    CHECK(y[1] == 4.0f, "%s: y[1] = %g", op_type, y[1]);
    pyop_op_destroy(op);
  }
}

/*
 * One plugin reached through two path elements loads as without lanes
 * (once) and runs in lanes (issue 28 item 7): the same directory twice (a
 * setup script run twice), a second directory holding a hard link to it,
 * one holding an identical copy (imported twice, as without lanes).
 */
static void case_twice(void) {
  char *dir = make_temp_dir("lanes-twice");
  char *a = path_join(dir, "a"), *b = path_join(dir, "b"), *c = path_join(dir, "c");
  make_dir(a);
  make_dir(b);
  make_dir(c);
  char *src = xasprintf("%s/pure/scale.py", LANES_PLUGINS);
  char *fa = path_join(a, "scale.py"), *fb = path_join(b, "scale.py"),
       *fc = path_join(c, "scale.py");
  copy_file(src, fa);
  REQUIRE(link(fa, fb) == 0, "link %s %s: %s", fa, fb, strerror(errno));
  copy_file(src, fc);
  char *opps[3] = {xasprintf("%s:%s", a, a), xasprintf("%s:%s", a, b),
                   xasprintf("%s/:%s", c, a)};
  for (int i = 0; i < 3; i++) {
    load_with_lanes(2, opps[i]);
    REQUIRE_RC(pyop_load(), PYOP_OK);
    expect_info("Scale", 2, NULL);
    run_in_lanes("Scale", 3);
    CHECK_RC(pyop_unload(), PYOP_OK);
    free(opps[i]);
  }
  CHECK_RC(pyop_shutdown(), PYOP_OK);
  remove_tree(dir);
  free(dir), free(a), free(b), free(c), free(src), free(fa), free(fb), free(fc);
}

static int count_in(const char *text, const char *s);

/* A trailing slash on an element whose plugin a lane refuses: serial with
 * the reason, the other element's ops in lanes (issue 28 item 8). */
static void case_trailing_slash(void) {
  char *opp = xasprintf("%s/pure/:%s/refused/", LANES_PLUGINS, LANES_PLUGINS);
  load_with_lanes(2, opp);
  pyop_host_hooks h = PYOP_HOST_HOOKS_INIT;
  h.log = lanes_keep_warning;
  CHECK_RC(pyop_set_host_hooks(&h), PYOP_OK);
  lanes_warnings[0] = '\0';
  REQUIRE_RC(pyop_load(), PYOP_OK);
  CHECK_RC(pyop_set_host_hooks(NULL), PYOP_OK);
  /* Both lanes refused the element: one warning, naming the first. */
  CHECK(count_in(lanes_warnings, "stay serial in the main interpreter") == 1 &&
            count_in(lanes_warnings, "refused/ stay serial in the main interpreter: lane 1: ") == 1,
        "the element refused by both lanes warned:\n%s", lanes_warnings);
  expect_info("Scale", 2, NULL);
  expect_info("Refused", 0, "does not support loading in subinterpreters");
  expect_info("Refused", 0, "lane 1: ");
  /* Its import failed (it did not go on without the module), and the reason
   * is one line (configuration pass, session 12). */
  const pyop_op_info *info = NULL;
  CHECK_RC(pyop_op_get("Refused", &info), PYOP_OK);
  if (info != NULL) {
    CHECK(strstr(info->serial_reason, "went on without it") == NULL &&
              strstr(info->serial_reason, "loading Python plugins failed") != NULL,
          "Refused: reason of a failed import: %s", info->serial_reason);
    CHECK(strchr(info->serial_reason, '\n') == NULL, "Refused: a reason of many lines: %s",
          info->serial_reason);
    pyop_op_info_release(info);
  }
  CHECK_RC(pyop_shutdown(), PYOP_OK);
  free(opp);
}

/*
 * A plugin replaced (cp + mv) while a load imports it, after a lane
 * compiled it (issue 28 item 4): a module (replaced/versioned.py) and a
 * package's submodule (replaced_pkg/vpkg/impl.py). The op stays serial,
 * every instance runs the main interpreter's version (2); loaded again, it
 * runs in the lanes.
 */
static void replaced_run(const char *plugin, const char *op_type) {
  char *dir = make_temp_dir("lanes-replaced");
  char *from = path_join(LANES_PLUGINS, plugin), *to = path_join(dir, plugin);
  copy_tree(from, to);
  /* The replaced plugin is the second element: the reason names it, not
   * the first, whose ops run in lanes. */
  char *opp = xasprintf("%s/pure:%s", LANES_PLUGINS, to);
  char *names = xasprintf(" compiled other sources for the plugins of %s than the main "
                          "interpreter", to);
  load_with_lanes(2, opp);
  for (int round = 0; round < 2; round++) {
    lanes_warnings[0] = '\0';
    pyop_host_hooks h = PYOP_HOST_HOOKS_INIT;
    h.log = lanes_keep_warning;
    CHECK_RC(pyop_set_host_hooks(&h), PYOP_OK);
    REQUIRE_RC(pyop_load(), PYOP_OK);
    CHECK_RC(pyop_set_host_hooks(NULL), PYOP_OK);
    /* One warning per lane that compiled the other version (one or both),
     * however many of its descriptors (prototype, implementation) differ. */
    int said = 0;
    for (int k = 1; k <= 2; k++) {
      char lane[64];
      snprintf(lane, sizeof lane, "lane %d compiled other sources", k);
      const char *at = strstr(lanes_warnings, lane);
      CHECK(at == NULL || strstr(at + 1, lane) == NULL, "round %d: '%s' said twice:\n%s",
            round, lane, lanes_warnings);
      said += at != NULL;
    }
    CHECK(said == (round == 0 ? 1 : 0) || (round == 0 && said == 2),
          "round %d: %d lanes said they compiled other sources:\n%s", round, said,
          lanes_warnings);
    if (round == 0)
      expect_info(op_type, 0, names);
    else
      expect_info(op_type, 2, NULL);
    expect_info("Scale", 2, NULL);
    for (int i = 0; i < 3; i++) {
      pyop_op *op = NULL;
      REQUIRE_RC(pyop_op_create(op_type, NULL, 0, &op), PYOP_OK);
      float x[2] = {0, 0}, y[2] = {-1, -1};
      CHECK_RC(run(op, x, y, 2), PYOP_OK);
      CHECK(y[0] == 2.0f, "round %d: instance %d of %s (lane %u) runs version %g", round, i,
            op_type, (unsigned)pyop_op_lane(op), y[0]);
      pyop_op_destroy(op);
    }
    CHECK_RC(pyop_unload(), PYOP_OK);
  }
  CHECK_RC(pyop_shutdown(), PYOP_OK);
  remove_tree(dir);
  free(dir), free(from), free(to), free(opp), free(names);
}

static void case_replaced(void) {
  setenv("PYOP_TEST_REPLACE", "1", 1); /* before Python starts: its os.environ */
  replaced_run("replaced", "Versioned");
  replaced_run("replaced_pkg", "VersionedPkg");
}

/* ------------------------------------------------ no /proc, no memfd */

/*
 * Where lanes cannot start (no /proc: a chroot, a minimal sandbox; a
 * seccomp filter refusing memfd_create), the load works as without lanes,
 * every op serial with the real cause (issue 28 item 9); the test seam
 * stands in for the system (PYOP_TEST_LANES no-proc / no-memfd).
 */
static void unavailable_run(const char *seam, const char *cause) {
  setenv("PYOP_TEST_LANES", seam, 1);
  char *opp = xasprintf("%s/pure", LANES_PLUGINS);
  set_lanes(2, opp, true);
  CHECK_RC(pyop_set_log_level(99), PYOP_EINVAL);
  char before[512];
  snprintf(before, sizeof before, "%s", pyop_last_error());
  REQUIRE_RC(pyop_load(), PYOP_OK);
  CHECK(strcmp(pyop_last_error(), before) == 0, "the load changed the last error to: %s",
        pyop_last_error());
  expect_info("Scale", 0, "interpreter lanes cannot start in this process: ");
  expect_info("Scale", 0, cause);
  pyop_op *op = NULL;
  REQUIRE_RC(pyop_op_create("Scale", NULL, 0, &op), PYOP_OK);
  CHECK(pyop_op_lane(op) == 0, "placed in lane %u", (unsigned)pyop_op_lane(op));
  float x[2] = {1, 2}, y[2] = {0, 0};
  CHECK_RC(run(op, x, y, 2), PYOP_OK);
  CHECK(y[1] == 4.0f, "Scale: y[1] = %g", y[1]);
  pyop_op_destroy(op);
  CHECK_RC(pyop_shutdown(), PYOP_OK);
  free(opp);
}

static void case_unavailable(void) {
  unavailable_run("force,no-proc", "cannot read /proc/self/maps (No such file or directory): "
                                   "is /proc mounted?");
  unavailable_run("force,no-memfd", "memfd_create failed: Operation not permitted");
  /* Back: lanes start again. */
  load_with_lanes(2, LANES_PLUGINS "/pure");
  REQUIRE_RC(pyop_load(), PYOP_OK);
  expect_info("Scale", 2, NULL);
  CHECK_RC(pyop_shutdown(), PYOP_OK);
}

/* Scale's lanes and serial reason after a load of opp with n lanes
 * (PYOP_TEST_LANES as set by the caller), then shutdown. With pin, Pin
 * (tests/lanes/plugins/pin, in opp) runs first: it keeps its input Tensor
 * where shutdown cannot drop it, so the bridge's image stays mapped
 * (checked: the shutdown says so) and the next load configures that same
 * image again, with its static state. */
static uint32_t scale_lanes(uint32_t n, const char *opp, bool pin, char *reason,
                            size_t size) {
  set_lanes(n, opp, true);
  uint32_t lanes = UINT32_MAX;
  reason[0] = '\0';
  REQUIRE_RC(pyop_load(), PYOP_OK);
  const pyop_op_info *info = NULL;
  CHECK_RC(pyop_op_get("Scale", &info), PYOP_OK);
  if (info != NULL) {
    lanes = info->lanes;
    snprintf(reason, size, "%s", info->serial_reason);
    pyop_op_info_release(info);
  }
  if (pin) {
    pyop_op *op = NULL;
    REQUIRE_RC(pyop_op_create("Pin", NULL, 0, &op), PYOP_OK);
    float x[2] = {1, 2}, y[2] = {0, 0};
    CHECK_RC(run(op, x, y, 2), PYOP_OK);
    CHECK(y[1] == 2.0f, "Pin: y[1] = %g", y[1]);
    pyop_op_destroy(op);
    lanes_warnings[0] = '\0';
    pyop_host_hooks h = PYOP_HOST_HOOKS_INIT;
    h.log = lanes_keep_warning;
    CHECK_RC(pyop_set_host_hooks(&h), PYOP_OK);
  }
  CHECK_RC(pyop_shutdown(), PYOP_OK);
  if (pin) {
    CHECK_RC(pyop_set_host_hooks(NULL), PYOP_OK);
    CHECK(strstr(lanes_warnings, "still referenced at shutdown; the bridge stays mapped") !=
              NULL,
          "the bridge was not kept mapped: %s", lanes_warnings);
  }
  return lanes;
}

/*
 * Why lanes were refused belongs to one configuration of the bridge's
 * image, not to the image: lanes refused by no-proc (without force: on
 * 3.12.0-3.12.3 the CPython check refuses them first) in an image kept
 * mapped after shutdown (pin), then the seam gone: the next load with
 * lanes in that image, and one after a load with 0 lanes, get what a first
 * load gets on this Python (2 lanes, or serial with the CPython reason),
 * not the earlier refusal.
 */
static void case_refusal_reset(void) {
  const char *pure = LANES_PLUGINS "/pure";
  const char *pinned = LANES_PLUGINS "/pure:" LANES_PLUGINS "/pin";
  char first[512], reason[512];
  unsetenv("PYOP_TEST_LANES");
  uint32_t want = scale_lanes(2, pure, false, first, sizeof first);
  CHECK(want == 2 || strstr(first, "gh-119213") != NULL, "first load: Scale in %u lanes (%s)",
        (unsigned)want, first);
  for (int zero_between = 0; zero_between < 2; zero_between++) {
    setenv("PYOP_TEST_LANES", "no-proc", 1);
    uint32_t got = scale_lanes(2, pinned, true, reason, sizeof reason);
    CHECK(got == 0 && reason[0] != '\0', "no-proc: Scale in %u lanes (%s)", (unsigned)got,
          reason);
    unsetenv("PYOP_TEST_LANES");
    if (zero_between) {
      got = scale_lanes(0, pure, false, reason, sizeof reason);
      CHECK(got == 0 && reason[0] == '\0', "0 lanes: Scale in %u lanes (%s)", (unsigned)got,
            reason);
    }
    got = scale_lanes(2, pure, false, reason, sizeof reason);
    CHECK(got == want && strcmp(reason, first) == 0,
          "after a refusal%s: Scale in %u lanes (%s), a first load's %u (%s)",
          zero_between ? " and a load with 0 lanes" : "", (unsigned)got, reason,
          (unsigned)want, first);
  }
}

/* ------------------------------------------ lanes in an image kept mapped */

static char mapped_ready[2048];

/* Keeps the lines that say the lanes are ready (INFO). */
static void keep_mapped_ready(void *user, int level, const char *line) {
  (void)user, (void)level;
  size_t used = strlen(mapped_ready);
  if (strstr(line, "GIL ready in") != NULL && used + strlen(line) + 2 < sizeof mapped_ready) {
    strcat(mapped_ready, line);
    strcat(mapped_ready, "\n");
  }
}

static void slow_lazy_pair(void);

/*
 * The lanes of a bridge image kept mapped after shutdown (pin, with 0
 * lanes: Pin runs in the main interpreter), then loads with lanes in that
 * same image (forced: 3.12.0-3.12.3 too), each shut down before the next:
 * 2 lanes (both new), 1 (one of the two kept), 2 (both kept). Each starts
 * its lanes as a load in a new image would (the lanes of the previous
 * session are not taken as this one's), takes up the ones the previous
 * shutdown kept (the Python libpyop started is known as its own again:
 * its lanes are kept on 3.12 too), and runs Scale in its lanes. A last
 * load there has the main interpreter's extension modules behind the
 * lanes' gate, as the first did (ext_gate_lazy).
 */
static void case_mapped_lanes(void) {
  const char *pure = LANES_PLUGINS "/pure";
  const char *pinned = LANES_PLUGINS "/pure:" LANES_PLUGINS "/pin";
  char reason[512];
  unsetenv("PYOP_TEST_LANES");
  uint32_t got = scale_lanes(0, pinned, true, reason, sizeof reason);
  CHECK(got == 0 && reason[0] == '\0', "0 lanes: Scale in %u lanes (%s)", (unsigned)got, reason);
  int level = pyop_get_log_level();
  static const struct {
    uint32_t lanes;
    const char *says;
  } loads[] = {
      {2, "lanes: 2 sub-interpreters with their own GIL ready in "},
      {1, "lanes: 1 sub-interpreter with its own GIL ready in "},
      {2, "lanes: 2 sub-interpreters with their own GIL ready in "},
  };
  static const char *const counts[] = {"(2 started, 0 kept from an earlier load)",
                                       "(0 started, 1 kept from an earlier load)",
                                       "(0 started, 2 kept from an earlier load)"};
  for (size_t i = 0; i < sizeof loads / sizeof loads[0]; i++) {
    mapped_ready[0] = '\0';
    load_with_lanes(loads[i].lanes, pure);
    CHECK_RC(pyop_set_log_level(PYOP_LOG_INFO), PYOP_OK);
    pyop_host_hooks h = PYOP_HOST_HOOKS_INIT;
    h.log = keep_mapped_ready;
    CHECK_RC(pyop_set_host_hooks(&h), PYOP_OK);
    REQUIRE_RC(pyop_load(), PYOP_OK);
    CHECK(strstr(mapped_ready, loads[i].says) != NULL && strstr(mapped_ready, counts[i]) != NULL,
          "load %zu (%u lanes) in the mapped image said: '%s'", i, (unsigned)loads[i].lanes,
          mapped_ready);
    expect_info("Scale", loads[i].lanes, NULL);
    for (uint32_t k = 0; k < loads[i].lanes; k++) {
      pyop_op *op = NULL;
      REQUIRE_RC(pyop_op_create("Scale", NULL, 0, &op), PYOP_OK);
      CHECK(pyop_op_lane(op) != 0, "load %zu: Scale instance %u in lane %u", i, (unsigned)k,
            (unsigned)pyop_op_lane(op));
      float x[2] = {1, 2}, y[2] = {0, 0};
      CHECK_RC(run(op, x, y, 2), PYOP_OK);
      CHECK(y[0] == 2.0f && y[1] == 4.0f, "load %zu: Scale gave %g %g", i, y[0], y[1]);
      pyop_op_destroy(op);
    }
    CHECK_RC(pyop_shutdown(), PYOP_OK);
    CHECK_RC(pyop_set_host_hooks(NULL), PYOP_OK);
    CHECK_RC(pyop_set_log_level(level), PYOP_OK);
  }
  /* A load after those in the same image puts the main interpreter's
   * extension modules behind the lanes' gate again (each shutdown took
   * them out; the lanes C pass, session 18: only the first load did):
   * ext_gate_lazy's pair of calls, whose main-interpreter import (the
   * first of this process) must not overlap lane 2's init. */
  if (getenv("LANES_SLOWINIT") != NULL) {
    load_with_lanes(2, LANES_PLUGINS "/ext_gate_lazy");
    REQUIRE_RC(pyop_load(), PYOP_OK);
    slow_lazy_pair();
    CHECK_RC(pyop_shutdown(), PYOP_OK);
  }
  unsetenv("PYOP_TEST_LANES");
}

/* ---------------------------------------- what a lane refuses to import */


/* How many times s occurs in text. */
static int count_in(const char *text, const char *s) {
  int n = 0;
  for (const char *p = strstr(text, s); p != NULL; p = strstr(p + 1, s))
    n++;
  return n;
}

/* How many lines of text hold both a and b. */
static int lines_with(const char *text, const char *a, const char *b) {
  int n = 0;
  for (const char *line = text; *line != '\0';) {
    const char *end = strchr(line, '\n');
    size_t len = end != NULL ? (size_t)(end - line) : strlen(line);
    char *l = strndup(line, len);
    n += l != NULL && strstr(l, a) != NULL && strstr(l, b) != NULL;
    free(l);
    line += len + (end != NULL);
  }
  return n;
}

/* The host's workspace for run_id's calls (LazyWs takes 64 bytes). */
static int give_workspace(void *user, uint64_t nbytes, void **out) {
  static _Thread_local uint64_t ws[32];
  (void)user;
  if (nbytes > sizeof ws)
    return PYOP_ENOMEM;
  *out = ws;
  return PYOP_OK;
}

/* Runs op on {x0, 0}, with a workspace allocator; *id the interpreter that
 * ran it (0: the main one). */
static int run_id(pyop_op *op, float x0, float *y0, float *id) {
  float x[2] = {x0, 0}, y[2] = {-1, -1};
  pyop_tensor tx = f32_1d(x, 2), ty = f32_1d(y, 2);
  pyop_tensor_list in[1] = {one(&tx)};
  pyop_exec_ctx ctx = PYOP_EXEC_CTX_INIT;
  ctx.alloc_workspace = give_workspace;
  int rc = pyop_op_execute(op, in, 1, &ty, 1, &ctx);
  *y0 = y[0];
  *id = y[1];
  return rc;
}

/*
 * The optional-extension pattern (issue 28 item 5): a plugin that catches
 * the ImportError of an extension module a lane refuses stays serial,
 * saying which module, and every instance runs the accelerated path of the
 * main interpreter.
 */
static void case_optional_ext(void) {
  char *opp = xasprintf("%s/optional_ext", LANES_PLUGINS);
  load_with_lanes(2, opp);
  REQUIRE_RC(pyop_load(), PYOP_OK);
  expect_info("Optional", 0, strstr(Py_VERSION_FOR_TEST, "3.12") ? "extension module '_ctypes'"
                                                                  : "extension module "
                                                                    "'_testsinglephase'");
  expect_info("Optional", 0, "and went on without it: in the main interpreter they run with it");
  for (int i = 0; i < 3; i++) {
    pyop_op *op = NULL;
    REQUIRE_RC(pyop_op_create("Optional", NULL, 0, &op), PYOP_OK);
    float acc = -1, id = -1;
    CHECK_RC(run_id(op, 0, &acc, &id), PYOP_OK);
    CHECK(acc == 1.0f && id == 0.0f, "instance %d ran the %s path in interpreter %g", i,
          acc == 1.0f ? "accelerated" : "fallback", id);
    pyop_op_destroy(op);
  }
  CHECK_RC(pyop_shutdown(), PYOP_OK);
  free(opp);
}

/*
 * A module a lane refuses, imported inside a call (issue 28 item 6): the op
 * runs in the main interpreter from its first failure on, said once; the
 * call that failed runs again there when the lane had not called out yet
 * (LazyExt, LazyAsyncio on 3.12), else it fails saying so (LazyLate); a
 * constructor's import makes the instance the main interpreter's
 * (LazyInit). Every instance then computes, in the main interpreter. The
 * same when the plugin catches the ImportError and goes on without the
 * module (caught: the lane would run its fallback where the main
 * interpreter runs the accelerated path): the call that did it in execute
 * succeeds in its lane, its result kept (LazyOptional); in the constructor
 * the instance is the main interpreter's from the start (LazyOptInit).
 */
static void lazy_op(const char *op_type, bool lane_refuses, bool late, bool caught) {
  pyop_op *op[2] = {NULL, NULL};
  for (int i = 0; i < 2; i++)
    REQUIRE_RC(pyop_op_create(op_type, NULL, 0, &op[i]), PYOP_OK);
  for (int round = 0; round < 3; round++)
    for (int i = 0; i < 2; i++) {
      float y0 = -1, id = -1;
      int rc = run_id(op[i], 5.0f + (float)i, &y0, &id);
      if (late && round == 0 && i == 0) {
        CHECK_RC(rc, PYOP_EPYTHON);
        CHECK_ERR_HAS("(after it had called out, so this call is not run again: the op's "
                      "later calls run in the main interpreter)");
        CHECK_ERR_HAS("ImportError: "); /* what the lane refused, named */
        continue;
      }
      if (caught && round == 0 && i == 0) {
        CHECK(rc == PYOP_OK && y0 == 5.0f && id != 0.0f,
              "%s: the call that went on: %s, y[0] = %g in interpreter %g: %s", op_type,
              pyop_status_name(rc), y0, id, pyop_last_error());
        continue;
      }
      CHECK(rc == PYOP_OK, "%s instance %d round %d: %s: %s", op_type, i, round,
            pyop_status_name(rc), pyop_last_error());
      CHECK(y0 == 5.0f + (float)i, "%s: y[0] = %g", op_type, y0);
      CHECK((id == 0.0f) == lane_refuses, "%s instance %d round %d ran in interpreter %g",
            op_type, i, round, id);
    }
  for (int i = 0; i < 2; i++)
    pyop_op_destroy(op[i]);
  char said[128];
  snprintf(said, sizeof said, "'%s' (", op_type);
  int times = lines_with(lanes_warnings, said, "runs in the main interpreter from now on");
  CHECK(times == (lane_refuses ? 1 : 0), "%s: said %d times that it falls back:\n%s", op_type,
        times, lanes_warnings);
  /* The warning names what the lane refused (the lane's ImportError). */
  if (lane_refuses)
    CHECK(lines_with(lanes_warnings, said, "ImportError") == 1,
          "%s: the fallback's warning does not name the ImportError:\n%s", op_type,
          lanes_warnings);
}

/*
 * The main interpreter's instance of a fallen-back lane instance goes with
 * it: LazyDel's first instance falls back at its first call (made again in
 * the main interpreter, which runs the call), then is destroyed; the
 * instances made after (in the main interpreter from the start) see each
 * earlier one deleted there (configuration pass, session 12).
 */
static void lazy_del(void) {
  for (int i = 0; i < 3; i++) {
    pyop_op *op = NULL;
    REQUIRE_RC(pyop_op_create("LazyDel", NULL, 0, &op), PYOP_OK);
    float x[3] = {7, 0, 0}, y[3] = {-1, -1, -1};
    CHECK_RC(run(op, x, y, 3), PYOP_OK);
    CHECK(y[0] == 7.0f && y[1] == 0.0f, "LazyDel instance %d: y[0] = %g in interpreter %g", i,
          y[0], y[1]);
    CHECK(y[2] == (float)i, "LazyDel instance %d: the main interpreter deleted %g of the %d "
          "instances destroyed before it", i, y[2], i);
    pyop_op_destroy(op);
  }
}

/*
 * What a lane made for an instance that fell back is released there too
 * (lifetime pass, session 15): LazyOptInit's first instance, whose
 * constructor went on without what its lane refused, is deleted in that
 * lane at once; LazyDel's first instance, made in a lane and remade in the
 * main interpreter at its first call, is deleted in both when destroyed.
 * LaneDeleted (one instance per lane) reads each lane's counts: one of each
 * over the two lanes.
 */
static void lane_deletions(void) {
  pyop_op *op[2] = {NULL, NULL};
  float del = 0, opt = 0;
  for (int i = 0; i < 2; i++) {
    REQUIRE_RC(pyop_op_create("LaneDeleted", NULL, 0, &op[i]), PYOP_OK);
    float x[3] = {0, 0, 0}, y[3] = {-1, -1, -1};
    CHECK_RC(run(op[i], x, y, 3), PYOP_OK);
    CHECK(y[1] != 0.0f, "LaneDeleted instance %d ran in interpreter %g", i, y[1]);
    del += y[0];
    opt += y[2];
  }
  CHECK(pyop_op_lane(op[0]) != pyop_op_lane(op[1]), "LaneDeleted: both instances in lane %u",
        (unsigned)pyop_op_lane(op[0]));
  CHECK(del == 1.0f, "the lanes deleted %g LazyDel objects (one was made in a lane)", del);
  CHECK(opt == 1.0f, "the lanes deleted %g LazyOptInit objects (one was made in a lane)", opt);
  for (int i = 0; i < 2; i++)
    pyop_op_destroy(op[i]);
}

/*
 * An infer_meta that imports what its lane refuses (LazyInfer): the call is
 * run again in the main interpreter (it called nothing out), whose result
 * the host gets, for an instance of each lane, every time (lifetime pass,
 * session 15).
 */
static void lazy_infer(void) {
  expect_info("LazyInfer", 2, NULL);
  pyop_op *op[2] = {NULL, NULL};
  for (int i = 0; i < 2; i++)
    REQUIRE_RC(pyop_op_create("LazyInfer", NULL, 0, &op[i]), PYOP_OK);
  CHECK(pyop_op_lane(op[0]) != 0 && pyop_op_lane(op[1]) != 0 &&
            pyop_op_lane(op[0]) != pyop_op_lane(op[1]),
        "LazyInfer instances in lanes %u and %u", (unsigned)pyop_op_lane(op[0]),
        (unsigned)pyop_op_lane(op[1]));
  for (int round = 0; round < 2; round++)
    for (int i = 0; i < 2; i++) {
      float x[2] = {1, 2};
      pyop_tensor tx = f32_1d(x, 2), ty;
      memset(&ty, 0, sizeof ty);
      pyop_tensor_list in[1] = {one(&tx)};
      CHECK_RC(pyop_op_infer_meta(op[i], in, 1, &ty, 1), PYOP_OK);
      CHECK(ty.ndim == 1 && ty.shape[0] == 3 && ty.dtype == tx.dtype,
            "LazyInfer instance %d round %d: y of rank %d, shape[0] %lld", i, round,
            (int)ty.ndim, (long long)ty.shape[0]);
    }
  for (int i = 0; i < 2; i++)
    pyop_op_destroy(op[i]);
}

/*
 * An infer_meta in a lane that added tensors of a dynamic output and then
 * imported what its lane refuses (LazyInferList: the second tensor's shape
 * imports it): it had called out, so it is not run again in the main
 * interpreter (the host would get the first tensor twice); it fails saying
 * so, and the next call runs there: two tensors (batch 19 survivor,
 * session 15).
 */
static void lazy_infer_list(void) {
  pyop_op *op = NULL;
  REQUIRE_RC(pyop_op_create("LazyInferList", NULL, 0, &op), PYOP_OK);
  CHECK(pyop_op_lane(op) != 0, "LazyInferList in lane %u", (unsigned)pyop_op_lane(op));
  float x[2] = {1, 2};
  pyop_tensor tx = f32_1d(x, 2), items[4];
  pyop_tensor_list in[1] = {one(&tx)};
  pyop_output_list outs[1] = {{items, 4, 0}};
  memset(items, 0, sizeof items);
  CHECK_RC(pyop_op_infer_meta_list(op, in, 1, outs, 1), PYOP_EPYTHON);
  CHECK_ERR_HAS("(after it had called out, so this call is not run again");
  memset(items, 0, sizeof items);
  outs[0].count = 0;
  CHECK_RC(pyop_op_infer_meta_list(op, in, 1, outs, 1), PYOP_OK);
  CHECK(outs[0].count == 2 && items[0].shape[0] == 2 && items[1].shape[0] == 2,
        "LazyInferList in the main interpreter: %zu tensors", outs[0].count);
  pyop_op_destroy(op);
}

/* Runs the in-place op on x[2]: its status; *bound whether the output is
 * x's buffer. */
static int run_into(pyop_op *op, float *x, bool *bound) {
  pyop_tensor tx = f32_1d(x, 2);
  pyop_tensor_list in[1] = {one(&tx)};
  pyop_tensor out[1];
  memset(out, 0, sizeof out);
  pyop_exec_ctx ctx = PYOP_EXEC_CTX_INIT;
  int rc = pyop_op_execute(op, in, 1, out, 1, &ctx);
  *bound = out[0].data == x;
  return rc;
}

/*
 * In-place ops in lanes: the output bound to the input's buffer from a
 * lane (LaneInto, one instance per lane); a call that bound it and then
 * failed on an import the lane refused is not run again (LazyInto: x
 * written once), the next runs in the main interpreter (configuration
 * pass, session 12).
 */
static void into_ops(void) {
  expect_info("LaneInto", 2, NULL);
  for (int i = 0; i < 2; i++) {
    pyop_op *op = NULL;
    REQUIRE_RC(pyop_op_create("LaneInto", NULL, 0, &op), PYOP_OK);
    CHECK(pyop_op_lane(op) != 0, "LaneInto instance %d in lane %u", i,
          (unsigned)pyop_op_lane(op));
    float x[2] = {1, 2};
    bool bound = false;
    CHECK_RC(run_into(op, x, &bound), PYOP_OK);
    CHECK(x[0] == 2.0f && x[1] == 3.0f && bound, "LaneInto instance %d: x = %g %g, bound %d",
          i, x[0], x[1], bound);
    pyop_op_destroy(op);
  }
  pyop_op *op = NULL;
  REQUIRE_RC(pyop_op_create("LazyInto", NULL, 0, &op), PYOP_OK);
  float x[2] = {1, 2};
  bool bound = false;
  CHECK_RC(run_into(op, x, &bound), PYOP_EPYTHON);
  CHECK_ERR_HAS("(after it had called out, so this call is not run again");
  CHECK(x[0] == 2.0f && x[1] == 3.0f, "LazyInto's failed call wrote x %g %g (run again?)", x[0],
        x[1]);
  CHECK_RC(run_into(op, x, &bound), PYOP_OK);
  CHECK(x[0] == 3.0f && bound, "LazyInto in the main interpreter: x[0] = %g, bound %d", x[0],
        bound);
  pyop_op_destroy(op);
}

/* Compiles op for x[2] -> y[2]: its status; the artifact's text in
 * art[size]. */
static int compile_into(pyop_op *op, char *art, size_t size) {
  float x[2] = {1, 2}, y[2] = {0, 0};
  pyop_tensor tx = f32_1d(x, 2), ty = f32_1d(y, 2);
  pyop_tensor_list in[1] = {one(&tx)};
  void *a = NULL;
  size_t len = 0;
  int rc = pyop_op_compile(op, in, 1, &ty, 1, &a, &len);
  snprintf(art, size, "%.*s", (int)len, a != NULL ? (const char *)a : "");
  pyop_free(a);
  return rc;
}

/*
 * compile in lanes: the artifact stored from a lane reaches the host
 * (LaneCompile, one instance per lane); a compile that stored one and then
 * failed on an import the lane refused is not run again, the next runs in
 * the main interpreter (LazyCompile) (configuration pass, session 12).
 */
static void compile_ops(void) {
  expect_info("LaneCompile", 2, NULL);
  for (int i = 0; i < 2; i++) {
    pyop_op *op = NULL;
    REQUIRE_RC(pyop_op_create("LaneCompile", NULL, 0, &op), PYOP_OK);
    char art[64];
    CHECK_RC(compile_into(op, art, sizeof art), PYOP_OK);
    CHECK(strncmp(art, "id ", 3) == 0 && strcmp(art, "id 0") != 0,
          "LaneCompile instance %d: artifact '%s' (from a lane?)", i, art);
    pyop_op_destroy(op);
  }
  pyop_op *op = NULL;
  REQUIRE_RC(pyop_op_create("LazyCompile", NULL, 0, &op), PYOP_OK);
  char art[64] = "";
  CHECK_RC(compile_into(op, art, sizeof art), PYOP_EPYTHON);
  CHECK_ERR_HAS("(after it had called out, so this call is not run again");
  CHECK_RC(compile_into(op, art, sizeof art), PYOP_OK);
  CHECK(strcmp(art, "id 0") == 0, "LazyCompile in the main interpreter: artifact '%s'", art);
  pyop_op_destroy(op);
}

/* Declares op's launches for x[2] -> y[2]: its status. */
static int declare_for(pyop_op *op) {
  float x[2] = {1, 2}, y[2] = {0, 0};
  pyop_tensor tx = f32_1d(x, 2), ty = f32_1d(y, 2);
  pyop_tensor_list in[1] = {one(&tx)};
  return pyop_op_declare_launch_args(op, in, 1, &ty, 1);
}

/*
 * declare_launch_args in lanes: a launch declared from a lane reaches
 * libpyop (LaneDeclare, one instance per lane); a declare that added one
 * and then failed on an import the lane refused is not run again, the next
 * runs in the main interpreter (LazyDeclare) (configuration pass, session
 * 12).
 */
static void declare_ops(void) {
  expect_info("LaneDeclare", 2, NULL);
  for (int i = 0; i < 2; i++) {
    pyop_op *op = NULL;
    REQUIRE_RC(pyop_op_create("LaneDeclare", NULL, 0, &op), PYOP_OK);
    CHECK(pyop_op_lane(op) != 0, "LaneDeclare instance %d in lane %u", i,
          (unsigned)pyop_op_lane(op));
    CHECK_RC(declare_for(op), PYOP_OK);
    pyop_op_destroy(op);
  }
  pyop_op *op = NULL;
  REQUIRE_RC(pyop_op_create("LazyDeclare", NULL, 0, &op), PYOP_OK);
  CHECK_RC(declare_for(op), PYOP_EPYTHON);
  CHECK_ERR_HAS("(after it had called out, so this call is not run again");
  CHECK_RC(declare_for(op), PYOP_OK);
  pyop_op_destroy(op);
  /* A workspace declared is a call out too. */
  REQUIRE_RC(pyop_op_create("LazyDeclareWs", NULL, 0, &op), PYOP_OK);
  CHECK_RC(declare_for(op), PYOP_EPYTHON);
  CHECK_ERR_HAS("(after it had called out, so this call is not run again");
  CHECK_RC(declare_for(op), PYOP_OK);
  pyop_op_destroy(op);
}

static int refuse_output(void *user, size_t index, pyop_tensor *t) {
  (void)user, (void)index, (void)t;
  return 42; /* the host's own status */
}

/*
 * A call in a lane that caught a refused import, then failed because the
 * host refused its output (LazyOptHost, the host's alloc_output answering
 * 42): the host's failure, PYOP_EHOST, as without lanes; not taken for the
 * lane's refusal (only a Python error is: lane_imports.c), which would
 * fail it as a call that "had called out" (the lanes C pass, session 17).
 * The next call takes the refusal: it runs, and the op falls back.
 */
static void lazy_host_status(void) {
  pyop_op *op = NULL;
  REQUIRE_RC(pyop_op_create("LazyOptHost", NULL, 0, &op), PYOP_OK);
  CHECK(pyop_op_lane(op) != 0, "LazyOptHost made in lane %u", (unsigned)pyop_op_lane(op));
  float x[2] = {5, 0};
  pyop_tensor tx = f32_1d(x, 2);
  pyop_tensor_list in[1] = {one(&tx)};
  pyop_exec_ctx ctx = PYOP_EXEC_CTX_INIT;
  ctx.alloc_output = refuse_output;
  pyop_tensor out[1];
  memset(out, 0, sizeof out);
  CHECK_RC(pyop_op_execute(op, in, 1, out, 1, &ctx), PYOP_EHOST);
  CHECK(strstr(pyop_last_error(), "after it had called out") == NULL,
        "the host's failure taken for the lane's refusal: %s", pyop_last_error());
  float y0 = -1, id = -1;
  CHECK_RC(run_id(op, 6.0f, &y0, &id), PYOP_OK);
  CHECK(y0 == 6.0f, "LazyOptHost after the host's failure: y[0] = %g", y0);
  pyop_op_destroy(op);
}

static void case_lazy_import(void) {
  bool py312 = strstr(Py_VERSION_FOR_TEST, "3.12") != NULL;
  char *opp = xasprintf("%s/lazy_import", LANES_PLUGINS);
  load_with_lanes(2, opp);
  pyop_host_hooks h = PYOP_HOST_HOOKS_INIT;
  h.log = lanes_keep_warning;
  CHECK_RC(pyop_set_host_hooks(&h), PYOP_OK);
  REQUIRE_RC(pyop_load(), PYOP_OK);
  expect_info("LazyExt", 2, NULL);
  lazy_op("LazyExt", true, false, false);
  lazy_op("LazyLate", true, true, false);
  lazy_op("LazyInit", true, false, false);
  lazy_op("LazyAsyncio", py312, false, false);
  lazy_op("LazyOptional", true, false, true);
  lazy_op("LazyOptInit", true, false, false);
  /* A workspace taken is a call out, as an output is (configuration pass). */
  lazy_op("LazyWs", true, true, false);
  lazy_del();
  lane_deletions();
  lazy_infer();
  lazy_infer_list();
  into_ops();
  /* Only asyncio and its submodules are refused on 3.12, not a name that
   * starts like it (configuration pass, session 12). */
  lazy_op("AsyncioNamed", false, false, false);
  compile_ops();
  declare_ops();
  CHECK(count_in(lanes_warnings, "runs in the main interpreter from now on") == (py312 ? 14 : 13),
        "the fallbacks said:\n%s", lanes_warnings);
  CHECK(count_in(lanes_warnings, "went on in its lane after an import the lane refused: the "
                                 "plugin caught the ImportError of extension module") == 2,
        "the fallbacks said:\n%s", lanes_warnings);
  /* Each warning names the callback the refusal came in, and what it did
   * (dataflow pass, session 13). */
  static const char *const named[][2] = {
      {"implementation 'LazyExt' (", ": execute failed in its lane after"},
      {"implementation 'LazyInit' (", ": create_holder failed in its lane after"},
      {"implementation 'LazyOptional' (", ": execute went on in its lane after"},
      {"implementation 'LazyOptInit' (", ": create_holder went on in its lane after"}};
  for (size_t i = 0; i < sizeof named / sizeof named[0]; i++)
    CHECK(lines_with(lanes_warnings, named[i][0], named[i][1]) == 1,
          "no warning with \"%s\" and \"%s\":\n%s", named[i][0], named[i][1], lanes_warnings);
  lazy_host_status();
  CHECK_RC(pyop_set_host_hooks(NULL), PYOP_OK);
  CHECK_RC(pyop_shutdown(), PYOP_OK);
  free(opp);
}

/* y[3] of LazyAttrs for tags {a, b}: its characters' codes weighted by
 * their place in "a|b" (tests/lanes/plugins/lazy_attrs). */
static float tags_code(const char *a, const char *b) {
  char *s = xasprintf("%s|%s", a, b);
  float sum = 0;
  for (size_t i = 0; s[i] != '\0'; i++)
    sum += (float)((unsigned char)s[i] * (i + 1));
  free(s);
  return sum;
}

/*
 * What a host gives pyop_op_create is borrowed for the call only: the
 * instance remade in the main interpreter at the fallback is made from the
 * lane's own copy of the attributes (lane_calls.c, attrs_copy), never from
 * the host's memory, which the host here overwrites and frees right after
 * the create (the lanes C pass, session 17): the names, a list of bools
 * (every element), a string (every byte, its length; libpyop refuses one
 * with a NUL in it).
 */
static void lazy_borrowed(void) {
  static const bool want_flags[5] = {true, false, false, true, true};
  static const char want_text[7] = {'a', ' ', 'b', '\t', 'c', '~', 'z'};
  char *flags_name = strdup("flags"), *text_name = strdup("text");
  bool *flags = malloc(sizeof want_flags);
  char *text = malloc(sizeof want_text);
  REQUIRE(flags_name != NULL && text_name != NULL && flags != NULL && text != NULL,
          "out of memory");
  memcpy(flags, want_flags, sizeof want_flags);
  memcpy(text, want_text, sizeof want_text);
  pyop_attr fa = pyop_attr_bools(flags_name, flags, 5);
  pyop_attr ta = pyop_attr_of_type(text_name, PYOP_ATTR_STR);
  ta.value.u.s = (pyop_str){text, sizeof want_text};
  pyop_op *bools = NULL, *str = NULL;
  REQUIRE_RC(pyop_op_create("LazyBools", &fa, 1, &bools), PYOP_OK);
  REQUIRE_RC(pyop_op_create("LazyText", &ta, 1, &str), PYOP_OK);
  CHECK(pyop_op_lane(bools) != 0 && pyop_op_lane(str) != 0, "made in lanes %u and %u",
        (unsigned)pyop_op_lane(bools), (unsigned)pyop_op_lane(str));
  /* The host's memory changes, then goes. */
  for (size_t i = 0; i < 5; i++)
    flags[i] = !want_flags[i];
  memset(text, 'Q', sizeof want_text);
  memcpy(flags_name, "xlags", 5);
  memcpy(text_name, "xext", 4);
  free(flags);
  free(text);
  free(flags_name);
  free(text_name);
  for (int round = 0; round < 2; round++) {
    float x[10] = {0}, y[10] = {-1, -1, -1, -1, -1, -1, -1, -1, -1, -1};
    CHECK_RC(run(bools, x, y, 10), PYOP_OK);
    for (int i = 0; i < 5; i++)
      CHECK(y[i] == (want_flags[i] ? 1.0f : 0.0f), "LazyBools round %d: flags[%d] = %g, the "
            "host gave %d", round, i, y[i], (int)want_flags[i]);
    CHECK(y[5] == 5.0f && y[6] == 0.0f, "LazyBools round %d: %g flags, in interpreter %g", round,
          y[5], y[6]);
    float z[10] = {-1, -1, -1, -1, -1, -1, -1, -1, -1, -1};
    CHECK_RC(run(str, x, z, 10), PYOP_OK);
    for (int i = 0; i < 7; i++)
      CHECK(z[i] == (float)(unsigned char)want_text[i], "LazyText round %d: byte %d = %g, the "
            "host gave %d", round, i, z[i], (int)(unsigned char)want_text[i]);
    CHECK(z[7] == 7.0f && z[8] == 0.0f, "LazyText round %d: %g characters, in interpreter %g",
          round, z[7], z[8]);
  }
  pyop_op_destroy(bools);
  pyop_op_destroy(str);
}

/*
 * The instance a lane made is remade in the main interpreter when its op
 * falls back (LazyAttrs imports what the lane refuses at every call), from
 * the attributes the host gave that instance: three instances made in the
 * lanes before the fallback, two with other values (a float, three ints,
 * two strings), one with a single attribute, each compute with their own, every element of each list, in
 * the main interpreter; each keeps one Python object there across its
 * calls (its call count goes 1, 2, 3), not a new one per call.
 */
static void case_lazy_attrs(void) {
  char *opp = xasprintf("%s/lazy_attrs", LANES_PLUGINS);
  load_with_lanes(2, opp);
  REQUIRE_RC(pyop_load(), PYOP_OK);
  expect_info("LazyAttrs", 2, NULL);
  /* The third instance is given alpha only (one attribute): the others
   * are the op's defaults. */
  static const double alpha[3] = {3.0, 5.0, 7.0};
  static const int64_t add[3][3] = {{1, 2, 3}, {4, 5, 6}, {0, 0, 0}};
  static const char *const tags[3][2] = {{"ab", "cde"}, {"x", "yz"}, {"", ""}};
  pyop_op *op[3] = {NULL, NULL, NULL};
  for (int i = 0; i < 3; i++) {
    pyop_str t[2] = {pyop_str_of(tags[i][0]), pyop_str_of(tags[i][1])};
    pyop_attr at[3] = {pyop_attr_float("alpha", alpha[i]), pyop_attr_ints("add", add[i], 3),
                       pyop_attr_strs("tags", t, 2)};
    REQUIRE_RC(pyop_op_create("LazyAttrs", at, i < 2 ? 3 : 1, &op[i]), PYOP_OK);
    CHECK(pyop_op_lane(op[i]) != 0, "instance %d made in lane %u", i,
          (unsigned)pyop_op_lane(op[i]));
  }
  for (int round = 0; round < 3; round++)
    for (int i = 0; i < 3; i++) {
      float x[4] = {2, 0, 0, 0}, y[4] = {-1, -1, -1, -1};
      pyop_tensor tx = f32_1d(x, 4), ty = f32_1d(y, 4);
      pyop_tensor_list in[1] = {one(&tx)};
      pyop_exec_ctx ctx = PYOP_EXEC_CTX_INIT;
      CHECK_RC(pyop_op_execute(op[i], in, 1, &ty, 1, &ctx), PYOP_OK);
      float want = (float)(alpha[i] * 2 + (double)add[i][0] + 10.0 * (double)add[i][1] +
                           100.0 * (double)add[i][2]);
      CHECK(y[0] == want, "instance %d round %d: y[0] = %g, its attributes give %g", i, round,
            y[0], want);
      CHECK(y[1] == 0.0f, "instance %d round %d ran in interpreter %g", i, round, y[1]);
      CHECK(y[2] == (float)(round + 1), "instance %d round %d: its object in the main "
            "interpreter has run %g calls (a new object per call?)", i, round, y[2]);
      CHECK(y[3] == tags_code(tags[i][0], tags[i][1]), "instance %d round %d: tags code %g, "
            "expected %g", i, round, y[3], tags_code(tags[i][0], tags[i][1]));
    }
  for (int i = 0; i < 3; i++)
    pyop_op_destroy(op[i]);
  /* An op with a single attribute: its value too. */
  pyop_attr one_alpha = pyop_attr_float("alpha", 7.0);
  pyop_op *one = NULL;
  REQUIRE_RC(pyop_op_create("LazyOne", &one_alpha, 1, &one), PYOP_OK);
  CHECK(pyop_op_lane(one) != 0, "LazyOne made in lane %u", (unsigned)pyop_op_lane(one));
  for (int round = 0; round < 2; round++) {
    float x[2] = {2, 0}, y[2] = {-1, -1};
    CHECK_RC(run(one, x, y, 2), PYOP_OK);
    CHECK(y[0] == 14.0f && y[1] == 0.0f, "LazyOne round %d: y[0] = %g (alpha 7 gives 14) in "
          "interpreter %g", round, y[0], y[1]);
  }
  pyop_op_destroy(one);
  /* A list of floats, every element of it (batch 17 survivor, session 15:
   * bridge.b17.lane_calls.list_float_half): each exact in a float32. */
  static const double scales[5] = {1.5, -2.25, 4096.125, 0.375, -7.0};
  pyop_attr fl = pyop_attr_floats("scales", scales, 5);
  pyop_op *floats = NULL;
  REQUIRE_RC(pyop_op_create("LazyFloats", &fl, 1, &floats), PYOP_OK);
  CHECK(pyop_op_lane(floats) != 0, "LazyFloats made in lane %u", (unsigned)pyop_op_lane(floats));
  for (int round = 0; round < 2; round++) {
    float x[8] = {0}, y[8] = {-1, -1, -1, -1, -1, -1, -1, -1};
    CHECK_RC(run(floats, x, y, 8), PYOP_OK);
    for (int i = 0; i < 5; i++)
      CHECK(y[i] == (float)scales[i], "LazyFloats round %d: scales[%d] = %g, the host gave %g",
            round, i, y[i], scales[i]);
    CHECK(y[5] == 5.0f && y[6] == 0.0f, "LazyFloats round %d: %g scales, in interpreter %g",
          round, y[5], y[6]);
  }
  pyop_op_destroy(floats);
  /* A list of lists of ints, every element of every row (batch 21
   * survivor, session 16: bridge.b21.lane_calls.list_list_int_bytes, each
   * row kept by its count in bytes): none is its low byte alone, each
   * exact in a float32. */
  static const int64_t row0[3] = {-5, 1000, (int64_t)1 << 40}, row1[1] = {-300},
                       row2[2] = {70000, -2};
  static const pyop_int_list rows[3] = {{row0, 3}, {row1, 1}, {row2, 2}};
  static const int64_t flat[6] = {-5, 1000, (int64_t)1 << 40, -300, 70000, -2};
  pyop_attr rl = pyop_attr_int_lists("rows", rows, 3);
  pyop_op *nested = NULL;
  REQUIRE_RC(pyop_op_create("LazyRows", &rl, 1, &nested), PYOP_OK);
  CHECK(pyop_op_lane(nested) != 0, "LazyRows made in lane %u", (unsigned)pyop_op_lane(nested));
  for (int round = 0; round < 2; round++) {
    float x[8] = {0}, y[8] = {-1, -1, -1, -1, -1, -1, -1, -1};
    CHECK_RC(run(nested, x, y, 8), PYOP_OK);
    for (int i = 0; i < 6; i++)
      CHECK(y[i] == (float)flat[i], "LazyRows round %d: element %d = %g, the host gave %g",
            round, i, y[i], (double)flat[i]);
    CHECK(y[6] == 3.0f && y[7] == 0.0f, "LazyRows round %d: %g rows, in interpreter %g", round,
          y[6], y[7]);
  }
  pyop_op_destroy(nested);
  /* A list of data types, every element (batch 23 survivor, session 17:
   * bridge.b23.lane_calls.list_dtype_size, kept by its count in bytes). */
  static const int32_t dts[4] = {PYOP_DTYPE_INT64, PYOP_DTYPE_BOOL, PYOP_DTYPE_UINT16,
                                 PYOP_DTYPE_FLOAT16};
  pyop_attr dl = pyop_attr_dtypes("dts", dts, 4);
  pyop_op *types = NULL;
  REQUIRE_RC(pyop_op_create("LazyDtypes", &dl, 1, &types), PYOP_OK);
  CHECK(pyop_op_lane(types) != 0, "LazyDtypes made in lane %u", (unsigned)pyop_op_lane(types));
  for (int round = 0; round < 2; round++) {
    float x[8] = {0}, y[8] = {-1, -1, -1, -1, -1, -1, -1, -1};
    CHECK_RC(run(types, x, y, 8), PYOP_OK);
    for (int i = 0; i < 4; i++)
      CHECK(y[i] == (float)dts[i], "LazyDtypes round %d: dts[%d] = %g, the host gave %d", round,
            i, y[i], (int)dts[i]);
    CHECK(y[4] == 4.0f && y[5] == 0.0f, "LazyDtypes round %d: %g data types, in interpreter %g",
          round, y[4], y[5]);
  }
  pyop_op_destroy(types);
  lazy_borrowed();
  CHECK_RC(pyop_shutdown(), PYOP_OK);
  free(opp);
}

/* Four refused modules (optional_many/many.py): the element's reason names
 * the first two in their order, then how many more. The first is the
 * built-in faulthandler (single-phase: _imp.create_builtin refuses it in a
 * lane), recorded like an extension module's refusal (batch 20 survivor,
 * session 16: only create_dynamic's were, the reason then started with
 * _testsinglephase). */
static void case_optional_many(void) {
  char *opp = xasprintf("%s/optional_many", LANES_PLUGINS);
  load_with_lanes(2, opp);
  REQUIRE_RC(pyop_load(), PYOP_OK);
  expect_info("OptionalMany", 0, "the plugins imported extension module 'faulthandler' "
                                 "(ImportError: ");
  expect_info("OptionalMany", 0, "), extension module '_testsinglephase' (ImportError: ");
  expect_info("OptionalMany", 0, ") and 2 more, which "); /* cut at 300 bytes */
  const pyop_op_info *info = NULL;
  CHECK_RC(pyop_op_get("OptionalMany", &info), PYOP_OK);
  if (info != NULL) {
    CHECK(strstr(info->serial_reason, "xxlimited_35") == NULL &&
              strstr(info->serial_reason, "_curses_panel") == NULL,
          "the third or fourth module named too: %s", info->serial_reason);
    pyop_op_info_release(info);
  }
  CHECK_RC(pyop_shutdown(), PYOP_OK);
  free(opp);
  /* Three (optional_three/three.py): "and 1 more" (bridge.st.lane_imports.
   * more_not_said survived once the built-in's refusal made four). */
  opp = xasprintf("%s/optional_three", LANES_PLUGINS);
  load_with_lanes(2, opp);
  REQUIRE_RC(pyop_load(), PYOP_OK);
  expect_info("OptionalThree", 0, "), extension module '_testsinglephase' (ImportError: ");
  expect_info("OptionalThree", 0, ") and 1 more, which ");
  CHECK_RC(pyop_shutdown(), PYOP_OK);
  free(opp);
}

/*
 * A lane's descriptor conversion fails after the plugin caught a refused
 * import (desc_refused/desc_probe.py: an attribute default's __index__):
 * the lane's Python error is the load's, PYOP_EPYTHON, not taken for a
 * refusal that sends an op to the main interpreter (lane_imports.c: a
 * load's refusals are the load's; batch 12 survivor
 * bridge.b12.lane_imports.status_during_load); without lanes the same
 * plugin loads, k's default [3].
 */
static void case_desc_refused(void) {
  char *opp = xasprintf("%s/desc_refused", LANES_PLUGINS);
  load_with_lanes(2, opp);
  CHECK_RC(pyop_load(), PYOP_EPYTHON);
  CHECK(err_has("lane 1: loading the plugins of ") || err_has("lane 2: loading the plugins of "),
        "no lane named: %s", pyop_last_error());
  CHECK_ERR_HAS("converting plugin descriptors failed");
  CHECK_ERR_HAS("ValueError: DescProbe: no default for k without the extension");
  const pyop_op_info *info = NULL;
  CHECK(pyop_op_get("DescProbe", &info) != PYOP_OK, "DescProbe registered by a failed load");
  if (info != NULL)
    pyop_op_info_release(info);
  CHECK_RC(pyop_shutdown(), PYOP_OK);
  set_lanes(0, opp, true);
  REQUIRE_RC(pyop_load(), PYOP_OK);
  CHECK_RC(pyop_op_get("DescProbe", &info), PYOP_OK);
  if (info != NULL)
    pyop_op_info_release(info);
  CHECK_RC(pyop_shutdown(), PYOP_OK);
  free(opp);
}

/*
 * A lane drops the import refusals recorded before a load begins: one
 * outside any call or load (DelImport's __del__, run when the host destroys
 * its instances, imports a module the lane refuses and goes on without it)
 * does not leave the next load's element serial naming that module: after
 * pyop_unload, pyop_load runs DelImport in the lanes again (batch 16
 * survivor, session 14).
 */
static void case_del_import(void) {
  char *opp = xasprintf("%s/del_import", LANES_PLUGINS);
  load_with_lanes(2, opp);
  for (int round = 0; round < 2; round++) {
    REQUIRE_RC(pyop_load(), PYOP_OK);
    expect_info("DelImport", 2, NULL);
    for (int i = 0; i < 2; i++) {
      pyop_op *op = NULL;
      REQUIRE_RC(pyop_op_create("DelImport", NULL, 0, &op), PYOP_OK);
      CHECK(pyop_op_lane(op) != 0, "round %d: DelImport instance %d in the main interpreter",
            round, i);
      float x[2] = {1, 2}, y[2] = {0, 0};
      CHECK_RC(run(op, x, y, 2), PYOP_OK);
      CHECK(y[1] == 4.0f, "round %d: DelImport: y[1] = %g", round, y[1]);
      pyop_op_destroy(op); /* its __del__ is refused an import in its lane */
    }
    CHECK_RC(pyop_unload(), PYOP_OK);
  }
  CHECK_RC(pyop_shutdown(), PYOP_OK);
  free(opp);
}

/*
 * What a lane's image logs reaches the host with its level (lane_start.c):
 * during a load a worker keeps each line and the loading thread replays it,
 * every lane's; in a call it goes to libpyop's log service directly.
 * tests/lanes/plugins/logs logs at import and in execute, naming the
 * interpreter (dataflow pass, session 13).
 */
static int log_bad, log_import_info, log_import_debug, log_exec_info;
static long log_ids[8];
static int n_log_ids;

static void keep_plugin_log(void *user, int level, const char *line) {
  (void)user;
  const char *p;
  if ((p = strstr(line, "logs-import info in ")) != NULL) {
    log_bad += level != PYOP_LOG_INFO;
    log_import_info++;
    if (n_log_ids < 8)
      log_ids[n_log_ids++] = strtol(p + strlen("logs-import info in "), NULL, 10);
  } else if (strstr(line, "logs-import debug in ") != NULL) {
    log_bad += level != PYOP_LOG_DEBUG;
    log_import_debug++;
  } else if (strstr(line, "logs-exec info in ") != NULL) {
    log_bad += level != PYOP_LOG_INFO;
    log_exec_info++;
  }
}

static void case_lane_log(void) {
  char *opp = xasprintf("%s/logs", LANES_PLUGINS);
  load_with_lanes(2, opp);
  int level = pyop_get_log_level();
  CHECK_RC(pyop_set_log_level(PYOP_LOG_DEBUG), PYOP_OK);
  pyop_host_hooks h = PYOP_HOST_HOOKS_INIT;
  h.log = keep_plugin_log;
  CHECK_RC(pyop_set_host_hooks(&h), PYOP_OK);
  REQUIRE_RC(pyop_load(), PYOP_OK);
  expect_info("Logs", 2, NULL);
  /* The main interpreter's lines and each lane's: three interpreters. */
  CHECK(log_import_info == 3 && log_import_debug == 3,
        "import lines: %d at INFO, %d at DEBUG, expected 3 each", log_import_info,
        log_import_debug);
  bool distinct = n_log_ids == 3;
  for (int a = 0; a < n_log_ids; a++)
    for (int b = a + 1; b < n_log_ids; b++)
      distinct = distinct && log_ids[a] != log_ids[b];
  CHECK(distinct, "import lines from %d interpreters (%ld %ld %ld), expected 3 distinct",
        n_log_ids, log_ids[0], log_ids[1], log_ids[2]);
  pyop_op *op = NULL;
  REQUIRE_RC(pyop_op_create("Logs", NULL, 0, &op), PYOP_OK);
  CHECK(pyop_op_lane(op) != 0, "Logs ran in the main interpreter");
  float y0 = -1, id = -1;
  CHECK_RC(run_id(op, 5, &y0, &id), PYOP_OK);
  CHECK(y0 == 5.0f && id != 0.0f, "Logs: y %g in interpreter %g", y0, id);
  CHECK(log_exec_info == 1, "execute's line said %d times", log_exec_info);
  CHECK(log_bad == 0, "%d plugin lines at another level than their own", log_bad);
  pyop_op_destroy(op);
  CHECK_RC(pyop_shutdown(), PYOP_OK);
  CHECK_RC(pyop_set_host_hooks(NULL), PYOP_OK);
  CHECK_RC(pyop_set_log_level(level), PYOP_OK);
  free(opp);
}

/*
 * Two lanes import a single-phase extension at once (ext_gate/slow.py,
 * tests/lanes/slow_init.c: LANES_SLOWINIT, built by run.sh): CPython runs
 * its init in each lane before refusing it there, so the bridge's gate
 * must run them one after the other. The plugin's import in the main
 * interpreter fails the load when any two overlapped; the element stays
 * serial, its reason naming the module, and the op computes.
 */
static void case_ext_gate(void) {
  if (getenv("LANES_SLOWINIT") == NULL) {
    printf("ext_gate: skipped: LANES_SLOWINIT is not set (run.sh builds it)\n");
    return;
  }
  char *opp = xasprintf("%s/ext_gate", LANES_PLUGINS);
  load_with_lanes(2, opp);
  CHECK_RC(pyop_load(), PYOP_OK);
  expect_info("SlowInit", 0, "extension module '_pyop_slowinit' (ImportError: ");
  pyop_op *op = NULL;
  CHECK_RC(pyop_op_create("SlowInit", NULL, 0, &op), PYOP_OK);
  if (op != NULL) {
    float x[2] = {1, 2}, y[2] = {0, 0};
    CHECK_RC(run(op, x, y, 2), PYOP_OK);
    CHECK(y[1] == 4.0f, "SlowInit: y[1] = %g", y[1]);
    pyop_op_destroy(op);
  }
  CHECK_RC(pyop_shutdown(), PYOP_OK);
  free(opp);
}

/*
 * The same with an init that first imports another extension module
 * (_statistics, LANES_SLOWINIT_INNER): each lane enters the gate again
 * inside its init (on 3.13 from the main interpreter, where CPython runs
 * a lane's single-phase init: the lane's thread, which holds the gate,
 * waited for itself there, and the load hung), and leaving that inner
 * entry must not free the gate while the outer init runs (the lanes C
 * pass, session 18: the depth was not counted, and lane 2's init
 * overlapped lane 1's).
 */
static void case_ext_gate_nested(void) {
  if (getenv("LANES_SLOWINIT") == NULL) {
    printf("ext_gate_nested: skipped: LANES_SLOWINIT is not set (run.sh builds it)\n");
    return;
  }
  setenv("LANES_SLOWINIT_INNER", "_statistics", 1);
  case_ext_gate();
  unsetenv("LANES_SLOWINIT_INNER");
}

/* One call of an instance of SlowLazy on a thread of its own. */
typedef struct lazy_call {
  pyop_op *op;
  int rc;
  float y1;
  char err[1024]; /* the call's error (the thread's last error) */
} lazy_call;

static void *lazy_call_run(void *p) {
  lazy_call *c = p;
  float x[2] = {1, 2}, y[2] = {0, 0};
  c->rc = run(c->op, x, y, 2);
  c->y1 = y[1];
  snprintf(c->err, sizeof c->err, "%s", c->rc != PYOP_OK ? pyop_last_error() : "");
  return NULL;
}

/* Two instances of SlowLazy (ext_gate_lazy/lazy.py, loaded with 2 lanes),
 * one per lane, called at once from two threads: both succeed (none of the
 * inits, the main interpreter's included, overlapped). */
static void slow_lazy_pair(void) {
  expect_info("SlowLazy", 2, NULL);
  lazy_call calls[2] = {{0}};
  pthread_t t[2];
  for (int i = 0; i < 2; i++)
    REQUIRE_RC(pyop_op_create("SlowLazy", NULL, 0, &calls[i].op), PYOP_OK);
  CHECK(pyop_op_lane(calls[0].op) != pyop_op_lane(calls[1].op), "both instances in lane %u",
        (unsigned)pyop_op_lane(calls[0].op));
  for (int i = 0; i < 2; i++)
    REQUIRE(pthread_create(&t[i], NULL, lazy_call_run, &calls[i]) == 0, "thread");
  for (int i = 0; i < 2; i++)
    pthread_join(t[i], NULL);
  for (int i = 0; i < 2; i++) {
    CHECK(calls[i].rc == PYOP_OK, "call %d: %d: %s", i, calls[i].rc, calls[i].err);
    CHECK(calls[i].y1 == 4.0f, "call %d: y[1] = %g", i, calls[i].y1);
    pyop_op_destroy(calls[i].op);
  }
}

/*
 * ext_gate_lazy/lazy.py imports the slow single-phase extension inside
 * execute. Two instances (lanes 1 and 2) called at once from two threads:
 * lane 1 runs the init, refuses the module and its call goes on in the
 * main interpreter, whose import runs the init again while lane 2 runs
 * its own (after lane 1's: the gate). The main interpreter's module says
 * how many overlapped, and execute fails on any: both calls must succeed.
 */
static void case_ext_gate_lazy(void) {
  if (getenv("LANES_SLOWINIT") == NULL) {
    printf("ext_gate_lazy: skipped: LANES_SLOWINIT is not set (run.sh builds it)\n");
    return;
  }
  char *opp = xasprintf("%s/ext_gate_lazy", LANES_PLUGINS);
  load_with_lanes(2, opp);
  REQUIRE_RC(pyop_load(), PYOP_OK);
  slow_lazy_pair();
  CHECK_RC(pyop_shutdown(), PYOP_OK);
  free(opp);
}

/*
 * One path element yields the same prototype twice (same_twice/twice.py:
 * the registry takes it once): each main-interpreter descriptor pairs with
 * a lane descriptor not paired yet, so no lane descriptor is left over and
 * the load works with the op in lanes (batch 23 survivor
 * bridge.b23.lanes.same_desc_twice: both paired with the first, and the
 * load failed saying a lane yields a prototype the main interpreter does
 * not).
 */
static void case_same_twice(void) {
  char *opp = xasprintf("%s/same_twice", LANES_PLUGINS);
  load_with_lanes(2, opp);
  REQUIRE_RC(pyop_load(), PYOP_OK);
  expect_info("Twice", 2, NULL);
  run_in_lanes("Twice", 2);
  CHECK_RC(pyop_shutdown(), PYOP_OK);
  free(opp);
}

#define LANES_LOAD_CASES(X)                                                                   \
  X(twice) X(trailing_slash) X(replaced) X(unavailable) X(refusal_reset) X(mapped_lanes) \
  X(optional_ext) X(lazy_import) X(lazy_attrs) X(optional_many) X(desc_refused) \
  X(del_import) X(ext_gate) X(ext_gate_nested) X(ext_gate_lazy) X(same_twice) X(lane_log)

int main(int argc, char **argv) {
  static const lanes_case cases[] = {LANES_LOAD_CASES(LANES_CASE_ENTRY)};
  return lanes_main(argc, argv, cases, sizeof cases / sizeof cases[0]);
}
