/*
 * Which Python pyop_options.start_python starts (docs/host-guide.md,
 * "Hosts without Python"): one of this libpyop's bridges, by its runtime
 * key (the name of its artifact directory, "cp312-x86_64"), chosen from
 * the manifests before anything is opened.
 *
 * The rule: the key the host asked for (pyop_options.start_python_key);
 * else the build's default (the first of -DPYOP_PYTHONS); else, when lanes
 * are asked for and the default's Python cannot run them, the first bridge
 * of the build (in -DPYOP_PYTHONS order, then any other in name order) whose
 * Python can: CPython 3.12 or later, not free-threaded, with a libpython
 * recorded and bridge ABI 1.6 or later. The bridge itself is the authority
 * on lanes at load (bridge/lanes.c); this is the prediction the choice
 * needs, read from the manifests.
 */
#ifndef PYOP_START_PYTHON_H
#define PYOP_START_PYTHON_H

#include "core.h"
#include "runtime_key.h"

typedef struct pyop__start_choice {
  char *key;        /* the artifact directory's name ("cp312-x86_64") */
  char *libpython;  /* the libpython its manifest records (absolute) */
  char *note;       /* what to log about the choice, or NULL */
  bool note_warns;  /* note is a warning (lanes asked for, none will run) */
} pyop__start_choice;

/*
 * Chooses by the rule above with the build's own default and order
 * (PYOP_DEFAULT_ARTIFACT, PYOP_BUILD_ARTIFACTS, PYOP_BUILD_PYTHONS).
 * asked: NULL or "" for no choice. Returns PYOP_OK with *out filled (free
 * with pyop__start_choice_free), or PYOP_ENOPYTHON (nothing to start: the
 * key asked for or the default is not there, or records no libpython; the
 * message lists the bridges there are) or PYOP_ENOMEM, *out zeroed.
 */
int pyop__start_choose(const char *asked, uint32_t lanes, pyop__start_choice *out);

/* The same with the build's facts given (tests): default_key the default
 * artifact ("" none), order its ';'-list of artifacts, pythons the
 * -DPYOP_PYTHONS text a fix names. */
int pyop__start_choose_with(const char *default_key, const char *order, const char *pythons,
                            const char *asked, uint32_t lanes, pyop__start_choice *out);

void pyop__start_choice_free(pyop__start_choice *c);

/*
 * The runtime key of the Python a load uses (pyop_load's first stage):
 * with opt->start_python and no Python in the process, the libpython of
 * the bridge pyop__start_choose picks is dlopened first (RTLD_GLOBAL, after
 * the file checks of a bridge; kept loaded for the life of the process),
 * the bridge then starts it. PYOP_OK with *key resolved, or the failure
 * recorded: PYOP_ENOPYTHON (no Python, or none could be started),
 * PYOP_ESECURITY, PYOP_ENOTINIT (a Python present but not initialised and
 * start_python not set). Called by the lifecycle call that holds the busy
 * flag only (the started library is its state).
 */
int pyop__start_runtime(const pyop_options *opt, pyop__runtime_key *key);

/* Whether this libpyop was built with a bridge whose artifact is key
 * ("cp311-x86_64"; PYOP_BUILD_ARTIFACTS). */
bool pyop__build_has_artifact(const char *key);

/* Whether key is a well-formed runtime key for pyop_options.start_python_key:
 * 1 to 63 characters of [A-Za-z0-9_.-], not starting with '.'. */
bool pyop__start_key_valid(const char *key);

#endif
