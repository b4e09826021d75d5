/*
 * Internal core of libpyop (core.c): the operating-system seam, allocation
 * and a small string builder, and the macros every file uses. Every other
 * file of src/ includes this; none of them includes <dlfcn.h> for calls or
 * calls malloc/open/opendir/... directly — they go through pyop__sys.
 *
 * It also brings in the three headers every file needs beside it, each
 * declaring one file's things: error.h (error.c: statuses, the thread's
 * last error), fork.h (fork.c: the forked flag and PYOP__FORK_GUARD) and
 * log.h (log.c: logging and pyop__getenv).
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
 * exit among them). An indirect function's address is the one its resolver
 * chose, often a local function no dynamic symbol covers (a C ifunc,
 * target_clones): such an address is taken when it lies in the library's
 * code (an executable segment, found by dl_iterate_phdr). Otherwise the
 * reason, written into buf, reads after `symbol "name" `: "is a data object
 * in <path>, not a function", "is defined in <other>, not in <path>", ...
 * Goes through dladdr1 and dlinfo of the seam; no allocation.
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

#include "error.h"
#include "fork.h"
#include "log.h"

#endif /* PYOP_CORE_H */
