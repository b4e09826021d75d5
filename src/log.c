/*
 * Logging, host hooks and environment access.
 */
#include "core.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/auxv.h>

/* -1 until read from PYOP_LOG. */
static atomic_int log_level = -1;

static pthread_mutex_t hooks_lock = PTHREAD_MUTEX_INITIALIZER;
static pyop_host_hooks hooks; /* struct_size 0: none installed */

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

/* Parses PYOP_LOG once; unknown values keep the default (warn). */
static int current_level(void) {
  int lv = atomic_load_explicit(&log_level, memory_order_relaxed);
  if (lv >= 0) return lv;
  lv = PYOP_LOG_WARN;
  const char *v = pyop__getenv("PYOP_LOG");
  if (v) {
    for (int i = 0; i < (int)PYOP__ARRAY_LEN(level_names); i++)
      if (strcasecmp(v, level_names[i]) == 0) lv = i;
  }
  atomic_store(&log_level, lv);
  return lv;
}

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
  pyop_host_hooks h;
  pyop__hooks_get(&h);
  /* A line logged while the host's log hook runs on this thread (the hook
   * called a libpyop function that logs) goes to stderr: re-entering the
   * hook could recurse without end. */
  static _Thread_local bool in_hook;
  if (h.log && !in_hook) {
    pyop__error_saved saved;
    pyop__error_save(&saved);
    in_hook = true;
    h.log(h.user, level, line);
    in_hook = false;
    pyop__error_restore(&saved);
  } else {
    fprintf(stderr, "%s\n", line);
  }
}

int pyop_set_host_hooks(const pyop_host_hooks *in) {
  PYOP__FORK_GUARD();
  pyop_host_hooks copy;
  memset(&copy, 0, sizeof copy);
  if (in) {
    if (in->struct_size < offsetof(pyop_host_hooks, user) + sizeof(void *))
      return pyop__error(PYOP_EINVAL,
                         "pyop_set_host_hooks: struct_size %zu is too small "
                         "(initialise with PYOP_HOST_HOOKS_INIT)",
                         in->struct_size);
    /* Copy what the caller's version has; newer members stay NULL. */
    size_t n = in->struct_size < sizeof copy ? in->struct_size : sizeof copy;
    memcpy(&copy, in, n);
    copy.struct_size = sizeof copy;
  }
  pthread_mutex_lock(&hooks_lock);
  hooks = copy;
  pthread_mutex_unlock(&hooks_lock);
  return PYOP_OK;
}

/* Around fork() (lifecycle.c): the child gets the hooks unlocked. */
void pyop__hooks_fork_lock(void) { pthread_mutex_lock(&hooks_lock); }
void pyop__hooks_fork_unlock(void) { pthread_mutex_unlock(&hooks_lock); }

void pyop__hooks_get(pyop_host_hooks *out) {
  pthread_mutex_lock(&hooks_lock);
  *out = hooks;
  pthread_mutex_unlock(&hooks_lock);
}
