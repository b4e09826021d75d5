/*
 * What the lane test hosts share (lanes_host.c: a C host without Python;
 * lanes_embed.c: hosts that own Python): loading with lanes, running a
 * float op, checking an op's lane verdict, and the case driver (each host
 * lists its cases once, in an X-macro; `HOST --list` prints them for
 * run.sh).
 *
 * LANES_PLUGINS is tests/lanes/plugins, LANES_GE_PLUGINS tests/ge/plugins,
 * Py_VERSION_FOR_TEST the tree's Python ("3.12"), all from run.sh.
 */
#ifndef PYOP_LANES_UTIL_H
#define PYOP_LANES_UTIL_H

#include "../e2e/e2e_util.h"

#include <dirent.h>
#include <unistd.h>

#if !defined(LANES_PLUGINS) || !defined(LANES_GE_PLUGINS) || !defined(Py_VERSION_FOR_TEST)
#error "LANES_PLUGINS, LANES_GE_PLUGINS and Py_VERSION_FOR_TEST must be defined (run.sh)"
#endif

/* How many lane images (memfds "pyop-lane-N", lane_files.c) this process
 * has open. */
E2E_UNUSED static int lane_images_open(void) {
  DIR *d = opendir("/proc/self/fd");
  if (d == NULL)
    return -1;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    char path[64], target[256];
    snprintf(path, sizeof path, "/proc/self/fd/%s", e->d_name);
    ssize_t len = readlink(path, target, sizeof target - 1);
    if (len <= 0)
      continue;
    target[len] = '\0';
    if (strstr(target, "memfd:pyop-lane-") != NULL)
      n++;
  }
  closedir(d);
  return n;
}

/* Sets ASCEND_CUSTOM_OPP_PATH and the options of the next load: n lanes,
 * start_python as given (ignored when the host initialised Python). */
E2E_UNUSED static void set_lanes(uint32_t n, const char *opp, bool start_python) {
  set_opp_path(opp);
  pyop_options o = PYOP_OPTIONS_INIT;
  o.start_python = start_python;
  o.lanes = n;
  CHECK_RC(pyop_set_options(&o), PYOP_OK);
}

/* Runs op on x[0..n) into y (allocated by libpyop's caller: us). */
E2E_UNUSED static int run(pyop_op *op, const float *x, float *y, int64_t n) {
  pyop_tensor tx = f32_1d((float *)x, n), ty = f32_1d(y, n);
  pyop_tensor_list in[1] = {one(&tx)};
  pyop_exec_ctx ctx = PYOP_EXEC_CTX_INIT;
  return pyop_op_execute(op, in, 1, &ty, 1, &ctx);
}

/* op_type runs in `lanes` lanes, with no serial reason (reason_part NULL)
 * or one containing reason_part (one line, either way). */
E2E_UNUSED static void expect_info(const char *op_type, uint32_t lanes,
                                   const char *reason_part) {
  const pyop_op_info *info = NULL;
  CHECK_RC(pyop_op_get(op_type, &info), PYOP_OK);
  if (info == NULL)
    return;
  CHECK(info->lanes == lanes, "%s: lanes %u, expected %u (reason: %s)", op_type,
        (unsigned)info->lanes, (unsigned)lanes, info->serial_reason);
  if (reason_part == NULL)
    CHECK(info->serial_reason[0] == '\0', "%s: serial_reason \"%s\"", op_type,
          info->serial_reason);
  else
    CHECK(strstr(info->serial_reason, reason_part) != NULL,
          "%s: serial_reason \"%s\" lacks \"%s\"", op_type, info->serial_reason, reason_part);
  /* One line, whatever the lane's error held (a traceback: batch 23
   * survivor bridge.b23.lane_start.serial_reason_lines). */
  CHECK(strchr(info->serial_reason, '\n') == NULL, "%s: serial_reason of several lines: \"%s\"",
        op_type, info->serial_reason);
  pyop_op_info_release(info);
}

/* ids[k]: the interpreter id of lane k + 1, from one instance of Lane
 * (tests/lanes/plugins/pure) per lane of n, each checked to run in a lane
 * where the plugin's module state is a fresh import (cycle: for messages). */
E2E_UNUSED static void lane_ids(uint32_t n, float *ids, int cycle) {
  for (uint32_t k = 0; k < n; k++) {
    pyop_op *op = NULL;
    REQUIRE_RC(pyop_op_create("Lane", NULL, 0, &op), PYOP_OK);
    float x[2] = {0, 0}, y[2] = {-1, -1};
    CHECK_RC(run(op, x, y, 2), PYOP_OK);
    uint32_t lane = pyop_op_lane(op);
    CHECK(lane >= 1 && lane <= n, "cycle %d: instance %u in lane %u of %u", cycle,
          (unsigned)k, (unsigned)lane, (unsigned)n);
    CHECK(y[0] == 1.0f, "cycle %d: lane %u imported the plugin's module state %g times: "
          "the previous load's module leaked into this one", cycle, (unsigned)lane, y[0]);
    if (lane >= 1 && lane <= n)
      ids[lane - 1] = y[1];
    pyop_op_destroy(op);
  }
}

/* The warnings libpyop logged while lanes_keep_warning was the log hook,
 * one a line (what fits). */
static char lanes_warnings[8192];

E2E_UNUSED static void lanes_keep_warning(void *user, int level, const char *line) {
  (void)user;
  size_t used = strlen(lanes_warnings);
  if (level == PYOP_LOG_WARN && used + strlen(line) + 2 < sizeof lanes_warnings) {
    strcat(lanes_warnings, line);
    strcat(lanes_warnings, "\n");
  }
}

/* ---------------------------------------------------------- case driver */

typedef struct lanes_case {
  const char *name;
  void (*run)(void);
} lanes_case;

#define LANES_CASE_ENTRY(name) {#name, case_##name},

/* `HOST --list` prints the case names, one a line; `HOST CASE` runs one
 * (exit status 0 when every check passed). */
E2E_UNUSED static int lanes_main(int argc, char **argv, const lanes_case *cases, size_t n) {
  if (argc == 2 && strcmp(argv[1], "--list") == 0) {
    for (size_t i = 0; i < n; i++)
      printf("%s\n", cases[i].name);
    return 0;
  }
  for (size_t i = 0; argc == 2 && i < n; i++)
    if (strcmp(argv[1], cases[i].name) == 0) {
      e2e_case = cases[i].name;
      cases[i].run();
      return e2e_finish();
    }
  fprintf(stderr, "usage: %s --list | CASE (one of:", argv[0]);
  for (size_t i = 0; i < n; i++)
    fprintf(stderr, " %s", cases[i].name);
  fprintf(stderr, ")\n");
  return 2;
}

#endif
