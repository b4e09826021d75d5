/*
 * Diagnostics: pyop_runtime_key and the pyop_doctor report (the runtime
 * key, each element of ASCEND_CUSTOM_OPP_PATH and its verdict, the
 * artifacts root, the bridge and every candidate with its status).
 */
#include "candidates.h"
#include "core.h"
#include "lifecycle.h"
#include "registry.h"
#include "runtime_key.h"
#include "scan.h"

#include <stdio.h>

int pyop_runtime_key(char *buf, size_t len) {
  PYOP__FORK_GUARD();
  if (!buf || len == 0)
    return pyop__error(PYOP_EINVAL, "pyop_runtime_key: empty buffer");
  pyop__runtime_key key;
  buf[0] = '\0';
  int rc = pyop__runtime_key_resolve(&key);
  if (rc != PYOP_OK) return rc;
  if ((size_t)snprintf(buf, len, "%s", key.text) >= len)
    return pyop__error(PYOP_EINVAL, "pyop_runtime_key: buffer of %zu %s is too small for "
                                    "\"%s\"", len, PYOP__PLURAL(len, "byte", "bytes"), key.text);
  return PYOP_OK;
}

int pyop_doctor(char **out) {
  PYOP__FORK_GUARD();
  if (!out) return pyop__error(PYOP_EINVAL, "pyop_doctor: out is NULL");
  *out = NULL;
  pyop__sb sb = PYOP__SB_INIT;
  pyop__runtime_key key;
  bool have_key = pyop__runtime_key_resolve(&key) == PYOP_OK;
  if (have_key)
    pyop__sb_printf(&sb, "runtime key: %s (Python %u.%u.%u, %s)\n", key.text,
                    key.major, key.minor, key.micro,
                    key.initialized ? "initialised" : "not initialised");
  else
    pyop__sb_printf(&sb, "runtime key: none (%s)\n", pyop_last_error());

  const char *opp = pyop__getenv(PYOP__OPP_VAR);
  pyop__sb_printf(&sb, PYOP__OPP_VAR "=%s\n", opp ? opp : "(unset)");
  pyop__scan_result r;
  int src = pyop__scan_opts(opp, false, true, &r); /* the report holds the verdicts */
  for (size_t i = 0; i < r.n; i++)
    pyop__sb_printf(&sb, "  %s: %s%s%s\n", r.entries[i].path,
                    pyop__path_verdict_name(r.entries[i].verdict),
                    r.entries[i].detail ? ": " : "",
                    r.entries[i].detail ? r.entries[i].detail : "");
  if (src != PYOP_OK) pyop__sb_printf(&sb, "  error: %s\n", pyop_last_error());
  pyop__scan_result_free(&r);

  pyop__sb_printf(&sb, "artifacts: %s\n", pyop__artifacts_root());
  bool loaded;
  bool had_report = pyop__lifecycle_describe(&sb, &loaded);
  if (!had_report && have_key) {
    pyop__candidates cands;
    if (pyop__candidates_find(&key, &cands) == PYOP_OK) {
      pyop__sb_puts(&sb, loaded ? "candidates (now):\n"
                                : "candidates (not loaded yet):\n");
      pyop__candidates_report(&cands, &sb);
      pyop__candidates_free(&cands);
    }
  }
  pyop__sb_printf(&sb, "ops registered: %zu\n", pyop__registry_count());
  *out = pyop__sb_take(&sb);
  if (!*out) return pyop__error(PYOP_ENOMEM, "pyop_doctor: out of memory");
  return PYOP_OK;
}
