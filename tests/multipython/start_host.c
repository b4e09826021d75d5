/*
 * A C host without Python of a multi-Python libpyop (run.sh builds it with
 * -DPYOP_PYTHONS listing several): which Python pyop_options.start_python
 * starts, with and without lanes and pyop_options.start_python_key.
 *
 *   start_host LANES [KEY]
 *
 * Starts Python (start_python, LANES lanes, start_python_key KEY when
 * given) on the plugins of $ASCEND_CUSTOM_OPP_PATH (plugins/: MpTwice),
 * runs MpTwice once and prints what run.sh checks, one fact per line:
 *   key=<the runtime key of the Python that runs>
 *   ran=<major*100+minor of the Python that ran execute>
 *   lanes=<pyop_op_info.lanes of MpTwice>
 *   reason=<its serial_reason>
 *   log: <each libpyop log line at info and above>
 * Exit 1 when a call fails (the error on stderr).
 */
#include <pyop/pyop.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void log_line(void *user, int level, const char *line) {
  (void)user;
  if (level <= PYOP_LOG_INFO) printf("log: %s\n", line);
}

static int fail(const char *what) {
  fprintf(stderr, "start_host: %s: %s\n", what, pyop_last_error());
  return 1;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: start_host LANES [KEY]\n");
    return 2;
  }
  pyop_host_hooks hooks = PYOP_HOST_HOOKS_INIT;
  hooks.log = log_line;
  if (pyop_set_host_hooks(&hooks) != PYOP_OK) return fail("pyop_set_host_hooks");
  pyop_set_log_level(PYOP_LOG_INFO);
  pyop_options o = PYOP_OPTIONS_INIT;
  o.start_python = true;
  o.lanes = (uint32_t)strtoul(argv[1], NULL, 10);
#ifndef START_HOST_OLD_OPTIONS /* a host of a libpyop before start_python_key */
  o.start_python_key = argc > 2 ? argv[2] : NULL;
#endif
  if (pyop_set_options(&o) != PYOP_OK) return fail("pyop_set_options");
  if (pyop_load() != PYOP_OK) return fail("pyop_load");
  char key[64];
  if (pyop_runtime_key(key, sizeof key) != PYOP_OK) return fail("pyop_runtime_key");
  printf("key=%s\n", key);
  const pyop_op_info *info = NULL;
  if (pyop_op_get("MpTwice", &info) != PYOP_OK) return fail("pyop_op_get");
  uint32_t lanes = info->lanes;
  char reason[512];
  snprintf(reason, sizeof reason, "%s", info->serial_reason ? info->serial_reason : "");
  pyop_op_info_release(info);
  pyop_op *op = NULL;
  if (pyop_op_create("MpTwice", NULL, 0, &op) != PYOP_OK) return fail("pyop_op_create");
  float x[2] = {1, 2}, y[2] = {0, 0};
  int64_t shape[1] = {2};
  pyop_tensor tx = pyop_tensor_of(x, PYOP_DTYPE_FLOAT32, 1, shape);
  pyop_tensor ty = pyop_tensor_of(y, PYOP_DTYPE_FLOAT32, 1, shape);
  pyop_tensor_list in[1] = {pyop_tensor_list_of(&tx, 1)};
  pyop_exec_ctx ctx = PYOP_EXEC_CTX_INIT;
  if (pyop_op_execute(op, in, 1, &ty, 1, &ctx) != PYOP_OK) return fail("pyop_op_execute");
  printf("ran=%d\nlanes=%u\nreason=%s\n", (int)y[1], (unsigned)lanes, reason);
  pyop_op_destroy(op);
  if (pyop_shutdown() != PYOP_OK) return fail("pyop_shutdown");
  return 0;
}
