/*
 * Statuses and the thread's last error (error.c): recording a failure,
 * the error mark, the thread's block of call state (call.h reads its
 * tokens) and the one reading of a failed bridge call.
 */
#ifndef PYOP_ERROR_H
#define PYOP_ERROR_H

#include "core.h"

/*
 * Records the calling thread's last failure and returns status, so callers
 * write `return pyop__error(PYOP_EINVAL, "...", ...)`. The message should
 * say what failed, on what (a path, an op type) and why. Never allocates
 * (a fixed thread-local buffer; over-long messages are truncated with a
 * marker), so it is safe on out-of-memory paths.
 */
int pyop__error(int status, const char *fmt, ...) PYOP__PRINTF(2, 3);
int pyop__verror(int status, const char *fmt, va_list ap);
/* Records a message given as a (pointer, length) view, copied verbatim. */
int pyop__error_str(int status, const char *msg, size_t len);
/* Prefixes the current last error with "context: ". Returns status. */
int pyop__error_prefix(int status, const char *fmt, ...) PYOP__PRINTF(2, 3);
/* Sets the last status to status and keeps the message as it is. */
int pyop__error_keep(int status);
/* Clears the calling thread's last error. */
void pyop__error_clear(void);
/*
 * A counter of the errors recorded on the calling thread. Take it before
 * calling foreign code (the bridge, a host hook) and compare after a
 * failure: equal means the callee recorded no message of its own, so the
 * last error still describes an earlier, unrelated failure. Unlike
 * pyop__error_clear it leaves the last error as it was on success.
 */
static inline unsigned pyop__error_mark(void); /* below, with the thread's block */
/*
 * Marks the message just recorded as one that names the bridge call it
 * belongs to (the callback and the op), so that the caller of the callback
 * keeps it whole instead of putting the call in front
 * (pyop__bridge_failure.names_call). Set for every message the bridge
 * records with set_error (the bridge ABI's rule: docs/bridge-abi.md,
 * "Evolving the ABI") and for every failure of a service or sink of the
 * call (pyop__call_failed, call.h, which also keeps the first).
 */
void pyop__error_names_call(void);
/*
 * The calling thread's last error kept aside while a host hook runs: the
 * hook may call libpyop functions that fail, and their errors must not
 * replace the one of the call that runs the hook. Restore puts back the
 * status, message and mark when the hook changed them.
 */
typedef struct pyop__error_saved {
  unsigned seq;
  int status;
  char *msg; /* NULL when the message was empty (or could not be copied) */
} pyop__error_saved;
void pyop__error_save(pyop__error_saved *s);
void pyop__error_restore(pyop__error_saved *s);
/*
 * This thread's block of libpyop state read on every call into an op: the
 * call token of the live call (call.h) and the counter of errors recorded
 * (pyop__error_mark). One block: each thread-local costs a __tls_get_addr
 * in a dlopen'ed libpyop (src/CMakeLists.txt).
 */
typedef struct pyop__call_tls {
  uintptr_t token;  /* of the live call, 0: none */
  void *state;      /* its state */
  uintptr_t next, end; /* tokens this thread may still hand out */
  unsigned error_seq; /* errors recorded on this thread (pyop__error_mark) */
} pyop__call_tls;
extern _Thread_local pyop__call_tls pyop__call_live /* error.c */
    __attribute__((visibility("hidden")));
static inline unsigned pyop__error_mark(void) { return pyop__call_live.error_seq; }
/* True when a status is one of PYOP_STATUS_MAP's. */
bool pyop__status_known(int status);
/*
 * The status a caller reports for what a bridge returned: rc itself when it
 * is a negative code of PYOP_STATUS_MAP, else PYOP_EINTERNAL (a bridge must
 * return PYOP_OK or a negative libpyop code); *odd is set when rc was
 * mapped, so the message can say what the bridge returned.
 */
int pyop__bridge_status(int rc, bool *odd);
/*
 * How a bridge call that returned rc (not PYOP_OK) failed, read once:
 * status is what libpyop reports (pyop__bridge_status), odd that rc was
 * not a libpyop status, said that the bridge recorded a message of its own
 * (non-empty) since mark, pyop__error_mark() taken before the call,
 * names_call that this last message was marked by pyop__error_names_call.
 * The one place that looks at the last error after a bridge call: callers
 * decide on these fields, never on the text.
 */
typedef struct pyop__bridge_failure {
  int status;
  bool odd;
  bool said;
  bool names_call;
} pyop__bridge_failure;
pyop__bridge_failure pyop__bridge_failed(int rc, unsigned mark);

#endif /* PYOP_ERROR_H */
