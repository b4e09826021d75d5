/*
 * The bridge's one exported symbol (pyop_bridge_entry, the ABI
 * negotiation), its API table and the calls in it: set_config (the
 * artifact directory; the running Python checked, or one started),
 * register_custom_ops, reset, shutdown and interpreter_status.
 */
#include "bridge.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef PYOP_BRIDGE_BUILD_INFO
#define PYOP_BRIDGE_BUILD_INFO "unknown compiler"
#endif

static const char pb_build_info[] =
    PYOP_BRIDGE_BUILD_INFO ", Python headers " PY_VERSION;

/* ------------------------------------------------------------- config */

/* The running interpreter must be the major.minor the bridge was built for. */
static int check_running_version(void) {
#if PY_VERSION_HEX >= 0x030B0000
  unsigned long running = Py_Version;
#else
  unsigned a = 0, b = 0;
  if (sscanf(Py_GetVersion(), "%u.%u", &a, &b) != 2)
    return pb_error(PYOP_EABI, "cannot parse the running Python version '%s'", Py_GetVersion());
  unsigned long running = ((unsigned long)a << 24) | ((unsigned long)b << 16);
#endif
  if ((running >> 16) != ((unsigned long)PY_VERSION_HEX >> 16))
    return pb_error(PYOP_EABI,
                    "bridge built for Python %d.%d but the process runs Python %lu.%lu",
                    PY_MAJOR_VERSION, PY_MINOR_VERSION, (running >> 24) & 0xff,
                    (running >> 16) & 0xff);
  return PYOP_OK;
}

/*
 * Stores the artifact directory. When Python is not initialised: starts an
 * isolated one (owned by the bridge, finalised at shutdown) if the flag
 * PYOP_BRIDGE_START_PYTHON is set, else fails with PYOP_ENOTINIT.
 */
static int pb_set_config(const pyop_bridge_config *given) {
  if (given == NULL || !PB_HAS(pyop_bridge_config, given, flags))
    return pb_error(PYOP_EINVAL, "bridge set_config: config is NULL or too small");
  const pyop_bridge_config taken = pb_take_config(given), *config = &taken;
  if (!pb_str_ok(config->artifact_dir, true))
    return pb_error(PYOP_EINVAL, "bridge set_config: artifact_dir is empty or invalid");
  int lrc = pb_lanes_configure(config);
  if (lrc != PYOP_OK)
    return lrc;
  char *dir = strndup(config->artifact_dir.data, config->artifact_dir.len);
  if (dir == NULL)
    return pb_error(PYOP_ENOMEM, "bridge set_config: out of memory");
  if (!Py_IsInitialized()) {
    if (!(config->flags & PYOP_BRIDGE_START_PYTHON)) {
      free(dir);
      return pb_error(PYOP_ENOTINIT,
                      "the Python interpreter is not initialised in this process: initialise "
                      "it before loading (Py_Initialize), or let libpyop start one "
                      "(pyop_options.start_python)");
    }
    int rc = pb_python_start();
    if (rc != PYOP_OK) {
      free(dir);
      return rc;
    }
  } else {
    int rc = check_running_version();
    if (rc != PYOP_OK) {
      free(dir);
      return rc;
    }
  }
  free(pb.artifact_dir);
  pb.artifact_dir = dir;
  return PYOP_OK;
}

/* ------------------------------------------------------ the API table */

static int pb_register_custom_ops(const pyop_registrar *registrar, const pyop_str *paths,
                                  size_t n_paths) {
  if (pb.artifact_dir == NULL)
    return pb_error(PYOP_ESTATE, "bridge register_custom_ops: set_config was not called");
  if (!pb_python_usable())
    return pb_error_no_python("loading Python plugins");
  pb_gil st = pb_enter();
  pb_watch_note_load(st);
  int rc = pb_lanes_load(paths, n_paths);
  if (rc == PYOP_OK) {
    rc = pb_register(registrar, paths, n_paths);
    if (rc != PYOP_OK)
      pb_lanes_reset(); /* libpyop drops the load: every lane forgets it too */
  }
  if (rc == PYOP_EINTR)
    pb_interrupt_caller();
  pb_leave(st);
  return rc;
}

static void pb_reset(void) {
  pb_lanes_reset();
  if (!pb_python_usable()) {
    pb_package_forget();
    return;
  }
  pb_gil st = pb_enter();
  pb_reset_gil();
  pb_leave(st);
}

static void pb_shutdown(void) {
  pb_lanes_stop();
  if (!pb_python_usable()) {
    /* The interpreter is gone (or is another one): forget, touch nothing. */
    pb_package_forget();
    pb_signals_forget();
    pb_lanes_exit_hook_drop();
    pb_exit_watch_forget(); /* died with that interpreter's state dict */
    pb_kept_retire();
    if (pb.owns_python) {
      pb_log(PYOP_LOG_WARN, "the Python libpyop started was finalized by someone else");
      pb_python_finish();
    }
  } else {
    pb_gil st = pb_enter();
    pb_lanes_exit_hook_drop();
    pb_reset_gil();
    pb_package_drop();
    if (atomic_load(&pb_python_ours))
      pb_python_leave_ours();
    pb_leave(st);
    if (pb_lanes_image())
      pb_kept_end_all(); /* its sub-interpreter ends next (lanes.c) */
    pb_kept_retire();
    if (pb.owns_python)
      pb_python_finish();
  }
  atomic_store(&pb_python_ours, false);
  pb.owns_python = false;
  pb.main_tstate = NULL;
  pb_watch_stop_all();
  pb_kept_key_delete(); /* no destructor may run into this image after dlclose */
  free(pb.artifact_dir);
  pb.artifact_dir = NULL;
  pb.services = pb_take_services(NULL, 0);
  pb.services_given = NULL;
  atomic_store(&pb_lost, false);
}

/*
 * ABI 1.5: whether the interpreter the bridge's objects belong to still
 * runs (pb_lost is set by the exit watch, which does not depend on atexit).
 * No GIL, no Python call, no error recorded.
 */
static int pb_interpreter_status(void) {
  return pb_python_usable() ? PYOP_OK : PYOP_ENOTINIT;
}

static pyop_bridge_api pb_api = {
    sizeof(pyop_bridge_api),
    PYOP_BRIDGE_ABI_MAJOR,
    PYOP_BRIDGE_ABI_MINOR,
    {pb_build_info, sizeof pb_build_info - 1},
    pb_set_config,
    pb_register_custom_ops,
    pb_reset,
    pb_shutdown,
    pb_interpreter_status,
};

__attribute__((visibility("default"))) int
pyop_bridge_entry(const pyop_bridge_request *request, const pyop_bridge_api **out_api);

/*
 * Negotiates the ABI: same major required; the answer is the lower of the
 * two minors. Returns PYOP_OK and the table, or PYOP_EABI / PYOP_EINVAL.
 * Touches no Python.
 */
int pyop_bridge_entry(const pyop_bridge_request *request, const pyop_bridge_api **out_api) {
  if (request == NULL || out_api == NULL)
    return PYOP_EINVAL;
  *out_api = NULL;
  if (!PB_HAS(pyop_bridge_request, request, services))
    return PYOP_EABI;
  uint32_t ours = PYOP_BRIDGE_ABI_MINOR;
  uint32_t minor = request->abi_minor < ours ? request->abi_minor : ours;
  pb.services = pb_take_services(request->services, minor);
  pb.services_given = request->services;
  if (request->abi_major != PYOP_BRIDGE_ABI_MAJOR)
    return pb_error(PYOP_EABI, "bridge speaks ABI %u.%u, the loader asked for %u.%u",
                    (unsigned)PYOP_BRIDGE_ABI_MAJOR, (unsigned)PYOP_BRIDGE_ABI_MINOR,
                    (unsigned)request->abi_major, (unsigned)request->abi_minor);
  pb_kept_key_create();
  pb_api.abi_minor = minor;
  pb.abi_minor = pb_api.abi_minor;
  *out_api = &pb_api;
  return PYOP_OK;
}
