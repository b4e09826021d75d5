/*
 * Loading a bridge from the ranked candidates.
 *
 * Per candidate, in order, until one loads, four stages (try_candidate):
 *   cand_locate: open_trusted (UNSAFE / INVALID_PATH) -> inside the
 *     artifact directory after symlinks (INVALID_PATH) -> same file as an
 *     earlier candidate (DUPLICATE);
 *   cand_open: dlopen RTLD_NOW|RTLD_LOCAL (OPEN_FAILED + dlerror) -> dlsym
 *     pyop_bridge_entry (MISSING_SYMBOL);
 *   cand_negotiate: negotiate and validate the table (ABI_REJECTED);
 *   cand_configure: set_config (CONFIG_REJECTED);
 * then LOADED.
 *
 * Clean-up of a rejected candidate: after a failed negotiation nothing of
 * the bridge is called (its table cannot be trusted), it is only
 * dlclosed; after a failed set_config the table is valid, so shutdown() is
 * called (the bridge may have half-applied the configuration) and then it
 * is dlclosed. Candidates after the one that loaded stay UNTRIED.
 */
#include "bridge_loader.h"

#include "build_facts.h"
#include "start_python.h"
#include "registry.h"
#include "trust.h"

#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The smallest table this loader can use: ABI 1.0 ends with shutdown. */
#define PYOP__API_MIN_SIZE PYOP__MEMBER_END(pyop_bridge_api, shutdown)

/* The bridge ABI's versioned structs end where their last member does (the
 * growth rule, core.h). */
#if UINTPTR_MAX > 0xffffffffu
PYOP__ENDS_WITH(pyop_io_view, reserved_);
PYOP__ENDS_WITH(pyop_bridge_config, reserved_lanes_);
PYOP__ENDS_WITH(pyop_impl_view, reserved_);
#else
PYOP__ENDS_WITH(pyop_io_view, kind);
PYOP__ENDS_WITH(pyop_bridge_config, lanes);
PYOP__ENDS_WITH(pyop_impl_view, lanes);
#endif
PYOP__ENDS_WITH(pyop_proto_view, output_dtypes);
PYOP__ENDS_WITH(pyop_attr_view, default_value);
PYOP__ENDS_WITH(pyop_infer_args, add_output);
PYOP__ENDS_WITH(pyop_exec_services, alias_output);
PYOP__ENDS_WITH(pyop_exec_args, input_flags);
PYOP__ENDS_WITH(pyop_compile_args, set_artifact);
PYOP__ENDS_WITH(pyop_launch_arg_view, value);
PYOP__ENDS_WITH(pyop_launch_view, n_args);
PYOP__ENDS_WITH(pyop_declare_args, add_workspace);
PYOP__ENDS_WITH(pyop_op_callbacks, create_holder_in);
PYOP__ENDS_WITH(pyop_loader_services, last_error);
PYOP__ENDS_WITH(pyop_registrar, add_impl);
PYOP__ENDS_WITH(pyop_bridge_api, interpreter_status);
PYOP__ENDS_WITH(pyop_bridge_request, services);

/* ------------------------------------------------------------ services */

/* Records the bridge's failure detail as the thread's last error. */
static void record_bridge_error(int status, pyop_str message) {
  bool odd;
  int st = pyop__bridge_status(status, &odd);
  if (st == PYOP_OK) { /* an error cannot be a success */
    st = PYOP_EINTERNAL;
    odd = true;
  }
  if (message.len && !message.data) {
    pyop__error(st, "(the bridge reported an error with status %d and an "
                    "invalid message view)", status);
    return;
  }
  if (!odd) {
    pyop__error_str(st, message.data, message.len);
    return;
  }
  int n = message.len > INT_MAX ? INT_MAX : (int)message.len;
  pyop__error(st, "%.*s (the bridge reported status %d, not a libpyop error "
                  "status; reported as %s)",
              n, message.data ? message.data : "", status, pyop_status_name(st));
}

/* set_error: the message is recorded whole, as one that names its call (a
 * bridge's message of a failed op callback does: pyop__error_names_call). */
static void svc_set_error(int status, pyop_str message) {
  record_bridge_error(status, message);
  pyop__error_names_call();
}

/* Forwards a bridge log line to libpyop's logger. */
static void svc_log(int level, pyop_str message) {
  if (level < PYOP_LOG_ERROR) level = PYOP_LOG_ERROR;
  if (level > PYOP_LOG_DEBUG) level = PYOP_LOG_DEBUG;
  if (!pyop__log_enabled(level)) return;
  if (message.len && !message.data) return;
  int n = message.len > INT_MAX ? INT_MAX : (int)message.len;
  pyop__log(level, "bridge", "%.*s", n, message.data ? message.data : "");
}

/* The calling thread's last failure detail, as a view (bridge ABI 1.4). */
static pyop_str svc_last_error(void) {
  const char *d = pyop_last_error();
  return (pyop_str){d, strlen(d)};
}

const pyop_loader_services pyop__loader_services = {
    sizeof(pyop_loader_services), svc_set_error, svc_log, pyop__registry_find_proto,
    pyop__registry_release_proto, svc_last_error};

/* -------------------------------------------------------------- loading */

/* The bridge's own message of a failed call (mark taken before it), for a
 * reason; a fixed text when it recorded none. */
static const char *bridge_detail(int rc, unsigned mark) {
  return pyop__bridge_failed(rc, mark).said ? pyop_last_error()
                                              : "(the bridge gave no detail)";
}

/* The name of a status the bridge returned; for one outside
 * PYOP_STATUS_MAP, its number ("status -999") written into buf. */
static const char *status_text(int rc, char *buf, size_t len) {
  if (pyop__status_known(rc)) return pyop_status_name(rc);
  snprintf(buf, len, "status %d (not a libpyop status)", rc);
  return buf;
}

/* Returns the name of the first NULL required member, or NULL. */
static const char *missing_member(const pyop_bridge_api *api) {
#define PYOP__API_NULL(m) \
  if (!api->m) return #m;
  PYOP_BRIDGE_API_REQUIRED(PYOP__API_NULL)
#undef PYOP__API_NULL
  return NULL;
}

/* True when the dev/ino of it was already seen earlier in the list;
 * *first is that earlier candidate. */
static bool seen_before(const pyop__candidates *cands, size_t idx,
                        const pyop__candidate **first) {
  const pyop__candidate *it = &cands->items[idx];
  for (size_t j = 0; j < idx; j++) {
    const pyop__candidate *o = &cands->items[j];
    if (o->bridge_path && o->dev == it->dev && o->ino == it->ino) {
      *first = o;
      return true;
    }
  }
  return false;
}

/* True when path is dir itself's child or deeper (both resolved). */
static bool inside(const char *path, const char *dir) {
  size_t n = strlen(dir);
  if (n == 1 && dir[0] == '/') return path[0] == '/' && path[1] != '\0';
  return strncmp(path, dir, n) == 0 && path[n] == '/' && path[n + 1] != '\0';
}

/*
 * One candidate being tried: what its stages (cand_locate, cand_open,
 * cand_negotiate, cand_configure) found so far, and what cand_drop undoes
 * when one of them refuses it.
 */
typedef struct attempt {
  pyop__candidates *cands;
  size_t idx;
  pyop__candidate *it; /* cands->items[idx] */
  uint32_t flags;      /* PYOP_BRIDGE_* bits for set_config */
  uint32_t lanes;      /* pyop_options.lanes for set_config (ABI 1.6) */
  pyop__sb why;        /* the reason of the stage that refused it */
  int status;          /* the status it ends in if the current stage refuses it */
  bool nomem;          /* a stage ran out of memory (nothing is recorded then) */
  char dir_real[PATH_MAX];
  char *dir_copy, *path_copy; /* the resolved directory and file, for the bridge */
  int fd;                     /* the vetted file until dlopen, else -1 */
  struct stat st;
  void *handle;
  pyop_bridge_entry_fn entry;
  const pyop_bridge_api *api;
  bool negotiated; /* the table is valid: shutdown() may be called */
  uint32_t minor;  /* the negotiated minor */
} attempt;

static bool out_of_memory(attempt *a) {
  a->nomem = true;
  return false;
}

/*
 * Stage 1, which file: resolves the artifact directory and the manifest's
 * bridge in it, vets the file (pyop__open_trusted; UNSAFE / INVALID_PATH),
 * checks that it stays inside the directory after symlinks (INVALID_PATH)
 * and is not a file an earlier candidate was (DUPLICATE). True to go on.
 */
static bool cand_locate(attempt *a) {
  pyop__candidate *it = a->it;
  a->status = PYOP__CAND_INVALID_PATH;
  if (!PYOP_SYS(realpath)(it->dir, a->dir_real)) {
    int e = errno;
    if (e == ENOMEM) return out_of_memory(a);
    pyop__sb_printf(&a->why, "cannot resolve the directory: %s", strerror(e));
    return false;
  }
  char bridge_path[PATH_MAX];
  int n = snprintf(bridge_path, sizeof bridge_path, "%s/%s", a->dir_real,
                   it->manifest.bridge);
  if (n < 0 || (size_t)n >= sizeof bridge_path) {
    pyop__sb_puts(&a->why, "bridge path too long");
    return false;
  }

  char *resolved = NULL;
  int rc = pyop__open_trusted(bridge_path, &a->fd, &resolved, &a->st, &a->why);
  if (rc == PYOP_ENOMEM) return out_of_memory(a);
  if (rc != PYOP_OK) {
    a->status = rc == PYOP_ESECURITY ? PYOP__CAND_UNSAFE : PYOP__CAND_INVALID_PATH;
    return false;
  }
  it->bridge_path = resolved;
  it->dev = a->st.st_dev;
  it->ino = a->st.st_ino;

  if (!inside(resolved, a->dir_real)) {
    pyop__sb_printf(&a->why, "%s resolves to %s, outside the artifact directory",
                    bridge_path, resolved);
    return false;
  }
  const pyop__candidate *first;
  if (seen_before(a->cands, a->idx, &first)) {
    a->status = PYOP__CAND_DUPLICATE;
    pyop__sb_printf(&a->why, "same file as %s (tried once)", first->dir);
    return false;
  }
  a->dir_copy = pyop__strdup(a->dir_real);
  a->path_copy = pyop__strdup(resolved);
  if (!a->dir_copy || !a->path_copy) return out_of_memory(a);
  return true;
}

/*
 * Stage 2, open it: dlopens the vetted file (OPEN_FAILED with dlerror's
 * text) and finds the one entry symbol, a function (MISSING_SYMBOL). The
 * file descriptor is closed either way. True to go on.
 */
static bool cand_open(attempt *a) {
  const char *resolved = a->it->bridge_path;
  a->status = PYOP__CAND_OPEN_FAILED;
  int rc = pyop__dlopen_trusted(a->fd, resolved, &a->st, RTLD_NOW | RTLD_LOCAL, &a->handle,
                                &a->why);
  PYOP_SYS(close)(a->fd);
  a->fd = -1;
  if (rc != PYOP_OK) return false;

  a->status = PYOP__CAND_MISSING_SYMBOL;
  (void)PYOP_SYS(dlerror)();
  void *sym = PYOP_SYS(dlsym)(a->handle, PYOP_BRIDGE_ENTRY_SYMBOL);
  if (!sym) {
    pyop__sb_printf(&a->why, "%s: no exported symbol " PYOP_BRIDGE_ENTRY_SYMBOL " (%s)",
                    resolved, pyop__dlerror_detail(resolved));
    return false;
  }
  char sym_why[PATH_MAX * 2 + 128];
  if (pyop__dlsym_not_function(a->handle, sym, resolved, sym_why, sizeof sym_why)) {
    pyop__sb_printf(&a->why, "%s: " PYOP_BRIDGE_ENTRY_SYMBOL " %s", resolved, sym_why);
    return false;
  }
  a->entry = (pyop_bridge_entry_fn)sym;
  return true;
}

/*
 * Stage 3, negotiate (docs/design.md §ABI): says the ABI this loader
 * speaks, takes the table the bridge answers with and checks it: a
 * struct_size of at least ABI 1.0's, the same major, every required member
 * (ABI_REJECTED). The minor is the older side's. True to go on: the table
 * is valid from here on.
 */
static bool cand_negotiate(attempt *a) {
  char num[64];
  a->status = PYOP__CAND_ABI_REJECTED;
  pyop_bridge_request req = {sizeof req, PYOP_BRIDGE_ABI_MAJOR, PYOP_BRIDGE_ABI_MINOR,
                             &pyop__loader_services};
  const pyop_bridge_api *api = NULL;
  unsigned mark = pyop__error_mark();
  int rc = a->entry(&req, &api);
  if (rc != PYOP_OK) {
    pyop__sb_printf(&a->why, PYOP_BRIDGE_ENTRY_SYMBOL " refused bridge ABI %u.%u "
                             "with %s: %s",
                    PYOP_BRIDGE_ABI_MAJOR, PYOP_BRIDGE_ABI_MINOR,
                    status_text(rc, num, sizeof num), bridge_detail(rc, mark));
    return false;
  }
  if (!api) {
    pyop__sb_puts(&a->why, PYOP_BRIDGE_ENTRY_SYMBOL " returned no API table");
    return false;
  }
  if (api->struct_size < PYOP__API_MIN_SIZE) {
    pyop__sb_printf(&a->why,
                    "API table struct_size %zu is smaller than the %zu bytes "
                    "of bridge ABI %u.0",
                    api->struct_size, (size_t)PYOP__API_MIN_SIZE,
                    PYOP_BRIDGE_ABI_MAJOR);
    return false;
  }
  if (api->abi_major != PYOP_BRIDGE_ABI_MAJOR) {
    pyop__sb_printf(&a->why,
                    "bridge answered ABI %u.%u; this libpyop speaks %u.%u "
                    "(same major required)",
                    api->abi_major, api->abi_minor, PYOP_BRIDGE_ABI_MAJOR,
                    PYOP_BRIDGE_ABI_MINOR);
    return false;
  }
  const char *null_member = missing_member(api);
  if (null_member) {
    pyop__sb_printf(&a->why, "API table member %s is NULL", null_member);
    return false;
  }
  a->api = api;
  a->negotiated = true;
  /* The older side's minor: a newer bridge keeps to our members. */
  a->minor = PYOP_BRIDGE_ABI_MINOR;
  if (api->abi_minor < a->minor) a->minor = api->abi_minor;
  return true;
}

/*
 * Stage 4, configure: set_config with the resolved artifact directory, the
 * libpython the manifest records and the flags (CONFIG_REJECTED, with the
 * bridge's message taken before cand_drop's shutdown() can replace it).
 */
static bool cand_configure(attempt *a) {
  char num[64];
  a->status = PYOP__CAND_CONFIG_REJECTED;
  const char *libpython = a->it->manifest.libpython;
  pyop_bridge_config cfg = {sizeof cfg,
                            {a->dir_copy, strlen(a->dir_copy)},
                            {libpython, libpython ? strlen(libpython) : 0},
                            a->flags};
  cfg.lanes = a->lanes;
  unsigned mark = pyop__error_mark();
  int rc = a->api->set_config(&cfg);
  if (rc != PYOP_OK) {
    pyop__sb_printf(&a->why, "set_config failed with %s: %s",
                    status_text(rc, num, sizeof num), bridge_detail(rc, mark));
    return false;
  }
  return true;
}

/* The candidate passed every stage: *out owns the handle and the copies. */
static int cand_loaded(attempt *a, pyop__bridge *out) {
  pyop__candidate *it = a->it;
  out->handle = a->handle;
  out->api = a->api;
  out->abi_major = PYOP_BRIDGE_ABI_MAJOR;
  out->abi_minor = a->minor;
  out->path = a->path_copy;
  out->dir = a->dir_copy;
  it->status = PYOP__CAND_LOADED;
  pyop__free(it->reason);
  it->reason = NULL;
  PYOP_LOG_D("bridge candidate %s: loaded %s (ABI %u.%u, bridge offers %u.%u)",
             it->dir, it->bridge_path, out->abi_major, out->abi_minor, a->api->abi_major,
             a->api->abi_minor);
  return PYOP_OK;
}

/*
 * A stage refused the candidate: undoes what the earlier ones did (the
 * bridge's shutdown() only once its table was negotiated, then dlclose)
 * and records its status and reason. PYOP_ENOBRIDGE, or PYOP_ENOMEM when a
 * stage or the reason ran out of memory (nothing recorded then).
 */
static int cand_drop(attempt *a) {
  pyop__candidate *it = a->it;
  if (a->negotiated) a->api->shutdown();
  if (a->handle) PYOP_SYS(dlclose)(a->handle);
  if (a->fd >= 0) PYOP_SYS(close)(a->fd);
  pyop__free(a->dir_copy);
  pyop__free(a->path_copy);
  if (a->nomem) {
    pyop__sb_free(&a->why);
    return PYOP_ENOMEM;
  }
  it->status = a->status;
  pyop__free(it->reason);
  it->reason = pyop__sb_take(&a->why);
  if (!it->reason) return PYOP_ENOMEM;
  PYOP_LOG_D("bridge candidate %s: %s: %s", it->dir, pyop__cand_status_name(a->status),
             it->reason);
  return PYOP_ENOBRIDGE;
}

/*
 * Tries candidate idx through its four stages. PYOP_OK: loaded, *out
 * filled, status LOADED. PYOP_ENOBRIDGE: rejected, status and reason set.
 * PYOP_ENOMEM: out of memory (nothing left open).
 */
static int try_candidate(pyop__candidates *cands, size_t idx, uint32_t flags,
                         uint32_t lanes, pyop__bridge *out) {
  attempt a;
  memset(&a, 0, sizeof a);
  a.cands = cands;
  a.idx = idx;
  a.it = &cands->items[idx];
  a.flags = flags;
  a.lanes = lanes;
  a.why = (pyop__sb)PYOP__SB_INIT;
  a.fd = -1;
  if (cand_locate(&a) && cand_open(&a) && cand_negotiate(&a) && cand_configure(&a))
    return cand_loaded(&a, out);
  return cand_drop(&a);
}

/* Whether candidate it was built for the running Python (its manifest
 * matched). Its status cannot tell: INVALID_PATH is given before the match
 * (no directory, no manifest) and after it (cand_locate: the bridge file
 * missing or outside its directory). Its rank can: a rejection before or at
 * the match (cand_reject) sets it to -1, one by a later stage (cand_drop)
 * keeps the rank of the match. */
static bool cand_matched(const pyop__candidate *it) { return it->rank >= 0; }

/*
 * Appends the fix when no candidate was built for the running Python (key,
 * "cp312-x86_64"): when the build made one, its artifact is missing from
 * the root (install it, or name it in PYOP_BRIDGE_DIR); else build a bridge
 * for that Python (-DPYOP_PYTHONS, with the list this libpyop was built
 * with), or run under a Python there is one for.
 */
static void no_bridge_fix(const pyop__candidates *cands, const char *key, const char *root,
                          pyop__sb *msg) {
  for (size_t i = 0; i < cands->n; i++)
    if (cand_matched(&cands->items[i])) return;
  if (pyop__build_has_artifact(key)) {
    pyop__sb_printf(msg, "\n  this libpyop was built with a bridge for %s, but its artifact "
                         "directory is not in %s: install the build's lib/pyop/artifacts "
                         "with it (cmake --install), or name the directory in "
                         "PYOP_BRIDGE_DIR",
                    key, root);
    return;
  }
  char ver[16] = "";
  unsigned minor = 0;
  if (key[0] == 'c' && key[1] == 'p' && key[2] >= '1' && key[2] <= '9' &&
      sscanf(key + 3, "%u", &minor) == 1)
    snprintf(ver, sizeof ver, "%c.%u", key[2], minor);
  pyop__sb_printf(msg, "\n  this libpyop has no bridge for %s: add that Python%s%s to "
                       "-DPYOP_PYTHONS",
                  key, ver[0] ? " " : "", ver);
  if (PYOP_BUILD_PYTHONS[0])
    pyop__sb_printf(msg, " (it was built with -DPYOP_PYTHONS=\"%s\"; e.g. "
                         "-DPYOP_PYTHONS=\"%s;/path/to/python%s\")",
                    PYOP_BUILD_PYTHONS, PYOP_BUILD_PYTHONS, ver[0] ? ver : "3");
  pyop__sb_puts(msg, ", rebuild and reinstall");
  const char *sep = "; or run under a Python it has a bridge for: ";
  for (size_t i = 0; i < cands->n; i++) {
    const pyop__candidate *it = &cands->items[i];
    if (it->status != PYOP__CAND_MANIFEST_MISMATCH || !it->manifest.python_tag) continue;
    pyop__sb_printf(msg, "%s%s%s-%s", sep, it->manifest.python_tag, it->manifest.abi_flags,
                    it->manifest.platform);
    sep = ", ";
  }
}

/*
 * Tries the UNTRIED candidates in order (see header and the file comment).
 * On PYOP_ENOBRIDGE the last error is one message listing every candidate,
 * and the fix when none was built for this Python.
 */
int pyop__bridge_load(pyop__candidates *cands, uint32_t config_flags, uint32_t lanes,
                      pyop__bridge *out) {
  assert(lanes <= PYOP_MAX_LANES);
  memset(out, 0, sizeof *out);
  for (size_t i = 0; i < cands->n; i++) {
    if (cands->items[i].status != PYOP__CAND_UNTRIED) continue;
    int rc = try_candidate(cands, i, config_flags, lanes, out);
    if (rc == PYOP_OK) return PYOP_OK;
    assert(rc == PYOP_ENOBRIDGE || rc == PYOP_ENOMEM);
    if (rc == PYOP_ENOMEM)
      return pyop__error(PYOP_ENOMEM, "loading a bridge: out of memory");
  }

  const char *key = cands->key_text[0] ? cands->key_text : "the running Python";
  const char *root = cands->root ? cands->root : "(unknown)";
  pyop__sb msg = PYOP__SB_INIT;
  pyop__sb_printf(&msg, "no usable bridge for %s in %s:\n", key, root);
  if (cands->n == 0) pyop__sb_puts(&msg, "  (no artifact directory found)\n");
  pyop__candidates_report(cands, &msg);
  if (msg.len && msg.buf[msg.len - 1] == '\n') msg.buf[--msg.len] = '\0';
  no_bridge_fix(cands, key, root, &msg);
  if (msg.oom) {
    pyop__sb_free(&msg);
    return pyop__error(PYOP_ENOMEM,
                       "no usable bridge for %s in %s (out of memory while "
                       "listing the %zu %s)",
                       key, root, cands->n, PYOP__PLURAL(cands->n, "candidate", "candidates"));
  }
  int rc = pyop__error(PYOP_ENOBRIDGE, "%s", pyop__sb_str(&msg));
  pyop__sb_free(&msg);
  return rc;
}

/*
 * Asks a bridge of ABI 1.5 whether the interpreter its objects belong to
 * is gone (see the header). A status outside the two the ABI allows is a
 * bridge bug: logged, and taken as "cannot tell".
 */
bool pyop__bridge_interpreter_lost(const pyop__bridge *b) {
  assert(b->api != NULL);
  if (b->abi_minor < 5 || !PYOP__HAS(pyop_bridge_api, b->api, interpreter_status) ||
      !b->api->interpreter_status)
    return false;
  int rc = b->api->interpreter_status();
  if (rc != PYOP_OK && rc != PYOP_ENOTINIT)
    PYOP_LOG_W("bridge %s: interpreter_status returned %d, neither PYOP_OK nor "
               "PYOP_ENOTINIT; taken as \"cannot tell\"",
               b->path, rc);
  return rc == PYOP_ENOTINIT;
}

/* Calls shutdown (when the table has it) then dlclose; zeroes b. */
void pyop__bridge_close(pyop__bridge *b) {
  if (!b) return;
  if (b->api && b->api->shutdown) b->api->shutdown();
  if (b->handle) PYOP_SYS(dlclose)(b->handle);
  pyop__free(b->path);
  pyop__free(b->dir);
  memset(b, 0, sizeof *b);
}

/* ---------------------------------------------------- the load's bridge */

int pyop__bridge_open(const pyop__runtime_key *key, const pyop_options *opt,
                      pyop__bridge *out, char **report) {
  *report = NULL;
  pyop__candidates cands;
  int rc = pyop__candidates_find(key, &cands);
  if (rc != PYOP_OK) return rc;
  uint32_t flags = opt->start_python ? PYOP_BRIDGE_START_PYTHON : 0;
  rc = pyop__bridge_load(&cands, flags, opt->lanes, out);
  pyop__sb sb = PYOP__SB_INIT;
  pyop__sb_printf(&sb, "runtime: %s\n", key->text);
  pyop__candidates_report(&cands, &sb);
  pyop__candidates_free(&cands);
  *report = pyop__sb_take(&sb);
  if (!*report && rc == PYOP_OK) {
    /* All or nothing: an open bridge without its report would leave
     * pyop_doctor saying "not loaded yet", and the next load would not
     * rebuild it. */
    pyop__bridge_close(out);
    rc = pyop__error(PYOP_ENOMEM,
                     "pyop_load: out of memory recording the bridge candidates");
  }
  if (rc != PYOP_OK) return rc;
  PYOP_LOG_I("bridge %s loaded for %s (ABI %u.%u)", out->path, key->text, out->abi_major,
             out->abi_minor);
  if (pyop__bridge_serial_reason(out, opt->lanes)[0])
    PYOP_LOG_W("lanes: %u asked for, but the bridge %s speaks ABI %u.%u (lanes need 1.6): "
               "every Python op runs serially in the main interpreter",
               opt->lanes, out->path, out->abi_major, out->abi_minor);
  return PYOP_OK;
}

const char *pyop__bridge_serial_reason(const pyop__bridge *b, uint32_t lanes) {
  return lanes > 0 && b->abi_minor < 6
             ? "the bridge speaks bridge ABI 1.5 or older (lanes need 1.6)"
             : "";
}
