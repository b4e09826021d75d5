/*
 * The lifecycle: check-need-load, load, unload, shutdown, options, the
 * GE-style entry points, and the state pyop_doctor (doctor.c) and the fork
 * handlers (fork.c) read of it.
 *
 * Lifecycle calls are serialised by a "busy" flag and a condition variable,
 * not by a lock held across the work: no libpyop lock is ever held while the
 * bridge, Python or a host hook runs. A lifecycle call that finds another in
 * progress waits for it to finish. A function named `..._busy` runs with
 * the busy flag held by its caller (asserted); `_locked` means only "the
 * caller holds the mutex", as everywhere in libpyop.
 *
 * States: IDLE (nothing registered by a load; the bridge may be open) and
 * LOADED. pyop_unload returns to IDLE and keeps the bridge open (the next
 * load re-imports the plugins); pyop_shutdown also shuts the bridge down and
 * closes it.
 */
#include "bridge_loader.h"
#include "core.h"
#include "kernel_libs.h"
#include "lifecycle.h"
#include "registrar.h"
#include "registry.h"
#include "runtime_key.h"
#include "scan.h"
#include "start_python.h"

#include <assert.h>
#include <inttypes.h>
#include <pthread.h>
#include <string.h>

#define OPP_PATH_VAR PYOP__OPP_VAR

enum { ST_IDLE, ST_LOADED };

static pthread_mutex_t life_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t life_cond = PTHREAD_COND_INITIALIZER;
static bool life_busy;
/* True on the thread that holds the busy flag, while it holds it: a call
 * from a host hook (or a bridge log line) that this lifecycle call runs. */
static _Thread_local bool life_owner;

/* Owned by the thread that holds the busy flag. */
static int state = ST_IDLE;
static pyop__bridge bridge;
static pyop_options options = PYOP_OPTIONS_INIT;
static char *start_key;         /* options.start_python_key's copy, or NULL */
static char *last_report;       /* candidates of the last bridge load */

/* ------------------------------------------------------------------ fork */

/* Around fork() (fork.c): life_lock is taken by the prepare handler, so the
 * busy flag and the bridge read by the child's handler are consistent. */
void pyop__lifecycle_fork_lock(void) { pthread_mutex_lock(&life_lock); }
void pyop__lifecycle_fork_unlock(void) { pthread_mutex_unlock(&life_lock); }

bool pyop__lifecycle_fork_in_use(void) { return life_busy || bridge.api; }

void pyop__lifecycle_fork_child(void) {
  /* Its waiters were threads the child does not have. */
  pthread_cond_init(&life_cond, NULL);
  pthread_mutex_unlock(&life_lock);
}

/*
 * Waits until no other lifecycle call runs, then marks this one running.
 * A lifecycle call made from inside another one on the same thread (a host
 * hook or a log line of the running load/unload/shutdown calling back)
 * would wait for itself: it is refused at once with PYOP_EBUSY instead,
 * naming `what`. Returns PYOP_OK when the flag is taken.
 */
static int life_begin(const char *what) {
  if (life_owner)
    return pyop__error(PYOP_EBUSY,
                       "%s: called from a host hook or log line while a "
                       "lifecycle call (load, unload, shutdown) runs on this "
                       "thread; call it after that returns",
                       what);
  pthread_mutex_lock(&life_lock);
  while (life_busy) pthread_cond_wait(&life_cond, &life_lock);
  life_busy = true;
  life_owner = true;
  pthread_mutex_unlock(&life_lock);
  return PYOP_OK;
}

/* Releases the busy flag life_begin took and wakes the calls waiting. */
static void life_end(void) {
  pthread_mutex_lock(&life_lock);
  life_busy = false;
  life_owner = false;
  pthread_cond_broadcast(&life_cond);
  pthread_mutex_unlock(&life_lock);
}

/* The work of one lifecycle call, run with the busy flag held. */
typedef int (*life_body)(void *arg);

/*
 * The shape of every lifecycle call (load, unload, shutdown, set_options
 * and the GE-style shutdown): refused in a forked child (PYOP_EFORKED
 * naming what), then the busy flag taken (life_begin: waits for another
 * lifecycle call, refuses a nested one), body(arg) run, the flag released.
 * Returns the body's status, or the refusal when the body did not run.
 */
static int life_run(const char *what, life_body body, void *arg) {
  if (pyop__forked()) return pyop__error_forked(what);
  int rc = life_begin(what);
  if (rc != PYOP_OK) return rc;
  rc = body(arg);
  life_end();
  return rc;
}

/* ------------------------------------------------------------- scanning */

int pyop_check_need_load(bool *need_load) {
  PYOP__FORK_GUARD();
  if (!need_load)
    return pyop__error(PYOP_EINVAL, "pyop_check_need_load: need_load is NULL");
  *need_load = false;
  pyop__scan_result r;
  /* Quiet: the pyop_load that follows a "yes" scans again and warns once. */
  int rc = pyop__scan_opts(pyop__getenv(OPP_PATH_VAR), true, true, &r);
  if (rc == PYOP_OK) *need_load = r.has_python;
  if (!r.has_python) pyop__scan_warn(&r);
  pyop__scan_result_free(&r);
  return rc;
}

/* ------------------------------------------------------------ the bridge */

/*
 * Makes sure a bridge is open: the runtime the load uses (started first
 * when opted in), then the bridge for it. Keeps the candidate report for
 * pyop_doctor: on success both the bridge and its report are kept; on
 * failure no bridge is open and the report of the failed attempt replaces
 * the previous one (NULL when it could not be built). The caller holds the
 * busy flag (asserted): bridge and last_report are the lifecycle's.
 */
static int open_bridge(void) {
  assert(life_owner);
  if (bridge.api) return PYOP_OK;
  pyop__runtime_key key;
  int rc = pyop__start_runtime(&options, &key);
  if (rc != PYOP_OK) return rc;
  char *report = NULL;
  rc = pyop__bridge_open(&key, &options, &bridge, &report);
  pyop__free(last_report);
  last_report = report;
  return rc;
}

/* ------------------------------------------------------------- lifecycle */

static int unload_busy(void);

/*
 * What was loaded into an interpreter that is gone (the bridge said so) is
 * retired as pyop_shutdown would: unloaded (the host's on_unregister runs
 * for each op) and the bridge closed, so that the load goes on afresh in
 * the Python that runs now. PYOP_EBUSY, nothing changed, while op
 * instances live (they must be destroyed first, as for pyop_unload). The
 * caller holds the busy flag (asserted).
 */
static int retire_lost_interpreter(void) {
  assert(life_owner);
  int rc = unload_busy();
  if (rc != PYOP_OK)
    return pyop__error_prefix(rc, "pyop_load: the Python interpreter the ops were "
                                  "loaded into was finalized; to load them into the "
                                  "running one libpyop must unload them first");
  PYOP_LOG_W("the Python interpreter the bridge %s was loaded into was finalized: "
             "closing it to load afresh",
             bridge.path);
  pyop__bridge_close(&bridge);
  pyop__kernel_libs_close();
  return PYOP_OK;
}

/* The body of pyop_load (a life_body; arg unused); the caller holds the
 * busy flag (asserted). */
static int load_busy(void *arg) {
  (void)arg;
  assert(life_owner);
  /* Flows down: the registry keeps it for the instances created next. */
  pyop__registry_set_strict(options.strict_outputs);
  /* The interpreter the ops (or the open bridge) belong to was finalized
   * behind libpyop's back (the host's Py_FinalizeEx), perhaps followed by
   * a new one: asked of the bridge (ABI 1.5), as an older one cannot tell. */
  bool lost = bridge.api && pyop__bridge_interpreter_lost(&bridge);
  if (state == ST_LOADED) {
    pyop__runtime_key key;
    if (bridge.api && pyop__runtime_key_resolve(&key) == PYOP_OK && !key.initialized)
      return pyop__error(PYOP_ENOTINIT,
                         "pyop_load: the ops are loaded but Python %u.%u is no longer "
                         "initialised (finalized by the host); destroy the op instances "
                         "and call pyop_shutdown",
                         key.major, key.minor);
    if (!lost) return PYOP_OK; /* idempotent */
  }
  if (lost) {
    int rc = retire_lost_interpreter();
    if (rc != PYOP_OK) return rc;
  }
  pyop__scan_result r;
  int rc = pyop__scan(pyop__getenv(OPP_PATH_VAR), false, &r);
  if (rc != PYOP_OK) {
    pyop__scan_result_free(&r);
    return pyop__error_prefix(rc, "pyop_load"); /* its messages name the variable */
  }
  if (!r.has_python) {
    PYOP_LOG_I("no Python entries in " OPP_PATH_VAR ": nothing to load");
    pyop__scan_result_free(&r);
    return PYOP_OK;
  }
  pyop_str *paths = NULL;
  size_t n_paths = 0;
  rc = pyop__scan_python_paths(&r, &paths, &n_paths);
  if (rc == PYOP_OK) rc = open_bridge();
  if (rc == PYOP_OK) rc = pyop__registrar_load(&bridge, options.lanes, paths, n_paths);
  pyop__free(paths);
  pyop__scan_result_free(&r);
  if (rc == PYOP_OK) {
    state = ST_LOADED;
    size_t n_ops = pyop__registry_count();
    PYOP_LOG_I("loaded; %zu %s registered", n_ops, PYOP__PLURAL(n_ops, "op type", "op types"));
  }
  return rc;
}

int pyop_load(void) { return life_run("pyop_load", load_busy, NULL); }

/* Unregisters what the last load registered; the caller holds the busy flag
 * (asserted). */
static int unload_busy(void) {
  assert(life_owner);
  if (state != ST_LOADED) return PYOP_OK;
  int rc = pyop__registry_unload();
  if (rc != PYOP_OK) return rc;
  if (bridge.api) bridge.api->reset();
  state = ST_IDLE;
  return PYOP_OK;
}

/* pyop_unload's life_body (arg unused). */
static int unload_body(void *arg) {
  (void)arg;
  return unload_busy();
}

int pyop_unload(void) { return life_run("pyop_unload", unload_body, NULL); }

/* What a shutdown is: the name its refusal is logged under, and whether it
 * also forgets the candidate report of the last bridge load; ran is set
 * once the body runs (a refusal before it is not logged by it). */
typedef struct shutdown_kind {
  const char *what;
  bool forget_report;
  bool ran;
} shutdown_kind;

/*
 * The body of pyop_shutdown (a life_body; arg: a shutdown_kind); the
 * caller holds the busy flag (asserted). forget_report: also drop the
 * candidate report of the last bridge load, but only when the bridge was
 * really closed (a refused shutdown keeps the bridge, so pyop_doctor must
 * keep describing it).
 */
static int shutdown_busy(void *arg) {
  assert(life_owner);
  shutdown_kind *k = arg;
  const char *what = k->what;
  bool forget_report = k->forget_report;
  k->ran = true;
  int rc = unload_busy();
  if (rc == PYOP_OK && bridge.api) pyop__bridge_close(&bridge);
  if (rc == PYOP_OK) pyop__kernel_libs_close();
  if (rc == PYOP_OK && forget_report) {
    pyop__free(last_report);
    last_report = NULL;
  }
  if (rc != PYOP_OK)
    PYOP_LOG_E("%s refused, the bridge stays loaded: %s", what, pyop_last_error());
  return rc;
}

int pyop_shutdown(void) {
  shutdown_kind k = {"shutdown", false, false};
  return life_run("pyop_shutdown", shutdown_busy, &k);
}

/*
 * in's start_python_key as the option keeps it: a copy (*copy, the
 * caller's) of a well-formed key, NULL for none or ""; PYOP_EINVAL naming
 * a malformed one, PYOP_ENOMEM.
 */
static int options_key(const pyop_options *in, char **copy) {
  *copy = NULL;
  const char *k = PYOP__HAS(pyop_options, in, start_python_key) ? in->start_python_key : NULL;
  if (!k || !k[0]) return PYOP_OK;
  if (!pyop__start_key_valid(k))
    return pyop__error(PYOP_EINVAL,
                       "pyop_set_options: start_python_key \"%.80s\" is not a runtime key "
                       "such as \"cp312-x86_64\" (the name of a bridge's artifact "
                       "directory, as pyop doctor lists them: 1 to 63 characters of "
                       "[A-Za-z0-9_.-])",
                       k);
  *copy = pyop__strdup(k);
  return *copy ? PYOP_OK
               : pyop__error(PYOP_ENOMEM, "pyop_set_options: out of memory");
}

static const char *key_text(const char *k) { return k ? k : "(none)"; }

/*
 * Why next cannot replace the options while the bridge is open, as an
 * error (PYOP_ESTATE), or PYOP_OK: an option that chose how the bridge
 * started (start_python, start_python_key, lanes) is fixed until
 * pyop_shutdown closed it. The caller holds the busy flag (asserted).
 */
static int options_fixed_busy(const pyop_options *next) {
  assert(life_owner);
  if (!bridge.api) return PYOP_OK;
  if (next->lanes != options.lanes)
    return pyop__error(PYOP_ESTATE,
                       "pyop_set_options: lanes cannot change to %" PRIu32 " while the "
                       "bridge stays open (it was loaded with lanes %" PRIu32 "); call "
                       "pyop_shutdown first",
                       next->lanes, options.lanes);
  if (next->start_python != options.start_python)
    return pyop__error(PYOP_ESTATE,
                       "pyop_set_options: start_python cannot change to %s while the "
                       "bridge stays open (it was loaded with start_python %s); call "
                       "pyop_shutdown first",
                       next->start_python ? "true" : "false",
                       options.start_python ? "true" : "false");
  const char *a = next->start_python_key, *b = options.start_python_key;
  if ((a == NULL) != (b == NULL) || (a && strcmp(a, b) != 0))
    return pyop__error(PYOP_ESTATE,
                       "pyop_set_options: start_python_key cannot change to %s while the "
                       "bridge stays open (it was loaded with %s); call pyop_shutdown first",
                       key_text(a), key_text(b));
  return PYOP_OK;
}

/* Checked options for pyop_set_options, and their key's copy (also
 * next.start_python_key), which becomes the lifecycle's on success. */
typedef struct options_change {
  pyop_options next;
  char *key;
} options_change;

/*
 * The body of pyop_set_options (a life_body; arg: an options_change); the
 * caller holds the busy flag (asserted).
 */
static int options_set_busy(void *arg) {
  assert(life_owner);
  const options_change *c = arg;
  const pyop_options *next = &c->next;
  int rc;
  if (state == ST_LOADED)
    rc = pyop__error(PYOP_ESTATE,
                     "pyop_set_options: ops are loaded; call pyop_unload first "
                     "(and pyop_shutdown to change start_python, start_python_key or lanes)");
  else
    rc = options_fixed_busy(next);
  if (rc != PYOP_OK) return rc;
  pyop__free(start_key);
  start_key = c->key;
  options = *next;
  return PYOP_OK;
}

/*
 * Options of the next pyop_load. Refused while loaded (they would not apply
 * to the ops in place). With a bridge open but nothing loaded (after
 * pyop_unload), an option that needs no new bridge (strict_outputs) changes;
 * the others wait for pyop_shutdown (options_fixed_busy). lanes and
 * start_python_key are checked first; the key is copied.
 */
int pyop_set_options(const pyop_options *in) {
  PYOP__FORK_GUARD();
  if (!in || !PYOP__HAS(pyop_options, in, start_python))
    return pyop__error(PYOP_EINVAL,
                       "pyop_set_options: options is NULL or its struct_size is "
                       "too small (initialise with PYOP_OPTIONS_INIT)");
  pyop_options next = PYOP_OPTIONS_INIT;
  next.start_python = in->start_python;
  next.strict_outputs = PYOP__HAS(pyop_options, in, strict_outputs) && in->strict_outputs;
  next.lanes = PYOP__HAS(pyop_options, in, lanes) ? in->lanes : 0;
  if (next.lanes > PYOP_MAX_LANES)
    return pyop__error(PYOP_EINVAL,
                       "pyop_set_options: lanes %" PRIu32 " is out of range (0..%u)",
                       next.lanes, PYOP_MAX_LANES);
  char *key = NULL;
  int rc = options_key(in, &key);
  if (rc != PYOP_OK) return rc;
  next.start_python_key = key;
  options_change change = {next, key};
  rc = life_run("pyop_set_options", options_set_busy, &change);
  if (rc != PYOP_OK) pyop__free(key);
  return rc;
}

/* ----------------------------------------------------------- diagnostics */

/*
 * pyop_doctor's part (doctor.c) that is the lifecycle's state: the open
 * bridge and the candidate report of the last bridge load, read under the
 * busy flag (or as this thread's own when called from a hook of the
 * lifecycle call running on it: the lifecycle never calls out while bridge
 * or last_report is half updated).
 */
bool pyop__lifecycle_describe(pyop__sb *sb, bool *bridge_open) {
  bool nested = life_owner;
  if (!nested) (void)life_begin("pyop_doctor");
  bool loaded = bridge.api != NULL;
  if (loaded) {
    pyop__sb_printf(sb, "bridge: loaded %s (ABI %u.%u)\n", bridge.path,
                    bridge.abi_major, bridge.abi_minor);
    if (pyop__bridge_interpreter_lost(&bridge))
      pyop__sb_puts(sb, "  the Python interpreter it was loaded into was finalized: "
                        "its ops cannot run; pyop_load loads them afresh once "
                        "Python runs again and no op instance is alive\n");
  } else
    pyop__sb_puts(sb, "bridge: not loaded\n");
  bool had_report = last_report != NULL;
  if (had_report) {
    pyop__sb_puts(sb, "candidates (last load):\n");
    pyop__sb_puts(sb, last_report);
  }
  if (!nested) life_end();
  *bridge_open = loaded;
  return had_report;
}

/* ---------------------------------------------------- GE-style entries */

int CheckNeedLoadPythonCustomOps(bool *need_load) {
  return pyop_check_need_load(need_load);
}

int LoadPythonCustomOps(void) {
  int rc = pyop_load();
  if (rc != PYOP_OK) PYOP_LOG_E("%s", pyop_last_error());
  return rc;
}

void UnloadPythonCustomOps(void) {
  if (pyop_unload() != PYOP_OK) PYOP_LOG_E("%s", pyop_last_error());
}

/* pyop_shutdown that also forgets the last candidate report, in the same
 * lifecycle call (no other load can slip in between). */
void ShutdownPythonCustomOpsForProcess(void) {
  shutdown_kind k = {"ShutdownPythonCustomOpsForProcess", true, false};
  /* A refusal of the body is logged by it; one before it is logged here. */
  if (life_run("ShutdownPythonCustomOpsForProcess", shutdown_busy, &k) != PYOP_OK && !k.ran)
    PYOP_LOG_E("%s", pyop_last_error());
}
