/*
 * Status codes (generated from PYOP_STATUS_MAP) and the thread-local last
 * error. The message buffer is fixed-size thread-local storage, so recording
 * an error never allocates and works on out-of-memory paths.
 */
#include "error.h"

#include <assert.h>

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

/* Long enough for a candidate list or a Python traceback; longer messages
 * are cut with a marker at the end. */
#define PYOP__ERROR_CAP 16384

static _Thread_local char last_msg[PYOP__ERROR_CAP];
static _Thread_local int last_status;
/* The error_seq of the last message marked by pyop__error_names_call
 * (a message recorded after it has another number). */
static _Thread_local unsigned named_seq;

static const char truncated_marker[] = "\n[... message truncated]";

const char *pyop_status_name(int status) {
  switch (status) {
#define PYOP__STATUS_NAME(name, value, msg) \
  case value:                               \
    return "PYOP_" #name;
    PYOP_STATUS_MAP(PYOP__STATUS_NAME)
#undef PYOP__STATUS_NAME
  }
  return "PYOP_UNKNOWN";
}

const char *pyop_strerror(int status) {
  switch (status) {
#define PYOP__STATUS_MSG(name, value, msg) \
  case value:                              \
    return msg;
    PYOP_STATUS_MAP(PYOP__STATUS_MSG)
#undef PYOP__STATUS_MSG
  }
  return "unknown status";
}

bool pyop__status_known(int status) {
  switch (status) {
#define PYOP__STATUS_KNOWN(name, value, msg) \
  case value:                                \
    return true;
    PYOP_STATUS_MAP(PYOP__STATUS_KNOWN)
#undef PYOP__STATUS_KNOWN
  }
  return false;
}

int pyop__bridge_status(int rc, bool *odd) {
  *odd = rc > 0 || !pyop__status_known(rc);
  return *odd ? PYOP_EINTERNAL : rc;
}

pyop__bridge_failure pyop__bridge_failed(int rc, unsigned mark) {
  assert(rc != PYOP_OK);
  pyop__bridge_failure f;
  f.status = pyop__bridge_status(rc, &f.odd);
  f.said = pyop__call_live.error_seq != mark && last_msg[0] != '\0';
  f.names_call = f.said && named_seq == pyop__call_live.error_seq;
  return f;
}

void pyop__error_names_call(void) { named_seq = pyop__call_live.error_seq; }

_Thread_local pyop__call_tls pyop__call_live;

void pyop__error_save(pyop__error_saved *s) {
  s->seq = pyop__call_live.error_seq;
  s->status = last_status;
  s->msg = last_msg[0] ? pyop__strdup(last_msg) : NULL;
}

void pyop__error_restore(pyop__error_saved *s) {
  if (pyop__call_live.error_seq != s->seq) {
    if (s->msg) memcpy(last_msg, s->msg, strlen(s->msg) + 1);
    else last_msg[0] = '\0';
    last_status = s->status;
    pyop__call_live.error_seq = s->seq;
  }
  pyop__free(s->msg);
  s->msg = NULL;
}

const char *pyop_last_error(void) { return last_msg; }

int pyop_last_status(void) { return last_status; }

/* Marks the buffer as cut when `written` (what vsnprintf wanted) overflowed. */
static void mark_truncated(size_t written) {
  if (written < sizeof last_msg) return;
  memcpy(last_msg + sizeof last_msg - sizeof truncated_marker, truncated_marker,
         sizeof truncated_marker);
}

int pyop__verror(int status, const char *fmt, va_list ap) {
  int n = vsnprintf(last_msg, sizeof last_msg, fmt, ap);
  if (n < 0) last_msg[0] = '\0';
  else mark_truncated((size_t)n);
  last_status = status;
  pyop__call_live.error_seq++;
  return status;
}

int pyop__error(int status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  pyop__verror(status, fmt, ap);
  va_end(ap);
  return status;
}

int pyop__error_str(int status, const char *msg, size_t len) {
  if (!msg) len = 0;
  size_t n = len < sizeof last_msg - 1 ? len : sizeof last_msg - 1;
  if (n) memcpy(last_msg, msg, n);
  last_msg[n] = '\0';
  mark_truncated(len);
  last_status = status;
  pyop__call_live.error_seq++;
  return status;
}

int pyop__error_prefix(int status, const char *fmt, ...) {
  char prefix[1024];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(prefix, sizeof prefix, fmt, ap);
  va_end(ap);
  if (n < 0) return pyop__error(status, "%s", last_msg);
  size_t plen = strlen(prefix);
  size_t old = strnlen(last_msg, sizeof last_msg - 1);
  /* prefix + ": " + old message, cut to the buffer. */
  size_t room = sizeof last_msg - 1;
  size_t keep_old = old;
  if (plen + 2 > room) plen = room - 2;
  if (plen + 2 + keep_old > room) keep_old = room - plen - 2;
  memmove(last_msg + plen + 2, last_msg, keep_old);
  memcpy(last_msg, prefix, plen);
  last_msg[plen] = ':';
  last_msg[plen + 1] = ' ';
  last_msg[plen + 2 + keep_old] = '\0';
  if (keep_old < old) mark_truncated(sizeof last_msg);
  last_status = status;
  pyop__call_live.error_seq++;
  return status;
}

int pyop__error_keep(int status) {
  last_status = status;
  pyop__call_live.error_seq++;
  return status;
}

void pyop__error_clear(void) {
  last_msg[0] = '\0';
  last_status = PYOP_OK;
}
