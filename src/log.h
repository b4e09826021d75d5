/*
 * Logging and environment access (log.c).
 */
#ifndef PYOP_LOG_H
#define PYOP_LOG_H

#include "core.h"

/*
 * Levelled logging. The level comes from PYOP_LOG (error|warn|info|debug,
 * read once with secure_getenv; default warn). A line reads
 * "libpyop: <level>: <message>" ("libpyop: <level>: <origin>: <message>" for
 * a line relayed from elsewhere, origin "bridge") and goes to the host's log
 * hook when one is set, else to stderr. The message says what happened and
 * names the path or op concerned; it never names libpyop's C functions.
 * Callers must not hold a libpyop lock (the host hook may be called).
 */
void pyop__log(int level, const char *origin, const char *fmt, ...)
    PYOP__PRINTF(3, 4);
bool pyop__log_enabled(int level);

#define PYOP_LOG_E(...) pyop__log(PYOP_LOG_ERROR, NULL, __VA_ARGS__)
#define PYOP_LOG_W(...) pyop__log(PYOP_LOG_WARN, NULL, __VA_ARGS__)
#define PYOP_LOG_I(...) pyop__log(PYOP_LOG_INFO, NULL, __VA_ARGS__)
#define PYOP_LOG_D(...)                                                       \
  do {                                                                        \
    if (pyop__log_enabled(PYOP_LOG_DEBUG))                                    \
      pyop__log(PYOP_LOG_DEBUG, NULL, __VA_ARGS__);                           \
  } while (0)

/*
 * secure_getenv through the seam. In secure-execution mode (setuid, file
 * capabilities) it returns NULL, and the first such call of the process
 * says on stderr that environment variables are ignored.
 */
const char *pyop__getenv(const char *name);

#endif /* PYOP_LOG_H */
