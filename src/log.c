/*
 * Logging (log.h: pyop__log, the PYOP_LOG level) and environment access
 * (pyop__getenv). A line goes to the host's log hook (hooks.h) when one
 * takes it, else to stderr.
 */
#include "log.h"
#include "hooks.h"

#include <assert.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/auxv.h>

/* -1 until read from PYOP_LOG or set by pyop_set_log_level. */
static atomic_int log_level = -1;

static const char *const level_names[] = {"error", "warn", "info", "debug"};

/* True when the process runs in secure-execution mode (AT_SECURE). */
static bool secure_execution(void) { return PYOP_SYS(getauxval)(AT_SECURE) != 0; }

const char *pyop__getenv(const char *name) {
  const char *v = PYOP_SYS(secure_getenv)(name);
  if (!v && secure_execution()) {
    /* Tell once per process: the variable may be set but is ignored. Use
     * stderr directly: the log level itself comes from the environment. */
    static atomic_bool told;
    if (!atomic_exchange(&told, true))
      fprintf(stderr,
              "libpyop: warn: secure execution (setuid/capabilities): "
              "environment variables such as %s are ignored\n",
              name);
  }
  return v;
}

/* Parses PYOP_LOG once; unknown values keep the default (warn). A level
 * pyop_set_log_level stored meanwhile wins over the environment's. */
static int current_level(void) {
  int lv = atomic_load_explicit(&log_level, memory_order_relaxed);
  if (lv >= 0) return lv;
  lv = PYOP_LOG_WARN;
  const char *v = pyop__getenv("PYOP_LOG");
  if (v) {
    for (int i = 0; i < (int)PYOP__ARRAY_LEN(level_names); i++)
      if (strcasecmp(v, level_names[i]) == 0) lv = i;
  }
  int unset = -1;
  if (!atomic_compare_exchange_strong(&log_level, &unset, lv)) return unset;
  return lv;
}

int pyop_set_log_level(int level) {
  if (level < PYOP_LOG_ERROR || level > PYOP_LOG_DEBUG)
    return pyop__error(PYOP_EINVAL, "pyop_set_log_level: level %d is not a pyop_log_level "
                       "(PYOP_LOG_ERROR %d .. PYOP_LOG_DEBUG %d)", level, PYOP_LOG_ERROR,
                       PYOP_LOG_DEBUG);
  atomic_store(&log_level, level);
  return PYOP_OK;
}

int pyop_get_log_level(void) { return current_level(); }

bool pyop__log_enabled(int level) { return level <= current_level(); }

void pyop__log(int level, const char *origin, const char *fmt, ...) {
  if (level < PYOP_LOG_ERROR || level > PYOP_LOG_DEBUG) level = PYOP_LOG_ERROR;
  if (!pyop__log_enabled(level)) return;
  char line[2048];
  int n = snprintf(line, sizeof line, "libpyop: %s: %s%s", level_names[level],
                   origin ? origin : "", origin ? ": " : "");
  if (n < 0) return;
  if ((size_t)n < sizeof line) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
    va_end(ap);
  }
  if (!pyop__hook_log(level, line)) fprintf(stderr, "%s\n", line);
}
