/*
 * Internal core of libpyop: the operating-system seam, allocation, the
 * thread-local error, logging and a small string builder. Every other file
 * of src/ includes this; none of them includes <dlfcn.h> for calls or calls
 * malloc/open/opendir/... directly — they go through pyop__sys. Each
 * section says the file that defines what it declares.
 */
#ifndef PYOP_CORE_H
#define PYOP_CORE_H

#include "pyop/pyop.h"

#include <dirent.h>
#include <dlfcn.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#define PYOP__ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/*
 * The word for a count in a message, one for 1 and many otherwise:
 * ("%zu %s", n, PYOP__PLURAL(n, "op type", "op types")). Every count
 * libpyop prints goes through it (tests/examples/test_docs.py holds the
 * sources to that).
 */
#define PYOP__PLURAL(n, one, many) ((n) == 1 ? (one) : (many))

/*
 * Versioned structs (those that start with struct_size): a reader takes a
 * member whole or not at all. PYOP__MEMBER_END is the struct_size that
 * holds member m whole; PYOP__HAS whether p's struct_size does. Every
 * reader of a versioned struct uses these two, nothing else.
 */
#define PYOP__MEMBER_END(type, m) PYOP_MEMBER_END(type, m)
#define PYOP__HAS(type, p, m) PYOP_STRUCT_HAS(type, p, m)

/*
 * The growth rule of every versioned struct, checked: none ends in padding,
 * so a member appended after `last` changes sizeof, and struct_size tells an
 * old caller from a new one (pyop.h, "Versioned structs").
 */
#define PYOP__ENDS_WITH(type, last)                                           \
  _Static_assert(sizeof(type) == PYOP__MEMBER_END(type, last),               \
                 #type " ends in padding after " #last                        \
                 ": fill it with an explicit reserved member")
PYOP__ENDS_WITH(pyop_options, start_python_key);
#if UINTPTR_MAX > 0xffffffffu
PYOP__ENDS_WITH(pyop_exec_ctx, reserved_);
#else
PYOP__ENDS_WITH(pyop_exec_ctx, flags);
#endif
PYOP__ENDS_WITH(pyop_op_info, output_dtypes);
PYOP__ENDS_WITH(pyop_host_hooks, log);

#if defined(__GNUC__)
#define PYOP__PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define PYOP__PRINTF(f, a)
#endif

/* ------------------------------------------------ the seam (core.c) */

/*
 * Every OS call and allocation of libpyop goes through this table. Tests
 * replace members (and restore them with pyop__sys_reset()) to inject
 * faults: fail the Nth call, fake a file system, count allocations.
 */
typedef struct pyop__sys {
  void *(*malloc)(size_t n);
  void *(*calloc)(size_t n, size_t size);
  void *(*realloc)(void *p, size_t n);
  void (*free)(void *p);

  void *(*dlopen)(const char *path, int flags);
  void *(*dlsym)(void *handle, const char *name);
  int (*dlclose)(void *handle);
  char *(*dlerror)(void);
  int (*dladdr)(const void *addr, Dl_info *info);
  int (*dladdr1)(const void *addr, Dl_info *info, void **extra, int flags);
  int (*dlinfo)(void *handle, int request, void *info);

  int (*open)(const char *path, int flags);
  int (*openat)(int dirfd, const char *path, int flags);
  int (*close)(int fd);
  ssize_t (*read)(int fd, void *buf, size_t n);
  int (*fstat)(int fd, struct stat *st);
  int (*stat)(const char *path, struct stat *st);
  int (*fstatat)(int dirfd, const char *path, struct stat *st, int flags);
  char *(*realpath)(const char *path, char *resolved);
  char *(*getcwd)(char *buf, size_t n);
  void *(*mmap)(void *addr, size_t len, int prot, int flags, int fd, off_t off);
  int (*munmap)(void *addr, size_t len);

  DIR *(*opendir)(const char *path);
  struct dirent *(*readdir)(DIR *d);
  int (*closedir)(DIR *d);

  char *(*secure_getenv)(const char *name);
  unsigned long (*getauxval)(unsigned long type);
  uid_t (*geteuid)(void);
} pyop__sys;

extern pyop__sys pyop__sys_table;

/* Test-only: restores the real implementations after a test replaced some. */
void pyop__sys_reset(void);

#define PYOP_SYS(fn) (pyop__sys_table.fn)

/*
 * Why sym, an address dlsym(handle, ...) returned, must not be called as a
 * function of the library behind handle (path names it in the text); NULL
 * when it may: its ELF symbol is a function (STT_FUNC or STT_GNU_IFUNC) and
 * it is defined in that library itself, not in one of its dependencies
 * (dlsym on a library handle also finds its dependencies' symbols, libc's
 * exit among them). Otherwise the reason, written into buf, reads after
 * `symbol "name" `: "is a data object in <path>, not a function", "is
 * defined in <other>, not in <path>", ... Goes through dladdr1 and dlinfo of
 * the seam; no allocation.
 */
const char *pyop__dlsym_not_function(void *handle, const void *sym, const char *path,
                                     char *buf, size_t n);

/* ---------------------------------------------- allocation (core.c) */

void *pyop__malloc(size_t n);
void *pyop__calloc(size_t n, size_t size);
void *pyop__realloc(void *p, size_t n);
void pyop__free(void *p);
/* Copies [s, s+len) and NUL-terminates; NULL on allocation failure. */
char *pyop__strndup(const char *s, size_t len);
char *pyop__strdup(const char *s);
/* "dir/name" (one '/' between them) in a new allocation; NULL on
 * allocation failure. */
char *pyop__path_join(const char *dir, const char *name);

/* ------------------------------------------ string builder (core.c) */

/*
 * A growable NUL-terminated string. After an allocation failure the builder
 * is marked failed (oom) and further appends are ignored, so callers check
 * once at the end. An empty builder's buf may be NULL: use pyop__sb_str().
 */
typedef struct pyop__sb {
  char *buf;
  size_t len;
  size_t cap;
  bool oom;
} pyop__sb;

#define PYOP__SB_INIT {NULL, 0, 0, false}

void pyop__sb_append(pyop__sb *sb, const char *s, size_t len);
void pyop__sb_puts(pyop__sb *sb, const char *s);
void pyop__sb_printf(pyop__sb *sb, const char *fmt, ...) PYOP__PRINTF(2, 3);
void pyop__sb_vprintf(pyop__sb *sb, const char *fmt, va_list ap);
/* The string so far ("" when empty). */
const char *pyop__sb_str(const pyop__sb *sb);
/* Hands the buffer to the caller (NULL if oom; "" allocated when empty). */
char *pyop__sb_take(pyop__sb *sb);
void pyop__sb_free(pyop__sb *sb);

/* ---------------------------------------------- errors (error.c) */

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
 * "Evolving the ABI") and by the sinks of one call whose failure the caller
 * does not keep apart (infer_meta's add_output, compile's set_artifact):
 * their messages start with the call. (The exec services and the declare
 * sinks keep their first failure in the call's state instead.)
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

/* ---------------------------------------------------- fork (fork.c) */

/*
 * Set in the child of a fork() that happened while a bridge was open or a
 * lifecycle call ran (fork.c): the child's copy of Python and of the
 * bridge cannot be used (the GIL, kept thread states and locks belong to
 * threads that do not exist in the child). Every libpyop call that returns a
 * status then fails at once with PYOP_EFORKED; pyop_op_destroy frees
 * libpyop's memory only. A child forked while libpyop was idle is unaffected.
 */
#include <stdatomic.h>
extern atomic_bool pyop__forked_flag;
static inline bool pyop__forked(void) {
  return atomic_load_explicit(&pyop__forked_flag, memory_order_relaxed);
}
/* Records the EFORKED error of fn and returns PYOP_EFORKED (cold). */
int pyop__error_forked(const char *fn) __attribute__((cold));
#define PYOP__FORK_GUARD()                                                    \
  do {                                                                        \
    if (pyop__forked()) return pyop__error_forked(__func__);                  \
  } while (0)

/* -------------------------------------------------- logging (log.c) */

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

/* ---------------------------------------------- environment (log.c) */

/*
 * secure_getenv through the seam. In secure-execution mode (setuid, file
 * capabilities) it returns NULL, and the first such call of the process
 * says on stderr that environment variables are ignored.
 */
const char *pyop__getenv(const char *name);

#endif /* PYOP_CORE_H */
